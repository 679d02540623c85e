"""The rows and prose of chapter ``attacks/03``: LiRA and the loss threshold on paper 001's molecular MLPs
(:mod:`.molecular`). Every row is a ``theory-check`` (ours: paper 001 runs no practical attack), on paper 001
({cite:p}`aubinais2025quantized`).

The tests, fixed before any result was seen (our choices, with reasons):

* **The attack works on the unquantized model** (a sanity check of the attacks, null: chance, TPR = FPR):
  per task, the strongest attack's TPR at 1 % FPR on the unquantized MLPs; passes when the lower end of its
  95 % bootstrap interval (whole targets resampled) is above 0.01.
* **Quantization lowers TPR at low FPR** (the data-processing inequality of paper 001 §3 bounds the *best*
  attack; here the practical ones): per task, the unquantized model's TPR at 1 % FPR minus the quantized
  one's, mean over the quantizers; passes when the lower end of its paired 95 % bootstrap interval is above 0
  (null: no effect of quantization). How many quantizers pass on their own is in the note.
* **r_Q^n ranks the quantizers as the attack does** (Theorem 3.3 of paper 001: Δ_n ≈ e^{−n r_Q^n}, a larger
  r_Q^n a weaker attack): Spearman ρ over the quantizers between r_Q^n and the strongest attack's negated TPR at
  1 % FPR. Pooled over tasks, the mean ρ must exceed the one-sided :data:`.protocol.ALPHA` critical value of
  its permutation distribution (quantizers' r_Q^n permuted within each task); per task, the lower end of the
  95 % bootstrap interval must be above 0. Null: ρ = 0.
* **Quantization keeps who is exposed**: per task, Spearman's ρ over the pool's molecules between their
  exposure (:func:`.molecular.exposure`) under the unquantized model and under the quantizer with the largest
  r_Q^n (the theory's most private); passes when scipy's one-sided p-value of ρ > 0 is below 0.05 (null:
  quantization reshuffles the exposed molecules, ρ = 0).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from qlib.repro.ledger import Item, Row, claim
from qlib.validation import check_int

from .molecular import LOW_FPR, MolecularAnalysis, MolecularAttackStudy

__all__ = ["chance_rows", "quantization_rows", "rank_rows", "exposure_rows", "most_private", "exposure_rho",
           "summary_table", "task_table", "exposed_molecules", "answer_text"]

_PAPER = "001"
#: the attacks' names as the wide tables print them (σ: the Gaussians' standard deviation)
SHORT = {"global loss threshold": "loss threshold", "LiRA offline (one-sided)": "LiRA offline",
         "LiRA online (fixed variance)": "LiRA online, one σ", "LiRA online (per-example variance)": "LiRA online, σ per example"}
#: one-sided level of the exposure test (ours, fixed before any result)
EXPOSURE_ALPHA = 0.05


def _check(analysis) -> MolecularAnalysis:
    if not isinstance(analysis, MolecularAnalysis):
        raise TypeError(f"analysis must be the MolecularAnalysis that molecular.analyse returns, "
                        f"got {type(analysis).__name__}")
    return analysis


def _check_study(study) -> MolecularAttackStudy:
    if not isinstance(study, MolecularAttackStudy):
        raise TypeError(f"study must be the MolecularAttackStudy that molecular.molecular_attacks returns, "
                        f"got {type(study).__name__}")
    return study


def _iv(v, lo, hi, digits=3) -> str:
    if not np.isfinite(v):
        return "—"
    return f"{v:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def _models(a: MolecularAnalysis) -> str:
    return f"{a.pooled['models']} models, {a.settings['reps']} bootstrap resamples of targets"


def chance_rows(analysis: MolecularAnalysis) -> list[Row]:
    """Per task: the strongest attack's TPR at 1 % FPR on the unquantized MLPs is above chance."""
    a = _check(analysis)
    out = []
    for _, r in a.per_quantizer[a.per_quantizer["quantizer"] == "identity"].iterrows():
        out.append(claim(Item(f"§5.2 (molecular MLPs), {r['task']}",
                              "strongest attack's TPR at 1 % FPR on the unquantized model [95 % bootstrap interval]",
                              "interval above 0.01 (chance: TPR = FPR)", paper=_PAPER),
                         f"{_iv(r['tpr@0.01'], r['tpr@0.01_lo'], r['tpr@0.01_hi'])} ({r['strongest']})",
                         bool(r["tpr@0.01_lo"] > LOW_FPR[0]), kind="theory-check",
                         tolerance="95 % bootstrap interval above 0.01", note=f"ours; {_models(a)}"))
    return out


