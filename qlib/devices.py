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
