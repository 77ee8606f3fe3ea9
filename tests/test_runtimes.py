"""Runtimes as named views (arena/proc/runtimes.py): what a sandboxed bot's ``runtime``
view shows for the interpreter its command starts.

With the real dpkg of this machine: Ruby's built-in runtime is its Debian packages'
files, reduced to folders bound whole and files bound alone; a program no runtime
covers whose source package has a library outside the base view (``perl``) is refused
in one line naming the fix, at a tournament file's load and at spawn, while the
wrappers of native bots (``sh``, ``bash``, ``env``) are fine; an organiser's
``[[runtimes]]`` (in a tournament or league file) shows its packages in a live sandbox
(the control: the same runtime without them does not find its library); the gate admits
an organiser's paths for the bots whose command uses that runtime only; a Ruby bot's
folders are read in before it starts and mounted from images of their own, as Python's
are. The reduction itself is shown on a folder tree of its own."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio
from conftest import REPO

from arena.league.config import load_league
from arena.league.manifest import (
    ManifestError,
    check_runtimes,
    default_runtimes,
    parse_manifest,
)
from arena.model.limits import Confinement
from arena.proc import images, packages, runtimes
from arena.proc.bwrap import bwrap_args, sandbox_works, view_images, view_paths, warm_roots
from arena.proc.gate import GateError, check_view
from arena.proc.process import BotProcess
from arena.proc.runtimes import Runtime
from arena.runs.config import ConfigError, load_config

RUBY_PACKAGES = ("ruby", "ruby-grpc", "ruby-google-protobuf")
REQUIRE_RUBY = bool(os.environ.get("ARENA_REQUIRE_RUBY"))


def _ruby_missing() -> str | None:
    if not runtimes.dpkg_available():
        return "no dpkg here: Ruby's runtime is Debian's packages"
    missing = [p for p in RUBY_PACKAGES if p not in runtimes.installed_packages(RUBY_PACKAGES)]
    return f"install {' '.join(missing)}" if missing else None


RUBY_MISSING = _ruby_missing()
needs_ruby = pytest.mark.skipif(RUBY_MISSING is not None and not REQUIRE_RUBY,
                                reason=f"Ruby's packages are missing: {RUBY_MISSING}")
needs_sandbox = pytest.mark.skipif(sandbox_works() is not None,
                                   reason=f"no sandbox here: {sandbox_works()}")
PERL_MODULES = bool(runtimes.dpkg_available() and shutil.which("perl") and any(
    name.startswith("perl-modules") for name in packages._index()[0]))
needs_perl = pytest.mark.skipif(not PERL_MODULES,
                                reason="needs Debian's perl with its modules (perl-modules-*)")
RUBY_BOT = REPO / "sample_bots" / "ruby" / "bot.rb"


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test with a cache file of its own, and no organiser's runtime before or after."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    packages._memory.clear()
    runtimes.use_runtimes(())
    yield
    runtimes.use_runtimes(())
    packages._memory.clear()


# -- the reduction ----------------------------------------------------------------------


def _tree(root: Path, files: list[str]) -> set[str]:
    """Files (and their folders) under ``root``; every path, as dpkg would list them."""
    listed: set[str] = set()
    for name in files:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(name)
        listed.add(str(path))
        for parent in path.parents:
            if parent == root:
                break
            listed.add(str(parent))
    return listed


def test_a_folder_the_packages_own_is_bound_whole_and_a_shared_ones_entries_alone(
        tmp_path: Path) -> None:
    ours = _tree(tmp_path, ["lib/lang/a.rb", "lib/lang/sub/b.rb", "share/gems/mine-1/x.rb",
                            "share/gems/specs/mine-1.spec", "bin/tool"])
    _tree(tmp_path, ["share/gems/specs/theirs-2.spec"])  # another package's file
    base = [str(tmp_path / "bin")]
    folders, files, covered = packages._reduce(ours, base, within=[tmp_path])
    assert folders == [tmp_path / "lib", tmp_path / "share/gems/mine-1"]
    assert files == [tmp_path / "share/gems/specs/mine-1.spec"]  # not theirs-2.spec
    assert covered == []
    # the control: a file of no package in lib/lang: lib is no longer the set's alone,
    # and its entries of the set are bound one by one (sub/ still whole)
    (tmp_path / "lib/lang/local.rb").write_text("")
    folders, files, _ = packages._reduce(ours, base, within=[tmp_path])
    assert tmp_path / "lib" not in folders and tmp_path / "lib/lang/sub" in folders
    assert tmp_path / "lib/lang/a.rb" in files
    assert tmp_path / "lib/lang/local.rb" not in files


def test_a_folder_with_a_few_folders_of_other_packages_is_bound_whole_with_them_covered(
        tmp_path: Path) -> None:
    """Fewer binds (a bot mounts at most MAX_IMAGES images): the other packages' folders
    are covered by empty ones, never shown; a file of theirs, or too many folders, and
    the folder's entries are bound alone again."""
    ours = _tree(tmp_path, [f"gems/mine-{k}/x.rb" for k in range(3)])
    _tree(tmp_path, ["gems/theirs/y.rb"])
    folders, files, covered = packages._reduce(ours, [], within=[tmp_path])
    assert (folders, files, covered) == ([tmp_path / "gems"], [], [tmp_path / "gems/theirs"])
    _tree(tmp_path, [f"gems/more-{k}/z.rb" for k in range(packages.MAX_COVERED)])
    folders, files, covered = packages._reduce(ours, [], within=[tmp_path])
    assert folders == [tmp_path / f"gems/mine-{k}" for k in range(3)] and covered == []
    shutil.rmtree(tmp_path / "gems")
    ours = _tree(tmp_path, [f"gems/mine-{k}/x.rb" for k in range(3)])
    (tmp_path / "gems/theirs.rb").write_text("")  # a file of another package: shown whole
    folders, files, covered = packages._reduce(ours, [], within=[tmp_path])
    assert folders == [tmp_path / f"gems/mine-{k}" for k in range(3)] and covered == []


