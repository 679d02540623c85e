"""Compiled CPU kernel of the randomized Hadamard rotation with its Rademacher signs given as bits, loaded by
:mod:`qlib.hadamard` (its seeded rotation and Rademacher signs) and :mod:`qlib.eden` (its receiver) through
``qlib._kernels.load("rotation")``.

* ``rht_rows`` (``x ← H(s ∘ x)``, the signs read from the random bytes of the seeded draw inside the first
  pass) and ``irht_rows`` (``y ← s ∘ H y``, in place, the sign bits flipped in one pass of 64-bit XORs, fused
  into the top pass for rows of 2^24);
* ``lookup_irht_rows``: the inverse from EDEN's codes, ``tab[code]·S`` made tile by tile in the first pass
  (:func:`qlib._kernels.lookup.lookup_row`); ``lookup_irht_mean_dist`` decodes EDEN's rows one at a time into
  a one-row workspace and adds each to a running sum (:func:`qlib._kernels.distances.add_row`) while it is
  in cache: the error of their mean without the decoded batch (Figure 8);
* ``signs_from_bits``: the ±1 floats of :func:`qlib.hadamard.rademacher` from its random bytes, in one pass;
* ``sign_bit_table``: the sign bits of eight entries per byte of signs, the table of the final sign flip
  (:mod:`qlib._kernels.compressor_errors` flips Hadamard+SQ's signs with it).

Each rotation is one transform per rotation through the Walsh–Hadamard transform's one-row driver
(:func:`qlib._kernels.fwht.make_row_x`) with this module's first pass, so it gives the same bits as
``fwht_rows`` with the signs multiplied before or after. Single-threaded, ``nogil``; compiled at the first
call of each dtype (about 20 s per dtype once; cached on disk beside this file).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .distances import add_row, mean_dist_of_sum
from .fwht import h8, h8_signed, make_row_x
from .lookup import lookup_row

__all__ = ["rht_rows", "irht_rows", "lookup_irht_rows", "lookup_irht_mean_dist", "signs_from_bits", "sign_bit_table"]

# the arguments of the driver that a rotation does not read (global constants: numba freezes them into the
# compiled code)
_NO_CODES = np.zeros((1, 1), dtype=np.uint8)
_NO_BITS = np.zeros(1, dtype=np.uint64)

# Entry e of a row of D (D a multiple of 8) has the sign of bit e % 8 of byts[boff + e // 8] (set: −1): the
# bytes of the seeded draw of qlib.hadamard.rademacher, so that the ±1 floats of the whole row are never
# made. Forward (x ← H (s ∘ x)): the first pass multiplies its eight loads by row byts[…] of the 256 × 8
# table t8 of ±1. Inverse (y ← s ∘ H y): one pass flips the sign bits (table m8) after the transform.
# Multiplying by ±1 (or flipping the sign bit) is exact and every butterfly is the one of fwht_rows, in the
# same order, so these give the same bits as fwht(x * signs) and fwht(y) * signs. The inverse transform may also
# start from codes: dst = tab[idx + off] · sc (mode 2, the receiver of qlib.eden), made per tile in L1.

_T8: dict = {}


def _sign_table(dtype) -> np.ndarray:
    """t8[v, u] = −1 where bit u of v is set, else 1 (cached per dtype; read only)."""
    dtype = np.dtype(dtype)
    if dtype not in _T8:
        v = np.arange(256)[:, None] >> np.arange(8)[None, :]
        _T8[dtype] = (1 - 2 * (v & 1)).astype(dtype)
    return _T8[dtype]


def sign_bit_table(dtype) -> np.ndarray:
    """m[v] = the sign bits of eight entries of ``dtype`` whose signs are the bits of v, as the uint64 words
    that hold those entries (float32: 4 words of two entries, little-endian; float64: 8 words); cached per
    dtype, read only."""
    key = ("bits", np.dtype(dtype))
    if key not in _T8:
        ui = np.dtype(f"u{key[1].itemsize}").type
        m8 = (_sign_table(dtype) < 0).astype(ui) << ui(8 * key[1].itemsize - 1)
        _T8[key] = np.ascontiguousarray(m8).view(np.uint64)
    return _T8[key]


@njit(cache=True, nogil=True)
def _first(mode, src, dst, start, stop, byts, boff, t8, ii, off, tab, sc):
    """The first pass (levels 0..2) on [start, stop): of src (mode 0), of src ∘ signs (1), or of
    tab[ii + off]·sc (2: made in dst first; returns True when a code falls outside the table)."""
    if mode == 0:
        h8(src, dst, start, stop)
        return False
    if mode == 1:
        h8_signed(src, byts, boff, t8, dst, start, stop)
        return False
    bad = lookup_row(ii[start:stop], off, tab, sc, dst[start:stop])
    h8(dst, dst, start, stop)
    return bad


_row_x = make_row_x(_first)


@njit(cache=True, nogil=True)
def _rht_rows(src, dst, byts, t8, k, s, noi, notab, nobits, m8):
    n = src.shape[1]
    nb = n >> 3
    for r in range(src.shape[0]):
        for j in range(k):
            _row_x(src[r] if j == 0 else dst[r], dst[r], n, s, 1, byts, (r * k + j) * nb, t8, noi[0], 0, notab, s,
                   nobits, -1, m8)


@njit(cache=True, nogil=True)
def _irht_rows(y, ybits, byts, t8, m8, k, s, mode, idx, off, tab, S):
    """y ← s_j ∘ H y for j = k−1 … 0 (mode 0), or with the first transform's input tab[idx + off]·S[row]
    (mode 2). True when a code falls outside the table."""
    n = y.shape[1]
    nb = n >> 3
    bad = False
    for r in range(y.shape[0]):
        sc = S[r] if mode == 2 else s
        ii = idx[r] if mode == 2 else idx[0]
        # the signs of rotation j + 1 ride on the first pass of the next transform; rotation 0's on the last
        bad |= _row_x(y[r], y[r], n, s, mode, byts, 0, t8, ii, off, tab, sc, ybits[r], r * k * nb if k == 1 else -1, m8)
        for j in range(k - 2, -1, -1):
            _row_x(y[r], y[r], n, s, 1, byts, (r * k + j + 1) * nb, t8, ii, off, tab, sc, ybits[r],
                   r * k * nb if j == 0 else -1, m8)
    return bad


def rht_rows(x: np.ndarray, byts: np.ndarray, k: int, out: np.ndarray | None = None) -> np.ndarray:
    """``k`` chained randomized Hadamard rotations of each row of the 2-D C-contiguous float32/float64
    array ``x`` (``D = x.shape[1]`` a power of two >= 8): ``x ← fwht(s_j ∘ x)`` for j = 0…k−1, with the
    signs of rotation j of row r in bits ``(r k + j) D … (r k + j + 1) D − 1`` of the uint8 array
    ``byts`` (bit e % 8 of byte e // 8 set: −1). ``out`` may be ``x``. The caller checks the arguments."""
    if out is None:
        out = np.empty_like(x)
    n = x.shape[1]
    if x.shape[0]:
        _rht_rows(x, out, byts, _sign_table(x.dtype), k, x.dtype.type(1.0 / math.sqrt(n)), _NO_CODES,
                  np.empty(0, dtype=x.dtype), _NO_BITS, sign_bit_table(x.dtype))
    return out


def irht_rows(y: np.ndarray, byts: np.ndarray, k: int) -> np.ndarray:
    """The inverse of :func:`rht_rows` with the same signs, in place: ``y ← s_j ∘ fwht(y)`` for
    j = k−1…0. Returns ``y``."""
    if y.shape[0]:
        m8 = sign_bit_table(y.dtype)
        s = y.dtype.type(1.0 / math.sqrt(y.shape[1]))
        _irht_rows(y, y.view(np.uint64), byts, _sign_table(y.dtype), m8, k, s, 0, _NO_CODES, 0,
                   np.empty(0, dtype=y.dtype), np.empty(0, dtype=y.dtype))
    return y


def lookup_irht_rows(idx: np.ndarray, off: int, tab: np.ndarray, S: np.ndarray, byts: np.ndarray,
                     k: int, out: np.ndarray | None = None) -> np.ndarray | None:
    """``irht_rows(tab[idx + off] · S[row])`` for the 2-D C-contiguous uint8/int32 array ``idx`` (rows of a
    power of two >= 8), in the dtype of ``tab``, without making the scaled row: the same bits, into ``out``
    (C-contiguous, the shape of ``idx``; None: a new array). None when a code falls outside the table."""
    if out is None:
        out = np.empty(idx.shape, dtype=tab.dtype)
    if not idx.shape[0]:
        return out
    m8 = sign_bit_table(tab.dtype)
    s = tab.dtype.type(1.0 / math.sqrt(idx.shape[1]))
    bad = _irht_rows(out, out.view(np.uint64), byts, _sign_table(tab.dtype), m8, k, s, 2, idx, off, tab, S)
    return None if bad else out


@njit(cache=True, nogil=True)
def _lookup_irht_mean(ws, wsbits, acc, byts, t8, m8, s, idx, off, tab, S, f, nf, ref):
    n = ws.shape[0]
    nb = n >> 3
    for r in range(idx.shape[0]):
        if _row_x(ws, ws, n, s, 2, byts, 0, t8, idx[r], off, tab, S[r], wsbits, r * nb, m8):
            return True, 0.0
        add_row(acc, ws, f, r)
    return False, mean_dist_of_sum(acc, nf, ref)


def lookup_irht_mean_dist(idx: np.ndarray, off: int, tab: np.ndarray, S: np.ndarray, byts: np.ndarray,
                          ref: np.ndarray, ws: np.ndarray, acc: np.ndarray) -> float | None:
    """``Σ_j (m_j − ref_j)²`` (float64) over the ``d = len(ref)`` entries of the float64 vector ``ref``, with
    ``m`` the mean of the rows of ``lookup_irht_rows(idx, off, tab, S, byts, 1)[:, :d]`` as torch's
    ``mean(0)`` (the same bits), one row at a time: each decoded into the one-row workspace ``ws`` (``D``
    entries, the dtype of ``tab``) and added to the running sum ``acc`` (``d`` entries, that dtype), both
    small enough to stay in the last-level cache, so no decoded row goes to memory. None when a code falls
    outside the table."""
    n = idx.shape[1]
    dt = tab.dtype.type
    bad, dist = _lookup_irht_mean(ws, ws.view(np.uint64), acc, byts, _sign_table(tab.dtype), sign_bit_table(tab.dtype),
                                  dt(1.0 / math.sqrt(n)), idx, off, tab, S, np.empty((0, 0), dtype=tab.dtype),
                                  dt(idx.shape[0]), ref)
    return None if bad else float(dist)


@njit(cache=True, nogil=True)
def _signs(byts, out):
    n = out.shape[0]
    full = n >> 3
    for b in range(full):  # eight entries per byte: the inner loop unrolls and vectorizes
        v = np.int32(byts[b])
        for j in range(8):
            out[(b << 3) + j] = 1 - 2 * ((v >> j) & 1)
    for e in range(full << 3, n):
        out[e] = 1 - 2 * ((byts[e >> 3] >> (e & 7)) & 1)


def signs_from_bits(byts: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``out[e] = 1 - 2·(bit e % 8 of byts[e // 8])`` (±1) for every entry of the 1-D float array ``out``;
    ``byts`` is a uint8 array of at least ``ceil(len(out) / 8)`` bytes. One pass (the Rademacher signs
    of :func:`qlib.hadamard.rademacher`)."""
    _signs(byts, out)
    return out
