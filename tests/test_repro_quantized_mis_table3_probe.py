"""The Table 3 probe (:mod:`qlib.repro.quantized_mis.table3_probe`): the fixed pattern test on
hand-built frames, the train_task options it added (defaults bit for bit), and a tiny probe."""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
import pytest
import torch

from qlib.repro.quantized_mis import _table3_train as T3
from qlib.repro.quantized_mis import molecular
from qlib.repro.quantized_mis import table3_probe as tp
from qlib.repro.quantized_mis.paper import PAPER_TABLE3

Q = ("sign", "ternary33", "ternary50", "ternary90", "bits2", "bits3", "bits4", "bits5")


def _frame(values: dict, tasks=("A", "B", "C", "D"), variant="v") -> pd.DataFrame:
    return pd.DataFrame([{"variant": variant, "task": t, "quantizer": q, "relative": values[q]}
                         for t in tasks for q in Q])


PAPER_LIKE = {"sign": 0.89, "ternary33": 0.90, "ternary50": 0.90, "ternary90": 0.91,
              "bits2": 0.98, "bits3": 0.99, "bits4": 0.99, "bits5": 1.00}
OURS = {"sign": 0.99, "ternary33": 1.00, "ternary50": 0.99, "ternary90": 0.73,
        "bits2": 0.99, "bits3": 1.00, "bits4": 1.00, "bits5": 1.00}


def test_pattern_test_passes_the_papers_pattern_and_fails_ours():
    assert bool(tp.pattern_test(_frame(PAPER_LIKE)).loc["v", "passes"])
    assert not bool(tp.pattern_test(_frame(OURS)).loc["v", "passes"])


def test_pattern_test_on_the_printed_table3_and_its_null():
    assert bool(tp.pattern_test(tp.paper_means()).loc["paper", "passes"])
    assert not bool(tp.pattern_test(_frame({q: 1.0 for q in Q})).loc["v", "passes"])


def test_pattern_test_conditions():
    # one collapsed task cannot pull a sparse mean into the band (condition 3)
    df = _frame({q: (1.0 if q.startswith(("sign", "ternary")) else 0.99) for q in Q})
    df.loc[(df.task == "A") & df.quantizer.isin(tp.SPARSE), "relative"] = 0.55
    r = tp.pattern_test(df).loc["v"]
    assert r.sparse_ok and not r.cells_ok and not r.passes
    # b bits that lose too much fail condition 2
    r = tp.pattern_test(_frame({**PAPER_LIKE, "bits2": 0.90})).loc["v"]
    assert r.sparse_ok and not r.bits_ok and not r.passes
    # a missing column fails
    r = tp.pattern_test(_frame(PAPER_LIKE).query("quantizer != 'ternary90'")).loc["v"]
    assert not r.passes
    # several variants at once, one row each
    both = pd.concat([_frame(PAPER_LIKE, variant="p"), _frame(OURS, variant="o")])
    pt = tp.pattern_test(both)
    assert list(pt.index) == ["p", "o"] and list(pt.passes) == [True, False]


def test_pattern_test_bad_input():
    with pytest.raises(TypeError, match="df"):
        tp.pattern_test([1, 2])
    with pytest.raises(ValueError, match="columns"):
        tp.pattern_test(pd.DataFrame({"task": ["A"]}))


def test_probe_rows_are_probes():
    df = pd.concat([_frame(PAPER_LIKE, tasks=("hERG", "DILI"), variant="probability"),
                    _frame(OURS, tasks=("hERG", "DILI"), variant="default"),
                    _frame(OURS, tasks=("hERG", "DILI"), variant="plain")])
    rows = tp.probe_rows(df)
    by = {r.where: r for r in rows}
    assert by["Table 3 pattern, variant probability"].verdict == "probe passes"
    assert by["Table 3 pattern, variant default"].verdict == "probe fails"
    pattern = [r for r in rows if r.where.startswith("Table 3 pattern")]
    assert {r.kind for r in pattern} == {"probe"} and all(r.null is None and r.null_fails is None for r in pattern)
    # the note judges the paper's own Table 3 and the no-loss null by the same test
    assert "the paper's Table 3 on these tasks passes" in by["Table 3 pattern, variant default"].note
    assert "(every column 1.00) fails" in by["Table 3 pattern, variant default"].note
    # what a variant changes comes from `changes` when given
    assert "my change" in tp.probe_rows(df, changes={"probability": "my change"})[0].note
    with pytest.raises(TypeError, match="changes"):
        tp.probe_rows(df, changes=["probability"])
    chk = by["Table 3 probe, trainer check"]
    assert chk.kind == "theory-check" and chk.verdict == "agrees"
    assert "AUROC of the float32 sigmoid" in by["Table 3 pattern, variant probability"].note
    # the paper column holds the paper's means on the same tasks
    assert f"sign {np.mean([PAPER_TABLE3[t][0][1] for t in ('DILI', 'hERG')]) / 100:.3f}" in \
        by["Table 3 pattern, variant default"].paper_value


