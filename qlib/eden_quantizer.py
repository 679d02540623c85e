"""EDEN's scalar quantizer (paper 002 §2, §5.1 and Appendix G, {cite:p}`vargaftik2022eden`): the codes of
the normalized rotated coordinates ``u`` and the scaled centroids ``S·q`` they decode to.

Lloyd–Max for N(0, 1) with ``2^b`` cells (:func:`qlib.eden_theory.codebook`): the wire code of a value is
``2k + (u < 0)`` for the cell with ``k`` positive thresholds below ``|u|`` (uint8), found by a few
comparisons or, above three thresholds, by an exact look-up table over ``|u|`` (§5.1); a fractional
budget's coins (:func:`coin_mask`, drawn from the shared seed, not sent) pick the ``⌊b⌋+1``-bit
codebook per coordinate. The entropy-coded variant (``"ee"``) rounds ``u/Δ_b`` to int32 cell numbers
whose centroids are the cells' centres of mass; its message length is the ideal arithmetic code of the
codes (:func:`entropy_bits`). The receiver's side checks a payload's fields (:func:`check_fields`) and
its codes against their codebook (:func:`check_codes`) and forms ``S·q`` with the lost coordinates of a loss mask
zero-filled and the rest scaled by ``1/p`` (:func:`scaled_centroids`, §4.2); a random loss mask is drawn
from its keys in O(D) (:func:`received_by_keys`).

On CPU (float32/float64 tensors that need no gradient, numba importable: :func:`compiled_applies`) the
quantization and the dequantization take a compiled path (``qlib/_kernels/eden.py``, this module its
owner): ``u = r·η``, the codes and the centroids in one pass, and ``S·q`` in one pass. Every
floating-point operation is the one the torch path does, in the same precision and order (the thresholds
rounded to the tensor's dtype as torch rounds a Python number), so either path gives the same bits.
:func:`decode_tables` hands :mod:`qlib.eden` the tables its decoders fuse into the inverse rotation.

One function is exported and checks its arguments: :func:`coin_mask`, which coordinates a fractional
budget's coins send to the larger codebook (the wire format splits the codes by them). The others are
the steps of :mod:`qlib.eden`'s public functions, on the values those have checked at their door (a
:class:`qlib.eden.Payload` checked by :func:`qlib.eden.check_payload`, the budget and quantizer checked by
:func:`qlib.eden.compress`): public to that module and its tests, not exported, so that the one checked
door of the codec stays :mod:`qlib.eden`.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import torch

from . import _kernels
from . import eden_theory as _theory
from . import hadamard as _h
from .eden_theory import check_bits, codebook, ee_cells, ee_delta, message_sizes
from .validation import check_choice, check_int, check_seed

__all__ = ["coin_mask"]

_load = _kernels.load
_rows = _kernels.rows


@lru_cache(maxsize=None)
def _lm_host_tables(bits: int):
    """Wire code ``2k + (u < 0)`` for the cell with ``k`` positive thresholds below ``|u|``; the
    decode table in that order; and an exact lookup table over ``|u|`` (paper §5.1)."""
    c, t = codebook(bits)
    cpos = c[2 ** (bits - 1) :]
    table = np.empty(2**bits)
    table[0::2], table[1::2] = cpos, -cpos
    pos = t[t > 0]
    if len(pos) == 0:
        return table, pos, None
    gamma = np.min(np.diff(np.r_[0.0, pos])) / 4  # < half the smallest gap: ≤ 1 threshold per cell
    n = np.arange(int(np.ceil(pos[-1] / gamma)) + 2)
    count = np.searchsorted(pos, n * gamma, side="left")  # thresholds strictly below the left edge
    nxt = np.r_[pos, np.inf][count]
    prv = np.r_[-np.inf, pos][count]
    return table, pos, (gamma, count, nxt, prv)


def _lm_table(bits: int, dtype, device) -> torch.Tensor:
    return torch.tensor(_lm_host_tables(bits)[0], dtype=dtype, device=device)


def lm_quantize(u: torch.Tensor, bits: int) -> torch.Tensor:
    """Cell code ``2k + (u < 0)`` (uint8). A value on a threshold goes to the cell closer to zero
    (footnote 4); ``u = 0`` counts as positive (our convention: sign(0) = +1)."""
    table, pos, lut = _lm_host_tables(bits)
    neg = (u < 0).to(torch.uint8)
    if len(pos) == 0:
        return neg
    a = u.abs()
    if len(pos) <= 3:  # a few comparisons beat any search
        k = (a > float(pos[0])).to(torch.uint8)
        for tj in pos[1:]:
            k += (a > float(tj)).to(torch.uint8)
    else:  # exact LUT: the grid cell gives the count up to one threshold, two comparisons fix it
        gamma, count, nxt, prv = lut
        dev, dt = u.device, u.dtype
        cell = torch.clamp((a * (1.0 / gamma)).to(torch.int64), 0, len(count) - 1)
        k = torch.tensor(count, dtype=torch.uint8, device=dev)[cell]
        k += (a > torch.tensor(nxt, dtype=dt, device=dev)[cell]).to(torch.uint8)
        k -= (a <= torch.tensor(prv, dtype=dt, device=dev)[cell]).to(torch.uint8)
    return (k << 1) | neg


@lru_cache(maxsize=None)
def _ee_table(delta: float):
    n, t = ee_cells(delta)
    com = _theory.quantizer_stats(t)["centroids"]  # the centers of mass of the cells
    com = (com - com[::-1]) / 2
    return int(n[-1]), com


def ee_quantize(u: torch.Tensor, delta: float) -> torch.Tensor:
    """The entropy-coded cell numbers ``round(u/Δ)`` (int32), clamped to the cells of width ``delta``."""
    n_max, _ = _ee_table(delta)
    return torch.clamp(torch.round(u / delta), -n_max, n_max).to(torch.int32)


def _lookup(table: torch.Tensor, indices: torch.Tensor) -> torch.Tensor:
    """``table[indices]``; on CPU through NumPy's take on the narrow indices (no int64 copy, 2× faster)."""
    if table.device.type == "cpu" and table.dtype != torch.bfloat16:  # (NumPy has no bfloat16)
        return torch.from_numpy(np.take(table.numpy(), indices.numpy()))
    return table[indices.long()]


