"""Tables rendered as MyST Markdown (so that maths in cells is typeset by the book)."""

from __future__ import annotations

import math

import pandas as pd

MISSING = "—"


def _is_number(v) -> bool:
    import numbers

    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def _cell(v, math_col: bool, digits: int = 4) -> str:
    if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
        return MISSING
    if isinstance(v, float):
        s = f"{v:.{digits}g}"
    else:
        s = str(v)
    s = s.replace("|", r"\|").replace("\n", " ")
    return f"${s}$" if math_col and s else s


def markdown(df: pd.DataFrame, *, math_columns: list[str] | tuple[str, ...] = (), index: bool = False,
             digits: int = 4) -> str:
    """``df`` as a Markdown pipe table — the one table helper of the book: numbers right-aligned
    with ``digits`` significant digits, "—" for a missing value, no index column (unless ``index``),
    no cell ever truncated; cells of ``math_columns`` are wrapped in ``$…$``."""
    if index:
        df = df.reset_index()
    unknown = set(math_columns) - set(df.columns)
    if unknown:
        raise ValueError(f"math_columns not in the frame: {sorted(unknown)}")
    cols = [str(c) for c in df.columns]
    numeric = [len(df) > 0 and all(_is_number(v) or v is None or v is pd.NA for v in df[c]) for c in df.columns]
    lines = ["| " + " | ".join(c.replace("|", r"\|") for c in cols) + " |",
             "|" + "".join("---:|" if n else "---|" for n in numeric)]
    for row in df.itertuples(index=False):
        lines.append("| " + " | ".join(_cell(v, c in math_columns, digits) for v, c in zip(row, df.columns)) + " |")
    return "\n".join(lines)
