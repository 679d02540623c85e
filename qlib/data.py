"""Data directory and dataset loaders.

One setting points every loader at offline copies of the datasets: the ``data_dir`` argument of a
loader, else the ``QLIB_DATA_DIR`` environment variable, else ``~/.cache/qlib/data``. The batch
runner's ``--data-dir`` sets the environment variable for the notebooks it runs; CI points it at
``../shared/data``. Layout under the data directory::

    mnist/{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz   (the four IDX files)
    a9a/a9a, a9a/a9a.t                                      (LIBSVM text)
    tdc/<lowercase task name>.tab                           (PyTDC's own files)
    cifar10/cifar-10-python.tar.gz                          (the "python version" archive)
    cifar100/cifar-100-python.tar.gz                        (the "python version" archive)
    femnist/{train,test}/*.json                             (LEAF FEMNIST JSON shards)
    shakespeare/{train,test}/*.json                         (LEAF Shakespeare JSON shards)

Federated partitions of a labelled data set (:func:`partition_iid`, :func:`partition_by_class`,
:func:`partition_dirichlet`) return one index array per client; they are seeded and deterministic.

A missing file raises :class:`MissingDataError` naming the file and where to get it. Nothing is
downloaded unless ``download=True`` is passed (or ``QLIB_DOWNLOAD=1`` is set), so tests and CI
never touch the network.

Importing this module does not import torch: the functions that check their arguments with
:mod:`qlib.validation` (which imports torch, about a second) import it when called.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import pickle
import shutil
import tarfile
import urllib.request
import zlib
from pathlib import Path

import numpy as np

from .atomic import atomic_file

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
CIFAR_URL = "https://www.cs.toronto.edu/~kriz/"
LEAF_URL = "https://github.com/TalwalkarLab/leaf (run its data/<task>/preprocess.sh, copy data/train and data/test)"


#: md5 of the *uncompressed* MNIST IDX files, as published with the dataset (and checked by
#: torchvision): robust to a re-gzipped copy, fails on a truncated or altered one
MNIST_RAW_MD5 = {
    "train-images-idx3-ubyte.gz": "6bbc9ace898e44ae57da46a324031adb",
    "train-labels-idx1-ubyte.gz": "a25bea736e30d166cdddb491f175f624",
    "t10k-images-idx3-ubyte.gz": "2646ac647ad5339dbf082846283269ea",
    "t10k-labels-idx1-ubyte.gz": "27ae3e4e09519cfbb04c329615203637",
}
#: rows of the a9a files: UCI Adult's published train/test split
A9A_ROWS = {"a9a": 32561, "a9a.t": 16281}
#: sha256 of the a9a files as the LIBSVM datasets page serves them (plain LIBSVM text, hashed as read).
#: Source: the offline copy's ``a9a/SOURCES.md``, which gives these values with the md5s
#: (fb3596510d780aaf76a06dc721d49662 / f0bb16cf1ee3e80ff560e9d132ee647e) and traces them to third-party
#: code that pins the sha256 of a9a (and a9a.t) as the official LIBSVM files and both md5s. LIBSVM itself
#: publishes no checksum. A copy with another label, line or row fails; a different file under the name too.
A9A_SHA256 = {
    "a9a": "f5d5ffd8d865ff41328e7ee043e4b020816914ff6843ff15b98905ddbedce906",
    "a9a.t": "1f448a153f0320399a7e40836eb207655b0bde0f21fc941cc472193daa9f5de9",
}


class MissingDataError(FileNotFoundError):
    """A dataset file is not in the data directory (the message says which and how to get it)."""

    def __str__(self) -> str:  # the whole message, URL included, on the summary line of a traceback
        return " ".join(str(a) for a in self.args)


class CorruptDataError(ValueError):
    """A dataset file is present but truncated or altered (the message names it and how to get it)."""


def _corrupt(path: Path, what: str, url: str) -> CorruptDataError:
    return CorruptDataError(f"data file {path} is {what}; replace it with a fresh copy from {url} "
                            f"(or the offline copy's SOURCES.md)")


_VERIFIED: set[tuple] = set()  # (resolved path, size, mtime in ns, expected hashes) of files that passed


def verify_sha256(path: str | os.PathLike, expected, *, url: str | None = None) -> Path:
    """Check a data file by its content: its sha256 must be one of ``expected`` (a 64-hex-digit string or a
    sequence of them), else :class:`CorruptDataError` (a ``ValueError``) naming the file, the expected and
    the actual hash, and where to get a fresh copy (``url``). Returns the path.

    The file is hashed as it is read by its loader (the bytes on disk for plain text such as LIBSVM or
    TDC ``.tab`` files; a loader of compressed files hashes the decompressed content itself, as MNIST's
    does, so that a re-compressed copy of the same content passes). A file that passed is remembered by
    its (path, size, modification time) for the life of the process: loading it again does not hash it
    again, and editing it (which changes its size or time) makes it hashed anew."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a path (str or os.PathLike), got {type(path).__name__}")
    if isinstance(expected, str):
        expected = (expected,)
    if not isinstance(expected, (tuple, list, frozenset, set)) or not expected:
        raise TypeError(f"expected must be a sha256 hex digest or a non-empty sequence of them, got {expected!r}")
    expected = tuple(expected)
    for e in expected:
        if not (isinstance(e, str) and len(e) == 64 and all(c in "0123456789abcdef" for c in e)):
            raise ValueError(f"expected must hold sha256 digests (64 lowercase hex digits), got {e!r}")
    p = Path(path)
    st = p.stat()
    key = (str(p.resolve()), st.st_size, st.st_mtime_ns, expected)
    if key in _VERIFIED:
        return p
    h = hashlib.sha256()
    with open(p, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    got = h.hexdigest()
    if got not in expected:
        want = " or ".join(expected)
        raise CorruptDataError(
            f"data file {p} is not the published file: its sha256 is {got}, expected {want}; it was altered, "
            f"truncated or replaced. Replace it with a fresh copy" + (f" from {url}" if url else "")
            + " (or the offline copy's SOURCES.md)")
    _VERIFIED.add(key)
    return p


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
        # atomic: a killed download leaves no truncated file behind
        with atomic_file(target) as fh, urllib.request.urlopen(url, timeout=60) as resp:  # noqa: S310
            shutil.copyfileobj(resp, fh)
        return target
    how = f"download it from {url}" if url else "see the dataset's SOURCES.md"
    raise MissingDataError(
        f"missing data file {target} (data directory {root}). Point the data directory at an "
        f"offline copy (argument data_dir, or environment variable {ENV_VAR}; CI uses ../shared/data), "
        f"or {how} into that path (loaders do this themselves with download=True or {DOWNLOAD_ENV_VAR}=1)."
    )


def _read_idx(path: Path, url: str = MNIST_URL) -> np.ndarray:
    st = path.stat()
    want = MNIST_RAW_MD5.get(path.name)
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns, ("md5 of the content", want))
    try:
        with gzip.open(path, "rb") as fh:
            raw = fh.read()
    except (OSError, EOFError, zlib.error) as exc:  # truncated or not gzip at all
        raise _corrupt(path, f"not a readable gzip file ({type(exc).__name__}: {exc})", url) from None
    if want is not None and key not in _VERIFIED:  # (hashed once per process, as verify_sha256)
        got = hashlib.md5(raw).hexdigest()  # noqa: S324 - the published checksum
        if got != want:
            raise _corrupt(path, f"not the published MNIST file (md5 of its content is {got}, expected {want})", url)
        _VERIFIED.add(key)
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] != 0x08:
        raise _corrupt(path, "not an unsigned-byte IDX file", url)
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim)]
    offset = 4 + 4 * ndim
    data = np.frombuffer(raw, dtype=np.uint8, offset=offset)
    if data.size != int(np.prod(dims)):
        raise _corrupt(path, f"truncated: its header says {dims} but it holds {data.size} bytes", url)
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
        out.append(_read_idx(path, MNIST_URL + name))
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
    """a9a (LIBSVM binary UCI Adult): sparse X (n, 123) float64 CSR and labels y in {-1, +1}.

    The file is checked by content against :data:`A9A_SHA256` (:func:`verify_sha256`; once per process)."""
    from sklearn.datasets import load_svmlight_file  # deferred: scikit-learn is optional (the book extra)

    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    name = "a9a" if split == "train" else "a9a.t"
    path = require_file(f"a9a/{name}", data_dir_=data_dir, url=A9A_URL + name, download=download)
    try:
        X, y = load_svmlight_file(str(path), n_features=123)
    except ValueError as exc:  # a line cut in the middle, or not LIBSVM text
        raise _corrupt(path, f"not a readable LIBSVM file ({exc})", A9A_URL + name) from None
    if X.shape[0] != A9A_ROWS[name]:
        raise _corrupt(path, f"truncated: {X.shape[0]} rows instead of {A9A_ROWS[name]} (UCI Adult's split)",
                       A9A_URL + name)
    verify_sha256(path, A9A_SHA256[name], url=A9A_URL + name)  # a flipped label, a replaced line
    return X, y.astype(np.int64)


