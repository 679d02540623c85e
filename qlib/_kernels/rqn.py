"""Compiled CPU kernel of Algorithm 1's statistics for the r_Q^n recorder, private to :mod:`qlib.recorder`
(loaded by ``qlib._kernels.load("rqn")``): :func:`rq_stats`, the exact statistics of
:func:`qlib.rqn.batched_rates` over a (models, T, Q, n) loss buffer, two passes per stream over the
epochs it holds, variances in float64 (a repeated row repeats a term of the minimum and changes nothing).

Why numba, how these kernels are written to be fast, and their serial twins: :mod:`qlib._kernels.parallel`.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from .parallel import Twins

_TWINS = Twins()
#: the serial twin of each parallel kernel of this module (:class:`qlib._kernels.parallel.Twins`)
SERIAL = _TWINS.serial
kernel = _TWINS.kernel

__all__ = ["kernel", "SERIAL", "rq_stats", "COPY_RTOL"]


#: relative tolerance (float32: 2^-17 ≈ 7.6e-6, about 64 ulps) under which a loss row counts as θ̄_1's
#: copy in :func:`rq_stats` when the losses were carried across epochs (the incremental recording);
#: losses computed from scratch every epoch use 0 (only exactly equal rows)
COPY_RTOL = 2.0 ** -17


@_TWINS
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
