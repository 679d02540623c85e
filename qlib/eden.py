"""EDEN: unbiased distributed mean estimation with any bit budget (paper 002, {cite}`vargaftik2022eden`).

Sender (§2): pad to ``D = 2^k`` → randomized Hadamard rotation ``r = RHT(x)`` from a
shared seed → normalize ``u = η r`` with ``η = sqrt(D)/‖x‖`` → deterministic Lloyd–Max quantization
for N(0, 1) with ``2^b`` values (cell indices sent) → one scalar ``S = ‖x‖²/⟨r, q⟩`` (unbiased scale,
Theorem 2.1) or the biased MSE-optimal ``⟨r, q⟩/‖q‖²``. Receiver: ``x̂ = S · RHT^{-1}(q)``.

Bit regimes: integer ``b ∈ {1..8}``; fractional ``b > 1`` (§2.6: each coordinate uses the
``⌊b⌋+1``-bit codebook with probability ``b − ⌊b⌋``, coins from the shared seed, not sent); sub-bit
``b < 1`` (§4.1: a uniformly random subset of exactly ``round(b·d)`` coordinates, rescaled by
``d/m``, then 1-bit EDEN); packet loss at the receiver (§4.2, Lemma 4.3: lost rotated coordinates
are zero-filled and the rest multiplied by ``1/p``, ``p`` the received fraction). An entropy-coded
variant (Appendix G, uniform cells of width ``Δ_b``) is ``quantizer="ee"``.

Closed forms: :func:`limit_vnmse` (Corollaries 2.4, 4.2, Lemma 4.3, Lemma 2.2), the Lloyd–Max
codebooks :func:`lloyd_max` solved by Newton's method to float64 precision, the entropy-coded cells
:func:`ee_delta`, and the rate–distortion bound :func:`rd_bound`.

Speed: on CPU (float32/float64 tensors that need no gradient, numba importable: the condition of
:func:`qlib.hadamard.compiled_fwht_applies`) :func:`compress` and :func:`decompress` take a compiled
path (``qlib/_kernels/eden.py`` and the signed passes of ``qlib/_kernels/fwht.py``): the rotation reads the
seeded Rademacher draw as sign bits inside the FWHT's first pass; ``u = r·η``, the Lloyd–Max codes
and the centroids are one pass; the receiver looks the codes up (times ``S``) inside the first pass of
the inverse transform and flips the sign bits in one more pass. Every floating-point operation is the
one the torch path does, in the same precision and order (the thresholds rounded to the tensor's
dtype as torch rounds a Python number; the dot products ``r·r`` and ``r·q`` stay in torch), so the
same seed gives the same payload and the same decoded bits on either path; CUDA and autograd take the
torch path, and with a loss mask the dequantization stays in torch. The rotation and the centroids are
temporaries, written to per-thread scratch arrays (``qlib._kernels.scratch``): fresh multi-megabyte
arrays cost a page fault per 4 KiB page, more than the work at 2^20 on a virtual machine. Three- and
four-bit codes are comparisons with the sorted thresholds (float32 four bits, on AVX2 hosts: LLVM vector
code with a lane permutation for the centroid); the receiver's table read is a lane permutation too.
Compress + decompress: about 2.2–2.6× a forward+inverse FWHT pair at 2^20, 2.5–2.9× with the wire
format's bytes at b = 4 (``benchmarks/bench_fl.py --wire-only``; ``benchmarks/bench_hadamard.py`` for
other sizes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

import numpy as np
import torch
from scipy import optimize, stats
from scipy.linalg import solve_banded

from . import _kernels
from . import hadamard as _h
from .validation import (
    check_array,
    check_choice,
    check_float,
    check_int,
    check_int_sequence,
    check_seed,
    check_tensor,
    skip_nested,
)

__all__ = [
    "MAX_BITS",
    "SCALE_BITS",
    "check_bits",
    "check_loss",
    "check_vectors",
    "lloyd_max",
    "codebook",
    "quantizer_stats",
    "limit_vnmse",
    "mixture_moment",
    "expected_vnmse",
    "ee_cells",
    "ee_delta",
    "ee_stats",
    "lm_entropy_coded_vnmse",
    "rd_bound",
    "Payload",
    "compress",
    "decompress",
    "roundtrip",
    "received_mask",
    "mean_estimate",
    "nmse_theory",
    "vnmse",
    "nmse",
]

MAX_BITS = 8
SCALE_BITS = 64  # the scale S travels as one float64 (paper §2.2: "e.g., 64")
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
    ``finite=False``: the caller tests finiteness itself (:func:`compress`, on the squared norms it needs
    anyway, then with :func:`_check_finite_norms`)."""
    x = check_tensor(name, x, finite=False, convert=False)
    if x.dim() == 0:
        raise ValueError(f"{name} must be a vector or a batch of vectors, got a scalar")
    if finite and not bool(torch.isfinite(x.sum())):
        check_tensor(name, x, convert=False)
    return x


