"""The figures of the EDEN chapters (paper 002, {cite:p}`vargaftik2022eden`): one function per figure of
the paper, drawing the frame that figure's driver returns in the book's style
(:mod:`qlib.plotting.style`: its method colours, the legend outside the axes, the content column's
width) and returning the :class:`matplotlib.figure.Figure`; a chapter shows it with ``plt.show()``.

* chapter eden/01: :func:`figure2` and :func:`figure7` (vNMSE and encode time against d, §5.2 and
  Appendix I.1), :func:`figure4` (entropy coding against the rate–distortion bound, Appendix G.1),
  :func:`figure5` (variable-length schemes, Appendix G.1);
* chapter eden/02: :func:`figure6` (one randomized Hadamard transform against the theory, Appendix H),
  :func:`figure8` (NMSE of ten clients at ResNet-18 size, Appendix I.1);
* chapter eden/03: :func:`figure11` (sub-bit compression against packet loss, Appendix I.4),
  :func:`lemma22` (the NMSE of n clients, Lemma 2.2);
* chapter eden/04: :func:`figure10` (distributed logistic regression, Appendix I.3), :func:`figure12`
  (distributed power iteration, Appendix I.5);
* chapter eden/05: :func:`figure14` (cross-device federated learning, Appendix I.7), :func:`figure3` and
  :func:`figure9` (FedAvg with a server Adam, §5.3 and Appendix I.2), :func:`figure13` (homogeneous
  federated learning, Appendix I.6).

Each function checks that its frame has the columns it draws (a ``ValueError`` naming the argument)
and draws nothing else: no number is computed here that a claims module reports.
"""

from __future__ import annotations

import math
from typing import Sequence

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.figure import Figure

from ... import eden_theory, fedavg
from ...plotting import style
from ...validation import check_float_sequence, check_frame, check_int
from .subbit import SUBBIT

__all__ = ["figure2", "figure7", "figure4", "figure5", "figure6", "figure8", "figure11", "lemma22", "figure10",
           "figure12", "figure14", "figure3", "figure9", "figure13"]


def _panels(name: str, frame: pd.DataFrame, wanted) -> list:
    """The budgets of ``wanted`` that ``frame`` holds, in that order; the frame's first budget when none is there."""
    wanted = list(wanted) if isinstance(wanted, (tuple, range)) else wanted
    check_float_sequence(name, wanted, low=0.0, high=float(eden_theory.MAX_BITS), low_open=True)
    have = list(pd.unique(frame["bits"]))
    return [b for b in wanted if b in have] or have[:1]


# -- chapter eden/01 --------------------------------------------------------------------------------------
def _vs_d(frame: pd.DataFrame, panels: list) -> Figure:
    """vNMSE (top row) and encode time (bottom row) against d, one column per budget of ``panels``."""
    fig, axes = plt.subplots(2, len(panels), figsize=(style.COLUMN_IN, 6.0), sharex=True, squeeze=False,
                             layout="constrained")
    for j, b in enumerate(panels):
        for name, g in frame[frame["bits"] == b].groupby("method"):
            axes[0, j].loglog(g["d"], g["vnmse"], marker="o", label=name, base=2, color=style.METHOD_COLORS[name])
            axes[1, j].loglog(g["d"], g["encode_ms"], marker="o", label=name, base=2, color=style.METHOD_COLORS[name])
        axes[0, j].axhline(eden_theory.limit_vnmse(b), color="k", ls=":", lw=1, label="EDEN theory")
        axes[0, j].set_title(f"b = {b}")
        axes[1, j].set_xlabel("dimension d")
    axes[0, 0].set_ylabel("vNMSE")
    axes[1, 0].set_ylabel("encode time (ms)")
    style.legend_outside(fig)
    return fig


_FIG2_COLUMNS = ("method", "bits", "d", "vnmse", "encode_ms")


