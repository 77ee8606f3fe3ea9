"""``arena check-bot``: scripted rule situations (:mod:`.situations`) and the checker
that puts a bot through them and through complete games (:mod:`.checker`)."""
