"""The Table 3 combinations (:mod:`qlib.repro.quantized_mis.table3_combos`) and the chapter's first screen
(:mod:`qlib.repro.quantized_mis.table3_answer`): two scoring changes combined equal both applied to the
same trained models (recomputed through ``molecular.train_task``'s own scoring), r_Q^n recorded as chapter
05 records it, the rules (helps, triple, best, likely) on constructed tables, every row a probe, and chapter
05's tests of claims 001-C19 / 001-C22 recomputed independently."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from qlib import molecules
from qlib.repro import ledger
from qlib.repro.quantized_mis import molecular, molecular_claims
from qlib.repro.quantized_mis import table3_answer as A
from qlib.repro.quantized_mis import table3_combos as C
from qlib.repro.quantized_mis import table3_probe as tp
from qlib.repro.quantized_mis.paper import PAPER_TABLE3

Q = ("sign", "ternary33", "ternary50", "ternary90", "bits2", "bits3", "bits4", "bits5")
TASK = "Carcinogens_Lagunin"
PAPER_LIKE = {"sign": 0.89, "ternary33": 0.90, "ternary50": 0.90, "ternary90": 0.91,
              "bits2": 0.98, "bits3": 0.99, "bits4": 0.99, "bits5": 1.00}
OURS = {"sign": 0.99, "ternary33": 1.00, "ternary50": 0.99, "ternary90": 0.73,
        "bits2": 0.99, "bits3": 1.00, "bits4": 1.00, "bits5": 1.00}


def _means(spec: dict, tasks=("DILI", "hERG", "HIA_Hou", "AMES")) -> pd.DataFrame:
    """:func:`C.means`' frame: ``spec`` procedure -> column values (one dict for every task, or a list per task)."""
    rows = []
    for v, vals in spec.items():
        for i, t in enumerate(tasks):
            d = vals[i] if isinstance(vals, list) else vals
            rows += [{"variant": v, "task": t, "quantizer": q, "relative": d[q], "runs": 2} for q in Q]
    return pd.DataFrame(rows)


def _maccs(tmp_path, data):
    task = molecules.load_task(TASK, data_dir=data)
    emb, _ = molecules.embed_cached(TASK, task.smiles, "maccs", cache_dir=tmp_path)
    return emb.X.astype(np.float32), task.y[emb.valid]


# --- training once, scoring many --------------------------------------------------------------------------
def test_two_scoring_changes_equal_both_applied_on_the_same_models(tmp_path, shared_data_dir):
    pytest.importorskip("rdkit")
    torch.set_num_threads(1)
    cfg = C.RunConfig(["maccs"], runs=2, epochs=4, hidden=8)
    procs = ["default", "probability+scope_model", "scope_model+table_reading", "probability"]
    models: dict = {}
    res = C.run([TASK], procs, cfg, data_dir=shared_data_dir, cache_dir=tmp_path, models=models)
    assert len(res.trainings) == 1 and len(models) == 1          # one training served the four procedures
    rel = C.means(res).pivot_table(index="variant", columns="quantizer", values="relative")[list(Q)]
    # independently: train_task (its own quantization and scoring of the same split and initial parameters)
    X, y = _maccs(tmp_path, shared_data_dir)
    kw = dict(runs=2, epochs=4, hidden=8, seed=0, record=False)
    both = molecular.train_task(X, y, "classification", molecular.TaskConfig(**kw, scope="model", prob_auroc=True))
    ref = np.nanmean(both.quantized["auroc_prob"][:8] / both.original["auroc_prob"], axis=1)
    np.testing.assert_allclose(rel.loc["probability+scope_model"].to_numpy(), ref, rtol=0, atol=1e-12)
    # Table 1's reading: its 1.58b columns are the 'also' names of train_task (after the eight)
    idx = [0, 8, 9, 10, 4, 5, 6, 7]
    sm = molecular.train_task(X, y, "classification", molecular.TaskConfig(**kw, scope="model"))
    ref = np.nanmean(sm.quantized["auroc"][idx] / sm.original["auroc"], axis=1)
    np.testing.assert_allclose(rel.loc["scope_model+table_reading"].to_numpy(), ref, rtol=0, atol=1e-12)
    # a second call with the same dict trains nothing new
    C.run([TASK], ["scope_model"], cfg, data_dir=shared_data_dir, cache_dir=tmp_path, models=models)
    assert len(models) == 1


