"""Tables rendered as MyST Markdown (so that maths in cells is typeset by the book)."""

from __future__ import annotations

import math

import pandas as pd


def _cell(v, math_col: bool) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA:
        return ""
    if isinstance(v, float):
        s = f"{v:.4g}"
    else:
        s = str(v)
    s = s.replace("|", r"\|").replace("\n", " ")
    return f"${s}$" if math_col and s else s


def markdown(df: pd.DataFrame, *, math_columns: list[str] | tuple[str, ...] = (), index: bool = False) -> str:
    """``df`` as a Markdown pipe table; cells of ``math_columns`` are wrapped in ``$…$``."""
    if index:
        df = df.reset_index()
    unknown = set(math_columns) - set(df.columns)
    if unknown:
        raise ValueError(f"math_columns not in the frame: {sorted(unknown)}")
    cols = [str(c) for c in df.columns]
    lines = ["| " + " | ".join(c.replace("|", r"\|") for c in cols) + " |", "|" + "---|" * len(cols)]
    for row in df.itertuples(index=False):
        lines.append("| " + " | ".join(_cell(v, c in math_columns) for v, c in zip(row, df.columns)) + " |")
    return "\n".join(lines)
