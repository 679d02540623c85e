"""The interface every compressor of :mod:`qlib.compressors` implements: :class:`Message`, the
:class:`Compressor` base class with its argument and message checks, and the helpers the codecs share
(the bit size of fixed-length messages, the gate of the compiled kernels)."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import torch

from .. import _kernels
from .. import eden as _eden
from .. import eden_theory as _eden_theory
from ..validation import check_int, check_int_sequence, check_seed, nested, skip_nested

__all__ = ["FLOAT_BITS", "Message", "Compressor", "check_int_bits", "check_rows", "fixed_bits", "compiled_applies",
           "compressors_kernel"]

_COMPILED_DTYPES = (torch.float32, torch.float64)


def compiled_applies(x: torch.Tensor) -> bool:
    """Whether the codecs' compiled kernels take ``x``: a CPU float32/float64 tensor that needs no gradient."""
    return x.dtype in _COMPILED_DTYPES and x.device.type == "cpu" and not (x.requires_grad and torch.is_grad_enabled())


def compressors_kernel(x: torch.Tensor) -> ModuleType | None:
    """The compiled kernels of the codecs' encoders (:mod:`qlib._kernels.compressors`) where they take ``x``
    (:func:`compiled_applies`, numba importable), else None (the torch path, the same results)."""
    return _kernels.load("compressors") if compiled_applies(x) else None


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


def check_int_bits(bits) -> int:
    """``bits``, an integer budget in [1, MAX_BITS] (the fixed-length codecs' bits per coordinate)."""
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
        """A :class:`Message` this compressor can decode (a decoder trusts no object): its
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
        xs, seed = check_rows(xs), check_seed("seed", seed)
        with skip_nested():
            m = self.compress(xs, seed)
            return self.decompress(m).mean(0), m.total_bits


    def __repr__(self):
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in vars(self).items())})"


def check_rows(xs) -> torch.Tensor:
    """``xs``, the clients' vectors of a mean: finite, ``(n_clients, d)``."""
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


def fixed_bits(shape, value) -> torch.Tensor:
    """Every message of a batch ``shape`` the same size, ``value`` bits (a long tensor)."""
    return torch.full(tuple(shape), int(value), dtype=torch.long)
