"""Runtimes: what of the machine a sandboxed bot's view shows for the interpreter its
command starts, and its libraries.

A **runtime** is a name (what a league's ``bot.toml`` says), the programs it covers
(``ruby`` covers ``/usr/bin/ruby`` and ``/usr/bin/ruby3.1``) and what it shows: the files
of Debian packages, folders or files given by path, or for the built-in Python, Java and
Node.js, their homes as the arena finds them. Every ``runtime`` view (:mod:`arena.proc.view`,
:func:`arena.proc.bwrap.view_paths`) is the **base view** (:func:`base_roots`: the
programs, the library folders, time zones, the C.UTF-8 locale), then, for the command's
program and each interpreter of its ``#!`` chain (and each runtime a script names as a
command), the view of the runtime that covers it (:func:`command_view`).

Built in (:data:`BUILTIN`): ``python3``, ``node``, ``java``, ``ruby`` and ``native`` (the
bot's own program: the base view only). An organiser adds more in the tournament or
league file (``[[runtimes]]``, :func:`use_runtimes`), e.g. ``name = "perl"``,
``packages = ["perl"]``: a new runtime is one line.

**A runtime from Debian packages** (:func:`package_view`): the packages named and those
they depend on (``Depends`` and ``Pre-Depends``, the first installed choice of each
alternative, recursively; not the essential packages, which are the system itself and
whose libraries the base view holds, nor those used only by installation scripts,
:data:`INSTALL_ONLY`), their files as dpkg lists them (``dpkg-query -L``), reduced to what
to bind:

* only what lies in ``/usr`` or ``/opt`` (a package's ``/etc`` and ``/var`` files are
  not shown: ``/var/cache/debconf`` holds passwords), without documentation, manual
  pages, headers and the like (:data:`LEFT_OUT`), and without what the base view shows
  already (``/usr/bin``, ``/usr/lib/x86_64-linux-gnu``, ...);
* a folder whose every entry, on disk, is a file of that package set is bound whole
  (``/usr/lib/ruby``): one bind, one image of its own (:mod:`arena.proc.images`), one
  walk into the page cache; so is one where the only other entries are a few folders
  of other packages (at most :data:`MAX_COVERED`: ``ruby-grpc-tools``' gem among the
  gems of ``/usr/share/rubygems-integration/all/gems``), each covered by an empty
  folder (its name shows, none of its files; an image holds it empty). A folder shared
  otherwise (``/usr/share/rubygems-integration/all/specifications``, where another
  package has a file) is not: its entries of the set are bound one by one, so nothing
  of another package shows. Fewer folders matter: a bot mounts at most
  :data:`arena.proc.images.MAX_IMAGES` images, and a folder past them is bound from the
  host.

dpkg and the walk of the folders take seconds (Ruby's: 2.6-3.9 s on a loaded two-core
machine): the result is kept in the process and in
``~/.cache/trick-arena/runtimes-UID.json`` (read back in a few milliseconds), for as long
as dpkg's database (``/var/lib/dpkg/status``) is unchanged.

**A command whose interpreter is in no runtime** (:attr:`CommandView.problem`): a
program of the system (in ``/usr``, ``/opt``, ``/bin``, ...) that the command or a
``#!`` line starts and that no runtime covers is looked up in dpkg: Debian builds an
interpreter and its library from one source package (``perl-base``, ``perl-modules-5.36``
and ``libperl5.36`` from ``perl``), so when the installed packages of its source hold
files the base view does not show, it would start and not find its library. That is a
one-line error naming the fix (a runtime for it, or ``view = "system"``), unless the
bot's ``read_only`` extras show all it lacks (:meth:`CommandView.refusal`). The essential
packages are left out of that count (``perl-base``, ``dash``, ``bash``, ``coreutils``):
Debian requires them to work with nothing but their own files, and their programs are
what native bots' wrappers run (``sh``, ``bash``, ``env``). So a program whose source
package needs nothing more is fine, as is a program dpkg does not know
(``/usr/local/bin``): the arena cannot tell what it needs.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from arena.proc.gate import SYSTEM, SYSTEM_DIRS

__all__ = ["BUILTIN", "CommandView", "PackageView", "Runtime", "RuntimeView",
           "base_roots", "command_view", "known_runtimes", "package_view", "runtime_named",
           "use_runtimes"]

BASE = ("/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/lib64", "/usr/share/zoneinfo",
        "/usr/lib/locale/C.utf8", "/usr/lib/locale/C.UTF-8", "/usr/share/java",
        "/usr/share/nodejs")
"""The base view's folders (with the library folders, :func:`libdirs`)."""

