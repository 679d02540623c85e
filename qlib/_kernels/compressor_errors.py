"""Compiled CPU kernels of :func:`qlib.compressors.squared_errors`, loaded by its shared stages
(``qlib._kernels.load("compressor_errors")`` in :mod:`qlib.compressors`' ``_stages``): the baselines'
decoders fused with the measure of their error.

Each is one pass over a row that does what the compressor's encoder and decoder do in several torch
passes, with the same floating-point operations in the same precision and order (a float32 row stays
float32: every constant is passed in the row's dtype, since an integer literal would promote numba's
float32 arithmetic to float64), given the same random draw: the decisions are the encoders' own
(:func:`qlib._kernels.compressors.sq_level` and ``qsgd_level``, inlined), so the decoded values are the
same bits; only the error sums are new (float64; their order of summation is free):

* :func:`sq_rows`: stochastic quantization (SQ) with ``L`` levels on [lo, lo + span] of a row given its
  uniforms ``u``, decoded as the receiver does (``lo + k·step``), and ``Σ (ĉ − v)²``;
* :func:`qsgd_rows`: QSGD's levels of ``|x_i|/‖x‖·s`` given ``u``, decoded (``((±‖x‖)·ξ)/s``), and
  ``Σ (x̂ − x)²``;
* :func:`sq_dist_rows`: ``Σ (a − b)²`` per row in float64; :func:`mean_dist`: the squared distance of the
  mean of the rows (torch's ``mean(0)``, the same bits) to a float64 vector; :func:`sketch_mean_dist`: a
  one-row Count-Sketch of a vector, decoded, and its squared distance to a float64 vector; :func:`fold_dist_rows`: the squared norm of the
  first half of the Hadamard transform of ``a − b``, which is a sum of folded differences (Kashin+SQ's error);
* the error of a mean without the decoded rows (Figure 8): :func:`sq_transform_mean_dist` decodes SQ inside the
  first pass of the Walsh–Hadamard transform (its one-row driver from ``fwht.make_row_x``), then the signs of
  the inverse rotation (Hadamard+SQ) or a frame's ±1 (Kashin+SQ), one row at a time in a one-row workspace
  added to a running sum (``distances.add_row``) while it is in cache; :func:`qsgd_mean_dists` the same for QSGD's
  blocks, every level count from one read of the input; the mean is torch's ``mean(0)`` bit for bit.

The decoded values go to a block of ``_BLOCK`` entries that stays in L1 (or to the caller's output row),
then the error sum reads them back: both loops vectorize (the exact one has no reduction; the sum may be
reassociated). Single-threaded, ``nogil``; compiled at the first call of each dtype (cached on disk beside
this file).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .compressors import qsgd_level, sq_level
from .distances import SUM_BLOCK, add_row, mean_dist_of_sum, sumsq_diff
from .fwht import h8, make_row_x
from .rotation import sign_bit_table

__all__ = ["sq_rows", "qsgd_rows", "sq_dist_rows", "mean_dist", "sketch_mean_dist", "fold_dist_rows",
           "sq_transform_mean_dist", "qsgd_mean_dists"]

_BLOCK = SUM_BLOCK  # entries decoded into an L1 block, and per partial sum of squares


@njit(cache=True, nogil=True)
def _sq_fill(v, u, l0, sp, lm1, st, dst, zero, one):
    """dst = SQ(v) decoded, exactly as torch: the level of :func:`sq_level`, then lo + k·step."""
    if sp > zero:
        for i in range(v.shape[0]):
            dst[i] = l0 + sq_level(v[i], u[i], l0, sp, lm1, zero, one) * st
    else:  # torch.where(span > 0, …, 0): t = 0, k = 0
        for i in range(v.shape[0]):
            dst[i] = l0 + zero * st


@njit(cache=True, nogil=True)
def _sq(v, u, lo, span, lm1, step, out, write, err, zero, one):
    buf = np.empty(_BLOCK, dtype=v.dtype)
    n = v.shape[1]
    for b in range(v.shape[0]):
        acc = 0.0
        for s0 in range(0, n, _BLOCK):
            s1 = min(n, s0 + _BLOCK)
            dst = out[b, s0:s1] if write else buf[: s1 - s0]
            _sq_fill(v[b, s0:s1], u[b, s0:s1], lo[b], span[b], lm1, step[b], dst, zero, one)
            acc += sumsq_diff(dst, v[b, s0:s1])
        err[b] = acc


def sq_rows(v: np.ndarray, u: np.ndarray, lo: np.ndarray, span: np.ndarray, levels: int, step: np.ndarray,
            out: np.ndarray | None = None) -> np.ndarray:
    """SQ of the rows of ``v`` (2-D, C-contiguous, float32/float64) with ``levels`` levels, given the
    uniforms ``u`` (the shape and dtype of ``v``), each row's ``lo`` = min, ``span`` = max − min and
    decoding ``step`` = span/(levels − 1) (1-D, the dtype of ``v``, as torch computes them): the decoded
    values into ``out`` (when given) and ``Σ (decoded − v)²`` per row (float64)."""
    dt = v.dtype.type
    err = np.empty(v.shape[0], dtype=np.float64)
    write = out is not None
    _sq(v, u, lo, span, dt(levels - 1), step, out if write else np.empty((1, 1), dtype=v.dtype), write, err,
        dt(0), dt(1))
    return err


@njit(cache=True, nogil=True)
def _qsgd_fill(x, u, n, s, dst, zero, one):
    """dst = QSGD(x) decoded, exactly as torch: a = |x|/‖x‖·s, ξ = :func:`qsgd_level`, ((±‖x‖)·ξ)/s."""
    if n > zero:
        for i in range(x.shape[0]):
            xi = x[i]
            lev = qsgd_level((abs(xi) / n) * s, u[i], s, zero, one)
            sn = -n if xi < zero else n  # norm · (1 − 2·neg), exact
            dst[i] = (sn * lev) / s
    else:  # torch.where(norm > 0, …, 0): a = 0, ξ = 0
        for i in range(x.shape[0]):
            sn = -n if x[i] < zero else n
            dst[i] = (sn * zero) / s


@njit(cache=True, nogil=True)
def _qsgd(x, u, norm, s, out, write, err, zero, one):
    buf = np.empty(_BLOCK, dtype=x.dtype)
    n = x.shape[1]
    for b in range(x.shape[0]):
        acc = 0.0
        for s0 in range(0, n, _BLOCK):
            s1 = min(n, s0 + _BLOCK)
            dst = out[b, s0:s1] if write else buf[: s1 - s0]
            _qsgd_fill(x[b, s0:s1], u[b, s0:s1], norm[b], s, dst, zero, one)
            acc += sumsq_diff(dst, x[b, s0:s1])
        err[b] = acc


def qsgd_rows(x: np.ndarray, u: np.ndarray, norm: np.ndarray, levels: int, out: np.ndarray | None = None) -> np.ndarray:
    """QSGD with ``levels`` magnitude levels of the rows of ``x`` (2-D, C-contiguous, float32/float64) given
    the uniforms ``u`` and each row's norm (as torch computes it, the dtype of ``x``): the decoded values into
    ``out`` (when given) and ``Σ (decoded − x)²`` per row (float64)."""
    dt = x.dtype.type
    err = np.empty(x.shape[0], dtype=np.float64)
    write = out is not None
    _qsgd(x, u, norm, dt(levels), out if write else np.empty((1, 1), dtype=x.dtype), write, err, dt(0), dt(1))
    return err


@njit(cache=True, nogil=True)
def _qsgd_means(x, u, norm, ss, nf, ref, dists, zero, one):
    nl, (n, d) = ss.shape[0], x.shape
    acc = np.empty((nl, _BLOCK), dtype=x.dtype)
    buf = np.empty(_BLOCK, dtype=x.dtype)
    no_f = np.empty((0, 0), dtype=x.dtype)
    for s0 in range(0, d, _BLOCK):
        s1 = min(d, s0 + _BLOCK)
        w = s1 - s0
        for b in range(n):  # each row's block read once, decoded at every level count while in L1
            for lv in range(nl):
                _qsgd_fill(x[b, s0:s1], u[b, s0:s1], norm[b], ss[lv], buf[:w], zero, one)
                add_row(acc[lv, :w], buf, no_f, b)
        for lv in range(nl):
            dists[lv] += mean_dist_of_sum(acc[lv, :w], nf, ref[s0:s1])


def qsgd_mean_dists(x: np.ndarray, u: np.ndarray, norm: np.ndarray, levels, ref: np.ndarray) -> np.ndarray:
    """For each level count in ``levels``, the squared distance (float64) of the mean of the rows of ``x``
    decoded by QSGD (:func:`qsgd_rows`: given ``u`` and the norms) to the float64 vector ``ref``: the bits of
    ``qsgd_rows`` then :func:`mean_dist`, block by block, each row's block read once and decoded at every
    level count while in L1 and added to that count's running sum of the block; no decoded rows made."""
    dt = x.dtype.type
    ss = np.array([dt(s) for s in levels], dtype=x.dtype)
    dists = np.zeros(len(ss), dtype=np.float64)
    _qsgd_means(x, u, norm, ss, dt(x.shape[0]), ref, dists, dt(0), dt(1))
    return dists


