"""Compiled CPU kernels of the baselines' encoders, loaded by :mod:`qlib.compressors`
(``qlib._kernels.load("compressors")``) for their ``compress``: one pass over a row that does what the
encoder does in several torch passes, with the same floating-point operations in the same precision and
order (a float32 row stays float32: every constant is passed in the row's dtype, since an integer literal
would promote numba's float32 arithmetic to float64), so the codes are the same.

* :func:`sq_level`, :func:`qsgd_level`: the one definition of the two stochastic quantizers' decision for
  one entry given its uniform (stochastic quantization (SQ) with ``L`` levels on [lo, lo + span]; QSGD's
  level of ``|x_i|/‖x‖·s``), inlined by their encoders here and by the decoders that measure their error
  (:mod:`qlib._kernels.compressor_errors`);
* :func:`sq_codes_rows`, :func:`qsgd_levels_rows`: the codes and levels a message carries, for
  :class:`qlib.compressors.HadamardSQ`, ``KashinSQ``, ``SQHuffman``, ``QSGD`` and ``QSGDElias``;
* :func:`times_pad_rows`, :func:`clamp_add_rows`, :func:`sub_times_rows`, :func:`add_rows`: the elementwise steps
  of Kashin's iterations between its transforms (:meth:`qlib.compressors.KashinSQ.coefficients`), each the
  torch step's one IEEE operation per entry (a product by ±1, a clamp, a sum, a difference);
* :func:`elias_rows`: QSGD + Elias-ω's code length per row of levels (integer arithmetic, for
  :class:`qlib.compressors.QSGDElias`, whose :func:`qlib.compressors.fit_to_budget` search sizes it many times).

Single-threaded, ``nogil``, no fastmath; compiled at the first call of each dtype (cached on disk beside
this file).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["sq_level", "qsgd_level", "sq_codes_rows", "qsgd_levels_rows", "times_pad_rows", "clamp_add_rows",
           "sub_times_rows", "add_rows", "elias_rows"]


@njit(cache=True, nogil=True, inline="always")
def sq_level(vi, ui, l0, sp, lm1, zero, one):
    """SQ's level (a float in [0, L − 1]) of ``vi`` on [l0, l0 + sp] (``sp > 0``, ``lm1`` = L − 1) given its
    uniform ``ui``, exactly as torch: t = (v − lo)/span·(L − 1), k = ⌊t⌋ + (u < t − ⌊t⌋) clamped to
    [0, L − 1] (separate roundings: no fastmath, so no fused multiply-add)."""
    t = (vi - l0) / sp
    t = t * lm1
    fl = np.floor(t)
    k = fl + (one if ui < t - fl else zero)
    return min(max(k, zero), lm1)


@njit(cache=True, nogil=True, inline="always")
def qsgd_level(a, ui, s, zero, one):
    """QSGD's level (a float in [0, s]) of ``a = |x_i|/‖x‖·s`` given its uniform ``ui``, exactly as torch:
    ⌊a⌋ + (u < a − ⌊a⌋) clamped to [0, s]."""
    fl = np.floor(a)
    lev = fl + (one if ui < a - fl else zero)
    return min(max(lev, zero), s)


@njit(cache=True, nogil=True)
def _sq_codes(v, u, lo, span, lm1, out, zero, one):
    for b in range(v.shape[0]):
        vv, uu, oo = v[b], u[b], out[b]
        l0, sp = lo[b], span[b]
        if sp > zero:
            for i in range(vv.shape[0]):
                oo[i] = np.int32(sq_level(vv[i], uu[i], l0, sp, lm1, zero, one))
        else:  # torch.where(span > 0, …, 0): t = 0, k = 0
            for i in range(vv.shape[0]):
                oo[i] = 0


def sq_codes_rows(v: np.ndarray, u: np.ndarray, lo: np.ndarray, span: np.ndarray, levels: int) -> np.ndarray:
    """The SQ codes (int32) of the rows of ``v`` (2-D, C-contiguous, float32/float64) with ``levels`` levels
    given the uniforms ``u`` (the shape and dtype of ``v``) and each row's ``lo`` = min and ``span`` = max − min
    (1-D, the dtype of ``v``, as torch computes them): the encoder's side, one pass."""
    dt = v.dtype.type
    out = np.empty(v.shape, dtype=np.int32)
    _sq_codes(v, u, lo, span, dt(levels - 1), out, dt(0), dt(1))
    return out


@njit(cache=True, nogil=True)
def _qsgd_levels(x, u, norm, s, lev, neg, zero, one):
    for b in range(x.shape[0]):
        xx, uu, ll, nn = x[b], u[b], lev[b], neg[b]
        n = norm[b]
        for i in range(xx.shape[0]):
            xi = xx[i]
            a = (abs(xi) / n if n > zero else zero) * s
            ll[i] = np.int64(qsgd_level(a, uu[i], s, zero, one))
            nn[i] = xi < zero


