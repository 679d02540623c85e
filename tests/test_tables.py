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

    from qlib.plotting import style

    style.apply()
    fig, ax = plt.subplots(figsize=(12, 4))
    ax.plot([1, 2, 3], label="a long legend entry " * 3)
    assert style.fit_to_column(fig) and abs(fig.get_size_inches()[0] - style.COLUMN_IN) < 1e-9
    assert abs(fig.get_size_inches()[1] - 4 * style.COLUMN_IN / 12) < 1e-9  # aspect kept
    assert not style.fit_to_column(fig)
    ax.set_xlabel("x")
    ax.legend(loc="upper left", bbox_to_anchor=(0.0, -0.02))  # under the axes: on the x label
    assert any("legend collides with x label 'x'" in p for p in style.overlaps(fig))
    ax.legend(["a"], loc="upper left")  # short: clear of the rising line
    assert style.overlaps(fig) == []
    ax.set_xticks(range(40))
    ax.set_xticklabels([f"label{i}" for i in range(40)])
    assert any("x tick labels overlap" in p for p in style.overlaps(fig))
    plt.close(fig)


def test_overlap_checker_sees_every_text_box_legends_on_data_and_small_text():
    # issue 29: the old checker saw only a legend against its own axes' labels and major ticks
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from qlib.plotting import style

    style.apply()
    # a legend laid on the data (no text collides)
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot([0, 1, 2, 3], [0, 1, 2, 3], label="rising")
    ax.legend(loc="center")
    assert any("legend lies on the data of axes 0" in p for p in style.overlaps(fig))
    ax.legend(loc="upper left")
    assert style.overlaps(fig) == []
    # a figure-level legend on a figure-level x label, and text below 8 pt
    fig.supxlabel("shared x")
    fig.legend(["rising"], loc="lower center", bbox_to_anchor=(0.5, 0.0))
    found = style.overlaps(fig)
    assert any("figure: legend 0 collides with supxlabel 'shared x'" in p for p in found), found
    ax.set_title("tiny", fontsize=6)
    assert any("below 8 pt" in p and "'tiny' at 6.0 pt" in p for p in style.overlaps(fig))
    plt.close(fig)
    # one axes' text against another's: a long title runs into the next axes' tick labels
    fig, (a0, a1) = plt.subplots(1, 2, figsize=(6, 4), gridspec_kw={"wspace": 0.05})
    a0.set_title("a long title of the left panel")
    a1.set_title("a long title of the right panel")
    found = style.overlaps(fig)
    assert any(p.startswith("axes 0 / axes 1: title 'a long title of the left panel' collides with")
               for p in found), found
    plt.close(fig)
    # a twin axes alone is clean (its hidden shared x axis is not counted twice)
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot([1, 2], [1, 2])
    ax.twinx().plot([1, 2], [2, 1], color="C1")
    assert style.overlaps(fig) == []
    plt.close(fig)
    # minor tick labels that collide with the major ones
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.set_xscale("log")
    ax.plot([1, 1000], [1, 2])
    ax.xaxis.set_minor_formatter(matplotlib.ticker.FormatStrFormatter("%.0f"))
    found = style.overlaps(fig)
    assert any("x tick labels overlap" in p for p in found), found
    plt.close(fig)


def test_overlap_checker_skips_the_axis_of_an_axes_turned_off():
    # an axes turned off draws no axis labels or ticks: its (undrawn) tick labels collide with nothing
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from qlib.plotting import style

    style.apply()
    fig, (a0, a1) = plt.subplots(1, 2, figsize=(3, 2), gridspec_kw={"wspace": 0.0})
    for ax in (a0, a1):
        ax.set_xticks(range(10))
        ax.set_xlabel("a label as long as the panel is wide")
    assert any("axes 0 / axes 1" in p for p in style.overlaps(fig))  # drawn: they collide
    a0.set_axis_off()
    a1.axis("off")
    assert style.overlaps(fig) == []
    a0.set_title("drawn")  # a title still is
    a0.set_title("drawn", fontsize=6)
    assert any("'drawn' at 6.0 pt" in p for p in style.overlaps(fig))
    plt.close(fig)


