"""EDEN: unbiased distributed mean estimation with any bit budget (paper 002, {cite:p}`vargaftik2022eden`).

Sender (§2): pad to ``D = 2^k`` (or cut into power-of-two pieces: ``layout="slice"``,
:mod:`qlib.eden_layout`) → randomized Hadamard rotation ``r = RHT(x)`` from a shared seed → normalize ``u = η r`` with ``η = sqrt(D)/‖x‖`` → deterministic Lloyd–Max quantization
for N(0, 1) with ``2^b`` values (cell indices sent) → one scalar ``S = ‖x‖²/⟨r, q⟩`` (unbiased scale,
Theorem 2.1) or the biased MSE-optimal ``⟨r, q⟩/‖q‖²``. Receiver: ``x̂ = S · RHT^{-1}(q)``.

Bit regimes: integer ``b ∈ {1..8}``; fractional ``b > 1`` (§4.1 super-bit: each coordinate uses the
``⌊b⌋+1``-bit codebook with probability ``b − ⌊b⌋``, coins from the shared seed, not sent); sub-bit
``b < 1`` (§4.1: random sparsification to ``round(b·d)`` coordinates, then 1-bit EDEN; split before and
after the rotation so that the message carries ``round(b·d)`` codes, not a power of two of them:
:func:`qlib.eden_theory.message_sizes`); packet loss at the receiver (§4.2, Lemma 4.3: lost rotated coordinates
are zero-filled and the rest multiplied by ``1/p``, ``p`` the received fraction). An entropy-coded
variant (Appendix G, uniform cells of width ``Δ_b``) is ``quantizer="ee"``.

The closed forms and bounds (the Lloyd–Max codebooks, the vNMSE limits, the rate–distortion bound,
the entropy-coded cells, the multi-client NMSE of Lemma 2.2, the measured errors) live in
:mod:`qlib.eden_theory`; the scalar quantizer (the codes of ``u`` and the centroids they decode to) in
:mod:`qlib.eden_quantizer`; this module is the codec: :func:`compress`, :func:`decompress` (the
:class:`Payload` between them), :func:`received_mask`, :func:`roundtrip` and the several-client
:func:`mean_estimate`. Split at the rotation, for a caller that encodes one vector at several budgets
and measures the error where the rotation leaves it unchanged (``qlib.compressors.squared_errors``):
:func:`compress_rotated` (``compress`` after its rotation) and :func:`rotated_reconstruction` (``decompress``
before its inverse rotation).

On CPU (float32/float64 tensors that need no gradient, numba importable: the condition of
:func:`qlib.hadamard.compiled_fwht_applies`) :func:`compress` and :func:`decompress` take a compiled
path (the quantizer's, :mod:`qlib.eden_quantizer`, and the rotation of ``qlib/_kernels/rotation.py``): the
rotation reads the seeded Rademacher draw as sign bits inside the FWHT's first pass; ``u = r·η``, the
Lloyd–Max codes and the centroids are one pass; the receiver looks the codes up (times ``S``) inside the first pass of
the inverse transform. Every floating-point operation is the one the torch path does, in the same
precision and order (the thresholds rounded to the tensor's dtype as torch rounds a Python number; the
dot products ``r·r`` and ``r·q`` stay in torch), so the same seed gives the same payload and the same
decoded bits on either path; CUDA and autograd take the torch path, and with a loss mask the
dequantization stays in torch. How the compiled path is laid out and how fast it is:
``benchmarks/README.md``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from . import _kernels
from . import eden_layout as _layout
from . import eden_quantizer as _q
from . import eden_theory as _theory
from . import hadamard as _h
from .eden_theory import check_bits, check_loss, check_vectors, ee_delta, message_sizes
from .validation import (
    check_alloc,
    check_choice,
    check_int,
    check_int_sequence,
    check_seed,
    check_str,
    check_tensor,
    nested,
    skip_nested,
)

__all__ = [
    "SCALE_BITS",
    "Payload",
    "check_payload",
    "compress",
    "compress_rotated",
    "rotated_reconstruction",
    "decompress",
    "decompressed_mean_error",
    "sent_mask",
    "roundtrip",
    "received_mask",
    "mean_estimate",
]

SCALE_BITS = _layout.SCALE_BITS  # the scale S travels as one float64 (paper §2.2: "e.g., 64")


def _check_finite_norms(x: torch.Tensor, norm2: torch.Tensor, name: str = "x") -> None:
    """Raise unless every squared norm ``norm2`` of the rows of ``x`` is finite: with an infinite or NaN
    entry, the entry's named error; with finite entries whose squared norm overflows the dtype, say so."""
    n = norm2.detach()
    on_host = n.device.type == "cpu" and n.dtype != torch.bfloat16  # (NumPy has no bfloat16)
    if bool(np.isfinite(n.numpy()).all() if on_host else torch.isfinite(n).all()):
        return
    if not bool(torch.isfinite(x).all()):  # check_tensor's message (this runs inside skip_nested)
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    raise ValueError(f"{name} has a row whose squared norm overflows {x.dtype} (largest |entry| "
                     f"{float(x.abs().max()):.3g}); rescale it")


