"""Any method of the distributed and federated experiments at any budget ({cite:p}`vargaftik2022eden`,
§5.3): :data:`METHODS`, :func:`make_compressor`, and :class:`RandomMask`, the random mask of §4.1 that
gives a method without a sub-bit mode of its own one."""

from __future__ import annotations

import torch

from .. import hadamard as _h
from ..validation import check_choice, check_float
from ._base import Compressor, Message
from ._rotated import EDEN, HadamardSQ, KashinSQ
from ._scalar import QSGD, Float32
from ._sketch import CountSketch

__all__ = ["METHODS", "RandomMask", "make_compressor"]

#: compressors of the common interface by name (the paper's §5 methods plus Count-Sketch)
METHODS = ("Float32", "EDEN", "Hadamard+SQ", "Kashin+SQ", "QSGD", "Count-Sketch")


class RandomMask(Compressor):
    """Sub-bit wrapper (§4.1): keep a uniformly random subset of exactly ``m = round(p·d)``
    coordinates (shared seed, not sent), rescale by ``d/m`` and compress them with ``inner``;
    the receiver scatters the decoded values back. Unbiased when ``inner`` is."""

    def __init__(self, inner: Compressor, p: float):
        if not isinstance(inner, Compressor):
            raise TypeError(f"inner must be a qlib.compressors.Compressor, got {type(inner).__name__}")
        self.inner = inner
        self.p = check_float("p", p, low=0.0, high=1.0, low_open=True)
        self.name = f"{inner.name}@mask"

    def _keep(self, seed, batch, d, m, device):
        g = _h.generator(seed, "random-mask", device)
        keys = torch.rand((*batch, d), generator=g, device=device)
        return torch.topk(keys, m, dim=-1, sorted=False).indices

    def _compress(self, x, seed):
        batch, d = x.shape[:-1], x.shape[-1]
        m = max(1, int(round(self.p * d)))
        keep = self._keep(seed, batch, d, m, x.device)
        inner = self.inner.compress(torch.gather(x, -1, keep) * (d / m), seed)
        return Message(self.name, {"inner": inner, "m": m}, inner.nbits, seed, tuple(x.shape))

    def _fields(self, shape):
        m = max(1, int(round(self.p * shape[-1])))
        return {"m": ("count", None, m, shape[-1]), "inner": ("message", (*shape[:-1], m), None, None)}

    def _decompress(self, msg):
        v = self.inner.decompress(msg.data["inner"])
        batch, d = v.shape[:-1], msg.shape[-1]
        keep = self._keep(msg.seed, batch, d, msg.data["m"], v.device)
        return torch.zeros((*batch, d), dtype=v.dtype, device=v.device).scatter(-1, keep, v)


def make_compressor(method: str, bits: float) -> Compressor:
    """The compressor ``method`` (one of :data:`METHODS`) at budget ``bits`` bits per coordinate.

    EDEN and Count-Sketch take any ``bits`` in (0, 8]; Hadamard+SQ, Kashin+SQ and QSGD take an
    integer ``bits`` in [1, 8] or a sub-bit ``bits < 1``, which becomes :class:`RandomMask` with
    ``p = bits`` around the 1-bit compressor. Float32 ignores ``bits``.
    """
    check_choice("method", method, METHODS)
    b = check_float("bits", bits, low=0.0, high=8.0, low_open=True)
    if method == "Float32":
        return Float32()
    if method == "EDEN":
        return EDEN(b)
    if method == "Count-Sketch":
        return CountSketch(b)
    cls = {"Hadamard+SQ": HadamardSQ, "Kashin+SQ": KashinSQ, "QSGD": QSGD}[method]
    if b < 1:
        return RandomMask(cls(1), b)
    if b != int(b):
        raise ValueError(f"bits must be an integer in [1, 8] or < 1 for {method}, got {bits}")
    return cls(int(b))
