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


def test_figures_fit_the_column_and_overlaps_are_found():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from qlib.book import style

    style.apply()
    fig, ax = plt.subplots(figsize=(12, 4))
    ax.plot([1, 2, 3], label="a long legend entry " * 3)
    assert style.fit_to_column(fig) and abs(fig.get_size_inches()[0] - style.COLUMN_IN) < 1e-9
    assert abs(fig.get_size_inches()[1] - 4 * style.COLUMN_IN / 12) < 1e-9  # aspect kept
    assert not style.fit_to_column(fig)
    ax.set_xlabel("x")
    ax.legend(loc="upper left", bbox_to_anchor=(0.0, -0.02))  # under the axes: on the x label
    assert any("legend overlaps the x label" in p for p in style.overlaps(fig))
    ax.legend(loc="upper left")
    assert style.overlaps(fig) == []
    ax.set_xticks(range(40))
    ax.set_xticklabels([f"label{i}" for i in range(40)])
    assert any("x tick labels overlap" in p for p in style.overlaps(fig))
    plt.close(fig)