LEFT_OUT = ("/usr/share/doc", "/usr/share/doc-base", "/usr/share/man", "/usr/share/info",
            "/usr/share/lintian", "/usr/share/bug", "/usr/share/menu", "/usr/share/locale",
            "/usr/share/bash-completion", "/usr/share/zsh", "/usr/share/fish",
            "/usr/share/applications", "/usr/share/icons", "/usr/share/pixmaps",
            "/usr/share/gdb", "/usr/share/systemtap", "/usr/share/gcc", "/usr/include",
            "/usr/lib/pkgconfig", "/usr/share/pkgconfig", "/usr/src", "/usr/lib/debug",
            "/usr/lib/systemd", "/usr/lib/tmpfiles.d", "/usr/lib/sysusers.d",
            "/usr/lib/udev", "/usr/lib/mime", "/usr/share/debianutils",
            "/usr/share/aclocal", "/usr/lib/cmake")
"""What of a package a running program does not read: documentation, manual pages,
translations (the sandbox's ``LANG`` is ``C.UTF-8``), shell completions, desktop files,
headers and build files, debugger and tracing scripts, the machine's service and device
set-up."""

INSTALL_ONLY = frozenset({"debconf", "cdebconf", "debconf-2.0", "dpkg", "install-info",
                          "ucf", "init-system-helpers", "adduser", "lsb-base",
                          "sensible-utils"})
"""Packages that packages depend on for their installation scripts only: not followed."""

_MAX_SHEBANG = 4
"""``#!`` lines followed from the command to its interpreter."""

_SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"


# -- the base view ----------------------------------------------------------------------


def libdirs() -> list[str]:
    """The machine's library folders: the multiarch one (``/usr/lib/x86_64-linux-gnu``),
    and those the dynamic loader is told to search (``/etc/ld.so.conf``, e.g.
    ``/usr/local/lib``)."""
    arch = sysconfig.get_config_var("MULTIARCH")
    found = [f"/usr/lib/{arch}"] if isinstance(arch, str) and arch else []
    try:
        found += sorted(f"/usr/lib/{n}" for n in os.listdir("/usr/lib")
                        if n.endswith(("-linux-gnu", "-linux-gnueabihf", "-linux-musl")))
    except OSError:
        pass
    found += ld_so_conf("/etc/ld.so.conf", 0)
    return [d for d in dict.fromkeys(found) if os.path.isdir(d)]


def ld_so_conf(path: str, depth: int) -> list[str]:
    """The folders an ``ld.so.conf`` names, with its ``include`` files (two levels)."""
    try:
        with open(path, errors="replace") as f:
            lines = f.read(1 << 16).splitlines()
    except OSError:
        return []
    out: list[str] = []
    for line in lines:
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        if words[0] == "include" and depth < 2:
            for pattern in words[1:]:
                for name in sorted(glob.glob(pattern if os.path.isabs(pattern) else
                                             os.path.join(os.path.dirname(path), pattern))):
                    out += ld_so_conf(name, depth + 1)
        elif os.path.isabs(words[0]):
            out.append(os.path.normpath(words[0]))
    return out


def base_roots() -> list[Path]:
    """The base view: what every sandboxed bot with the ``runtime`` view sees of the
    machine's software, whatever its runtime."""
    return [Path(p) for p in (*BASE, *libdirs())]


@dataclass
class RuntimeView:
    """The ``runtime`` view of one command: ``shared`` folders and files (seen by other
    bots too: warmed), and ``exclude``, paths inside them left out of the view."""

    shared: list[Path] = field(default_factory=list)
    exclude: list[Path] = field(default_factory=list)


