"""qlib.molecules: TDC tasks through PyTDC (offline), embedders, the embedding cache, bad input."""

from __future__ import annotations

import hashlib
import shutil
import warnings

import numpy as np
import pytest

from qlib import molecules as M
from qlib.data import MissingDataError

SMALL = "Carcinogens_Lagunin"        # 280 rows, the smallest task file


@pytest.fixture()
def small_dir(tmp_path, shared_data_dir):
    """A data directory holding a copy of one small real task file."""
    (tmp_path / "tdc").mkdir()
    shutil.copy(shared_data_dir / "tdc" / "carcinogens_lagunin.tab", tmp_path / "tdc")
    return tmp_path


@pytest.fixture()
def counting_embedder():
    calls = []

    def fn(smiles):
        calls.append(len(smiles))
        return np.array([[len(s), s.count("C")] for s in smiles], dtype=np.float64)

    M.register_embedder("test_len", fn, version="1", overwrite=True)
    yield calls
    if "test_len" in M.embedder_names():
        M.unregister_embedder("test_len")


def test_all_21_tasks_known_by_name():
    assert len(M.TASKS) == 21
    assert len(M.task_names("classification")) == 14 and len(M.task_names("regression")) == 7
    assert M.task_info("hERG_Karim").group == "Tox" and M.task_info("Caco2_Wang").group == "ADME"
    assert M.task_info("PAMPA_NCATS").filename == "pampa_ncats.tab"
    with pytest.raises(ValueError, match="task must be one of"):
        M.task_info("NotATask")
    with pytest.raises(ValueError, match="kind must be one of"):
        M.task_names("ranking")


def test_load_real_small_tasks(shared_data_dir):
    t = M.load_task(SMALL, data_dir=shared_data_dir)
    assert t.kind == "classification" and len(t) == 280 and t.n_nan_labels == 0
    assert set(np.unique(t.y)) == {0.0, 1.0}
    f = M.load_task("HydrationFreeEnergy_FreeSolv", data_dir=shared_data_dir)
    assert f.kind == "regression" and len(f) == 642 and np.isfinite(f.y).all()


def test_absent_task_file_names_the_file(tmp_path, shared_data_dir, monkeypatch):
    monkeypatch.delenv("QLIB_DOWNLOAD", raising=False)
    with pytest.raises(MissingDataError, match="pampa_ncats.tab"):
        M.load_task("PAMPA_NCATS", data_dir=shared_data_dir)
    with pytest.raises(MissingDataError, match="carcinogens_lagunin.tab"):
        M.load_task(SMALL, data_dir=tmp_path)


def test_truncated_and_empty_files_are_rejected(small_dir):
    p = small_dir / "tdc" / "carcinogens_lagunin.tab"
    raw = p.read_bytes()
    p.write_bytes(raw[: len(raw) - 7])                 # cut mid-line
    with pytest.raises(ValueError, match="truncated"):
        M.load_task(SMALL, data_dir=small_dir)
    p.write_bytes(b"")
    with pytest.raises(ValueError, match="empty"):
        M.load_task(SMALL, data_dir=small_dir)
    p.write_bytes(b"a\tb\nx\ty\n")
    with pytest.raises(ValueError, match="no 'Y' column"):
        M.load_task(SMALL, data_dir=small_dir)


def test_nan_labels_are_dropped_and_counted(small_dir, monkeypatch):
    p = small_dir / "tdc" / "carcinogens_lagunin.tab"
    lines = p.read_text().splitlines()
    for i in (1, 5):                                    # blank the label of two rows
        parts = lines[i].split("\t")
        parts[-1] = ""
        lines[i] = "\t".join(parts)
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match="carcinogens_lagunin.tab is not the published file"):
        M.load_task(SMALL, data_dir=small_dir)          # an edited file: its hash differs
    # a copy the user vouches for: its hash added to the table (the documented way)
    monkeypatch.setitem(M.TDC_SHA256, "carcinogens_lagunin.tab", (hashlib.sha256(p.read_bytes()).hexdigest(),))
    t = M.load_task(SMALL, data_dir=small_dir)
    assert t.n_nan_labels == 2 and len(t) == 278 and np.isfinite(t.y).all()