def dequantize(indices, bits, quantizer, coins, dtype, device):
    """The centroids ``q`` of the codes ``indices`` at the budget ``bits`` (``coins``: where the
    ``⌊b⌋+1``-bit codebook applies, None for none), in ``dtype`` on ``device``."""
    if quantizer == "ee":
        n_max, com = _ee_table(ee_delta(bits))
        table = torch.tensor(com, dtype=dtype, device=device)
        return _lookup(table, indices + n_max)
    lo = int(math.floor(bits)) if bits >= 1 else 1
    if coins is None:
        return _lookup(_lm_table(lo, dtype, device), indices)
    # the low codebook's codes are a prefix of the high one's only by position; look up both
    c_lo = _lm_table(lo, dtype, device)
    q = _lookup(c_lo, indices.clamp_max(len(c_lo) - 1))
    return torch.where(coins, _lookup(_lm_table(lo + 1, dtype, device), indices), q)


def entropy_bits(indices: torch.Tensor) -> torch.Tensor:
    """Ideal (arithmetic-code) length ⌈D·Ĥ⌉ per row, Ĥ = empirical entropy of the row's symbols."""
    flat = indices.reshape(-1, indices.shape[-1]).long()
    out = []
    for row in flat:  # rows are few (clients); the symbols per row are counted vectorised
        counts = torch.bincount(row - row.min()).double()
        p = counts[counts > 0] / row.numel()
        out.append(math.ceil(float(-(p * torch.log2(p)).sum()) * row.numel()))
    return torch.tensor(out, dtype=torch.long).reshape(indices.shape[:-1])


