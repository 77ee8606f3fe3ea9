"""The league service end to end, over real gRPC on loopback with real TLS (a CA made here,
as in tests/test_remote_tls.py): ``arena league serve`` processes (the league runner
playing real sandboxed games, the service in front), authors with tokens, bots submitted
as bundles and put through check-bot.

Covered: a Python bot joins and plays, its author reads its games and logs; tokens (none,
another's, unknown), ownership (another's bot, another's log); an update and a repeated
version; a bot that fails check-bot does not join and its author sees why; every hostile
bundle refused in one line; concurrent submissions from several clients; a flood within
the limits; kill -9 of the server during an upload, during a check and during games loses
nothing that was acknowledged and leaves nothing half done that counts."""

from __future__ import annotations

import hashlib
import io
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest
from conftest import REPO, bot_processes, wait_until
from league_helpers import (
    CRASH_BOT,
    League,
    bot_folder,
    submit,
    submit_bytes,
    wait_clean,
)
from test_bundle import HOSTILE
from test_remote_tls import Certs, certs  # noqa: F401  (the fixture)

from arena.model.league_api import (
    ACCEPTED,
    CHECK,
    DONE,
    FAILED_CHECKS,
    GAME_FINISHED,
    RECEIVED,
    REFUSED,
    UNPACKED,
    AuthorLimits,
)
from arena.v1 import league_pb2, league_pb2_grpc
from arena.wire.league import CHUNK_BYTES, LeagueCallError, LeagueClient, address_problem

SMALL = AuthorLimits(submissions_per_hour=100, max_bundle_bytes=4 << 20,
                     max_unpacked_bytes=2 << 20, max_files=50)
"""The limits of the author who sends hostile bundles (the caps of tests/test_bundle.py)."""


@pytest.fixture(scope="module")
def league(certs: Certs, tmp_path_factory: pytest.TempPathFactory) -> Iterator[League]:  # noqa: F811
    root = tmp_path_factory.mktemp("league")
    tmp = Path(os.path.realpath(root / "tmp"))
    tmp.mkdir()
    server = League(root / "out", tmp, tls=(certs.cert, certs.key), ca=certs.ca.read_bytes())
    server.out.mkdir()
    server.start()
    try:
        yield server
    finally:
        server.stop()
    assert wait_clean(server) == []


@pytest.fixture(scope="module")
def alice(league: League) -> str:
    return league.author("alice")


@pytest.fixture(scope="module")
def bob(league: League) -> str:
    return league.author("bob")


@pytest.fixture(scope="module")
def alice_bot(league: League, alice: str, tmp_path_factory: pytest.TempPathFactory
              ) -> tuple[list, float]:  # type: ignore[type-arg]
    """Alice's Python bot, submitted once: its steps and when the submission started."""
    folder = bot_folder(tmp_path_factory.mktemp("alice"), "alice-random")
    started = time.time()
    with league.client(alice) as client:
        steps = submit(client, folder)
    return steps, started


def asked_until(predicate: Callable[[], bool], timeout_s: float) -> bool:
    """``wait_until`` for a condition read over gRPC: asked every 0.2 s, not every 10 ms
    (each ask is a call the league's service answers)."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def verdict(steps: list) -> str:  # type: ignore[type-arg]
    return str(steps[-1].verdict)


def why(steps: list) -> str:  # type: ignore[type-arg]
    """The steps that did not pass, for an assertion's message."""
    return " | ".join(f"{s.stage}: {s.text}" for s in steps if not s.ok) or "all passed"