def tdc_path(data_dir: str | os.PathLike | None = None) -> Path:
    """The folder to pass as PyTDC's ``path=`` (it reads ``<path>/<task>.tab`` offline when present)."""
    return _resolve_dir(data_dir) / "tdc"


# ------------------------------------------------------------------------------------------------
# CIFAR-10/100 and the LEAF federated data sets (read when a user has placed them; never shipped)
# ------------------------------------------------------------------------------------------------
def _load_cifar(kind: str, split: str, data_dir, download):
    from .validation import check_choice  # deferred: torch (via qlib.validation)

    check_choice("split", split, ("train", "test"))
    name = f"cifar-{kind}-python.tar.gz"
    path = require_file(f"cifar{kind}/{name}", data_dir_=data_dir, url=CIFAR_URL + name, download=download)
    want = ([f"data_batch_{i}" for i in range(1, 6)] if split == "train" else ["test_batch"]) if kind == "10" \
        else [split]
    key = b"labels" if kind == "10" else b"fine_labels"
    xs, ys = [], []
    with tarfile.open(path, "r:gz") as tar:
        members = {Path(m.name).name: m for m in tar.getmembers() if m.isfile()}
        for w in want:
            if w not in members:
                raise ValueError(f"{path} has no member {w!r}: not the CIFAR-{kind} python archive")
            d = pickle.load(tar.extractfile(members[w]), encoding="bytes")  # noqa: S301 - the user's own file
            xs.append(np.asarray(d[b"data"], dtype=np.uint8).reshape(-1, 3, 32, 32))
            ys.append(np.asarray(d[key], dtype=np.int64))
    return np.concatenate(xs), np.concatenate(ys)


