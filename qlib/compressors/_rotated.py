"""The rotation-based codecs of paper 002: EDEN, DRIVE, Hadamard+SQ and Kashin+SQ
({cite:p}`vargaftik2022eden`, §5), each with its error measured from the shared stages of an input
(:class:`~qlib.compressors._fast_errors.ShortcutCompressor`): EDEN, DRIVE and Hadamard+SQ from the one
rotation, Kashin+SQ from its coefficients."""

from __future__ import annotations

import math

import numpy as np
import torch

from .. import _kernels
from .. import eden as _eden
from .. import eden_theory as _eden_theory
from .. import hadamard as _h
from ..validation import check_choice, check_float, check_int, check_seed
from ._base import FLOAT_BITS, Message, check_int_bits, compressors_kernel, fixed_bits
from ._fast_errors import ShortcutCompressor
from ._sq import sq_decode, sq_encode, sq_fields
from ._stages import ROWS, MeanError, RowErrors, SharedStages, Stage, min_max

__all__ = ["EDEN", "DRIVE", "HadamardSQ", "KashinSQ", "kashin_frame"]


class EDEN(ShortcutCompressor):
    """:mod:`qlib.eden` behind the common interface (all of its options pass through)."""

    name = "EDEN"
    shared_stage = Stage.ROTATION

    def __init__(self, bits: float, *, scale: str = "unbiased", quantizer: str = "lm", n_rotations: int = 1):
        """``bits`` in (0, 8]; ``scale``, ``quantizer``, ``n_rotations``: :func:`qlib.eden.compress`'s options
        (checked here, once)."""
        self.bits = _eden_theory.check_bits(bits)
        self.scale = check_choice("scale", scale, ("unbiased", "mse"))
        self.quantizer = check_choice("quantizer", quantizer, ("lm", "ee"))
        self.n_rotations = check_int("n_rotations", n_rotations, low=1, high=8)

    def _compress(self, x, seed):
        pl = _eden.compress(x, self.bits, seed, scale=self.scale, quantizer=self.quantizer, n_rotations=self.n_rotations)
        return Message(self.name, {"payload": pl}, pl.nbits, seed, tuple(x.shape))

    def _fields(self, shape):
        return {"payload": ("payload", None, None, None)}

    def _decompress(self, m):
        return _eden.decompress(m.data["payload"])

    def _masks_first(self) -> bool:
        """Sub-bit EDEN masks ``x`` before the rotation (§4.1): it shares no rotation."""
        return self.bits < 1 and self.quantizer == "lm"

    def _from_rotation(self, st: SharedStages, k: int) -> _eden.Payload:
        """The payload of ``st.x`` from the shared ``k``-fold rotation (:func:`qlib.eden.compress_rotated`)."""
        return _eden.compress_rotated(st.rotated(k), self.bits, st.seed, d=st.d, norm2=st.rotated_norm2(k),
                                      scale=self.scale, quantizer=self.quantizer, n_rotations=self.n_rotations)

    def _stage_error(self, st, want_err):
        """From the shared rotation (its ``n_rotations``-fold one): in the rotated domain where ``d`` is a
        power of two (the rotation is orthonormal), else decoded; sub-bit EDEN: no shortcut."""
        if self._masks_first():
            return None
        pl = self._from_rotation(st, self.n_rotations)
        if want_err and st.d == st.D:
            return RowErrors(pl.nbits, err=st.dist(_eden.rotated_reconstruction(pl), st.rotated(self.n_rotations)))
        return RowErrors(pl.nbits, decoded=_eden.decompress(pl, scratch=ROWS))

    def _stage_mean_error(self, st, xmean):
        """From the shared rotation, decoded with the mean in the inverse transform's last pass
        (:func:`qlib.eden.decompressed_mean_error`); sub-bit EDEN and several rotations: no shortcut."""
        if self._masks_first() or self.n_rotations != 1:
            return None
        pl = self._from_rotation(st, 1)
        return MeanError(_eden.decompressed_mean_error(pl, xmean), pl.nbits.sum())


def _drive_message(x: torch.Tensor, r: torch.Tensor, seed: int) -> Message:
    """DRIVE's message of ``x`` from its rotation ``r = RHT(x)`` (padded to a power of two) of ``seed``."""
    l1 = r.abs().sum(-1)
    S = torch.where(l1 > 0, (x * x).sum(-1) / l1.clamp_min(torch.finfo(x.dtype).tiny), torch.zeros_like(l1))
    return Message(DRIVE.name, {"sign": r >= 0, "scale": S}, fixed_bits(x.shape[:-1], r.shape[-1] + _eden.SCALE_BITS),
                   seed, tuple(x.shape))