def test_a_python_bot_joins_over_tls_and_its_author_reads_its_games_and_logs(
        league: League, alice: str, alice_bot: tuple[list, float]) -> None:  # type: ignore[type-arg]
    steps, started = alice_bot
    stages = [s.stage for s in steps]
    assert stages[:2] == [RECEIVED, UNPACKED] and stages[-1] == DONE, steps
    assert verdict(steps) == ACCEPTED, steps[-1].text
    assert any(s.stage == CHECK and s.ok and s.text.startswith("PASS hand-shake") for s in steps)
    assert all("\n" not in s.text for s in steps)
    # the run of the same process took it through memory: no request file was ever
    # written (the inbox folder is made by the first request posted into it)
    assert not (league.out / "inbox").exists()
    sha = steps[-1].bundle
    folder = league.out / "bots" / sha
    assert (folder / "bot.py").stat().st_mode & 0o777 == 0o444
    assert folder.stat().st_mode & 0o777 == 0o555
    with league.client(alice) as client:
        status = client.status()
        assert status.author == "alice" and status.submissions_last_hour == 1
        mine = [b for b in status.bots if b.name == "alice-random"]
        assert mine and mine[0].author == "alice" and mine[0].bundle == sha
        games: list = []  # type: ignore[type-arg]

        def played() -> bool:
            games[:] = client.games()
            return bool(games)

        assert asked_until(played, 90)
        assert "alice-random" in games[0].seats
        first = min(g.finished for g in games)
        log = client.log(games[0].game_id)
        assert b"serving on unix:" in log  # the SDK's first line, in the bot's own stderr
        # rated once its first set is whole (the league rates whole sets by the same
        # cards): that set's other rotations may still be in flight
        rows: list = []  # type: ignore[type-arg]

        def rated() -> bool:
            rows[:] = client.standings()
            return any(r.name == "alice-random" for r in rows)

        assert asked_until(rated, 120)
        assert any(r.name == "alice-random" and r.author == "alice" and r.sigma > 0
                   for r in rows)
    print(f"\nfigure: python bot, submission to its first finished game: "
          f"{first - started:.2f} s")


def test_events_stream_the_games_as_they_finish(league: League, alice: str,
                                                alice_bot: tuple[list, float]) -> None:  # type: ignore[type-arg]
    with league.client(alice) as client:
        seen = []
        for event in client.events(timeout_s=60):
            seen.append(event)
            if event.kind == GAME_FINISHED:
                break
        assert seen and seen[-1].kind == GAME_FINISHED and "alice-random" in seen[-1].bots


def test_no_token_and_a_wrong_token_are_refused(league: League) -> None:
    for token in ("", "arena_" + "A" * 43):
        with league.client(token) as client:
            with pytest.raises(LeagueCallError) as refused:
                client.status()
            assert refused.value.code == "UNAUTHENTICATED"
            with pytest.raises(LeagueCallError) as refused:
                submit_bytes(client, b"x" * 100)
            assert refused.value.code == "UNAUTHENTICATED"
            with pytest.raises(LeagueCallError):
                list(client.events(timeout_s=5))


def test_another_authors_token_cannot_touch_a_bot_or_read_its_logs(
        league: League, alice: str, bob: str, alice_bot: tuple[list, float],  # type: ignore[type-arg]
        tmp_path: Path) -> None:
    with league.client(alice) as client:
        assert asked_until(lambda: bool(client.games()), 60)
        games = client.games()
    with league.client(bob) as client:
        with pytest.raises(LeagueCallError) as refused:
            client.retire("alice-random")
        assert refused.value.code == "PERMISSION_DENIED" and "not yours" in str(refused.value)
        with pytest.raises(LeagueCallError) as refused:
            client.log(games[0].game_id)
        assert refused.value.code == "NOT_FOUND"
        assert client.games() == []
        steps = submit(client, bot_folder(tmp_path, "alice-random", "9.9"))
        assert verdict(steps) == REFUSED and "not yours (it is alice's)" in steps[-1].text


def test_a_client_that_does_not_trust_the_certificate_is_refused(
        league: League, alice: str, certs: Certs) -> None:  # noqa: F811
    with (league.client(alice, ca=certs.other_ca.read_bytes()) as client,
          pytest.raises(LeagueCallError) as refused):
        client.status()
    assert refused.value.code == "UNAVAILABLE" and "\n" not in str(refused.value)
    plain = LeagueClient(league.target, alice, tls=False, timeout_s=5)
    with plain, pytest.raises(LeagueCallError):
        plain.status()


def test_only_loopback_may_be_served_without_tls() -> None:
    assert address_problem("127.0.0.1:0", None) is None
    assert address_problem("[::1]:0", None) is None
    problem = address_problem("0.0.0.0:50061", None)
    assert problem is not None and "needs TLS" in problem
    assert address_problem("192.0.2.1:50061", None) is not None