@needs_ruby
def test_rubys_runtime_is_its_debian_packages_reduced() -> None:
    view = runtimes.package_view(RUBY_PACKAGES)
    assert view.missing == ()
    assert Path("/usr/lib/ruby") in view.folders  # the standard library, one bind
    # the packages they depend on: Ruby's library, the gems ruby-grpc needs
    assert any(p.startswith("libruby3") for p in view.packages), view.packages
    assert "ruby-googleauth" in view.packages, view.packages
    essential = {n for n, p in packages._index()[0].items() if p.essential}
    assert not essential & set(view.packages) - set(RUBY_PACKAGES)
    assert not packages.INSTALL_ONLY & set(view.packages)
    base = [str(p) for p in runtimes.base_roots()]
    for path in view.shared:
        assert path.is_relative_to("/usr") or path.is_relative_to("/opt"), path
        assert not any(path.is_relative_to(d) for d in packages.LEFT_OUT), path
        assert not packages._under(str(path), base), path
    specs = Path("/usr/share/rubygems-integration/all/specifications")
    shown = {p.name for p in view.files if p.parent == specs}
    assert any(name.startswith("googleauth-") for name in shown), shown
    # a package outside the set (ruby-grpc-tools, which the sample's stubs come from)
    # shares that folder: its specification is not shown, nor the folder whole; its
    # gem's folder, among the set's, is covered
    assert specs not in view.folders
    theirs = {p.name for p in specs.glob("grpc-tools-*.gemspec")}
    assert not theirs & shown
    gems = specs.parent / "gems"
    assert set(gems.glob("grpc-tools-*")) <= set(view.covered), view.covered
    assert all(any(c.is_relative_to(f) for f in view.folders) for c in view.covered)


