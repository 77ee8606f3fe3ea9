"""A uid of its own for every sandboxed bot process (arena/proc/ids.py).

Each sandboxed process runs, outside its sandbox, as a uid leased from a reserved range:
then the kernel itself refuses it what a file's owner may ask (page residency by
``mincore`` and ``cachestat``), whatever the seccomp filter does. The probes here run
without the filter, to show the kernel's own refusal, each with a control run as the
arena's user (the sandbox as it was), which reads the residency."""

from __future__ import annotations

import json
import mmap
import os
import pwd
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

from arena.model.limits import Confinement
from arena.proc import ids, keeper
from arena.proc.bwrap import bwrap_binary, bwrap_options, sandbox_works, spawn_wrapper
from arena.proc.cgroup import limit_mechanism
from arena.proc.process import BotProcess

REPO = Path(__file__).resolve().parents[1]
BOT = REPO / "sample_bots" / "python" / "heuristic_bot.py"

needs_ids = pytest.mark.skipif(
    sandbox_works() is not None or not ids.id_mechanism().active,
    reason=f"no uid per bot process here: {sandbox_works() or ids.id_mechanism().why_not}")


def _uids(pid: int) -> list[int]:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Uid:"):
            return [int(x) for x in line.split()[1:]]
    raise AssertionError(f"no Uid line for {pid}")


def _gids(pid: int) -> list[int]:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Gid:"):
            return [int(x) for x in line.split()[1:]]
    raise AssertionError(f"no Gid line for {pid}")


def _groups(pid: int) -> str:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Groups:"):
            return line.split(":", 1)[1].strip()
    return ""


def _sandboxed_pids(proc: BotProcess) -> list[int]:
    """Every process of the bot below its wrapper: bubblewrap and what it runs."""
    root = proc.pid
    assert root is not None
    found = [root]
    for pid in found:
        try:
            children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        except OSError:
            continue
        found += [int(c) for c in children]
    return found


@needs_ids
def test_each_sandboxed_process_runs_as_a_uid_of_its_own(tmp_path: Path) -> None:
    """Two bot processes at once: each runs (real, effective, saved and file-system ids,
    no supplementary groups) as its own uid and gid from the range, which is no user of
    the machine; its lease ends with it."""
    mechanism = ids.id_mechanism()

    async def main() -> list[list[int]]:
        procs = [BotProcess(f"b{i}", f"{sys.executable} {BOT}", tmp_path / f"b{i}.log",
                            cwd=REPO, confinement=Confinement(), idle=False)
                 for i in range(2)]
        seen: list[list[int]] = []
        try:
            for proc in procs:
                channel = await proc.start()
                channel.close()
            for proc in procs:
                pids = _sandboxed_pids(proc)
                bot = [p for p in pids if p != proc.pid]
                assert bot, pids  # bubblewrap and the bot below the wrapper
                seen.append(sorted({u for p in bot for u in _uids(p)}
                                   | {g for p in bot for g in _gids(p)}))
                assert all(_groups(p) == "" for p in bot), [_groups(p) for p in bot]
                assert proc._lease is not None
                assert seen[-1] == [proc._lease.uid], (seen, proc._lease.uid)
        finally:
            for proc in procs:
                await proc.aclose()
        for proc in procs:
            assert proc._lease is None  # given back once nothing runs as it
        return seen

    seen = trio.run(main)
    uids = [s[0] for s in seen]
    assert len(set(uids)) == 2, uids
    for uid in uids:
        assert mechanism.first <= uid < mechanism.first + mechanism.count
        assert uid != os.getuid()
        with pytest.raises(KeyError):
            pwd.getpwuid(uid)
        # the lease is given back (this arena holds it no more; another arena, e.g.
        # another test worker, may take it at once)
        assert uid not in keeper.current().held_uids


