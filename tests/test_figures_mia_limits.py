"""The figures and table displays of the mia-limits chapters (``qlib.repro.mia_limits.figures``): each
figure function returns a Figure with the expected number of axes from a small input with the
driver's fields, and each rejects a wrong input by name."""

from __future__ import annotations

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from figure_helpers import close_figures, n_axes  # noqa: F401 (the fixture is autouse)
from matplotlib.figure import Figure  # noqa: E402

from qlib.mia.overfit import OverfitRun  # noqa: E402
from qlib.repro.mia_limits import figures  # noqa: E402
from qlib.repro.mia_limits.paper import PAPER_TABLE1_C  # noqa: E402


def _run(seeds=2, iters=100, every=25):
    """A run with the fields of qlib.mia.overfit.OverfitRun: the train fraction at ε = 1e-6 rises to 1."""
    its = np.arange(0, iters + 1, every)
    thr = np.array([1e-2, 1e-6])
    tf = np.stack([np.clip(its / iters, 0, 1)] * 2, -1)[None].repeat(seeds, 0)
    vf = np.full_like(tf, 0.01)
    return OverfitRun(its, thr, tf, vf, np.full((seeds, len(its)), 1e-7), np.full((seeds, len(its)), 0.02))


def test_theorem_figures():
    fig = figures.corollary541_figure(0.31)
    assert isinstance(fig, Figure) and len(fig.axes) == 1
    assert len(fig.axes[0].get_lines()) == len(figures.COR541_LAWS) + 4
    fig = figures.gaussian_mean_figure(4)
    assert isinstance(fig, Figure) and len(fig.axes) == 1
    assert len(fig.axes[0].get_lines()) == 3 * len(figures.GAUSSIAN_DIMS)
    with pytest.raises(ValueError, match=r"\brmin\b"):
        figures.corollary541_figure(1.5)
    with pytest.raises(ValueError, match=r"\bn_points\b"):
        figures.gaussian_mean_figure(1)


def test_figure1_and_its_text():
    run = _run()
    fig = figures.figure1(run)
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    assert [ax.get_title() for ax in fig.axes] == ["training points", "validation points"]
    text = figures.figure1_text(run)
    assert text.startswith("Final mean squared error: training 1e-07, validation 0.02.")
    assert "accuracy 0.9950, 0.9950 at ν = 1/2" in text and "Δ_n ≥ 0.9900" in text
    with pytest.raises(TypeError, match=r"\brun\b"):
        figures.figure1({"iterations": [0]})


def test_table1_c():
    K_list = list(PAPER_TABLE1_C)
    disc = {"cp": {K: 0.9 * np.sqrt(K - 1) for K in K_list}, "cp_pair": {K: np.sqrt(K - 1) for K in K_list}}
    t = figures.table1_c(disc, K_list)
    assert list(t.index) == K_list
    assert list(t.columns) == ["paper C(P)", "ours (cluster)", "ours (cluster, label)", "√(K−1)", "tolerance"]
    assert t["paper C(P)"].tolist() == [round(PAPER_TABLE1_C[K], 3) for K in K_list]
    with pytest.raises(ValueError, match=r"\bK_list\b"):
        figures.table1_c(disc, [7])
    with pytest.raises(TypeError, match=r"\bdisc\b"):
        figures.table1_c({"cp": {}}, K_list)
