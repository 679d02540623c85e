"""Reproduction of paper 001 (qlib.repro.quantized_mis): paper values, the study driver and its
code-keyed cache, and the chapters' row functions (fast, tiny sizes)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from qlib.repro.quantized_mis import paper as P, study


def test_paper_table2_values():
    # spot checks against the paper's text (App. E, Table 2; the first row's identity cell from 000)
    assert P.PAPER_TABLE2[(1.5, 6)][-1] == 0.996
    assert P.PAPER_TABLE2[(3.0, 16)] == (0.555, 0.575, 0.585, 0.581, 0.635, 0.604, 0.616, 0.622, 0.628)
    assert P.PAPER_TABLE2_COLUMNS[4] == "ternary90"
    for row in P.PAPER_TABLE2.values():                  # b bits accuracy increases with b
        c = P.PAPER_TABLE2_COLUMNS
        assert row[c.index("bits3")] <= row[c.index("bits4")] <= row[c.index("bits5")] <= row[-1] + 1e-9


def test_claims():
    names = list(P.PAPER_QUANTIZERS)
    good = np.array([[3, 4, 5, 9, 2.5, 2, 1, 0.5]])         # sign < t33, t90 max, b4/b5 least
    out = study.claim_table(good, names)
    assert all(v.all() for v in out.values())
    bad = good.copy()
    bad[0, names.index("sign")] = 10
    out = study.claim_table(bad, names)
    assert not out["1.58b 90% is the most private"][0] and not out["Sign is less private than 1.58b 33%"][0]


def test_tiny_study_runs_reproducibly_and_caches(tmp_path):
    kw = dict(runs=4, epochs=12, n=16, n_val=12, lr=1e-2, grid=[(1.5, 6), (3.0, 8)],
              names=["sign", "ternary90", "bits4"], discriminator=True, disc_epochs=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = study.run_study(**kw, cache_dir=tmp_path)
        b = study.run_study(**kw)
    assert a.r.shape == (2, 3, 4) and a.acc_val.shape == (2, 4, 4) and a.loss_in.shape == (2, 4, 4, 12)
    assert a.loss_out.shape == (2, 4, 4, 12)
    np.testing.assert_array_equal(a.r, b.r)
    np.testing.assert_array_equal(a.disc_mis, b.disc_mis)
    assert ((a.thr_mis >= 0) & (a.thr_mis <= 1)).all()
    assert len(list(tmp_path.glob("study-*.npz"))) == 1
    c = study.run_study(**kw, cache_dir=tmp_path)                   # reloaded, not recomputed
    np.testing.assert_array_equal(a.r, c.r)
    assert c.seconds == a.seconds
    t2 = study.table2(a)
    assert len(t2) == 2 * 4 and np.allclose(t2[t2.quantizer == "identity"].ours_ratio, 1.0)


def test_study_bad_input():
    with pytest.raises(ValueError, match="runs"):
        study.run_study(runs=2, epochs=1)
    with pytest.raises(ValueError, match="unknown quantizer"):
        study.run_study(runs=3, epochs=1, names=["bits9"])
    with pytest.raises(ValueError, match="identity"):
        study.run_study(runs=3, epochs=1, names=["identity", "sign"])


def test_code_change_invalidates_the_cache(tmp_path, monkeypatch):
    kw = dict(runs=3, epochs=3, n=8, n_val=8, lr=1e-2, grid=[(1.5, 6)], names=["sign", "bits2"],
              discriminator=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        study.run_study(**kw, cache_dir=tmp_path)
        assert len(list(tmp_path.glob("study-*.npz"))) == 1
        study.run_study(**kw, cache_dir=tmp_path)                 # same code: reused
        assert len(list(tmp_path.glob("study-*.npz"))) == 1
        monkeypatch.setattr(study, "code_hash", lambda modules=study.STUDY_MODULES: "edited-code")
        study.run_study(**kw, cache_dir=tmp_path)                 # other code: recomputed
    assert len(list(tmp_path.glob("study-*.npz"))) == 2


def test_code_hash_follows_the_sources(tmp_path, monkeypatch):
    import sys

    mod = tmp_path / "qmis_probe_mod.py"
    mod.write_text("x = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    h1 = study.code_hash(("qmis_probe_mod",))
    mod.write_text("x = 2\n")
    sys.modules.pop("qmis_probe_mod", None)
    assert study.code_hash(("qmis_probe_mod",)) != h1
    assert set(study.STUDY_MODULES) >= {"qlib.engine", "qlib.rqn", "qlib.recorder", "qlib.discriminator",
                                        "qlib.quantizers", "qlib.synthetic", "qlib.repro.quantized_mis.study"}