def test_singles_equal_the_probe_and_training_pairs_train_anew(tmp_path, shared_data_dir):
    pytest.importorskip("rdkit")
    torch.set_num_threads(1)
    procs = ["default", "raw_features", "probability+raw_features", "raw_features+deep", "deep"]
    res = C.run([TASK], procs, C.RunConfig(["maccs"], runs=2, epochs=3, hidden=8), data_dir=shared_data_dir,
                cache_dir=tmp_path)
    assert sorted(res.trainings.training) == ["deep", "default", "raw_features", "raw_features+deep"]
    pr = tp.probe([TASK], tp.ProbeConfig("maccs", runs=2, epochs=3, hidden=8, variants=["default", "raw_features",
                                                                                            "deep"]),
                  data_dir=shared_data_dir, cache_dir=tmp_path)
    ours = C.means(res).set_index(["variant", "quantizer"]).relative
    theirs = pr.set_index(["variant", "quantizer"]).relative
    for v in ("default", "raw_features", "deep"):
        np.testing.assert_allclose(ours[v].loc[list(Q)].to_numpy(), theirs[v].loc[list(Q)].to_numpy(), rtol=0,
                                   atol=1e-12)


def test_recorded_rq_is_chapter_05s(tmp_path, shared_data_dir):
    pytest.importorskip("rdkit")
    torch.set_num_threads(1)
    cfg = C.RunConfig(["maccs"], runs=2, epochs=6, hidden=8, record=True)
    res = C.run([TASK], ["scope_model"], cfg, data_dir=shared_data_dir, cache_dir=tmp_path)
    X, y = _maccs(tmp_path, shared_data_dir)
    ref = molecular.train_task(X, y, "classification", molecular.TaskConfig(runs=2, epochs=6, hidden=8, seed=0,
                                                                            scope="model"))
    r = res.frame.pivot_table(index="quantizer", columns="run", values="r_q", dropna=False).loc[list(Q)].to_numpy()
    np.testing.assert_allclose(r, ref.r, rtol=1e-6, equal_nan=True)
    # the autograd trainer records too (one hidden layer: the compiled recorder; two: the torch path)
    for p in ("lr1e-4_minibatch", "deep"):
        rr = C.run([TASK], [p], cfg, data_dir=shared_data_dir, cache_dir=tmp_path).frame.r_q
        assert np.isfinite(rr).sum() >= 4, p


def test_worker_processes_give_the_same_run_and_resume(tmp_path, shared_data_dir):
    """``processes=2`` trains the units in spawned workers, the largest first, and returns the frame of one
    process bit for bit (each unit is seeded by its task); the units it saved are read back by a second call."""
    pytest.importorskip("rdkit")
    from qlib.resume import Units

    torch.set_num_threads(1)
    cfg = C.RunConfig(["maccs"], runs=2, epochs=3, hidden=8, record=True, seeding="study")
    tasks = [TASK, "DILI"]
    one = C.run(tasks, ["probability+lr1e-4_minibatch"], cfg, data_dir=shared_data_dir, cache_dir=tmp_path)
    units = Units(tmp_path / "units")
    cfg2 = C.RunConfig(["maccs"], runs=2, epochs=3, hidden=8, record=True, seeding="study", processes=2)
    seen = []
    two = C.run(tasks, ["probability+lr1e-4_minibatch"], cfg2, data_dir=shared_data_dir, cache_dir=tmp_path,
                units=units, progress=lambda t, e, sec: seen.append((t, e, sec >= 0)))
    pd.testing.assert_frame_equal(one.frame, two.frame)
    assert list(two.trainings.task) == tasks and units.computed == 2
    assert seen == [(t, "maccs", True) for t in tasks]              # told once per (task, embedder), in order
    again = Units(tmp_path / "units")
    three = C.run(tasks, ["probability+lr1e-4_minibatch"], cfg2, data_dir=shared_data_dir, cache_dir=tmp_path,
                  units=again)
    assert again.reused == 2 and again.computed == 0
    pd.testing.assert_frame_equal(one.frame, three.frame)
    with pytest.raises(ValueError, match="processes"):
        C.RunConfig(processes=0)


