"""A cache of directory entries of its own for every sandboxed bot process
(arena/proc/images.py): each shared folder of the view is mounted, in the bot's own mount
namespace, from an image, a file system (a superblock, a device number) of its own.

The kernel's cache of directory entries is per file system: with the folders bound from
the host, a name one bot looks up is cached for every bot, and the time of a lookup
tells whether another bot looked it up first (``tests/test_view.py`` shows that channel
end to end). Here: the mechanism, deterministically, on two live bots, with a control;
and how an image follows its folder."""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from arena.model.limits import Confinement
from arena.proc import images
from arena.proc.bwrap import sandbox_works
from arena.proc.process import BotProcess

REPO = Path(__file__).resolve().parents[1]
BOT = REPO / "sample_bots" / "python" / "heuristic_bot.py"

WHY_NOT = sandbox_works() or images.image_mechanism().why_not
REQUIRED = bool(os.environ.get("ARENA_REQUIRE_VIEW_IMAGES"))  # .ci/run, as root
needs_images = pytest.mark.skipif(bool(WHY_NOT) and not REQUIRED,
                                  reason=f"no view images here: {WHY_NOT}")


@pytest.mark.skipif(not REQUIRED, reason="ARENA_REQUIRE_VIEW_IMAGES is not set")
def test_view_images_are_in_force_where_required() -> None:
    assert not WHY_NOT, WHY_NOT


def _bot_pid(proc: BotProcess) -> int:
    """The deepest process below the bot's wrapper: the bot itself."""
    assert proc.pid is not None
    pid = proc.pid
    while True:
        try:
            children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        except OSError:
            return pid
        if not children:
            return pid
        pid = int(children[0])


def _shared_folders() -> list[str]:
    arch = sysconfig.get_config_var("MULTIARCH")
    folders = ["/usr/bin", sysconfig.get_paths()["stdlib"], sys.prefix, str(BOT.parent)]
    if isinstance(arch, str) and os.path.isdir(f"/usr/lib/{arch}"):
        folders.append(f"/usr/lib/{arch}")
    return [os.path.realpath(f) for f in folders]


def _fs_types(pid: int) -> dict[str, str]:
    """Mount point (as the bot sees it) -> file-system type, from its mount table."""
    out = {}
    for line in Path(f"/proc/{pid}/mountinfo").read_text().splitlines():
        fields, _, rest = line.partition(" - ")
        out[fields.split()[4]] = rest.split()[0]
    return out


def _devices_of_two_live_bots(tmp_path: Path) -> tuple[list[dict[str, int]], list[dict[str, str]]]:
    folders = _shared_folders()

    async def main() -> tuple[list[dict[str, int]], list[dict[str, str]]]:
        procs = [BotProcess(f"b{i}", f"{sys.executable} {BOT}", tmp_path / f"b{i}.log",
                            cwd=REPO, confinement=Confinement(), idle=False)
                 for i in range(2)]
        devices, types = [], []
        try:
            for proc in procs:
                (await proc.start()).close()
            for proc in procs:  # both alive at once
                pid = _bot_pid(proc)
                devices.append({f: os.stat(f"/proc/{pid}/root{f}").st_dev for f in folders})
                types.append(_fs_types(pid))
        finally:
            for proc in procs:
                await proc.aclose()
        return devices, types

    return trio.run(main)


@needs_images
def test_two_live_bots_see_each_shared_folder_from_a_file_system_of_their_own(
        tmp_path: Path) -> None:
    """Each shared folder of the view (the programs, the machine's libraries, the
    standard library, the venv, the bot's own folder) is, in each of two bots alive at
    once, an EROFS mount with a device of its own: not the host's, not the other
    bot's. The kernel keeps a cache of directory entries per file system, so a name one
    bot looks up is not in the other's cache."""
    devices, types = _devices_of_two_live_bots(tmp_path)
    for folder in _shared_folders():
        host = os.stat(folder).st_dev
        first, second = devices[0][folder], devices[1][folder]
        assert len({host, first, second}) == 3, (folder, host, first, second)
        for seen in types:
            # the folder, or the folder above it that holds it, is an image
            holder = max((m for m in seen if folder == m or folder.startswith(m + "/")),
                         key=len)
            assert seen[holder] == "erofs", (folder, holder, seen[holder])


