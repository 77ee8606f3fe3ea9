"""The gate of a bot's files (arena/proc/gate.py) and the unpacker's judgement of links
(arena/league/bundle.py), on real files and real sandboxed bots.

The attack they close: three links in one archive, ``c -> b/..``, ``b -> x/..``, ``x ->
.``, in that order, each resolved inside the bundle when it was made, together lead to the
league's output folder; the manifest's ``python3 bot.py c/authors.json`` then made the
arena take that folder as the bot's own, show it, and (as root) copy its closed files
into the bot's view. Here: the unpacker refuses such an archive, in any order of its
entries (a property test over random archives of links); and a bundle folder that holds
such links anyway (made by hand, as if the unpacker had a bug) never starts: the gate
refuses the argument in one line, and the check's report to the author carries nothing
of the league's folder. The control shows the same links do lead there when the gate is
not asked to hold the bot to its folder (an organiser's own bot)."""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import posixpath
import shutil
import tarfile
from pathlib import Path

import pytest
import trio
from conftest import REPO, Sandbox, examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arena.league.bundle import BundleError, Caps, store_bundle, unpack
from arena.league_service.checks import BundleCheck, sdk_env
from arena.league_service.service import CheckReport
from arena.model.league_api import SubmitStep
from arena.model.limits import Confinement
from arena.model.spec import BotSpec
from arena.proc import ids
from arena.proc.bwrap import sandbox_works, view_paths
from arena.proc.connection import BotConnection, HandshakeError
from arena.proc.gate import GateError, check_view, own_folders

needs_sandbox = pytest.mark.skipif(
    sandbox_works() is not None and not os.environ.get("CI"),
    reason=f"no sandbox here: {sandbox_works()}")

SECRET = "league-master-seed-8f1e0c"

# -- the unpacker: links judged with the whole tree in place ----------------------------


def tar_gz(members: list[tuple[str, str, str]]) -> bytes:
    """A tar.gz of ``(name, kind, data-or-link)`` entries in that order, with a manifest."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, kind, value in [("bot.toml", "file", 'name = "t"\nversion = "1"\n'
                                   'runtime = "python3"\ncommand = "python3 bot.py"\n'),
                                  ("bot.py", "file", "print('hi')\n"), *members]:
            info = tarfile.TarInfo(name)
            if kind == "link":
                info.type, info.linkname = tarfile.SYMTYPE, value
                tar.addfile(info)
            elif kind == "dir":
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
            else:
                data = value.encode()
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue(), mtime=0)


CAPS = Caps(max_bundle_bytes=1 << 20, max_unpacked_bytes=1 << 20, max_files=100)


def stored(data: bytes, tmp: Path) -> Path:
    archive = tmp / "b.tar.gz"
    archive.write_bytes(data)
    bots = tmp / "bots"
    bots.mkdir(exist_ok=True)
    folder, _ = store_bundle(archive, bots, hashlib.sha256(data).hexdigest(), CAPS)
    return folder


CHAINS = {
    "the three links of the attack, the later ones last": [
        ("c", "link", "b/.."), ("b", "link", "x/.."), ("x", "link", ".")],
    "two links, the later one last": [("c", "link", "b/.."), ("b", "link", ".")],
    "thirty links up to /": [(f"u{i}", "link", f"u{i - 1}/..") for i in range(30, 0, -1)]
    + [("u0", "link", ".")],
    "a loop of links": [("a", "link", "b"), ("b", "link", "a")],
}


@pytest.mark.parametrize("chain", list(CHAINS))
def test_a_chain_of_links_leading_out_is_refused_whatever_the_order(
        chain: str, tmp_path: Path) -> None:
    data = tar_gz(CHAINS[chain])
    with pytest.raises(BundleError) as refused:
        stored(data, tmp_path)
    message = str(refused.value)
    assert ("a link leaving the bundle" in message or "a loop of links" in message) \
        and "\n" not in message, message
    assert not [p for p in (tmp_path / "bots").iterdir() if p.name != ".incoming"]


def test_links_that_stay_inside_are_kept_in_any_order(tmp_path: Path) -> None:
    """The honest twin: links to links, made before their targets, that stay inside."""
    folder = stored(tar_gz([("all", "link", "here/lib/.."), ("here", "link", "."),
                            ("lib/helper.py", "file", "X = 1\n"),
                            ("bin/run", "link", "../lib/helper.py")]), tmp_path)
    assert (folder / "all" / "lib" / "helper.py").read_text() == "X = 1\n"
    assert (folder / "bin" / "run").read_text() == "X = 1\n"


NAMES = ["a", "b", "c", "d", "s", "s/a", "s/b"]


@st.composite
def archives(draw: st.DrawFn) -> list[tuple[str, str, str]]:
    """Random archives of links, folders and files, in a random order."""
    count = draw(st.integers(1, 6))
    names = draw(st.lists(st.sampled_from(NAMES), min_size=count, max_size=count,
                          unique=True))
    # a target's parts: what climbs, and the names of this archive's own entries
    parts = [".", "..", *{n.split("/")[0] for n in names}]
    out = []
    for name in names:
        kind = draw(st.sampled_from(["link", "link", "link", "dir", "file"]))
        target = "/".join(draw(st.lists(st.sampled_from(parts), min_size=1, max_size=3)))
        out.append((name, kind, target if kind == "link" else "x"))
    return out


def paths_from_root(depth: int) -> list[str]:
    """Every path of up to ``depth`` names of the archives above, with no ``..``: what a
    manifest's argument may name."""
    names = ["a", "b", "c", "d", "s", "bot.py"]
    out = [""]
    level = [""]
    for _ in range(depth):
        level = [posixpath.join(p, n) for p in level for n in names]
        out += level
    return out


