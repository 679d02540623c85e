"""Compiled CPU kernel of the batched engine's training, private to :mod:`qlib.engine` (loaded by
``qlib._kernels.load("engine")``).

Why compiled: the synthetic study of paper 001 §5.1 trains thousands of 257-parameter models for
3000 epochs, and each epoch of each model is two matrix-vector products of 128 × 257. In torch, one
epoch of a chunk of models is ~15 small kernels whose dispatch costs as much as their arithmetic, and
the chunk's data (two copies of 131 KB per model) does not stay in the 512 KB L2 cache across epochs.
Here one call runs *many epochs of one model* with that model's data in L2 (model-outer, epoch-inner),
in parallel over models: :func:`linear_adam` — full-batch Adam (the update of ``torch.optim.Adam``, same
operations in float32) of the linear model ``f(x) = [x, 1]·θ`` under the logistic or squared loss,
writing the parameters after every epoch (what the recorder quantizes). The recorder's kernels are
:mod:`qlib._kernels.quantize`, :mod:`qlib._kernels.rqn` and :mod:`qlib._kernels.incremental`.

The summation order of the matrix-vector products differs from torch's, so training agrees with the
torch path to float32 rounding, not bit for bit (tests/test_engine_compiled.py).

Why numba, how these kernels are written to be fast, and their serial twins: :mod:`qlib._kernels.parallel`.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from .parallel import Twins

_TWINS = Twins()
#: the serial twin of each parallel kernel of this module (:class:`qlib._kernels.parallel.Twins`)
SERIAL = _TWINS.serial
kernel = _TWINS.kernel

__all__ = ["kernel", "SERIAL", "linear_adam"]


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


@_TWINS
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
