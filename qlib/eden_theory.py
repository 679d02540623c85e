"""EDEN's closed forms and bounds (paper 002, {cite:p}`vargaftik2022eden`): what the codec
(:mod:`qlib.eden`) achieves, computed without running it.

* The Lloyd–Max codebooks for N(0, 1) (:func:`lloyd_max`, :func:`codebook`), solved by Newton's method
  to float64 precision, and the moments of any interval quantizer (:func:`quantizer_stats`).
* The vNMSE: its limit as d → ∞ (:func:`limit_vnmse`: Corollaries 2.4, 4.2, Lemma 4.3, the mixture of
  §2.6), its expectation for the codec's vectors zero-padded to a power of two (:func:`expected_vnmse`,
  our derivation), and the rate–distortion bound
  (:func:`rd_bound`).
* The entropy-coded quantizer of Appendix G (:func:`ee_cells`, :func:`ee_stats`, :func:`ee_delta`) and
  Figure 4's Lloyd–Max + entropy coding curve (:func:`lm_entropy_coded_vnmse`).
* Several clients (Lemma 2.2): each client's budget and loss rate (:func:`client_budgets`), the
  NMSE in closed form (:func:`nmse_theory`), and the measured errors :func:`vnmse` and :func:`nmse`.
* The argument checks shared with the codec and the compressors: :func:`check_bits`,
  :func:`check_loss`, :func:`check_vectors`.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Sequence

import numpy as np
import torch
from scipy import optimize, stats
from scipy.linalg import solve_banded

from . import hadamard as _h
from .validation import check_alloc, check_array, check_float, check_int, check_tensor

__all__ = [
    "MAX_BITS",
    "check_bits",
    "check_loss",
    "check_vectors",
    "lloyd_max",
    "codebook",
    "quantizer_stats",
    "limit_vnmse",
    "mixture_moment",
    "expected_vnmse",
    "message_sizes",
    "rd_bound",
    "ee_cells",
    "ee_delta",
    "ee_stats",
    "lm_entropy_coded_vnmse",
    "client_budgets",
    "nmse_theory",
    "vnmse",
    "nmse",
]

MAX_BITS = 8
_phi = stats.norm.pdf


# ------------------------------------------------------------------------------------------------
# Normal integrals and codebooks
# ------------------------------------------------------------------------------------------------
def _cell_prob(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """P(lo ≤ z ≤ hi) for z ~ N(0,1), accurate in both tails."""
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    right = stats.norm.sf(lo) - stats.norm.sf(hi)
    left = stats.norm.cdf(hi) - stats.norm.cdf(lo)
    return np.where(lo >= 0, right, left)


def _cell_mass_center(lo, hi):
    p = _cell_prob(lo, hi)
    lo, hi = np.broadcast_arrays(np.asarray(lo, float), np.asarray(hi, float))
    edge = np.where(np.isfinite(lo), lo, np.where(np.isfinite(hi), hi, 0.0))  # cells of mass 0
    return p, np.divide(_phi(lo) - _phi(hi), p, out=edge.copy(), where=p > 0)


def quantizer_stats(thresholds: np.ndarray, centroids: np.ndarray | None = None) -> dict:
    """Moments of the interval quantizer with these sorted thresholds for z ~ N(0,1).

    ``centroids`` default to the centers of mass (then ``E[zQ] = E[Q²]``). Returns the cell
    probabilities, ``E_Q2 = E[Q(z)²]``, ``E_zQ``, ``mse = E[(z − Q)²]``, ``entropy`` (bits) and the
    vNMSE limit ``E[Q²]/E[zQ]² − 1`` (= ``1/E[Q²] − 1`` for centers of mass, Corollary 2.4).
    ``thresholds``: a non-empty, finite, non-decreasing 1-D array (a one-value quantizer has no
    thresholds and no vNMSE: ``E[zQ] = 0``); ``centroids``: one more value than thresholds.
    """
    thr = check_array("thresholds", thresholds, ndim=1)
    if np.any(np.diff(thr) < 0):
        raise ValueError("thresholds must be sorted (non-decreasing)")
    if centroids is not None:
        centroids = check_array("centroids", centroids, ndim=1)
        if centroids.shape[0] != thr.shape[0] + 1:
            raise ValueError(f"centroids must have one value per cell ({thr.shape[0] + 1}), got {centroids.shape[0]}")
    t = np.concatenate([[-np.inf], thr, [np.inf]])
    p, com = _cell_mass_center(t[:-1], t[1:])
    q = com if centroids is None else centroids
    e_q2 = float(np.sum(p * q * q))
    e_zq = float(np.sum(q * (_phi(t[:-1]) - _phi(t[1:]))))
    nz = p > 0
    entropy = float(-np.sum(p[nz] * np.log2(p[nz])))
    return {
        "probs": p,
        "centroids": q,
        "E_Q2": e_q2,
        "E_zQ": e_zq,
        "mse": 1.0 - 2 * e_zq + e_q2,
        "entropy": entropy,
        "vnmse_limit": e_q2 / e_zq**2 - 1.0,
    }


def _compander_start(levels: int) -> np.ndarray:
    # Panter–Dite point density ∝ φ^{1/3}: centroids ≈ √3 Φ^{-1}((i + ½)/L)
    c = math.sqrt(3.0) * stats.norm.ppf((np.arange(levels) + 0.5) / levels)
    return (c[:-1] + c[1:]) / 2


@lru_cache(maxsize=None)
def _lloyd_max_cached(levels: int, tol: float) -> tuple[tuple[float, ...], tuple[float, ...]]:
    if levels == 1:
        return (0.0,), ()
    t = _compander_start(levels)
    for _ in range(30):  # a few Lloyd iterations make Newton's basin safe
        c = _cell_mass_center(np.r_[-np.inf, t], np.r_[t, np.inf])[1]
        t = (c[:-1] + c[1:]) / 2
    for _ in range(100):  # Newton on g(t) = t − (c_{i-1} + c_i)/2 with the tridiagonal Jacobian
        lo, hi = np.r_[-np.inf, t], np.r_[t, np.inf]
        p, c = _cell_mass_center(lo, hi)
        g = t - (c[:-1] + c[1:]) / 2
        if np.max(np.abs(g)) < tol:
            break
        # dc_i/dt_i = φ(t_i)(c_i − t_i)/p_i ; dc_i/dt_{i+1} = φ(t_{i+1})(t_{i+1} − c_i)/p_i
        dlo = np.where(np.isfinite(lo), _phi(lo) * (c - np.where(np.isfinite(lo), lo, 0)) / p, 0.0)
        dhi = np.where(np.isfinite(hi), _phi(hi) * (np.where(np.isfinite(hi), hi, 0) - c) / p, 0.0)
        n = len(t)
        # row i (threshold i sits between cells i and i+1)
        diag = 1 - (dhi[:-1] + dlo[1:]) / 2
        lower = -dlo[:-1][1:] / 2  # d g_i / d t_{i-1}: from c_i's lower edge  (cell i lower = t_{i-1})
        upper = -dhi[1:][:-1] / 2  # d g_i / d t_{i+1}: from c_{i+1}'s upper edge
        ab = np.zeros((3, n))
        ab[0, 1:] = upper
        ab[1] = diag
        ab[2, :-1] = lower
        step = solve_banded((1, 1), ab, g)
        t = t - step
        t = (t - t[::-1]) / 2  # keep exact odd symmetry
    c = _cell_mass_center(np.r_[-np.inf, t], np.r_[t, np.inf])[1]
    c = (c - c[::-1]) / 2
    if np.max(np.abs(t - (c[:-1] + c[1:]) / 2)) > max(tol, 1e-12) * 10:
        raise RuntimeError(f"Lloyd–Max for {levels} levels did not converge")
    return tuple(c.tolist()), tuple(t.tolist())


def lloyd_max(levels: int, tol: float = 1e-13) -> tuple[np.ndarray, np.ndarray]:
    """Lloyd–Max quantizer for N(0, 1) with ``levels`` values: ``(centroids, thresholds)``.

    Solves the two optimality conditions (centroid = center of mass of its cell, threshold =
    midpoint of its neighbours) by Newton's method in float64 to ``max |g| < tol`` (the authors'
    shipped tables for b ≥ 6 are not converged, so we solve rather than copy them).
    """
    levels = check_int("levels", levels, low=1, high=4096)
    tol = check_float("tol", tol, low=0.0, low_open=True)
    c, t = _lloyd_max_cached(levels, tol)
    return np.array(c), np.array(t)


def check_bits(bits, name: str = "bits") -> float:
    """A bit budget per coordinate in ``(0, MAX_BITS]`` (integer, fractional or sub-bit) as float."""
    return check_float(name, bits, low=0.0, high=float(MAX_BITS), low_open=True)


def check_loss(loss, name: str = "loss") -> float:
    """A loss rate in ``[0, 1)`` (the fraction of rotated coordinates that do not arrive)."""
    return check_float(name, loss, low=0.0, high=1.0, high_open=True)


def check_vectors(x, name: str = "x", *, finite: bool = True) -> torch.Tensor:
    """A non-empty, finite floating tensor ``(*batch, d)``: what every compressor accepts.

    Finiteness costs one reduction; the elementwise test runs only when the sum is not finite.
    ``finite=False``: the caller tests finiteness itself (:func:`qlib.eden.compress`, on the squared
    norms it needs anyway)."""
    x = check_tensor(name, x, finite=False, convert=False)
    if x.dim() == 0:
        raise ValueError(f"{name} must be a vector or a batch of vectors, got a scalar")
    if finite and not bool(torch.isfinite(x.sum())):
        check_tensor(name, x, convert=False)
    return x




def codebook(bits: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``2^bits``-value Lloyd–Max codebook 𝓘_b of EDEN (``bits`` in 1..8)."""
    return lloyd_max(2 ** check_int("bits", bits, low=1, high=MAX_BITS))


