"""Paper-vs-ours comparison rows: the recorder a chapter writes them with.

A chapter records rows — computed by the reproduction (:mod:`qlib.repro`, a list of
:class:`qlib.repro.ledger.Row`) or built in the chapter with the ledger's builders — and every record
rewrites, atomically, ``<out_dir>/comparisons.csv`` (the schema of :mod:`qlib.book.schema`). Each row
has a **kind** (see :mod:`qlib.repro.ledger`); only ``paper-number`` and ``paper-claim`` rows can count
as reproductions, and only when their stated null fails the same test (``null`` / ``null_fails``
columns; a passing row whose null passes reads *consistent*).

The rows are read back across chapters by :mod:`qlib.book.gathering`, counted by
:mod:`qlib.book.summary` and put on the page by :mod:`qlib.book.render`.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Iterable

import pandas as pd

from qlib.atomic import atomic_file
from qlib.repro import ledger
from qlib.repro.ledger import Row

from . import findings
from .render import paper_vs_ours_markdown, style_table
from .scale import archived_ledger
from .schema import COLUMNS, FILENAME, PART_PAPER

__all__ = ["Comparisons"]


def _book_rows(out_dir: Path | None, chapter: str) -> pd.DataFrame | None:
    """The rows a chapter's causes may name besides its own: the other chapters' rows already in this
    run's results folder, and the current archived ``paper`` runs' (None outside a book)."""
    frames = []
    if out_dir is not None and len(out_dir.parents) > chapter.count("/") + 1:
        results = out_dir.parents[chapter.count("/")]
        for f in sorted(results.rglob(FILENAME)) if results.is_dir() else []:
            if f.parent == out_dir or f.parent.relative_to(results).as_posix() == chapter:
                continue
            try:
                other = pd.read_csv(f, dtype=str, keep_default_na=False)
            except (OSError, ValueError, pd.errors.EmptyDataError):
                continue
            if len(other) and set(COLUMNS[:9]) <= set(other.columns):
                frames.append(other.assign(id=findings.F.row_ids(other)))
    for d in ([out_dir, *out_dir.resolve().parents] if out_dir is not None else []) + [Path.cwd(), *Path.cwd().parents]:
        if (d / "_toc.yml").is_file() and (d / "archive").is_dir():
            try:
                a = archived_ledger(d)
            except (OSError, ValueError, FileNotFoundError):
                break
            if len(a):
                frames.append(a)
            break
    return pd.concat(frames, ignore_index=True) if frames else None


class Comparisons:
    """Recorder of paper-vs-ours rows for one chapter, saved to ``<out_dir>/comparisons.csv``.

    ``chapter`` is the notebook's id below ``chapters/`` (e.g. ``eden/01-estimator-vnmse``); rows with
    no ``paper`` take the paper of its part (``paper=`` overrides it).
    """

    def __init__(self, chapter: str, out_dir: str | os.PathLike | None, *, paper: str | None = None):
        if not isinstance(chapter, str) or not chapter.strip():
            raise ValueError("chapter must be a non-empty string")
        self.chapter = chapter
        self.paper = paper if paper is not None else PART_PAPER.get(chapter.split("/")[0])
        self.out_dir = None if out_dir is None else Path(out_dir)
        self.rows: list[Row] = []
        if self.out_dir is not None:
            self.out_dir.mkdir(parents=True, exist_ok=True)
            self.save()  # a re-run starts from an empty table

    # -- recording ---------------------------------------------------------------------------
    def record(self, rows: Row | Iterable[Row]) -> list[str]:
        """Record one row or many (as returned by a :mod:`qlib.repro` function); returns the verdicts."""
        rows = [rows] if isinstance(rows, Row) else list(rows)
        for r in rows:
            if not isinstance(r, Row):
                raise TypeError(f"rows must be qlib.repro.ledger.Row objects, got {type(r).__name__}")
            if r.paper is None:
                if self.paper is None:
                    raise ValueError(f"row {r.where!r} has no paper and chapter {self.chapter!r} has no default")
                r = replace(r, paper=self.paper)
            self.rows.append(r)
        self.save()
        return [r.verdict for r in rows]

    # -- output --------------------------------------------------------------------------------
    def frame(self, *, scale: str | None = None) -> pd.DataFrame:
        """The chapter's rows (the ``comparisons.csv`` schema). Causes: checked on this chapter's rows only,
        unless ``scale`` (the run's profile) is given — then on the other chapters' rows of this run and the
        current archived runs' too, as the book's ledger checks them (for the page)."""
        recs = [
            {"chapter": self.chapter, "paper": r.paper, "kind": r.kind, "where": r.where, "quantity": r.quantity,
             "paper_value": ledger.fmt(r.paper_value), "ours": ledger.fmt(r.ours), "tolerance": r.tolerance,
             "verdict": r.verdict, "note": r.note, "null": ledger.fmt(r.null),
             "null_fails": "" if r.null_fails is None else str(r.null_fails), "cause": "", "evidence": ""}
            for r in self.rows
        ]
        df = pd.DataFrame(recs, columns=COLUMNS)
        if df.empty:
            return df
        # the cause of every differing row, from the wings' typed causes checked on their evidence rows (the
        # book's ledger checks them again on every chapter's rows and the archived runs')
        df = df.assign(id=findings.F.row_ids(df))
        if scale is None:
            judged = findings.with_causes(df)
        else:
            others = _book_rows(self.out_dir, self.chapter)
            arch = others[others["id"].str.endswith("@paper")] if others is not None else None
            pool = findings.evidence_pool(df.assign(scale=scale), others)
            judged = findings.with_causes(df.assign(scale=scale), archived=arch, pool=pool)
        return df.drop(columns=["id"]).assign(cause=judged["cause"].to_numpy(),
                                              evidence=judged["cause_evidence"].to_numpy())

    def save(self) -> None:
        if self.out_dir is None:
            return
        with atomic_file(self.out_dir / FILENAME, "w", newline="") as fh:
            self.frame().to_csv(fh, index=False)

    def show(self):
        """The chapter's table, verdicts coloured, for display as a notebook cell's output."""
        return style_table(self.frame().drop(columns=["chapter"]))

    def markdown(self) -> str:
        """The body of the chapter's ``Paper vs ours`` section (see :func:`paper_vs_ours_markdown`)."""
        return paper_vs_ours_markdown(self.frame())

    def summary(self) -> dict[str, int]:
        """Rows per verdict word (only the words that occur)."""
        counts: dict[str, int] = {}
        for r in self.rows:
            counts[r.verdict] = counts.get(r.verdict, 0) + 1
        return counts