def figure2(frame: pd.DataFrame, panels: Sequence[float] = (2, 4, 6)) -> Figure:
    """Figure 2 (§5.2): vNMSE and encode time against the dimension d for the budgets ``panels`` (the
    paper's b = 2, 4, 6; those the frame holds, else its first budget), one column each, with EDEN's
    Corollary 2.4 limit dotted. ``frame``: :func:`qlib.repro.eden.estimator.figure2`'s."""
    frame = check_frame("frame", frame, _FIG2_COLUMNS)
    return _vs_d(frame, _panels("panels", frame, panels))


def figure7(frame: pd.DataFrame, panels: Sequence[float] = (1, 3, 5, 7)) -> Figure:
    """Figure 7 (Appendix I.1): :func:`figure2` at the paper's b = 1, 3, 5, 7."""
    frame = check_frame("frame", frame, _FIG2_COLUMNS)
    return _vs_d(frame, _panels("panels", frame, panels))


def figure4(frame: pd.DataFrame) -> Figure:
    """Figure 4 (Appendix G.1): the analytic vNMSE (d → ∞) of EDEN without entropy coding, Lloyd–Max
    with entropy coding, 𝓘_Δb with entropy coding and the rate–distortion bound against b, log scale.
    ``frame``: :func:`qlib.repro.eden.estimator.figure4`'s."""
    curves = (("EDEN, no EE", "-", style.METHOD_COLORS["EDEN"]), ("Lloyd–Max + EE", "--", "0.45"),
              ("EDEN I_Δb + EE", "-", style.METHOD_COLORS["EDEN+EE"]), ("rate–distortion bound", ":", "k"))
    frame = check_frame("frame", frame, ("b", *(c for c, _, _ in curves)))
    fig, ax = plt.subplots()
    for col, ls, color in curves:
        ax.semilogy(frame["b"], frame[col], ls, label=col, color=color)
    ax.set_xlabel("bits per coordinate b")
    ax.set_ylabel("vNMSE (d → ∞)")
    ax.legend()
    return fig


def figure5(frame: pd.DataFrame) -> Figure:
    """Figure 5 (Appendix G.1): vNMSE against the bits per coordinate actually sent, one panel per input
    law (in the frame's order), EDEN with and without entropy coding against QSGD + Elias-ω and SQ +
    Huffman. ``frame``: :func:`qlib.repro.eden.sweeps.variable_length_sweep`'s."""
    frame = check_frame("frame", frame, ("law", "method", "bits_per_coord", "vnmse"))
    laws = list(pd.unique(frame["law"]))
    fig, axes = plt.subplots(1, len(laws), figsize=(style.COLUMN_IN, 3.6), sharey=True, squeeze=False,
                             layout="constrained")
    for ax, law in zip(axes[0], laws):
        for name, g in frame[frame["law"] == law].groupby("method"):
            ax.loglog(g["bits_per_coord"], g["vnmse"], marker="o", ms=3, label=name, color=style.METHOD_COLORS[name])
        ax.set_title(law)
        ax.set_xlabel("bits per coordinate sent")
        style.tidy_log_axis(ax, "x")
    axes[0, 0].set_ylabel("vNMSE")
    style.legend_outside(fig)
    return fig


# -- chapter eden/02 --------------------------------------------------------------------------------------
def figure6(frame: pd.DataFrame) -> Figure:
    """Figure 6 (Appendix H): EDEN's vNMSE with one randomized Hadamard transform against b, one line per
    input law, and the uniform-rotation theory (dotted), one panel per dimension d = 2^k (in the frame's
    order). ``frame``: :func:`qlib.repro.eden.rotation.figure6`'s."""
    frame = check_frame("frame", frame, ("law", "bits", "d", "vnmse", "theory"))
    dims = list(pd.unique(frame["d"]))
    fig, axes = plt.subplots(1, len(dims), figsize=(style.COLUMN_IN, 3.6), sharey=True, squeeze=False,
                             layout="constrained")
    for ax, d in zip(axes[0], dims):
        sub = frame[frame["d"] == d]
        for law, g in sub.groupby("law"):
            ax.loglog(g["bits"], g["vnmse"], marker="o", ms=3, lw=0.8, label=law)
        th = sub.drop_duplicates("bits")
        ax.loglog(th["bits"], th["theory"], "k:", lw=2, label="theory")
        k = math.log2(d)
        ax.set_title(f"$d = 2^{{{int(k)}}}$" if k == int(k) else f"$d = {d}$")
        ax.set_xlabel("bits per coordinate b")
        style.tidy_log_axis(ax, "x")
    axes[0, 0].set_ylabel("vNMSE")
    style.legend_outside(fig)
    return fig