def mixture_moment(bits: float) -> float:
    """``E[Q(z)²]`` of the quantizer EDEN uses at budget ``bits ≥ 1`` (mixture for fractional b)."""
    b = check_bits(bits)
    if b < 1:
        return quantizer_stats(codebook(1)[1])["E_Q2"]
    lo = int(math.floor(b))
    f = b - lo
    m_lo = quantizer_stats(codebook(lo)[1])["E_Q2"]
    if f == 0:
        return m_lo
    return (1 - f) * m_lo + f * quantizer_stats(codebook(lo + 1)[1])["E_Q2"]


def limit_vnmse(bits: float, loss: float = 0.0) -> float:
    """Asymptotic (d → ∞) vNMSE of EDEN at budget ``bits`` and receiver loss rate ``loss``.

    ``1/E[Q²] − 1`` (Corollary 2.4; mixture for fractional b, §2.6), ``π/(2b) − 1`` for b < 1
    (Corollary 4.2) and, under loss with received fraction ``p = 1 − loss``, ``1/(p·E[Q²]) − 1``
    (Lemma 4.3). Sub-bit and loss compose as ``A + AB + B`` (Lemma 4.1).
    """
    b = check_bits(bits)
    p_recv = 1.0 - check_loss(loss)
    p_sub = b if b < 1 else 1.0
    return 1.0 / (p_sub * p_recv * mixture_moment(b)) - 1.0


