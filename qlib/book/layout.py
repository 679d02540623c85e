"""Where the archive of long runs keeps things: one entry per (profile, notebook)::

    archive/<profile>/<part>/<NN-topic>/
        provenance.json          commit, profile, every parameter, device and its model, start/end and wall
                                 time, package versions, data-file hashes, the inputs stamp (qlib.stamp)
        comparisons.csv          the run's ledger rows (the columns of qlib.book.schema.COLUMNS)
        smoke-comparisons.csv    the same notebook's rows at the ``smoke`` profile, on the CPU, from the
                                 same commit: what a revalidation recomputes to carry an entry forward
        outputs.json             the text the chapter printed (streams, Markdown and plain-text displays)
        figures/fig-<k>.npz      the data behind the k-th figure the chapter showed
                                 (:func:`qlib.plotting.capture.redraw` draws it again)
        files/…                  the small result files the notebook wrote (its figure tables)

Storing and revalidating entries is :mod:`qlib.book.archive`, checking them :mod:`qlib.book.check`,
and what a chapter shows of them :mod:`qlib.book.scale`.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

__all__ = ["ARCHIVE", "SCHEMA", "MAX_BYTES", "MAX_FILE", "PROVENANCE", "SMOKE_ROWS", "OUTPUTS", "FIGURES", "FILES",
           "archive_root", "entry_dir", "entries", "load_entry", "size_bytes"]

ARCHIVE = "archive"
#: the version of ``provenance.json``
SCHEMA = 1
#: the whole archive in git stays under this (25 MB)
MAX_BYTES = 25_000_000
#: a result file the notebook wrote is archived when at most this large (a figure's table, not a cache)
MAX_FILE = 1_000_000
PROVENANCE = "provenance.json"
SMOKE_ROWS = "smoke-comparisons.csv"
OUTPUTS = "outputs.json"
FIGURES = "figures"
FILES = "files"
_CHECKOUT = Path(__file__).resolve().parents[2]  # the checkout of the installed qlib (an editable install)


def archive_root(root: Path | None = None) -> Path:
    """The archive folder: ``$QLIB_ARCHIVE_DIR``, else ``<book root>/archive`` of the first book root
    (a folder with ``_toc.yml`` and ``chapters/``) upwards from ``root``, the working directory, or the
    installed ``qlib``'s checkout that has one. A staged build tree (``_build/book``, where the runner
    executes the notebooks) is a book root without an archive, so the checkout above it is taken; with
    no archive anywhere, the first book root's (not yet made) folder."""
    env = os.environ.get("QLIB_ARCHIVE_DIR")
    if env:
        return Path(env)
    starts = [Path(root)] if root is not None else [Path.cwd(), _CHECKOUT]
    first = None
    for s in starts:
        for d in (s.resolve(), *s.resolve().parents):
            if (d / "_toc.yml").is_file() and (d / "chapters").is_dir():
                if (d / ARCHIVE).is_dir():
                    return d / ARCHIVE
                first = first or d
    return (first or starts[-1]) / ARCHIVE


def entry_dir(archive: Path, profile: str, chapter: str) -> Path:
    """``archive/<profile>/<part>/<NN-topic>``."""
    if not isinstance(chapter, str) or chapter.count("/") != 1:
        raise ValueError(f"chapter must look like '<part>/<NN-topic>', got {chapter!r}")
    if not isinstance(profile, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", profile):
        raise ValueError(f"profile must be a name of letters, digits, '.', '_' or '-', got {profile!r}")
    return Path(archive) / profile / chapter


def entries(archive: Path) -> list[tuple[str, str]]:
    """Every archived (profile, chapter), sorted."""
    archive = Path(archive)
    return sorted((p.parent.parent.parent.name, f"{p.parent.parent.name}/{p.parent.name}")
                  for p in archive.glob(f"*/*/*/{PROVENANCE}")) if archive.is_dir() else []


def load_entry(archive: Path, profile: str, chapter: str) -> dict:
    """An entry's provenance (``{}`` when there is none or it is unreadable)."""
    f = entry_dir(archive, profile, chapter) / PROVENANCE
    try:
        data = json.loads(f.read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def size_bytes(archive: Path) -> int:
    """The bytes of every file of the archive."""
    archive = Path(archive)
    return sum(p.stat().st_size for p in archive.rglob("*") if p.is_file()) if archive.is_dir() else 0