def check_fields(payload, name: str):
    """Every field of the :class:`qlib.eden.Payload` ``payload`` but its codes, as
    :func:`qlib.eden.check_payload` documents (its step, after the type: the errors name ``name.field``)."""
    idx = _int_tensor(f"{name}.indices", payload.indices, "integer codes")
    S = payload.scale
    if not isinstance(S, torch.Tensor) or not S.is_floating_point():
        raise TypeError(f"{name}.scale must be a floating-point tensor, got "
                        f"{S.dtype if isinstance(S, torch.Tensor) else type(S).__name__}")
    nbits = _int_tensor(f"{name}.nbits", payload.nbits, "bit counts")
    check_seed(f"{name}.seed", payload.seed)
    b = check_bits(payload.bits, f"{name}.bits")
    check_choice(f"{name}.quantizer", payload.quantizer, ("lm", "ee"))
    check_int(f"{name}.n_rotations", payload.n_rotations, low=1, high=8)
    d = check_int(f"{name}.d", payload.d, low=1)
    m = check_int(f"{name}.m", payload.m, low=1)
    D = check_int(f"{name}.D", payload.D, low=1)
    want_m, want_D, _ = message_sizes(d, b) if payload.quantizer == "lm" else (d, _h.next_power_of_two(d), 0)
    if m != want_m:
        raise ValueError(f"{name}.m must be {want_m} (d={d} at bits={b}), got {m}")
    if D != want_D:
        raise ValueError(f"{name}.D must be {want_D} (the power of two above m={m}), got {D}")
    if idx.dim() < 1 or idx.shape[-1] != D or idx.numel() == 0:
        raise ValueError(f"{name}.indices must have shape (*batch, D={D}), non-empty, got {tuple(idx.shape)}")
    batch = tuple(idx.shape[:-1])
    if tuple(S.shape) != batch:
        raise ValueError(f"{name}.scale must have the batch shape {batch} of the indices, got {tuple(S.shape)}")
    if tuple(nbits.shape) != batch:
        raise ValueError(f"{name}.nbits must have the batch shape {batch} of the indices, got {tuple(nbits.shape)}")
    ok = (S >= 0) & (S <= torch.finfo(S.dtype).max)  # (False for NaN)
    if not bool(ok.all()):
        raise ValueError(f"{name}.scale must be finite and >= 0 (S = ‖x‖²/⟨r, q⟩), got {float(S[~ok].reshape(-1)[0])}")
    if bool((nbits < 0).any()):
        raise ValueError(f"{name}.nbits must be >= 0, got {int(nbits.min())}")
    return payload


def _int_tensor(name: str, t, what: str) -> torch.Tensor:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a tensor of {what}, got {type(t).__name__}")
    if t.is_floating_point() or t.is_complex() or t.dtype == torch.bool:
        raise TypeError(f"{name} must be a tensor of {what}, got dtype {t.dtype}")
    return t


def check_payload_codes(payload, name: str) -> None:
    """Raise unless every code of the (field-checked) payload is in its codebook: :func:`check_codes` with
    the payload's coins, the error :func:`qlib.eden.decompress` gives (naming ``name.indices``)."""
    b, coins = payload.bits, None
    if payload.quantizer == "lm" and b >= 1 and b != math.floor(b):
        coins = draw_coins(payload.seed, payload.batch_shape, payload.D, b - math.floor(b), payload.indices.device)
    check_codes(payload.indices, b, payload.quantizer, coins, f"{name}.indices")


def check_codes(indices: torch.Tensor, bits: float, quantizer: str, coins, name: str = "payload.indices") -> None:
    """Raise unless every code is in its codebook (``2^b`` Lloyd–Max cells, those of the larger codebook
    where the coin is set; ``[-n, n]`` for ``"ee"``): a ValueError naming the field ``name``. The codes'
    range first (one reduction); the coordinate by coordinate test only where it cannot settle it."""
    idx, b = indices, bits
    if quantizer == "ee":
        n_max = _ee_table(ee_delta(b))[0]
        lo_ok, hi_ok, what = -n_max, n_max, f"in [-{n_max}, {n_max}]"
    else:
        lo = int(math.floor(b)) if b >= 1 else 1
        lo_ok, hi_ok = 0, 2**lo - 1 if coins is None else 2 ** (lo + 1) - 1
        what = f"< 2^{lo}" + ("" if coins is None else f" (2^{lo + 1} where the coin picks the larger codebook)")
    if idx.numel() == 0:
        return
    if idx.dtype == torch.uint8:
        least, most = 0, int(idx.max())
    else:
        least, most = (int(v) for v in torch.aminmax(idx))
    small = hi_ok if coins is None else 2**lo - 1  # the top code of the codebook every coordinate may use
    if lo_ok <= least and most <= small:
        return
    bad = idx > hi_ok if idx.dtype == torch.uint8 else (idx < lo_ok) | (idx > hi_ok)
    if coins is not None:  # a code of the larger codebook only where its coin is set
        bad |= ~coins & (idx > small)
    if bool(bad.any()):
        raise ValueError(f"{name} must hold codes of the codebook ({what}), got {int(idx[bad].reshape(-1)[0])}")


