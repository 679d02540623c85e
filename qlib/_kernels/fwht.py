"""Compiled CPU kernel of the orthonormal Walsh–Hadamard transform, loaded by :mod:`qlib.hadamard` (and by
:mod:`qlib.eden` for ``lookup_irht_rows``) through ``qlib._kernels.load("fwht")``.

``fwht_rows(x)`` returns ``x @ H_D / sqrt(D)`` for each row of a 2-D C-contiguous float32/float64
array (Sylvester order, the order of ``scipy.linalg.hadamard``), single-threaded, out of place.

Why numba (and not a dependency on a compiled peer such as ``fht-cpu``): see :mod:`qlib.hadamard`.

How it is fast (checked in the LLVM code numba emits: AVX2 vector adds on x86-64):

* radix-8 passes: one pass over memory applies three levels (strides ``h, 2h, 4h``) with the eight
  values in registers, so ``log8 D`` passes instead of ``log2 D``;
* each stride ``h = 8^k`` (k = 1…7) has its own compiled pass with ``h`` a compile-time constant and
  unsigned indices: LLVM then sees that the eight streams do not overlap and vectorizes the loop
  without run-time alias checks (with ``h`` a run-time value it does not vectorize: about 4× slower);
* levels 0–2 (strides 1, 2, 4: within each group of eight) are one pass that also copies the input,
  so the out-of-place transform costs no extra pass. They mix the lanes of one vector, which LLVM does
  not vectorize from scalar code, so that pass is written as LLVM vector code through a numba
  ``intrinsic`` (``_h8_group``: per level one lane permutation and one multiply-add by ±1, which gives
  the scalar butterflies' bits): 29 → 12 µs at 2^16;
* cache blocking: levels 0–11 run on 2^12-element tiles (16 KiB in float32: L1), levels 12–14 on
  2^15-element blocks (L2), levels 15–20 on 2^21-element blocks (L3), and only the levels above
  stream over the whole row.

Single-threaded; ``nogil`` so that callers may run rows in threads. Compiled at the first call of each
dtype (tens of seconds once; cached on disk beside this file, about a second to load afterwards).

The randomized Hadamard rotation for :mod:`qlib.hadamard`'s seeded streams and :mod:`qlib.eden`:
``rht_rows`` (``x ← H(s ∘ x)``, the signs read from the random bytes of the seeded draw inside the first
pass), ``irht_rows`` (``y ← s ∘ H y``, in place, the sign bits flipped in one pass of 64-bit XORs) and
``lookup_irht_rows`` (the inverse from EDEN's codes: ``tab[code]·S`` made tile by tile in the first pass).
They reuse the passes above in the same order, so they give the same bits as ``fwht_rows`` with the
signs multiplied before or after (for rows of 2^24, Figure 8's padded length, the inverse flips the signs
of each chunk of its top radix-8 pass while the chunk is in L2, not in a pass of its own: 338 → 277 ms
per 10 rows in float32 on the 2-core VM, against 259 ms for ``fwht_rows``). All of them, ``fwht_rows``
included, run one row through the same driver, each with its own first pass. Their first compilation adds
about 20 s per dtype. ``lookup_irht_mean_dist`` decodes
EDEN's rows one at a time into a one-row workspace and adds each to a running sum (``add_row``) while it is
in cache: the error of their mean without the decoded batch (Figure 8); ``make_row_x`` gives another kernel
module this row driver with its own first pass (``qlib._kernels.compressors`` decodes SQ there).
"""

from __future__ import annotations

import math

import numba
import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["fwht_rows", "rht_rows", "irht_rows", "lookup_irht_rows", "lookup_irht_mean_dist", "signs_from_bits",
           "h8", "sign_bit_table", "make_row_x", "add_row", "mean_dist_of_sum", "sumsq_diff"]

