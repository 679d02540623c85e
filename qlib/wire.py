"""Wire format of EDEN messages: real bytes, bit-packed codes, a checked header, named decode errors.

:func:`to_bytes` turns a :class:`qlib.eden.Payload` into the bytes a client sends and
:func:`from_bytes` turns them back into a payload, rejecting anything that does not match:

``header (44 bytes, little-endian)``::

    magic "QW" | version u8 | compressor u8 (1 = EDEN) | quantizer u8 (0 = Lloyd–Max)
    | n_rotations u8 | code_bits u8 | reserved u8 | d u32 | m u32 | D u32 | rows u32
    | seed u64 | bits f64 | crc32 u32 (of the header before it and the body)

``body``: per row, the scale ``S`` as float64, then the codes (least significant bit first), each part
padded to a whole byte:

* integer ``b``: the ``D`` cell codes at ``b = code_bits`` bits each;
* fractional ``b > 1`` (§4.1 super-bit, ``lo = ⌊b⌋``): the low ``lo`` bits of all ``D`` codes, then the top
  bit of the codes of the coordinates whose coin chose the ``lo + 1``-bit codebook, in coordinate order
  (``lo·D`` + about ``(b − lo)·D`` bits: ≈ ``b·D``);
* sub-bit ``b < 1``: the 1-bit codes of the ``sent = round(b·d)`` rotated coordinates the message
  carries (:func:`qlib.eden.sent_mask`), in coordinate order.

Decisions: the seed travels in the header (8 bytes) so a receiver can check it derives the same
rotation; which coordinates use the larger codebook (the coins) and which rotated coordinates a sub-bit
message carries come from the shared seed and are the same for every row
(:func:`qlib.eden_theory.message_sizes`): the receiver regenerates them, nothing of them is sent, so a
message is about ``b·d`` bits plus the 44-byte header and 8 bytes of scale per row (the paper's
"``b`` bits per coordinate (in expectation)", §4.1); the entropy-coded quantizer is not supported.
Format version 2 (version 1 packed a fractional budget's codes at ``⌈b⌉`` bits and a sub-bit budget's
at 1 bit per padded coordinate).

The other fixed-length compressors of :mod:`qlib.compressors` (Hadamard+SQ, Kashin+SQ, QSGD,
DRIVE, TernGrad, Count-Sketch, Float32) go through :func:`message_to_bytes` /
:func:`message_from_bytes`: the same header idea (magic, version, compressor, seed, shape, CRC-32)
followed by each field of the message, integer codes bit-packed at their width (SQ levels at ``b``
bits, QSGD levels at ``⌈log2(s+1)⌉`` bits and signs at 1 bit, TernGrad's ternary values at 2 bits,
DRIVE's signs at 1 bit), side values as float32 (float64 for DRIVE's scale).

Errors (all :class:`WireError`, a ``ValueError``): :class:`TruncatedPayloadError` (too short/long),
:class:`ChecksumError` (corrupt bytes, bad magic), :class:`UnsupportedFormatError` (unknown
version/compressor/quantizer), :class:`HeaderMismatchError` (the header contradicts itself or the
receiver's expected ``d``, ``bits``, ``seed``, ``n_rotations`` or ``shape``).

The CRC-32 catches accidents (every truncation and every single-bit flip), not lies: a buggy or
hostile sender can compute one for any bytes. So the decoders trust no size they read:
every field's dimensions must be what the header's shape gives the compressor, every size is
checked against the message's own length before anything of that size is allocated, float fields
must be finite, of their sign and small enough that decoding in the receiver's dtype cannot
overflow, and codes must be in range. A header that describes another *valid* message (a ``d`` of
the same padded length) cannot be told from the sender's by the bytes alone: a receiver that knows
what it expects passes ``d`` / ``shape`` (and ``bits``, ``seed``, ``n_rotations``), which binds it.
``tests/test_wire_fuzz.py`` fuzzes every method with truncations, bit flips and lies with a valid CRC.
"""

from __future__ import annotations

import math
import struct
import sys
import zlib
from functools import lru_cache

try:  # zlib-ng's CRC-32: the same checksum as zlib's (the format is unchanged), ~4x faster (SIMD)
    from zlib_ng.zlib_ng import crc32 as _crc32
except ImportError:  # not installed: zlib's
    _crc32 = zlib.crc32

import numpy as np
import torch

