"""The figures and table displays of the quantized-MIS chapters (paper 001, Aubinais et al. 2025), in
the book's one plotting style (:mod:`qlib.plotting.style`).

Each function draws one figure (returned as a :class:`matplotlib.figure.Figure`, made with
:mod:`matplotlib.pyplot` so that a notebook shows it) or builds one table or sentence a chapter
displays, from what the chapter's drivers and claims modules return; none computes a ledger row. The
module imports no driver or claims module of the wing (a study result is recognised by its fields), so
that a chapter importing it adds only the library's quantizers and laws and :mod:`.paper` to the modules
its archived run depends on (:func:`qlib.stamp.inputs_stamp`).

* chapter 01 (Appendix D): :func:`figure5` (each quantizer on [−1, 1]), :func:`table1` (Table 1 with
  the levels each quantizer produced), :func:`scope_table` (per-tensor vs whole-model scale),
  :func:`variant_text` (the printed vs capped b-bit formula, chapters 01 and 03);
* chapter 02 (§3, Appendix C): :func:`theorem31_figure` (Theorem 3.1's rate on two toys),
  :func:`theorem33_figure` (Theorem 3.3's rate on a size-adaptive toy);
* chapter 03 (§5.1, Appendix E): :func:`study_text`, :func:`figure8` (the nine laws in PCA),
  :func:`table2` and :func:`table2_text`, :func:`figure2` (r_Q^n against the baseline MIS),
  :func:`figure6` (privacy against accuracy), :func:`figure2_readings` and
  :func:`figure2_readings_text` (Figure 2 under both readings of 1.58b x%), :func:`cost_text`;
* chapter 04 (§5.1.2, Appendix E.2): :func:`figure7` (rank stability against k_run),
  :func:`figure1_pies` and :func:`figure1_confusion` (Figure 1's pies and confusion matrices);
* chapter 05 (§5.2, Appendix F): :func:`figure3`, :func:`figure4`, :func:`figure9` (r_Q^n against the
  relative performance), :func:`figure10` (Λ_kk against k);
* chapter 06 (the Table 3 investigation): :func:`relative_table` (relative AUROC per variant, task and
  quantizer), :func:`passing_text`.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
import torch
from matplotlib.figure import Figure

from ... import quantizers, synthetic
from ...plotting import style
from ...validation import (
    check_array,
    check_choice,
    check_frame,
    check_int,
    check_int_sequence,
    check_positive,
    check_seed,
    check_tensor,
)
from .paper import PAPER_MEAN_SPEARMAN, PAPER_QUANTIZERS, PAPER_TABLE2, PAPER_TABLE2_COLUMNS, STUDY_SETTINGS

__all__ = ["figure5", "table1", "scope_table", "variant_text", "theorem31_figure", "theorem33_figure", "study_text",
           "figure8", "table2", "table2_text", "figure2", "figure6", "figure2_readings", "figure2_readings_text",
           "cost_text", "figure7", "figure1_pies", "figure1_confusion", "figure3", "figure4", "figure9", "figure10",
           "relative_table", "passing_text"]


# ------------------------------------------------------------------------------------ argument checks
def _check_study(res):
    """A synthetic study's result (:class:`.study.StudyResult`: its per-run r_Q^n, accuracies and
    baseline estimates, with the study's config)."""
    if not all(hasattr(res, a) for a in ("r_summary", "config", "names", "acc_val", "disc_mis", "thr_mis")):
        raise TypeError(f"res must be a StudyResult (what study.run_study returns), got {type(res).__name__}")
    return res


def _check_stab(stab) -> dict:
    """The rank-stability result of :func:`.ranking_claims.stability`."""
    if not isinstance(stab, Mapping) or not {"k_runs", "st", "curve"} <= set(stab):
        raise TypeError("stab must be the dict ranking_claims.stability returns (k_runs, st, curve)")
    return stab


def _law_grid(n: int, ncol: int = 3) -> tuple[int, int]:
    """(rows, columns) of a grid of ``n`` panels, ``ncol`` to a row (3 × 3 for the nine laws)."""
    return max(1, math.ceil(n / ncol)), ncol