def test_an_update_a_repeated_version_and_retiring(league: League, tmp_path: Path) -> None:
    token = league.author("henry")
    with league.client(token) as client:
        assert verdict(submit(client, bot_folder(tmp_path, "henry-bot", "1"))) == ACCEPTED
        again = submit(client, bot_folder(tmp_path / "b", "henry-bot", "1"))
        assert verdict(again) == REFUSED and "in the league already" in again[-1].text
        newer = submit(client, bot_folder(tmp_path / "c", "henry-bot", "2",
                                          prelude="# version 2\n"))
        assert verdict(newer) == ACCEPTED and "new version" in newer[-1].text
        [bot] = [b for b in client.status().bots if b.name == "henry-bot"]
        assert bot.version == "2" and bot.bundle == newer[-1].bundle
        retired = client.retire("henry-bot")
        assert retired.status == "retired"
        [bot] = [b for b in client.status().bots if b.name == "henry-bot"]
        assert bot.status == "retired"


def test_a_bot_that_fails_check_bot_does_not_join_and_its_author_sees_why(
        league: League, tmp_path: Path) -> None:
    token = league.author("ivan")
    with league.client(token) as client:
        steps = submit(client, bot_folder(tmp_path, "crasher", script=CRASH_BOT))
        assert verdict(steps) == FAILED_CHECKS
        assert steps[-1].text.startswith("did not join: ")
        assert "checks failed; first:" in steps[-1].text
        fails = [s.text for s in steps if s.stage == CHECK and not s.ok]
        assert any(t.startswith("FAIL ") and "crash" in t for t in fails), fails
        assert all(str(league.out) not in s.text for s in steps)  # no server paths
        assert "crasher" not in [b.name for b in client.status().bots]


def test_every_hostile_bundle_is_refused_over_grpc(league: League) -> None:
    token = league.author("mallory", SMALL)
    rows = []
    with league.client(token) as client:
        for kind, (make, expected) in HOSTILE.items():
            steps = submit_bytes(client, make())
            assert verdict(steps) == REFUSED, (kind, steps[-1].text)
            assert expected in steps[-1].text and "\n" not in steps[-1].text, (kind, steps)
            rows.append((kind, steps[-1].text))
        big = os.urandom(5 << 20)
        steps = submit_bytes(client, big)
        assert verdict(steps) == REFUSED and "over your limit of 4 MiB" in steps[-1].text
        rows.append(("archive over the size cap (header)", steps[-1].text))
        # a header that lies about the size: refused once the bytes pass the cap
        lying = list(client.stub.Submit(_lying_upload(big), timeout=60,
                                        metadata=client.metadata))
        assert lying[-1].verdict == league_pb2.SUBMIT_VERDICT_REFUSED
        assert "over your limit of 4 MiB" in lying[-1].text
        rows.append(("archive over the size cap (a lying header)", lying[-1].text))
    assert sorted(p.name for p in (league.out / "bots" / ".incoming").iterdir()) == []
    print("\nhostile bundles:")
    for kind, text in rows:
        print(f"| {kind} | {text} |")


def _lying_upload(data: bytes) -> Iterator[league_pb2.SubmitRequest]:
    yield league_pb2.SubmitRequest(header=league_pb2.SubmitHeader(size=1000, format="tar.gz"))
    for i in range(0, len(data), CHUNK_BYTES):
        yield league_pb2.SubmitRequest(chunk=data[i:i + CHUNK_BYTES])


def test_concurrent_submissions_from_several_clients(league: League, tmp_path: Path) -> None:
    names = ["judy", "ken", "leo"]
    tokens = {n: league.author(n) for n in names}
    results: dict[str, list] = {}  # type: ignore[type-arg]
    errors: list[BaseException] = []

    def one(name: str) -> None:
        try:
            with league.client(tokens[name]) as client:
                results[name] = submit(client, bot_folder(tmp_path / name, f"{name}-bot"))
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=one, args=(n,)) for n in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not errors, errors
    assert {n: verdict(results[n]) for n in names} == {n: ACCEPTED for n in names}, \
        {n: results[n][-1].text for n in names if verdict(results[n]) != ACCEPTED}
    waited = sum(1 for n in names for s in results[n] if s.text == "waiting for a free check slot")
    assert waited >= 1  # one check at a time: the others waited their turn
    with league.client(tokens["judy"]) as client:
        field = {b.name for b in client.status().bots}
    assert {f"{n}-bot" for n in names} <= field