_TILE = 2**12  # levels 0..11 done per tile (L1)
_BLOCK = 2**15  # levels 12..14 done per block (L2)
_BLOCK3 = 2**21  # levels 15..20 done per block (L3)
SUM_BLOCK = 4096  # entries per partial sum of squares (the error sums of every kernel)
_MAX_CONST_STRIDE = 8**7  # strides with a compiled constant-stride pass; larger ones use _r4 / _r2
_U = np.arange(8, dtype=np.uint64)
# the arguments of the rotations' row driver that a plain transform does not read (global constants: numba
# freezes them into the compiled code)
_NO_CODES = np.zeros((1, 1), dtype=np.uint8)
_NO_BITS = np.zeros(1, dtype=np.uint64)
_NO_BYTES = np.zeros(1, dtype=np.uint8)
_NO_M8 = np.zeros((1, 4), dtype=np.uint64)


@njit(cache=True, nogil=True)
def _one(s):
    return s / s  # 1 in the dtype of s (s > 0)


@njit(cache=True, nogil=True)
def _bf8(a0, a1, a2, a3, a4, a5, a6, a7):
    """The 8-point butterfly network (three radix-2 levels) on eight values."""
    b0 = a0 + a1
    b1 = a0 - a1
    b2 = a2 + a3
    b3 = a2 - a3
    b4 = a4 + a5
    b5 = a4 - a5
    b6 = a6 + a7
    b7 = a6 - a7
    c0 = b0 + b2
    c1 = b1 + b3
    c2 = b0 - b2
    c3 = b1 - b3
    c4 = b4 + b6
    c5 = b5 + b7
    c6 = b4 - b6
    c7 = b5 - b7
    return c0 + c4, c1 + c5, c2 + c6, c3 + c7, c0 - c4, c1 - c5, c2 - c6, c3 - c7


# Levels 0..2 in vector registers. Within a group of eight the strides 1, 2, 4 mix the lanes of one
# vector, and LLVM does not find the shuffles itself from scalar code (three rewrites tried: the pass
# stayed scalar, ~29 us of a ~60 us transform at 2^16). So the group's butterflies are written as LLVM
# vector code: per level, y = x[c ^ h] + x[c] * (+1 for c & h == 0, else -1), one lane permutation and
# one multiply-add. Multiplying by ±1 is exact, so y[c] is x[c] + x[c^h] or x[c^h] - x[c] exactly as in
# _bf8 (IEEE a - b == a + (-b), signed zeros included), fused or not: the same bits.
_PERMS = ((1, 0, 3, 2, 5, 4, 7, 6), (2, 3, 0, 1, 6, 7, 4, 5), (4, 5, 6, 7, 0, 1, 2, 3))
_SIGNS = ((1, -1, 1, -1, 1, -1, 1, -1), (1, 1, -1, -1, 1, 1, -1, -1), (1, 1, 1, 1, -1, -1, -1, -1))


def _vec_ptr(context, builder, arrty, arr, idx, vty):
    data = context.make_array(arrty)(context, builder, arr).data
    return builder.bitcast(builder.gep(data, [idx]), vty.as_pointer())


def _vec_h8(builder, x, vty):
    name = f"llvm.fmuladd.v8f{vty.element.intrinsic_name[1:]}"
    fmuladd = cgutils.get_or_insert_function(builder.module, ir.FunctionType(vty, [vty, vty, vty]), name)
    i32x8 = ir.VectorType(ir.IntType(32), 8)
    for perm, sign in zip(_PERMS, _SIGNS):
        swapped = builder.shuffle_vector(x, x, ir.Constant(i32x8, list(perm)))
        x = builder.call(fmuladd, [x, ir.Constant(vty, [float(v) for v in sign]), swapped])
    return x


@intrinsic
def _h8_group(typingctx, src, dst, i, t8, t):
    """dst[i:i+8] = H_8 (src[i:i+8] ∘ t8[t:t+8]) in vector registers (``t8`` a flat table of ±1, or None:
    no signs)."""
    sig = types.void(src, dst, i, t8, t)
    signed = not isinstance(t8, types.NoneType)

    def codegen(context, builder, sig_, args):
        vty = ir.VectorType(context.get_value_type(sig_.args[0].dtype), 8)
        al = sig_.args[0].dtype.bitwidth // 8
        x = builder.load(_vec_ptr(context, builder, sig_.args[0], args[0], args[2], vty), align=al)
        if signed:
            x = builder.fmul(x, builder.load(_vec_ptr(context, builder, sig_.args[3], args[3], args[4], vty), align=al))
        builder.store(_vec_h8(builder, x, vty), _vec_ptr(context, builder, sig_.args[1], args[1], args[2], vty), align=al)
        return context.get_dummy_value()

    return sig, codegen


