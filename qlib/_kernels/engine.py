"""Compiled CPU kernels of the batched engine and the r_Q^n recorder, private to :mod:`qlib.engine`
and :mod:`qlib.recorder` (loaded by ``qlib._kernels.load("engine")``).

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
  from the kz-th smallest (|θ|, index) key, found again from the last epoch's pivot in a step or
  two instead of a stable sort, ties broken by index as the stable sort does;
* :func:`quantize_unique` / :func:`scatter_unique` — what the recorder runs: the same quantizers,
  keeping only the quantized rows that differ from the same quantizer's row of the previous epoch
  (in the synthetic study of paper 001 about 89 % of them repeat: a coarse quantizer rarely moves
  under a few small Adam steps), so only those are evaluated on the validation set and stored;
* :func:`rq_stats` — the exact Algorithm-1 statistics of :func:`qlib.rqn.batched_rates` over a
  (models, T, Q, n) loss buffer, two passes per stream over the epochs it holds, variances in
  float64 (a repeated row repeats a term of the minimum and changes nothing).

The summation order of the matrix-vector products differs from torch's, so training agrees with the
torch path to float32 rounding, not bit for bit (tests/test_engine_compiled.py); the results are the
same bits from run to run (no reduction depends on the thread count). Compiled at the first call
(cached on disk beside this file).

Why numba (as for :mod:`qlib._fwht_cpu` and :mod:`qlib._eden_cpu`): already a dependency, wheels for
Linux, macOS and Windows, no C toolchain at install, and float32 arithmetic written out operation by
operation (what exact agreement with the torch quantizers needs). Two things made the difference in
speed: one loop nest per function (LLVM vectorizes it; a function holding many loops compiled to
slow code), and unsigned loop bounds where they come from an array (numba otherwise wraps negative
indices inside the loop, which stops vectorization: 3× on the quantizers).
"""

from __future__ import annotations

import math
import types

import numba
import numpy as np
from numba import njit, prange

__all__ = ["kernel", "SERIAL", "quantizer_codes", "hash_multipliers", "linear_adam", "quantize_rows", "quantize_unique", "scatter_unique", "fill_repeats", "rq_stats",
           "mlp_diff", "mlp_list_changes", "mlp_val_outputs", "MLP_TILE", "COPY_RTOL",
           "KIND_IDENTITY", "KIND_SIGN", "KIND_TERNARY", "KIND_BITS_PRINTED", "KIND_BITS_CAPPED", "KIND_TERNARY_TABLE"]

KIND_IDENTITY, KIND_SIGN, KIND_TERNARY, KIND_BITS_PRINTED, KIND_BITS_CAPPED, KIND_TERNARY_TABLE = 0, 1, 2, 3, 4, 5


def quantizer_codes(names, sizes, variant: str):
    """The kernels' description of the quantizers ``names`` (``qlib.quantizers``) on blocks of
    ``sizes``: kinds (Q,), params (Q·nblocks,) — a ternary quantizer's zero count per block, or
    s = 2^(b-1) of a b-bit one, or the count a 1.58b quantizer of Table 1's reading keeps — and the
    block offsets (nblocks + 1,)."""
    from qlib import quantizers

    kinds, params = [], []
    for name in names:
        q = quantizers.get(name, variant=variant)
        if name == "identity":
            kinds.append(KIND_IDENTITY)
            params += [0.0] * len(sizes)
        elif name == "sign":
            kinds.append(KIND_SIGN)
            params += [0.0] * len(sizes)
        elif q.zero_fraction is not None:
            kinds.append(KIND_TERNARY)
            params += [float(quantizers.n_zeros(q.zero_fraction, d)) for d in sizes]
        elif getattr(q, "keep_fraction", None) is not None:
            kinds.append(KIND_TERNARY_TABLE)
            params += [float(quantizers.n_zeros(q.keep_fraction, d)) for d in sizes]
        else:
            kinds.append(KIND_BITS_PRINTED if variant == "printed" else KIND_BITS_CAPPED)
            params += [float(2 ** (int(name[4:]) - 1))] * len(sizes)
    return (np.asarray(kinds, np.int64), np.asarray(params, np.float64),
            np.cumsum([0] + list(sizes)).astype(np.int64))


