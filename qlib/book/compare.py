"""Paper-vs-ours comparison rows.

A chapter notebook records one row per number (or claim) it reproduces: which paper, which figure or
table, what quantity, the paper's value, ours, the tolerance and the verdict — ``reproduced``,
``differs`` or ``not comparable`` (with the reason). Rows are written, atomically, to
``<out_dir>/comparisons.csv`` after every record; the appendix gathers every chapter's file into one
table with :func:`gather`.
"""

from __future__ import annotations

import math
import os
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import pandas as pd

VERDICTS = ("reproduced", "differs", "not comparable")
COLUMNS = ["chapter", "paper", "where", "quantity", "paper_value", "ours", "tolerance", "verdict", "note"]
FILENAME = "comparisons.csv"


@dataclass(frozen=True)
class Row:
    chapter: str
    paper: str
    where: str
    quantity: str
    paper_value: str
    ours: str
    tolerance: str
    verdict: str
    note: str


def _fmt(x: Any) -> str:
    if x is None:
        return ""
    if isinstance(x, (bool, np.bool_)):
        return str(bool(x))
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    if isinstance(x, (float, np.floating)):
        return f"{float(x):.6g}"
    return str(x)


def _finite_number(name: str, x: Any) -> float:
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number, got {type(x).__name__}")
    x = float(x)
    if not math.isfinite(x):
        raise ValueError(f"{name} must be finite, got {x}")
    return x


class Comparisons:
    """Recorder of paper-vs-ours rows for one chapter, saved to ``<out_dir>/comparisons.csv``."""

    def __init__(self, chapter: str, out_dir: str | os.PathLike | None):
        if not isinstance(chapter, str) or not chapter.strip():
            raise ValueError("chapter must be a non-empty string")
        self.chapter = chapter
        self.out_dir = None if out_dir is None else Path(out_dir)
        self.rows: list[Row] = []
        if self.out_dir is not None:
            self.out_dir.mkdir(parents=True, exist_ok=True)
            self.save()  # a re-run starts from an empty table

    # -- recording ---------------------------------------------------------------------------
    def close(
        self,
        paper: str,
        where: str,
        quantity: str,
        paper_value: float,
        ours: float,
        *,
        rtol: float = 0.0,
        atol: float = 0.0,
        note: str = "",
    ) -> str:
        """Numeric comparison: reproduced iff ``|ours − paper| ≤ atol + rtol·|paper|``."""
        p = _finite_number("paper_value", paper_value)
        o = _finite_number("ours", ours)
        rtol = _finite_number("rtol", rtol)
        atol = _finite_number("atol", atol)
        if rtol < 0 or atol < 0:
            raise ValueError(f"rtol and atol must be >= 0, got rtol={rtol}, atol={atol}")
        ok = abs(o - p) <= atol + rtol * abs(p)
        parts = []
        if atol:
            parts.append(f"±{atol:.3g}")
        if rtol:
            parts.append(f"±{100 * rtol:.3g}%")
        tol = " + ".join(parts) if parts else "exact"
        return self._add(paper, where, quantity, _fmt(p), _fmt(o), tol, "reproduced" if ok else "differs", note)

    def check(
        self,
        paper: str,
        where: str,
        quantity: str,
        paper_value: Any,
        ours: Any,
        passed: bool,
        *,
        tolerance: str = "",
        note: str = "",
    ) -> str:
        """A claim or inequality whose test the notebook has computed (``passed``)."""
        if not isinstance(passed, (bool, np.bool_)):
            raise TypeError(f"passed must be a bool, got {type(passed).__name__}")
        verdict = "reproduced" if bool(passed) else "differs"
        return self._add(paper, where, quantity, _fmt(paper_value), _fmt(ours), tolerance, verdict, note)

    def not_comparable(
        self, paper: str, where: str, quantity: str, paper_value: Any, ours: Any = None, *, reason: str
    ) -> str:
        """A row that cannot be judged (different data, stand-in embedder, value missing…): say why."""
        if not isinstance(reason, str) or not reason.strip():
            raise ValueError("not_comparable needs a non-empty reason")
        return self._add(paper, where, quantity, _fmt(paper_value), _fmt(ours), "", "not comparable", reason)

    def _add(self, paper, where, quantity, paper_value, ours, tolerance, verdict, note) -> str:
        for name, val in (("paper", paper), ("where", where), ("quantity", quantity)):
            if not isinstance(val, str) or not val.strip():
                raise ValueError(f"{name} must be a non-empty string, got {val!r}")
        assert verdict in VERDICTS
        self.rows.append(Row(self.chapter, paper, where, quantity, paper_value, ours, tolerance, verdict, note))
        self.save()
        return verdict

    # -- output --------------------------------------------------------------------------------
    def frame(self) -> pd.DataFrame:
        return pd.DataFrame([asdict(r) for r in self.rows], columns=COLUMNS)

    def save(self) -> None:
        if self.out_dir is None:
            return
        _atomic_write_csv(self.frame(), self.out_dir / FILENAME)

    def show(self):
        """The chapter's table, verdicts coloured, for display as a notebook cell's output."""
        return style_table(self.frame().drop(columns=["chapter"]))

    def summary(self) -> dict[str, int]:
        counts = {v: 0 for v in VERDICTS}
        for r in self.rows:
            counts[r.verdict] += 1
        return counts


def _atomic_write_csv(df: pd.DataFrame, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", newline="") as fh:
            df.to_csv(fh, index=False)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def gather(results_dir: str | os.PathLike) -> pd.DataFrame:
    """Every chapter's comparison rows under ``results_dir`` (recursively), in one frame."""
    root = Path(results_dir)
    frames: list[pd.DataFrame] = []
    for f in sorted(root.rglob(FILENAME)):
        df = pd.read_csv(f, dtype=str, keep_default_na=False)
        missing = set(COLUMNS) - set(df.columns)
        if missing:
            raise ValueError(f"{f} lacks columns {sorted(missing)}")
        frames.append(df[COLUMNS])
    if not frames:
        return pd.DataFrame(columns=COLUMNS)
    return pd.concat(frames, ignore_index=True)


_COLOURS = {"reproduced": "#d9f2d9", "differs": "#f9d6d5", "not comparable": "#eeeeee"}


def style_table(df: pd.DataFrame):
    def colour(v):
        return f"background-color: {_COLOURS[v]}" if v in _COLOURS else ""

    sty = df.style.hide(axis="index")
    if "verdict" in df.columns:
        sty = sty.map(colour, subset=["verdict"])
    return sty


def counts_by(df: pd.DataFrame, by: Iterable[str] = ("chapter",)) -> pd.DataFrame:
    """Number of rows per verdict, grouped by ``by`` (for the appendix summary)."""
    by = list(by)
    if df.empty:
        return pd.DataFrame(columns=by + list(VERDICTS))
    tab = pd.crosstab([df[c] for c in by], df["verdict"]).reindex(columns=list(VERDICTS), fill_value=0)
    return tab.reset_index()
