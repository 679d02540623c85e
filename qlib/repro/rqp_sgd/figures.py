"""The figures of the RQP-SGD chapters (``chapters/rqp-sgd/``), one function per figure: each takes the
frame its chapter computed and returns the :class:`matplotlib.figure.Figure`, drawn in the book's style
(:mod:`qlib.plotting.style`) and left open for the notebook to show.

* :func:`mse_figure` — Step 1 of the proof of Theorem 2 of paper 004: Algorithm 1's exact error
  against the bound E_Q/d (chapter 01);
* :func:`figure1` — Figure 1: the Theorem 2 bound against ε, RQP-SGD and Proj-DP-SGD (chapter 01);
* :func:`tuning_figure` — the σ sweep behind RQP-SGD's column of Table 1 (chapter 02);
* :func:`figure2` — Figure 2: q from Theorem 1 and the test accuracy against σ, four panels (chapter 03);
* :func:`bits_figure` — the bits claim of §4: the best accuracy against b (chapter 03).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from ...plotting import style
from ...rqp_privacy import check_bits
from ...validation import check_float_sequence, check_frame, check_positive
from ._args import check_frames
from .paper import FIGURE1_QS, FIGURE2_PANELS

__all__ = ["mse_figure", "figure1", "tuning_figure", "figure2", "bits_figure"]


def mse_figure(mse, *, b: int, M: float) -> Figure:
    """The exact per-coordinate mean squared error of Algorithm 1 (solid, one line per q) against the
    bound E_Q/d of Step 1 of Theorem 2's proof (dashed, same colour), log scale; the inputs outside
    [−M, M] (clipped before projection) shaded grey. ``mse``: :func:`.theory.mse_curves`'s frame
    (columns q, x, mse, bound); ``b``, ``M``: the bits and range it was computed at (the legend's title)."""
    mse = check_frame("mse", mse, {"q", "x", "mse", "bound"}, "theory.mse_curves")
    b = check_bits(b)
    M = check_positive("M", M)
    lo, hi = float(mse["x"].min()), float(mse["x"].max())
    fig, ax = plt.subplots(figsize=(6.4, 4.2), layout="constrained")
    for q, g in mse.groupby("q"):
        line, = ax.plot(g["x"], g["mse"], label=f"q = {q}")
        ax.axhline(g["bound"].iloc[0], color=line.get_color(), ls="--", lw=1)
    ax.axvspan(lo, -M, color="0.92")
    ax.axvspan(M, hi, color="0.92")
    ax.set_yscale("log")
    ax.set_xlabel("input coordinate $x$")
    ax.set_ylabel(r"$\mathbb{E}[(\mathrm{Proj}^R(x) - x)^2]$")
    style.legend_outside(fig, title=f"b = {b}, M = {M}")
    return fig


def figure1(fig1, qs=FIGURE1_QS) -> Figure:
    """Figure 1 of paper 004 reconstructed: per panel (one per q of ``qs``, Figure 1 (a), (b)) the
    Theorem 2 bound of RQP-SGD at (ε, 0)-DP (blue) and of Proj-DP-SGD at (ε, 1e-7)-DP with σ from the
    RDP accountant (red, solid) or the Gaussian mechanism (red, dashed), against ε; log y, shared.
    ``fig1``: :func:`.theory.fig1_curves`'s frame."""
    labels = [f"{q:.2f}" for q in check_float_sequence("qs", qs, low=0.0, high=1.0)]
    fig1 = check_frame("fig1", fig1, {"ε", "Proj-DP (RDP)", "Proj-DP (Gaussian)", *(f"RQP q={q}" for q in labels)},
                       "theory.fig1_curves")
    fig, axes = plt.subplots(1, len(labels), figsize=(style.COLUMN_IN, 3.8), sharey=True, layout="constrained",
                             squeeze=False)
    for i, (ax, q) in enumerate(zip(axes[0], labels)):
        ax.plot(fig1["ε"], fig1[f"RQP q={q}"], color="C0", lw=2, label=f"RQP-SGD, q = {q}, (ε, 0)-DP")
        ax.plot(fig1["ε"], fig1["Proj-DP (RDP)"], color="C3", label="Proj-DP-SGD, (ε, 1e-7), RDP")
        ax.plot(fig1["ε"], fig1["Proj-DP (Gaussian)"], color="C3", ls="--", label="Proj-DP-SGD, (ε, 1e-7), Gaussian mech.")
        ax.set_yscale("log")
        ax.set_xlabel("privacy budget ε")
        ax.set_title(f"({'abcdefgh'[i]}) q = {q}")
    axes[0, 0].set_ylabel("utility bound, eq. (11)")
    style.legend_outside(fig)
    return fig


def tuning_figure(sweeps) -> Figure:
    """The tuning behind RQP-SGD's column of Table 1: per column of the table, the median test accuracy
    over the sweep's runs against the q Theorem 1 assigns to each σ of the grid at (1, 0)-DP.
    ``sweeps``: {column: :func:`.experiments.rqp_sweep`'s frame}, as :func:`.table1.tune_sigmas` returns."""
    sweeps = check_frames("sweeps", sweeps, {"q", "acc"}, "experiments.rqp_sweep")
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    for col, sw in sweeps.items():
        med = sw.groupby("q")["acc"].median()
        ax.plot(med.index, med.values, marker="o", ms=3, label=col)
    ax.set_xlabel("q from Theorem 1 (ε = 1, b = 4)")
    ax.set_ylabel("median test accuracy (%)")
    ax.legend(fontsize="small")
    return fig


def figure2(curve, panels=FIGURE2_PANELS) -> Figure:
    """Figure 2 of paper 004: per panel — (label, bits, ε) of ``panels``, two per row — q from Theorem 1
    (blue, left axis) and the median test accuracy over the runs (red, right axis; band: ± one std)
    against σ. Each y axis is named once, on the figure's outer sides. ``curve``:
    :func:`.figure2.figure2_sweep`'s frame (columns panel, sigma, q, median, std)."""
    curve = check_frame("curve", curve, {"panel", "sigma", "q", "median", "std"}, "figure2.figure2_sweep")
    if not isinstance(panels, (list, tuple)) or not panels:
        raise TypeError(f"panels must be a non-empty sequence of (label, bits, eps) triples, got {panels!r}")
    rows = (len(panels) + 1) // 2
    fig, axes = plt.subplots(rows, 2, figsize=(style.COLUMN_IN, 3.1 * rows), sharex=True, layout="constrained",
                             squeeze=False)
    for k, (ax, (p, b, e)) in enumerate(zip(axes.flat, panels)):
        c = curve[curve["panel"] == p]
        ax.plot(c["sigma"], c["q"], color="C0", lw=2)
        ax.set_ylim(0, 1.05)
        ax.tick_params(axis="y", labelcolor="C0")
        ax2 = ax.twinx()
        ax2.grid(False)
        ax2.plot(c["sigma"], c["median"], color="C3", marker="o", ms=3)
        ax2.fill_between(c["sigma"], c["median"] - c["std"], c["median"] + c["std"], color="C3", alpha=0.12)
        ax2.set_ylim(0, 100)
        ax2.tick_params(axis="y", labelcolor="C3")
        if k % 2 == 0:  # each axis named once, on the figure's outer sides
            ax.set_ylabel("q (Theorem 1)", color="C0")
        else:
            ax2.set_ylabel("median test accuracy (%)", color="C3")
        ax.set_title(f"({p}) {b}-bit, ({e}, 0)-DP")
    for ax in axes[-1]:
        ax.set_xlabel("noise scale σ")
    return fig


def bits_figure(best) -> Figure:
    """The bits claim of §4 of paper 004 (no figure in the paper): RQP-SGD's best median test accuracy
    over the σ grid against the number of bits b, one line per ε. ``best``:
    :func:`.figure2.bits_sweep`'s frame (columns eps, b, best_median)."""
    best = check_frame("best", best, {"eps", "b", "best_median"}, "figure2.bits_sweep")
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    for e, g in best.groupby("eps"):
        ax.plot(g["b"], g["best_median"], marker="o", label=f"ε = {e}")
    ax.set_xlabel("quantization bits b")
    ax.set_ylabel("best median test accuracy over σ (%)")
    ax.set_xticks(sorted(best["b"].unique()))
    ax.legend()
    return fig