@pytest.fixture
def images_off(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("ARENA_NO_VIEW_IMAGES", "1")
    images.image_mechanism.cache_clear()
    yield
    monkeypatch.delenv("ARENA_NO_VIEW_IMAGES")
    images.image_mechanism.cache_clear()


@needs_images
@pytest.mark.usefixtures("images_off")
def test_control_with_images_off_both_bots_see_the_hosts_file_system() -> None:
    """The same bots with ``ARENA_NO_VIEW_IMAGES``: every shared folder is the host's
    own file system in both (one cache of directory entries for all), and the arena says
    so."""
    assert not images.image_mechanism().active
    assert "bound from the host" in images.image_mechanism().describe()
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        devices, types = _devices_of_two_live_bots(Path(folder))
    for folder_path in _shared_folders():
        host = os.stat(folder_path).st_dev
        assert devices[0][folder_path] == devices[1][folder_path] == host, folder_path
    assert not any(kind == "erofs" for seen in types for kind in seen.values())


@pytest.fixture
def own_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    store = tmp_path / "images"
    monkeypatch.setenv("ARENA_VIEW_IMAGE_DIR", str(store))
    images._checked.clear()
    yield store
    images._checked.clear()


def _listing(image: Path) -> list[str]:
    """The image's contents, as a bot's mount namespace shows them."""
    done = images.run_mounted(images.image_mechanism(), [image],
                              f"cd {images.place(0)} && find . | sort")
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


@needs_images
def test_an_image_follows_its_folder_and_leaves_out_what_the_view_leaves_out(
        own_store: Path, tmp_path: Path) -> None:
    """An image is made once for a folder as it is; a folder changed is imaged again
    (the old image goes); a folder left out of the view is in it empty; and every file
    in it is root's, with its mode and time kept."""
    folder = tmp_path / "lib"
    (folder / "tests" / "deep").mkdir(parents=True)
    (folder / "tests" / "deep" / "secret.py").write_text("x = 1\n")
    (folder / "mod.py").write_text("y = 2\n")
    os.utime(folder / "mod.py", ns=(10**18, 10**18))
    exclude = [folder / "tests"]
    first = images.image_for(folder, exclude, fresh=True)
    assert first is not None and first.parent == own_store
    assert images.image_for(folder, exclude, fresh=True) == first  # unchanged: the same
    assert _listing(first) == [".", "./mod.py", "./tests"]
    (folder / "new.py").write_text("z = 3\n")
    second = images.image_for(folder, exclude, fresh=True)
    assert second is not None and second != first
    assert not first.exists()  # one image per folder: the newest
    assert _listing(second) == [".", "./mod.py", "./new.py", "./tests"]
    done = images.run_mounted(images.image_mechanism(), [second],
                              f"stat -c '%u %a %Y' {images.place(0)}/mod.py")
    assert done.stdout.split() == ["0", "644", str(10**9)], done.stderr


@needs_images
def test_making_images_of_machine_folders_is_said_once_and_a_slow_one_with_its_size(
        own_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """On a fresh machine the first bot start waits for the images of the machine's
    folders (some 2 GB, tens of seconds): the arena says why, once, and names each image
    that took long. A bot's own folder, made again at each change, is not announced."""
    monkeypatch.setattr(images, "_announced", [])
    own, lib, usr = (tmp_path / name for name in ("own", "lib", "usr"))
    for folder in (own, lib, usr):
        folder.mkdir()
        (folder / "a.py").write_text(f"# {folder.name}\n")
    assert images.image_for(own, fresh=True) is not None
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(images, "SAY_BUILD_S", 0.0)
    assert images.image_for(lib) is not None and images.image_for(usr) is not None
    err = capsys.readouterr().err.splitlines()
    assert [line.startswith("bot views: making the images") for line in err] == \
        [True, False, False], err
    assert err[1].startswith(f"bot views: made the image of {lib} (") and " MB in " in err[1]
    assert err[2].startswith(f"bot views: made the image of {usr} (")
    assert images.image_for(lib) is not None  # made already: nothing to say
    assert capsys.readouterr().err == ""


@needs_images
def test_a_bots_folder_too_big_for_an_image_is_bound_from_the_host_and_said_once(
        own_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """An image writes out every byte of its folder, a sparse file's holes too (a 2 GiB
    sparse file made a 2.1 GB image in 27 s here): a bot's folder above
    ARENA_VIEW_IMAGE_MAX_MB of apparent size is not imaged, and the arena says so once.
    The bot still starts, its folder bound from the host. Control: under the cap, an
    image; a machine's folder is not held to it."""
    monkeypatch.setattr(images, "_said_too_big", set())
    monkeypatch.setenv("ARENA_VIEW_IMAGE_MAX_MB", "1")
    folder = tmp_path / "bot"
    folder.mkdir()
    (folder / "bot.py").write_text(BOT.read_text())
    with open(folder / "sparse.bin", "wb") as f:
        f.truncate(3 << 20)  # no block on disk, 3 MiB to an image
    assert images.image_for(folder, fresh=True) is None
    assert images.image_for(folder, fresh=True) is None
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(f"arena: warning: {folder} is bound from the "
                                                f"host into bots' views"), err
    assert "its files take 3 MiB, above the 1 MiB" in err[0], err
    assert not list(own_store.glob("*.erofs"))

    async def bot_sees() -> tuple[str, int]:
        proc = BotProcess("big", f"{sys.executable} {folder / 'bot.py'}",
                          tmp_path / "big.log", cwd=folder, confinement=Confinement(),
                          idle=False)
        try:
            (await proc.start()).close()
            pid = _bot_pid(proc)
            seen = _fs_types(pid)
            holder = max((m for m in seen if str(folder) == m or
                          str(folder).startswith(m + "/")), key=len)
            return seen[holder], os.stat(f"/proc/{pid}/root{folder}").st_dev
        finally:
            await proc.aclose()

    kind, device = trio.run(bot_sees)
    assert kind != "erofs" and device == os.stat(folder).st_dev
    assert images.image_for(folder) is not None  # a machine's folder: no cap
    monkeypatch.setenv("ARENA_VIEW_IMAGE_MAX_MB", "4")
    (folder / "new.py").write_text("# changed\n")
    assert images.image_for(folder, fresh=True) is not None


@needs_images
def test_no_image_is_made_that_would_leave_its_store_nearly_full(
        own_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(images, "_said_too_big", set())
    monkeypatch.setattr(images, "_free_bytes", lambda store: 1100 << 20)
    folder = tmp_path / "lib"
    folder.mkdir()
    (folder / "data.bin").write_bytes(b"x" * (100 << 20))
    assert images.image_for(folder) is None
    assert "MiB free, too little for an image of 100 MiB" in capsys.readouterr().err
    assert not list(own_store.glob("*.erofs"))
    (folder / "data.bin").write_bytes(b"x" * (50 << 20))
    images._checked.clear()
    assert images.image_for(folder) is not None  # 1,100 - 50 leaves the 1,024 kept free


def test_a_path_is_a_literal_in_the_images_exclusions() -> None:
    assert images._regex("lib/python3.11/site-packages") == r"lib/python3\.11/site-packages"
    assert images._regex("a+b(c)[d]") == r"a\+b\(c\)\[d\]"
    assert "'" not in images.PERL_MOUNT  # it is quoted for the shell in single quotes


@needs_images
def test_an_image_no_bot_used_for_a_day_goes_when_the_next_is_made(
        own_store: Path, tmp_path: Path) -> None:
    """A bot's folder that is gone (a temporary one, a retired entry's) leaves its image
    for a day at most; an image in use is touched at each use and stays."""
    gone, used, new = (tmp_path / name for name in ("gone", "used", "new"))
    for folder in (gone, used, new):
        folder.mkdir()
        (folder / "bot.py").write_text(f"# {folder.name}\n")
    old_image = images.image_for(gone, fresh=True)
    used_image = images.image_for(used, fresh=True)
    assert old_image is not None and used_image is not None
    day_ago = os.stat(old_image).st_mtime - images.KEEP_UNUSED_S - 60
    for image in (old_image, used_image):
        os.utime(image, (day_ago, day_ago))
    assert images.image_for(used, fresh=True) == used_image  # a use touches it
    assert images.image_for(new, fresh=True) is not None
    assert not old_image.exists()
    assert used_image.exists()


def test_a_cap_that_is_not_a_number_is_said_once_and_the_default_used(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(images, "_said_bad_cap", set())
    monkeypatch.setenv("ARENA_VIEW_IMAGE_MAX_MB", "2GB")
    assert images._mb_setting() == images._mb_setting() == images.OWN_MAX_MB
    err = capsys.readouterr().err.splitlines()
    assert err == ["arena: warning: ARENA_VIEW_IMAGE_MAX_MB='2GB' is not a whole number of "
                   f"MiB; {images.OWN_MAX_MB} is used"], err
    monkeypatch.setenv("ARENA_VIEW_IMAGE_MAX_MB", "64")
    assert images._mb_setting() == 64


def _make(folder: Path, text: str, size: int = 0) -> Path:
    folder.mkdir()
    (folder / "bot.py").write_text(text)
    if size:
        (folder / "data.bin").write_bytes(os.urandom(size))
    for path in (folder / "bot.py", folder):
        os.utime(path, ns=(10**18, 10**18))
    if size:
        os.utime(folder / "data.bin", ns=(10**18, 10**18))
        os.utime(folder, ns=(10**18, 10**18))
    return folder


@needs_images
def test_two_folders_of_the_same_content_share_one_image_on_disk(
        own_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A virtual environment copied, a bot's folder in two checkouts: the images of two
    folders with the same content are one file on disk (a hard link to it). Control: a
    folder of other content has its own."""
    one = _make(tmp_path / "one", "# the same\n", 1 << 20)
    two = tmp_path / "two"
    shutil.copytree(one, two)  # (copy2: the same modes and times)
    os.utime(two, ns=(10**18, 10**18))
    other = _make(tmp_path / "other", "# another\n", 1 << 20)
    first, second, third = (images.image_for(f, fresh=True) for f in (one, two, other))
    assert first is not None and second is not None and third is not None
    assert first != second  # an image per folder...
    assert os.stat(first).st_ino == os.stat(second).st_ino  # ...holding one content
    assert os.stat(third).st_ino != os.stat(first).st_ino
    assert "the same content as another folder's: stored once" in capsys.readouterr().err
    contents = list((own_store / images.CONTENT).glob("*.erofs"))
    assert len(contents) == 2
    assert images._disk(own_store) == sum(os.stat(c).st_blocks * 512 for c in contents)


@needs_images
def test_the_images_are_kept_within_their_cap_the_oldest_unused_removed_first(
        own_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Past ARENA_VIEW_IMAGE_CACHE_MB the images unused the longest go first, each with
    its content once nothing links to it, and the arena says what it removed; an image
    this process has just used is kept (a run's working set is not made again)."""
    folders = [_make(tmp_path / f"f{i}", f"# {i}\n", 3 << 20) for i in range(4)]
    made = [images.image_for(f, fresh=True) for f in folders[:3]]
    assert all(m is not None for m in made)
    for age, image in enumerate(made):  # f0 unused the longest, then f1, then f2
        assert image is not None
        os.utime(image, (time.time() - 3000 + age, time.time() - 3000 + age))
    images._checked.clear()  # used by another process, long ago
    capsys.readouterr()
    monkeypatch.setenv("ARENA_VIEW_IMAGE_CACHE_MB", "7")  # room for two of the four
    newest = images.image_for(folders[3], fresh=True)
    assert newest is not None and newest.exists()
    assert [m.exists() for m in made if m is not None] == [False, False, True]
    assert images._disk(own_store) <= 7 << 20
    assert len(list((own_store / images.CONTENT).glob("*.erofs"))) == 2
    err = capsys.readouterr().err
    assert "bot views: removed 2 image(s) unused the longest" in err
    assert "within 7 MiB (ARENA_VIEW_IMAGE_CACHE_MB)" in err
