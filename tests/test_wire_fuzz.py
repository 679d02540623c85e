"""qlib.wire under hostile bytes (issue 30 §4): truncations, bit flips, and lies with a recomputed, valid CRC.

The CRC-32 is an integrity check, not authentication: a buggy or hostile sender can make one for any bytes.
So every decoder must bound each size by the message's own length and the expected shape *before* it
allocates, check the finiteness of its float fields and the range of its codes, and reject anything else
with a ``ValueError`` (a :class:`qlib.wire.WireError`). A lie that describes another valid message (a code
changed in the body) may decode, but only to a finite tensor of the shape the receiver expects.

Every method is fuzzed with a bounded, seeded set of cases (the counts are printed with ``-s``):

* truncation at every length, and single-bit flips (CRC left as is): all rejected;
* lies with a recomputed CRC: every header field and every size field of the body set to edge values
  (0, 1, ±1, doubled, 2^31, the type's maximum), float fields set to NaN/±inf/−1/huge, bytes of the body
  replaced at random, the message cut at random lengths; decoded with the receiver's expectations
  (shape / ``d``, ``bits``, ``seed``, ``n_rotations``) → a ``ValueError`` or a finite tensor of the
  expected shape; decoded without them → a ``ValueError`` or a finite tensor of the shape the header
  itself declares.

While the lies decode the address space is capped at what the process uses plus 1 GiB, so an allocation
sized by a lying header shows as a ``MemoryError`` (a failure) instead of swapping.
"""

from __future__ import annotations

import math
import re
import resource
import struct
import time

import numpy as np
import pytest
import torch

from qlib import compressors as C
from qlib import eden, wire

SEED = 11
_METHODS = {
    "EDEN 0.5": lambda: C.EDEN(0.5), "EDEN 2": lambda: C.EDEN(2), "EDEN 2.5": lambda: C.EDEN(2.5),
    "EDEN 3 k=2": lambda: C.EDEN(3, n_rotations=2),
    "Hadamard+SQ": lambda: C.HadamardSQ(3), "Kashin+SQ": lambda: C.KashinSQ(2), "QSGD": lambda: C.QSGD(2),
    "QSGD s=5": lambda: C.QSGD(levels=5), "DRIVE": lambda: C.DRIVE(), "TernGrad": lambda: C.TernGrad(),
    "Count-Sketch": lambda: C.CountSketch(2.0, rows=2), "Float32": lambda: C.Float32(),
}
COUNTS: dict[str, dict[str, int]] = {}


def _fix_crc(data: bytes | bytearray, header: struct.Struct) -> bytes:
    """The message with its CRC recomputed as qlib.wire computes it: CRC-32 of the header without its own
    last field, then of the body, stored as the header's last field (little-endian u32)."""
    b = bytearray(data)
    if len(b) < header.size:
        return bytes(b)
    crc = wire._crc32(bytes(b[header.size :]), wire._crc32(bytes(b[: header.size - 4])))
    b[header.size - 4 : header.size] = struct.pack("<I", crc)
    return bytes(b)


def _x(shape):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(sum(shape)), dtype=torch.float64).exp() - 1


def _encode(comp, x):
    if isinstance(comp, C.EDEN):
        return wire.to_bytes(comp.compress(x, SEED).data["payload"]), wire.HEADER
    return wire.message_to_bytes(comp.compress(x, SEED), comp), wire._MSG


def _decode(comp, raw, shape, expect: bool):
    """Decode ``raw``; with ``expect`` the receiver states what it expects (for EDEN ``d``, ``bits``, ``seed``,
    ``n_rotations``; for the others the shape and the seed). Returns (tensor, the shape it must have)."""
    if isinstance(comp, C.EDEN):
        kw = dict(d=shape[-1], bits=comp.bits, seed=SEED, n_rotations=comp.n_rotations) if expect else {}
        pl = wire.from_bytes(raw, **kw)
        y = eden.decompress(pl)
        rows = math.prod(shape[:-1])
        return y, (rows, shape[-1]) if expect else (*pl.batch_shape, pl.d)
    kw = dict(shape=shape, seed=SEED) if expect else {}
    m = wire.message_from_bytes(raw, comp, **kw)
    return comp.decompress(m), shape if expect else m.shape


