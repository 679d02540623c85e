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

**Paths are checked at the door** (before anything is created or moved), each error naming the argument
(``path``, ``src``, ``dest``, ``staged``) and its value: a ``TypeError`` for a value that is not a path (a
string or an ``os.PathLike``); a ``ValueError`` for the empty string, a NUL byte, a folder where a file is
to be written (or a file where a folder is), and a parent that cannot be a folder (a file on the way);
a :class:`PathNotWritableError` (a ``PermissionError`` that is also a ``ValueError``) where this process
may not write in the folder. A failure of the file system itself at write time (a full disk, a read-only
mount, a rename across file systems) keeps its ``OSError`` type, its message naming the argument.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import IO, ContextManager, Iterator

__all__ = ["atomic_file", "write_bytes", "write_text", "move", "replace_folder", "PathNotWritableError"]


class PathNotWritableError(PermissionError, ValueError):
    """A path argument in a folder this process may not write in (or create): a ``PermissionError``, as
    ``open`` raises, and a ``ValueError``, as every bad argument of ``qlib``; its message names the argument."""


def _show(path) -> str:
    return repr(os.fspath(path))


def _check_path(name: str, value) -> Path:
    """``value`` as a :class:`~pathlib.Path`: a ``TypeError`` naming ``name`` when it is not a path (a string
    or an ``os.PathLike`` of a string), a ``ValueError`` when it is empty or holds a NUL byte."""
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{name} must be a path (a string or an os.PathLike), got {type(value).__name__}")
    text = os.fspath(value)
    if not isinstance(text, str):
        raise TypeError(f"{name} must be a path of text (a string or an os.PathLike of one), got "
                        f"{type(text).__name__}")
    if not text:
        raise ValueError(f"{name} must be a path, got the empty string")
    if "\x00" in text:
        raise ValueError(f"{name} must be a path without a NUL byte, got {text!r}")
    return Path(text)


def _check_folder_place(name: str, folder: Path, value: Path) -> None:
    """``folder`` (``value``'s folder, or ``value`` itself) is a folder this process may write in, or can be
    made one: its nearest existing ancestor is a folder (``ValueError`` naming ``name`` if it is a file) in
    which this process may write (:class:`PathNotWritableError` naming ``name`` otherwise)."""
    place = folder
    while not os.path.lexists(place) and place != place.parent:
        place = place.parent
    if not os.path.isdir(place):
        raise ValueError(f"{name}={_show(value)} cannot be in a folder: {_show(place)} is a file, not a folder")
    if not os.access(place, os.W_OK | os.X_OK, effective_ids=os.access in os.supports_effective_ids):
        what = "write in" if place == folder else "create folders in"
        raise PathNotWritableError(f"{name}={_show(value)}: this process may not {what} the folder {_show(place)} "
                                   "(permission denied)")


def check_file_target(name: str, value) -> Path:
    """``value`` as a :class:`~pathlib.Path` to which a file can be written: a path (:func:`_check_path`), not
    an existing folder, whose folder exists or can be made and may be written in (each refusal naming
    ``name``). Not in ``__all__``: the door check of this module's writers, shared with :mod:`qlib.resume`."""
    path = _check_path(name, value)
    if os.path.isdir(path):
        raise ValueError(f"{name} must be the path of a file, got the folder {_show(path)}")
    _check_folder_place(name, path.parent, path)
    return path


def check_folder_target(name: str, value) -> Path:
    """``value`` as a :class:`~pathlib.Path` of a folder that exists or can be made, in which this process may
    write: a path (:func:`_check_path`), not an existing file (each refusal naming ``name``). Not in
    ``__all__``: shared with :mod:`qlib.resume` (a units folder)."""
    path = _check_path(name, value)
    if os.path.lexists(path) and not os.path.isdir(path):
        raise ValueError(f"{name} must be a folder or absent, got the file {_show(path)}")
    _check_folder_place(name, path, path)
    return path


def _named(exc: OSError, name: str, value, what: str) -> OSError:
    """``exc`` again (its type kept; a :class:`PathNotWritableError` for a ``PermissionError``), its message
    naming the argument ``name`` and what was being done."""
    msg = f"{name}={_show(value)}: could not {what}: {exc.strerror or exc}"
    if isinstance(exc, PermissionError):
        return PathNotWritableError(msg)
    if exc.errno is None:
        return type(exc)(msg)
    return type(exc)(exc.errno, msg)


_NEWLINES = (None, "", "\n", "\r", "\r\n")


def atomic_file(path: str | os.PathLike, mode: str = "wb", *, encoding: str | None = None,
                newline: str | None = None) -> ContextManager[IO]:
    """A file opened with ``mode`` (``"wb"`` or ``"w"``; ``encoding`` and ``newline`` as ``open``'s, for
    text) whose content replaces ``path`` atomically when the block ends without an exception. The
    arguments are checked when called (the module docstring); the parent folder is created on entering."""
    path = check_file_target("path", path)
    if mode not in ("wb", "w"):
        raise ValueError(f"mode must be 'wb' or 'w', got {mode!r}")
    if encoding is not None:
        if not isinstance(encoding, str):
            raise TypeError(f"encoding must be a string or None, got {type(encoding).__name__}")
        if mode == "wb":
            raise ValueError(f"encoding must be None in binary mode 'wb', got {encoding!r}")
        try:
            codecs.lookup(encoding)
        except LookupError:
            raise ValueError(f"encoding must be a codec's name (such as 'utf-8'), got {encoding!r}") from None
    if newline is not None:
        if mode == "wb":
            raise ValueError(f"newline must be None in binary mode 'wb', got {newline!r}")
        if newline not in _NEWLINES:
            raise ValueError(f"newline must be None, '', '\\n', '\\r' or '\\r\\n', got {newline!r}")
    return _atomic(path, mode, encoding, newline)


