"""Randomized quantization projection of RQP-SGD (paper 004, Feng & Venkitasubramaniam) and its
utility bound (Theorem 2).

* :func:`levels` — the b-bit quantization set Q_{M,b} of eq. (8): Q_i = −M + 2M i/(2^b − 1).
* :func:`proj_det` — the deterministic projection of eq. (9) (clip to [−M, M], nearest level),
  the quantizer of the Proj-DP-SGD baseline.
* :func:`randomized_projection` — Algorithm 1: the nearest level with probability q, otherwise one
  of the other 2^b − 1 levels uniformly. Per coordinate, vectorised over any tensor shape; ``q`` may
  be a tensor broadcastable to ``x`` (one q per run). It is k-ary randomized response on the level
  index, **not** an unbiased quantizer: E[Proj^R(x)] = A·Proj^D(x), A = (2^b q − 1)/(2^b − 1).
* :func:`pmf` — the output law of one step, Φ-cell masses mixed with (A, B) (proof of Theorem 1).
* :func:`quantization_error` — E_Q of Theorem 2 as printed; :func:`utility_bound` — eq. (11).

Privacy (Theorem 1's ε_t and its solvers) lives in :mod:`qlib.rqp_privacy`; this module only uses
its checks and log-space helpers. No paper setting (M = 0.3, b = 4, …) is a default here: every
function takes them as arguments (the paper's values are in :mod:`qlib.repro.rqp_sgd.paper`).
Ties at cell midpoints (probability zero for continuous inputs) are broken by floor(· + 1/2), i.e.
upward.
"""

from __future__ import annotations

import numpy as np
import torch
from scipy.special import ndtr

from .rqp_privacy import check_bits, check_q, check_sigma, log_mix, log_phi_diff
from .validation import (
    check_alloc,
    check_array,
    check_choice,
    check_int,
    check_positive,
    check_tensor,
    nested,
    skip_nested,
)

__all__ = [
    "ADJACENCIES",
    "levels",
    "spacing",
    "nearest_index",
    "proj_det",
    "randomized_projection",
    "pmf",
    "log_pmf",
    "mean_factor",
    "exact_mse",
    "kappa",
    "quantization_error",
    "utility_bound",
    "adjacent_shift",
    "coordinate_privacy_loss",
    "coordinate_privacy_loss_upper",
]

#: neighbouring mini-batches: "replace-one" (one example swapped) or "add-remove" (one example more)
ADJACENCIES = ("replace-one", "add-remove")


def spacing(b: int, M: float) -> float:
    """Δ = 2M/(2^b − 1), the distance between neighbouring levels."""
    return 2.0 * check_positive("M", M) / (2 ** check_bits(b) - 1)


def levels(b: int, M: float, *, dtype=torch.float64, device=None) -> torch.Tensor:
    """Q_{M,b} of eq. (8): 2^b levels, uniform on [−M, M], symmetric (Σ Q_i = 0, 0 is not a level)."""
    b = check_bits(b)
    M = check_positive("M", M)
    i = torch.arange(2**b, dtype=dtype, device=device)
    return -M + spacing(b, M) * i


def nearest_index(x: torch.Tensor, b: int, M: float) -> torch.Tensor:
    """Index i* of Proj^D(x): clamp(floor((clip(x, ±M) + M)/Δ + 1/2), 0, 2^b − 1) (int64).

    ``x``: a floating tensor of any shape, finite (NaN has no nearest level and is rejected; inside a
    checked caller, :func:`qlib.validation.skip_nested`, it is not checked and NaN gives INT64_MIN).
    """
    x = check_tensor("x", x, convert=False)
    b = check_bits(b)
    M = check_positive("M", M)
    y = (x.clamp(-M, M) + M) / spacing(b, M)
    return torch.floor(y + 0.5).clamp_(0, 2**b - 1).to(torch.int64)


