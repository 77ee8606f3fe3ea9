"""Where a game is played: the referee (:mod:`.referee`), the players at its seats
(:mod:`.players`), the one seat builder (:mod:`.seats`), one game from a job
(:mod:`.game`) and which bot process plays which game (:mod:`.pool`)."""
