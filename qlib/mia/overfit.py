"""Overfitting induces insecurity (paper 003 §4, App. B and F; Simulation 1, Figure 1).

* Prop. 4.2: if the mean training loss is ≤ εα, at least a fraction 1 − α of the per-sample losses
  are ≤ ε (a deterministic counting fact; :func:`fraction_below`).
* Theorem 4.3(i), Eq. 6: Δ_n ≥ P(l_θ̂(z_1) ≤ ε) − P(l_θ̂(z_0) ≤ ε) — the advantage of the
  loss-threshold attack; estimated by training/validation fractions (:func:`eq6_lower_bound`).
* Example 4.5 (least squares with d ≥ n interpolates, Δ_n = 1) and its d < n counterpart
  (:func:`ols_threshold_game`).
* Simulation 1 (:func:`train_overfit_mlp`): 2-layer ReLU network, width 4096, on y = sin(π βᵀx) + ζ
  with x uniform on S^{d−1}, full-batch Adam (lr 0.1), per-iteration fractions of training and
  validation points with squared loss ≤ ε; several seeds are trained at once as one batched model.
* Prop. B.1 (App. B.2): Δ_n ≥ P(max_{i≠j} |x_iᵀx_j| ≤ (s+1)/(3n) − 1) for x uniform on √s·S^{s−1};
  P(E) by Monte Carlo through the Bartlett decomposition of Wishart(s, I_n) (:func:`prob_event_E`).
  The proof's step P(E) ≥ 1 − s^{3 − ln(s)/4} under n ≤ (s+1)/(3(√(s ln s) + 1)) fails (P(E) is
  near 1/2 at s = 10⁶), so the explicit bound on Δ_n is unproven there (P(E) only bounds Δ_n from
  below, so the bound is not refuted); under n ≤ (s+1)/(3(√s·ln s + 1)) the step holds.
"""

from __future__ import annotations

import contextlib
import copy
import math
from dataclasses import dataclass

import numpy as np
import torch

from qlib.validation import (
    check_alloc,
    check_array,
    check_float,
    check_float_sequence,
    check_int,
    check_int_sequence,
    check_positive,
    check_seed,
    nested,
    resolve_config,
    skip_nested,
)

from ..devices import resolve
from ..resume import check_units

DEFAULT_THRESHOLDS = (0.5, 0.1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6)


def single_thread_blas():
    """Context limiting BLAS/OpenMP to one thread: many tiny batched matmuls only contend on a
    shared CPU (20x slower measured). No-op when threadpoolctl is not installed."""
    try:
        from threadpoolctl import threadpool_limits  # deferred: optional (comes with scikit-learn)
    except ImportError:  # pragma: no cover
        return contextlib.nullcontext()
    return threadpool_limits(1)


def _check_losses(name: str, losses) -> np.ndarray:
    """Per-sample losses: a finite non-empty array of entries >= 0 (any leading shape, samples on the
    last axis)."""
    return check_array(name, losses, low=0.0)


def _check_eps(eps, name: str = "eps") -> np.ndarray:
    """Thresholds ε: one finite number >= 0, or a non-empty 1-D sequence of them."""
    if isinstance(eps, (list, tuple, np.ndarray)) and np.ndim(eps) != 0:
        e = check_array(name, eps, ndim=1, low=0.0)
    else:
        e = np.array([check_float(name, eps, low=0.0)])
    return e


def fraction_below(losses, eps) -> np.ndarray:
    """Fraction of entries of ``losses`` (last axis) that are ≤ each ε (returns shape (..., len(eps))).

    ``losses``: finite, >= 0; ``eps``: a threshold >= 0 or a 1-D sequence of them (inside a checked caller,
    :func:`qlib.validation.skip_nested`, arrays not checked again)."""
    if not nested():
        losses, eps = _check_losses("losses", losses), _check_eps(eps)
    return (losses[..., None] <= eps).mean(axis=-2)


