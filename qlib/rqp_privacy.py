"""Privacy of RQP-SGD (paper 004, Feng & Venkitasubramaniam): Theorem 1's ε, its inverses, and
the accountant of the DP-SGD baselines.

Theorem 1 (as printed). One RQP-SGD step with noise std ``sigma`` on the summed gradient and
randomness coefficient ``q`` is (ε_t, 0)-DP with

    ε_t = log( [A·(2Φ(a1/σ_l) − 1) + B] / [A·(Φ(a2/σ_l) − Φ(a3/σ_l)) + B] )
    A = (2^b q − 1)/(2^b − 1),  B = (1 − q)/(2^b − 1),  σ_l = η σ / m,
    a1 = M/(2^b − 1),  a2 = M + M/(2^b − 1) + C,  a3 = M − M/(2^b − 1) + C,  C = M − η ρ,

and T steps with sampling rate m/n compose to (T·(m/n)·ε_t, 0)-DP.

The paper's errata are options, the paper's version is the default:

* ``c_mode="paper"`` uses C = M − ηρ verbatim (negative at the paper's settings: 0.3 − 0.45);
  ``c_mode="plus"`` uses C = M + ηρ, the largest level-to-f_sgd distance.
* ``composition="paper"`` is the linearised T·(m/n)·ε_t; ``composition="amplified"`` uses the
  standard pure-DP subsampling bound T·log(1 + (m/n)(e^{ε_t} − 1)), never smaller.
* The analysis is per coordinate; as in the paper, no factor d is applied.

The Φ differences are evaluated in log space (``scipy.special.log_ndtr``) so that tiny σ_l
neither underflows nor returns NaN.

The DP-SGD / Proj-DP-SGD baselines are (ε, δ)-DP through dp-accounting's RDP accountant for the
Poisson-subsampled Gaussian (:func:`dpsgd_noise_multiplier`, :func:`dpsgd_epsilon`); no RDP
formula is written here.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy.optimize import brentq
from scipy.special import log_ndtr, logsumexp, ndtr

from .validation import check_array, check_choice, check_float, check_int, check_positive, nested, skip_nested

C_MODES = ("paper", "plus")
COMPOSITIONS = ("paper", "amplified")

__all__ = [
    "check_bits",
    "check_q",
    "check_sigma",
    "log_phi_diff",
    "log_mix",
    "q_min",
    "rr_limit",
    "eps_step",
    "eps_step_bound",
    "composition_factor",
    "eps_total",
    "per_step_target",
    "solve_q",
    "solve_sigma",
    "gaussian_sigma",
    "dpsgd_noise_multiplier",
    "dpsgd_epsilon",
]


# ---------------------------------------------------------------------------------- validation
def check_bits(b) -> int:
    """``b`` must be an integer in [1, 30] (number of quantization bits)."""
    return check_int("b (quantization bits)", b, low=1, high=30)


def check_sigma(sigma, name: str = "sigma") -> np.ndarray:
    """A noise std (scalar or array): finite and > 0 everywhere (float64 array)."""
    arr = check_array(name, sigma, low=0.0)
    if np.any(arr <= 0):
        raise ValueError(f"{name} must be finite and > 0, got {sigma!r}")
    return arr


def q_min(b: int) -> float:
    """Smallest meaningful q: 1/2^b, where the output is uniform over the levels (ε_t = 0)."""
    return 1.0 / 2 ** check_bits(b)


def check_q(q, b: int) -> np.ndarray:
    """q must lie in [1/2^b, 1]: below 1/2^b the nearest level is *less* likely than the others.

    The paper's Algorithm 1 states q ∈ [1/(2^b − 1), 1); we accept the closed range [1/2^b, 1]
    (1/2^b: output independent of the input; 1: the deterministic projection).
    """
    lo = q_min(b)
    arr = check_array("q", q)
    if np.any(arr < lo - 1e-15) or np.any(arr > 1.0):
        raise ValueError(f"q must be in [1/2^b, 1] = [{lo:g}, 1] for b={b}, got {q!r}")
    return np.clip(arr, lo, 1.0)


# ---------------------------------------------------------------------------------- Theorem 1
def _bound_array(name: str, value, *, allow_neg_inf: bool, allow_pos_inf: bool) -> np.ndarray:
    """A float array that may hold the infinities the caller names (never NaN)."""
    arr = check_array(name, value, finite=False)
    bad = np.isnan(arr)
    if not allow_neg_inf:
        bad |= np.isneginf(arr)
    if not allow_pos_inf:
        bad |= np.isposinf(arr)
    if np.any(bad):
        allowed = " or ".join(x for x, ok in (("-inf", allow_neg_inf), ("+inf", allow_pos_inf)) if ok)
        raise ValueError(f"{name} must be real numbers{' (' + allowed + ' allowed)' if allowed else ''}, "
                         f"got {arr[bad].ravel()[0]}")
    return arr


def _broadcast(**arrays) -> list[np.ndarray]:
    try:
        return np.broadcast_arrays(*arrays.values())
    except ValueError:
        shapes = ", ".join(f"{k} {tuple(np.shape(v))}" for k, v in arrays.items())
        raise ValueError(f"{' and '.join(arrays)} must broadcast together, got shapes {shapes}") from None


def log_phi_diff(lo, hi):
    """log(Φ(hi) − Φ(lo)) for lo ≤ hi, accurate in both tails (elementwise, broadcast).

    ``lo`` may be −∞ and ``hi`` +∞ (semi-infinite cells); NaN and lo > hi are rejected.
    Inside a checked caller (:func:`qlib.validation.skip_nested`) the bounds are not checked.
    """
    if not nested():
        lo = _bound_array("lo", lo, allow_neg_inf=True, allow_pos_inf=False)
        hi = _bound_array("hi", hi, allow_neg_inf=False, allow_pos_inf=True)
        lo, hi = _broadcast(lo=lo, hi=hi)
        if np.any(lo > hi):
            i = np.flatnonzero(lo > hi)[0]
            raise ValueError(f"lo must be <= hi elementwise, got lo={lo.ravel()[i]} > hi={hi.ravel()[i]}")
    lo, hi = np.broadcast_arrays(np.asarray(lo, float), np.asarray(hi, float))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # upper tail (lo >= 0): Φ(-lo) − Φ(-hi)
        up = log_ndtr(-lo) + np.log1p(-np.exp(log_ndtr(-hi) - log_ndtr(-lo)))
        # lower tail (hi <= 0): Φ(hi) − Φ(lo)
        low = log_ndtr(hi) + np.log1p(-np.exp(log_ndtr(lo) - log_ndtr(hi)))
        straddle = np.log(ndtr(hi) - ndtr(lo))  # both ends on either side of 0: no cancellation
    return np.where(lo >= 0, up, np.where(hi <= 0, low, straddle))


def log_mix(log_p, A, B):
    """log(A·p + B) with A ≥ 0, B ≥ 0, from log p (elementwise, broadcast; log p = −∞ is p = 0).
    Inside a checked caller (:func:`qlib.validation.skip_nested`) the arguments are not checked."""
    if not nested():
        log_p = _bound_array("log_p", log_p, allow_neg_inf=True, allow_pos_inf=False)
        A = check_array("A", A, low=0.0)
        B = check_array("B", B, low=0.0)
        _broadcast(log_p=log_p, A=A, B=B)
    with np.errstate(divide="ignore"):
        terms = np.stack(np.broadcast_arrays(np.log(A) + log_p, np.log(B)), axis=0)
    return logsumexp(terms, axis=0)


def rr_limit(q, b: int) -> np.ndarray:
    """σ → 0 limit of ε_t (k-ary randomized response): log(q(2^b − 1)/(1 − q)); an upper bound."""
    b = check_bits(b)
    q = check_q(q, b)
    with np.errstate(divide="ignore"):
        return np.log(q * (2**b - 1)) - np.log1p(-q)


def eps_step(q, sigma, *, b: int, M: float, rho: float, eta: float, m: int, c_mode: str = "paper"):
    """Per-step ε_t of Theorem 1 (eq. after (10)), exactly as printed with ``c_mode="paper"``.

    ``q`` and ``sigma`` broadcast (numpy); returns a float for scalar input, else an array.
    ``sigma`` is the std of G_t added to the *summed* gradient (Algorithm 2, step 4).
    """
    b = check_bits(b)
    M = check_positive("M", M)
    rho = check_positive("rho", rho)
    eta = check_positive("eta", eta)
    m = check_int("m (mini-batch size)", m, low=1)
    check_choice("c_mode", c_mode, C_MODES)
    q_arr = check_q(q, b)
    s_arr = check_sigma(sigma)
    L = 2**b
    h = M / (L - 1)
    C = M - eta * rho if c_mode == "paper" else M + eta * rho
    s = eta * s_arr / m
    A = (L * q_arr - 1.0) / (L - 1)
    B = (1.0 - q_arr) / (L - 1)
    with skip_nested():  # valid bounds and weights by construction
        log_num = log_mix(log_phi_diff(-h / s, h / s), A, B)
        log_den = log_mix(log_phi_diff((M - h + C) / s, (M + h + C) / s), A, B)
    with np.errstate(invalid="ignore"):
        out = np.where(A <= 0, 0.0, log_num - log_den)  # q = 1/2^b: both pmfs uniform, ε_t = 0
    return float(out) if out.ndim == 0 else out


def eps_step_bound(q, sigma, *, b: int, M: float, rho: float, eta: float, m: int):
    """A valid per-step bound in place of Theorem 1's ε_t (not in the paper): one coordinate, any
    adjacency.

    One step outputs level i with probability A·p_i(μ) + B, p_i(μ) the mass of cell i under
    N(μ, σ_l²), σ_l = ησ/m, with the exact cells of eq. (9) (end cells semi-infinite) and μ = f_sgd in
    the feasible range R = [−M − ηρ, M + ηρ]. For any μ, μ' ∈ R and any i the likelihood ratio is at
    most (A·p_max + B)/(A·p_min + B), with p_max = max_i sup_{μ∈R} p_i(μ) and p_min = min_i inf_{μ∈R}
    p_i(μ): this is the log of that ratio. The proof of Theorem 1 has the same form but takes
    p_max = 2Φ(a1/σ_l) − 1 (a finite cell centred on μ; an end cell reaches Φ((h + ηρ)/σ_l), more) and
    p_min at distance M + C with C = M − ηρ (the far end of R is at 2M + ηρ − h from the nearest edge
    of the first cell). Each p_i(μ) is log-concave in μ, so its infimum over R is at an end of R and
    its supremum at the cell's centre clipped to R: both are evaluated exactly.

    Like ε_t it is per coordinate (no factor d). It needs no adjacency: it bounds the loss between
    any two attainable means, so it holds under replace-one and add-remove alike. It is finite at
    q = 1 (B = 0) and never above the σ → 0 limit log(q(2^b − 1)/(1 − q)). ``q`` and ``sigma``
    broadcast; returns a float for scalar input, else an array.
    """
    b = check_bits(b)
    M = check_positive("M", M)
    rho = check_positive("rho", rho)
    eta = check_positive("eta", eta)
    m = check_int("m (mini-batch size)", m, low=1)
    q_arr = check_q(q, b)
    s_arr = check_sigma(sigma)
    q_arr, s_arr = _broadcast(q=q_arr, sigma=s_arr)
    L = 2**b
    h = M / (L - 1)
    lv = -M + 2 * h * np.arange(L)
    lo_e, hi_e = lv - h, lv + h
    lo_e[0], hi_e[-1] = -np.inf, np.inf
    r_lo, r_hi = -M - eta * rho, M + eta * rho
    centre = np.clip(lv, r_lo, r_hi)
    centre[0], centre[-1] = r_lo, r_hi  # the end cells' masses grow toward the range's ends
    sl = (eta * s_arr / m)[..., None, None]  # (..., 1, 1)
    mus = np.stack([np.full(L, r_lo), np.full(L, r_hi), centre], axis=-1)  # (L, 3)
    with np.errstate(invalid="ignore"), skip_nested():  # ordered edges, σ_l > 0
        lp = log_phi_diff((lo_e[:, None] - mus) / sl, (hi_e[:, None] - mus) / sl)  # (..., L, 3)
    log_pmax = lp.max(axis=(-2, -1))
    log_pmin = lp[..., :2].min(axis=(-2, -1))
    A = (L * q_arr - 1.0) / (L - 1)
    B = (1.0 - q_arr) / (L - 1)
    with skip_nested():
        out = log_mix(log_pmax, A, B) - log_mix(log_pmin, A, B)
    with np.errstate(invalid="ignore"):
        out = np.where(A <= 0, 0.0, out)
    return float(out) if out.ndim == 0 else out


def _check_step_kw(*, M, rho, eta, m, c_mode) -> None:
    """The keywords of :func:`eps_step` besides q, σ and b, checked once before a root search."""
    check_positive("M", M)
    check_positive("rho", rho)
    check_positive("eta", eta)
    check_int("m (mini-batch size)", m, low=1)
    check_choice("c_mode", c_mode, C_MODES)


def composition_factor(T: int, m: int, n: int) -> float:
    """T·m/n, the paper's multiplier from per-step to total ε (1.010989 for Diagnostic)."""
    T = check_int("T (iterations)", T, low=1)
    m = check_int("m (mini-batch size)", m, low=1)
    n = check_int("n (training-set size, >= m)", n, low=m)
    return T * m / n