def message_sizes(d: int, bits: float) -> tuple[int, int, int]:
    """``(m, D, sent)`` of an EDEN message (Lloyd–Max codes) of a ``d``-coordinate vector at budget
    ``bits``: the coordinates kept before the rotation, the rotated (padded) dimension and the number of
    codes the message carries.

    ``bits >= 1``: ``m = d``, ``D`` the next power of two, every rotated coordinate sent. Sub-bit
    ``bits < 1`` (§4.1: random sparsification, "before or after the rotation … the resulting vNMSE is
    similar"): the message carries ``sent = max(1, round(b·d))`` one-bit codes. Our decision where the
    paper is silent: padding the ``round(b·d)`` kept coordinates to a power of two would send up to
    twice that many codes, so the sparsification is split in two — before the rotation to
    ``m = min(d, 2^⌈log2 sent⌉)`` coordinates (the paper's order, a power of two whenever ``m < d``), then,
    after it, a uniformly random ``sent`` of the ``D`` rotated coordinates (the same for every row of a
    batch, from the shared seed: never sent). When ``m = D`` the two keep fractions multiply to ``b`` and
    Lemma 4.1 gives exactly ``π/(2b) − 1``."""
    d = check_int("d", d, low=1)
    b = check_bits(bits)
    if b >= 1:
        D = _h.next_power_of_two(d)
        return d, D, D
    sent = max(1, int(round(b * d)))
    m = min(d, _h.next_power_of_two(sent))
    return m, _h.next_power_of_two(m), sent