def qsgd_levels_rows(x: np.ndarray, u: np.ndarray, norm: np.ndarray, levels: int) -> tuple[np.ndarray, np.ndarray]:
    """QSGD's levels (int64) and signs (bool: x < 0) of the rows of ``x`` (2-D, C-contiguous, float32/float64)
    with ``levels`` magnitude levels given the uniforms ``u`` and each row's norm (as torch computes it, the
    dtype of ``x``): the encoder's side, one pass."""
    dt = x.dtype.type
    lev = np.empty(x.shape, dtype=np.int64)
    neg = np.empty(x.shape, dtype=np.bool_)
    _qsgd_levels(x, u, norm, dt(levels), lev, neg, dt(0), dt(1))
    return lev, neg


@njit(cache=True, nogil=True)
def _times_pad(r, s, out, zero):
    d = r.shape[1]
    for b in range(r.shape[0]):
        rr, ss, oo = r[b], s[b], out[b]
        for i in range(d):
            oo[i] = rr[i] * ss[i]
        for i in range(d, oo.shape[0]):
            oo[i] = zero


def times_pad_rows(r: np.ndarray, s: np.ndarray, D: int, out: np.ndarray | None = None) -> np.ndarray:
    """``pad(r ∘ s)`` to length ``D`` with zeros (Kashin's analysis input; rows of ``r``, ``s`` of one shape),
    into ``out`` (``(rows, D)``, C-contiguous; None: a new array)."""
    if out is None:
        out = np.empty((r.shape[0], D), dtype=r.dtype)
    _times_pad(r, s, out, r.dtype.type(0))
    return out


@njit(cache=True, nogil=True)
def _clamp_add(y, M, acc):
    for b in range(y.shape[0]):
        yy, aa = y[b], acc[b]
        hi = M[b]
        lo = -hi
        for i in range(yy.shape[0]):
            c = min(max(yy[i], lo), hi)
            yy[i] = c
            aa[i] = aa[i] + c


def clamp_add_rows(y: np.ndarray, M: np.ndarray, acc: np.ndarray) -> None:
    """In place: ``y ← clamp(y, −M, M)`` per row (``M`` one bound per row) and ``acc ← acc + y``."""
    _clamp_add(y, M, acc)


@njit(cache=True, nogil=True)
def _sub_times(r, z, s, out):
    for b in range(r.shape[0]):
        rr, zz, ss, oo = r[b], z[b], s[b], out[b]
        for i in range(rr.shape[0]):
            oo[i] = rr[i] - zz[i] * ss[i]


def sub_times_rows(r: np.ndarray, z: np.ndarray, s: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``r − z[:, :d] ∘ s`` (``d`` the row length of ``r``; ``z`` rows at least as long), into ``out`` (the
    shape of ``r``; may be ``r``; None: a new array)."""
    if out is None:
        out = np.empty_like(r)
    _sub_times(r, z, s, out)
    return out


@njit(cache=True, nogil=True)
def _add(a, b):
    for r in range(a.shape[0]):
        aa, bb = a[r], b[r]
        for i in range(aa.shape[0]):
            aa[i] = aa[i] + bb[i]


def add_rows(a: np.ndarray, b: np.ndarray) -> None:
    """In place: ``a ← a + b``."""
    _add(a, b)



@njit(cache=True, nogil=True, inline="always")
def _omega(n):
    """Length in bits of the Elias-ω code of the integer n ≥ 1: 1 (the final 0), then while n > 1 the
    n's binary form (its bit length b) is written and n ← b − 1."""
    length = 1
    while n > 1:
        b = 0
        m = n
        while m > 0:
            b += 1
            m >>= 1
        length += b
        n = b - 1
    return length


@njit(cache=True, nogil=True)
def _elias_rows(lev, out):
    for r in range(lev.shape[0]):
        row = lev[r]
        total = 0
        prev = -1
        for i in range(row.shape[0]):
            v = row[i]
            if v != 0:
                total += _omega(i - prev) + 1 + _omega(v)
                prev = i
        out[r] = total


def elias_rows(lev: np.ndarray) -> np.ndarray:
    """QSGD + Elias-ω's code length without its norm, per row of the 2-D C-contiguous integer array of
    levels ``lev`` (entries ≥ 0): for every nonzero level, the ω-code of (zeros skipped + 1), a sign bit
    and the ω-code of the level (int64; integer arithmetic, exact)."""
    out = np.empty(lev.shape[0], dtype=np.int64)
    _elias_rows(lev, out)
    return out