@contextlib.contextmanager
def _atomic(path: Path, mode: str, encoding: str | None, newline: str | None) -> Iterator[IO]:
    """The body of :func:`atomic_file`, on checked arguments."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise _named(exc, "path", path, "create a file in its folder") from exc
    try:
        with os.fdopen(fd, mode, encoding=encoding, newline=newline) as fh:
            yield fh
        try:
            os.replace(tmp, path)
        except OSError as exc:
            raise _named(exc, "path", path, "put the written file in its place") from exc
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` (bytes, a bytearray or a memoryview) to ``path`` atomically (:func:`atomic_file`);
    returns the path."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"data must be bytes (or a bytearray or memoryview), got {type(data).__name__}")
    with atomic_file(path, "wb") as fh:
        fh.write(data)
    return Path(path)


def write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` (a string, as UTF-8) to ``path`` atomically (:func:`atomic_file`); returns the path."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a string, got {type(text).__name__}")
    with atomic_file(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    return Path(path)


def _inside(inner: Path, outer: Path) -> bool:
    """Whether ``inner`` is ``outer`` or lies below it (paths made absolute, links resolved)."""
    a, b = inner.resolve(), outer.resolve()
    return a == b or b in a.parents


def _same(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # a dangling link
        return False


def move(src: str | os.PathLike, dest: str | os.PathLike) -> Path:
    """Move the file (or folder) ``src`` to ``dest`` in one rename (``os.replace``, within a file system):
    a reader sees the old ``dest`` or the whole ``src``, never a part. A file replaces a file; a folder
    takes the place of none or of an empty one (a full one: :func:`replace_folder`). ``dest``'s parent
    folder is created; returns ``dest``. Refused before anything is created or moved (``ValueError``
    naming the argument): a ``src`` that does not exist, a file onto a folder, a folder onto a file or a
    full folder, a folder into itself; a folder this process may not write in raises
    :class:`PathNotWritableError`."""
    src, dest = _check_path("src", src), _check_path("dest", dest)
    if not os.path.lexists(src):
        raise ValueError(f"src must be an existing file or folder, got {_show(src)}")
    if os.path.lexists(dest) and _same(src, dest):
        return dest  # a rename onto itself changes nothing
    if os.path.isdir(src):
        if os.path.lexists(dest) and not os.path.isdir(dest):
            raise ValueError(f"dest must be absent or an empty folder when src is a folder, got the file {_show(dest)}")
        if os.path.isdir(dest) and any(os.scandir(dest)):
            raise ValueError(f"dest must be absent or an empty folder when src is a folder, got the full folder "
                             f"{_show(dest)} (replace_folder puts a folder in the place of a full one)")
        if _inside(dest, src):
            raise ValueError(f"dest must not lie inside src, got dest={_show(dest)} inside src={_show(src)}")
    elif os.path.isdir(dest):
        raise ValueError(f"dest must be the path of a file when src is a file, got the folder {_show(dest)}")
    _check_folder_place("src", src.parent, src)  # the rename takes src out of its folder
    _check_folder_place("dest", dest.parent, dest)
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.replace(src, dest)
    except OSError as exc:
        raise _named(exc, "dest", dest, f"move src={_show(src)} there") from exc
    return dest


def replace_folder(staged: str | os.PathLike, dest: str | os.PathLike) -> Path:
    """Put the whole folder ``staged`` at ``dest`` and remove the folder it replaces: ``dest`` holds the
    old folder or the new one, never a mix of both (between the two renames it is absent for an
    instant). The old folder is first renamed to a hidden name beside ``dest``, and renamed back if the
    new one cannot be put in its place. Returns ``dest``. ``staged`` must be an existing folder and
    ``dest`` a folder or nothing, neither inside the other (``ValueError`` before anything moves): a file
    put in a folder's place, or a file replaced by a folder, is a caller's mistake that would remove what
    ``dest`` held."""
    staged, dest = _check_path("staged", staged), _check_path("dest", dest)
    if not os.path.isdir(staged):
        raise ValueError(f"staged must be an existing folder, got {_show(staged)}"
                         f"{' (a file)' if os.path.lexists(staged) else ' (nothing there)'}")
    if os.path.lexists(dest) and not os.path.isdir(dest):
        raise ValueError(f"dest must be a folder or absent, got the file {_show(dest)}")
    if staged.resolve() == dest.resolve():
        raise ValueError(f"staged and dest must differ, got {_show(dest)} for both")
    if _inside(dest, staged) or _inside(staged, dest):
        raise ValueError(f"staged and dest must not lie one inside the other, got staged={_show(staged)} and "
                         f"dest={_show(dest)}")
    _check_folder_place("staged", staged.parent, staged)
    _check_folder_place("dest", dest.parent, dest)
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        aside = Path(tempfile.mkdtemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".old"))
    except OSError as exc:
        raise _named(exc, "dest", dest, "make room beside it") from exc
    old = aside / dest.name
    try:
        if os.path.lexists(dest):
            os.replace(dest, old)
        try:
            os.replace(staged, dest)
        except OSError as exc:
            if old.exists():
                os.replace(old, dest)
            raise _named(exc, "dest", dest, f"put staged={_show(staged)} there") from exc
    finally:
        shutil.rmtree(aside, ignore_errors=True)
    return dest
