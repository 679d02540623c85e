"""The rows and prose of chapter ``attacks/02``: the synthetic study of paper 001 §5.1 under practical
attacks (:mod:`.synthetic`). Every row is a ``theory-check`` (ours: paper 001 runs no practical attack),
on paper 001 ({cite:p}`aubinais2025quantized`).

The tests, fixed before any result was seen (our choices, with reasons):

* **Rank agreement** (paper 001 §5.1 ranks quantizers by r_Q^n; Theorem 3.3 reads a larger r_Q^n as a
  smaller Δ_n): ρ is :func:`.protocol.rank_rho` — Spearman between r_Q^n and the strongest attack's
  negated held-out advantage, +1 for the same ranking. The null is ρ = 0 (r_Q^n carries no information on
  the attack's ranking). Pooled over seeds × laws, the row passes when the mean ρ exceeds the one-sided
  :data:`.protocol.ALPHA` critical value (the analysis' ``alpha``) of its permutation distribution (quantizers permuted independently in every
  seed × law), i.e. p < α; per law, when the lower end of its 95 % bootstrap interval (targets
  and models resampled) is above 0. The same test for the paper's discriminator estimate in place of the
  practical attacks.
* **Quantization lowers the attack** (the data-processing inequality: Δ_n of Q(θ̂) ≤ Δ_n of θ̂): the
  strongest attack's advantage on the unquantized model minus its advantage on the quantized ones, mean over
  laws, seeds and quantizers; passes when the lower end of its 95 % bootstrap interval is above 0 (null: 0,
  no effect of quantization). An inequality for the *best* attack; for the practical ones it can fail.
* **What the bootstrap intervals of ρ mean.** Resampling targets adds noise to every advantage, which can
  only blur a ranking: the resampled ρ are pulled towards 0, so a percentile interval of ρ can lie below
  the estimate (it is conservative for the test ρ > 0). The prose says so where it happens; the seeds' spread
  is the other measure of uncertainty shown.
* **Practical attacks against the discriminator**: the strongest practical attack's advantage minus the
  discriminator's, mean over laws, seeds and attacked models; passes when the lower end of its bootstrap
  interval (practical side resampled; the discriminator's own interval is not added) is above 0.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from qlib.repro.ledger import Item, Row, claim

from .synthetic import SyntheticAnalysis

__all__ = ["rank_agreement_rows", "law_rank_rows", "discriminator_rows", "quantization_rows",
           "summary_table", "law_table", "answer_text", "critical_rho"]

_PAPER = "001"


def _check(analysis) -> SyntheticAnalysis:
    if not isinstance(analysis, SyntheticAnalysis):
        raise TypeError(f"analysis must be the SyntheticAnalysis that synthetic.analyse returns, "
                        f"got {type(analysis).__name__}")
    return analysis


def critical_rho(analysis: SyntheticAnalysis, which: str = "attack") -> float:
    """The one-sided :data:`.protocol.ALPHA` critical value (the analysis' ``alpha``) of the pooled mean ρ under ρ = 0 (its permutation
    distribution): ``which`` 'attack' (strongest practical attack) or 'discriminator'."""
    a = _check(analysis)
    if which not in ("attack", "discriminator"):
        raise ValueError(f"which must be 'attack' or 'discriminator', got {which!r}")
    return float(a.pooled["crit" if which == "attack" else "crit_disc"])


def _sizes(a: SyntheticAnalysis) -> str:
    p = a.pooled
    return f"{p['seeds']} seed(s) × {p['laws']} laws, {p['quantizers']} quantizers, {p['models']} models per law"


def _rank_row(a: SyntheticAnalysis, which: str) -> Row:
    p = a.pooled
    rho = p["rho"] if which == "attack" else p["rho_disc"]
    pv = p["p"] if which == "attack" else p["p_disc"]
    crit = critical_rho(a, which)
    who = "the strongest practical attack" if which == "attack" else "the discriminator estimate (§4.2)"
    interval = f" [{p['rho_lo']:+.3f}, {p['rho_hi']:+.3f}]" if which == "attack" else ""
    return claim(Item("§5.1 (r_Q^n ranks the quantizers)" + ("" if which == "attack" else ", discriminator"),
                      f"mean Spearman ρ between r_Q^n and {who}'s 1 − advantage over {_sizes(a)}",
                      f"ρ > permutation critical value {crit:+.3f}", paper=_PAPER),
                 f"{rho:+.3f}{interval}, p = {pv:.3g}", bool(np.isfinite(rho) and rho > crit), kind="theory-check",
                 tolerance=f"one-sided permutation test of ρ = 0 at {a.settings['alpha']:g} ({a.settings['draws']} draws)",
                 note=f"ours; {a.settings['reps']} bootstrap resamples, 95 % interval")


def rank_agreement_rows(analysis: SyntheticAnalysis) -> list[Row]:
    """Does r_Q^n rank the quantizers as the strongest practical attack does, pooled over seeds and laws
    (module docstring)? One row."""
    return [_rank_row(_check(analysis), "attack")]


def law_rank_rows(analysis: SyntheticAnalysis) -> list[Row]:
    """Per law: ρ (mean over seeds) with its bootstrap interval; passes when the interval is above 0."""
    a = _check(analysis)
    out = []
    for _, r in a.per_law.iterrows():
        seeds = ", ".join(f"{v:+.2f}" for v in r["rho_seeds"])
        out.append(claim(Item(f"§5.1 (r_Q^n ranks the quantizers), {r['law']}",
                              "Spearman ρ between r_Q^n and the strongest attack's 1 − advantage, mean over seeds "
                              "[95 % bootstrap interval]", "interval above ρ = 0", paper=_PAPER),
                         f"{r['rho']:+.3f} [{r['rho_lo']:+.3f}, {r['rho_hi']:+.3f}]",
                         bool(np.isfinite(r["rho_lo"]) and r["rho_lo"] > 0), kind="theory-check",
                         tolerance="95 % bootstrap interval above 0", note=f"ours; per seed: {seeds}"))
    return out


def discriminator_rows(analysis: SyntheticAnalysis) -> list[Row]:
    """The rank question for the paper's discriminator estimate, and the strongest practical attack
    against the discriminator (module docstring). Empty when the study ran without the discriminator."""
    a = _check(analysis)
    p = a.pooled
    if not np.isfinite(p["rho_disc"]):
        return []
    gap = claim(Item("§4.2 (the discriminator estimate) against practical attacks",
                     "strongest practical attack's advantage − the discriminator's, mean over laws, seeds and models "
                     "[95 % bootstrap interval]", "interval above 0 (no difference)", paper=_PAPER),
                f"{p['vs_disc']:+.4f} [{p['vs_disc_lo']:+.4f}, {p['vs_disc_hi']:+.4f}]",
                bool(np.isfinite(p["vs_disc_lo"]) and p["vs_disc_lo"] > 0), kind="theory-check",
                tolerance="95 % bootstrap interval above 0", note="ours; the discriminator's own spread not added")
    return [_rank_row(a, "discriminator"), gap]


def quantization_rows(analysis: SyntheticAnalysis) -> list[Row]:
    """The strongest attack is stronger on the unquantized model than on the quantized ones (module
    docstring): one row."""
    a = _check(analysis)
    p = a.pooled
    return [claim(Item("§3 (data processing: quantization cannot raise Δ_n)",
                       "strongest attack's advantage on the unquantized model − on the quantized ones, mean over laws, "
                       "seeds and quantizers [95 % bootstrap interval]", "interval above 0 (no effect of quantization)",
                       paper=_PAPER),
                  f"{p['identity_gap']:+.4f} [{p['identity_gap_lo']:+.4f}, {p['identity_gap_hi']:+.4f}]",
                  bool(np.isfinite(p["identity_gap_lo"]) and p["identity_gap_lo"] > 0), kind="theory-check",
                  tolerance="95 % bootstrap interval above 0",
                  note="ours; an inequality for the best attack, tested on the practical ones")]


def _iv(v, lo, hi, digits=3) -> str:
    if not np.isfinite(v):
        return "—"
    return f"{v:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def summary_table(analysis: SyntheticAnalysis) -> pd.DataFrame:
    """The displayed table, one row per law × attacked model: r_Q^n and e^{−n r_Q^n}, the strongest
    attack and its held-out advantage [95 % interval], its AUC and TPR at 1 % FPR, the discriminator's
    advantage [Clopper–Pearson interval], and the gap between the theory's order and the attack."""
    t = _check(analysis).per_quantizer
    return pd.DataFrame({
        "law": t["law"], "quantizer": t["quantizer"],
        "r_Q^n": [_iv(v, lo, hi, 4) for v, lo, hi in zip(t["r"], t["r_lo"], t["r_hi"])],
        "e^(−n r_Q^n)": [f"{v:.3g}" if np.isfinite(v) else "—" for v in t["theory"]],
        "strongest attack": t["strongest"],
        "advantage": [_iv(v, lo, hi) for v, lo, hi in zip(t["advantage"], t["advantage_lo"], t["advantage_hi"])],
        "AUC": t["auc"].round(3), "TPR@1% FPR": t["tpr@0.01"].round(3),
        "discriminator advantage": [_iv(v, lo, hi) for v, lo, hi in zip(t["disc"], t["disc_lo"], t["disc_hi"])],
        "e^(−n r_Q^n) − advantage": [_iv(v, lo, hi) if np.isfinite(v) else "—"
                                     for v, lo, hi in zip(t["gap"], t["gap_lo"], t["gap_hi"])]})