# -- runtimes ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Runtime:
    """A named view of the machine for an interpreter and its libraries."""

    name: str
    programs: tuple[str, ...] = ()
    """The programs it covers, by name: ``ruby`` covers ``ruby`` and ``ruby3.1`` (a name
    with a version after it); the first words a league's ``bot.toml`` command may start
    with."""
    packages: tuple[str, ...] = ()
    """Debian packages whose files (and their dependencies') it shows, those installed."""
    paths: tuple[Path, ...] = ()
    """Folders or files it shows (an organiser's choice: the gate admits them for a
    league's bundle that uses this runtime)."""
    origin: str = "built in"
    """Where it was defined: ``built in``, or the file that added it."""
    home: str = ""
    """A built-in runtime whose home the arena finds itself: ``python``, ``java``,
    ``node``."""
    fallback: tuple[Path, ...] = ()
    """What a package runtime shows where there is no dpkg (another distribution)."""

    def covers(self, name: str) -> bool:
        return any(name == p or (name.startswith(p) and _VERSION.fullmatch(name[len(p):]))
                   for p in self.programs)


_VERSION = re.compile(r"[\d.]+")

BUILTIN: dict[str, Runtime] = {r.name: r for r in (
    Runtime("python3", ("python3", "python"), home="python"),
    Runtime("node", ("node", "nodejs"), home="node"),
    Runtime("java", ("java",), home="java"),
    Runtime("ruby", ("ruby",), packages=("ruby", "ruby-grpc", "ruby-google-protobuf"),
            fallback=(Path("/usr/lib/ruby"), Path("/usr/local/lib/ruby"),
                      Path("/usr/share/rubygems-integration"))),
    Runtime("native"),
)}
"""The runtimes the arena knows without a file: Python (the arena's own, with the SDK,
or another), Node.js, Java (a JDK's folder), Ruby (Debian's ``ruby``, ``ruby-grpc``,
``ruby-google-protobuf``), and ``native``, a program of the bot's own (the base view)."""

_organiser: dict[str, Runtime] = {}


def use_runtimes(runtimes: Sequence[Runtime]) -> None:
    """The organiser's runtimes of this process (a tournament's or league's file, as it
    was loaded last), in place of any before. The file's games are played, and its
    league's bundles checked, in the process that loaded it."""
    global _organiser
    _organiser = {r.name: r for r in runtimes}


def known_runtimes() -> dict[str, Runtime]:
    """Every runtime of this process: the built-in ones, then the organiser's."""
    return {**BUILTIN, **_organiser}


def runtime_named(name: str) -> Runtime | None:
    return known_runtimes().get(name)


# -- Debian's packages ------------------------------------------------------------------


DPKG_STATUS = Path("/var/lib/dpkg/status")


@dataclass(frozen=True, slots=True)
class _Package:
    essential: bool
    source: str
    depends: tuple[tuple[str, ...], ...]
    """Each dependency as its alternatives, package names only."""


@dataclass(frozen=True, slots=True)
class PackageView:
    """What a set of Debian packages shows (:func:`package_view`)."""

    packages: tuple[str, ...]
    """The packages followed: those named that are installed, and their dependencies."""
    missing: tuple[str, ...]
    """Those named that are not installed."""
    folders: tuple[Path, ...]
    """Folders bound whole: every entry in them is a file of these packages."""
    files: tuple[Path, ...]
    """Files (or folders' links) bound alone, in folders shared with other packages."""
    covered: tuple[Path, ...] = ()
    """Folders of other packages inside :attr:`folders`, each covered by an empty one."""

    @property
    def shared(self) -> list[Path]:
        return [*self.folders, *self.files]


def _signature() -> list[int] | None:
    """dpkg's database as it is now (None: no dpkg here)."""
    if shutil.which("dpkg-query") is None:
        return None
    try:
        st = os.stat(DPKG_STATUS)
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_size, st.st_ino]


def _query(*args: str) -> str:
    """``dpkg-query ARGS``' output ("" when it fails: a name it does not know)."""
    try:
        done = subprocess.run(["dpkg-query", *args], capture_output=True, text=True,
                              timeout=120, check=False, errors="replace")
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout


_lock = threading.RLock()
_index_cache: tuple[list[int], dict[str, _Package], dict[str, list[str]]] | None = None


