"""Compiled CPU kernels of the baselines' stochastic quantizers and of a squared distance, loaded by
:mod:`qlib.compressors` (``qlib._kernels.load("compressors")``) for :func:`qlib.compressors.squared_errors`.

Each is one pass over a row that does what the compressor's encoder and decoder do in several torch
passes, with the same floating-point operations in the same precision and order (a float32 row stays
float32: numba keeps float32 arithmetic in float32), given the same random draw, so the decisions and the
decoded values are the same bits; only the error sums are new (float64, accumulated in row order):

* :func:`sq_rows`: ``qlib.compressors`` stochastic quantization (SQ) with ``L`` levels on [lo, lo + span]
  of a row given its uniforms ``u``, decoded as the receiver does (``lo + k·step``), and ``Σ (ĉ − v)²``;
* :func:`qsgd_rows`: QSGD's levels of ``|x_i|/‖x‖·s`` given ``u``, decoded (``((±‖x‖)·ξ)/s``), and
  ``Σ (x̂ − x)²``;
* :func:`sq_dist_rows`: ``Σ (a − b)²`` per row in float64.

Single-threaded, ``nogil``; compiled at the first call of each dtype (cached on disk beside this file).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["sq_rows", "qsgd_rows", "sq_dist_rows"]


@njit(cache=True, nogil=True)
def _sq(v, u, lo, span, lm1, step, out, write, err, zero, one):
    # zero, one: the dtype's 0 and 1 (an integer literal would promote float32 arithmetic to float64)
    for b in range(v.shape[0]):
        vv, uu = v[b], u[b]
        l0, sp, st = lo[b], span[b], step[b]
        pos = sp > zero
        acc = 0.0
        for i in range(vv.shape[0]):
            t = (vv[i] - l0) / sp if pos else zero  # torch.where(span > 0, (v − lo)/span, 0)
            t = t * lm1
            fl = np.floor(t)
            k = fl + one if uu[i] < t - fl else fl
            if k < zero:
                k = zero
            elif k > lm1:
                k = lm1
            c = l0 + k * st
            if write:
                out[b, i] = c
            e = np.float64(c) - np.float64(vv[i])
            acc += e * e
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
def _qsgd(x, u, norm, s, out, write, err, zero, one):
    # zero, one: the dtype's 0 and 1 (an integer literal would promote float32 arithmetic to float64)
    for b in range(x.shape[0]):
        xx, uu = x[b], u[b]
        n = norm[b]
        pos = n > zero
        acc = 0.0
        for i in range(xx.shape[0]):
            xi = xx[i]
            a = (abs(xi) / n if pos else zero) * s  # torch.where(norm > 0, |x|/norm, 0) · s
            fl = np.floor(a)
            lev = fl + one if uu[i] < a - fl else fl
            if lev < zero:
                lev = zero
            elif lev > s:
                lev = s
            sn = -n if xi < zero else n  # norm · (1 − 2·neg), exact
            c = (sn * lev) / s
            if write:
                out[b, i] = c
            e = np.float64(c) - np.float64(xi)
            acc += e * e
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
def _dist(a, b, err):
    for r in range(a.shape[0]):
        aa, bb = a[r], b[r]
        acc = 0.0
        for i in range(aa.shape[0]):
            e = np.float64(aa[i]) - np.float64(bb[i])
            acc += e * e
        err[r] = acc


def sq_dist_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``Σ (a − b)²`` per row (float64) of two 2-D C-contiguous arrays of one shape (float32/float64)."""
    err = np.empty(a.shape[0], dtype=np.float64)
    _dist(a, b, err)
    return err