@njit(cache=True, nogil=True)
def _dist(a, b, err):
    for r in range(a.shape[0]):
        err[r] = sumsq_diff(a[r], b[r])


def sq_dist_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``Σ (a − b)²`` per row (float64) of two 2-D C-contiguous arrays of one shape (float32/float64)."""
    err = np.empty(a.shape[0], dtype=np.float64)
    _dist(a, b, err)
    return err


@njit(cache=True, nogil=True)
def _mean_block(a, s0, s1, nf, buf):
    """buf = the mean of the rows of ``a[:, s0:s1]`` as torch's ``mean(0)``: summed row after row in the
    rows' dtype, then divided by ``n`` (no fastmath: the same bits)."""
    w = s1 - s0
    for j in range(w):
        buf[j] = a[0, s0 + j]
    for r in range(1, a.shape[0]):
        for j in range(w):
            buf[j] += a[r, s0 + j]
    for j in range(w):
        buf[j] = buf[j] / nf


@njit(cache=True, nogil=True)
def _mean_dist(a, d, nf, ref):
    buf = np.empty(_BLOCK, dtype=a.dtype)
    acc = 0.0
    for s0 in range(0, d, _BLOCK):
        s1 = min(d, s0 + _BLOCK)
        _mean_block(a, s0, s1, nf, buf)
        acc += sumsq_diff(buf[: s1 - s0], ref[s0:s1])
    return acc


