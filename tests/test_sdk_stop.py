"""The Python SDK's bot leaves promptly when asked to stop, whatever still runs in it.

A real bot process (``tests/bots/lingering.py``) on a unix socket, reached over real
gRPC: a call's handler is still thinking (it would for 600 s) when SIGTERM comes, alone
or with a thread of the bot's own that is not a daemon and never ends. The server's stop
cancels the call but cannot stop the handler's thread, and the interpreter's exit waits
for the threads that answer calls and for every thread that is not a daemon: without
:data:`arena.sdk.STOP_DEADLINE_S` the process stays until the handler ends (600 s), or
for ever, and the arena's SIGKILL, or check-bot's failure, is what a bot author meets.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import grpc
import pytest
from conftest import REPO, TEST_BOTS

from arena.v1 import bot_pb2, bot_pb2_grpc, game_pb2


@pytest.mark.parametrize("hold", [False, True], ids=["handler-thinking", "own-thread-too"])
def test_a_bot_asked_to_stop_while_it_thinks_exits_at_once(hold: bool) -> None:
    with tempfile.TemporaryDirectory(prefix="arena-sdk-") as folder:
        socket = Path(folder) / "bot.sock"
        proc = subprocess.Popen(
            [sys.executable, str(TEST_BOTS / "lingering.py"), "--listen", f"unix:{socket}",
             *(["--hold"] if hold else [])],
            env=dict(os.environ, PYTHONPATH=str(REPO)), stderr=subprocess.PIPE, text=True)
        try:
            with grpc.insecure_channel(f"unix:{socket}") as channel:
                grpc.channel_ready_future(channel).result(timeout=60)
                stub = bot_pb2_grpc.BotServiceStub(channel)
                call = stub.GameEnded.future(bot_pb2.GameEndedRequest(
                    game_id="g", table_id="t", game=game_pb2.GAME_TRUMPS, seat=0,
                    players=4, totals=[0, 0, 0, 0], places=[1, 2, 3, 4]), timeout=600)
                assert proc.stderr is not None
                lines = []
                for line in proc.stderr:  # the handler has begun: it says so first
                    lines.append(line)
                    if line.strip() == "thinking":
                        break
                assert lines and lines[-1].strip() == "thinking", lines
                proc.send_signal(signal.SIGTERM)
                # well inside the handler's 600 s; the deadline itself is 1.5 s
                assert proc.wait(timeout=60) == 0
                with pytest.raises(grpc.RpcError):  # the call was cut, not answered
                    call.result(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            if proc.stderr is not None:
                proc.stderr.close()
