"""Atomic file writes: a reader (another process, a rerun after a kill) sees the old file or the whole
new one, never a partial one.

:func:`atomic_file` opens a temporary file beside the target (a hidden name, ``.<name>.<random>.tmp``,
so folder scans that skip hidden files never see it), yields it for writing, and renames it over the
target when the block ends without an exception (``os.replace``: atomic on POSIX and Windows within a
file system); on an exception, or a kill before the rename, the target is untouched and the temporary
file is removed (or, after a kill, left hidden). Every ``qlib`` module that writes a result, a cache
entry, a ledger, a stamp or a download writes through it.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import IO, Iterator

__all__ = ["atomic_file", "write_bytes", "write_text"]


@contextlib.contextmanager
def atomic_file(path: str | os.PathLike, mode: str = "wb", **open_kw) -> Iterator[IO]:
    """A file opened with ``mode`` (``"wb"`` or ``"w"``, and ``open``'s keywords such as ``newline``) whose
    content replaces ``path`` atomically when the block ends without an exception. The parent folder is
    created."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a path, got {type(path).__name__}")
    if mode not in ("wb", "w"):
        raise ValueError(f"mode must be 'wb' or 'w', got {mode!r}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, mode, **open_kw) as fh:
            yield fh
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (:func:`atomic_file`); returns the path."""
    with atomic_file(path, "wb") as fh:
        fh.write(data)
    return Path(path)


def write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically (:func:`atomic_file`); returns the path."""
    with atomic_file(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    return Path(path)
