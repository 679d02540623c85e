"""The ledger rows read back: every chapter's ``comparisons.csv`` under a results folder, in one frame.

In the batch runner's output tree a chapter's rows count only with the stamp of its notebook's
finished run (:func:`unfinished_reason`): a notebook killed mid-run leaves rows that never reach the
ledger. :func:`replicate_rows` reads the trees of the replicate runs (other seeds) the same way.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import pandas as pd

from .schema import COLUMNS, FILENAME, OPTIONAL_COLUMNS

__all__ = ["STAMPS", "STAMP_SLACK", "IncompleteResultsWarning", "unfinished_reason", "gather", "replicate_rows"]

#: the batch runner's stamps, beside ``_results`` in its output tree: ``<output>/.stamps/<chapter>.json``,
#: written when a notebook has finished (:func:`qlib.book.jobs.finish`); the folder marks a runner's tree
STAMPS = ".stamps"
#: seconds a chapter's rows may be newer than its stamp (file-system time stamps are coarse on some systems)
STAMP_SLACK = 1.0


class IncompleteResultsWarning(UserWarning):
    """Rows left out of :func:`gather` because their notebook did not finish (the message names it)."""


def unfinished_reason(results_file: str | os.PathLike, stamp_file: str | os.PathLike) -> str | None:
    """Why the rows in ``results_file`` are not those of a finished run of their notebook, or None when
    they are: the finished-run stamp ``stamp_file`` must exist, be readable, carry the time the run
    finished (``when``) and be no older than the rows (a run killed mid-way leaves rows written after the
    stamp of an earlier run, or, since the runner removes a notebook's stamp when it starts it, none)."""
    stamp = Path(stamp_file)
    try:
        data = json.loads(stamp.read_text())
    except FileNotFoundError:
        return "its notebook has no stamp of a finished run (killed, failed or still running)"
    except (OSError, ValueError):
        return f"its notebook's stamp {stamp} is unreadable"
    when = data.get("when") if isinstance(data, dict) else None
    if isinstance(when, bool) or not isinstance(when, (int, float)):
        return f"its notebook's stamp {stamp} does not say when the run finished"
    written = Path(results_file).stat().st_mtime
    if written > when + STAMP_SLACK:
        return (f"the rows were written after its notebook's last finished run ({written - when:.0f} s later): "
                "a later run did not finish")
    return None


def gather(results_dir: str | os.PathLike) -> pd.DataFrame:
    """Every chapter's comparison rows under ``results_dir`` (recursively), in one frame.

    In a batch runner's output tree (a ``.stamps`` folder beside ``results_dir``) a chapter's rows count
    only with the stamp of a finished run of its notebook, no older than the rows
    (:func:`unfinished_reason`): the rows of a notebook killed mid-run (SIGKILL, out of memory, power
    loss) are left out, with an :class:`IncompleteResultsWarning` naming the notebook and why, and the
    frame's ``attrs["incomplete"]`` maps each such chapter to the reason. Elsewhere (a chapter run by
    hand, a test's folder) every file counts."""
    root = Path(results_dir)
    stamps = root.parent / STAMPS
    runner_tree = stamps.is_dir()
    frames: list[pd.DataFrame] = []
    incomplete: dict[str, str] = {}
    for f in sorted(root.rglob(FILENAME)) if root.is_dir() else []:
        df = pd.read_csv(f, dtype=str, keep_default_na=False)
        for c in OPTIONAL_COLUMNS:
            if c not in df.columns:
                df[c] = ""
        missing = set(COLUMNS) - set(df.columns)
        if missing:
            raise ValueError(f"{f} lacks columns {sorted(missing)} (written by an older qlib: re-run its notebook)")
        if runner_tree and len(df):
            chapter = f.parent.relative_to(root).as_posix()
            why = unfinished_reason(f, stamps / f"{chapter}.json")
            if why is not None:
                incomplete[chapter] = why
                warnings.warn(IncompleteResultsWarning(
                    f"left out {len(df)} rows of {chapter} ({f}): {why}. Re-run it "
                    f"(python -m qlib.book run --only {chapter}) to count them."), stacklevel=2)
                continue
        frames.append(df[COLUMNS])
    out = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=COLUMNS)
    out.attrs["incomplete"] = incomplete
    return out


def replicate_rows(results_dir: str | os.PathLike) -> pd.DataFrame:
    """The rows of the replicate runs (``<output>/_replicates/seed-<s>/_results``), with a ``seed``
    column; empty when the book ran with one seed."""
    base = Path(results_dir).parent / "_replicates"
    frames = []
    for d in sorted(base.glob("seed-*")) if base.is_dir() else []:
        rows = gather(d / "_results")
        if len(rows):
            frames.append(rows.assign(seed=d.name.removeprefix("seed-")))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=[*COLUMNS, "seed"])

