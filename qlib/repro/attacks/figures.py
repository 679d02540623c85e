"""The figures of the attacks chapters (``chapters/attacks/``), one function per figure: each takes what
its chapter's driver and analysis returned and returns the :class:`matplotlib.figure.Figure`, drawn in
the book's style (:mod:`qlib.plotting.style`: the legend outside the axes) and left open for the notebook
to show (``plt.show()``). Nothing here computes a number a claims module reports.

* chapter 01 (the toys of paper 003, {cite:p}`aubinais2024fundamental`): :func:`advantage` — each attack's
  held-out advantage against the exact Δ_n and the theory's bound; :func:`toy_roc` — every attack's ROC
  curve at one sample size;
* chapter 02 (the synthetic study of paper 001 §5.1, {cite:p}`aubinais2025quantized`):
  :func:`synthetic_scatter` — per law, the strongest attack's advantage against r_Q^n;
  :func:`synthetic_rho` — Spearman ρ between the two rankings, per law and pooled;
* chapter 03 (the molecular study of paper 001 §5.2): :func:`molecular_roc` — the strongest attack's
  ROC curve per attacked model; :func:`molecular_rq` — TPR at 1 % FPR against r_Q^n;
  :func:`molecular_exposure` — the per-molecule exposure;
* chapter 04 (paper 004's models, {cite:p}`feng2023rqpsgd`): :func:`dp_roc` — the canary attack's ROC
  curves beside the (ε, δ) region's boundary.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from ... import quantizers
from ...attacks import dp_bound, metrics
from ...plotting import style
from ...validation import check_frame, check_int
from . import dp_audit, molecular, molecular_claims, synthetic, synthetic_claims, toys

__all__ = ["advantage", "toy_roc", "synthetic_scatter", "synthetic_rho", "molecular_roc", "molecular_rq",
           "molecular_exposure", "dp_roc"]

#: the marker of the i-th quantizer in the scatter figures (its colour: the i-th of the colour cycle)
_MARKS = "osD^v<>ph*"


def _has(name: str, obj, attrs, source: str):
    """``obj`` checked: it has the attributes ``attrs``, as ``source`` returns it."""
    if missing := [a for a in attrs if not hasattr(obj, a)]:
        raise TypeError(f"{name} must be what {source} returns (no {', '.join(missing)}), got {type(obj).__name__}")
    return obj


def _colours() -> list:
    return plt.rcParams["axes.prop_cycle"].by_key()["color"]


def advantage(studies: dict) -> Figure:
    """Figure ``fig-attacks-advantage`` (chapter 01): per toy — ``studies["empirical"]`` (log-log) and
    ``studies["erm"]`` (log y), each :func:`.toys.attack_study`'s result — the exact Δ_n of Theorem 3.1 of
    paper 003 (solid black), the theory's bound (dashed) and every attack's held-out advantage
    2·Acc − 1 with its interval over target models, one marker line per attack (the Bayes oracle dotted);
    an advantage ≤ 0 has no place on the log axis and is not drawn. One legend below both panels."""
    if not isinstance(studies, dict) or not {"empirical", "erm"} <= set(studies):
        raise TypeError(f"studies must be a dict with the keys 'empirical' and 'erm' (toys.attack_study's results), "
                        f"got {studies!r:.80}")
    fig, axes = plt.subplots(1, 2, figsize=(11, 5.2))
    for ax, key, xscale in ((axes[0], "empirical", "log"), (axes[1], "erm", "linear")):
        st = _has(f"studies[{key!r}]", studies[key], ("table", "toy"), "toys.attack_study")
        t = check_frame(f"studies[{key!r}].table", st.table, {"n", "attack", "delta", "bound", "accuracy", "accuracy_lo",
                                                         "accuracy_hi"}, "toys.attack_study")
        o = t[t["attack"] == toys.ORACLE]
        ax.plot(o["n"], o["delta"], "k-", lw=2, label=r"exact $\Delta_n$ (the limit)")
        ax.plot(o["n"], o["bound"], "k--", lw=1, label="theory's bound")
        for i, a in enumerate(toys.ATTACKS):
            d = t[t["attack"] == a]
            adv = (2 * d["accuracy"] - 1).to_numpy()
            lo, hi = (2 * d["accuracy_lo"] - 1).to_numpy(), (2 * d["accuracy_hi"] - 1).to_numpy()
            shown = np.where(adv > 0, adv, np.nan)  # an advantage ≤ 0 has no place on a log axis
            err = np.maximum(np.vstack([shown - np.maximum(lo, 1e-4), hi - shown]), 0)
            x = d["n"].to_numpy() * (1 + 0.03 * (i - 3)) if xscale == "log" else d["n"].to_numpy() + 0.6 * (i - 3)
            ax.errorbar(x, shown, yerr=err, fmt="o-" if a != toys.ORACLE else "s:", ms=3.5, lw=1, capsize=2, label=a)
        ax.set(xscale=xscale, yscale="log", xlabel="sample size n", ylim=(1e-4, 1.2), title=st.toy.name)
    axes[0].set_ylabel("held-out advantage 2·Acc − 1")
    style.legend_outside(fig, axes[0])  # one legend below both panels, clear of labels and data
    return fig


def toy_roc(study, n: int) -> Figure:
    """Figure ``fig-attacks-roc`` (chapter 01): every attack's ROC curve on log-log axes (staircases: the
    toys' scores take few values; the Bayes oracle dotted) with the chance diagonal, for the toy
    ``study`` (:func:`.toys.attack_study`'s result) at sample size ``n``; an ``n`` the study did not run
    falls back to the middle one of its sizes (in the order run)."""
    study = _has("study", study, ("table", "scores"), "toys.attack_study")
    n = check_int("n", n, low=1)
    sizes = list(dict.fromkeys(check_frame("study.table", study.table, {"n"}, "toys.attack_study")["n"]))
    n_roc = n if n in sizes else sizes[len(sizes) // 2]
    fig, ax = plt.subplots(figsize=(6, 5))
    for a in toys.ATTACKS:
        s, m, _ = study.scores[(n_roc, a)]
        fpr, tpr, _ = metrics.roc_curve(s, m)
        ax.step(fpr, tpr, where="post", lw=1.3, ls="-" if a != toys.ORACLE else ":", label=a)
    ax.plot([1e-5, 1], [1e-5, 1], color="0.6", lw=0.8, ls="--")
    ax.set(xscale="log", yscale="log", xlim=(1e-4, 1), ylim=(1e-4, 1), xlabel="false-positive rate",
           ylabel="true-positive rate", title=f"empirical law, n = {n_roc}")
    style.legend_outside(fig)  # below the axes: the curves fill the lower right
    return fig


def synthetic_scatter(analysis, n: int) -> Figure:
    """Figure ``fig-attacks-synthetic-scatter`` (chapter 02): one panel per law (3 × 3, shared y), each
    quantizer's strongest held-out advantage (filled, intervals over targets; horizontal bars: r_Q^n's
    interval over models, ×10³) and the discriminator's advantage (hollow) against its r_Q^n; grey: the
    unquantized model's strongest advantage; dashed: the theory's order e^{−n r_Q^n} (Theorem 3.3 of paper
    001) at the study's training-set size ``n``. ``analysis``: :func:`.synthetic.analyse`'s result (its
    ``per_quantizer`` frame: laws and quantizers in the study's order, the unquantized model first)."""
    analysis = _has("analysis", analysis, ("per_quantizer",), "synthetic.analyse")
    n = check_int("n", n, low=1)
    pq = check_frame("analysis.per_quantizer", analysis.per_quantizer,
                {"law", "quantizer", "r", "r_lo", "r_hi", "advantage", "advantage_lo", "advantage_hi", "disc"},
                "synthetic.analyse")
    laws = list(dict.fromkeys(pq["law"]))
    names = [q for q in dict.fromkeys(pq["quantizer"]) if q != synthetic.REFERENCE]
    labels = quantizers.labels()
    colours = _colours()
    fig, axes = plt.subplots(3, 3, figsize=(7.7, 7.6), sharey=True)
    lo_y = min(pq["advantage_lo"].min(), np.nanmin(pq["disc"]) if np.isfinite(pq["disc"]).any() else 0.0)
    hi_y = max(pq["advantage_hi"].max(), np.nanmax(pq["disc"]) if np.isfinite(pq["disc"]).any() else 0.0)
    pad = 0.08 * (hi_y - lo_y + 1e-9)
    for ax, law in zip(axes.ravel(), laws):
        d = pq[pq["law"] == law]
        ident = d[d["quantizer"] == synthetic.REFERENCE].iloc[0]
        ax.axhline(ident["advantage"], color="0.5", lw=1, label="unquantized (strongest attack)")
        ax.axhline(0, color="0.8", lw=0.8)
        for i, q in enumerate(names):
            r = d[d["quantizer"] == q].iloc[0]
            c, m = colours[i % len(colours)], _MARKS[i % len(_MARKS)]
            if not np.isfinite(r["r"]):
                continue
            xerr = np.maximum([[r["r"] - r["r_lo"]], [r["r_hi"] - r["r"]]], 0) * 1e3  # a percentile interval may miss the mean
            yerr = np.maximum([[r["advantage"] - r["advantage_lo"]], [r["advantage_hi"] - r["advantage"]]], 0)
            ax.errorbar([1e3 * r["r"]], [r["advantage"]], xerr=xerr, yerr=yerr,
                        fmt=m, color=c, ms=5, lw=0.9, capsize=1.5, label=labels[q])
            if np.isfinite(r["disc"]):
                ax.plot([1e3 * r["r"]], [r["disc"]], m, mfc="none", mec=c, ms=5, label="_nolegend_")
        xs = d["r"].to_numpy(dtype=float)
        xs = xs[np.isfinite(xs)]
        if xs.size:
            grid = np.linspace(0, xs.max() * 1.1, 200)
            ax.plot(1e3 * grid, np.exp(-n * grid), "k--", lw=0.8, label=r"theory's order $e^{-n r_Q^n}$")
            ax.set_xlim(0, 1e3 * xs.max() * 1.1)
        ax.xaxis.set_major_locator(MaxNLocator(nbins=3))
        ax.set_ylim(lo_y - pad, hi_y + pad)
        ax.set_title(law)
    for ax in axes[-1]:
        ax.set_xlabel(r"$10^3\, r_Q^n$")
    for ax in axes[:, 0]:
        ax.set_ylabel("held-out advantage")
    axes[0, 0].plot([], [], "o", mfc="none", mec="0.3", label="discriminator (hollow)")
    style.legend_outside(fig, axes)
    return fig


def synthetic_rho(analysis) -> Figure:
    """Figure ``fig-attacks-synthetic-rho`` (chapter 02): per law, Spearman ρ between r_Q^n and the
    strongest attack's negated advantage (mean over seeds, bootstrap interval), each seed's value, the
    discriminator's ρ; the band is the pooled mean's interval and the dashed line the one-sided
    permutation critical value (:func:`.synthetic_claims.critical_rho`). ``analysis``:
    :func:`.synthetic.analyse`'s result."""
    analysis = _has("analysis", analysis, ("per_law", "pooled", "settings"), "synthetic.analyse")
    pl = check_frame("analysis.per_law", analysis.per_law, {"law", "rho", "rho_lo", "rho_hi", "rho_seeds", "rho_disc"},
                "synthetic.analyse")
    crit = synthetic_claims.critical_rho(analysis)
    fig, ax = plt.subplots(figsize=(7.7, 4.2))
    y = np.arange(len(pl))
    ax.axvline(0, color="0.6", lw=0.8)
    if np.isfinite(crit):
        ax.axvline(crit, color="k", ls="--", lw=0.9,
                   label=f"critical value of the pooled mean (α = {analysis.settings['alpha']:g})")
    ax.axvspan(analysis.pooled["rho_lo"], analysis.pooled["rho_hi"], color="C0", alpha=0.15,
               label="pooled mean ρ, 95 % interval")
    ax.errorbar(pl["rho"], y, xerr=np.maximum([pl["rho"] - pl["rho_lo"], pl["rho_hi"] - pl["rho"]], 0), fmt="o",
                color="C0", capsize=2, label="ρ per law (mean over seeds), 95 % interval")
    for j, vals in enumerate(pl["rho_seeds"]):
        ax.plot(vals, [j + 0.22] * len(vals), ".", color="C1", ms=5, label="ρ of one seed" if j == 0 else "_nolegend_")
    if np.isfinite(pl["rho_disc"]).any():
        ax.plot(pl["rho_disc"], y - 0.22, "s", mfc="none", mec="C2", ms=5, label="ρ of the discriminator estimate")
    ax.set_yticks(y, pl["law"])
    ax.invert_yaxis()
    ax.set_xlim(-1.05, 1.05)
    ax.set_xlabel(r"Spearman ρ between $r_Q^n$ and $-$advantage (+1: the same ranking)")
    style.legend_outside(fig)
    return fig


def _molecular(analysis, study) -> tuple[pd.DataFrame, object]:
    analysis = _has("analysis", analysis, ("per_quantizer", "exposure"), "molecular.analyse")
    study = _has("study", study, ("tasks", "names", "attacked"), "molecular.molecular_attacks")
    if not study.tasks:
        raise ValueError("study has no task that ran (study.missing says why): nothing to draw")
    pq = check_frame("analysis.per_quantizer", analysis.per_quantizer,
                {"task", "quantizer", "strongest", "r", "r_lo", "r_hi", "tpr@0.01", "tpr@0.01_lo", "tpr@0.01_hi"},
                "molecular.analyse")
    return pq, study


def _task_axes(T: int, height: float):
    fig, axes = plt.subplots(1, T, figsize=(min(3.2 * T + 1.2, 9.6), height), sharey=True, squeeze=False)
    return fig, axes[0]


def molecular_roc(analysis, study) -> Figure:
    """Figure ``fig-attacks-molecular-roc`` (chapter 03): one log-log panel per task, the ROC curve (all
    pairs of all targets) of each attacked model's strongest attack (largest TPR at 1 % FPR) — the
    unquantized model black, each quantizer in its colour — with chance dotted and 1 % FPR marked; rates
    below half a pair are drawn at that floor. ``analysis``, ``study``: :func:`.molecular.analyse`'s and
    :func:`.molecular.molecular_attacks`' results."""
    pq, study = _molecular(analysis, study)
    labels = quantizers.labels()
    colours = _colours()
    fig, axes = _task_axes(len(study.tasks), 3.7)
    for ax, ta in zip(axes, study.tasks):
        n_out = int((~ta.keep).sum())
        lo = 0.5 / n_out
        for a, q in enumerate(study.attacked):
            best = pq[(pq["task"] == ta.task) & (pq["quantizer"] == q)]["strongest"].iloc[0]
            p = molecular.protocol.ATTACKS.index(best)
            fpr, tpr, _ = metrics.roc_curve(ta.scores[a, p].ravel(), ta.keep.ravel())
            kw = dict(color="k", lw=1.8, label="unquantized") if a == 0 else dict(
                color=colours[(a - 1) % len(colours)], lw=1.0, label=labels.get(q, q))
            ax.step(np.maximum(fpr, lo), np.maximum(tpr, lo), where="post", **kw)
        ax.plot([lo, 1], [lo, 1], color="0.6", lw=0.8, ls=":", label="chance")
        ax.axvline(0.01, color="0.8", lw=0.8)
        ax.set(xscale="log", yscale="log", xlim=(lo, 1), ylim=(lo, 1.05), title=ta.task.replace("_", " "))
        ax.set_xlabel("false-positive rate")
    axes[0].set_ylabel("true-positive rate")
    style.legend_outside(fig, list(axes))
    return fig


def molecular_rq(analysis, study) -> Figure:
    """Figure ``fig-attacks-molecular-rq`` (chapter 03): one panel per task, each quantizer's TPR at 1 % FPR
    under its strongest attack (intervals over targets; horizontal bars: r_Q^n's interval over models,
    ×10³) against its r_Q^n; grey: the unquantized model; dotted: chance (TPR = FPR = 1 %)."""
    pq, study = _molecular(analysis, study)
    labels = quantizers.labels()
    colours = _colours()
    fig, axes = _task_axes(len(study.tasks), 3.6)
    for ax, ta in zip(axes, study.tasks):
        d = pq[pq["task"] == ta.task]
        ident = d[d["quantizer"] == "identity"].iloc[0]
        ax.axhline(ident["tpr@0.01"], color="0.5", lw=1, label="unquantized")
        ax.axhline(0.01, color="0.6", lw=0.8, ls=":", label="chance (TPR = FPR)")
        for i, q in enumerate(study.names):
            r = d[d["quantizer"] == q].iloc[0]
            if not np.isfinite(r["r"]):
                continue
            xerr = np.maximum([[r["r"] - r["r_lo"]], [r["r_hi"] - r["r"]]], 0) * 1e3
            yerr = np.maximum([[r["tpr@0.01"] - r["tpr@0.01_lo"]], [r["tpr@0.01_hi"] - r["tpr@0.01"]]], 0)
            ax.errorbar([1e3 * r["r"]], [r["tpr@0.01"]], xerr=xerr, yerr=yerr, fmt=_MARKS[i % len(_MARKS)],
                        color=colours[i % len(colours)], ms=5, lw=0.9, capsize=1.5, label=labels.get(q, q))
        ax.xaxis.set_major_locator(MaxNLocator(nbins=4))
        ax.set(title=ta.task.replace("_", " "), xlabel=r"$10^3\, r_Q^n$")
        ax.set_ylim(bottom=0)
    axes[0].set_ylabel("TPR at 1 % FPR")
    style.legend_outside(fig, list(axes))
    return fig


def molecular_exposure(analysis, study) -> Figure:
    """Figure ``fig-attacks-molecular-exposure`` (chapter 03): one panel per task, the distribution over
    the pool of each molecule's exposure (its own TPR at the strongest attack's 1 % FPR operating point)
    for the unquantized model (black), the quantizer of largest r_Q^n (:func:`.molecular_claims.most_private`)
    and the quantizer with the lowest TPR at 1 % FPR, both named in the panel (one thick line when they
    are the same)."""
    pq, study = _molecular(analysis, study)
    labels = quantizers.labels()
    attacked = study.attacked
    fig, axes = _task_axes(len(study.tasks), 3.4)
    bins = np.linspace(0, 1, 17)
    for ax, ta in zip(axes, study.tasks):
        e = analysis.exposure[ta.task]
        d = pq[(pq["task"] == ta.task) & (pq["quantizer"] != "identity")]
        priv = molecular_claims.most_private(analysis, ta.task)
        low = d.loc[d["tpr@0.01"].idxmin(), "quantizer"]
        shown = {"identity": ("k", "unquantized"), priv: ("C0", r"largest $r_Q^n$"), low: ("C3", "lowest TPR at 1 % FPR")}
        for q, (c, lab) in shown.items():
            ax.hist(e[attacked.index(q)], bins=bins, histtype="step", color=c, lw=1.4 if q != low or low != priv else 2.4,
                    weights=np.full(e.shape[1], 1 / e.shape[1]), label=lab)
        names_shown = [(priv, "C0")] + ([(low, "C3")] if low != priv else [])
        for j, (q, c) in enumerate(names_shown):
            ax.text(0.97, 0.95 - 0.11 * j, labels.get(q, q), color=c, transform=ax.transAxes, ha="right", va="top",
                    fontsize="small")
        ax.set(title=ta.task.replace("_", " "), xlabel="exposure")
    axes[0].set_ylabel("fraction of molecules")
    style.legend_outside(fig, list(axes))
    return fig


def dp_roc(result, runs: int) -> Figure:
    """Figure ``fig-attacks-dp-roc`` (chapter 04): one log-log panel per canary (rows) and method
    (columns), the canary-margin attack's ROC curve per budget ε (one colour each) beside the boundary of
    the (ε, δ) hypothesis-testing region of the same budget (dashed, :func:`qlib.attacks.dp_bound.tpr_bound`),
    chance dotted; the axes start at half a run of the ``runs`` per side. ``result``:
    :func:`.dp_audit.audit`'s result."""
    result = _has("result", result, ("table", "scores"), "dp_audit.audit")
    runs = check_int("runs", runs, low=1)
    table = check_frame("result.table", result.table, {"key", "canary", "eps", "delta"}, "dp_audit.audit")
    methods = list(dict.fromkeys(table["key"]))
    canaries = list(dict.fromkeys(table["canary"]))
    fig, axes = plt.subplots(len(canaries), len(methods), figsize=(9, 3.6 * len(canaries)), sharex=True, sharey=True,
                             squeeze=False)
    colors = _colours()
    alpha = np.logspace(np.log10(0.5 / runs), 0, 400)
    for i, kind in enumerate(canaries):
        for j, key in enumerate(methods):
            ax = axes[i, j]
            d = table[(table["key"] == key) & (table["canary"] == kind)]
            for k, (_, r) in enumerate(d.iterrows()):
                sc, mem = result.scores[(key, r["eps"], kind)]
                fpr, tpr, _ = metrics.roc_curve(sc, mem)
                c = colors[k % len(colors)]
                ax.step(fpr, tpr, where="post", color=c, lw=1.3, label=f"attack, ε = {r['eps']:g}")
                ax.plot(alpha, dp_bound.tpr_bound(alpha, r["eps"], r["delta"]), color=c, lw=1, ls="--",
                        label=f"region boundary, ε = {r['eps']:g}")
            ax.plot([0.5 / runs, 1], [0.5 / runs, 1], color="0.6", lw=0.8, ls=":", label="chance")
            ax.set(xscale="log", yscale="log", xlim=(0.5 / runs, 1), ylim=(0.5 / runs, 1.05),
                   title=f"{dp_audit.METHODS[key]}, {kind} canary")
    for ax in axes[-1]:
        ax.set_xlabel("false-positive rate")
    for ax in axes[:, 0]:
        ax.set_ylabel("true-positive rate")
    style.legend_outside(fig)
    return fig
