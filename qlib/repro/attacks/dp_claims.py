"""The rows and prose of chapter ``attacks/04``: the canary audit of DP-SGD and RQP-SGD (:mod:`.dp_audit`)
against the (ε, δ) hypothesis-testing region. Every row is a ``theory-check``: paper 004 runs no attack;
the rows test its (and the accountant's) privacy statements on our runs.

Tolerances, fixed before any run:

* **The region.** A row passes when no threshold's Clopper–Pearson box (95 %, Bonferroni over the
  thresholds: a valid simultaneous bound, :mod:`qlib.attacks.dp_bound`) lies above the (ε, δ) region,
  i.e. TPR_lo ≤ min(1, e^ε·FPR_hi + δ, 1 − e^{−ε}(1 − δ − FPR_hi)) at every threshold — equivalently
  ε_lo ≤ ε. A correct accountant and implementation fail it with probability ≤ 5 % per row; it fails
  for sure, given enough runs, when the stated ε is smaller than the mechanism's.
* **The gap (ablation).** Our hypothesis: a last-iterate attack on one canary proves less than
  :data:`GAP_FRACTION` of the accountant's ε (Jagielski et al. and Nasr et al. find the final-model
  audit of DP-SGD loose). The row reports the largest ε_lo/ε over budgets and canaries per method.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from qlib.repro.ledger import Item, Row, claim

from .dp_audit import AUDIT_FPRS, DPAudit

__all__ = ["GAP_FRACTION", "bound_rows", "gap_rows", "audit_table", "audit_text", "setup_text"]

#: the hypothesis of :func:`gap_rows`: the audit proves less than this fraction of ε
GAP_FRACTION = 0.5


def _check(audit) -> pd.DataFrame:
    if not isinstance(audit, DPAudit):
        raise TypeError(f"audit must be the DPAudit that dp_audit.audit returns, got {type(audit).__name__}")
    return audit.table


def _budget(r) -> str:
    return f"ε = {r['eps']:g}, δ = {r['delta']:g}" if r["delta"] else f"ε = {r['eps']:g}, δ = 0"


def _whose(r) -> str:
    return ("Theorem 1 of paper 004 as printed: per coordinate, linear composition" if r["key"] == "rqp"
            else "the RDP accountant: Poisson sampling, add or remove one")


def bound_rows(audit: DPAudit) -> list[Row]:
    """Per method, ε and canary: the attack's Clopper–Pearson box never lies above the (ε, δ) region
    (module docstring), shown as the lower bound ε_lo it proves against the budget ε (the box is above the
    region exactly when ε_lo > ε; the row's test is the region's, :func:`qlib.attacks.dp_bound.region_excess`)."""
    t = _check(audit)
    pct = f"{100 * audit.level:g} %"
    out = []
    for _, r in t.iterrows():
        out.append(claim(Item(f"(ε, δ) region: {r['method']} at {_budget(r)}, {r['canary']} canary",
                              f"ε_lo proved by the attack ({pct} Clopper–Pearson, {audit.correction} over thresholds), "
                              f"{audit.runs} runs per side, against the budget ε of {_whose(r)}", f"≤ {r['eps']:g}",
                              paper="004"), round(float(r["eps_lo"]), 4), bool(r["excess"] <= 0), kind="theory-check",
                         tolerance=f"ε_lo ≤ ε (the {pct} box inside the region)",
                         note=f"largest TPR_lo − bound(FPR_hi) over thresholds {r['excess']:+.4f}; AUC {r['auc']:.3f}; "
                              f"TPR at 1 % FPR {r['tpr@0.01']:.4f}"))
    return out


def gap_rows(audit: DPAudit) -> list[Row]:
    """Per method (ablation): the largest ε_lo/ε over budgets and canaries, against the hypothesis
    that it is below :data:`GAP_FRACTION` (module docstring)."""
    t = _check(audit)
    out = []
    for _, d in t.groupby("key", sort=False):
        ratio = (d["eps_lo"] / d["eps"]).to_numpy()
        i = int(np.argmax(ratio))
        r = d.iloc[i]
        at = f"{r['canary']} canary at ε = {r['eps']:g}" if ratio[i] > 0 else "0 at every setting"
        note = "ablation; " + "; ".join(
            f"{row['canary']} at ε = {row['eps']:g}: ε_lo = {row['eps_lo']:.3f}"
            + (f" (ε̂ = {row['eps_hat']:.3g}, TP {row['tp']}/{row['runs']}, FP {row['fp']}/{row['runs']})"
               if row["eps_lo"] > 0 else "") for _, row in d.iterrows())
        out.append(claim(Item(f"audit gap: {r['method']}",
                              f"largest ε_lo / ε over ε ∈ {{{', '.join(f'{e:g}' for e in d['eps'].unique())}}} and the "
                              f"canaries ({at}); ε of {_whose(r)}", f"< {GAP_FRACTION:g}", paper="004"),
                         round(float(ratio[i]), 4), bool(ratio[i] < GAP_FRACTION), kind="theory-check",
                         tolerance=f"< {GAP_FRACTION:g} (our hypothesis, fixed before the runs)", note=note))
    return out


def audit_table(audit: DPAudit) -> pd.DataFrame:
    """The displayed table: per method, ε and canary — σ, q, the test accuracy, the attack's AUC and
    TPR at low FPR, and ε_lo (the lower confidence bound) beside the accountant's ε."""
    t = _check(audit)
    cols = {"method": t["method"], "canary": t["canary"], "ε (accountant)": t["eps"], "δ": t["delta"],
            "σ": t["sigma"].round(3), "q": t["q"].round(4), "test acc. %": (100 * t["test_acc"]).round(1),
            "AUC": t["auc"].round(3)}
    for f in AUDIT_FPRS:
        cols[f"TPR@{100 * f:g}% FPR"] = t[f"tpr@{f:g}"].round(4)
    cols[f"ε_lo ({100 * audit.level:g} %)"] = t["eps_lo"].round(3)
    cols["ε̂ (point)"] = t["eps_hat"].round(3)
    return pd.DataFrame(cols)


