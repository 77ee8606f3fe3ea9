"""Every sample bot (sample_bots/python, node, cpp, go, java, ruby) is a self-contained folder:
a copy of it placed anywhere builds, runs and passes ``arena check-bot`` in the sandbox,
which shows a bot only its own folder (and /usr). The samples that read or compile the
protocol carry their own copy of proto/, which must be proto/ byte for byte (``make
sample-protos`` refreshes the copies).

The copy test builds each compiled sample in its copy, with the sample's documented
command (Go, Java: ``make -C COPY``; Go's build cache makes the Go build quick). The C++
sample is configured in its copy and its stubs are generated there (where the folder's
paths matter), but its compilation, a minute or more on two cores, is not repeated: the
binary is the session's build of the same sources (tests/test_cpp_bot.py's command),
put in the copy's build folder. The Node sample's copy takes its installed
node_modules along (``npm ci`` would need the registry); the Ruby sample's committed
stubs go with it. A sample whose toolchain is missing is skipped, or fails under its
``ARENA_REQUIRE_...`` variable."""

from __future__ import annotations

import shlex
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from compiled_samples import CPP, GO, JAVA, built_cpp, check_bot
from conftest import REPO, Sandbox, proto_copy_drift

SAMPLES = REPO / "sample_bots"
WITH_PROTO = ("node", "cpp", "go", "java", "ruby")
"""The samples carrying a copy of proto/ (the Python ones use the SDK's generated code)."""


@pytest.mark.parametrize("sample", WITH_PROTO)
def test_its_proto_copy_is_proto_byte_for_byte(sample: str) -> None:
    assert proto_copy_drift(SAMPLES / sample) == []


def test_samples_with_a_proto_copy_are_all_checked() -> None:
    have = sorted(p.parent.name for p in SAMPLES.glob("*/proto"))
    assert have == sorted(WITH_PROTO)


def test_no_sample_reaches_outside_its_folder_for_the_protocol() -> None:
    """The build files and sources name no ``../proto`` (as bot.js and CMakeLists.txt did
    before the copies)."""
    sources = [p for p in SAMPLES.rglob("*") if p.is_file()
               and not {"build", "node_modules", "proto"} & set(p.relative_to(SAMPLES).parts)
               and (p.suffix in (".js", ".cc", ".go", ".java", ".py", ".txt", ".rb")
                    or p.name in ("Makefile", "run"))]
    assert len(sources) >= 10, sources
    reaching = [str(p.relative_to(REPO)) for p in sources
                if "../proto" in p.read_text() or "'..', '..', 'proto'" in p.read_text()]
    assert reaching == []


@pytest.fixture(scope="session")
def cpp_binary() -> Path:
    """The C++ sample built in its own folder, as tests/test_cpp_bot.py builds it."""
    return built_cpp()


def _copy(sample: str, where: Path) -> Path:
    """A copy of the sample's folder, less its own build folder (node_modules has
    folders named build that must stay)."""
    source = SAMPLES / sample

    def left_out(folder: str, names: list[str]) -> set[str]:
        return {"build"} & set(names) if Path(folder) == source else {"__pycache__"} & set(names)

    copy = where / sample
    shutil.copytree(source, copy, symlinks=True, ignore=left_out)
    return copy


def _python(copy: Path, request: pytest.FixtureRequest) -> str:
    return "cmd:" + shlex.join(["python", str(copy / "heuristic_bot.py")])


def _node(copy: Path, request: pytest.FixtureRequest) -> str:
    node = shutil.which("node")
    if node is None or not (copy / "node_modules").is_dir():
        pytest.skip("needs node and `npm ci` in sample_bots/node")
    return "cmd:" + shlex.join(["node", str(copy / "bot.js")])


def _ruby(copy: Path, request: pytest.FixtureRequest) -> str:
    from test_ruby_bot import needs_ruby

    needs_ruby()
    return "cmd:" + shlex.join(["ruby", str(copy / "bot.rb")])


def _cpp(copy: Path, request: pytest.FixtureRequest) -> str:
    binary: Path = request.getfixturevalue("cpp_binary")
    build = copy / "build"
    CPP.build(copy, ["cmake", "-S", str(copy), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release"],
              ["cmake", "--build", str(build), "--target", "cpp-sample-stubs"])
    assert f"PROTO_DIR:PATH={copy / 'proto'}\n" in (build / "CMakeCache.txt").read_text()
    assert (build / "gen" / "arena" / "v1" / "bot.grpc.pb.cc").is_file()
    shutil.copy2(binary, build / "cpp-sample")
    return f"cmd:{build / 'cpp-sample'}"


def _go(copy: Path, request: pytest.FixtureRequest) -> str:
    return f"cmd:{GO.build(copy)}"


def _java(copy: Path, request: pytest.FixtureRequest) -> str:
    return f"cmd:{JAVA.build(copy)}"


@pytest.mark.parametrize(("sample", "setup"), [
    ("python", _python), ("node", _node), ("cpp", _cpp), ("go", _go), ("java", _java),
    ("ruby", _ruby)])
def test_a_copy_of_its_folder_elsewhere_builds_and_passes_check_bot(
        sample: str, setup: Callable[[Path, pytest.FixtureRequest], str], tmp_path: Path,
        arena_sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest,
        capsys: pytest.CaptureFixture[str]) -> None:
    copy = _copy(sample, tmp_path / "elsewhere")
    spec = setup(copy, request)
    monkeypatch.chdir(tmp_path)  # nothing of the repository in the way
    check_bot(spec, arena_sandbox.tmp / "logs", capsys)
