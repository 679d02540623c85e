"""The rotation-based codecs of paper 002: EDEN, DRIVE, Hadamard+SQ and Kashin+SQ
({cite:p}`vargaftik2022eden`, §5)."""

from __future__ import annotations

import math

import numpy as np
import torch

from .. import _kernels
from .. import eden as _eden
from .. import eden_theory as _eden_theory
from .. import hadamard as _h
from ..validation import check_choice, check_float, check_int, check_seed
from ._base import FLOAT_BITS, Compressor, Message, check_int_bits, compressors_kernel, fixed_bits
from ._sq import sq_decode, sq_encode, sq_fields

__all__ = ["EDEN", "DRIVE", "HadamardSQ", "KashinSQ", "drive_message", "drive_rotated_reconstruction", "kashin_frame"]


class EDEN(Compressor):
    """:mod:`qlib.eden` behind the common interface (all of its options pass through)."""

    name = "EDEN"

    def __init__(self, bits: float, **kw):
        """``bits`` in (0, 8]; ``kw``: :func:`qlib.eden.compress`'s options ``scale``, ``quantizer``,
        ``n_rotations`` (checked here, once)."""
        self.bits = _eden_theory.check_bits(bits)
        unknown = set(kw) - {"scale", "quantizer", "n_rotations"}
        if unknown:
            raise TypeError(f"EDEN got unexpected options {sorted(unknown)}; it takes scale, quantizer, n_rotations")
        if "scale" in kw:
            check_choice("scale", kw["scale"], ("unbiased", "mse"))
        if "quantizer" in kw:
            check_choice("quantizer", kw["quantizer"], ("lm", "ee"))
        if "n_rotations" in kw:
            kw["n_rotations"] = check_int("n_rotations", kw["n_rotations"], low=1, high=8)
        self.kw = kw

    def _compress(self, x, seed):
        pl = _eden.compress(x, self.bits, seed, **self.kw)
        return Message(self.name, {"payload": pl}, pl.nbits, seed, tuple(x.shape))

    def _fields(self, shape):
        return {"payload": ("payload", None, None, None)}

    def _decompress(self, m):
        return _eden.decompress(m.data["payload"])


def drive_message(x: torch.Tensor, r: torch.Tensor, seed: int) -> Message:
    """DRIVE's message of ``x`` from its rotation ``r = RHT(x)`` (padded to a power of two) of ``seed``."""
    l1 = r.abs().sum(-1)
    S = torch.where(l1 > 0, (x * x).sum(-1) / l1.clamp_min(torch.finfo(x.dtype).tiny), torch.zeros_like(l1))
    return Message(DRIVE.name, {"sign": r >= 0, "scale": S}, fixed_bits(x.shape[:-1], r.shape[-1] + _eden.SCALE_BITS),
                   seed, tuple(x.shape))


def drive_rotated_reconstruction(m: Message) -> torch.Tensor:
    """DRIVE's receiver's reconstruction in the rotated domain, before the inverse rotation."""
    sign, S = m.data["sign"], m.data["scale"]
    return (sign.to(S.dtype) * 2 - 1) * S.unsqueeze(-1)


def kashin_frame(seed: int, batch: tuple, d: int, dtype: torch.dtype, device) -> torch.Tensor:
    """The random signs of Kashin+SQ's frame of ``seed``: one row of ``d`` per vector of ``batch``."""
    return _h.rademacher((*batch, d), _h.generator(seed, "kashin", device), dtype, device)


class DRIVE(Compressor):
    """DRIVE (1 bit/coordinate): ``x̂ = RHT^{-1}( ‖x‖²/‖r‖₁ · sign(r) )``, ``r = RHT(x)``, sign(0) = +1."""

    name = "DRIVE"

    def _compress(self, x, seed):
        return drive_message(x, _h.seeded_rht(_h.pad_to_power_of_two(x), seed), seed)

    def _fields(self, shape):
        D = _h.next_power_of_two(shape[-1])
        return {"sign": ("bool", (*shape[:-1], D), None, None), "scale": ("float", shape[:-1], 0.0, None)}

    def _decompress(self, m):
        return _h.seeded_irht(drive_rotated_reconstruction(m), m.seed, overwrite=True)[..., : m.shape[-1]]


class HadamardSQ(Compressor):
    """Randomized Hadamard rotation + ``b``-bit stochastic quantization (Suresh et al. 2017)."""

    name = "Hadamard+SQ"

    def __init__(self, bits: int):
        self.bits = check_int_bits(bits)

    def _compress(self, x, seed):
        batch = x.shape[:-1]
        r = _h.seeded_rht(_h.pad_to_power_of_two(x), seed)
        D = r.shape[-1]
        k, lo, hi = sq_encode(r, 2**self.bits, _h.generator(seed, "sq", x.device))
        return Message(self.name, {"k": k, "lo": lo, "hi": hi}, fixed_bits(batch, self.bits * D + 2 * FLOAT_BITS), seed, tuple(x.shape))

    def _fields(self, shape):
        return sq_fields(shape[:-1], _h.next_power_of_two(shape[-1]), 2**self.bits)

    def _decompress(self, m):
        r = sq_decode(m.data["k"], m.data["lo"], m.data["hi"], 2**self.bits)
        return _h.seeded_irht(r, m.seed, overwrite=True)[..., : m.shape[-1]]


class KashinSQ(Compressor):
    """Kashin representation (Lyubarskii & Vershynin 2010) in the tight frame of a randomized
    Hadamard matrix with ``D_K ≥ d`` rows, then ``b``-bit SQ of the ``D_K`` coefficients.

    Defaults of TF-MOT's ``KashinHadamardEncodingStage`` used by the authors' FL code (our reading; the paper names no parameters):
    ``D_K = 2^⌈log2 d⌉``, doubled when ``d/D_K > 0.85``; 3 iterations, ``eta = 0.9``, ``delta = 1``,
    no clipping in the last one. Every coefficient costs ``b`` bits, i.e. ``b·D_K/d`` bits per
    coordinate (≈ 2b for power-of-two d) — the bit accounting of the authors' code.
    """

    name = "Kashin+SQ"

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

    def _compress(self, x, seed):
        batch = x.shape[:-1]
        c = self.coefficients(x, seed)
        k, lo, hi = sq_encode(c, 2**self.bits, _h.generator(seed, "sq", x.device))
        nb = fixed_bits(batch, self.bits * c.shape[-1] + 2 * FLOAT_BITS)
        return Message(self.name, {"k": k, "lo": lo, "hi": hi}, nb, seed, tuple(x.shape))

    def _fields(self, shape):
        return sq_fields(shape[:-1], self.frame_size(shape[-1]), 2**self.bits)

    def _decompress(self, m):
        c = sq_decode(m.data["k"], m.data["lo"], m.data["hi"], 2**self.bits)
        batch, d = c.shape[:-1], m.shape[-1]
        return self._bwd(c, kashin_frame(m.seed, batch, d, c.dtype, c.device))
