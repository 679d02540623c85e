"""Empirical-mean algorithms on Gaussian data: Theorem 5.1 of paper 003 made exact.

For P = N(μ, Σ) on R^d and θ̂_n = (1/n) Σ z_j (or any injective function of it), whitening gives,
with ρ = n^{-1/2}, Δ_n = TV(N(0, I_2d), N(0, diag((1+ρ)I_d, (1−ρ)I_d))), independent of μ, Σ:

    Δ_n = P(X − Y > c) − P(X/(1+ρ) − Y/(1−ρ) > c),   X, Y iid χ²_d,  c = (d/ρ) ln(1 − ρ²).

Also: the d = 2 closed form, the mixture form E_v TV(N(0,I), N(v/√n, (n−1)/n I)) (the last step of
App. G), m_1(d) = E‖N(0, I_d)‖, the explicit bound Δ_n ≤ √d/(2n) + m_1/(2√n) (Theorem 5.1 with the
CLT terms = 0 for Gaussian data), Proposition G.1 and Remark 5.1 (whose proof drops a factor 2;
the stated condition is nevertheless sufficient — :func:`remark51_n`).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln
from scipy.stats import chi, chi2, norm

from qlib.validation import check_float, check_int, check_positive, check_probability


def _dim(d) -> int:
    return check_int("d", d, low=1, integral_float=True)


def _p_ax_minus_by_gt(a: float, b: float, c: float, d: int) -> float:
    """P(aX − bY > c) for X, Y iid χ²_d, a, b > 0: ∫ f_{χ²_d}(y) SF((c + b y)/a) dy.

    Substituting y = u² removes the y^{d/2−1} singularity at 0; the integral over u is taken by
    composite Gauss–Legendre, split at the kink u_0 = sqrt(max(0, −c/b)) where the SF argument
    crosses 0 (without the split the error is ~3e−7; with it, below 1e−10 against the d = 2 closed form and the mixture form).
    """
    y0 = max(0.0, -c / b)
    umax = math.sqrt(chi2.isf(1e-18, d))
    u0 = min(math.sqrt(y0), umax)
    # the SF has a square-root singularity at the kink: grade the mesh geometrically to its right
    grade = [u0 + (umax - u0) * 2.0**-k for k in range(1, 40)]
    edges = sorted({0.0, u0, umax, *grade})
    f = lambda u: chi2.pdf(u * u, d) * 2 * u * chi2.sf((c + b * u * u) / a, d)  # noqa: E731
    return _composite_gl(f, edges, width=0.25 if d > 1 else 0.125)


def gaussian_mean_delta(n: int, d: int) -> float:
    """Exact Δ_n of the empirical mean on N(μ, Σ) data in R^d (chi-square integral form)."""
    n, d = check_int("n", n, low=1, integral_float=True), _dim(d)
    if n == 1:
        return 1.0
    rho = 1 / math.sqrt(n)
    c = (d / rho) * math.log1p(-rho * rho)
    return _p_ax_minus_by_gt(1.0, 1.0, c, d) - _p_ax_minus_by_gt(1 / (1 + rho), 1 / (1 - rho), c, d)


def gaussian_mean_delta_d2(n: int) -> float:
    """d = 2 closed form: ((1+ρ)/2)(1−ρ²)^{(1−ρ)/ρ} − (1/2)(1−ρ²)^{1/ρ}."""
    n = check_int("n", n, low=1, integral_float=True)
    if n == 1:
        return 1.0
    r = 1 / math.sqrt(n)
    return (1 + r) / 2 * (1 - r * r) ** ((1 - r) / r) - 0.5 * (1 - r * r) ** (1 / r)


_GL_X, _GL_W = np.polynomial.legendre.leggauss(48)


def _composite_gl(f, edges, width: float = 0.5) -> float:
    """∫ f over [edges[0], edges[-1]] by 48-point Gauss–Legendre on pieces of width ≤ ``width``
    that never straddle an edge (f vectorised, smooth between the given edges)."""
    xs, ws = [], []
    for lo, hi in zip(edges[:-1], edges[1:]):
        if hi <= lo:
            continue
        m = max(1, math.ceil((hi - lo) / width))
        b = np.linspace(lo, hi, m + 1)
        half = 0.5 * np.diff(b)[:, None]
        xs.append(((b[:-1, None] + b[1:, None]) * 0.5 + half * _GL_X[None, :]).ravel())
        ws.append((half * _GL_W[None, :]).ravel())
    x, w = np.concatenate(xs), np.concatenate(ws)
    return float((f(x) * w).sum())


def tv_gauss_shift_scale(a: float, s2: float, d: int) -> float:
    """‖N(0, I_d) − N(a e_1, s² I_d)‖_TV for s² < 1 (the inner distance of the last step of App. G).

    E_{x~N(0,I)}[(1 − f_2/f_1)_+], with the coordinates orthogonal to e_1 integrated in closed form
    (χ²_{d−1} survival functions) and x_1 by composite Gauss–Legendre split at the kinks A(x_1) = 0.
    """
    d = _dim(d)
    a = check_float("a", a)
    s2 = check_float("s2", s2, low=0.0, high=1.0, low_open=True, high_open=True)
    B = 0.5 * (1 - 1 / s2)
    k = d - 1
    qa, qb, qc = 0.5 - 0.5 / s2, a / s2, -(a * a) / (2 * s2) - 0.5 * d * math.log(s2)

    def g(x1):
        A = qa * x1 * x1 + qb * x1 + qc
        if k == 0:
            inner = np.where(A >= 0, 0.0, -np.expm1(np.minimum(A, 0.0)))
        else:
            w0 = np.maximum(0.0, A / -B)
            log2 = A - 0.5 * k * math.log(1 - 2 * B) + chi2.logsf(w0 * (1 - 2 * B), k)
            inner = np.maximum(0.0, chi2.sf(w0, k) - np.exp(np.minimum(log2, 700.0)))
        return norm.pdf(x1) * inner

    L = 14.0
    disc = qb * qb - 4 * qa * qc
    pts = [(-qb + sg * math.sqrt(disc)) / (2 * qa) for sg in (-1, 1)] if disc > 0 else []
    edges = sorted({-L, L, *[min(max(t, -L), L) for t in pts]})
    return _composite_gl(g, edges)


def gaussian_mean_delta_mixture(n: int, d: int) -> float:
    """Δ_n = E_v TV(N(0, I_d), N(v/√n, ((n−1)/n) I_d)), v ~ N(0, I_d) (independent check)."""
    n, d = check_int("n", n, low=1, integral_float=True), _dim(d)
    if n == 1:
        return 1.0
    s2 = (n - 1) / n
    rmax = math.sqrt(d) + 12.0
    f = np.vectorize(lambda r: chi.pdf(r, d) * tv_gauss_shift_scale(r / math.sqrt(n), s2, d))
    return _composite_gl(f, [0.0, rmax], width=1.0)


def m1(d: int) -> float:
    """m_1(d) = E‖N(0, I_d)‖_2 = √2 Γ((d+1)/2) / Γ(d/2)."""
    d = _dim(d)
    return math.sqrt(2) * math.exp(gammaln((d + 1) / 2) - gammaln(d / 2))


def gaussian_mean_bound(n: int, d: int) -> float:
    """Theorem 5.1 made explicit for Gaussian data: Δ_n ≤ √d/(2n) + m_1/(2√n)."""
    n, d = check_int("n", n, low=1, integral_float=True), _dim(d)
    return math.sqrt(d) / (2 * n) + m1(d) / (2 * math.sqrt(n))


def gaussian_mean_limit(d: int) -> float:
    """lim √n Δ_n = m_1/√(2π) = Γ((d+1)/2)/(√π Γ(d/2))."""
    d = _dim(d)
    return m1(d) / math.sqrt(2 * math.pi)


def prop_g1_tv(beta_norm: float, n: int, d: int) -> float:
    """Exact ‖N(0, I_d) − N(β/√n, ((n−1)/n) I_d)‖_TV (left side of Proposition G.1), n ≥ 2."""
    n = check_int("n", n, low=2, integral_float=True)
    beta_norm = check_float("beta_norm", beta_norm, low=0.0)
    return tv_gauss_shift_scale(beta_norm / math.sqrt(n), (n - 1) / n, d)


def prop_g1_bound(beta_norm: float, n: int, d: int) -> float:
    """Right side of Proposition G.1: √d/(2n) + ‖β‖/(2√n)."""
    beta_norm = check_float("beta_norm", beta_norm, low=0.0)
    n = check_int("n", n, low=1, integral_float=True)
    return math.sqrt(_dim(d)) / (2 * n) + beta_norm / (2 * math.sqrt(n))


def remark51_n(c: float, d: int, eps: float) -> int:
    """Remark 5.1's sufficient sample size ⌈ε^{-2} c² (1 + √d/c²)^{3/2}⌉."""
    c, d = check_positive("c", c), _dim(d)
    eps = check_probability("eps", eps, open_low=True, open_high=True)
    return math.ceil(c * c / eps**2 * (1 + math.sqrt(d) / c**2) ** 1.5)