@lru_cache(maxsize=None)
def _walsh_sums(d: int, D: int) -> tuple[tuple[int, int], ...]:
    """``(|W|, count)`` over ``m ≠ 0`` of the Walsh sums ``W(m) = Σ_{k<d} H_{mk}`` of the indicator of the
    first ``d`` of ``D`` coordinates (Sylvester ``H``), zeros left out. With ``H_D = [[H, H], [H, −H]]``:
    for ``d ≤ D/2`` every value of size ``D/2`` repeats (``W(m) = W(m mod D/2)``); for ``d = D/2 + t`` the
    values are ``d`` (m = 0), ``D/2 − t`` (m = D/2) and ``±W_t(m')`` for the other ``m'``. So there are at
    most ``2·log2 D`` distinct values, found without a transform of length ``D``."""
    def counts(d, D):
        if d == D:
            return {D: 1}
        K = D // 2
        if d <= K:
            return {w: 2 * n for w, n in counts(d, K).items()}
        t = d - K
        out = {w: 2 * n for w, n in counts(t, K).items()}
        out[t] -= 2  # m' = 0 (W = t) is replaced by m = 0 (W = d) and m = D/2 (W = D/2 − t)
        for w in (d, K - t):
            out[w] = out.get(w, 0) + 1
        return out
    c = counts(d, D)
    c[d] -= 1  # m = 0
    return tuple(sorted((w, n) for w, n in c.items() if w > 0 and n > 0))


@lru_cache(maxsize=None)
def _hermite_coeffs(bits: int, n_max: int = 100) -> np.ndarray:
    """``γ_n = E[Q(z)·He_n(z)]/√(n!)`` (n = 0..n_max) of the ``bits``-bit Lloyd–Max quantizer, from
    ``Q = q_0 + Σ_j Δq_j·1[z > t_j]`` and ``∫_t^∞ He_n φ = He_{n−1}(t)φ(t)``; the normalised Hermite
    polynomials by their stable three-term recurrence. ``Σ_n γ_n^A γ_n^B ρ^n = E[Q_A(U)·Q_B(V)]`` (Mehler)."""
    c, t = codebook(bits)
    dq, w = np.diff(c), _phi(t)
    h_prev, h = np.zeros_like(t), np.ones_like(t)  # He_{n-1}/√((n-1)!) at n = 1
    out = np.zeros(n_max + 1)
    for n in range(1, n_max + 1):
        out[n] = float(np.sum(dq * h * w)) / math.sqrt(n)
        h_prev, h = h, (t * h - math.sqrt(n - 1) * h_prev) / math.sqrt(n)
    return out


def _psi(bits_a: int, bits_b: int, rho: float) -> float:
    """``E[Q_a(U)·Q_b(V)]`` for standard normal ``(U, V)`` with correlation ``rho`` in (0, 1): Mehler's series
    for ``rho ≤ 1/2`` (100 terms: error < 2^-100); above it Plackett's identity ``∂P(U>h, V>k)/∂ρ = φ₂(h, k; ρ)``
    integrated from 0 (independence, ``E[Q] = 0``) in ``ρ = cos φ``, ``φ`` from ``arccos ρ`` to ``π/2``, by
    128-point Gauss–Legendre in ``log φ`` (the integrand is smooth there, no ``1/√(1−ρ²)`` singularity)."""
    if rho <= 0.5:
        ga, gb = _hermite_coeffs(bits_a), _hermite_coeffs(bits_b)
        return float(np.sum(ga * gb * rho ** np.arange(ga.size)))
    (ca, ta), (cb, tb) = codebook(bits_a), codebook(bits_b)
    da, db = np.diff(ca), np.diff(cb)
    x, w = np.polynomial.legendre.leggauss(128)
    lo, hi = math.log(math.acos(rho)), math.log(math.pi / 2)
    ph = np.exp((x + 1) / 2 * (hi - lo) + lo)
    total = 0.0
    for p, wt in zip(ph, w * (hi - lo) / 2 * ph):
        cp, s2 = math.cos(p), math.sin(p) ** 2
        e = np.exp(-(ta[:, None] ** 2 - 2 * cp * ta[:, None] * tb[None, :] + tb[None, :] ** 2) / (2 * s2))
        total += wt * float(da @ e @ db)
    return total / (2 * math.pi)


