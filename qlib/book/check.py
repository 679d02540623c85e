"""The archive of long runs checked against today's code: every entry's schema, and its inputs stamp
against the one today's code, parameters and data give (nothing executes).

An entry is **current** when nothing its stamp covers changed, **stale** when something did (the
status names what: which modules, which parameters, the code, the data) or when its provenance records a
parameter as an object's ``repr`` instead of its value, **dirty** when it ran from a working tree with
uncommitted changes (``provenance.json`` says ``"dirty": true``: the commit it names is not the code that
ran, so only a run from a clean commit replaces it) and **invalid** when its files do not follow the
schema. An entry that is not current is shown marked and not counted in the book's headline or the
findings; :func:`qlib.book.archive.revalidate` re-runs a stale entry's ``smoke`` rows and one paper-sized
unit (:mod:`qlib.book.spot`) to carry it forward. An entry is
compared under the rules it was stamped by (:data:`qlib.stamp.RULES`): covering more files marks no
entry stale by itself. ``python -m qlib.book archive-check`` is :func:`main_check`.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..stamp import stamp_changes
from .layout import FIGURES, MAX_BYTES, PROVENANCE, SCHEMA, SMOKE_ROWS, archive_root, entries, entry_dir, size_bytes
from .schema import COLUMNS, FILENAME, OPTIONAL_COLUMNS
from .stamps import current_params, notebook_stamp, object_reprs
from .toc import find_root, notebooks

__all__ = ["REQUIRED", "STATES", "EntryStatus", "check", "status_frame", "main_check"]

#: the fields of ``provenance.json`` and their types
REQUIRED = {"schema": int, "chapter": str, "notebook": str, "profile": str, "params": dict, "commit": str,
            "device": dict, "started": str, "finished": str, "wall_s": (int, float), "packages": dict,
            "data": dict, "stamp": dict, "archived": str}
#: the states of an entry (see the module docstring)
STATES = ("current", "stale", "dirty", "invalid")


@dataclass
class EntryStatus:
    """One archived entry against today's code: ``state`` is one of :data:`STATES`."""

    profile: str
    chapter: str
    state: str
    changes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    provenance: dict = field(default_factory=dict)

    @property
    def current(self) -> bool:
        return self.state == "current"


def _schema_problems(d: Path, prov: Any) -> list[str]:
    probs = []
    if not isinstance(prov, dict):
        return [f"{PROVENANCE} is not a JSON object"]
    for k, t in REQUIRED.items():
        if k not in prov:
            probs.append(f"{PROVENANCE} lacks {k!r}")
        elif not isinstance(prov[k], t) or isinstance(prov[k], bool):
            probs.append(f"{PROVENANCE}: {k!r} must be {getattr(t, '__name__', t)}, got {type(prov[k]).__name__}")
    if prov.get("schema") not in (None, SCHEMA) and isinstance(prov.get("schema"), int):
        probs.append(f"schema {prov['schema']} is not {SCHEMA}")
    for k in ("modules", "params", "data", "hash", "notebook"):
        if isinstance(prov.get("stamp"), dict) and k not in prov["stamp"]:
            probs.append(f"stamp lacks {k!r}")
    for name in (FILENAME, *((SMOKE_ROWS,) if prov.get("smoke_rows") else ())):
        f = d / name
        if not f.is_file():
            probs.append(f"{name} is missing")
            continue
        try:
            cols = list(pd.read_csv(f, dtype=str, keep_default_na=False, nrows=0).columns)
        except (ValueError, pd.errors.EmptyDataError) as exc:
            probs.append(f"{name} is unreadable: {exc}")
            continue
        missing = [c for c in COLUMNS if c not in cols and c not in OPTIONAL_COLUMNS]
        if missing:
            probs.append(f"{name} lacks columns {missing}")
    for f in sorted((d / FIGURES).glob("*.npz")) if (d / FIGURES).is_dir() else []:
        try:
            with np.load(f) as z:
                json.loads(bytes(z["meta"]).decode())
        except Exception as exc:  # noqa: BLE001 - any unreadable file is a schema problem
            probs.append(f"{f.relative_to(d)} is unreadable: {type(exc).__name__}")
    return probs