def hash_multipliers(p: int, seed: int = 12345) -> np.ndarray:
    """The p odd 64-bit constants of the quantized models' hash (:func:`_row_hash`)."""
    return np.random.default_rng(seed).integers(0, 2**63, p, dtype=np.uint64) * np.uint64(2) + np.uint64(1)


#: the serial twin of each parallel kernel (see :func:`kernel`)
SERIAL: dict = {}


def _parallel_and_serial(fn):
    """``njit(parallel=True)`` of ``fn``, and its serial twin (``prange`` runs as ``range``) in
    :data:`SERIAL`: with one thread the serial one runs, which starts no thread pool — an OpenMP
    pool's idle workers spin after every parallel region and took the other core from a notebook
    running beside (the book runs two at once, one thread each: measured 3.4× slower)."""
    twin = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__ + "_serial", fn.__defaults__,
                              fn.__closure__)
    twin.__qualname__ = fn.__qualname__ + "_serial"
    twin.__doc__ = fn.__doc__
    SERIAL[fn.__name__] = njit(cache=True)(twin)
    return njit(cache=True, parallel=True)(fn)


def kernel(name: str, threads: int):
    """The kernel ``name`` for ``threads`` threads: the parallel one (numba then uses that many
    threads, at most ``numba.config.NUMBA_NUM_THREADS``) or, for one thread, its serial twin."""
    if threads > 1:
        numba.set_num_threads(max(1, min(threads, numba.config.NUMBA_NUM_THREADS)))
        return globals()[name]
    return SERIAL[name]


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


@_parallel_and_serial
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
# Each kernel runs one loop nest over the E rows of one model k of x (E, K, p), writing quantizer q
# of block lo:hi into out (E, Q, p): few calls per row (a call per row and quantizer cost more than
# the arithmetic of a 257-vector), and one loop per function, which LLVM vectorizes (one function
# holding all the loops compiled to far slower code, as in qlib._eden_cpu).
@njit(cache=True, nogil=True)
def _alpha(amax):
    """α = 2^round(log2 max|θ|) (round half to even, as torch.round), 0 for an all-zero block."""
    if amax > 0:
        return np.float32(np.exp2(np.round(np.log2(amax))))
    return np.float32(0.0)


@njit(cache=True, nogil=True)
def _abs_alpha(x, k, a, alpha, lo, hi):
    """a[e, j] = |x[e, k, j]| and alpha[e] the scale α of row e's block."""
    for e in range(x.shape[0]):
        m = np.float32(0.0)
        for j in range(lo, hi):
            v = abs(x[e, k, j])
            a[e, j] = v
            m = max(m, v)
        alpha[e] = _alpha(m)


@njit(cache=True, nogil=True)
def _copy_rows(x, k, out, q, lo, hi):
    for e in range(x.shape[0]):
        for j in range(lo, hi):
            out[e, q, j] = x[e, k, j]


@njit(cache=True, nogil=True)
def _sign_pos0_rows(x, k, out, q, lo, hi):
    for e in range(x.shape[0]):
        for j in range(lo, hi):
            out[e, q, j] = np.float32(1.0) if x[e, k, j] >= np.float32(0.0) else np.float32(-1.0)


@njit(cache=True, nogil=True, error_model="numpy")
def _bits_rows(x, k, a, alpha, sc, capped, out, q, lo, hi):
    """b bits, s = 2^(b-1) = ``sc``. torch (qlib.quantizers): u = |x|/α, then
    printed: trunc(clamp(u·s, 0, s) + 1)·α/s·sign₀(x); capped: clamp(ceil(u·s), 1, s)·α/s·sign₀(x)."""
    one = np.float32(1.0)
    zero = np.float32(0.0)
    for e in range(x.shape[0]):
        al = alpha[e]
        if al == 0:
            for j in range(lo, hi):
                out[e, q, j] = zero
        elif capped:
            for j in range(lo, hi):
                u = min(max(np.ceil((a[e, j] / al) * sc), one), sc)
                out[e, q, j] = ((u * al) / sc) * (one if x[e, k, j] >= zero else -one)
        else:
            for j in range(lo, hi):
                u = np.trunc(min(max((a[e, j] / al) * sc, zero), sc) + one)
                out[e, q, j] = ((u * al) / sc) * (one if x[e, k, j] >= zero else -one)


