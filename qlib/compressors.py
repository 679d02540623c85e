"""EDEN and the baselines of paper 002 ({cite:p}`vargaftik2022eden`, §5 and Appendix I) behind one interface.

The interface (:class:`Compressor`):

* ``compress(x, seed) -> Message`` for a vector ``(d,)`` or a batch ``(*batch, d)`` of vectors
  (float32/float64 tensor, finite, non-empty; every row gets its own randomness from the shared
  ``seed``, an integer in [0, 2^63));
* ``decompress(message) -> x̂`` with the shape and dtype of ``x`` (the receiver regenerates all
  randomness from ``message.seed``);
* ``roundtrip(x, seed) -> (x̂, nbits)`` and ``mean(xs, seed) -> (estimate of the mean of the rows,
  total bits)`` (linear sketches sum before decoding and override it).

A :class:`Message` holds the compressor's ``name``, its fields in ``data`` (tensors, one leading
batch shape), ``nbits`` (a long tensor of shape ``batch``: the exact size of every row's message in
bits, fixed- or variable-length), the ``seed`` (shared randomness, not counted) and the input
``shape``. A subclass sets ``name`` and implements ``_compress(x, seed)`` (``x`` and ``seed``
already validated) and ``_decompress(message)``; the base class validates and routes. Bit sizes
use :data:`FLOAT_BITS` for a float32 side value and ``qlib.eden.SCALE_BITS`` for EDEN's and
DRIVE's float64 scale.

| class | what | bits per message |
|---|---|---|
| :class:`EDEN` | qlib.eden | ``b·D + 64`` |
| :class:`DRIVE` | ``x̂ = R^{-1}(‖x‖²/‖Rx‖₁ · sign(Rx))`` (Vargaftik et al. 2021) | ``D + 64`` |
| :class:`HadamardSQ` | RHT, then stochastic quantization (SQ) with ``2^b`` levels on [min, max] | ``b·D + 64`` |
| :class:`KashinSQ` | Kashin representation in a 2× tight frame (TF-MOT defaults), then SQ | ``b·D_K + 64`` (``D_K ≈ 2d``) |
| :class:`QSGD` | norm + sign + SQ of ``|x_i|/‖x‖`` with ``s = 2^b − 1`` levels (Alistarh et al. 2017) | ``(b + 1)·d + 32`` |
| :class:`QSGDElias` | QSGD with ``s`` levels, Elias-ω coded (Alistarh et al. §3.2) | exact code length + 32 |
| :class:`SQHuffman` | SQ with ``k`` levels on [min, max], Huffman-coded indices (Suresh et al. 2017) | exact code length + 64 |
| :class:`CountSketch` | ``rows × c`` 32-bit counters, ``c = ⌊b·d/(32·rows)⌋`` (Charikar et al. 2002) | ``32·rows·c`` |
| :class:`TernGrad` | ``max|g| · sign · Bernoulli(|g|/max|g|)`` (Wen et al. 2017) | ``2·d + 32`` |
| :class:`Float32` | no compression | ``32·d`` |

:func:`fit_to_budget` picks the largest level count of a variable-length scheme whose coded size
meets a bit budget (Figure 5). :func:`squared_errors` measures the error of several compressors on one
input with their budget-independent stages done once, and the error of the rotation-based ones in the
rotated domain (Figures 2, 6 and 8's sweeps). :func:`make_compressor` gives each method of the distributed and
federated experiments (:data:`METHODS`) at any budget: a sub-bit budget of a method without one of
its own wraps its 1-bit form in :class:`RandomMask`, the random mask of §4.1.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from . import _kernels
from . import eden as _eden
from . import eden_theory as _eden_theory
from . import hadamard as _h
from .validation import (
    check_alloc,
    check_array,
    check_callable,
    check_choice,
    check_float,
    check_int,
    check_int_sequence,
    check_seed,
    nested,
    skip_nested,
)

__all__ = [
    "FLOAT_BITS",
    "Message",
    "Compressor",
    "EDEN",
    "DRIVE",
    "HadamardSQ",
    "KashinSQ",
    "QSGD",
    "QSGDElias",
    "SQHuffman",
    "CountSketch",
    "TernGrad",
    "Float32",
    "fit_to_budget",
    "elias_omega_length",
    "huffman_length",
    "METHODS",
    "RandomMask",
    "make_compressor",
    "squared_errors",
]


@dataclass
class Message:
    """What a sender transmits: the compressor's fields, the exact size per row, shared-seed info."""

    compressor: str
    data: dict[str, Any]
    nbits: torch.Tensor
    seed: int
    shape: tuple[int, ...]
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def total_bits(self) -> int:
        return int(self.nbits.sum())


FLOAT_BITS = 32  # a float32 side value (norm, min, max, a sketch counter)
_load = _kernels.load


def _int_bits(bits) -> int:
    return check_int("bits", bits, low=1, high=_eden_theory.MAX_BITS)


