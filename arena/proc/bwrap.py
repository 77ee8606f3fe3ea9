"""Where a bot is sandboxed: the bubblewrap view of the file system, the namespaces, and
the wrapper chain that starts a confined bot.

A ``cmd:`` bot runs as ``setpriv --pdeathsig KILL`` -> ``sh`` (joins the bot's cgroups)
-> ``prlimit`` (rlimits) -> ``bwrap`` (namespaces, a read-only view of the files it
needs) -> the bot's command. No ``preexec_fn`` is used: grpcio's fork handlers make that
unsafe while calls are in flight. What a bot can see and do is stated in
``docs/protocol.md`` ("The sandbox") and ``docs/isolation.md``."""

from __future__ import annotations

import os
import shutil
import sys
from functools import cache
from pathlib import Path

from arena.model.errors import SandboxError
from arena.model.limits import Confinement, Limits
from arena.proc import ids, procfs
from arena.proc.cgroup import Cgroup, Mechanism
from arena.proc.gate import (
    SYSTEM_DIRS,
    GateError,
    check_view,
    own_folders,
    program_path,
    program_roots,
)
from arena.proc.images import MAX_IMAGES, image_for, image_mechanism, mount_script, place
from arena.proc.runtimes import command_view
from arena.proc.seccomp import sealed_memfd

BWRAP_PACKAGE = "bubblewrap"


def rlimit_args(limits: Limits, mechanism: Mechanism, own_uid: bool = False) -> list[str]:
    """``prlimit`` options for what cgroups do not cover (all of them without cgroups).
    ``own_uid``: the process runs as a uid of its own, so the process limit counts its
    processes alone (and bubblewrap's two). No memory may be locked (``--memlock=0:0``):
    a locked page outlives the reclaim after a game (see :mod:`arena.proc.seccomp`)."""
    args: list[str] = ["--memlock=0:0"]
    if limits.cpu_s:
        # the soft limit sends SIGXCPU (a clear cause); the hard one kills a bot ignoring it
        args.append(f"--cpu={limits.cpu_s}:{limits.cpu_s + 5}")
    if limits.file_mb:
        args.append(f"--fsize={limits.file_mb << 20}")
    if limits.open_files:
        args.append(f"--nofile={limits.open_files}")
    if not mechanism.cgroups:
        if limits.memory_mb:
            args.append(f"--data={limits.memory_mb << 20}")
        if limits.processes and own_uid:
            args.append(f"--nproc={limits.processes + 2}")
        elif limits.processes and os.getuid() != 0:
            # counts every process of the user, and root is exempt: a weak fallback
            args.append(f"--nproc={limits.processes + _user_processes()}")
    return args


def _user_processes() -> int:
    """The tasks (threads) of this user's live processes: the base of its process limit."""
    count = 0
    for pid in ids.processes_of(os.getuid()):
        try:
            count += len(os.listdir(f"/proc/{pid}/task"))
        except OSError:
            pass
    return count


def bwrap_binary() -> str:
    """The ``bwrap`` program; :class:`SandboxError` naming the package when it is missing."""
    path = shutil.which("bwrap")
    if path is None:
        raise SandboxError(
            f"bubblewrap (bwrap) is not installed: install the '{BWRAP_PACKAGE}' package "
            f"(apt-get install {BWRAP_PACKAGE}), or trust a bot explicitly with "
            f"'sandbox = false' in the tournament file (--no-sandbox for arena play)")
    return path


@cache
def sandbox_works() -> str | None:
    """None when bubblewrap can make its namespaces here; else why not (one line)."""
    try:
        bwrap = bwrap_binary()
    except SandboxError as e:
        return str(e)
    import subprocess

    try:
        done = subprocess.run(
            [bwrap, "--ro-bind", "/", "/", "--unshare-all", "--die-with-parent", "true"],
            capture_output=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"bubblewrap does not run here: {e}"
    if done.returncode != 0:
        why = " ".join(done.stderr.decode(errors="replace").split())[:200]
        return (f"bubblewrap cannot create namespaces here ({why}); user namespaces may be "
                f"disabled (sysctl kernel.unprivileged_userns_clone=1)")
    return None


_SYSTEM_DIRS = tuple(str(d) for d in SYSTEM_DIRS)


_ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "localtime",
              "nsswitch.conf", "passwd", "group", "ssl", "ca-certificates", "mime.types",
              "os-release", "debian_version")