# ------------------------------------------------------------------------------------ chapter 01
def figure5(grid) -> Figure:
    """Figure 5 of paper 001 (Appendix D): each quantizer of Table 1 applied to ``grid`` (a 1-D float
    tensor, e.g. ``torch.linspace(-1, 1, 2001)``, quantized as one parameter vector), one panel per
    quantizer; solid: the printed formula (the default), dashed: the capped b-bit variant."""
    grid = check_tensor("grid", grid, ndim=1)
    x = grid.cpu()
    panels = [n for n in quantizers.names() if n != "identity"]
    fig, axes = plt.subplots(2, 4, figsize=(style.COLUMN_IN, 4.8), sharex=True, sharey=True, layout="constrained")
    for ax, name in zip(axes.flat, panels):
        ax.plot(x, x, color="0.8", lw=1, label="identity")
        ax.step(x, quantizers.get(name)(grid).cpu(), where="mid", lw=1.8, label="printed formula (default)")
        if name.startswith("bits"):
            ax.step(x, quantizers.get(name, variant="capped")(grid).cpu(), where="mid", lw=1, ls="--",
                    label="capped variant")
        ax.set_title(quantizers.get(name).label)
    for ax in axes[-1]:
        ax.set_xlabel(r"$\theta_j$")
    for ax in axes[:, 0]:
        ax.set_ylabel(r"$\mathcal{Q}(\theta)_j$")
    style.legend_outside(fig)
    return fig


def table1(thetas) -> pd.DataFrame:
    """Table 1 of paper 001 with what each quantizer produced on ``thetas`` (a (models, d) float
    tensor of parameter vectors): its formula (column ``Q(θ)_j``, LaTeX), the largest and mean number
    of distinct levels per vector (printed formula; the capped variant's largest beside it), the mean
    fraction of zeros and the fraction requested (:func:`qlib.quantizers.level_stats`)."""
    thetas = check_tensor("thetas", thetas, ndim=2)
    stats = quantizers.level_stats(thetas)
    stats["levels (capped variant, max)"] = quantizers.level_stats(thetas, variant="capped")["levels_max"]
    return stats.rename(columns={
        "label": "quantizer", "formula": "Q(θ)_j", "levels_max": "levels (max)", "levels_mean": "levels (mean)",
        "zero_fraction": "zeros (mean)", "requested_zeros": "zeros requested"}).drop(columns=["name"])


def scope_table(model) -> pd.DataFrame:
    """Per quantizer, how ``model`` (a :class:`torch.nn.Module` with a ``weight`` and a one-element
    ``bias``, e.g. the synthetic study's linear layer) quantized per tensor differs from it quantized as
    one vector (:func:`qlib.quantizers.apply`, ``scope="tensor"`` / ``"model"``): the number of weights
    that differ and the quantized bias under each scope."""
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    keys = dict(model.named_parameters())
    if "weight" not in keys or "bias" not in keys or keys["bias"].numel() != 1:
        raise ValueError("model must have a weight and a one-element bias (a torch.nn.Linear(d, 1))")
    rows = []
    for name in quantizers.names()[1:]:
        per_tensor = quantizers.apply(model, name, scope="tensor").state_dict()
        whole = quantizers.apply(model, name, scope="model").state_dict()
        rows.append({"quantizer": quantizers.get(name).label,
                     "weights that differ": int((per_tensor["weight"] != whole["weight"]).sum()),
                     "bias (per tensor)": float(per_tensor["bias"]), "bias (whole model)": float(whole["bias"])})
    return pd.DataFrame(rows)


def variant_text(summary: Mapping) -> str:
    """The sentence under the printed-vs-capped comparison: the scale that ran beside the paper's, the
    mean Spearman ρ between the two r_Q^n rankings and the largest change of a Table 2 cell
    (``summary``: the dict :func:`.study.variant_effect` returns)."""
    keys = ("laws", "runs", "epochs", "rho", "max_acc_change")
    if not isinstance(summary, Mapping) or not set(keys) <= set(summary):
        raise TypeError(f"summary must be the dict study.variant_effect returns (keys {', '.join(keys)})")
    s = summary
    return (f"{s['laws']} laws × {s['runs']} runs × {s['epochs']} epochs (the paper: {len(PAPER_TABLE2)} × "
            f"{STUDY_SETTINGS['runs']} × {STUDY_SETTINGS['epochs']}): mean Spearman ρ between the two $r_Q^n$ "
            f"rankings over the laws {s['rho']:.3f}; largest change of a Table 2 cell {s['max_acc_change']:.3f}.")


