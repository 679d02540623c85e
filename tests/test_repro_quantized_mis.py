"""Reproduction of paper 001 (qlib.repro.quantized_mis): paper values, the study driver and its
code-keyed cache, and the claims of chapters 01 (quantizer_claims), 02 (theory, erm_facts) and 04
(ranking_claims), at tiny sizes. Chapter 03's claims: test_repro_quantized_mis_synthetic_claims.py;
chapter 05: test_repro_quantized_mis_molecular*.py."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

from qlib.discriminator import DiscriminatorConfig
from qlib.repro.ledger import Row
from qlib.repro.quantized_mis import erm_facts, quantizer_claims, ranking_claims, study, theory
from qlib.repro.quantized_mis import paper as P


def test_paper_table2_values():
    # spot checks against the paper's text (App. E, Table 2; the first row's identity cell from 000)
    assert P.PAPER_TABLE2[(1.5, 6)][-1] == 0.996
    assert P.PAPER_TABLE2[(3.0, 16)] == (0.555, 0.575, 0.585, 0.581, 0.635, 0.604, 0.616, 0.622, 0.628)
    assert P.PAPER_TABLE2_COLUMNS[4] == "ternary90"
    for row in P.PAPER_TABLE2.values():                  # b bits accuracy increases with b
        c = P.PAPER_TABLE2_COLUMNS
        assert row[c.index("bits3")] <= row[c.index("bits4")] <= row[c.index("bits5")] <= row[-1] + 1e-9


def test_tiny_study_runs_reproducibly_and_caches(tmp_path):
    kw = dict(runs=4, epochs=12, n=16, n_val=12, lr=1e-2, grid=[(1.5, 6), (3.0, 8)],
              names=["sign", "ternary90", "bits4"], discriminator=DiscriminatorConfig(epochs=2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = study.run_study(study.StudyConfig(**kw), cache_dir=tmp_path)
        b = study.run_study(study.StudyConfig(**kw))
    assert a.r.shape == (2, 3, 4) and a.acc_val.shape == (2, 4, 4) and a.loss_in.shape == (2, 4, 4, 12)
    assert a.loss_out.shape == (2, 4, 4, 12)
    np.testing.assert_array_equal(a.r, b.r)
    np.testing.assert_array_equal(a.disc_mis, b.disc_mis)
    assert ((a.thr_mis >= 0) & (a.thr_mis <= 1)).all()
    assert len(list(tmp_path.glob("study-*.npz"))) == 1
    c = study.run_study(study.StudyConfig(**kw), cache_dir=tmp_path)  # reloaded, not recomputed
    np.testing.assert_array_equal(a.r, c.r)
    assert c.seconds == a.seconds
    t2 = study.table2(a)
    assert len(t2) == 2 * 4 and np.allclose(t2[t2.quantizer == "identity"].ours_ratio, 1.0)


def test_study_bad_input():
    with pytest.raises(ValueError, match="runs"):
        study.run_study(study.StudyConfig(runs=2, epochs=1))
    with pytest.raises(ValueError, match="unknown quantizer"):
        study.run_study(study.StudyConfig(runs=3, epochs=1, names=["bits9"]))
    with pytest.raises(ValueError, match="identity"):
        study.run_study(study.StudyConfig(runs=3, epochs=1, names=["identity", "sign"]))


def test_code_change_invalidates_the_cache(tmp_path, monkeypatch):
    kw = dict(runs=3, epochs=3, n=8, n_val=8, lr=1e-2, grid=[(1.5, 6)], names=["sign", "bits2"],
              discriminator=None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        study.run_study(study.StudyConfig(**kw), cache_dir=tmp_path)
        assert len(list(tmp_path.glob("study-*.npz"))) == 1
        study.run_study(study.StudyConfig(**kw), cache_dir=tmp_path)  # same code: reused
        assert len(list(tmp_path.glob("study-*.npz"))) == 1
        monkeypatch.setattr(study, "code_hash", lambda modules=study.STUDY_MODULES: "edited-code")
        study.run_study(study.StudyConfig(**kw), cache_dir=tmp_path)  # other code: recomputed
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


# ------------------------------------------------------------------------------ row functions
@pytest.fixture
def tiny(qmis_tiny_study):
    return qmis_tiny_study


def _fake_stab(rq_curve, thr_curve, k_runs=(2, 5, 20)):
    import pandas as pd

    return pd.DataFrame({"k_run": list(k_runs), "r_Q^n mean": rq_curve, "threshold MIS": thr_curve})


def test_fewer_runs_claim_not_comparable_when_baseline_never_reaches(tiny):
    stab = ranking_claims.stability(tiny, [2, 3, 5], 4, 2, seed=0)
    assert list(stab["curve"].k_run) == [2, 3, 5]
    stab["curve"] = _fake_stab([0.5, 0.96, 0.99], [0.1, 0.2, 0.3], (2, 3, 5))
    rows, _ = ranking_claims.stability_rows(tiny, stab)
    fewer = [r for r in rows if "fewer runs" in r.quantity][0]
    assert fewer.passed is None and fewer.verdict == "not comparable" and "baseline" in fewer.note
    stab["curve"] = _fake_stab([0.5, 0.96, 0.99], [0.1, 0.2, 0.97], (2, 3, 5))
    fewer = [r for r in ranking_claims.stability_rows(tiny, stab)[0] if "fewer runs" in r.quantity][0]
    assert fewer.passed is True
    stab["curve"] = _fake_stab([0.5, 0.6, 0.99], [0.1, 0.97, 0.99], (2, 3, 5))
    fewer = [r for r in ranking_claims.stability_rows(tiny, stab)[0] if "fewer runs" in r.quantity][0]
    assert fewer.passed is False
    assert ranking_claims.first_k(stab["curve"], "r_Q^n mean") == 5


def test_quantizer_rows():
    import torch

    th = torch.randn(64, 1001, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    rows = quantizer_claims.quantizer_rows(th)
    kinds = {r.kind for r in rows}
    assert kinds == {"erratum", "theory-check"}  # Table 1 restates definitions: checks, not reproductions (issue 28)
    readings = [r for r in rows if "erratum 001-T1" in r.where]
    assert len(readings) == 3 and all(r.verdict == "erratum confirmed" for r in readings)
    printed = [r for r in rows if r.where == "Table 1 (printed formula), Figure 5"]
    assert len(printed) == 4 and all(r.passed and 2 ** int(r.quantity[0]) < r.ours <= 2 ** int(r.quantity[0]) + 2 for r in printed)
    assert all(r.passed for r in rows if r.kind in ("paper-number", "theory-check"))


def test_theory_rows_are_theory_checks():
    import numpy as np

    P3 = np.array([0.5, 0.3, 0.2])
    A = np.array([[0.0, 1.0, 0.3], [0.8, 0.1, 0.0], [0.5, 0.5, 0.9]])
    rows, table = theory.eq11_rows({"toy": (A, P3)})
    assert [r.kind for r in rows] == ["theory-check"] and rows[0].passed and len(table) == 1
    alg = theory.algorithm1_rows({"toy": A}, P3, [50, 30, 20], seed=0)
    assert [r.kind for r in alg] == ["theory-check"] * 2 and all(r.passed for r in alg)
    t = theory.rate_table(A, P3, [10, 20, 40])
    from qlib import mia

    th = theory.theorem31_rows({"toy": (t, mia.chernoff_rate(A, P3))})
    assert th[0].kind == "theory-check" and th[0].passed  # a theorem on a toy instance (issue 28)


def test_variant_effect_tiny():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        frame, summ = study.variant_effect(study.StudyConfig(runs=3, epochs=6, n=8, n_val=8, lr=1e-2, grid=[(1.5, 6)],
                                                         names=["sign", "bits2", "bits4"], discriminator=None))
    assert len(frame) == 3 and summ["laws"] == 1 and -1 <= summ["rho"] <= 1
    # Sign does not depend on the b-bit formula
    sign = frame.iloc[0]
    assert sign["r_Q^n (printed)"] == pytest.approx(sign["r_Q^n (capped)"], nan_ok=True)


def test_proof_fact_rows_come_from_the_mia_limits_checks():
    rows, table = theory.proof_fact_rows(50, 5, 20, seed=0)
    assert len(rows) == len(table) >= 4
    assert {r.paper for r in rows} == {"001"}
    wheres = " ".join(r.where for r in rows)
    assert "Lemma B.1" in wheres and "Lemma B.2" in wheres and "Prop. C.3" in wheres and "C.4" in wheres
    by = {r.where: r for r in rows}
    assert all(r.passed for w, r in by.items() if w.startswith(("Lemma B.1", "Lemma B.2", "Proof of Prop. C.3")))
    assert any(r.kind == "erratum" and r.verdict == "erratum confirmed" for r in rows)  # 001-C4


# ------------------------------------------------------------------------ bad input (issue 11 §1)
@pytest.mark.parametrize("kw,name", [
    (dict(lr=float("nan")), "lr"), (dict(lr=-1.0), "lr"), (dict(centre_scale=float("inf")), "centre_scale"),
    (dict(seed=1.5), "seed"), (dict(seed=None), "seed"), (dict(law_seed=-1), "law_seed"),
    (dict(block=0), "block"),
    (dict(chunk_size=0), "chunk_size")])
def test_study_settings_checked_up_front_by_name(kw, name):
    # discriminator=None: no discriminator (its settings are one record, checked where it is built)
    run = {k: v for k, v in kw.items() if k in ("block", "chunk_size")}      # run-time settings, beside the record
    with pytest.raises((ValueError, TypeError), match=rf"\b{name}\b"):
        study.run_study(study.StudyConfig(runs=3, epochs=1, n=4, n_val=4, grid=[(1.5, 6)], discriminator=None,
                                          **{k: v for k, v in kw.items() if k not in run}), **run)


def test_row_functions_check_arguments_by_name(tiny):
    import pandas as pd
    import torch

    P3 = np.array([0.5, 0.3, 0.2])
    A = np.array([[0.0, 1.0, 0.3], [0.8, 0.1, 0.0], [0.5, 0.5, 0.9]])
    cases = [
        (lambda: quantizer_claims.quantizer_rows(torch.randn(4, 8, dtype=torch.float64), n_grid=0), ValueError, "n_grid"),
        (lambda: quantizer_claims.quantizer_rows(torch.randn(8, dtype=torch.float64)), ValueError, "thetas"),
        (lambda: theory.rate_table(np.full((3, 3), np.nan), P3, [10]), ValueError, "L"),
        (lambda: theory.rate_table(A, P3, []), ValueError, "ns"),
        (lambda: theory.rate_table(A, P3, [0, 10]), ValueError, "ns"),
        (lambda: theory.adaptive_table(lambda n: A, P3, [16], -1.0), ValueError, "gap_exponent"),
        (lambda: theory.theorem33_rows(pd.DataFrame({"n": [16], "ratio": [1.0]}), float("nan")), ValueError, "target"),
        (lambda: theory.proof_fact_rows(0, 1, 1, seed=0), ValueError, "b1_draws"),
        (lambda: theory.proof_fact_rows(5, 1, 1, seed=None), TypeError, "seed"),          # was silently unseeded
        (lambda: theory.algorithm1_rows({"toy": A}, P3, [5, 3, 3], seed=0), ValueError, "val_copies"),
        (lambda: theory.algorithm1_rows({"toy": A}, P3, [5, 3, 2], seed=None), TypeError, "seed"),  # idem
        (lambda: theory.algorithm1_rows({"toy": A}, [0.5, 0.5, 0.5], [5, 3, 2], seed=0), ValueError, "p"),
        (lambda: ranking_claims.stability(tiny, [], 2, 2), ValueError, "k_runs"),
        (lambda: ranking_claims.stability(tiny, [100], 2, 2), ValueError, "k_runs"),
        (lambda: ranking_claims.stability(tiny, [2, 3], 2, 0), ValueError, "n_subsets_baseline"),
        (lambda: ranking_claims.first_k(pd.DataFrame({"k_run": [2], "x": [0.9]}), "x", level=1.5), ValueError, "level"),
        (lambda: ranking_claims.first_k(pd.DataFrame({"k_run": [2], "x": [0.9]}), "y"), ValueError, "col"),
        (lambda: ranking_claims.confusion({"k_runs": [2]}, 0), ValueError, "k"),
        (lambda: ranking_claims.confusion({"k_runs": [2]}, float("nan")), TypeError, "k"),
    ]
    for fn, exc, name in cases:
        with pytest.raises(exc, match=rf"(?<![A-Za-z0-9_]){name}(?![A-Za-z0-9_])"):
            fn()


def test_mean_rho_is_nanmean_and_silent_when_undefined():
    """The rank-stability curve's mean ρ: NumPy's nanmean where some ρ is defined (the same values), NaN
    without a RuntimeWarning where all ties made every ρ undefined (a warning fails the book build)."""
    rng = np.random.default_rng(0)
    rho = rng.uniform(-1, 1, (3, 4, 5))
    rho[0, 1, :] = np.nan
    rho[2] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = ranking_claims._mean_defined(rho)
    assert np.array_equal(got[:2], np.nanmean(rho[:2], axis=(1, 2))) and np.isnan(got[2])


def test_table1_reading_of_ternary():
    import torch

    from qlib import quantizers as QZ

    x = torch.tensor([[0.1, -0.5, 2.0, -3.0, 0.05, 1.0, -0.2, 0.3, 0.7, -0.9]])
    text, table = QZ.get("ternary50").batched(x), QZ.get("ternary50_table").batched(x)
    # the text zeroes the 5 smallest |θ|; Table 1 as typeset keeps exactly those and zeroes the rest
    assert torch.equal((text == 0), (table != 0)) and int((table != 0).sum()) == 5
    assert torch.equal(table[table != 0], torch.sign(x)[table != 0])
    assert torch.equal(QZ.quantize_many(["ternary90_table"], x)[0], QZ.get("ternary90_table").batched(x))
    assert "ternary90_table" not in QZ.names() and QZ.labels()["ternary90_table"] == "1.58b 90% (Table 1)"


# -- the proof facts of §3 (qlib.repro.quantized_mis.erm_facts), at small sizes --------------------------
ERM_FACTS = {
    "lemma_b1_rows": lambda: erm_facts.lemma_b1_rows(200),
    "lemma_b2_rows": lambda: erm_facts.lemma_b2_rows(50),
    "erm_bound_rows": lambda: erm_facts.erm_bound_rows(10),
    "prop_c4_rows": lambda: erm_facts.prop_c4_rows(60),
}


_REL = re.compile(r"^(≤|≥|<|>) (-?[0-9.eE+-]+)$")


@pytest.fixture(scope="module")
def erm_rows():
    return {k: f() for k, f in ERM_FACTS.items()}


@pytest.mark.parametrize("name", list(ERM_FACTS))
def test_erm_fact_rows_pass_and_are_paper_001(erm_rows, name):
    rs = erm_rows[name]
    assert rs and all(isinstance(r, Row) for r in rs)
    bad = [(r.where, r.quantity, r.ours) for r in rs if r.passed is False]
    assert not bad, bad  # errata rows pass when the erratum is confirmed
    assert all(r.paper == "001" and r.kind in ("theory-check", "erratum") for r in rs)


def test_erm_fact_relations_match_verdicts_and_erratum_id(erm_rows):
    """A paper column '≤ x' / '≥ x' / '< x' / '> x' with a numeric 'ours' agrees with the verdict."""
    ops = {"≤": lambda a, b: a <= b + 1e-12, "≥": lambda a, b: a >= b - 1e-12, "<": lambda a, b: a < b,
           ">": lambda a, b: a > b}
    allrows = [r for rs in erm_rows.values() for r in rs]
    for r in allrows:
        m = _REL.match(str(r.paper_value))
        if m and isinstance(r.ours, (int, float)) and r.passed is not None:
            holds = ops[m.group(1)](float(r.ours), float(m.group(2)))
            assert holds == (r.passed != (r.kind == "erratum")), (r.where, r.quantity, r.paper_value, r.ours)
    ids = {re.search(r"\(erratum ([0-9]{3}-[A-Z0-9]+)\)", r.where).group(1) for r in allrows if r.kind == "erratum"}
    assert ids == {"001-C4"}


@pytest.mark.parametrize("check", [erm_facts.lemma_b1_rows, erm_facts.lemma_b2_rows, erm_facts.erm_bound_rows,
                                   erm_facts.prop_c4_rows])
@pytest.mark.parametrize("value", [0, -1])
def test_erm_facts_reject_zero_or_negative_draws(check, value):
    with pytest.raises(ValueError, match=r"\bdraws\b"):
        check(value)


# ----------------------------------------------------------------------------- the StudyConfig record
def test_study_config_is_frozen_hashable_and_keyed():
    import dataclasses

    a = study.StudyConfig(runs=5, epochs=40, grid=[(1.5, 6), (3.0, 8)], names=["sign", "bits2"])
    b = study.StudyConfig(runs=5, epochs=40, grid=((1.5, 6), (3.0, 8)), names=("sign", "bits2"))
    assert a == b and hash(a) == hash(b) and a.key() == b.key()
    assert a.names == ("sign", "bits2") and a.grid == ((1.5, 6), (3.0, 8))
    assert a.key() != dataclasses.replace(a, seed=1).key()
    assert a.key() != dataclasses.replace(a, variant="capped").key()
    assert study.study_key(a) == study.study_key(b) == study.study_key(a.as_dict())
    assert study.study_key(a) != study.study_key(dataclasses.replace(a, lr=1e-3))
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.runs = 6
    # the paper's settings are the defaults; the key is a pure function of the fields (pinned)
    p = study.StudyConfig()
    assert (p.runs, p.epochs, p.n, p.n_val, p.lr) == (300, 3000, 128, 128, 1e-4)
    assert p.names == P.PAPER_QUANTIZERS and len(p.grid) == 9
    assert p.key() == "57be3eda459d4e99"


def test_study_config_as_dict_is_the_result_config_and_round_trips():
    a = study.StudyConfig(runs=4, epochs=3, n=4, n_val=4, lr=1e-2, grid=[(1.5, 6)], discriminator=None)
    d = a.as_dict()
    assert d["names"] == list(P.PAPER_QUANTIZERS) and d["grid"] == [[1.5, 6.0]]
    assert set(d) == {"runs", "epochs", "n", "n_val", "lr", "names", "grid", "centre_scale", "scope", "seed",
                      "law_seed", "discriminator", "variant"}
    assert study.StudyConfig.from_dict(d) == a
    with pytest.raises(ValueError, match="device"):
        study.StudyConfig.from_dict({**d, "device": "cpu"})
    md = a.describe()
    assert "| `runs` | 4 | 300 |" in md and "| `lr` | 0.01 | 0.0001 |" in md


def test_run_study_follows_the_settings_rule():
    kw = dict(runs=3, epochs=4, n=8, n_val=8, lr=1e-2, grid=[(1.5, 6)], names=["sign", "bits2"],
              discriminator=None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = study.run_study(study.StudyConfig(**kw), device="cpu")
    assert a.config == study.StudyConfig(**kw).as_dict()
    with pytest.raises(TypeError, match=r"\bdisc_runs\b"):
        study.run_study(study.StudyConfig(**kw), disc_runs=4)
    with pytest.raises(TypeError, match=r"\bconfig\b"):
        study.run_study(kw)
    with pytest.raises(TypeError, match=r"\bconfig\b"):
        study.variant_effect(kw)


@pytest.mark.parametrize("kw, name", [
    (dict(runs=2), "runs"), (dict(epochs=0), "epochs"), (dict(n=1.5), "n"), (dict(n_val=1), "n_val"),
    (dict(lr=0.0), "lr"), (dict(lr=float("inf")), "lr"), (dict(centre_scale=-1.0), "centre_scale"),
    (dict(names=["bits9"]), "names"), (dict(names=["identity"]), "names"), (dict(grid=[]), "grid"),
    (dict(grid=[(1.5,)]), "grid"), (dict(grid=[(-1.0, 6)]), "sigma"), (dict(grid=[(1.5, 1)]), "k_modes"),
    (dict(scope="layer"), "scope"), (dict(variant="exact"), "variant"), (dict(seed=-1), "seed"),
    (dict(law_seed=1.5), "law_seed"), (dict(discriminator="yes"), "discriminator"),
    (dict(discriminator=True), "discriminator")])
def test_study_config_validates_each_field_by_name(kw, name):
    with pytest.raises((ValueError, TypeError), match=rf"\b{name}\b"):
        study.StudyConfig(**kw)


def test_verdict_table_lists_each_claim_with_its_verdict():
    from qlib.repro.ledger import Item, Null, claim

    rs = [claim(Item("§5.1.2", "a holds", "all laws"), "9/9 laws", True, null=Null("none", fails=True)),
          claim(Item("§5.1.2", "b holds", "all laws"), "3/9 laws", False, null=Null("none", fails=True))]
    t = ranking_claims.verdict_table(rs)
    assert list(t.columns) == ["claim", "paper", "ours", "verdict"]
    assert list(t.claim) == ["a holds", "b holds"] and list(t.verdict) == [r.verdict for r in rs]
    assert list(ranking_claims.verdict_table([]).columns) == ["claim", "paper", "ours", "verdict"]
