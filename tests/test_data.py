"""Data directory resolution and the offline loaders (MNIST IDX, a9a)."""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path

import numpy as np
import pytest

from qlib import data


def test_data_dir_argument_env_default(monkeypatch, tmp_path):
    monkeypatch.delenv(data.ENV_VAR, raising=False)
    assert data.data_dir() == Path("~/.cache/qlib/data").expanduser().resolve()
    monkeypatch.setenv(data.ENV_VAR, str(tmp_path))
    assert data.data_dir() == tmp_path.resolve()
    assert data.data_dir(tmp_path / "x") == (tmp_path / "x").resolve()
    with pytest.raises(TypeError, match="data_dir must be a path"):
        data.data_dir(3)


def test_missing_file_names_file_and_how_to_get_it(tmp_path, monkeypatch):
    monkeypatch.delenv(data.DOWNLOAD_ENV_VAR, raising=False)
    with pytest.raises(data.MissingDataError) as exc:
        data.load_mnist("train", data_dir=tmp_path)
    msg = str(exc.value)
    assert str(tmp_path / "mnist" / "train-images-idx3-ubyte.gz") in msg
    assert data.ENV_VAR in msg and "https://" in msg and "download=True" in msg
    assert isinstance(exc.value, FileNotFoundError)


def test_download_is_blocked_in_tests(tmp_path):
    # with download=True the loader tries the network, which the test suite blocks: it fails loudly
    with pytest.raises(OSError):
        data.load_mnist("test", data_dir=tmp_path, download=True)
    assert list((tmp_path / "mnist").iterdir()) == []  # nothing half-written left behind


def test_idx_reader_roundtrip(tmp_path):
    arr = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)
    header = bytes([0, 0, 8, 3]) + b"".join(int(n).to_bytes(4, "big") for n in arr.shape)
    p = tmp_path / "x.gz"
    with gzip.open(p, "wb") as fh:
        fh.write(header + arr.tobytes())
    np.testing.assert_array_equal(data._read_idx(p), arr)
    with gzip.open(p, "wb") as fh:
        fh.write(header + arr.tobytes()[:-1])
    with pytest.raises(ValueError, match="header says"):
        data._read_idx(p)


def test_mnist_offline_copy(shared_data_dir):
    # md5 of the uncompressed test labels is the published one (SOURCES.md)
    with gzip.open(shared_data_dir / "mnist" / "t10k-labels-idx1-ubyte.gz", "rb") as fh:
        assert hashlib.md5(fh.read()).hexdigest() == "27ae3e4e09519cfbb04c329615203637"
    X, y = data.load_mnist("test", data_dir=shared_data_dir)
    assert X.shape == (10000, 28, 28) and X.dtype == np.uint8
    assert y.shape == (10000,) and set(np.unique(y)) == set(range(10))
    assert np.bincount(y).tolist() == [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]
    with pytest.raises(ValueError, match="split must be"):
        data.load_mnist("val", data_dir=shared_data_dir)


def test_a9a_offline_copy(shared_data_dir):
    X, y = data.load_a9a("test", data_dir=shared_data_dir)
    assert X.shape == (16281, 123)  # n_features fixed: a9a.t never uses feature 123
    assert (y == 1).sum() == 3846 and (y == -1).sum() == 12435


def test_tdc_path(shared_data_dir):
    assert (data.tdc_path(shared_data_dir) / "ames.tab").is_file()


# -- federated partitions and the loaders of data sets that are not shipped --------------------------
def test_partition_iid_covers_everything_once():
    parts = data.partition_iid(103, 10, seed=1)
    allidx = np.concatenate(parts)
    assert sorted(allidx.tolist()) == list(range(103))
    assert {len(p) for p in parts} == {10, 11}
    assert [p.tolist() for p in parts] == [p.tolist() for p in data.partition_iid(103, 10, seed=1)]
    with pytest.raises(ValueError, match="n_clients"):
        data.partition_iid(5, 6)


def test_partition_one_class_per_client():
    y = np.repeat(np.arange(10), [50, 61, 47, 55, 52, 49, 58, 60, 44, 51])
    parts = data.partition_by_class(y, 50, 1, seed=0)
    assert len(parts) == 50 and sorted(np.concatenate(parts).tolist()) == list(range(len(y)))
    assert all(len(np.unique(y[p])) == 1 for p in parts)
    assert np.bincount([y[p[0]] for p in parts]).tolist() == [5] * 10
    two = data.partition_by_class(y, 20, 2, seed=0)
    assert max(len(np.unique(y[p])) for p in two) <= 3 and sorted(np.concatenate(two).tolist()) == list(range(len(y)))