PATHS = paths_from_root(3)


@settings(max_examples=examples(400), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow])
@given(members=archives())
def test_no_accepted_bundle_has_a_path_that_resolves_outside_it(
        members: list[tuple[str, str, str]], tmp_path_factory: pytest.TempPathFactory) -> None:
    tmp = tmp_path_factory.mktemp("prop")
    archive = tmp / "b.tar.gz"
    archive.write_bytes(tar_gz(members))
    dest = tmp / "dest"
    try:
        unpack(archive, dest, CAPS)
    except BundleError:
        return
    root = Path(os.path.realpath(dest))
    for path in PATHS:
        real = Path(os.path.realpath(dest / path))
        assert real.is_relative_to(root), (members, path, real)


# -- the gate: a bot's own folders ------------------------------------------------------


def league_with_links(tmp: Path, links: list[tuple[str, str]]) -> Path:
    """A league-like output folder (0700) holding a secret (0600) and a bundle folder,
    with ``links`` made in the bundle by hand (as if the unpacker had let them through);
    the bundle folder."""
    league = tmp / "league"
    bundle = league / "bots" / "bundle"
    bundle.mkdir(parents=True)
    league.chmod(0o700)
    secret = league / "authors.json"
    secret.write_text(SECRET + "\n")
    secret.chmod(0o600)
    bot = (REPO / "tests" / "bots" / "reader_bot.py")
    shutil.copy(bot, bundle / "bot.py")
    for name, target in links:
        os.symlink(target, bundle / name)
    return bundle


ATTACK = [("c", "b/.."), ("b", "x/.."), ("x", ".")]


def test_an_argument_through_links_out_of_a_bundle_is_refused_in_one_line(
        tmp_path: Path) -> None:
    bundle = league_with_links(tmp_path, ATTACK)
    assert Path(os.path.realpath(bundle / "c")) == tmp_path / "league"  # they do lead there
    with pytest.raises(GateError) as refused:
        own_folders(["bot.py", "c/authors.json"], bundle, within=bundle)
    message = str(refused.value)
    assert "'c/authors.json' leads out of the bot's folder" in message and "\n" not in message
    # the control: an organiser's bot (not held to a folder) names that folder as given
    assert own_folders(["bot.py", "c/authors.json"], bundle) == [
        bundle, tmp_path / "league"]


def test_an_argument_that_is_a_link_out_of_its_folder_is_refused_for_every_bot(
        tmp_path: Path) -> None:
    folder = tmp_path / "bot"
    folder.mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "data.txt").write_text("x")
    (folder / "data.txt").symlink_to(tmp_path / "elsewhere" / "data.txt")
    (folder / "bot.py").write_text("")
    for within in (None, folder):
        with pytest.raises(GateError, match=r"'data\.txt' leads out of its folder through a "
                                            r"link"):
            own_folders(["bot.py", "data.txt"], folder, within=within)
    # an argument whose '..' passes through a link lands elsewhere than it reads
    (folder / "deep").symlink_to(tmp_path / "elsewhere")
    (tmp_path / "bot.py").write_text("")  # where it lands: not the bot.py it reads as
    with pytest.raises(GateError, match="leads out of its folder"):
        own_folders(["deep/../bot.py"], folder)
    # the honest twin: a link inside the folder, and a folder named through a link
    (folder / "alias.py").symlink_to("bot.py")
    assert own_folders(["alias.py", "-v", "7", str(tmp_path / "elsewhere" / "data.txt")],
                       folder) == [folder, tmp_path / "elsewhere"]


