"""Compiled CPU kernels of EDEN's Lloyd–Max quantization and dequantization, loaded by :mod:`qlib.eden`
(``qlib._kernels.load("eden")``).

Each is one pass over the rotated vector that does what :func:`qlib.eden.compress` /
:func:`qlib.eden.decompress` do in several torch passes, with the same floating-point operations in
the same precision, so the results are the same bits:

* :func:`quantize_rows`: ``u = r·η`` (one product in the dtype of ``r``), the cell code
  ``2k + (u < 0)`` of ``|u|`` (the comparisons against the thresholds rounded to that dtype, or the
  exact look-up table for more than three positive thresholds, as ``qlib.eden_quantizer.lm_quantize``), the
  centroid ``q`` of the code, and with fractional bits the codebook chosen by each coordinate's coin;
* :func:`dequantize_rows`: ``w = table[code]·S`` per row (the receiver's input to the inverse rotation)
  with fractional bits, each coordinate's table chosen by its coin, flagging codes outside the table of
  their coin (the caller then takes the torch path, which raises). Without coins the receiver does this
  inside the inverse transform: ``qlib._kernels.rotation.lookup_irht_rows``;
* :func:`dequantize_masked_rows`: the same under a loss mask (§4.2): ``w = table[code] / p · S`` where the
  coordinate arrived, 0 where it was lost, ``p`` the row's received fraction (the torch path's operations
  in its order: the same bits);
* :func:`lost_rows`: a random loss mask's lost coordinates, the ``round(loss·D)`` smallest of the row's
  uniform keys (``qlib.eden.received_mask``), by a radix selection in O(D).

Single-threaded, ``nogil``; compiled at the first call of each dtype (cached on disk beside this file).
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from .lookup import AVX2, lookup_row

__all__ = ["quantize_rows", "dequantize_rows", "dequantize_masked_rows", "lost_rows"]


@njit(nogil=True, inline="always")
def _code(u, mode, pos, ig, count, nxt, prv):
    """The cell code ``2k + (u < 0)``, k the number of positive thresholds strictly below ``a = |u|``
    (mode 0: none; mode 1: comparisons; mode 2: the exact LUT)."""
    a = abs(u)
    s = np.uint64(1) if u < 0 else np.uint64(0)
    if mode == 0:
        return s
    if mode == 1:
        k = np.uint64(0)
        for j in range(pos.shape[0]):
            k += np.uint64(1) if a > pos[j] else np.uint64(0)
        return (k << np.uint64(1)) | s
    c = a * ig
    n = count.shape[0]
    if c < n:
        cell = np.uint64(c)  # c >= 0: truncation, as torch's .to(int64)
    elif c >= n:
        cell = np.uint64(n - 1)
    else:
        cell = np.uint64(0)  # NaN: what the torch path's clamp gives on x86-64
    k = np.uint64(count[cell])
    if a > nxt[cell]:
        k += np.uint64(1)
    if a <= prv[cell]:
        k -= np.uint64(1)
    return (k << np.uint64(1)) | s


# One row without coins. The one- to four-bit codebooks (the common budgets) are selects, which LLVM
# vectorizes. (Separate functions: one function holding all the loops compiled to far slower code.)
@njit(cache=True, nogil=True)
def _row_1bit(r, e, tab, idx, q):
    t0, t1 = tab[0], tab[1]
    for i in range(r.shape[0]):
        neg = r[i] * e < 0
        idx[i] = np.uint8(1) if neg else np.uint8(0)
        q[i] = t1 if neg else t0


@njit(cache=True, nogil=True)
def _row_2bit(r, e, t, tab, idx, q):
    t0, t1, t2, t3 = tab[0], tab[1], tab[2], tab[3]
    for i in range(r.shape[0]):
        u = r[i] * e
        big = abs(u) > t
        neg = u < 0
        idx[i] = (np.uint8(2) if big else np.uint8(0)) | (np.uint8(1) if neg else np.uint8(0))
        q[i] = (t3 if neg else t2) if big else (t1 if neg else t0)


@njit(cache=True, nogil=True)
def _row_3bit(r, e, p0, p1, p2, tab, kv, idx, q):
    """Three bits: three comparisons, as :func:`_row_4bit`."""
    c0, c1, c2, c3 = tab[0], tab[2], tab[4], tab[6]
    k2, k4, k6, k1 = kv[1], kv[2], kv[3], kv[8]
    for i in range(r.shape[0]):
        u = r[i] * e
        a = abs(u)
        m = a > p0
        k, c = (k2, c1) if m else (kv[0], c0)
        m = a > p1
        k, c = (k4, c2) if m else (k, c)
        m = a > p2
        k, c = (k6, c3) if m else (k, c)
        neg = u < 0
        idx[i] = np.uint8(np.int32(k + k1 if neg else k))
        q[i] = -c if neg else c


@njit(cache=True, nogil=True)
def _row_4bit(r, e, pos, tab, kv, idx, q):
    """Four bits: the same codes as the exact LUT of ``_code`` mode 2 (both count the thresholds strictly
    below |u|, in the dtype of r), by seven comparisons with the thresholds in increasing order; each one
    that holds moves the code ``2k`` and the centroid one cell up (selects: the loop vectorizes, 2x faster
    than adding the comparisons and reading the centroid from the table, 7x faster than the LUT's search).
    The code is carried as a float of r's dtype (``kv``: 0, 2, …, 14, then 1), which keeps every lane of
    the loop the width of r's; ``tab[2k + 1] = −tab[2k]`` (the codebook is symmetric, checked by the
    caller), so the negative centroid is the negated positive one, the same bits."""
    p0, p1, p2, p3, p4, p5, p6 = pos[0], pos[1], pos[2], pos[3], pos[4], pos[5], pos[6]
    c0, c1, c2, c3, c4, c5, c6, c7 = tab[0], tab[2], tab[4], tab[6], tab[8], tab[10], tab[12], tab[14]
    k0, k2, k4, k6, k8, k10, k12, k14, k1 = kv[0], kv[1], kv[2], kv[3], kv[4], kv[5], kv[6], kv[7], kv[8]
    for i in range(r.shape[0]):
        u = r[i] * e
        a = abs(u)
        m = a > p0
        k, c = (k2, c1) if m else (k0, c0)
        m = a > p1
        k, c = (k4, c2) if m else (k, c)
        m = a > p2
        k, c = (k6, c3) if m else (k, c)
        m = a > p3
        k, c = (k8, c4) if m else (k, c)
        m = a > p4
        k, c = (k10, c5) if m else (k, c)
        m = a > p5
        k, c = (k12, c6) if m else (k, c)
        m = a > p6
        k, c = (k14, c7) if m else (k, c)
        neg = u < 0
        idx[i] = np.uint8(np.int32(k + k1 if neg else k))
        q[i] = -c if neg else c


# Four bits, float32, on AVX2 hosts: eight coordinates per step in LLVM vector code. The code is the
# count of thresholds below |u| (seven comparisons, their masks summed in 32-bit lanes) and the centroid
# a lane permutation (vpermps) of the eight positive centroids by that count: about half the instructions
# of the selects of _row_4bit, the same values (one product u = r·e, the same comparisons, −c exact).
@intrinsic
def _q4_group(typingctx, r, i, e, pos, cpos, idx, q):
    """idx[i:i+8] = 2k + (u < 0) and q[i:i+8] = ±cpos[k] for u = r[i:i+8]·e, k = #{j : |u| > pos[j]}."""
    sig = types.void(r, i, e, pos, cpos, idx, q)

    def codegen(context, builder, sig_, args):
        # generic in r's dtype (float64 rows never take this loop, but the branch that calls it compiles)
        single = sig_.args[0].dtype == types.float32
        ft, w = context.get_value_type(sig_.args[0].dtype), sig_.args[0].dtype.bitwidth
        i32, iw = ir.IntType(32), ir.IntType(w)
        vf, vi, vb = ir.VectorType(ft, 8), ir.VectorType(iw, 8), ir.VectorType(ir.IntType(8), 8)
        zero8 = ir.Constant(ir.VectorType(i32, 8), [0] * 8)
        al = w // 8

        def ptr(k, vty):
            arr = context.make_array(sig_.args[k])(context, builder, args[k])
            return arr.data, builder.bitcast(builder.gep(arr.data, [args[1]]), vty.as_pointer())

        def splat(v, vty):
            w = builder.insert_element(ir.Constant(vty, ir.Undefined), v, ir.Constant(i32, 0))
            return builder.shuffle_vector(w, w, zero8)

        _, rp = ptr(0, vf)
        u = builder.fmul(builder.load(rp, align=al), splat(args[2], vf))
        a = builder.bitcast(builder.and_(builder.bitcast(u, vi), ir.Constant(vi, [(1 << (w - 1)) - 1] * 8)), vf)
        pos_data = context.make_array(sig_.args[3])(context, builder, args[3]).data
        k = ir.Constant(vi, [0] * 8)
        for j in range(7):
            t = builder.load(builder.gep(pos_data, [ir.Constant(ir.IntType(64), j)]), align=al)
            k = builder.sub(k, builder.sext(builder.fcmp_ordered(">", a, splat(t, vf)), vi))
        neg = builder.fcmp_ordered("<", u, ir.Constant(vf, [0.0] * 8))
        code = builder.or_(builder.shl(k, ir.Constant(vi, [1] * 8)), builder.zext(neg, vi))
        _, ip = ptr(5, vb)
        builder.store(builder.trunc(code, vb), ip, align=1)
        cdata = context.make_array(sig_.args[4])(context, builder, args[4]).data
        if AVX2 and single:
            ctab = builder.load(builder.bitcast(cdata, vf.as_pointer()), align=al)
            perm = cgutils.get_or_insert_function(builder.module, ir.FunctionType(vf, [vf, vi]), "llvm.x86.avx2.permps")
            c = builder.call(perm, [ctab, k])
        else:  # never run (the caller takes _row_4bit): eight scalar reads
            c = ir.Constant(vf, ir.Undefined)
            for j in range(8):
                kj = builder.extract_element(k, ir.Constant(i32, j))
                c = builder.insert_element(c, builder.load(builder.gep(cdata, [kj]), align=al), ir.Constant(i32, j))
        _, qp = ptr(6, vf)
        builder.store(builder.select(neg, builder.fneg(c), c), qp, align=al)
        return context.get_dummy_value()

    return sig, codegen