def eps_total(q, sigma, *, b, M, rho, eta, m, T, n, c_mode="paper", composition="paper"):
    """Total ε of T steps: T·(m/n)·ε_t (``composition="paper"``), or the pure-DP subsampling
    bound T·log(1 + (m/n)(e^{ε_t} − 1)) (``"amplified"``, which is never smaller).

    Its keywords are the symbols of Theorem 1 (b, M, ρ, η, m, T, n): a formula evaluated, not a driver,
    so they stay arguments rather than a settings record.
    """
    check_choice("composition", composition, COMPOSITIONS)
    et = np.asarray(eps_step(q, sigma, b=b, M=M, rho=rho, eta=eta, m=m, c_mode=c_mode))
    k = composition_factor(T, m, n)
    if composition == "paper":
        out = k * et
    else:
        out = T * np.log1p((m / n) * np.expm1(et))
    return float(out) if out.ndim == 0 else out


def per_step_target(eps: float, *, m: int, T: int, n: int, composition: str = "paper") -> float:
    """The ε_t that makes the total equal ``eps`` (inverse of the composition)."""
    eps = check_positive("eps", eps)
    check_choice("composition", composition, COMPOSITIONS)
    k = composition_factor(T, m, n)
    if composition == "paper":
        return eps / k
    return float(np.log1p(np.expm1(eps / T) * n / m))