def test_partition_dirichlet_skew_depends_on_alpha():
    y = np.repeat(np.arange(10), 200)

    def mean_classes(alpha):
        parts = data.partition_dirichlet(y, 20, alpha, seed=0)
        assert sorted(np.concatenate(parts).tolist()) == list(range(len(y)))
        # effective number of classes per client (inverse Simpson index)
        eff = [1 / np.sum((np.bincount(y[p], minlength=10) / len(p)) ** 2) for p in parts]
        return float(np.mean(eff))

    assert mean_classes(0.05) < 2.5 < 9.0 < mean_classes(1000.0)
    with pytest.raises(ValueError, match="alpha"):
        data.partition_dirichlet(y, 20, 0.0)


@pytest.mark.parametrize("loader, relpath", [(data.load_cifar10, "cifar10/cifar-10-python.tar.gz"),
                                             (data.load_cifar100, "cifar100/cifar-100-python.tar.gz")])
def test_cifar_missing_names_file_and_source(tmp_path, monkeypatch, loader, relpath):
    monkeypatch.delenv(data.DOWNLOAD_ENV_VAR, raising=False)
    with pytest.raises(data.MissingDataError) as exc:
        loader("train", data_dir=tmp_path)
    assert str(tmp_path / relpath) in str(exc.value) and "cs.toronto.edu" in str(exc.value)


def test_cifar10_reader(tmp_path):
    from fakedata import fake_cifar10

    fake_cifar10(tmp_path, per_batch=2, labels=[1, 7])
    X, y = data.load_cifar10("train", data_dir=tmp_path)
    assert X.shape == (10, 3, 32, 32) and y.tolist() == [1, 7] * 5
    assert data.load_cifar10("test", data_dir=tmp_path)[0].shape == (2, 3, 32, 32)


def test_leaf_loaders(tmp_path):
    import json

    with pytest.raises(data.MissingDataError, match="femnist"):
        data.load_femnist("train", data_dir=tmp_path)
    (tmp_path / "femnist" / "train").mkdir(parents=True)
    blob = {"users": ["a", "b"], "num_samples": [1, 2],
            "user_data": {"a": {"x": [[1.0] * 784], "y": [3]}, "b": {"x": [[0.0] * 784, [0.5] * 784], "y": [4, 61]}}}
    (tmp_path / "femnist" / "train" / "s0.json").write_text(json.dumps(blob))
    X, y, parts = data.load_femnist("train", data_dir=tmp_path)
    assert X.shape == (3, 28, 28) and float(X[0].max()) == 0.0 and float(X[1].min()) == 1.0
    assert y.tolist() == [3, 4, 61] and [p.tolist() for p in parts] == [[0], [1, 2]]
    (tmp_path / "shakespeare" / "train").mkdir(parents=True)
    sblob = {"users": ["r"], "num_samples": [1], "user_data": {"r": {"x": ["to be or"], "y": [" "]}}}
    (tmp_path / "shakespeare" / "train" / "s.json").write_text(json.dumps(sblob))
    Xs, Ys, sp = data.load_shakespeare("train", data_dir=tmp_path, seq_len=10)
    ids = {c: i + 1 for i, c in enumerate(data.SHAKESPEARE_CHARS)}
    assert Xs[0].tolist() == [0, 0] + [ids[c] for c in "to be or"]
    assert Ys[0].tolist() == [0] + [ids[c] for c in "to be or "]