def mean_dist(a: np.ndarray, d: int, ref: np.ndarray) -> float:
    """``Σ_k (m_k − ref_k)²`` (float64) over the first ``d`` columns of the 2-D float32/float64 array ``a``
    (rows contiguous, ``n ≥ 1`` of them), with ``m`` the mean of its rows computed as torch's
    ``a[:, :d].mean(0)`` (the same bits) and ``ref`` a float64 vector of ``d`` entries: the squared error
    of a mean estimate (:func:`qlib.compressors.squared_errors`' ``of="mean"``), without the mean, its
    float64 copy or the difference as arrays."""
    return float(_mean_dist(a, d, a.dtype.type(a.shape[0]), ref))


@njit(cache=True, nogil=True)
def _first_sq(mode, src, dst, start, stop, byts, boff, t8, ii, off, tab, sc):
    """The first pass of a transform that decodes SQ: ``dst[start:stop]`` = the SQ of ``src`` decoded with the
    uniforms ``ii`` (:func:`_sq_fill`; ``tab`` = the row's lo, span, L − 1, step, 0, 1), then levels 0..2."""
    _sq_fill(src[start:stop], ii[start:stop], tab[0], tab[1], tab[2], tab[3], dst[start:stop], tab[4], tab[5])
    h8(dst, dst, start, stop)
    return False


_row_sq = make_row_x(_first_sq)


@njit(cache=True, nogil=True)
def _sq_transform_mean(v, u, prm, ws, wsbits, acc, s, byts, signed, t8, m8, f, nf, ref):
    n = ws.shape[0]
    nb = n >> 3
    for r in range(v.shape[0]):
        _row_sq(v[r], ws, n, s, 3, byts, 0, t8, u[r], 0, prm[r], s, wsbits, r * nb if signed else -1, m8)
        add_row(acc, ws, f, r)
    return mean_dist_of_sum(acc, nf, ref)


