"""Fast Walsh–Hadamard transform, the randomized Hadamard rotation and power-of-two padding.

The rotation every compressor of paper 002 (EDEN, {cite:p}`vargaftik2022eden`, §2)
uses is one *randomized Hadamard transform* (RHT): ``RHT(v) = H_D (s ∘ v) / sqrt(D)`` with ``s`` an
i.i.d. Rademacher vector drawn from a seed shared by sender and receiver and ``H_D`` the Sylvester
Hadamard matrix (``H_1 = [1]``, ``H_2k = [[H_k, H_k], [H_k, -H_k]]``). The normalized ``H_D/sqrt(D)``
is symmetric and its own inverse, so ``RHT^{-1}(r) = s ∘ (H_D r / sqrt(D))``.

:func:`fwht` computes ``H_D x / sqrt(D)`` over the last dimension in ``O(D log D)`` on one of two paths,
chosen automatically (``backend="auto"``):

* **compiled** (CPU tensors of float32/float64 that need no gradient): a numba kernel
  (``qlib/_kernels/fwht.py``) of radix-8 butterfly passes, each stride compiled as a constant so that LLVM
  vectorizes it, with levels 0–11 done per 2^12-element tile in L1, levels 12–14 per 2^15-element block
  in L2 and levels 15–20 per 2^21-element block in L3; levels 0–2 (within each group of eight) as LLVM
  vector code (lane permutations).
* **torch** (CUDA, autograd, other dtypes): the Kronecker factorisation
  ``H_D = H_{m_1} ⊗ … ⊗ H_{m_k}`` with radix ``m_i ≤ 16``: each factor is one batched GEMM with a 16×16
  ±1 matrix on a *contiguous* view, so ``log16 D`` passes instead of ``log2 D``; above 2^20 coordinates the
  inner 2^16-point transforms run chunk by chunk while the chunk is in cache before the outer factors.
  Plain differentiable torch, on any device.

Both paths give the Sylvester order of ``scipy.linalg.hadamard`` and agree to rounding.

The one caveat of the compiled path: its first call of each dtype compiles the kernel (about 20 s;
cached on disk beside the module, then about a second to load in each new process). Where numba cannot
be imported ``fwht`` stays correct on the torch path (``compiled_fwht_applies`` then says False). Why a
numba kernel rather than a compiled peer, and how fast each path is: ``benchmarks/README.md``.

The compressors' rotation from a seed (:func:`seeded_rht` / :func:`seeded_irht`, used by :mod:`qlib.eden`
and :mod:`qlib.compressors`) runs on CPU without making the ±1 sign vector: the compiled kernel
(``qlib/_kernels/rotation.py``, on the passes of the transform's) reads the signs as bits of the seeded random words (:func:`rotation_sign_bits`, the same draw as
:func:`rotation_signs`) while it transforms; the result is the same as :func:`rht` / :func:`irht` with
:func:`rotation_signs`, bit for bit. Elsewhere (CUDA, autograd, other dtypes, ``D < 8``) they are exactly
:func:`rht` / :func:`irht` with :func:`rotation_signs`. The signs depend on the seed alone, never on the
dtype of the tensor rotated (the float32 stream, cast): a message's receiver can decode in another
precision than its sender's.

Every function checks its arguments at the door; called inside another ``qlib`` function's
:func:`qlib.validation.skip_nested` block the checks pass trusted values through (the compressors call
:func:`seeded_rht` per message).

**Non-finite input** (the policy of :mod:`qlib.validation`): the transforms and rotations raise a
``ValueError`` naming the argument when it holds a NaN or ±inf; ``allow_nonfinite=True`` lets them
propagate instead (the transform is linear, as ``torch.fft``). The check costs no pass over the data:
each output coordinate of a Walsh–Hadamard transform is a ± sum of *every* input of its row, so the
first output coordinate of a row is finite exactly when the row is (or when its sum overflows, which the
error then says). It reads one value per row after the transform (on CUDA: one synchronisation).
"""

from __future__ import annotations

