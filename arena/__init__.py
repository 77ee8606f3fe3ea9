"""trick-arena: a bot-tournament arena for trick-taking card games."""

# (the arena command sets GRPC_VERBOSITY: arena/cli/_environment.py; not here, where a
# Python bot importing arena.sdk would get it too)

__version__ = "0.1.0"
