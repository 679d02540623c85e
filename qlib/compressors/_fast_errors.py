"""The squared errors of several compressors on one input, their budget-independent stages done once
(:func:`squared_errors`: Figures 2, 6 and 8's sweeps of {cite:p}`vargaftik2022eden`), and the interface
of a codec that measures its own error from those stages (:class:`ShortcutCompressor`).

The definition of an error is compress → decompress → compare, one compressor after the other. A codec
whose work mostly does not depend on the budget subclasses :class:`ShortcutCompressor`: it declares the
:class:`~qlib.compressors._stages.Stage` it shares and measures its error from the
:class:`~qlib.compressors._stages.SharedStages` of the input, with the same random streams and the same
decisions as its own ``compress`` and ``decompress``. This module reads a codec through that interface
alone: it knows no codec class.
"""

from __future__ import annotations

import math
from typing import ClassVar

import torch

from .. import _kernels
from .. import eden_theory as _eden_theory
from .. import hadamard as _h
from ..validation import check_choice, check_seed, skip_nested
from ._base import Compressor
from ._stages import MeanError, RowErrors, SharedStages, Stage

__all__ = ["ShortcutCompressor", "squared_errors"]


class ShortcutCompressor(Compressor):
    """A compressor whose error :func:`squared_errors` measures from the shared stages of the input.

    A subclass declares ``shared_stage`` (the :class:`Stage` whose values it reads) and implements
    ``_stage_error`` and, for ``of="mean"``, ``_stage_mean_error``; either returns None where it has no
    shortcut for this codec or input (then the definition runs). A subclass of such a codec inherits no
    shortcut (its message may differ): it goes the original way unless it declares its own
    ``shared_stage``."""

    #: the stage this codec's shortcut shares (None: no shortcut, the definition runs)
    shared_stage: ClassVar[Stage | None] = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "shared_stage" not in vars(cls):
            cls.shared_stage = None

    def _stage_error(self, st: SharedStages, want_err: bool) -> RowErrors | None:
        """The error per row of ``st.x`` (``want_err``; else the reconstruction will do), the same values as
        compress → decompress up to float rounding; None: no shortcut."""
        return None

    def _stage_mean_error(self, st: SharedStages, xmean: torch.Tensor) -> MeanError | None:
        """The error of :meth:`mean` of the rows of ``st.x`` against their float64 mean ``xmean`` (one tensor for
        every codec of ``st``: a codec may measure all of its class at its first call), up to float rounding;
        None: no shortcut (:meth:`_stage_error`'s rows are averaged, else the definition runs)."""
        return None


def _stage_of(c: Compressor) -> Stage | None:
    return c.shared_stage if isinstance(c, ShortcutCompressor) else None


def _rank(c: Compressor) -> int:
    stage = _stage_of(c)
    return stage.value if stage is not None else len(Stage)


def _check_compressors(compressors) -> list:
    if isinstance(compressors, Compressor):
        compressors = [compressors]
    if not isinstance(compressors, (list, tuple)) or not compressors:
        raise TypeError(f"compressors must be a non-empty list of qlib.compressors.Compressor, got {compressors!r}")
    for i, c in enumerate(compressors):
        if not isinstance(c, Compressor):
            raise TypeError(f"compressors[{i}] must be a qlib.compressors.Compressor, got {type(c).__name__}")
    return list(compressors)


def _error_and_bits(c: Compressor, st: SharedStages | None, x, xmean, seed: int, of: str):
    """One compressor's error and bits in :func:`squared_errors`: its shortcut, else the definition."""
    if st is not None and _stage_of(c) is not None:
        if of == "mean":
            got = c._stage_mean_error(st, xmean)
            if got is not None:
                return got.err, torch.as_tensor(got.nbits)
        rows = c._stage_error(st, of == "rows")
    else:
        rows = None
    if rows is None:  # the definition
        if of == "rows":
            m = c.compress(x, seed)
            return ((x.double() - c.decompress(m).double()) ** 2).sum(-1), m.nbits
        est, nb = c.mean(x, seed)
        return ((est.double() - xmean) ** 2).sum(), torch.tensor(nb)
    if of == "rows":
        return (rows.err if rows.err is not None else st.dist(rows.decoded, x)), rows.nbits
    return st.mean_dist(rows.decoded, xmean), rows.nbits.sum()


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
      decoding and the error then take one compiled pass per budget (``qlib/_kernels/compressor_errors.py``, the
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
    Each codec with a shortcut is a :class:`ShortcutCompressor` and measures its own error; a subclass goes
    the original way unless it declares its own.
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
    # dropped after them, so the next class's own temporaries do not come on top
    big = 2 * math.prod(x.shape[:-1]) * _h.next_power_of_two(x.shape[-1]) * x.element_size()
    with skip_nested():
        k = len(compressors)
        errs: list = [None] * k
        bits: list = [None] * k
        xmean = x.double().mean(0) if of == "mean" else None  # (in float64, as eden_theory.nmse)
        st = SharedStages(x, seed, compressors) if domain == "rotated" else None
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
                    errs[i], bits[i] = _error_and_bits(compressors[i], st, x, xmean, seed, of)
            rank = key[0]
            if st is not None and rank < len(Stage) and (g + 1 == len(keys) or keys[g + 1][0] != rank):
                st.release(Stage(rank))  # the last compressor of this stage's codecs is done
        return (torch.stack([e.detach().cpu().to(torch.float64) for e in errs]),
                torch.stack([torch.as_tensor(b).cpu().to(torch.long) for b in bits]))