def _existing(paths: list[Path]) -> list[Path]:
    return [p for p in paths if os.path.lexists(p)]


def view_paths(args: list[str], cwd: Path, confinement: Confinement
               ) -> tuple[list[Path], list[Path], list[Path]]:
    """What a sandboxed bot's view binds read-only (some may not exist), its own folders
    among them, and the paths inside them left out (besides the hidden ones). The
    ``runtime`` view shows the runtime of each program of the command's chain
    (:func:`arena.proc.runtimes.command_view`). Every path goes through the gate
    (:mod:`arena.proc.gate`), which admits a runtime's own paths besides the system's:
    :class:`~arena.proc.gate.GateError` (one line) for a command that reaches beyond what
    the bot may show, or whose interpreter is in no runtime."""
    ro: list[Path] = [Path("/etc") / name for name in _ETC_FILES]
    excluded: list[Path] = []
    allowed: list[Path] = []
    if confinement.view == "system":
        ro += [Path(d) for d in _SYSTEM_DIRS]
        ro += program_roots(args[0], cwd)
    else:
        program = program_path(args[0], cwd)
        if program is not None:
            runtime = command_view(program)
            refusal = runtime.refusal([p if p.is_absolute() else cwd / p
                                       for p in confinement.read_only])
            if refusal is not None:
                raise GateError(refusal)
            ro += runtime.view.shared
            excluded = runtime.view.exclude
            allowed = runtime.allowed
        prefixes = {Path(sys.prefix), Path(sys.base_prefix)}
        ro += [r for r in program_roots(args[0], cwd) if r not in prefixes and
               not any(r.is_relative_to(d) for d in _SYSTEM_DIRS)]
    own = own_folders(list(args[1:]), cwd, confinement.within)
    ro += own
    ro += [p if p.is_absolute() else cwd / p for p in confinement.read_only]
    check_view(ro, confinement.within, allowed)
    return ro, own, excluded


def warm_roots(args: list[str], cwd: Path, confinement: Confinement,
               hide: tuple[Path, ...] = ()) -> tuple[list[Path], list[Path], list[Path]]:
    """What :func:`arena.proc.view.warm` reads into the page cache before a sandboxed bot
    with the ``runtime`` view starts: all of its view (the bot's own folder too: two bots
    may share one, e.g. two scripts in one folder), what to leave out, and what to walk
    at every start (the bot's own folders and extras, which change between runs); nothing
    for the ``system`` view or an unsandboxed bot."""
    if not confinement.sandbox or confinement.view != "runtime":
        return [], [], []
    ro, _, excluded = view_paths(args, cwd, confinement)
    roots = [Path(os.path.abspath(p)) for p in _existing(ro)]
    installed = [Path(p) for p in (*_SYSTEM_DIRS, "/etc", sys.prefix, sys.base_prefix)]
    return (roots, excluded + [Path(os.path.abspath(h)) for h in hide],
            [r for r in roots if not any(r.is_relative_to(i) for i in installed)])


def view_images(roots: list[Path], exclude: list[Path], always: list[Path],
                hide: tuple[Path, ...] = ()) -> dict[Path, Path]:
    """The image of each folder of a bot's view (:func:`warm_roots`'s ``roots`` that are
    folders holding nothing hidden), made where missing
    (:func:`arena.proc.images.image_for`); empty where images are not in force. The
    folders in ``always`` (the bot's own, its extras, the SDK's source) are checked at
    every start, and one with files closed to other users is left to its copy
    (:func:`arena.proc.ids.staging`). Blocks, for seconds when it makes one: call it off
    the game loop."""
    if not image_mechanism().active:
        return {}
    secret = [Path(os.path.abspath(h)) for h in hide]
    out: dict[Path, Path] = {}
    for root in sorted(roots, key=lambda p: len(p.parts)):
        if any(root.is_relative_to(t) for t in out) or os.path.islink(root) or \
                not os.path.isdir(root) or any(p.is_relative_to(root) for p in secret) or \
                any(p.is_relative_to(root) and p != root for p in always):
            continue
        fresh = root in always
        if fresh and not ids.all_readable(root):
            continue
        image = image_for(root, [e for e in exclude if e.is_relative_to(root)], fresh=fresh)
        if image is not None:
            out[root] = image
    return out