@njit(cache=True, nogil=True)
def _row_4bit_avx2(r, e, pos, tab, kv, idx, q):
    """:func:`_row_4bit` for float32 rows on AVX2 hosts (the same codes and centroids), see _q4_group."""
    cpos = np.empty(8, dtype=r.dtype)
    for j in range(8):
        cpos[j] = tab[2 * j]
    n = r.shape[0]
    n8 = n & ~7
    for i in range(0, n8, 8):
        _q4_group(r, i, e, pos, cpos, idx, q)
    if n8 < n:
        _row_4bit(r[n8:], e, pos, tab, kv, idx[n8:], q[n8:])


@njit(cache=True, nogil=True)
def _row_any(r, e, mode, pos, ig, count, nxt, prv, tab, idx, q):
    for i in range(r.shape[0]):
        c = _code(r[i] * e, mode, pos, ig, count, nxt, prv)
        idx[i] = c
        q[i] = tab[c]


@njit(cache=True, nogil=True, inline="always")
def _symmetric(tab):
    """tab[2k + 1] = −tab[2k] ≠ 0 for every k (then −tab[2k] has the bits of tab[2k + 1])."""
    ok = tab.shape[0] % 2 == 0
    for j in range(0, tab.shape[0] - 1, 2):
        ok &= tab[j] != 0 and tab[j + 1] == -tab[j]
    return ok