class Compressor:
    """Base class: a subclass sets ``name`` and implements ``_compress(x, seed) -> Message`` and
    ``_decompress(message) -> x̂``; :meth:`compress` / :meth:`decompress` validate and call them inside
    :func:`qlib.validation.skip_nested` (the public functions a hook calls trust what was checked here)."""

    name = "compressor"

    def compress(self, x: torch.Tensor, seed: int) -> Message:
        x = _eden_theory.check_vectors(x)
        seed = check_seed("seed", seed)
        with skip_nested():
            return self._compress(x, seed)

    def decompress(self, message: Message) -> torch.Tensor:
        """``x̂`` from a message of this compressor, every field checked first (:meth:`check_message`)."""
        message = self.check_message(message)
        with skip_nested():
            return self._decompress(message)

    def check_message(self, message: Message, name: str = "message") -> Message:
        """A :class:`Message` this compressor can decode (issue 30: a decoder trusts no object): its
        ``compressor`` is this one's name, ``shape`` a non-empty tuple of integers ``>= 1``, ``seed`` a seed,
        ``nbits`` an integer tensor of the batch shape (``>= 0``), and every field of ``data`` of the kind,
        dimensions and range the compressor gives it for that shape — float fields finite (side values
        such as a norm ``>= 0``, ``lo <= hi``), codes within their range. A ValueError/TypeError names the
        field (``message.data['lo']``). Called by a checked caller (:func:`qlib.validation.skip_nested`:
        :meth:`roundtrip`, :meth:`mean`) only the type and the compressor's name are checked."""
        if not isinstance(message, Message):
            raise TypeError(f"{name} must be a qlib.compressors.Message, got {type(message).__name__}")
        if message.compressor != self.name:
            raise ValueError(f"{name}.compressor is {message.compressor!r}: the message was produced by it, "
                             f"not by {self.name!r}")
        if nested():
            return message
        if not isinstance(message.shape, (tuple, list, torch.Size)):
            raise TypeError(f"{name}.shape must be a tuple of integers >= 1, got {message.shape!r}")
        shape = tuple(check_int_sequence(f"{name}.shape", message.shape, low=1))
        check_seed(f"{name}.seed", message.seed)
        if not isinstance(message.data, dict):
            raise TypeError(f"{name}.data must be a dict of the compressor's fields, got {type(message.data).__name__}")
        batch = shape[:-1]
        _check_field(f"{name}.nbits", message.nbits, ("int", batch, 0, None))
        for key, spec in self._fields(shape).items():
            fname = f"{name}.data[{key!r}]"
            if key not in message.data:
                raise ValueError(f"{fname} is missing (the fields of {self.name}: {', '.join(self._fields(shape))})")
            v = message.data[key]
            if spec[0] == "payload":
                pl = _eden.check_payload(v, fname)
                if pl.d != shape[-1] or tuple(pl.batch_shape) != batch:
                    raise ValueError(f"{fname} has d={pl.d} and batch {tuple(pl.batch_shape)}; {name}.shape "
                                     f"{shape} says d={shape[-1]}, batch {batch}")
            elif spec[0] == "message":
                self.inner.check_message(v, fname)
                if tuple(v.shape) != spec[1]:
                    raise ValueError(f"{fname}.shape must be {spec[1]} (the kept coordinates), got {tuple(v.shape)}")
            elif spec[0] == "count":
                k = check_int(fname, v, low=1, high=spec[3])
                if k != spec[2]:
                    raise ValueError(f"{fname} must be {spec[2]}, got {k}")
            else:
                _check_field(fname, v, spec)
        if "lo" in message.data and "hi" in message.data and not bool((message.data["lo"] <= message.data["hi"]).all()):
            raise ValueError(f"{name}.data['lo'] must be <= {name}.data['hi'] (the quantization range), got lo > hi")
        return message

    def _fields(self, shape: tuple[int, ...]) -> dict[str, tuple]:
        """The fields of this compressor's message for an input of ``shape``: name → (kind, dims, low,
        high), kind ``"float"`` (finite, ``>= low`` where given), ``"int"`` (codes in ``[low, high]``),
        ``"bool"``, ``"payload"``, ``"message"`` or ``"count"``."""
        raise NotImplementedError(f"{type(self).__name__} does not describe its message")

    def roundtrip(self, x: torch.Tensor, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        m = self.compress(x, seed)
        with skip_nested():  # the message is the one compress built
            return self.decompress(m), m.nbits

    def mean(self, xs: torch.Tensor, seed: int) -> tuple[torch.Tensor, int]:
        """Estimate of the mean of the rows of ``xs`` (n × d: one row per client) and the total bits sent."""
        xs, seed = _check_rows(xs), check_seed("seed", seed)
        with skip_nested():
            m = self.compress(xs, seed)
            return self.decompress(m).mean(0), m.total_bits

    #: the stages this compressor shares with others in :func:`squared_errors` ("rotation", "kashin",
    #: "qsgd"), or None: it has no shortcut there (compress, decompress, compare)
    _shared_group = None

    def _shared_path(self, sh: _Shared, want_err: bool):
        """:func:`squared_errors`' shortcut: ``(err², None, nbits)`` (the squared error per row, float64) or
        ``(None, x̂, nbits)`` (the reconstruction), computed from the shared stages of ``sh``, the same
        values as compress → decompress up to float rounding; None where there is none."""
        return None

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in vars(self).items())})"


def _check_rows(xs) -> torch.Tensor:
    xs = _eden_theory.check_vectors(xs, "xs")
    if xs.dim() != 2:
        raise ValueError(f"xs must be (n_clients, d): one row per client, got shape {tuple(xs.shape)} (a mean over "
                         "the rows; a 1-D xs would be read as a mean over its coordinates)")
    return xs


def _check_field(name: str, v, spec) -> None:
    """One field of a message: a tensor of the kind and dimensions of ``spec`` (see Compressor._fields)."""
    kind, dims, low, high = spec
    if not isinstance(v, torch.Tensor):
        raise TypeError(f"{name} must be a tensor, got {type(v).__name__}")
    if kind == "float" and not v.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got dtype {v.dtype}")
    if kind == "int" and (v.is_floating_point() or v.is_complex() or v.dtype == torch.bool):
        raise TypeError(f"{name} must be a tensor of integer codes, got dtype {v.dtype}")
    if kind == "bool" and v.dtype != torch.bool:
        raise TypeError(f"{name} must be a boolean tensor, got dtype {v.dtype}")
    if tuple(v.shape) != tuple(dims):
        raise ValueError(f"{name} must have shape {tuple(dims)}, got {tuple(v.shape)}")
    if not v.numel() or kind == "bool":
        return
    if kind == "float":
        if not bool(torch.isfinite(v).all()):
            raise ValueError(f"{name} must be finite (no NaN or inf)")
        if low is not None and bool((v < low).any()):
            raise ValueError(f"{name} must be >= {low}, got {float(v.min())}")
    else:
        lo_, hi_ = int(v.min()), int(v.max())
        if (low is not None and lo_ < low) or (high is not None and hi_ > high):
            raise ValueError(f"{name} must hold codes in [{low}, {high}], got {lo_ if low is not None and lo_ < low else hi_}")


