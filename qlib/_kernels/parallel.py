"""The parallel kernels' serial twins, shared by the kernel modules that run over models in parallel
(:mod:`qlib._kernels.engine`, :mod:`~qlib._kernels.quantize`, :mod:`~qlib._kernels.rqn`,
:mod:`~qlib._kernels.incremental`); no module outside this package loads it.

With one thread a parallel kernel's serial twin runs (``prange`` as ``range``), which starts no thread
pool: an OpenMP pool's idle workers spin after every parallel region and took the other core from a
notebook running beside (the book runs two at once, one thread each: measured 3.4× slower).

Why numba (as for :mod:`qlib._kernels.fwht` and :mod:`qlib._kernels.eden`): already a dependency, wheels
for Linux, macOS and Windows, no C toolchain at install, and float32 arithmetic written out operation by
operation (what exact agreement with the torch path needs). Two things made the difference in speed: one
loop nest per function (LLVM vectorizes it; a function holding many loops compiled to slow code), and
unsigned loop bounds where they come from an array (numba otherwise wraps negative indices inside the
loop, which stops vectorization: 3× on the quantizers). Compiled at the first call (cached on disk beside
each kernel module's file); the same bits from run to run (no reduction depends on the thread count).
"""

from __future__ import annotations

import types

import numba
from numba import njit

__all__ = ["Twins"]


class Twins:
    """The parallel kernels of one module and their serial twins. Used as a decorator, it returns
    ``njit(parallel=True)`` of the function and keeps its serial twin in :attr:`serial` (by name);
    :meth:`kernel` gives the one to run for a thread count."""

    def __init__(self):
        self.serial: dict = {}
        self.parallel: dict = {}

    def __call__(self, fn):
        twin = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__ + "_serial", fn.__defaults__,
                                  fn.__closure__)
        twin.__qualname__ = fn.__qualname__ + "_serial"
        twin.__doc__ = fn.__doc__
        self.serial[fn.__name__] = njit(cache=True)(twin)
        self.parallel[fn.__name__] = compiled = njit(cache=True, parallel=True)(fn)
        return compiled

    def kernel(self, name: str, threads: int):
        """The kernel ``name`` for ``threads`` threads: the parallel one (numba then uses that many
        threads, at most ``numba.config.NUMBA_NUM_THREADS``) or, for one thread, its serial twin."""
        if threads > 1:
            numba.set_num_threads(max(1, min(threads, numba.config.NUMBA_NUM_THREADS)))
            return self.parallel[name]
        return self.serial[name]