def _check_finite_norms(x: torch.Tensor, norm2: torch.Tensor, name: str = "x") -> None:
    """Raise unless every squared norm ``norm2`` of the rows of ``x`` is finite: with an infinite or NaN
    entry, the entry's named error; with finite entries whose squared norm overflows the dtype, say so."""
    n = norm2.detach()
    if bool(np.isfinite(n.numpy()).all() if n.device.type == "cpu" else torch.isfinite(n).all()):
        return
    if not bool(torch.isfinite(x).all()):  # check_tensor's message (this runs inside skip_nested)
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    raise ValueError(f"{name} has a row whose squared norm overflows {x.dtype} (largest |entry| "
                     f"{float(x.abs().max()):.3g}); rescale it")


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


def expected_vnmse(d: int, bits: float, loss: float = 0.0) -> float:
    """:func:`limit_vnmse` corrected for the padding convention of :func:`compress`.

    The rotated-domain error is spread evenly over the ``D`` padded coordinates and the ``D − m``
    padding coordinates are dropped, so the measured vNMSE is ``(m/D)·B`` with ``B`` the limit of
    the quantization stage; for b < 1 the sparsification error ``A = d/m − 1``
    composes with it as ``A + (1 + A)·(m/D)·B``.
    """
    d = check_int("d", d, low=1)
    b = check_bits(bits)
    p_recv = 1.0 - check_loss(loss)
    m = max(1, int(round(b * d))) if b < 1 else d
    D = _h.next_power_of_two(m)
    B = 1.0 / (p_recv * mixture_moment(b)) - 1.0
    A = d / m - 1.0 if b < 1 else 0.0
    return A + (1 + A) * (m / D) * B


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
# Compress / decompress
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Payload:
    """One EDEN message per vector of a batch (leading dimensions of the input).

    ``indices``: the quantization cell of every rotated coordinate (uint8 for Lloyd–Max codebooks,
    int32 cell numbers for ``quantizer="ee"``), shape ``(*batch, D)``; ``scale``: ``S`` per vector;
    ``nbits``: exact message size per vector (indices + 64-bit scale; for ``"ee"`` the ideal
    arithmetic-code length ``⌈D·Ĥ⌉`` with ``Ĥ`` the empirical entropy of the indices). The seed is
    shared with the receiver, not transmitted (not counted).
    """

    indices: torch.Tensor
    scale: torch.Tensor
    seed: int
    bits: float
    d: int
    m: int  # coordinates after sub-bit subsampling (= d when bits >= 1)
    D: int  # rotated (padded) dimension
    quantizer: str
    n_rotations: int
    nbits: torch.Tensor

    @property
    def batch_shape(self) -> torch.Size:
        return self.indices.shape[:-1]

    @property
    def total_bits(self) -> int:
        return int(self.nbits.sum())


def _coins(seed, batch, D, f, device):
    g = _h.generator(seed, "frac-bits", device)
    return torch.rand((*batch, D), generator=g, device=device) < f