def solve_q(eps, sigma, *, b, M, rho, eta, m, T, n, c_mode="paper", composition="paper", q_floor=None):
    """q such that the total ε equals ``eps`` at noise ``sigma`` ("q is calculated by Theorem 1").

    ε_t is increasing in q (A/B = (2^b q − 1)/(1 − q) increases), 0 at q = 1/2^b, so a root always
    exists on [1/2^b, 1) unless the deterministic projection (q = 1) already meets the target, in
    which case 1.0 is returned. ``sigma`` may be an array (one root per entry).

    ``q_floor`` (e.g. 1/(2^b − 1), the lower end of Algorithm 1's range): a solution below it makes
    the (ε, σ) pair infeasible for that range, and a ValueError says why and what to change.

    Its keywords are the symbols of Theorem 1 (b, M, ρ, η, m, T, n) that the root depends on: a solver,
    not a driver, so they stay arguments rather than a settings record.
    """
    b = check_bits(b)
    q_floor = check_float("q_floor", q_floor, low=0.0, high=1.0, allow_none=True)
    _check_step_kw(M=M, rho=rho, eta=eta, m=m, c_mode=c_mode)
    target = per_step_target(eps, m=m, T=T, n=n, composition=composition)
    sig = check_sigma(sigma)
    kw = dict(b=b, M=M, rho=rho, eta=eta, m=m, c_mode=c_mode)
    lo, hi = q_min(b), 1.0 - 1e-12

    def one(s):
        if eps_step(1.0, s, **kw) <= target:
            return 1.0
        if eps_step(hi, s, **kw) <= target:
            return hi
        return brentq(lambda qq: eps_step(qq, s, **kw) - target, lo, hi, xtol=1e-14, rtol=1e-13, maxiter=500)

    out = np.array([one(float(s)) for s in sig.ravel()]).reshape(sig.shape)
    if q_floor is not None and np.any(out < q_floor):
        bad = sig[out < q_floor].ravel()[0]
        raise ValueError(
            f"infeasible (eps={eps}, sigma={bad:g}) for q >= q_floor={q_floor:g}: meeting eps at this noise "
            f"needs q = {out[out < q_floor].ravel()[0]:.4g} (more quantization randomness than allowed); "
            f"increase sigma or eps, or lower q_floor"
        )
    return float(out) if out.ndim == 0 else out