# --- the rules on constructed tables ---------------------------------------------------------------------
def test_helps_and_the_triple():
    in90 = {**OURS, "ternary90": 0.90}
    spec = {"default": OURS, "probability": {**OURS, "sign": 0.93, "ternary33": 0.93, "ternary50": 0.94},
            "scope_model": in90, "raw_features": {**in90, "sign": 0.96},       # sign also in band: 2 columns
            "lr1e-4_minibatch": {**in90, "bits2": 1.05},                        # 90 % in, 2 bits out: 1 column
            "deep": {**OURS, "ternary90": 0.97}, "table_reading": {**OURS, "ternary50": 0.95, "ternary33": 0.70}}
    h = C.helpers(_means(spec)).set_index("hypothesis")
    assert h.loc["probability", "moved"] == "sign, ternary33, ternary50"
    assert list(h.n_moved) == [3, 1, 1, 2, 0, 1] and list(h.helps) == [True, True, True, True, False, True]
    # three most columns: probability (3), raw_features (2), then the closest of the one-column helpers
    assert C.triple(h.reset_index()) == "probability+scope_model+raw_features"
    assert C.triple(h.reset_index().assign(helps=[True, False, False, True, False, False])) is None
    with pytest.raises(ValueError, match="default"):
        C.helpers(_means({"probability": OURS}))


def test_the_best_rule_on_a_constructed_table():
    tasks = ("DILI", "hERG", "HIA_Hou", "AMES")
    spec = {"default": OURS, "probability": [PAPER_LIKE, PAPER_LIKE, OURS, OURS],
            "probability+scope_model": [PAPER_LIKE, PAPER_LIKE, PAPER_LIKE, OURS],
            "scope_model+deep": {q: 1.0 for q in Q}}
    tab = C.combination_table(_means(spec, tasks))
    assert dict(tab.tasks_passed) == {"default": 0, "probability": 2, "probability+scope_model": 3,
                                      "scope_model+deep": 0}
    assert list(tab.changes) == [0, 1, 2, 2] and list(tab.passes) == [False, False, True, False]
    assert C.best(tab) == "probability+scope_model"
    t = pd.DataFrame({"tasks_passed": [4, 2, 2, 2, 2], "distance": [0.0, 0.05, 0.03, 0.03, 0.03],
                      "changes": [0, 1, 2, 1, 2]}, index=["default", "a", "b", "c", "d"])
    assert C.best(t) == "c"                 # default never; ties: the smaller distance, then fewer changes
    assert C.best(t.assign(tasks_passed=[0, 0, 0, 0, 1])) == "d"
    with pytest.raises(ValueError, match="besides 'default'"):
        C.best(t.loc[["default"]])


def _result(rel_of, tasks, embedders=("maccs", "morgan"), runs=2, variant="probability+scope_model", rq=None):
    rows = [{"variant": variant, "embedder": e, "task": t, "quantizer": q, "run": r, "relative": rel_of(t, e, q),
             "auroc": 0.7, "original": 0.8, "r_q": np.nan if rq is None else rq(t, q)}
            for e in embedders for t in tasks for q in Q for r in range(runs)]
    return C.RunResult(pd.DataFrame(rows), pd.DataFrame(), {}, C.RunConfig(list(embedders), runs=runs, epochs=3))