# --- train_task: the new options leave the default procedure bit for bit ---------------------------------
def _tiny():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 5))
    y = (X[:, 0] + 0.5 * rng.normal(size=30) > 0).astype(float)
    return X, y


def _digest(t) -> str:
    h = hashlib.sha256()
    for a in (t.r, t.original["auroc"], t.quantized["auroc"], t.initial["auroc"]):
        h.update(np.ascontiguousarray(a, dtype=np.float64).tobytes())
    return h.hexdigest()[:16]


#: _digest of ``train_task(X, y, "classification", runs=2, epochs=5, hidden=4, lr=1e-2, seed=0)`` on
#: :func:`_tiny`, computed with molecular.py as it was before the options were added (2026-12, torch 1 thread)
BEFORE = "2b0d517e6a79dd45"


def test_train_task_defaults_are_bit_identical_to_before():
    torch.set_num_threads(1)
    X, y = _tiny()
    t = molecular.train_task(X, y, "classification", molecular.TaskConfig(runs=2, epochs=5, hidden=4, lr=1e-2, seed=0))
    assert _digest(t) == BEFORE
    assert set(t.original) == {"auroc"}
    t2 = molecular.train_task(X, y, "classification",
                              molecular.TaskConfig(runs=2, epochs=5, hidden=4, lr=1e-2, seed=0, scope="tensor",
                                                   standardise=True, prob_auroc=False, record=True))
    assert _digest(t2) == BEFORE


def test_train_task_options():
    X, y = _tiny()
    kw = dict(runs=2, epochs=5, hidden=4, lr=1e-2, seed=0)
    base = molecular.train_task(X, y, "classification", molecular.TaskConfig(**kw))
    # record=False: the same final models, no r_Q^n
    nr = molecular.train_task(X, y, "classification", molecular.TaskConfig(**kw, record=False))
    np.testing.assert_array_equal(nr.quantized["auroc"], base.quantized["auroc"])
    assert np.isnan(nr.r).all()
    # prob_auroc adds a metric and changes nothing else
    pr = molecular.train_task(X, y, "classification", molecular.TaskConfig(**kw, prob_auroc=True))
    np.testing.assert_array_equal(pr.quantized["auroc"], base.quantized["auroc"])
    assert pr.quantized["auroc_prob"].shape == base.quantized["auroc"].shape
    # scope / standardise change the result
    sm = molecular.train_task(X, y, "classification", molecular.TaskConfig(**kw, scope="model", record=False))
    assert sm.quantized["auroc"].shape == base.quantized["auroc"].shape
    with pytest.raises(ValueError, match="scope"):
        molecular.train_task(X, y, "classification", molecular.TaskConfig(**kw, scope="layer"))
    with pytest.raises(TypeError, match="standardise"):
        molecular.train_task(X, y, "classification", molecular.TaskConfig(**kw, standardise="no"))
    with pytest.raises(ValueError, match="keep_losses"):
        molecular.train_task(X, y, "classification", molecular.TaskConfig(**kw, keep_losses=True, record=False))


def test_plain_trainer_matches_the_engine_on_a_tiny_task():
    """The autograd trainer of the minibatch / deep variants, run with the default settings, gives
    the engine's final parameters (same split, same initial parameters) to float rounding."""
    torch.set_num_threads(1)
    X, y = _tiny()
    X = X.astype(np.float32)
    val, tr = molecular.split_indices(30, runs=2, seed=0)
    train_part = np.setdiff1d(np.arange(30), val)
    Xs = molecular._standardise(X, X[train_part]).astype(np.float32)
    seen = []
    th0, th, shapes = T3.plain_fit(Xs, y, tr, layers=1, hidden=4, lr=1e-2, batch_size=None, epochs=5, seed=0,
                                    on_epoch=lambda e, t: seen.append((e, t.clone())))
    assert [e for e, _ in seen] == [1, 2, 3, 4, 5] and torch.equal(seen[-1][1], th)     # told after every epoch
    assert not torch.equal(seen[0][1], th)
    from qlib.engine import train
    from qlib.engine_models import MLP

    res = train(MLP(5, 4), th0, torch.from_numpy(Xs)[None], torch.from_numpy(y.astype(np.float32))[None],
                molecular.TrainConfig(epochs=5, lr=1e-2, device="cpu"), rows=torch.from_numpy(tr))
    torch.testing.assert_close(th, res.theta, rtol=1e-4, atol=1e-5)
    # and the forward pass is the engine's
    xv = torch.from_numpy(Xs[val]).unsqueeze(0).expand(2, -1, -1)
    torch.testing.assert_close(T3.forward(th, xv, shapes), MLP(5, 4).forward(th, xv))