# ------------------------------------------------------------------------------------ chapter 02
_THM31_COLUMNS = ("n", "−log Δ_n / n", "corrected")
_THM33_COLUMNS = ("n", "ratio", "corrected", "C_P^1(n)/δ_2²")


def theorem31_figure(fixed: Mapping) -> Figure:
    """Theorem 3.1 of paper 001 on toys: per toy, the exact −(1/n) log(1 − MIS_n) (solid), the same
    with the Bahadur–Rao (½ log n)/n term removed (dashed) and the constant C_P^1 (dotted).
    ``fixed``: toy name → (its :func:`.theory.rate_table`, its C_P^1 from
    :func:`qlib.mia.chernoff_rate`)."""
    if not isinstance(fixed, Mapping) or not fixed:
        raise TypeError("fixed must be a non-empty dict: toy name -> (rate table, C_P^1)")
    fig, ax = plt.subplots()
    for name, (t, c) in fixed.items():
        t = check_frame(f"fixed[{name!r}]", t, _THM31_COLUMNS)
        line, = ax.plot(t["n"], t["−log Δ_n / n"], "o-", lw=1.4, ms=3, label=f"{name}: exact")
        ax.plot(t["n"], t["corrected"], "s--", color=line.get_color(), lw=1, ms=3, label=f"{name}: + (½ log n)/n")
        ax.axhline(c, color=line.get_color(), ls=":", lw=1.2)
    ax.set(xscale="log", yscale="log", xlabel="sample size n", ylabel=r"$-\frac{1}{n}\log(1-\mathrm{MIS}_n)$")
    ax.legend(fontsize=8)
    return fig


def theorem33_figure(ad: pd.DataFrame, target: float) -> Figure:
    """Theorem 3.3 of paper 001 on a size-adaptive toy: the exact −log(1 − MIS_n)/(n δ_2²), the same
    without the Gaussian-tail prefactor, the per-n Chernoff exponent over δ_2², and the limit
    ``target`` = 1/(2σ²) (> 0). ``ad``: the table :func:`.theory.adaptive_table` returns."""
    ad = check_frame("ad", ad, _THM33_COLUMNS)
    target = check_positive("target", target)
    fig, ax = plt.subplots()
    for col, st in (("ratio", "o-"), ("corrected", "s--"), ("C_P^1(n)/δ_2²", "^:")):
        ax.plot(ad["n"], ad[col], st, lw=1.3, ms=3, label=col)
    ax.axhline(target, color="0.3", lw=1, label=r"$1/(2\sigma^2)$")
    ax.set(xscale="log", xlabel="sample size n", ylabel=r"$-\log(1-\mathrm{MIS}_n)\,/\,(n\,\delta_2^2)$")
    ax.legend(fontsize=8)
    return fig


# ------------------------------------------------------------------------------------ chapter 03
def _scale(res) -> str:
    c = res.config
    return (f"{c['runs']} runs × {c['epochs']} epochs per law (paper {STUDY_SETTINGS['runs']} × "
            f"{STUDY_SETTINGS['epochs']})")


def study_text(res, device) -> str:
    """The sentence under the synthetic study (§5.1.1): the device, laws × quantizers and the scale
    beside the paper's, with a warning when it is below the paper's 300 runs × 3000 epochs."""
    res = _check_study(res)
    c = res.config
    full = c["runs"] >= STUDY_SETTINGS["runs"] and c["epochs"] >= STUDY_SETTINGS["epochs"]
    return (f"Device `{device}`; {len(c['grid'])} laws × {len(res.names)} quantizers; {_scale(res)}"
            + ("." if full else " — fewer than the paper, so every number below is noisier than the paper's."))


