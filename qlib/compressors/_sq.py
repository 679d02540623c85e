"""Stochastic quantization (SQ) to ``2^b`` equispaced levels on a row's [min, max]: the encoder and
decoder Hadamard+SQ, Kashin+SQ and SQ+Huffman share."""

from __future__ import annotations

import torch

from .. import _kernels
from ._base import compressors_kernel

__all__ = ["sq_encode", "sq_decode", "sq_fields"]


def sq_encode(v: torch.Tensor, levels: int, gen: torch.Generator):
    """Stochastic quantization to ``levels`` equispaced values on [min, max] per row (unbiased). On CPU
    the codes come from one compiled pass (``qlib/_kernels/compressors.py``, the same operations: the same
    codes)."""
    lo = v.min(-1, keepdim=True).values
    hi = v.max(-1, keepdim=True).values
    span = hi - lo
    kern = compressors_kernel(v)
    if kern is not None:
        u = torch.rand(v.shape, generator=gen, device=v.device, dtype=v.dtype)
        D = v.shape[-1]
        k = kern.sq_codes_rows(_kernels.rows(v, D), _kernels.rows(u, D), _kernels.rows(lo, 1).reshape(-1),
                               _kernels.rows(span, 1).reshape(-1), levels)
        return torch.from_numpy(k).reshape(v.shape), lo.squeeze(-1), hi.squeeze(-1)
    t = torch.where(span > 0, (v - lo) / torch.where(span > 0, span, torch.ones_like(span)), torch.zeros_like(v))
    t = t * (levels - 1)
    fl = t.floor()
    up = torch.rand(v.shape, generator=gen, device=v.device, dtype=v.dtype) < (t - fl)
    k = (fl + up.to(v.dtype)).clamp(0, levels - 1).to(torch.int32)
    return k, lo.squeeze(-1), hi.squeeze(-1)


def sq_fields(batch, n, levels):
    """The fields of an SQ message of ``n`` codes per row (:meth:`Compressor._fields`' form)."""
    return {"k": ("int", (*batch, n), 0, levels - 1), "lo": ("float", batch, None, None),
            "hi": ("float", batch, None, None)}


def sq_decode(k, lo, hi, levels):
    """The values of the codes ``k`` of :func:`sq_encode` on [lo, hi] with ``levels`` levels."""
    dt = lo.dtype
    return lo.unsqueeze(-1) + k.to(dt) * ((hi - lo) / max(levels - 1, 1)).unsqueeze(-1)