@njit(cache=True, nogil=True)
def h8(src, dst, start, stop):
    """Levels 0..2 (H_8 on each contiguous group of 8) of src[start:stop] into dst (may be src)."""
    for g in range((stop - start) >> 3):
        _h8_group(src, dst, np.uint64(start + (g << 3)), None, 0)


def _make_r8(h: int):
    """The radix-8 pass at the constant stride h: when called with stride ``h``, the levels with strides
    h, 2h, 4h over y[start:stop] (a multiple of 8h long), times s, and True; else nothing and False. Only
    the butterflies ``jj`` in ``[j0, j1)`` of each group of ``8h`` (all: ``0, h``)."""
    h1, h2, h3, h4, h5, h6, h7 = (np.uint64(k * h) for k in range(1, 8))

    @njit(cache=True, nogil=True)
    def r8(y, start, stop, stride, s, j0, j1):
        if stride != h:
            return False
        for i in range(start, stop, 8 * h):
            for jj in range(j0, j1):
                j = np.uint64(i + jj)
                a0 = y[j]
                a1 = y[j + h1]
                a2 = y[j + h2]
                a3 = y[j + h3]
                a4 = y[j + h4]
                a5 = y[j + h5]
                a6 = y[j + h6]
                a7 = y[j + h7]
                o0, o1, o2, o3, o4, o5, o6, o7 = _bf8(a0, a1, a2, a3, a4, a5, a6, a7)
                y[j] = o0 * s
                y[j + h1] = o1 * s
                y[j + h2] = o2 * s
                y[j + h3] = o3 * s
                y[j + h4] = o4 * s
                y[j + h5] = o5 * s
                y[j + h6] = o6 * s
                y[j + h7] = o7 * s
        return True

    return r8


_R8_1, _R8_2, _R8_3, _R8_4, _R8_5, _R8_6, _R8_7 = (_make_r8(8**k) for k in range(1, 8))


@njit(cache=True, nogil=True)
def _b4(y0, y1, y2, y3, s):
    """Radix-4 butterflies between four equal-length slices (vectorizes for long slices)."""
    for j in range(y0.shape[0]):
        a0 = y0[j]
        a1 = y1[j]
        a2 = y2[j]
        a3 = y3[j]
        b0 = a0 + a1
        b1 = a0 - a1
        b2 = a2 + a3
        b3 = a2 - a3
        y0[j] = (b0 + b2) * s
        y1[j] = (b1 + b3) * s
        y2[j] = (b0 - b2) * s
        y3[j] = (b1 - b3) * s


@njit(cache=True, nogil=True)
def _r4(y, start, stop, h, s):
    """Levels with strides h, 2h over y[start:stop], times s."""
    for i in range(start, stop, 4 * h):
        _b4(y[i : i + h], y[i + h : i + 2 * h], y[i + 2 * h : i + 3 * h], y[i + 3 * h : i + 4 * h], s)


@njit(cache=True, nogil=True)
def _b2(y0, y1, s):
    """Radix-2 butterflies between two equal-length slices (vectorizes for long slices)."""
    for j in range(y0.shape[0]):
        a0 = y0[j]
        a1 = y1[j]
        y0[j] = (a0 + a1) * s
        y1[j] = (a0 - a1) * s


@njit(cache=True, nogil=True)
def _r2(y, start, stop, h, s):
    """The level with stride h over y[start:stop], times s."""
    for i in range(start, stop, 2 * h):
        _b2(y[i : i + h], y[i + h : i + 2 * h], s)


