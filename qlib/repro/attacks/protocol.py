"""The leave-out attack protocol that chapters ``attacks/02`` (the synthetic study) and ``attacks/03``
(the molecular tasks) share: K models of one family trained at once on complementary halves of a pool
(:func:`qlib.attacks.shadow.paired_keep`), split into two halves of whole complementary pairs; every model
of one half is a **target** whose **shadows** are the other half (LiRA's leave-out protocol, both ways,
{cite:p}`carlini2022lira`).

* :data:`ATTACKS` — the practical attacks, in table order: the global loss threshold
  (:func:`qlib.attacks.threshold.loss_scores`), LiRA offline (one-sided, one global variance), LiRA online
  with one global variance (the reference code's choice for few shadows) and with per-example variances (the
  reference code's default) (:mod:`qlib.attacks.lira`);
* :func:`halves` — which half each model is in;
* :func:`attack_scores` — every attack's member scores of every target, from the binary models'
  logit-scaled confidences φ = (2y − 1)·f(x) (:func:`qlib.attacks.shadow.binary_scores`);
* :func:`finite_scores` — an attack's scores made finite for the ROC (a per-example variance of zero,
  where every shadow agrees, gives 0/0 or ±inf);
* :func:`percentile_interval` — the percentile bootstrap interval both chapters report;
* :func:`held_out_correct` — the correct out-of-fold predictions per target of thresholds fitted on the
  other fold of targets (so the balanced accuracy is unbiased, at most ½ + Δ_n/2 by Theorem 3.1 of
  paper 003).
"""

from __future__ import annotations

import warnings

import numpy as np

from qlib.attacks import lira, threshold
from qlib.validation import check_array, check_bool, check_int, check_probability, nested

__all__ = ["ATTACKS", "halves", "finite_scores", "attack_scores", "held_out_correct", "percentile_interval"]

#: the practical attacks of the protocol, in table order
ATTACKS = ("global loss threshold", "LiRA offline (one-sided)", "LiRA online (fixed variance)",
           "LiRA online (per-example variance)")


def halves(K: int) -> np.ndarray:
    """(K,) 0/1: which half each model is in; halves made of whole complementary pairs (2j, 2j + 1), so
    that with :func:`qlib.attacks.shadow.paired_keep` every pool example is *in* exactly half of each half.
    ``K`` a multiple of 4, ≥ 4."""
    K = check_int("K", K, low=4)
    if K % 4:
        raise ValueError(f"K must be a multiple of 4 (two halves of complementary pairs), got {K}")
    return (np.arange(K) // 2) % 2


def finite_scores(s) -> np.ndarray:
    """An attack's scores made finite for the ROC: NaN (0/0 of a zero variance: every shadow agrees, the
    attack has no information) → one shared value below every finite score; ±inf → just beyond the
    finite range (their order kept). Finite input is returned unchanged."""
    s = check_array("s", s, finite=False)
    ok = np.isfinite(s)
    if ok.all():
        return s
    lo, hi = (float(s[ok].min()), float(s[ok].max())) if ok.any() else (0.0, 0.0)
    span = max(hi - lo, 1.0)
    out = s.copy()
    out[np.isposinf(s)] = hi + span
    out[np.isneginf(s)] = lo - span
    out[np.isnan(s)] = lo - 2 * span
    return out


def attack_scores(phi, keep, half=None) -> np.ndarray:
    """(P, K, N) member scores of every attack of :data:`ATTACKS` on every target, the other half as its
    shadows. ``phi`` (K, N) the K models' logit-scaled confidences on the N pool examples, ``keep`` (K, N)
    boolean (which examples each model trained on), ``half`` (K,) 0/1 (default :func:`halves`). May hold
    NaN/±inf (:func:`finite_scores`)."""
    phi = check_array("phi", phi, ndim=2)
    K, N = phi.shape
    keep = np.asarray(keep)
    if keep.dtype.kind != "b" or keep.shape != (K, N):
        raise ValueError(f"keep must be a boolean array of phi's shape {(K, N)}, got {keep.dtype} {keep.shape}")
    half = halves(K) if half is None else np.asarray(half)
    if half.shape != (K,) or not np.isin(half, (0, 1)).all() or half.min() == half.max():
        raise ValueError(f"half must be a (K = {K},) array of 0/1 with both halves present")
    out = np.empty((len(ATTACKS), K, N))
    out[0] = threshold.loss_scores(np.logaddexp(0.0, -phi))
    with np.errstate(all="ignore"):
        for h in (0, 1):
            tgt, sh = half == h, half != h
            out[1, tgt] = lira.lira_offline(phi[tgt], phi[sh], keep[sh], fix_variance=True, tail="one-sided")
            out[2, tgt] = lira.lira_online(phi[tgt], phi[sh], keep[sh], fix_variance=True)
            out[3, tgt] = lira.lira_online(phi[tgt], phi[sh], keep[sh], fix_variance=False)
    return out


def held_out_correct(scores, keep) -> np.ndarray:
    """(K,) correct out-of-fold predictions per target among its N pairs: thresholds fitted
    (:func:`qlib.attacks.threshold.threshold_attack`) on the even-numbered targets' pairs, applied to the
    odd ones', and vice versa. ``scores`` (K, N) finite, ``keep`` (K, N) boolean, K ≥ 2."""
    scores = check_array("scores", scores, ndim=2)
    keep = np.asarray(keep)
    if keep.dtype.kind != "b" or keep.shape != scores.shape:
        raise ValueError(f"keep must be a boolean array of scores' shape {scores.shape}, got {keep.dtype} {keep.shape}")
    K = scores.shape[0]
    if K < 2:
        raise ValueError(f"scores must hold at least 2 targets (rows) for two folds, got {K}")
    fold = np.arange(K) % 2
    correct = np.empty(K, dtype=np.int64)
    for f in (0, 1):
        cal, ev = fold != f, fold == f
        _, pred = threshold.threshold_attack(scores[cal].ravel(), keep[cal].ravel(), scores[ev])
        correct[ev] = (pred == keep[ev]).sum(axis=1)
    return correct


def percentile_interval(x, level: float = 0.95, axis: int = 0, *, allow_nonfinite: bool = False):
    """``(lo, hi)``: the ``(1 − level)/2`` and ``(1 + level)/2`` quantiles of bootstrap resamples ``x`` along
    ``axis``. A NaN/inf resample raises (naming ``x``) unless ``allow_nonfinite``, for resampled statistics
    that can be undefined (a Spearman ρ of a constant resample): NaN resamples are then ignored (an
    all-NaN slice gives NaN) and ±inf ones are quantiles like any other."""
    x = check_array("x", x, finite=False)
    if not check_bool("allow_nonfinite", allow_nonfinite) and not nested() and not np.isfinite(x).all():
        raise ValueError("x must be finite (no NaN or inf); pass allow_nonfinite=True where a resampled statistic "
                         "can be undefined (NaN resamples are then ignored)")
    level = check_probability("level", level, open_low=True, open_high=True)
    axis = check_int("axis", axis, low=-x.ndim, high=x.ndim - 1) if x.ndim else check_int("axis", axis, low=0, high=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return (np.nanquantile(x, (1 - level) / 2, axis=axis), np.nanquantile(x, (1 + level) / 2, axis=axis))
