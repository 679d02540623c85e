"""The membership-inference game of paper 003 (§2, Eq. 1–2), simulated literally.

One trial: a training set z_1..z_n ~ P, θ̂ = A(z); T ~ Bernoulli(ν); a fresh z_0 ~ P and a uniformly
chosen training point U; the test point z̃ = T·z_0 + (1 − T)·U; the attack φ(θ̂, z̃) ∈ {0, 1}
(1 = "member") is correct when φ = 1 − T (paper 003: T = 1 means *non-member*). With
``convention='001'`` (paper 001, Eq. 7) T ~ Bernoulli(1/2) and T = 1 means *member*,
z̃ = T·U + (1 − T)·z_0, correct when φ = T. Both estimate the same accuracy.

Trials are vectorised: ``sample(rng, shape)`` returns an array of data points of that leading shape,
``algorithm(data)`` maps a (B, n, …) batch of training sets to B parameters (any array with leading
dimension B), ``attack(theta, z)`` returns B booleans.

Also the two exact-attack helpers used in the checks: the Bayes attack against the injective
algorithm on discrete data and against the empirical mean on Gaussian data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from qlib.validation import (
    check_alloc,
    check_callable,
    check_choice,
    check_int,
    check_probability,
    check_seed,
    resolve_config,
)

from .exact import check_prob_vector
from .gaussian import gaussian_bayes_log_ratio


@dataclass(frozen=True)
class GameResult:
    accuracy: float
    se: float
    trials: int

    def z_score(self, exact: float) -> float:
        """(estimate − exact)/sqrt(exact(1 − exact)/M), for an exact accuracy in (0, 1)."""
        exact = check_probability("exact", exact, open_low=True, open_high=True)
        return (self.accuracy - exact) / math.sqrt(exact * (1 - exact) / self.trials)


@dataclass(frozen=True)
class GameConfig:
    """The settings of :func:`simulate_mia_game`, checked once when built; frozen.

    ``n``: training-set size (>= 1; no default); ``nu``: the prior ν of a non-member (paper 003, §2; in
    (0, 1)); ``trials`` M (>= 1); ``seed``: an integer >= 0 or a ``numpy.random.Generator`` (used as
    is); ``chunk``: trials per vectorised batch (>= 1); ``convention``: ``"003"`` (paper 003, Eq. 1–2)
    or ``"001"`` (paper 001, Eq. 7, which fixes ν = 1/2)."""

    n: int
    nu: float = 0.5
    trials: int = 100_000
    seed: int | np.random.Generator = 0
    chunk: int = 20_000
    convention: str = "003"

    def __post_init__(self):
        def put(name, value):
            object.__setattr__(self, name, value)

        put("n", check_int("n", self.n, low=1, integral_float=True))
        put("nu", check_probability("nu", self.nu, open_low=True, open_high=True))
        put("trials", check_int("trials", self.trials, low=1, integral_float=True))
        put("chunk", check_int("chunk", self.chunk, low=1, integral_float=True))
        check_choice("convention", self.convention, ("003", "001"))
        if self.convention == "001" and self.nu != 0.5:
            raise ValueError("convention '001' fixes the prior at 1/2 (paper 001, Eq. 7); got nu != 0.5")
        if not isinstance(self.seed, np.random.Generator):
            put("seed", check_seed("seed", self.seed))


def simulate_mia_game(sample, algorithm, attack, config: GameConfig) -> GameResult:
    """Monte-Carlo accuracy of ``attack`` in the MIA game (T, z_0, U, z̃ drawn literally).

    ``config``: the settings (:class:`GameConfig`; ``n`` has no default, so the record is required) —
    ``simulate_mia_game(sample, algorithm, attack, GameConfig(n, nu, trials, seed=1))``."""
    for name, f in (("sample", sample), ("algorithm", algorithm), ("attack", attack)):
        check_callable(name, f)
    cfg = resolve_config(GameConfig, config)
    n, nu, trials, seed, chunk, convention = cfg.n, cfg.nu, cfg.trials, cfg.seed, cfg.chunk, cfg.convention
    check_alloc("n", min(chunk, trials) * n, 8 * 2, value=n,
                what=f"a batch of min(chunk, trials) = {min(chunk, trials)} training sets of n points (lower the chunk)")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(check_seed("seed", seed))
    correct = 0
    done = 0
    while done < trials:
        B = min(chunk, trials - done)
        data = np.asarray(sample(rng, (B, n)))
        theta = algorithm(data)
        T = rng.random(B) < nu  # 003: T = 1 -> non-member, probability ν
        z0 = np.asarray(sample(rng, (B,)))
        U = data[np.arange(B), rng.integers(0, n, size=B)]
        if convention == "003":
            is_member = ~T
        else:
            is_member = T  # 001: T ~ Bern(1/2), T = 1 -> member
        mask = is_member.reshape((B,) + (1,) * (U.ndim - 1))
        zt = np.where(mask, U, z0)
        guess = np.asarray(attack(theta, zt), dtype=bool)
        correct += int(np.sum(guess == is_member))
        done += B
    acc = correct / trials
    return GameResult(acc, math.sqrt(acc * (1 - acc) / trials), trials)


# ---- discrete data, injective algorithm (θ̂ = count vector) -----------------------------------
def discrete_sampler(p):
    """sample(rng, shape) drawing atom indices 0..K−1 with probabilities p."""
    p = check_prob_vector("p", p)
    cdf = np.cumsum(p)
    cdf[-1] = 1.0
    return lambda rng, shape: np.searchsorted(cdf, rng.random(shape), side="right")


def count_algorithm(K: int):
    """The injective algorithm: θ̂ = count vector N (B × K) of each training set of atom indices."""
    K = check_int("K", K, low=1)

    def alg(data):
        B = data.shape[0]
        out = np.zeros((B, K), dtype=np.int64)
        np.add.at(out, (np.repeat(np.arange(B), data.shape[1]), data.ravel()), 1)
        return out
    return alg


def discrete_bayes_attack(p, n: int, nu: float):
    """Bayes attack against the injective algorithm: "member" iff (1 − ν) N_k/n ≥ ν p_k (the Bayes rule of the corrected Eq. 23)."""
    p = check_prob_vector("p", p)
    n = check_int("n", n, low=1, integral_float=True)
    nu = check_probability("nu", nu, open_low=True, open_high=True)
    return lambda N, z: (1 - nu) * N[np.arange(N.shape[0]), z] / n >= nu * p[z]


# ---- Gaussian data, empirical mean ------------------------------------------------------------
def gaussian_sampler(d: int):
    """sample(rng, shape) drawing standard normal points in R^d (μ = 0, Σ = I without loss)."""
    d = check_int("d", d, low=1, integral_float=True)
    return lambda rng, shape: rng.standard_normal(tuple(shape) + (d,))


def mean_algorithm(data):
    """θ̂ = empirical mean of each training set (B × n × d → B × d).

    Checked cheaply (this runs once per batch of the game): the shape and dtype of ``data``, and the
    finiteness of the means (a NaN or inf point makes its mean non-finite)."""
    arr = np.asarray(data) if not isinstance(data, (str, bytes)) else None
    if arr is None or arr.dtype.kind not in "fiu":
        raise TypeError(f"data must be a real (B, n, d) array, got {type(data).__name__}"
                        + ("" if arr is None else f" of dtype {arr.dtype}"))
    if arr.ndim != 3 or arr.size == 0:
        raise ValueError(f"data must be a non-empty (B, n, d) array, got shape {arr.shape}")
    out = arr.mean(axis=1)
    if not np.all(np.isfinite(out)):
        raise ValueError("data must be finite (no NaN or inf)")
    return out


def gaussian_bayes_attack(n: int, nu: float):
    """Bayes attack against the empirical mean of N(0, I_d) data: log q/p ≥ log(ν/(1 − ν)) (n >= 2)."""
    n = check_int("n", n, low=2, integral_float=True)
    nu = check_probability("nu", nu, open_low=True, open_high=True)
    thr = math.log(nu / (1 - nu))
    return lambda theta, z: gaussian_bayes_log_ratio(math.sqrt(n) * theta, z, n) >= thr


__all__ = [
    "GameResult", "GameConfig", "simulate_mia_game", "discrete_sampler", "count_algorithm", "discrete_bayes_attack",
    "gaussian_sampler", "mean_algorithm", "gaussian_bayes_attack",
]