# The ternary quantizers zero the kz smallest |x| of a block, ties taken in index order (what the
# stable argsort of qlib.quantizers does). With the key (bits of |x|) << 32 | index — the bits of a
# non-negative float32 order as its value, and the keys are distinct — that is every key up to the
# kz-th smallest, the pivot. The pivot of the last row is kept: from one epoch to the next a few
# small Adam steps move it by a rank or two, so it is found again by a count and a step or two, each
# one vectorized pass, instead of a sort.
@njit(cache=True, nogil=True)
def _keys(xi, e, k, keys, lo, hi):
    for j in range(lo, hi):
        keys[j] = (np.int64(xi[e, k, j] & np.int32(0x7FFFFFFF)) << np.int64(32)) | np.int64(j)


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
def _collect(keys, a, b, lo, hi, buf):
    """The keys in (a, b] into buf; their count."""
    c = 0
    for j in range(lo, hi):
        k = keys[j]
        if k > a and k <= b:
            buf[c] = k
            c += 1
    return c


@njit(cache=True, nogil=True)
def _pivot_band(keys, kz, P, c, lo, hi):
    """The kz-th smallest key, given that the key P has rank c (|c − kz| large): the keys whose |x|
    lies within a relative band ε of P's value on the side of the target are collected (one pass)
    and the target selected among them; ε starts at 1 % and doubles until the band holds it (a few
    hundred keys of a 131k block, where a selection over the whole block took ~1 ms). Where P's value
    is 0 or ε passes 1, the whole block is selected."""
    v = _key_value(P)
    if v <= 0:
        return np.partition(keys[lo:hi], kz - 1)[kz - 1]
    buf = np.empty(hi - lo, np.int64)
    eps = 0.01
    while eps < 1.0:
        if c > kz:                      # the target lies below P: the (c − kz + 1)-th largest of (L, P]
            L = _value_key(v * (1.0 - eps), False)
            m = _collect(keys, L, P, lo, hi, buf)
            need = c - kz + 1
            if m >= need:
                return np.partition(buf[:m], m - need)[m - need]
        else:                           # above P: the (kz − c)-th smallest of (P, U]
            U = _value_key(v * (1.0 + eps), True)
            m = _collect(keys, P, U, lo, hi, buf)
            need = kz - c
            if m >= need:
                return np.partition(buf[:m], need - 1)[need - 1]
        eps *= 2.0
    return np.partition(keys[lo:hi], kz - 1)[kz - 1]


@njit(cache=True, nogil=True)
def _key_value(P):
    """|x| of a key (bits of the non-negative float32 in the high 32 bits)."""
    return np.float64(np.array([np.int32(P >> np.int64(32))], np.int32).view(np.float32)[0])


@njit(cache=True, nogil=True)
def _value_key(v, top):
    """The key bound of the value v ≥ 0 (float32 bits high; all index bits set when ``top``)."""
    b = np.int64(np.array([np.float32(v)], np.float32).view(np.int32)[0] & np.int32(0x7FFFFFFF))
    return (b << np.int64(32)) | (np.int64(0xFFFFFFFF) if top else np.int64(0))


#: steps of one pass each that :func:`_pivot` takes from the last pivot before it selects anew
_PIVOT_STEPS = 8


@njit(cache=True, nogil=True)
def _pivot(keys, kz, j0, lo, hi):
    """The kz-th smallest key of the block (1 ≤ kz ≤ hi - lo), searched from the key of index j0
    (-1: no guess, a sort)."""
    if j0 < 0:
        return np.partition(keys[lo:hi], kz - 1)[kz - 1]
    P = keys[j0]
    c = _count_le(keys, P, lo, hi)
    if abs(c - kz) > _PIVOT_STEPS:      # moved far (a large block): select in a band around it
        return _pivot_band(keys, kz, P, c, lo, hi)
    while c > kz:
        P = _max_below(keys, P, lo, hi)
        c -= 1
    while c < kz:
        P = _min_above(keys, P, lo, hi)
        c += 1
    return P


@njit(cache=True, nogil=True)
def _sign_zero_le(x, e, k, keys, P, out, q, lo, hi):
    """sign(x) (sign(0) = 0), zero where the key is at most P."""
    for j in range(lo, hi):
        v = x[e, k, j]
        s = np.float32(1.0) if v > np.float32(0.0) else (np.float32(-1.0) if v < np.float32(0.0) else np.float32(0.0))
        out[e, q, j] = np.float32(0.0) if keys[j] <= P else s


