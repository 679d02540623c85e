"""Compiled CPU kernel of the codebook look-up ``tab[code] · S``: the receiver's step of EDEN (and of any
decoder whose codes index a small table of floats), shared by the kernel modules :mod:`qlib._kernels.rotation`
(EDEN's decoding made inside the inverse rotation's first pass) and :mod:`qlib._kernels.eden` (the
dequantization with fractional bits); no module outside the kernel package loads it.

* :func:`lookup_row`: ``oo = tab[ii + off] · sc`` for one row of codes, flagging a code outside the table
  (the caller then takes the torch path, which raises or wraps); the products ``tab[c] · sc`` taken once per
  table entry, so the values are those of the torch receiver's ``table[code] * S``, bit for bit.
* :data:`AVX2`: whether the host has AVX2, read once at import: with it a 16-entry float32 table is read for
  eight codes at once by lane permutations (:func:`_lut16`), and :mod:`qlib._kernels.eden` quantizes float32
  four-bit codes in vector code. A test sets it False before the first compilation to check the portable
  code on an AVX2 host.

Single-threaded, ``nogil``; compiled at the first call of each dtype (cached on disk beside this file).
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["AVX2", "lookup_row"]


# A 16-entry float32 table read for eight codes at once. LLVM keeps table reads scalar (a masked gather is
# scalarized too: slow gathers on AMD): about 2 cycles a code. With AVX2 (x86-64 hosts that have it) the
# read is two lane permutations of the table's halves (``vpermps``) and one select on bit 3 of the code:
# the same values, 4x faster at 2^20. Elsewhere, or for other dtypes, it is eight scalar reads.
def _host_avx2() -> bool:
    try:
        import llvmlite.binding as llb  # deferred: in the try: no feature query, the portable code

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
