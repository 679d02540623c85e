"""The rows and prose of chapter ``attacks/01``: practical attacks against the exact limit on the toys of
:mod:`.toys`. Every row is a ``theory-check`` (our computation against an exact or independent one):
no printed value of paper 001 or 003 is involved.

Our choices, with reasons:

* The standard error of a held-out accuracy is read off its bootstrap interval (target models
  resampled): SE ≈ (hi − lo)/(2·1.96). Tolerances are multiples of it: 4 SE for "agrees with the exact
  value" (a two-sided test that a correct pipeline fails with probability ~6e-5 per comparison, so a
  handful of sample sizes cannot fail by chance), 4 SE one-sided for "does not beat the limit".
* "Fraction of the gap closed" = (accuracy − ½)/(Δ_n/2): 0 for chance, 1 for the Bayes attack. Where
  Δ_n/2 is below the run's resolution the ratio is noise, so an attack's summary is pooled over the
  *resolved* sample sizes (Δ_n/2 > :data:`Z_AGREE` SE): Σ(accuracy − ½)/Σ Δ_n/2 (all sizes when none is
  resolved). The best practical attack is the one with the highest pooled fraction.
* The rate row fits log(advantage) = a + s·x by weighted least squares (weights from the delta method,
  SE(log adv) = 2 SE(acc)/adv) for the best attack over the resolved sizes, x = log n for the empirical
  law (Δ_n ~ n^{−1/2}) and x = n for the finite Θ (Δ_n ~ e^{−nC}), and compares the slope s with the
  exact Δ_n's, fitted with the same weights over the same n (tolerance: :data:`Z_AGREE` SE of the fitted
  slope; the same weights matter where log Δ_n is not yet straight, as for the finite Θ at small n).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from qlib.repro.ledger import Item, Row, claim, close, not_comparable
from qlib.validation import check_int, check_int_sequence

from .paper import LIRA_SHADOWS
from .toys import ORACLE, PRACTICAL, AttackStudy

__all__ = ["oracle_rows", "theorem31_rows", "gap_rows", "rate_rows", "bound_rows", "gap_table", "gap_text",
           "metrics_table", "best_attack", "reductions_text", "Z_AGREE"]

#: the multiple of the standard error within which an accuracy agrees with an exact value
Z_AGREE = 4.0
_Z95 = 1.959963984540054


def _check(study) -> pd.DataFrame:
    if not isinstance(study, AttackStudy):
        raise TypeError(f"study must be the AttackStudy that toys.attack_study returns, got {type(study).__name__}")
    return study.table


def _se(t: pd.DataFrame) -> np.ndarray:
    return ((t["accuracy_hi"] - t["accuracy_lo"]) / (2 * _Z95)).to_numpy()


def _paper(study: AttackStudy) -> str:
    return "003"


def _where(study: AttackStudy, item: str) -> str:
    return f"{item} ({study.toy.name} toy)"


def oracle_rows(study: AttackStudy) -> list[Row]:
    """The pipeline's check: the Bayes oracle's held-out accuracy agrees with ½ + Δ_n/2 at every n
    (within :data:`Z_AGREE` SE). Theorem 3.1 of paper 003 at ν = ½ (equality for the Bayes attack)."""
    t = _check(study)
    o = t[t["attack"] == ORACLE]
    z = (o["accuracy"].to_numpy() - o["limit"].to_numpy()) / np.maximum(_se(o), 1e-12)
    worst = float(np.max(np.abs(z)))
    note = "; ".join(f"n={n}: {a:.4f} vs {lim:.4f}" for n, a, lim in zip(o["n"], o["accuracy"], o["limit"]))
    return [claim(Item(_where(study, "Theorem 3.1 (the Bayes attack's accuracy)"),
                       f"largest |z| of the Bayes oracle's held-out accuracy against ½ + Δ_n/2 over {len(o)} sample sizes",
                       f"|z| ≤ {Z_AGREE:g}", paper=_paper(study)), round(worst, 3), worst <= Z_AGREE,
                  kind="theory-check", tolerance=f"{Z_AGREE:g} bootstrap SE (target models resampled)", note=note)]


def theorem31_rows(study: AttackStudy) -> list[Row]:
    """No practical attack beats the limit: max over attacks and n of (accuracy − ½ − Δ_n/2)/SE ≤
    :data:`Z_AGREE` (Theorem 3.1 of paper 003: Acc ≤ ½ + Δ_n/2 at ν = ½ for every attack)."""
    t = _check(study)
    p = t[t["attack"].isin(PRACTICAL)]
    z = (p["accuracy"].to_numpy() - p["limit"].to_numpy()) / np.maximum(_se(p), 1e-12)
    i = int(np.argmax(z))
    return [claim(Item(_where(study, "Theorem 3.1 (every attack)"),
                       f"largest (accuracy − ½ − Δ_n/2)/SE over {len(PRACTICAL)} attacks × {p['n'].nunique()} sample sizes",
                       f"≤ {Z_AGREE:g}", paper=_paper(study)), round(float(z[i]), 3), bool(z[i] <= Z_AGREE),
                  kind="theory-check", tolerance=f"{Z_AGREE:g} bootstrap SE, one-sided",
                  note=f"at n = {p['n'].iloc[i]}, {p['attack'].iloc[i]}")]


def gap_table(study: AttackStudy) -> pd.DataFrame:
    """Per n and attack: held-out accuracy and interval, the limit, the gap limit − accuracy (interval
    from the accuracy's) and the fraction of the gap closed (accuracy − ½)/(Δ_n/2)."""
    t = _check(study).copy()
    half = (t["limit"] - 0.5).to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        t["closed"] = np.where(half > 0, (t["accuracy"] - 0.5) / half, np.nan)
    t["gap"] = t["limit"] - t["accuracy"]
    t["gap_lo"] = t["limit"] - t["accuracy_hi"]
    t["gap_hi"] = t["limit"] - t["accuracy_lo"]
    return t[["n", "attack", "limit", "accuracy", "accuracy_lo", "accuracy_hi", "gap", "gap_lo", "gap_hi", "closed"]]


def _resolved(t: pd.DataFrame) -> np.ndarray:
    """The sample sizes of the oracle's rows where Δ_n/2 exceeds Z_AGREE standard errors."""
    o = t[t["attack"] == ORACLE]
    ok = (o["limit"].to_numpy() - 0.5) > Z_AGREE * _se(o)
    return o["n"].to_numpy()[ok] if ok.any() else o["n"].to_numpy()


def best_attack(study: AttackStudy) -> tuple[str, dict]:
    """The practical attack with the highest pooled fraction of the gap closed over the resolved sample
    sizes (module docstring), and every practical attack's pooled fraction."""
    t = _check(study)
    r = t[t["n"].isin(_resolved(t))]
    means = {}
    for a in PRACTICAL:
        d = r[r["attack"] == a]
        means[a] = float((d["accuracy"] - 0.5).sum() / (d["limit"] - 0.5).sum())
    return max(means, key=lambda a: means[a]), means


def gap_rows(study: AttackStudy) -> list[Row]:
    """Which attack closes most of the gap: the best per-example attack (calibrated threshold or a LiRA)
    closes strictly more of it (pooled fraction, module docstring) than the global loss threshold; and at
    the largest resolved n (where chance is more than :data:`Z_AGREE` SE below the limit, unless none is)
    the best practical attack's accuracy is within :data:`Z_AGREE` SE of the limit."""
    t = _check(study)
    best, means = best_attack(study)
    glob = PRACTICAL[0]
    per = max(PRACTICAL[1:], key=lambda a: means[a])
    used = ", ".join(map(str, _resolved(t)))
    out = [claim(Item(_where(study, "Theorem 3.1 (which attack closes the gap)"),
                      f"fraction of the gap closed, pooled over n = {used}: best per-example attack ({per}) against "
                      "the global loss threshold", f"> {means[glob]:.3f} (global threshold)", paper=_paper(study)),
                 round(means[per], 4), bool(means[per] > means[glob]), kind="theory-check",
                 tolerance="strictly greater",
                 note="ours; pooled fractions: " + ", ".join(f"{a}: {v:.3f}" for a, v in means.items()))]
    nmax = int(max(_resolved(t)))
    r = t[(t["n"] == nmax) & (t["attack"] == best)].iloc[0]
    se = float((r["accuracy_hi"] - r["accuracy_lo"]) / (2 * _Z95))
    z = (r["limit"] - r["accuracy"]) / max(se, 1e-12)
    chance_z = (r["limit"] - 0.5) / max(se, 1e-12)
    out.append(claim(Item(_where(study, "Theorem 3.1 (the best attack at the largest resolved n)"),
                          f"(½ + Δ_n/2 − accuracy)/SE of {best} at n = {nmax}", f"≤ {Z_AGREE:g}", paper=_paper(study)),
                     round(float(z), 3), bool(z <= Z_AGREE), kind="theory-check", tolerance=f"{Z_AGREE:g} bootstrap SE",
                     note=f"accuracy {r['accuracy']:.4f} [{r['accuracy_lo']:.4f}, {r['accuracy_hi']:.4f}], limit "
                          f"{r['limit']:.4f}; chance (½) is {chance_z:.1f} SE below the limit"
                          + (" — within the tolerance too: the limit is below this run's resolution"
                             if chance_z <= Z_AGREE else "")))
    return out


def rate_rows(study: AttackStudy) -> list[Row]:
    """The best attack's advantage decays at the exact Δ_n's rate: weighted slopes of log advantage
    against log n (empirical law) or n (finite Θ) over the resolved sample sizes (module docstring).
    Not comparable when fewer than three sizes are resolved with a positive advantage."""
    t = _check(study)
    best, _ = best_attack(study)
    b = t[(t["attack"] == best) & t["n"].isin(_resolved(t))].sort_values("n")
    b = b[2 * b["accuracy"] - 1 > 0]
    emp = study.toy.kind == "empirical"
    where = _where(study, "Theorem 5.4 / Corollary 5.4.1 (rate)" if emp else "Theorem 3.1 of paper 001 (rate)")
    q = (f"slope of log(advantage) of {best} against {'log n' if emp else 'n'}, vs the exact Δ_n's")
    if len(b) < 3:
        return [not_comparable(Item(where, q, "exact slope", paper="003" if emp else "001"), None, kind="theory-check",
                               reason="fewer than three sample sizes where Δ_n/2 is resolved and the advantage is > 0")]
    adv = 2 * b["accuracy"].to_numpy() - 1
    x = b["n"].to_numpy(dtype=float)
    x = np.log(x) if emp else x
    y = np.log(adv)
    w = (adv / (2 * np.maximum(_se(b), 1e-12))) ** 2
    xb = np.sum(w * x) / w.sum()
    slope = float(np.sum(w * (x - xb) * (y - np.sum(w * y) / w.sum())) / np.sum(w * (x - xb) ** 2))
    se = float(1 / math.sqrt(np.sum(w * (x - xb) ** 2)))
    d = np.log(b["delta"].to_numpy())
    exact_slope = float(np.sum(w * (x - xb) * (d - np.sum(w * d) / w.sum())) / np.sum(w * (x - xb) ** 2))
    rate = ("Corollary 5.4.1: −1/2 as n → ∞" if emp else
            f"Theorem 3.1 of paper 001: −C_P^1 = {-study.toy.chernoff_rate():.4f} as n → ∞")
    return [close(Item(where, q, exact_slope, paper="003" if emp else "001"), slope, kind="theory-check", atol=Z_AGREE * se,
                  note=f"ours; slope {slope:.4f} ± {se:.4f} (1 SE) over n = {', '.join(map(str, b['n']))}; "
                       f"exact Δ_n slope {exact_slope:.4f}; {rate}")]


def bound_rows(study: AttackStudy) -> list[Row]:
    """Δ_n ≤ the theory's bound at every n of the study (C(P)/(2√n), or min(1, 2 Σ_k e^{−n C_k}))."""
    t = _check(study)
    o = t[t["attack"] == ORACLE].sort_values("n")
    ratio = float((o["delta"] / o["bound"]).max())
    if study.toy.kind == "empirical":
        where, what = "Corollary 5.4.1 (upper bound)", "C(P)/(2√n)"
    else:
        where, what = "Theorem 3.1 of paper 001 (Chernoff bound)", "min(1, 2 Σ_k exp(−n C_k))"
    return [claim(Item(_where(study, where), f"largest Δ_n / ({what}) over n = {', '.join(map(str, o['n']))}", "≤ 1",
                       paper="001" if study.toy.kind == "erm" else "003"), round(ratio, 4), ratio <= 1 + 1e-12,
                  kind="theory-check", tolerance="exact",
                  note="Δ_n exact (qlib.mia); " + ", ".join(f"n={n}: {d:.3g} ≤ {bd:.3g}"
                                                          for n, d, bd in zip(o["n"], o["delta"], o["bound"])))]


def metrics_table(study: AttackStudy) -> pd.DataFrame:
    """The displayed table: per n and attack, held-out accuracy [interval], AUC, TPR at 0.1 % and 1 % FPR,
    the optimistic best accuracy, and the limit ½ + Δ_n/2."""
    t = _check(study)
    return pd.DataFrame({
        "n": t["n"], "attack": t["attack"],
        "accuracy (held out)": [f"{a:.4f} [{lo:.4f}, {hi:.4f}]" for a, lo, hi in
                                zip(t["accuracy"], t["accuracy_lo"], t["accuracy_hi"])],
        "½ + Δ_n/2": t["limit"].round(4), "AUC": t["auc"].round(4),
        "TPR@0.1% FPR": t["tpr@0.001"].round(4), "TPR@1% FPR": t["tpr@0.01"].round(4),
        "best accuracy (optimistic)": t["best_accuracy"].round(4)})


def gap_text(study: AttackStudy) -> str:
    """Markdown: per n, the gap between the best practical attack and the limit, with its interval."""
    g = gap_table(study)
    best, means = best_attack(study)
    b = g[g["attack"] == best]
    lines = [f"On the **{study.toy.name}** toy the practical attack closest to the limit is **{best}** "
             f"(fraction of the gap closed, pooled over the resolved n: {means[best]:.2f}; the global loss threshold "
             f"{means[PRACTICAL[0]]:.2f}). Its gap to the limit, with a 95 % interval (target models resampled):", "",
             "| n | ½ + Δ_n/2 | accuracy | gap | fraction closed |", "|---:|---:|---:|---:|---:|"]
    for _, r in b.iterrows():
        lines.append(f"| {int(r['n'])} | {r['limit']:.4f} | {r['accuracy']:.4f} | {r['gap']:+.4f} "
                     f"[{r['gap_lo']:+.4f}, {r['gap_hi']:+.4f}] | {r['closed']:.2f} |")
    return "\n".join(lines)


def reductions_text(shadows: int, pairs: int, ns_empirical, ns_erm) -> str:
    """Prose: this run's sizes against the LiRA paper's shadow count (generated from the parameters)."""
    shadows = check_int("shadows", shadows, low=1)
    pairs = check_int("pairs", pairs, low=1)
    ns_empirical = check_int_sequence("ns_empirical", ns_empirical, low=1)
    ns_erm = check_int_sequence("ns_erm", ns_erm, low=1)
    s = (f"This run uses {shadows} reference models (and {shadows} in-models per atom for online LiRA), about "
         f"{pairs:,} evaluated pairs per sample size, n ∈ {{{', '.join(map(str, ns_empirical))}}} for the empirical "
         f"law and n ∈ {{{', '.join(map(str, ns_erm))}}} for the finite-Θ ERM.")
    if shadows < LIRA_SHADOWS:
        s += f" The LiRA paper trains {LIRA_SHADOWS} shadow models; the `paper` profile uses that count."
    return s
