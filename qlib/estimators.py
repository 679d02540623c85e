"""The r_Q^n privacy estimator of a quantized algorithm (paper 001, §3.2 and Algorithm 1).

For a quantizer Q, Theorem 3.3 of {cite}`aubinais2025quantized` says that the membership-inference
security of the quantized algorithm A_Q is of order ``1 - exp(-n r_Q^n (1 + o(1)))`` with

    r_Q^n = (δ_2)² / (2 σ²),   σ² = max_k Λ_kk,   Λ_kk = σ_k² (δ_2 / δ_k)²,

where, for the quantized models θ̄_1, θ̄_2, … sorted by increasing mean loss m_k,
δ_k = m_k − m_1 (loss gaps) and σ_k² = Var(ℓ(θ̄_k, z) − ℓ(θ̄_1, z)) (loss variabilities).
Algorithm 1 estimates these on a validation set from the quantized models met along one training
trajectory (one per epoch). Algebraically r_Q^n = min_{k ≥ 2} δ_k² / (2 σ_k²).

Pitfalls handled here (spec §2):

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

:class:`RQRecorder` computes the same quantity during training for many models and several
quantizers at once (batched over models and quantizers; the loss matrices of one chunk of models
are held in memory and reduced exactly when the chunk finishes, see its docstring). The module
also holds the rank statistics of the synthetic study (Spearman ρ, rank stability over random
subsets of runs, Figures 1 and 7) and the binomial intervals of the baseline MIS estimates.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

__all__ = [
    "RQUndefinedWarning",
    "TrajectoryStats",
    "trajectory_stats",
    "r_q",
    "distinct_rows",
    "RQRecorder",
    "binomial_ci",
    "mis_from_accuracy",
]


class RQUndefinedWarning(RuntimeWarning):
    """Fewer than two distinct quantized models: r_Q^n is undefined (NaN returned)."""


def _as_loss_matrix(losses, name: str = "losses") -> torch.Tensor:
    if isinstance(losses, np.ndarray):
        t = torch.from_numpy(np.asarray(losses, dtype=np.float64))
    elif isinstance(losses, torch.Tensor):
        t = losses.detach().to("cpu", torch.float64)
    elif isinstance(losses, (list, tuple)):
        t = torch.as_tensor(np.asarray(losses, dtype=np.float64))
    else:
        raise TypeError(f"{name} must be a numpy array or torch tensor, got {type(losses).__name__}")
    if t.ndim != 2:
        raise ValueError(
            f"{name} must be 2-D (rows = quantized models in epoch order, columns = validation "
            f"samples), got shape {tuple(t.shape)}"
        )
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
    if ddof not in (0, 1):
        raise ValueError(f"ddof must be 0 or 1, got {ddof!r}")
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
# Streaming over many models and quantizers: the recording callback
# ---------------------------------------------------------------------------------------------
def _rate_from_buffer(B: torch.Tensor, ddof: int = 1, t_block: int = 256):
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


def _fused_rows(x: torch.Tensor, names: Sequence[str]) -> torch.Tensor:
    """All quantizers of ``names`` on the rows of x (N, d) at once: (Q, N, d)
    (:func:`qlib.quantizers.quantize_many`)."""
    from . import quantizers

    return quantizers.quantize_many(names, x)


def quantize_many(model, theta: torch.Tensor, names: Sequence[str], scope: str = "tensor") -> torch.Tensor:
    """Quantize the models θ (N, p) with each quantizer of ``names``: (Q, N, p).

    ``scope="tensor"`` quantizes each tensor of ``model.unflatten`` (weight, bias, …) with its own
    scale/quantile; ``scope="model"`` quantizes the whole flat θ at once (``qlib.quantizers``
    semantics, computed by :func:`_fused_rows`).
    """
    if scope not in ("tensor", "model"):
        raise ValueError(f"scope must be 'tensor' or 'model', got {scope!r}")
    if not isinstance(theta, torch.Tensor) or theta.ndim != 2:
        raise ValueError("theta must be a (N models, p parameters) tensor")
    N = theta.shape[0]
    if scope == "model":
        return _fused_rows(theta, names)
    parts = [_fused_rows(t.reshape(N, -1), names) for t in model.unflatten(theta).values()]
    return torch.cat(parts, dim=2)


def check_quantizer_names(names: Sequence[str]) -> list[str]:
    """Validate quantizer names against ``qlib.quantizers.names()`` (ValueError naming the bad one)."""
    from . import quantizers

    if isinstance(names, str):
        names = [names]
    names = list(names)
    if not names:
        raise ValueError("quantizers must name at least one quantizer")
    known = quantizers.names()
    for nm in names:
        if nm not in known:
            raise ValueError(f"unknown quantizer {nm!r}; known: {', '.join(known)}")
    return names


class RQRecorder:
    """Training callback: r_Q^n (Algorithm 1) for K models × Q quantizers, batched.

    After every epoch (every ``every``-th) the current chunk's parameters are kept; every ``block``
    epochs they are quantized with all quantizers in one fused batched call
    (:func:`quantize_many`), their per-sample losses on each model's own validation set are
    computed in one batched product, and stored in a (T, Q, chunk, n_val)
    buffer; at the chunk's end the exact statistics of :func:`r_q` are computed for every
    (quantizer, model) stream at once (:func:`_rate_from_buffer`) and the buffer is freed.
    Memory: T·Q·chunk·n_val float32 (3000·8·32·128 → 0.4 GB).

    After training: ``r`` (Q, K) r_Q^n (NaN where fewer than two distinct models, with one
    :class:`RQUndefinedWarning` summarising the count), ``delta2`` (Q, K) the gap δ_2,
    ``best_epoch`` and ``binding_epoch`` (Q, K) (1-based epochs of θ̄_1 and of the model attaining
    the minimum), ``n_distinct`` (Q, K) distinct quantized models met, and, with
    ``keep_losses=True``, ``losses`` (T, Q, K, n_val) for small runs.
    """

    def __init__(self, model, names: Sequence[str], X_val: torch.Tensor, y_val: torch.Tensor, *,
                 epochs: int, loss: str = "logistic", scope: str = "tensor", every: int = 1,
                 transform=None, ddof: int = 1, keep_losses: bool = False, device="auto",
                 block: int = 50):
        from . import devices, engine

        self.names = check_quantizer_names(names)
        engine._check_data(X_val, y_val, None, name="X_val")
        if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
            raise ValueError(f"epochs must be a positive int, got {epochs!r}")
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise ValueError(f"every must be a positive int, got {every!r}")
        if X_val.shape[1] < 2:
            raise ValueError(f"X_val needs at least 2 validation samples per model, got {X_val.shape[1]}")
        if loss not in engine.LOSSES:
            raise ValueError(f"loss must be one of {sorted(engine.LOSSES)}, got {loss!r}")
        if scope not in ("tensor", "model"):
            raise ValueError(f"scope must be 'tensor' or 'model', got {scope!r}")
        self.model, self.X_val, self.y_val = model, X_val, y_val
        self.loss, self.scope, self.every, self.transform, self.ddof = loss, scope, every, transform, ddof
        self.device = devices.resolve(device)
        if isinstance(block, bool) or not isinstance(block, int) or block < 1:
            raise ValueError(f"block must be a positive int, got {block!r}")
        self.block = block
        self.epochs = epochs
        self.T = epochs // every
        K, nv = X_val.shape[0], X_val.shape[1]
        Q = len(self.names)
        self.r = np.full((Q, K), np.nan)
        self.delta2 = np.full((Q, K), np.nan)
        self.best_epoch = np.zeros((Q, K), dtype=np.int64)
        self.binding_epoch = np.zeros((Q, K), dtype=np.int64)
        self.n_distinct = np.zeros((Q, K), dtype=np.int64)
        self.keep_losses = keep_losses
        self.losses = torch.empty(self.T, Q, K, nv) if keep_losses else None
        self._buf = None

    # engine.Callback protocol -------------------------------------------------------------
    def on_chunk_start(self, models: slice) -> None:
        from . import engine

        Xv = self.X_val[models].to(self.device, torch.float32)
        if self.transform is not None:
            Xv = self.transform(Xv)
        self._data = self.model.prepare(Xv)
        self._yv = self.y_val[models].to(self.device, torch.float32)
        self._lossfn = engine.LOSSES[self.loss][0]
        k = models.stop - models.start
        self._buf = torch.empty(self.T, len(self.names), k, Xv.shape[1], device=self.device)
        self._thetas = torch.empty(self.block, k, self.model.n_params, device=self.device)
        self._pending = []                                     # buffer rows waiting in _thetas

    def _flush(self) -> None:
        E = len(self._pending)
        if E == 0:
            return
        k, p = self._thetas.shape[1], self._thetas.shape[2]
        thq = quantize_many(self.model, self._thetas[:E].reshape(E * k, p), self.names, self.scope)
        Q = thq.shape[0]
        out = self.model.apply(thq.reshape(Q * E, k, p).to(self._yv.dtype), self._data)  # (QE, k, n)
        L = self._lossfn(out, self._yv).reshape(Q, E, k, -1).transpose(0, 1)
        i0 = self._pending[0]
        self._buf[i0:i0 + E] = L
        self._pending = []

    def on_epoch_end(self, epoch: int, theta: torch.Tensor, models: slice) -> None:
        if epoch % self.every:
            return
        i = epoch // self.every - 1
        if i >= self.T:
            return
        self._thetas[len(self._pending)] = theta
        self._pending.append(i)
        if len(self._pending) == self.block:
            self._flush()

    def on_chunk_end(self, models: slice, theta: torch.Tensor) -> None:
        self._flush()
        Q, k = self._buf.shape[1], self._buf.shape[2]
        if not torch.isfinite(self._buf).all():
            raise ValueError("non-finite validation losses met while recording r_Q^n")
        B = self._buf.reshape(self.T, Q * k, -1)
        r, best, d2, kb, nd = _rate_from_buffer(B, ddof=self.ddof)
        sh = (Q, k)
        self.r[:, models] = r.reshape(sh).cpu().numpy()
        self.delta2[:, models] = d2.reshape(sh).cpu().numpy()
        self.best_epoch[:, models] = ((best + 1) * self.every).reshape(sh).cpu().numpy()
        self.binding_epoch[:, models] = np.where(kb.reshape(sh).cpu().numpy() >= 0,
                                                 (kb.reshape(sh).cpu().numpy() + 1) * self.every, -1)
        self.n_distinct[:, models] = nd.reshape(sh).cpu().numpy()
        if self.keep_losses:
            self.losses[:, :, models] = self._buf.cpu()
        self._buf = None

    def finish(self) -> "RQRecorder":
        """Warn once if some streams had fewer than two distinct quantized models."""
        bad = int(np.isnan(self.r).sum())
        if bad:
            warnings.warn(
                f"r_Q^n is undefined (NaN) for {bad} of {self.r.size} (quantizer, model) pairs: "
                "fewer than two distinct quantized models along the trajectory",
                RQUndefinedWarning, stacklevel=2)
        return self

    def frame(self):
        """Long table: quantizer, model, r_q, delta2, n_distinct, best_epoch."""
        import pandas as pd

        Q, K = self.r.shape
        return pd.DataFrame({
            "quantizer": np.repeat(self.names, K),
            "model": np.tile(np.arange(K), Q),
            "r_q": self.r.ravel(),
            "delta2": self.delta2.ravel(),
            "n_distinct": self.n_distinct.ravel(),
            "best_epoch": self.best_epoch.ravel(),
        })


# ---------------------------------------------------------------------------------------------
# MIS from an attack's accuracy
# ---------------------------------------------------------------------------------------------
def binomial_ci(successes, trials, level: float = 0.95):
    """Clopper–Pearson interval for a binomial proportion (vectorised): (lo, hi) arrays."""
    from scipy import stats

    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    k = np.asarray(successes, dtype=np.float64)
    n = np.asarray(trials, dtype=np.float64)
    if np.any(n < 1) or np.any(k < 0) or np.any(k > n):
        raise ValueError("need 0 <= successes <= trials and trials >= 1")
    a = (1 - level) / 2
    lo = np.where(k > 0, stats.beta.ppf(a, k, n - k + 1), 0.0)
    hi = np.where(k < n, stats.beta.ppf(1 - a, k + 1, n - k), 1.0)
    return lo, hi


def mis_from_accuracy(acc):
    """MIS estimate 2(1 − acc) of an attack of balanced accuracy ``acc`` (Thm A.2, paper 001)."""
    acc = np.asarray(acc, dtype=np.float64)
    if np.any((acc < 0) | (acc > 1)):
        raise ValueError("accuracy must lie in [0, 1]")
    return 2.0 * (1.0 - acc)


# ---------------------------------------------------------------------------------------------
# Rankings of quantizers and their stability with the number of runs (paper 001 Fig. 1 and 7)
# ---------------------------------------------------------------------------------------------
def ranks(values, axis: int = -1) -> np.ndarray:
    """Ranks along ``axis``, 1 = largest value (= most private for r_Q^n and for MIS); ties share
    their average rank (as scipy.stats.rankdata). NaN is ranked last."""
    from scipy import stats

    v = np.asarray(values, dtype=np.float64)
    v = np.where(np.isnan(v), -np.inf, v)
    return stats.rankdata(-v, axis=axis)


def spearman(a, b, axis: int = -1) -> np.ndarray:
    """Spearman ρ between a and b along ``axis`` (vectorised over the other axes).
    NaN where one side is constant."""
    ra, rb = ranks(a, axis), ranks(b, axis)
    ra = ra - ra.mean(axis=axis, keepdims=True)
    rb = rb - rb.mean(axis=axis, keepdims=True)
    num = (ra * rb).sum(axis=axis)
    den = np.sqrt((ra * ra).sum(axis=axis) * (rb * rb).sum(axis=axis))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def run_subsets(n_runs: int, k_run: int, n_subsets: int, seed: int = 0) -> np.ndarray:
    """(n_subsets, k_run) indices: independent random subsets of k_run of the n_runs runs."""
    for nm, v in (("n_runs", n_runs), ("k_run", k_run), ("n_subsets", n_subsets)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{nm} must be an int, got {type(v).__name__}")
    if k_run < 2:
        raise ValueError(f"k_run must be >= 2 (an average needs runs to vary), got {k_run}")
    if k_run > n_runs:
        raise ValueError(f"k_run must be <= n_runs = {n_runs}, got {k_run}")
    if n_subsets < 1:
        raise ValueError(f"n_subsets must be >= 1, got {n_subsets}")
    rng = np.random.default_rng(seed)
    return np.argsort(rng.random((n_subsets, n_runs)), axis=1)[:, :k_run]


def _avg(x, axis, how):
    import warnings as _w

    with _w.catch_warnings():
        _w.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(x, axis=axis) if how == "mean" else np.nanmedian(x, axis=axis)


def rq_rank_stability(r, k_runs, n_subsets: int = 100, how: str = "mean", seed: int = 0):
    """Rank stability of r_Q^n averaged over k_run runs against all runs (Fig. 1 / Fig. 7).

    ``r`` (L, Q, R): r_Q^n per law, quantizer and run. For each k in ``k_runs``: ``n_subsets``
    random subsets of k runs (the same subsets for every law); returns a dict with
    ``spearman`` (len(k_runs), n_subsets, L) against the all-run ranking, ``ranks``
    (len(k_runs), n_subsets, L, Q) and ``full_ranks`` (L, Q).
    """
    if how not in ("mean", "median"):
        raise ValueError(f"how must be 'mean' or 'median', got {how!r}")
    r = np.asarray(r, dtype=np.float64)
    if r.ndim != 3:
        raise ValueError(f"r must be (laws, quantizers, runs), got shape {r.shape}")
    full = _avg(r, 2, how)
    out_s, out_r = [], []
    for i, k in enumerate(k_runs):
        idx = run_subsets(r.shape[2], int(k), n_subsets, seed + i)
        sub = _avg(r[:, :, idx], 3, how)                     # (L, Q, S)
        sub = np.moveaxis(sub, 2, 0)                         # (S, L, Q)
        out_s.append(spearman(sub, full[None], axis=-1))
        out_r.append(ranks(sub, axis=-1))
    return {"spearman": np.stack(out_s), "ranks": np.stack(out_r), "full_ranks": ranks(full, axis=-1)}


def threshold_rank_stability(loss_in, loss_out, full_mis, k_runs, n_subsets: int = 20, seed: int = 0):
    """Rank stability of the loss-threshold MIS estimate with k_run runs (baseline of Fig. 1 / 7).

    ``loss_in``/``loss_out`` (L, Q, R, n); ``full_mis`` (L, Q) the estimate from all runs. Each
    subset of k runs is split in halves: τ fitted on one, accuracy on the other. Returns a dict like
    :func:`rq_rank_stability`.
    """
    from .discriminator import fit_thresholds

    li = np.asarray(loss_in, dtype=np.float64)
    lo = np.asarray(loss_out, dtype=np.float64)
    if li.ndim != 4 or lo.shape[:3] != li.shape[:3]:
        raise ValueError("loss_in and loss_out must be (laws, quantizers, runs, n) with equal first axes")
    L, Q, R, n = li.shape
    full_mis = np.asarray(full_mis, dtype=np.float64)
    if full_mis.shape != (L, Q):
        raise ValueError(f"full_mis must have shape {(L, Q)}, got {full_mis.shape}")
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
    pooled over every leading axis. ``pred_ranks`` (..., L, Q), ``full_ranks`` (L, Q)."""
    pr = np.rint(np.asarray(pred_ranks)).astype(int)
    fr = np.broadcast_to(np.rint(np.asarray(full_ranks)).astype(int), pr.shape)
    Q = pr.shape[-1]
    cm = np.zeros((Q, Q), dtype=np.int64)
    np.add.at(cm, (fr.ravel() - 1, np.clip(pr.ravel(), 1, Q) - 1), 1)
    return cm