def figure8(frame: pd.DataFrame, d: int, clients: int, laws: Sequence[str] | None = None) -> Figure:
    """Figure 8 (Appendix I.1): the NMSE of the mean of ``clients`` vectors of dimension ``d`` against b
    (mean ± sd over the repetitions), one panel per input law (``laws``: their order; None: the
    frame's), with EDEN's theory (d/D)·vNMSE_b/n dotted. ``frame``:
    :func:`qlib.repro.eden.rotation.figure8`'s."""
    frame = check_frame("frame", frame, ("law", "method", "bits", "nmse", "sd"))
    d = check_int("d", d, low=1)
    clients = check_int("clients", clients, low=1)
    have = list(pd.unique(frame["law"]))
    if laws is None:
        laws = have
    elif isinstance(laws, str) or not isinstance(laws, (list, tuple)) or not laws or any(law not in have for law in laws):
        raise ValueError(f"laws must be a non-empty list of the frame's laws ({', '.join(have)}), got {laws!r}")
    bits = sorted(pd.unique(frame["bits"]).tolist())
    fig, axes = plt.subplots(1, len(laws), figsize=(style.COLUMN_IN, 3.6), sharey=True, squeeze=False,
                             layout="constrained")
    for ax, law in zip(axes[0], laws):
        for name, g in frame[frame["law"] == law].groupby("method"):
            ax.errorbar(g["bits"], g["nmse"], yerr=g["sd"].fillna(0), marker="o", ms=3, label=name, capsize=2,
                        color=style.METHOD_COLORS[name])
        ax.semilogy(bits, [eden_theory.expected_vnmse(d, b) / clients for b in bits], "k:", label="EDEN theory")
        ax.set_yscale("log")
        ax.set_title(law)
        ax.set_xlabel("bits per coordinate b")
    axes[0, 0].set_ylabel(f"NMSE ({clients} clients)")
    style.legend_outside(fig)
    return fig


# -- chapter eden/03 --------------------------------------------------------------------------------------
def figure11(frame: pd.DataFrame) -> Figure:
    """Figure 11 (Appendix I.4): vNMSE against the fraction p of coordinates kept (sub-bit) or received
    (tail drop, random loss), with Corollary 4.2's π/(2p) − 1 dotted and the sub-bit scheme's exact
    expectation at the run's d dashed. ``frame``: :func:`qlib.repro.eden.sweeps.loss_subbit_sweep`'s."""
    frame = check_frame("frame", frame, ("p", "scheme", "vnmse", "theory", "expected_padded"))
    fig, ax = plt.subplots()
    for name, g in frame.groupby("scheme"):
        ax.plot(g["p"], g["vnmse"], marker="o", ms=4, label=name)
    th = frame.drop_duplicates("p")
    ax.plot(th["p"], th["theory"], "k:", lw=2, label="theory π/(2p) − 1")
    sb = frame[frame["scheme"] == SUBBIT]
    ax.plot(sb["p"], sb["expected_padded"], "k--", lw=1, label="sub-bit, exact at this d")
    ax.set_yscale("log")
    ax.set_xlabel("fraction of coordinates kept / received p")
    ax.set_ylabel("vNMSE")
    ax.legend(fontsize="small")
    return fig


