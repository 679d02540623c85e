"""The budget-independent stages of the encoders, computed once for one input and shared by the codecs
whose errors :func:`qlib.compressors.squared_errors` measures (Figures 2, 6 and 8's sweeps of
{cite:p}`vargaftik2022eden`), and the records in which a codec hands back its error.

Most of compress → decompress → compare does not depend on the budget: the rotation, the uniforms of the
stochastic quantizers, the mean of the rows. :class:`SharedStages` computes what every codec needs (the
rotation, SQ's uniforms and compiled passes, the distances) at its first use and keeps it until its
:class:`Stage` is released; what one codec alone needs (Kashin's coefficients, QSGD's norms) the codec
computes itself and keeps here with :meth:`SharedStages.keep`, under a key of its own class. This module
knows no codec: each codec reads it, never the other way round.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from typing import Callable, Hashable, TypeVar

import numpy as np
import torch

from .. import _kernels
from .. import hadamard as _h
from ._base import compiled_applies

__all__ = ["Stage", "RowErrors", "MeanError", "SharedStages", "ROWS", "min_max", "np_dtype"]

T = TypeVar("T")

#: the scratch array of every decoded batch of rows, one at a time (Kashin's coefficients have their own
#: one-row scratch, ``"compressors.kashin"``, in ``_rotated.py``)
ROWS = "compressors.rows"


class Stage(enum.Enum):
    """The budget-independent stages codecs share; :func:`qlib.compressors.squared_errors` takes the codecs
    stage by stage in this order and drops a stage's values after its last codec."""

    ROTATION = 0  #: the randomized Hadamard rotation of the input (EDEN, DRIVE, Hadamard+SQ)
    KASHIN = 1  #: Kashin's coefficients and frame (Kashin+SQ), and SQ's uniforms (Hadamard+SQ's too)
    QSGD = 2  #: QSGD's norms and uniforms
    MEAN = 3  #: the mean of the rows (Count-Sketch sketches it: ``of="mean"``)


@dataclass(frozen=True)
class RowErrors:
    """A codec's error per row measured from the shared stages: the message sizes ``nbits`` (long, the batch
    shape) and either ``err``, ``Σ (x̂ − x)²`` per row (float64), or ``decoded``, the reconstruction ``x̂``
    (then :func:`qlib.compressors.squared_errors` measures it; it may be a scratch array, read before the next
    codec runs)."""

    nbits: torch.Tensor
    err: torch.Tensor | None = None
    decoded: torch.Tensor | None = None


@dataclass(frozen=True)
class MeanError:
    """A codec's error of the mean of the rows measured from the shared stages: ``err``, ``‖est − xmean‖²``
    (float64, 0-d) for the estimate ``est`` of ``codec.mean``, and ``nbits``, the total bits sent."""

    err: torch.Tensor
    nbits: torch.Tensor | int


def np_dtype(x: torch.Tensor):
    """The NumPy dtype of a float32/float64 tensor."""
    return np.float32 if x.dtype == torch.float32 else np.float64