def figure8(config: Mapping, seed: int = 0, n_points: int = 600) -> Figure:
    """Figure 8 of paper 001 (Appendix E.3): a 2-D PCA projection of ``n_points`` points of each law
    of a study (``config``: the study's config dict, ``res.config``: its grid, law seed and centre
    scale), coloured by label; one panel per law. The points are drawn with the generator seeded
    ``seed + 7`` and PCA runs with ``random_state=seed``."""
    from sklearn.decomposition import PCA  # deferred: scikit-learn is optional (the book extra)

    if not isinstance(config, Mapping) or not {"grid", "law_seed", "centre_scale"} <= set(config):
        raise TypeError("config must be the study's config dict (res.config: grid, law_seed, centre_scale)")
    seed = check_seed("seed", seed)
    n_points = check_int("n_points", n_points, low=2, high=100_000)
    grid = [tuple(g) for g in config["grid"]]
    laws = synthetic.make_laws(config["law_seed"], grid=grid, centre_scale=config["centre_scale"])
    xs, ys = synthetic.sample(laws, n_points, torch.Generator().manual_seed(seed + 7))
    nrow, ncol = _law_grid(len(laws))
    fig, axes = plt.subplots(nrow, ncol, figsize=(10, 3 * nrow), squeeze=False)
    for ax, x, y, lab in zip(axes.flat, xs, ys, synthetic.law_labels(grid)):
        z = PCA(2, random_state=seed).fit_transform(x.numpy())
        ax.scatter(z[:, 0], z[:, 1], c=y.numpy(), cmap="coolwarm", s=4, alpha=0.6)
        ax.set_title(lab)
        ax.set_xticks([])
        ax.set_yticks([])
    for ax in axes.flat[len(laws):]:
        ax.axis("off")
    fig.supxlabel("first principal component")
    fig.supylabel("second principal component")
    fig.tight_layout()
    return fig


def table2(t2: pd.DataFrame) -> pd.DataFrame:
    """Table 2 of paper 001 (Appendix E) as the chapter shows it: one row per law (σ, modes), one
    column per quantizer in the paper's order, each cell 'ours (ratio to the unquantized model)' with
    the paper's cell beside it where the law is the paper's. ``t2``: the long frame
    :func:`.study.table2` returns."""
    t2 = check_frame("t2", t2, ("sigma", "k_modes", "quantizer", "ours", "ours_ratio", "paper", "paper_ratio"))

    def fmt(a, r):
        return f"{a:.3f} ({100 * r:.0f}%)"

    cells = [fmt(a, r) + (f" · paper {fmt(p, pr)}" if np.isfinite(p) else "") for a, r, p, pr in
             zip(t2.ours, t2.ours_ratio, t2.paper, t2.paper_ratio)]
    wide = t2.assign(cell=cells).pivot_table(index=["sigma", "k_modes"], columns="quantizer", values="cell",
                                             aggfunc="first")
    wide = wide[[q for q in PAPER_TABLE2_COLUMNS if q in wide]].rename(columns=quantizers.labels())
    return wide.reset_index().rename(columns={"sigma": "σ", "k_modes": "modes"})


def table2_text(summary: Mapping, res) -> str:
    """The sentence under Table 2: how many quantized cells lie within the tolerance of the paper's,
    their median and largest |Δ|, and why the identity cells are left out (``summary``: the dict
    :func:`.synthetic_claims.table2_rows` returns beside its rows; ``res``: the study)."""
    keys = ("passed", "compared", "atol", "median_dev", "max_dev", "identity_left_out", "identity_dev")
    if not isinstance(summary, Mapping) or not set(keys) <= set(summary):
        raise TypeError(f"summary must be the dict synthetic_claims.table2_rows returns (keys {', '.join(keys)})")
    res, s = _check_study(res), summary
    return (f"**{s['passed']} of {s['compared']}** quantized cells within ±{s['atol']} of the paper (median |Δ| "
            f"{s['median_dev']:.3f}, max {s['max_dev']:.3f}). The {s['identity_left_out']} identity cells are left out "
            f"of the count: the laws' centre scale was calibrated on them (their median |Δ| is "
            f"{s['identity_dev']:.3f}). {_scale(res)}.")


_FIGURE2 = {"mean": ("disc", "ρ(r mean, discriminator)"), "median": ("thr", "ρ(r median, threshold)")}