def seccomp_fd() -> int:
    """A fresh file descriptor holding the bots' seccomp filter (see
    :mod:`arena.proc.seccomp`); :class:`SandboxError` in one line when libseccomp is
    missing or cannot build it. Pass it to the child and close it after the spawn."""
    try:
        from arena.proc.seccomp import filter_fd
    except (ImportError, OSError) as e:
        raise SandboxError(
            f"the bots' seccomp filter needs libseccomp and its Python binding pyseccomp "
            f"(apt-get install libseccomp2; pip install pyseccomp): {e}") from None
    try:
        return filter_fd()
    except (OSError, RuntimeError, ValueError) as e:
        raise SandboxError(f"cannot build the bots' seccomp filter: {e}") from None


SOCKET_DIR = "/run/arena"
"""The bot's socket folder, inside its sandbox: a tmpfs of its own, :data:`SOCKET_DIR_BYTES`
in size, mode 0700, never bound from the host. The arena reaches it through
``/proc/<the sandbox's first process>/root`` (see :mod:`arena.proc.process`)."""

SOCKET_DIR_BYTES = 65536


def bwrap_args(args: list[str], cwd: Path, confinement: Confinement,
               env: dict[str, str], hide: tuple[Path, ...] = (),
               seccomp: int | None = None, info_fd: int | None = None) -> list[str]:
    """The bubblewrap command line that runs ``args`` confined, in the folder ``cwd``.

    The command is run exactly as written, in ``cwd``: its arguments are never changed.
    Visible read-only: /usr (and /lib, /bin symlinks), a few files of /etc, the program
    or interpreter and its prefix, the folder of each argument that names an existing
    file (the bot's own folder), extra ``read_only`` paths. ``cwd`` itself always exists
    (an empty folder where none of those shows it), so that relative paths resolve as
    outside. Writable: its socket folder (:data:`SOCKET_DIR`, a small tmpfs of its own)
    and a private /tmp. ``hide`` (the output
    folder, other bots' folders) is covered by an empty folder wherever it lies inside
    what is visible. Own user, PID, IPC, network, UTS and cgroup namespaces; no network
    at all. ``seccomp``: the file descriptor of the seccomp filter (:func:`seccomp_fd`),
    loaded last, just before the bot's command; nested user namespaces are refused.
    ``info_fd``: bubblewrap writes ``{"child-pid": N}`` there (the sandbox's first process,
    seen from the arena).
    """
    return [bwrap_binary(), *bwrap_options(args, cwd, confinement, env, hide, seccomp,
                                            info_fd), "--", *args]


def bwrap_options(args: list[str], cwd: Path, confinement: Confinement,
                  env: dict[str, str], hide: tuple[Path, ...] = (),
                  seccomp: int | None = None, info_fd: int | None = None,
                  staged: list[ids.Staged] | None = None,
                  images: dict[Path, Path] | None = None,
                  mounts: list[Path] | None = None) -> list[str]:
    """The options of :func:`bwrap_args` (what follows ``bwrap``, up to ``--``).

    ``staged``: bubblewrap will run as a uid of the bot's own (:mod:`arena.proc.ids`):
    each bind source that uid cannot reach is appended to the list and bound from its
    staged place (:func:`arena.proc.ids.staged_path`) instead. ``images``: the image of
    each shared folder of the view (:func:`arena.proc.images.image_for`); each one used
    is appended to ``mounts`` and the folder bound from its place
    (:func:`arena.proc.images.place`), where the spawn chain mounts it."""
    from arena.proc import seccomp as filters

    out = [*_bwrap_view(args, cwd, confinement, hide, staged, images, mounts),
           *(filters.bwrap_options(seccomp) if seccomp is not None else []),
           "--size", str(SOCKET_DIR_BYTES), "--perms", "0700", "--tmpfs", SOCKET_DIR,
           *(["--info-fd", str(info_fd)] if info_fd is not None else []), "--clearenv"]
    for key, value in env.items():
        out += ["--setenv", key, value]
    return [*out, "--chdir", str(cwd)]