def quantization_rows(analysis: MolecularAnalysis) -> list[Row]:
    """Per task: TPR at 1 % FPR on the unquantized model minus on the quantized ones, mean over quantizers."""
    a = _check(analysis)
    out = []
    for _, t in a.per_task.iterrows():
        out.append(claim(Item(f"§3 (data processing: quantization cannot raise Δ_n), {t['task']}",
                              "TPR at 1 % FPR, unquantized − quantized, mean over quantizers [paired 95 % bootstrap interval]",
                              "interval above 0 (no effect of quantization)", paper=_PAPER),
                         _iv(t["mean_drop"], t["mean_drop_lo"], t["mean_drop_hi"], 4), bool(t["mean_drop_lo"] > 0),
                         kind="theory-check", tolerance="95 % bootstrap interval above 0",
                         note=f"ours; {t['drops_above_0']} of {t['quantizers']} quantizers' own intervals above 0; "
                              "an inequality for the best attack, tested on the practical ones"))
    return out


def rank_rows(analysis: MolecularAnalysis) -> list[Row]:
    """Does r_Q^n rank the quantizers as the strongest attack's TPR at 1 % FPR does: pooled (permutation
    test) and per task (bootstrap interval)."""
    a = _check(analysis)
    p = a.pooled
    rows = [claim(Item("§5.2 (r_Q^n ranks the quantizers), molecular tasks",
                       f"mean Spearman ρ between r_Q^n and the strongest attack's −TPR at 1 % FPR over {p['tasks']} task(s), "
                       f"{p['quantizers']} quantizers [95 % bootstrap interval]",
                       f"ρ > permutation critical value {p['crit']:+.3f}", paper=_PAPER),
                  f"{p['rho']:+.3f} [{p['rho_lo']:+.3f}, {p['rho_hi']:+.3f}], p = {p['p']:.3g}",
                  bool(np.isfinite(p["rho"]) and np.isfinite(p["crit"]) and p["rho"] > p["crit"]), kind="theory-check",
                  tolerance=f"one-sided permutation test of ρ = 0 at {a.settings['alpha']:g} ({a.settings['draws']} draws)",
                  note=f"ours; {_models(a)}")]
    for _, t in a.per_task.iterrows():
        rows.append(claim(Item(f"§5.2 (r_Q^n ranks the quantizers), {t['task']}",
                               "Spearman ρ between r_Q^n and the strongest attack's −TPR at 1 % FPR [95 % bootstrap interval]",
                               "interval above ρ = 0", paper=_PAPER), _iv(t["rho"], t["rho_lo"], t["rho_hi"]),
                          bool(np.isfinite(t["rho_lo"]) and t["rho_lo"] > 0), kind="theory-check",
                          tolerance="95 % bootstrap interval above 0",
                          note=f"ours; {t['quantizers_ranked']} quantizers with a defined r_Q^n"))
    return rows


def most_private(analysis: MolecularAnalysis, task: str) -> str:
    """The quantizer with the largest r_Q^n (mean over models) on ``task``: the theory's most private."""
    a = _check(analysis)
    d = a.per_quantizer[(a.per_quantizer["task"] == task) & (a.per_quantizer["quantizer"] != "identity")]
    if d.empty:
        raise ValueError(f"task must be one of the analysed tasks {list(a.per_task['task'])}, got {task!r}")
    if not np.isfinite(d["r"]).any():
        raise ValueError(f"task {task!r}: no quantizer has a defined r_Q^n")
    return str(d.loc[d["r"].idxmax(), "quantizer"])


def exposure_rho(analysis: MolecularAnalysis, study: MolecularAttackStudy, task: str, quantizer: str):
    """``(ρ, one-sided p)``: Spearman over the pool's molecules between their exposure under the
    unquantized model and under ``quantizer`` (scipy's ``spearmanr``, ties averaged; p of ρ > 0)."""
    a, s = _check(analysis), _check_study(study)
    if task not in a.exposure:
        raise ValueError(f"task must be one of the analysed tasks {list(a.exposure)}, got {task!r}")
    if quantizer not in s.attacked:
        raise ValueError(f"quantizer must be one of {s.attacked}, got {quantizer!r}")
    e = a.exposure[task]
    res = stats.spearmanr(e[0], e[s.attacked.index(quantizer)], alternative="greater")
    return float(res.statistic), float(res.pvalue)