@njit(cache=True, nogil=True)
def _r8(y, start, stop, h, s):
    """Radix-8 pass at stride h (a power of 8) through its constant-stride compiled version."""
    if not (
        _R8_1(y, start, stop, h, s, 0, h) or _R8_2(y, start, stop, h, s, 0, h) or _R8_3(y, start, stop, h, s, 0, h)
        or _R8_4(y, start, stop, h, s, 0, h) or _R8_5(y, start, stop, h, s, 0, h) or _R8_6(y, start, stop, h, s, 0, h)
        or _R8_7(y, start, stop, h, s, 0, h)
    ):  # strides above 8^7 (rows above 2^24): a radix-4 then a radix-2 pass, still vectorized
        _r4(y, start, stop, h, _one(s))
        _r2(y, start, stop, 4 * h, s)


@njit(cache=True, nogil=True)
def _levels(y, start, stop, h, top, s):
    """Levels with strides h, 2h, … < top over y[start:stop] (h a power of 8); the last pass
    multiplies by s."""
    one = _one(s)
    while 8 * h <= top:
        _r8(y, start, stop, h, s if 8 * h == top else one)
        h *= 8
    if 4 * h == top:
        _r4(y, start, stop, h, s)
    elif 2 * h == top:
        _r2(y, start, stop, h, s)


@njit(cache=True, nogil=True)
def _row(src, dst, n, s):
    """dst = H_n src * s for one contiguous row (src may be dst)."""
    if n < 8:
        for i in range(n):
            dst[i] = src[i]
        h = 1
        while h < n:
            f = s if 2 * h == n else _one(s)
            _r2(dst, 0, n, h, f)
            h *= 2
        if n == 1:
            dst[0] *= s
        return
    # n >= 8: the blocked passes of the rotations' driver with the plain first pass (mode 0: no signs)
    no_tab = np.zeros((1, 8), dtype=dst.dtype)
    _row_x(src, dst, n, s, 0, _NO_BYTES, 0, no_tab, _NO_CODES[0], 0, no_tab[0], s, _NO_BITS, -1, _NO_M8)


@njit(cache=True, nogil=True)
def _rows(src, dst, s):
    n = src.shape[1]
    for r in range(src.shape[0]):
        _row(src[r], dst[r], n, s)


@intrinsic
def _void_ptr(typingctx, addr):
    """An integer address as a void pointer (for numba.carray)."""
    def codegen(context, builder, sig, args):
        return builder.inttoptr(args[0], cgutils.voidptr_t)

    return types.voidptr(addr), codegen


def _make_rows_at(dtype):
    @njit(cache=True, nogil=True)
    def rows_at(src, dst, rows, n, s):
        """:func:`_rows` on ``rows × n`` C-contiguous entries at the addresses ``src`` and ``dst``: a call
        with plain integers costs ~1 us where two NumPy arguments cost ~6 (``qlib.hadamard.fwht`` on
        small rows is that overhead)."""
        _rows(numba.carray(_void_ptr(src), (rows, n), dtype), numba.carray(_void_ptr(dst), (rows, n), dtype), s)

    return rows_at


ROWS_AT = {np.dtype(np.float32): _make_rows_at(np.float32), np.dtype(np.float64): _make_rows_at(np.float64)}