@njit(cache=True, nogil=True)
def _sign_keep_le(x, e, k, keys, P, out, q, lo, hi):
    """sign(x) (sign(0) = 0) where the key is at most P, zero elsewhere (Table 1's 1.58b reading)."""
    for j in range(lo, hi):
        v = x[e, k, j]
        s = np.float32(1.0) if v > np.float32(0.0) else (np.float32(-1.0) if v < np.float32(0.0) else np.float32(0.0))
        out[e, q, j] = s if keys[j] <= P else np.float32(0.0)


@njit(cache=True, nogil=True)
def _ternary_rows(x, xi, k, keys, kz, pivots, ip, out, q, lo, hi, keep):
    """The 1.58b quantizers: zero the kz smallest keys (§5.1's text), or with ``keep`` keep only them
    (Table 1 as typeset)."""
    for e in range(x.shape[0]):
        _keys(xi, e, k, keys, lo, hi)
        if kz > 0:
            P = _pivot(keys, kz, pivots[ip], lo, hi)
            pivots[ip] = P & np.int64(0xFFFFFFFF)
        else:
            P = np.int64(-1)
        if keep:
            _sign_keep_le(x, e, k, keys, P, out, q, lo, hi)
        else:
            _sign_zero_le(x, e, k, keys, P, out, q, lo, hi)


@njit(cache=True, nogil=True, error_model="numpy")
def _quantize_small(x, e, k, kinds, params, nb, b, lo, hi, out, order):
    """All quantizers on row e's block of a few coordinates (a bias) in one function: calls per
    quantizer would cost more than the arithmetic. Same operations as the kernels above; the ternary
    zeroes from an insertion sort by (|x|, index) into ``order[lo:hi]``."""
    one = np.float32(1.0)
    zero = np.float32(0.0)
    amax = zero
    for j in range(lo, hi):
        amax = max(amax, abs(x[e, k, j]))
    alpha = _alpha(amax)
    sorted_ = False
    for q in range(kinds.shape[0]):
        kind = kinds[q]
        par = params[q * nb + b]
        for j in range(lo, hi):
            v = x[e, k, j]
            pos = one if v >= zero else -one
            if kind == 0:
                out[e, q, j] = v
            elif kind == 1:
                out[e, q, j] = pos
            elif kind == 2 or kind == 5:
                out[e, q, j] = one if v > zero else (-one if v < zero else zero)
            elif alpha == 0:
                out[e, q, j] = zero
            else:
                sc = np.float32(par)
                if kind == 4:
                    u = min(max(np.ceil((abs(v) / alpha) * sc), one), sc)
                else:
                    u = np.trunc(min(max((abs(v) / alpha) * sc, zero), sc) + one)
                out[e, q, j] = ((u * alpha) / sc) * pos
        if (kind == 2 and int(par) > 0) or (kind == 5 and int(par) < hi - lo):
            if not sorted_:
                for i in range(lo, hi):                 # stable: ties keep index order
                    h = i
                    while h > lo and abs(x[e, k, order[h - 1]]) > abs(x[e, k, i]):
                        order[h] = order[h - 1]
                        h -= 1
                    order[h] = i
                sorted_ = True
            if kind == 2:
                for i in range(lo, lo + int(par)):
                    out[e, q, order[i]] = zero
            else:
                for i in range(lo + int(par), hi):
                    out[e, q, order[i]] = zero


#: blocks up to this size take :func:`_quantize_small`
_SMALL = 8