def _subsample(seed, batch, d, m, device):
    g = _h.generator(seed, "sub-bit", device)
    keys = torch.rand((*batch, d), generator=g, device=device)
    return torch.topk(keys, m, dim=-1, sorted=False).indices  # a uniform subset of size m


@lru_cache(maxsize=None)
def _lm_host_tables(bits: int):
    """Wire code ``2k + (u < 0)`` for the cell with ``k`` positive thresholds below ``|u|``; the
    decode table in that order; and an exact lookup table over ``|u|`` (paper §5.1)."""
    c, t = codebook(bits)
    cpos = c[2 ** (bits - 1) :]
    table = np.empty(2**bits)
    table[0::2], table[1::2] = cpos, -cpos
    pos = t[t > 0]
    if len(pos) == 0:
        return table, pos, None
    gamma = np.min(np.diff(np.r_[0.0, pos])) / 4  # < half the smallest gap: ≤ 1 threshold per cell
    n = np.arange(int(np.ceil(pos[-1] / gamma)) + 2)
    count = np.searchsorted(pos, n * gamma, side="left")  # thresholds strictly below the left edge
    nxt = np.r_[pos, np.inf][count]
    prv = np.r_[-np.inf, pos][count]
    return table, pos, (gamma, count, nxt, prv)


def _lm_table(bits: int, dtype, device) -> torch.Tensor:
    return torch.tensor(_lm_host_tables(bits)[0], dtype=dtype, device=device)


# -- the compiled CPU path (qlib/_kernels/eden.py) -----------------------------------------------------
_load = _kernels.load
_rows = _kernels.rows


def _compiled_applies(t: torch.Tensor) -> bool:
    """Whether the compiled kernels take the tensor ``t``: on CPU, float32/float64, needing no gradient
    (:func:`qlib.hadamard.compiled_fwht_applies`), with the kernels importable."""
    return _h.compiled_fwht_applies(t) and _load("eden") is not None


@lru_cache(maxsize=None)
def _lm_kernel_params(bits: int, dtype: torch.dtype) -> tuple:
    """The arguments of :func:`qlib._kernels.eden.quantize_rows` for the ``bits`` codebook in ``dtype``: mode
    (0: sign only, 1: comparisons, 2: exact LUT, as :func:`_lm_quantize`), the positive thresholds, 1/γ,
    and the LUT's count / next / prev, every float rounded to ``dtype`` as torch rounds them there
    (a Python number compared with or multiplying a tensor is converted to the tensor's dtype), and the
    decode table."""
    table, pos, lut = _lm_host_tables(bits)
    npdt = np.float32 if dtype == torch.float32 else np.float64
    mode = 0 if len(pos) == 0 else 1 if len(pos) <= 3 else 2
    one = np.ones(1, dtype=npdt)
    ig, count, nxt, prv = npdt(1.0), np.zeros(1, dtype=np.uint8), one, one
    if mode == 2:
        gamma, c, n_, p_ = lut
        ig, count = npdt(1.0 / gamma), np.asarray(c, dtype=np.uint8)
        nxt, prv = np.asarray(n_, dtype=npdt), np.asarray(p_, dtype=npdt)
    tab = _lm_table(bits, dtype, "cpu").numpy()
    return (mode, np.asarray(pos, dtype=npdt), ig, count, nxt, prv, tab)


def _lm_quantize_compiled(r: torch.Tensor, eta: torch.Tensor, lo: int, coins) -> tuple[torch.Tensor, torch.Tensor]:
    """Cell codes and centroids of ``u = r·η`` in one compiled pass: the same bits as
    ``_lm_quantize(u, …)`` and ``_dequantize`` (codebook ``lo``, or ``lo + 1`` where the coin is set). The
    centroids are the thread's scratch array ``"eden.q"``: a temporary of the caller."""
    D, dt = r.shape[-1], r.dtype
    hi = None if coins is None else _lm_kernel_params(lo + 1, dt)
    cn = None if coins is None else coins.reshape(-1, D).numpy().view(np.uint8)
    rows = _rows(r, D)
    idx, q = _load("eden").quantize_rows(rows, _rows(eta, 1).reshape(-1), _lm_kernel_params(lo, dt), hi, cn,
                                         q=_kernels.scratch("eden.q", rows.shape, rows.dtype))
    return torch.from_numpy(idx).reshape(r.shape), torch.from_numpy(q).reshape(r.shape)