def test_a_confined_bots_view_shows_nothing_outside_its_folder_or_the_system(
        tmp_path: Path) -> None:
    """A native program whose '#!' names another bot's program: the view would show it."""
    other = tmp_path / "bots" / "other"
    other.mkdir(parents=True)
    (other / "bot").write_text("#!/bin/sh\n")
    mine = tmp_path / "bots" / "mine"
    mine.mkdir()
    program = mine / "bot"
    program.write_text(f"#!{other / 'bot'}\n")
    program.chmod(0o755)
    confined = Confinement(within=mine)
    with pytest.raises(GateError, match=r"the bot's view would show .*other/bot, outside "
                                        r"its folder"):
        view_paths(["./bot"], mine, confined)
    view_paths(["./bot"], mine, Confinement())  # an organiser's bot: its own choice
    program.write_text("#!/bin/sh\n")  # the honest twin
    ro, own, _ = view_paths(["./bot"], mine, confined)
    assert mine in ro and own == []
    check_view([Path("/usr/bin/python3"), mine / "x"], mine)
    with pytest.raises(GateError):
        check_view([tmp_path], mine)


def test_a_confined_bots_folder_with_closed_files_is_never_copied(tmp_path: Path) -> None:
    folder = tmp_path / "bundle"
    folder.mkdir()
    closed = folder / "key"
    closed.write_text("x")
    closed.chmod(0o600)
    with pytest.raises(ValueError, match="a bot confined to its folder is never shown them"):
        ids.staging(folder, own=True, copy=False)
    copied = ids.staging(folder, own=True)  # an organiser's own bot: copied for its uid
    assert copied is not None and copied.copy


# -- end to end: the league's check of a bundle, and the control ------------------------


@needs_sandbox
def test_the_check_of_a_bundle_with_links_out_never_starts_it_nor_reports_the_secret(
        tmp_path: Path, arena_sandbox: Sandbox) -> None:
    bundle = league_with_links(tmp_path, ATTACK)
    steps: list[SubmitStep] = []

    async def report(step: SubmitStep) -> None:
        steps.append(step)

    checker: CheckReport = report
    ok, why = trio.run(BundleCheck(move_ms=500), bundle, "python3 bot.py c/authors.json",
                       tmp_path / "check-logs", checker)
    text = "\n".join(s.text for s in steps)
    assert not ok and why == "the bot did not start, or did not answer its hand-shake"
    assert "FAIL start" in text and "leads out of the bot's folder" in text, text
    assert SECRET not in text
    assert not any(SECRET in p.read_text(errors="replace")
                   for p in (tmp_path / "check-logs").rglob("*.log"))


@needs_sandbox
def test_control_the_same_links_show_the_league_folder_to_a_bot_not_held_to_it(
        tmp_path: Path, arena_sandbox: Sandbox) -> None:
    """What the gate stops: started as an organiser's bot, the same command reads the
    league's closed file through the links (copied for its uid, as root)."""
    bundle = league_with_links(tmp_path, ATTACK)
    logs = tmp_path / "logs"
    connection = BotConnection("reader", BotSpec.parse("cmd:python3 bot.py c/authors.json"),
                               logs, cwd=bundle,
                               confinement=Confinement(read_only=(bundle,), env=sdk_env()))

    async def main() -> None:
        try:
            await connection.open()
        finally:
            await connection.aclose()

    trio.run(main)
    assert any(SECRET in p.read_text(errors="replace") for p in logs.rglob("*.log"))
    # and held to its folder, the same bot does not start
    held = BotConnection("reader", BotSpec.parse("cmd:python3 bot.py c/authors.json"),
                         tmp_path / "logs2", cwd=bundle,
                         confinement=Confinement(read_only=(bundle,), env=sdk_env(),
                                                 within=bundle))

    async def refused() -> None:
        try:
            await held.open()
        finally:
            await held.aclose()

    with pytest.raises(HandshakeError, match="leads out of the bot's folder"):
        trio.run(refused)