@njit(cache=True, nogil=True)
def _quantize_model(x, xi, k, kinds, params, offsets, out, pivots, a, alpha, keys):
    """The rows x[:, k] (E, p), block by block, with every quantizer into out (E, Q, p). ``pivots``
    (Q·nblocks,): each ternary quantizer's pivot index per block from the last row (-1: none yet),
    updated. a (E, p), alpha (E,), keys (p,): scratch."""
    nb = offsets.shape[0] - 1
    for b in range(nb):
        lo, hi = offsets[b], offsets[b + 1]
        if hi - lo <= _SMALL:
            for e in range(x.shape[0]):
                _quantize_small(x, e, k, kinds, params, nb, b, lo, hi, out, keys)
            continue
        # unsigned indices: numba then emits no negative-index wraparound in the loops, and LLVM
        # vectorizes them (measured 3× faster than int64 bounds read from an array)
        ku, lo_u, hi_u = np.uint64(k), np.uint64(lo), np.uint64(hi)
        _abs_alpha(x, ku, a, alpha, lo_u, hi_u)
        for q in range(kinds.shape[0]):
            kind = kinds[q]
            par = params[q * nb + b]
            qu = np.uint64(q)
            if kind == KIND_IDENTITY:
                _copy_rows(x, ku, out, qu, lo_u, hi_u)
            elif kind == KIND_SIGN:
                _sign_pos0_rows(x, ku, out, qu, lo_u, hi_u)
            elif kind == KIND_TERNARY or kind == KIND_TERNARY_TABLE:
                _ternary_rows(x, xi, ku, keys, int(par), pivots, q * nb + b, out, qu, lo_u, hi_u,
                              kind == KIND_TERNARY_TABLE)
            else:
                _bits_rows(x, ku, a, alpha, np.float32(par), kind == KIND_BITS_CAPPED, out, qu, lo_u, hi_u)


@_parallel_and_serial
def quantize_rows(x, kinds, params, offsets, out, pivots):
    """x (E, K, p) -> out (K, E, Q, p): quantizer q (``kinds[q]``; ``params[q * nblocks + i]`` = the
    number of zeroes of a ternary quantizer in block i, or s = 2^(b-1) of a b-bit one) applied to each
    block ``offsets[i]:offsets[i+1]`` of each row on its own (per-tensor scope). ``pivots`` (K,
    Q·nblocks) int64: per model the ternary pivots of its last row (-1 to start), updated — the next
    call starts from them."""
    E, K, p = x.shape
    xi = x.view(np.int32)
    for k in prange(K):
        a = np.empty((E, p), np.float32)
        alpha = np.empty(E, np.float32)
        keys = np.empty(p, np.int64)
        _quantize_model(x, xi, k, kinds, params, offsets, out[k], pivots[k], a, alpha, keys)


@njit(cache=True, nogil=True)
def _n_diff(u, v):
    """How many entries of the rows u and v differ (a count, which vectorizes; a break would not)."""
    c = 0
    for j in range(u.shape[0]):
        c += 1 if u[j] != v[j] else 0
    return c


@njit(cache=True, nogil=True)
def _copy_row(u, v):
    for j in range(u.shape[0]):
        v[j] = u[j]


@njit(cache=True, nogil=True)
def _row_hash(ui, mult):
    """A 64-bit hash of a float32 row given as its bits ``ui`` (uint32): Σ_j bits_j · mult_j mod 2^64
    (mult: odd constants), with -0 taken as +0 (the same model)."""
    h = np.uint64(0)
    for j in range(ui.shape[0]):
        b = ui[j]
        b = np.uint32(0) if b == np.uint32(0x80000000) else b
        h += np.uint64(b) * mult[j]
    return h


@njit(cache=True, nogil=True)
def _pack_new(rows, last, has_last, packed, sel, hsel, mult):
    """Rows (E, Q, p) that differ from the same quantizer's previous row (``last`` (Q, p) before the
    first, if ``has_last``) into packed / sel, with their hashes in hsel; ``last`` becomes the last
    rows. Returns the count."""
    E, Q, p = rows.shape
    ru = rows.view(np.uint32)
    c = 0
    for e in range(E):
        for q in range(Q):
            if e > 0:
                new = _n_diff(rows[e, q], rows[e - 1, q]) > 0
            else:
                new = not has_last or _n_diff(rows[e, q], last[q]) > 0
            if new:
                _copy_row(rows[e, q], packed[c])
                sel[c] = e * Q + q
                hsel[c] = np.int64(_row_hash(ru[e, q], mult))
                c += 1
    for q in range(Q):
        _copy_row(rows[E - 1, q], last[q])
    return c


