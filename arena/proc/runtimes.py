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

The base view and the Debian packages' part are :mod:`arena.proc.packages`. dpkg and the
walk of the folders take seconds (Ruby's: 2.6-3.9 s on a loaded two-core
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

import os
import re
import shutil
import sys
import sysconfig
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from arena.proc.gate import SYSTEM
from arena.proc.packages import (
    PackageView,
    base_roots,
    dpkg_available,
    installed_packages,
    package_view,
    program_needs,
    real_folder,
)

__all__ = ["BUILTIN", "CommandView", "PackageView", "Runtime", "RuntimeView",
           "base_roots", "command_view", "dpkg_available", "installed_packages",
           "known_runtimes", "package_view", "runtime_named", "use_runtimes"]

_MAX_SHEBANG = 4
"""``#!`` lines followed from the command to its interpreter."""

_SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"


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
    view.shared = [p for p in dict.fromkeys(real_folder(p) for p in view.shared)
                   if os.path.lexists(p)]
    view.exclude = list(dict.fromkeys(view.exclude))
    return CommandView(view, list(dict.fromkeys(names)), allowed, problem, lacking)


def _unplaced(path: Path) -> tuple[str | None, list[Path]]:
    """The one-line error for a program of the system that no runtime covers, when its
    source package has files the base view does not show (None when it needs nothing
    more, or dpkg does not know it), and those files."""
    needs = program_needs(path)
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
