"""How EDEN lays out a vector whose length ``d`` is not a power of two: padding (the paper's scheme) or
slicing (the authors' package), and what each costs in bits (paper 002, {cite:p}`vargaftik2022eden`).

The randomized Hadamard rotation needs a power-of-two length. **Padding** (``layout="pad"``, the default
of :func:`qlib.eden.compress`): the ``d`` coordinates are padded with zeros to ``D = 2^⌈log2 d⌉`` and the
message carries a code for every one of the ``D`` rotated coordinates — the paper's scheme as its code
has it (``PadToPowerOf2``; the paper itself is silent on ``d``). At an integer budget ``b`` that is
``b·D + 64`` bits, ``b·D/d`` per coordinate: up to ``2b`` just above a power of two. **A vector of
d = 2^16 + 1,310 at b = 1 costs 1.96 bits per coordinate padded** (:func:`bits_per_coordinate`); the
receiver drops the padding coordinates, and their share of the error with them, so the vNMSE falls to
about ``(d/D)`` of the b-bit limit: more bits, less error, not the budget asked for.

**Slicing** (``layout="slice"``): the choice of the authors' package ``srrcomp`` 0.1.3
(``Eden(max_padding_overhead=0.1)``): while padding what is left of the vector would add more than
:data:`SLICE_MAX_PADDING` ``· d`` zeros, the largest power of two is cut off its front; what remains is
padded (:func:`piece_lengths`). Each piece is its own EDEN message (its own rotation from its own seed
stream, its own scale and 64 scale bits): :class:`Slices`; as in ``srrcomp``, a piece shorter than
:data:`MIN_PIECE` = 32 is encoded as 32 coordinates (:func:`encoded_lengths`). The same example sends
1.01 bits per coordinate (65,536 + 2,048 codes and two scales). Every piece's estimate is EDEN's, unbiased
as EDEN's is, so the whole is; its error is each piece's b-bit error weighted by the piece's share of
``‖x‖²``, with no padding share dropped. ``srrcomp`` also rotates a piece shorter than 2^10 twice; here
``n_rotations`` is the caller's, for every piece.

A vector whose ``d`` slices into one piece (a power of two, or padding under the limit) is compressed
exactly as with ``layout="pad"``: the same :class:`qlib.eden.Payload`, bit for bit. Piece ``i > 0`` takes
the seed ``SeedSequence([seed, i])`` (:func:`piece_seed`), piece 0 the seed itself.

At a sub-bit budget (``b < 1``, Lloyd–Max) the message carries ``round(b·d)`` codes in either layout
(:func:`qlib.eden_theory.message_sizes`): padding costs no bits there. The entropy-coded quantizer's
size depends on the data, so :func:`bits_per_coordinate` is for Lloyd–Max messages.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

from . import hadamard as _h
from .eden_theory import check_bits, message_sizes
from .validation import check_choice, check_int

__all__ = ["LAYOUTS", "MIN_PIECE", "SLICE_MAX_PADDING", "Slices", "bits_per_coordinate", "piece_lengths"]

LAYOUTS = ("pad", "slice")
#: the most zeros slicing leaves to pad, as a fraction of ``d`` (``srrcomp``'s ``max_padding_overhead``)
SLICE_MAX_PADDING = 0.1
#: the fewest coordinates a piece of a sliced vector is encoded as (``srrcomp``'s: it pads shorter ones to it)
MIN_PIECE = 32
SCALE_BITS = 64  # the scale S travels as one float64 (paper §2.2: "e.g., 64"); qlib.eden.SCALE_BITS


def piece_lengths(d: int, layout: str = "slice") -> tuple[int, ...]:
    """The lengths of the pieces a vector of ``d`` coordinates is compressed in: ``(d,)`` for
    ``layout="pad"``; for ``"slice"``, ``srrcomp``'s rule: while ``next_power_of_two(rest) − rest`` exceeds
    ``SLICE_MAX_PADDING · d``, cut ``2^⌊log2 rest⌋`` off the front; then the rest (padded to a power of two
    when compressed). ``piece_lengths(2**16 + 1310) == (65536, 1310)``, ``piece_lengths(84) == (64, 16, 4)``.
    Where there are several pieces, each is encoded as a vector of at least :data:`MIN_PIECE` coordinates
    (:func:`encoded_lengths`)."""
    d = check_int("d", d, low=1)
    layout = check_choice("layout", layout, LAYOUTS)
    if layout == "pad":
        return (d,)
    out, rest = [], d
    while (_h.next_power_of_two(rest) - rest) / d > SLICE_MAX_PADDING:
        low = 1 << (rest.bit_length() - 1)
        out.append(low)
        rest -= low
    return (*out, rest)


def encoded_lengths(d: int, layout: str = "slice") -> tuple[int, ...]:
    """The lengths the pieces of :func:`piece_lengths` are encoded as (the codec's step, not exported): the
    same, but where there are several pieces one shorter than :data:`MIN_PIECE` is zero-padded to it first,
    as ``srrcomp`` does (a rotation of a handful of coordinates is far from uniform and EDEN's estimate
    there biased: at ``D = 4`` and ``b = 1`` it takes two or three values). A vector of one piece is
    encoded as it is, as padded."""
    lengths = piece_lengths(d, layout)
    return lengths if len(lengths) == 1 else tuple(max(n, MIN_PIECE) for n in lengths)


def encode_pieces(x: torch.Tensor, lengths: tuple, seed: int, encode: Callable) -> Slices:
    """:func:`qlib.eden.compress`'s step for a vector that slices into several pieces (checked arguments):
    ``encode(piece, piece_seed(seed, i))`` of each piece of ``lengths``, a piece shorter than
    :data:`MIN_PIECE` zero-padded to it first."""
    starts, pieces = np.cumsum((0, *lengths)).tolist(), []
    for i, n in enumerate(lengths):
        v = x[..., starts[i]:starts[i] + n]
        pieces.append(encode(v if n >= MIN_PIECE else torch.nn.functional.pad(v, (0, MIN_PIECE - n)), piece_seed(seed, i)))
    return Slices(tuple(pieces), x.shape[-1])


def decode_pieces(slices: Slices, received, decode: Callable) -> torch.Tensor:
    """:func:`qlib.eden.decompress`'s step for a checked :class:`Slices`: ``decode(piece, mask)`` of each piece,
    cut to its length, concatenated; ``received`` None or a sequence of one mask per piece."""
    k = len(slices.pieces)
    if received is not None and (not isinstance(received, (tuple, list)) or len(received) != k):
        got = f"a {type(received).__name__}" + (f" of {len(received)}" if isinstance(received, (tuple, list)) else "")
        raise TypeError(f"received must be None or a sequence of {k} masks (one per piece of the sliced payload), got {got}")
    return torch.cat([decode(p, None if received is None else received[i])[..., :n]
                      for i, (p, n) in enumerate(zip(slices.pieces, piece_lengths(slices.d)))], -1)


def piece_seed(seed: int, i: int) -> int:
    """The seed of piece ``i`` of a sliced message: ``seed`` for piece 0, else the first word of
    ``numpy.random.SeedSequence([seed, i])`` (independent streams; the receiver derives the same). Checked
    arguments (the codec's step, not exported)."""
    return seed if i == 0 else int(np.random.SeedSequence([seed, i]).generate_state(1)[0])


def bits_per_coordinate(d: int, bits: float, layout: str = "pad") -> float:
    """The bits a Lloyd–Max EDEN message of a ``d``-coordinate vector at budget ``bits`` carries per
    coordinate in the ``layout`` (``"pad"`` or ``"slice"``), its 64-bit scales included, as the messages'
    ``nbits`` count them: per piece (:func:`piece_lengths`, each encoded as at least :data:`MIN_PIECE`
    coordinates where there are several) ``b·D + 64`` for ``D`` the piece's padded length (at a fractional
    budget ``⌊b⌋·D`` plus the expected ``(b − ⌊b⌋)·D`` coins; at a sub-bit one ``round(b·n) + 64``).
    ``bits_per_coordinate(2**16 + 1310, 1) = 1.962`` (padded: the message is sized for 2^17 coordinates),
    ``bits_per_coordinate(2**16 + 1310, 1, "slice") = 1.013``."""
    d = check_int("d", d, low=1)
    b = check_bits(bits)
    total = 0.0
    for n in encoded_lengths(d, layout):
        _, D, sent = message_sizes(n, b)
        total += (sent if b < 1 else b * D) + SCALE_BITS
    return total / d


@dataclass(frozen=True)
class Slices:
    """A sliced EDEN message (:func:`qlib.eden.compress` with ``layout="slice"``): one
    :class:`qlib.eden.Payload` per piece of :func:`piece_lengths` (at least two), in order, every piece
    with the message's budget, quantizer, rotations and batch shape; ``d`` the vector's length.
    :func:`qlib.eden.decompress` decodes it (the pieces concatenated); the wire format sends it piece by
    piece (``qlib.wire.to_bytes`` of each of ``pieces``)."""

    pieces: tuple
    d: int

    @property
    def nbits(self) -> torch.Tensor:
        """The message size per vector: the sum of the pieces' ``nbits`` (each with its 64 scale bits)."""
        return sum(p.nbits for p in self.pieces)

    @property
    def total_bits(self) -> int:
        return int(self.nbits.sum())

    @property
    def batch_shape(self) -> torch.Size:
        return self.pieces[0].batch_shape

    @property
    def seed(self) -> int:
        return self.pieces[0].seed

    @property
    def bits(self) -> float:
        return self.pieces[0].bits


def check_slices(slices, name: str, check_piece: Callable) -> Slices:
    """The checks of :func:`qlib.eden.check_payload` for a :class:`Slices` (its step; ``check_piece(payload,
    name)``: that function on one piece): ``pieces`` a tuple of payloads, each valid, of the lengths
    :func:`piece_lengths` gives ``d``, with one budget, quantizer, rotation count and batch shape, piece
    ``i``'s seed :func:`piece_seed` of piece 0's. The errors name the field (``payload.pieces[1].d``)."""
    pieces = slices.pieces
    if not isinstance(pieces, tuple) or not pieces:
        raise TypeError(f"{name}.pieces must be a non-empty tuple of qlib.eden.Payload (one per piece), got "
                        f"{pieces!r:.80}")
    d = check_int(f"{name}.d", slices.d, low=2)
    want = encoded_lengths(d, "slice")
    if len(want) < 2:
        raise ValueError(f"{name}.d={d} slices into one piece (padding {_h.next_power_of_two(d) - d} zeros is within "
                         f"SLICE_MAX_PADDING·d): its message is a qlib.eden.Payload, not Slices")
    if len(pieces) != len(want):
        raise ValueError(f"{name}.pieces must hold {len(want)} payloads ({name}.d={d} slices as {list(piece_lengths(d))}), "
                         f"got {len(pieces)}")
    first = check_piece(pieces[0], f"{name}.pieces[0]")
    for i, p in enumerate(pieces):
        p = first if i == 0 else check_piece(p, f"{name}.pieces[{i}]")
        where = f"{name}.pieces[{i}]"
        if p.d != want[i]:
            raise ValueError(f"{where}.d must be {want[i]} ({name}.d={d} slices as {list(piece_lengths(d))}, "
                             f"encoded as {list(want)}), got {p.d}")
        for field in ("bits", "quantizer", "n_rotations"):
            if getattr(p, field) != getattr(first, field):
                raise ValueError(f"{where}.{field} must be {getattr(first, field)!r} (that of {name}.pieces[0]), "
                                 f"got {getattr(p, field)!r}")
        if p.batch_shape != first.batch_shape:
            raise ValueError(f"{where}.indices must have the batch shape {tuple(first.batch_shape)} of "
                             f"{name}.pieces[0], got {tuple(p.batch_shape)}")
        if p.seed != piece_seed(first.seed, i):
            raise ValueError(f"{where}.seed must be {piece_seed(first.seed, i)} (piece {i} of the seed "
                             f"{first.seed} of {name}.pieces[0]), got {p.seed}")
    return slices
