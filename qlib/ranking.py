"""Rankings of quantizers and their stability with the number of runs (paper 001, Figures 1, 2, 7).

Rank 1 = the most private (largest r_Q^n, largest MIS). :func:`spearman` is vectorised over laws;
:func:`rq_rank_stability` and :func:`threshold_rank_stability` re-estimate the ranking from random
subsets of k_run runs and compare it with the all-run ranking (§5.1.2, App. E.2).

**Non-finite values** (the policy of :mod:`qlib.validation`): a NaN or ±inf in the values ranked or
averaged raises a ``ValueError`` naming the argument. ``allow_nonfinite=True`` is for r_Q^n, where both
have a meaning (Algorithm 1): NaN is an undefined r_Q^n (fewer than two distinct quantized models), ranked
last and ignored by :func:`average_runs`; +inf an r_Q^n that no model bounds, ranked first. Every caller in
:mod:`qlib.repro` that ranks r_Q^n passes it.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch

from .discriminator import fit_thresholds
from .validation import (
    check_alloc,
    check_array,
    check_bool,
    check_choice,
    check_int,
    check_int_sequence,
    check_seed,
    nested,
    skip_nested,
)

__all__ = ["ranks", "spearman", "run_subsets", "average_runs", "rq_rank_stability",
           "threshold_rank_stability", "rank_confusion"]


def _axis(axis, ndim: int, name: str = "axis") -> int:
    """An integer axis of an array with ``ndim`` dimensions (negative counts from the end)."""
    return check_int(name, axis, low=-ndim, high=ndim - 1)


def _values(name: str, values, min_ndim: int = 1, allow_nonfinite: bool = False, **kw) -> np.ndarray:
    """A non-empty real array of at least ``min_ndim`` dimensions; NaN (undefined r_Q^n) and ±inf
    refused unless ``allow_nonfinite`` (the module docstring)."""
    allow_nonfinite = check_bool("allow_nonfinite", allow_nonfinite)
    v = check_array(name, values, **{"finite": False, **kw})
    if not allow_nonfinite and not nested() and v.dtype.kind == "f" and v.size and not np.isfinite(v).all():
        raise ValueError(f"{name} must be finite (no NaN or inf); pass allow_nonfinite=True for r_Q^n, where NaN "
                         "(undefined) ranks last and +inf first")
    if v.ndim < min_ndim:
        raise ValueError(f"{name} must have at least {min_ndim} dimension(s), got shape {v.shape}")
    return v


def ranks(values, axis: int = -1, *, allow_nonfinite: bool = False) -> np.ndarray:
    """Ranks along ``axis``, 1 = largest value (= most private for r_Q^n and for MIS); ties share
    their average rank (as scipy.stats.rankdata). NaN/inf raise unless ``allow_nonfinite``: then NaN is
    ranked last and +inf (an r_Q^n that no model bounds) first."""
    from scipy import stats  # deferred: scipy.stats takes ~0.6 s to import

    v = _values("values", values, allow_nonfinite=allow_nonfinite)
    axis = _axis(axis, v.ndim)
    v = np.where(np.isnan(v), -np.inf, v)
    return stats.rankdata(-v, axis=axis)


def spearman(a, b, axis: int = -1, *, allow_nonfinite: bool = False) -> np.ndarray:
    """Spearman ρ between a and b along ``axis`` (vectorised over the other axes).
    NaN where one side is constant. ``a`` and ``b`` are broadcast against each other first (e.g.
    (S, L, Q) against (1, L, Q)), ``axis`` is an axis of the broadcast shape; NaN/inf entries raise
    unless ``allow_nonfinite`` (then ranked as in :func:`ranks`)."""
    a, b = _values("a", a, allow_nonfinite=allow_nonfinite), _values("b", b, allow_nonfinite=allow_nonfinite)
    try:
        shape = np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise ValueError(f"a and b must have broadcastable shapes, got {a.shape} and {b.shape}") from None
    a, b = np.broadcast_to(a, shape), np.broadcast_to(b, shape)
    axis = _axis(axis, len(shape))
    with skip_nested():  # a, b and axis checked above
        ra, rb = ranks(a, axis, allow_nonfinite=True), ranks(b, axis, allow_nonfinite=True)
    ra = ra - ra.mean(axis=axis, keepdims=True)
    rb = rb - rb.mean(axis=axis, keepdims=True)
    num = (ra * rb).sum(axis=axis)
    den = np.sqrt((ra * ra).sum(axis=axis) * (rb * rb).sum(axis=axis))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def run_subsets(n_runs: int, k_run: int, n_subsets: int, seed: int = 0) -> np.ndarray:
    """(n_subsets, k_run) indices: independent random subsets of k_run of the n_runs runs."""
    n_runs = check_int("n_runs", n_runs, low=2)
    k_run = check_int("k_run", k_run, low=2, high=n_runs)   # an average needs runs to vary
    n_subsets = check_int("n_subsets", n_subsets, low=1)
    seed = check_seed("seed", seed)
    check_alloc("n_subsets and n_runs", n_subsets * n_runs, 8 * 2, value=(n_subsets, n_runs),
                what="the random keys of every subset and their order")
    rng = np.random.default_rng(seed)
    return np.argsort(rng.random((n_subsets, n_runs)), axis=1)[:, :k_run]


def average_runs(x, axis: int = -1, how: str = "mean", *, allow_nonfinite: bool = False) -> np.ndarray:
    """Mean or median over ``axis``. NaN/inf raise unless ``allow_nonfinite``: then NaN runs (where r_Q^n
    is undefined) are ignored, silently (NaN where every run is NaN)."""
    check_choice("how", how, ("mean", "median"))
    x = _values("x", x, allow_nonfinite=allow_nonfinite)
    axis = _axis(axis, x.ndim)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(x, axis=axis) if how == "mean" else np.nanmedian(x, axis=axis)


def rq_rank_stability(r, k_runs, n_subsets: int = 100, how: str = "mean", seed: int = 0, *,
                      allow_nonfinite: bool = False):
    """Rank stability of r_Q^n averaged over k_run runs against all runs (Fig. 1 / Fig. 7).

    ``r`` (L, Q, R): r_Q^n per law, quantizer and run (NaN/inf raise unless ``allow_nonfinite``: then
    as in :func:`average_runs` and :func:`ranks`). For each k in ``k_runs``: ``n_subsets``
    random subsets of k runs (the same subsets for every law); returns a dict with
    ``spearman`` (len(k_runs), n_subsets, L) against the all-run ranking, ``ranks``
    (len(k_runs), n_subsets, L, Q) and ``full_ranks`` (L, Q).
    """
    check_choice("how", how, ("mean", "median"))
    r = _values("r (laws, quantizers, runs)", r, allow_nonfinite=allow_nonfinite, ndim=3)
    k_runs = check_int_sequence("k_runs", k_runs, low=2, high=r.shape[2])
    n_subsets = check_int("n_subsets", n_subsets, low=1)
    seed = check_seed("seed", seed)
    ok = True  # r checked above: what follows sees finite values unless they were allowed
    full = average_runs(r, 2, how, allow_nonfinite=ok)
    out_s, out_r = [], []
    for i, k in enumerate(k_runs):
        idx = run_subsets(r.shape[2], int(k), n_subsets, seed + i)
        sub = average_runs(r[:, :, idx], 3, how, allow_nonfinite=ok)   # (L, Q, S)
        sub = np.moveaxis(sub, 2, 0)                         # (S, L, Q)
        out_s.append(spearman(sub, full[None], axis=-1, allow_nonfinite=ok))
        out_r.append(ranks(sub, axis=-1, allow_nonfinite=ok))
    return {"spearman": np.stack(out_s), "ranks": np.stack(out_r), "full_ranks": ranks(full, axis=-1, allow_nonfinite=ok)}


def threshold_rank_stability(loss_in, loss_out, full_mis, k_runs, n_subsets: int = 20, seed: int = 0):
    """Rank stability of the loss-threshold MIS estimate with k_run runs (baseline of Fig. 1 / 7).

    ``loss_in``/``loss_out`` (L, Q, R, n); ``full_mis`` (L, Q) the estimate from all runs. Each
    subset of k runs is split in halves: τ fitted on one, accuracy on the other. Returns a dict like
    :func:`rq_rank_stability`.
    """
    li = check_array("loss_in", loss_in, ndim=4)
    lo = check_array("loss_out", loss_out, ndim=4)
    if lo.shape[:3] != li.shape[:3]:
        raise ValueError("loss_in and loss_out must be (laws, quantizers, runs, n) with equal first axes")
    L, Q, R, n = li.shape
    full_mis = check_array("full_mis", full_mis, ndim=2, low=0.0, high=1.0)
    if full_mis.shape != (L, Q):
        raise ValueError(f"full_mis must have shape {(L, Q)}, got {full_mis.shape}")
    k_runs = check_int_sequence("k_runs", k_runs, low=2, high=R)
    n_subsets = check_int("n_subsets", n_subsets, low=1)
    seed = check_seed("seed", seed)
    out_s, out_r = [], []
    for i, k in enumerate(k_runs):
        idx = run_subsets(R, int(k), n_subsets, seed + i)   # (S, k)
        h = int(k) // 2
        mis = np.empty((n_subsets, L, Q))
        for s in range(n_subsets):
            fi, ev = idx[s, :h], idx[s, h:]
            a_in = torch.from_numpy(li[:, :, fi].reshape(L * Q, -1))
            a_out = torch.from_numpy(lo[:, :, fi].reshape(L * Q, -1))
            tau = fit_thresholds(a_in, a_out).numpy().reshape(L, Q, 1, 1)
            acc = 0.5 * ((li[:, :, ev] < tau).mean(axis=(2, 3)) + (lo[:, :, ev] >= tau).mean(axis=(2, 3)))
            mis[s] = np.clip(2 * (1 - acc), 0, 1)
        out_s.append(spearman(mis, full_mis[None], axis=-1))
        out_r.append(ranks(mis, axis=-1))
    return {"spearman": np.stack(out_s), "ranks": np.stack(out_r), "full_ranks": ranks(full_mis, axis=-1)}


def rank_confusion(pred_ranks, full_ranks) -> np.ndarray:
    """(Q, Q) counts: row = rank with all runs, column = rank with k runs (ranks rounded),
    pooled over every leading axis. ``pred_ranks`` (..., L, Q), ``full_ranks`` (L, Q): ranks in
    [1, Q] (average ranks of ties are rounded)."""
    full_ranks = check_array("full_ranks", full_ranks, ndim=2)
    Q = full_ranks.shape[-1]
    pred_ranks = _values("pred_ranks", pred_ranks, 2, finite=True, low=1, high=Q)
    if pred_ranks.shape[-2:] != full_ranks.shape:
        raise ValueError(f"pred_ranks must have shape (..., {full_ranks.shape[0]}, {Q}) like full_ranks, got "
                         f"{pred_ranks.shape}")
    if full_ranks.min() < 1 or full_ranks.max() > Q:
        raise ValueError(f"full_ranks must hold ranks in [1, {Q}]")
    pr = np.rint(pred_ranks).astype(int)
    fr = np.broadcast_to(np.rint(full_ranks).astype(int), pr.shape)
    cm = np.zeros((Q, Q), dtype=np.int64)
    np.add.at(cm, (fr.ravel() - 1, np.clip(pr.ravel(), 1, Q) - 1), 1)
    return cm