def proj_det(x: torch.Tensor, b: int, M: float) -> torch.Tensor:
    """Deterministic projection of eq. (9): clip each coordinate to [−M, M], then the nearest level.
    (Inside a checked caller, :func:`qlib.validation.skip_nested`, ``x`` is not checked: no NaN.)"""
    x = check_tensor("x", x, convert=False)
    b = check_bits(b)
    M = check_positive("M", M)
    with skip_nested():
        return levels(b, M, dtype=x.dtype, device=x.device)[nearest_index(x, b, M)]


def _q_tensor(q, b: int, like: torch.Tensor) -> torch.Tensor:
    if isinstance(q, torch.Tensor):
        qt = q.to(device=like.device, dtype=like.dtype)
        if not nested():  # a checked caller's q (the training loop's, checked once)
            check_q(qt.detach().cpu().numpy(), b)
        return qt
    check_q(q, b)
    return torch.as_tensor(float(q), dtype=like.dtype, device=like.device)


def randomized_projection(x: torch.Tensor, b: int, M: float, q, generator: torch.Generator | None = None):
    """Algorithm 1, per coordinate: Q* = Proj^D(x) with probability q, else a uniformly chosen
    other level (each with probability (1 − q)/(2^b − 1)).

    ``q`` ∈ [1/2^b, 1]: a float, or a tensor broadcastable to ``x`` (e.g. shape (runs, 1)).
    q = 1 returns Proj^D(x) for any generator. Every call draws the same amount of randomness
    (one uniform and one integer per coordinate), so a seeded generator gives identical numbers;
    ``generator=None`` draws from torch's global generator (reproducible only after torch.manual_seed).
    Inside a checked caller (:func:`qlib.validation.skip_nested`: the training loop) ``x`` and a tensor
    ``q`` are not checked (no NaN in ``x``, ``q`` valid).
    """
    x = check_tensor("x", x, convert=False)
    b = check_bits(b)
    M = check_positive("M", M)
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator or None, got {type(generator).__name__}")
    qt = _q_tensor(q, b, x)
    L = 2**b
    with skip_nested():
        i_star = nearest_index(x, b, M)
        u = torch.rand(x.shape, generator=generator, device=x.device, dtype=x.dtype)
        shift = torch.randint(1, L, x.shape, generator=generator, device=x.device) if L > 1 else None
        j = torch.where(u < qt, i_star, (i_star + shift) % L)
        return levels(b, M, dtype=x.dtype, device=x.device)[j]


def mean_factor(q, b: int):
    """A = (2^b q − 1)/(2^b − 1): E[Proj^R(x)] = A·Proj^D(x) (because Σ Q_i = 0) — not unbiased."""
    b = check_bits(b)
    q = check_q(q, b)
    out = (2**b * q - 1.0) / (2**b - 1)
    return float(out) if np.ndim(out) == 0 else out


def _cells(mu, sigma_l, b, M, q, *, exact: bool):
    """Validated arguments and the cell edges [lo_i, hi_i) around each level (end cells
    semi-infinite when ``exact``), broadcast: (lo, hi, mu, sigma_l, q, 2^b)."""
    b = check_bits(b)
    M = check_positive("M", M)
    sl = check_sigma(sigma_l, "sigma_l")
    qa = check_q(q, b)
    L = 2**b
    h = M / (L - 1)
    lv = levels(b, M).numpy()
    lo, hi = lv - h, lv + h
    if exact:
        lo[0], hi[-1] = -np.inf, np.inf
    mu_, sl_, qa_ = np.broadcast_arrays(check_array("mu", mu), sl, qa)
    return lo, hi, mu_, sl_, qa_, L


def pmf(mu, sigma_l, b: int, M: float, q, *, edges: str = "exact") -> np.ndarray:
    """Law of one RQP step on one coordinate: P(level i) = A·[Φ((Q_i^+ − μ)/σ_l) − Φ((Q_i^− − μ)/σ_l)] + B
    with v ~ N(μ, σ_l²) (proof of Theorem 1). Returns shape (*broadcast(mu, sigma_l, q), 2^b).

    ``edges="exact"``: the cells of eq. (9) (clip, then round), whose end cells are semi-infinite —
    sums to 1. ``edges="paper"``: every cell finite, [Q_i − h, Q_i + h), as in the paper — sums to
    less than 1 (the mass beyond ±(M + h) is lost).
    """
    check_choice("edges", edges, ("exact", "paper"))
    lo, hi, mu_, sl_, qa_, L = _cells(mu, sigma_l, b, M, q, exact=edges == "exact")
    z = lambda e: (e - mu_[..., None]) / sl_[..., None]  # noqa: E731
    p = ndtr(z(hi)) - ndtr(z(lo))
    A = ((L * qa_ - 1.0) / (L - 1))[..., None]
    B = ((1.0 - qa_) / (L - 1))[..., None]
    return A * p + B