def _index() -> tuple[dict[str, _Package], dict[str, list[str]]]:
    """The installed packages (one ``dpkg-query -W``), and who provides each virtual
    package."""
    global _index_cache
    signature = _signature()
    with _lock:
        if _index_cache is not None and _index_cache[0] == signature:
            return _index_cache[1], _index_cache[2]
        packages: dict[str, _Package] = {}
        provides: dict[str, list[str]] = {}
        if signature is not None:
            text = _query("-W", "-f", "${Package}\t${db:Status-Abbrev}\t${Essential}\t"
                          "${source:Package}\t${Provides}\t${Pre-Depends}, ${Depends}\n")
            for line in text.splitlines():
                parts = line.split("\t")
                if len(parts) != 6 or not parts[1].startswith("ii"):
                    continue
                name, _, essential, source, provided, depends = parts
                packages[name] = _Package(essential == "yes", source or name,
                                          _dependencies(depends))
                for item in provided.split(","):
                    words = item.split()
                    if words:
                        provides.setdefault(words[0].split(":")[0], []).append(name)
        _index_cache = (signature or [], packages, provides)
        return packages, provides


def _dependencies(text: str) -> tuple[tuple[str, ...], ...]:
    out = []
    for item in text.split(","):
        choices = tuple(words[0].split(":")[0] for words in
                        (alt.split() for alt in item.split("|")) if words)
        if choices:
            out.append(choices)
    return tuple(out)


def _closure(start: Sequence[str]) -> list[str]:
    """``start`` (those installed) and every package they depend on, recursively: the
    first installed choice of each alternative (or a package providing it); not the
    essential packages (but those named) nor :data:`INSTALL_ONLY`."""
    packages, provides = _index()
    seen: list[str] = []
    stack = [p for p in reversed(start) if p in packages]
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.append(name)
        for choices in packages[name].depends:
            for choice in choices:
                real = choice if choice in packages else next(
                    iter(provides.get(choice, [])), None)
                if real is None:
                    continue
                if real not in INSTALL_ONLY and choice not in INSTALL_ONLY and (
                        not packages[real].essential or real in start):
                    stack.append(real)
                break
    return seen


def _listed(packages: Sequence[str]) -> set[str]:
    """Every path dpkg lists for ``packages``, with its folders' links resolved
    (``/lib/x`` is ``/usr/lib/x`` where ``/lib`` links to ``usr/lib``)."""
    out: set[str] = set()
    if not packages:
        return out
    for line in _query("-L", *packages).splitlines():
        if line.startswith("/") and line != "/.":
            out.add(str(_real_folder(Path(line))))
    return out


