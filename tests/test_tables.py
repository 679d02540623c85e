"""The book's one table helper."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from qlib.book import tables


def test_markdown_alignment_missing_and_no_truncation():
    long = "a note " * 30
    df = pd.DataFrame({"b": [1, 2], "vNMSE": [0.63662, math.nan], "note": [long, None]})
    md = tables.markdown(df).splitlines()
    assert md[0] == "| b | vNMSE | note |"
    assert md[1] == "|---:|---:|---|"  # numbers right-aligned, text left
    assert md[2] == f"| 1 | 0.6366 | {long} |"  # nothing cut
    assert md[3] == "| 2 | — | — |"  # missing values shown as a dash
    assert tables.markdown(df[["b"]], math_columns=["b"]).splitlines()[2] == "| $1$ |"
    with pytest.raises(ValueError, match="math_columns not in the frame"):
        tables.markdown(df, math_columns=["x"])


def test_pipes_are_escaped():
    assert "a \\| b" in tables.markdown(pd.DataFrame({"q": ["a | b"]}))