def _full(shape, value):
    return torch.full(tuple(shape), int(value), dtype=torch.long)


# -- EDEN and DRIVE -------------------------------------------------------------------------------
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

    _shared_group = "rotation"

    def _shared_path(self, sh, want_err):
        if self.bits < 1 and self.kw.get("quantizer", "lm") == "lm":
            return None  # the sub-bit mask comes before the rotation: nothing to share
        k = self.kw.get("n_rotations", 1)
        r = sh.rotated(k)
        norm2 = sh.get(("rht-norm2", k), lambda: torch.linalg.vecdot(r, r))  # (as compress_rotated: the same bits)
        pl = _eden.compress_rotated(r, self.bits, sh.seed, d=sh.d, norm2=norm2, **self.kw)
        if want_err and sh.d == sh.D:
            return sh.dist(_eden.rotated_reconstruction(pl), r), None, pl.nbits
        return None, _eden.decompress(pl, scratch="compressors.xh"), pl.nbits


class DRIVE(Compressor):
    """DRIVE (1 bit/coordinate): ``x̂ = RHT^{-1}( ‖x‖²/‖r‖₁ · sign(r) )``, ``r = RHT(x)``, sign(0) = +1."""

    name = "DRIVE"

    def _compress(self, x, seed):
        return self._from_rotated(x, _h.seeded_rht(_h.pad_to_power_of_two(x), seed), seed)

    def _from_rotated(self, x, r, seed):
        l1 = r.abs().sum(-1)
        S = torch.where(l1 > 0, (x * x).sum(-1) / l1.clamp_min(torch.finfo(x.dtype).tiny), torch.zeros_like(l1))
        return Message(self.name, {"sign": r >= 0, "scale": S}, _full(x.shape[:-1], r.shape[-1] + _eden.SCALE_BITS),
                       seed, tuple(x.shape))

    @staticmethod
    def _rotated_reconstruction(m):
        sign, S = m.data["sign"], m.data["scale"]
        return (sign.to(S.dtype) * 2 - 1) * S.unsqueeze(-1)

    def _fields(self, shape):
        D = _h.next_power_of_two(shape[-1])
        return {"sign": ("bool", (*shape[:-1], D), None, None), "scale": ("float", shape[:-1], 0.0, None)}

    def _decompress(self, m):
        return _h.seeded_irht(self._rotated_reconstruction(m), m.seed, overwrite=True)[..., : m.shape[-1]]

    _shared_group = "rotation"

    def _shared_path(self, sh, want_err):
        r = sh.rotated(1)
        m = self._from_rotated(sh.x, r, sh.seed)
        if want_err and sh.d == sh.D:
            return sh.dist(self._rotated_reconstruction(m), r), None, m.nbits
        return None, self._decompress(m), m.nbits


# -- stochastic quantization and its rotated variants --------------------------------------------
def _sq_encode(v: torch.Tensor, levels: int, gen: torch.Generator):
    """Stochastic quantization to ``levels`` equispaced values on [min, max] per row (unbiased). On CPU
    the codes come from one compiled pass (``qlib/_kernels/compressors.py``, the same operations: the same
    codes)."""
    lo = v.min(-1, keepdim=True).values
    hi = v.max(-1, keepdim=True).values
    span = hi - lo
    kern = _load("compressors") if _h.compiled_fwht_applies(v) else None
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


def _sq_fields(batch, n, levels):
    return {"k": ("int", (*batch, n), 0, levels - 1), "lo": ("float", batch, None, None),
            "hi": ("float", batch, None, None)}


def _sq_decode(k, lo, hi, levels):
    dt = lo.dtype
    return lo.unsqueeze(-1) + k.to(dt) * ((hi - lo) / max(levels - 1, 1)).unsqueeze(-1)