def test_legend_outside_and_tidy_log_axis_clear_the_checker():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from qlib.plotting import style

    style.apply()
    # a legend laid on the data moves below the axes, in columns that fit the figure
    fig, axes = plt.subplots(1, 2, figsize=(style.COLUMN_IN, 3))
    x = np.linspace(0, 1, 50)
    for k in range(6):
        for ax in axes:
            ax.plot(x, x * (k + 1), label=f"method number {k}")
    axes[1].legend(loc="center")
    assert any("lies on the data" in p for p in style.overlaps(fig))
    leg = style.legend_outside(fig)
    assert [t.get_text() for t in leg.get_texts()] == [f"method number {k}" for k in range(6)]  # each once
    assert axes[1].get_legend() is None and style.overlaps(fig) == []
    assert leg.get_window_extent(fig.canvas.get_renderer()).width <= fig.bbox.width
    plt.close(fig)
    # with a figure-level x label (the layout puts it at the bottom edge) the legend goes above
    fig, axes = plt.subplots(2, 2, figsize=(style.COLUMN_IN, 5))
    for ax in axes.flat:
        ax.plot(x, x, label="a")
        ax.plot(x, 1 - x, label="b")
    fig.supxlabel("shared x")
    style.legend_outside(fig)
    assert style.overlaps(fig) == []
    with pytest.raises(ValueError, match="loc must be"):
        style.legend_outside(fig, loc="best")
    plt.close(fig)
    # a short log axis: matplotlib labels its minor ticks (3×10^0 …) into each other; tidied, plain labels
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.loglog([0.45, 4.5], [1, 2])
    style.tidy_log_axis(ax, "x")
    fig.canvas.draw()
    shown = [t.get_text() for t in ax.get_xticklabels() if 0.45 <= t.get_position()[0] <= 4.5]
    assert shown == ["0.5", "1", "2"] and style.overlaps(fig) == []
    plt.close(fig)
    # a narrow axis over 1.5 decades: 1, 2, 5 × 10^k would crowd, and one power of ten says little
    for width, expected in ((3.2, ["0.0003", "0.001", "0.003"]), (1.8, ["0.001"])):  # too short: the power alone
        fig, ax = plt.subplots(figsize=(width, 2), layout="constrained")
        ax.loglog([2.2e-4, 7e-3], [1, 2])
        ax.xaxis.set_minor_formatter(matplotlib.ticker.LogFormatterSciNotation(labelOnlyBase=False))
        assert any("x tick labels overlap" in p for p in style.overlaps(fig))
        style.tidy_log_axis(ax, "x")
        fig.canvas.draw()
        lo, hi = ax.get_xlim()
        shown = [t.get_text() for t in ax.get_xticklabels() if lo <= t.get_position()[0] <= hi]
        assert shown == expected and style.overlaps(fig) == [], shown
        plt.close(fig)
    # one colour per EDEN method, all distinct
    assert len(set(style.METHOD_COLORS.values())) == len(style.METHOD_COLORS)


def test_html_is_the_one_table_format():
    import numpy as np

    df = pd.DataFrame({"a": [1.234567, np.nan], "note": ["x" * 80, "y"], "n": [1, 2]})
    h = tables.html(df)
    assert 'class="qlib-table"' in h
    assert "—" in h and "nan" not in h                      # missing values
    assert "x" * 80 in h                                     # never truncated
    assert "1.235" in h and "1.234567" not in h              # four significant digits
    assert "text-align: right" in h                          # numbers right-aligned
    assert ">0</th>" not in h and 'class="row_heading' not in h   # no 0..n-1 index column
    piv = pd.DataFrame({"b": [1, 2], "v": [0.5, 0.25]}).set_index("b")
    assert 'class="row_heading' in tables.html(piv)          # a meaningful index is kept
    own = tables.html(df.style.format(precision=2, na_rep="—"))
    assert "1.23" in own and "1.235" not in own              # a chapter's own format wins