def min_max(v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Each row's [min, max] of ``v`` as columns (torch's ``min(-1)``, ``max(-1)``; on the CPU NumPy's, whose
    vectorized reductions give the same values in ~1/4 of the time at Figure 8's 10 × 2^24)."""
    if v.device.type == "cpu" and v.dtype in (torch.float32, torch.float64) and v.shape[-1] > 0 and not v.requires_grad:
        a = _kernels.rows(v, v.shape[-1])
        shape = (*v.shape[:-1], 1)
        return torch.from_numpy(a.min(1)).reshape(shape), torch.from_numpy(a.max(1)).reshape(shape)
    return v.min(-1, keepdim=True).values, v.max(-1, keepdim=True).values


def _sq_params(value_range: tuple, levels: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """SQ's ``lo``, ``span`` and decoding ``step`` per row (1-D, the rows' dtype) for the rows' [min, max]
    ``value_range`` and ``levels`` levels, as :func:`qlib.compressors._sq.sq_encode` and ``sq_decode``
    compute them."""
    lo, hi = value_range
    span = hi - lo
    step = (hi - lo) / max(levels - 1, 1)  # as sq_decode
    flat = lambda t: _kernels.rows(t, 1).reshape(-1)  # noqa: E731
    return flat(lo), flat(span), flat(step)


class SharedStages:
    """The budget-independent stages of the encoders for one input ``x`` and ``seed``, each computed at its
    first use and kept until :meth:`release` drops its stage: the rotation (by rotation count) with its
    squared norm and [min, max]; the uniforms of the seed's ``"sq"`` stream (by shape); the mean of the rows;
    and what a codec keeps with :meth:`keep`. ``codecs``: the compressors measured on this input (a codec
    may compute for all of its class at once); ``kernel``: :mod:`qlib._kernels.compressor_errors` where it
    takes ``x`` (else None)."""

    def __init__(self, x: torch.Tensor, seed: int, codecs: tuple = ()):
        self.x, self.seed, self.codecs = x, seed, tuple(codecs)
        self.batch, self.d = tuple(x.shape[:-1]), x.shape[-1]
        self.D = _h.next_power_of_two(self.d)
        self.kernel = _kernels.load("compressor_errors") if compiled_applies(x) else None
        self._kept: dict[Stage, dict] = {s: {} for s in Stage}

    def keep(self, stage: Stage, key: Hashable, make: Callable[[], T]) -> T:
        """The value kept under ``key`` (a codec's keys start with its class), ``make()`` at the first call;
        dropped by :meth:`release` of ``stage``."""
        kept = self._kept[stage]
        if key not in kept:
            kept[key] = make()
        return kept[key]

    def release(self, stage: Stage) -> None:
        """Drop what only the codecs of ``stage`` use."""
        self._kept[stage].clear()

    # -- the rotation ---------------------------------------------------------------------------------
    def rotated(self, k: int) -> torch.Tensor:
        """``RHT^k(x)`` of the seed, padded to a power of two (:func:`qlib.hadamard.seeded_rht`)."""
        return self.keep(Stage.ROTATION, ("rotated", k),
                         lambda: _h.seeded_rht(_h.pad_to_power_of_two(self.x), self.seed, k))

    def rotated_norm2(self, k: int) -> torch.Tensor:
        """``‖RHT^k(x)‖²`` per row, as :func:`qlib.eden.compress_rotated` computes it (the same bits)."""
        r = self.rotated(k)
        return self.keep(Stage.ROTATION, ("norm2", k), lambda: torch.linalg.vecdot(r, r))

    def rotated_range(self, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The [min, max] of each row of ``RHT^k(x)`` (SQ's range)."""
        return self.keep(Stage.ROTATION, ("range", k), lambda: min_max(self.rotated(k)))

    # -- the uniforms and the mean --------------------------------------------------------------------
    def uniforms(self, purpose: str, shape) -> torch.Tensor:
        """A fresh draw of the uniforms of the seed's ``purpose`` stream for a tensor of ``shape``."""
        x = self.x
        return torch.rand(tuple(shape), generator=_h.generator(self.seed, purpose, x.device), device=x.device, dtype=x.dtype)

    def sq_uniforms(self, shape) -> torch.Tensor:
        """The uniforms of the seed's ``"sq"`` stream for a tensor of ``shape``, kept to Kashin's end
        (Hadamard+SQ's and Kashin+SQ's agree where their lengths do; the stages after Kashin's have no SQ)."""
        shape = tuple(shape)
        return self.keep(Stage.KASHIN, ("sq-uniforms", shape), lambda: self.uniforms("sq", shape))

    def row_mean(self) -> torch.Tensor:
        """The mean of the rows of ``x`` (``(n, d)``) in its dtype, as torch's ``mean(0)``."""
        return self.keep(Stage.MEAN, "row-mean", lambda: self.x.mean(0))

    # -- the compiled passes --------------------------------------------------------------------------
    def sq(self, v: torch.Tensor, value_range: tuple, levels: int, want_values: bool, scratch: bool = False):
        """SQ of ``v`` (its rows' [min, max] ``value_range``) with ``levels`` levels, as
        :func:`qlib.compressors._sq.sq_encode` then ``sq_decode`` (the uniforms of the seed's ``"sq"`` stream):
        (``Σ (v̂ − v)²`` per row, float64; the decoded ``v̂`` when ``want_values``, else None; ``scratch``:
        ``v̂`` is the thread's scratch array, for a caller done with it before the next call)."""
        lo, span, step = _sq_params(value_range, levels)
        u = self.sq_uniforms(v.shape)
        D = v.shape[-1]
        shape, dt = (math.prod(v.shape[:-1]), D), np_dtype(v)
        out = None if not want_values else _kernels.scratch(ROWS, shape, dt) if scratch else np.empty(shape, dt)
        err = self.kernel.sq_rows(_kernels.rows(v, D), _kernels.rows(u, D), lo, span, levels, step, out)
        return (torch.from_numpy(err).reshape(v.shape[:-1]),
                None if out is None else torch.from_numpy(out).reshape(v.shape))

    def sq_mean_dist(self, v: torch.Tensor, value_range: tuple, levels: int, ref: torch.Tensor, *, rotation: bool = False,
                     frame: torch.Tensor | None = None):
        """``‖mean of the decoded rows − ref‖²`` (float64, 0-d) for the SQ of the rows of ``v`` (``(n, D)``) with
        ``levels`` levels (as :meth:`sq`), each decoded row then transformed back and cut to ``d``: the
        inverse of the seed's rotation (``rotation``: Hadamard+SQ's receiver) or the Walsh–Hadamard
        transform times ``frame`` (Kashin+SQ's synthesis); one row at a time, the decoding inside the
        transform's first pass and the row added to a running sum while it is in cache
        (``sq_transform_mean_dist``: the bits of :meth:`sq`, the transform and :meth:`mean_dist`); None
        where it does not apply."""
        D = v.shape[-1]
        if self.kernel is None or v.dim() != 2 or D < 8 or ref.dtype != torch.float64 or ref.device.type != "cpu":
            return None
        lo, span, step = _sq_params(value_range, levels)
        byts = _h.rotation_sign_bits(self.seed, self.batch, 1, D, v.dtype) if rotation else None
        f = None if frame is None else _kernels.rows(frame, self.d)
        dt = np_dtype(v)
        ws, acc = _kernels.scratch("compressors.mean-row", (D,), dt), _kernels.scratch("compressors.mean-sum", (self.d,), dt)
        err = self.kernel.sq_transform_mean_dist(_kernels.rows(v, D), _kernels.rows(self.sq_uniforms(v.shape), D), lo,
                                                 span, levels, step, ref.contiguous().numpy(), ws, acc, byts=byts, f=f)
        return torch.tensor(err, dtype=torch.float64)

    def mean_dist(self, xh: torch.Tensor, ref: torch.Tensor) -> torch.Tensor:
        """``‖xh.mean(0) − ref‖²`` (float64, 0-d) for the reconstructions ``xh`` ``(n, d)`` (rows contiguous, a
        ``[..., :d]`` view of padded rows read in place) and the float64 mean ``ref``: on the compiled path
        one pass with the same mean (the same bits as torch's ``mean(0)``), no temporaries."""
        if (self.kernel is not None and compiled_applies(xh) and xh.dim() == 2 and xh.stride(-1) == 1
                and ref.dtype == torch.float64 and ref.is_contiguous() and ref.device.type == "cpu"):
            a = xh.detach().numpy()
            return torch.tensor(self.kernel.mean_dist(a, a.shape[1], ref.numpy()), dtype=torch.float64)
        return ((xh.mean(0).double() - ref) ** 2).sum()

    def dist(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """``Σ (a − b)²`` per row in float64."""
        if self.kernel is not None and compiled_applies(a) and a.dtype == b.dtype:
            D = a.shape[-1]
            return torch.from_numpy(self.kernel.sq_dist_rows(_kernels.rows(a, D), _kernels.rows(b, D))).reshape(a.shape[:-1])
        return ((a.double() - b.double()) ** 2).sum(-1)
