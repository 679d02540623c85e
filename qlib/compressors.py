"""The baselines of paper 002 ({cite}`vargaftik2022eden`, spec §6) behind one interface.

Every compressor is an object with ``compress(x, seed) -> Message`` and ``decompress(message) -> x̂``
for a vector or a batch ``(*batch, d)`` of vectors (each row its own randomness), plus
``mean(xs, seed)`` (the receiver's estimate of the mean of the rows; linear sketches sum before
decoding) and ``roundtrip``. ``Message.nbits`` is the exact size of every row's message in bits;
the seed is shared randomness and is not counted.

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
meets a bit budget (Figure 5).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from . import eden as _eden
from . import hadamard as _h

__all__ = [
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


def _check_x(x):
    _eden._check_x(x)


def _check_int_bits(bits):
    if isinstance(bits, bool) or not isinstance(bits, (int, np.integer)) or not 1 <= bits <= 8:
        raise ValueError(f"bits must be an integer in [1, 8], got {bits!r}")
    return int(bits)


def _check_levels(name, k, lo):
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < lo:
        raise ValueError(f"{name} must be an int >= {lo}, got {k!r}")
    return int(k)


class Compressor:
    """Base class: subclasses implement ``_compress(x, seed)`` and ``_decompress(message)``."""

    name = "compressor"

    def compress(self, x: torch.Tensor, seed: int) -> Message:
        _check_x(x)
        return self._compress(x, _eden._check_seed(seed))

    def decompress(self, message: Message) -> torch.Tensor:
        if not isinstance(message, Message):
            raise TypeError(f"message must be a qlib.compressors.Message, got {type(message).__name__}")
        if message.compressor != self.name:
            raise ValueError(f"message was produced by {message.compressor!r}, not by {self.name!r}")
        return self._decompress(message)

    def roundtrip(self, x: torch.Tensor, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        m = self.compress(x, seed)
        return self.decompress(m), m.nbits

    def mean(self, xs: torch.Tensor, seed: int) -> tuple[torch.Tensor, int]:
        """Estimate of the mean of the rows of ``xs`` (n × d) and the total bits sent."""
        m = self.compress(xs, seed)
        return self.decompress(m).mean(0), m.total_bits

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in vars(self).items())})"


def _full(shape, value):
    return torch.full(tuple(shape), int(value), dtype=torch.long)


# -- EDEN and DRIVE -------------------------------------------------------------------------------
class EDEN(Compressor):
    """:mod:`qlib.eden` behind the common interface (all of its options pass through)."""

    name = "EDEN"

    def __init__(self, bits: float, **kw):
        _eden._check_bits(bits)
        self.bits, self.kw = float(bits), kw

    def _compress(self, x, seed):
        pl = _eden.compress(x, self.bits, seed, **self.kw)
        return Message(self.name, {"payload": pl}, pl.nbits, seed, tuple(x.shape))

    def _decompress(self, m):
        return _eden.decompress(m.data["payload"])


class DRIVE(Compressor):
    """DRIVE (1 bit/coordinate): ``x̂ = RHT^{-1}( ‖x‖²/‖r‖₁ · sign(r) )``, ``r = RHT(x)``, sign(0) = +1."""

    name = "DRIVE"

    def _compress(self, x, seed):
        batch, d = x.shape[:-1], x.shape[-1]
        D = _h.next_power_of_two(d)
        r = _h.rht(_h.pad_to_power_of_two(x), _eden._rotation_signs(seed, batch, 1, D, x.dtype, x.device))
        l1 = r.abs().sum(-1)
        S = torch.where(l1 > 0, (x * x).sum(-1) / l1.clamp_min(torch.finfo(x.dtype).tiny), torch.zeros_like(l1))
        return Message(self.name, {"sign": r >= 0, "scale": S}, _full(batch, D + 64), seed, tuple(x.shape))

    def _decompress(self, m):
        sign, S = m.data["sign"], m.data["scale"]
        batch, D = sign.shape[:-1], sign.shape[-1]
        w = (sign.to(S.dtype) * 2 - 1) * S.unsqueeze(-1)
        return _h.irht(w, _eden._rotation_signs(m.seed, batch, 1, D, S.dtype, S.device))[..., : m.shape[-1]]


# -- stochastic quantization and its rotated variants --------------------------------------------
def _sq_encode(v: torch.Tensor, levels: int, gen: torch.Generator):
    """Stochastic quantization to ``levels`` equispaced values on [min, max] per row (unbiased)."""
    lo = v.min(-1, keepdim=True).values
    hi = v.max(-1, keepdim=True).values
    span = hi - lo
    t = torch.where(span > 0, (v - lo) / torch.where(span > 0, span, torch.ones_like(span)), torch.zeros_like(v))
    t = t * (levels - 1)
    fl = t.floor()
    up = torch.rand(v.shape, generator=gen, device=v.device, dtype=v.dtype) < (t - fl)
    k = (fl + up.to(v.dtype)).clamp(0, levels - 1).to(torch.int32)
    return k, lo.squeeze(-1), hi.squeeze(-1)


def _sq_decode(k, lo, hi, levels):
    dt = lo.dtype
    return lo.unsqueeze(-1) + k.to(dt) * ((hi - lo) / max(levels - 1, 1)).unsqueeze(-1)


class HadamardSQ(Compressor):
    """Randomized Hadamard rotation + ``b``-bit stochastic quantization (Suresh et al. 2017)."""

    name = "Hadamard+SQ"

    def __init__(self, bits: int):
        self.bits = _check_int_bits(bits)

    def _compress(self, x, seed):
        batch, d = x.shape[:-1], x.shape[-1]
        D = _h.next_power_of_two(d)
        r = _h.rht(_h.pad_to_power_of_two(x), _eden._rotation_signs(seed, batch, 1, D, x.dtype, x.device))
        k, lo, hi = _sq_encode(r, 2**self.bits, _h.generator(seed, "sq", x.device))
        return Message(self.name, {"k": k, "lo": lo, "hi": hi}, _full(batch, self.bits * D + 64), seed, tuple(x.shape))

    def _decompress(self, m):
        r = _sq_decode(m.data["k"], m.data["lo"], m.data["hi"], 2**self.bits)
        batch, D = r.shape[:-1], r.shape[-1]
        return _h.irht(r, _eden._rotation_signs(m.seed, batch, 1, D, r.dtype, r.device))[..., : m.shape[-1]]


class KashinSQ(Compressor):
    """Kashin representation (Lyubarskii & Vershynin 2010) in the tight frame of a randomized
    Hadamard matrix with ``D_K ≥ d`` rows, then ``b``-bit SQ of the ``D_K`` coefficients.

    Defaults of TF-MOT's ``KashinHadamardEncodingStage`` used by the authors' FL code (spec §6):
    ``D_K = 2^⌈log2 d⌉``, doubled when ``d/D_K > 0.85``; 3 iterations, ``eta = 0.9``, ``delta = 1``,
    no clipping in the last one. Every coefficient costs ``b`` bits, i.e. ``b·D_K/d`` bits per
    coordinate (≈ 2b for power-of-two d) — the bit accounting of the authors' code.
    """

    name = "Kashin+SQ"

    def __init__(self, bits: int, n_iters: int = 3, eta: float = 0.9, delta: float = 1.0, pad_threshold: float = 0.85):
        self.bits = _check_int_bits(bits)
        self.n_iters = _check_levels("n_iters", n_iters, 1)
        if not 0 < eta <= 1:
            raise ValueError(f"eta must be in (0, 1], got {eta}")
        if not delta > 0:
            raise ValueError(f"delta must be > 0, got {delta}")
        if not 0 < pad_threshold <= 1:
            raise ValueError(f"pad_threshold must be in (0, 1], got {pad_threshold}")
        self.eta, self.delta, self.pad_threshold = float(eta), float(delta), float(pad_threshold)

    def frame_size(self, d: int) -> int:
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
        """The Kashin coefficients of ``x`` (``x = F*(coefficients)`` exactly)."""
        batch, d = x.shape[:-1], x.shape[-1]
        D = self.frame_size(d)
        s = self._frame(seed, batch, d, x.dtype, x.device)
        M = (x * x).sum(-1, keepdim=True).sqrt() / math.sqrt(self.delta * d)
        coeffs = torch.zeros((*batch, D), dtype=x.dtype, device=x.device)
        r = x
        for _ in range(self.n_iters - 1):
            c = torch.clamp(self._fwd(r, s, D), -M, M)
            coeffs = coeffs + c
            r = r - self._bwd(c, s)
            M = M * self.eta
        return coeffs + self._fwd(r, s, D)

    def _compress(self, x, seed):
        batch, d = x.shape[:-1], x.shape[-1]
        c = self.coefficients(x, seed)
        k, lo, hi = _sq_encode(c, 2**self.bits, _h.generator(seed, "sq", x.device))
        nb = _full(batch, self.bits * c.shape[-1] + 64)
        return Message(self.name, {"k": k, "lo": lo, "hi": hi}, nb, seed, tuple(x.shape))

    def _decompress(self, m):
        c = _sq_decode(m.data["k"], m.data["lo"], m.data["hi"], 2**self.bits)
        batch, d = c.shape[:-1], m.shape[-1]
        return self._bwd(c, self._frame(m.seed, batch, d, c.dtype, c.device))


# -- QSGD and its entropy-coded variant ----------------------------------------------------------
def _qsgd_levels(x, s, gen):
    norm = (x * x).sum(-1, keepdim=True).sqrt()
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
        self.levels = 2 ** _check_int_bits(bits) - 1 if bits is not None else _check_levels("levels", levels, 1)
        self.bits = bits

    def _code_bits(self, lev, neg):
        w = math.ceil(math.log2(self.levels + 1))
        return _full(lev.shape[:-1], (w + 1) * lev.shape[-1] + 32)

    def _compress(self, x, seed):
        lev, neg, norm = _qsgd_levels(x, self.levels, _h.generator(seed, "qsgd", x.device))
        nb = self._code_bits(lev, neg)
        return Message(self.name, {"lev": lev, "neg": neg, "norm": norm}, nb, seed, tuple(x.shape))

    def _decompress(self, m):
        lev, neg, norm = m.data["lev"], m.data["neg"], m.data["norm"]
        sgn = 1 - 2 * neg.to(norm.dtype)
        return norm.unsqueeze(-1) * sgn * lev.to(norm.dtype) / self.levels


def elias_omega_length(n: torch.Tensor) -> torch.Tensor:
    """Length in bits of the Elias-ω code of each positive integer in ``n``."""
    n = torch.as_tensor(n, dtype=torch.int64)
    if bool((n < 1).any()):
        raise ValueError("Elias-omega codes positive integers only (n >= 1)")
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
        flat = lev.reshape(-1, lev.shape[-1])
        out = []
        for row in flat:
            nz = torch.nonzero(row).squeeze(-1)
            gaps = torch.diff(nz, prepend=torch.tensor([-1], device=nz.device))  # zeros skipped + 1
            out.append(32 + int(elias_omega_length(gaps).sum() + nz.numel() + elias_omega_length(row[nz]).sum()))
        return torch.tensor(out, dtype=torch.long).reshape(lev.shape[:-1])


def huffman_length(counts) -> int:
    """Total length in bits of the Huffman code of symbols with these counts (≥ 1 bit per symbol)."""
    c = [int(v) for v in np.asarray(counts).ravel() if v > 0]
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
        self.levels = _check_levels("levels", levels, 2)

    def _compress(self, x, seed):
        k, lo, hi = _sq_encode(x, self.levels, _h.generator(seed, "sq", x.device))
        flat = k.reshape(-1, k.shape[-1]).long()
        nb = [64 + huffman_length(torch.bincount(r, minlength=self.levels).cpu().numpy()) for r in flat]
        nb = torch.tensor(nb, dtype=torch.long).reshape(k.shape[:-1])
        return Message(self.name, {"k": k, "lo": lo, "hi": hi}, nb, seed, tuple(x.shape))

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
        self.bits = _eden._check_bits(bits)
        self.rows = _check_levels("rows", rows, 1)

    def columns(self, d: int) -> int:
        return max(1, int(self.bits * d) // (32 * self.rows))

    def _hashes(self, seed, d, device):
        g = _h.generator(seed, "sketch", device)
        c = self.columns(d)
        h = torch.randint(0, c, (self.rows, d), generator=g, device=device)
        sg = _h.rademacher((self.rows, d), g, torch.float64, device)
        return h, sg, c

    def _compress(self, x, seed):
        batch, d = x.shape[:-1], x.shape[-1]
        h, sg, c = self._hashes(seed, d, x.device)
        flat = x.reshape(-1, d)
        T = torch.zeros((flat.shape[0], self.rows, c), dtype=x.dtype, device=x.device)
        for j in range(self.rows):
            T[:, j].index_add_(1, h[j], flat * sg[j].to(x.dtype))
        nb = _full(batch, 32 * self.rows * c)
        return Message(self.name, {"T": T.reshape(*batch, self.rows, c)}, nb, seed, tuple(x.shape))

    def _decode(self, T, seed, d):
        h, sg, _ = self._hashes(seed, d, T.device)
        est = torch.stack([T[..., j, :][..., h[j]] * sg[j].to(T.dtype) for j in range(self.rows)], -2)
        return est[..., 0, :] if self.rows == 1 else est.median(-2).values

    def _decompress(self, m):
        return self._decode(m.data["T"], m.seed, m.shape[-1])

    def mean(self, xs, seed):
        m = self.compress(xs, seed)
        return self._decode(m.data["T"].mean(0), seed, xs.shape[-1]), m.total_bits


class TernGrad(Compressor):
    """TernGrad (Wen et al. 2017): ``x̂_i = s·sign(x_i)·Bernoulli(|x_i|/s)``, ``s = max|x|``; 2 bits
    per coordinate (fixed length) + a 32-bit ``s``. Cited by the paper, not evaluated there."""

    name = "TernGrad"

    def _compress(self, x, seed):
        s = x.abs().amax(-1, keepdim=True)
        p = torch.where(s > 0, x.abs() / torch.where(s > 0, s, torch.ones_like(s)), torch.zeros_like(x))
        keep = torch.rand(x.shape, generator=_h.generator(seed, "terngrad", x.device), device=x.device, dtype=x.dtype) < p
        t = (torch.sign(x) * keep).to(torch.int8)
        return Message(self.name, {"t": t, "s": s.squeeze(-1)}, _full(x.shape[:-1], 2 * x.shape[-1] + 32), seed, tuple(x.shape))

    def _decompress(self, m):
        return m.data["t"].to(m.data["s"].dtype) * m.data["s"].unsqueeze(-1)


class Float32(Compressor):
    """No compression: the float32 vector itself (32 bits per coordinate)."""

    name = "Float32"

    def _compress(self, x, seed):
        return Message(self.name, {"x": x.to(torch.float32)}, _full(x.shape[:-1], 32 * x.shape[-1]), seed, tuple(x.shape))

    def _decompress(self, m):
        return m.data["x"]


def fit_to_budget(make, x: torch.Tensor, bits: float, seed: int, lo: int, hi: int = 2**16):
    """Largest integer parameter ``k`` in [lo, hi] with ``make(k).compress(x, seed)`` using at most
    ``bits`` bits per coordinate (mean over rows); bisection, assumes size grows with ``k``.
    Returns ``(k, compressor)`` or ``(None, None)`` when even ``make(lo)`` is over budget."""
    b = _eden._check_bits(bits)
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
# Experiment helpers for the chapter (input laws, vNMSE/NMSE sweeps); the maths stays above.
# ------------------------------------------------------------------------------------------------
LAWS = ("lognormal", "normal", "exponential", "chi2", "halfnormal", "beta", "uniform")


def input_law(name: str, shape, seed: int, dtype=torch.float32, device="cpu") -> torch.Tensor:
    """I.i.d. coordinates from a synthetic law of the paper's figures (spec §7): LogNormal(0,1),
    Normal(0,1), Exponential(1), χ²(1), HalfNormal(1), Beta(2,2), Uniform(0,1)."""
    if name not in LAWS:
        raise ValueError(f"law must be one of {LAWS}, got {name!r}")
    g = _h.generator(_eden._check_seed(seed), "law-" + name, device)
    shape = tuple(shape) if isinstance(shape, (tuple, list, torch.Size)) else (int(shape),)
    z = lambda: torch.randn(shape, generator=g, dtype=torch.float64, device=device)  # noqa: E731
    if name == "lognormal":
        x = z().exp()
    elif name == "normal":
        x = z()
    elif name == "exponential":
        x = -torch.log1p(-torch.rand(shape, generator=g, dtype=torch.float64, device=device))
    elif name == "chi2":
        x = z() ** 2
    elif name == "halfnormal":
        x = z().abs()
    elif name == "beta":  # Beta(2,2) = median of three uniforms
        x = torch.rand((*shape, 3), generator=g, dtype=torch.float64, device=device).median(-1).values
    else:
        x = torch.rand(shape, generator=g, dtype=torch.float64, device=device)
    return x.to(dtype)


FIXED_LENGTH = {
    "EDEN": lambda b: EDEN(b),
    "Hadamard+SQ": lambda b: HadamardSQ(int(b)),
    "Kashin+SQ": lambda b: KashinSQ(int(b)),
    "QSGD": lambda b: QSGD(int(b)),
    "Count-Sketch": lambda b: CountSketch(b),
}


def _timed(fn, device):
    import time

    if device.type == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    out = fn()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return out, time.perf_counter() - t0


def vnmse_sweep(methods, bits, dims, law="lognormal", trials=10, seed=0, device="cpu", dtype=torch.float32,
                batched=False):
    """vNMSE (mean, sd over ``trials`` vectors) and encode time per (method, b, d): a DataFrame.

    ``methods``: names from :data:`FIXED_LENGTH` or a dict name → factory(b). Each trial is one
    fresh vector of the ``law``; the encode time is the median over trials of one ``compress`` call
    on one vector (Figures 2 and 7). ``batched=True`` compresses the ``trials`` vectors as one
    batch (each row its own rotation) and reports the batch time per vector.
    """
    import pandas as pd

    from .devices import resolve

    dev = resolve(device)
    if not isinstance(methods, dict):
        methods = {m: FIXED_LENGTH[m] for m in methods}
    rows = []
    for d in dims:
        xs = [input_law(law, d, seed * 100003 + t, dtype, dev) for t in range(trials)]
        if batched:
            xb = torch.stack(xs)
        for b in bits:
            for name, make in methods.items():
                comp = make(b)
                if batched:
                    m, dt = _timed(lambda: comp.compress(xb, seed), dev)
                    v = _eden.vnmse(xb, comp.decompress(m)).cpu().numpy()
                    rows.append({"method": name, "bits": b, "d": d, "vnmse": float(v.mean()), "sd": float(v.std()),
                                 "encode_ms": 1e3 * dt / trials, "bits_per_coord": float(m.nbits.double().mean()) / d})
                    continue
                v, ts, nb = [], [], []
                for t, x in enumerate(xs):
                    m, dt = _timed(lambda: comp.compress(x, seed + t), dev)
                    v.append(float(_eden.vnmse(x, comp.decompress(m))))
                    ts.append(dt)
                    nb.append(m.total_bits / d)
                rows.append({"method": name, "bits": b, "d": d, "vnmse": np.mean(v), "sd": np.std(v),
                             "encode_ms": 1e3 * float(np.median(ts)), "bits_per_coord": float(np.mean(nb))})
    return pd.DataFrame(rows)


def nmse_sweep(methods, bits, d, n_clients=10, laws=("lognormal",), reps=3, seed=0, device="cpu", dtype=torch.float32):
    """NMSE of the mean of ``n_clients`` vectors (each client an i.i.d. draw of the law) per
    (law, method, b), mean and sd over ``reps`` repetitions (Figure 8)."""
    import pandas as pd

    from .devices import resolve

    dev = resolve(device)
    if not isinstance(methods, dict):
        methods = {m: FIXED_LENGTH[m] for m in methods}
    rows = []
    for law in laws:
        for r in range(reps):
            xs = input_law(law, (n_clients, d), seed * 1009 + r, dtype, dev)
            for b in bits:
                for name, make in methods.items():
                    est, nb = make(b).mean(xs, seed + r)
                    rows.append({"law": law, "method": name, "bits": b, "rep": r,
                                 "nmse": _eden.nmse(xs, est), "bits_per_coord": nb / (n_clients * d)})
    df = pd.DataFrame(rows)
    return (df.groupby(["law", "method", "bits"], as_index=False)
              .agg(nmse=("nmse", "mean"), sd=("nmse", "std"), bits_per_coord=("bits_per_coord", "mean")))


def variable_length_sweep(bits, d, laws=("lognormal",), trials=5, seed=0, dtype=torch.float64):
    """Figure 5: vNMSE at budget b of EDEN (no EE), EDEN with 𝓘_Δb (ideal arithmetic code),
    QSGD + Elias-ω and SQ + Huffman with their level counts fitted to the budget on the first trial
    vector (:func:`fit_to_budget`); a scheme that cannot meet the budget is left out."""
    import pandas as pd

    rows = []
    for law in laws:
        xs = input_law(law, (trials, d), seed, dtype)
        for b in bits:
            cands = {"EDEN": EDEN(b), "EDEN+EE": EDEN(b, quantizer="ee")}
            k, c = fit_to_budget(QSGDElias, xs[:1], b, seed, 1)
            if c is not None:
                cands["QSGD+Elias"] = c
            k, c = fit_to_budget(SQHuffman, xs[:1], b, seed, 2)
            if c is not None:
                cands["SQ+Huffman"] = c
            for name, comp in cands.items():
                xh, nb = comp.roundtrip(xs, seed + 1)
                rows.append({"law": law, "bits": b, "method": name, "vnmse": float(_eden.vnmse(xs, xh).mean()),
                             "bits_per_coord": float(nb.double().mean()) / d})
    return pd.DataFrame(rows)