def _under(path: str, roots: Iterable[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


MAX_COVERED = 4
"""The most folders of other packages a folder may hold and still be bound whole, each
covered by an empty folder (:func:`_reduce`)."""


def _reduce(listed: set[str], base: Sequence[str], within: Sequence[Path] = SYSTEM_DIRS
            ) -> tuple[list[Path], list[Path], list[Path]]:
    """The folders to bind whole, the files to bind alone, and the folders of other
    packages inside those bound whole to cover with empty ones, of the paths ``listed``
    that lie in ``within`` (the machine's installed software; see the module's text)."""
    systems = [str(d) for d in within]
    kept = {p for p in listed if _under(p, systems) and p not in systems
            and not _under(p, LEFT_OUT)}
    holders = {str(parent) for p in kept for parent in Path(p).parents}
    known: dict[str, list[str] | None] = {}

    def whole(folder: str) -> list[str] | None:
        """The folders of other packages to cover if ``folder`` is bound whole: every
        other entry under it is one of ``kept`` (or left out), and there are at most
        :data:`MAX_COVERED` of them, none holding a path of ``kept``. None: it cannot be
        bound whole."""
        if folder in known:
            return known[folder]
        known[folder] = None  # (a loop of links is no folder of its own)
        try:
            entries = os.listdir(folder)
        except OSError:
            return None
        covered: list[str] = []
        for name in entries:
            child = f"{folder}/{name}"
            if _under(child, LEFT_OUT):
                continue
            real_folder = os.path.isdir(child) and not os.path.islink(child)
            if child not in kept:
                if not real_folder or child in holders:
                    return None  # another package's file or link: shown if bound whole
                covered.append(child)
            elif real_folder:
                inner = whole(child)
                if inner is None:
                    return None
                covered += inner
            if len(covered) > MAX_COVERED:
                return None
        known[folder] = covered
        return covered

    binds: set[str] = set()
    for path in sorted(kept):
        if _under(path, base) or not os.path.lexists(path):
            continue
        is_folder = os.path.isdir(path) and not os.path.islink(path)
        if is_folder and whole(path) is None:
            continue  # its entries of the set are bound themselves
        top, parent = path, os.path.dirname(path)
        while parent in kept and parent not in systems and not _under(parent, base) \
                and whole(parent) is not None:
            top, parent = parent, os.path.dirname(parent)
        binds.add(top)
    chosen = sorted(b for b in binds if not any(_under(b, [o]) and b != o for o in binds))
    folders = [b for b in chosen if os.path.isdir(b) and not os.path.islink(b)]
    files = [Path(b) for b in chosen if not (os.path.isdir(b) and not os.path.islink(b))]
    covered = sorted({c for f in folders for c in (whole(f) or [])})
    return [Path(f) for f in folders], files, [Path(c) for c in covered]


CACHE_FORMAT = 2
"""The cache file's format: one of another format is not read."""


def _cache_path() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "trick-arena" / f"runtimes-{os.getuid()}.json"


_memory: dict[str, object] = {}
"""This process's results, with the signature they were worked out under."""


def _cached(kind: str, key: str, work: Callable[[], object]) -> object:
    """``work()``'s result for ``key``, from this process's memory, else from the cache
    file (both valid while dpkg's database and the base view are as they were), else
    worked out and kept in both."""
    signature: list[object] = [CACHE_FORMAT, _signature(), [str(p) for p in base_roots()],
                               list(LEFT_OUT), sorted(INSTALL_ONLY), MAX_COVERED]
    full = f"{kind}:{key}"
    with _lock:
        if _memory.get("signature") != signature:
            _memory.clear()
            _memory["signature"] = signature
        if full in _memory:
            return _memory[full]
        stored = _load_cache(signature)
        if full in stored:
            _memory[full] = stored[full]
            return stored[full]
        value = work()
        _memory[full] = value
        stored[full] = value
        _save_cache(signature, stored)
        return value


def _load_cache(signature: list[object]) -> dict[str, object]:
    try:
        with open(_cache_path()) as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("signature") != signature:
        return {}
    entries = data.get("entries")
    return entries if isinstance(entries, dict) else {}


def _save_cache(signature: list[object], entries: dict[str, object]) -> None:
    path = _cache_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        temporary = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
        with open(temporary, "w") as f:
            json.dump({"signature": signature, "entries": entries}, f)
        os.replace(temporary, path)
    except OSError:
        pass  # only a cost: the next process asks dpkg again


def package_view(packages: Sequence[str]) -> PackageView:
    """What the Debian ``packages`` show (see the module's text); nothing where there
    is no dpkg. Kept in the process and in the cache file while dpkg's database is
    unchanged."""
    names = tuple(dict.fromkeys(packages))

    def work() -> dict[str, list[str]]:
        known, _ = _index()
        followed = _closure(names)
        folders, files, covered = _reduce(_listed(followed), [str(p) for p in base_roots()])
        return {"packages": followed, "missing": [p for p in names if p not in known],
                "folders": [str(p) for p in folders], "files": [str(p) for p in files],
                "covered": [str(p) for p in covered]}

    data = _cached("packages", ",".join(names), work)
    if not isinstance(data, dict) or not all(
            isinstance(data.get(k), list) for k in ("packages", "missing", "folders",
                                                     "files", "covered")):
        data = work()  # (a cache file of this format holds only what work() returns)
    return PackageView(tuple(data["packages"]), tuple(data["missing"]),
                       tuple(Path(p) for p in data["folders"]),
                       tuple(Path(p) for p in data["files"]),
                       tuple(Path(p) for p in data["covered"]))


def installed_packages(packages: Sequence[str]) -> list[str]:
    """Those of ``packages`` dpkg has installed (all of them where there is no dpkg)."""
    if _signature() is None:
        return list(packages)
    known, _ = _index()
    return [p for p in packages if p in known]


def dpkg_available() -> bool:
    return _signature() is not None


@dataclass(frozen=True, slots=True)
class _Needs:
    """What a program of the system needs beyond the base view, by its source package."""

    package: str
    source: str
    siblings: tuple[str, ...]
    beyond: tuple[Path, ...]


def _needs(program: Path) -> _Needs | None:
    """For a program dpkg knows: its package, the installed packages of its source, and
    what of theirs the base view does not show. None where dpkg does not know it."""
    if _signature() is None:
        return None

    def work() -> list[object] | None:
        owner = _owner(program)
        if owner is None:
            return None
        packages, _ = _index()
        source = packages[owner].source if owner in packages else owner
        siblings = sorted(n for n, p in packages.items()
                          if p.source == source and not p.essential)
        folders, files, _ = _reduce(_listed(siblings), [str(p) for p in base_roots()])
        return [owner, source, siblings, [str(p) for p in (*folders, *files)]]

    data = _cached("program", str(program), work)
    if not isinstance(data, list):
        return None
    owner, source, siblings, beyond = data
    assert isinstance(owner, str) and isinstance(source, str)
    assert isinstance(siblings, list) and isinstance(beyond, list)
    return _Needs(owner, source, tuple(str(s) for s in siblings),
                  tuple(Path(str(p)) for p in beyond))


def _owner(program: Path) -> str | None:
    """The package that installed ``program`` (``dpkg-query -S``), by its path, its real
    path, and each as dpkg may list it before ``/usr`` was merged (``/bin/bash``)."""
    candidates: list[str] = []
    for path in (str(program.resolve()), str(program)):
        candidates.append(path)
        for merged in ("bin", "sbin", "lib", "lib64"):
            if path.startswith(f"/usr/{merged}/") and os.path.islink(f"/{merged}"):
                candidates.append(path[len("/usr"):])
    owners: dict[str, str] = {}
    for line in _query("-S", *dict.fromkeys(candidates)).splitlines():
        if line.startswith("diversion ") or ": " not in line:
            continue
        names, _, path = line.partition(": ")
        owners.setdefault(path, names.split(",")[0].strip().split(":")[0])
    # the real program's package first (``tclsh`` is ``tcl8.6``'s ``tclsh8.6``)
    return next((owners[c] for c in candidates if c in owners), None)


# -- the built-in runtimes' homes -------------------------------------------------------


def _is_own_python(path: Path) -> bool:
    return path == Path(sys.executable) or path.resolve() == Path(sys.executable).resolve()


def _python(path: Path) -> RuntimeView:
    """A Python interpreter's home: the standard library and the packages on its path."""
    view = RuntimeView()
    if _is_own_python(path):
        view.shared.append(path.resolve())
        if sys.prefix != sys.base_prefix:
            view.shared.append(Path(sys.prefix))  # the venv (pyvenv.cfg, its packages)
        on_path = [Path(os.path.abspath(p)) for p in sys.path if p and os.path.isdir(p)]
        source = Path(__file__).resolve().parents[2]  # an editable install's checkout
        prefixes = [Path(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)]
        for entry in on_path:
            if entry == source:
                # the arena's own source folder (an editable install): its package only,
                # not the checkout (tests, outputs)
                view.shared.append(entry / "arena")
            elif any(entry.is_relative_to(p) for p in prefixes):
                view.shared.append(entry)
            # (not the arena's working folder, nor what PYTHONPATH adds: a bot's own
            # packages are in its own folder or its read_only extras)
        stdlib = Path(sysconfig.get_paths()["stdlib"])
        view.shared.append(stdlib)
        for name in ("site-packages", "dist-packages"):
            if stdlib / name not in on_path:
                view.exclude.append(stdlib / name)
        view.exclude.append(stdlib / "test")
        libdir, library = sysconfig.get_config_var("LIBDIR"), \
            sysconfig.get_config_var("INSTSONAME")
        if isinstance(libdir, str) and isinstance(library, str) and library:
            view.shared.append(Path(libdir) / library)
        return view
    # another interpreter: the system's Python folders, and its venv
    for root in ("/usr/lib", "/usr/local/lib"):
        try:
            names = os.listdir(root)
        except OSError:
            continue
        view.shared += [Path(root) / n for n in names if n.startswith("python3")]
    venv = path.parent.parent
    if (venv / "pyvenv.cfg").is_file():
        view.shared.append(venv)
    view.shared.append(path.resolve())
    return view


def _java(resolved: Path) -> RuntimeView:
    home = resolved.parents[1] if len(resolved.parents) > 1 else resolved.parent
    view = RuntimeView()
    if (home / "lib" / "modules").exists() or (home / "release").exists():
        view.shared.append(home)
    view.shared.append(Path("/usr/share/java"))
    return view


def _node() -> RuntimeView:
    return RuntimeView([Path("/usr/share/nodejs"), Path("/usr/lib/node_modules"),
                        Path("/usr/local/lib/node_modules")])


def runtime_paths(runtime: Runtime, program: Path) -> RuntimeView:
    """What ``runtime`` shows for ``program`` (one of the programs it covers)."""
    if runtime.home == "python":
        return _python(program)
    if runtime.home == "java":
        return _java(program.resolve())
    if runtime.home == "node":
        return _node()
    view = RuntimeView(list(runtime.paths))
    if runtime.packages:
        if dpkg_available():
            packages = package_view(installed_packages(runtime.packages))
            view.shared += packages.shared
            view.exclude += packages.covered
        else:
            view.shared += list(runtime.fallback)
    return view


# -- a command's runtimes ---------------------------------------------------------------


def _real_folder(path: Path) -> Path:
    path = Path(os.path.abspath(path))
    return Path(os.path.realpath(path.parent)) / path.name


def chain(program: Path, runtimes: Sequence[Runtime] | None = None) -> list[Path]:
    """The program and the interpreters of its ``#!`` lines (``env NAME`` resolved on the
    sandbox's PATH), and the runtimes a script names as commands (``exec java -jar``)."""
    found = [program]
    for _ in range(_MAX_SHEBANG):
        try:
            with open(found[-1], "rb") as f:
                head = f.read(256)
        except OSError:
            break
        if not head.startswith(b"#!"):
            break
        if len(found) == 1:
            found += _named_runtimes(found[0], runtimes)
        words = head[2:].split(b"\n", 1)[0].decode(errors="replace").split()
        if not words:
            break
        interpreter = words[0]
        if os.path.basename(interpreter) == "env":
            names = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
            where = shutil.which(names[0], path=_SANDBOX_PATH) if names else None
            if where is None:
                found.append(Path(interpreter))
                break
            found += [Path(interpreter), Path(where)]
        else:
            found.append(Path(interpreter))
    return found


def _named_runtimes(script: Path, runtimes: Sequence[Runtime] | None = None) -> list[Path]:
    """The runtimes a script names as commands (``exec java -jar ...``), found on the
    sandbox's PATH: their homes join the view."""
    try:
        with open(script, "rb") as f:
            text = f.read(1 << 16)
    except OSError:
        return []
    every = list(runtimes) if runtimes is not None else list(known_runtimes().values())
    names = sorted({p for r in every for p in r.programs}, key=len, reverse=True)
    if not names:
        return []
    word = re.compile(rb"(?<![\w./-])((?:" + b"|".join(re.escape(n.encode()) for n in names)
                      + rb")(?:\d+(?:\.\d+)*)?)(?![\w.-])")
    out = []
    for name in dict.fromkeys(m.group(1).decode() for m in word.finditer(text)):
        where = shutil.which(name, path=_SANDBOX_PATH)
        if where is not None:
            out.append(Path(where))
    return out


def _in_system(path: Path) -> bool:
    real = Path(os.path.realpath(path))
    return any(real.is_relative_to(d) or path.is_relative_to(d) for d in SYSTEM)


@dataclass
class CommandView:
    """What the ``runtime`` view shows of the machine for one command."""

    view: RuntimeView
    runtimes: list[str]
    """The runtimes of its chain, in order (``native`` where none covers the program)."""
    allowed: list[Path] = field(default_factory=list)
    """The organiser's paths of those runtimes: the gate admits them for a bundle."""
    problem: str | None = None
    """One line: an interpreter of the chain that no runtime covers and that would not
    find its library (see the module's text)."""
    lacking: list[Path] = field(default_factory=list)
    """What of that library the view lacks (folders and files)."""

    def describe(self) -> str:
        return " + ".join(self.runtimes)

    def refusal(self, read_only: Sequence[Path] = ()) -> str | None:
        """:attr:`problem`, unless the bot's ``read_only`` extras show all it lacks (an
        organiser's or author's own grant, as before there were runtimes)."""
        if self.problem is None:
            return None
        extras = [Path(os.path.realpath(p)) for p in read_only]
        if self.lacking and all(any(Path(os.path.realpath(p)).is_relative_to(e)
                                    for e in extras) for p in self.lacking):
            return None
        return self.problem


def runtime_for(path: Path, runtimes: Sequence[Runtime] | None = None) -> Runtime | None:
    """The runtime that covers the program ``path`` (by its name, or the name of the
    file it links to)."""
    every = list(runtimes) if runtimes is not None else list(known_runtimes().values())
    names = (path.name, path.resolve().name)
    for runtime in every:
        if any(runtime.covers(n) for n in names):
            return runtime
    return None


def command_view(program: Path, runtimes: Sequence[Runtime] | None = None) -> CommandView:
    """The ``runtime`` view's shared part for a command whose program is ``program``
    (absolute): the base folders, and the view of the runtime of each program of its
    chain (:func:`chain`). ``runtimes``: those to choose from (default: this process's,
    :func:`known_runtimes`)."""
    view = RuntimeView(base_roots())
    names: list[str] = []
    allowed: list[Path] = []
    problem: str | None = None
    lacking: list[Path] = []
    for k, path in enumerate(chain(program, runtimes)):
        runtime = runtime_for(path, runtimes)
        if runtime is not None:
            part = runtime_paths(runtime, path)
            view.shared += part.shared
            view.exclude += part.exclude
            allowed += list(runtime.paths)
            names.append(runtime.name)
        elif k == 0:
            names.append("native")
        if runtime is None and problem is None and _in_system(path):
            problem, lacking = _unplaced(path)
        # the program itself and its symbolic links' targets, wherever they are
        view.shared += [path, path.resolve()]
    # each path with its folders' symbolic links resolved (/bin/sh is /usr/bin/sh where
    # /bin links to usr/bin): the view makes the same links
    view.shared = [p for p in dict.fromkeys(_real_folder(p) for p in view.shared)
                   if os.path.lexists(p)]
    view.exclude = list(dict.fromkeys(view.exclude))
    return CommandView(view, list(dict.fromkeys(names)), allowed, problem, lacking)


def _unplaced(path: Path) -> tuple[str | None, list[Path]]:
    """The one-line error for a program of the system that no runtime covers, when its
    source package has files the base view does not show (None when it needs nothing
    more, or dpkg does not know it), and those files."""
    needs = _needs(path)
    if needs is None or not needs.beyond:
        return None, []
    shown = str(needs.beyond[0]) + \
        (f" and {len(needs.beyond) - 1} more" if len(needs.beyond) > 1 else "")
    name = path.name
    # the package to name: the program's own, else the one named after its source (perl
    # for perl-base), else those of its source
    if needs.package in needs.siblings:
        suggested = [needs.package]
    elif needs.source in needs.siblings:
        suggested = [needs.source]
    else:
        suggested = list(needs.siblings)
    return (f"{name} ({path}, package {needs.package}) is in no runtime, and the sandbox "
            f"lacks its library ({shown}): add a runtime ([[runtimes]] name = \"{name}\", "
            f"packages = [{', '.join(f'{chr(34)}{p}{chr(34)}' for p in suggested)}]) or "
            f"give the bot view = \"system\" (--view system)"), list(needs.beyond)


def describe_runtime(runtime: Runtime) -> str:
    """One line: what a runtime shows (for the start of a run and ``league status``)."""
    if runtime.home:
        return f"{runtime.name} ({runtime.origin}: {', '.join(runtime.programs)})"
    if not runtime.programs:
        return f"{runtime.name} ({runtime.origin}: the bot's own program)"
    parts = []
    if runtime.packages:
        here = installed_packages(runtime.packages)
        if dpkg_available() and here:
            view = package_view(here)
            parts.append(f"Debian packages {', '.join(here)} and "
                         f"{len(view.packages) - len(here)} they depend on: "
                         f"{_count(len(view.folders), 'folder')} bound whole, "
                         f"{_count(len(view.files), 'file')} alone")
        else:
            parts.append("packages " + ", ".join(runtime.packages) + " (not installed)")
    if runtime.paths:
        parts.append(", ".join(str(p) for p in runtime.paths))
    return f"{runtime.name} ({runtime.origin}: {'; '.join(parts)})"


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"