def options_fd(options: list[str]) -> int:
    """A sealed memfd holding ``options`` for ``bwrap --args FD`` (NUL-terminated): the
    options stay out of every command line (``/proc/PID/cmdline`` of bubblewrap shows
    ``bwrap --args N -- <the bot's command>``). Pass it to the child and close it after
    the spawn."""
    return sealed_memfd("arena-bwrap-args", b"".join(os.fsencode(o) + b"\0" for o in options))


def _bwrap_view(args: list[str], cwd: Path, confinement: Confinement,
                hide: tuple[Path, ...], staged: list[ids.Staged] | None = None,
                images: dict[Path, Path] | None = None,
                mounts: list[Path] | None = None) -> list[str]:
    """What a bot sees: the namespace and mount options (worked out at each start, so a
    file made or removed since is seen as it is now)."""
    ro, own, excluded = view_paths(args, cwd, confinement)
    out = ["--unshare-user", "--unshare-all", "--die-with-parent", "--new-session",
           "--uid", "65534", "--gid", "65534", "--hostname", "bot",
           "--dev", "/dev", "--proc", "/proc",
           # /proc shows the bot's own processes and no counter of the machine's
           *procfs.view_options(confinement.limits)]
    if confinement.limits.file_mb:
        out += ["--size", str(max(confinement.limits.file_mb, 16) << 20)]
    out += ["--tmpfs", "/tmp"]
    for link, target in (("/lib", "usr/lib"), ("/lib64", "usr/lib64"), ("/bin", "usr/bin"),
                         ("/sbin", "usr/sbin")):
        if os.path.islink(link):
            out += ["--symlink", target, link]
        elif os.path.isdir(link):
            ro.append(Path(link))
    # what the view must not show: a hidden folder inside what is bound (not one that
    # holds the bot's own folder)
    hidden = [secret for secret in (Path(os.path.abspath(h)) for h in hide)
              if not any(o.is_relative_to(secret) for o in own)]
    binds: list[Path] = []
    for path in sorted({Path(os.path.abspath(p)) for p in _existing(ro)},
                       key=lambda p: len(p.parts)):
        if not any(path.is_relative_to(b) for b in binds):
            binds.append(path)
            source = str(path)
            secrets = [s for s in hidden if s.is_relative_to(path)]
            image = (images or {}).get(path) if mounts is not None and not secrets \
                and len(mounts) < MAX_IMAGES else None
            if image is not None and mounts is not None:
                # a folder shared with other bots: from an image of its own, a cache of
                # directory entries no other bot reaches (arena.proc.images)
                source = place(len(mounts))
                mounts.append(image)
            elif staged is not None:
                try:
                    how = ids.staging(path, own=path in own,
                                      hidden=tuple(Path(os.path.abspath(h)) for h in hide),
                                      copy=confinement.within is None)
                except ValueError as e:
                    raise SandboxError(str(e)) from None
                if how is not None:
                    if len(staged) >= ids.MAX_STAGED:
                        raise SandboxError(
                            f"more than {ids.MAX_STAGED} folders of the bot's view are "
                            f"closed to other users (the last: {path})")
                    source = ids.staged_path(len(staged), how)
                    staged.append(how)
            out += (_leaves(Path(source), path, secrets) if secrets
                    else ["--ro-bind", source, str(path)])
    for path in excluded:
        # left out of the runtime view (the standard library's tests, a base installation's
        # packages): covered by an empty read-only tmpfs. Their names are no secret, and a
        # cover is one mount where exact leaves are one per entry (a start 1 s slower)
        if os.path.isdir(path) and any(path.is_relative_to(b) for b in binds) and \
                not any(o.is_relative_to(path) for o in own):
            out += ["--perms", "0555", "--size", "4096", "--tmpfs", str(path),
                    "--remount-ro", str(path)]
    if not any(cwd.is_relative_to(b) for b in binds):
        out += ["--dir", str(cwd)]  # the working folder, empty (its parents too)
    return out