class HadamardSQ(Compressor):
    """Randomized Hadamard rotation + ``b``-bit stochastic quantization (Suresh et al. 2017)."""

    name = "Hadamard+SQ"

    def __init__(self, bits: int):
        self.bits = _int_bits(bits)

    def _compress(self, x, seed):
        batch = x.shape[:-1]
        r = _h.seeded_rht(_h.pad_to_power_of_two(x), seed)
        D = r.shape[-1]
        k, lo, hi = _sq_encode(r, 2**self.bits, _h.generator(seed, "sq", x.device))
        return Message(self.name, {"k": k, "lo": lo, "hi": hi}, _full(batch, self.bits * D + 2 * FLOAT_BITS), seed, tuple(x.shape))

    def _fields(self, shape):
        return _sq_fields(shape[:-1], _h.next_power_of_two(shape[-1]), 2**self.bits)

    def _decompress(self, m):
        r = _sq_decode(m.data["k"], m.data["lo"], m.data["hi"], 2**self.bits)
        return _h.seeded_irht(r, m.seed, overwrite=True)[..., : m.shape[-1]]

    _shared_group = "rotation"

    def _shared_path(self, sh, want_err):
        if sh.kernel is None:
            return None
        nbits = _full(sh.batch, self.bits * sh.D + 2 * FLOAT_BITS)
        rotated_err = want_err and sh.d == sh.D
        err, c = sh.sq(sh.rotated(1), ("rht", 1), 2**self.bits, not rotated_err, scratch=True)
        if rotated_err:
            return err, None, nbits
        return None, _h.seeded_irht(c, sh.seed, overwrite=True)[..., : sh.d], nbits  # (in place, on the scratch)


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
        self.bits = _int_bits(bits)
        self.n_iters = check_int("n_iters", n_iters, low=1)
        self.eta = check_float("eta", eta, low=0.0, high=1.0, low_open=True)
        self.delta = check_float("delta", delta, low=0.0, low_open=True)
        self.pad_threshold = check_float("pad_threshold", pad_threshold, low=0.0, high=1.0, low_open=True)

    def frame_size(self, d: int) -> int:
        """``D_K``, the number of Kashin coefficients of a vector of ``d >= 1`` coordinates."""
        d = check_int("d", d, low=1)
        D = _h.next_power_of_two(d)
        return 2 * D if d / D > self.pad_threshold else D

    def _frame(self, seed, batch, d, dtype, device):
        return _h.rademacher((*batch, d), _h.generator(seed, "kashin", device), dtype, device)

    @staticmethod
    def _fwd(v, s, D):
        return _h.fwht(torch.nn.functional.pad(v * s, (0, D - v.shape[-1])))

    @staticmethod
    def _bwd(c, s):
        return _h.fwht(c)[..., : s.shape[-1]] * s

    def coefficients(self, x: torch.Tensor, seed: int) -> torch.Tensor:
        """The Kashin coefficients of ``x`` (a vector or a batch ``(*batch, d)``; ``x = F*(coefficients)``
        exactly) in the frame of ``seed``."""
        x = _eden_theory.check_vectors(x)
        seed = check_seed("seed", seed)
        batch, d = x.shape[:-1], x.shape[-1]
        D = self.frame_size(d)
        s = self._frame(seed, batch, d, x.dtype, x.device)
        M = (x * x).sum(-1, keepdim=True).sqrt() / math.sqrt(self.delta * d)
        kern = _load("compressors") if _h.compiled_fwht_applies(x) else None
        if kern is not None:  # the elementwise steps compiled between the transforms: the same bits
            rows = lambda t, n: _kernels.rows(t, n)  # noqa: E731
            xr, sr = rows(x, d), rows(s, d)
            # every transform in place on the thread's scratch arrays (the padded analysis input, then the
            # residual from the second iteration on): no fresh temporary per step, the same bits
            fwht = lambda a: _h.fwht(torch.from_numpy(a), overwrite=True).numpy()  # noqa: E731
            coeffs = np.zeros((xr.shape[0], D), dtype=xr.dtype)
            pad = _kernels.scratch("compressors.kashin", (xr.shape[0], D), xr.dtype)
            r, res = xr, None
            for _ in range(self.n_iters - 1):
                c = fwht(kern.times_pad_rows(r, sr, D, out=pad))
                kern.clamp_add_rows(c, rows(M, 1).reshape(-1), coeffs)
                if res is None:
                    res = _kernels.scratch("compressors.kashin-r", xr.shape, xr.dtype)
                r = kern.sub_times_rows(r, fwht(c), sr, out=res)
                M = M * self.eta
            kern.add_rows(coeffs, fwht(kern.times_pad_rows(r, sr, D, out=pad)))
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
        k, lo, hi = _sq_encode(c, 2**self.bits, _h.generator(seed, "sq", x.device))
        nb = _full(batch, self.bits * c.shape[-1] + 2 * FLOAT_BITS)
        return Message(self.name, {"k": k, "lo": lo, "hi": hi}, nb, seed, tuple(x.shape))

    def _fields(self, shape):
        return _sq_fields(shape[:-1], self.frame_size(shape[-1]), 2**self.bits)

    def _decompress(self, m):
        c = _sq_decode(m.data["k"], m.data["lo"], m.data["hi"], 2**self.bits)
        batch, d = c.shape[:-1], m.shape[-1]
        return self._bwd(c, self._frame(m.seed, batch, d, c.dtype, c.device))

    _shared_group = "kashin"

    def _shared_path(self, sh, want_err):
        if sh.kernel is None:
            return None
        key = ("kashin", self.n_iters, self.eta, self.delta, self.pad_threshold)
        c = sh.get(key, lambda: self.coefficients(sh.x, sh.seed))
        nbits = _full(sh.batch, self.bits * c.shape[-1] + 2 * FLOAT_BITS)
        if want_err and c.shape[-1] == 2 * sh.d:
            # x̂ − x = s ∘ (H̃_{2d}(ĉ − c))[:d] (x = F*c: the representation is exact, up to rounding), and
            # the first half of H̃_{2d} is [H̃_d, H̃_d]/√2 with H̃_d orthonormal: ‖x̂ − x‖² = ½‖e₁ + e₂‖² for
            # e = ĉ − c in halves, no transform (d a power of two: the frame is doubled)
            _, ch = sh.sq(c, key, 2**self.bits, True, scratch=True)
            D = c.shape[-1]
            err = sh.kernel.fold_dist_rows(_kernels.rows(ch, D), _kernels.rows(c, D))
            return torch.from_numpy(err).reshape(sh.batch), None, nbits
        _, ch = sh.sq(c, key, 2**self.bits, True, scratch=True)
        frame = sh.get(("kashin-frame",), lambda: self._frame(sh.seed, sh.batch, sh.d, sh.x.dtype, sh.x.device))
        xh = _h.fwht(ch, overwrite=True)[..., : sh.d].mul_(frame)  # self._bwd in place on the scratch (same bits)
        return (sh.dist(xh, sh.x), None, nbits) if want_err else (None, xh, nbits)