@njit(cache=True, nogil=True)
def _row_plain(r, e, mode, pos, ig, count, nxt, prv, tab, kv, vec, idx, q):
    if mode == 0:
        _row_1bit(r, e, tab, idx, q)
    elif mode == 1 and pos.shape[0] == 1:
        _row_2bit(r, e, pos[0], tab, idx, q)
    elif mode == 1 and pos.shape[0] == 3 and tab.shape[0] == 8 and _symmetric(tab):
        _row_3bit(r, e, pos[0], pos[1], pos[2], tab, kv, idx, q)
    elif mode == 2 and pos.shape[0] == 7 and tab.shape[0] == 16 and _symmetric(tab):
        if vec:
            _row_4bit_avx2(r, e, pos, tab, kv, idx, q)
        else:
            _row_4bit(r, e, pos, tab, kv, idx, q)
    else:
        _row_any(r, e, mode, pos, ig, count, nxt, prv, tab, idx, q)


_CHUNK = 1024  # coordinates per chunk of the fractional-bit path (its buffers stay in L1)


@njit(cache=True, nogil=True)
def _row_coins(r, e, coins, m0, pos0, ig0, cnt0, nxt0, prv0, tab0, m1, pos1, ig1, cnt1, nxt1, prv1, tab1, kv, vec, idx, q):
    """Fractional bits: both codebooks on a chunk (the fast row loops), then each coordinate takes the
    code of its coin's codebook."""
    i0, q0 = np.empty(_CHUNK, dtype=idx.dtype), np.empty(_CHUNK, dtype=q.dtype)
    i1, q1 = np.empty(_CHUNK, dtype=idx.dtype), np.empty(_CHUNK, dtype=q.dtype)
    n = r.shape[0]
    for s in range(0, n, _CHUNK):
        m = min(_CHUNK, n - s)
        rs = r[s : s + m]
        _row_plain(rs, e, m0, pos0, ig0, cnt0, nxt0, prv0, tab0, kv, vec, i0[:m], q0[:m])
        _row_plain(rs, e, m1, pos1, ig1, cnt1, nxt1, prv1, tab1, kv, vec, i1[:m], q1[:m])
        cs, ids, qs = coins[s : s + m], idx[s : s + m], q[s : s + m]
        for i in range(m):  # every value loaded, then selected: no branch on the random coin
            c = cs[i] != 0
            a0, a1, b0, b1 = i0[i], i1[i], q0[i], q1[i]
            ids[i] = a1 if c else a0
            qs[i] = b1 if c else b0