# ------------------------------------------------------------------------------------------------
# Compress / decompress
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Payload:
    """One EDEN message per vector of a batch (leading dimensions of the input).

    ``indices``: the quantization cell of every rotated coordinate (uint8 for Lloyd–Max codebooks,
    int32 cell numbers for ``quantizer="ee"``), shape ``(*batch, D)``; ``scale``: ``S`` per vector;
    ``nbits``: exact message size per vector (the codes sent + 64-bit scale: ``b·D`` for an integer
    ``b``, ``⌊b⌋·D`` plus one bit per coin for a fractional one, ``round(b·d)`` for a sub-bit one; for
    ``"ee"`` the ideal arithmetic-code length ``⌈D·Ĥ⌉`` with ``Ĥ`` the empirical entropy of the
    indices). The seed is shared with the receiver, not transmitted (not counted). At a sub-bit budget
    whose ``sent < D`` (:func:`qlib.eden_theory.message_sizes`) the codes of the rotated coordinates that
    are not sent (:func:`sent_mask`) are 0 and carry nothing.
    """

    indices: torch.Tensor
    scale: torch.Tensor
    seed: int
    bits: float
    d: int
    m: int  # coordinates after sub-bit subsampling (= d when bits >= 1)
    D: int  # rotated (padded) dimension
    quantizer: str
    n_rotations: int
    nbits: torch.Tensor

    @property
    def batch_shape(self) -> torch.Size:
        return self.indices.shape[:-1]

    @property
    def total_bits(self) -> int:
        return int(self.nbits.sum())


def check_payload(payload, name: str = "payload") -> Payload:
    """A :class:`Payload` a receiver can decode: every field of the kind and range :func:`compress` gives
    it (a decoder trusts no object). ``indices`` an integer tensor ``(*batch, D)`` of codes of the codebook
    (``2^b`` Lloyd–Max cells, of the larger codebook where a fractional budget's coin is set; ``[-n, n]``
    for ``"ee"``); ``scale`` a floating tensor of shape ``batch``, finite and ``>= 0``; ``nbits`` an integer
    tensor of shape ``batch``, ``>= 0``; ``seed`` a seed; ``bits`` in ``(0, 8]``; ``quantizer`` ``"lm"`` or
    ``"ee"``; ``n_rotations`` in ``[1, 8]``; ``d >= 1``, ``m`` the kept coordinates (``round(bits·d)`` at a
    sub-bit Lloyd–Max budget, else ``d``) and ``D`` the power of two above ``m``. The errors name the field
    (``payload.scale``); a payload this passes :func:`decompress` decodes, and a code outside its codebook
    gets the error :func:`decompress` gives. (A sliced message, :class:`qlib.eden_layout.Slices`: each of
    its ``pieces``; :func:`decompress` checks the whole.) Called by a checked caller
    (:func:`qlib.validation.skip_nested`) only the type is checked."""
    payload = _check_fields(payload, name)
    if not nested():
        _q.check_payload_codes(payload, name)
    return payload


def _check_fields(payload, name: str = "payload") -> Payload:
    """:func:`check_payload` of a :class:`Payload` but its codes (for the decoders, which check the codes
    where they read them: one pass fewer on the compiled path, which finds them as it decodes)."""
    if not isinstance(payload, Payload):
        raise TypeError(f"{name} must be a qlib.eden.Payload, got {type(payload).__name__}")
    return payload if nested() else _q.check_fields(payload, name)


def _short_type(v) -> str:
    return f"dtype {v.dtype}" if isinstance(v, torch.Tensor) else type(v).__name__