@_parallel_and_serial
def quantize_unique(x, kinds, params, offsets, pivots, last, has_last, packed, sel, hsel, mult, count):
    """:func:`quantize_rows`, keeping only what Algorithm 1 needs: a quantized row equal to the same
    quantizer's row of the previous epoch (most of them: a few small Adam steps rarely move a
    coarse quantizer) has the same losses, so it is not stored again.

    x (E, K, p); ``last`` (K, Q, p) each quantizer's previous row (valid where ``has_last[k]``),
    updated. Out: ``packed`` (K, ≥E·Q, p) the new rows of model k in epoch-then-quantizer order,
    ``sel`` (K, ≥E·Q) their positions e·Q + q, ``hsel`` their hashes (:func:`_row_hash` with the
    odd constants ``mult`` (p,) uint64), ``count`` (K,) how many."""
    E, K, p = x.shape
    Q = kinds.shape[0]
    xi = x.view(np.int32)
    for k in prange(K):
        a = np.empty((E, p), np.float32)
        alpha = np.empty(E, np.float32)
        keys = np.empty(p, np.int64)
        rows = np.empty((E, Q, p), np.float32)
        _quantize_model(x, xi, k, kinds, params, offsets, rows, pivots[k], a, alpha, keys)
        count[k] = _pack_new(rows, last[k], has_last[k], packed[k], sel[k], hsel[k], mult)
        has_last[k] = True


@_parallel_and_serial
def scatter_unique(L, sel, hsel, count, t0, Q, buf, ep, eh, ne):
    """The losses L (K, M, n) of the packed rows into their epochs' slots of buf (K, T, Q, n)
    (epoch t0 + e); each stream (k, q) lists the epochs it holds in ep[k, q, :ne[k, q]] and their
    quantized models' hashes in eh[k, q, :ne[k, q]]."""
    K = L.shape[0]
    n = L.shape[2]
    for k in prange(K):
        for i in range(count[k]):
            e = sel[k, i] // Q
            q = sel[k, i] % Q
            t = t0 + e
            for j in range(n):
                buf[k, t, q, j] = L[k, i, j]
            ep[k, q, ne[k, q]] = t
            eh[k, q, ne[k, q]] = hsel[k, i]
            ne[k, q] += 1


@_parallel_and_serial
def fill_repeats(buf, ep, ne, T):
    """Each stream's epochs not listed in ``ep`` get the losses of the last listed one before them
    (the same quantized model): the full (K, T, Q, n) loss buffer."""
    K, Q = buf.shape[0], buf.shape[2]
    for k in prange(K):
        for q in range(Q):
            i = 0
            cur = -1
            for t in range(T):
                if i < ne[k, q] and ep[k, q, i] == t:
                    cur = t
                    i += 1
                elif cur >= 0:
                    buf[k, t, q] = buf[k, cur, q]


# ---------------------------------------------------------------------------------------------
# Algorithm 1 statistics over a (K, T, Q, n) loss buffer
# ---------------------------------------------------------------------------------------------
#: relative tolerance (float32: 2^-17 ≈ 7.6e-6, about 64 ulps) under which a loss row counts as θ̄_1's
#: copy in :func:`rq_stats` when the losses were carried across epochs (the incremental recording);
#: losses computed from scratch every epoch use 0 (only exactly equal rows)
COPY_RTOL = 2.0 ** -17