def solve_sigma(eps, q, *, b, M, rho, eta, m, T, n, c_mode="paper", composition="paper", sigma_max=1e6):
    """The inverse: the noise σ at which RQP-SGD with coefficient ``q`` has total ε = ``eps``.

    ε_t decreases in σ from the randomized-response limit log(q(2^b − 1)/(1 − q)) (σ → 0) to 0.
    If that limit is already ≤ the per-step target, no noise is needed and 0.0 is returned.

    Its keywords are the symbols of Theorem 1 (b, M, ρ, η, m, T, n) that the root depends on: a solver,
    not a driver, so they stay arguments rather than a settings record.
    """
    b = check_bits(b)
    _check_step_kw(M=M, rho=rho, eta=eta, m=m, c_mode=c_mode)
    sigma_min = 1e-8 * m / eta  # lower end of the search (σ_l = 1e-8)
    sigma_max = check_float("sigma_max", sigma_max, low=sigma_min, low_open=True)
    target = per_step_target(eps, m=m, T=T, n=n, composition=composition)
    qs = check_q(q, b)
    kw = dict(b=b, M=M, rho=rho, eta=eta, m=m, c_mode=c_mode)

    def one(qq):
        if qq < 1.0 and rr_limit(qq, b) <= target:
            return 0.0
        f = lambda ls: eps_step(qq, math.exp(ls), **kw) - target  # noqa: E731
        lo, hi = math.log(sigma_min), math.log(sigma_max)
        if f(lo) <= 0:
            return 0.0
        if f(hi) > 0:
            raise ValueError(f"no sigma <= sigma_max={sigma_max:g} reaches eps={eps} at q={qq}")
        return math.exp(brentq(f, lo, hi, xtol=1e-14, rtol=1e-13, maxiter=500))

    out = np.array([one(float(x)) for x in qs.ravel()]).reshape(qs.shape)
    return float(out) if out.ndim == 0 else out