def test_corrupt_or_truncated_files_are_named(tmp_path, shared_data_dir):
    import gzip
    import shutil

    from qlib import data as D

    mn = tmp_path / "mnist"
    mn.mkdir()
    for name in D.MNIST_FILES.values():
        shutil.copy(shared_data_dir / "mnist" / name, mn / name)
    good = (mn / "t10k-labels-idx1-ubyte.gz").read_bytes()
    (mn / "t10k-labels-idx1-ubyte.gz").write_bytes(good[: len(good) // 2])      # a truncated download
    with pytest.raises(D.CorruptDataError, match=r"t10k-labels-idx1-ubyte.gz is not a readable gzip file.*"
                                                 r"https://ossci-datasets"):
        D.load_mnist("test", data_dir=tmp_path)
    raw = gzip.decompress(good)
    (mn / "t10k-labels-idx1-ubyte.gz").write_bytes(gzip.compress(raw[:-10]))  # valid gzip, missing bytes
    with pytest.raises(D.CorruptDataError, match="not the published MNIST file"):
        D.load_mnist("test", data_dir=tmp_path)
    (mn / "t10k-labels-idx1-ubyte.gz").write_bytes(gzip.compress(raw, mtime=0))  # re-gzipped: accepted
    assert D.load_mnist("test", data_dir=tmp_path)[1].shape == (10000,)

    a9 = tmp_path / "a9a"
    a9.mkdir()
    text = (shared_data_dir / "a9a" / "a9a.t").read_text()
    (a9 / "a9a.t").write_text(text[: len(text) // 2].rsplit("\n", 1)[0] + "\n")  # half the rows
    with pytest.raises(D.CorruptDataError, match=r"a9a.t is truncated: \d+ rows instead of 16281"):
        D.load_a9a("test", data_dir=tmp_path)
    (a9 / "a9a.t").write_text(text[: len(text) // 2])  # cut in the middle of a line
    with pytest.raises(D.CorruptDataError, match="a9a.t"):
        D.load_a9a("test", data_dir=tmp_path)


def test_missing_data_error_line_keeps_the_url(tmp_path):
    from qlib import data as D

    with pytest.raises(D.MissingDataError) as info:
        D.load_a9a("test", data_dir=tmp_path)
    line = str(info.value).splitlines()[0]
    assert "https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/binary/a9a.t" in line


def test_a9a_is_verified_by_content(tmp_path, shared_data_dir, monkeypatch):
    """Issue 30 §3: an a9a file with one label flipped, one line replaced, or the other split's file under
    the name (each keeping the row count) is rejected by its sha256, naming the file and both hashes;
    the real file loads and is hashed once per process."""
    import hashlib

    from qlib import data as D

    a9 = tmp_path / "a9a"
    a9.mkdir()
    good = (shared_data_dir / "a9a" / "a9a.t").read_bytes()
    lines = good.decode().splitlines(keepends=True)
    flipped = lines[:]
    flipped[7] = ("+1" + flipped[7][2:]) if flipped[7].startswith("-1") else ("-1" + flipped[7][2:])
    replaced = lines[:]
    replaced[100] = lines[101]
    swapped = (shared_data_dir / "a9a" / "a9a").read_bytes().splitlines(keepends=True)[: len(lines)]
    want = D.A9A_SHA256["a9a.t"]
    for bad in ("".join(flipped).encode(), "".join(replaced).encode(), b"".join(swapped)):
        assert bad != good
        (a9 / "a9a.t").write_bytes(bad)
        with pytest.raises(D.CorruptDataError, match=rf"a9a\.t is not the published file: its sha256 is "
                                                     rf"{hashlib.sha256(bad).hexdigest()}, expected {want}.*a9a\.t"):
            D.load_a9a("test", data_dir=tmp_path)
    (a9 / "a9a.t").write_bytes(good)
    calls = []
    real = hashlib.sha256
    monkeypatch.setattr(D.hashlib, "sha256", lambda *a: calls.append(1) or real(*a))
    for _ in range(2):
        X, y = D.load_a9a("test", data_dir=tmp_path)
        assert X.shape == (16281, 123)
    assert len(calls) == 1
    for name, h in D.A9A_SHA256.items():  # the offline copies are the published files
        D.verify_sha256(shared_data_dir / "a9a" / name, h)


def test_verify_sha256_arguments(tmp_path):
    from qlib import data as D

    f = tmp_path / "x.txt"
    f.write_bytes(b"abc")
    h = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"  # sha256("abc")
    assert D.verify_sha256(f, h) == f and D.verify_sha256(str(f), [h, "0" * 64]) == f
    with pytest.raises(D.CorruptDataError, match="x.txt is not the published file"):
        D.verify_sha256(f, "0" * 64)
    with pytest.raises(ValueError, match=r"\bexpected\b must hold sha256"):
        D.verify_sha256(f, "abc")
    with pytest.raises(TypeError, match=r"\bexpected\b"):
        D.verify_sha256(f, None)
    with pytest.raises(TypeError, match=r"\bpath\b"):
        D.verify_sha256(3, h)
    with pytest.raises(FileNotFoundError):
        D.verify_sha256(tmp_path / "absent", h)
    f.write_bytes(b"abd")  # edited after it passed: hashed anew (size equal, time differs)
    import os
    os.utime(f, ns=(1, 1))
    with pytest.raises(D.CorruptDataError):
        D.verify_sha256(f, h)