def figure2(res, rho: pd.DataFrame, statistic: str = "mean") -> Figure:
    """Figure 2 of paper 001 (§5.1.2): per law, r_Q^n of each quantizer against a baseline MIS estimate
    with its 95% Clopper–Pearson interval, the panel titled with its Spearman ρ. ``statistic="mean"``
    (the paper's): r_Q^n averaged over runs against the discriminator's estimate;
    ``"median"``: the median over runs against the loss-threshold attack's. ``rho``: the table
    :func:`.synthetic_claims.spearman_table` returns (one row per law, then the mean)."""
    res = _check_study(res)
    statistic = check_choice("statistic", statistic, tuple(_FIGURE2))
    base, col = _FIGURE2[statistic]
    rho = check_frame("rho", rho, (col,))
    rvals = res.r_summary(statistic)
    mis, lo, hi = (getattr(res, f"{base}_{k}")[:, 1:] for k in ("mis", "lo", "hi"))
    title_rho = rho[col].to_numpy()[:-1]
    laws = synthetic.law_labels(res.config["grid"])
    qlabels = [quantizers.labels()[q] for q in res.names]
    nrow, ncol = _law_grid(len(laws))
    fig, axes = plt.subplots(nrow, ncol, figsize=(style.COLUMN_IN, 8.0 * nrow / 3), sharex=True, sharey=True,
                             layout="constrained", squeeze=False)
    pal = sns.color_palette(n_colors=len(qlabels))
    for li, ax in enumerate(axes.flat[:len(laws)]):
        for qi, q in enumerate(qlabels):
            ax.errorbar(mis[li, qi], rvals[li, qi], xerr=[[mis[li, qi] - lo[li, qi]], [hi[li, qi] - mis[li, qi]]],
                        fmt="o", color=pal[qi], label=q if li == 0 else None, ms=5)
        ax.set_yscale("log")
        ax.set_title(f"{laws[li]}: ρ = {title_rho[li]:.2f}", fontsize="small")
    for ax in axes.flat[len(laws):]:
        ax.axis("off")
    fig.supxlabel("baseline MIS estimate, 2(1 − held-out accuracy)")
    fig.supylabel("$r_Q^n$ (over runs)")
    style.legend_outside(fig)
    return fig


def figure6(res) -> Figure:
    """Figure 6 of paper 001 (Appendix E.1): r_Q^n (mean over runs) against the quantized model's
    validation accuracy relative to the unquantized model's, one point per law and quantizer; grey
    lines join the quantizers of one law."""
    res = _check_study(res)
    r_mean = res.r_summary("mean")
    rel = res.acc_val[:, 1:].mean(axis=2) / res.acc_val[:, :1].mean(axis=2)
    qlabels = [quantizers.labels()[q] for q in res.names]
    fig, ax = plt.subplots(figsize=(style.COLUMN_IN, 5), layout="constrained")
    pal = sns.color_palette(n_colors=len(qlabels))
    for li in range(rel.shape[0]):
        o = np.argsort(rel[li])
        ax.plot(rel[li, o], r_mean[li, o], color="0.75", lw=0.8, zorder=1)
    for qi, q in enumerate(qlabels):
        ax.scatter(rel[:, qi], r_mean[:, qi], color=pal[qi], label=q, zorder=2, s=25)
    ax.set_yscale("log")
    ax.set_xlabel("validation accuracy relative to the unquantized model")
    ax.set_ylabel("$r_Q^n$ (mean over runs)")
    style.legend_outside(fig)
    return fig


def figure2_readings(f2r: pd.DataFrame) -> Figure:
    """Figure 2's quantity under both readings of 1.58b x%: per law, Spearman ρ between r_Q^n (mean over
    runs) and the discriminator's (left) or the loss-threshold attack's (right) MIS estimate, one bar
    per reading (§5.1's text, Table 1 as typeset), the paper's mean ρ dashed. ``f2r``: the table
    :func:`.synthetic_claims.figure2_readings` returns (one row per law, then the mean)."""
    cols = [f"ρ(r mean, {b}), {r} reading" for b in ("discriminator", "threshold") for r in ("text", "Table 1")]
    f2r = check_frame("f2r", f2r, ["law", *cols])
    per_law = f2r[f2r.law != "mean"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 5), sharey=True)
    ypos = np.arange(len(per_law))
    for ax, base in zip(axes, ("discriminator", "threshold")):
        for off, label in ((-0.2, "text"), (0.2, "Table 1")):
            col = f"ρ(r mean, {base}), {label} reading"
            ax.barh(ypos + off, per_law[col], height=0.4, label=f"{label} reading (mean {f2r[col].iloc[-1]:.2f})")
        ax.axvline(PAPER_MEAN_SPEARMAN, color="k", ls="--", lw=0.8)
        ax.set_yticks(ypos, per_law.law)
        ax.set_title(f"vs {base} MIS")
        ax.set_xlabel("Spearman ρ")
        ax.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=1)
    axes[0].invert_yaxis()
    fig.suptitle(f"$r_Q^n$ (mean over runs) against the baseline MIS; dashed: the paper's {PAPER_MEAN_SPEARMAN:g}")
    fig.tight_layout()
    return fig