# -- QSGD and its entropy-coded variant ----------------------------------------------------------
def _qsgd_levels(x, s, gen):
    norm = (x * x).sum(-1, keepdim=True).sqrt()
    kern = _load("compressors") if _h.compiled_fwht_applies(x) else None
    if kern is not None:  # one compiled pass, the same operations: the same levels
        u = torch.rand(x.shape, generator=gen, device=x.device, dtype=x.dtype)
        d = x.shape[-1]
        lev, neg = kern.qsgd_levels_rows(_kernels.rows(x, d), _kernels.rows(u, d), _kernels.rows(norm, 1).reshape(-1), s)
        return torch.from_numpy(lev).reshape(x.shape), torch.from_numpy(neg).reshape(x.shape), norm.squeeze(-1)
    a = torch.where(norm > 0, x.abs() / torch.where(norm > 0, norm, torch.ones_like(norm)), torch.zeros_like(x)) * s
    fl = a.floor()
    up = torch.rand(x.shape, generator=gen, device=x.device, dtype=x.dtype) < (a - fl)
    lev = (fl + up.to(x.dtype)).clamp(0, s).to(torch.int64)
    return lev, x < 0, norm.squeeze(-1)


class QSGD(Compressor):
    """QSGD (Alistarh et al. 2017): ``x̂_i = ‖x‖·sign(x_i)·ξ_i/s`` with ``ξ_i`` the unbiased stochastic
    rounding of ``s|x_i|/‖x‖``. Fixed length: ``s = 2^b − 1`` magnitude levels (``b`` bits) + one
    sign bit per coordinate + a 32-bit norm (the paper gives no level count; our convention)."""

    name = "QSGD"

    def __init__(self, bits: int | None = None, levels: int | None = None):
        if (bits is None) == (levels is None):
            raise ValueError("give exactly one of bits (s = 2^bits − 1) or levels (s)")
        self.levels = 2 ** _int_bits(bits) - 1 if bits is not None else check_int("levels", levels, low=1)
        self.bits = bits

    def _code_bits(self, lev, neg):
        w = math.ceil(math.log2(self.levels + 1))
        return _full(lev.shape[:-1], (w + 1) * lev.shape[-1] + FLOAT_BITS)

    def _compress(self, x, seed):
        lev, neg, norm = _qsgd_levels(x, self.levels, _h.generator(seed, "qsgd", x.device))
        nb = self._code_bits(lev, neg)
        return Message(self.name, {"lev": lev, "neg": neg, "norm": norm}, nb, seed, tuple(x.shape))

    def _fields(self, shape):
        return {"lev": ("int", shape, 0, self.levels), "neg": ("bool", shape, None, None),
                "norm": ("float", shape[:-1], 0.0, None)}

    def _decompress(self, m):
        lev, neg, norm = m.data["lev"], m.data["neg"], m.data["norm"]
        sgn = 1 - 2 * neg.to(norm.dtype)
        return norm.unsqueeze(-1) * sgn * lev.to(norm.dtype) / self.levels

    _shared_group = "qsgd"

    def _shared_path(self, sh, want_err):
        if sh.kernel is None or type(self)._code_bits is not QSGD._code_bits:
            return None  # (QSGD + Elias: its size depends on the levels drawn)
        x = sh.x
        norm = sh.get(("qsgd-norm",), lambda: (x * x).sum(-1, keepdim=True).sqrt())  # as _qsgd_levels
        u = sh.uniforms("qsgd", x.shape)
        d = sh.d
        out = None if want_err else _kernels.scratch("compressors.qsgd", (math.prod(sh.batch), d), _np_dtype(x))
        err = sh.kernel.qsgd_rows(_kernels.rows(x, d), _kernels.rows(u, d), _kernels.rows(norm, 1).reshape(-1),
                                  self.levels, out)
        nbits = self._code_bits(x, None)
        if want_err:
            return torch.from_numpy(err).reshape(sh.batch), None, nbits
        return None, torch.from_numpy(out).reshape(x.shape), nbits


def elias_omega_length(n: torch.Tensor) -> torch.Tensor:
    """Length in bits of the Elias-ω code of each positive integer in ``n`` (elementwise: any shape,
    an empty ``n`` giving an empty result; an integer tensor, array or list, entries ``>= 1``). Called
    by a checked caller (:func:`qlib.validation.skip_nested`: QSGD+Elias's gaps and levels) the entries
    of an integer tensor are not checked."""
    if isinstance(n, torch.Tensor):
        if n.is_floating_point() or n.is_complex() or n.dtype == torch.bool:
            raise TypeError(f"n must be a tensor of integers, got dtype {n.dtype}")
    else:
        n = torch.from_numpy(check_array("n", n, dtype="int", nonempty=False))
    n = n.to(torch.int64)
    if not nested() and n.numel() and int(n.min()) < 1:
        raise ValueError("n must have entries >= 1 (Elias-omega codes positive integers only)")
    length = torch.ones_like(n)  # the terminating 0
    while bool((n > 1).any()):
        big = n > 1
        nb = torch.floor(torch.log2(n.to(torch.float64))).to(torch.int64) + 1  # bit length of n
        # exact bit length (guards float rounding at powers of two)
        nb = torch.where((1 << (nb - 1).clamp_min(0)) > n, nb - 1, nb)
        nb = torch.where((1 << nb.clamp_max(62)) <= n, nb + 1, nb)
        length = torch.where(big, length + nb, length)
        n = torch.where(big, nb - 1, n)
    return length


class QSGDElias(QSGD):
    """QSGD with ``s`` levels whose message is Elias-ω coded (Alistarh et al. 2017 §3.2): a 32-bit
    norm, then for every nonzero level the Elias-ω code of (zeros skipped + 1), a sign bit and the
    Elias-ω code of the level. Length is exact, per row."""

    name = "QSGD+Elias"

    def __init__(self, levels: int):
        super().__init__(levels=levels)

    def _code_bits(self, lev, neg):
        kern = _load("compressors") if lev.device.type == "cpu" else None
        if kern is not None:  # one compiled pass, integer arithmetic: the same lengths
            nb = kern.elias_rows(_kernels.rows(lev, lev.shape[-1])) + FLOAT_BITS
            return torch.from_numpy(nb).reshape(lev.shape[:-1])
        flat = lev.reshape(-1, lev.shape[-1])
        out = []
        for row in flat:
            nz = torch.nonzero(row).squeeze(-1)
            gaps = torch.diff(nz, prepend=torch.tensor([-1], device=nz.device))  # zeros skipped + 1
            out.append(FLOAT_BITS + int(elias_omega_length(gaps).sum() + nz.numel()
                                        + elias_omega_length(row[nz]).sum()))
        return torch.tensor(out, dtype=torch.long).reshape(lev.shape[:-1])