@njit(cache=True, nogil=True)
def _times(r, q):
    """q ← r · q (the products of torch's ``mul(r, q)``, commuted: the same bits)."""
    for i in range(q.shape[0]):
        q[i] = r[i] * q[i]


@njit(cache=True, nogil=True)
def _quantize(r, eta, coins, m0, pos0, ig0, cnt0, nxt0, prv0, tab0, m1, pos1, ig1, cnt1, nxt1, prv1, tab1, kv, vec, prod, idx, q):
    n = r.shape[1]
    step = _CHUNK if prod else n  # with prod: chunk by chunk, each chunk's products made while it is in L1
    for b in range(r.shape[0]):
        for s in range(0, n, step):
            e = min(n, s + step)
            rs, ids, qs = r[b, s:e], idx[b, s:e], q[b, s:e]
            if coins.shape[0]:
                _row_coins(rs, eta[b], coins[b, s:e], m0, pos0, ig0, cnt0, nxt0, prv0, tab0,
                           m1, pos1, ig1, cnt1, nxt1, prv1, tab1, kv, vec, ids, qs)
            else:
                _row_plain(rs, eta[b], m0, pos0, ig0, cnt0, nxt0, prv0, tab0, kv, vec, ids, qs)
            if prod:
                _times(rs, qs)