# ---------------------------------------------------------------------------------- baselines
def gaussian_sigma(eps, delta, sens: float = 1.0) -> float:
    """Classic Gaussian mechanism (Dwork & Roth Thm A.1, quoted in §2 of the paper):
    σ = sens·sqrt(2 log(1.25/δ))/ε. Dwork & Roth require ε < 1; the paper omits it (erratum), so
    ε ≥ 1 is accepted here and only the formula is evaluated."""
    eps = check_positive("eps", eps)
    delta = check_float("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    sens = check_positive("sens", sens)
    return sens * math.sqrt(2.0 * math.log(1.25 / delta)) / eps


def _rdp_event(z: float, rate: float, steps: int):
    import dp_accounting  # deferred: dp-accounting is optional (the book extra)

    return dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(rate, dp_accounting.GaussianDpEvent(z)), steps
    )


def dpsgd_epsilon(z: float, delta: float, sample_rate: float, steps: int) -> float:
    """ε of DP-SGD with noise multiplier z (std z·clip on the clipped sum), from dp-accounting's
    RdpAccountant (Poisson-subsampled Gaussian, add-or-remove-one, default orders)."""
    from dp_accounting.rdp import RdpAccountant  # deferred: dp-accounting is optional (the book extra)

    z = check_positive("z (noise multiplier)", z)
    delta = check_float("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    rate = check_float("sample_rate", sample_rate, low=0.0, high=1.0, low_open=True)
    steps = check_int("steps", steps, low=1)
    acc = RdpAccountant()
    acc.compose(_rdp_event(z, rate, steps))
    return float(acc.get_epsilon(delta))


def dpsgd_noise_multiplier(eps: float, delta: float, sample_rate: float, steps: int) -> float:
    """Smallest noise multiplier z for which DP-SGD is (ε, δ)-DP (dp-accounting calibration).

    Results are cached per (ε, δ, rate, steps): a calibration runs the accountant dozens of times.
    """
    eps = check_positive("eps", eps)
    delta = check_float("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    rate = check_float("sample_rate", sample_rate, low=0.0, high=1.0, low_open=True)
    steps = check_int("steps", steps, low=1)
    return _calibrate(eps, delta, rate, steps)


@functools.lru_cache(maxsize=1024)
def _calibrate(eps: float, delta: float, rate: float, steps: int) -> float:
    import dp_accounting  # deferred: dp-accounting is optional (the book extra)
    from dp_accounting.rdp import RdpAccountant

    return float(
        dp_accounting.calibrate_dp_mechanism(
            RdpAccountant,
            lambda z: _rdp_event(z, rate, steps),
            eps,
            delta,
            dp_accounting.LowerEndpointAndGuess(1e-3, 1.0),
            tol=1e-6,
        )
    )
