"""Atomic file writes: a reader (another process, a rerun after a kill) sees the old file or the whole
new one, never a partial one.

:func:`atomic_file` opens a temporary file beside the target (a hidden name, ``.<name>.<random>.tmp``,
so folder scans that skip hidden files never see it), yields it for writing, and renames it over the
target when the block ends without an exception (``os.replace``: atomic on POSIX and Windows within a
file system); on an exception, or a kill before the rename, the target is untouched and the temporary
file is removed (or, after a kill, left hidden). Every ``qlib`` module that writes a result, a cache
entry, a ledger, a stamp or a download writes through it. :func:`move` lands a file or folder made
elsewhere (an executed notebook, a run's rows kept after a failure) in one rename, and
:func:`replace_folder` puts a whole staged folder (an archive entry, a site) in the place of another:
this module is the one place of ``qlib`` that renames over a target.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import IO, Iterator

__all__ = ["atomic_file", "write_bytes", "write_text", "move", "replace_folder"]


def _path(name: str, value) -> Path:
    """``value`` as a :class:`~pathlib.Path`; a ``TypeError`` naming the argument when it is not a path
    (a string or an ``os.PathLike``), a ``ValueError`` when it is the empty string."""
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{name} must be a path (a string or an os.PathLike), got {type(value).__name__}")
    if isinstance(value, str) and not value:
        raise ValueError(f"{name} must be a path, got the empty string")
    return Path(value)


@contextlib.contextmanager
def atomic_file(path: str | os.PathLike, mode: str = "wb", *, encoding: str | None = None,
                newline: str | None = None) -> Iterator[IO]:
    """A file opened with ``mode`` (``"wb"`` or ``"w"``; ``encoding`` and ``newline`` as ``open``'s, for
    text) whose content replaces ``path`` atomically when the block ends without an exception. The parent
    folder is created."""
    path = _path("path", path)
    if mode not in ("wb", "w"):
        raise ValueError(f"mode must be 'wb' or 'w', got {mode!r}")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, mode, encoding=encoding, newline=newline) as fh:
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


def move(src: str | os.PathLike, dest: str | os.PathLike) -> Path:
    """Move the file (or folder) ``src`` to ``dest`` in one rename (``os.replace``, within a file system):
    a reader sees the old ``dest`` or the whole ``src``, never a part. A file replaces a file; a folder
    takes the place of none or of an empty one (a full one: :func:`replace_folder`). ``dest``'s parent
    folder is created; returns ``dest``. A ``src`` that does not exist is refused (``ValueError``) before
    anything is created."""
    src, dest = _path("src", src), _path("dest", dest)
    if not src.exists():
        raise ValueError(f"src must be an existing file or folder, got {str(src)!r}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    os.replace(src, dest)
    return dest


def replace_folder(staged: str | os.PathLike, dest: str | os.PathLike) -> Path:
    """Put the whole folder ``staged`` at ``dest`` and remove the folder it replaces: ``dest`` holds the
    old folder or the new one, never a mix of both (between the two renames it is absent for an
    instant). The old folder is first renamed to a hidden name beside ``dest``, and renamed back if the
    new one cannot be put in its place. Returns ``dest``. ``staged`` must be an existing folder and
    ``dest`` a folder or nothing (``ValueError`` before anything moves): a file put in a folder's place,
    or a file replaced by a folder, is a caller's mistake that would remove what ``dest`` held."""
    staged, dest = _path("staged", staged), _path("dest", dest)
    if not staged.is_dir():
        raise ValueError(f"staged must be an existing folder, got {str(staged)!r}"
                         f"{' (a file)' if staged.exists() else ' (nothing there)'}")
    if dest.exists() and not dest.is_dir():
        raise ValueError(f"dest must be a folder or absent, got the file {str(dest)!r}")
    if staged.resolve() == dest.resolve():
        raise ValueError(f"staged and dest must differ, got {str(dest)!r} for both")
    dest.parent.mkdir(parents=True, exist_ok=True)
    aside = Path(tempfile.mkdtemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".old"))
    old = aside / dest.name
    try:
        if dest.exists():
            os.replace(dest, old)
        try:
            os.replace(staged, dest)
        except OSError:
            if old.exists():
                os.replace(old, dest)
            raise
    finally:
        shutil.rmtree(aside, ignore_errors=True)
    return dest