def log_pmf(mu, sigma_l, b: int, M: float, q) -> np.ndarray:
    """log of :func:`pmf` with ``edges="exact"``, in log space (finite even for q = 1 and far cells)."""
    lo, hi, mu_, sl_, qa_, L = _cells(mu, sigma_l, b, M, q, exact=True)
    with np.errstate(invalid="ignore"):
        with skip_nested():  # ordered cell edges, checked σ_l > 0
            lp = log_phi_diff((lo - mu_[..., None]) / sl_[..., None], (hi - mu_[..., None]) / sl_[..., None])
    A = ((L * qa_ - 1.0) / (L - 1))[..., None]
    B = ((1.0 - qa_) / (L - 1))[..., None]
    with skip_nested():  # A, B >= 0 for a checked q
        return log_mix(lp, A, B)


def exact_mse(x, b: int, M: float, q) -> np.ndarray:
    """E[(Proj^R(x) − x)²] per coordinate, exactly from the pmf of Algorithm 1 (numpy, float64)."""
    b = check_bits(b)
    qa = check_q(q, b)
    xa = check_array("x", x)
    M = check_positive("M", M)
    lv = levels(b, M).numpy()
    with skip_nested():  # xa: checked finite
        i_star = nearest_index(torch.as_tensor(xa), b, M).numpy()
    sq = (lv[None, :] - xa.reshape(-1, 1)) ** 2  # (n, L)
    near = sq[np.arange(sq.shape[0]), i_star.reshape(-1)]
    others = sq.sum(axis=1) - near
    out = qa * near + (1 - qa) / (2**b - 1) * others
    return out.reshape(xa.shape)


def kappa(b: int) -> float:
    """κ_b = 2^{b+1}(2^{b+1} − 1)/(3(2^b − 1)²), the (1 − q) coefficient of E_Q/(dM²)."""
    b = check_bits(b)
    return 2 ** (b + 1) * (2 ** (b + 1) - 1) / (3 * (2**b - 1) ** 2)


def quantization_error(q, b: int, M: float, d: int):
    """E_Q of Theorem 2 as printed: d·M²·[q/(2^b − 1)² + κ_b·(1 − q)].

    (The paper's step 1 sums d·h²·q + d·Σ_i (2Mi/(2^b − 1))²(1 − q)/(2^b − 1); that sum equals this
    closed form exactly.) It bounds the per-coordinate MSE of Algorithm 1 times d for |x| ≤ M.
    """
    b = check_bits(b)
    M = check_positive("M", M)
    d = check_int("d (number of parameters)", d, low=1)
    qa = check_q(q, b)
    out = d * M**2 * (qa / (2**b - 1) ** 2 + kappa(b) * (1.0 - qa))
    return float(out) if np.ndim(out) == 0 else out