@_parallel_and_serial
def rq_stats(buf, ep, eh, ne, ddof, copy_rtol, r, best, d2, kbind, ndist, nonfinite):
    """Per stream (k, q) of buf (K, T, Q, n) float32, over the epochs ep[k, q, :ne[k, q]] (increasing;
    the epochs left out repeat the last listed one, which leaves every statistic unchanged), whose
    quantized models have the hashes eh[k, q, :ne[k, q]]: r_Q^n, θ̄_1's epoch, δ_2, the binding
    epoch, the number of distinct quantized models, written into the (K, Q) outputs; ``nonfinite``
    (K,) counts model k's non-finite rows.

    Same statistics as :func:`qlib.rqn.batched_rates`: θ̄_1 the first row of smallest mean (float64),
    its copies dropped, r = min δ_k²/(2σ_k²) (first epoch attaining it), here with σ_k² summed in
    float64 after the float32 difference of the rows. A copy is the same quantized model (equal
    hash), not an equal loss row: the losses of one model computed in two matrix products of
    different sizes may differ in the last bit, and a near-copy of θ̄_1 would give a term 0/0 of
    rounding noise. A distinct model whose losses equal θ̄_1's — every |ℓ_k(z) − ℓ_1(z)| ≤
    ``copy_rtol``·(ℓ_1(z) + m_1): 0 for exactly equal rows, :data:`COPY_RTOL` (float32 rounding) for
    the incremental recording — is dropped as a copy too: a network whose
    changed weights feed only inactive units computes θ̄_1's function on the validation set, and
    :func:`qlib.rqn.batched_rates` drops every row equal to θ̄_1's; the tolerance makes that
    independent of the order in which the losses were summed (the incremental recording carries
    sums across epochs, and a code that changes and changes back leaves an ulp behind)."""
    K = buf.shape[0]
    Q = buf.shape[2]
    n = buf.shape[3]
    T = ep.shape[2]
    for k in prange(K):
        m = np.empty(T, np.float64)
        diff = np.empty(n, np.float32)
        bad = 0
        for q in range(Q):
            N = ne[k, q]
            if N == 0:                                  # nothing recorded
                r[k, q] = np.nan
                d2[k, q] = np.nan
                best[k, q] = -1
                kbind[k, q] = -1
                ndist[k, q] = 0
                continue
            for i in range(N):
                t = ep[k, q, i]
                s = 0.0
                for j in range(n):
                    s += np.float64(buf[k, t, q, j])
                m[i] = s / n
                if not np.isfinite(s):
                    bad += 1
            b = 0
            for i in range(1, N):
                if m[i] < m[b]:
                    b = i
            tb = ep[k, q, b]
            hb = eh[k, q, b]
            best[k, q] = tb
            m1 = m[b]
            rr = np.inf
            dd = np.inf
            kb = -1
            other = False
            for i in range(N):
                if eh[k, q, i] == hb:                   # θ̄_1 again
                    continue
                t = ep[k, q, i]
                mu = 0.0
                near = True
                for j in range(n):
                    diff[j] = buf[k, t, q, j] - buf[k, tb, q, j]
                    mu += diff[j]
                    near = near and abs(diff[j]) <= copy_rtol * (abs(buf[k, tb, q, j]) + abs(m1))
                mu /= n
                var = 0.0
                for j in range(n):
                    dv = diff[j] - mu
                    var += dv * dv
                var /= n - ddof
                d = m[i] - m1
                if near:                                # θ̄_1's losses: a copy on the validation set
                    continue
                other = True
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
            hs = np.sort(eh[k, q, :N])
            c = 1
            for i in range(1, N):
                if hs[i] != hs[i - 1]:
                    c += 1
            ndist[k, q] = c
        nonfinite[k] = bad


# ---------------------------------------------------------------------------------------------
# Recording a two-layer network incrementally (qlib.recorder, qlib.engine.MLP)
# ---------------------------------------------------------------------------------------------
# The validation pre-activations of a quantized first layer, Z = W̄ Xᵀ (h × n per model and
# quantizer), are carried from one epoch to the next: a quantizer maps most coordinates to the same
# level as one epoch before, so Z_t = Z_{t-1} + (W̄_t − W̄_{t-1}) Xᵀ touches only the changed
# entries (one axpy of a row of Xᵀ each). The kernels below find the changes (and whether a whole
# quantized model repeats, and its hash), list them row by row, and apply them fused with the rest
# of the network (ReLU, second layer) one tile of validation samples at a time, so that the tile of
# Xᵀ stays in the core's cache while every row of every model and quantizer passes over it.
@njit(cache=True, nogil=True)
def _count_diff_row(u, v, lo, hi):
    c = 0
    for j in range(lo, hi):
        c += 1 if u[j] != v[j] else 0
    return c


@_parallel_and_serial
def mlp_diff(cur, prev, h, d, counts, changed, hashes, mult):
    """cur, prev (K, Q, p) the quantized models of this epoch and the last. Per model and quantizer
    g = (k, q): ``counts[k, q, j]`` how many entries of row j of the first layer (h × d, first in θ)
    changed, ``changed[k, q]`` whether any of the p entries did, and ``hashes[k, q]`` the hash
    (:func:`_row_hash`) of this epoch's quantized model."""
    K, Q, p = cur.shape
    cu = cur.view(np.uint32)
    hd = np.uint64(h * d)
    for g in prange(K * Q):
        k = g // Q
        q = g % Q
        for j in range(h):
            lo = np.uint64(j * d)
            counts[k, q, j] = _count_diff_row(cur[k, q], prev[k, q], lo, lo + np.uint64(d))
        c = _count_diff_row(cur[k, q], prev[k, q], hd, np.uint64(p))
        for j in range(h):
            c += counts[k, q, j]
        changed[k, q] = c > 0
        hashes[k, q] = np.int64(_row_hash(cu[k, q], mult))