def sent_mask(seed: int, D: int, sent: int, device="cpu") -> torch.Tensor:
    """The ``D`` rotated coordinates whose codes a sub-bit message carries (boolean, exactly ``sent``
    True): a uniformly random subset drawn from the shared seed, the same for every row of a batch
    (:func:`qlib.eden_theory.message_sizes`; the receiver regenerates it, it is never sent)."""
    seed = check_seed("seed", seed)
    D = check_int("D", D, low=1)
    sent = check_int("sent", sent, low=1, high=D)
    dev = torch.device(device)
    mask = torch.zeros(D, dtype=torch.bool, device=dev)
    if sent == D:
        return mask.fill_(True)
    keys = torch.rand(D, generator=_h.generator(seed, "sent", dev), device=dev)
    return mask.index_fill_(0, torch.topk(keys, sent, sorted=False).indices, True)


def _subsample(seed, batch, d, m, device):
    g = _h.generator(seed, "sub-bit", device)
    keys = torch.rand((*batch, d), generator=g, device=device)
    return torch.topk(keys, m, dim=-1, sorted=False).indices  # a uniform subset of size m




def _decompress_compiled(payload: Payload, scratch: str | None = None) -> torch.Tensor | None:
    """Without coins and loss: ``irht(dequantize(…) · S, signs)`` with the dequantization inside the
    first pass of the inverse transform (the same bits); None where it does not apply or a code falls
    outside its table (the torch path then runs, and raises or wraps as before). ``scratch``: the result
    is the thread's scratch array of that name."""
    D, S = payload.D, payload.scale
    tabs = _q.decode_tables(payload.indices, S, payload.bits, payload.quantizer, None) \
        if _h.compiled_rotation_applies(S, D) else None
    if tabs is None:
        return None
    off, tab, _ = tabs
    byts = _h.rotation_sign_bits(payload.seed, payload.batch_shape, payload.n_rotations, D, S.dtype)
    idx = _kernels.rows(payload.indices, D)
    buf = None if scratch is None else _kernels.scratch(scratch, idx.shape, tab.dtype)
    out = _kernels.load("rotation").lookup_irht_rows(idx, off, tab, _kernels.rows(S, 1).reshape(-1), byts,
                                                     payload.n_rotations, out=buf)
    return None if out is None else torch.from_numpy(out).reshape(payload.indices.shape)


def compress(
    x: torch.Tensor,
    bits: float,
    seed: int,
    *,
    scale: str = "unbiased",
    quantizer: str = "lm",
    n_rotations: int = 1,
    layout: str = "pad",
) -> Payload | _layout.Slices:
    """EDEN sender for a vector or a batch ``(*batch, d)`` (every row its own rotation and sub-bit
    subset; the fractional coins and the sub-bit codes sent are the seed's, shared by the rows).

    ``bits`` in (0, 8]: integer, fractional (> 1) or sub-bit (< 1). ``scale``: ``"unbiased"`` (the
    paper's ``S = ‖x‖²/⟨r, q⟩``) or ``"mse"`` (biased, ``⟨r, q⟩/‖q‖²``, not in the paper).
    ``quantizer``: ``"lm"`` (Lloyd–Max, default) or ``"ee"`` (entropy-coded cells of width Δ_b).
    ``n_rotations``: number of chained RHTs (1 in the paper). A zero vector gives ``S = 0`` and
    decodes to exact zeros (the scale doubles as the paper's one-bit zero flag).

    ``layout`` (:mod:`qlib.eden_layout`): ``"pad"`` (the paper's scheme) pads ``d`` to the power of two
    ``D`` above it and sends a code per padded coordinate: ``b·D/d`` bits per coordinate, **up to 2b just
    above a power of two** (d = 2^16 + 1,310 at b = 1: 1.96; ``nbits`` counts them;
    :func:`qlib.eden_layout.bits_per_coordinate` gives them for any ``d``). ``"slice"`` (the authors'
    package ``srrcomp``) cuts the vector into power-of-two pieces and a short padded rest, each its own
    message (≈ b bits per coordinate; 1.01 there): a :class:`qlib.eden_layout.Slices` where that makes
    more than one piece, else the same :class:`Payload` as ``"pad"``.
    """
    x = check_vectors(x, finite=False)  # finiteness: on the squared norms below (one pass less)
    b = check_bits(bits)
    seed = check_seed("seed", seed)
    scale = check_choice("scale", scale, ("unbiased", "mse"))
    quantizer = check_choice("quantizer", quantizer, ("lm", "ee"))
    n_rotations = check_int("n_rotations", n_rotations, low=1, high=8)
    lengths = _layout.piece_lengths(x.shape[-1], check_choice("layout", layout, _layout.LAYOUTS))
    if len(lengths) > 1:  # every piece its own message, from its own seed stream
        return _layout.encode_pieces(x, lengths, seed, lambda v, s: compress(v, b, s, scale=scale, quantizer=quantizer,
                                                                          n_rotations=n_rotations))
    if b < 1 and quantizer == "lm":
        check_vectors(x)  # sub-bit: every entry finite, not only the kept ones
    with skip_nested():  # every argument is checked: the public functions called below trust them
        batch, d, dev = x.shape[:-1], x.shape[-1], x.device
        v = x
        m, sent = d, None
        if b < 1 and quantizer == "lm":  # sub-bit: a uniform subset of m coordinates, then `sent` of D rotated
            m, _, sent = message_sizes(d, b)
            if m < d:
                keep = _subsample(seed, batch, d, m, dev)
                v = torch.gather(x, -1, keep) * (d / m)
        # the rotation; on CPU one compiled pass per rotation that reads the seeded signs as bits
        # (r and q below are temporaries: on the compiled path the thread's scratch arrays, no page faults)
        r = _h.seeded_rht(_h.pad_to_power_of_two(v), seed, n_rotations, scratch="eden.r")
        return _encode(r, x, "x", b, seed, scale, quantizer, n_rotations, d, m, sent)