def sq_transform_mean_dist(v: np.ndarray, u: np.ndarray, lo: np.ndarray, span: np.ndarray, levels: int,
                           step: np.ndarray, ref: np.ndarray, ws: np.ndarray, acc: np.ndarray, *,
                           byts: np.ndarray | None = None, f: np.ndarray | None = None) -> float:
    """The squared distance (float64) of the mean of the decoded rows to the float64 vector ``ref`` (its
    ``d`` entries), each row the orthonormal Walsh–Hadamard transform of its SQ decoding (:func:`sq_rows`:
    ``v`` with ``levels`` levels given ``u``, ``lo``, ``span`` and ``step``), then times its signs (``byts``:
    row ``r``'s at bits ``r·D … (r + 1)·D − 1``, the inverse of one seeded rotation: Hadamard+SQ's receiver)
    or times ``f`` (``(rows, d)``, ±1: Kashin+SQ's synthesis), cut to ``d``: the bits of ``sq_rows``, then
    the inverse rotation or ``fwht_rows``, then :func:`mean_dist`, one row at a time in the one-row
    workspace ``ws`` (``D`` entries) with the running sum ``acc`` (``d`` entries), both of ``v``'s dtype:
    no decoded row goes to memory."""
    rows, n = v.shape
    dt = v.dtype.type
    prm = np.empty((rows, 6), dtype=v.dtype)
    prm[:, 0], prm[:, 1], prm[:, 2], prm[:, 3], prm[:, 4], prm[:, 5] = lo, span, dt(levels - 1), step, dt(0), dt(1)
    signed = byts is not None
    if not signed:
        byts = np.empty(0, dtype=np.uint8)
    if f is None:
        f = np.empty((0, 0), dtype=v.dtype)
    return float(_sq_transform_mean(v, u, prm, ws, ws.view(np.uint64), acc, dt(1.0 / math.sqrt(n)), byts, signed,
                                    np.empty((1, 8), dtype=v.dtype), sign_bit_table(v.dtype), f, dt(rows), ref))


@njit(cache=True, nogil=True)
def _sketch_mean_dist(m, h, byts, T, ref):
    for l in range(m.shape[0]):  # index_add_'s order: entry after entry
        v = m[l]
        T[h[l]] += -v if (byts[l >> 3] >> (l & 7)) & 1 else v
    buf = np.empty(_BLOCK, dtype=m.dtype)
    acc = 0.0
    d = m.shape[0]
    for s0 in range(0, d, _BLOCK):
        s1 = min(d, s0 + _BLOCK)
        for j in range(s1 - s0):
            l = s0 + j
            t = T[h[l]]
            buf[j] = -t if (byts[l >> 3] >> (l & 7)) & 1 else t
        acc += sumsq_diff(buf[: s1 - s0], ref[s0:s1])
    return acc


def sketch_mean_dist(m: np.ndarray, h: np.ndarray, byts: np.ndarray, c: int, ref: np.ndarray) -> float:
    """Count-Sketch (one row of ``c`` counters) of the vector ``m`` (float32/float64), decoded, and its
    squared distance to the float64 vector ``ref`` (float64): entry ``l`` goes to counter ``h[l]`` with the
    sign of bit ``l % 8`` of ``byts[l // 8]`` (set: −1), summed entry after entry in ``m``'s dtype as
    torch's ``index_add_``, and is estimated by its counter times its sign (a product by ±1 is exact), so
    the estimate has the bits of :meth:`qlib.compressors.CountSketch.mean_by_linearity` and the distance
    those of :func:`mean_dist` of that estimate; no signs, products or estimate as arrays."""
    T = np.zeros(c, dtype=m.dtype)
    return float(_sketch_mean_dist(m, h, byts, T, ref))


@njit(cache=True, nogil=True, fastmath={"reassoc", "nsz", "contract"})
def _fold(a, b, err):
    for r in range(a.shape[0]):
        aa, bb = a[r], b[r]
        h = aa.shape[0] // 2
        acc = 0.0
        for i in range(h):
            e = (np.float64(aa[i]) - np.float64(bb[i])) + (np.float64(aa[i + h]) - np.float64(bb[i + h]))
            acc += e * e
        err[r] = 0.5 * acc


def fold_dist_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``½ Σ_{i<h} ((a_i − b_i) + (a_{i+h} − b_{i+h}))²`` per row (float64; ``h`` half the row length) of two
    2-D C-contiguous arrays of one shape: ``‖(H̃_{2h} (a − b))[:h]‖²`` for the orthonormal Hadamard matrix
    ``H̃_{2h} = [[H̃_h, H̃_h], [H̃_h, −H̃_h]]/√2``, without the transform."""
    err = np.empty(a.shape[0], dtype=np.float64)
    _fold(a, b, err)
    return err
