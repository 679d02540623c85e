"""The codecs without a rotation: QSGD and its Elias-ω coded variant, SQ with Huffman-coded indices,
TernGrad and the uncompressed Float32, with :func:`fit_to_budget` for the variable-length ones. QSGD
measures its error from the shared stages of an input (its norms and uniforms, drawn once for every
level count: :class:`~qlib.compressors._fast_errors.ShortcutCompressor`)."""

from __future__ import annotations

import heapq
import math

import torch

from .. import _kernels
from .. import eden_theory as _eden_theory
from .. import hadamard as _h
from ..validation import check_alloc, check_array, check_callable, check_int, check_seed, nested
from ._base import FLOAT_BITS, Compressor, Message, check_int_bits, compressors_kernel, fixed_bits
from ._fast_errors import ShortcutCompressor
from ._sq import sq_decode, sq_encode, sq_fields
from ._stages import ROWS, MeanError, RowErrors, SharedStages, Stage, np_dtype

__all__ = ["QSGD", "QSGDElias", "SQHuffman", "TernGrad", "Float32", "elias_omega_length", "huffman_length",
           "fit_to_budget", "qsgd_fixed_bits"]


def _qsgd_levels(x, s, gen):
    norm = (x * x).sum(-1, keepdim=True).sqrt()
    kern = compressors_kernel(x)
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


def qsgd_fixed_bits(levels: int, batch: tuple, d: int) -> torch.Tensor:
    """The size of each of a batch of QSGD messages with ``levels`` magnitude levels: ``⌈log2(s + 1)⌉``
    bits per level and a sign bit per coordinate, plus a 32-bit norm."""
    w = math.ceil(math.log2(levels + 1))
    return fixed_bits(batch, (w + 1) * d + FLOAT_BITS)


class QSGD(ShortcutCompressor):
    """QSGD (Alistarh et al. 2017): ``x̂_i = ‖x‖·sign(x_i)·ξ_i/s`` with ``ξ_i`` the unbiased stochastic
    rounding of ``s|x_i|/‖x‖``. Fixed length: ``s = 2^b − 1`` magnitude levels (``b`` bits) + one
    sign bit per coordinate + a 32-bit norm (the paper gives no level count; our convention)."""

    name = "QSGD"
    shared_stage = Stage.QSGD

    def __init__(self, bits: int | None = None, levels: int | None = None):
        if (bits is None) == (levels is None):
            raise ValueError("give exactly one of bits (s = 2^bits − 1) or levels (s)")
        self.levels = 2 ** check_int_bits(bits) - 1 if bits is not None else check_int("levels", levels, low=1)
        self.bits = bits

    def _code_bits(self, lev, neg):
        return qsgd_fixed_bits(self.levels, lev.shape[:-1], lev.shape[-1])

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

    @staticmethod
    def _shared_draws(st: SharedStages) -> tuple:
        """``‖x‖`` per row as a column (as the encoder computes it) and the uniforms of the seed's ``"qsgd"``
        stream, as 2-D rows for the kernels: drawn once for every level count."""
        norm = st.keep(Stage.QSGD, (QSGD, "norm"), lambda: (st.x * st.x).sum(-1, keepdim=True).sqrt())
        u = st.keep(Stage.QSGD, (QSGD, "uniforms"), lambda: st.uniforms("qsgd", st.x.shape))
        return _kernels.rows(st.x, st.d), _kernels.rows(u, st.d), _kernels.rows(norm, 1).reshape(-1)

    def _stage_error(self, st, want_err):
        """From the shared norms and uniforms, one compiled pass per level count."""
        if st.kernel is None:
            return None
        out = None if want_err else _kernels.scratch(ROWS, (math.prod(st.batch), st.d), np_dtype(st.x))
        err = st.kernel.qsgd_rows(*self._shared_draws(st), self.levels, out)
        nbits = qsgd_fixed_bits(self.levels, st.batch, st.d)
        if want_err:
            return RowErrors(nbits, err=torch.from_numpy(err).reshape(st.batch))
        return RowErrors(nbits, decoded=torch.from_numpy(out).reshape(st.x.shape))

    def _stage_mean_error(self, st, xmean):
        """From the shared norms and uniforms: the errors of every QSGD of ``st.codecs`` from one read of the
        input (``qsgd_mean_dists``: the bits of the decoded rows and of their ``mean(0)``), at the first call;
        None where the kernel does not apply."""
        errs = st.keep(Stage.QSGD, (QSGD, "mean errors"), lambda: self._mean_errors(st, xmean))
        if errs is None or self.levels not in errs:
            return None
        return MeanError(errs[self.levels], qsgd_fixed_bits(self.levels, st.batch, st.d).sum())

    def _mean_errors(self, st: SharedStages, xmean: torch.Tensor) -> dict | None:
        if st.kernel is None or xmean.dtype != torch.float64 or xmean.device.type != "cpu":
            return None
        levels = tuple(sorted({c.levels for c in (self, *st.codecs) if type(c) is type(self)}))
        dists = st.kernel.qsgd_mean_dists(*self._shared_draws(st), levels, xmean.contiguous().numpy())
        return {lv: torch.tensor(e, dtype=torch.float64) for lv, e in zip(levels, dists)}


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
        kern = _kernels.load("compressors") if lev.device.type == "cpu" else None
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
        k, lo, hi = sq_encode(x, self.levels, _h.generator(seed, "sq", x.device))
        flat = k.reshape(-1, k.shape[-1]).long()
        nb = [2 * FLOAT_BITS + huffman_length(torch.bincount(r, minlength=self.levels).cpu().numpy()) for r in flat]
        nb = torch.tensor(nb, dtype=torch.long).reshape(k.shape[:-1])
        return Message(self.name, {"k": k, "lo": lo, "hi": hi}, nb, seed, tuple(x.shape))

    def _fields(self, shape):
        return sq_fields(shape[:-1], shape[-1], self.levels)

    def _decompress(self, m):
        return sq_decode(m.data["k"], m.data["lo"], m.data["hi"], self.levels)


class TernGrad(Compressor):
    """TernGrad (Wen et al. 2017): ``x̂_i = s·sign(x_i)·Bernoulli(|x_i|/s)``, ``s = max|x|``; 2 bits
    per coordinate (fixed length) + a 32-bit ``s``. Cited by the paper, not evaluated there."""

    name = "TernGrad"

    def _compress(self, x, seed):
        s = x.abs().amax(-1, keepdim=True)
        p = torch.where(s > 0, x.abs() / torch.where(s > 0, s, torch.ones_like(s)), torch.zeros_like(x))
        keep = torch.rand(x.shape, generator=_h.generator(seed, "terngrad", x.device), device=x.device, dtype=x.dtype) < p
        t = (torch.sign(x) * keep).to(torch.int8)
        return Message(self.name, {"t": t, "s": s.squeeze(-1)}, fixed_bits(x.shape[:-1], 2 * x.shape[-1] + FLOAT_BITS), seed, tuple(x.shape))

    def _fields(self, shape):
        return {"t": ("int", shape, -1, 1), "s": ("float", shape[:-1], 0.0, None)}

    def _decompress(self, m):
        return m.data["t"].to(m.data["s"].dtype) * m.data["s"].unsqueeze(-1)


class Float32(Compressor):
    """No compression: the float32 vector itself (32 bits per coordinate)."""

    name = "Float32"

    def _compress(self, x, seed):
        return Message(self.name, {"x": x.to(torch.float32)}, fixed_bits(x.shape[:-1], FLOAT_BITS * x.shape[-1]), seed, tuple(x.shape))

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