def huffman_length(counts) -> int:
    """Total length in bits of the Huffman code of symbols with these counts (≥ 1 bit per symbol);
    ``counts``: a non-empty 1-D array of integers ``>= 0`` (zero counts are symbols that never occur)."""
    counts = check_array("counts", counts, ndim=1, dtype="int", low=0)
    c = [int(v) for v in counts if v > 0]
    if not c:
        return 0
    if len(c) == 1:
        return c[0]
    heap = list(c)
    heapq.heapify(heap)
    total = 0
    while len(heap) > 1:  # every merge adds one bit to every symbol below it
        a, b = heapq.heappop(heap), heapq.heappop(heap)
        total += a + b
        heapq.heappush(heap, a + b)
    return total


class SQHuffman(Compressor):
    """Stochastic quantization with ``k`` levels on [min, max] (no rotation), indices Huffman-coded
    with a per-message code (Suresh et al. 2017 variable-length coding; the code table is not
    counted), plus 64 bits for min and max."""

    name = "SQ+Huffman"

    def __init__(self, levels: int):
        self.levels = check_int("levels", levels, low=2, high=2**31 - 1)  # (int32 codes)
        check_alloc("levels", self.levels, 8, value=levels, what="a message's level counts (torch.bincount)")

    def _compress(self, x, seed):
        k, lo, hi = _sq_encode(x, self.levels, _h.generator(seed, "sq", x.device))
        flat = k.reshape(-1, k.shape[-1]).long()
        nb = [2 * FLOAT_BITS + huffman_length(torch.bincount(r, minlength=self.levels).cpu().numpy()) for r in flat]
        nb = torch.tensor(nb, dtype=torch.long).reshape(k.shape[:-1])
        return Message(self.name, {"k": k, "lo": lo, "hi": hi}, nb, seed, tuple(x.shape))

    def _fields(self, shape):
        return _sq_fields(shape[:-1], shape[-1], self.levels)

    def _decompress(self, m):
        return _sq_decode(m.data["k"], m.data["lo"], m.data["hi"], self.levels)