def audit_text(audit: DPAudit) -> str:
    """Markdown: what the audit proves per method, generated from the table."""
    t = _check(audit)
    lines = []
    for _, d in t.groupby("key", sort=False):
        r = d.loc[d["eps_lo"].idxmax()]
        over = d[d["excess"] > 0]
        if r["eps_lo"] <= 0:
            found = (f"no threshold of the attack proves any privacy loss (ε_lo = 0 at every budget and canary, "
                     f"largest AUC {d['auc'].max():.3f}): with {audit.runs} runs per side the last iterate does not "
                     "reveal the canary beyond chance at this confidence")
        else:
            found = (f"the strongest audit proves ε ≥ {r['eps_lo']:.3f} ({r['canary']} canary, budget "
                     f"ε = {r['eps']:g}: {100 * r['eps_lo'] / r['eps']:.0f} % of it)")
        verdict = (f"**{len(over)} of {len(d)} settings lie above the region**: " + ", ".join(
            f"{o['canary']} at ε = {o['eps']:g} (ε_lo = {o['eps_lo']:.3f})" for _, o in over.iterrows())
            + " — the stated ε is smaller than what the attack proves"
            if len(over) else "every setting lies inside the region")
        lines.append(f"* **{r['method']}** (ε of {_whose(r)}): {found}; {verdict}.")
    return "\n".join(lines)


def setup_text(audit: DPAudit) -> str:
    """Markdown: this run's sizes, the noise of each method and budget, and the chance that the canary is
    drawn at all (generated from the audit's setting and table)."""
    t = _check(audit)
    s = audit.setting
    n = int(audit.n_train)
    seen = 1.0 - (1.0 - 1.0 / (n + 1)) ** (s["m"] * s["T"])
    parts = []
    for key, d in t.groupby("key", sort=False):
        d = d.drop_duplicates("eps")
        if key == "rqp":
            parts.append(f"{d['method'].iloc[0]}: σ = {d['sigma'].iloc[0]:.3g} and q = "
                         + ", ".join(f"{q:.4f}" for q in d["q"]) + " (Theorem 1)")
        else:
            parts.append(f"{d['method'].iloc[0]}: σ = " + ", ".join(f"{x:.3g}" for x in d["sigma"])
                         + f" (RDP accountant, δ = {s['delta']:g})")
    return (f"{audit.runs:,} models with the canary and {audit.runs:,} without it per method, budget and canary "
            f"(n = {n} training rows, m = {s['m']}, T = {s['T']}, η = {s['eta']:g}, ρ = {s['clip']:g}, "
            f"M = {s['M']:g}, b = {s['b']}), at ε = {', '.join(f'{e:g}' for e in t['eps'].unique())}: "
            + "; ".join(parts) + ". The batches are drawn with replacement, so the canary is in at least one of "
            f"the T batches of a run with probability {seen:.3f}: in the other {100 * (1 - seen):.0f} % of the runs "
            "with it the model never saw it, which caps the TPR any attack reaches at a near-zero FPR.")