def eq6_lower_bound(train_losses, val_losses, eps) -> np.ndarray:
    """Theorem 4.3(i), Eq. 6: (1 − α̂) − fresh fraction ≤ Δ_n, per threshold ε."""
    e = _check_eps(eps)
    tr, va = _check_losses("train_losses", train_losses), _check_losses("val_losses", val_losses)
    if tr.shape[:-1] != va.shape[:-1]:
        raise ValueError(f"train_losses and val_losses must have the same leading shape, got {tr.shape} and {va.shape}")
    with skip_nested():
        return fraction_below(tr, e) - fraction_below(va, e)


# ---- Example 4.5: least squares ---------------------------------------------------------------
def ols_losses(d: int, n: int, trials: int, *, noise_sd: float = 1.0, seed: int = 0):
    """Minimum-norm least squares on Gaussian designs y = βᵀx + ζ (β ~ N(0, I), ζ ~ N(0, σ²)).

    Returns (train_loss of z_1, fresh loss of an independent z_0), one pair per trial, batched.
    """
    d, n, trials = check_int("d", d, low=1, integral_float=True), check_int("n", n, low=1, integral_float=True), check_int("trials", trials, low=1, integral_float=True)
    noise_sd = check_float("noise_sd", noise_sd, low=0.0)
    seed = check_seed("seed", seed)
    check_alloc("trials, n and d", trials * (n + 2) * (d + 2), 8 * 2, value=(trials, n, d),
                what="the trials' designs, responses and fits")
    rng = np.random.default_rng(seed)
    beta = rng.standard_normal((trials, d))
    X = rng.standard_normal((trials, n, d))
    y = np.einsum("tnd,td->tn", X, beta) + noise_sd * rng.standard_normal((trials, n))
    with single_thread_blas():
        bhat = _ols_fit(X, y, d, n)
    x0 = rng.standard_normal((trials, d))
    y0 = (x0 * beta).sum(1) + noise_sd * rng.standard_normal(trials)
    train = (y[:, 0] - (X[:, 0] * bhat).sum(1)) ** 2
    fresh = (y0 - (x0 * bhat).sum(1)) ** 2
    return train, fresh


def _ols_fit(X, y, d, n):
    if d < n:  # unique least-squares solution (normal equations)
        bhat = np.linalg.solve(np.einsum("tnd,tne->tde", X, X), np.einsum("tnd,tn->td", X, y)[..., None])[..., 0]
    else:  # minimum-norm interpolant Xᵀ(XXᵀ)^{-1} y
        bhat = np.einsum("tnd,tn->td", X, np.linalg.solve(np.einsum("tnd,tmd->tnm", X, X), y[..., None])[..., 0])
    return bhat


def loss_threshold_accuracy(train_loss, fresh_loss, eps: float) -> float:
    """Accuracy at ν = 1/2 of "member iff loss ≤ ε" given member and non-member losses."""
    tr = check_array("train_loss", train_loss, ndim=1, low=0.0)
    fr = check_array("fresh_loss", fresh_loss, ndim=1, low=0.0)
    return _threshold_accuracy(tr, fr, check_float("eps", eps, low=0.0))


def _threshold_accuracy(tr: np.ndarray, fr: np.ndarray, eps: float) -> float:
    return 0.5 * float(np.mean(tr <= eps)) + 0.5 * float(np.mean(fr > eps))


def ols_threshold_game(d: int, n: int, trials: int, *, seed: int = 0) -> float:
    """Held-out lower bound on Δ_n for OLS: choose ε on half the trials, evaluate 2·Acc − 1 on the rest
    (``trials`` >= 2)."""
    trials = check_int("trials", trials, low=2, integral_float=True)
    train, fresh = ols_losses(d, n, trials, seed=seed)
    h = trials // 2
    cand = np.unique(np.concatenate([train[:h], fresh[:h]]))
    accs = [_threshold_accuracy(train[:h], fresh[:h], e) for e in cand]
    eps = cand[int(np.argmax(accs))]
    return 2 * _threshold_accuracy(train[h:], fresh[h:], eps) - 1


# ---- Simulation 1 -----------------------------------------------------------------------------
#: iterations per resumable unit of :func:`train_overfit_mlp`
UNIT_ITERATIONS = 100