import math
import sys
from functools import lru_cache

import numpy as np
import torch

from . import _kernels
from .validation import (
    check_alloc,
    check_bool,
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
    "fwht",
    "compiled_fwht_applies",
    "hadamard_matrix",
    "is_power_of_two",
    "next_power_of_two",
    "pad_to_power_of_two",
    "rademacher",
    "rht",
    "irht",
    "generator",
    "rotation_signs",
    "rotation_sign_bits",
    "seeded_rht",
    "seeded_irht",
    "compiled_rotation_applies",
    "check_signs",
]

_RADIX_LOG2 = 4  # 16×16 factors: measured fastest on CPU (benchmarks/bench_hadamard.py)
_BLOCK = 2**16  # inner transform size done chunk by chunk above _BLOCKED_FROM
_CHUNK = 2**20  # elements per chunk (4 MiB in float32: stays in L2/L3)
_BLOCKED_FROM = 2**21
_H_CACHE: dict[tuple[int, torch.dtype, str], torch.Tensor] = {}


def is_power_of_two(n: int) -> bool:
    """True when the integer ``n`` is a positive power of two (1 counts: 2^0; 0 and negative integers
    are not). Raises ``TypeError`` for a value that is not an integer (a float, a string, ``None``)."""
    n = check_int("n", n)
    return n >= 1 and (n & (n - 1)) == 0


def _is_pow2(n: int) -> bool:
    return n >= 1 and (n & (n - 1)) == 0


def next_power_of_two(n: int) -> int:
    """Smallest power of two ``>= n`` (``n >= 1``)."""
    return 1 << (check_int("n", n, low=1) - 1).bit_length()


def hadamard_matrix(m: int, dtype: torch.dtype = torch.float64, device="cpu") -> torch.Tensor:
    """The unnormalized ``m × m`` Sylvester Hadamard matrix (entries ±1), ``m`` a power of two."""
    m = check_int("m", m, low=1)
    if not _is_pow2(m):
        raise ValueError(f"m must be a power of two, got {m}")
    check_alloc("m", m * m, 8, value=m, what="the m × m matrix")
    key = (int(m), dtype, str(device))
    if key not in _H_CACHE:
        h = torch.ones(1, 1, dtype=dtype)
        while h.shape[0] < m:
            h = torch.cat([torch.cat([h, h], 1), torch.cat([h, -h], 1)], 0)
        _H_CACHE[key] = h.to(device)
    return _H_CACHE[key]


def _vectors(x, name="x"):
    # finiteness is checked on the transform's output (_check_rows): no pass over the input
    x = check_tensor(name, x, finite=False, nonempty=False, convert=False)
    if x.dim() == 0:
        raise ValueError(f"{name} must have at least one dimension, got a scalar")
    return x


def _rows_finite(out, n: int) -> bool:
    """Whether the first coordinate of every length-``n`` row of the transform ``out`` (a tensor or an
    ndarray) is finite: exactly when every input row was (see the module docstring)."""
    if isinstance(out, torch.Tensor):
        if out.device.type == "cpu" and out.dtype in _COMPILED_DTYPES and not out.requires_grad:
            out = out.numpy()
        else:
            return not out.numel() or bool(torch.isfinite(out.reshape(-1, n)[:, 0]).all())
    if out.size == n:
        return math.isfinite(out.flat[0])
    return not out.size or bool(np.isfinite(out.reshape(-1, n)[:, 0]).all())


def _nonfinite(name: str, x: torch.Tensor | None) -> ValueError:
    """The error of a transform whose output is not finite: a NaN/inf in ``name``, or (``x`` finite,
    when still at hand) an overflow of its sums."""
    if x is not None and bool(torch.isfinite(x).all()):
        return ValueError(f"{name} is finite but its transform overflows {x.dtype} (a sum of its entries is "
                          f"not representable); scale {name} down")
    return ValueError(f"{name} must be finite (no NaN or inf); pass allow_nonfinite=True to let them "
                      "propagate (the transform is linear)")