@lru_cache(maxsize=None)
def _padding_term(d: int, D: int, bits: float) -> float:
    """``(1/(c²D)) Σ_{m≠0} W(m)·G(W(m)/d)`` of :func:`expected_vnmse` (0 when ``d = D``)."""
    lo = max(1, int(math.floor(bits)))
    f = bits - lo if bits > 1 else 0.0
    books = [(lo, 1.0 - f)] + ([(lo + 1, f)] if f > 0 else [])
    moments = {k: quantizer_stats(codebook(k)[1])["E_Q2"] for k, _ in books}  # E[zQ] = E[Q²] (centroids)
    c = sum(wk * moments[k] for k, wk in books)
    total = 0.0
    for w, n in _walsh_sums(d, D):
        rho = w / d
        g = sum(wa * wb * (_psi(a, b, rho) - moments[a] * moments[b] * rho) for a, wa in books for b, wb in books)
        total += n * w * g
    return total / (c * c * D)


def expected_vnmse(d: int, bits: float, loss: float = 0.0) -> float:
    """The expected vNMSE of :func:`qlib.eden.compress` / :func:`qlib.eden.decompress` for a ``d``-vector, with
    the codec's sizes (:func:`message_sizes`): ``D`` the next power of two, a random loss rate ``loss``.

    The paper's limits assume ``d = D``: ``1/(p·E[Q²]) − 1`` (§2, Corollary 2.4, the limit of Theorem 2.3's bound;
    §4.1's super-bit mixture for a fractional b; §4.2, Lemma 4.3, with the received fraction ``p``) —
    :func:`limit_vnmse`. The codec zero-pads ``x`` to ``D`` and drops the ``D − d`` padding coordinates of the
    estimate. Our derivation for that (the paper is silent on padding; terms of order ``1/d`` dropped, the
    scale ``S`` taken at its mean): the rotated, normalised ``u = H·diag(s)·x_pad/‖x‖``
    has pairwise (nearly) standard normal coordinates with correlation ``ρ(i⊕j)``, ``ρ(m) = Σ_k H_{mk}x_k²/‖x‖²``
    = ``W(m)/d`` for energy spread evenly over the ``d`` coordinates, ``W(m) = Σ_{k<d} H_{mk}``. The decoded
    error ``x̂ − x_pad = (‖x‖/√D)·diag(s)·H·z/√D`` with ``z = a⊙q/c − u`` (``q = Q(u)``, ``c = E[zQ]``,
    ``a`` the received mask over ``p``), and ``E[z_i z_j] = ρ(1 − a_i)(1 − a_j) + a_i a_j·G(ρ)/c²`` with
    ``G(ρ) = E[Q(U)Q(V)] − c²ρ`` (Bussgang: ``E[Q(U)·V] = cρ``). Summing ``H_{ki}H_{kj} = H_{k,i⊕j}`` over
    the first ``d`` coordinates ``k`` and over a random mask::

        vNMSE = (d/D)·(1/(p·c) − 1) + (1/(c²·D))·Σ_{m≠0} W(m)·G(W(m)/d).

    The first term is the error spread evenly over ``D`` coordinates, of which ``d`` are kept; the second is
    zero when ``d`` is a power of two (``W(m) = 0``, this is :func:`limit_vnmse`) and large just above one:
    then the rotated vector's two halves nearly repeat (``H_D = [[H, H], [H, −H]]`` on a vector whose second
    half is almost all zeros), their quantization errors repeat with them and land on the first ``D/2``
    coordinates instead of spreading over ``D`` (b = 1: 0.452 at d/D = 0.51, against 0.291 = 0.51 × 0.5708).
    For a fractional b, ``c`` and ``G`` are averaged over the two codebooks' coins. For b < 1 the
    sparsification before the rotation, ``A = d/m − 1``, composes as ``A + (1 + A)·V`` (Lemma 4.1), ``V`` the
    above for the ``m`` kept coordinates with ``sent/D`` of the rotated ones sent.

    Assumes ``x``'s energy spread evenly (e.g. i.i.d. entries; a concentrated ``x`` changes ``ρ``) and a loss
    pattern independent of the rotation (:func:`qlib.eden.received_mask`'s ``"random"``, the sub-bit
    :func:`qlib.eden.sent_mask`). The ``"tail"`` pattern agrees when ``d`` is a power of two; with padding it
    drops rotated coordinates correlated with kept ones and errs less (b = 1, loss 0.2: −6 % at d/D = 0.51,
    −2 % at 0.75). Against the codec (``tests/test_eden_theory_padded.py``, N(0, 1) vectors, D = 2^16, b = 1
    and 2, d/D ∈ {0.51, 0.6, 0.75, 0.9}): within 0.03 % (3,200 vectors each); the dropped ``1/d`` terms
    make it 0.12 % high at d/D = 0.6, b = 2, D = 2^12. Figure 8's vectors (d = 11,511,784, 10 log-normal
    clients, the archived paper run): 0.006 % from the measured NMSE at b = 1, where ``(d/D)·limit`` was 1.8 % off.
    """
    d = check_int("d", d, low=1)
    b = check_bits(bits)
    p_recv = 1.0 - check_loss(loss)
    m, D, sent = message_sizes(d, b)
    p = p_recv * sent / D
    V = (m / D) * (1.0 / (p * mixture_moment(b)) - 1.0) + (_padding_term(m, D, b) if m < D else 0.0)
    A = d / m - 1.0
    return float(A + (1 + A) * V)