def test_task_files_are_verified_by_content(small_dir, shared_data_dir, monkeypatch):
    """Issue 30 §3: a file cut at a line boundary, with one label flipped, with one SMILES edited, or another
    task's file under the name is rejected with a ValueError naming the file and both hashes; the real file
    loads, and a second load does not hash it again."""
    from qlib import data as D

    p = small_dir / "tdc" / "carcinogens_lagunin.tab"
    good = p.read_bytes()
    want = M.TDC_SHA256["carcinogens_lagunin.tab"][0]
    assert hashlib.sha256(good).hexdigest() == want
    lines = good.decode().splitlines(keepends=True)
    i = next(j for j in range(1, len(lines)) if lines[j].rstrip("\n").endswith("\t1"))
    flipped = lines[:i] + [lines[i].rstrip("\n")[:-1] + "0\n"] + lines[i + 1:]
    cut = lines[: len(lines) // 2]                                       # at a line boundary: ends with "\n"
    smiles = lines[:i] + [lines[i].replace("C", "N", 1)] + lines[i + 1:]
    other = (shared_data_dir / "tdc" / "skin_reaction.tab").read_bytes()  # another task's file
    for what, bad in (("cut", "".join(cut).encode()), ("flipped", "".join(flipped).encode()),
                      ("smiles", "".join(smiles).encode()), ("other", other)):
        assert bad != good
        p.write_bytes(bad)
        with pytest.raises(ValueError, match=r"carcinogens_lagunin\.tab is not the published file: its sha256 is "
                                             rf"{hashlib.sha256(bad).hexdigest()}, expected {want}") as info:
            M.load_task(SMALL, data_dir=small_dir)
        assert isinstance(info.value, D.CorruptDataError), what
    p.write_bytes(good)
    calls = []
    real = hashlib.sha256
    monkeypatch.setattr(D.hashlib, "sha256", lambda *a: calls.append(1) or real(*a))
    for _ in range(2):
        t = M.load_task(SMALL, data_dir=small_dir)
        assert len(t) == 280
    assert len(calls) == 1  # hashed once: the (path, size, mtime) is remembered
    # every real offline file matches its table entry (and every task has one)
    assert {t.filename for t in M.TASKS.values()} == set(M.TDC_SHA256)
    for f in sorted((shared_data_dir / "tdc").glob("*.tab")):
        D.verify_sha256(f, M.TDC_SHA256[f.name])


@pytest.mark.parametrize("name,dim", [("morgan", 1024), ("maccs", 167), ("rdkit2d", 217)])
def test_rdkit_embedders_and_invalid_smiles(name, dim):
    emb = M.embed(["CCO", "not_a_smiles((", "c1ccccc1O", "C1CC"], name)
    assert emb.X.shape == (2, dim) and emb.n_invalid == 2
    assert emb.valid.tolist() == [True, False, True, False]
    assert np.isfinite(emb.X).all() and emb.X.dtype == np.float32
    assert not np.allclose(emb.X[0], emb.X[1])


def test_minimol_embedder_offline():
    emb = M.embed(["CCO", "c1ccccc1O"], "minimol")
    assert emb.X.shape == (2, 512) and np.isfinite(emb.X).all()


def test_bad_embedder_output_raises():
    M.register_embedder("test_nan", lambda s: np.full((len(s), 3), np.nan), version="1", overwrite=True)
    M.register_embedder("test_rows", lambda s: np.zeros((len(s) + 1, 3)), version="1", overwrite=True)
    try:
        with pytest.raises(ValueError, match="'test_nan' returned non-finite values for 2"):
            M.embed(["CCO", "CCN"], "test_nan")
        with pytest.raises(ValueError, match="'test_rows' returned shape"):
            M.embed(["CCO", "CCN"], "test_rows")
    finally:
        M.unregister_embedder("test_nan")
        M.unregister_embedder("test_rows")
    with pytest.raises(ValueError, match="embedder must be one of"):
        M.embed(["CCO"], "no_such_embedder")
    with pytest.raises(ValueError, match="none of the 1 SMILES"):
        M.embed(["xx(("], "maccs")
    with pytest.raises(TypeError, match="smiles must be a list"):
        M.embed("CCO", "maccs")
    with pytest.raises(ValueError, match="already registered"):
        M.register_embedder("maccs", lambda s: s, version="x")
    with pytest.raises(TypeError, match="fn"):
        M.register_embedder("test_x", 3, version="x")


def test_cache_second_run_embeds_nothing(tmp_path, counting_embedder):
    smiles = ["CCO", "CCCC", "bad((", "c1ccccc1"]
    e1, hit1 = M.embed_cached("t", smiles, "test_len", cache_dir=tmp_path)
    e2, hit2 = M.embed_cached("t", smiles, "test_len", cache_dir=tmp_path)
    assert (hit1, hit2) == (False, True) and counting_embedder == [3]
    np.testing.assert_array_equal(e1.X, e2.X)
    np.testing.assert_array_equal(e2.valid, [True, True, False, True])
    assert sorted(p.name for p in (tmp_path / "t").iterdir()) == ["test_len.npz"]


def test_cache_entry_of_older_version_is_replaced(tmp_path, counting_embedder):
    smiles = ["CCO", "CCN"]
    M.embed_cached("t", smiles, "test_len", cache_dir=tmp_path)
    M.register_embedder("test_len", lambda s: np.ones((len(s), 2)), version="2", overwrite=True)
    with pytest.warns(M.StaleCacheWarning, match="version '1'"):
        e, hit = M.embed_cached("t", smiles, "test_len", cache_dir=tmp_path)
    assert not hit and np.all(e.X == 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, hit = M.embed_cached("t", smiles, "test_len", cache_dir=tmp_path)
    assert hit
    with pytest.warns(M.StaleCacheWarning, match="another SMILES list"):
        M.embed_cached("t", smiles + ["CCCl"], "test_len", cache_dir=tmp_path)


def test_failing_embedder_leaves_nothing_in_cache(tmp_path):
    def boom(smiles):
        raise RuntimeError("model crashed")

    M.register_embedder("test_boom", boom, version="1", overwrite=True)
    try:
        with pytest.raises(RuntimeError, match="crashed"):
            M.embed_cached("t", ["CCO"], "test_boom", cache_dir=tmp_path)
    finally:
        M.unregister_embedder("test_boom")
    assert not any(tmp_path.rglob("*.npz")) and not any(tmp_path.rglob("*.part"))


def test_corrupt_cache_entry_is_recomputed(tmp_path, counting_embedder):
    p = M.cache_file("t", "test_len", tmp_path)
    p.parent.mkdir(parents=True)
    p.write_bytes(b"PK\x03\x04 half written")
    with pytest.warns(M.StaleCacheWarning, match="unreadable"):
        e, hit = M.embed_cached("t", ["CCO"], "test_len", cache_dir=tmp_path)
    assert not hit and e.X.shape == (1, 2)


# ------------------------------------------------------------------------ bad input (issue 11 §1)
def test_task_rejects_nan_and_non_binary_labels_by_name(tmp_path):
    def task(y, kind="classification", n_nan=0):
        return M.Task("toy", kind, ["CCO", "CCN", "CCC"], np.asarray(y, dtype=float), n_nan, tmp_path / "t.tab")

    assert task([0, 1, 1]).y.dtype == np.float64
    assert len(task([0.5, -2.0, 3.0], kind="regression")) == 3
    for bad in ([0, 2, 1], [0, -1, 1], [0, 0.5, 1]):
        with pytest.raises(ValueError, match=r"\by must be 0/1"):
            task(bad)
    for kind in ("classification", "regression"):
        with pytest.raises(ValueError, match=r"\by must be finite"):
            task([0, np.nan, 1], kind=kind)
    with pytest.raises(ValueError, match=r"\by must hold one label per SMILES"):
        task([0, 1])
    with pytest.raises(ValueError, match=r"\bn_nan_labels\b"):
        task([0, 1, 1], n_nan=-1)
    with pytest.raises(TypeError, match=r"\bn_nan_labels\b"):
        task([0, 1, 1], n_nan=1.5)


def test_embedding_rejects_non_finite_or_mismatched_matrix():
    X = np.zeros((2, 3), dtype=np.float32)
    ok = M.Embedding(X, np.array([True, False, True]), "maccs", "1")
    assert ok.X is X and ok.n_invalid == 1                   # no copy, dtype kept
    with pytest.raises(ValueError, match=r"\bX must be finite"):
        M.Embedding(np.array([[0.0, np.nan]], dtype=np.float32), np.array([True]), "maccs", "1")
    with pytest.raises(ValueError, match=r"\bvalid must mark exactly"):
        M.Embedding(X, np.array([True, True, True]), "maccs", "1")
    with pytest.raises(ValueError, match=r"\bX must be a non-empty \(n_valid, d\) matrix"):
        M.Embedding(X.reshape(-1), np.array([True] * 6), "maccs", "1")


def test_cache_entry_with_nan_embedding_is_recomputed(tmp_path, counting_embedder):
    smiles = ["CCO", "CCN"]
    M.embed_cached("t", smiles, "test_len", cache_dir=tmp_path)
    p = M.cache_file("t", "test_len", tmp_path)
    with np.load(p) as z:
        entry = dict(z)
    entry["X"] = np.full_like(entry["X"], np.nan)
    np.savez(p, **entry)                                      # same version and SMILES hash, NaN matrix
    with pytest.warns(M.StaleCacheWarning, match="finite"):
        e, hit = M.embed_cached("t", smiles, "test_len", cache_dir=tmp_path)
    assert not hit and np.isfinite(e.X).all() and counting_embedder == [2, 2]
