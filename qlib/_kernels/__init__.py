"""The compiled (numba) CPU kernels of ``qlib``, one module per idea, and the one way to load them.

* :mod:`qlib._kernels.fwht` — the Walsh–Hadamard transform: its passes and the blocked one-row driver
  that the rotations and the decoders reuse (owner: :mod:`qlib.hadamard`);
* :mod:`qlib._kernels.rotation` — the seeded randomized rotation with its signs given as bits (owner:
  :mod:`qlib.hadamard`; :mod:`qlib.eden` also calls its ``lookup_irht_rows``, EDEN's decoding fused
  into the inverse rotation);
* :mod:`qlib._kernels.eden` — EDEN's Lloyd–Max quantization and dequantization (owner:
  :mod:`qlib.eden_quantizer`);
* :mod:`qlib._kernels.compressors` — the baselines' encoders: the stochastic quantizers' decisions, Kashin's
  elementwise steps, QSGD+Elias's code length (owner: :mod:`qlib.compressors`: its kernel gate
  ``_base.compressors_kernel`` and ``_scalar``);
* :mod:`qlib._kernels.compressor_errors` — the baselines' decoders fused with the measure of their error,
  and float64 squared distances (owner: :mod:`qlib.compressors`' shared stages, ``_stages``);
* :mod:`qlib._kernels.wire` — the wire format's 2- and 4-bit packing (owner: :mod:`qlib.wire`);
* :mod:`qlib._kernels.engine` — the batched engine's linear Adam epochs (owner: :mod:`qlib.engine`);
* :mod:`qlib._kernels.quantize`, :mod:`qlib._kernels.rqn`, :mod:`qlib._kernels.incremental` — the r_Q^n
  recorder's quantizers of many rows, Algorithm-1 statistics and incremental validation products of an MLP
  (owner: :mod:`qlib.recorder`);
* :mod:`qlib._kernels.parallel` — the serial twins of the parallel kernels, shared by the modules above
  (no owner outside the package);
* :mod:`qlib._kernels.lookup` — the codebook look-up ``tab[code]·S`` of EDEN's receiver, shared by
  ``rotation`` and ``eden`` (no owner outside the package);
* :mod:`qlib._kernels.distances` — the squared distances that the error kernels sum, shared by ``rotation``
  and ``compressor_errors`` (no owner outside the package).

The package is private to ``qlib`` (no user calls it); inside ``qlib`` its public names (:func:`load`,
:func:`scratch`, :func:`scratch_limit`, :func:`rows`, and a kernel module's names without a leading underscore) are what the
owners use, and a kernel module is loaded only by the modules named in :data:`OWNERS`
(``tests/test_architecture.py`` checks both). A kernel module checks nothing: its owner's public
function has checked the arguments at the door (:mod:`qlib.validation`).

**Loading.** ``load(name)`` imports a kernel module at its first call and remembers it; it returns None
where numba cannot be imported (missing, or incompatible with the installed NumPy): the owner then
takes its torch/NumPy path, which gives the same results. The import is lazy because numba's import
and the loading of the cached compiled code cost about a second, which a user who never takes the
compiled path should not pay. After the first call ``load`` is one dictionary look-up (~0.1 µs), cheap
enough for the per-call test of a hot path. ``name`` is a module of this package (``"fwht"``) or, for a
kernel module outside this package, an absolute module name.
"""

from __future__ import annotations

import importlib
import math
import threading
from contextlib import contextmanager
from types import ModuleType

import numpy as np
import torch

__all__ = ["OWNERS", "load", "scratch", "scratch_limit", "rows", "SCRATCH_MAX"]