@dataclass(frozen=True)
class OverfitRun:
    """Fractions of points with squared loss ≤ ε: arrays (seeds, evaluations, thresholds)."""

    iterations: np.ndarray
    thresholds: np.ndarray
    train_frac: np.ndarray
    val_frac: np.ndarray
    train_mse: np.ndarray  # (seeds, evaluations)
    val_mse: np.ndarray


def sphere(n: int, d: int, g: torch.Generator, device, dtype=torch.float32) -> torch.Tensor:
    """n points uniform on the unit sphere S^{d−1}."""
    x = torch.randn(n, d, generator=g, dtype=torch.float64).to(device=device, dtype=dtype)
    return x / x.norm(dim=1, keepdim=True)


@dataclass(frozen=True)
class OverfitConfig:
    """The settings of :func:`train_overfit_mlp` (Simulation 1 of paper 003, §6.1), checked once when
    built; frozen. Defaults: the paper's size.

    ``n`` training points (>= 1) in dimension ``d`` (>= 1), a hidden layer of ``width`` (>= 1),
    ``iters`` full-batch Adam iterations (>= 1) at ``lr`` (> 0), ``n_val`` validation points (>= 1),
    label noise ``noise_sd`` (>= 0), the loss ``thresholds`` ε (numbers >= 0, stored as a tuple),
    ``seeds`` (integers >= 0, a tuple; one model each) and ``eval_every`` (>= 1) iterations between
    two recorded fractions. Integral floats (1000.0) are taken as integers."""

    n: int = 1000
    d: int = 10
    width: int = 4096
    iters: int = 2500
    lr: float = 0.1
    n_val: int = 10_000
    noise_sd: float = 0.1
    thresholds: tuple[float, ...] = DEFAULT_THRESHOLDS
    seeds: tuple[int, ...] = (0,)
    eval_every: int = 10

    def __post_init__(self):
        def put(name, value):
            object.__setattr__(self, name, value)

        for k in ("n", "d", "width", "iters"):
            put(k, check_int(k, getattr(self, k), low=1, integral_float=True))
        put("lr", check_positive("lr", self.lr))
        put("n_val", check_int("n_val", self.n_val, low=1, integral_float=True))
        put("eval_every", check_int("eval_every", self.eval_every, low=1, integral_float=True))
        put("noise_sd", check_float("noise_sd", self.noise_sd, low=0.0))
        put("thresholds", tuple(check_float_sequence("thresholds", self.thresholds, low=0.0)))
        put("seeds", tuple(check_int_sequence("seeds", self.seeds, low=0)))


