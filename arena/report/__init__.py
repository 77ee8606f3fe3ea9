"""Results for people: the leaderboard built from stored games (:mod:`.board`), its
renderings (:mod:`.text`: terminal table, Markdown, CSV, JSON), the game printer of
``arena play`` (:mod:`.printer`) and the number and text formats they share
(:mod:`.format`)."""