def load_cifar10(split: str = "train", *, data_dir: str | os.PathLike | None = None, download: bool | None = None):
    """CIFAR-10 from ``cifar10/cifar-10-python.tar.gz``: images (n, 3, 32, 32) uint8, labels (n,)."""
    return _load_cifar("10", split, data_dir, download)


def load_cifar100(split: str = "train", *, data_dir: str | os.PathLike | None = None, download: bool | None = None):
    """CIFAR-100 from ``cifar100/cifar-100-python.tar.gz``: images (n, 3, 32, 32) uint8, fine labels (n,)."""
    return _load_cifar("100", split, data_dir, download)


def _leaf_shards(task: str, split: str, data_dir) -> list[Path]:
    from .validation import check_choice  # deferred: torch (via qlib.validation)

    check_choice("split", split, ("train", "test"))
    root = _resolve_dir(data_dir) / task / split
    files = sorted(root.glob("*.json")) if root.is_dir() else []
    if not files:
        raise MissingDataError(
            f"missing data files {root}/*.json (data directory {_resolve_dir(data_dir)}): the LEAF "
            f"{task} split {split!r}. Get it from {LEAF_URL} into that folder, or point the data directory "
            f"elsewhere (argument data_dir, or environment variable {ENV_VAR})."
        )
    return files


def _leaf_users(task: str, split: str, data_dir):
    for f in _leaf_shards(task, split, data_dir):
        with open(f) as fh:
            blob = json.load(fh)
        for u in blob["users"]:
            yield u, blob["user_data"][u]


def load_femnist(split: str = "train", *, data_dir: str | os.PathLike | None = None):
    """Federated EMNIST (LEAF FEMNIST, one client per writer) from ``femnist/<split>/*.json``:
    images (n, 28, 28) float32 in [0, 1] (LEAF stores 1 − intensity; returned as ink = 1 − value),
    labels (n,) in 0..61, and one index array per writer (the natural client partition)."""
    xs, ys, parts, n = [], [], [], 0
    for _, ud in _leaf_users("femnist", split, data_dir):
        x = 1.0 - np.asarray(ud["x"], dtype=np.float32).reshape(-1, 28, 28)
        xs.append(x)
        ys.append(np.asarray(ud["y"], dtype=np.int64))
        parts.append(np.arange(n, n + len(x)))
        n += len(x)
    return np.concatenate(xs), np.concatenate(ys), parts


#: the character vocabulary of the TFF Shakespeare task (ids 1..; 0 = padding, len + 1 = out of vocabulary)
SHAKESPEARE_CHARS = "dhlptx@DHLPTX $(,048cgkoswCGKOSW[_#'/37;?bfjnrvzBFJNRVZ\"&*.26:\naeimquyAEIMQUY]!%)-159\r"