from . import _kernels
from . import eden as _eden
from . import eden_quantizer as _eden_quantizer
from . import eden_theory as _eden_theory
from . import hadamard as _h
from .compressors import Compressor, Message
from .validation import (
    check_array,
    check_float,
    check_int,
    check_int_sequence,
    check_seed,
    check_str,
    nested,
    skip_nested,
)

__all__ = [
    "FORMAT_VERSION",
    "HEADER",
    "WireError",
    "TruncatedPayloadError",
    "ChecksumError",
    "UnsupportedFormatError",
    "HeaderMismatchError",
    "pack_bits",
    "unpack_bits",
    "to_bytes",
    "from_bytes",
    "decompress_bytes",
    "message_to_bytes",
    "message_from_bytes",
]

FORMAT_VERSION = 2
MAGIC = b"QW"
HEADER = struct.Struct("<2sBBBBBBIIIIQdI")
_EDEN_ID = 1


class WireError(ValueError):
    """A payload that cannot be decoded."""


class TruncatedPayloadError(WireError):
    """The byte string is shorter or longer than its header says."""


class ChecksumError(WireError):
    """The bytes were altered (checksum or magic does not match)."""


class UnsupportedFormatError(WireError):
    """Unknown format version, compressor or quantizer."""


class HeaderMismatchError(WireError):
    """The header contradicts itself or what the receiver expects."""