@pytest.fixture
def own_range(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A range of uids of this test's own (other test workers lease from theirs)."""
    import secrets

    first = ids.DEFAULT_RANGE[0] + ids.DEFAULT_RANGE[1] + 16 * secrets.randbelow(1 << 16)
    monkeypatch.setenv("ARENA_BOT_IDS", f"{first}:16")
    ids.id_mechanism.cache_clear()
    yield
    monkeypatch.delenv("ARENA_BOT_IDS")
    ids.id_mechanism.cache_clear()


@pytest.mark.usefixtures("own_range")
def test_a_lease_is_never_given_twice_while_held() -> None:
    """Leases held by this arena and by another (a lock taken in another process) are
    skipped; a released one is given again."""
    if not ids.id_mechanism().active:
        pytest.skip(f"no uid per bot process here: {ids.id_mechanism().why_not}")
    first = ids.lease()
    assert first is not None
    folder = ids.id_mechanism().lock_dir
    nxt = first.uid + 1
    # another arena holds the next uid: a process of its own with the lock
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT); "
         "fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); sys.stdin.read()",
         os.path.join(folder, str(nxt))], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
        second = ids.lease()
        assert second is not None
        assert second.uid not in (first.uid, nxt), (first.uid, nxt, second.uid)
        first.release()
        again = ids.lease()
        assert again is not None and again.uid == first.uid
        again.release()
        second.release()
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=10)
        assert holder.stdout is not None
        holder.stdout.close()


PROBE = """\
import ctypes, json, mmap, os, sys
path = sys.argv[1]
libc = ctypes.CDLL(None, use_errno=True)
size = os.path.getsize(path)
fd = os.open(path, os.O_RDONLY)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                      ctypes.c_int, ctypes.c_long]
ptr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
pages = size // 4096
vec = (ctypes.c_ubyte * pages)()
rc = libc.mincore(ctypes.c_void_p(ptr), ctypes.c_size_t(size), vec)
out = {"mincore": rc, "resident": sum(v & 1 for v in vec), "pages": pages}
class Range(ctypes.Structure):
    _fields_ = [("off", ctypes.c_uint64), ("len", ctypes.c_uint64)]
stats = (ctypes.c_uint64 * 8)()
rc = libc.syscall(451, fd, ctypes.byref(Range(0, 0)), stats, 0)
out["cachestat"] = "ok" if rc == 0 else os.strerror(ctypes.get_errno())
out["cached"] = stats[0] if rc == 0 else None
print(json.dumps(out))
"""


def _probe(tmp_path: Path, leased: bool) -> dict[str, object]:
    """Run PROBE in the sandbox (no seccomp filter), as a leased uid or as the arena's
    user, over a root-owned file of 4,096 pages of which only the first few are cached."""
    folder = tmp_path / "open"  # readable by others: bound, not copied (its parent is not)
    folder.mkdir(mode=0o755)
    data = folder / "data.bin"
    pages = 4096  # 16 MiB: far more than the read-ahead around the one page read
    with open(data, "wb") as f:
        f.write(os.urandom(pages * 4096))
        f.flush()
        os.fsync(f.fileno())  # clean pages: the advice below drops them
    os.chmod(data, 0o644)
    fd = os.open(data, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        with mmap.mmap(fd, pages * 4096, prot=mmap.PROT_READ) as m:
            m[0]  # the first page cached, the others not
    finally:
        os.close(fd)
    script = folder / "probe.py"
    script.write_text(PROBE)
    os.chmod(script, 0o644)
    result: dict[str, object] = sandboxed([sys.executable, str(script), str(data)],
                                          folder, leased)[0]
    return result


def sandboxed(args: list[str], folder: Path, leased: bool, hide: tuple[Path, ...] = ()
              ) -> tuple[Any, list[ids.Staged] | None]:
    """Run ``args`` in the sandbox without the seccomp filter (to see what the kernel
    itself refuses), in ``folder``, as a leased uid or as the arena's user; its JSON
    output, and what was staged for it."""
    lease = ids.lease() if leased else None
    assert (lease is not None) == leased
    staged: list[ids.Staged] | None = [] if lease is not None else None
    options = bwrap_options(args, folder, Confinement(), {"PATH": "/usr/bin:/bin"},
                            hide=hide, staged=staged)
    command = [*spawn_wrapper(None, Confinement().limits, limit_mechanism(), lease, staged),
               bwrap_binary(), *options, "--", *args]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=60,
                              check=False)
    finally:
        if lease is not None:
            lease.release()
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), staged


@needs_ids
def test_the_kernel_refuses_page_residency_to_a_leased_uid(tmp_path: Path) -> None:
    """As a uid of its own the process owns nothing it sees: ``mincore`` answers every
    page resident (the kernel's answer to a non-owner), and ``cachestat`` is refused."""
    result = _probe(tmp_path, leased=True)
    assert result["mincore"] == 0 and result["resident"] == result["pages"], result
    assert result["cachestat"] in ("Operation not permitted", "Function not implemented"), \
        result