def figure2_readings_text(rows: Sequence) -> str:
    """One sentence per row of :func:`.synthetic_claims.figure2_reading_rows`: its value against the
    paper's, the tolerance and the verdict, or why it is not comparable."""
    if isinstance(rows, (str, bytes)) or not isinstance(rows, Sequence):
        raise TypeError("rows must be the list of ledger rows synthetic_claims.figure2_reading_rows returns")
    return " ".join(f"{r.quantity}: {r.ours:.3f} against {r.paper_value:.3f} ({r.tolerance}) — **{r.verdict}**; "
                    f"{r.note}." if r.passed is not None else f"{r.quantity}: not comparable ({r.note})."
                    for r in rows)


def cost_text(res) -> str:
    """The study's training cost per model-epoch (its measured ``train_and_r_q`` stage), with each
    model-epoch's quantized models counted."""
    res = _check_study(res)
    secs = pd.Series(res.seconds)
    model_epochs = len(res.config["grid"]) * res.config["runs"] * res.config["epochs"]
    return (f"{model_epochs:,} model-epochs, each with {len(res.names)} quantized models evaluated: "
            f"{1e6 * secs['train_and_r_q'] / model_epochs:.1f} µs per model-epoch")


# ------------------------------------------------------------------------------------ chapter 04
def figure7(stab: Mapping, runs: int) -> Figure:
    """Figure 7 of paper 001 (Appendix E.2, and the top of Figure 1): per ranking (r_Q^n by mean and by
    median over runs, the threshold baseline), the mean Spearman ρ between the ranking from k_run runs
    and the ranking from all ``runs`` runs, over subsets and laws, with the 10–90% band; dotted: ρ = 0.95.
    ``stab``: the dict :func:`.ranking_claims.stability` returns."""
    stab = _check_stab(stab)
    runs = check_int("runs", runs, low=1)
    k_runs = stab["k_runs"]
    fig, ax = plt.subplots(figsize=(7, 4))
    for col, st in stab["st"].items():
        s = st["spearman"].reshape(len(k_runs), -1)
        ax.plot(k_runs, np.nanmean(s, axis=1), marker="o", label=col)
        ax.fill_between(k_runs, np.nanpercentile(s, 10, axis=1), np.nanpercentile(s, 90, axis=1), alpha=0.15)
    ax.axhline(0.95, color="0.5", ls=":", lw=1)
    ax.set_xscale("log")
    ax.set_xlabel("$k_{run}$ (runs averaged)")
    ax.set_ylabel(f"Spearman ρ to the {runs}-run ranking")
    ax.legend()
    return fig


def figure1_pies(stab: Mapping, res, law: int = 4, k_runs: Sequence[int] = (5, 10, 20, 50, 100)) -> Figure:
    """Figure 1 of paper 001 (centre): for law ``law`` (index in the study's grid), one pie per rank (rows,
    1 = most private) and k_run (columns: those of ``k_runs`` that ``stab`` tried), the share of subsets
    in which each quantizer got that rank from r_Q^n (mean over the k_run runs). ``stab``: the dict
    :func:`.ranking_claims.stability` returns; ``res``: the study it ranked."""
    stab, res = _check_stab(stab), _check_study(res)
    law = check_int("law", law, low=0, high=len(res.config["grid"]) - 1)
    k_runs = [k for k in check_int_sequence("k_runs", k_runs, low=2) if k in stab["k_runs"]]
    if not k_runs:
        raise ValueError(f"k_runs must name at least one k_run that stab tried ({stab['k_runs']})")
    ranks_law = stab["st"]["r_Q^n mean"]["ranks"][:, :, law]                    # (k, subsets, Q)
    cols = [stab["k_runs"].index(k) for k in k_runs]
    qlabels = [quantizers.labels()[q] for q in res.names]
    Q = len(qlabels)
    pal = sns.color_palette(n_colors=Q)
    fig, axes = plt.subplots(Q, len(cols), figsize=(1.5 * len(cols) + 1, 1.3 * Q + 0.6), squeeze=False)
    for j, ki in enumerate(cols):
        for rk in range(1, Q + 1):
            ax = axes[rk - 1, j]
            counts = [(np.rint(ranks_law[ki, :, q]) == rk).sum() for q in range(Q)]
            if sum(counts):
                ax.pie(counts, colors=pal, radius=1.1)
            ax.set_aspect("equal")
            if rk == 1:
                ax.set_title(f"$k_{{run}}$={stab['k_runs'][ki]}", fontsize="small")
            if j == 0:
                ax.set_ylabel(f"rank {rk}", rotation=0, labelpad=22, fontsize="small")
    fig.legend([plt.Rectangle((0, 0), 1, 1, color=c) for c in pal], qlabels, loc="center right", fontsize="small")
    fig.suptitle(f"{synthetic.law_labels(res.config['grid'])[law]}: who is ranked where (rank 1 = most private)",
                 fontsize="medium")
    fig.subplots_adjust(right=0.78)
    return fig