def pack_bits(codes, bits: int, *, scratch: str | None = None) -> np.ndarray:
    """Pack non-negative integer codes ``< 2^bits`` of shape (rows, n) into a (rows, ⌈n·bits/8⌉)
    uint8 array, least significant bit first; every row starts on a byte. 1, 2, 4 and 8 bits take
    a fast path (whole codes per byte); other widths go through bit planes. ``scratch``: the 2- and
    4-bit result may be the calling thread's scratch array of that name (``qlib._kernels.scratch``), for
    a caller that copies it before its next call under that name. Called by a checked caller
    (:func:`qlib.validation.skip_nested`: the encoders, whose codes fit by construction), the codes
    (a tensor or an array) are not checked."""
    bits = check_int("bits", bits, low=1, high=8)
    if scratch is not None:
        scratch = check_str("scratch", scratch)
    if not nested():
        codes = check_array("codes", codes, ndim=2, dtype="int", low=0)
        if codes.max() >= 1 << bits:
            raise ValueError(f"codes must be < 2^bits = {1 << bits}, got max {codes.max()}")
    c = codes.cpu().numpy() if isinstance(codes, torch.Tensor) else np.asarray(codes)
    c = c.astype(np.uint8, copy=False)
    rows, n = c.shape
    if bits == 8:
        return np.ascontiguousarray(c)
    if bits == 1:
        return np.packbits(c, axis=-1, bitorder="little")
    if bits in (2, 4):  # the codes of one byte read as one little-endian word, moved into place by shifts
        per = 8 // bits
        g = c if n % per == 0 and c.flags.c_contiguous else np.ascontiguousarray(np.pad(c, ((0, 0), (0, (-n) % per))))
        w = g.view("<u4" if bits == 2 else "<u2")
        k = _kernels.load("wire")  # None without numba
        if k is not None and sys.byteorder == "little":  # one compiled pass (NumPy below: four)
            out = np.empty(w.shape, dtype=np.uint8) if scratch is None else _kernels.scratch(scratch, w.shape, np.uint8)
            (k.pack2 if bits == 2 else k.pack4)(w.reshape(-1), out.reshape(-1))
            return out
        out = w & w.dtype.type((1 << bits) - 1)
        t = np.empty_like(w)
        for j in range(1, per):
            np.right_shift(w, w.dtype.type(j * (8 - bits)), out=t)
            t &= w.dtype.type(((1 << bits) - 1) << (j * bits))
            out |= t
        return out.astype(np.uint8)
    # 3, 5, 6, 7 bits: 8 codes make ``bits`` whole bytes, the little-endian bytes of
    # sum_j code_j << (bits * j) (the same bit stream as packing code by code, LSB first)
    g = np.pad(c, ((0, 0), (0, (-n) % 8))).reshape(rows, -1, 8)
    word = np.zeros(g.shape[:2], dtype=np.uint64)
    for j in range(8):
        word |= g[..., j].astype(np.uint64) << np.uint64(bits * j)
    out = word.astype("<u8").view(np.uint8).reshape(rows, -1, 8)[..., :bits].reshape(rows, -1)
    return np.ascontiguousarray(out[:, : (n * bits + 7) // 8])


def unpack_bits(packed, bits: int, n: int) -> np.ndarray:
    """Inverse of :func:`pack_bits`: (rows, bytes) uint8 → (rows, n) uint8 codes (``n >= 1`` codes per
    row, at most what the row's bytes hold). Called by a checked caller (the decoders), ``packed`` (a
    uint8 array of the right size) is not checked."""
    bits = check_int("bits", bits, low=1, high=8)
    n = check_int("n", n, low=1)
    if not nested():
        packed = check_array("packed", packed, ndim=2, dtype="int", low=0, high=255).astype(np.uint8)
        if n * bits > 8 * packed.shape[1]:
            raise ValueError(f"n={n} codes of {bits} bits need {(n * bits + 7) // 8} bytes per row; "
                             f"packed has {packed.shape[1]}")
    p = packed.cpu().numpy() if isinstance(packed, torch.Tensor) else np.asarray(packed, dtype=np.uint8)
    rows = p.shape[0]
    if bits == 8:
        return p[:, :n]
    if bits == 1:
        return np.unpackbits(p, axis=-1, count=n, bitorder="little")
    if bits in (2, 4):  # each byte spread over a little-endian word, one code per byte (by shifts)
        per = 8 // bits
        k = _kernels.load("wire")  # None without numba
        if k is not None and sys.byteorder == "little":  # one compiled pass (NumPy below: four)
            pc = np.ascontiguousarray(p, dtype=np.uint8)
            w = np.empty(pc.shape, dtype=np.uint32 if bits == 2 else np.uint16)
            (k.unpack2 if bits == 2 else k.unpack4)(pc.reshape(-1), w.reshape(-1))
            return w.view(np.uint8).reshape(rows, -1)[:, :n]
        w = p.astype("<u4" if bits == 2 else "<u2")
        t = np.empty_like(w)
        acc = w.copy()
        for j in range(1, per):
            np.left_shift(w, w.dtype.type(j * (8 - bits)), out=t)
            acc |= t
        acc &= w.dtype.type(int.from_bytes(bytes([(1 << bits) - 1] * per), "little"))
        return acc.view(np.uint8).reshape(rows, -1)[:, :n]
    groups = -(-n // 8)  # 3, 5, 6, 7 bits: the inverse of pack_bits' 8 codes per ``bits`` bytes
    nb = min(p.shape[1], groups * bits)
    flat = np.zeros((rows, groups * bits), dtype=np.uint8)
    flat[:, :nb] = p[:, :nb]
    b8 = np.zeros((rows, groups, 8), dtype=np.uint8)
    b8[..., :bits] = flat.reshape(rows, groups, bits)
    word = b8.view("<u8").reshape(rows, groups)
    out = np.empty((rows, groups, 8), dtype=np.uint8)
    mask = np.uint64((1 << bits) - 1)
    for j in range(8):
        out[..., j] = (word >> np.uint64(bits * j)) & mask
    return out.reshape(rows, -1)[:, :n]


def _code_bits(bits: float) -> int:
    return 1 if bits < 1 else int(math.ceil(bits))


def _selection(seed: int, bits: float, d: int, D: int):
    """What the receiver regenerates from the seed to read a row of codes: ``("all", None)`` (integer
    budget), ``("coins", mask)`` (fractional: the coordinates of the larger codebook) or ``("sent", mask)``
    (sub-bit: the coordinates whose codes are sent); the masks are ``D`` booleans, the same for every
    row. The caller has bounded ``D`` by the message's length."""
    if bits < 1:
        _, _, sent = _eden_theory.message_sizes(d, bits)
        return ("sent", None) if sent == D else ("sent", _eden.sent_mask(seed, D, sent).numpy())
    if bits == math.floor(bits):
        return "all", None
    return "coins", _eden_quantizer.coin_mask(seed, D, bits).numpy()


def _row_parts(kind: str, sel, D: int, bits: float) -> list[tuple[int, int]]:
    """(codes, bits per code) of each packed part of a row: what its bytes hold."""
    if kind == "all":
        return [(D, _code_bits(bits))]
    if kind == "coins":
        return [(D, int(math.floor(bits))), (int(sel.sum()), 1)]
    return [(D if sel is None else int(sel.sum()), 1)]


def _part_bytes(parts) -> int:
    return sum((n * w + 7) // 8 for n, w in parts)


def to_bytes(payload: _eden.Payload) -> bytes:
    """The bytes of an EDEN payload (a vector's message, or a batch's rows one after another)."""
    payload = _eden.check_payload(payload)  # every field (a NaN scale would decode to NaNs)
    if payload.quantizer != "lm":
        raise UnsupportedFormatError("the wire format packs Lloyd–Max codes only (quantizer='lm')")
    cb = _code_bits(payload.bits)
    idx = payload.indices.detach().reshape(-1, payload.D)
    rows = idx.shape[0]
    if not nested() and (cb < 8 or idx.dtype != torch.uint8):  # a code wider than its width would be cut
        lo_c, hi_c = int(idx.min()), int(idx.max())
        if lo_c < 0 or hi_c >= 1 << cb:
            raise ValueError(f"payload.indices must hold codes in [0, 2^{cb}) at bits={payload.bits}, got "
                             f"{lo_c if lo_c < 0 else hi_c}")
    kind, sel = _selection(payload.seed, payload.bits, payload.d, payload.D)
    with skip_nested():  # the codes fit their width (checked above, or by construction in compress)
        if kind == "all":
            packed = pack_bits(idx, cb, scratch="wire.packed")  # copied into the bytes below
        elif kind == "sent":
            packed = pack_bits(idx if sel is None else idx[:, torch.from_numpy(sel)], 1)
        else:  # the low bits of every code, then the top bit of the codes of the larger codebook
            lo = int(math.floor(payload.bits))
            c = idx.cpu().numpy()
            low = pack_bits(c & np.uint8((1 << lo) - 1), lo)
            top = np.packbits(c[:, sel] >> np.uint8(lo), axis=-1, bitorder="little")
            packed = np.concatenate([low, top], axis=1) if top.size else low
    # (detached: a payload built from a tensor that requires grad has a scale that does too)
    scale = payload.scale.detach().reshape(rows).to(torch.float64).cpu().numpy()
    if rows == 1:  # no interleaving: the parts are joined once (each extra copy of a fresh buffer costs page faults)
        parts = [scale.astype("<f8").tobytes(), packed]
    else:
        parts = [np.concatenate([scale.astype("<f8").view(np.uint8).reshape(rows, 8), packed], axis=1)]
    head = HEADER.pack(MAGIC, FORMAT_VERSION, _EDEN_ID, 0, payload.n_rotations, cb, 0, payload.d, payload.m,
                       payload.D, rows, payload.seed, float(payload.bits), 0)[:-4]
    crc = _crc32(head)
    for part in parts:
        crc = _crc32(part, crc)
    return b"".join([head, struct.pack("<I", crc), *parts])


def _expect(name, got, want):
    if want is not None and got != want:
        raise HeaderMismatchError(f"payload header has {name}={got!r} but the receiver expects {name}={want!r}")


def _open(data, header: struct.Struct):
    """(bytes, header fields) after the checks every format shares: length, magic, checksum (the
    header's last field, over the rest of the header and the body) and version (its second)."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"data must be bytes, got {type(data).__name__}")
    if not isinstance(data, bytes):
        data = bytes(data)
    if len(data) < header.size:
        raise TruncatedPayloadError(f"payload has {len(data)} bytes, shorter than the {header.size}-byte header")
    fields = header.unpack_from(data)
    if fields[0] != MAGIC:
        raise ChecksumError(f"payload does not start with the magic {MAGIC!r} (got {fields[0]!r})")
    view = memoryview(data)  # the checksum over the header (its own field left out) and the body, no copy
    if _crc32(view[header.size :], _crc32(view[: header.size - 4])) != fields[-1]:
        raise ChecksumError("payload checksum does not match: the bytes were altered or truncated")
    if fields[1] != FORMAT_VERSION:
        raise UnsupportedFormatError(f"payload format version {fields[1]}, this reader knows {FORMAT_VERSION}")
    return data, fields


def from_bytes(data: bytes, *, d: int | None = None, bits: float | None = None, seed: int | None = None,
               n_rotations: int | None = None, device="cpu", dtype=torch.float32) -> _eden.Payload:
    """Parse and check the bytes of :func:`to_bytes`; ``d``, ``bits``, ``seed``, ``n_rotations``
    are what the receiver expects (a mismatch raises :class:`HeaderMismatchError` naming the field);
    ``dtype`` is the precision the receiver decodes in (the scale travels as float64).

    ``None`` (the default of each expected field) means "not checked": the value is read from the
    message header. In particular ``seed=None`` decodes with the rotation seed the header carries;
    pass the shared seed to have the receiver check that it rebuilds the sender's rotation. A header
    that is consistent with itself but lies (``d ± 1`` at a sub-bit budget keeps ``m`` and ``D``) is caught
    only by ``d``. Every size is bounded by the message's length; the scale must be finite, ``>= 0``
    and small enough to decode in ``dtype`` (``S·max|c|·D`` below its largest value)."""
    d = check_int("d", d, low=1, allow_none=True)
    bits = check_float("bits", bits, low=0.0, high=float(_eden_theory.MAX_BITS), low_open=True, allow_none=True)
    seed = check_seed("seed", seed, allow_none=True)
    n_rotations = check_int("n_rotations", n_rotations, low=1, high=8, allow_none=True)
    dtype = _check_dtype(dtype)
    data, (_, _, comp, quant, n_rot, cb, _, d_, m, D, rows, seed_, bits_, _) = _open(data, HEADER)
    if comp != _EDEN_ID or quant != 0:
        raise UnsupportedFormatError(f"payload compressor id {comp} / quantizer id {quant} is not EDEN Lloyd–Max")
    if not (math.isfinite(bits_) and 0 < bits_ <= _eden_theory.MAX_BITS) or cb != _code_bits(bits_):
        raise HeaderMismatchError(f"payload header bits={bits_!r} with {cb} code bits is inconsistent")
    want_m = _eden_theory.message_sizes(d_, bits_)[0] if d_ >= 1 else -1
    if d_ < 1 or m != want_m or D != _h.next_power_of_two(m) or not 1 <= n_rot <= 8:
        raise HeaderMismatchError(f"payload header d={d_}, m={m}, D={D}, n_rotations={n_rot} is inconsistent")
    if seed_ >= 2**63:
        raise HeaderMismatchError(f"payload header seed={seed_} is not a seed (an integer in [0, 2^63))")
    _expect("d", d_, d)
    _expect("bits", bits_, None if bits is None else float(bits))
    _expect("seed", seed_, seed)
    _expect("n_rotations", n_rot, n_rotations)
    # the shortest row the header allows, checked before anything of size D is drawn: the length bounds every size below
    least_codes = D * int(math.floor(bits_)) if bits_ >= 1 else _eden_theory.message_sizes(d_, bits_)[2]
    least = 8 + (least_codes + 7) // 8  # (Python integers: no overflow)
    if rows < 1 or len(data) < HEADER.size + rows * least:
        raise TruncatedPayloadError(f"payload has {len(data)} bytes, fewer than the header's {rows} rows of at "
                                    f"least {least} bytes need")
    kind, sel = _selection(int(seed_), float(bits_), int(d_), int(D))
    parts = _row_parts(kind, sel, D, bits_)
    row_bytes = 8 + _part_bytes(parts)
    if len(data) != HEADER.size + rows * row_bytes:
        raise TruncatedPayloadError(f"payload has {len(data)} bytes, header says {HEADER.size + rows * row_bytes} "
                                    f"({rows} rows of {row_bytes} bytes)")
    body = np.frombuffer(data, dtype=np.uint8, offset=HEADER.size).reshape(rows, row_bytes)
    sc = body[:, :8].copy().view("<f8").reshape(rows).astype(np.float64)
    # |x̂_i| <= S·max|c|·sqrt(D), and the unnormalized butterflies reach S·max|c|·D: all within the receiver's dtype
    top = torch.finfo(dtype).max / (_max_centroid(cb) * D)
    if not ((sc >= 0) & (sc <= top)).all():  # (False for NaN)
        raise HeaderMismatchError(f"payload scale {float(sc[~((sc >= 0) & (sc <= top))][0])!r} is negative, not finite "
                                  f"or too large to decode in {dtype} (at most {top:.3g} for D={D})")
    scale = torch.from_numpy(sc)
    with skip_nested():  # the body's size is checked above
        if kind == "all":
            codes = unpack_bits(body[:, 8:], cb, D)
        elif kind == "sent":
            got = unpack_bits(body[:, 8:], 1, parts[0][0])
            codes = got if sel is None else np.zeros((rows, D), dtype=np.uint8)
            if sel is not None:
                codes[:, sel] = got
        else:  # the low bits of every code, then the top bits of the codes of the larger codebook
            lo = parts[0][1]
            nlow = (D * lo + 7) // 8
            codes = np.array(unpack_bits(body[:, 8 : 8 + nlow], lo, D))
            if parts[1][0]:
                codes[:, sel] |= unpack_bits(body[:, 8 + nlow :], 1, parts[1][0]) << np.uint8(lo)
    if not (codes.flags.writeable and codes.flags.c_contiguous):  # a view of the (read-only) bytes
        codes = np.array(codes)
    codes = torch.from_numpy(codes).to(device)
    nbits = torch.full((rows,), sum(n * w for n, w in parts) + _eden.SCALE_BITS, dtype=torch.long)
    return _eden.Payload(codes, scale.to(device=device, dtype=dtype), int(seed_), float(bits_), int(d_), int(m), int(D), "lm",
                         int(n_rot), nbits)


@lru_cache(maxsize=None)
def _max_centroid(cb: int) -> float:
    """The largest |centroid| of the ``cb``-bit Lloyd–Max codebook (the largest EDEN code value)."""
    return float(np.abs(_eden_theory.codebook(cb)[0]).max())


def _check_dtype(dtype) -> torch.dtype:
    if not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
        raise TypeError(f"dtype must be a floating torch.dtype, got {dtype!r}")
    return dtype


def decompress_bytes(data: bytes, *, d=None, bits=None, seed=None, n_rotations=None, device="cpu", dtype=torch.float32):
    """``qlib.eden.decompress(from_bytes(data, ...))`` (:func:`from_bytes`'s keywords): the decoded rows."""
    pl = from_bytes(data, d=d, bits=bits, seed=seed, n_rotations=n_rotations, device=device, dtype=dtype)
    return _eden.decompress(pl)


# ------------------------------------------------------------------------------------------------
# The other compressors of the common interface
# ------------------------------------------------------------------------------------------------
_MSG = struct.Struct("<2sBBQBI")  # magic, version, n fields, seed, ndim, crc32
_IDS = {"Hadamard+SQ": 2, "Kashin+SQ": 3, "QSGD": 4, "DRIVE": 5, "TernGrad": 6, "Count-Sketch": 7, "Float32": 8}


def _fields(comp) -> list[tuple[str, object]]:
    """(field, width) of a compressor's message: an int = packed code bits, a str = float dtype."""
    name = comp.name
    if name in ("Hadamard+SQ", "Kashin+SQ"):
        return [("k", comp.bits), ("lo", "<f4"), ("hi", "<f4")]
    if name == "QSGD":
        return [("lev", max(1, math.ceil(math.log2(comp.levels + 1)))), ("neg", 1), ("norm", "<f4")]
    if name == "DRIVE":
        return [("sign", 1), ("scale", "<f8")]
    if name == "TernGrad":
        return [("t", 2), ("s", "<f4")]
    if name == "Count-Sketch":
        return [("T", "<f4")]
    if name == "Float32":
        return [("x", "<f4")]
    raise UnsupportedFormatError(f"no wire format for compressor {name!r} (variable-length or EDEN: use to_bytes)")


def message_to_bytes(message, compressor) -> bytes:
    """The bytes of a :class:`qlib.compressors.Message` of a fixed-length compressor (not EDEN); the
    message is checked first (:meth:`qlib.compressors.Compressor.check_message`)."""
    if not isinstance(compressor, Compressor):
        raise TypeError(f"compressor must be a qlib.compressors.Compressor, got {type(compressor).__name__}")
    fields = _fields(compressor)
    if not isinstance(message, Message):
        raise TypeError(f"message must be a qlib.compressors.Message, got {type(message).__name__}")
    if message.compressor != compressor.name:
        raise HeaderMismatchError(f"message is from {message.compressor!r}, not {compressor.name!r}")
    message = compressor.check_message(message)  # every field (a NaN or an out-of-range code would be sent)
    head_shape = struct.pack(f"<B{len(message.shape)}I", _IDS[compressor.name], *message.shape)
    parts = []
    for name, width in fields:
        t = message.data[name]
        if name == "t":
            t = t.to(torch.int16) + 1  # {-1, 0, 1} -> {0, 1, 2}
        if isinstance(width, int):
            flat = t.reshape(-1, t.shape[-1]) if t.dim() else t.reshape(1, 1)
            with skip_nested():  # codes of the compressor's own message: they fit its width
                blob = pack_bits(flat.to(torch.int64).clamp_min(0), width).tobytes()
            dims = tuple(t.shape)
        else:
            t = t.detach().cpu()
            blob = (t.float() if t.dtype == torch.bfloat16 else t).numpy().astype(width).tobytes()  # (NumPy: no bfloat16)
            dims = tuple(t.shape)
        parts.append(struct.pack(f"<B{len(dims)}II", len(dims), *dims, len(blob)) + blob)
    body = head_shape + b"".join(parts)
    head = _MSG.pack(MAGIC, FORMAT_VERSION, len(fields), message.seed, len(message.shape), 0)
    crc = _crc32(head[:-4] + body)
    return head[:-4] + struct.pack("<I", crc) + body


_MAX_NDIM = 32  # dimensions of a message's shape (torch allows 64; a batch of vectors needs a few)
_FMAX = {dt: torch.finfo(dt).max for dt in (torch.float16, torch.bfloat16, torch.float32, torch.float64)}


def _field_dims(comp, shape: tuple[int, ...]) -> list[tuple[str, object, tuple[int, ...]]]:
    """(field, width, dims) of the message of ``comp`` for an input of ``shape``: what the header's shape
    makes each field's dimensions, so that a field the header lies about is caught before it is read."""
    batch, d = tuple(shape[:-1]), shape[-1]
    name = comp.name
    if name == "Kashin+SQ":
        per_row = {"k": comp.frame_size(d)}
    elif name in ("Hadamard+SQ", "DRIVE"):
        per_row = {"k": _h.next_power_of_two(d), "sign": _h.next_power_of_two(d)}
    else:  # QSGD, TernGrad, Float32: one code or value per coordinate (Count-Sketch: below)
        per_row = {"lev": d, "neg": d, "t": d, "x": d}
    out = []
    for field, width in _fields(comp):
        if name == "Count-Sketch":
            dims = (*batch, comp.rows, comp.columns(d))
        elif field in per_row:
            dims = (*batch, per_row[field])
        else:  # a side value per row
            dims = batch
        out.append((field, width, dims))
    return out


def _growth(comp, shape) -> int:
    """How much larger than its largest float field a decoded value (or the unnormalized transform's
    intermediate sum) of ``comp`` can be: the rotated transforms sum ``D`` terms, SQ adds ``hi − lo``,
    QSGD multiplies the norm by a level ``<= s`` before dividing by ``s``."""
    if comp.name == "QSGD":
        return comp.levels
    if comp.name in ("Hadamard+SQ", "DRIVE"):
        return 2 * _h.next_power_of_two(shape[-1])
    if comp.name == "Kashin+SQ":
        return 2 * comp.frame_size(shape[-1])
    return 1


def message_from_bytes(data: bytes, compressor, *, seed: int | None = None, shape=None, device="cpu",
                       dtype=torch.float32):
    """Parse and check :func:`message_to_bytes`'s bytes into a Message ``compressor`` decompresses.

    ``seed`` and ``shape`` are what the receiver expects (a mismatch raises :class:`HeaderMismatchError`
    naming the field); ``None``, the default of each, does not check it and takes the message header's.
    ``dtype``: the precision the receiver decodes in, whatever the sender's: the shared random signs
    depend on the seed alone, never on the dtype.

    Nothing the header says is trusted (its CRC is an integrity check, not authentication): every
    field's dimensions must be those the header's shape gives the compressor, every size is checked
    against the message's own length before anything is allocated, the float fields must be finite,
    of their sign (a norm, a scale, ``lo <= hi``) and small enough to decode in ``dtype``, and the codes
    within their range (QSGD's levels ``<= s``, TernGrad's ternary values). A header that describes
    another valid message (another ``d`` of the same padded length, say) is caught only by ``shape``:
    a receiver that knows it should pass it."""
    seed = check_seed("seed", seed, allow_none=True)
    if not isinstance(compressor, Compressor):
        raise TypeError(f"compressor must be a qlib.compressors.Compressor, got {type(compressor).__name__}")
    if shape is not None:
        shape = tuple(check_int_sequence("shape", shape, low=1))
    dtype = _check_dtype(dtype)
    fields = _fields(compressor)
    data, (_, _, nf, seed_, ndim, _) = _open(data, _MSG)
    if seed_ >= 2**63:
        raise HeaderMismatchError(f"payload header seed={seed_} is not a seed (an integer in [0, 2^63))")
    _expect("seed", seed_, seed)
    if not 1 <= ndim <= _MAX_NDIM:
        raise HeaderMismatchError(f"payload header ndim={ndim}: a message's shape has 1 to {_MAX_NDIM} dimensions")
    off = _MSG.size

    def take(fmt):  # the next integers of the body, or a named error where the body ends first
        nonlocal off
        size = struct.calcsize(fmt)
        if off + size > len(data):
            raise TruncatedPayloadError(f"payload ends inside its header ({len(data)} bytes, {off + size} needed)")
        vals = struct.unpack_from(fmt, data, off)
        off += size
        return vals

    cid, *shape_ = take(f"<B{ndim}I")
    if cid != _IDS.get(compressor.name) or nf != len(fields):
        raise HeaderMismatchError(f"payload compressor id {cid} with {nf} fields does not match {compressor.name!r}")
    shape_ = tuple(shape_)
    if min(shape_) < 1:
        raise HeaderMismatchError(f"payload header shape {shape_} has an empty dimension")
    _expect("shape", shape_, shape)
    limit = (_FMAX.get(dtype) or torch.finfo(dtype).max) / _growth(compressor, shape_)
    out, side = {}, {}
    for name, width, dims in _field_dims(compressor, shape_):
        nd, *got, nbytes = take(f"<B{len(dims)}II")  # the dimensions the shape gives: their count, then theirs
        if nd != len(dims) or tuple(got) != dims:
            raise HeaderMismatchError(f"payload field {name!r} does not have the dimensions {dims} of the shape {shape_}")
        n = dims[-1] if dims else 1
        rows = math.prod(dims[:-1]) if dims else 1
        want = rows * ((n * width + 7) // 8) if isinstance(width, int) else math.prod(dims) * int(width[-1])
        if nbytes != want:
            raise HeaderMismatchError(f"payload field {name!r} says {nbytes} bytes; its dimensions {dims} take {want}")
        if off + nbytes > len(data):  # before anything of the field's size is allocated
            raise TruncatedPayloadError(f"payload ends inside field {name!r} ({len(data)} bytes, {off + nbytes} needed)")
        raw = np.frombuffer(data, np.uint8, count=nbytes, offset=off)
        off += nbytes
        if isinstance(width, int):
            with skip_nested():  # the field's size is checked above
                arr = unpack_bits(raw.reshape(rows, -1), width, n).reshape(dims)
            top = compressor.levels if name == "lev" else 2 if name == "t" else None
            if top is not None and int(arr.max()) > top:
                raise HeaderMismatchError(f"payload field {name!r} has a code {int(arr.max())} above its largest, {top}")
            if name in ("neg", "sign"):
                t = torch.from_numpy(arr.astype(np.bool_))
            elif name == "t":
                t = torch.from_numpy(arr.astype(np.int8) - np.int8(1))
            else:
                t = torch.from_numpy(arr.astype(np.int32 if name == "k" else np.int64))
        else:
            a = raw.view(width).astype(np.float64).reshape(dims)
            low = 0.0 if name in ("norm", "scale", "s") else -limit
            ok = all(low <= v <= limit for v in a.flat) if a.size <= 16 else bool(((a >= low) & (a <= limit)).all())
            if not ok:  # (False for NaN)
                raise HeaderMismatchError(f"payload field {name!r} has a value that is not finite, "
                                          + ("negative, " if low == 0 else "") + f"or too large to decode in {dtype}")
            side[name] = a
            t = torch.from_numpy(a).to(dtype)
        out[name] = t.to(device)
    if off != len(data):
        raise TruncatedPayloadError(f"payload has {len(data) - off} bytes after its last field")
    if "lo" in side and not (side["lo"] <= side["hi"]).all():
        raise HeaderMismatchError("payload fields 'lo' > 'hi': the quantization range is empty")
    batch = shape_[:-1]
    return Message(compressor.name, out, torch.full(batch, 8 * len(data), dtype=torch.long), int(seed_), shape_)