def rd_bound(bits) -> np.ndarray:
    """Rate–distortion lower bound on vNMSE with ``bits`` bits per coordinate: ``4^-b / (1 − 4^-b)``.

    ``bits``: a number or an array of numbers > 0 (elementwise, any shape)."""
    if isinstance(bits, (np.ndarray, list, tuple, torch.Tensor)):
        b = check_array("bits", bits, nonempty=False)
        if np.any(b <= 0):
            raise ValueError(f"bits must have entries > 0, got min {b.min()}")
    else:
        b = np.asarray(check_float("bits", bits, low=0.0, low_open=True))
    return 4.0**-b / (1 - 4.0**-b)


# -- entropy-coded quantizer 𝓘_Δ (Appendix G) -----------------------------------------------------
def ee_cells(delta: float, n_max: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Uniform cells ``[Δ(n − ½), Δ(n + ½)]``: returns (cell numbers n, thresholds) for |n| ≤ n_max."""
    delta = check_float("delta", delta, low=0.0, low_open=True)
    if n_max is None:
        n_max = int(math.ceil(12.0 / delta)) + 2
    else:
        n_max = check_int("n_max", n_max, low=1)
    check_alloc("n_max", 2 * n_max + 1, 8 * 2, value=n_max, what="the cell numbers and thresholds")
    n = np.arange(-n_max, n_max + 1)
    return n, delta * (n[:-1] + 0.5)


def ee_stats(delta: float) -> dict:
    """:func:`quantizer_stats` of 𝓘_Δ with centers of mass as values (entropy, vNMSE limit, …)."""
    return quantizer_stats(ee_cells(delta)[1])


@lru_cache(maxsize=None)
def ee_delta(bits: float) -> float:
    """``Δ_b``: the smallest cell width whose entropy is at most ``bits`` (Appendix G.1)."""
    b = check_float("bits", bits, low=0.0, low_open=True)  # entropy budgets may exceed MAX_BITS
    return float(optimize.brentq(lambda dl: ee_stats(dl)["entropy"] - b, 2e-3, 30.0, xtol=1e-14, rtol=1e-15))


def lm_entropy_coded_vnmse(bits: float) -> tuple[int, float]:
    """Figure 4's "Lloyd–Max + entropy coding" curve: the Lloyd–Max quantizer with the most levels
    whose entropy is ≤ ``bits`` (our reading, the paper gives no rule); returns (levels, vNMSE).
    For b < 1 the 2-level quantizer is sparsified (no entropy gain possible below one bit)."""
    b = check_bits(bits)
    if b <= 1:
        return 2, limit_vnmse(b)
    lo, hi = 2, 2
    while quantizer_stats(lloyd_max(hi * 2)[1])["entropy"] <= b:
        hi *= 2
    hi *= 2
    while hi - lo > 1:  # entropy is increasing in the number of levels
        mid = (lo + hi) // 2
        if quantizer_stats(lloyd_max(mid)[1])["entropy"] <= b:
            lo = mid
        else:
            hi = mid
    return lo, quantizer_stats(lloyd_max(lo)[1])["vnmse_limit"]


# ------------------------------------------------------------------------------------------------
# Heterogeneous clients (Lemma 2.2) and metrics
# ------------------------------------------------------------------------------------------------
def _per_client(name, val, n, check):
    """One value per client: a scalar (every client) or a sequence of ``n``, each checked by
    ``check(value, name)`` (messages name ``name`` or ``name[i]``)."""
    if isinstance(val, (list, tuple, np.ndarray, torch.Tensor)):
        if isinstance(val, (np.ndarray, torch.Tensor)) and val.ndim != 1:
            raise ValueError(f"{name} must be a number or a 1-D sequence of one per client, got shape {tuple(val.shape)}")
        vals = [check(v, f"{name}[{i}]") for i, v in enumerate(val)]
        if len(vals) != n:
            raise ValueError(f"{name} has {len(vals)} entries for {n} clients (n = {n})")
        return vals
    return [check(val, name)] * n


def client_budgets(bits: float | Sequence[float], loss: float | Sequence[float], n: int) -> tuple[list[float], list[float]]:
    """Every one of ``n`` clients' bit budget and loss rate: ``bits`` (in (0, 8]) and ``loss`` (in
    [0, 1)) are each one value for every client or a 1-D sequence of one per client. Returns
    (budgets, loss rates), two lists of ``n`` floats."""
    n = check_int("n", n, low=1)
    return _per_client("bits", bits, n, check_bits), _per_client("loss", loss, n, check_loss)


def nmse_theory(xs: torch.Tensor, bits, loss=0.0) -> float:
    """Lemma 2.2: ``NMSE = Σ_c vNMSE(c)·‖x_c‖² / (n Σ_c ‖x_c‖²)`` with each client's vNMSE from
    :func:`expected_vnmse` (its budget, its loss rate, the padding convention)."""
    xs = check_vectors(xs, "xs")
    if xs.dim() != 2:
        raise ValueError(f"xs must be (n_clients, d), got shape {tuple(xs.shape)}")
    n, d = xs.shape
    bs, ls = client_budgets(bits, loss, n)
    w = (xs.double() ** 2).sum(-1).cpu().numpy()
    v = np.array([expected_vnmse(d, b, lo) for b, lo in zip(bs, ls)])
    return float((v * w).sum() / (n * w.sum()))


def vnmse(x: torch.Tensor, x_hat: torch.Tensor) -> torch.Tensor:
    """``‖x − x̂‖² / ‖x‖²`` per row (float64) of a vector or a batch ``(*batch, d)``.

    Both must be finite and of the same shape; a zero row of ``x`` raises ``ValueError``: the vNMSE
    is undefined for a zero input (``‖x‖² = 0``). (EDEN encodes a zero vector exactly, to zeros; a
    caller measuring errors leaves such rows out.)"""
    x = check_vectors(x, "x")
    x_hat = check_vectors(x_hat, "x_hat")
    if x.shape != x_hat.shape:
        raise ValueError(f"x and x_hat differ in shape: {tuple(x.shape)} vs {tuple(x_hat.shape)}")
    x, x_hat = x.double(), x_hat.double()
    norm2 = (x**2).sum(-1)
    if not bool((norm2 > 0).all()):
        raise ValueError("x has a zero row: the vNMSE ‖x − x_hat‖²/‖x‖² is undefined for a zero input (‖x‖² = 0)")
    return ((x - x_hat) ** 2).sum(-1) / norm2


def nmse(xs: torch.Tensor, mean_hat: torch.Tensor) -> float:
    """``‖mean_hat − mean(xs)‖² / ((1/n) Σ ‖x_c‖²)`` (the paper's NMSE, one realization).

    ``xs``: the clients' vectors (n × d), finite, not all zero (the NMSE is undefined then);
    ``mean_hat``: the estimate, a finite vector of length d."""
    xs = check_vectors(xs, "xs")
    if xs.dim() != 2:
        raise ValueError(f"xs must be (n_clients, d), got shape {tuple(xs.shape)}")
    mean_hat = check_vectors(mean_hat, "mean_hat")
    if tuple(mean_hat.shape) != (xs.shape[1],):
        raise ValueError(f"mean_hat must have shape ({xs.shape[1]},) (one value per coordinate of xs), "
                         f"got {tuple(mean_hat.shape)}")
    xs = xs.double()
    denom = (xs**2).sum(-1).mean()
    if not bool(denom > 0):
        raise ValueError("xs is all zeros: the NMSE is undefined (Σ ‖x_c‖² = 0)")
    err = ((mean_hat.double() - xs.mean(0)) ** 2).sum()
    return float(err / denom)
