"""What an (ε, δ)-DP guarantee allows a membership-inference attack, and what an attack proves about ε.

**The region.** A mechanism is (ε, δ)-differentially private iff every test of "trained with the
example" against "trained without it" has, at every false-positive rate α,

    TPR ≤ min(1, e^ε·α + δ, 1 − e^{−ε}(1 − δ − α))

(the hypothesis-testing characterisation of Kairouz, Oh & Viswanath 2015, {cite:p}`kairouz2015composition`,
§2; the second branch is the first applied to the complementary test). :func:`tpr_bound`
evaluates it; at α = 0 it is δ, it is 1 from α = 1 − δ on, and its two branches meet at
α* = (1 − δ)/(1 + e^ε).

**The audit.** Conversely, an attack whose TPR and FPR are *measured* on models trained with and
without a canary proves ε ≥ log((TPR − δ)/FPR) and ε ≥ log((1 − FPR − δ)/(1 − TPR)) — the auditing
method of Jagielski, Ullman & Oprea (2020, {cite:p}`jagielski2020auditing`) and Nasr et al. (2021,
{cite:p}`nasr2021adversary`). Measured rates carry sampling error, so :func:`epsilon_lower_bound`
replaces them by their Clopper–Pearson bounds (:func:`qlib.mis.binomial_ci`): TPR by its lower end
and FPR by its upper end, in both forms, which makes each threshold's bound hold with probability at
least ``level`` (each one-sided tail is (1 − level)/2). Decisions taken here:

* every distinct score is a candidate threshold ("member" iff score ≥ threshold, as in
  :mod:`qlib.attacks.metrics`), and the bound reported is the largest over them;
* maximising over K thresholds spends the confidence K times; ``correction="bonferroni"`` (the
  default) runs each threshold's intervals at level 1 − (1 − level)/K, so the maximum is a valid
  ``level`` lower confidence bound; ``correction="none"`` gives the per-threshold formula maximised
  (what an audit that picks its threshold on the same runs reports — optimistic);
* a bound ≤ 0 is reported as 0 (ε ≥ 0 is always true).

The alternative to Bonferroni is choosing the threshold on separate runs; with few runs per side the
correction costs less than halving the runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from qlib.mis import binomial_ci
from qlib.validation import check_array, check_choice, check_float, check_probability, skip_nested

from .metrics import check_scores

__all__ = ["CORRECTIONS", "tpr_bound", "implied_epsilon", "epsilon_lower_bound", "region_excess", "EpsilonAudit"]

#: how the confidence is shared among thresholds (see the module docstring)
CORRECTIONS = ("bonferroni", "none")


def _eps_delta(eps, delta) -> tuple[float, float]:
    eps = check_float("eps", eps, low=0.0)
    delta = check_probability("delta", delta)
    return eps, delta


def tpr_bound(fpr, eps: float, delta: float = 0.0) -> np.ndarray:
    """The largest TPR an (ε, δ)-DP mechanism allows a test of false-positive rate ``fpr`` (elementwise,
    any shape, values in [0, 1]): min(1, e^ε·α + δ, 1 − e^{−ε}(1 − δ − α)) (Kairouz et al. 2015)."""
    a = check_array("fpr", fpr, low=0.0, high=1.0)
    eps, delta = _eps_delta(eps, delta)
    return np.minimum(np.minimum(1.0, np.exp(eps) * a + delta), 1.0 - np.exp(-eps) * (1.0 - delta - a))


def implied_epsilon(fpr, tpr, delta: float = 0.0) -> np.ndarray:
    """The smallest ε at which (``fpr``, ``tpr``) lies in the (ε, δ) region: the larger of
    log((TPR − δ)/FPR) and log((1 − FPR − δ)/(1 − TPR)), 0 when both are ≤ 0, +inf when a numerator is
    positive over a zero denominator (elementwise; ``fpr`` and ``tpr`` broadcast, values in [0, 1])."""
    f = check_array("fpr", fpr, low=0.0, high=1.0)
    t = check_array("tpr", tpr, low=0.0, high=1.0)
    delta = check_probability("delta", delta)
    try:
        f, t = np.broadcast_arrays(f, t)
    except ValueError:
        raise ValueError(f"fpr and tpr must broadcast together, got shapes {f.shape} and {t.shape}") from None
    return _implied(f, t, delta)


def _ratio_log(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """log(num/den) where num > 0 (den ≥ 0: +inf at den = 0), −inf elsewhere."""
    out = np.full(np.shape(num), -np.inf)
    pos = num > 0
    with np.errstate(divide="ignore"):
        out[pos] = np.log(num[pos]) - np.log(den[pos])
    return out


def _implied(f: np.ndarray, t: np.ndarray, delta: float) -> np.ndarray:
    e = np.maximum(_ratio_log(t - delta, f), _ratio_log(1.0 - f - delta, 1.0 - t))
    return np.maximum(e, 0.0)


@dataclass(frozen=True)
class EpsilonAudit:
    """The result of :func:`epsilon_lower_bound`: ``eps_lo`` (the lower confidence bound on ε),
    ``eps_hat`` (the ε the point estimates imply at the same threshold; +inf when they touch 0 or 1; NaN
    when no threshold proves anything, ``eps_lo`` = 0),
    the threshold and its counts (``tp`` of ``n_in`` members, ``fp`` of ``n_out`` non-members) and the
    Clopper–Pearson ends used (``tpr_lo``, ``fpr_hi``), the form that attained it ("tpr/fpr" or
    "tnr/fnr"; "none" when no threshold gives a bound above 0), the number of thresholds ``tests`` and
    the per-threshold interval level."""

    eps_lo: float
    eps_hat: float
    threshold: float
    tp: int
    fp: int
    n_in: int
    n_out: int
    tpr_lo: float
    fpr_hi: float
    form: str
    tests: int
    interval_level: float
    delta: float

    @property
    def tpr(self) -> float:
        return self.tp / self.n_in

    @property
    def fpr(self) -> float:
        return self.fp / self.n_out


def _counts(s: np.ndarray, m: np.ndarray):
    """Per distinct threshold (descending): members and non-members scored ≥ it, and the thresholds."""
    order = np.argsort(-s, kind="stable")
    ss, ms = s[order], m[order]
    idx = np.r_[np.flatnonzero(np.diff(ss)), ss.size - 1]
    tp = np.cumsum(ms)[idx]
    return tp, idx + 1 - tp, ss[idx]


def _intervals(scores, members, level: float, correction: str):
    s, m = check_scores(scores, members)
    level = check_probability("level", level, open_low=True, open_high=True)
    check_choice("correction", correction, CORRECTIONS)
    tp, fp, thr = _counts(s, m)
    P, N = int(m.sum()), int(m.size - m.sum())
    K = tp.size
    lvl = 1.0 - (1.0 - level) / K if correction == "bonferroni" else level
    with skip_nested():
        tpr_lo, _ = binomial_ci(tp, np.full_like(tp, P), lvl)
        _, fpr_hi = binomial_ci(fp, np.full_like(fp, N), lvl)
    return tp, fp, thr, P, N, K, lvl, np.asarray(tpr_lo, float), np.asarray(fpr_hi, float)


def epsilon_lower_bound(scores, members, *, delta: float = 0.0, level: float = 0.95,
                        correction: str = "bonferroni") -> EpsilonAudit:
    """A ``level`` lower confidence bound on the ε of an (ε, δ)-DP mechanism from an attack's member
    ``scores`` (1-D; higher = "trained with the canary") on runs with (``members`` True) and without the
    canary: max over thresholds of log((TPR_lo − δ)/FPR_hi) and log((1 − FPR_hi − δ)/(1 − TPR_lo)), with
    Clopper–Pearson ends at the per-threshold level that ``correction`` sets (module docstring)."""
    delta = check_probability("delta", delta)
    tp, fp, thr, P, N, K, lvl, tlo, fhi = _intervals(scores, members, level, correction)
    e1 = _ratio_log(tlo - delta, fhi)
    e2 = _ratio_log(1.0 - fhi - delta, 1.0 - tlo)
    best = np.maximum(e1, e2)
    i = int(np.argmax(best))
    eps_lo = float(max(best[i], 0.0))
    form = "none" if best[i] <= 0 else ("tpr/fpr" if e1[i] >= e2[i] else "tnr/fnr")
    eps_hat = float(_implied(np.array([fp[i] / N]), np.array([tp[i] / P]), delta)[0]) if eps_lo > 0 else math.nan
    return EpsilonAudit(eps_lo, eps_hat, float(thr[i]), int(tp[i]), int(fp[i]), P, N, float(tlo[i]), float(fhi[i]),
                        form, K, float(lvl), delta)


def region_excess(scores, members, eps: float, *, delta: float = 0.0, level: float = 0.95,
                  correction: str = "bonferroni") -> float:
    """max over thresholds of TPR_lo − :func:`tpr_bound` (FPR_hi, ε, δ): how far the attack's
    Clopper–Pearson box lies *above* the (ε, δ) region (> 0 exactly when
    :func:`epsilon_lower_bound` exceeds ``eps``; ≤ 0 when the measurements are consistent with it)."""
    eps, delta = _eps_delta(eps, delta)
    _, _, _, _, _, _, _, tlo, fhi = _intervals(scores, members, level, correction)
    with skip_nested():
        return float(np.max(tlo - tpr_bound(fhi, eps, delta)))