@needs_ruby
def test_the_view_of_packages_is_kept_while_dpkg_is_unchanged(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = runtimes.package_view(RUBY_PACKAGES)
    assert packages._cache_path().is_file()

    def no_dpkg(*args: str) -> str:
        raise AssertionError(f"dpkg-query {' '.join(args)} was asked again")

    monkeypatch.setattr(packages, "_query", no_dpkg)
    packages._memory.clear()  # a new process: from the cache file
    assert runtimes.package_view(RUBY_PACKAGES) == first
    # dpkg's database changed (a package installed): worked out again
    status = tmp_path / "status"
    shutil.copy(packages.DPKG_STATUS, status)
    monkeypatch.setattr(packages, "DPKG_STATUS", status)
    with pytest.raises(AssertionError, match="was asked again"):
        runtimes.package_view(RUBY_PACKAGES)


# -- an interpreter in no runtime -------------------------------------------------------


@needs_perl
def test_an_interpreter_in_no_runtime_is_refused_in_one_line_naming_the_fix(
        tmp_path: Path) -> None:
    script = tmp_path / "bot.pl"
    script.write_text("print 1;\n")
    problem = runtimes.command_view(Path(shutil.which("perl") or "")).problem
    assert problem is not None and "\n" not in problem
    assert "perl" in problem and "[[runtimes]]" in problem and 'view = "system"' in problem
    with pytest.raises(GateError, match=r"is in no runtime.*\[\[runtimes\]\]"):
        view_paths(["perl", str(script)], tmp_path, Confinement())  # at spawn
    # the bot's own grant of what its interpreter lacks (read_only) is taken as before;
    # a grant of something else is not
    lacking = runtimes.command_view(Path(shutil.which("perl") or "")).lacking
    assert lacking and all(p.is_relative_to("/usr/share/perl") for p in lacking), lacking
    view_paths(["perl", str(script)], tmp_path, Confinement(read_only=tuple(lacking)))
    with pytest.raises(GateError, match="is in no runtime"):
        view_paths(["perl", str(script)], tmp_path, Confinement(read_only=(tmp_path,)))
    # the system view shows all of /usr: no runtime needed
    ro, _, _ = view_paths(["perl", str(script)], tmp_path, Confinement(view="system"))
    assert Path("/usr") in ro
    # an organiser's runtime for it: its library joins the view
    runtimes.use_runtimes([Runtime("perl", ("perl",), ("perl",), origin="t.toml")])
    ro, _, _ = view_paths(["perl", str(script)], tmp_path, Confinement())
    assert any(p.is_relative_to("/usr/share/perl") for p in ro), ro


@pytest.mark.parametrize("program", ["/bin/sh", "bash", "env"])
def test_the_wrappers_of_native_bots_need_no_runtime(program: str, tmp_path: Path) -> None:
    path = Path(shutil.which(program) or program)
    got = runtimes.command_view(path)
    assert got.problem is None and got.runtimes == ["native"]
    wrapper = tmp_path / "run"
    wrapper.write_text(f"#!{path}\nexec ./bot\n")
    wrapper.chmod(0o755)
    assert runtimes.command_view(wrapper).problem is None


@needs_ruby
def test_each_programs_runtime_is_named(tmp_path: Path) -> None:
    ruby = runtimes.command_view(Path(shutil.which("ruby") or ""))
    assert ruby.runtimes == ["ruby"] and ruby.problem is None
    assert Path("/usr/lib/ruby") in ruby.view.shared
    python = runtimes.command_view(Path(sys.executable))
    assert python.runtimes == ["python3"] and Path("/usr/lib/ruby") not in python.view.shared
    script = tmp_path / "run"  # a native wrapper that starts ruby: both runtimes
    script.write_text("#!/bin/sh\nexec ruby \"$(dirname \"$0\")/bot.rb\"\n")
    script.chmod(0o755)
    assert runtimes.command_view(script).runtimes == ["native", "ruby"]


# -- an organiser's runtime, live -------------------------------------------------------


def _perl_in_sandbox(tmp_path: Path) -> subprocess.CompletedProcess[str]:
    args = ["perl", "-MJSON::PP", "-e", "print JSON::PP->new->encode([1]), qq(\\n)"]
    command = bwrap_args(args, tmp_path, Confinement(),
                         {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp"})
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


@needs_sandbox
@needs_perl
def test_an_organisers_runtime_shows_its_packages_in_a_live_sandbox(tmp_path: Path) -> None:
    runtimes.use_runtimes([Runtime("perl", ("perl",), ("perl",), origin="t.toml")])
    done = _perl_in_sandbox(tmp_path)
    assert done.returncode == 0 and done.stdout == "[1]\n", done.stderr
    # the control: a runtime that covers perl but shows none of its packages (what the
    # view held for any interpreter but Python, Java and Node.js): the library is missing
    empty = tmp_path / "empty"
    empty.mkdir()
    runtimes.use_runtimes([Runtime("perl", ("perl",), paths=(empty,), origin="t.toml")])
    done = _perl_in_sandbox(tmp_path)
    assert done.returncode != 0 and "Can't locate JSON/PP.pm" in done.stderr, done.stderr


# -- the files: tournament and league -----------------------------------------------------


def _tournament(tmp_path: Path, bot: str, extra: str = "", bot_keys: str = "") -> Path:
    path = tmp_path / "t.toml"
    path.write_text(f'name = "t"\ngame = "wizard"\nseats = 3\n{extra}\n'
                    f'[[bots]]\nname = "mine"\nspec = "{bot}"\n{bot_keys}\n'
                    f'[[bots]]\nname = "h"\nspec = "heuristic"\n'
                    f'[[bots]]\nname = "r"\nspec = "random"\n')
    return path


@pytest.mark.parametrize(("runtime", "error"), [
    ('name = "ruby"\npaths = ["."]', r"runtimes\[0\]\.name: ruby is a built-in runtime"),
    ('name = "Perl!"\npaths = ["."]', r"runtimes\[0\]\.name: 'Perl!'; a runtime's name"),
    ('name = "py"\nprograms = ["python3"]\npaths = ["."]',
     r"runtimes\[0\]\.programs: python3 is covered by runtime python3 already"),
    ('name = "py"\nprograms = ["/usr/bin/py"]\npaths = ["."]',
     r"runtimes\[0\]\.programs: expected a list of program names"),
    ('name = "x"\npackages = ["no-such-package-for-arena"]',
     r"runtimes\[0\]\.packages: no-such-package-for-arena is not installed here"),
    ('name = "x"\npaths = ["no/such/folder"]', r"runtimes\[0\]\.paths: 'no/such/folder' "
                                                r"does not exist"),
    ('name = "x"', r"runtimes\[0\]: give packages or paths"),
    ('name = "x"\npaths = ["."]\nshows = 1', r"runtimes\[0\]\.shows: unknown key"),
])
def test_a_bad_runtime_table_is_one_line_naming_the_file_and_key(
        tmp_path: Path, runtime: str, error: str) -> None:
    if "packages" in runtime and not runtimes.dpkg_available():
        pytest.skip("no dpkg here")
    path = _tournament(tmp_path, "heuristic", f"[[runtimes]]\n{runtime}\n")
    with pytest.raises(ConfigError, match=error) as refused:
        load_config(path)
    assert str(refused.value).startswith(f"{path}: ") and "\n" not in str(refused.value)


def test_a_runtime_table_twice_and_on_ray_are_refused(tmp_path: Path) -> None:
    twice = '[[runtimes]]\nname = "x"\npaths = ["."]\n' * 2
    with pytest.raises(ConfigError, match=r"runtimes\[1\]\.name: runtime x is defined twice"):
        load_config(_tournament(tmp_path, "heuristic", twice))
    ray = '[cluster]\nengine = "ray"\n[[runtimes]]\nname = "x"\npaths = ["."]\n'
    with pytest.raises(ConfigError, match="a Ray cluster's workers do not know"):
        load_config(_tournament(tmp_path, "heuristic", ray))


@needs_perl
def test_a_tournament_refuses_a_bot_in_no_runtime_at_load_and_takes_it_with_one(
        tmp_path: Path) -> None:
    (tmp_path / "bot.pl").write_text("print 1;\n")
    path = _tournament(tmp_path, "cmd:perl bot.pl")
    with pytest.raises(ConfigError, match=r"bots\[0\]\.spec: bot mine: perl .* is in no "
                                          r"runtime.*\[\[runtimes\]\]") as refused:
        load_config(path)
    assert "\n" not in str(refused.value)
    # what the error names as the fix: a runtime, or the system view (or no sandbox)
    runtime = '[[runtimes]]\nname = "perl"\npackages = ["perl"]\n'
    config = load_config(_tournament(tmp_path, "cmd:perl bot.pl", runtime))
    assert [r.name for r in config.runtimes] == ["perl"]
    assert runtimes.runtime_named("perl") == config.runtimes[0]  # in force for its bots
    load_config(_tournament(tmp_path, "cmd:perl bot.pl", "", 'view = "system"'))
    assert runtimes.runtime_named("perl") is None  # the last file loaded has none
    load_config(_tournament(tmp_path, "cmd:perl bot.pl", "", "sandbox = false"))


def test_a_league_file_adds_runtimes_its_bundles_may_name(tmp_path: Path) -> None:
    lib = tmp_path / "lua-lib"
    lib.mkdir()
    path = tmp_path / "league.toml"
    path.write_text('name = "l"\ngame = "trumps"\nseats = 3\n'
                    '[[house]]\nname = "h"\nspec = "heuristic"\n'
                    '[[runtimes]]\nname = "lua"\nprograms = ["lua"]\npaths = ["lua-lib"]\n')
    with pytest.raises(ManifestError, match="unknown runtime 'lua'"):
        check_runtimes(["lua"])  # before the file: not known
    config = load_league(path)
    assert config.base.runtimes == (Runtime("lua", ("lua",), (), (lib,), str(path)),)
    assert default_runtimes() == ("python3", "node", "ruby", "native", "lua")
    assert check_runtimes(["lua", "python3"]) == ("lua", "python3")
    manifest = 'name = "b"\nversion = "1"\nruntime = "lua"\ncommand = "lua bot.lua"\n'
    assert parse_manifest(manifest, ["lua"]).runtime == "lua"
    with pytest.raises(ManifestError, match="runtime lua starts with lua, not 'ruby'"):
        parse_manifest(manifest.replace("lua bot", "ruby bot"), ["lua"])
    with pytest.raises(ManifestError, match="runtime 'lua' is not allowed in this league"):
        parse_manifest(manifest, ["python3"])


@needs_ruby
def test_a_bundle_names_the_ruby_runtime() -> None:
    assert default_runtimes() == ("python3", "node", "ruby", "native")  # java if named
    text = 'name = "b"\nversion = "1"\nruntime = "ruby"\ncommand = "ruby bot.rb"\n'
    assert parse_manifest(text, ["ruby"]).command == "ruby bot.rb"
    with pytest.raises(ManifestError, match="runtime ruby starts with ruby, not 'python3'"):
        parse_manifest(text.replace("ruby bot.rb", "python3 bot.py"), ["ruby"])


# -- the gate ---------------------------------------------------------------------------


def test_the_gate_admits_an_organisers_runtime_paths_only_for_its_own_command(
        tmp_path: Path) -> None:
    bundle = tmp_path / "bots" / "sha"
    bundle.mkdir(parents=True)
    (bundle / "bot.lua").write_text("")
    (bundle / "bot.py").write_text("")
    lib = tmp_path / "lua-lib"
    lib.mkdir()
    program = tmp_path / "bin" / "lua"  # the organiser's interpreter, outside /usr
    program.parent.mkdir()
    program.write_text("")
    program.chmod(0o755)
    confined = Confinement(within=bundle)
    with pytest.raises(GateError, match="outside its folder"):
        check_view([lib], bundle)  # the control: no runtime, no admission
    runtimes.use_runtimes([Runtime("lua", ("lua",), paths=(lib, program.parent))])
    ro, own, _ = view_paths([str(program), "bot.lua"], bundle, confined)
    assert lib in ro and own == [bundle]
    # a bundle whose command is another runtime's does not see them, and may not name
    # them as its own
    ro, _, _ = view_paths([sys.executable, "bot.py"], bundle, confined)
    assert lib not in ro
    (lib / "x").write_text("")
    with pytest.raises(GateError, match="leads out of the bot's folder"):
        view_paths([sys.executable, "bot.py", str(lib / "x")], bundle, confined)


# -- read in first, and from images of its own -----------------------------------------


@needs_ruby
def test_a_ruby_bots_folders_are_read_in_and_imaged_as_pythons_are(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    args = ["ruby", str(RUBY_BOT)]
    roots, exclude, always = warm_roots(args, REPO, Confinement())
    assert Path("/usr/lib/ruby") in roots and Path("/usr/lib/ruby") not in always
    assert any(p.parent.name == "specifications" and p.name.startswith("googleauth-")
               for p in roots)
    assert RUBY_BOT.parent in roots and RUBY_BOT.parent in always
    if images.image_mechanism().active or os.environ.get("ARENA_REQUIRE_VIEW_IMAGES"):
        made = view_images(roots, exclude, always)
        assert Path("/usr/lib/ruby") in made, made
    # the control: Ruby as the view had it before (no runtime of its packages)
    monkeypatch.setitem(runtimes.BUILTIN, "ruby", Runtime("ruby", ("ruby",)))
    roots, _, _ = warm_roots(args, REPO, Confinement())
    assert not any(p.is_relative_to("/usr/lib/ruby") for p in roots)


def _mount_types(pid: int) -> dict[str, str]:
    out = {}
    for line in Path(f"/proc/{pid}/mountinfo").read_text().splitlines():
        fields, _, rest = line.partition(" - ")
        out[fields.split()[4]] = rest.split()[0]
    return out


@needs_ruby
@needs_sandbox
@pytest.mark.skipif(not images.image_mechanism().active
                    and not os.environ.get("ARENA_REQUIRE_VIEW_IMAGES"),
                    reason=f"no view images here: {images.image_mechanism().why_not}")
def test_a_live_ruby_bot_mounts_its_runtimes_folders_from_images(tmp_path: Path) -> None:
    gems = Path("/usr/share/rubygems-integration/all/gems")
    covered = [c for c in runtimes.package_view(RUBY_PACKAGES).covered
               if c.is_relative_to(gems)]

    async def main() -> tuple[dict[str, str], dict[str, list[str]]]:
        proc = BotProcess("ruby", f"ruby {RUBY_BOT}", tmp_path / "ruby.log", cwd=REPO,
                          confinement=Confinement(), idle=False)
        try:
            (await proc.start()).close()
            assert proc.pid is not None
            pid = proc.pid
            while True:  # the deepest process: the bot itself
                children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
                if not children:
                    break
                pid = int(children[0])
            root = Path(f"/proc/{pid}/root")
            seen = {str(p): sorted(os.listdir(root / p.relative_to("/")))
                    for p in [gems, *covered]}
            return _mount_types(pid), seen
        finally:
            await proc.aclose()

    types, listed = trio.run(main)
    assert types.get("/usr/lib/ruby") == "erofs", types
    assert types.get(str(gems)) == "erofs", types
    # another package's gem among them (ruby-grpc-tools, where installed): its name
    # shows, its files do not
    for folder in covered:
        assert folder.name in listed[str(gems)] and listed[str(folder)] == [], listed
        assert os.listdir(folder)  # (on the host it has files)
    assert any(name.startswith("jwt-") for name in listed[str(gems)]), listed