def utility_bound(q, sigma, *, b: int, M: float, rho: float, eta: float, T: int, d: int,
                  variant: str = "paper", m: int | None = None):
    """Right-hand side of eq. (11): M²/(2ηT) + E_Q + ηρ²/2 + E_N, E_N = ησ²d (``variant="paper"``).

    ``variant="corrected"`` applies the slips of the proof (§3, proof of Theorem 2): diameter (2M)² instead of M², E_Q/(2η)
    instead of E_Q, and E_N = ησ²d/(2m²) (G_t is scaled by η/m in Algorithm 2; needs ``m``).
    ``sigma`` may be 0 (no noise) or an array.

    Its keywords are the symbols of Theorem 2 (b, M, ρ, η, T, d; m for the corrected form): a formula
    evaluated, not a driver, so they stay arguments rather than a settings record.
    """
    check_choice("variant", variant, ("paper", "corrected"))
    eta = check_positive("eta", eta)
    rho = check_positive("rho", rho)
    M = check_positive("M", M)
    T = check_int("T (iterations)", T, low=1)
    m = check_int("m (mini-batch size)", m, low=1, allow_none=True)
    s = check_array("sigma", sigma, low=0.0)
    EQ = quantization_error(q, b, M, d)
    if variant == "paper":
        out = M**2 / (2 * eta * T) + EQ + eta * rho**2 / 2 + eta * s**2 * d
    else:
        if m is None:
            raise ValueError("m (mini-batch size) must be an integer >= 1 for variant='corrected', got None")
        out = (2 * M) ** 2 / (2 * eta * T) + np.asarray(EQ) / (2 * eta) + eta * rho**2 / 2 + eta * s**2 * d / (2 * m**2)
    return float(out) if np.ndim(out) == 0 else out


def adjacent_shift(*, eta: float, rho: float, m: int, adjacency: str) -> float:
    """Largest move of f_sgd (one coordinate) between adjacent mini-batches of size m.

    Each clipped gradient has norm ≤ ρ and the sum is scaled by η/m (Algorithm 2), so replacing one
    example (``"replace-one"``) moves it by at most 2ηρ/m, adding or removing one (``"add-remove"``,
    the adjacency of the RDP accountant of the baselines) by at most ηρ/m. The paper states
    neither; Theorem 1's proof only says "adjacent".
    """
    eta = check_positive("eta", eta)
    rho = check_positive("rho", rho)
    m = check_int("m (mini-batch size)", m, low=1)
    check_choice("adjacency", adjacency, ADJACENCIES)
    return (2.0 if adjacency == "replace-one" else 1.0) * eta * rho / m


def coordinate_privacy_loss(q, sigma, *, b: int, M: float, rho: float, eta: float, m: int, adjacency: str,
                            n_mu: int = 801, n_shift: int = 11) -> float:
    """Largest log-ratio of one RQP step's output law between adjacent mini-batches, on ONE coordinate.

    A direct check of Theorem 1 (not from the paper). f_sgd = w_t − (η/m)·(sum of clipped
    gradients + noise mean 0) lies in the feasible range [−M − ηρ, M + ηρ] (w_t ∈ [−M, M], the mean
    clipped gradient has norm ≤ ρ), and adjacent mini-batches move it by at most
    :func:`adjacent_shift` (``adjacency`` is required: the result depends on it). We maximise
    max_i |log P_μ(Q_i) − log P_μ'(Q_i)| over a grid of μ in the feasible range and shifts
    |μ − μ'| ≤ shift, with μ' clipped to the feasible range too (both means must be attainable), with
    the exact (semi-infinite end cells) law of :func:`pmf`. The result is a lower bound on the
    per-step ε of the d-dimensional mechanism (whose coordinates can all move).

    Its keywords are the symbols of the one-coordinate mechanism (b, M, ρ, η, m, the adjacency): a maths
    function, not a driver, so they stay arguments rather than a settings record.
    """
    b = check_bits(b)
    M = check_positive("M", M)
    sigma = check_positive("sigma", sigma)
    check_q(q, b)
    n_mu = check_int("n_mu", n_mu, low=2)
    n_shift = check_int("n_shift", n_shift, low=2)
    shift = adjacent_shift(eta=eta, rho=rho, m=m, adjacency=adjacency)
    lo, hi = -M - eta * rho, M + eta * rho
    sl = eta * sigma / m
    check_alloc("n_mu and n_shift", n_mu * (n_shift + 1) * 2**b, 8 * 4, value=(n_mu, n_shift),
                what="the log-pmfs of the shifted means (n_mu, n_shift, levels)")
    mu = np.linspace(lo, hi, n_mu)
    shifts = np.linspace(-shift, shift, n_shift)
    mu2 = np.clip(mu[:, None] + shifts[None, :], lo, hi)
    logp = log_pmf(mu, sl, b, M, q)  # (n_mu, L)
    logp2 = log_pmf(mu2, sl, b, M, q)  # (n_mu, n_shift, L)
    return float(np.max(np.abs(logp[:, None, :] - logp2)))