def quantize_rows(r: np.ndarray, eta: np.ndarray, lo: tuple, hi: tuple | None = None,
                  coins: np.ndarray | None = None, q: np.ndarray | None = None,
                  times_r: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Cell codes (uint8) and centroids (dtype of ``r``) of ``u = r · eta[row]`` for the 2-D C-contiguous
    float32/float64 array ``r``. ``lo`` / ``hi``: a codebook's parameters ``(mode, thresholds, 1/γ, count,
    next, prev, table)`` in the dtype of ``r`` (``qlib.eden_quantizer._lm_kernel_params``); ``coins`` (uint8 0/1, the
    shape of ``r``): where set, the coordinate uses ``hi``; ``q``: the array to write the centroids to (the
    shape and dtype of ``r``); ``times_r``: ``q`` receives the products ``r · centroid`` instead (the
    terms of ``⟨r, q⟩``, the bits of torch's ``mul``), made while each chunk is in L1. The caller checks
    the arguments."""
    idx = np.empty(r.shape, dtype=np.uint8)
    if q is None:
        q = np.empty_like(r)
    if coins is None:
        coins, hi = np.empty((0, 0), dtype=np.uint8), lo
    vec = AVX2 and r.dtype == np.float32  # the vector 4-bit loop (_q4_group)
    _quantize(r, eta, coins, *lo, *hi, np.array([0, 2, 4, 6, 8, 10, 12, 14, 1], dtype=r.dtype), vec, times_r, idx, q)
    return idx, q


@njit(cache=True, nogil=True)
def _dequantize(idx, off, tab0, tab1, coins, S, out):
    bad = False
    n0, n1 = tab0.shape[0], tab1.shape[0]
    for b in range(idx.shape[0]):
        s = S[b]
        ii, oo = idx[b], out[b]
        if coins.shape[0]:
            cc = coins[b]
            for i in range(ii.shape[0]):
                c = np.uint64(np.int64(ii[i]))
                hi = cc[i] != 0
                if c >= (n1 if hi else n0):  # outside the codebook of its coin
                    bad = True
                    c = np.uint64(0)
                a0, a1 = tab0[min(c, np.uint64(n0 - 1))], tab1[c]
                oo[i] = (a1 if hi else a0) * s
        elif lookup_row(ii, off, tab0, s, oo):
            bad = True
    return bad


def dequantize_rows(idx: np.ndarray, off: int, tab: np.ndarray, S: np.ndarray, tab_hi: np.ndarray | None = None,
                    coins: np.ndarray | None = None) -> np.ndarray | None:
    """``tab[idx + off] · S[row]`` for the 2-D C-contiguous uint8/int32 array ``idx`` (with ``coins``: the
    entries whose coin is set from ``tab_hi``, the others from ``tab``), in the dtype of the tables; None
    when a code falls outside its table (the one of its coin; the caller's torch path decides)."""
    out = np.empty(idx.shape, dtype=tab.dtype)
    if coins is None:
        coins, tab_hi = np.empty((0, 0), dtype=np.uint8), tab
    return None if _dequantize(idx, off, tab, tab_hi, coins, S, out) else out


@njit(cache=True, nogil=True)
def _dequantize_masked(idx, off, tab0, tab1, coins, rec, S, Dt, out):
    """Per row: ``p = count / D`` in the dtype of the tables (the torch path's ``sum(…).to(dtype) / D``: an
    exact count rounded to the dtype, then divided), the products ``(table[c] / p) · S`` made once per
    table entry (the same values as per coordinate), then a look-up and a select per coordinate (no
    division in the loop, no branch on the random mask: the loop vectorizes)."""
    bad = False
    n0, n1 = tab0.shape[0], tab1.shape[0]
    t0, t1 = np.empty(n0, dtype=out.dtype), np.empty(n1, dtype=out.dtype)
    pv = np.empty(1, dtype=out.dtype)
    for b in range(idx.shape[0]):
        ii, rr, oo = idx[b], rec[b], out[b]
        cnt = 0
        for i in range(rr.shape[0]):
            cnt += np.int64(rr[i])
        pv[0] = cnt  # (an integer rounded to the dtype, as torch's .to(dtype))
        pb, s = pv[0] / Dt[0], S[b]
        zero = pb * 0  # +0 (p >= 0), in the dtype of the tables
        for c in range(n0):
            t0[c] = (tab0[c] / pb) * s if pb != 0 else zero  # (nothing of the row arrived: it decodes to 0)
        for c in range(n1):
            t1[c] = (tab1[c] / pb) * s if pb != 0 else zero
        if coins.shape[0]:
            cc = coins[b]
            for i in range(ii.shape[0]):
                c = np.uint64(np.int64(ii[i]) + off)  # a negative code becomes huge: outside the table
                hi = cc[i] != 0
                bad |= c >= np.uint64(n1 if hi else n0)
                c = min(c, np.uint64(n1 - 1))
                v = t1[c] if hi else t0[min(c, np.uint64(n0 - 1))]
                oo[i] = v if rr[i] != 0 else zero
        else:
            un0 = np.uint64(n0)
            for i in range(ii.shape[0]):
                c = np.uint64(np.int64(ii[i]) + off)
                bad |= c >= un0
                v = t0[min(c, un0 - np.uint64(1))]
                oo[i] = v if rr[i] != 0 else zero  # (a select: no branch on the random mask)
    return bad


def dequantize_masked_rows(idx: np.ndarray, off: int, tab: np.ndarray, S: np.ndarray, rec: np.ndarray,
                           tab_hi: np.ndarray | None = None, coins: np.ndarray | None = None) -> np.ndarray | None:
    """``tab[idx + off] / p · S[row]`` where ``rec`` (uint8 0/1, the shape of ``idx``) is set and 0 where not,
    ``p`` the row's received fraction (a row with nothing received: all 0), for the 2-D C-contiguous
    uint8/int32 array ``idx`` (with ``coins``: the entries whose coin is set from ``tab_hi``), in the dtype
    of the tables. None when a code falls outside its table (the caller's torch path decides)."""
    out = np.empty(idx.shape, dtype=tab.dtype)
    if coins is None:
        coins, tab_hi = np.empty((0, 0), dtype=np.uint8), tab
    Dt = np.array([idx.shape[1]], dtype=tab.dtype)
    return None if _dequantize_masked(idx, off, tab, tab_hi, coins, rec, S, Dt, out) else out


@njit(cache=True, nogil=True)
def _lost_rows(keys, lost, out):
    hist = np.zeros(65536, dtype=np.int64)
    n = keys.shape[1]
    for b in range(keys.shape[0]):
        row, o = keys[b], out[b]
        hist[:] = 0
        for i in range(n):  # the top 16 bits
            hist[row[i] >> np.uint32(16)] += 1
        acc, hb = 0, 0
        while acc + hist[hb] < lost:
            acc += hist[hb]
            hb += 1
        need = lost - acc  # of the keys of bin hb, the smallest `need` are lost
        hist[:] = 0
        for i in range(n):  # the low 16 bits, in bin hb
            v = row[i]
            if (v >> np.uint32(16)) == hb:
                hist[v & np.uint32(0xFFFF)] += 1
        acc, lb = 0, 0
        while acc + hist[lb] < need:
            acc += hist[lb]
            lb += 1
        t = np.uint32((hb << 16) | lb)  # the lost-th smallest key
        take = need - acc  # of the keys equal to it, the first `take` (by index) are lost
        for i in range(n):
            o[i] = row[i] > t
        for i in range(n):
            if row[i] == t:
                if take == 0:
                    o[i] = True
                else:
                    take -= 1


def lost_rows(keys: np.ndarray, lost: int) -> np.ndarray:
    """Per row of the 2-D C-contiguous float32 array ``keys`` (entries ``>= 0``): True (received) but at its
    ``lost`` smallest entries, ties at the cut broken by position (the first ones lost), found by a radix
    selection on the keys' bits (a nonnegative float's bits order as the float): O(D), two histograms
    and two passes. ``1 <= lost <= D``; the caller checks."""
    out = np.empty(keys.shape, dtype=np.bool_)
    _lost_rows(keys.view(np.uint32), lost, out)
    return out
