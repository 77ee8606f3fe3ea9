"""The shared runs layer: what a tournament, a match and a league each run on (the
store, its writer, readers and lock, the schedule, the run file's tables, the
run's preamble and its field of bots)."""