def test_install_formatter_routes_dataframes_and_stylers():
    class Fmt:
        def __init__(self):
            self.types = {}

        def for_type(self, typ, fn):
            self.types[typ] = fn

    class IP:
        def __init__(self):
            self.display_formatter = type("D", (), {"formatters": {"text/html": Fmt()}})()

    from pandas.io.formats.style import Styler

    ip = IP()
    with pd.option_context("styler.format.na_rep", None, "display.max_colwidth", 50):
        assert tables.install_formatter(ip) is True
        assert pd.get_option("styler.format.na_rep") == "—"
        assert pd.get_option("display.max_colwidth") is None
    types = ip.display_formatter.formatters["text/html"].types
    assert types[pd.DataFrame] is tables.html and types[Styler] is tables.html


def test_tables_read_as_words_and_maths():
    # issue 29: snake_case headers, float pivot headers printed 0.100000, raw nan from a chapter's own
    # format, r_Q^n as raw text
    import numpy as np

    df = pd.DataFrame({"final_train_acc": [0.5, np.nan], 0.1: [1.0, 2.0], "r_Q^n": ["r_Q^n at 2^10", "x"]})
    h = tables.html(df.style.format("{:.3f}", subset=["final_train_acc"]))
    assert ">final train acc</th>" in h and ">0.1</th>" in h and "0.100000" not in h
    assert ">nan<" not in h and ">—</td>" in h
    assert ">r<sub>Q</sub><sup>n</sup> at 2<sup>10</sup></td>" in h
    md = tables.markdown(df)
    assert md.splitlines()[0] == "| final train acc | 0.1 | $r_{Q}^{n}$ |"
    assert "| $r_{Q}^{n}$ at $2^{10}$ |" in md


def test_legend_outside_and_tidy_log_axis_name_their_bad_arguments():
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from qlib.plotting import style

    fig = Figure(figsize=(4, 3))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.plot([1, 10, 100], [1, 2, 3], label="a")
    for kwargs, err, name in (({"ncol": 0}, ValueError, "ncol"), ({"ncol": 1.5}, TypeError, "ncol"),
                              ({"fontsize": "huge"}, ValueError, "fontsize"),
                              ({"fontsize": float("nan")}, ValueError, "fontsize"),
                              ({"fontsize": -1}, ValueError, "fontsize")):
        with pytest.raises(err, match=rf"\b{name}\b"):
            style.legend_outside(fig, **kwargs)
    assert style.legend_outside(fig, ncol=1, fontsize="small").get_texts()[0].get_text() == "a"
    ax.set_xscale("log")
    with pytest.raises(ValueError, match=r"\baxis\b"):  # "z" would have tidied the y axis
        style.tidy_log_axis(ax, "z")


def test_exponents_written_as_text_become_maths_in_html_tables_and_pages():
    # issue 53: no raw superscript on a page — HTML tables get <sup>, the pages' text an inline maths node
    from qlib.book.sphinx_ext import _RAW_SUP, tex_of
    from qlib.book.tables import html_math

    assert html_math("e^(−n r_Q^n)") == "e<sup>(−n r<sub>Q</sub><sup>n</sup>)</sup>"
    assert html_math("O(n^{-1/2}), 2p(1−p)^n") == "O(n<sup>-1/2</sup>), 2p(1−p)<sup>n</sup>"
    assert html_math("n_draws") == "n_draws"

    def split(t):
        return [tex_of(p) if i % 2 else p for i, p in enumerate(_RAW_SUP.split(t))]

    assert split("r_Q^n’s interval at d = 2^10") == ["", "r_Q^n", "’s interval at d = ", "2^{10}", ""]
    assert split("≥ 1 − s^(3 − ln(s)/4), 2p(1−p)^n") == ["≥ 1 − ", "s^{(3 − ln(s)/4)}", ", 2p", "(1−p)^n", ""]
    assert split("$r_Q^n$ (maths already) and snake_case") == ["$r_Q^n$ (maths already) and snake_case"]