@pytest.mark.parametrize("layers", [1, 2])
@pytest.mark.parametrize("batch_size", [None, 16])
def test_hand_written_gradient_follows_the_autograd_trainer(layers, batch_size):
    """The fast trainer (gradient by hand, fused Adam) and the reference (autograd, single-tensor Adam) walk the
    same path: the gradient of one step agrees to float rounding, and after 30 epochs of minibatches the
    parameters still agree to 1e-5 (the trajectories would part at the first step if a term were missing:
    a dropped bias gradient or ReLU mask moves θ by ≈ lr = 1e-2 per step)."""
    torch.set_num_threads(1)
    rng = np.random.default_rng(3)
    n, d = 60, 7
    X = rng.normal(size=(n, d)).astype(np.float32)
    y = (X[:, 0] + rng.normal(size=n) > 0).astype(np.float64)
    tr = np.stack([rng.permutation(n)[:45] for _ in range(3)])
    shp = T3.shapes(d, 5, layers)
    theta = torch.from_numpy(rng.normal(scale=0.5, size=(3, sum(int(np.prod(s)) for s in shp))).astype(np.float32))
    xb, yb = torch.from_numpy(X)[torch.from_numpy(tr)], torch.from_numpy(y.astype(np.float32))[torch.from_numpy(tr)]
    th = theta.clone().requires_grad_(True)
    torch.nn.functional.softplus(T3.forward(th, xb, shp) * (1 - 2 * yb)).mean(dim=1).sum().backward()
    mine = torch.zeros_like(theta)
    T3._loss_grad(theta, xb, 1 - 2 * yb, shp, mine)
    torch.testing.assert_close(mine, th.grad, rtol=1e-5, atol=1e-7)
    kw = dict(layers=layers, hidden=5, lr=1e-2, batch_size=batch_size, epochs=30, seed=1)
    th0_f, fast, _ = T3.plain_fit(X, y, tr, **kw)
    th0_r, ref, _ = T3.plain_fit(X, y, tr, **kw, fast=False)
    assert torch.equal(th0_f, th0_r)                                # same start
    assert (ref - th0_r).abs().max() > 0.1                          # and the runs went somewhere
    torch.testing.assert_close(fast, ref, rtol=1e-5, atol=1e-5)

def test_probe_tiny(tmp_path):
    pytest.importorskip("rdkit")
    import os
    from pathlib import Path

    data = Path(os.environ.get("QLIB_DATA_DIR") or Path(__file__).resolve().parents[2] / "shared" / "data")
    if not (data / "tdc" / "carcinogens_lagunin.tab").is_file():
        pytest.skip("the offline TDC data is absent")
    torch.set_num_threads(1)
    df = tp.probe(["Carcinogens_Lagunin"],
                  tp.ProbeConfig("maccs", runs=2, epochs=3, hidden=8,
                                 variants=["probability", "table_reading", "deep"]), data_dir=data,
                  cache_dir=tmp_path)
    assert set(df.variant) == {"probability", "table_reading", "deep"}       # default trained, not reported
    assert (df.groupby("variant").size() == 8).all()
    assert set(df.quantizer) == set(Q)
    pt = tp.pattern_test(df)
    assert set(pt.index) == {"probability", "table_reading", "deep"}
    with pytest.raises(ValueError, match="classification"):
        tp.probe(["Caco2_Wang"], tp.ProbeConfig("maccs", runs=2, epochs=1))
    with pytest.raises(ValueError, match="variants"):
        tp.probe(["Carcinogens_Lagunin"], tp.ProbeConfig("maccs", runs=2, epochs=1, variants=["nope"]))
