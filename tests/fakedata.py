"""Tiny stand-ins for datasets the offline data directory does not hold (CIFAR)."""

from __future__ import annotations

import io
import pickle
import tarfile
from pathlib import Path

import numpy as np


def fake_cifar10(data_dir: Path, per_batch: int, labels: list[int], seed: int = 0) -> Path:
    """A CIFAR-10 python tarball under ``data_dir/cifar10/`` with ``per_batch`` random images in each
    of the five training batches and the test batch."""
    rng = np.random.default_rng(seed)
    p = Path(data_dir) / "cifar10" / "cifar-10-python.tar.gz"
    p.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(p, "w:gz") as tar:
        for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
            blob = pickle.dumps({b"data": rng.integers(0, 256, (per_batch, 3072), dtype=np.uint8),
                                 b"labels": list(labels)})
            info = tarfile.TarInfo(f"cifar-10-batches-py/{name}")
            info.size = len(blob)
            tar.addfile(info, io.BytesIO(blob))
    return p
