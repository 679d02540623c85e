"""The r_Q^n privacy estimator of a quantized algorithm (paper 001, §3.2 and Algorithm 1).

For a quantizer Q, Theorem 3.3 of {cite:p}`aubinais2025quantized` says that the membership-inference
security of the quantized algorithm A_Q is of order ``1 - exp(-n r_Q^n (1 + o(1)))`` with

    r_Q^n = (δ_2)² / (2 σ²),   σ² = max_k Λ_kk,   Λ_kk = σ_k² (δ_2 / δ_k)²,

where, for the quantized models θ̄_1, θ̄_2, … sorted by increasing mean loss m_k,
δ_k = m_k − m_1 (loss gaps) and σ_k² = Var(ℓ(θ̄_k, z) − ℓ(θ̄_1, z)) (loss variabilities).
Algorithm 1 estimates these on a validation set from the quantized models met along one training
trajectory (one per epoch). Algebraically r_Q^n = min_{k ≥ 2} δ_k² / (2 σ_k²).

Pitfalls handled here:

* **Duplicates.** Θ̄ is a set, but many epochs give the *same* quantized model (Sign, ternary), with
  δ_k = σ_k = 0 and a 0/0 in Algorithm 1. Identical models are kept once: :func:`r_q` removes
  identical rows of the loss matrix (identical θ̄ on the same validation set give identical rows).
* **Fewer than two distinct models**: r_Q^n is undefined; NaN is returned with a
  :class:`RQUndefinedWarning`.
* **Non-finite losses**: a ``ValueError`` (a NaN would silently poison the ranking).
* A distinct model with the same mean loss as θ̄_1 (δ_2 = 0, σ_2 > 0) gives r_Q^n = 0; a model
  whose loss differs from θ̄_1 by a constant (σ_k = 0 < δ_k) contributes +∞ (it never binds).

Variances use the unbiased estimator (``ddof=1``) as ``torch.var`` does by default; the paper does
not say which (a parameter).

:func:`batched_rates` is the same computation for many trajectories at once (a (T, S, n) loss
buffer); :class:`qlib.recorder.RQRecorder` feeds it during training.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import torch

from .validation import check_int, check_tensor

__all__ = [
    "RQUndefinedWarning",
    "TrajectoryStats",
    "trajectory_stats",
    "r_q",
    "distinct_rows",
    "batched_rates",
]


class RQUndefinedWarning(RuntimeWarning):
    """Fewer than two distinct quantized models: r_Q^n is undefined (NaN returned)."""


def check_ddof(ddof) -> int:
    """``ddof`` of the variances σ_k²: 0 (biased) or 1 (unbiased, the default) — the only two the
    estimator uses; anything else (2, 1.0, True, NaN) is an error naming ``ddof``."""
    return check_int("ddof", ddof, low=0, high=1)


def _as_loss_matrix(losses, name: str = "losses") -> torch.Tensor:
    t = check_tensor(name, losses, ndim=2, finite=False)
    t = t.detach().to("cpu", torch.float64)
    if t.shape[0] < 1 or t.shape[1] < 2:
        raise ValueError(
            f"{name} needs at least 1 row and 2 columns (validation samples) to estimate a "
            f"variance, got shape {tuple(t.shape)}"
        )
    if not torch.isfinite(t).all():
        bad = int((~torch.isfinite(t)).sum())
        raise ValueError(f"{name} contains {bad} non-finite value(s); losses must be finite")
    return t


def distinct_rows(losses) -> np.ndarray:
    """Indices (increasing) of the first occurrence of each distinct row of ``losses``."""
    t = _as_loss_matrix(losses)
    uniq, inverse = torch.unique(t, dim=0, return_inverse=True)
    rows = torch.arange(t.shape[0])
    first = torch.full((uniq.shape[0],), t.shape[0], dtype=torch.long)
    first = first.scatter_reduce(0, inverse, rows, reduce="amin")
    return torch.sort(first).values.numpy()


@dataclass(frozen=True)
class TrajectoryStats:
    """Per-k quantities of Algorithm 1 over the *distinct* quantized models, sorted by mean loss.

    ``index[k]`` is the row (epoch) of the input that holds the k-th best distinct model (k = 0 is
    θ̄_1). ``delta[0] = sigma2[0] = 0``; ``lam[0]`` is NaN (Λ_11 is not defined).
    ``argmax_k`` is the 1-based rank k ≥ 2 maximising Λ_kk (the binding model), or -1 if undefined.
    """

    index: np.ndarray
    mean: np.ndarray
    delta: np.ndarray
    sigma2: np.ndarray
    lam: np.ndarray
    argmax_k: int
    r_q: float
    n_rows: int

    @property
    def n_distinct(self) -> int:
        return int(self.index.size)


def trajectory_stats(losses, ddof: int = 1) -> TrajectoryStats:
    """δ_k, σ_k², Λ_kk, argmax_k Λ_kk and r_Q^n of Algorithm 1 (paper 001) from a loss matrix.

    ``losses``: (epochs, n_val) per-sample validation losses of the quantized model met at each
    epoch, in epoch order (numpy array or torch tensor). Identical rows are kept once.
    """
    ddof = check_ddof(ddof)
    t = _as_loss_matrix(losses)
    keep = torch.from_numpy(distinct_rows(t))
    d = t[keep]
    means = d.mean(dim=1)
    order = torch.argsort(means, stable=True)
    d, means, idx = d[order], means[order], keep[order]
    K = d.shape[0]
    delta = means - means[0]
    sigma2 = torch.var(d - d[0], dim=1, correction=ddof)
    lam = torch.full((K,), float("nan"), dtype=torch.float64)
    if K < 2:
        warnings.warn(
            f"r_Q^n is undefined: only {K} distinct quantized model(s) among {t.shape[0]} rows",
            RQUndefinedWarning,
            stacklevel=2,
        )
        return TrajectoryStats(idx.numpy(), means.numpy(), delta.numpy(), sigma2.numpy(),
                               lam.numpy(), -1, float("nan"), int(t.shape[0]))
    d2 = delta[1]
    rest = delta[1:]
    # Λ_kk = σ_k² (δ_2/δ_k)²; where δ_k = 0 (then δ_2 = 0 too) the ratio is taken as 1.
    ratio = torch.where(rest > 0, d2 / torch.where(rest > 0, rest, torch.ones_like(rest)),
                        torch.ones_like(rest))
    lam[1:] = sigma2[1:] * ratio**2
    lmax = float(lam[1:].max())
    k_star = int(torch.argmax(lam[1:])) + 2
    if lmax == 0.0:
        r = math.inf  # every distinct model differs from θ̄_1 by a positive constant
        k_star = -1
    else:
        r = float(d2) ** 2 / (2.0 * lmax)
    return TrajectoryStats(idx.numpy(), means.numpy(), delta.numpy(), sigma2.numpy(),
                           lam.numpy(), k_star, r, int(t.shape[0]))


def r_q(losses, ddof: int = 1) -> float:
    """r_Q^n of Algorithm 1 (paper 001) from one trajectory's validation-loss matrix.

    ``losses``: (epochs, n_val), rows = quantized models met along one trajectory in epoch order,
    numpy array or torch tensor. Returns a float; NaN (with :class:`RQUndefinedWarning`) when fewer
    than two distinct models remain after removing identical rows; ``ValueError`` on non-finite
    losses or a wrong shape.
    """
    return trajectory_stats(losses, ddof=ddof).r_q


# ---------------------------------------------------------------------------------------------
# Many trajectories at once (the reduction of the streaming recorder)
# ---------------------------------------------------------------------------------------------
def batched_rates(B: torch.Tensor, ddof: int = 1, t_block: int = 256):
    """Exact Algorithm-1 statistics of many trajectories at once.

    ``B`` (T, S, n): per-sample validation losses of S trajectories (streams) over T epochs.
    Returns r (S,) float64 (NaN where < 2 distinct), best epoch (S,), δ_2 (S,), the epoch of the
    binding model argmin_k δ_k²/(2σ_k²) (S,), and the number of distinct loss rows (S,).

    Per stream, θ̄_1 is the first epoch of smallest mean loss (as the stable sort of
    :func:`trajectory_stats`), copies of θ̄_1 (rows equal to it) are dropped, and
    r = min_k δ_k²/(2σ_k²) over the remaining rows — copies of other models repeat a term and
    leave the minimum unchanged, so this equals :func:`r_q` on each stream's matrix (the loss
    differences and their variances are computed in the buffer's dtype, float32: relative
    agreement ~1e-5; means and the choice of θ̄_1 are exact, in float64).
    """
    B = check_tensor("B", B, ndim=3, convert=False)
    ddof = check_ddof(ddof)
    t_block = check_int("t_block", t_block, low=1)
    T, S, n = B.shape
    dev = B.device
    m = B.sum(dim=-1, dtype=torch.float64) / n                       # (T, S)
    best = torch.argmin(m, dim=0)                                    # first minimum
    ar = torch.arange(S, device=dev)
    L1 = B[best, ar]                                                 # (S, n)
    m1 = m[best, ar]
    r = torch.full((S,), math.inf, dtype=torch.float64, device=dev)
    d2 = torch.full((S,), math.inf, dtype=torch.float64, device=dev)
    kbind = torch.full((S,), -1, dtype=torch.long, device=dev)
    any_other = torch.zeros(S, dtype=torch.bool, device=dev)
    proj = torch.randn(n, generator=torch.Generator().manual_seed(12345)).to(dev, B.dtype)
    hashes = torch.empty(T, S, dtype=torch.float64, device=dev)
    for t0 in range(0, T, t_block):
        blk = B[t0:t0 + t_block]
        dup = (blk == L1).all(dim=-1)                                # (t, S)
        v = (blk - L1).var(dim=-1, correction=ddof).double()        # two-pass variance
        d = m[t0:t0 + t_block] - m1
        term = torch.where(v > 0, d * d / (2 * torch.where(v > 0, v, torch.ones_like(v))),
                           torch.where(d != 0, torch.full_like(d, math.inf), torch.zeros_like(d)))
        term = torch.where(dup, torch.full_like(term, math.inf), term)
        bmin, barg = term.min(dim=0)
        better = bmin < r
        kbind = torch.where(better, barg + t0, kbind)
        r = torch.minimum(r, bmin)
        d2 = torch.minimum(d2, torch.where(dup, torch.full_like(d, math.inf), d).min(dim=0).values)
        any_other |= (~dup).any(dim=0)
        hashes[t0:t0 + t_block] = (blk @ proj).double()
    r = torch.where(any_other, r, torch.full_like(r, math.nan))
    d2 = torch.where(any_other, d2, torch.full_like(d2, math.nan))
    hs = torch.sort(hashes, dim=0).values
    n_distinct = 1 + (hs[1:] != hs[:-1]).sum(dim=0)
    return r, best, d2, kbind, n_distinct