def _decode_tables(payload: Payload, coins):
    """(offset, table, table of the coins or None) of the payload's codes on the compiled path (tables in
    the dtype of the scale), or None where it does not apply: the indices not on CPU or not of the dtype
    compress gives (uint8 for ``"lm"``, int32 for ``"ee"``), the scale not taken by the kernels."""
    idx, S, b = payload.indices, payload.scale, payload.bits
    dt = S.dtype
    if idx.device.type != "cpu" or not _compiled_applies(S):
        return None
    if payload.quantizer == "ee":
        if idx.dtype != torch.int32:
            return None
        off, com = _ee_table(ee_delta(b))
        return off, torch.tensor(com, dtype=dt).numpy(), None
    if idx.dtype != torch.uint8:
        return None
    lo = int(math.floor(b)) if b >= 1 else 1
    return 0, _lm_kernel_params(lo, dt)[-1], None if coins is None else _lm_kernel_params(lo + 1, dt)[-1]


def _decompress_compiled(payload: Payload) -> torch.Tensor | None:
    """Without coins and loss: ``irht(_dequantize(…) · S, signs)`` with the dequantization inside the
    first pass of the inverse transform (the same bits); None where it does not apply or a code falls
    outside its table (the torch path then runs, and raises or wraps as before)."""
    D, S = payload.D, payload.scale
    tabs = _decode_tables(payload, None) if _h.compiled_rotation_applies(S, D) else None
    if tabs is None:
        return None
    off, tab, _ = tabs
    byts = _h.rotation_sign_bits(payload.seed, payload.batch_shape, payload.n_rotations, D, S.dtype)
    out = _load("fwht").lookup_irht_rows(_rows(payload.indices, D), off, tab, _rows(S, 1).reshape(-1), byts,
                                         payload.n_rotations)
    return None if out is None else torch.from_numpy(out).reshape(payload.indices.shape)


def _dequantize_scaled_compiled(payload: Payload, coins) -> torch.Tensor | None:
    """``_dequantize(…) * S`` in one compiled pass, or None where it does not apply (the torch path then
    runs: other index dtypes, codes outside the table)."""
    tabs = _decode_tables(payload, coins)
    if tabs is None:
        return None
    off, tab, tab_hi = tabs
    idx, D = payload.indices, payload.D
    cn = None if coins is None else coins.reshape(-1, D).numpy().view(np.uint8)
    w = _load("eden").dequantize_rows(_rows(idx, D), off, tab, _rows(payload.scale, 1).reshape(-1), tab_hi, cn)
    return None if w is None else torch.from_numpy(w).reshape(idx.shape)


def _lm_quantize(u: torch.Tensor, bits: int) -> torch.Tensor:
    """Cell code ``2k + (u < 0)`` (uint8). A value on a threshold goes to the cell closer to zero
    (footnote 4); ``u = 0`` counts as positive (our convention: sign(0) = +1)."""
    table, pos, lut = _lm_host_tables(bits)
    neg = (u < 0).to(torch.uint8)
    if len(pos) == 0:
        return neg
    a = u.abs()
    if len(pos) <= 3:  # a few comparisons beat any search
        k = (a > float(pos[0])).to(torch.uint8)
        for tj in pos[1:]:
            k += (a > float(tj)).to(torch.uint8)
    else:  # exact LUT: the grid cell gives the count up to one threshold, two comparisons fix it
        gamma, count, nxt, prv = lut
        dev, dt = u.device, u.dtype
        cell = torch.clamp((a * (1.0 / gamma)).to(torch.int64), 0, len(count) - 1)
        k = torch.tensor(count, dtype=torch.uint8, device=dev)[cell]
        k += (a > torch.tensor(nxt, dtype=dt, device=dev)[cell]).to(torch.uint8)
        k -= (a <= torch.tensor(prv, dtype=dt, device=dev)[cell]).to(torch.uint8)
    return (k << 1) | neg