def remark51_n_exact(c: float, d: int, eps: float) -> float:
    """Exact threshold n* solving c x + (√d/2) x² = ε with x = n^{-1/2} (Appendix G of paper 003, the proof of
    Remark 5.1): Δ_n ≤ ε, a security of at least 1 − ε, for every n ≥ n*. ``c`` > 0, ``d`` ≥ 1 and ``eps`` in
    (0, 1), as :func:`remark51_n` (ε ≥ 1 asks nothing, since Δ_n ≤ 1 always, and ε = 0 no finite n meets);
    ``math.inf`` where n* exceeds the float range. Computed as ((c + √(c² + 2ε√d)) / (2ε))², the root
    x = 2ε / (c + √(c² + 2ε√d)) without the cancellation of (−c + √(c² + 2ε√d)) / √d when ε√d ≪ c²."""
    c, d = check_positive("c", c), _dim(d)
    eps = check_probability("eps", eps, open_low=True, open_high=True)
    root = math.hypot(c, math.sqrt(2 * eps * math.sqrt(d)))   # √(c² + 2ε√d), without overflow of c²
    t = (c + root) / (2 * eps)
    return t * t


def remark51_lhs(c: float, d: int, n: float) -> float:
    """c n^{-1/2} + √d/(2n), the right side of Eq. 9 with c_{L,P} = c (n > 0, real-valued)."""
    c, d, n = check_positive("c", c), _dim(d), check_positive("n", n)
    return c / math.sqrt(n) + math.sqrt(d) / (2 * n)


