"""How well a membership-inference attack does: ROC curve, AUC, TPR at a fixed low FPR, balanced
accuracy, advantage, and bootstrap intervals — for any attack that gives each (model, example) pair a
**member score** (higher = "more likely a member") and for the 0/1 predictions of a fitted threshold.

Conventions (the same for every attack of :mod:`qlib.attacks`):

* ``scores`` — a 1-D float array, one entry per evaluated pair; ``members`` — the truth, a boolean
  array of the same length (0/1 integers accepted) holding both classes. A pair is predicted a member
  when its score is ``>= threshold``.
* :func:`roc_curve` keeps *every* distinct threshold (scikit-learn's ``drop_intermediate=False``): the
  curve starts at (0, 0) (threshold +inf) and ends at (1, 1); tied scores move together. Dropping
  collinear points (scikit-learn's default) leaves the AUC unchanged but can lower a TPR read at a
  fixed FPR, so it is never done here.
* :func:`auc` is the trapezoid area of that curve, which equals the Mann–Whitney probability
  P(score of a member > score of a non-member) + ½ P(tie) (tests check both, and scikit-learn).
* :func:`tpr_at_fpr` is the largest TPR among the ROC points with FPR ≤ ``max_fpr`` (a test of level
  ``max_fpr``, the Neyman–Pearson reading). LiRA's reference code {cite:p}`carlini2022lira` reads the TPR
  at the last point with FPR *strictly* below 0.1 %; the two differ only when a point sits exactly at
  the level. With N non-members, an FPR of 0.1 % needs N ≥ 1000 to allow any false positive.
* :func:`best_balanced_accuracy` is max over thresholds of ½(TPR + 1 − FPR) — LiRA's reference code's
  "acc", *optimistic*: its threshold is chosen on the scores it is measured on. :func:`advantage`
  = max(TPR − FPR) = 2·best − 1. :func:`balanced_accuracy` measures fixed 0/1 predictions (a threshold
  fitted elsewhere, :func:`best_threshold`): unbiased, and at the balanced prior ν = ½ it is the
  accuracy of paper 003's game, bounded by ½ + Δ_n/2 (Theorem 3.1 of {cite:p}`aubinais2024fundamental`).
* :func:`bootstrap` — percentile intervals of any metric, resampling members and non-members apart
  (their counts fixed), or whole groups (e.g. all pairs of one target model, which share the model:
  the honest choice when pairs are correlated).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from qlib.validation import check_array, check_callable, check_int, check_probability, check_seed, skip_nested

__all__ = ["check_scores", "check_members", "roc_curve", "auc", "tpr_at_fpr", "best_balanced_accuracy",
           "best_threshold", "advantage", "balanced_accuracy", "bootstrap", "evaluate", "AttackMetrics",
           "LOW_FPRS"]

#: the two low false-positive rates every summary reports (0.1 % and 1 %)
LOW_FPRS = (0.001, 0.01)


def check_members(name: str, members, n: int | None = None) -> np.ndarray:
    """The membership truth: a 1-D boolean array (0/1 integers accepted), of length ``n`` when given,
    holding at least one member and one non-member."""
    n = check_int("n", n, low=1, allow_none=True)
    arr = np.asarray(members) if not isinstance(members, (str, bytes)) and members is not None else None
    if arr is None or arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be a boolean array (True = member), got {type(members).__name__}")
    if arr.dtype.kind != "b":
        if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} must be a boolean array (True = member), got non-finite values")
        if not np.isin(arr, (0, 1)).all():
            raise ValueError(f"{name} must be a boolean array (True = member) or 0/1 values, got other values")
        arr = arr.astype(bool)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if n is not None and arr.size != n:
        raise ValueError(f"{name} must have one entry per score ({n}), got {arr.size}")
    if not arr.any() or arr.all():
        raise ValueError(f"{name} must hold both members and non-members, got {int(arr.sum())} of {arr.size}")
    return arr


def check_scores(scores, members, scores_name: str = "scores", members_name: str = "members"):
    """``(scores, members)``: a finite non-empty 1-D float64 array and a boolean array of the same
    length holding both classes (:func:`check_members`)."""
    s = check_array(scores_name, scores, ndim=1)
    m = check_members(members_name, members, s.size)
    return s, m


def _roc(s: np.ndarray, m: np.ndarray):
    """fpr, tpr, thresholds over every distinct threshold (descending), starting at (0, 0, +inf)."""
    order = np.argsort(-s, kind="stable")
    ss, ms = s[order], m[order]
    idx = np.r_[np.flatnonzero(np.diff(ss)), ss.size - 1]
    tps = np.cumsum(ms)[idx]
    fps = idx + 1 - tps
    P, N = int(ms.sum()), ms.size - int(ms.sum())
    fpr = np.r_[0.0, fps / N]
    tpr = np.r_[0.0, tps / P]
    return fpr, tpr, np.r_[np.inf, ss[idx]]


def roc_curve(scores, members):
    """``(fpr, tpr, thresholds)``: the ROC curve of member scores, one point per distinct threshold
    (predict "member" iff score ≥ threshold), from (0, 0) at threshold +inf to (1, 1)."""
    s, m = check_scores(scores, members)
    return _roc(s, m)


def _auc(fpr, tpr) -> float:
    return float(np.sum(np.diff(fpr) * (tpr[1:] + tpr[:-1]) / 2))


def auc(scores, members) -> float:
    """Area under the ROC curve (= P(member score > non-member score) + ½ P(tie))."""
    return _auc(*roc_curve(scores, members)[:2])


def _tpr_at(fpr, tpr, level: float) -> float:
    return float(tpr[fpr <= level + 1e-15].max())


def tpr_at_fpr(scores, members, max_fpr: float) -> float:
    """The largest TPR of a threshold whose FPR is ≤ ``max_fpr`` (in [0, 1])."""
    max_fpr = check_probability("max_fpr", max_fpr)
    fpr, tpr, _ = roc_curve(scores, members)
    return _tpr_at(fpr, tpr, max_fpr)


def best_threshold(scores, members) -> float:
    """The threshold τ of highest balanced accuracy ½(TPR + 1 − FPR) on these scores ("member" iff
    score ≥ τ; the highest such τ when several tie; +inf predicts no member)."""
    fpr, tpr, thr = roc_curve(scores, members)
    return float(thr[int(np.argmax(tpr - fpr))])


def best_balanced_accuracy(scores, members) -> float:
    """max over thresholds of ½(TPR + 1 − FPR): optimistic (the threshold is chosen on these scores)."""
    fpr, tpr, _ = roc_curve(scores, members)
    return float(0.5 + 0.5 * np.max(tpr - fpr))


def advantage(scores, members) -> float:
    """max over thresholds of TPR − FPR (= 2·best balanced accuracy − 1), in [0, 1]."""
    fpr, tpr, _ = roc_curve(scores, members)
    return float(np.max(tpr - fpr))


def balanced_accuracy(predictions, members) -> float:
    """½(TPR + TNR) of fixed 0/1 ``predictions`` (True = "member") against ``members``."""
    pred = _check_predictions(predictions)
    m = check_members("members", members, pred.size)
    return float(0.5 * (pred[m].mean() + (~pred[~m]).mean()))


def _check_predictions(predictions) -> np.ndarray:
    arr = np.asarray(predictions) if not isinstance(predictions, (str, bytes)) and predictions is not None else None
    if arr is None or arr.dtype.kind not in "biu":
        raise TypeError(f"predictions must be a boolean array (True = member), got "
                        f"{type(predictions).__name__}" + ("" if arr is None else f" of dtype {arr.dtype}"))
    if arr.dtype.kind != "b":
        if not np.isin(arr, (0, 1)).all():
            raise ValueError("predictions must be a boolean array or 0/1 values, got other values")
        arr = arr.astype(bool)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"predictions must be a non-empty 1-D array, got shape {arr.shape}")
    return arr


def _all_metrics(s, m, pred=None) -> dict:
    fpr, tpr, _ = _roc(s, m)
    out = {"auc": _auc(fpr, tpr), "best_accuracy": float(0.5 + 0.5 * np.max(tpr - fpr)),
           "advantage": float(np.max(tpr - fpr))}
    for a in LOW_FPRS:
        out[f"tpr@{a:g}"] = _tpr_at(fpr, tpr, a)
    if pred is not None:
        out["accuracy"] = float(0.5 * (pred[m].mean() + (~pred[~m]).mean()))
    return out


def _resample(rng, m: np.ndarray, groups: np.ndarray | None, reps: int):
    """Index arrays of ``reps`` bootstrap samples: members and non-members apart, or whole groups."""
    if groups is None:
        pos, neg = np.flatnonzero(m), np.flatnonzero(~m)
        for _ in range(reps):
            yield np.r_[pos[rng.integers(0, pos.size, pos.size)], neg[rng.integers(0, neg.size, neg.size)]]
        return
    uniq, inv = np.unique(groups, return_inverse=True)
    order = np.argsort(inv, kind="stable")
    starts = np.r_[0, np.cumsum(np.bincount(inv))]
    members_of = [order[starts[g]:starts[g + 1]] for g in range(uniq.size)]
    for _ in range(reps):
        pick = rng.integers(0, uniq.size, uniq.size)
        yield np.concatenate([members_of[g] for g in pick])


def _check_groups(groups, n: int):
    if groups is None:
        return None
    g = check_array("groups", groups, ndim=1, dtype="int")
    if g.size != n:
        raise ValueError(f"groups must have one entry per score ({n}), got {g.size}")
    if np.unique(g).size < 2:
        raise ValueError("groups must hold at least two groups to resample")
    return g


def bootstrap(metric: Callable, scores, members, *, reps: int = 200, level: float = 0.95, seed: int = 0,
              groups=None) -> tuple[float, float, float]:
    """``(estimate, lo, hi)``: ``metric(scores, members)`` and its percentile bootstrap interval at
    ``level`` over ``reps`` resamples — members and non-members resampled apart (their counts kept),
    or, with ``groups`` (an integer label per pair), whole groups (a resample without both classes is
    redrawn). ``metric`` is any of this module's functions of ``(scores, members)`` or your own."""
    check_callable("metric", metric)
    s, m = check_scores(scores, members)
    reps = check_int("reps", reps, low=1)
    level = check_probability("level", level, open_low=True, open_high=True)
    seed = check_seed("seed", seed)
    g = _check_groups(groups, s.size)
    rng = np.random.default_rng(seed)
    with skip_nested():
        est = float(metric(s, m))
        vals = []
        for idx in _resample(rng, m, g, reps):
            mm = m[idx]
            if mm.all() or not mm.any():
                continue
            vals.append(float(metric(s[idx], mm)))
    if not vals:
        raise ValueError("groups: no bootstrap resample held both members and non-members")
    lo, hi = np.quantile(vals, [(1 - level) / 2, (1 + level) / 2])
    return est, float(lo), float(hi)