#: the modules of ``qlib`` that may load each kernel module of this package (checked by a test)
OWNERS: dict[str, tuple[str, ...]] = {
    "fwht": ("qlib.hadamard",),
    "rotation": ("qlib.hadamard", "qlib.eden"),
    "eden": ("qlib.eden_quantizer",),
    "compressors": ("qlib.compressors._base", "qlib.compressors._scalar"),
    "compressor_errors": ("qlib.compressors._stages",),
    "wire": ("qlib.wire",),
    "engine": ("qlib.engine",),
    "quantize": ("qlib.recorder",),
    "rqn": ("qlib.recorder",),
    "incremental": ("qlib.recorder",),
    "parallel": (),  # the serial twins of the parallel kernels: loaded by the kernel modules only
    "lookup": (),  # EDEN's codebook look-up: loaded by the kernel modules rotation and eden only
    "distances": (),  # the squared distances: loaded by the kernel modules rotation and compressor_errors only
}

_LOADED: dict[str, ModuleType | None] = {}


def load(name: str) -> ModuleType | None:
    """The kernel module ``qlib._kernels.<name>`` (or the absolute module ``name`` when it has a dot),
    imported at the first call; None where numba cannot be imported (the caller's fallback path runs)."""
    mod = _LOADED.get(name, _LOADED)
    if mod is _LOADED:
        try:
            mod = importlib.import_module(name if "." in name else f"{__name__}.{name}")
        except ImportError:  # numba missing or incompatible with the installed NumPy
            mod = None
        _LOADED[name] = mod
    return mod


_SCRATCH = threading.local()  # per thread: {name: NumPy array} (see scratch)
#: bytes: larger temporaries are allocated afresh
SCRATCH_MAX = 64 * 2**20


_CAP = threading.local()  # per thread: the scratch_limit in force (bytes), else SCRATCH_MAX


@contextmanager
def scratch_limit(nbytes: int):
    """Within the block, the calling thread keeps scratch arrays of up to ``nbytes`` (at least
    :data:`SCRATCH_MAX`): a computation that makes the same large temporaries many times over (one input
    encoded and decoded at every budget) pays their page faults once. At exit the arrays above
    :data:`SCRATCH_MAX` are dropped and the limit in force before is restored."""
    before = getattr(_CAP, "v", SCRATCH_MAX)
    _CAP.v = max(int(nbytes), before)
    try:
        yield
    finally:
        _CAP.v = before
        pool = _SCRATCH.__dict__
        for name in [k for k, a in pool.items() if a.nbytes > before]:
            del pool[name]


def scratch(name: str, shape, dtype) -> np.ndarray:
    """A temporary NumPy array of ``shape`` / ``dtype`` that stays with the calling thread for the next call
    under the same ``name`` (its contents are not kept: only for arrays that do not leave the caller).

    A fresh multi-megabyte array costs one page fault per 4 KiB page when first written, and a fault costs
    microseconds, inside a virtual machine several: on the 2-core development VM, EDEN's two 4 MiB
    temporaries at d = 2^20 took ~1000 faults and ~4 ms a call, more than the rotation and the quantization
    together. Up to :data:`SCRATCH_MAX` bytes per name are kept; larger ones are allocated each call.
    Names are prefixed by their module (``"eden.r"``, ``"wire.codes"``) so that two callers never share one.
    Inside :func:`scratch_limit` the bound is that block's."""
    dtype = np.dtype(dtype)
    n = math.prod(shape)
    if n * dtype.itemsize > getattr(_CAP, "v", SCRATCH_MAX):
        return np.empty(shape, dtype=dtype)
    pool = _SCRATCH.__dict__
    buf = pool.get(name)
    if buf is None or buf.dtype != dtype or buf.size < n:
        buf = pool[name] = np.empty(n, dtype=dtype)
    return buf[:n].reshape(shape)


def rows(x: torch.Tensor, D: int) -> np.ndarray:
    """The CPU tensor ``x`` as a C-contiguous 2-D NumPy array of rows of length ``D`` (no copy when
    contiguous), the form every kernel takes. Only for a tensor that needs no gradient or runs under
    ``no_grad`` (the kernels' condition): it is detached."""
    if x.requires_grad:
        x = x.detach()
    if x.is_neg():
        x = x.resolve_neg()
    return (x if x.is_contiguous() else x.contiguous()).numpy().reshape(-1, D)
