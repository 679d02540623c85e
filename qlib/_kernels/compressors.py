"""Compiled CPU kernels of the baselines' stochastic quantizers and of a squared distance, loaded by
:mod:`qlib.compressors` (``qlib._kernels.load("compressors")``) for :func:`qlib.compressors.squared_errors`.

Each is one pass over a row that does what the compressor's encoder and decoder do in several torch
passes, with the same floating-point operations in the same precision and order (a float32 row stays
float32: every constant is passed in the row's dtype, since an integer literal would promote numba's
float32 arithmetic to float64), given the same random draw, so the decisions and the decoded values are
the same bits; only the error sums are new (float64; their order of summation is free):

* :func:`sq_rows`: ``qlib.compressors``' stochastic quantization (SQ) with ``L`` levels on [lo, lo + span]
  of a row given its uniforms ``u``, decoded as the receiver does (``lo + k·step``), and ``Σ (ĉ − v)²``;
* :func:`qsgd_rows`: QSGD's levels of ``|x_i|/‖x‖·s`` given ``u``, decoded (``((±‖x‖)·ξ)/s``), and
  ``Σ (x̂ − x)²``;
* :func:`sq_dist_rows`: ``Σ (a − b)²`` per row in float64; :func:`mean_dist`: the squared distance of the
  mean of the rows (torch's ``mean(0)``, the same bits) to a float64 vector; :func:`sketch_mean_dist`: a
  one-row Count-Sketch of a vector, decoded, and its squared distance to a float64 vector; :func:`fold_dist_rows`: the squared norm of the
  first half of the Hadamard transform of ``a − b``, which is a sum of folded differences (Kashin+SQ's error);
* the error of a mean without the decoded rows (Figure 8): :func:`sq_transform_mean_dist` decodes SQ inside the
  first pass of the Walsh–Hadamard transform (its one-row driver from ``fwht.make_row_x``), then the signs of
  the inverse rotation (Hadamard+SQ) or a frame's ±1 (Kashin+SQ), one row at a time in a one-row workspace
  added to a running sum (``fwht.add_row``) while it is in cache; :func:`qsgd_mean_dists` the same for QSGD's
  blocks, every level count from one read of the input; the mean is torch's ``mean(0)`` bit for bit;
* :func:`sq_codes_rows`, :func:`qsgd_levels_rows`: the encoders' side of the same two quantizers (the codes
  and levels a message carries), for :class:`qlib.compressors.HadamardSQ`, ``KashinSQ``, ``SQHuffman``, ``QSGD``
  and ``QSGDElias``' compress;
* :func:`times_pad_rows`, :func:`clamp_add_rows`, :func:`sub_times_rows`, :func:`add_rows`: the elementwise steps
  of Kashin's iterations between its transforms (:meth:`qlib.compressors.KashinSQ.coefficients`), each the
  torch step's one IEEE operation per entry (a product by ±1, a clamp, a sum, a difference);
* :func:`elias_rows`: QSGD + Elias-ω's code length per row of levels (integer arithmetic, for
  :class:`qlib.compressors.QSGDElias`, whose :func:`qlib.compressors.fit_to_budget` search sizes it many times).

The decoded values go to a block of ``_BLOCK`` entries that stays in L1 (or to the caller's output row),
then the error sum reads them back: both loops vectorize (the exact one has no reduction; the sum may be
reassociated). Single-threaded, ``nogil``; compiled at the first call of each dtype (cached on disk beside
this file).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .fwht import SUM_BLOCK, add_row, h8, make_row_x, mean_dist_of_sum, sign_bit_table, sumsq_diff

__all__ = ["sq_rows", "qsgd_rows", "sq_dist_rows", "mean_dist", "sketch_mean_dist", "fold_dist_rows", "elias_rows", "times_pad_rows", "clamp_add_rows",
           "sub_times_rows", "add_rows", "sq_codes_rows", "qsgd_levels_rows", "sq_transform_mean_dist", "qsgd_mean_dists"]

_BLOCK = SUM_BLOCK  # entries decoded into an L1 block, and per partial sum of squares


@njit(cache=True, nogil=True)
def _sq_fill(v, u, l0, sp, lm1, st, dst, zero, one):
    """dst = SQ(v) decoded, exactly as torch: t = (v − lo)/span·(L − 1), k = ⌊t⌋ + (u < t − ⌊t⌋) clamped
    to [0, L − 1], lo + k·step (separate roundings: no fastmath, so no fused multiply-add)."""
    if sp > zero:
        for i in range(v.shape[0]):
            t = (v[i] - l0) / sp
            t = t * lm1
            fl = np.floor(t)
            k = fl + (one if u[i] < t - fl else zero)
            k = min(max(k, zero), lm1)
            dst[i] = l0 + k * st
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
    """dst = QSGD(x) decoded, exactly as torch: a = |x|/‖x‖·s, ξ = ⌊a⌋ + (u < a − ⌊a⌋) clamped to [0, s],
    ((±‖x‖)·ξ)/s."""
    if n > zero:
        for i in range(x.shape[0]):
            xi = x[i]
            a = (abs(xi) / n) * s
            fl = np.floor(a)
            lev = fl + (one if u[i] < a - fl else zero)
            lev = min(max(lev, zero), s)
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


@njit(cache=True, nogil=True)
def _sq_codes(v, u, lo, span, lm1, out, zero, one):
    for b in range(v.shape[0]):
        vv, uu, oo = v[b], u[b], out[b]
        l0, sp = lo[b], span[b]
        if sp > zero:
            for i in range(vv.shape[0]):
                t = (vv[i] - l0) / sp
                t = t * lm1
                fl = np.floor(t)
                k = fl + (one if uu[i] < t - fl else zero)
                oo[i] = np.int32(min(max(k, zero), lm1))
        else:
            for i in range(vv.shape[0]):
                oo[i] = 0


def sq_codes_rows(v: np.ndarray, u: np.ndarray, lo: np.ndarray, span: np.ndarray, levels: int) -> np.ndarray:
    """The SQ codes (int32) of the rows of ``v`` with ``levels`` levels given the uniforms ``u`` and each row's
    ``lo`` and ``span`` (what :func:`sq_rows` decodes): the encoder's side, one pass."""
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
            fl = np.floor(a)
            lv = fl + (one if uu[i] < a - fl else zero)
            ll[i] = np.int64(min(max(lv, zero), s))
            nn[i] = xi < zero


def qsgd_levels_rows(x: np.ndarray, u: np.ndarray, norm: np.ndarray, levels: int) -> tuple[np.ndarray, np.ndarray]:
    """QSGD's levels (int64) and signs (bool: x < 0) of the rows of ``x`` given the uniforms ``u`` and each
    row's norm (what :func:`qsgd_rows` decodes): the encoder's side, one pass."""
    dt = x.dtype.type
    lev = np.empty(x.shape, dtype=np.int64)
    neg = np.empty(x.shape, dtype=np.bool_)
    _qsgd_levels(x, u, norm, dt(levels), lev, neg, dt(0), dt(1))
    return lev, neg