def _drive_rotated_reconstruction(m: Message) -> torch.Tensor:
    """DRIVE's receiver's reconstruction in the rotated domain, before the inverse rotation."""
    sign, S = m.data["sign"], m.data["scale"]
    return (sign.to(S.dtype) * 2 - 1) * S.unsqueeze(-1)


def kashin_frame(seed: int, batch: tuple, d: int, dtype: torch.dtype, device) -> torch.Tensor:
    """The random signs of Kashin+SQ's frame of ``seed``: one row of ``d`` per vector of ``batch``."""
    return _h.rademacher((*batch, d), _h.generator(seed, "kashin", device), dtype, device)


class DRIVE(ShortcutCompressor):
    """DRIVE (1 bit/coordinate): ``x̂ = RHT^{-1}( ‖x‖²/‖r‖₁ · sign(r) )``, ``r = RHT(x)``, sign(0) = +1."""

    name = "DRIVE"
    shared_stage = Stage.ROTATION

    def _compress(self, x, seed):
        return _drive_message(x, _h.seeded_rht(_h.pad_to_power_of_two(x), seed), seed)

    def _fields(self, shape):
        D = _h.next_power_of_two(shape[-1])
        return {"sign": ("bool", (*shape[:-1], D), None, None), "scale": ("float", shape[:-1], 0.0, None)}

    def _decompress(self, m):
        return _h.seeded_irht(_drive_rotated_reconstruction(m), m.seed, overwrite=True)[..., : m.shape[-1]]

    def _stage_error(self, st, want_err):
        """From the shared rotation, in the rotated domain where ``d`` is a power of two."""
        r = st.rotated(1)
        m = _drive_message(st.x, r, st.seed)
        if want_err and st.d == st.D:
            return RowErrors(m.nbits, err=st.dist(_drive_rotated_reconstruction(m), r))
        return RowErrors(m.nbits, decoded=self.decompress(m))


class HadamardSQ(ShortcutCompressor):
    """Randomized Hadamard rotation + ``b``-bit stochastic quantization (Suresh et al. 2017)."""

    name = "Hadamard+SQ"
    shared_stage = Stage.ROTATION

    def __init__(self, bits: int):
        self.bits = check_int_bits(bits)

    def _nbits(self, batch, D):
        return fixed_bits(batch, self.bits * D + 2 * FLOAT_BITS)

    def _compress(self, x, seed):
        r = _h.seeded_rht(_h.pad_to_power_of_two(x), seed)
        k, lo, hi = sq_encode(r, 2**self.bits, _h.generator(seed, "sq", x.device))
        return Message(self.name, {"k": k, "lo": lo, "hi": hi}, self._nbits(x.shape[:-1], r.shape[-1]), seed, tuple(x.shape))

    def _fields(self, shape):
        return sq_fields(shape[:-1], _h.next_power_of_two(shape[-1]), 2**self.bits)

    def _decompress(self, m):
        r = sq_decode(m.data["k"], m.data["lo"], m.data["hi"], 2**self.bits)
        return _h.seeded_irht(r, m.seed, overwrite=True)[..., : m.shape[-1]]

    def _stage_error(self, st, want_err):
        """From the shared rotation and SQ uniforms, one compiled pass per budget (in the rotated domain where
        ``d`` is a power of two, else decoded and rotated back in place on the scratch)."""
        if st.kernel is None:
            return None
        nbits = self._nbits(st.batch, st.D)
        rotated_err = want_err and st.d == st.D
        err, v = st.sq(st.rotated(1), st.rotated_range(1), 2**self.bits, not rotated_err, scratch=True)
        if rotated_err:
            return RowErrors(nbits, err=err)
        return RowErrors(nbits, decoded=_h.seeded_irht(v, st.seed, overwrite=True)[..., : st.d])

    def _stage_mean_error(self, st, xmean):
        """Decoded inside the inverse rotation's first pass and averaged in its last
        (:meth:`SharedStages.sq_mean_dist`); None where that does not apply."""
        err = st.sq_mean_dist(st.rotated(1), st.rotated_range(1), 2**self.bits, xmean, rotation=True)
        return None if err is None else MeanError(err, self._nbits(st.batch, st.D).sum())


