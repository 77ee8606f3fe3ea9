"""The arena command's own environment, set before anything imports grpc (imported first
by :mod:`arena.cli`): grpc's C core logs a failed TLS hand-shake at INFO, several lines on
stderr per attempt, and the arena reports it itself, in one line naming the bot.

Here, in the command's entry point, not in the ``arena`` package: a Python bot imports
``arena.sdk`` (and so ``arena``), and must get exactly the environment
docs/protocol.md documents."""

import os

os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
