"""A submitted bundle through check-bot: its command run in its folder, in the sandbox,
with the whole folder visible read-only; each check's verdict is one line of the report
sent to the author, and a failure ends with the last lines the bot wrote to stderr (its
own output, in its own submission)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arena.checkbot.checker import percentile, run_checks
from arena.league_service.service import CheckReport
from arena.model.errors import SandboxError, one_line
from arena.model.league_api import CHECK, SubmitStep
from arena.model.limits import Confinement, Limits
from arena.model.spec import BotSpec, BotSpecError
from arena.proc.connection import HandshakeError

LOG_LINES = 8


def sdk_env() -> tuple[tuple[str, str], ...]:
    """The environment a submitted bot gets: ``PYTHONPATH`` to the folder holding this
    arena's package, so that a ``python3`` bot imports the league's own SDK (``arena.sdk``;
    the sandbox shows that package, and only it, read-only)."""
    import arena

    return (("PYTHONPATH", str(Path(arena.__file__).resolve().parents[1])),)
_LIMITS = Limits()


@dataclass(frozen=True, slots=True)
class BundleCheck:
    """check-bot's settings for submitted bots (a
    :class:`~arena.league_service.service.BundleChecker`)."""

    move_ms: int = 1000
    games_per_kind: int = 1
    limits: Limits = _LIMITS
    sandbox: bool = True
    games: tuple[str, ...] | None = None
    """The games checked (the league's); None: every game the bot claims."""
    options: tuple[tuple[str, Any], ...] = ()
    """The league's game options (``players`` included): its first complete game of the
    league's game is played with them."""

    async def __call__(self, folder: Path, command: str, log_dir: Path,
                       report: CheckReport) -> tuple[bool, str]:
        def hide(text: str) -> str:  # the league's own paths are none of the author's business
            return one_line(text.replace(str(log_dir), "(log)").replace(str(folder), "."))

        async def line(ok: bool, text: str) -> None:
            await report(SubmitStep(CHECK, hide(text), ok=ok))

        log_dir.mkdir(parents=True, exist_ok=True)
        try:
            spec = BotSpec.parse("cmd:" + command)
        except BotSpecError as e:
            await line(False, f"FAIL command: {e}")
            return False, "its command cannot be run"
        confinement = Confinement(self.sandbox, self.limits, read_only=(folder,), within=folder,
                                  env=sdk_env())
        try:
            league = ({self.games[0]: dict(self.options)} if self.games and self.options
                      else None)
            result = await run_checks(spec, f"cmd:{command}", self.games, self.move_ms,
                                      self.games_per_kind, log_dir, confinement, cwd=folder,
                                      first_options=league)
        except (HandshakeError, SandboxError) as e:
            await line(False, f"FAIL start: {e}")
            await self._tail(log_dir, line)
            return False, "the bot did not start, or did not answer its hand-shake"
        for check in result.checks:
            name = check.name if check.game is None else f"{check.game}: {check.name}"
            await line(check.ok, f"{'PASS' if check.ok else 'FAIL'} {name}: {check.reason}")
        if result.latencies_ms:
            values = result.latencies_ms
            await line(True, f"latency over {len(values)} decisions: p50 "
                             f"{percentile(values, 50):.1f} ms, max {max(values):.1f} ms")
        failed = [c for c in result.checks if not c.ok]
        if failed:
            await self._tail(log_dir, line)
            first = failed[0]
            return False, (f"{len(failed)} of {len(result.checks)} checks failed; first: "
                           f"{first.name}: {hide(first.reason)}")
        return True, f"all {len(result.checks)} checks passed"

    async def _tail(self, log_dir: Path,
                    line: Callable[[bool, str], Awaitable[None]]) -> None:
        logs = sorted(log_dir.glob("*.log"))
        if not logs:
            return
        try:
            text = logs[0].read_text(errors="replace")
        except OSError:
            return
        lines = [t for t in text.splitlines() if t.strip()][-LOG_LINES:]
        if not lines:
            return
        await line(False, f"the bot's stderr, its last {len(lines)} lines:")
        for text_line in lines:
            await line(False, "  | " + text_line[:300])
