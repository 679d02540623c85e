"""Compiled CPU kernel of the orthonormal Walsh–Hadamard transform, loaded by :mod:`qlib.hadamard` through
``qlib._kernels.load("fwht")``; its passes and its blocked one-row driver are also the rotations' (the kernel
module :mod:`qlib._kernels.rotation`) and the codecs' decoders' (:mod:`qlib._kernels.compressor_errors`).

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

**The one-row driver.** Every transform of a row of ``n >= 8`` entries runs through one driver, the blocking
above, made by :func:`make_row_x` around a *first pass* (levels 0–2 of each L1 tile, which may also make
its input: ``fwht_rows`` copies the row, the rotation multiplies it by its signs (:func:`h8_signed`),
EDEN's receiver and the codecs' decoders decode their codes there), and that may end by multiplying the
row by ±1 signs given as bits (one pass of 64-bit XORs on the sign bits; for rows of 2^24, Figure 8's padded
length, inside the top radix-8 pass, chunk by chunk while each chunk is in L2: 338 → 277 ms per 10 rows in
float32 on the 2-core VM, against 259 ms for ``fwht_rows``). Every driver runs the same passes in the same
order, so a rotation gives the same bits as ``fwht_rows`` with its signs multiplied before or after.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["fwht_rows", "ROWS_AT", "h8", "h8_signed", "make_row_x"]

_TILE = 2**12  # levels 0..11 done per tile (L1)
_BLOCK = 2**15  # levels 12..14 done per block (L2)
_BLOCK3 = 2**21  # levels 15..20 done per block (L3)
_MAX_CONST_STRIDE = 8**7  # strides with a compiled constant-stride pass; larger ones use _r4 / _r2
# the arguments of the driver that a plain transform does not read (global constants: numba freezes them
# into the compiled code)
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


@njit(cache=True, nogil=True)
def h8_signed(src, byts, boff, t8, dst, start, stop):
    """:func:`h8` of ``src ∘ signs`` (dst may be src): entry ``e`` times ``t8[byts[boff + e // 8], e % 8]``
    (``t8``: the rotation's 256 × 8 table of ±1, :mod:`qlib._kernels.rotation`), multiplied on load."""
    b0 = boff + (start >> 3)
    flat = t8.reshape(-1)
    for g in range((stop - start) >> 3):
        _h8_group(src, dst, np.uint64(start + (g << 3)), flat, np.uint64(byts[b0 + g]) << np.uint64(3))


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


# -- the final signs, given as bits: y ← y ∘ signs by flipping the sign bits (exact, as a product by ±1) --------
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
    :func:`qlib._kernels.rotation.sign_bit_table` (4 or 8 words per byte of signs): per byte of signs one
    vector XOR of the words of its eight entries (the scalar loop did not vectorize: 2-3x slower)."""
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


# -- the one-row driver ------------------------------------------------------------------------------------
def make_row_x(first):
    """A compiled one-row driver whose first pass (levels 0..2 of each L1 tile) is ``first``, a compiled
    function with the signature of :func:`_first` that writes ``dst[start:stop]`` (for a kernel module that
    makes the transform's input inside its first pass: the rotation's signs, EDEN's or a codec's decoding):
    ``row(src, dst, n, s, mode, byts, boff, t8, ii, off, tab, sc, dbits, fboff, m8)``, the same passes in
    the same order as :func:`fwht_rows` after the first."""

    @njit(cache=True, nogil=True)
    def row_x(src, dst, n, s, mode, byts, boff, t8, ii, off, tab, sc, dbits, fboff, m8):
        """One row, n >= 8: dst = H_n (the first pass's input, ``first``) * s with the blocking of
        :func:`_row` (src may be dst), then, when ``fboff >= 0``, dst ∘ the signs at byte ``fboff`` of
        ``byts`` (``dbits``: dst viewed as uint64 words; ``m8``: ``qlib._kernels.rotation.sign_bit_table``),
        fused into the top pass for rows of ``8 · _BLOCK3``. True when the first pass says so (a code outside
        its table)."""
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


# -- the plain transform -----------------------------------------------------------------------------------
@njit(cache=True, nogil=True)
def _first(mode, src, dst, start, stop, byts, boff, t8, ii, off, tab, sc):
    """The plain transform's first pass (levels 0..2) on [start, stop): of src, whatever the other
    arguments (the signature of every first pass, :func:`make_row_x`)."""
    h8(src, dst, start, stop)
    return False


_row_x = make_row_x(_first)


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
    # n >= 8: the blocked passes of the driver with the plain first pass
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