def lemma22(homog: pd.DataFrame, het: dict) -> Figure:
    """Lemma 2.2 (§2.4): the NMSE of n clients with a common budget against n, measured and vNMSE/n, and
    the heterogeneous clients' NMSE, from the lemma's weighted formula (dashed) and measured (solid).
    ``homog``: :func:`qlib.repro.eden.subbit.homogeneous`'s frame; ``het``:
    :func:`qlib.repro.eden.subbit.heterogeneous`'s dict."""
    homog = check_frame("homog", homog, ("n", "NMSE", "vNMSE/n"))
    if not isinstance(het, dict) or not {"theory", "measured"} <= set(het):
        raise TypeError("het must be the dict qlib.repro.eden.subbit.heterogeneous returns (theory, measured)")
    fig, ax = plt.subplots()
    ax.loglog(homog["n"], homog["NMSE"], "o-", label="measured, b = 2")
    ax.loglog(homog["n"], homog["vNMSE/n"], "k:", label="vNMSE/n (Lemma 2.2)")
    ax.axhline(het["theory"], color="C3", ls="--", lw=1, label="heterogeneous clients: Lemma 2.2")
    ax.axhline(het["measured"].mean(), color="C3", marker="", lw=1, label="heterogeneous clients: measured")
    ax.set_xlabel("number of clients n")
    ax.set_ylabel("NMSE")
    ax.legend(fontsize="small")
    return fig


# -- chapter eden/04 --------------------------------------------------------------------------------------
def figure10(frame: pd.DataFrame) -> Figure:
    """Figure 10 (Appendix I.3): the distance of the model after distributed gradient descent with
    compressed gradients to the uncompressed model against the bit budget b (the paper's axis), log
    scale. ``frame``: :func:`qlib.repro.eden.learning.figure10`'s."""
    frame = check_frame("frame", frame, ("method", "bits", "distance"))
    fig, ax = plt.subplots()
    for m, g in frame.groupby("method"):
        ax.semilogy(g["bits"], g["distance"], marker="o", label=m, color=style.METHOD_COLORS[m])
    ax.set(xlabel="bit budget b (the paper's axis)", ylabel="distance to the uncompressed model")
    ax.legend()
    return fig


def figure12(frame: pd.DataFrame) -> Figure:
    """Figure 12 (Appendix I.5): the L2 distance of distributed power iteration's eigenvector to the
    uncompressed run's against b, log scale. ``frame``: :func:`qlib.repro.eden.learning.figure12`'s."""
    frame = check_frame("frame", frame, ("method", "bits", "error"))
    fig, ax = plt.subplots()
    for m, g in frame.groupby("method"):
        ax.semilogy(g["bits"], g["error"], marker="o", label=m, color=style.METHOD_COLORS[m])
    ax.set(xlabel="bit budget b (bits per coordinate)", ylabel="L2 error of the top eigenvector")
    ax.legend()
    return fig


# -- chapter eden/05 --------------------------------------------------------------------------------------
def figure14(frame: pd.DataFrame, window: int) -> Figure:
    """Figure 14 (Appendix I.7, MNIST panel): the global model's accuracy on training images (rolling
    mean over ``window`` rounds, evaluated rounds interpolated) and on test images per round, one line per
    method. ``frame``: :func:`qlib.repro.eden.learning.figure14`'s histories."""
    frame = check_frame("frame", frame, ("round", "method", "global_train_acc", "test_acc"))
    window = check_int("window", window, low=1)
    fig, axs = plt.subplots(1, 2, figsize=(style.COLUMN_IN, 3.6), layout="constrained")
    for m, g in frame.groupby("method", sort=False):
        axs[0].plot(g["round"], fedavg.rolling_mean(g["global_train_acc"].interpolate(), window), label=m,
                    color=style.METHOD_COLORS[m])
        t = g.dropna(subset=["test_acc"])
        axs[1].plot(t["round"], t["test_acc"], marker="o", ms=3, label=m, color=style.METHOD_COLORS[m])
    axs[0].set_title("global model, training images")
    axs[1].set_title("global model, test images")
    for ax in axs:
        ax.set(xlabel="round", ylabel="accuracy")
    style.legend_outside(fig)
    return fig


