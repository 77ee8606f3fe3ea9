"""A hostile bot that stops and kills the other bots, then plays legally.

From its first decision (``--from-start``: from start-up), every ``--period-s``, it
sends SIGSTOP (never followed by SIGCONT) to every process it can see but itself and its
parent, and SIGKILL to those whose command line names ``sample_bots`` or ``bots/``.
New processes (restarted bots) are hit as they appear.

Safety: of what it sees, it signals only the processes of its own arena (their
``ARENA_BOT_LISTEN`` is in a socket folder of the same arena, or they are in one of the
arena's cgroups), never the rest of the machine.

Report: ``{"attack": "signal", "signalled": [pids], "killed": [pids], "errors": N,
"visible": N}`` at first and whenever something new was signalled.
"""

from __future__ import annotations

import os
import signal
import threading

import _hostile

from arena.sdk import View


class Signaller(_hostile.Legal):
    name = "hostile-signaller"

    def __init__(self, period_s: float) -> None:
        super().__init__()
        self.period_s = period_s
        self.started = False
        self.lock = threading.Lock()

    def start(self) -> None:
        """Start the attack (once); every bot of the game is serving by now."""
        with self.lock:
            if not self.started:
                self.started = True
                threading.Thread(target=attack, args=(self.period_s,), daemon=True).start()

    def bid(self, view: View) -> int:
        self.start()
        return super().bid(view)

    def play(self, view: View) -> int:
        self.start()
        return super().play(view)


def attack(period_s: float) -> None:
    me = os.getpid()
    tried: set[int] = set()
    stopped: set[int] = set()
    killed: set[int] = set()
    errors = 0
    rounds = 0
    while True:
        rounds += 1
        new = False
        for pid in _hostile.visible_pids():
            if pid in tried or pid == me or not _hostile.may_attack(pid):
                continue
            tried.add(pid)
            argv = _hostile.cmdline(pid)
            try:
                os.kill(pid, signal.SIGSTOP)
                stopped.add(pid)
                new = True
            except OSError:
                errors += 1
                continue
            if any("sample_bots" in a or "bots/" in a for a in argv):
                try:
                    os.kill(pid, signal.SIGKILL)
                    killed.add(pid)
                except OSError:
                    errors += 1
        if new or rounds == 1:
            _hostile.report("signal", signalled=sorted(stopped), killed=sorted(killed),
                            errors=errors, visible=len(_hostile.visible_pids()))
        threading.Event().wait(period_s)


if __name__ == "__main__":
    p = _hostile.parser(__doc__ or "")
    p.add_argument("--period-s", type=float, default=0.2)
    p.add_argument("--from-start", action="store_true",
                   help="attack from start-up (other bots may then fail to start)")
    args, rest = _hostile.parse(p)
    bot = Signaller(args.period_s)
    if args.from_start:
        bot.start()
    _hostile.serve(bot, rest)