@lru_cache(maxsize=None)
def _ee_table(delta: float):
    n, t = ee_cells(delta)
    com = _cell_mass_center(np.r_[-np.inf, t], np.r_[t, np.inf])[1]
    com = (com - com[::-1]) / 2
    return int(n[-1]), com


def _ee_quantize(u, delta):
    n_max, _ = _ee_table(delta)
    return torch.clamp(torch.round(u / delta), -n_max, n_max).to(torch.int32)


def _lookup(table: torch.Tensor, indices: torch.Tensor) -> torch.Tensor:
    """``table[indices]``; on CPU through NumPy's take on the narrow indices (no int64 copy, 2× faster)."""
    if table.device.type == "cpu":
        return torch.from_numpy(np.take(table.numpy(), indices.numpy()))
    return table[indices.long()]


def _dequantize(indices, bits, quantizer, coins, dtype, device):
    if quantizer == "ee":
        n_max, com = _ee_table(ee_delta(bits))
        table = torch.tensor(com, dtype=dtype, device=device)
        return _lookup(table, indices + n_max)
    lo = int(math.floor(bits)) if bits >= 1 else 1
    if coins is None:
        return _lookup(_lm_table(lo, dtype, device), indices)
    # the low codebook's codes are a prefix of the high one's only by position; look up both
    c_lo = _lm_table(lo, dtype, device)
    q = _lookup(c_lo, indices.clamp_max(len(c_lo) - 1))
    return torch.where(coins, _lookup(_lm_table(lo + 1, dtype, device), indices), q)


def _entropy_bits(indices: torch.Tensor) -> torch.Tensor:
    """Ideal (arithmetic-code) length ⌈D·Ĥ⌉ per row, Ĥ = empirical entropy of the row's symbols."""
    flat = indices.reshape(-1, indices.shape[-1]).long()
    out = []
    for row in flat:  # rows are few (clients); the symbols per row are counted vectorised
        counts = torch.bincount(row - row.min()).double()
        p = counts[counts > 0] / row.numel()
        out.append(math.ceil(float(-(p * torch.log2(p)).sum()) * row.numel()))
    return torch.tensor(out, dtype=torch.long).reshape(indices.shape[:-1])


