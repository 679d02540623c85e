"""Helpers the claims modules of the EDEN wing share (:mod:`.distributed_claims`, :mod:`.federated`): private to
the package ``qlib.repro.eden`` (its modules import these names; nothing else does)."""

from __future__ import annotations

import pandas as pd

from ..ledger import Row

__all__ = ["strict_best", "best_per_bits", "as_row_list"]


def strict_best(g: pd.Series, lower_is_better: bool) -> str | None:
    """The method strictly better than every other one (None on a tie for first place)."""
    top = g.min() if lower_is_better else g.max()
    winners = g.index[g == top]
    return winners[0] if len(winners) == 1 else None


def best_per_bits(df: pd.DataFrame, value: str, lower_is_better: bool):
    """Per budget of ``df``: (bits, the strictly best method or None, the values by method)."""
    rows = []
    for b, g in df.groupby("bits"):
        g = g.set_index("method")[value]
        rows.append((b, strict_best(g, lower_is_better), g))
    return rows


def as_row_list(name: str, rows) -> list[Row]:
    """A non-empty list of ledger rows."""
    if isinstance(rows, (str, bytes)) or not isinstance(rows, (list, tuple)) or not rows \
            or not all(isinstance(r, Row) for r in rows):
        raise TypeError(f"{name} must be a non-empty list of qlib.repro.ledger.Row")
    return list(rows)