def compress_rotated(
    r: torch.Tensor,
    bits: float,
    seed: int,
    *,
    d: int | None = None,
    scale: str = "unbiased",
    quantizer: str = "lm",
    n_rotations: int = 1,
    norm2: torch.Tensor | None = None,
) -> Payload:
    """The payload :func:`compress` sends for ``x``, given its rotation ``r = seeded_rht(pad(x), seed,
    n_rotations)`` (:func:`qlib.hadamard.seeded_rht`, :func:`qlib.hadamard.pad_to_power_of_two`) instead of
    ``x``: the same codes, scale and size, bit for bit (:func:`compress` is this after its rotation).

    For a caller that rotates one vector once and encodes it at several budgets (the rotation does not
    depend on the budget). ``r``: ``(*batch, D)``, ``D`` a power of two; ``d``: the length of ``x``
    (``D/2 < d ≤ D``; None: ``D``); ``bits`` in [1, 8] for ``quantizer="lm"`` (a sub-bit budget masks
    ``x`` before the rotation: use :func:`compress`), in (0, 8] for ``"ee"``; the other options as
    :func:`compress`'s. ``norm2``: ``torch.linalg.vecdot(r, r)`` (``‖r‖²`` per row, the dtype of ``r``),
    for a caller that encodes one ``r`` at several budgets and computed it once (None: computed here).
    """
    r = check_vectors(r, "r", finite=False)  # finiteness: on the squared norms, as compress
    b = check_bits(bits)
    seed = check_seed("seed", seed)
    scale = check_choice("scale", scale, ("unbiased", "mse"))
    quantizer = check_choice("quantizer", quantizer, ("lm", "ee"))
    n_rotations = check_int("n_rotations", n_rotations, low=1, high=8)
    D = r.shape[-1]
    if not _h.is_power_of_two(D):
        raise ValueError(f"r must have a power-of-two last dimension (the rotated, padded vector), got {D}")
    d = D if d is None else check_int("d", d, low=D // 2 + 1, high=D)
    if b < 1 and quantizer == "lm":
        raise ValueError(f"bits={b} < 1 masks x before the rotation (§4.1): use qlib.eden.compress for a sub-bit budget")
    if norm2 is not None:
        norm2 = check_tensor("norm2", norm2, floating=True, finite=False, convert=False)
        if tuple(norm2.shape) != tuple(r.shape[:-1]) or norm2.dtype != r.dtype or norm2.device != r.device:
            raise ValueError(f"norm2 must be ‖r‖² per row: shape {tuple(r.shape[:-1])}, dtype {r.dtype} on {r.device}; "
                             f"got shape {tuple(norm2.shape)}, dtype {norm2.dtype} on {norm2.device}")
    with skip_nested():
        return _encode(r, r, "r", b, seed, scale, quantizer, n_rotations, d, d, norm2=norm2)


def rotated_reconstruction(payload: Payload) -> torch.Tensor:
    """The receiver's vector before its inverse rotation, ``S · q`` (the centroids of the codes times the
    scale), shape ``(*batch, D)``: :func:`decompress` (without a loss mask) is its inverse rotation
    ``seeded_irht(·, seed, n_rotations)`` cut to the first ``m`` coordinates (scattered back to ``d`` for a
    sub-bit payload), with the same products in the same precision. The rotation is orthonormal, so for
    a payload of a vector of power-of-two length without sub-bit mask ``‖S·q − r‖ = ‖x̂ − x‖`` with
    ``r`` the sender's rotated vector: the error measured without the inverse transform."""
    payload = _check_fields(payload)
    with skip_nested():
        b = payload.bits
        coins = None
        if payload.quantizer == "lm" and b >= 1 and b != math.floor(b):
            coins = _q.draw_coins(payload.seed, payload.batch_shape, payload.D, b - math.floor(b), payload.indices.device)
        return _q.scaled_centroids(payload.indices, payload.scale, b, payload.quantizer, coins)


def _vecdot(r: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """``torch.linalg.vecdot(r, q)``, the same bits; on CPU for a batch of rows the product goes to the
    thread's scratch array (vecdot is that product, then its sum; a fresh product of 10 × 2^24 floats
    costs ~160,000 page faults). A single row keeps vecdot (there it is a BLAS dot: other bits)."""
    if r.dim() < 2 or r.device.type != "cpu" or r.dtype != q.dtype or r.shape != q.shape or not _q.compiled_applies(r):
        return torch.linalg.vecdot(r, q)
    buf = torch.from_numpy(_kernels.scratch("eden.rq", tuple(r.shape), np.float32 if r.dtype == torch.float32 else np.float64))
    return torch.mul(r, q, out=buf).sum(-1)


def _encode(r, x, name, b, seed, scale, quantizer, n_rotations, d, m, sent=None, norm2=None) -> Payload:
    """Everything :func:`compress` does after the rotation ``r`` (checked arguments; ``x``/``name``: the
    tensor and argument that the error message of a non-finite row names; ``norm2``: ``vecdot(r, r)``
    when the caller has it)."""
    batch, D, dev, dt = r.shape[:-1], r.shape[-1], r.device, r.dtype
    if norm2 is None:
        norm2 = _vecdot(r, r)  # = ‖v‖² (the RHT is orthonormal; vecdot's bits, its product in scratch)
    _check_finite_norms(x, norm2, name)  # an infinite or NaN entry of x makes its row's norm NaN
    zero = norm2 == 0
    any_zero = bool(zero.any())  # rarely: the torch.where below only then (the same values)
    eta = math.sqrt(D) / norm2.sqrt()
    if any_zero:
        eta = torch.where(zero, torch.zeros_like(norm2), eta)
    coins = None
    lo = max(1, int(math.floor(b)))
    if quantizer == "lm" and b >= 1 and b != math.floor(b):
        coins = _q.draw_coins(seed, batch, D, b - lo, dev)
    # ⟨r, q⟩'s products made by the compiled quantizer where _vecdot would make them (a batch of rows, the
    # unbiased scale: q is not needed then), summed as _vecdot sums them: the same bits, one pass fewer
    prods = False
    if quantizer == "lm" and _q.compiled_applies(r):  # u, the codes and the centroids in one compiled pass
        prods = scale == "unbiased" and r.dim() >= 2
        idx, q = _q.lm_quantize_compiled(r, eta, lo, coins, times_r=prods)
    else:
        u = r * eta.unsqueeze(-1)
        if quantizer == "ee":
            idx = _q.ee_quantize(u, ee_delta(b))
        elif coins is not None:
            idx = torch.where(coins, _q.lm_quantize(u, lo + 1), _q.lm_quantize(u, lo))
        else:
            idx = _q.lm_quantize(u, lo)
        q = _q.dequantize(idx, b, quantizer, coins, dt, dev)
    rq = q.sum(-1) if prods else _vecdot(r, q)
    if bool((((rq <= 0) & ~zero) if any_zero else (rq <= 0)).any()):
        raise ValueError(
            f"quantizer={quantizer!r} at bits={b} mapped a whole vector to the zero cell (⟨r, q⟩ = 0); "
            "use quantizer='lm' for this budget"
        )
    safe_rq = torch.where(zero, torch.ones_like(rq), rq) if any_zero else rq
    if scale == "unbiased":
        S = norm2 / safe_rq
    else:
        S = rq / torch.linalg.vecdot(q, q).clamp_min(torch.finfo(dt).tiny)
    if any_zero:
        S = torch.where(zero, torch.zeros_like(S), S)
    if sent is not None and sent < D:  # the codes not sent carry nothing (the receiver zero-fills them)
        idx = idx.masked_fill(~sent_mask(seed, D, sent, dev), 0)
    if quantizer == "ee":
        nbits = _q.entropy_bits(idx) + SCALE_BITS
    elif sent is not None:
        nbits = torch.full(tuple(batch), sent + SCALE_BITS, dtype=torch.long)
    elif coins is not None:
        lo = int(math.floor(b))
        nbits = (lo * D + coins.sum(-1)).long().cpu() + SCALE_BITS
    else:
        nbits = torch.full(tuple(batch), max(1, int(b)) * D + SCALE_BITS, dtype=torch.long)
    if any_zero:
        nbits = torch.where(zero.cpu(), torch.full_like(nbits, SCALE_BITS), nbits)
    return Payload(idx, S, seed, b, d, m, D, quantizer, n_rotations, nbits)


def received_mask(D: int, loss: float, mode: str = "tail", seed: int = 0, batch=(), device="cpu"):
    """Boolean mask of the rotated coordinates that arrive when a fraction ``loss`` is lost.

    ``mode="tail"``: the last ``round(loss·D)`` coordinates are dropped (a deterministic, oblivious
    loss pattern, Lemma 4.3 / Figure 11); ``"random"``: a uniformly random subset of that size,
    drawn from ``seed`` (an integer, default 0; ``"tail"`` does not use it): the coordinates of the
    ``round(loss·D)`` smallest of ``D`` uniform float32 keys, found by selection in O(D) (compiled on CPU, else
    torch's ``kthvalue``: the same mask), keys tied at the cut lost in order of position. Before issue 54
    an argsort of the keys, O(D log D): the same set, but where two keys tie at the cut (at D = 2^20 about
    one mask in sixteen), which one of the pair is lost.
    ``batch``: the batch shape (a tuple of integers ``>= 0``); the mask has shape ``(*batch, D)``.
    """
    loss = check_loss(loss)
    D = check_int("D", D, low=1)
    seed = check_seed("seed", seed)
    if not isinstance(batch, (tuple, list, torch.Size)):
        raise TypeError(f"batch must be a tuple of integers >= 0 (the batch shape), got {batch!r}")
    batch = tuple(check_int_sequence("batch", batch, low=0, nonempty=False))
    if mode == "random":  # (the tail mask is one row, expanded)
        check_alloc("(*batch, D)", math.prod(batch) * D, 1 + 4 + 8, value=(*batch, D),
                    what="the mask, its random keys and (off the compiled path) a count of ties")
    else:
        check_alloc("D", D, 1, value=D, what="the mask")
    lost = int(round(loss * D))
    if lost >= D:
        raise ValueError(f"loss={loss} drops every one of the D={D} coordinates")
    dev = torch.device(device)
    if mode == "tail":
        mask = torch.arange(D, device=dev) < D - lost
        return mask.expand(*batch, D)
    if mode == "random":
        if lost == 0 or 0 in batch:
            return torch.ones((*batch, D), dtype=torch.bool, device=dev)
        return _q.received_by_keys(torch.rand((*batch, D), generator=_h.generator(seed, "loss", dev), device=dev), lost)
    raise ValueError(f"mode must be 'tail' or 'random', got {mode!r}")


def decompress(payload: Payload | _layout.Slices, received=None, *, scratch: str | None = None) -> torch.Tensor:
    """EDEN receiver: ``x̂ = S · RHT^{-1}(q)``, regenerating signs, coins and mask from the seed.

    ``received``: optional boolean mask over the ``D`` rotated coordinates (broadcastable to the
    indices); lost coordinates are zero-filled and the received ones scaled by ``1/p`` with ``p``
    the received fraction counted per vector (§4.2). A vector of which nothing arrived decodes to 0.
    A sub-bit message that carries fewer codes than ``D`` (:func:`sent_mask`) is decoded the same way,
    its unsent coordinates counted as lost (Lemma 4.3 with ``p = sent/D``).
    ``scratch``: on the compiled path (no mask, no coins) the result is a view of the calling thread's
    scratch array of that name (``qlib._kernels.scratch``), for a caller done with it before its next call
    under that name (a sweep that decodes and compares); None: a new tensor.

    A sliced message (:class:`qlib.eden_layout.Slices`) decodes piece by piece into the ``d`` coordinates
    (a new tensor); ``received`` is then None or a sequence of one mask per piece (each as above).
    """
    if isinstance(payload, _layout.Slices):
        return _layout.decode_pieces(_layout.check_slices(payload, "payload", _check_fields), received, decompress)
    payload = _check_fields(payload)
    if scratch is not None:
        scratch = check_str("scratch", scratch)
    idx, S = payload.indices, payload.scale
    batch, D, dev, dt = idx.shape[:-1], payload.D, idx.device, S.dtype
    if received is not None:
        if not isinstance(received, torch.Tensor) or received.dtype != torch.bool:
            raise TypeError(f"received must be a boolean torch.Tensor, got {_short_type(received)}")
        try:
            torch.broadcast_shapes(received.shape, idx.shape)
            ok = received.dim() >= 1 and received.shape[-1] == D
        except RuntimeError:
            ok = False
        if not ok:
            raise ValueError(f"received must be a mask over the D={D} rotated coordinates that broadcasts to the "
                             f"indices' shape {tuple(idx.shape)}, got shape {tuple(received.shape)}")
    with skip_nested():  # every field of the payload is checked (its codes where they are read: scaled_centroids)
        b = payload.bits
        coins = None
        if payload.quantizer == "lm" and b >= 1 and b != math.floor(b):
            coins = _q.draw_coins(payload.seed, batch, D, b - math.floor(b), dev)
        if payload.quantizer == "lm" and b < 1:
            _, _, sent = message_sizes(payload.d, b)
            if sent < D:
                mask = sent_mask(payload.seed, D, sent, dev)
                received = mask if received is None else received.to(dev) & mask
        v = _decompress_compiled(payload, scratch) if received is None and coins is None else None
        if v is None:
            w = _q.scaled_centroids(idx, S, b, payload.quantizer, coins, received)
            # the inverse rotation, in place on w (a temporary) on the compiled path
            v = _h.seeded_irht(w, payload.seed, payload.n_rotations, overwrite=True)
        v = v[..., : payload.m]
        if payload.m == payload.d:
            return v
        keep = _subsample(payload.seed, batch, payload.d, payload.m, dev)
        return torch.zeros((*batch, payload.d), dtype=dt, device=dev).scatter(-1, keep, v)


def decompressed_mean_error(payload: Payload, ref: torch.Tensor) -> torch.Tensor:
    """``‖decompress(payload).mean(0) − ref‖²`` (float64, 0-d) for a payload of ``n`` vectors (batch shape
    ``(n,)``) and a float64 vector ``ref`` of their ``d`` coordinates: the squared error of the receiver's
    mean of the clients' vectors (Figure 8's NMSE numerator), the mean taken as torch's ``mean(0)`` in the
    payload's dtype. Where the compiled decoder applies (no coins, loss or sub-bit mask; one rotation;
    ``ref`` on the CPU) the rows are decoded one at a time into a one-row workspace and added to a running
    sum, both small enough to stay in the last-level cache: no decoded batch is made or read again, the
    same mean, bit for bit, and the same error up to the order of its float64 sum."""
    payload = _check_fields(payload)  # (the codes: where they are read)
    if len(payload.batch_shape) != 1:
        raise ValueError(f"payload must hold a batch of vectors (batch shape (n,)), got batch shape {payload.batch_shape}")
    if not isinstance(ref, torch.Tensor) or ref.dtype != torch.float64 or tuple(ref.shape) != (payload.d,):
        got = (ref.dtype, tuple(ref.shape)) if isinstance(ref, torch.Tensor) else _short_type(ref)
        raise TypeError(f"ref must be a float64 torch.Tensor of shape ({payload.d},) (the payload's d), got {got}")
    if not bool(torch.isfinite(ref).all()):
        raise ValueError("ref must be finite (no NaN or inf)")
    dec = _row_decoder(payload) if ref.device.type == "cpu" else None
    if dec is not None:
        D, tab = payload.D, dec[2]
        ws, acc = _kernels.scratch("eden.mean-row", (D,), tab.dtype), _kernels.scratch("eden.mean-sum", (payload.d,), tab.dtype)
        dist = _kernels.load("rotation").lookup_irht_mean_dist(*dec, ref.contiguous().numpy(), ws, acc)
        if dist is not None:
            return torch.tensor(dist, dtype=torch.float64)
    xh = decompress(payload)  # (a code outside its table raises there)
    return ((xh.mean(0).double() - ref.to(xh.device)) ** 2).sum().cpu()


def roundtrip(x: torch.Tensor, bits: float, seed: int, *, loss: float = 0.0, loss_mode: str = "tail",
              scale: str = "unbiased", quantizer: str = "lm", n_rotations: int = 1):
    """``decompress(compress(x, bits, seed, scale=, quantizer=, n_rotations=), received)`` with a loss
    pattern of rate ``loss``."""
    pl = compress(x, bits, seed, scale=scale, quantizer=quantizer, n_rotations=n_rotations)
    rec = None
    if check_loss(loss) > 0:
        rec = received_mask(pl.D, loss, loss_mode, seed=seed, batch=pl.batch_shape, device=x.device)
    return decompress(pl, rec)



# ------------------------------------------------------------------------------------------------
# Heterogeneous clients
# ------------------------------------------------------------------------------------------------
def mean_estimate(
    xs: torch.Tensor,
    bits: float | Sequence[float],
    seed: int,
    *,
    loss: float | Sequence[float] = 0.0,
    loss_mode: str = "random",
) -> tuple[torch.Tensor, int]:
    """The receiver's estimate ``(1/n) Σ_c x̂_c`` of the mean of the rows of ``xs`` (n × d), each
    client with its own budget ``bits[c]`` and loss rate ``loss[c]``; returns (estimate, total bits).

    Clients sharing a budget are compressed as one batch (each row has its own rotation); groups use
    independent seed streams derived from ``seed``; client ``c``'s loss mask is
    ``received_mask(D, loss[c], loss_mode, seed=group seed + 1 + c)``. A group of which nothing is lost is
    decoded as :func:`decompress` decodes a payload (the compiled path on CPU; the same bits as an all-True
    mask); a group with losses with its masks, each drawn in O(D).
    """
    xs = check_vectors(xs, "xs")
    if xs.dim() != 2:
        raise ValueError(f"xs must be (n_clients, d), got shape {tuple(xs.shape)}")
    seed = check_seed("seed", seed)
    loss_mode = check_choice("loss_mode", loss_mode, ("tail", "random"))
    n = xs.shape[0]
    bs, ls = _theory.client_budgets(bits, loss, n)
    total = torch.zeros(xs.shape[1], dtype=xs.dtype, device=xs.device)
    nbits = 0
    for gi, b in enumerate(sorted(set(bs))):
        rows = [c for c in range(n) if bs[c] == b]
        gseed = int(np.random.SeedSequence([seed, gi]).generate_state(1)[0])
        with skip_nested():  # (xs, b and the seeds are checked)
            pl = compress(xs if len(rows) == n else xs[rows], b, gseed)
            if any(ls[c] > 0 for c in rows):
                masks = torch.stack([received_mask(pl.D, ls[c], loss_mode, seed=gseed + 1 + c, device=xs.device)
                                     for c in rows])
                total = total + decompress(pl, masks).sum(0)
            else:
                total = total + decompress(pl, scratch="eden.mean").sum(0)
        nbits += pl.total_bits
    return total / n, nbits


def _row_decoder(pl: Payload):
    """The arguments ``(codes, offset, table, scales, sign bits)`` of the compiled decoders that decode a
    payload row by row inside one inverse rotation (no coins, loss or sub-bit mask; one rotation; CPU),
    or None where they do not apply."""
    b, D, S = pl.bits, pl.D, pl.scale
    if not ((pl.quantizer == "ee" or (b >= 1 and b == math.floor(b))) and pl.m == pl.d and pl.n_rotations == 1
            and _q.compiled_applies(S) and _h.compiled_rotation_applies(S, D)):
        return None
    tabs = _q.decode_tables(pl.indices, S, b, pl.quantizer, None)
    if tabs is None:
        return None
    with skip_nested():
        byts = _h.rotation_sign_bits(pl.seed, pl.batch_shape, 1, D, S.dtype)
    return _kernels.rows(pl.indices, D), tabs[0], tabs[1], _kernels.rows(S, 1).reshape(-1), byts
