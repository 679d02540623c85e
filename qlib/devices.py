"""Device resolution: ``device="auto"`` means CUDA when present, else CPU."""

from __future__ import annotations

import concurrent.futures
import contextlib
import ctypes
import ctypes.util
import multiprocessing
import os

import torch

from .validation import check_choice

_ALLOWED = ("auto", "cpu", "cuda")


def resolve(device: str | torch.device | None = "auto") -> torch.device:
    """Return the torch device for ``device`` ('auto', 'cpu', 'cuda', 'cuda:N' or a torch.device).

    'auto' (or None) picks CUDA when ``torch.cuda.is_available()``, else CPU. Asking for CUDA on a
    machine without it is a ``ValueError`` rather than a late failure inside a kernel.
    """
    if device is None:
        device = "auto"
    if isinstance(device, torch.device):
        dev = device
    elif isinstance(device, str):
        name = device.strip().lower()
        if name == "auto":
            return torch.device("cuda" if torch.cuda.is_available() else "cpu")
        if name.split(":")[0] not in _ALLOWED:
            raise ValueError(f"device must be one of {_ALLOWED} (or 'cuda:N'), got {device!r}")
        dev = torch.device(name)
    else:
        raise TypeError(f"device must be a str or torch.device, got {type(device).__name__}")
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device={device!r} was requested but CUDA is not available; use 'auto' or 'cpu'")
    return dev


#: how a :func:`cpu_pool`'s workers hold memory (see :func:`cpu_pool`)
MEMORY_POLICIES = ("default", "keep", "huge-pages")
#: glibc's tunable (glibc >= 2.35) that backs malloc's mappings and heap with transparent huge pages
HUGE_PAGES_TUNABLE = "glibc.malloc.hugetlb=1"


def cpu_pool(processes: int, memory: str = "default"):
    """A pool of ``processes`` spawned worker processes for independent CPU work (no state of this
    process is copied), each limited to this process's torch thread count (and BLAS, through
    threadpoolctl when installed): a ``concurrent.futures.ProcessPoolExecutor``. The work submitted must
    be picklable (module-level functions and their arguments).

    ``memory``, for work that allocates and frees the same large temporaries unit after unit:

    * ``"default"``: the C library's own behaviour (with glibc, every block over 32 MiB is a fresh
      ``mmap``, returned to the system when freed: each reuse faults every 4 KiB page again);
    * ``"keep"``: each worker calls :func:`keep_freed_memory` first (no faults after the first unit; the
      kept heap fragments, so a worker holds well above its live peak);
    * ``"huge-pages"``: the workers start with glibc's ``glibc.malloc.hugetlb=1`` tunable in their
      environment, so malloc asks for transparent huge pages (``madvise``) on what it maps: one fault per
      2 MiB instead of per 4 KiB, fewer TLB misses, and freed blocks still go back to the system (a
      worker holds its live peak); this process first returns its own freed memory
      (:func:`return_freed_memory`). Where the C library is not glibc >= 2.35 or the kernel's transparent
      huge pages are ``never``, it changes nothing.

    Measured on Figure 8's unit at the paper's d (``benchmarks/bench_fig8_memory.py``) the three trade
    time against memory; ``qlib.repro.eden.sweeps.nmse_sweep`` uses ``"huge-pages"``."""
    if isinstance(processes, bool) or not isinstance(processes, int) or processes < 1:
        raise ValueError(f"processes must be an integer >= 1, got {processes!r}")
    memory = check_choice("memory", memory, MEMORY_POLICIES)
    if memory == "huge-pages":
        return_freed_memory()  # this process waits while the workers hold their peaks
    env = {}
    if memory == "huge-pages":
        tun = [t for t in os.environ.get("GLIBC_TUNABLES", "").split(":") if t and not t.startswith("glibc.malloc.hugetlb=")]
        env["GLIBC_TUNABLES"] = ":".join([*tun, HUGE_PAGES_TUNABLE])
    return _Pool(env, max_workers=processes, mp_context=multiprocessing.get_context("spawn"),
                 initializer=_worker_init, initargs=(torch.get_num_threads(), memory == "keep"))


@contextlib.contextmanager
def _environ(env: dict):
    """``os.environ`` with ``env`` set, restored after."""
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


class _Pool(concurrent.futures.ProcessPoolExecutor):
    """A process pool whose workers start with ``env`` added to this process's environment (a spawned
    worker starts when a job is submitted: its environment is this process's at that moment)."""

    def __init__(self, env: dict, **kw):
        self._env = dict(env)
        super().__init__(**kw)

    def submit(self, fn, /, *args, **kwargs):
        with _environ(self._env):
            return super().submit(fn, *args, **kwargs)


#: glibc's ``mallopt`` parameters (``malloc.h``)
_M_TRIM_THRESHOLD, _M_MMAP_MAX = -1, -4


def keep_freed_memory() -> bool:
    """From now on in this process, glibc's ``malloc`` serves large blocks from its heap and keeps what is
    freed for the next request (``mallopt``: ``M_MMAP_MAX = 0``, ``M_TRIM_THRESHOLD = -1``, trimming off).
    By default every block over 32 MiB is a fresh ``mmap``, returned to the system when freed, so each
    reuse of a large temporary pays a page fault per 4 KiB page and the kernel's zeroing: on the 2-core VM
    12 s of system time in a 44 s unit of Figure 8 (10 × 2^24 floats per array, 4.4 M faults), 0.03 s
    with it. The memory stays with the process until it exits, and the heap it keeps fragments: in the
    `paper` run of Figure 8 each worker held up to 10.0 GB for units whose live peak is 4.0 GB (without it,
    3.4 GB, and 5–7 s of system time per 23 s unit). So this is for worker processes (:func:`cpu_pool`'s
    ``memory="keep"``) on a machine with that memory to spare, not a long-lived kernel; ``"huge-pages"``
    keeps most of its speed at the live peak.
    Returns whether it applied: False where the C library is not glibc (nothing changes there)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (macOS, Windows, musl without mallopt)
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(_M_MMAP_MAX, 0)) and bool(mallopt(_M_TRIM_THRESHOLD, -1))


def return_freed_memory() -> bool:
    """Give the memory this process has freed back to the system now (glibc's ``malloc_trim(0)``: the free
    pages of its heaps, not only the top). Returns whether it applied: False where the C library is not
    glibc."""
    try:
        trim = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc
        return False
    trim.argtypes, trim.restype = (ctypes.c_size_t,), ctypes.c_int
    trim(0)
    return True


def _worker_init(threads: int, keep_memory: bool) -> None:
    if keep_memory:
        keep_freed_memory()
    torch.set_num_threads(threads)
    try:
        from threadpoolctl import threadpool_limits  # deferred: optional (comes with scikit-learn)

        threadpool_limits(threads)
    except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
        pass
