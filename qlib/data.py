"""Data directory and dataset loaders.

One setting points every loader at offline copies of the datasets: the ``data_dir`` argument of a
loader, else the ``QLIB_DATA_DIR`` environment variable, else ``~/.cache/qlib/data``. The batch
runner's ``--data-dir`` sets the environment variable for the notebooks it runs; CI points it at
``../shared/data``. Layout under the data directory::

    mnist/{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz   (the four IDX files)
    a9a/a9a, a9a/a9a.t                                      (LIBSVM text)
    tdc/<lowercase task name>.tab                           (PyTDC's own files)

A missing file raises :class:`MissingDataError` naming the file and where to get it. Nothing is
downloaded unless ``download=True`` is passed (or ``QLIB_DOWNLOAD=1`` is set), so tests and CI
never touch the network.
"""

from __future__ import annotations

import gzip
import os
import shutil
import tempfile
import urllib.request
from pathlib import Path

import numpy as np

ENV_VAR = "QLIB_DATA_DIR"
DOWNLOAD_ENV_VAR = "QLIB_DOWNLOAD"
DEFAULT_DIR = Path("~/.cache/qlib/data")

MNIST_FILES = {
    ("train", "images"): "train-images-idx3-ubyte.gz",
    ("train", "labels"): "train-labels-idx1-ubyte.gz",
    ("test", "images"): "t10k-images-idx3-ubyte.gz",
    ("test", "labels"): "t10k-labels-idx1-ubyte.gz",
}
MNIST_URL = "https://ossci-datasets.s3.amazonaws.com/mnist/"
A9A_URL = "https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/binary/"


class MissingDataError(FileNotFoundError):
    """A dataset file is not in the data directory (the message says which and how to get it)."""


def data_dir(path: str | os.PathLike | None = None) -> Path:
    """Resolve the data directory: ``path``, else ``$QLIB_DATA_DIR``, else ``~/.cache/qlib/data``."""
    if path is None:
        path = os.environ.get(ENV_VAR) or DEFAULT_DIR
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"data_dir must be a path or None, got {type(path).__name__}")
    return Path(path).expanduser().resolve()


_resolve_dir = data_dir  # loaders take a ``data_dir`` argument that shadows the function


def _want_download(download: bool | None) -> bool:
    if download is None:
        return os.environ.get(DOWNLOAD_ENV_VAR, "0").strip().lower() in ("1", "true", "yes")
    return bool(download)


def require_file(
    relpath: str,
    *,
    data_dir_: str | os.PathLike | None = None,
    url: str | None = None,
    download: bool | None = None,
) -> Path:
    """Return ``<data dir>/<relpath>``; if absent, download it from ``url`` when allowed, else raise.

    The error names the missing file, the data directory that was searched, the setting that
    changes it, and where the file can be obtained.
    """
    root = data_dir(data_dir_)
    target = root / relpath
    if target.is_file():
        return target
    if url is not None and _want_download(download):
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
        try:
            with os.fdopen(fd, "wb") as fh, urllib.request.urlopen(url, timeout=60) as resp:  # noqa: S310
                shutil.copyfileobj(resp, fh)
            os.replace(tmp, target)  # atomic: a killed download leaves no truncated file behind
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        return target
    how = f"download it from {url}" if url else "see the dataset's SOURCES.md"
    raise MissingDataError(
        f"missing data file {target} (data directory {root}). Point the data directory at an "
        f"offline copy (argument data_dir, or environment variable {ENV_VAR}; CI uses ../shared/data), "
        f"or {how} into that path (loaders do this themselves with download=True or {DOWNLOAD_ENV_VAR}=1)."
    )


def _read_idx(path: Path) -> np.ndarray:
    with gzip.open(path, "rb") as fh:
        raw = fh.read()
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] != 0x08:
        raise ValueError(f"{path} is not an unsigned-byte IDX file")
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim)]
    offset = 4 + 4 * ndim
    data = np.frombuffer(raw, dtype=np.uint8, offset=offset)
    if data.size != int(np.prod(dims)):
        raise ValueError(f"{path}: header says {dims} but holds {data.size} bytes")
    return data.reshape(dims)


def load_mnist(
    split: str = "train",
    *,
    data_dir: str | os.PathLike | None = None,
    download: bool | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """MNIST from the four IDX files: images (n, 28, 28) uint8 and labels (n,) int64.

    ``split`` is 'train' (60000) or 'test' (10000).
    """
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    out = []
    for kind in ("images", "labels"):
        name = MNIST_FILES[(split, kind)]
        path = require_file(f"mnist/{name}", data_dir_=data_dir, url=MNIST_URL + name, download=download)
        out.append(_read_idx(path))
    images, labels = out
    if images.shape[0] != labels.shape[0]:
        raise ValueError(f"MNIST {split}: {images.shape[0]} images but {labels.shape[0]} labels")
    return images, labels.astype(np.int64)


def load_a9a(
    split: str = "train",
    *,
    data_dir: str | os.PathLike | None = None,
    download: bool | None = None,
):
    """a9a (LIBSVM binary UCI Adult): sparse X (n, 123) float64 CSR and labels y in {-1, +1}."""
    from sklearn.datasets import load_svmlight_file

    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    name = "a9a" if split == "train" else "a9a.t"
    path = require_file(f"a9a/{name}", data_dir_=data_dir, url=A9A_URL + name, download=download)
    X, y = load_svmlight_file(str(path), n_features=123)
    return X, y.astype(np.int64)


def tdc_path(data_dir: str | os.PathLike | None = None) -> Path:
    """The folder to pass as PyTDC's ``path=`` (it reads ``<path>/<task>.tab`` offline when present)."""
    return _resolve_dir(data_dir) / "tdc"