def compress(
    x: torch.Tensor,
    bits: float,
    seed: int,
    *,
    scale: str = "unbiased",
    quantizer: str = "lm",
    n_rotations: int = 1,
) -> Payload:
    """EDEN sender for a vector or a batch ``(*batch, d)`` (every row its own rotation/coins/mask).

    ``bits`` in (0, 8]: integer, fractional (> 1) or sub-bit (< 1). ``scale``: ``"unbiased"`` (the
    paper's ``S = ‖x‖²/⟨r, q⟩``) or ``"mse"`` (biased, ``⟨r, q⟩/‖q‖²``, not in the paper).
    ``quantizer``: ``"lm"`` (Lloyd–Max, default) or ``"ee"`` (entropy-coded cells of width Δ_b).
    ``n_rotations``: number of chained RHTs (1 in the paper). A zero vector gives ``S = 0`` and
    decodes to exact zeros (the scale doubles as the paper's one-bit zero flag).
    """
    x = check_vectors(x, finite=False)  # finiteness: on the squared norms below (one pass less)
    b = check_bits(bits)
    seed = check_seed("seed", seed)
    scale = check_choice("scale", scale, ("unbiased", "mse"))
    quantizer = check_choice("quantizer", quantizer, ("lm", "ee"))
    n_rotations = check_int("n_rotations", n_rotations, low=1, high=8)
    if b < 1 and quantizer == "lm":
        check_vectors(x)  # sub-bit: every entry finite, not only the kept ones
    with skip_nested():  # every argument is checked: the public functions called below trust them
        batch, d, dev, dt = x.shape[:-1], x.shape[-1], x.device, x.dtype
        v = x
        m = d
        if b < 1 and quantizer == "lm":  # sub-bit: uniform subset of exactly m = round(b·d) coordinates
            m = max(1, int(round(b * d)))
            keep = _subsample(seed, batch, d, m, dev)
            v = torch.gather(x, -1, keep) * (d / m)
        D = _h.next_power_of_two(m)
        # the rotation; on CPU one compiled pass per rotation that reads the seeded signs as bits
        # (r and q below are temporaries: on the compiled path the thread's scratch arrays, no page faults)
        r = _h.seeded_rht(_h.pad_to_power_of_two(v), seed, n_rotations, scratch="eden.r")
        norm2 = torch.linalg.vecdot(r, r)  # = ‖v‖² (the RHT is orthonormal)
        _check_finite_norms(x, norm2)  # an infinite or NaN entry of x makes its row's norm NaN
        zero = norm2 == 0
        any_zero = bool(zero.any())  # rarely: the torch.where below only then (the same values)
        eta = math.sqrt(D) / norm2.sqrt()
        if any_zero:
            eta = torch.where(zero, torch.zeros_like(norm2), eta)
        coins = None
        lo = max(1, int(math.floor(b)))
        if quantizer == "lm" and b >= 1 and b != math.floor(b):
            coins = _coins(seed, batch, D, b - lo, dev)
        if quantizer == "lm" and _compiled_applies(r):  # u, the codes and the centroids in one compiled pass
            idx, q = _lm_quantize_compiled(r, eta, lo, coins)
        else:
            u = r * eta.unsqueeze(-1)
            if quantizer == "ee":
                idx = _ee_quantize(u, ee_delta(b))
            elif coins is not None:
                idx = torch.where(coins, _lm_quantize(u, lo + 1), _lm_quantize(u, lo))
            else:
                idx = _lm_quantize(u, lo)
            q = _dequantize(idx, b, quantizer, coins, dt, dev)
        rq = torch.linalg.vecdot(r, q)
        if bool((((rq <= 0) & ~zero) if any_zero else (rq <= 0)).any()):
            raise ValueError(
                f"quantizer={quantizer!r} at bits={b} mapped a whole vector to the zero cell (⟨r, q⟩ = 0); "
                "use quantizer='lm' for this budget"
            )
        safe_rq = torch.where(zero, torch.ones_like(rq), rq) if any_zero else rq
        if scale == "unbiased":
            S = norm2 / safe_rq
        else:
            S = rq / torch.linalg.vecdot(q, q).clamp_min(torch.finfo(dt).tiny)
        if any_zero:
            S = torch.where(zero, torch.zeros_like(S), S)
        if quantizer == "ee":
            nbits = _entropy_bits(idx) + SCALE_BITS
        elif coins is not None:
            lo = int(math.floor(b))
            nbits = (lo * D + coins.sum(-1)).long().cpu() + SCALE_BITS
        else:
            nbits = torch.full(tuple(batch), max(1, int(b)) * D + SCALE_BITS, dtype=torch.long)
        if any_zero:
            nbits = torch.where(zero.cpu(), torch.full_like(nbits, SCALE_BITS), nbits)
        return Payload(idx, S, seed, b, d, m, D, quantizer, n_rotations, nbits)