def draw_coins(seed, batch, D, f, device):
    """The coins of a fractional budget with fraction ``f = b − ⌊b⌋`` (:func:`coin_mask`), expanded to
    ``(*batch, D)``: one draw of ``D`` from the seed, the same for every row."""
    g = _h.generator(seed, "frac-bits", device)
    return (torch.rand(D, generator=g, device=device) < f).expand(*batch, D).contiguous()


def coin_mask(seed: int, D: int, bits: float, device="cpu") -> torch.Tensor:
    """Which of the ``D`` rotated coordinates use the ``⌊b⌋+1``-bit codebook at a fractional budget ``bits``
    (§4.1 super-bit: each with probability ``b − ⌊b⌋``, "shared randomness … independent weighted coin
    flips"; all False for an integer or sub-bit budget). One draw of ``D`` coins from the seed, the same
    for every row of a batch: each row has its own rotation, so the rows' errors stay independent, and the
    wire format (:mod:`qlib.wire`) can split any row's codes by the coins whatever batch it came in."""
    seed = check_seed("seed", seed)
    D = check_int("D", D, low=1)
    b = check_bits(bits)
    if b < 1 or b == math.floor(b):
        return torch.zeros(D, dtype=torch.bool, device=torch.device(device))
    return draw_coins(seed, (), D, b - math.floor(b), torch.device(device))


# -- the compiled CPU path (qlib/_kernels/eden.py) -----------------------------------------------------
def compiled_applies(t: torch.Tensor) -> bool:
    """Whether the compiled kernels take the tensor ``t``: on CPU, float32/float64, needing no gradient
    (:func:`qlib.hadamard.compiled_fwht_applies`), with the kernels importable."""
    return _h.compiled_fwht_applies(t) and _load("eden") is not None


@lru_cache(maxsize=None)
def _lm_kernel_params(bits: int, dtype: torch.dtype) -> tuple:
    """The arguments of :func:`qlib._kernels.eden.quantize_rows` for the ``bits`` codebook in ``dtype``: mode
    (0: sign only, 1: comparisons, 2: exact LUT, as :func:`lm_quantize`), the positive thresholds, 1/γ,
    and the LUT's count / next / prev, every float rounded to ``dtype`` as torch rounds them there
    (a Python number compared with or multiplying a tensor is converted to the tensor's dtype), and the
    decode table."""
    table, pos, lut = _lm_host_tables(bits)
    npdt = np.float32 if dtype == torch.float32 else np.float64
    mode = 0 if len(pos) == 0 else 1 if len(pos) <= 3 else 2
    one = np.ones(1, dtype=npdt)
    ig, count, nxt, prv = npdt(1.0), np.zeros(1, dtype=np.uint8), one, one
    if mode == 2:
        gamma, c, n_, p_ = lut
        ig, count = npdt(1.0 / gamma), np.asarray(c, dtype=np.uint8)
        nxt, prv = np.asarray(n_, dtype=npdt), np.asarray(p_, dtype=npdt)
    tab = _lm_table(bits, dtype, "cpu").numpy()
    return (mode, np.asarray(pos, dtype=npdt), ig, count, nxt, prv, tab)


