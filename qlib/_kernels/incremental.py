"""Compiled CPU kernels of the r_Q^n recorder's incremental validation of a two-layer network
(:class:`qlib.engine_models.MLP`), private to :mod:`qlib.recorder` (loaded by
``qlib._kernels.load("incremental")``): :func:`mlp_diff`, :func:`mlp_list_changes` and
:func:`mlp_val_outputs`.

Why numba, how these kernels are written to be fast, and their serial twins: :mod:`qlib._kernels.parallel`.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .parallel import Twins
from .quantize import row_hash

_TWINS = Twins()
#: the serial twin of each parallel kernel of this module (:class:`qlib._kernels.parallel.Twins`)
SERIAL = _TWINS.serial
kernel = _TWINS.kernel

__all__ = ["kernel", "SERIAL", "mlp_diff", "mlp_list_changes", "mlp_val_outputs", "MLP_TILE"]


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


@_TWINS
def mlp_diff(cur, prev, h, d, counts, changed, hashes, mult):
    """cur, prev (K, Q, p) the quantized models of this epoch and the last. Per model and quantizer
    g = (k, q): ``counts[k, q, j]`` how many entries of row j of the first layer (h × d, first in θ)
    changed, ``changed[k, q]`` whether any of the p entries did, and ``hashes[k, q]`` the hash
    (:func:`row_hash`) of this epoch's quantized model."""
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
        hashes[k, q] = np.int64(row_hash(cu[k, q], mult))


@_TWINS
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


@_TWINS
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