def received_mask(D: int, loss: float, mode: str = "tail", seed: int = 0, batch=(), device="cpu"):
    """Boolean mask of the rotated coordinates that arrive when a fraction ``loss`` is lost.

    ``mode="tail"``: the last ``round(loss·D)`` coordinates are dropped (a deterministic, oblivious
    loss pattern, Lemma 4.3 / Figure 11); ``"random"``: a uniformly random subset of that size,
    drawn from ``seed`` (an integer, default 0; ``"tail"`` does not use it). ``batch``: the batch
    shape (a tuple of integers ``>= 0``); the mask has shape ``(*batch, D)``.
    """
    loss = check_loss(loss)
    D = check_int("D", D, low=1)
    seed = check_seed("seed", seed)
    if not isinstance(batch, (tuple, list, torch.Size)):
        raise TypeError(f"batch must be a tuple of integers >= 0 (the batch shape), got {batch!r}")
    batch = tuple(check_int_sequence("batch", batch, low=0, nonempty=False))
    lost = int(round(loss * D))
    if lost >= D:
        raise ValueError(f"loss={loss} drops every one of the D={D} coordinates")
    dev = torch.device(device)
    if mode == "tail":
        mask = torch.arange(D, device=dev) < D - lost
        return mask.expand(*batch, D)
    if mode == "random":
        g = _h.generator(seed, "loss", dev)
        keys = torch.rand((*batch, D), generator=g, device=dev)
        order = keys.argsort(-1)
        mask = torch.ones((*batch, D), dtype=torch.bool, device=dev)
        return mask.scatter(-1, order[..., :lost], False)
    raise ValueError(f"mode must be 'tail' or 'random', got {mode!r}")


def decompress(payload: Payload, received: torch.Tensor | None = None) -> torch.Tensor:
    """EDEN receiver: ``x̂ = S · RHT^{-1}(q)``, regenerating signs, coins and mask from the seed.

    ``received``: optional boolean mask over the ``D`` rotated coordinates (broadcastable to the
    indices); lost coordinates are zero-filled and the received ones scaled by ``1/p`` with ``p``
    the received fraction counted per vector (§4.2). A vector of which nothing arrived decodes to 0.
    """
    if not isinstance(payload, Payload):
        raise TypeError(f"payload must be a qlib.eden.Payload, got {type(payload).__name__}")
    idx, S = payload.indices, payload.scale
    batch, D, dev, dt = idx.shape[:-1], payload.D, idx.device, S.dtype
    if idx.shape[-1] != D or tuple(S.shape) != tuple(batch) or not _h.is_power_of_two(D) or D < payload.m:
        raise ValueError(
            f"mismatched payload: indices shape {tuple(idx.shape)}, scale shape {tuple(S.shape)}, D={D}, m={payload.m}"
        )
    with skip_nested():  # the payload's shapes are checked; its seed and sizes come from compress
        b = payload.bits
        coins = None
        if payload.quantizer == "lm" and b >= 1 and b != math.floor(b):
            coins = _coins(payload.seed, batch, D, b - math.floor(b), dev)
        v = _decompress_compiled(payload) if received is None and coins is None else None
        if v is None:
            w = None if received is not None else _dequantize_scaled_compiled(payload, coins)
            if w is None:
                w = _dequantize_received(payload, coins, received)
            # the inverse rotation, in place on w (a temporary) on the compiled path
            v = _h.seeded_irht(w, payload.seed, payload.n_rotations, overwrite=True)
        v = v[..., : payload.m]
        if payload.m == payload.d:
            return v
        keep = _subsample(payload.seed, batch, payload.d, payload.m, dev)
        return torch.zeros((*batch, payload.d), dtype=dt, device=dev).scatter(-1, keep, v)


def _dequantize_received(payload: Payload, coins, received) -> torch.Tensor:
    """The receiver's ``S · q`` with lost coordinates zero-filled and the rest scaled by ``1/p`` (torch)."""
    idx, S, b, D = payload.indices, payload.scale, payload.bits, payload.D
    dev, dt = idx.device, S.dtype
    q = _dequantize(idx, b, payload.quantizer, coins, dt, dev)
    if received is not None:
        if not isinstance(received, torch.Tensor) or received.dtype != torch.bool:
            raise TypeError("received must be a boolean torch.Tensor")
        if received.shape[-1] != D:
            raise ValueError(f"received has length {received.shape[-1]}, expected D={D}")
        received = received.to(dev)
        p = received.sum(-1, keepdim=True).to(dt) / D
        q = torch.where(received, q, torch.zeros_like(q)) / p.clamp_min(1.0 / D)
        q = torch.where(p > 0, q, torch.zeros_like(q))
    return q * S.unsqueeze(-1)