def lm_quantize_compiled(r: torch.Tensor, eta: torch.Tensor, lo: int, coins,
                         times_r: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """Cell codes and centroids of ``u = r·η`` in one compiled pass: the same bits as
    ``lm_quantize(u, …)`` and :func:`dequantize` (codebook ``lo``, or ``lo + 1`` where the coin is set). The
    centroids are the thread's scratch array ``"eden.q"``: a temporary of the caller. ``times_r``: the
    products ``r·q`` instead of the centroids ``q`` (the terms of ``⟨r, q⟩`` as ``qlib.eden`` sums them)."""
    D, dt = r.shape[-1], r.dtype
    hi = None if coins is None else _lm_kernel_params(lo + 1, dt)
    cn = None if coins is None else coins.reshape(-1, D).numpy().view(np.uint8)
    rows = _rows(r, D)
    idx, q = _load("eden").quantize_rows(rows, _rows(eta, 1).reshape(-1), _lm_kernel_params(lo, dt), hi, cn,
                                         q=_kernels.scratch("eden.q", rows.shape, rows.dtype), times_r=times_r)
    return torch.from_numpy(idx).reshape(r.shape), torch.from_numpy(q).reshape(r.shape)


def decode_tables(indices: torch.Tensor, scale: torch.Tensor, bits: float, quantizer: str, coins):
    """(offset, table, table of the coins or None) of the codes ``indices`` on the compiled path (tables in
    the dtype of the ``scale``), or None where it does not apply: the indices not on CPU or not of the
    dtype compress gives (uint8 for ``"lm"``, int32 for ``"ee"``), the scale not taken by the kernels."""
    idx, S, b = indices, scale, bits
    dt = S.dtype
    if idx.device.type != "cpu" or not compiled_applies(S):
        return None
    if quantizer == "ee":
        if idx.dtype != torch.int32:
            return None
        off, com = _ee_table(ee_delta(b))
        return off, torch.tensor(com, dtype=dt).numpy(), None
    if idx.dtype != torch.uint8:
        return None
    lo = int(math.floor(b)) if b >= 1 else 1
    return 0, _lm_kernel_params(lo, dt)[-1], None if coins is None else _lm_kernel_params(lo + 1, dt)[-1]


def _scaled_compiled(indices, scale, bits, quantizer, coins, received=None) -> torch.Tensor | None:
    """``dequantize(…) * S`` in one compiled pass (with a loss mask ``received``: the lost coordinates 0 and
    the others ``q / p · S``, ``p`` the row's received fraction, the torch path's operations), or None
    where it does not apply (the torch path then runs: other index dtypes, codes outside the table)."""
    tabs = decode_tables(indices, scale, bits, quantizer, coins)
    if tabs is None or (received is not None and torch.broadcast_shapes(received.shape, indices.shape) != indices.shape):
        return None
    off, tab, tab_hi = tabs
    idx, D = indices, indices.shape[-1]
    cn = None if coins is None else coins.reshape(-1, D).numpy().view(np.uint8)
    if received is None:
        w = _load("eden").dequantize_rows(_rows(idx, D), off, tab, _rows(scale, 1).reshape(-1), tab_hi, cn)
    else:
        rec = _rows(received.expand(idx.shape), D).view(np.uint8)
        w = _load("eden").dequantize_masked_rows(_rows(idx, D), off, tab, _rows(scale, 1).reshape(-1), rec, tab_hi, cn)
    return None if w is None else torch.from_numpy(w).reshape(idx.shape)


def scaled_centroids(indices: torch.Tensor, scale: torch.Tensor, bits: float, quantizer: str, coins,
                     received: torch.Tensor | None = None) -> torch.Tensor:
    """The receiver's ``S · q`` (``scale`` per row times the centroids of the codes), shape of ``indices``;
    with a loss mask ``received`` (broadcastable to the codes) the lost coordinates zero-filled and the
    rest scaled by ``1/p``, ``p`` the received fraction of the row (§4.2; a row of which nothing arrived
    is 0). Compiled where it applies (with a mask too: the same operations in the same order, the same
    bits), else torch; a code outside its codebook (that of its coin) raises :func:`check_codes`'s error on
    either path (the compiled one flags it, the torch one checks)."""
    idx, S, b, D = indices, scale, bits, indices.shape[-1]
    dev, dt = idx.device, S.dtype
    received = None if received is None else received.to(dev)  # (checked by the caller)
    w = _scaled_compiled(indices, scale, bits, quantizer, coins, received)
    if w is not None:
        return w
    check_codes(idx, b, quantizer, coins)
    q = dequantize(idx, b, quantizer, coins, dt, dev)
    if received is not None:
        p = received.sum(-1, keepdim=True).to(dt) / D
        q = torch.where(received, q, torch.zeros_like(q)) / p.clamp_min(1.0 / D)
        q = torch.where(p > 0, q, torch.zeros_like(q))
    return q * S.unsqueeze(-1)


def received_by_keys(keys: torch.Tensor, lost: int) -> torch.Tensor:
    """The received mask of :func:`qlib.eden.received_mask`'s random mode from its uniform keys ``(*batch,
    D)``: False at each row's ``lost`` smallest keys (``1 <= lost < D``), keys tied at the cut lost in order of
    position. O(D): on CPU a radix selection on the keys' bits (``qlib/_kernels/eden.py``), else torch's
    ``kthvalue`` and a running count of the ties; the same mask."""
    D = keys.shape[-1]
    if compiled_applies(keys) and keys.dtype == torch.float32:
        return torch.from_numpy(_load("eden").lost_rows(_rows(keys, D), lost)).reshape(keys.shape)
    t = keys.kthvalue(lost, -1, keepdim=True).values  # the lost-th smallest key
    below, tied = keys < t, keys == t
    return ~(below | (tied & (tied.cumsum(-1) <= lost - below.sum(-1, keepdim=True))))
