"""The machine and the checkout a run used: the device a name resolved to, the CPU model and cores,
the GPU, the versions of the packages that shape the numbers, the commit, and times in ISO form.

What an archive entry records as its provenance (:mod:`qlib.book.archive`) and what the *What ran* box
of an executed notebook says (:mod:`qlib.book.jobs`). (The account of a whole build, from the
runner's stamps, is :mod:`qlib.book.provenance`.)
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

import torch

__all__ = ["PACKAGES", "device_name", "machine", "packages", "git", "iso"]

PACKAGES = ("qlib", "torch", "numpy", "scipy", "pandas", "numba", "matplotlib", "seaborn", "papermill",
            "dp-accounting", "rdkit", "pytdc", "scikit-learn")


def device_name(device: str) -> str:
    """What ``device`` resolved to on this machine (``cuda (<GPU name>)`` for a GPU)."""
    try:
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        if str(device).startswith("cuda") and torch.cuda.is_available():
            return f"{device} ({torch.cuda.get_device_name()})"
    except (RuntimeError, AssertionError):  # a CUDA driver that cannot answer: the name as given
        pass
    return str(device)


def _cpu_model() -> str:
    try:
        for ln in Path("/proc/cpuinfo").read_text().splitlines():
            if ln.startswith("model name"):
                return ln.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine(device: str, threads: Any) -> dict:
    """The machine a run used: device asked for and resolved, CPU model and cores, threads, GPU name."""
    gpu = None
    try:
        if torch.cuda.is_available() and device != "cpu":
            gpu = torch.cuda.get_device_name()
    except (RuntimeError, AssertionError):  # a CUDA driver that cannot answer: no GPU named
        pass
    return {"requested": device, "resolved": device_name(device), "cpu": _cpu_model(),
            "cpu_count": os.cpu_count(), "threads": threads, "gpu": gpu, "python": platform.python_version(),
            "platform": platform.platform()}


def packages() -> dict[str, str]:
    """The installed versions of :data:`PACKAGES` (those installed)."""
    out = {}
    for p in PACKAGES:
        try:
            out[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            pass
    return out


def git(root: Path, *args: str) -> str:
    """The output of ``git <args>`` in ``root`` (empty where git or the checkout is missing)."""
    try:
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=30,
                              check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def iso(t: float) -> str:
    """A POSIX time as ISO 8601 in UTC, to the second."""
    return _dt.datetime.fromtimestamp(t, _dt.timezone.utc).isoformat(timespec="seconds")