def exposure_rows(analysis: MolecularAnalysis, study: MolecularAttackStudy) -> list[Row]:
    """Per task: the molecules exposed under the unquantized model stay exposed under the theory's most
    private quantizer (Spearman over molecules, one-sided)."""
    a = _check(analysis)
    out = []
    for task in a.per_task["task"]:
        q = most_private(a, task)
        rho, p = exposure_rho(a, study, task, q)
        out.append(claim(Item(f"§5.2 (molecular MLPs), {task}",
                              f"Spearman ρ over molecules between per-molecule TPR at 1 % FPR, unquantized vs {q} "
                              "(the largest r_Q^n)", f"one-sided p < {EXPOSURE_ALPHA:g} (ρ = 0: exposure reshuffled)",
                              paper=_PAPER), f"ρ = {rho:+.3f}, p = {p:.3g}",
                         bool(np.isfinite(p) and p < EXPOSURE_ALPHA and rho > 0), kind="theory-check",
                         tolerance=f"one-sided Spearman test at {EXPOSURE_ALPHA:g}", note="ours; molecules of the pool"))
    return out


def summary_table(analysis: MolecularAnalysis) -> pd.DataFrame:
    """The displayed table, one row per task × attacked model: r_Q^n [interval] and e^{−n r_Q^n}, the
    strongest attack and its TPR at 1 % and 0.1 % FPR [intervals], AUC, the largest held-out advantage
    [interval], the drop of TPR at 1 % FPR from the unquantized model [paired interval] and the gap between
    the theory's order and the advantage."""
    t = _check(analysis).per_quantizer
    return pd.DataFrame({
        "task": t["task"], "quantizer": t["quantizer"],
        "r_Q^n": [_iv(v, lo, hi, 4) for v, lo, hi in zip(t["r"], t["r_lo"], t["r_hi"])],
        "e^(−n r_Q^n)": [f"{v:.3g}" if np.isfinite(v) else "—" for v in t["theory"]],
        "strongest attack": [SHORT.get(a, a) for a in t["strongest"]],
        "TPR@1% FPR": [_iv(v, lo, hi) for v, lo, hi in zip(t["tpr@0.01"], t["tpr@0.01_lo"], t["tpr@0.01_hi"])],
        "TPR@0.1% FPR": [_iv(v, lo, hi) for v, lo, hi in zip(t["tpr@0.001"], t["tpr@0.001_lo"], t["tpr@0.001_hi"])],
        "AUC": t["auc"].round(3),
        "held-out advantage": [_iv(v, lo, hi) for v, lo, hi in zip(t["advantage"], t["advantage_lo"], t["advantage_hi"])],
        "TPR drop vs unquantized": [_iv(v, lo, hi) for v, lo, hi in zip(t["drop"], t["drop_lo"], t["drop_hi"])],
        "e^(−n r_Q^n) − advantage": [_iv(v, lo, hi) for v, lo, hi in zip(t["gap"], t["gap_lo"], t["gap_hi"])]})


def task_table(analysis: MolecularAnalysis) -> pd.DataFrame:
    """Per task: sizes, ρ [interval], the mean drop [interval] and how many quantizers' drops are above 0."""
    t = _check(analysis).per_task
    return pd.DataFrame({
        "task": t["task"], "pool": t["pool"], "n per model": t["n"], "validation": t["n_val"], "d": t["d"],
        "ρ (r_Q^n vs −TPR@1%)": [_iv(v, lo, hi, 2) for v, lo, hi in zip(t["rho"], t["rho_lo"], t["rho_hi"])],
        "mean TPR drop": [_iv(v, lo, hi) for v, lo, hi in zip(t["mean_drop"], t["mean_drop_lo"], t["mean_drop_hi"])],
        "drops above 0": [f"{a} of {b}" for a, b in zip(t["drops_above_0"], t["quantizers"])],
        "seconds": t["seconds"].round(1)})