def law_table(analysis: SyntheticAnalysis) -> pd.DataFrame:
    """Per law: ρ [95 % bootstrap interval], the seeds' ρ and their standard deviation, the discriminator's ρ."""
    t = _check(analysis).per_law
    return pd.DataFrame({
        "law": t["law"], "ρ (attack)": [_iv(v, lo, hi, 2) for v, lo, hi in zip(t["rho"], t["rho_lo"], t["rho_hi"])],
        "ρ per seed": [", ".join(f"{v:+.2f}" for v in s) for s in t["rho_seeds"]],
        "seed SD": t["rho_seed_sd"].round(3), "ρ (discriminator)": t["rho_disc"].round(2)})


def answer_text(analysis: SyntheticAnalysis) -> str:
    """Markdown: the chapter's answer, generated from the computed values."""
    a = _check(analysis)
    p, lw, q = a.pooled, a.per_law, a.per_quantizer
    crit = critical_rho(a)
    agrees = bool(np.isfinite(p["rho"]) and p["rho"] > crit)
    above = int((lw["rho_lo"] > 0).sum())
    below = int((lw["rho_hi"] < 0).sum())
    quant = q[q["quantizer"] != q["quantizer"].iloc[0]]
    ident = q[q["quantizer"] == q["quantizer"].iloc[0]]
    wins = quant["strongest"].value_counts()
    lines = [
        f"**Answer at these sizes** ({_sizes(a)}): r_Q^n "
        + ("**does** rank the quantizers the way the strongest practical attack does" if agrees else
           "does **not** rank the quantizers detectably the way the strongest practical attack does")
        + f": mean Spearman ρ = {p['rho']:+.3f} (95 % bootstrap interval [{p['rho_lo']:+.3f}, {p['rho_hi']:+.3f}]), "
        f"one-sided permutation p = {p['p']:.3g} against ρ = 0 (critical value {crit:+.3f} at {a.settings['alpha']:g}). "
        f"{above} of {len(lw)} laws have a per-law interval above 0"
        + (f" and {below} below 0" if below else "") + ".",
        "",
        f"The strongest practical attack's held-out advantage on the quantized models ranges from "
        f"{quant['advantage'].min():+.3f} to {quant['advantage'].max():+.3f} (mean {quant['advantage'].mean():+.3f}); "
        f"on the unquantized models from {ident['advantage'].min():+.3f} to {ident['advantage'].max():+.3f}. "
        f"Unquantized minus quantized, mean over laws and quantizers: {p['identity_gap']:+.4f} "
        f"[{p['identity_gap_lo']:+.4f}, {p['identity_gap_hi']:+.4f}]. The strongest attack is "
        + ", ".join(f"{k} for {v}" for k, v in wins.items()) + f" of the {len(quant)} law × quantizer cells.",
    ]
    if np.isfinite(p["rho_disc"]):
        lines += ["", f"The paper's discriminator estimate: mean ρ = {p['rho_disc']:+.3f} (p = {p['p_disc']:.3g}); "
                  f"the strongest practical attack's advantage exceeds the discriminator's by {p['vs_disc']:+.4f} "
                  f"[{p['vs_disc_lo']:+.4f}, {p['vs_disc_hi']:+.4f}] on average."]
    theory = quant["theory"].to_numpy()
    if np.isfinite(theory).any():
        gap = quant["gap"].to_numpy()
        lines += ["", f"The theory's order of the best attack's advantage, e^(−n r_Q^n) (Theorem 3.3 of paper 001, "
                  f"an order as n → ∞, not a bound), ranges from {np.nanmin(theory):.3g} to {np.nanmax(theory):.3g} "
                  f"over these cells; the strongest practical attack stays below it by {np.nanmin(gap):+.3f} to "
                  f"{np.nanmax(gap):+.3f} (mean {np.nanmean(gap):+.3f})."]
    off = [lw["law"][i] for i in range(len(lw)) if not lw["rho_lo"].iloc[i] <= lw["rho"].iloc[i] <= lw["rho_hi"].iloc[i]]
    pooled_off = not p["rho_lo"] <= p["rho"] <= p["rho_hi"]
    if off or pooled_off:
        lines += ["", "The bootstrap interval of ρ misses its estimate "
                  + ("for the pooled mean" if pooled_off else "") + (" and " if pooled_off and off else "")
                  + (f"for {len(off)} of {len(lw)} laws" if off else "")
                  + ": resampling targets adds noise to every advantage, which blurs the ranking and pulls the "
                  "resampled ρ towards 0, so these intervals are conservative for a test of ρ > 0; the seeds' "
                  "values (the table below) are the other measure of spread."]
    return "\n".join(lines)
