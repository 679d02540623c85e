"""Compiled CPU kernels of the batched engine and the r_Q^n recorder, private to :mod:`qlib.engine`
and :mod:`qlib.recorder`.

Why compiled: the synthetic study of paper 001 §5.1 trains thousands of 257-parameter models for
3000 epochs, and each epoch of each model is two matrix-vector products of 128 × 257 plus eight
quantized validation passes. In torch, one epoch of a chunk of models is ~15 small kernels whose
dispatch costs as much as their arithmetic, and the chunk's data (two copies of 131 KB per model)
does not stay in the 512 KB L2 cache across epochs. Here one call runs *many epochs of one model*
with that model's data in L2 (model-outer, epoch-inner), in parallel over models:

* :func:`linear_adam` — full-batch Adam (the update of ``torch.optim.Adam``, same operations in
  float32) of the linear model ``f(x) = [x, 1]·θ`` under the logistic or squared loss, writing
  the parameters after every epoch (what the recorder quantizes);
* :func:`quantize_rows` — several quantizers of :mod:`qlib.quantizers` (identity, sign, ternary,
  b-bit, both b-bit variants) on many rows in one pass, block by block (per-tensor scope), the same
  values as :func:`qlib.quantizers.quantize_many` (tests check it exactly): the ternary zeroes come
  from a selection of the k-th smallest |θ| instead of a stable sort, ties broken by index as the
  stable sort does;
* :func:`rq_stats` — the exact Algorithm-1 statistics of :func:`qlib.rqn.batched_rates` over a
  (models, T, Q, n) loss buffer, two passes per stream, variances in float64.

The summation order of the matrix-vector products differs from torch's, so training agrees with the
torch path to float32 rounding, not bit for bit (tests/test_engine_compiled.py); the results are the
same bits from run to run (no reduction depends on the thread count). Compiled at the first call
(cached on disk beside this file).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

__all__ = ["linear_adam", "quantize_rows", "rq_stats", "KIND_IDENTITY", "KIND_SIGN", "KIND_TERNARY",
           "KIND_BITS_PRINTED", "KIND_BITS_CAPPED"]

KIND_IDENTITY, KIND_SIGN, KIND_TERNARY, KIND_BITS_PRINTED, KIND_BITS_CAPPED = 0, 1, 2, 3, 4


# ---------------------------------------------------------------------------------------------
# Training: linear model, full-batch Adam
# ---------------------------------------------------------------------------------------------
@njit(cache=True, nogil=True, inline="always")
def _softplus(z):
    # log(1 + e^z) without overflow, in float32
    if z > 0:
        return z + np.float32(math.log1p(math.exp(-z)))
    return np.float32(math.log1p(math.exp(z)))


@njit(cache=True, nogil=True)
def _linear_adam_one(theta, m, v, X1, X1t, y, t0, steps, lr, b1, b2, eps, logistic, hist, k, losses):
    p = theta.shape[0]
    n = y.shape[0]
    out = np.empty(n, np.float32)
    r = np.empty(n, np.float32)
    g = np.empty(p, np.float32)
    nf = np.float32(n)
    one = np.float32(1.0)
    b2f = np.float32(b2)
    w1 = np.float32(1.0 - b1)           # torch: m.lerp_(g, 1 - β1), the weight in float32
    w2 = np.float32(1.0 - b2)           # v.mul_(β2).addcmul_(g, g, value=1 - β2)
    epsf = np.float32(eps)
    record = losses.shape[0] > 0
    for s in range(steps):
        t = t0 + s + 1
        for i in range(n):
            out[i] = np.float32(0.0)
        for j in range(p):              # out = X1 θ, column by column (contiguous rows of X1ᵀ)
            a = theta[j]
            for i in range(n):
                out[i] += a * X1t[j, i]
        if logistic:
            for i in range(n):
                r[i] = (one / (one + np.float32(math.exp(-out[i]))) - y[i]) / nf
        else:
            for i in range(n):
                r[i] = np.float32(2.0) * (out[i] - y[i]) / nf
        if record:
            acc = 0.0
            for i in range(n):
                if logistic:
                    acc += _softplus(out[i]) - y[i] * out[i]
                else:
                    acc += (out[i] - y[i]) * (out[i] - y[i])
            losses[s, k] = acc / n
        for j in range(p):
            g[j] = np.float32(0.0)
        for i in range(n):              # g = X1ᵀ r, row by row (contiguous rows of X1)
            a = r[i]
            for j in range(p):
                g[j] += a * X1[i, j]
        bc1 = 1.0 - b1 ** t             # float64 scalars, as torch.optim.Adam computes them
        bc2 = 1.0 - b2 ** t
        step = np.float32(-lr / bc1)
        sq = np.float32(math.sqrt(bc2))
        for j in range(p):
            gj = g[j]
            mj = m[j] + w1 * (gj - m[j]) if w1 < 0.5 else gj - (gj - m[j]) * (one - w1)
            vj = v[j] * b2f + w2 * gj * gj
            m[j] = mj
            v[j] = vj
            theta[j] = theta[j] + step * (mj / (np.float32(math.sqrt(vj)) / sq + epsf))
        if hist.shape[0] > 0:
            for j in range(p):
                hist[s, k, j] = theta[j]


@njit(cache=True, parallel=True)
def linear_adam(theta, m, v, X1, X1t, y, t0, steps, lr, b1, b2, eps, logistic, hist, losses):
    """``steps`` Adam epochs (numbers t0+1 … t0+steps) of K linear models, in place.

    theta, m, v (K, p) float32; X1 (K, n, p) the data with a ones column, X1t (K, p, n) its
    transpose (both contiguous); y (K, n); lr, b1, b2, eps float64 (Python floats, as torch.optim.Adam keeps them);
    ``logistic``: the loss (else squared error); hist (steps, K, p) or (0, K, p): θ after each
    epoch; losses (steps, K) or (0, K): the mean training loss before each epoch's step.
    """
    K = theta.shape[0]
    for k in prange(K):
        _linear_adam_one(theta[k], m[k], v[k], X1[k], X1t[k], y[k], t0, steps, lr, b1, b2, eps,
                         logistic, hist, k, losses)


# ---------------------------------------------------------------------------------------------
# Quantizers (the families of qlib.quantizers), many rows at once
# ---------------------------------------------------------------------------------------------
# One loop per function: LLVM vectorizes these; one function holding all the loops compiled to far
# slower code (as in qlib._eden_cpu).
@njit(cache=True, nogil=True)
def _abs_max(x, a, lo, hi):
    m = np.float32(0.0)
    for j in range(lo, hi):
        v = abs(x[j])
        a[j] = v
        m = max(m, v)
    return m


@njit(cache=True, nogil=True)
def _copy(x, o, lo, hi):
    for j in range(lo, hi):
        o[j] = x[j]


@njit(cache=True, nogil=True)
def _sign_pos0(x, o, lo, hi):
    for j in range(lo, hi):
        o[j] = np.float32(1.0) if x[j] >= np.float32(0.0) else np.float32(-1.0)


@njit(cache=True, nogil=True)
def _sign(x, o, lo, hi):
    for j in range(lo, hi):
        v = x[j]
        o[j] = np.float32(1.0) if v > np.float32(0.0) else (np.float32(-1.0) if v < np.float32(0.0) else np.float32(0.0))


# The ternary quantizers zero the kz smallest |x| of a block, ties taken in index order (what the
# stable argsort of qlib.quantizers does). With the key (bits of |x|) << 32 | index — the bits of a
# non-negative float32 order as its value, and the keys are distinct — that is every key up to the
# kz-th smallest, the pivot. The pivot of the last row is kept: from one epoch to the next a few
# small Adam steps move it by a rank or two, so it is found again by a count and a step or two, each
# one vectorized pass, instead of a sort.
@njit(cache=True, nogil=True)
def _keys(xi, keys, lo, hi):
    for j in range(lo, hi):
        keys[j] = (np.int64(xi[j] & np.int32(0x7FFFFFFF)) << np.int64(32)) | np.int64(j)


@njit(cache=True, nogil=True)
def _count_le(keys, P, lo, hi):
    c = 0
    for j in range(lo, hi):
        c += 1 if keys[j] <= P else 0
    return c


@njit(cache=True, nogil=True)
def _max_below(keys, P, lo, hi):
    m = np.int64(-1)
    for j in range(lo, hi):
        k = keys[j]
        m = max(m, k if k < P else np.int64(-1))
    return m


@njit(cache=True, nogil=True)
def _min_above(keys, P, lo, hi):
    m = np.int64(0x7FFFFFFFFFFFFFFF)
    for j in range(lo, hi):
        k = keys[j]
        m = min(m, k if k > P else np.int64(0x7FFFFFFFFFFFFFFF))
    return m


@njit(cache=True, nogil=True)
def _zero_le(keys, P, o, lo, hi):
    for j in range(lo, hi):
        o[j] = np.float32(0.0) if keys[j] <= P else o[j]


@njit(cache=True, nogil=True)
def _pivot(keys, kz, j0, lo, hi):
    """The kz-th smallest key of the block (1 ≤ kz ≤ hi - lo), searched from the key of index j0
    (-1: no guess, a sort)."""
    if j0 < 0:
        return np.sort(keys[lo:hi])[kz - 1]
    P = keys[j0]
    c = _count_le(keys, P, lo, hi)
    while c > kz:
        P = _max_below(keys, P, lo, hi)
        c -= 1
    while c < kz:
        P = _min_above(keys, P, lo, hi)
        c += 1
    return P


@njit(cache=True, nogil=True)
def _fill(o, lo, hi, value):
    for j in range(lo, hi):
        o[j] = value


@njit(cache=True, nogil=True, error_model="numpy")
def _bits_printed(x, a, alpha, sc, o, lo, hi):
    # torch: u = |x|/α; o = trunc(clamp(u·s, 0, s) + 1)·α/s·sign₀(x)
    for j in range(lo, hi):
        u = np.trunc(min(max((a[j] / alpha) * sc, np.float32(0.0)), sc) + np.float32(1.0))
        o[j] = ((u * alpha) / sc) * (np.float32(1.0) if x[j] >= np.float32(0.0) else np.float32(-1.0))


@njit(cache=True, nogil=True, error_model="numpy")
def _bits_capped(x, a, alpha, sc, o, lo, hi):
    # torch: o = clamp(ceil(|x|/α·s), 1, s)·α/s·sign₀(x)
    for j in range(lo, hi):
        u = min(max(np.ceil((a[j] / alpha) * sc), np.float32(1.0)), sc)
        o[j] = ((u * alpha) / sc) * (np.float32(1.0) if x[j] >= np.float32(0.0) else np.float32(-1.0))


@njit(cache=True, nogil=True)
def _alpha(amax):
    """α = 2^round(log2 max|θ|) (round half to even, as torch.round), 0 for an all-zero block."""
    if amax > 0:
        return np.float32(np.exp2(np.round(np.log2(amax))))
    return np.float32(0.0)


@njit(cache=True, nogil=True)
def _quantize_row(x, a, keys, kinds, params, offsets, out, pivots):
    """Quantize one row x (p,) block by block with every quantizer into out (Q, p); a (p,) float32
    and keys (p,) int64 scratch. ``pivots`` (Q·nblocks,): the index of each ternary quantizer's
    pivot in each block, from the last row (-1: none yet), updated."""
    zero = np.float32(0.0)
    nb = offsets.shape[0] - 1
    xi = x.view(np.int32)
    for b in range(nb):
        lo, hi = offsets[b], offsets[b + 1]
        alpha = _alpha(_abs_max(x, a, lo, hi))
        keyed = False
        for q in range(kinds.shape[0]):
            kind = kinds[q]
            o = out[q]
            par = params[q * nb + b]
            if kind == 0:                               # identity
                _copy(x, o, lo, hi)
            elif kind == 1:                             # sign, sign(0) = +1
                _sign_pos0(x, o, lo, hi)
            elif kind == 2:                             # ternary: sign, the kz smallest |x| zeroed
                _sign(x, o, lo, hi)
                kz = int(par)
                if kz > 0:
                    if not keyed:
                        _keys(xi, keys, lo, hi)
                        keyed = True
                    P = _pivot(keys, kz, pivots[q * nb + b], lo, hi)
                    pivots[q * nb + b] = P & np.int64(0xFFFFFFFF)
                    _zero_le(keys, P, o, lo, hi)
            elif alpha == 0:
                _fill(o, lo, hi, zero)
            elif kind == 4:                             # b bits (capped), s = 2^(b-1)
                _bits_capped(x, a, alpha, np.float32(par), o, lo, hi)
            else:                                       # b bits (printed)
                _bits_printed(x, a, alpha, np.float32(par), o, lo, hi)


@njit(cache=True, parallel=True)
def quantize_rows(x, kinds, params, offsets, out, pivots):
    """x (E, K, p) -> out (K, E, Q, p): quantizer q (``kinds[q]``; ``params[q * nblocks + i]`` = the
    number of zeroes of a ternary quantizer in block i, or s = 2^(b-1) of a b-bit one) applied to each
    block ``offsets[i]:offsets[i+1]`` of each row on its own (per-tensor scope). ``pivots`` (K,
    Q·nblocks) int64: per model the ternary pivots of its last row (-1 to start), updated — the next
    call starts from them."""
    E, K, p = x.shape
    for k in prange(K):
        a = np.empty(p, np.float32)
        keys = np.empty(p, np.int64)
        for e in range(E):
            _quantize_row(x[e, k], a, keys, kinds, params, offsets, out[k, e], pivots[k])


# ---------------------------------------------------------------------------------------------
# Algorithm 1 statistics over a (K, T, Q, n) loss buffer
# ---------------------------------------------------------------------------------------------
@njit(cache=True, parallel=True)
def rq_stats(buf, T, ddof, proj, r, best, d2, kbind, ndist, nonfinite):
    """Per stream (k, q) of buf[:, :T] (K, ≥T, Q, n) float32: r_Q^n, θ̄_1's row, δ_2, the binding
    row, the number of distinct rows (hash of the row against ``proj``), written into the (K, Q)
    outputs; ``nonfinite`` (K,) counts the streams of model k with a non-finite loss."""
    K = buf.shape[0]
    Q = buf.shape[2]
    n = buf.shape[3]
    for k in prange(K):
        m = np.empty(T, np.float64)
        h = np.empty(T, np.float64)
        diff = np.empty(n, np.float32)
        bad = 0
        for q in range(Q):
            for t in range(T):
                s = 0.0
                hs = 0.0
                for i in range(n):
                    v = np.float64(buf[k, t, q, i])
                    s += v
                    hs += v * proj[i]
                m[t] = s / n
                h[t] = hs
                if not np.isfinite(s):
                    bad += 1
            b = 0
            for t in range(1, T):
                if m[t] < m[b]:
                    b = t
            best[k, q] = b
            m1 = m[b]
            rr = np.inf
            dd = np.inf
            kb = -1
            other = False
            for t in range(T):
                dup = True
                for i in range(n):
                    diff[i] = buf[k, t, q, i] - buf[k, b, q, i]
                    if diff[i] != 0:
                        dup = False
                if dup:
                    continue
                other = True
                mu = 0.0
                for i in range(n):
                    mu += diff[i]
                mu /= n
                var = 0.0
                for i in range(n):
                    dv = diff[i] - mu
                    var += dv * dv
                var /= n - ddof
                d = m[t] - m1
                if var > 0:
                    term = d * d / (2.0 * var)
                elif d != 0:
                    term = np.inf
                else:
                    term = 0.0
                if term < rr:
                    rr = term
                    kb = t
                if d < dd:
                    dd = d
            if other:
                r[k, q] = rr
                d2[k, q] = dd
            else:
                r[k, q] = np.nan
                d2[k, q] = np.nan
            kbind[k, q] = kb
            hs = np.sort(h)
            c = 1
            for t in range(1, T):
                if hs[t] != hs[t - 1]:
                    c += 1
            ndist[k, q] = c
        nonfinite[k] = bad
