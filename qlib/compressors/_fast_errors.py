"""The squared errors of several compressors on one input, their budget-independent stages done once
(:func:`squared_errors`: Figures 2, 6 and 8's sweeps of {cite:p}`vargaftik2022eden`).

The definition of an error is compress → decompress → compare, one compressor after the other. Most of
that work does not depend on the budget: the rotation, Kashin's coefficients, the uniforms of the
stochastic quantizers, QSGD's norms. :class:`SharedStages` computes each of them once for an input and
keeps it, by name, until the last compressor that uses it is done; a codec's *hook* (:data:`HOOKS`, one
named function per codec) measures its error from those stages, with the same random streams and the
same decisions as the definition.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

from .. import _kernels
from .. import eden as _eden
from .. import eden_theory as _eden_theory
from .. import hadamard as _h
from ..validation import check_choice, check_seed, skip_nested
from ._base import FLOAT_BITS, Compressor, compressors_kernel, fixed_bits
from ._rotated import DRIVE, EDEN, HadamardSQ, KashinSQ, drive_message, drive_rotated_reconstruction, kashin_frame
from ._scalar import QSGD, qsgd_fixed_bits
from ._sketch import CountSketch

__all__ = ["Stage", "SharedStages", "Hook", "HOOKS", "squared_errors"]


class Stage(enum.Enum):
    """The budget-independent stages codecs share; :func:`squared_errors` takes the codecs stage by
    stage in this order and drops a stage's values after its last codec."""

    ROTATION = 0  #: the randomized Hadamard rotation of the input (EDEN, DRIVE, Hadamard+SQ)
    KASHIN = 1  #: Kashin's coefficients and frame (Kashin+SQ)
    QSGD = 2  #: QSGD's norms and uniforms
    MEAN = 3  #: the mean of the rows (Count-Sketch sketches it: ``of="mean"``)


def _np_dtype(x: torch.Tensor):
    return np.float32 if x.dtype == torch.float32 else np.float64


