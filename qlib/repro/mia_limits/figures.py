"""The figures and table displays of the mia-limits chapters (paper 003, Aubinais et al. 2024), in the
book's one plotting style (:mod:`qlib.plotting.style`).

Each function draws one figure (returned as a :class:`matplotlib.figure.Figure`, made with
:mod:`matplotlib.pyplot` so that a notebook shows it) or builds one table or sentence a chapter
displays; none computes a ledger row.

* chapter 01: :func:`corollary541_figure` (the ratio of Corollary 5.4.1 between its constants),
  :func:`gaussian_mean_figure` (Theorem 5.1 made exact on Gaussian data);
* chapter 02 (§6.1): :func:`figure1` (Figure 1, the fractions of points below each loss threshold
  along training), :func:`figure1_text` (the final errors and the loss-threshold attack);
* chapter 03 (§6.2): :func:`table1_c` (Table 1's C(P) beside ours, the Lemma C.4 cap and our tolerance).
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from ...mia import bounds, gaussian
from ...mia.overfit import OverfitRun
from ...plotting import style
from ...validation import check_int, check_int_sequence, check_probability
from .mnist import table1_c_tolerance
from .overfitting import figure1_summary
from .paper import PAPER_TABLE1_C

__all__ = ["COR541_LAWS", "GAUSSIAN_DIMS", "corollary541_figure", "gaussian_mean_figure", "figure1", "figure1_text",
           "table1_c"]

#: the laws drawn in :func:`corollary541_figure`: two atoms (balanced, skewed, very skewed), three
#: atoms, ten equal atoms
COR541_LAWS = ((0.5, 0.5), (0.2, 0.8), (0.05, 0.95), (0.2, 0.3, 0.5), (0.1,) * 10)
#: the dimensions drawn in :func:`gaussian_mean_figure`
GAUSSIAN_DIMS = (1, 2, 3, 10)


def corollary541_figure(rmin: float) -> Figure:
    """Corollary 5.4.1 of paper 003: the exact ratio R = max_A Δ_n √n / C(P) (Theorem 5.4, De Moivre's
    form) for the laws :data:`COR541_LAWS` at sample sizes 1 … 10⁴, between the stated constants c and
    1/2, with its limit 1/√(2π) and ``rmin`` (in [0, 1]: the smallest R found on the chapter's grid of
    random laws, :func:`.theory.cor541_min_ratio`)."""
    rmin = check_probability("rmin", rmin)
    ns = np.unique(np.round(np.logspace(0, 4, 60)).astype(int))
    fig, ax = plt.subplots(layout="constrained")
    for p in COR541_LAWS:
        ax.plot(ns, [bounds.cor541_ratio(list(p), n) for n in ns], lw=1.4, label=f"K={len(p)}, min p={min(p):g}")
    for y, lab, ls in ((0.5, "upper constant 1/2", "-"), (bounds.COR541_LIMIT, r"limit $1/\sqrt{2\pi}$", "--"),
                       (rmin, f"smallest R on the grid, {rmin:.3f}", ":"),
                       (bounds.COR541_C, f"stated c = {bounds.COR541_C:.3f}", "-.")):
        ax.axhline(y, color="0.4", ls=ls, lw=0.9, label=lab)
    ax.set(xscale="log", xlabel="sample size n", ylabel=r"$R = \max_A \Delta_n \sqrt{n} / C(P)$", ylim=(0, 0.55))
    style.legend_outside(fig, fontsize="small")
    return fig


def gaussian_mean_figure(n_points: int) -> Figure:
    """Theorem 5.1 of paper 003 made exact: √n Δ_n of the empirical mean on Gaussian data in dimensions
    :data:`GAUSSIAN_DIMS` (solid) at about ``n_points`` (≥ 2) sample sizes from 2 to 10⁴, its limit
    m_1/√(2π) (dashed) and the explicit bound √n (√d/(2n) + m_1/(2√n)) (dotted), from
    :mod:`qlib.mia.gaussian`."""
    n_points = check_int("n_points", n_points, low=2, high=10_000)
    ns = np.unique(np.round(np.logspace(0.31, 4, n_points)).astype(int))
    fig, ax = plt.subplots()
    for d in GAUSSIAN_DIMS:
        line, = ax.plot(ns, [math.sqrt(n) * gaussian.gaussian_mean_delta(n, d) for n in ns], lw=1.5, label=f"d = {d}")
        ax.axhline(gaussian.gaussian_mean_limit(d), color=line.get_color(), ls="--", lw=0.8)
        ax.plot(ns, [math.sqrt(n) * gaussian.gaussian_mean_bound(n, d) for n in ns], color=line.get_color(), ls=":",
                lw=1)
    ax.set(xscale="log", xlabel="sample size n", ylabel=r"$\sqrt{n}\,\Delta_n$")
    ax.legend(fontsize=8)
    return fig


def _check_run(run) -> OverfitRun:
    if not isinstance(run, OverfitRun):
        raise TypeError(f"run must be an OverfitRun (what qlib.mia.overfit.train_overfit_mlp returns), "
                        f"got {type(run).__name__}")
    return run


def figure1(run: OverfitRun) -> Figure:
    """Figure 1 of paper 003 (§6.1): along training, the fraction of training (left) and validation
    (right) points whose squared loss is at most each threshold ε of ``run``, mean over its seeds."""
    run = _check_run(run)
    fig, axes = plt.subplots(1, 2, figsize=(style.COLUMN_IN, 3.6), sharey=True, layout="constrained")
    for ax, frac, title in ((axes[0], run.train_frac, "training points"), (axes[1], run.val_frac, "validation points")):
        for j, e in enumerate(run.thresholds):
            ax.plot(run.iterations, frac[:, :, j].mean(0), lw=1.3, label=f"ε = {e:g}")
        ax.set(title=title, xlabel="iteration", ylim=(-0.02, 1.02))
    axes[0].set_ylabel("fraction with squared loss ≤ ε")
    style.legend_outside(fig)
    return fig


def figure1_text(run: OverfitRun) -> str:
    """The sentence under Figure 1: the final mean squared errors (training, validation) and, per seed,
    the accuracy at ν = 1/2 of the attack "member iff the loss is ≤ 10⁻⁶", whose advantage bounds Δ_n
    from below (Theorem 4.3, Eq. 6)."""
    run = _check_run(run)
    s = figure1_summary(run)
    return (f"Final mean squared error: training {run.train_mse[:, -1].mean():.3g}, validation "
            f"{run.val_mse[:, -1].mean():.3g}. At ε = 1e-6 the loss-threshold attack has accuracy "
            f"{', '.join(f'{a:.4f}' for a in s['attack_accuracy'])} at ν = 1/2 (per run), i.e. Δ_n ≥ "
            f"{s['bound'].min():.4f}.")


def table1_c(disc: Mapping, K_list: Sequence[int]) -> pd.DataFrame:
    """Table 1 of paper 003 (§6.2), its C(P) column: per number of clusters K of ``K_list``, the paper's
    C(P), ours for the law of the cluster index and of the (cluster, label) pair, the Lemma C.4 cap
    √(K − 1) and our tolerance (:func:`.mnist.table1_c_tolerance`). ``disc``: what
    :func:`.mnist.fit_discretisations` returns."""
    if not isinstance(disc, Mapping) or not {"cp", "cp_pair"} <= set(disc):
        raise TypeError("disc must be the dict mnist.fit_discretisations returns (with cp and cp_pair)")
    K_list = check_int_sequence("K_list", K_list, low=1)
    missing = [K for K in K_list if K not in disc["cp"]]
    if missing:
        raise ValueError(f"K_list must name clusterings that disc holds ({list(disc['cp'])}); got {missing}")
    return pd.DataFrame({"paper C(P)": {K: PAPER_TABLE1_C.get(K) for K in K_list}, "ours (cluster)": disc["cp"],
                         "ours (cluster, label)": disc["cp_pair"], "√(K−1)": {K: np.sqrt(K - 1) for K in K_list},
                         "tolerance": {K: table1_c_tolerance(K) for K in K_list}}).round(3)