def train_overfit_mlp(config: OverfitConfig | None = None, *, device: str = "auto", units=None) -> OverfitRun:
    """Simulation 1 of paper 003 (Figure 1), all seeds trained at once as one batched model.

    ``config``: the settings (:class:`OverfitConfig`; None: its defaults):
    ``train_overfit_mlp(OverfitConfig(iters=100, seeds=(0, 1)))``.
    Data: x ~ Uniform(S^{d−1}), y = sin(π x_1) + ζ, ζ ~ N(0, noise_sd²) (the paper's N(0, 0.01) read
    as a variance). Model x ↦ W_2 ReLU(W_1 x + b_1) + b_2, Xavier-normal weights, PyTorch-default
    uniform biases; full-batch Adam on the MSE. Fractions are recorded at iteration 0 and every
    ``eval_every`` iterations (and at ``iters``).

    ``units`` (a :class:`qlib.resume.Units`): every :data:`UNIT_ITERATIONS` iterations are a unit whose
    result is the whole training state after them (the weights, Adam's state, the fractions recorded so
    far), keyed by every setting and the device type; a rerun loads the states saved and continues from
    the last, which gives the same numbers as an uninterrupted run, bit for bit (full-batch training
    draws nothing after the initialisation).
    """
    cfg = resolve_config(OverfitConfig, config)
    n, d, width, iters, lr, n_val = cfg.n, cfg.d, cfg.width, cfg.iters, cfg.lr, cfg.n_val
    noise_sd, thresholds, seeds, eval_every = cfg.noise_sd, cfg.thresholds, cfg.seeds, cfg.eval_every
    check_units("units", units)
    check_alloc("n, n_val, d and width", len(seeds) * ((n + n_val) * (d + 3 * width) + 4 * (d + 2) * width), 4,
                value=(n, n_val, d, width), what="the seeds' data, hidden activations and weights (with Adam's moments)")
    dev = resolve(device)
    thr = torch.tensor(np.asarray(thresholds, dtype=np.float64), dtype=torch.float32, device=dev)
    Xs, Ys, Xv, Yv, params = [], [], [], [], []
    for s in seeds:
        g = torch.Generator().manual_seed(int(s))
        x = sphere(n, d, g, dev)
        xv = sphere(n_val, d, g, dev)
        y = torch.sin(math.pi * x[:, 0]) + noise_sd * torch.randn(n, generator=g).to(dev)
        yv = torch.sin(math.pi * xv[:, 0]) + noise_sd * torch.randn(n_val, generator=g).to(dev)
        W1 = torch.randn(d, width, generator=g) * math.sqrt(2.0 / (d + width))
        b1 = (torch.rand(width, generator=g) * 2 - 1) / math.sqrt(d)
        W2 = torch.randn(width, 1, generator=g) * math.sqrt(2.0 / (width + 1))
        b2 = (torch.rand(1, generator=g) * 2 - 1) / math.sqrt(width)
        Xs.append(x), Ys.append(y), Xv.append(xv), Yv.append(yv), params.append((W1, b1, W2, b2))
    X, Y, XV, YV = (torch.stack(t) for t in (Xs, Ys, Xv, Yv))
    W1, b1, W2, b2 = (torch.stack([p[i] for p in params]).to(dev).requires_grad_(True) for i in range(4))
    opt = torch.optim.Adam([W1, b1, W2, b2], lr=lr)

    def fwd(inp):
        h = torch.relu(torch.bmm(inp, W1) + b1[:, None, :])
        return (torch.bmm(h, W2) + b2[:, None, :]).squeeze(-1)

    its, tf, vf, tm, vm = [], [], [], [], []

    def record(it):
        with torch.no_grad():
            lt = (fwd(X) - Y) ** 2
            lv = torch.cat([(fwd(XV[:, i:i + 5000]) - YV[:, i:i + 5000]) ** 2 for i in range(0, n_val, 5000)], 1)
            its.append(it)
            tf.append((lt[..., None] <= thr).float().mean(1).cpu().numpy())
            vf.append((lv[..., None] <= thr).float().mean(1).cpu().numpy())
            tm.append(lt.mean(1).cpu().numpy())
            vm.append(lv.mean(1).cpu().numpy())

    def advance(first: int, last: int) -> None:
        """Iterations first … last (0: the record at the start)."""
        if first == 0:
            record(0)
            first = 1
        for it in range(first, last + 1):
            opt.zero_grad(set_to_none=True)
            loss = ((fwd(X) - Y) ** 2).mean(1).sum()  # seeds are independent: sum of per-seed MSEs
            loss.backward()
            opt.step()
            if it % eval_every == 0 or it == iters:
                record(it)

    if units is None:
        advance(0, iters)
    else:
        weights = (W1, b1, W2, b2)
        key = {"n": n, "d": d, "width": width, "iters": iters, "lr": lr, "n_val": n_val, "noise_sd": noise_sd,
               "thresholds": list(thresholds), "seeds": list(seeds), "eval_every": eval_every, "device": dev.type}

        def snapshot() -> dict:
            return {"weights": [w.detach().cpu().clone() for w in weights], "opt": copy.deepcopy(opt.state_dict()),
                    "records": copy.deepcopy((its, tf, vf, tm, vm))}

        def restore(state: dict) -> None:
            with torch.no_grad():
                for w, v in zip(weights, state["weights"]):
                    w.copy_(v.to(w.device))
            opt.load_state_dict(copy.deepcopy(state["opt"]))
            for mine, saved in zip((its, tf, vf, tm, vm), state["records"]):
                mine[:] = saved

        state = None
        for first in range(0, iters + 1, UNIT_ITERATIONS):
            last = min(first + UNIT_ITERATIONS - 1, iters)

            def segment(first=first, last=last, before=state):
                if before is not None:
                    restore(before)   # the state the previous unit left (loaded or just computed)
                advance(first, last)
                return snapshot()

            state = units.run("overfit_iterations", {**key, "last": last}, segment)
        restore(state)
    return OverfitRun(np.array(its), np.asarray(thresholds, dtype=np.float64),
                      np.stack(tf, 1), np.stack(vf, 1), np.stack(tm, 1), np.stack(vm, 1))


