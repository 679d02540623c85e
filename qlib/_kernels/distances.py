"""Compiled CPU kernels of the squared distances the kernel modules measure errors with, shared by
:mod:`qlib._kernels.rotation` (EDEN's error of a mean, Figure 8) and :mod:`qlib._kernels.compressor_errors`
(the baselines' errors); no module outside the kernel package loads it.

* :func:`sumsq_diff`: ``Σ (a − b)²`` in float64, the one sum of squared differences of the kernels;
* :func:`add_row` and :func:`mean_dist_of_sum`: the mean of decoded rows made one row at a time as a running
  sum (torch's ``mean(0)``, bit for bit), and its squared distance to a float64 vector, summed in blocks of
  :data:`SUM_BLOCK` entries: the error of a mean without the decoded batch.

Single-threaded, ``nogil``; compiled at the first call of each dtype (cached on disk beside this file).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["SUM_BLOCK", "add_row", "sumsq_diff", "mean_dist_of_sum"]

SUM_BLOCK = 4096  # entries per partial sum of squares (the error sums of every kernel)


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
    squared differences of the kernels (:mod:`qlib._kernels.compressor_errors` uses it too)."""
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