def _sizes(raw: bytes, header: struct.Struct):
    """(offset, struct format) of every integer or float field of the message that a lie can change."""
    out = []
    off = 0
    for code in re.findall(r"\d*[a-zA-Z]", header.format.lstrip("<")):
        n = int(code[:-1]) if code[:-1] else 1
        size = struct.calcsize("<" + code)
        if code[-1] not in "s" and n == 1:
            out.append((off, "<" + code))
        off += size
    out = out[:-1]  # the CRC itself: changing it is a bit flip, tested separately
    if header is wire.HEADER:
        return out
    # the body of the other compressors: cid u8, shape u32 × ndim, then per field nd u8, dims u32 × nd, nbytes u32
    ndim = raw[header.size - 5]
    off = header.size
    out.append((off, "<B"))
    off += 1
    for _ in range(ndim):
        out.append((off, "<I"))
        off += 4
    while off < len(raw):
        nd = raw[off]
        out.append((off, "<B"))
        off += 1
        for _ in range(nd):
            out.append((off, "<I"))
            off += 4
        (nbytes,) = struct.unpack_from("<I", raw, off)
        out.append((off, "<I"))
        off += 4 + nbytes
    return out


def _float_fields(comp, raw: bytes, header: struct.Struct):
    """(offset, format) of the first value of every float field (the scale of each EDEN row)."""
    if header is wire.HEADER:
        rows = header.unpack_from(raw)[10]  # every row has the same size (the coins are the seed's, not the row's)
        return [(header.size + r * ((len(raw) - header.size) // rows), "<d") for r in range(min(rows, 2))]
    out, off = [], header.size + 1 + 4 * raw[header.size - 5]
    for _, width in wire._fields(comp):
        nd = raw[off]
        off += 1 + 4 * nd
        (nbytes,) = struct.unpack_from("<I", raw, off)
        off += 4
        if isinstance(width, str):
            out.append((off, {"<f4": "<f", "<f8": "<d"}[width]))
        off += nbytes
    return out


def _edge_values(fmt: str, v):
    if fmt == "<d":
        return [math.nan, math.inf, -math.inf, -1.0, 0.0, v + 0.5, v - 0.5, 8.0, 9.0, 1e-300, 1e300]
    if fmt == "<f":
        return [math.nan, math.inf, -math.inf, -1.0, 3e38]
    top = {"<B": 255, "<I": 2**32 - 1, "<Q": 2**64 - 1}[fmt]
    vals = {0, 1, v - 1, v + 1, 2 * v, v + 2, 2**31, 2**63, top}
    return sorted(u for u in vals if 0 <= u <= top and u != v)


def _lies(comp, raw: bytes, header: struct.Struct, rng: np.random.Generator):
    """Mutations of ``raw`` with a valid CRC: (kind, bytes)."""
    for off, fmt in _sizes(raw, header):
        (v,) = struct.unpack_from(fmt, raw, off)
        for u in _edge_values(fmt, v):
            b = bytearray(raw)
            struct.pack_into(fmt, b, off, u)
            yield "header/size field", _fix_crc(b, header)
    for off, fmt in _float_fields(comp, raw, header):
        for u in _edge_values(fmt, 1.0):
            b = bytearray(raw)
            struct.pack_into(fmt, b, off, u)
            yield "float field", _fix_crc(b, header)
    for _ in range(40):  # random bytes of the body replaced
        b = bytearray(raw)
        for pos in rng.integers(header.size, len(raw), size=int(rng.integers(1, 4))):
            b[pos] = int(rng.integers(0, 256))
        yield "body bytes", _fix_crc(b, header)
    for n in rng.integers(header.size, len(raw), size=12):  # cut, the CRC made to fit
        yield "cut", _fix_crc(raw[:n], header)
    yield "extended", _fix_crc(raw + b"\0\0\0\0", header)


@pytest.fixture(scope="module", autouse=True)
def _print_counts():
    yield
    if COUNTS:
        tot = {k: sum(c.get(k, 0) for c in COUNTS.values()) for k in ("truncation", "bit flip", "lie", "lie rejected")}
        print(f"\nwire fuzz: {len(COUNTS)} method cases; " + ", ".join(f"{k} {v}" for k, v in tot.items()))


def _cap_address_space(extra=2**30):
    """Cap the soft address-space limit at what the process maps now plus ``extra``; returns the old limits."""
    old = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as fh:
        vm = int(fh.read().split()[0]) * resource.getpagesize()
    cap = vm + extra
    if old[1] != resource.RLIM_INFINITY:
        cap = min(cap, old[1])
    resource.setrlimit(resource.RLIMIT_AS, (cap, old[1]))
    return old


@pytest.mark.parametrize("shape", [(2, 20), (33,)], ids=["2x20", "33"])
@pytest.mark.parametrize("method", list(_METHODS))
def test_hostile_bytes_are_rejected_or_decode_to_the_expected_shape(method, shape):
    comp = _METHODS[method]()
    x = _x(shape)
    raw, header = _encode(comp, x)
    y, want = _decode(comp, raw, shape, True)  # the honest message decodes
    assert tuple(y.shape) == tuple(want) and bool(torch.isfinite(y).all())
    rng = np.random.default_rng(len(raw))
    counts = COUNTS.setdefault(f"{method} {shape}", {})
    t0 = time.perf_counter()
    # truncations and single-bit flips without a valid CRC: all rejected (CRC-32 catches every 1-bit error)
    for n in range(len(raw)):
        with pytest.raises(ValueError):
            _decode(comp, raw[:n], shape, False)
        counts["truncation"] = counts.get("truncation", 0) + 1
    for pos in rng.choice(8 * len(raw), size=min(8 * len(raw), 200), replace=False):
        b = bytearray(raw)
        b[pos // 8] ^= 1 << (pos % 8)
        with pytest.raises(ValueError):
            _decode(comp, bytes(b), shape, False)
        counts["bit flip"] = counts.get("bit flip", 0) + 1
    # lies with a valid CRC
    if hasattr(resource, "RLIMIT_AS"):
        old = _cap_address_space()
    try:
        for kind, bad in _lies(comp, raw, header, rng):
            for expect in (True, False):
                counts["lie"] = counts.get("lie", 0) + 1
                try:
                    y, want = _decode(comp, bad, shape, expect)
                except ValueError:
                    counts["lie rejected"] = counts.get("lie rejected", 0) + 1
                    continue
                except Exception as exc:  # noqa: BLE001 - the point of the test: nothing else escapes
                    pytest.fail(f"{method}: a {kind} lie (expect={expect}) raised {type(exc).__name__}: {exc}")
                assert tuple(y.shape) == tuple(want), f"{method}: a {kind} lie (expect={expect}) decoded shape {tuple(y.shape)}"
                assert bool(torch.isfinite(y).all()), f"{method}: a {kind} lie (expect={expect}) decoded a non-finite value"
    finally:
        if hasattr(resource, "RLIMIT_AS"):
            resource.setrlimit(resource.RLIMIT_AS, old)
    assert time.perf_counter() - t0 < 10


def test_the_issues_examples():
    """The cases issue 30 names: a short QSGD message whose field asks for gigabytes, a shape lie of one
    coordinate (2, 21) for (2, 20), NaN fields, and EDEN's sub-bit header d ± 1; each with a valid CRC."""
    comp = C.QSGD(2)
    raw = wire.message_to_bytes(comp.compress(_x((2, 20)), SEED), comp)
    off = wire._MSG.size + 1 + 4 * 2  # the first field: nd, then its dimensions
    b = bytearray(raw)
    struct.pack_into("<I", b, off + 1 + 4, 2**31)  # lev: (2, 2^31) codes
    with pytest.raises(wire.HeaderMismatchError, match="dimensions"):
        wire.message_from_bytes(_fix_crc(b, wire._MSG), comp)
    b = bytearray(raw)
    struct.pack_into("<I", b, wire._MSG.size + 1 + 4, 21)  # the header's shape: (2, 21)
    with pytest.raises(wire.HeaderMismatchError, match="dimensions"):  # its fields still say 20
        wire.message_from_bytes(_fix_crc(b, wire._MSG), comp)
    h = C.HadamardSQ(2)  # 20 and 21 pad to the same 32: only the receiver's shape tells them apart
    raw = wire.message_to_bytes(h.compress(_x((2, 20)), SEED), h)
    b = bytearray(raw)
    struct.pack_into("<I", b, wire._MSG.size + 1 + 4, 21)
    assert h.decompress(wire.message_from_bytes(_fix_crc(b, wire._MSG), h)).shape == (2, 21)  # self-consistent
    with pytest.raises(wire.HeaderMismatchError, match="shape"):
        wire.message_from_bytes(_fix_crc(b, wire._MSG), h, shape=(2, 20))
    for value in (math.nan, math.inf, 1e9):  # lo: not finite, or above hi
        b = bytearray(raw)
        struct.pack_into("<f", b, _float_fields(h, raw, wire._MSG)[0][0], value)
        with pytest.raises(wire.HeaderMismatchError, match="'lo'"):
            wire.message_from_bytes(_fix_crc(b, wire._MSG), h)
    # EDEN at 0.5 bit: d = 100 and d = 99 both keep m = 50 coordinates; the receiver's d tells them apart
    raw = wire.to_bytes(eden.compress(_x((2, 100)), 0.5, SEED))
    b = bytearray(raw)
    struct.pack_into("<I", b, 8, 99)
    with pytest.raises(wire.HeaderMismatchError, match=r"\bd\b"):
        wire.decompress_bytes(_fix_crc(b, wire.HEADER), d=100)
    assert wire.decompress_bytes(_fix_crc(b, wire.HEADER)).shape == (2, 99)  # what the header describes
    for value in (math.nan, 1e300, -1.0):  # the scale: not finite, too large for float32, negative
        b = bytearray(raw)
        struct.pack_into("<d", b, wire.HEADER.size, value)
        with pytest.raises(wire.HeaderMismatchError, match="scale"):
            wire.from_bytes(_fix_crc(b, wire.HEADER))
