"""Compiled CPU kernels of the r_Q^n recorder's quantizers, private to :mod:`qlib.recorder` (loaded by
``qlib._kernels.load("quantize")``): the families of :mod:`qlib.quantizers` on the parameters of many
models and epochs at once.

* :func:`quantizer_codes` — the kernels' description of a list of quantizers on blocks of parameters;
* :func:`quantize_rows` — several quantizers (identity, sign, ternary, b-bit, both b-bit variants) on many
  rows in one pass, block by block (per-tensor scope), the same values as
  :func:`qlib.quantizers.quantize_many` (tests check it exactly): the ternary zeroes come from the kz-th
  smallest (|θ|, index) key, found again from the last epoch's pivot in a step or two instead of a stable
  sort, ties broken by index as the stable sort does;
* :func:`quantize_unique` / :func:`scatter_unique` / :func:`fill_repeats` — what the recorder runs: the same
  quantizers, keeping only the quantized rows that differ from the same quantizer's row of the previous
  epoch (in the synthetic study of paper 001 about 89 % of them repeat: a coarse quantizer rarely moves
  under a few small Adam steps), so only those are evaluated on the validation set and stored, with their
  hash (:func:`row_hash`, :func:`hash_multipliers`).

Why numba, how these kernels are written to be fast, and their serial twins: :mod:`qlib._kernels.parallel`.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from qlib import quantizers

from .parallel import Twins

_TWINS = Twins()
#: the serial twin of each parallel kernel of this module (:class:`qlib._kernels.parallel.Twins`)
SERIAL = _TWINS.serial
kernel = _TWINS.kernel

__all__ = ["kernel", "SERIAL", "quantizer_codes", "hash_multipliers", "row_hash", "quantize_rows", "quantize_unique",
           "scatter_unique", "fill_repeats", "KIND_IDENTITY", "KIND_SIGN", "KIND_TERNARY", "KIND_BITS_PRINTED",
           "KIND_BITS_CAPPED", "KIND_TERNARY_TABLE"]

KIND_IDENTITY, KIND_SIGN, KIND_TERNARY, KIND_BITS_PRINTED, KIND_BITS_CAPPED, KIND_TERNARY_TABLE = 0, 1, 2, 3, 4, 5


def quantizer_codes(names, sizes, variant: str):
    """The kernels' description of the quantizers ``names`` (``qlib.quantizers``) on blocks of
    ``sizes``: kinds (Q,), params (Q·nblocks,) — a ternary quantizer's zero count per block, or
    s = 2^(b-1) of a b-bit one, or the count a 1.58b quantizer of Table 1's reading keeps — and the
    block offsets (nblocks + 1,)."""
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
    """The p odd 64-bit constants of the quantized models' hash (:func:`row_hash`)."""
    return np.random.default_rng(seed).integers(0, 2**63, p, dtype=np.uint64) * np.uint64(2) + np.uint64(1)


# Each kernel runs one loop nest over the E rows of one model k of x (E, K, p), writing quantizer q
# of block lo:hi into out (E, Q, p): few calls per row (a call per row and quantizer cost more than
# the arithmetic of a 257-vector), and one loop per function, which LLVM vectorizes (one function
# holding all the loops compiled to far slower code).
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


@_TWINS
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
def row_hash(ui, mult):
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
                hsel[c] = np.int64(row_hash(ru[e, q], mult))
                c += 1
    for q in range(Q):
        _copy_row(rows[E - 1, q], last[q])
    return c


@_TWINS
def quantize_unique(x, kinds, params, offsets, pivots, last, has_last, packed, sel, hsel, mult, count):
    """:func:`quantize_rows`, keeping only what Algorithm 1 needs: a quantized row equal to the same
    quantizer's row of the previous epoch (most of them: a few small Adam steps rarely move a
    coarse quantizer) has the same losses, so it is not stored again.

    x (E, K, p); ``last`` (K, Q, p) each quantizer's previous row (valid where ``has_last[k]``),
    updated. Out: ``packed`` (K, ≥E·Q, p) the new rows of model k in epoch-then-quantizer order,
    ``sel`` (K, ≥E·Q) their positions e·Q + q, ``hsel`` their hashes (:func:`row_hash` with the
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


@_TWINS
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


@_TWINS
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
