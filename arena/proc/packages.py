"""Debian's packages, as a runtime's view needs them, and the base view.

The **base view** (:func:`base_roots`): the programs, the library folders (as
``ld.so.conf`` lists them), time zones and the C.UTF-8 locale, which every sandboxed bot
with the ``runtime`` view sees. **A runtime from Debian packages**
(:func:`package_view`): the packages, their dependencies, their files as dpkg lists them,
reduced to what to bind (see :mod:`arena.proc.runtimes` for the rules), kept in the
process and in ``~/.cache/trick-arena/runtimes-UID.json`` while dpkg's database is
unchanged. And what a program of the system needs beyond the base view, by its source
package (:func:`program_needs`).
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sysconfig
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from arena.proc.gate import SYSTEM_DIRS

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
            out.add(str(real_folder(Path(line))))
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


def program_needs(program: Path) -> _Needs | None:
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


def real_folder(path: Path) -> Path:
    path = Path(os.path.abspath(path))
    return Path(os.path.realpath(path.parent)) / path.name