class KashinSQ(ShortcutCompressor):
    """Kashin representation (Lyubarskii & Vershynin 2010) in the tight frame of a randomized
    Hadamard matrix with ``D_K ≥ d`` rows, then ``b``-bit SQ of the ``D_K`` coefficients.

    Defaults of TF-MOT's ``KashinHadamardEncodingStage`` used by the authors' FL code (our reading; the paper names no parameters):
    ``D_K = 2^⌈log2 d⌉``, doubled when ``d/D_K > 0.85``; 3 iterations, ``eta = 0.9``, ``delta = 1``,
    no clipping in the last one. Every coefficient costs ``b`` bits, i.e. ``b·D_K/d`` bits per
    coordinate (≈ 2b for power-of-two d) — the bit accounting of the authors' code.
    """

    name = "Kashin+SQ"
    shared_stage = Stage.KASHIN

    def __init__(self, bits: int, n_iters: int = 3, eta: float = 0.9, delta: float = 1.0, pad_threshold: float = 0.85):
        self.bits = check_int_bits(bits)
        self.n_iters = check_int("n_iters", n_iters, low=1)
        self.eta = check_float("eta", eta, low=0.0, high=1.0, low_open=True)
        self.delta = check_float("delta", delta, low=0.0, low_open=True)
        self.pad_threshold = check_float("pad_threshold", pad_threshold, low=0.0, high=1.0, low_open=True)

    def frame_size(self, d: int) -> int:
        """``D_K``, the number of Kashin coefficients of a vector of ``d >= 1`` coordinates."""
        d = check_int("d", d, low=1)
        D = _h.next_power_of_two(d)
        return 2 * D if d / D > self.pad_threshold else D

    @staticmethod
    def _fwd(v, s, D):
        return _h.fwht(torch.nn.functional.pad(v * s, (0, D - v.shape[-1])))

    @staticmethod
    def _bwd(c, s):
        return _h.fwht(c)[..., : s.shape[-1]] * s

    def analysis(self, v: torch.Tensor, seed: int) -> torch.Tensor:
        """The frame's analysis ``F(v) = H̃_{D_K}·pad(s∘v)`` of each row of ``v`` ``(*batch, d)`` in the frame of
        ``seed`` (``s`` its random signs): ``(*batch, D_K)``."""
        v = _eden_theory.check_vectors(v, "v")
        seed = check_seed("seed", seed)
        d = v.shape[-1]
        return self._fwd(v, kashin_frame(seed, v.shape[:-1], d, v.dtype, v.device), self.frame_size(d))

    def synthesis(self, c: torch.Tensor, seed: int, d: int) -> torch.Tensor:
        """The frame's synthesis ``F*(c) = s∘(H̃_{D_K}·c)[:d]`` of each row of coefficients ``c`` ``(*batch, D_K)``
        (``D_K`` = :meth:`frame_size` of ``d``) in the frame of ``seed``: ``(*batch, d)``."""
        d = check_int("d", d, low=1)
        c = _eden_theory.check_vectors(c, "c")
        seed = check_seed("seed", seed)
        if c.shape[-1] != self.frame_size(d):
            raise ValueError(f"c must have frame_size(d) = {self.frame_size(d)} coefficients per row for d = {d}, "
                             f"got {c.shape[-1]}")
        return self._bwd(c, kashin_frame(seed, c.shape[:-1], d, c.dtype, c.device))

    def coefficients(self, x: torch.Tensor, seed: int) -> torch.Tensor:
        """The Kashin coefficients of ``x`` (a vector or a batch ``(*batch, d)``; ``x = F*(coefficients)``
        exactly) in the frame of ``seed``."""
        x = _eden_theory.check_vectors(x)
        seed = check_seed("seed", seed)
        batch, d = x.shape[:-1], x.shape[-1]
        D = self.frame_size(d)
        s = kashin_frame(seed, batch, d, x.dtype, x.device)
        M = (x * x).sum(-1, keepdim=True).sqrt() / math.sqrt(self.delta * d)
        kern = compressors_kernel(x)
        if kern is not None:  # the elementwise steps compiled between the transforms: the same bits
            rows = lambda t, n: _kernels.rows(t, n)  # noqa: E731
            xr, sr = rows(x, d), rows(s, d)
            # every transform in place on the thread's scratch arrays (the padded analysis input, then the
            # residual from the second iteration on): no fresh temporary per step, the same bits
            fwht = lambda a: _h.fwht(torch.from_numpy(a), overwrite=True).numpy()  # noqa: E731
            # row by row (each row's iterations are its own: the same bits), so the padded input and the
            # residual are one row each, not a batch's
            coeffs = np.zeros((xr.shape[0], D), dtype=xr.dtype)
            pad = _kernels.scratch("compressors.kashin", (1, D), xr.dtype)
            res = _kernels.scratch("compressors.kashin-r", (1, d), xr.dtype)
            bounds = []
            for _ in range(self.n_iters - 1):  # each iteration's clipping bound, as the torch loop makes it
                bounds.append(rows(M, 1).reshape(-1))
                M = M * self.eta
            for i in range(xr.shape[0]):
                r, s_i, co = xr[i : i + 1], sr[i : i + 1], coeffs[i : i + 1]
                for it in range(self.n_iters - 1):
                    c = fwht(kern.times_pad_rows(r, s_i, D, out=pad))
                    kern.clamp_add_rows(c, bounds[it][i : i + 1], co)
                    r = kern.sub_times_rows(r, fwht(c), s_i, out=res)
                kern.add_rows(co, fwht(kern.times_pad_rows(r, s_i, D, out=pad)))
            return torch.from_numpy(coeffs).reshape(*batch, D)
        coeffs = torch.zeros((*batch, D), dtype=x.dtype, device=x.device)
        r = x
        for _ in range(self.n_iters - 1):
            c = torch.clamp(self._fwd(r, s, D), -M, M)
            coeffs = coeffs + c
            r = r - self._bwd(c, s)
            M = M * self.eta
        return coeffs + self._fwd(r, s, D)

    def _nbits(self, batch, D_K):
        return fixed_bits(batch, self.bits * D_K + 2 * FLOAT_BITS)

    def _compress(self, x, seed):
        c = self.coefficients(x, seed)
        k, lo, hi = sq_encode(c, 2**self.bits, _h.generator(seed, "sq", x.device))
        return Message(self.name, {"k": k, "lo": lo, "hi": hi}, self._nbits(x.shape[:-1], c.shape[-1]), seed, tuple(x.shape))

    def _fields(self, shape):
        return sq_fields(shape[:-1], self.frame_size(shape[-1]), 2**self.bits)

    def _decompress(self, m):
        c = sq_decode(m.data["k"], m.data["lo"], m.data["hi"], 2**self.bits)
        batch, d = c.shape[:-1], m.shape[-1]
        return self._bwd(c, kashin_frame(m.seed, batch, d, c.dtype, c.device))

    def _shared_coefficients(self, st: SharedStages) -> tuple[torch.Tensor, tuple]:
        """:meth:`coefficients` of ``st.x`` and their rows' [min, max] (SQ's range), once per parameter set."""
        params = (self.n_iters, self.eta, self.delta, self.pad_threshold)
        coeffs = st.keep(Stage.KASHIN, (KashinSQ, "coefficients", params), lambda: self.coefficients(st.x, st.seed))
        return coeffs, st.keep(Stage.KASHIN, (KashinSQ, "range", params), lambda: min_max(coeffs))

    @staticmethod
    def _shared_frame(st: SharedStages) -> torch.Tensor:
        return st.keep(Stage.KASHIN, (KashinSQ, "frame"),
                       lambda: kashin_frame(st.seed, st.batch, st.d, st.x.dtype, st.x.device))

    def _stage_error(self, st, want_err):
        """From the shared coefficients and SQ uniforms: where the frame is doubled (``D_K = 2d``, ``d`` a power
        of two) the first half of ``H̃_{2d} = [[H̃_d, H̃_d], [H̃_d, −H̃_d]]/√2`` gives ``‖x̂ − x‖² = ½‖e₁ + e₂‖²``
        for the coefficient error ``e = ĉ − c`` in halves (``x = F*c`` up to rounding), no transform; else
        decoded (the synthesis in place on the scratch)."""
        if st.kernel is None:
            return None
        coeffs, value_range = self._shared_coefficients(st)
        D = coeffs.shape[-1]
        nbits = self._nbits(st.batch, D)
        _, decoded = st.sq(coeffs, value_range, 2**self.bits, True, scratch=True)
        if want_err and D == 2 * st.d:
            err = st.kernel.fold_dist_rows(_kernels.rows(decoded, D), _kernels.rows(coeffs, D))
            return RowErrors(nbits, err=torch.from_numpy(err).reshape(st.batch))
        xh = _h.fwht(decoded, overwrite=True)[..., : st.d].mul_(self._shared_frame(st))
        return RowErrors(nbits, err=st.dist(xh, st.x)) if want_err else RowErrors(nbits, decoded=xh)

    def _stage_mean_error(self, st, xmean):
        """Decoded inside the synthesis transform's first pass and averaged (times the frame's signs) in its
        last (:meth:`SharedStages.sq_mean_dist`); None where that does not apply."""
        coeffs, value_range = self._shared_coefficients(st)
        err = st.sq_mean_dist(coeffs, value_range, 2**self.bits, xmean, frame=self._shared_frame(st))
        return None if err is None else MeanError(err, self._nbits(st.batch, coeffs.shape[-1]).sum())
