"""Device resolution: ``device="auto"`` means CUDA when present, else CPU."""

from __future__ import annotations

import torch

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


def cpu_pool(processes: int):
    """A pool of ``processes`` spawned worker processes for independent CPU work (no state of this
    process is copied), each limited to this process's torch thread count (and BLAS, through
    threadpoolctl when installed): a ``concurrent.futures.ProcessPoolExecutor``. The work submitted must
    be picklable (module-level functions and their arguments)."""
    import concurrent.futures
    import multiprocessing

    if isinstance(processes, bool) or not isinstance(processes, int) or processes < 1:
        raise ValueError(f"processes must be an integer >= 1, got {processes!r}")
    return concurrent.futures.ProcessPoolExecutor(max_workers=processes, mp_context=multiprocessing.get_context("spawn"),
                                                  initializer=_worker_threads, initargs=(torch.get_num_threads(),))


def _worker_threads(threads: int) -> None:
    torch.set_num_threads(threads)
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(threads)
    except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
        pass