def test_a_flood_of_submissions_stays_within_the_limits(league: League) -> None:
    token = league.author("carol", AuthorLimits(submissions_per_hour=3))
    outcomes = []
    with league.client(token) as client:
        for _ in range(6):
            try:
                outcomes.append(verdict(submit_bytes(client, b"not an archive")))
            except LeagueCallError as e:
                outcomes.append(e.code)
                assert "limit is 3 submissions per hour" in str(e)
        assert client.status().submissions_last_hour == 3
    assert outcomes == [REFUSED] * 3 + ["RESOURCE_EXHAUSTED"] * 3


def test_one_submission_at_a_time_per_author(league: League) -> None:
    token = league.author("gina")
    release = threading.Event()
    first: list[object] = []

    def slow() -> Iterator[league_pb2.SubmitRequest]:
        yield league_pb2.SubmitRequest(header=league_pb2.SubmitHeader(size=10, format="tar.gz"))
        yield league_pb2.SubmitRequest(chunk=b"\x1f\x8b")
        release.wait(30)

    with league.client(token) as client:
        call = client.stub.Submit(slow(), timeout=60, metadata=client.metadata)
        thread = threading.Thread(target=lambda: first.extend(call))
        thread.start()
        incoming = league.out / "bots" / ".incoming"
        try:
            # the first is under way once its upload is being spooled
            assert wait_until(lambda: incoming.is_dir() and any(
                p.name.startswith("upload-") for p in incoming.iterdir()), 30)
            with pytest.raises(LeagueCallError) as refused:
                submit_bytes(client, b"x")
            assert refused.value.code == "RESOURCE_EXHAUSTED"
            assert "under way" in str(refused.value)
        finally:
            release.set()
            thread.join(30)
    assert first and first[-1].verdict == league_pb2.SUBMIT_VERDICT_REFUSED  # type: ignore[attr-defined]


# -- kill -9 ----------------------------------------------------------------------------


@pytest.fixture
def own_league(certs: Certs, tmp_path: Path) -> Iterator[League]:  # noqa: F811
    tmp = Path(os.path.realpath(tmp_path / "tmp"))
    tmp.mkdir()
    server = League(tmp_path / "out", tmp, tls=(certs.cert, certs.key), ca=certs.ca.read_bytes(),
                    check_games=0)
    server.out.mkdir()
    try:
        yield server
    finally:
        server.stop()
    assert wait_clean(server) == []


def _field(league: League, token: str) -> dict[str, str]:
    with league.client(token) as client:
        return {b.name: b.bundle for b in client.status().bots}


def test_kill9_during_an_upload_loses_nothing_acknowledged(own_league: League,
                                                           tmp_path: Path) -> None:
    league = own_league.start()
    token = league.author("nina")
    with league.client(token) as client:
        kept = submit(client, bot_folder(tmp_path, "nina-kept"))
    assert verdict(kept) == ACCEPTED, why(kept)
    sent = threading.Event()
    killed = threading.Event()

    def upload() -> Iterator[league_pb2.SubmitRequest]:
        yield league_pb2.SubmitRequest(header=league_pb2.SubmitHeader(size=8 << 20,
                                                                       format="tar.gz"))
        for _ in range(3):
            yield league_pb2.SubmitRequest(chunk=os.urandom(CHUNK_BYTES))
        sent.set()
        killed.wait(60)  # the upload stays open, unfinished, until the server is killed

    channel = grpc.secure_channel(league.target, grpc.ssl_channel_credentials(league.ca))
    stub = league_pb2_grpc.LeagueServiceStub(channel)
    call = stub.Submit(upload(), timeout=60, metadata=(("authorization", f"Bearer {token}"),))
    assert sent.wait(30)
    incoming = league.out / "bots" / ".incoming"
    # the upload is under way once its spool file is there (written off the game loop)
    assert wait_until(lambda: incoming.is_dir() and any(
        p.name.startswith("upload-") for p in incoming.iterdir()), 30)
    league.kill9()
    killed.set()
    with pytest.raises(grpc.RpcError):
        list(call)
    channel.close()
    league.start()
    assert any(name.startswith("upload-") for name in league.swept), league.swept
    assert list(incoming.iterdir()) == []
    assert _field(league, token) == {"nina-kept": kept[-1].bundle}
    assert sorted(p.name for p in (league.out / "bots").iterdir()) == [
        ".incoming", kept[-1].bundle]