# -- sketches and ternary --------------------------------------------------------------------------
class CountSketch(Compressor):
    """Count-Sketch with ``rows`` rows of ``c = ⌊b·d/(32·rows)⌋`` 32-bit counters (so ≈ ``b`` bits per
    coordinate). The hashes come from the seed and are shared by all clients, so the server sums the
    clients' sketches and decodes once (:meth:`mean`); estimate = median over rows of
    ``σ_j(i)·T[j, h_j(i)]`` (with ``rows = 1``, the authors' DRIVE setting, it is unbiased)."""

    name = "Count-Sketch"

    def __init__(self, bits: float, rows: int = 1):
        self.bits = _eden_theory.check_bits(bits)
        self.rows = check_int("rows", rows, low=1)

    def columns(self, d: int) -> int:
        """``c``, the counters per row of the sketch of a vector of ``d >= 1`` coordinates."""
        d = check_int("d", d, low=1)
        return max(1, int(self.bits * d) // (FLOAT_BITS * self.rows))

    def _hashes(self, seed, d, device):
        check_alloc("rows", self.rows * d, 8 + 8, value=self.rows, what=f"the hashes and signs of {d} coordinates")
        g = _h.generator(seed, "sketch", device)
        c = self.columns(d)
        h = torch.randint(0, c, (self.rows, d), generator=g, device=device)
        # the signs as drawn before issue 30 (one random byte per 8 signs, bit j of byte i for entry 8 i + j),
        # kept so that the sketches stay bit for bit what they were: the sketch is float64 whatever the
        # input, so these signs never depended on its dtype (qlib.hadamard.rademacher now draws 32-bit words)
        n = self.rows * d
        byts = torch.randint(0, 256, ((n + 7) // 8,), generator=g, device=device, dtype=torch.int16)
        bits = (byts.unsqueeze(-1) >> torch.arange(8, device=device, dtype=torch.int16)) & 1
        sg = (1 - 2 * bits.reshape(-1)[:n]).to(torch.float64).reshape(self.rows, d)
        return h, sg, c

    def _compress(self, x, seed, hashes=None):
        batch, d = x.shape[:-1], x.shape[-1]
        h, sg, c = self._hashes(seed, d, x.device) if hashes is None else hashes
        flat = x.reshape(-1, d)
        check_alloc("rows", flat.shape[0] * self.rows * c, x.element_size(), value=self.rows, what="the sketches")
        T = torch.zeros((flat.shape[0], self.rows, c), dtype=x.dtype, device=x.device)
        for j in range(self.rows):
            T[:, j].index_add_(1, h[j], flat * sg[j].to(x.dtype))
        nb = _full(batch, FLOAT_BITS * self.rows * c)
        return Message(self.name, {"T": T.reshape(*batch, self.rows, c)}, nb, seed, tuple(x.shape))

    def _decode(self, T, seed, d, hashes=None):
        h, sg, _ = self._hashes(seed, d, T.device) if hashes is None else hashes
        est = torch.stack([T[..., j, :][..., h[j]] * sg[j].to(T.dtype) for j in range(self.rows)], -2)
        return est[..., 0, :] if self.rows == 1 else est.median(-2).values

    def _fields(self, shape):
        return {"T": ("float", (*shape[:-1], self.rows, self.columns(shape[-1])), None, None)}

    def _decompress(self, m):
        return self._decode(m.data["T"], m.seed, m.shape[-1])

    def mean(self, xs, seed):
        xs, seed = _check_rows(xs), check_seed("seed", seed)
        with skip_nested():  # the hashes drawn once, for the clients and the server (the same draw)
            hs = self._hashes(seed, xs.shape[-1], xs.device)
            m = self._compress(xs, seed, hs)
            return self._decode(m.data["T"].mean(0), seed, xs.shape[-1], hs), m.total_bits


class TernGrad(Compressor):
    """TernGrad (Wen et al. 2017): ``x̂_i = s·sign(x_i)·Bernoulli(|x_i|/s)``, ``s = max|x|``; 2 bits
    per coordinate (fixed length) + a 32-bit ``s``. Cited by the paper, not evaluated there."""

    name = "TernGrad"

    def _compress(self, x, seed):
        s = x.abs().amax(-1, keepdim=True)
        p = torch.where(s > 0, x.abs() / torch.where(s > 0, s, torch.ones_like(s)), torch.zeros_like(x))
        keep = torch.rand(x.shape, generator=_h.generator(seed, "terngrad", x.device), device=x.device, dtype=x.dtype) < p
        t = (torch.sign(x) * keep).to(torch.int8)
        return Message(self.name, {"t": t, "s": s.squeeze(-1)}, _full(x.shape[:-1], 2 * x.shape[-1] + FLOAT_BITS), seed, tuple(x.shape))

    def _fields(self, shape):
        return {"t": ("int", shape, -1, 1), "s": ("float", shape[:-1], 0.0, None)}

    def _decompress(self, m):
        return m.data["t"].to(m.data["s"].dtype) * m.data["s"].unsqueeze(-1)


class Float32(Compressor):
    """No compression: the float32 vector itself (32 bits per coordinate)."""

    name = "Float32"

    def _compress(self, x, seed):
        return Message(self.name, {"x": x.to(torch.float32)}, _full(x.shape[:-1], FLOAT_BITS * x.shape[-1]), seed, tuple(x.shape))

    def _fields(self, shape):
        return {"x": ("float", shape, None, None)}

    def _decompress(self, m):
        return m.data["x"]


def fit_to_budget(make, x: torch.Tensor, bits: float, seed: int, lo: int, hi: int = 2**16):
    """Largest integer parameter ``k`` in [lo, hi] with ``make(k).compress(x, seed)`` using at most
    ``bits`` bits per coordinate (mean over rows); bisection, assumes size grows with ``k``.
    Returns ``(k, compressor)`` or ``(None, None)`` when even ``make(lo)`` is over budget.
    ``make(lo)`` and ``make(hi)`` must be valid compressors (else the error names ``lo`` / ``hi``)."""
    make = check_callable("make", make)
    x = _eden_theory.check_vectors(x)
    b = _eden_theory.check_bits(bits)
    seed = check_seed("seed", seed)
    lo = check_int("lo", lo, low=0)
    hi = check_int("hi (>= lo)", hi, low=lo)
    for name, k in (("lo", lo), ("hi", hi)):
        try:
            make(k)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{name}={k} is not a valid parameter of make: {exc}") from None
    d = x.shape[-1]

    def ok(k):
        m = make(k).compress(x, seed)
        return m.nbits.double().mean().item() <= b * d

    if not ok(lo):
        return None, None
    if ok(hi):
        return hi, make(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return lo, make(lo)


# ------------------------------------------------------------------------------------------------
# Any method at any budget (the federated experiments' names, §5.3)
# ------------------------------------------------------------------------------------------------
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


# ------------------------------------------------------------------------------------------------
# Errors of several compressors on one input, their shared stages done once
# ------------------------------------------------------------------------------------------------
_GROUPS = ("rotation", "kashin", "qsgd", None)  # the order squared_errors takes the compressors in


def _np_dtype(x: torch.Tensor):
    return np.float32 if x.dtype == torch.float32 else np.float64


class _Shared:
    """The budget-independent stages of the encoders for one input ``x`` and ``seed``, each computed at
    its first use and kept until :meth:`release`: the rotation (by rotation count), Kashin's coefficients
    and frame, the uniform draws of a purpose and shape, QSGD's norms, the [min, max] of a vector SQ
    quantizes. ``kernel``: :mod:`qlib._kernels.compressors` where it takes ``x`` (else None)."""

    def __init__(self, x: torch.Tensor, seed: int):
        self.x, self.seed = x, seed
        self.batch, self.d = tuple(x.shape[:-1]), x.shape[-1]
        self.D = _h.next_power_of_two(self.d)
        self.kernel = _load("compressors") if _h.compiled_fwht_applies(x) else None
        self.cache: dict = {}

    def get(self, key, make):
        v = self.cache.get(key)
        if v is None:
            v = self.cache[key] = make()
        return v

    def release(self, group: str | None) -> None:
        """Drop what only the compressors of ``group`` use (the uniform draws stay: SQ's are shared
        by Hadamard+SQ and Kashin+SQ where their lengths agree)."""
        own = {"rotation": ("rht", "rht-norm2"), "kashin": ("kashin", "kashin-frame"), "qsgd": ("qsgd-norm",)}.get(group, ())
        for key in [k for k in self.cache if k[0] in own or (k[0] == "range" and k[1][0] in own)
                    or (group == "qsgd" and k[:2] == ("u", "qsgd"))]:
            del self.cache[key]

    def rotated(self, k: int) -> torch.Tensor:
        return self.get(("rht", k), lambda: _h.seeded_rht(_h.pad_to_power_of_two(self.x), self.seed, k))

    def uniforms(self, purpose: str, shape) -> torch.Tensor:
        x = self.x
        return self.get(("u", purpose, tuple(shape)), lambda: torch.rand(
            tuple(shape), generator=_h.generator(self.seed, purpose, x.device), device=x.device, dtype=x.dtype))

    def sq(self, v: torch.Tensor, key, levels: int, want_values: bool, scratch: bool = False):
        """SQ of ``v`` (cached under ``key``) with ``levels`` levels, as :func:`_sq_encode` then
        :func:`_sq_decode` (the uniforms of the seed's ``"sq"`` stream): (``Σ (v̂ − v)²`` per row, float64;
        the decoded ``v̂`` when ``want_values``, else None; ``scratch``: ``v̂`` is the thread's scratch
        array, for a caller done with it before the next call)."""
        lo, hi = self.get(("range", key), lambda: (v.min(-1, keepdim=True).values, v.max(-1, keepdim=True).values))
        span = hi - lo
        step = (hi - lo) / max(levels - 1, 1)  # as _sq_decode
        u = self.uniforms("sq", v.shape)
        D = v.shape[-1]
        shape, dt = (math.prod(v.shape[:-1]), D), _np_dtype(v)
        out = None if not want_values else _kernels.scratch("compressors.sq", shape, dt) if scratch else np.empty(shape, dt)
        flat = lambda t: _kernels.rows(t, 1).reshape(-1)  # noqa: E731
        err = self.kernel.sq_rows(_kernels.rows(v, D), _kernels.rows(u, D), flat(lo), flat(span), levels, flat(step), out)
        return (torch.from_numpy(err).reshape(v.shape[:-1]),
                None if out is None else torch.from_numpy(out).reshape(v.shape))

    def mean_dist(self, xh: torch.Tensor, ref: torch.Tensor) -> torch.Tensor:
        """``‖xh.mean(0) − ref‖²`` (float64, 0-d) for the reconstructions ``xh`` ``(n, d)`` (rows contiguous, a
        ``[..., :d]`` view of padded rows read in place) and the float64 mean ``ref``: on the compiled path
        one pass with the same mean (the same bits as torch's ``mean(0)``), no temporaries."""
        if (self.kernel is not None and _h.compiled_fwht_applies(xh) and xh.dim() == 2 and xh.stride(-1) == 1
                and ref.dtype == torch.float64 and ref.is_contiguous() and ref.device.type == "cpu"):
            a = xh.detach().numpy()
            return torch.tensor(self.kernel.mean_dist(a, a.shape[1], ref.numpy()), dtype=torch.float64)
        return ((xh.mean(0).double() - ref) ** 2).sum()

    def dist(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """``Σ (a − b)²`` per row in float64."""
        if self.kernel is not None and _h.compiled_fwht_applies(a) and a.dtype == b.dtype:
            D = a.shape[-1]
            return torch.from_numpy(self.kernel.sq_dist_rows(_kernels.rows(a, D), _kernels.rows(b, D))).reshape(a.shape[:-1])
        return ((a.double() - b.double()) ** 2).sum(-1)


def _check_compressors(compressors) -> list:
    if isinstance(compressors, Compressor):
        compressors = [compressors]
    if not isinstance(compressors, (list, tuple)) or not compressors:
        raise TypeError(f"compressors must be a non-empty list of qlib.compressors.Compressor, got {compressors!r}")
    for i, c in enumerate(compressors):
        if not isinstance(c, Compressor):
            raise TypeError(f"compressors[{i}] must be a qlib.compressors.Compressor, got {type(c).__name__}")
    return list(compressors)


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
      same float operations as the torch encoder and decoder).

    Sub-bit EDEN (its mask precedes the rotation), QSGD + Elias-ω, Count-Sketch and the other compressors
    go the original way, as does Hadamard+SQ, Kashin+SQ and QSGD on a device or dtype the compiled kernels
    do not take. The shared stages are dropped after the last compressor that uses them (compressors are
    taken rotation-based first, then Kashin+SQ, then QSGD, then the rest; the results keep the given order).
    """
    compressors = _check_compressors(compressors)
    x = _eden_theory.check_vectors(x)
    seed = check_seed("seed", seed)
    of = check_choice("of", of, ("rows", "mean"))
    domain = check_choice("domain", domain, ("rotated", "original"))
    if of == "mean" and x.dim() != 2:
        raise ValueError(f"x must be (n_clients, d) for of='mean', got shape {tuple(x.shape)}")
    # the temporaries of every budget (codes, centroids, decoded rows) reuse one buffer each: a fresh
    # array of 10 × 2^24 floats costs ~160,000 page faults (Figure 8 at the paper's d)
    big = 2 * math.prod(x.shape[:-1]) * _h.next_power_of_two(x.shape[-1]) * x.element_size()
    with skip_nested(), _kernels.scratch_limit(big):
        k = len(compressors)
        errs: list = [None] * k
        bits: list = [None] * k
        xmean = x.double().mean(0) if of == "mean" else None  # (in float64, as eden_theory.nmse)
        sh = _Shared(x, seed) if domain == "rotated" else None
        order = sorted(range(k), key=lambda i: _GROUPS.index(compressors[i]._shared_group)
                       if compressors[i]._shared_group in _GROUPS else len(_GROUPS))
        for pos, i in enumerate(order):
            c = compressors[i]
            got = c._shared_path(sh, of == "rows") if sh is not None else None
            if got is None:  # the definition
                if of == "rows":
                    m = c.compress(x, seed)
                    errs[i], bits[i] = ((x.double() - c.decompress(m).double()) ** 2).sum(-1), m.nbits
                else:
                    est, nb = c.mean(x, seed)
                    errs[i], bits[i] = ((est.double() - xmean) ** 2).sum(), torch.tensor(nb)
            else:
                err, xh, nb = got
                if of == "rows":
                    errs[i], bits[i] = (err if err is not None else sh.dist(xh, x)), nb
                else:
                    errs[i], bits[i] = sh.mean_dist(xh, xmean), nb.sum()
            if sh is not None and (pos + 1 == k or compressors[order[pos + 1]]._shared_group != c._shared_group):
                sh.release(c._shared_group)
        return (torch.stack([e.detach().cpu().to(torch.float64) for e in errs]),
                torch.stack([torch.as_tensor(b).cpu().to(torch.long) for b in bits]))
