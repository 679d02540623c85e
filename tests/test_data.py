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