def test_kill9_during_a_check_loses_nothing_acknowledged(own_league: League,
                                                         tmp_path: Path) -> None:
    league = own_league.start()
    token = league.author("omar")
    with league.client(token) as client:
        kept = submit(client, bot_folder(tmp_path, "omar-kept"))
        assert verdict(kept) == ACCEPTED, why(kept)
        slow = bot_folder(tmp_path / "slow", "omar-slow",
                          prelude="import time\ntime.sleep(6)\n")
        seen = []
        from arena.league.bundle import pack_to_temp

        archive, size = pack_to_temp(slow)
        with archive:
            data = archive.read()
        for step in client.submit(io.BytesIO(data), size):
            seen.append(step)
            if step.stage == CHECK and step.text.startswith("check-bot: starting"):
                # killed while the bot's process runs in its sandbox
                assert wait_until(lambda: bool(bot_processes(league.tmp)), 30)
                league.kill9()
                break
    sha = hashlib.sha256(data).hexdigest()
    assert [s.stage for s in seen][:2] == [RECEIVED, UNPACKED]
    league.start()
    assert _field(league, token) == {"omar-kept": kept[-1].bundle}
    # the slow bot's folder is complete (it was renamed into place before the check) but
    # not in the league: it does not count, and a new submission of it would reuse it
    assert (league.out / "bots" / sha / "bot.toml").is_file()
    assert list((league.out / "bots" / ".incoming").iterdir()) == []


def test_kill9_during_games_loses_nothing_acknowledged(own_league: League,
                                                       tmp_path: Path) -> None:
    league = own_league.start()
    token = league.author("quinn")
    with league.client(token) as client:
        kept = submit(client, bot_folder(tmp_path, "quinn-bot"))
        assert verdict(kept) == ACCEPTED, why(kept)
        finished: set[str] = set()
        for event in client.events(timeout_s=120):
            if event.kind == GAME_FINISHED and "quinn-bot" in event.bots:
                finished.add(event.game_id)
            if len(finished) >= 2 and event.kind == "game_started":
                break  # a game is in flight now
        before = {g.game_id for g in client.games()}
    assert finished <= before
    league.kill9()
    league.start()
    with league.client(token) as client:
        assert _field(league, token) == {"quinn-bot": kept[-1].bundle}
        after = {g.game_id for g in client.games()}
        assert before <= after  # every game it had reported is still there
        for event in client.events(timeout_s=120):  # and the league plays on
            if event.kind == GAME_FINISHED and "quinn-bot" in event.bots:
                break
        else:
            raise AssertionError("no game after the restart")


def test_arena_submit_exits_as_docs_submit_says(league: League, alice: str,
                                                tmp_path: Path) -> None:
    """docs/submit.md's exit codes are the command's: 1 when the league refuses (a wrong
    token), 2 for a usage or connection error (no token at all), 0 for an answer."""
    doc = " ".join((REPO / "docs" / "submit.md").read_text().split())
    assert "Exit code 0: the bot joined" in doc and "1: refused or failed its checks" in doc
    assert "(a wrong or revoked token" in doc and "2: a usage or connection error" in doc
    assert league.ca is not None
    ca = tmp_path / "ca.pem"
    ca.write_bytes(league.ca)
    base = [sys.executable, "-m", "arena", "submit", "--league",
            f"grpcs://{league.target}", "--tls-ca", str(ca), "--token-env", "T", "--status"]

    def submit_cli(token: str | None) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if k != "T"}
        if token is not None:
            env["T"] = token
        return subprocess.run(base, cwd=REPO, env=env, capture_output=True, text=True,
                              timeout=60)

    wrong = submit_cli("arena_" + "B" * 43)
    assert wrong.returncode == 1, wrong.stderr
    assert wrong.stderr.startswith("arena submit: refused: ") and "UNAUTHENTICATED" in wrong.stderr
    none = submit_cli(None)
    assert none.returncode == 2 and "no token in $T" in none.stderr
    ok = submit_cli(alice)
    assert ok.returncode == 0, ok.stderr