def exposed_molecules(analysis: MolecularAnalysis, study: MolecularAttackStudy, task: str, *, top: int = 5,
                      width: int = 40) -> pd.DataFrame:
    """The ``top`` molecules of ``task`` most exposed under the unquantized model (ties by SMILES order): SMILES
    (cut to ``width`` characters), label, and their exposure unquantized, under the theory's most private
    quantizer and under the quantizer of lowest TPR at 1 % FPR."""
    a, s = _check(analysis), _check_study(study)
    top = check_int("top", top, low=1)
    width = check_int("width", width, low=8)
    if task not in a.exposure:
        raise ValueError(f"task must be one of the analysed tasks {list(a.exposure)}, got {task!r}")
    ta = next(t for t in s.tasks if t.task == task)
    e = a.exposure[task]
    d = a.per_quantizer[(a.per_quantizer["task"] == task) & (a.per_quantizer["quantizer"] != "identity")]
    priv = most_private(a, task)
    low = str(d.loc[d["tpr@0.01"].idxmin(), "quantizer"])
    order = np.argsort(-e[0], kind="stable")[:top]
    cut = [sm if len(sm) <= width else sm[: width - 1] + "…" for sm in ta.smiles]
    cols = {"SMILES": [cut[i] for i in order], "label": ta.y[order].astype(int), "unquantized": e[0, order].round(3)}
    for q in dict.fromkeys([priv, low]):
        cols[q] = e[s.attacked.index(q), order].round(3)
    return pd.DataFrame(cols)


def answer_text(analysis: MolecularAnalysis, study: MolecularAttackStudy) -> str:
    """Markdown: the chapter's answer, generated from the computed values."""
    a, s = _check(analysis), _check_study(study)
    p, t, q = a.pooled, a.per_task, a.per_quantizer
    ident = q[q["quantizer"] == "identity"]
    quant = q[q["quantizer"] != "identity"]
    agrees = bool(np.isfinite(p["rho"]) and np.isfinite(p["crit"]) and p["rho"] > p["crit"])
    lowered = int((t["mean_drop_lo"] > 0).sum())
    lines = [
        f"**Answer at these sizes** ({p['tasks']} task(s), {p['models']} models each, {a.settings['reps']} bootstrap "
        f"resamples). On the unquantized MLPs the strongest attack reaches a TPR at 1 % FPR of "
        + ", ".join(f"{r['tpr@0.01']:.3f} [{r['tpr@0.01_lo']:.3f}, {r['tpr@0.01_hi']:.3f}] on {r['task']}"
                    for _, r in ident.iterrows()) + ".",
        "",
        f"Quantization lowers it on {lowered} of {len(t)} task(s) (mean over quantizers, paired interval above 0): "
        + "; ".join(f"{r['task']} {r['mean_drop']:+.3f} [{r['mean_drop_lo']:+.3f}, {r['mean_drop_hi']:+.3f}], "
                    f"{r['drops_above_0']} of {r['quantizers']} quantizers on their own" for _, r in t.iterrows())
        + f". Over all task × quantizer cells the quantized TPR at 1 % FPR ranges from {quant['tpr@0.01'].min():.3f} "
        f"({quant.loc[quant['tpr@0.01'].idxmin(), 'quantizer']}, {quant.loc[quant['tpr@0.01'].idxmin(), 'task']}) "
        f"to {quant['tpr@0.01'].max():.3f}.",
        "",
        "r_Q^n " + ("**does** rank the quantizers the way the strongest attack's TPR at 1 % FPR does" if agrees else
                    "does **not** rank the quantizers detectably the way the strongest attack's TPR at 1 % FPR does")
        + f": mean Spearman ρ = {p['rho']:+.3f} [{p['rho_lo']:+.3f}, {p['rho_hi']:+.3f}], one-sided permutation "
        f"p = {p['p']:.3g} (critical value {p['crit']:+.3f} at {a.settings['alpha']:g}); per task "
        + ", ".join(f"{r['task']} {r['rho']:+.2f} [{r['rho_lo']:+.2f}, {r['rho_hi']:+.2f}]" for _, r in t.iterrows()) + ".",
    ]
    theory = quant["theory"].to_numpy()
    if np.isfinite(theory).any():
        lines += ["", f"The theory's order of the best attack's advantage, e^(−n r_Q^n) (Theorem 3.3 of paper 001, an "
                  f"order as n → ∞, not a bound), ranges from {np.nanmin(theory):.3g} to {np.nanmax(theory):.3g} over "
                  f"these cells; the strongest held-out advantage stays below it by {np.nanmin(quant['gap']):+.3f} to "
                  f"{np.nanmax(quant['gap']):+.3f} (mean {np.nanmean(quant['gap']):+.3f})."]
    ex = []
    for task in t["task"]:
        qp = most_private(a, task)
        rho, pv = exposure_rho(a, s, task, qp)
        ex.append(f"{task}: ρ = {rho:+.2f} against {qp} (p = {pv:.2g})")
    lines += ["", "Per molecule, the exposure under the unquantized model and under the theory's most private "
              "quantizer (largest r_Q^n) correlate as follows: " + "; ".join(ex) + "."]
    return "\n".join(lines)
