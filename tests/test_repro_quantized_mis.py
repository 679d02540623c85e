"""Reproduction of paper 001 (qlib.repro.quantized_mis): paper values, the study driver and its
code-keyed cache, and the chapters' row functions (fast, tiny sizes)."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

from qlib.repro.ledger import Row
from qlib.repro.quantized_mis import erm_facts, study
from qlib.repro.quantized_mis import paper as P
from qlib.repro.quantized_mis import rows as R


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
    out = R.section512_claims(good, names)
    assert all(v.all() for v in out.values())
    bad = good.copy()
    bad[0, names.index("sign")] = 10
    out = R.section512_claims(bad, names)
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


# ------------------------------------------------------------------------------ row functions
@pytest.fixture(scope="module")
def tiny():
    kw = dict(runs=6, epochs=8, n=16, n_val=12, lr=1e-2, grid=[(1.5, 6), (3.0, 8)], discriminator=True,
              disc_epochs=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return study.run_study(**kw)


def test_table2_rows_leave_out_the_calibrated_identity_column(tiny):
    from qlib.repro.quantized_mis import rows as R

    rows, summ = R.table2_rows(tiny)
    cells = [r for r in rows if r.kind == "paper-number"]
    assert len(cells) == summ["compared"] == 2 * len(P.PAPER_QUANTIZERS)      # two laws, no identity cell
    assert summ["identity_left_out"] == 2 and not any("original" in r.quantity for r in cells)
    assert summ["passed"] == sum(r.passed for r in cells)
    assert all(abs(r.ours - r.paper_value) <= 0.03 + 1e-12 for r in cells if r.passed)


def test_figure2_paper_pairing_and_ablation_kinds(tiny):
    from qlib.repro.quantized_mis import rows as R

    rho = R.spearman_table(tiny)
    assert list(rho.law)[-1] == "mean" and len(rho) == 3
    rows = R.figure2_rows(rho, tiny)
    assert [r.kind for r in rows] == ["paper-number", "theory-check"]
    assert rows[0].paper_value == P.PAPER_MEAN_SPEARMAN
    assert "discriminator" in rows[0].quantity and "threshold" in rows[1].quantity
    claims, table = R.section512_rows(tiny)
    assert len(claims) == 6 and all(r.kind == "paper-claim" for r in claims) and len(table) == 12
    assert all(r.passed is None for r in R.cost_rows(tiny))


def _fake_stab(rq_curve, thr_curve, k_runs=(2, 5, 20)):
    import pandas as pd

    return pd.DataFrame({"k_run": list(k_runs), "r_Q^n mean": rq_curve, "threshold MIS": thr_curve})


def test_fewer_runs_claim_not_comparable_when_baseline_never_reaches(tiny):
    from qlib.repro.quantized_mis import rows as R

    stab = R.stability(tiny, [2, 3, 5], 4, 2, seed=0)
    assert list(stab["curve"].k_run) == [2, 3, 5]
    stab["curve"] = _fake_stab([0.5, 0.96, 0.99], [0.1, 0.2, 0.3], (2, 3, 5))
    rows, _ = R.stability_rows(tiny, stab)
    fewer = [r for r in rows if "fewer runs" in r.quantity][0]
    assert fewer.passed is None and fewer.verdict == "not comparable" and "baseline" in fewer.note
    stab["curve"] = _fake_stab([0.5, 0.96, 0.99], [0.1, 0.2, 0.97], (2, 3, 5))
    fewer = [r for r in R.stability_rows(tiny, stab)[0] if "fewer runs" in r.quantity][0]
    assert fewer.passed is True
    stab["curve"] = _fake_stab([0.5, 0.6, 0.99], [0.1, 0.97, 0.99], (2, 3, 5))
    fewer = [r for r in R.stability_rows(tiny, stab)[0] if "fewer runs" in r.quantity][0]
    assert fewer.passed is False
    assert R.first_k(stab["curve"], "r_Q^n mean") == 5


def test_quantizer_rows():
    import torch

    from qlib.repro.quantized_mis import rows as R

    th = torch.randn(64, 1001, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    rows = R.quantizer_rows(th)
    kinds = {r.kind for r in rows}
    assert kinds == {"erratum", "theory-check"}  # Table 1 restates definitions: checks, not reproductions (issue 28)
    readings = [r for r in rows if "erratum 001-T1" in r.where]
    assert len(readings) == 3 and all(r.verdict == "erratum confirmed" for r in readings)
    printed = [r for r in rows if r.where == "Table 1 (printed formula), Figure 5"]
    assert len(printed) == 4 and all(r.passed and 2 ** int(r.quantity[0]) < r.ours <= 2 ** int(r.quantity[0]) + 2 for r in printed)
    assert all(r.passed for r in rows if r.kind in ("paper-number", "theory-check"))


def test_theory_rows_are_theory_checks():
    import numpy as np

    from qlib.repro.quantized_mis import rows as R

    P3 = np.array([0.5, 0.3, 0.2])
    A = np.array([[0.0, 1.0, 0.3], [0.8, 0.1, 0.0], [0.5, 0.5, 0.9]])
    rows, table = R.eq11_rows({"toy": (A, P3)})
    assert [r.kind for r in rows] == ["theory-check"] and rows[0].passed and len(table) == 1
    alg = R.algorithm1_rows({"toy": A}, P3, [50, 30, 20], seed=0)
    assert [r.kind for r in alg] == ["theory-check"] * 2 and all(r.passed for r in alg)
    t = R.rate_table(A, P3, [10, 20, 40])
    from qlib import mia

    th = R.theorem31_rows({"toy": (t, mia.chernoff_rate(A, P3))})
    assert th[0].kind == "theory-check" and th[0].passed  # a theorem on a toy instance (issue 28)


def test_variant_effect_tiny():
    from qlib.repro.quantized_mis import rows as R

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        frame, summ = R.variant_effect(study.StudyConfig(runs=3, epochs=6, n=8, n_val=8, lr=1e-2, grid=[(1.5, 6)],
                                                         names=["sign", "bits2", "bits4"], discriminator=False))
    assert len(frame) == 3 and summ["laws"] == 1 and -1 <= summ["rho"] <= 1
    # Sign does not depend on the b-bit formula
    sign = frame.iloc[0]
    assert sign["r_Q^n (printed)"] == pytest.approx(sign["r_Q^n (capped)"], nan_ok=True)


def test_figure2_text_follows_the_verdicts(tiny):
    from qlib.repro.ledger import close, not_comparable
    from qlib.repro.quantized_mis import rows as R

    ok = [close("Figure 2", "q", 0.86, 0.8, atol=0.1, null=0.0), close("Figure 2 (ablation)", "q", 0.8, 0.5, atol=0.1,
                                                             kind="theory-check")]
    t = R.figure2_text(ok)
    assert "0.800" in t and "reproduced" in t and "disagrees" in t
    nc = [not_comparable("Figure 2", "q", 0.86, reason="ρ undefined"),
          not_comparable("Figure 2 (ablation)", "q", None, None, reason="ρ undefined", kind="theory-check")]
    assert "cannot be compared" in R.figure2_text(nc) and "None" not in R.figure2_text(nc)


def test_proof_fact_rows_come_from_the_mia_limits_checks():
    from qlib.repro.quantized_mis.rows import proof_fact_rows

    rows, table = proof_fact_rows(50, 5, 20, seed=0)
    assert len(rows) == len(table) >= 4
    assert {r.paper for r in rows} == {"001"}
    wheres = " ".join(r.where for r in rows)
    assert "Lemma B.1" in wheres and "Lemma B.2" in wheres and "Prop. C.3" in wheres and "C.4" in wheres
    by = {r.where: r for r in rows}
    assert all(r.passed for w, r in by.items() if w.startswith(("Lemma B.1", "Lemma B.2", "Proof of Prop. C.3")))
    assert any(r.kind == "erratum" and r.verdict == "erratum confirmed" for r in rows)  # 001-C4


def test_figure6_and_figure8_rows():
    import types

    from qlib.repro.quantized_mis import rows as R

    L, Q, Rn = 2, 3, 4
    r = np.zeros((L, Q, Rn))
    r[:, 2] = 1.0                                   # quantizer 2 is the least private on both laws
    acc = np.ones((L, Q + 1, Rn))
    acc[0, 3] = 0.97                                # keeps 97 % on law 0 ...
    acc[1, 3] = 0.90                                # ... but only 90 % on law 1
    cfg = {"runs": Rn, "epochs": 10}
    res = types.SimpleNamespace(r=r, acc_val=acc, config=cfg)
    (row,) = R.figure6_rows(res)
    assert row.kind == "paper-claim" and row.passed is False and row.ours.startswith("1/2 laws")
    acc[1, 3] = 0.99
    assert R.figure6_rows(res)[0].passed is True
    (f8,) = R.figure8_rows()
    assert f8.verdict == "not comparable" and "Figure 8" in f8.where


# ------------------------------------------------------------------------ bad input (issue 11 §1)
@pytest.mark.parametrize("kw,name", [
    (dict(lr=float("nan")), "lr"), (dict(lr=-1.0), "lr"), (dict(centre_scale=float("inf")), "centre_scale"),
    (dict(seed=1.5), "seed"), (dict(seed=None), "seed"), (dict(law_seed=-1), "law_seed"),
    (dict(disc_hidden=0), "disc_hidden"), (dict(disc_epochs=1.5), "disc_epochs"),
    (dict(disc_lr=float("nan")), "disc_lr"), (dict(disc_patience=0), "disc_patience"),
    (dict(disc_runs_per_batch=-1), "disc_runs_per_batch"), (dict(block=0), "block"),
    (dict(chunk_size=0), "chunk_size")])
def test_study_settings_checked_up_front_by_name(kw, name):
    # discriminator=False: the disc_* settings were ignored (and stored in the cache key) unchecked
    with pytest.raises((ValueError, TypeError), match=rf"\b{name}\b"):
        study.run_study(runs=3, epochs=1, n=4, n_val=4, grid=[(1.5, 6)], discriminator=False, **kw)


def test_section512_claims_all_nan_law_and_bad_values():
    names = list(P.PAPER_QUANTIZERS)
    v = np.array([[3, 4, 5, 9, 2.5, 2, 1, 0.5], [np.nan] * 8])
    out = R.section512_claims(v, names)                       # crashed: "All-NaN slice encountered"
    assert out["1.58b 90% is the most private"].tolist() == [True, False]
    assert not out["Sign is less private than 1.58b 33%"][1]
    with pytest.raises(ValueError, match=r"\bvalues must be finite or NaN"):
        R.section512_claims(np.where(np.isnan(v), np.inf, v), names)
    with pytest.raises(ValueError, match=r"\bvalues must have ndim 2"):
        R.section512_claims(v[0], names)
    with pytest.raises(ValueError, match=r"\bnames must name the 8 columns"):
        R.section512_claims(v, names[:-1] + ["sign"] + ["bits5"])


def test_row_functions_check_arguments_by_name(tiny):
    import pandas as pd
    import torch

    from qlib.repro.quantized_mis import rows as R

    P3 = np.array([0.5, 0.3, 0.2])
    A = np.array([[0.0, 1.0, 0.3], [0.8, 0.1, 0.0], [0.5, 0.5, 0.9]])
    cases = [
        (lambda: R.quantizer_rows(torch.randn(4, 8, dtype=torch.float64), n_grid=0), ValueError, "n_grid"),
        (lambda: R.quantizer_rows(torch.randn(8, dtype=torch.float64)), ValueError, "thetas"),
        (lambda: R.rate_table(np.full((3, 3), np.nan), P3, [10]), ValueError, "L"),
        (lambda: R.rate_table(A, P3, []), ValueError, "ns"),
        (lambda: R.rate_table(A, P3, [0, 10]), ValueError, "ns"),
        (lambda: R.adaptive_table(lambda n: A, P3, [16], -1.0), ValueError, "gap_exponent"),
        (lambda: R.theorem33_rows(pd.DataFrame({"n": [16], "ratio": [1.0]}), float("nan")), ValueError, "target"),
        (lambda: R.proof_fact_rows(0, 1, 1, seed=0), ValueError, "b1_draws"),
        (lambda: R.proof_fact_rows(5, 1, 1, seed=None), TypeError, "seed"),          # was silently unseeded
        (lambda: R.algorithm1_rows({"toy": A}, P3, [5, 3, 3], seed=0), ValueError, "val_copies"),
        (lambda: R.algorithm1_rows({"toy": A}, P3, [5, 3, 2], seed=None), TypeError, "seed"),  # idem
        (lambda: R.algorithm1_rows({"toy": A}, [0.5, 0.5, 0.5], [5, 3, 2], seed=0), ValueError, "p"),
        (lambda: R.table2_rows(tiny, atol=-0.1), ValueError, "atol"),
        (lambda: R.figure2_rows(R.spearman_table(tiny), tiny, atol=float("nan")), ValueError, "atol"),
        (lambda: R.stability(tiny, [], 2, 2), ValueError, "k_runs"),
        (lambda: R.stability(tiny, [100], 2, 2), ValueError, "k_runs"),
        (lambda: R.stability(tiny, [2, 3], 2, 0), ValueError, "n_subsets_baseline"),
        (lambda: R.first_k(pd.DataFrame({"k_run": [2], "x": [0.9]}), "x", level=1.5), ValueError, "level"),
        (lambda: R.first_k(pd.DataFrame({"k_run": [2], "x": [0.9]}), "y"), ValueError, "col"),
        (lambda: R.confusion({"k_runs": [2]}, 0), ValueError, "k"),
        (lambda: R.confusion({"k_runs": [2]}, float("nan")), TypeError, "k"),
    ]
    for fn, exc, name in cases:
        with pytest.raises(exc, match=rf"(?<![A-Za-z0-9_]){name}(?![A-Za-z0-9_])"):
            fn()


def test_section512_rows_without_discriminator(tiny):
    import dataclasses

    from qlib.repro.quantized_mis import rows as R

    no_disc = dataclasses.replace(tiny, disc_mis=np.full_like(tiny.disc_mis, np.nan))
    rows, table = R.section512_rows(no_disc)                      # crashed on the all-NaN discriminator MIS
    disc = [r for r in rows if "discriminator" in r.quantity]
    assert disc and all(r.verdict == "not comparable" for r in disc)   # not run is not "differs"
    assert len(disc) == len([r for r in rows if "r_Q^n" in r.quantity])
    assert "not run" in set(table["laws where it holds"])


def test_mean_rho_is_nanmean_and_silent_when_undefined():
    """The rank-stability curve's mean ρ: NumPy's nanmean where some ρ is defined (the same values), NaN
    without a RuntimeWarning where all ties made every ρ undefined (a warning fails the book build)."""
    from qlib.repro.quantized_mis import rows as R

    rng = np.random.default_rng(0)
    rho = rng.uniform(-1, 1, (3, 4, 5))
    rho[0, 1, :] = np.nan
    rho[2] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = R._mean_defined(rho)
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


def test_readings_study_tiny():
    import math

    from qlib.repro.quantized_mis import rows as R

    rt = R.reading_effect(study.StudyConfig(runs=3, epochs=3, n=16, n_val=16, lr=1e-3, seed=0,
                                            grid=[(1.5, 6), (2.0, 6), (3.0, 6)]), device="cpu")
    assert list(rt["columns"]["paper column"]) == ["1.58b 33%", "1.58b 50%", "1.58b 90%"]
    assert set(rt["claims"]["reading"]) == {"text", "Table 1"}
    rows = R.reading_rows(rt, rt["res"])
    better = [r for r in rows if r.quantity.startswith("1.58b 90% more accurate")]
    assert [r.kind for r in better] == ["paper-claim", "theory-check"] and better[0].null_fails
    assert math.isfinite(rt["columns"]["mean |Δ|, text reading"].iloc[0])
    assert "Table 1" in R.reading_text(rt) or "not resolved" in R.reading_text(rt)


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
    assert p.key() == "ea89adcbe24b8376"


def test_study_config_as_dict_is_the_result_config_and_round_trips():
    a = study.StudyConfig(runs=4, epochs=3, n=4, n_val=4, lr=1e-2, grid=[(1.5, 6)], discriminator=False)
    d = a.as_dict()
    assert d["names"] == list(P.PAPER_QUANTIZERS) and d["grid"] == [[1.5, 6.0]]
    assert set(d) == {"runs", "epochs", "n", "n_val", "lr", "names", "grid", "centre_scale", "scope", "seed",
                      "law_seed", "discriminator", "disc_hidden", "disc_epochs", "disc_patience", "disc_lr",
                      "disc_runs_per_batch", "variant"}
    assert study.StudyConfig.from_dict(d) == a
    with pytest.raises(ValueError, match="device"):
        study.StudyConfig.from_dict({**d, "device": "cpu"})
    md = a.describe()
    assert "| `runs` | 4 | 300 |" in md and "| `lr` | 0.01 | 0.0001 |" in md


def test_run_study_config_equals_its_fields_by_keyword():
    kw = dict(runs=3, epochs=4, n=8, n_val=8, lr=1e-2, grid=[(1.5, 6)], names=["sign", "bits2"],
              discriminator=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = study.run_study(study.StudyConfig(**kw), device="cpu")
        b = study.run_study(**kw, device="cpu")
    assert a.config == b.config == study.StudyConfig(**kw).as_dict()
    for k in study.StudyResult._ARRAYS:
        np.testing.assert_array_equal(getattr(a, k), getattr(b, k))
    with pytest.raises(TypeError, match=r"\bruns\b"):
        study.run_study(study.StudyConfig(**kw), runs=4)
    with pytest.raises(TypeError, match=r"\bconfig\b"):
        study.run_study(kw)
    with pytest.raises(TypeError, match=r"\bconfig\b"):
        R.variant_effect(kw)
    with pytest.raises(TypeError, match=r"\bconfig\b"):
        R.reading_effect(kw)


@pytest.mark.parametrize("kw, name", [
    (dict(runs=2), "runs"), (dict(epochs=0), "epochs"), (dict(n=1.5), "n"), (dict(n_val=1), "n_val"),
    (dict(lr=0.0), "lr"), (dict(lr=float("inf")), "lr"), (dict(centre_scale=-1.0), "centre_scale"),
    (dict(names=["bits9"]), "names"), (dict(names=["identity"]), "names"), (dict(grid=[]), "grid"),
    (dict(grid=[(1.5,)]), "grid"), (dict(grid=[(-1.0, 6)]), "sigma"), (dict(grid=[(1.5, 1)]), "k_modes"),
    (dict(scope="layer"), "scope"), (dict(variant="exact"), "variant"), (dict(seed=-1), "seed"),
    (dict(law_seed=1.5), "law_seed"), (dict(discriminator="yes"), "discriminator"),
    (dict(disc_hidden=0), "disc_hidden"), (dict(disc_lr=float("nan")), "disc_lr")])
def test_study_config_validates_each_field_by_name(kw, name):
    with pytest.raises((ValueError, TypeError), match=rf"\b{name}\b"):
        study.StudyConfig(**kw)


def test_verdict_table_lists_each_claim_with_its_verdict():
    from qlib.repro.ledger import claim

    rs = [claim("§5.1.2", "a holds", "all laws", "9/9 laws", True, null="none", null_fails=True),
          claim("§5.1.2", "b holds", "all laws", "3/9 laws", False, null="none", null_fails=True)]
    t = R.verdict_table(rs)
    assert list(t.columns) == ["claim", "paper", "ours", "verdict"]
    assert list(t.claim) == ["a holds", "b holds"] and list(t.verdict) == [r.verdict for r in rs]
    assert list(R.verdict_table([]).columns) == ["claim", "paper", "ours", "verdict"]
