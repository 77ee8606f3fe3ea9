"""trick-arena: a bot-tournament arena for trick-taking card games."""

import os

# grpc's C core logs a failed TLS hand-shake at INFO, several lines on stderr per attempt;
# the arena reports it itself, in one line naming the bot. Set before grpc is imported.
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")

__version__ = "0.1.0"