def _fedavg_grid(frame: pd.DataFrame, window: int, shakespeare: pd.DataFrame | None, bits, zoom: bool) -> Figure:
    """Figures 3 and 9: rolling-mean training accuracy per round, one row per budget and one column per task
    (the MNIST stand-in, and Shakespeare where given), Float32 in black on every row; ``zoom``: the last half
    of the rounds and the top of the accuracy range (Figure 3)."""
    frame = check_frame("frame", frame, ("round", "method", "bits", "train_acc"))
    window = check_int("window", window, low=1)
    cols = [("MNIST stand-in", frame)]
    if shakespeare is not None:
        cols.append(("Shakespeare", check_frame("shakespeare", shakespeare, ("round", "method", "bits", "train_acc"))))
    if bits is None:
        bits = list(pd.unique(frame.loc[frame["method"] != "Float32", "bits"]))
    else:
        bits = check_float_sequence("bits", bits, low=0.0, high=float(eden_theory.MAX_BITS), low_open=True)
    if not bits:
        raise ValueError("frame must hold a compressed run (a method other than Float32)")
    fig, axs = plt.subplots(len(bits), len(cols), figsize=(6 * len(cols), 2.2 * len(bits)), sharex="col",
                            squeeze=False)
    for j, (title, runs) in enumerate(cols):
        base = runs[runs["method"] == "Float32"]
        top = float(fedavg.rolling_mean(base["train_acc"], window).max()) if zoom else None
        for i, b in enumerate(bits):
            ax = axs[i, j]
            ax.plot(base["round"], fedavg.rolling_mean(base["train_acc"], window), "k", label="Float32")
            for m, g in runs[runs["bits"] == b].groupby("method", sort=False):
                ax.plot(g["round"], fedavg.rolling_mean(g["train_acc"], window), label=m, color=style.METHOD_COLORS[m])
            ax.set_ylabel(f"b = {b:g}")
            if zoom:
                ax.set_xlim(runs["round"].max() / 2, runs["round"].max())
                ax.set_ylim(max(0.0, top - 0.15), min(1.0, top + 0.02))
        axs[0, j].set_title(title)
        axs[-1, j].set_xlabel("round")
    style.legend_outside(fig)
    return fig


def figure3(frame: pd.DataFrame, window: int, *, shakespeare: pd.DataFrame | None = None,
            bits: Sequence[float] | None = None) -> Figure:
    """Figure 3 (§5.3): training accuracy (rolling mean over ``window`` rounds) per round, zoomed on the
    last half of the rounds and the top of the accuracy range as the paper's is, one row per budget of
    ``bits`` (None: the frame's compressed budgets) and one column per task: ``frame`` (the MNIST stand-in,
    :func:`qlib.repro.eden.learning.figure3_standin`'s) and ``shakespeare``
    (:func:`qlib.repro.eden.learning.figure3_task`'s, where it ran)."""
    return _fedavg_grid(frame, window, shakespeare, bits, zoom=True)


def figure9(frame: pd.DataFrame, window: int, *, shakespeare: pd.DataFrame | None = None,
            bits: Sequence[float] | None = None) -> Figure:
    """Figure 9 (Appendix I.2): :func:`figure3` over the whole range of rounds and accuracies."""
    return _fedavg_grid(frame, window, shakespeare, bits, zoom=False)


def figure13(frame: pd.DataFrame) -> Figure:
    """Figure 13's protocol (Appendix I.6): test accuracy per evaluated round, one line per method.
    ``frame``: :func:`qlib.repro.eden.learning.figure13`'s histories."""
    frame = check_frame("frame", frame, ("round", "method", "test_acc"))
    fig, ax = plt.subplots()
    for m, g in frame.groupby("method", sort=False):
        t = g.dropna(subset=["test_acc"])
        ax.plot(t["round"], t["test_acc"], marker="o", ms=3, label=m, color=style.METHOD_COLORS[m])
    ax.set(xlabel="round", ylabel="test accuracy")
    ax.legend(fontsize="small")
    return fig