def fwht_rows(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``x @ H_D / sqrt(D)`` for each row of the 2-D C-contiguous float32/float64 array ``x``
    (``D = x.shape[1]`` a power of two); ``out`` (same shape and dtype, C-contiguous; may be ``x``)
    receives the result. The caller checks the arguments (:func:`qlib.hadamard.fwht` does)."""
    if out is None:
        out = np.empty_like(x)
    n = x.shape[1]
    if x.shape[0] and n:
        _rows(x, out, x.dtype.type(1.0 / math.sqrt(n)))
    return out


# -- randomized Hadamard rotation with the Rademacher signs given as bits -------------------------------
# Entry e of a row of D (D a multiple of 8) has the sign of bit e % 8 of byts[boff + e // 8] (set: −1): the
# bytes of the seeded draw of qlib.hadamard.rademacher, so that the ±1 floats of the whole row are never
# made. Forward (x ← H (s ∘ x)): the first pass multiplies its eight loads by row byts[…] of the 256 × 8
# table t8 of ±1. Inverse (y ← s ∘ H y): one pass flips the sign bits (table m8) after the transform.
# Multiplying by ±1 (or flipping the sign bit) is exact and every butterfly is the one of _row, in the same
# order, so these give the same bits as fwht(x * signs) and fwht(y) * signs. The inverse transform may also
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
def _h8s(src, byts, boff, t8, dst, start, stop):
    """:func:`h8` of ``src ∘ signs`` (dst may be src)."""
    b0 = boff + (start >> 3)
    flat = t8.reshape(-1)
    for g in range((stop - start) >> 3):
        _h8_group(src, dst, np.uint64(start + (g << 3)), flat, np.uint64(byts[b0 + g]) << np.uint64(3))


# A 16-entry float32 table read for eight codes at once. LLVM keeps table reads scalar (a masked gather is
# scalarized too: slow gathers on AMD): about 2 cycles a code. With AVX2 (x86-64 hosts that have it) the
# read is two lane permutations of the table's halves (``vpermps``) and one select on bit 3 of the code:
# the same values, 4x faster at 2^20. Elsewhere, or for other dtypes, it is eight scalar reads.
def _host_avx2() -> bool:
    try:
        import llvmlite.binding as llb

        return bool(llb.get_host_cpu_features().get("avx2", False))
    except Exception:  # no feature query: the portable code
        return False


AVX2 = _host_avx2()


@intrinsic
def _lut16(typingctx, ii, i, ts, oo, n0):
    """oo[i:i+8] = ts[ii[i:i+8] & 15] (``ts`` 16 entries); returns whether a code of the eight is >= n0."""
    sig = types.boolean(ii, i, ts, oo, n0)

    def codegen(context, builder, sig_, args):
        ety = context.get_value_type(sig_.args[2].dtype)
        vty = ir.VectorType(ety, 8)
        i32, i32x8 = ir.IntType(32), ir.VectorType(ir.IntType(32), 8)
        cty = ir.VectorType(context.get_value_type(sig_.args[0].dtype), 8)
        iarr = context.make_array(sig_.args[0])(context, builder, args[0])
        tarr = context.make_array(sig_.args[2])(context, builder, args[2])
        oarr = context.make_array(sig_.args[3])(context, builder, args[3])
        al = sig_.args[0].dtype.bitwidth // 8
        codes = builder.load(builder.bitcast(builder.gep(iarr.data, [args[1]]), cty.as_pointer()), align=al)
        if cty.element.width < 32:
            c32 = builder.zext(codes, i32x8)
        elif cty.element.width > 32:
            c32 = builder.trunc(codes, i32x8)
        else:
            c32 = codes
        # out of the table: the code as an unsigned integer (a negative one becomes huge) >= n0 (<= 16), in
        # 32-bit lanes for codes of up to 32 bits (uint8 / int32: the decoders'), else in 64-bit lanes
        cw = 32 if cty.element.width <= 32 else 64
        wide = ir.VectorType(ir.IntType(cw), 8)
        if cty.element.width < cw:
            cc = builder.sext(codes, wide) if sig_.args[0].dtype.signed else builder.zext(codes, wide)
        else:
            cc = codes
        n0 = args[4]
        n0 = builder.trunc(n0, ir.IntType(cw)) if n0.type.width > cw else builder.sext(n0, ir.IntType(cw)) \
            if n0.type.width < cw else n0
        nv = builder.insert_element(ir.Constant(wide, ir.Undefined), n0, ir.Constant(i32, 0))
        nv = builder.shuffle_vector(nv, nv, ir.Constant(i32x8, [0] * 8))
        out_of = builder.icmp_unsigned(">=", cc, nv)
        red = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.IntType(1), [out_of.type]),
                                             "llvm.vector.reduce.or.v8i1")
        bad = builder.call(red, [out_of])
        tal = sig_.args[2].dtype.bitwidth // 8
        if AVX2 and sig_.args[2].dtype == types.float32:
            lo = builder.load(builder.bitcast(tarr.data, vty.as_pointer()), align=tal)
            hi = builder.load(builder.bitcast(builder.gep(tarr.data, [ir.Constant(ir.IntType(64), 8)]),
                                              vty.as_pointer()), align=tal)
            perm = cgutils.get_or_insert_function(builder.module, ir.FunctionType(vty, [vty, i32x8]),
                                                  "llvm.x86.avx2.permps")
            up = builder.icmp_unsigned("!=", builder.and_(c32, ir.Constant(i32x8, [8] * 8)), ir.Constant(i32x8, [0] * 8))
            val = builder.select(up, builder.call(perm, [hi, c32]), builder.call(perm, [lo, c32]))
        else:
            val = ir.Constant(vty, ir.Undefined)
            m = builder.and_(c32, ir.Constant(i32x8, [15] * 8))
            for j in range(8):
                k = builder.extract_element(m, ir.Constant(i32, j))
                v = builder.load(builder.gep(tarr.data, [k]), align=tal)
                val = builder.insert_element(val, v, ir.Constant(i32, j))
        oal = sig_.args[3].dtype.bitwidth // 8
        builder.store(val, builder.bitcast(builder.gep(oarr.data, [args[1]]), vty.as_pointer()), align=oal)
        return bad

    return sig, codegen


@njit(cache=True, nogil=True)
def lookup_row(ii, off, tab, sc, oo):
    """oo = tab[ii + off] * sc; True when a code falls outside the table (oo then holds other entries of
    the table there: the caller discards it). The products ``tab[c] * sc`` are taken once per table entry
    (the same values); two- and four-entry tables as selects, which LLVM vectorizes, tables of up to 16
    entries (``off = 0``) eight codes at a time (:func:`_lut16`)."""
    n0 = tab.shape[0]
    ts = np.empty(n0, dtype=oo.dtype)
    for c in range(n0):
        ts[c] = tab[c] * sc
    n = ii.shape[0]
    if off == 0 and n0 == 2:
        t0, t1 = ts[0], ts[1]
        bad = False
        for i in range(n):
            c = np.uint64(np.int64(ii[i]))  # a negative code becomes huge: outside the table
            bad |= c > np.uint64(1)
            oo[i] = t1 if c & np.uint64(1) else t0
        return bad
    if off == 0 and n0 == 4:
        t0, t1, t2, t3 = ts[0], ts[1], ts[2], ts[3]
        bad = False
        for i in range(n):
            c = np.uint64(np.int64(ii[i]))
            bad |= c > np.uint64(3)
            oo[i] = (t3 if c & np.uint64(1) else t2) if c & np.uint64(2) else (t1 if c & np.uint64(1) else t0)
        return bad
    bad = False
    if off == 0 and n0 <= 16 and n >= 8:  # eight codes at a time from a 16-entry copy of the table
        t16 = np.zeros(16, dtype=oo.dtype)
        t16[:n0] = ts
        n8 = n & ~7
        for i in range(0, n8, 8):
            bad |= _lut16(ii, i, t16, oo, n0)
        for i in range(n8, n):
            c = np.uint64(np.int64(ii[i]))
            bad |= c >= np.uint64(n0)
            oo[i] = t16[c & np.uint64(15)]
        return bad
    un0 = np.uint64(n0)
    for i in range(n):  # selects, no branch: the loop vectorizes (a branch per code made it 2x slower)
        c = np.uint64(np.int64(ii[i]) + off)  # a negative code becomes huge: outside the table
        ok = c < un0
        bad |= not ok
        oo[i] = ts[c if ok else np.uint64(0)]
    return bad


@njit(cache=True, nogil=True)
def _first(mode, src, dst, start, stop, byts, boff, t8, ii, off, tab, sc):
    """The first pass (levels 0..2) on [start, stop): of src (mode 0), of src ∘ signs (1), or of
    tab[ii + off]·sc (2: made in dst first; returns True when a code falls outside the table)."""
    if mode == 0:
        h8(src, dst, start, stop)
        return False
    if mode == 1:
        _h8s(src, byts, boff, t8, dst, start, stop)
        return False
    bad = lookup_row(ii[start:stop], off, tab, sc, dst[start:stop])
    h8(dst, dst, start, stop)
    return bad


def _make_xor(w):
    @intrinsic
    def xor_group(typingctx, y, i, m, j):
        """y[i:i+w] ^= m[j:j+w] as one vector of w uint64 words (LLVM did not vectorize the scalar loop)."""
        sig = types.void(y, i, m, j)

        def codegen(context, builder, sig_, args):
            vty = ir.VectorType(ir.IntType(64), w)
            yp = _vec_ptr(context, builder, sig_.args[0], args[0], args[1], vty)
            mv = builder.load(_vec_ptr(context, builder, sig_.args[2], args[2], args[3], vty), align=8)
            builder.store(builder.xor(builder.load(yp, align=8), mv), yp, align=8)
            return context.get_dummy_value()

        return sig, codegen

    return xor_group


_XOR4, _XOR8 = _make_xor(4), _make_xor(8)


@njit(cache=True, nogil=True)
def _flip_groups(y, byts, boff, m, g0, g1):
    """The entries of groups ``g0 … g1 − 1`` (entries ``8 g … 8 g + 7``) of the row ``y`` times their signs,
    in place on the bits: ``y`` is the row viewed as uint64 words and ``m`` the table of
    :func:`sign_bit_table` (4 or 8 words per byte of signs): per byte of signs one vector XOR of the
    words of its eight entries (the scalar loop did not vectorize: 2-3x slower)."""
    flat = m.reshape(-1)
    if m.shape[1] == 4:
        for g in range(g0, g1):
            _XOR4(y, np.uint64(g << 2), flat, np.uint64(byts[boff + g]) << np.uint64(2))
    else:
        for g in range(g0, g1):
            _XOR8(y, np.uint64(g << 3), flat, np.uint64(byts[boff + g]) << np.uint64(3))


@njit(cache=True, nogil=True)
def _flip(y, byts, boff, m):
    """y ← y ∘ signs for the whole row (:func:`_flip_groups`)."""
    _flip_groups(y, byts, boff, m, 0, (y.shape[0] * 8 // m.shape[1]) >> 3)


_FLIP_CHUNK = 2048  # entries per stream of the fused top pass: 8 streams × 2048 floats (64 KiB) stay in L2


@njit(cache=True, nogil=True)
def _r8_flip_top(y, ybits, s, byts, boff, m):
    """The top radix-8 pass of a row of ``8 · _BLOCK3`` entries (strides 2^21, 2^22, 2^23: the last three
    levels), times s, chunk by chunk, each chunk's signs flipped while it is in L2: the bits of
    :func:`_r8` then :func:`_flip`, without the flip's pass over the row."""
    h = _BLOCK3
    for c0 in range(0, h, _FLIP_CHUNK):
        _R8_7(y, 0, 8 * h, h, s, c0, c0 + _FLIP_CHUNK)
        for k in range(8):
            o = k * h + c0
            _flip_groups(ybits, byts, boff, m, o >> 3, (o + _FLIP_CHUNK) >> 3)


@njit(cache=True, nogil=True)
def add_row(acc, y, f, r):
    """The running sum of the rows of a mean, row ``r`` (``y``, its first ``len(acc)`` entries, times its
    signs ``f[r]`` (±1) when ``f`` has rows) added in the rows' dtype: ``acc = y`` for ``r = 0``, else
    ``acc += y``: the order of torch's ``mean(0)`` (row after row), a product by ±1 being exact."""
    d = acc.shape[0]
    if f.shape[0]:
        fr = f[r]
        if r == 0:
            for j in range(d):
                acc[j] = y[j] * fr[j]
        else:
            for j in range(d):
                acc[j] += y[j] * fr[j]
    elif r == 0:
        for j in range(d):
            acc[j] = y[j]
    else:
        for j in range(d):
            acc[j] += y[j]


@njit(cache=True, nogil=True, fastmath={"reassoc", "nsz", "contract"})
def sumsq_diff(a, b):
    """Σ (a − b)² in float64 (reassociated: vectorized; only this sum's rounding is free). The one sum of
    squared differences of the kernels (:mod:`qlib._kernels.compressors` uses it too)."""
    acc = 0.0
    for i in range(a.shape[0]):
        e = np.float64(a[i]) - np.float64(b[i])
        acc += e * e
    return acc


@njit(cache=True, nogil=True)
def mean_dist_of_sum(acc, nf, ref):
    """``Σ_j (acc_j / nf − ref_j)²`` (float64; ``ref`` float64): the squared distance of the mean whose sum
    :func:`add_row` made (divided in the rows' dtype, as torch's ``mean(0)``; in place: ``acc`` then holds
    the mean) to ``ref``, the sum of squares reassociated (vectorized: only its rounding is free) within
    blocks of ``SUM_BLOCK`` entries whose sums are added in order, as the other kernels' error sums: one
    vectorized sum over a row of 2^24 leaves ~1e-11 of relative rounding on an AVX-512 CPU (its lanes each
    add 2^20 terms), the blocks ~1e-15 on any."""
    n = acc.shape[0]
    for j in range(n):
        acc[j] = acc[j] / nf
    total = 0.0
    for s0 in range(0, n, SUM_BLOCK):
        s1 = min(s0 + SUM_BLOCK, n)
        total += sumsq_diff(acc[s0:s1], ref[s0:s1])
    return total


def _make_row_x(first):
    """The one-row driver of the rotations with the first pass ``first`` (the signature of :func:`_first`):
    :func:`make_row_x`."""

    @njit(cache=True, nogil=True)
    def row_x(src, dst, n, s, mode, byts, boff, t8, ii, off, tab, sc, dbits, fboff, m8):
        """One row, n >= 8: dst = H_n (the first pass's input, ``first``) * s with the blocking of
        :func:`_row` (src may be dst), then, when ``fboff >= 0``, dst ∘ the signs at byte ``fboff`` of
        ``byts`` (``dbits``: dst viewed as uint64 words; ``m8``: :func:`sign_bit_table`), fused into the
        top pass for rows of ``8 · _BLOCK3``. True when a code falls outside the table (mode 2)."""
        if n <= _TILE:
            bad = first(mode, src, dst, 0, n, byts, boff, t8, ii, off, tab, sc)
            if n == 8:
                for i in range(8):
                    dst[i] *= s
            else:
                _levels(dst, 0, n, 8, n, s)
            if fboff >= 0:
                _flip(dbits, byts, fboff, m8)
            return bad
        bad = False
        one = _one(s)
        b3 = min(n, _BLOCK3)
        for o3 in range(0, n, b3):
            b = min(n, _BLOCK)
            for o2 in range(o3, o3 + b3, b):
                for o1 in range(o2, o2 + b, _TILE):
                    bad |= first(mode, src, dst, o1, o1 + _TILE, byts, boff, t8, ii, off, tab, sc)
                    _levels(dst, o1, o1 + _TILE, 8, _TILE, one)
                _levels(dst, o2, o2 + b, _TILE, b, s if b == n else one)
            if b3 > b:
                _levels(dst, o3, o3 + b3, b, b3, s if b3 == n else one)
        if fboff >= 0 and n == 8 * _BLOCK3:
            _r8_flip_top(dst, dbits, s, byts, fboff, m8)
            return bad
        if n > b3:
            _levels(dst, 0, n, b3, n, s)
        if fboff >= 0:
            _flip(dbits, byts, fboff, m8)
        return bad

    return row_x


def make_row_x(first):
    """A compiled one-row rotation driver whose first pass (levels 0..2 of each L1 tile) is ``first``, a
    compiled function with the signature of :func:`_first` that writes ``dst[start:stop]`` (for a kernel
    module that decodes its own messages inside the inverse transform, as :func:`_first` decodes EDEN's):
    ``row(src, dst, n, s, mode, byts, boff, t8, ii, off, tab, sc, dbits, fboff, m8)``, the same passes in
    the same order as :func:`fwht_rows` after the first."""
    return _make_row_x(first)


_row_x = _make_row_x(_first)


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
