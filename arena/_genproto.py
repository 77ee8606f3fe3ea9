"""Generate the Python code of the arena.v1 protocol, or check that it is current.

``python -m arena._genproto`` compiles ``proto/arena/v1/*.proto`` into ``arena/v1/``
(``*_pb2.py``, ``*_pb2_grpc.py`` and their mypy stubs), with grpcio-tools' protoc and
mypy-protobuf's plugins. ``python -m arena._genproto --check`` generates into a
temporary directory instead and exits 1, naming the files, when ``arena/v1/`` differs:
the generated code is committed, so a changed .proto must come with regenerated code.
"""

from __future__ import annotations

import argparse
import importlib
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
"""The repository root (holding ``proto/`` and ``arena/``)."""
PROTO_DIR = Path("proto") / "arena" / "v1"
OUT_DIR = Path("arena") / "v1"
GENERATED_SUFFIXES = ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py", "_pb2_grpc.pyi")
INIT_TEXT = '''"""Generated code of the arena.v1 protocol (proto/arena/v1). Do not edit.

Regenerate with ``python -m arena._genproto``; conversions to and from the domain
values are in :mod:`arena.wire.serde`.
"""
'''


class GenerateError(RuntimeError):
    """Raised when protoc or a plugin fails; the message has protoc's exit status."""


def _plugin(name: str) -> str:
    """The path of protoc plugin ``name``: beside this interpreter, else on PATH."""
    beside = Path(sys.executable).parent / name
    if beside.exists():
        return str(beside)
    found = shutil.which(name)
    if found is None:
        raise GenerateError(f"{name} not found (pip install mypy-protobuf)")
    return found


def generate(root: Path, out: Path) -> list[Path]:
    """Compile the .proto files under ``root`` into ``out``; the files written, relative.

    Paths are relative to ``out``: ``arena/v1/bot_pb2.py`` and so on, ``__init__.py``
    included.
    """
    # grpcio-tools is a dev dependency (and untyped): imported only when generating.
    try:
        protoc = importlib.import_module("grpc_tools.protoc")
    except ImportError:
        raise GenerateError("grpcio-tools is not installed (pip install -e '.[dev]')") from None

    protos = sorted((root / PROTO_DIR).glob("*.proto"))
    if not protos:
        raise GenerateError(f"no .proto files in {root / PROTO_DIR}")
    (out / OUT_DIR).mkdir(parents=True, exist_ok=True)
    well_known = Path(str(protoc.__file__)).parent / "_proto"
    args = [
        "grpc_tools.protoc",
        f"-I{root / 'proto'}",
        f"-I{well_known}",
        f"--plugin=protoc-gen-mypy={_plugin('protoc-gen-mypy')}",
        f"--plugin=protoc-gen-mypy_grpc={_plugin('protoc-gen-mypy_grpc')}",
        f"--python_out={out}",
        f"--grpc_python_out={out}",
        f"--mypy_out=quiet:{out}",
        f"--mypy_grpc_out=quiet:{out}",
        *(str(p.relative_to(root / "proto")) for p in protos),
    ]
    status = protoc.main(args)
    if status != 0:
        raise GenerateError(f"protoc failed with status {status}")
    (out / OUT_DIR / "__init__.py").write_text(INIT_TEXT)
    return sorted(p.relative_to(out) for p in (out / OUT_DIR).iterdir() if _is_generated(p))


def _is_generated(path: Path) -> bool:
    return path.name == "__init__.py" or path.name.endswith(GENERATED_SUFFIXES)


def _current(root: Path) -> set[Path]:
    """The generated files now under ``root/arena/v1``, relative to ``root``."""
    out = root / OUT_DIR
    if not out.is_dir():
        return set()
    return {p.relative_to(root) for p in out.iterdir() if _is_generated(p)}


def _sync(root: Path, apply: bool) -> list[str]:
    """Compare ``root/arena/v1`` with a fresh generation; if ``apply``, make them equal.

    Returns the differing files, sorted: changed, missing, and stale ones (generated
    files that would no longer be generated).
    """
    differing: list[Path] = []
    with tempfile.TemporaryDirectory(prefix="arena-genproto-") as tmp:
        fresh = generate(root, Path(tmp))
        for p in fresh:
            data = (Path(tmp) / p).read_bytes()
            target = root / p
            if not target.exists() or target.read_bytes() != data:
                differing.append(p)
                if apply:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(data)
    for p in _current(root) - set(fresh):
        differing.append(p)
        if apply:
            (root / p).unlink()
    return sorted(str(p) for p in differing)


def drift(root: Path = ROOT) -> list[str]:
    """The generated files under ``root`` that differ from a fresh generation, sorted."""
    return _sync(root, apply=False)


def write(root: Path = ROOT) -> list[str]:
    """Regenerate ``root/arena/v1`` in place; the files that changed, sorted."""
    return _sync(root, apply=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m arena._genproto",
        description="Generate arena/v1 from proto/arena/v1, or check that it is current.")
    parser.add_argument("--check", action="store_true",
                        help="change nothing; exit 1 if the generated code is not current")
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    opts = parser.parse_args(argv)
    try:
        if opts.check:
            differing = drift(opts.root)
            if differing:
                print(f"generated protocol code is out of date: {', '.join(differing)}; "
                      "run `python -m arena._genproto` (with the grpcio-tools and "
                      "mypy-protobuf versions pinned in pyproject.toml)", file=sys.stderr)
                return 1
            return 0
        for name in write(opts.root):
            print(f"regenerated {name}")
    except GenerateError as exc:
        print(f"arena._genproto: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