MAX_LEAVES = 2000
"""The most entries a folder on the way to a hidden one may have (each is a mount)."""


def _leaves(source: Path, dest: Path, secrets: list[Path]) -> list[str]:
    """``dest`` (bound from ``source``) without the ``secrets`` inside it, built from its
    exact leaves: every entry is bound on its own but the ones on the way to a secret,
    which are made as empty folders and filled the same way, and the secrets, which are
    left out. A secret's name then appears nowhere in the view, not even in the mount
    table (a cover would name it). Symbolic links are made as links."""
    if dest in secrets:
        return []
    out = ["--dir", str(dest)]
    try:
        entries = sorted(os.listdir(dest))
    except OSError:
        return out
    if len(entries) > MAX_LEAVES:
        raise SandboxError(f"{dest} has more than {MAX_LEAVES} entries on the way to a "
                           f"hidden folder: move the output folder out of the bot's folder")
    for name in entries:
        child = dest / name
        if child in secrets:
            continue
        if os.path.islink(child):
            out += ["--symlink", os.readlink(child), str(child)]
        elif any(s.is_relative_to(child) for s in secrets) and child.is_dir():
            out += _leaves(source / name, child, secrets)
        else:
            out += ["--ro-bind", str(source / name), str(child)]
    return out


def idle_start_possible(cgroup: Cgroup | None) -> bool:
    """Whether a bot can start at idle CPU priority and be raised to normal once it
    serves: that needs its cgroup (to find every thread) and the right to raise a
    thread's priority (root)."""
    return cgroup is not None and os.geteuid() == 0


def spawn_wrapper(cgroup: Cgroup | None, limits: Limits, mechanism: Mechanism,
                  lease: ids.Lease | None = None, staged: list[ids.Staged] | None = None,
                  mounts: list[Path] | None = None) -> list[str]:
    """The prefix of a confined command: ``setpriv --pdeathsig KILL``; with a ``lease``
    (:mod:`arena.proc.ids`) and ``staged`` sources, a mount namespace of the bot's own;
    ``sh`` joining the cgroups (and binding the staged sources); ``prlimit``; with a
    lease, the change to its uid and gid (``setpriv --reuid --regid --clear-groups``,
    which asks for the parent-death signal again: a uid change clears it)."""
    prefix: list[str] = []
    setpriv = shutil.which("setpriv")
    if setpriv is not None:
        # killed with the arena even before bubblewrap's own --die-with-parent is set up
        # (the signal survives the execs below)
        prefix += [setpriv, "--pdeathsig", "KILL", "--"]
    before, switch = ids.wrapper(lease, staged or [], bool(mounts)) if lease is not None \
        else ([], [])
    prefix += before
    stage = ids.stage_script(staged or []) if lease is not None else ""
    if lease is not None and mounts:
        stage += mount_script(image_mechanism(), mounts)
    if cgroup is not None or stage:
        # the shell writes its own pid into each cgroup, then execs the rest: every
        # process of the bot starts inside, without a preexec_fn
        # (and it goes no further if the arena ended before setpriv could ask for the
        # signal: its parent is then no longer the arena)
        prefix += ["/bin/sh", "-c",
                  '[ "$PPID" = "$1" ] || exit 125; shift; '
                  'while [ "$1" != "--" ]; do echo $$ > "$1" || exit 125; shift; done; '
                  f'shift; {stage}exec "$@"', "arena-spawn", str(os.getpid()),
                  *(cgroup.procs_files() if cgroup is not None else []), "--"]
    rlimits = rlimit_args(limits, mechanism, own_uid=lease is not None)
    if rlimits:
        prlimit = shutil.which("prlimit")
        if prlimit is not None:
            prefix += [prlimit, *rlimits, "--"]  # as root: a hard limit may be raised
    return prefix + switch