def _check_rows(out, n: int, name: str, x: torch.Tensor | None):
    """``out`` if its rows are finite, else the error of :func:`_nonfinite`."""
    if not _rows_finite(out, n):
        raise _nonfinite(name, x)
    return out


def _stages(y: torch.Tensor, n: int, inner: int) -> torch.Tensor:
    """Apply the Kronecker factors for the axes of size n/inner (outer part); y is (B, n)."""
    B = y.shape[0]
    rem = int(math.log2(n // inner))
    while rem > 0:
        s = min(_RADIX_LOG2, rem)
        rem -= s
        m = 1 << s
        h = hadamard_matrix(m, y.dtype, y.device)
        outer = n // (inner * m)
        if inner == 1:
            y = (y.reshape(-1, m) @ h).reshape(B, n)  # h is symmetric
        else:
            y = torch.matmul(h, y.reshape(B * outer, m, inner)).reshape(B, n)
        inner *= m
    return y


_BACKENDS = ("auto", "torch", "compiled")
_COMPILED_DTYPES = (torch.float32, torch.float64)
_load = _kernels.load


def _kernel():
    """The compiled kernel module (:mod:`qlib._kernels.fwht`), or None when numba cannot be imported
    (then the torch path runs)."""
    return _load("fwht")


def _rotation():
    """The compiled rotation kernel module (:mod:`qlib._kernels.rotation`: the seeded rotation, its inverse,
    the Rademacher signs from bits), or None when numba cannot be imported."""
    return _load("rotation")


def compiled_fwht_applies(x: torch.Tensor) -> bool:
    """Whether ``fwht(x)`` (``backend="auto"``) takes the compiled CPU path: a CPU float32/float64 tensor
    that needs no gradient, with the kernel importable."""
    if not nested():
        check_tensor("x", x, floating=False, finite=False, nonempty=False, convert=False)
    return _applies(x)


def _applies(x: torch.Tensor) -> bool:
    return (
        x.dtype in _COMPILED_DTYPES
        and x.device.type == "cpu"
        and not (x.requires_grad and torch.is_grad_enabled())
        and _load("fwht") is not None
    )


def fwht(x: torch.Tensor, backend: str = "auto", *, allow_nonfinite: bool = False,
         overwrite: bool = False) -> torch.Tensor:
    """Orthonormal Walsh–Hadamard transform over the last dimension: ``x @ H_D / sqrt(D)``.

    Sylvester (natural) order, i.e. equal to ``x @ scipy.linalg.hadamard(D) / sqrt(D)``. Batched over
    leading dimensions, float32/float64, CPU/CUDA, differentiable (no in-place ops on the input). The
    transform is its own inverse. ``D`` must be a power of two (pad with :func:`pad_to_power_of_two`).
    A NaN or inf in ``x`` raises a ``ValueError`` (read from the first output coordinate of each row:
    no extra pass; module docstring); ``allow_nonfinite=True`` lets it propagate, as ``torch.fft``
    does. An empty batch ``(0, D)`` gives an empty result.
    ``backend``: ``"auto"`` (the compiled CPU kernel where :func:`compiled_fwht_applies`, else torch),
    ``"torch"`` or ``"compiled"`` (raises where the kernel cannot run). The result is a new tensor, except
    with ``overwrite=True``: then the compiled path transforms a contiguous ``x`` in place and returns it
    (for a caller's own temporary; the same bits).
    """
    if (backend == "auto" and type(allow_nonfinite) is bool and type(overwrite) is bool and type(x) is torch.Tensor
            and x.dim() and _applies(x)):
        n = x.shape[-1]  # fast path: the checks below hold for a CPU float32/float64 tensor
        if n & (n - 1) == 0 and n:
            return _fwht_compiled(x, n, not (allow_nonfinite or nested()), overwrite)
    _vectors(x)
    backend = check_choice("backend", backend, _BACKENDS)
    check = not (check_bool("allow_nonfinite", allow_nonfinite) or nested())
    overwrite = check_bool("overwrite", overwrite)
    n = x.shape[-1]
    if not _is_pow2(n):
        raise ValueError(
            f"fwht needs the last dimension of x to be a power of two, got {n}; "
            "use qlib.hadamard.pad_to_power_of_two first"
        )
    if backend == "compiled" and not _applies(x):
        raise ValueError(
            "backend='compiled' needs a CPU float32/float64 tensor that requires no gradient and numba "
            f"importable; got device {x.device.type}, dtype {x.dtype}, requires_grad {x.requires_grad}"
            + ("" if _kernel() is not None else " (numba cannot be imported)")
        )
    compiled = backend == "compiled" or (backend == "auto" and _applies(x))
    out = _fwht_compiled(x, n, overwrite=overwrite) if compiled else _fwht_torch(x, n)
    return _check_rows(out, n, "x", x) if check else out


_AT: dict = {}  # (n, torch dtype) -> (the kernel taking addresses, 1/sqrt(n) in that dtype)


def _fwht_compiled(x: torch.Tensor, n: int, check: bool = False, overwrite: bool = False) -> torch.Tensor:
    # the kernel with as little Python around it as possible: the rows travel as addresses (NumPy views,
    # from_numpy and reshapes cost ~15 us per call, as much as the whole transform at 2^12)
    in_place = overwrite and x.is_contiguous() and not x.is_neg() and not x.requires_grad
    if x.requires_grad:
        x = x.detach()  # only under no_grad (else the torch path runs)
    if x.is_neg():
        x = x.resolve_neg()
    if not x.is_contiguous():
        x = x.contiguous()
    at = _AT.get((n, x.dtype))
    if at is None:
        dt = np.dtype(str(x.dtype).removeprefix("torch."))
        at = _AT[(n, x.dtype)] = (_kernel().ROWS_AT[dt], dt.type(1.0 / math.sqrt(n)), dt)  # set: _applies(x)
    # NumPy's allocation, not torch.empty: NumPy asks for huge pages on large arrays (madvise), and at
    # 2^24 the 4 KiB page faults of a torch.empty output doubled the time of the transform
    if in_place:
        out = x
        o = x.numpy()
    else:
        o = np.empty(x.shape, dtype=at[2])
        out = torch.from_numpy(o)
    if o.size:
        at[0](x.data_ptr(), out.data_ptr(), o.size // n, n, at[1])  # (ndarray.ctypes.data alone: 2.5 us)
        # the non-finite check (module docstring): one value per row, read where it lies
        if check and not (math.isfinite(o.flat[0]) if o.size == n else np.isfinite(o.reshape(-1, n)[:, 0]).all()):
            raise _nonfinite("x", x)
    return out


def _fwht_torch(x: torch.Tensor, n: int) -> torch.Tensor:
    if n == 1:
        return x.clone()
    lead = x.shape[:-1]
    y = x.reshape(-1, n)
    if n >= _BLOCKED_FROM:
        # cache blocking: the inner 2^16-point transforms, chunk by chunk, then the outer factors
        blocks = y.reshape(-1, _BLOCK)
        rows = _CHUNK // _BLOCK
        if x.requires_grad and torch.is_grad_enabled():
            inner = torch.cat([_stages(blocks[i : i + rows], _BLOCK, 1) for i in range(0, blocks.shape[0], rows)])
        else:
            inner = torch.empty_like(blocks)
            for i in range(0, blocks.shape[0], rows):
                inner[i : i + rows] = _stages(blocks[i : i + rows], _BLOCK, 1)
        y = _stages(inner.reshape(-1, n), n, _BLOCK)
    else:
        y = _stages(y, n, 1)
    return (y * (1.0 / math.sqrt(n))).reshape(*lead, n)


def pad_to_power_of_two(x: torch.Tensor, *, allow_nonfinite: bool = False) -> torch.Tensor:
    """Zero-pad the last dimension of ``x`` to the next power of two (no copy if already one). A NaN or
    inf in ``x`` raises a ``ValueError`` (one pass over ``x``) unless ``allow_nonfinite``."""
    _vectors(x)
    if not (check_bool("allow_nonfinite", allow_nonfinite) or nested()):
        check_tensor("x", x, finite=True, nonempty=False, convert=False)
    d = x.shape[-1]
    if d == 0:
        raise ValueError("x must have a non-empty last dimension")
    D = next_power_of_two(d)
    if D == d:
        return x
    return torch.nn.functional.pad(x, (0, D - d))


def generator(seed: int, purpose: str = "rotation", device="cpu") -> torch.Generator:
    """A torch.Generator for one (seed, purpose) stream; sender and receiver derive the same one.

    Independent streams for the rotation, the fractional-bit coins and the sub-bit mask come from
    ``numpy.random.SeedSequence([seed, hash(purpose)])`` (the paper's shared randomness, §2): nothing but the seed is shared.
    """
    seed = check_seed("seed", seed)
    purpose = check_str("purpose", purpose)
    g = torch.Generator(device=torch.device(device))
    g.manual_seed(_stream_seed(int(seed), purpose))
    return g


@lru_cache(maxsize=4096)
def _stream_seed(seed: int, purpose: str) -> int:
    """The torch seed of the (seed, purpose) stream (cached: the SeedSequence costs tens of µs per message)."""
    tag = int.from_bytes(purpose.encode()[:8].ljust(8, b"\0"), "little")
    state = np.random.SeedSequence([seed, tag]).generate_state(2, dtype=np.uint32)
    return int(state[0]) << 31 ^ int(state[1])


def rademacher(shape, gen: torch.Generator, dtype=torch.float32, device="cpu") -> torch.Tensor:
    """I.i.d. ±1 entries (probability ½ each) of the given shape, drawn from ``gen``.

    Draws one random 32-bit word per 32 entries and unpacks its bits (far fewer random numbers than one
    Bernoulli per entry): entry ``32 i + j`` is −1 where bit ``j`` of word ``i`` is set. The stream does
    **not** depend on ``dtype``: every dtype gets the float32 signs, cast (±1 is exact in every floating
    dtype), so a sender and a receiver that compute in different precisions rebuild the same rotation
    (were the stream drawn per dtype, a message sent from a float64 tensor would decode to garbage in
    float32). ``shape``: an integer or a sequence of integers
    ``>= 0`` (as ``torch.empty``'s).
    """
    shape = _shape("shape", shape)
    if not isinstance(gen, torch.Generator):
        raise TypeError(f"gen must be a torch.Generator, got {type(gen).__name__}")
    if not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
        raise TypeError(f"dtype must be a floating torch.dtype, got {dtype!r}")
    n = math.prod(shape)
    check_alloc("shape", n, 8 if dtype == torch.float64 else 4, value=shape, what="the signs")
    dev = torch.device(device)
    words = _sign_draw(n, gen, dev)
    if dev.type == "cpu" and sys.byteorder == "little" and _rotation() is not None:
        # one compiled pass: bit j of word i (entry 32 i + j) is bit j % 8 of byte 4 i + j // 8
        out = np.empty(n, dtype=np.float32 if dtype == torch.float32 else np.float64)
        signs = torch.from_numpy(_rotation().signs_from_bits(words.numpy().view(np.uint8), out).reshape(shape))
        return signs if dtype == torch.float32 else signs.to(dtype)
    bits = ((words.unsqueeze(-1) >> torch.arange(32, device=dev, dtype=torch.int32)) & 1).reshape(-1)[:n]
    signs = ((bits << 31) | 0x3F800000).view(torch.float32).reshape(shape)  # the bit into the sign of 1.0f
    return signs if dtype == torch.float32 else signs.to(dtype)


def _sign_draw(n: int, gen: torch.Generator, dev) -> torch.Tensor:
    """The random draw behind ``n`` Rademacher signs, whatever their dtype: int32 words, entry ``32 i + j``
    the bit ``j`` of word ``i``."""
    return torch.randint(-(2**31), 2**31, ((n + 31) // 32,), generator=gen, device=dev, dtype=torch.int32)


def _shape(name, shape) -> tuple[int, ...]:
    """A tensor shape: an integer or a sequence of integers ``>= 0``."""
    if isinstance(shape, (tuple, list, torch.Size)):
        return tuple(check_int_sequence(name, shape, low=0, nonempty=False))
    return (check_int(name, shape, low=0),)


def rotation_signs(seed: int, batch=(), k: int = 1, D: int = 1, dtype=torch.float32, device="cpu") -> torch.Tensor:
    """The Rademacher signs of ``k`` chained rotations for every vector of a batch: shape
    ``(*batch, k, D)``, drawn from the seed's ``"rotation"`` stream (:func:`generator`).

    This is the ONE source of rotation randomness: every compressor that rotates (EDEN, DRIVE,
    Hadamard+SQ) calls it with the shared seed, so sender and receiver rebuild the same rotation
    and two compressors given the same seed use the same rotation. Pass the result to :func:`rht`
    and :func:`irht`. The signs are the same for every ``dtype`` (:func:`rademacher`): a receiver
    decoding in float32 rebuilds the rotation of a sender that compressed a float64 or float16 tensor.
    """
    k = check_int("k", k, low=1)
    D = check_int("D", D, low=1)
    if not isinstance(batch, (tuple, list, torch.Size)):
        raise TypeError(f"batch must be a tuple of integers >= 0 (the batch shape), got {batch!r}")
    batch = _shape("batch", batch)
    _check_signs_alloc(batch, k, D, 8 if dtype == torch.float64 else 4)
    return rademacher((*batch, k, D), generator(seed, "rotation", device), dtype, device)


def _check_signs_alloc(batch, k: int, D: int, itemsize: float) -> None:
    """Refuse the signs of ``k`` rotations of ``D`` coordinates for every vector of ``batch`` before they are
    drawn when they would not fit (:func:`qlib.validation.check_alloc`)."""
    n = math.prod(batch) * k * D
    check_alloc("(*batch, k, D)", math.ceil(n * itemsize), 1, value=(*batch, k, D), what="the rotation signs")


def rht(x: torch.Tensor, signs: torch.Tensor, *, allow_nonfinite: bool = False) -> torch.Tensor:
    """Randomized Hadamard rotation(s): for each row ``s_j`` of ``signs`` (shape ``(k, D)`` or
    ``(…, k, D)``), ``x ← fwht(s_j ∘ x)``. ``k = 1`` is the single RHT of the paper; ``k ≥ 2`` gives
    a rotation whose output law is closer to a uniform one (the paper's theorems assume a uniform rotation, §2).

    The arguments are checked by :func:`check_signs` (``signs`` entries must be ±1); like :func:`fwht`,
    a NaN or inf in ``x`` raises unless ``allow_nonfinite`` (then it propagates)."""
    check_signs(x, signs)
    check = not (check_bool("allow_nonfinite", allow_nonfinite) or nested())
    x0 = x
    for j in range(signs.shape[-2]):
        x = fwht(x * signs[..., j, :], allow_nonfinite=True)
    return _check_rows(x, x.shape[-1], "x", x0) if check else x


def irht(y: torch.Tensor, signs: torch.Tensor, *, allow_nonfinite: bool = False) -> torch.Tensor:
    """Inverse of :func:`rht` with the same ``signs``: ``y ← s_j ∘ fwht(y)`` for j = k…1 (a NaN or inf in
    ``y`` raises unless ``allow_nonfinite``, as in :func:`rht`)."""
    check_signs(y, signs, "y")
    check = not (check_bool("allow_nonfinite", allow_nonfinite) or nested())
    y0 = y
    for j in reversed(range(signs.shape[-2])):
        y = fwht(y, allow_nonfinite=True) * signs[..., j, :]
    return _check_rows(y, y.shape[-1], "y", y0) if check else y


def compiled_rotation_applies(x: torch.Tensor, D: int | None = None) -> bool:
    """Whether :func:`seeded_rht` / :func:`seeded_irht` take the compiled path for rows of length ``D``
    (default: the last dimension of ``x``) of the tensor ``x``'s dtype and device: the compiled FWHT
    applies (:func:`compiled_fwht_applies`), the rotation kernel is importable and ``D >= 8`` (whole sign bytes
    per row)."""
    if nested():
        return _rotation_applies(x, x.shape[-1] if D is None else D)
    x = check_tensor("x", x, floating=False, finite=False, nonempty=False, convert=False)
    if D is None:
        if x.dim() == 0:
            raise ValueError("x must have at least one dimension when D is not given, got a scalar")
        D = x.shape[-1]
    return _rotation_applies(x, check_int("D", D, low=1))


def _rotation_applies(x: torch.Tensor, D: int) -> bool:
    return D >= 8 and _applies(x) and _load("rotation") is not None


def rotation_sign_bits(seed: int, batch=(), k: int = 1, D: int = 1, dtype=torch.float32) -> np.ndarray:
    """The bits of :func:`rotation_signs` ``(seed, batch, k, D, dtype, "cpu")`` as a 1-D uint8 array (entry
    e of the flattened ``(*batch, k, D)`` signs: bit ``e % 8`` of byte ``e // 8``; set means −1): the same
    draw from the same stream, not expanded to floats (what the compiled rotation reads). The bits do not
    depend on ``dtype`` (kept for the callers that pass it; checked, then unused)."""
    if not nested():  # (seed: checked by generator below)
        k = check_int("k", k, low=1)
        D = check_int("D", D, low=1)
        if not isinstance(batch, (tuple, list, torch.Size)):
            raise TypeError(f"batch must be a tuple of integers >= 0 (the batch shape), got {batch!r}")
        batch = _shape("batch", batch)
        if not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
            raise TypeError(f"dtype must be a floating torch.dtype, got {dtype!r}")
        _check_signs_alloc(batch, k, D, 1 / 8)
    return _sign_bits(seed, tuple(batch), k, D)


@lru_cache(maxsize=4)
def _sign_bits(seed: int, batch: tuple, k: int, D: int) -> np.ndarray:
    """:func:`rotation_sign_bits`' draw, kept for the next calls with the same arguments (a sweep decodes
    every budget with one rotation: Figure 8 drew 10 × 2^24 signs 17 times per unit) and read-only, so
    that no caller can change what the others read."""
    n = math.prod((*batch, k, D))
    draw = _sign_draw(n, generator(seed, "rotation", "cpu"), torch.device("cpu"))
    bits = draw.numpy().astype("<i4", copy=False).view(np.uint8)  # little-endian bytes on any host
    bits.flags.writeable = False
    return bits


def seeded_rht(x: torch.Tensor, seed: int, k: int = 1, *, scratch: str | None = None,
               allow_nonfinite: bool = False) -> torch.Tensor:
    """The rotation every compressor uses: ``rht(x, rotation_signs(seed, x.shape[:-1], k, D, x.dtype,
    x.device))`` (``D = x.shape[-1]``, a power of two), every row its own signs. On CPU where
    :func:`compiled_rotation_applies`, one compiled pass per rotation with the signs read from the random
    bits as the transform loads its input (the same result, bit for bit). ``scratch``: on the compiled
    path the result is the calling thread's scratch array of that name (``qlib._kernels.scratch``), for a
    caller that drops it before its next call under that name; None: a new tensor. A NaN or inf in ``x``
    raises unless ``allow_nonfinite`` (as in :func:`rht`)."""
    check = False
    if not nested():
        check = not check_bool("allow_nonfinite", allow_nonfinite)
        x = _vectors(x)
        seed = check_seed("seed", seed)
        k = check_int("k", k, low=1)
        if scratch is not None:
            scratch = check_str("scratch", scratch)
        if not _is_pow2(x.shape[-1]):
            raise ValueError(f"x must have a power-of-two last dimension, got {x.shape[-1]}; "
                             "use pad_to_power_of_two first")
        check_alloc("k", math.prod(x.shape) * k, x.element_size(), value=k, what="the signs of k rotations")
    batch, D = x.shape[:-1], x.shape[-1]
    with skip_nested():  # checked above: the signs come from rotation_signs
        if not _rotation_applies(x, D):
            out = rht(x, rotation_signs(seed, batch, k, D, x.dtype, x.device))
            return _check_rows(out, D, "x", x) if check else out
        src = _kernels.rows(x, D)
        out = None if scratch is None else _kernels.scratch(scratch, src.shape, src.dtype)
        out = _rotation().rht_rows(src, rotation_sign_bits(seed, batch, k, D, x.dtype), k, out=out)
    if check:
        _check_rows(out, D, "x", x)
    return torch.from_numpy(out.reshape(x.shape))


def seeded_irht(y: torch.Tensor, seed: int, k: int = 1, *, overwrite: bool = False,
                allow_nonfinite: bool = False) -> torch.Tensor:
    """The inverse of :func:`seeded_rht`: ``irht(y, rotation_signs(seed, …))``. ``overwrite``: the
    compiled path may transform ``y`` in place (the caller's own temporary). A NaN or inf in ``y``
    raises unless ``allow_nonfinite`` (as in :func:`rht`)."""
    check = False
    if not nested():
        check = not check_bool("allow_nonfinite", allow_nonfinite)
        y = _vectors(y, "y")
        seed = check_seed("seed", seed)
        k = check_int("k", k, low=1)
        overwrite = check_bool("overwrite", overwrite)
        if not _is_pow2(y.shape[-1]):
            raise ValueError(f"y must have a power-of-two last dimension, got {y.shape[-1]}")
        check_alloc("k", math.prod(y.shape) * k, y.element_size(), value=k, what="the signs of k rotations")
    batch, D = y.shape[:-1], y.shape[-1]
    y0 = y
    with skip_nested():  # checked above: the signs come from rotation_signs
        if not _rotation_applies(y, D):
            out = irht(y, rotation_signs(seed, batch, k, D, y.dtype, y.device))
            return _check_rows(out, D, "y", y0) if check else out
        in_place = overwrite and y.is_contiguous() and not y.is_neg() and not y.requires_grad
        if not in_place:
            y = y.detach().resolve_neg().clone(memory_format=torch.contiguous_format)
        _rotation().irht_rows(y.numpy().reshape(-1, D), rotation_sign_bits(seed, batch, k, D, y.dtype), k)
    return _check_rows(y, D, "y", None if in_place else y0) if check else y


def check_signs(x: torch.Tensor, signs: torch.Tensor, name: str = "x") -> None:
    """Raise unless ``x`` is a floating tensor ``(…, D)`` and ``signs`` a ``(k, D)`` / ``(…, k, D)``
    tensor of ±1 entries whose leading dimensions broadcast with those of ``x`` (the arguments of
    :func:`rht` / :func:`irht`; ``name``: what the messages call ``x``). Inside a checked caller
    (:func:`qlib.validation.skip_nested`: the compressors, whose signs come from :func:`rotation_signs`)
    it checks nothing."""
    if nested():
        return
    _vectors(x, name)
    signs = check_tensor("signs", signs, finite=False, convert=False)
    if signs.dim() < 2:
        raise ValueError(f"signs must have shape (k, D) or (..., k, D), got shape {tuple(signs.shape)}")
    if signs.shape[-1] != x.shape[-1]:
        raise ValueError(f"signs has length {signs.shape[-1]} but {name} has last dimension {x.shape[-1]}")
    try:
        torch.broadcast_shapes(x.shape[:-1], signs.shape[:-2])
    except RuntimeError:
        raise ValueError(f"signs has batch shape {tuple(signs.shape[:-2])}, which does not broadcast with the "
                         f"batch shape {tuple(x.shape[:-1])} of {name}") from None
    if signs.numel() and not bool((signs.abs() == 1).all()):
        raise ValueError("signs must have entries ±1 (from rotation_signs)")