# ---- Proposition B.1 --------------------------------------------------------------------------
def wishart_gram_bartlett(s: int, n: int, reps: int, rng: np.random.Generator) -> np.ndarray:
    """reps Gram matrices G = L Lᵀ ~ Wishart(s, I_n) by the Bartlett decomposition ((reps, n, n)), s >= n."""
    s, n = _check_s_n(s, n)
    reps = check_int("reps", reps, low=1, integral_float=True)
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    check_alloc("reps and n", reps * n * n, 8 * 3, value=(reps, n), what="the Bartlett factors (reps, n, n)")
    L = np.tril(rng.standard_normal((reps, n, n)), -1)
    dfs = s - np.arange(n)  # 1-based i: s − i + 1
    L[:, np.arange(n), np.arange(n)] = np.sqrt(rng.chisquare(dfs[None, :], size=(reps, n)))
    return L @ np.transpose(L, (0, 2, 1))


def _check_s_n(s, n) -> tuple[int, int]:
    s, n = check_int("s", s, low=1, integral_float=True), check_int("n", n, low=1, integral_float=True)
    if n > s:
        raise ValueError(f"n must be <= s (Wishart(s, I_n) needs s >= n degrees of freedom), got n={n} > s={s}")
    return s, n


def _check_s(s) -> int:
    return check_int("s", s, low=2, integral_float=True)


def prob_event_E(s: int, n: int, reps: int = 2000, *, seed: int = 0) -> float:
    """Monte-Carlo P(max_{i≠j} |x_iᵀx_j| ≤ (s+1)/(3n) − 1) for n points uniform on √s·S^{s−1}."""
    s, n = _check_s_n(s, n)
    reps = check_int("reps", reps, low=1, integral_float=True)
    rng = np.random.default_rng(check_seed("seed", seed))
    hits = 0
    for start in range(0, reps, 200):  # chunks keep the (reps, n, n) arrays small
        with single_thread_blas():
            G = wishart_gram_bartlett(s, n, min(200, reps - start), rng)
        dg = np.sqrt(np.einsum("rii->ri", G))
        C = s * G / (dg[:, :, None] * dg[:, None, :])
        C[:, np.arange(n), np.arange(n)] = 0.0
        hits += int(np.sum(np.abs(C).max(axis=(1, 2)) <= (s + 1) / (3 * n) - 1))
    return hits / reps


def propB1_n_printed(s: int) -> int:
    """Largest n allowed by the printed condition n ≤ (s+1)/(3(√(s ln s) + 1)) (s >= 2)."""
    s = _check_s(s)
    return int(math.floor((s + 1) / (3 * (math.sqrt(s * math.log(s)) + 1))))


def propB1_n_corrected(s: int) -> int:
    """Largest n allowed by the corrected condition n ≤ (s+1)/(3(√s·ln s + 1)) (s >= 2)."""
    s = _check_s(s)
    return int(math.floor((s + 1) / (3 * (math.sqrt(s) * math.log(s) + 1))))


def propB1_bound(s: int) -> float:
    """The printed explicit bound 1 − s^{3 − ln(s)/4} (s >= 2)."""
    s = _check_s(s)
    return 1.0 - s ** (3 - math.log(s) / 4)


__all__ = [
    "DEFAULT_THRESHOLDS", "UNIT_ITERATIONS", "fraction_below", "eq6_lower_bound", "ols_losses", "loss_threshold_accuracy",
    "ols_threshold_game", "OverfitRun", "OverfitConfig", "train_overfit_mlp", "wishart_gram_bartlett", "prob_event_E",
    "propB1_n_printed", "propB1_n_corrected", "propB1_bound",
]
