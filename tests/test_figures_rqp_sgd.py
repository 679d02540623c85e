"""The figures of the RQP-SGD chapters (``qlib.repro.rqp_sgd.figures``): each figure function draws a small
frame with its driver's columns (a tiny real call where it is fast, a frame built by hand otherwise) into
the expected panels, plotting exactly the frame's values (read back with the archive's figure capture),
and each rejects a wrong input by name."""

from __future__ import annotations

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from figure_helpers import close_figures, n_axes, panels, same, same_xy  # noqa: F401 (the fixture is autouse)

from qlib.repro.rqp_sgd import figures, paper, theory  # noqa: E402


def _curve(panels=paper.FIGURE2_PANELS) -> pd.DataFrame:
    """figure2.figure2_sweep's frame, by hand: per panel and σ, q and the median/std of the accuracy."""
    sig = [0.1, 0.5, 1.0]
    return pd.DataFrame([{"panel": p, "b": b, "eps": e, "sigma": s, "q": min(1.0, 0.2 + 0.6 * s),
                          "median": 60 + 30 * s, "std": 10 - 5 * s} for p, b, e in panels for s in sig])


def test_mse_figure_from_the_real_curves():
    mse = theory.mse_curves(np.linspace(-0.45, 0.45, 21), b=4, M=0.3)
    fig = figures.mse_figure(mse, b=4, M=0.3)
    assert n_axes(fig) == 1
    ax = fig.axes[0]
    assert ax.get_yscale() == "log" and len(ax.get_lines()) == 2 * mse["q"].nunique()  # a curve and its bound per q
    (p,) = panels(fig)
    bounds = p.of("line", ls="--")
    for k, (q, g) in enumerate(mse.groupby("q")):
        same_xy(p.line(f"q = {q}"), g["x"], g["mse"])
        same(bounds[k].y, [g["bound"].iloc[0]] * 2)
    assert fig.legends and fig.legends[0].get_title().get_text() == "b = 4, M = 0.3"
    with pytest.raises(ValueError, match=r"\bmse\b.*bound"):
        figures.mse_figure(mse.drop(columns="bound"), b=4, M=0.3)
    with pytest.raises(ValueError, match=r"\bM\b"):
        figures.mse_figure(mse, b=4, M=-0.3)


def test_figure1_one_panel_per_q():
    eps = [0.1, 0.5, 1.0, 2.0]
    fig1 = pd.DataFrame({"ε": eps, "RQP q=0.90": [3.4, 1.1, 0.8, 0.7], "RQP q=0.95": [3.4, 1.0, 0.6, 0.5],
                         "Proj-DP (RDP)": [64.0, 13.2, 7.2, 4.1], "Proj-DP (Gaussian)": [2e4, 794.0, 199.0, 50.0]})
    fig = figures.figure1(fig1)
    assert n_axes(fig) == 2
    assert [ax.get_title() for ax in fig.axes] == ["(a) q = 0.90", "(b) q = 0.95"]
    assert all(len(ax.get_lines()) == 3 for ax in fig.axes)
    for p, q in zip(panels(fig), ("0.90", "0.95")):
        same_xy(p.line(f"RQP-SGD, q = {q}, (ε, 0)-DP"), fig1["ε"], fig1[f"RQP q={q}"])
        same_xy(p.line("Proj-DP-SGD, (ε, 1e-7), RDP"), fig1["ε"], fig1["Proj-DP (RDP)"])
        same_xy(p.line("Proj-DP-SGD, (ε, 1e-7), Gaussian mech."), fig1["ε"], fig1["Proj-DP (Gaussian)"])
    with pytest.raises(ValueError, match=r"\bfig1\b.*RQP q=0.95"):
        figures.figure1(fig1.drop(columns="RQP q=0.95"))
    with pytest.raises(TypeError, match=r"\bfig1\b"):
        figures.figure1(fig1.to_dict())


def test_tuning_figure_one_line_per_column():
    sw = pd.DataFrame({"sigma": [0.3, 0.3, 1.1, 1.1], "q": [0.23, 0.23, 1.0, 1.0], "run": [0, 1, 0, 1],
                       "acc": [60.0, 62.0, 95.0, 96.0]})
    fig = figures.tuning_figure({"Diagnostic (LogReg)": sw, "Diagnostic (SVM)": sw.assign(acc=sw["acc"] - 1)})
    assert n_axes(fig) == 1 and len(fig.axes[0].get_lines()) == 2
    (p,) = panels(fig)
    same_xy(p.line("Diagnostic (LogReg)"), [0.23, 1.0], [61.0, 95.5])   # the median over runs at each q
    same_xy(p.line("Diagnostic (SVM)"), [0.23, 1.0], [60.0, 94.5])
    with pytest.raises(TypeError, match=r"\bsweeps\b"):
        figures.tuning_figure(sw)
    with pytest.raises(ValueError, match=r"sweeps\['c'\].*acc"):
        figures.tuning_figure({"c": sw.drop(columns="acc")})


def test_figure2_four_panels_with_twin_axes():
    fig = figures.figure2(_curve())
    assert n_axes(fig) == 8  # four panels, each with its accuracy axis
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert titles == ["(a) 4-bit, (0.5, 0)-DP", "(b) 3-bit, (0.5, 0)-DP", "(c) 4-bit, (1.0, 0)-DP",
                      "(d) 3-bit, (1.0, 0)-DP"]
    curve = _curve()
    ps = panels(fig)                                     # the four panels, then their accuracy axes
    for k, (label, _b, _e) in enumerate(paper.FIGURE2_PANELS):
        c = curve[curve["panel"] == label]
        (q_line,) = ps[k].of("line")
        same_xy(q_line, c["sigma"], c["q"])
        (acc,) = ps[4 + k].of("line")
        same_xy(acc, c["sigma"], c["median"])
        (band,) = ps[4 + k].of("band")
        assert set(band.y) >= set(c["median"] - c["std"]) | set(c["median"] + c["std"])  # ± one std
    with pytest.raises(ValueError, match=r"\bcurve\b.*median"):
        figures.figure2(_curve().drop(columns="median"))
    with pytest.raises(TypeError, match=r"\bpanels\b"):
        figures.figure2(_curve(), panels=())


def test_bits_figure_one_line_per_eps():
    best = pd.DataFrame({"eps": [0.5, 0.5, 1.0, 1.0], "b": [3, 4, 3, 4], "best_median": [90.0, 89.0, 93.0, 92.5],
                         "q at σ = 0.5": [0.23, 0.17, 0.36, 0.31]})
    fig = figures.bits_figure(best)
    assert n_axes(fig) == 1 and len(fig.axes[0].get_lines()) == 2
    assert list(fig.axes[0].get_xticks()) == [3, 4]
    (p,) = panels(fig)
    for e in (0.5, 1.0):
        g = best[best["eps"] == e]
        same_xy(p.line(f"ε = {e}"), g["b"], g["best_median"])
    with pytest.raises(ValueError, match=r"\bbest\b.*best_median"):
        figures.bits_figure(best.drop(columns="best_median"))
    with pytest.raises(ValueError, match=r"\bbest\b.*no rows"):
        figures.bits_figure(best.iloc[:0])