@dataclass(frozen=True)
class AttackMetrics:
    """One attack's summary: each metric's value and, when bootstrapped, its interval (``lo``/``hi``,
    dicts keyed like ``values``; empty otherwise). Keys: ``auc``, ``best_accuracy`` (optimistic),
    ``advantage``, ``tpr@0.001``, ``tpr@0.01`` and, when predictions were given, ``accuracy`` (of the
    fixed predictions: the unbiased one)."""

    values: dict
    lo: dict
    hi: dict
    n_members: int
    n_nonmembers: int

    def row(self, prefix: str = "") -> dict:
        """A flat dict: ``<key>``, ``<key>_lo``, ``<key>_hi`` (a table row)."""
        if not isinstance(prefix, str):
            raise TypeError(f"prefix must be a string, got {type(prefix).__name__}")
        out = {f"{prefix}{k}": v for k, v in self.values.items()}
        for k in self.lo:
            out[f"{prefix}{k}_lo"], out[f"{prefix}{k}_hi"] = self.lo[k], self.hi[k]
        return out


def evaluate(scores, members, predictions=None, *, reps: int = 0, level: float = 0.95, seed: int = 0,
             groups=None) -> AttackMetrics:
    """Every metric of an attack at once (one ROC curve per resample): AUC, optimistic best balanced
    accuracy, advantage, TPR at 0.1 % and 1 % FPR and — with ``predictions`` (0/1, e.g. a threshold
    fitted on other pairs) — their balanced accuracy. ``reps`` > 0 adds percentile bootstrap intervals
    (see :func:`bootstrap`; ``groups`` resamples whole groups)."""
    s, m = check_scores(scores, members)
    pred = None if predictions is None else _check_predictions(predictions)
    if pred is not None and pred.size != s.size:
        raise ValueError(f"predictions must have one entry per score ({s.size}), got {pred.size}")
    reps = check_int("reps", reps, low=0)
    level = check_probability("level", level, open_low=True, open_high=True)
    seed = check_seed("seed", seed)
    g = _check_groups(groups, s.size)
    values = _all_metrics(s, m, pred)
    lo, hi = {}, {}
    if reps:
        rng = np.random.default_rng(seed)
        boot = []
        for idx in _resample(rng, m, g, reps):
            mm = m[idx]
            if mm.all() or not mm.any():
                continue
            boot.append(_all_metrics(s[idx], mm, None if pred is None else pred[idx]))
        for k in values:
            v = np.array([b[k] for b in boot])
            lo[k], hi[k] = (float(x) for x in np.quantile(v, [(1 - level) / 2, (1 + level) / 2]))
    return AttackMetrics(values, lo, hi, int(m.sum()), int((~m).sum()))
