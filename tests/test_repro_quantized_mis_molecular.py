"""qlib.repro.quantized_mis.molecular: the metrics, one task's batched training, the MolecularConfig
record and the driver (chapter 05's tables and claims: test_repro_quantized_mis_molecular_claims.py)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch
from scipy import stats
from sklearn.metrics import r2_score, roc_auc_score

from qlib import molecules
from qlib.repro.quantized_mis import molecular as MM
from qlib.repro.quantized_mis import molecular_claims as MC
from qlib.repro.quantized_mis import paper as P


def test_auroc_matches_sklearn_with_ties():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 50).astype(float)
    s = np.round(rng.normal(size=(3, 4, 50)) + y, 1)          # rounded: many ties
    ours = MM.auroc(s, y)
    ref = np.array([[roc_auc_score(y, s[i, j]) for j in range(4)] for i in range(3)])
    np.testing.assert_allclose(ours, ref, rtol=0, atol=1e-12)
    assert MM.auroc(np.zeros(50), y) == 0.5
    with pytest.raises(ValueError, match="both classes"):
        MM.auroc(s, np.ones(50))
    with pytest.raises(ValueError, match="y must have shape"):
        MM.auroc(s, y[:10])


def test_r2_and_spearman_match_references():
    rng = np.random.default_rng(1)
    y = rng.normal(size=40)
    p = y[None] + rng.normal(size=(5, 40))
    np.testing.assert_allclose(MM.r2(p, y), [r2_score(y, q) for q in p], atol=1e-12)
    np.testing.assert_allclose(MM.spearman_to_labels(p, y), [stats.spearmanr(q, y).statistic for q in p],
                               atol=1e-12)
    assert np.isnan(MM.spearman_to_labels(np.ones(40), y))
    with pytest.raises(ValueError, match="non-finite"):
        MM.r2(p, np.full(40, np.nan))


def test_split_indices_disjoint_and_sized():
    val, tr = MM.split_indices(100, runs=4, val_frac=0.4, subsample=0.9, seed=3)
    assert val.size == 40 and tr.shape == (4, 54)
    for row in tr:
        assert len(set(row)) == 54 and not set(row) & set(val)
    assert not np.array_equal(tr[0], tr[1])
    with pytest.raises(ValueError, match="val_frac"):
        MM.split_indices(100, runs=2, val_frac=1.0)


def test_paper_tables_are_consistent():
    assert set(P.PAPER_TABLE3) == set(molecules.task_names("classification"))
    assert set(P.PAPER_TABLE4) == set(P.PAPER_TABLE5) == set(molecules.task_names("regression"))
    assert set(P.PAPER_ROW_NAMES.values()) == set(molecules.TASKS)
    for tab in (P.PAPER_TABLE3, P.PAPER_TABLE5):
        for task, cells in tab.items():
            assert len(cells) == 9 and cells[-1][1] == 100
            orig = cells[-1][0]
            for v, pct in cells:   # the printed percentage is the printed value over the original
                assert abs(100 * v / orig - pct) <= 1.5, (task, v, pct)
    for task, cells in P.PAPER_TABLE4.items():
        assert all(v == -math.inf for v, _ in cells[:4]), task   # Sign and ternary: R² < −1 everywhere


def test_train_task_shapes_and_identity():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 6)).astype(np.float32)
    y = (X[:, 0] + 0.3 * rng.normal(size=80) > 0).astype(float)
    tr = MM.train_task(X, y, "classification", MM.TaskConfig(runs=3, epochs=60, hidden=8, lr=0.03, seed=1))
    # the 8 recorded quantizers, then Table 1's three 1.58b readings (scored on the final model only)
    assert tr.r.shape == (8, 3) and tr.quantized["auroc"].shape == (11, 3) and np.isfinite(tr.r).all()
    assert tr.also == MM.TABLE_READING and tr.initial["auroc"].shape == (11, 3)
    assert tr.original["auroc"].shape == (3,) and (tr.original["auroc"] > 0.7).all()
    # the untrained network is near chance; the trained one is not
    assert np.abs(tr.initial["auroc"] - 0.5).mean() < np.abs(tr.quantized["auroc"] - 0.5).mean()
    # scoring the extra readings leaves the recorded quantizers' scores unchanged
    only = MM.train_task(X, y, "classification", MM.TaskConfig(runs=3, epochs=60, hidden=8, lr=0.03, seed=1, also=()))
    np.testing.assert_array_equal(only.quantized["auroc"], tr.quantized["auroc"][:8])
    assert tr.n_val == 32 and tr.n_train == 43
    reg = MM.train_task(X, X[:, 0] * 2.0, "regression", MM.TaskConfig(runs=2, epochs=20, hidden=8, keep_losses=True))
    assert set(reg.quantized) == {"r2", "spearman"} and reg.losses.shape == (20, 8, 2, 32)
    with pytest.raises(ValueError, match="kind"):
        MM.train_task(X, y, "ranking", MM.TaskConfig(runs=2, epochs=2))
    with pytest.raises(ValueError, match="finite"):
        MM.train_task(np.full_like(X, np.nan), y, "classification", MM.TaskConfig(runs=2, epochs=2))


def test_flops_count():
    # n=100: 40 validation, 54 per run; per sample 2*(d*h + h) with d=10, h=4 -> 88;
    # training: forward + the weights' gradient; recording: 8 quantized forward passes
    assert MM.flops_per_task(100, 10, runs=2, epochs=3, hidden=4) == 3 * 2 * (2 * 54 * 88 + 8 * 40 * 88)


def test_study_with_missing_task_and_rows(shared_data_dir, tmp_path):
    st = MM.run_study(MM.MolecularConfig(tasks=["Carcinogens_Lagunin", "PAMPA_NCATS"], embedders=["maccs"], runs=2,
                                         epochs=3, max_molecules=80, keep_losses_for=["Carcinogens_Lagunin"]),
                      data_dir=shared_data_dir, cache_dir=tmp_path)
    assert list(st.missing) == ["PAMPA_NCATS"]
    assert st.inputs.used.tolist() == [80] and ("Carcinogens_Lagunin", "maccs") in st.losses
    rows = MC.table_rows(st)
    kinds = [r.kind for r in rows]
    assert kinds.count("not-available-offline") == 1            # PAMPA in Table 3
    assert kinds.count("paper-number") == 9                      # the 9 cells of Carcinogens
    orig = [r for r in rows if r.quantity == "AUROC, original model"]
    assert len(orig) == 1 and orig[0].verdict == "not comparable"
    tab = MC.table(st, "auroc")
    assert tab.loc["Carcinogens_Lagunin", "identity"].endswith("(100%)") and tab.loc["PAMPA_NCATS", "sign"] == ""
    claims = MC.section522_rows(st)
    # the paper's claims, and our variant (Table 1's reading of 1.58b x %) as a probe row, never a claim row
    assert {r.kind for r in claims} == {"paper-claim", "probe"}
    assert all((r.kind == "probe") == r.quantity.endswith("(Table 1 as typeset)") for r in claims)
    assert any(r.verdict == "not comparable" and "embedders" in r.quantity for r in claims)


# ------------------------------------------------------------------------ bad input (issue 11 §1)
def test_metrics_reject_bad_labels_by_name():
    rng = np.random.default_rng(0)
    s = rng.normal(size=(2, 10))
    y = np.array([0, 1] * 5)
    for bad in (np.r_[2, y[1:]], np.r_[y[:-1], -1]):
        with pytest.raises(ValueError, match=r"\by must be binary"):
            MM.auroc(s, bad)
    with pytest.raises(ValueError, match=r"\by contains non-finite labels"):
        MM.auroc(s, np.r_[np.nan, y[1:]])
    for f in (MM.r2, MM.spearman_to_labels):
        with pytest.raises(ValueError, match=r"non-finite labels.*\by must be finite"):
            f(s, np.r_[np.inf, rng.normal(size=9)])
        with pytest.raises(TypeError, match=r"\by must be an array"):
            f(s, rng.normal(size=10) + 1j)                  # was silently truncated to its real part
        with pytest.raises(ValueError, match=r"\bpred\b"):
            f(s.reshape(-1), rng.normal(size=10))           # y does not match pred's last axis
        with pytest.raises(ValueError, match=r"\bpred must be non-empty"):
            f(np.zeros((0, 10)), rng.normal(size=10))
    with pytest.raises(TypeError, match=r"\bscores must be an array"):
        MM.auroc(None, y)


def test_metrics_refuse_non_finite_scores_or_give_nan_rows_when_allowed():
    """The metrics' non-finite policy (qlib.validation): a NaN/inf score raises naming the argument; with
    allow_nonfinite=True (what train_task passes) a diverged model's row is NaN and the others are
    unchanged."""
    rng = np.random.default_rng(1)
    y, yr = np.array([0, 1] * 10), rng.normal(size=20)
    s = rng.normal(size=(3, 20))
    clean = [f(s, lab) for f, lab in ((MM.auroc, y), (MM.r2, yr), (MM.spearman_to_labels, yr))]
    s[1, 4], s[2, 0] = np.nan, np.inf                       # two diverged models among three
    for (f, lab, arg), ref in zip(((MM.auroc, y, "scores"), (MM.r2, yr, "pred"), (MM.spearman_to_labels, yr, "pred")),
                                  clean):
        with pytest.raises(ValueError, match=rf"^{arg} must be finite.*allow_nonfinite=True"):
            f(s, lab)
        out = f(s, lab, allow_nonfinite=True)
        assert out[0] == ref[0] and np.isnan(out[1:]).all(), f.__name__


def test_train_task_rejects_bad_labels_and_settings_by_name():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 3))
    y = np.array([0, 1] * 10)
    kw = dict(runs=2, epochs=1, hidden=2)
    for bad in (np.r_[2, y[1:]], np.r_[y[:-1], -1], y + 0.5):   # labels outside {0, 1}: before training
        with pytest.raises(ValueError, match=r"\by must be 0/1 labels"):
            MM.train_task(X, bad, "classification", MM.TaskConfig(**kw))
    for kind in ("classification", "regression"):
        with pytest.raises(ValueError, match=r"\by must be finite"):
            MM.train_task(X, np.r_[np.nan, y[1:]].astype(float), kind, MM.TaskConfig(**kw))
    for lr in (math.nan, math.inf, 0.0, -1e-3):
        with pytest.raises(ValueError, match=r"\blr\b"):
            MM.train_task(X, y, "classification", MM.TaskConfig(lr=lr, **kw))
    with pytest.raises(ValueError, match=r"\bquantizers\b"):
        MM.train_task(X, y, "classification", MM.TaskConfig(quantizers=("bits9",), **kw))
    with pytest.raises(ValueError, match=r"\bval_frac=0.9 leaves 1 of n=10"):
        MM.split_indices(10, runs=1, val_frac=0.9)


def test_run_study_checks_settings_before_loading(tmp_path):
    # a data directory without the task: the settings are checked first, so the error names them
    for kw, name in ((dict(epochs=0), "epochs"), (dict(lr=math.nan), "lr"), (dict(runs=1), "runs"),
                     (dict(seed=-1), "seed"), (dict(keep_losses_for=["NotATask"]), "keep_losses_for")):
        with pytest.raises((ValueError, TypeError), match=rf"\b{name}\b"):
            MM.run_study(MM.MolecularConfig(tasks=["Carcinogens_Lagunin"], embedders=["maccs"], **kw), data_dir=tmp_path,
                         cache_dir=tmp_path)


def test_flops_checks_arguments():
    with pytest.raises(ValueError, match=r"\bn_quantizers\b"):
        MM.flops_per_task(100, 10, runs=2, epochs=3, n_quantizers=0)
    with pytest.raises(TypeError, match=r"\bepochs\b"):
        MM.flops_per_task(100, 10, runs=2, epochs=math.nan)
    with pytest.raises(ValueError, match=r"\bsubsample\b"):
        MM.flops_per_task(100, 10, runs=2, epochs=3, subsample=1.5)


# ----------------------------------------------------------------------------- the MolecularConfig record
def test_molecular_config_is_frozen_hashable_keyed_and_has_the_paper_defaults():
    import dataclasses

    p = MM.MolecularConfig()
    assert p.tasks == tuple(molecules.task_names()) and len(p.tasks) == 21
    assert (p.runs, p.epochs, p.hidden, p.val_frac, p.subsample) == (10, 500, 128, 0.4, 0.9)
    assert p.embedders == ("minimol", "morgan", "rdkit2d", "maccs")
    a = MM.MolecularConfig(tasks=["AMES", "DILI"], embedders=["maccs"], runs=2, epochs=3, keep_losses_for="DILI")
    b = MM.MolecularConfig(tasks=("AMES", "DILI"), embedders=("maccs",), runs=2, epochs=3, keep_losses_for=["DILI"])
    assert a == b and hash(a) == hash(b) and a.key() == b.key()
    assert a.keep_losses_for == ("DILI",)
    assert a.key() != dataclasses.replace(a, seed=1).key() and a.key() != dataclasses.replace(a, lr=1e-2).key()
    assert MM.MolecularConfig(tasks="AMES", embedders="maccs").tasks == ("AMES",)
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.runs = 3
    d = a.as_dict()
    assert d["tasks"] == ["AMES", "DILI"] and d["embedders"] == ["maccs"] and d["max_molecules"] is None
    md = a.describe()
    assert "| `runs` | 2 | 10 |" in md and "| `lr` | 0.001 | not given |" in md


@pytest.mark.parametrize("kw, name", [
    (dict(tasks=["NoSuchTask"]), "task"), (dict(tasks=[]), "tasks"), (dict(embedders=["nope"]), "embedder"),
    (dict(embedders=[]), "embedders"), (dict(tasks=3), "tasks"), (dict(runs=1), "runs"), (dict(epochs=0), "epochs"),
    (dict(lr=0.0), "lr"), (dict(hidden=0), "hidden"), (dict(val_frac=1.0), "val_frac"),
    (dict(subsample=0.0), "subsample"), (dict(max_molecules=5), "max_molecules"), (dict(seed=-1), "seed"),
    (dict(keep_losses_for=["nope"]), "keep_losses_for"), (dict(keep_losses_for=3), "keep_losses_for")])
def test_molecular_config_validates_each_field_by_name(kw, name):
    with pytest.raises((ValueError, TypeError), match=rf"\b{name}\b"):
        MM.MolecularConfig(**kw)


def test_molecular_run_study_follows_the_settings_rule(shared_data_dir, tmp_path):
    kw = dict(tasks=["Carcinogens_Lagunin"], embedders=["maccs"], runs=2, epochs=3, max_molecules=30, seed=0)
    a = MM.run_study(MM.MolecularConfig(**kw), data_dir=shared_data_dir, cache_dir=tmp_path)
    assert a.config == MM.MolecularConfig(**kw).as_dict()
    with pytest.raises(TypeError, match=r"\bruns_per_task\b"):
        MM.run_study(MM.MolecularConfig(**kw), runs_per_task=3)
    with pytest.raises(TypeError, match=r"\bconfig\b"):
        MM.run_study(kw)


def test_table_reading_recorded_only_on_request(shared_data_dir, tmp_path):
    """record_table_reading records r_Q^n of the Table 1 reading beside the eight quantizers and changes
    no other number (same training, same scores, same Figure 10 losses)."""
    kw = dict(tasks=["Carcinogens_Lagunin"], embedders=["maccs"], runs=2, epochs=4, max_molecules=60, seed=0,
              keep_losses_for=["Carcinogens_Lagunin"])
    a = MM.run_study(MM.MolecularConfig(**kw), data_dir=shared_data_dir, cache_dir=tmp_path)
    b = MM.run_study(MM.MolecularConfig(**kw, record_table_reading=True), data_dir=shared_data_dir, cache_dir=tmp_path)
    tab = b.frame.quantizer.isin(MM.TABLE_READING)
    assert a.frame[tab].r_q.isna().all() and b.frame[tab].r_q.notna().any()
    pd.testing.assert_frame_equal(a.frame[~tab], b.frame[~tab])
    pd.testing.assert_frame_equal(a.frame[tab].drop(columns="r_q"), b.frame[tab].drop(columns="r_q"))
    key = ("Carcinogens_Lagunin", "maccs")
    assert torch.equal(a.losses[key], b.losses[key])
    (na,) = MC.figure34_reading_rows(a)
    (nb,) = MC.figure34_reading_rows(b)
    assert na.verdict == "not comparable" and nb.kind == "probe" and nb.passed is not None
    fa, fb = MC.figure34_readings(a), MC.figure34_readings(b)
    assert fa[fa.reading == "Table 1"]["mean r_Q^n"].isna().all() and fb["mean r_Q^n"].notna().all()
    assert "not recorded" in MC.figure34_readings_text(a) and "1.58b 90%" in MC.figure34_readings_text(b)


def test_study_in_worker_processes_equals_the_serial_study(shared_data_dir, tmp_path):
    """processes=2 trains the (task, embedder) units in spawned workers while the parent embeds: the
    same frame, bit for bit, in the same order."""
    cfg = MM.MolecularConfig(tasks=["HIA_Hou", "DILI"], embedders=["maccs", "morgan"], runs=2, epochs=6,
                             max_molecules=80)
    kw = dict(data_dir=shared_data_dir, cache_dir=tmp_path / "emb")
    a = MM.run_study(cfg, **kw)
    b = MM.run_study(cfg, processes=2, **kw)
    pd.testing.assert_frame_equal(a.frame, b.frame, check_exact=True)
    cols = [c for c in a.inputs.columns if c not in ("train_s", "cache_hit")]
    pd.testing.assert_frame_equal(a.inputs[cols], b.inputs[cols], check_exact=True)
    with pytest.raises(ValueError, match=r"\bprocesses\b"):
        MM.run_study(cfg, processes=0, **kw)