def check(root: Path | None = None, *, archive: Path | None = None, data_dir: str | None = None,
          pkg: Path | None = None) -> list[EntryStatus]:
    """Every entry's schema and stamp against today's code, parameters and data (nothing executes).
    ``root`` None: the book root holding ``archive`` (a kernel in the runner's output tree, whose own
    folders are not a book: its archive comes from ``$QLIB_ARCHIVE_DIR``), else the one above the
    working directory. ``pkg``: the ``qlib`` package folder the stamps read (default the installed one)."""
    if root is None:
        arch = Path(archive) if archive is not None else archive_root()
        holder = arch.resolve().parent
        root = holder if (holder / "_toc.yml").is_file() and (holder / "chapters").is_dir() else None
    root = find_root(root)
    archive = Path(archive) if archive is not None else archive_root(root)
    out = []
    known = set(notebooks(root))
    for profile, cid in entries(archive):
        d = entry_dir(archive, profile, cid)
        try:
            prov = json.loads((d / PROVENANCE).read_text())
        except (OSError, ValueError) as exc:
            out.append(EntryStatus(profile, cid, "invalid", problems=[f"{PROVENANCE} unreadable: {exc}"]))
            continue
        probs = _schema_problems(d, prov)
        if probs:
            out.append(EntryStatus(profile, cid, "invalid", problems=probs, provenance=prov if isinstance(prov, dict) else {}))
            continue
        nb = prov["notebook"]
        if prov.get("dirty") is True:
            out.append(EntryStatus(profile, cid, "dirty", provenance=prov, changes=[
                f"it ran from a working tree with uncommitted changes (commit {str(prov['commit'])[:10]} plus edits): "
                "re-run it from a clean commit"]))
            continue
        if nb not in known:
            out.append(EntryStatus(profile, cid, "stale", changes=[f"the notebook {nb} is no longer in the book"],
                                   provenance=prov))
            continue
        now = notebook_stamp(root, nb, current_params(root, nb, profile), data_dir=data_dir, pkg=pkg,
                             rules=int(prov["stamp"].get("rules", 1)))  # by the rules it was stamped under
        changes = stamp_changes(prov["stamp"], now)
        unrecorded = object_reprs(prov["params"])
        if unrecorded:
            changes.append(f"parameters {', '.join(f'`{k}`' for k in unrecorded)} recorded as an object's repr, "
                           "not the value that ran")
        out.append(EntryStatus(profile, cid, "stale" if changes else "current", changes=changes, provenance=prov))
    return out


def status_frame(root: Path | None = None, *, archive: Path | None = None) -> pd.DataFrame:
    """One row per archived entry: profile, chapter, state, what changed, device, wall time, date, commit."""
    rows = []
    for s in check(root, archive=archive):
        p = s.provenance
        dev = p.get("device", {}) if isinstance(p.get("device"), dict) else {}
        rows.append({"profile": s.profile, "chapter": s.chapter, "state": s.state,
                     "changes": "; ".join(s.changes or s.problems),
                     "device": dev.get("gpu") or dev.get("resolved", ""), "cpu": dev.get("cpu", ""),
                     "threads": dev.get("threads"), "wall_s": p.get("wall_s"), "finished": p.get("finished", ""),
                     "commit": str(p.get("commit", ""))[:10], "revalidated": len(p.get("revalidated") or [])})
    return pd.DataFrame(rows, columns=["profile", "chapter", "state", "changes", "device", "cpu", "threads",
                                       "wall_s", "finished", "commit", "revalidated"])


def main_check(root: Path | None = None, *, archive: Path | None = None, strict: bool = False, log=print) -> int:
    """``archive-check``: every entry's schema and stamp, and the archive's size (``archive``: the archive
    folder, default :func:`~qlib.book.layout.archive_root`); exit status 1 on an invalid entry or an archive
    over :data:`~qlib.book.layout.MAX_BYTES` (and, with ``strict``, on a stale or dirty entry)."""
    root = find_root(root)
    arch = Path(archive) if archive is not None else archive_root(root)
    statuses = check(root, archive=arch)
    size = size_bytes(arch)
    bad = 0
    for s in statuses:
        line = f"{s.state:8s} {s.profile}/{s.chapter}"
        if s.changes or s.problems:
            line += ": " + "; ".join(s.changes or s.problems)
        log(line)
        bad += s.state == "invalid" or (strict and s.state in ("stale", "dirty"))
    counts = ", ".join(f"{sum(s.state == k for s in statuses)} {k}" for k in STATES)
    log(f"{len(statuses)} entries ({counts}); {size / 1e6:.2f} MB of {MAX_BYTES / 1e6:.0f} MB")
    if size > MAX_BYTES:
        log(f"error: the archive is {size / 1e6:.2f} MB, over {MAX_BYTES / 1e6:.0f} MB")
        bad += 1
    return 1 if bad else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main_check())