def roundtrip(x: torch.Tensor, bits: float, seed: int, *, loss: float = 0.0, loss_mode: str = "tail", **kw):
    """``decompress(compress(x, bits, seed, **kw), received)`` with a loss pattern of rate ``loss``."""
    pl = compress(x, bits, seed, **kw)
    rec = None
    if check_loss(loss) > 0:
        rec = received_mask(pl.D, loss, loss_mode, seed=seed, batch=pl.batch_shape, device=x.device)
    return decompress(pl, rec)


# ------------------------------------------------------------------------------------------------
# Heterogeneous clients and metrics
# ------------------------------------------------------------------------------------------------
def _per_client(name, val, n, check):
    """One value per client: a scalar (every client) or a sequence of ``n``, each checked by
    ``check(value, name)`` (messages name ``name`` or ``name[i]``)."""
    if isinstance(val, (list, tuple, np.ndarray, torch.Tensor)):
        if isinstance(val, (np.ndarray, torch.Tensor)) and val.ndim != 1:
            raise ValueError(f"{name} must be a number or a 1-D sequence of one per client, got shape {tuple(val.shape)}")
        vals = [check(v, f"{name}[{i}]") for i, v in enumerate(val)]
        if len(vals) != n:
            raise ValueError(f"{name} has {len(vals)} entries for {n} clients")
        return vals
    return [check(val, name)] * n


def mean_estimate(
    xs: torch.Tensor,
    bits: float | Sequence[float],
    seed: int,
    *,
    loss: float | Sequence[float] = 0.0,
    loss_mode: str = "random",
) -> tuple[torch.Tensor, int]:
    """The receiver's estimate ``(1/n) Σ_c x̂_c`` of the mean of the rows of ``xs`` (n × d), each
    client with its own budget ``bits[c]`` and loss rate ``loss[c]``; returns (estimate, total bits).

    Clients sharing a budget are compressed as one batch (each row has its own rotation); groups use
    independent seed streams derived from ``seed``.
    """
    xs = check_vectors(xs, "xs")
    if xs.dim() != 2:
        raise ValueError(f"xs must be (n_clients, d), got shape {tuple(xs.shape)}")
    seed = check_seed("seed", seed)
    loss_mode = check_choice("loss_mode", loss_mode, ("tail", "random"))
    n = xs.shape[0]
    bs = _per_client("bits", bits, n, check_bits)
    ls = _per_client("loss", loss, n, check_loss)
    total = torch.zeros(xs.shape[1], dtype=xs.dtype, device=xs.device)
    nbits = 0
    for gi, b in enumerate(sorted(set(bs))):
        rows = [c for c in range(n) if bs[c] == b]
        gseed = int(np.random.SeedSequence([seed, gi]).generate_state(1)[0])
        pl = compress(xs[rows], b, gseed)
        masks = torch.stack(
            [received_mask(pl.D, ls[c], loss_mode, seed=gseed + 1 + c, device=xs.device) for c in rows]
        )
        total = total + decompress(pl, masks).sum(0)
        nbits += pl.total_bits
    return total / n, nbits


def nmse_theory(xs: torch.Tensor, bits, loss=0.0) -> float:
    """Lemma 2.2: ``NMSE = Σ_c vNMSE(c)·‖x_c‖² / (n Σ_c ‖x_c‖²)`` with each client's vNMSE from
    :func:`expected_vnmse` (its budget, its loss rate, the padding convention)."""
    xs = check_vectors(xs, "xs")
    if xs.dim() != 2:
        raise ValueError(f"xs must be (n_clients, d), got shape {tuple(xs.shape)}")
    n, d = xs.shape
    bs = _per_client("bits", bits, n, check_bits)
    ls = _per_client("loss", loss, n, check_loss)
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
