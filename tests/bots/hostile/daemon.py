"""A hostile bot that leaves a daemon behind, then plays legally.

At start-up, before serving, it double-forks: the child calls ``setsid`` (out of the
bot's process group and session, so signalling the group misses it) and starts
``python -c "import time; time.sleep(1000)  # hostile-daemon-<marker>"`` with an empty
environment and no inherited files, then exits, so the daemon is re-parented. A test
looks for the marker in /proc/*/cmdline after the tournament.

``--marker`` (default: the ``--tag``, else random) names the daemon.

Report: ``{"attack": "daemon", "daemon_pid": pid, "marker": "hostile-daemon-..."}``
(``daemon_pid`` is as this bot sees it: inside a sandbox, a pid of its namespace).
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys

import _hostile


class Daemon(_hostile.Legal):
    name = "hostile-daemon"


def spawn(marker: str) -> tuple[int | None, str]:
    """Start the daemon; returns (its pid or None, an error if any)."""
    code = f"import time; time.sleep(1000)  # {marker}"
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # the intermediate: a new session, start the daemon, leave
        try:
            os.close(read_end)
            os.setsid()
            daemon = subprocess.Popen(
                [sys.executable, "-c", code], env={}, cwd="/",
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, close_fds=True)
            os.write(write_end, str(daemon.pid).encode())
        except BaseException as e:  # report whatever stopped it
            try:
                os.write(write_end, f"error {e}".encode())
            except OSError:
                pass
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as f:
        answer = f.read().decode(errors="replace")
    os.waitpid(child, 0)
    if answer.isdigit():
        return int(answer), ""
    return None, answer or "no answer"


if __name__ == "__main__":
    p = _hostile.parser(__doc__ or "")
    p.add_argument("--marker", default="")
    args, rest = _hostile.parse(p)
    marker = "hostile-daemon-" + (args.marker or args.tag or secrets.token_hex(6))
    pid, error = spawn(marker)
    _hostile.report("daemon", daemon_pid=pid, marker=marker, error=error)
    _hostile.serve(Daemon(), rest)
