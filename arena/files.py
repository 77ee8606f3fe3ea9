"""Writing files safely: whole or not at all, and names that are safe as file names."""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def safe_name(name: str) -> str:
    """A file name for ``name``: characters other than ``[A-Za-z0-9._-]`` become ``_``."""
    return _UNSAFE.sub("_", name) or "_"


@contextmanager
def atomic_writer(path: Path) -> Iterator[TextIO]:
    """A text file that replaces ``path`` only when the block ends without an error, so a
    reader never sees it half written (written beside it, then renamed; mode 0644)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            yield f
        os.chmod(tmp, 0o644)  # mkstemp makes the file private
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
