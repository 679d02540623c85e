"""The figures and table displays of the mia-limits chapters (``qlib.repro.mia_limits.figures``): each
figure function draws its input (a small run with the driver's fields, or the exact quantities of
``qlib.mia``) into the expected panels, plotting exactly those values (read back with the archive's figure
capture), and each rejects a wrong input by name."""

from __future__ import annotations

import math  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from figure_helpers import close_figures, n_axes, panels, same, same_xy  # noqa: F401 (the fixture is autouse)
from matplotlib.figure import Figure  # noqa: E402

from qlib.mia import bounds, gaussian  # noqa: E402
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
    (p,) = panels(fig)
    for law in figures.COR541_LAWS:
        line = p.line(f"K={len(law)}, min p={min(law):g}")
        same(line.y, [bounds.cor541_ratio(list(law), int(n)) for n in line.x])
    same([p.line(label).y[0] for label in ("upper constant 1/2", r"limit $1/\sqrt{2\pi}$",
                                           "smallest R on the grid, 0.310", f"stated c = {bounds.COR541_C:.3f}")],
         [0.5, bounds.COR541_LIMIT, 0.31, bounds.COR541_C])
    fig = figures.gaussian_mean_figure(4)
    assert isinstance(fig, Figure) and len(fig.axes) == 1
    assert len(fig.axes[0].get_lines()) == 3 * len(figures.GAUSSIAN_DIMS)
    (p,) = panels(fig)
    lines = p.of("line")
    for k, d in enumerate(figures.GAUSSIAN_DIMS):   # per d: √n Δ_n, its limit, its bound
        exact, limit, bound = lines[3 * k: 3 * k + 3]
        assert exact.label == f"d = {d}" and list(exact.x) == list(bound.x) and len(exact.x) >= 2
        same(exact.y, [math.sqrt(n) * gaussian.gaussian_mean_delta(int(n), d) for n in exact.x])
        same(limit.y, [gaussian.gaussian_mean_limit(d)] * 2)
        same(bound.y, [math.sqrt(n) * gaussian.gaussian_mean_bound(int(n), d) for n in bound.x])
    with pytest.raises(ValueError, match=r"\brmin\b"):
        figures.corollary541_figure(1.5)
    with pytest.raises(ValueError, match=r"\bn_points\b"):
        figures.gaussian_mean_figure(1)


def test_figure1_and_its_text():
    run = _run()
    fig = figures.figure1(run)
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    assert [ax.get_title() for ax in fig.axes] == ["training points", "validation points"]
    left, right = panels(fig)
    for j, e in enumerate(run.thresholds):        # the mean over the seeds of each threshold's fraction
        same_xy(left.line(f"ε = {e:g}"), run.iterations, run.train_frac[:, :, j].mean(0))
        same_xy(right.line(f"ε = {e:g}"), run.iterations, run.val_frac[:, :, j].mean(0))
    same(left.line("ε = 1e-06").y, np.clip(run.iterations / 100, 0, 1))
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