def test_likely_and_the_rows_are_probes():
    tasks = ["DILI", "hERG", "HIA_Hou", "AMES", "BBB_Martins"]     # the paper's cells pass the test on each
    paper = {t: {q: PAPER_TABLE3[t][i][1] / 100 for i, q in enumerate(Q)} for t in tasks}
    # maccs: the paper's cells on every task; morgan: the paper's on three tasks, no loss on two
    res = _result(lambda t, e, q: paper[t][q] if e == "maccs" or t in tasks[:3] else 1.0, tasks,
                  rq=lambda t, q: 2.0 - paper[t][q])                        # more private, less AUROC
    L = C.likely(res)
    assert L["embedders"] == (1, 2) and L["pairs"] == (8, 10) and not L["likely"]   # one embedder of two
    # averaged over the two embedders, AMES and BBB_Martins land in the band: every task passes
    assert L["tasks"] == (5, 5) and bool(L["matrix"].loc["AMES", "maccs"]) and not L["matrix"].loc["AMES", "morgan"]
    rows = C.best_rows(res) + C.c19_rows(res) + C.c22_rows(res)
    assert {r.kind for r in rows} == {"probe"} and all(r.null is None and r.note for r in rows)
    assert {r.verdict for r in rows} <= set(ledger.PROBE_VERDICTS)
    by = {r.where: r for r in rows}
    assert by["Table 3 pattern, the paper's likely procedure"].verdict == "probe fails"
    assert by["Table 3 pattern, variant probability+scope_model, embedder maccs"].verdict == "probe passes"
    assert by["Table 3 pattern, variant probability+scope_model, embedder morgan"].verdict == "probe fails"
    both = _result(lambda t, e, q: paper[t][q], tasks)
    assert C.likely(both)["likely"] and C.best_rows(both)[-1].verdict == "probe passes"
    # the combination rows: one per procedure of two or more changes, a probe passing iff the test passes
    cr = C.combo_rows(_means({"default": OURS, "probability": OURS, "probability+deep": PAPER_LIKE,
                              "scope_model+deep": OURS}))
    assert [(r.where, r.verdict, r.kind) for r in cr] == [
        ("Table 3 pattern, variant probability+deep", "probe passes", "probe"),
        ("Table 3 pattern, variant scope_model+deep", "probe fails", "probe")]
    assert "two hidden layers" in cr[0].note


def _study(res: C.RunResult) -> molecular.Study:
    f = res.frame.assign(kind="classification", metric="auroc", value=lambda d: d.relative * 0.8, initial=np.nan)
    return molecular.Study(f, {}, pd.DataFrame(), {}, {})


def test_c19_and_c22_rows_are_chapter_05s_tests():
    assert C.CELL_ATOL == molecular_claims.REL_ATOL["auroc"]
    tasks = ["DILI", "hERG", "HIA_Hou", "AMES", "ClinTox", "BBB_Martins"]
    rng = np.random.default_rng(0)
    noise = {(t, e, q): rng.normal(0, 0.03) for t in tasks for e in ("maccs", "morgan") for q in Q}
    base = {q: (0.9 if q in tp.SPARSE else 0.99) for q in Q}
    for rq in (lambda t, q: 1.0 - base[q] + 0.01 * Q.index(q),              # trade-off on every task
               lambda t, q: ((5 * Q.index(q) + 3 * tasks.index(t)) % 7) / 7.0):   # r_Q^n unrelated to it
        res = _result(lambda t, e, q: base[q] + noise[(t, e, q)], tasks, rq=rq)
        theirs = {r.quantity: r for r in molecular_claims.section522_rows(_study(res))
                  if r.where in ("§5.2.2 / Figs. 3–4", "§5.2.2 / Table 3")}
        c22 = C.c22_rows(res)[0]
        ref = theirs["privacy–performance trade-off (AUROC): larger r_Q^n, lower relative performance"]
        assert (c22.ours, c22.passed) == (ref.ours, ref.passed)
        c19 = C.c19_rows(res)
        ref = next(r for q, r in theirs.items() if q.startswith("Sign and ternary quantizers lose"))
        assert (c19[-1].ours, c19[-1].passed) == (pytest.approx(ref.ours, abs=1e-12), ref.passed)
        cells = {(r.where.split(",")[1].split("(")[0].strip(), r.quantity.split(", ")[1]): r for r in c19[:-1]}
        assert len(cells) == len(tasks) * 4
        for (t, q), r in cells.items():
            mean = np.mean([base[q] + noise[(t, e, q)] for e in ("maccs", "morgan")])
            assert r.passed == (abs(mean - PAPER_TABLE3[t][Q.index(q)][1] / 100) <= 0.05)
    assert C.c22_rows(_result(lambda t, e, q: 0.9, tasks))[0].verdict == "not comparable"   # nothing recorded


# --- the first screen --------------------------------------------------------------------------------------
def _combos():
    spec = {v: OURS for v in C.SINGLES + C.PAIRS}
    spec["probability"] = {**OURS, "sign": 0.93, "ternary33": 0.93, "ternary50": 0.94}
    spec["probability+scope_model"] = PAPER_LIKE
    f = _means(spec).loc[lambda d: d.index.repeat(2)].assign(run=lambda d: np.arange(len(d)) % 2, embedder="maccs")
    return C.RunResult(f.drop(columns="runs"), pd.DataFrame(), {}, C.RunConfig(["maccs"], runs=2, epochs=3))