def figure1_confusion(matrices: Mapping, runs: int) -> Figure:
    """Figure 1 of paper 001 (right): per k_run, the confusion of each quantizer's rank from k_run runs
    (columns) against its rank from all ``runs`` runs (rows), row-normalised and pooled over laws and
    subsets. ``matrices``: k_run → :func:`.ranking_claims.confusion` at that k_run (None where the
    k_run was not tried: its panel stays empty), in panel order."""
    if not isinstance(matrices, Mapping) or not matrices:
        raise TypeError("matrices must be a non-empty dict: k_run -> ranking_claims.confusion(stab, k_run) or None")
    runs = check_int("runs", runs, low=1)
    fig, axes = plt.subplots(1, len(matrices), figsize=(style.COLUMN_IN, 4.0), layout="constrained", squeeze=False)
    for ax, (k, cm) in zip(axes[0], matrices.items()):
        if cm is None:
            ax.set_axis_off()
            continue
        cm = check_array(f"matrices[{k}]", cm, ndim=2, low=0.0)
        Q = cm.shape[0]
        sns.heatmap(cm, annot=True, fmt=".2f", cmap="Blues", cbar=False, ax=ax,
                    xticklabels=range(1, Q + 1), yticklabels=range(1, Q + 1), annot_kws={"fontsize": 8})
        ax.set_xlabel(f"rank from {k} runs")
        ax.set_ylabel(f"rank from {runs} runs")
        ax.set_title(f"$k_{{run}}$ = {k}")
    return fig


# ------------------------------------------------------------------------------------ chapter 05
def _two_lines(title: str) -> str:
    """A long task name on two lines, cut at its middle '_'."""
    if len(title) > 22 and "_" in title:
        cut = min((i for i, c in enumerate(title) if c == "_"), key=lambda i: abs(2 * i - len(title)))
        title = title[:cut + 1] + "\n" + title[cut + 1:]
    return title


def _tradeoff_grid(frame: pd.DataFrame, ylabel: str, *, title: str = "{}", ylim=None) -> Figure:
    """One panel per group (the frame's first column), one point per quantizer: r_Q^n (log x) against
    the relative performance (clipped to ``ylim`` when given)."""
    frame = check_frame("frame", frame, ("quantizer", "r_q", "relative"))
    labels = quantizers.labels()
    groups = list(dict.fromkeys(frame.iloc[:, 0]))
    ncol = 2 if len(groups) in (2, 4) else min(3, len(groups))
    nrow = -(-len(groups) // ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(style.COLUMN_IN, max(4.0, 2.3 * nrow + 1.0)), squeeze=False,
                             sharex=True, layout="constrained")
    for ax, g in zip(axes.flat, groups):
        sub = frame[frame.iloc[:, 0] == g]
        for q in PAPER_QUANTIZERS:
            s = sub[sub.quantizer == q]
            ax.scatter(s.r_q, s.relative.clip(*ylim) if ylim else s.relative, label=labels[q], s=25)
        ax.set_xscale("log")
        ax.tick_params(axis="x", labelbottom=True)  # one r_Q^n scale for every panel, labelled on each
        ax.set_title(_two_lines(title.format(g)), fontsize=9)
        if ylim:
            ax.set_ylim(ylim[0] - 0.05, ylim[1] + 0.05)
    style.tidy_log_axis(axes[0, 0], "x")
    for ax in axes.flat[len(groups):]:
        ax.axis("off")
    fig.supxlabel("$r_Q^n$ (mean over runs and embedders)")
    fig.supylabel(ylabel)
    style.legend_outside(fig)
    return fig