def coordinate_privacy_loss_upper(q, sigma, *, b: int, M: float, rho: float, eta: float, m: int, adjacency: str,
                                  per_shift: int = 50) -> float:
    """A certified *upper* bound on the quantity :func:`coordinate_privacy_loss` approximates from below:
    sup over means μ, μ' in the feasible range R = [−M − ηρ, M + ηρ] with |μ − μ'| ≤
    :func:`adjacent_shift` of max_i |log P_μ(i) − log P_μ'(i)| (one coordinate, exact cells). Not in
    the paper: the corrected per-step ε that Theorem 1's ε_t should be at least.

    R is cut into intervals of width shift/``per_shift``. Each cell mass p_i(μ) is log-concave in μ
    (a Gaussian mass of an interval), so on an interval its minimum is at an end and its maximum at an
    end or at the cell's centre when the centre lies inside: both are exact. For every pair of
    intervals within ``shift`` of each other, log(A·max p_i + B) − log(A·min p_i + B) bounds the loss
    of every pair of means they contain; the largest over pairs and levels is returned. It exceeds the
    exact loss by at most the change of the log-masses over one interval (→ 0 as ``per_shift`` grows).

    Its keywords are the symbols of the one-coordinate mechanism (b, M, ρ, η, m, the adjacency): a maths
    function, not a driver, so they stay arguments rather than a settings record.
    """
    b = check_bits(b)
    M = check_positive("M", M)
    sigma = float(check_positive("sigma", sigma))
    qa = float(check_q(q, b))
    per_shift = check_int("per_shift", per_shift, low=1)
    shift = adjacent_shift(eta=eta, rho=rho, m=m, adjacency=adjacency)
    r_lo, r_hi = -M - eta * rho, M + eta * rho
    K = int(np.ceil((r_hi - r_lo) / (shift / per_shift)))
    L = 2**b
    check_alloc("per_shift", (K + 1) * L * (2 * per_shift + 3), 8 * 4, value=per_shift,
                what="the interval masses (intervals, levels) and their pairs")
    g = np.linspace(r_lo, r_hi, K + 1)
    delta = g[1] - g[0]
    h = M / (L - 1)
    lv = levels(b, M).numpy()
    lo_e, hi_e = lv - h, lv + h
    lo_e[0], hi_e[-1] = -np.inf, np.inf
    sl = eta * sigma / m

    def logp(mu):  # (..., L) log cell masses at means mu (...)
        mu = np.asarray(mu, float)[..., None]
        with skip_nested():  # ordered edges, σ_l > 0
            return log_phi_diff((lo_e - mu) / sl, (hi_e - mu) / sl)

    ends = logp(g)  # (K+1, L)
    a, c = ends[:-1], ends[1:]  # interval ends
    centre = np.clip(lv[None, :], g[:-1, None], g[1:, None])  # (K, L): the cell's centre clipped to the interval
    with skip_nested():
        mid = log_phi_diff((lo_e[None, :] - centre) / sl, (hi_e[None, :] - centre) / sl)
    log_max = np.maximum(np.maximum(a, c), mid)
    log_min = np.minimum(a, c)
    A = (L * qa - 1.0) / (L - 1)
    B = (1.0 - qa) / (L - 1)
    if A <= 0:
        return 0.0
    with skip_nested():
        hi_P = log_mix(log_max, A, B)
        lo_P = log_mix(log_min, A, B)
    W = 1 + int(np.floor(shift / delta + 1e-9))  # intervals at most `shift` apart: |j − k| ≤ W
    best = 0.0
    for o in range(-W, W + 1):
        if o >= 0:
            d = hi_P[: K - o] - lo_P[o:]
        else:
            d = hi_P[-o:] - lo_P[: K + o]
        if d.size:
            best = max(best, float(d.max()))
    return best