@pytest.mark.skipif(sandbox_works() is not None or os.geteuid() != 0,
                    reason="needs bubblewrap, as root")
def test_control_as_the_arenas_user_the_same_probe_reads_residency(tmp_path: Path) -> None:
    """The same probe and file, run as the arena's user (root): the residency is read."""
    result = _probe(tmp_path, leased=False)
    resident, pages = int(str(result["resident"])), int(str(result["pages"]))
    assert result["mincore"] == 0 and 1 <= resident < pages, result
    assert result["cachestat"] in ("ok", "Function not implemented"), result


READER = """\
import json, os
mine = open("secret-of-mine.txt").read()
print(json.dumps({"uid": os.getuid(), "mine": mine, "entries": sorted(os.listdir(".")),
                  "out": sorted(os.listdir("out")) if os.path.isdir("out") else None}))
"""


@needs_ids
def test_a_bot_folder_closed_to_others_is_copied_for_its_uid_without_what_is_hidden(
        tmp_path: Path) -> None:
    """A bot's own folder whose files only their owner may read (0700, 0600) is copied
    into a tmpfs of the process, readable by its uid; a hidden folder inside it (the
    output) is left out of the copy, and out of the view."""
    folder = tmp_path / "closed"
    folder.mkdir(mode=0o700)
    (folder / "bot.py").write_text(READER)
    (folder / "secret-of-mine.txt").write_text("the bot's own")
    for name in ("bot.py", "secret-of-mine.txt"):
        os.chmod(folder / name, 0o600)
    out = folder / "out"
    out.mkdir()
    (out / "tournament.sqlite").write_text("the store")
    how = ids.staging(folder, own=True, hidden=(out,))
    assert how is not None and how.copy and how.left_out == ("out",), how
    # the copy itself, made as a start makes it (in a mount namespace of its own)
    copied = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "/bin/sh", "-c",
         ids.stage_script([how]) + f"cd {ids.staged_path(0, how)} && find . | sort"],
        capture_output=True, text=True, timeout=60, check=True).stdout.split()
    assert copied == [".", "./bot.py", "./out", "./secret-of-mine.txt"], copied
    seen, staged = sandboxed([sys.executable, str(folder / "bot.py")], folder, True,
                             hide=(out,))
    assert staged is not None and [s.path for s in staged if s.copy] == [folder], staged
    assert seen["mine"] == "the bot's own" and seen["uid"] == 65534, seen
    assert seen["out"] is None and "out" not in seen["entries"], seen  # nor in the view


def test_a_closed_bot_folder_too_big_to_copy_is_refused_in_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "big"
    folder.mkdir(mode=0o700)
    with open(folder / "weights.bin", "wb") as f:
        f.truncate(ids.COPY_CAP_BYTES + 1)  # sparse: no disk, but its size counts
    with pytest.raises(ValueError, match=r"too big to copy .*chmod -R o\+rX"):
        ids.staging(folder, own=True)


@pytest.mark.skipif(not limit_mechanism().cgroups, reason="no cgroups here")
def test_processes_left_in_an_ended_bots_cgroup_are_killed_and_its_uid_given_back() -> None:
    """A cgroup whose processes outlived their bot (forked as it was killed) is killed
    again on a thread until empty, then removed, and the lease ends with it."""
    from arena.model.limits import Limits
    from arena.proc.cgroup import Cgroup
    from arena.proc.process import _kill_until_empty

    cgroup = Cgroup(limit_mechanism(), Limits(), "survivor")
    lease = ids.lease()
    survivor = subprocess.Popen(
        ["/bin/sh", "-c", 'for f in "$@"; do echo $$ > "$f"; done; exec sleep 600', "sh",
         *cgroup.procs_files()], start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while survivor.pid not in cgroup.pids() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert survivor.pid in cgroup.pids()
        reaped = threading.Thread(target=survivor.wait)  # its parent reaps it, as the arena
        reaped.start()
        _kill_until_empty(cgroup, lease)
        reaped.join(10)
        assert survivor.returncode == -signal.SIGKILL
        assert not any(d.exists() for d in cgroup.dirs.values()), cgroup.dirs
        if lease is not None:
            assert lease._fd is None  # given back
    finally:
        if survivor.poll() is None:
            survivor.kill()
            survivor.wait()