def figure3(frame: pd.DataFrame) -> Figure:
    """Figure 3 of paper 001 (§5.2.2): per classification task, r_Q^n of each quantizer against the
    relative validation AUROC of its final model. ``frame``: :func:`.molecular_claims.tradeoff` of the
    AUROC (columns task, quantizer, r_q, relative)."""
    return _tradeoff_grid(frame, "relative AUROC $r^{val}_{AUROC}$")


def figure4(frame: pd.DataFrame) -> Figure:
    """Figure 4 of paper 001 (§5.2.2): per regression task, r_Q^n against the relative validation R²,
    clipped to [−1, 1.1]. ``frame``: :func:`.molecular_claims.tradeoff` of the R²."""
    return _tradeoff_grid(frame, "relative $R^2$ (clipped to [−1, 1.1])", ylim=(-1, 1.1))


def figure9(frame: pd.DataFrame) -> Figure:
    """Figure 9 of paper 001 (Appendix F.2): the classification trade-off per embedder, one point per
    task and quantizer. ``frame``: :func:`.molecular_claims.tradeoff` of the AUROC grouped by
    ``("embedder", "quantizer", "task")``."""
    return _tradeoff_grid(frame, "relative AUROC (one point per task)", title="embedder {}")


def figure10(profiles: Mapping) -> Figure:
    """Figure 10 of paper 001 (Appendix F.3): per task (columns), Λ_kk against k for the first run of
    each quantizer (top) and the histogram of argmax_k Λ_kk over runs and quantizers (bottom).
    ``profiles``: task → :func:`.molecular_claims.lambda_profiles` of its kept losses."""
    if not isinstance(profiles, Mapping) or not profiles:
        raise TypeError("profiles must be a non-empty dict: task -> molecular_claims.lambda_profiles frame")
    labels = quantizers.labels()
    fig, axes = plt.subplots(2, len(profiles), figsize=(style.COLUMN_IN, 5.6), squeeze=False, layout="constrained")
    for j, (t, pr) in enumerate(profiles.items()):
        pr = check_frame(f"profiles[{t!r}]", pr, ("quantizer", "run", "k", "lam", "argmax_k"))
        for q in PAPER_QUANTIZERS:
            s = pr[(pr.quantizer == q) & (pr.run == 0)]
            axes[0, j].plot(s.k, s.lam, label=labels[q], lw=1)
        axes[0, j].set_yscale("log")
        axes[0, j].set_title(t, fontsize=9)
        axes[0, j].set_xlabel("k")
        am = pr.drop_duplicates(["quantizer", "run"])
        axes[1, j].hist(am.argmax_k[am.argmax_k > 0], bins=30)
        axes[1, j].set_xlabel("argmax$_k\\ \\Lambda_{kk}$")
    axes[0, 0].set_ylabel("$\\Lambda_{kk}$")
    axes[1, 0].set_ylabel("trajectories")
    style.legend_outside(fig)
    return fig


# ------------------------------------------------------------------------------------ chapter 06
def relative_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per variant and task (rows) and quantizer (columns: the sparse ones, then the b-bit ones), the
    relative validation AUROC, mean over runs. ``df``: the long frame :func:`.table3_probe.probe`
    returns."""
    df = check_frame("df", df, ("variant", "task", "quantizer", "relative"))
    wide = df.pivot_table(index=["variant", "task"], columns="quantizer", values="relative", sort=False)
    return wide[[q for q in PAPER_QUANTIZERS if q in wide]].round(3).reset_index()


def passing_text(rows: Sequence) -> str:
    """The sentence naming the variants whose Table 3 pattern row passes (``rows``: what
    :func:`.table3_probe.probe_rows` returns)."""
    if isinstance(rows, (str, bytes)) or not isinstance(rows, Sequence):
        raise TypeError("rows must be the list of ledger rows table3_probe.probe_rows returns")
    passing = [r.where.removeprefix("Table 3 pattern, variant ") for r in rows if r.kind == "paper-claim" and r.passed]
    return ("Variants that reproduce the paper's pattern at this profile: "
            + (", ".join(f"`{v}`" for v in passing) if passing else "none") + ".")