def load_shakespeare(split: str = "train", *, data_dir: str | os.PathLike | None = None, seq_len: int = 80):
    """Federated Shakespeare (LEAF, one client per speaking role) from
    ``shakespeare/<split>/*.json``: token ids X (n, seq_len) and next-character targets Y
    (n, seq_len) int64 over :data:`SHAKESPEARE_CHARS` (0 = left padding), and one index array per
    client. LEAF's ``x`` are 80-character windows and ``y`` the character that follows."""
    from .validation import check_alloc, check_int  # deferred: torch (via qlib.validation)

    seq_len = check_int("seq_len", seq_len, low=1)
    table = {c: i + 1 for i, c in enumerate(SHAKESPEARE_CHARS)}
    oov = len(SHAKESPEARE_CHARS) + 1
    xs, ys, parts, n = [], [], [], 0
    for _, ud in _leaf_users("shakespeare", split, data_dir):
        check_alloc("seq_len", len(ud["x"]) * (seq_len + 1), 8 * 3, value=seq_len, what="a user's token windows")
        rows = []
        for window, nxt in zip(ud["x"], ud["y"]):
            ids = [table.get(c, oov) for c in (window + nxt)[-(seq_len + 1):]]
            rows.append([0] * (seq_len + 1 - len(ids)) + ids)
        if not rows:
            continue
        arr = np.asarray(rows, dtype=np.int64)
        xs.append(arr[:, :-1])
        ys.append(arr[:, 1:])
        parts.append(np.arange(n, n + len(arr)))
        n += len(arr)
    return np.concatenate(xs), np.concatenate(ys), parts


# ------------------------------------------------------------------------------------------------
# Federated partitions
# ------------------------------------------------------------------------------------------------
def partition_iid(n: int, n_clients: int, seed: int = 0) -> list[np.ndarray]:
    """A uniformly random split of ``range(n)`` into ``n_clients`` parts of sizes differing by ≤ 1."""
    from .validation import check_alloc, check_int, check_seed  # deferred: torch (via qlib.validation)

    n = check_int("n", n, low=1)
    n_clients = check_int("n_clients", n_clients, low=1, high=n)
    check_alloc("n", 2 * n, 8, value=n, what="a permutation of range(n) and its parts")
    perm = np.random.default_rng(check_seed("seed", seed)).permutation(n)
    return [np.sort(p) for p in np.array_split(perm, n_clients)]


def partition_by_class(labels, n_clients: int, classes_per_client: int = 1, seed: int = 0) -> list[np.ndarray]:
    """Label skew by shards (McMahan et al. 2017): sort the examples by label, cut them into
    ``n_clients · classes_per_client`` equal shards and give every client ``classes_per_client``
    shards. With ``classes_per_client=1`` and ``n_clients`` a multiple of the number of classes,
    every class is split evenly over ``n_clients / n_classes`` clients, so every client holds a
    single class (the severe label skew of App. I.7)."""
    from .validation import check_array, check_int, check_seed  # deferred: torch (via qlib.validation)

    y = check_array("labels", labels, ndim=1, dtype="int")
    n_clients = check_int("n_clients", n_clients, low=1)
    cpc = check_int("classes_per_client", classes_per_client, low=1)
    n_shards = n_clients * cpc
    if n_shards > len(y):
        raise ValueError(f"n_clients·classes_per_client must be <= len(labels) = {len(y)}, got {n_shards}")
    rng = np.random.default_rng(check_seed("seed", seed))
    classes = np.unique(y)
    if cpc == 1 and n_clients % len(classes) == 0:  # exactly one class per client, classes split evenly
        per = n_clients // len(classes)
        return [np.sort(p) for c in classes for p in np.array_split(rng.permutation(np.flatnonzero(y == c)), per)]
    order = np.lexsort((rng.random(len(y)), y))  # by label, random within a label
    shards = np.array_split(order, n_shards)
    pick = rng.permutation(n_shards).reshape(n_clients, cpc)
    return [np.sort(np.concatenate([shards[j] for j in row])) for row in pick]


def partition_dirichlet(labels, n_clients: int, alpha: float, seed: int = 0, min_size: int = 1) -> list[np.ndarray]:
    """Dirichlet(α) label skew (Hsu et al. 2019): for every class, the shares of its examples across
    the clients are drawn from Dirichlet(α·1); small α → each client dominated by few classes,
    large α → i.i.d. Redraws (up to 100 times) until every client has ``min_size`` examples."""
    from .validation import check_array, check_float, check_int, check_seed  # deferred: torch (via qlib.validation)

    y = check_array("labels", labels, ndim=1, dtype="int")
    n_clients = check_int("n_clients", n_clients, low=1, high=len(y))
    alpha = check_float("alpha", alpha, low=0.0, low_open=True)
    min_size = check_int("min_size", min_size, low=0)
    rng = np.random.default_rng(check_seed("seed", seed))
    classes = np.unique(y)
    for _ in range(100):
        parts: list[list[np.ndarray]] = [[] for _ in range(n_clients)]
        for c in classes:
            idx = rng.permutation(np.flatnonzero(y == c))
            share = rng.dirichlet(np.full(n_clients, alpha))
            cuts = (np.cumsum(share)[:-1] * len(idx)).astype(int)
            for k, chunk in enumerate(np.split(idx, cuts)):
                parts[k].append(chunk)
        out = [np.sort(np.concatenate(p)) for p in parts]
        if min(len(p) for p in out) >= min_size:
            return out
    raise ValueError(f"could not give every client >= {min_size} examples with alpha={alpha}; lower min_size")