def gaussian_bayes_log_ratio(u: np.ndarray, w: np.ndarray, n: int) -> np.ndarray:
    """log q/p of the member vs non-member pair at (u = √n(θ̂ − μ), w = z̃ − μ), whitened (the Gaussian joint laws of the member and non-member pairs).

    ``u`` and ``w``: real arrays of the same shape (..., d); ``n >= 2``. Checked cheaply (this runs
    once per batch of the game): the finiteness is checked on the result."""
    n = check_int("n", n, low=2, integral_float=True)
    arrs = []
    for name, v in (("u", u), ("w", w)):
        a = None if v is None or isinstance(v, (str, bytes)) else np.asarray(v)
        if a is None or a.dtype.kind not in "fiu":
            raise TypeError(f"{name} must be a real array, got {type(v).__name__}"
                            + ("" if a is None else f" of dtype {a.dtype}"))
        if a.ndim == 0 or a.size == 0:
            raise ValueError(f"{name} must be a non-empty array of points (..., d), got shape {a.shape}")
        arrs.append(a)
    u, w = arrs
    if u.shape != w.shape:
        raise ValueError(f"u and w must have the same shape, got {u.shape} and {w.shape}")
    rho = 1 / math.sqrt(n)
    d = u.shape[-1]
    uu, ww, uw = (u * u).sum(-1), (w * w).sum(-1), (u * w).sum(-1)
    out = -0.5 * d * math.log1p(-rho * rho) - 0.5 * ((uu - 2 * rho * uw + ww) / (1 - rho * rho) - uu - ww)
    if not np.all(np.isfinite(out)):
        raise ValueError("u and w must be finite (no NaN or inf)")
    return out


__all__ = [
    "gaussian_mean_delta", "gaussian_mean_delta_d2", "tv_gauss_shift_scale", "gaussian_mean_delta_mixture",
    "m1", "gaussian_mean_bound", "gaussian_mean_limit", "prop_g1_tv", "prop_g1_bound", "remark51_n",
    "remark51_n_exact", "remark51_lhs", "gaussian_bayes_log_ratio",
]