def test_conclusion_and_figure_are_computed():
    combos = _combos()
    text = A.conclusion(combos, labels={"sign": "Sign", "ternary33": "1.58b 33 %"})
    assert "1 of the 21 procedures tried" in text and "`probability+scope_model`" in text
    assert "`probability` moves Sign, 1.58b 33 %, ternary50" in text and "no triple" in text
    assert "was not run on every task" in text
    paper = {t: {q: PAPER_TABLE3[t][i][1] / 100 for i, q in enumerate(Q)} for t in ("DILI", "hERG", "HIA_Hou")}
    best_run = _result(lambda t, e, q: paper[t][q], list(paper))
    text = A.conclusion(combos, best_run)
    assert "3 of 3 tasks, 2 of 2 embedders and 6 of 6 task–embedder pairs" in text
    assert "so it is the paper's likely procedure" in text
    fig = A.figure(combos)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels[0] == "paper (Table 3)" and len(labels) == 1 + len(C.SINGLES) + len(C.PAIRS)
    bold = [t.get_text() for t in ax.get_yticklabels() if t.get_fontweight() == "bold"]
    assert bold == ["probability+scope_model"]


# --- bad arguments -----------------------------------------------------------------------------------------
def test_bad_arguments_raise(tmp_path):
    with pytest.raises(ValueError, match="name"):
        C.procedure_changes("probability+nope")
    with pytest.raises(ValueError, match="name"):
        C.procedure_changes("deep+deep")
    with pytest.raises(TypeError, match="changes"):
        C.procedure_name("probability")
    assert C.procedure_name(["table_reading", "probability"]) == "probability+table_reading"
    assert C.procedure_name([]) == "default"
    with pytest.raises(ValueError, match="runs"):
        C.RunConfig(runs=1)
    with pytest.raises(ValueError, match="max_molecules"):
        C.RunConfig(max_molecules=100)
    with pytest.raises(ValueError, match="seeding"):
        C.RunConfig(seeding="random")
    with pytest.raises(ValueError, match="classification"):
        C.run(["Caco2_Wang"], ["default"], C.RunConfig(runs=2, epochs=1))
    with pytest.raises(ValueError, match="one procedure"):
        C.run([TASK], ["default", "deep"], C.RunConfig(runs=2, epochs=1, record=True))
    with pytest.raises(TypeError, match="procedures"):
        C.run([TASK], "default", C.RunConfig(runs=2, epochs=1))
    with pytest.raises(TypeError, match="models"):
        C.run([TASK], ["default"], C.RunConfig(runs=2, epochs=1), models=[])
    with pytest.raises(ValueError, match="by"):
        C.means(_means({"default": OURS}), by="task")
    with pytest.raises(TypeError, match="result"):
        C.likely(_means({"default": OURS}))
    with pytest.raises(ValueError, match="one procedure"):
        C.likely(_combos())
    with pytest.raises(ValueError, match="combination"):
        C.combo_rows(_means({"default": OURS, "deep": OURS}))
    with pytest.raises(TypeError, match="labels"):
        A.conclusion(_combos(), labels=["Sign"])
    with pytest.raises(TypeError, match="combos"):
        A.figure(_means({"default": OURS}))


def test_the_deciding_columns_come_right_after_the_name():
    # issue 53: the Table 3 chapter's verdict columns stay on screen at 1280 px; quantizers under the paper's labels
    from qlib.repro.quantized_mis.table3_answer import verdict_first

    df = pd.DataFrame({"variant": ["a"], "ternary33": [0.9], "bits2": [1.0], "tasks passed": [1], "passes": [True]})
    out = verdict_first(df, {"ternary33": "1.58b 33 %", "bits2": "2 bits"})
    assert list(out.columns) == ["variant", "passes", "tasks passed", "1.58b 33 %", "2 bits"]
    assert out.iloc[0].tolist() == ["a", True, 1, 0.9, 1.0]
    with pytest.raises(TypeError, match="df must be a pandas DataFrame"):
        verdict_first([1, 2])