@_parallel_and_serial
def mlp_list_changes(cur, prev, h, d, indptr, idx, val):
    """The changed entries of the first layers as compressed rows: row r = (k·Q + q)·h + j lists its
    columns ``idx[indptr[r]:indptr[r+1]]`` and changes W̄_t − W̄_{t−1} in ``val`` (indptr from the
    counts of :func:`mlp_diff`; a row given no room is skipped)."""
    K, Q, p = cur.shape
    for r in prange(K * Q * h):
        g = r // h
        j = r % h
        k = g // Q
        q = g % Q
        c = indptr[r]
        if indptr[r + 1] == c:
            continue
        base = j * d
        for i in range(d):
            dl = cur[k, q, base + i] - prev[k, q, base + i]
            if dl != np.float32(0.0):
                idx[c] = i
                val[c] = dl
                c += 1


@njit(cache=True, nogil=True)
def _apply_row(zr, XT, xk, idx, val, c0, c1, t0, t1, acc):
    """zr[:] += Σ_c val[c]·XT[xk, idx[c], t0:t1] (zr = a row of Z on the tile), four changes at a time
    into the tile buffer ``acc`` (one load and store of it per four FMAs: ~1.8× one at a time)."""
    w = t1 - t0
    for t in range(w):
        acc[t] = zr[t]
    c = c0
    while c + 4 <= c1:
        a0, a1, a2, a3 = val[c], val[c + 1], val[c + 2], val[c + 3]
        x0 = XT[xk, idx[c], t0:t1]
        x1 = XT[xk, idx[c + 1], t0:t1]
        x2 = XT[xk, idx[c + 2], t0:t1]
        x3 = XT[xk, idx[c + 3], t0:t1]
        for t in range(w):
            acc[t] += (a0 * x0[t] + a1 * x1[t]) + (a2 * x2[t] + a3 * x3[t])
        c += 4
    while c < c1:
        a = val[c]
        xr = XT[xk, idx[c], t0:t1]
        for t in range(w):
            acc[t] += a * xr[t]
        c += 1
    for t in range(w):
        zr[t] = acc[t]


@njit(cache=True, nogil=True)
def _relu_acc(out, w, zr, b):
    for t in range(zr.shape[0]):
        out[t] += w * max(zr[t] + b, np.float32(0.0))


#: validation samples per tile of :func:`mlp_val_outputs` (a tile of Xᵀ: d × 256 floats, 1 MB at
#: d = 1024, read once per changed coordinate of every model; long enough that the per-coordinate
#: overhead is small against its 2 × 256 FLOPs)
MLP_TILE = 256


@_parallel_and_serial
def mlp_val_outputs(Z, XT, indptr, idx, val, cur, groups, h, d, out):
    """For each (k, q) in ``groups`` (G, 2): apply the listed changes to Z[k, q] (h, n) — Z += ΔW̄ Xᵀ,
    Xᵀ = ``XT[k]`` (or ``XT[0]`` when shared) — and write the network's outputs
    out[k, q, :] = b̄2 + Σ_j w̄2_j·max(Z[k, q, j] + b̄1_j, 0), the quantized b̄1, w̄2, b̄2 read from
    ``cur`` (K, Q, p) after the first layer. In tiles of :data:`MLP_TILE` samples (parallel)."""
    n = Z.shape[3]
    Q = Z.shape[1]
    shared = XT.shape[0] == 1
    hd = h * d
    ntile = (n + MLP_TILE - 1) // MLP_TILE
    for ti in prange(ntile):
        t0 = ti * MLP_TILE
        t1 = min(n, t0 + MLP_TILE)
        acc = np.empty(MLP_TILE, np.float32)
        for gi in range(groups.shape[0]):
            k = groups[gi, 0]
            q = groups[gi, 1]
            xk = 0 if shared else k
            o = out[k, q, t0:t1]
            o[:] = cur[k, q, hd + 2 * h]
            r0 = (k * Q + q) * h
            for j in range(h):
                zr = Z[k, q, j, t0:t1]
                c0, c1 = indptr[r0 + j], indptr[r0 + j + 1]
                if c1 > c0:
                    _apply_row(zr, XT, xk, idx, val, c0, c1, t0, t1, acc)
                _relu_acc(o, cur[k, q, hd + h + j], zr, cur[k, q, hd + j])