def _min_max(v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
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


#: the scratch array of every decoded batch of rows, one at a time (Kashin's coefficients have their own
#: one-row scratch, ``"compressors.kashin"``, in ``_rotated.py``)
ROWS = "compressors.rows"


class SharedStages:
    """The budget-independent stages of the encoders for one input ``x`` and ``seed``, each computed at its
    first use and kept until :meth:`release` drops its stage: the rotation (by rotation count) with its
    squared norm and [min, max]; Kashin's coefficients (by the codec's parameters) with their [min, max],
    and its frame; QSGD's norms; the uniforms of the seed's ``"sq"`` and ``"qsgd"`` streams (by shape).
    ``kernel``: :mod:`qlib._kernels.compressors` where it takes ``x`` (else None)."""

    def __init__(self, x: torch.Tensor, seed: int):
        self.x, self.seed = x, seed
        self.batch, self.d = tuple(x.shape[:-1]), x.shape[-1]
        self.D = _h.next_power_of_two(self.d)
        self.kernel = compressors_kernel(x)
        self._rotated: dict[int, torch.Tensor] = {}
        self._rotated_norm2: dict[int, torch.Tensor] = {}
        self._rotated_range: dict[int, tuple] = {}
        self._kashin: dict[tuple, torch.Tensor] = {}
        self._kashin_range: dict[tuple, tuple] = {}
        self._kashin_frame: torch.Tensor | None = None
        self._qsgd_norm: torch.Tensor | None = None
        self._qsgd_uniforms: torch.Tensor | None = None
        self._qsgd_means: dict | None = None
        #: the level counts of the QSGD codecs to be measured (set by :func:`squared_errors`)
        self.qsgd_levels: tuple[int, ...] = ()
        self._sq_uniforms: dict[tuple, torch.Tensor] = {}  # kept to Kashin's end: Hadamard+SQ's and Kashin+SQ's agree where their lengths do
        self._row_mean: torch.Tensor | None = None

    def release(self, stage: Stage) -> None:
        """Drop what only the codecs of ``stage`` use."""
        if stage is Stage.ROTATION:
            self._rotated.clear(), self._rotated_norm2.clear(), self._rotated_range.clear()
        elif stage is Stage.KASHIN:
            self._kashin.clear(), self._kashin_range.clear()
            self._kashin_frame = None
            self._sq_uniforms.clear()  # (the stages after Kashin's have no SQ)
        elif stage is Stage.QSGD:
            self._qsgd_norm = self._qsgd_uniforms = self._qsgd_means = None
        elif stage is Stage.MEAN:
            self._row_mean = None

    # -- the rotation ---------------------------------------------------------------------------------
    def rotated(self, k: int) -> torch.Tensor:
        """``RHT^k(x)`` of the seed, padded to a power of two (:func:`qlib.hadamard.seeded_rht`)."""
        if k not in self._rotated:
            self._rotated[k] = _h.seeded_rht(_h.pad_to_power_of_two(self.x), self.seed, k)
        return self._rotated[k]

    def rotated_norm2(self, k: int) -> torch.Tensor:
        """``‖RHT^k(x)‖²`` per row, as :func:`qlib.eden.compress_rotated` computes it (the same bits)."""
        if k not in self._rotated_norm2:
            r = self.rotated(k)
            self._rotated_norm2[k] = torch.linalg.vecdot(r, r)
        return self._rotated_norm2[k]

    def rotated_range(self, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The [min, max] of each row of ``RHT^k(x)`` (SQ's range)."""
        if k not in self._rotated_range:
            self._rotated_range[k] = _min_max(self.rotated(k))
        return self._rotated_range[k]

    # -- Kashin ---------------------------------------------------------------------------------------
    def kashin_coefficients(self, codec: KashinSQ) -> torch.Tensor:
        """:meth:`KashinSQ.coefficients` of ``x`` for the codec's parameters."""
        key = (codec.n_iters, codec.eta, codec.delta, codec.pad_threshold)
        if key not in self._kashin:
            self._kashin[key] = codec.coefficients(self.x, self.seed)
        return self._kashin[key]

    def kashin_range(self, codec: KashinSQ) -> tuple[torch.Tensor, torch.Tensor]:
        """The [min, max] of each row of the codec's coefficients (SQ's range)."""
        key = (codec.n_iters, codec.eta, codec.delta, codec.pad_threshold)
        if key not in self._kashin_range:
            self._kashin_range[key] = _min_max(self.kashin_coefficients(codec))
        return self._kashin_range[key]

    def kashin_frame(self) -> torch.Tensor:
        """The random signs of Kashin's frame of the seed."""
        if self._kashin_frame is None:
            self._kashin_frame = kashin_frame(self.seed, self.batch, self.d, self.x.dtype, self.x.device)
        return self._kashin_frame

    # -- QSGD and the uniforms ------------------------------------------------------------------------
    def qsgd_norm(self) -> torch.Tensor:
        """``‖x‖`` per row, kept as a column (as QSGD's encoder computes it)."""
        if self._qsgd_norm is None:
            self._qsgd_norm = (self.x * self.x).sum(-1, keepdim=True).sqrt()
        return self._qsgd_norm

    def qsgd_uniforms(self) -> torch.Tensor:
        """The uniforms of the seed's ``"qsgd"`` stream, one per coordinate of ``x``."""
        if self._qsgd_uniforms is None:
            self._qsgd_uniforms = self._uniforms("qsgd", self.x.shape)
        return self._qsgd_uniforms

    def qsgd_mean_errors(self, xmean: torch.Tensor) -> dict | None:
        """``{levels: ‖mean of QSGD's decoded rows − xmean‖²}`` (float64, 0-d) for every level count in
        :attr:`qsgd_levels` (the QSGD codecs :func:`squared_errors` was given), computed at the first call
        from one read of ``x`` and its uniforms (``qsgd_mean_dists``: the bits of the decoded rows and of their
        ``mean(0)``); None where the kernel does not apply."""
        if self._qsgd_means is None:
            if self.kernel is None or xmean.dtype != torch.float64 or xmean.device.type != "cpu" or not self.qsgd_levels:
                return None
            d = self.d
            dists = self.kernel.qsgd_mean_dists(_kernels.rows(self.x, d), _kernels.rows(self.qsgd_uniforms(), d),
                                                _kernels.rows(self.qsgd_norm(), 1).reshape(-1), self.qsgd_levels,
                                                xmean.contiguous().numpy())
            self._qsgd_means = {lv: torch.tensor(e, dtype=torch.float64) for lv, e in zip(self.qsgd_levels, dists)}
        return self._qsgd_means

    def sq_uniforms(self, shape) -> torch.Tensor:
        """The uniforms of the seed's ``"sq"`` stream for a tensor of ``shape``."""
        shape = tuple(shape)
        if shape not in self._sq_uniforms:
            self._sq_uniforms[shape] = self._uniforms("sq", shape)
        return self._sq_uniforms[shape]

    def row_mean(self) -> torch.Tensor:
        """The mean of the rows of ``x`` (``(n, d)``) in its dtype, as torch's ``mean(0)``."""
        if self._row_mean is None:
            self._row_mean = self.x.mean(0)
        return self._row_mean

    def _uniforms(self, purpose: str, shape) -> torch.Tensor:
        x = self.x
        return torch.rand(tuple(shape), generator=_h.generator(self.seed, purpose, x.device), device=x.device, dtype=x.dtype)

    # -- the compiled passes --------------------------------------------------------------------------
    def sq(self, v: torch.Tensor, value_range: tuple, levels: int, want_values: bool, scratch: bool = False):
        """SQ of ``v`` (its rows' [min, max] ``value_range``) with ``levels`` levels, as
        :func:`qlib.compressors._sq.sq_encode` then ``sq_decode`` (the uniforms of the seed's ``"sq"`` stream):
        (``Σ (v̂ − v)²`` per row, float64; the decoded ``v̂`` when ``want_values``, else None; ``scratch``:
        ``v̂`` is the thread's scratch array, for a caller done with it before the next call)."""
        lo, span, step = _sq_params(value_range, levels)
        u = self.sq_uniforms(v.shape)
        D = v.shape[-1]
        shape, dt = (math.prod(v.shape[:-1]), D), _np_dtype(v)
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
        dt = _np_dtype(v)
        ws, acc = _kernels.scratch("compressors.mean-row", (D,), dt), _kernels.scratch("compressors.mean-sum", (self.d,), dt)
        err = self.kernel.sq_transform_mean_dist(_kernels.rows(v, D), _kernels.rows(self.sq_uniforms(v.shape), D), lo,
                                                 span, levels, step, ref.contiguous().numpy(), ws, acc, byts=byts, f=f)
        return torch.tensor(err, dtype=torch.float64)

    def mean_dist(self, xh: torch.Tensor, ref: torch.Tensor) -> torch.Tensor:
        """``‖xh.mean(0) − ref‖²`` (float64, 0-d) for the reconstructions ``xh`` ``(n, d)`` (rows contiguous, a
        ``[..., :d]`` view of padded rows read in place) and the float64 mean ``ref``: on the compiled path
        one pass with the same mean (the same bits as torch's ``mean(0)``), no temporaries."""
        if (self.kernel is not None and compressors_kernel(xh) is not None and xh.dim() == 2 and xh.stride(-1) == 1
                and ref.dtype == torch.float64 and ref.is_contiguous() and ref.device.type == "cpu"):
            a = xh.detach().numpy()
            return torch.tensor(self.kernel.mean_dist(a, a.shape[1], ref.numpy()), dtype=torch.float64)
        return ((xh.mean(0).double() - ref) ** 2).sum()

    def dist(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """``Σ (a − b)²`` per row in float64."""
        if self.kernel is not None and compressors_kernel(a) is not None and a.dtype == b.dtype:
            D = a.shape[-1]
            return torch.from_numpy(self.kernel.sq_dist_rows(_kernels.rows(a, D), _kernels.rows(b, D))).reshape(a.shape[:-1])
        return ((a.double() - b.double()) ** 2).sum(-1)


# ------------------------------------------------------------------------------------------------
# The hooks: one per codec with a shortcut
# ------------------------------------------------------------------------------------------------
def eden_error(c: EDEN, st: SharedStages, want_err: bool):
    """EDEN from the shared rotation (its ``n_rotations``-fold one): in the rotated domain where ``d`` is a
    power of two (the rotation is orthonormal), else decoded. Sub-bit EDEN with its mask before the
    rotation shares nothing (None)."""
    if c.bits < 1 and c.kw.get("quantizer", "lm") == "lm":
        return None
    k = c.kw.get("n_rotations", 1)
    r = st.rotated(k)
    pl = _eden.compress_rotated(r, c.bits, st.seed, d=st.d, norm2=st.rotated_norm2(k), **c.kw)
    if want_err and st.d == st.D:
        return st.dist(_eden.rotated_reconstruction(pl), r), None, pl.nbits
    return None, _eden.decompress(pl, scratch=ROWS), pl.nbits


def drive_error(c: DRIVE, st: SharedStages, want_err: bool):
    """DRIVE from the shared rotation, in the rotated domain where ``d`` is a power of two."""
    r = st.rotated(1)
    m = drive_message(st.x, r, st.seed)
    if want_err and st.d == st.D:
        return st.dist(drive_rotated_reconstruction(m), r), None, m.nbits
    return None, c.decompress(m), m.nbits


def hadamard_sq_error(c: HadamardSQ, st: SharedStages, want_err: bool):
    """Hadamard+SQ from the shared rotation and uniforms, one compiled pass per budget."""
    if st.kernel is None:
        return None
    nbits = fixed_bits(st.batch, c.bits * st.D + 2 * FLOAT_BITS)
    rotated_err = want_err and st.d == st.D
    err, v = st.sq(st.rotated(1), st.rotated_range(1), 2**c.bits, not rotated_err, scratch=True)
    if rotated_err:
        return err, None, nbits
    return None, _h.seeded_irht(v, st.seed, overwrite=True)[..., : st.d], nbits  # (in place, on the scratch)


def kashin_sq_error(c: KashinSQ, st: SharedStages, want_err: bool):
    """Kashin+SQ from the shared coefficients: where the frame is doubled (``D_K = 2d``, ``d`` a power of
    two) the first half of ``H̃_{2d} = [[H̃_d, H̃_d], [H̃_d, −H̃_d]]/√2`` gives ``‖x̂ − x‖² = ½‖e₁ + e₂‖²`` for
    the coefficient error ``e = ĉ − c`` in halves (``x = F*c`` up to rounding), no transform; else decoded."""
    if st.kernel is None:
        return None
    coeffs = st.kashin_coefficients(c)
    nbits = fixed_bits(st.batch, c.bits * coeffs.shape[-1] + 2 * FLOAT_BITS)
    _, decoded = st.sq(coeffs, st.kashin_range(c), 2**c.bits, True, scratch=True)
    if want_err and coeffs.shape[-1] == 2 * st.d:
        D = coeffs.shape[-1]
        err = st.kernel.fold_dist_rows(_kernels.rows(decoded, D), _kernels.rows(coeffs, D))
        return torch.from_numpy(err).reshape(st.batch), None, nbits
    xh = _h.fwht(decoded, overwrite=True)[..., : st.d].mul_(st.kashin_frame())  # the synthesis, in place on the scratch
    return (st.dist(xh, st.x), None, nbits) if want_err else (None, xh, nbits)


def qsgd_error(c: QSGD, st: SharedStages, want_err: bool):
    """QSGD from the shared norms and uniforms, one compiled pass per level count."""
    if st.kernel is None:
        return None
    x, d = st.x, st.d
    out = None if want_err else _kernels.scratch(ROWS, (math.prod(st.batch), d), _np_dtype(x))
    err = st.kernel.qsgd_rows(_kernels.rows(x, d), _kernels.rows(st.qsgd_uniforms(), d),
                              _kernels.rows(st.qsgd_norm(), 1).reshape(-1), c.levels, out)
    nbits = qsgd_fixed_bits(c.levels, st.batch, d)
    if want_err:
        return torch.from_numpy(err).reshape(st.batch), None, nbits
    return None, torch.from_numpy(out).reshape(x.shape), nbits


def eden_mean(c: EDEN, st: SharedStages, xmean: torch.Tensor):
    """EDEN's error of the mean from the shared rotation, decoded with the mean in the inverse transform's
    last pass (:func:`qlib.eden.decompressed_mean_error`); None for sub-bit EDEN (:func:`eden_error`'s
    rule) and several rotations."""
    if (c.bits < 1 and c.kw.get("quantizer", "lm") == "lm") or c.kw.get("n_rotations", 1) != 1:
        return None
    r = st.rotated(1)
    pl = _eden.compress_rotated(r, c.bits, st.seed, d=st.d, norm2=st.rotated_norm2(1), **c.kw)
    return _eden.decompressed_mean_error(pl, xmean), pl.nbits.sum()


def hadamard_sq_mean(c: HadamardSQ, st: SharedStages, xmean: torch.Tensor):
    """Hadamard+SQ's error of the mean, decoded inside the inverse rotation's first pass and averaged in its
    last (:meth:`SharedStages.sq_mean_dist`); None where that does not apply."""
    err = st.sq_mean_dist(st.rotated(1), st.rotated_range(1), 2**c.bits, xmean, rotation=True)
    return None if err is None else (err, fixed_bits(st.batch, c.bits * st.D + 2 * FLOAT_BITS).sum())


def kashin_sq_mean(c: KashinSQ, st: SharedStages, xmean: torch.Tensor):
    """Kashin+SQ's error of the mean, decoded inside the synthesis transform's first pass and averaged (times
    the frame's signs) in its last (:meth:`SharedStages.sq_mean_dist`); None where that does not apply."""
    coeffs = st.kashin_coefficients(c)
    err = st.sq_mean_dist(coeffs, st.kashin_range(c), 2**c.bits, xmean, frame=st.kashin_frame())
    return None if err is None else (err, fixed_bits(st.batch, c.bits * coeffs.shape[-1] + 2 * FLOAT_BITS).sum())


def qsgd_mean(c: QSGD, st: SharedStages, xmean: torch.Tensor):
    """QSGD's error of the mean from the shared norms and uniforms (:meth:`SharedStages.qsgd_mean_errors`: every
    planned level count from one read of the input); None where the kernel does not apply."""
    errs = st.qsgd_mean_errors(xmean)
    if errs is None or c.levels not in errs:
        return None
    return errs[c.levels], qsgd_fixed_bits(c.levels, st.batch, st.d).sum()


def count_sketch_error(c: CountSketch, st: SharedStages, want_err: bool):
    """Count-Sketch has no shortcut per row (None): its shortcut is for the mean (:func:`count_sketch_mean`)."""
    return None


def count_sketch_mean(c: CountSketch, st: SharedStages, xmean: torch.Tensor):
    """The error of Count-Sketch's estimate of the mean of the rows, from the sketch of their mean (the
    sketch is linear: :meth:`CountSketch.mean_by_linearity`): one scatter per budget instead of one per
    client; with one row of counters on the compiled path, the sketch, its decoding and the distance in
    one pass (``sketch_mean_dist``: the same estimate, bit for bit)."""
    m, n = st.row_mean(), st.batch[0]
    if c.rows == 1 and st.kernel is not None and xmean.dtype == torch.float64 and xmean.device.type == "cpu":
        h, byts, cols = c.hash_draw(st.seed, st.d, m.device)
        err = st.kernel.sketch_mean_dist(_kernels.rows(m, st.d).reshape(-1), h.numpy().reshape(-1),
                                         byts.numpy(), cols, xmean.contiguous().numpy())
        return torch.tensor(err, dtype=torch.float64), n * FLOAT_BITS * cols
    est, nb = c.mean_by_linearity(m, n, st.seed)
    return st.mean_dist(est.unsqueeze(0), xmean), nb


@dataclass(frozen=True)
class Hook:
    """A codec's shortcut in :func:`squared_errors`: the ``stage`` it shares and the function ``error(codec,
    stages, want_err)`` returning ``(err², None, nbits)`` (the squared error per row, float64) or ``(None, x̂,
    nbits)`` (the reconstruction), the same values as compress → decompress up to float rounding, or None
    where it has no shortcut for this codec or input; ``mean(codec, stages, xmean)`` (optional), for
    ``of="mean"`` with the float64 mean of the rows ``xmean``: ``(‖est − xmean‖², the total bits)`` for the
    estimate ``est`` of ``codec.mean`` up to float rounding, or None where it does not apply (taken before
    ``error``, which then gives the rows to average)."""

    stage: Stage
    error: Callable
    mean: Callable | None = None


#: the hook of each codec class (exactly that class: a subclass goes the original way)
HOOKS: dict[type, Hook] = {
    EDEN: Hook(Stage.ROTATION, eden_error, eden_mean),
    DRIVE: Hook(Stage.ROTATION, drive_error),
    HadamardSQ: Hook(Stage.ROTATION, hadamard_sq_error, hadamard_sq_mean),
    KashinSQ: Hook(Stage.KASHIN, kashin_sq_error, kashin_sq_mean),
    QSGD: Hook(Stage.QSGD, qsgd_error, qsgd_mean),
    CountSketch: Hook(Stage.MEAN, count_sketch_error, count_sketch_mean),
}


def _rank(c: Compressor) -> int:
    hook = HOOKS.get(type(c))
    return hook.stage.value if hook is not None else len(Stage)


def _check_compressors(compressors) -> list:
    if isinstance(compressors, Compressor):
        compressors = [compressors]
    if not isinstance(compressors, (list, tuple)) or not compressors:
        raise TypeError(f"compressors must be a non-empty list of qlib.compressors.Compressor, got {compressors!r}")
    for i, c in enumerate(compressors):
        if not isinstance(c, Compressor):
            raise TypeError(f"compressors[{i}] must be a qlib.compressors.Compressor, got {type(c).__name__}")
    return list(compressors)


def _error_and_bits(c: Compressor, hook: Hook | None, st: SharedStages | None, x, xmean, seed: int, of: str):
    """One compressor's error and bits in :func:`squared_errors`: its hook's shortcut, else the definition."""
    got = hook.error(c, st, of == "rows") if hook is not None else None
    if got is None:  # the definition
        if of == "rows":
            m = c.compress(x, seed)
            return ((x.double() - c.decompress(m).double()) ** 2).sum(-1), m.nbits
        est, nb = c.mean(x, seed)
        return ((est.double() - xmean) ** 2).sum(), torch.tensor(nb)
    err, xh, nb = got
    if of == "rows":
        return (err if err is not None else st.dist(xh, x)), nb
    return st.mean_dist(xh, xmean), nb.sum()


def squared_errors(compressors, x: torch.Tensor, seed: int, *, of: str = "rows",
                   domain: str = "rotated") -> tuple[torch.Tensor, torch.Tensor]:
    """The squared reconstruction error of each compressor on one input, and its message sizes.

    ``of="rows"``: ``‖decompress(compress(x, seed)) − x‖²`` per row of ``x`` ``(*batch, d)``; returns the
    errors (float64, shape ``(k, *batch)`` for ``k`` compressors) and the message sizes (long, the same
    shape). ``of="mean"``: ``x`` is ``(n, d)`` (one row per client); the error of the mean estimate,
    ``‖est − mean of the rows‖²`` (``est, bits = compressor.mean(x, seed)``; the mean in float64), float64 of shape ``(k,)``, and the
    total bits ``(k,)``. Both on the CPU, whatever the device of ``x``.

    ``domain="original"``: each compressor's compress → decompress (or ``mean``) → compare, one after the
    other: the definition. ``domain="rotated"`` (default): the same values up to float rounding (the same
    random streams, the same decisions), the work that does not depend on the budget done once:

    * the rotation: EDEN (``n_rotations = k``: the ``k``-fold rotation), Hadamard+SQ and DRIVE draw it from
      the seed alone (:func:`qlib.hadamard.seeded_rht`), so they share one forward transform; for
      ``of="rows"`` and ``d`` a power of two the error is measured in the rotated domain, with no inverse
      transform: the rotation is orthonormal, so ``‖x̂ − x‖ = ‖ŷ − r‖`` with ``r`` the rotated input and
      ``ŷ`` the receiver's per-coordinate reconstruction before its inverse rotation
      (:func:`qlib.eden.rotated_reconstruction`). (With padding, ``d < D``, the receiver drops the padded
      coordinates of ``R⁻¹ŷ``, so there the inverse transform runs.) Kashin+SQ's frame is not orthogonal,
      but for ``d`` a power of two it is doubled (``D_K = 2d``) and its synthesis keeps the first half of
      ``H̃_{2d} = [[H̃_d, H̃_d], [H̃_d, −H̃_d]]/√2``: ``‖x̂ − x‖² = ½‖e₁ + e₂‖²`` for the coefficient error
      ``e = ĉ − c`` in halves (``x = F*c`` up to rounding), no transform; otherwise it is decoded;
    * Kashin's coefficients (3 projections) do not depend on the budget: computed once per parameter set;
    * the uniforms of SQ (Hadamard+SQ, Kashin+SQ) and QSGD come from a stream of the seed alone, the same
      at every budget: drawn once per shape, with QSGD's norms and SQ's [min, max]; the quantization, the
      decoding and the error then take one compiled pass per budget (``qlib/_kernels/compressors.py``, the
      same float operations as the torch encoder and decoder);
    * ``of="mean"``: EDEN, Hadamard+SQ, Kashin+SQ and QSGD decode one row at a time (the decoding inside
      the inverse transform's first pass) and add it to a running sum while it is in cache, so no decoded
      batch is made: the mean is torch's ``mean(0)`` of the decoded rows, bit for bit;
    * Count-Sketch (``of="mean"``) sketches the mean of the rows once per budget (the sketch is linear:
      :meth:`qlib.compressors.CountSketch.mean_by_linearity`) instead of every client's row: the same
      estimate up to the float32 rounding of its counters (~1e-7 relative).

    Sub-bit EDEN (its mask precedes the rotation), QSGD + Elias-ω, Count-Sketch's ``of="rows"`` and the other compressors
    go the original way, as does Hadamard+SQ, Kashin+SQ and QSGD on a device or dtype the compiled kernels
    do not take. The shared stages are dropped after the last compressor that uses them (compressors are
    taken rotation-based first, then Kashin+SQ, then QSGD, then Count-Sketch, then the rest, and within a stage
    one codec class after another; the results keep the given order).
    Each codec with a shortcut has its hook in :data:`HOOKS`; a subclass goes the original way unless it has one.
    """
    compressors = _check_compressors(compressors)
    x = _eden_theory.check_vectors(x)
    seed = check_seed("seed", seed)
    of = check_choice("of", of, ("rows", "mean"))
    domain = check_choice("domain", domain, ("rotated", "original"))
    if of == "mean" and x.dim() != 2:
        raise ValueError(f"x must be (n_clients, d) for of='mean', got shape {tuple(x.shape)}")
    # the temporaries of every budget (codes, centroids, decoded rows) reuse one buffer each: a fresh
    # array of 10 × 2^24 floats costs ~160,000 page faults (Figure 8 at the paper's d, without huge pages);
    # each codec class's buffers are kept for its codecs (a scratch_limit block per class within a stage) and
    # dropped after them, so the next class's own temporaries do not come on top: with huge pages (freed
    # memory returned) a Figure 8 unit's peak falls from 3.94 to … GB (under the kept heap this made it grow)
    big = 2 * math.prod(x.shape[:-1]) * _h.next_power_of_two(x.shape[-1]) * x.element_size()
    with skip_nested():
        k = len(compressors)
        errs: list = [None] * k
        bits: list = [None] * k
        xmean = x.double().mean(0) if of == "mean" else None  # (in float64, as eden_theory.nmse)
        st = SharedStages(x, seed) if domain == "rotated" else None
        if st is not None:
            st.qsgd_levels = tuple(sorted({c.levels for c in compressors if type(c) is QSGD}))
        # stage by stage, and within a stage codec class by codec class (in the order they first appear), each
        # class's scratch buffers dropped before the next class's: EDEN's codes and products are gone before
        # Hadamard+SQ draws its uniforms (each codec's value depends on x, the seed and the codec alone)
        classes = list(dict.fromkeys(type(c) for c in compressors))
        groups: dict[tuple, list[int]] = {}
        for i in range(k):
            groups.setdefault((_rank(compressors[i]), classes.index(type(compressors[i]))), []).append(i)
        keys = sorted(groups)
        for g, key in enumerate(keys):
            with _kernels.scratch_limit(big):
                for i in groups[key]:
                    c = compressors[i]
                    hook = HOOKS.get(type(c)) if st is not None else None
                    got = (hook.mean(c, st, xmean) if hook is not None and hook.mean is not None and of == "mean"
                           else None)
                    if got is not None:
                        errs[i], bits[i] = got[0], torch.as_tensor(got[1])
                    else:
                        errs[i], bits[i] = _error_and_bits(c, hook, st, x, xmean, seed, of)
            rank = key[0]
            if st is not None and rank < len(Stage) and (g + 1 == len(keys) or keys[g + 1][0] != rank):
                st.release(Stage(rank))  # the last compressor of this stage's codecs is done
        return (torch.stack([e.detach().cpu().to(torch.float64) for e in errs]),
                torch.stack([torch.as_tensor(b).cpu().to(torch.long) for b in bits]))
