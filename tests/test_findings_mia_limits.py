"""The findings of paper 003 (qlib.repro.mia_limits.findings) and of the attacks part
(qlib.repro.attacks.findings): ids, quotes, selections, derived verdicts, causes."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

import numpy as np
import pandas as pd
import paper_texts

from qlib.mia.overfit import OverfitRun
from qlib.repro import findings as F
from qlib.repro.attacks import findings as AF
from qlib.repro.mia_limits import findings as MF
from qlib.repro.mia_limits import mnist, overfitting, theory

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = ROOT / "chapters"
#: the papers as text (``shared/papers`` beside the checkout, as tests/test_book.py reads them)



def _chapter_ids() -> list[str]:
    return [f"{nb.parent.name}/{nb.stem}" for nb in CHAPTERS.glob("*/[0-9]*.ipynb")]


def _frame(rows, chapter: str) -> pd.DataFrame:
    return pd.DataFrame([{"chapter": chapter, "paper": r.paper or "003", "kind": r.kind, "where": r.where,
                          "quantity": r.quantity, "verdict": r.verdict} for r in rows])


def _claim(cid: str) -> F.Claim:
    return next(c for c in MF.CLAIMS if c.id == cid)


def test_ids_unique_and_well_formed():
    ids = [c.id for c in MF.CLAIMS]
    assert len(ids) == len(set(ids))
    assert not F.check_registry(MF.CLAIMS)
    assert 10 <= len(MF.CLAIMS) <= 25
    assert all(c.paper == "003" and re.fullmatch(r"003-C\d+", c.id) for c in MF.CLAIMS)
    assert all(0 <= c.weight <= 10 for c in MF.CLAIMS)
    heads = [c for c in MF.CLAIMS if c.headline]
    assert 2 <= len(heads) <= 3
    assert all(not re.search(r"\d", c.headline) for c in heads), "headlines carry no numbers"


def test_summary():
    s = MF.SUMMARY
    assert s["paper"] == "003" and s["title"].strip()
    assert 2 <= len(re.findall(r"[.!?](\s|$)", s["scope"])) <= 4
    assert 1 <= len(re.findall(r"[.!?](\s|$)", s["hard"])) <= 3
    assert isinstance(s["stand_ins"], tuple) and all(isinstance(x, str) and x.strip() for x in s["stand_ins"])


def test_quotes_occur_in_the_paper():
    missing = paper_texts.missing_quotes(MF.CLAIMS, "003")
    assert not missing, f"quotes not found verbatim in the paper: {missing}"

def test_selects_name_existing_chapters():
    ids = _chapter_ids()
    assert ids, "no notebooks found"
    sels = [s for c in MF.CLAIMS for s in c.rows] + [s for s, _ in MF.ROW_CAUSES] + [s for s, _ in AF.ROW_CAUSES]
    sels += [e for _, c in MF.ROW_CAUSES for e in c.evidence] + [e for c in MF.CLAIMS if c.cause for e in c.cause.evidence]
    for s in sels:
        assert any(fnmatch.fnmatchcase(i, s.chapter) for i in ids), f"{s.chapter!r} matches no notebook"


def test_untested_claims_say_why():
    for c in MF.CLAIMS:
        if not c.rows:
            assert c.untested.strip()


def test_errata_mentioned_exist():
    for c in MF.CLAIMS:
        for eid in re.findall(r"003-E\d+", c.untested + (c.cause.why if c.cause else "")):
            assert eid in theory.ERRATA


def test_theorem31_verdict_and_flip():
    """003-C2 on the real rows of theorem31_rows (one n): holds (the erratum 003-E1 rows are confirmed and
    do not refute it); one row flipped to disagrees makes it hold in part."""
    df = _frame(theory.theorem31_rows(nus=(0.3, 0.5), ns=(2,)), "mia-limits/01-theorem-checks")
    c = _claim("003-C2")
    v, tally = F.claim_verdict(c, df)
    assert v == "holds" and tally["rows"] == len(df) == 3 and tally["erratum"] == 1
    flipped = df.copy()
    flipped.loc[flipped["where"] == "Theorem 3.1", "verdict"] = "disagrees"
    assert F.claim_verdict(c, flipped)[0] == "holds in part"
    flipped.loc[:, "verdict"] = "disagrees"
    assert F.claim_verdict(c, flipped)[0] == "not reproduced"


def test_theorem31_takes_attack_rows_of_paper_003_only():
    df = pd.DataFrame([
        {"chapter": "attacks/01-toys-vs-limit", "paper": "003", "kind": "theory-check",
         "where": "Theorem 3.1 (the Bayes attack's accuracy) (empirical law toy)", "quantity": "q", "verdict": "agrees"},
        {"chapter": "attacks/01-toys-vs-limit", "paper": "003", "kind": "theory-check",
         "where": "Theorem 3.1 (every attack) (finite-Θ ERM toy)", "quantity": "q", "verdict": "agrees"},
        {"chapter": "attacks/01-toys-vs-limit", "paper": "001", "kind": "theory-check",
         "where": "Theorem 3.1 of paper 001 (rate) (finite-Θ ERM toy)", "quantity": "q", "verdict": "disagrees"},
        {"chapter": "attacks/01-toys-vs-limit", "paper": "003", "kind": "theory-check",
         "where": "Corollary 5.4.1 (upper bound) (empirical law toy)", "quantity": "q", "verdict": "agrees"},
    ])
    c1 = _claim("003-C1")
    assert set(F.claim_rows(c1, df).index) == {0, 1}
    assert F.claim_verdict(c1, df)[0] == "holds"
    c11 = _claim("003-C11")
    assert set(F.claim_rows(c11, df).index) == {3}
    for c in MF.CLAIMS:
        assert 2 not in set(F.claim_rows(c, df).index), f"{c.id} selects a row of paper 001"


def test_section62_text_refuted_by_its_erratum():
    """003-C21 on the real §6.2 rows: refuted (erratum 003-E7 confirmed, erratum_refutes set); without a
    confirmed erratum it would hold."""
    df = _frame(mnist.table1_text_rows(), "mia-limits/03-mnist-table1")
    c = _claim("003-C21")
    v, tally = F.claim_verdict(c, df)
    assert v == "refuted" and tally["rows"] == 4 and tally["erratum"] == 2
    unconfirmed = df.copy()
    unconfirmed.loc[unconfirmed["kind"] == "erratum", "verdict"] = "erratum not confirmed"
    assert F.claim_verdict(c, unconfirmed)[0] == "holds in part"


def test_table1_delta_column_holds_and_accuracies_untested():
    df = pd.concat([_frame(mnist.table1_delta_rows(), "mia-limits/03-mnist-table1"),
                    pd.DataFrame([{"chapter": "mia-limits/03-mnist-table1", "paper": "003", "kind": "paper-number",
                                   "where": "Table 1", "quantity": "accuracy, n = 1000, raw", "verdict": "not comparable"}])],
                   ignore_index=True)
    assert F.claim_verdict(_claim("003-C18"), df)[0] == "holds"
    assert F.claim_verdict(_claim("003-C19"), df)[0] == "untested"


def test_errata_not_refuting_where_the_statement_holds():
    """Only 003-C21 is refuted by an erratum; the proofs' errata (E1–E4) leave their claims standing."""
    assert [c.id for c in MF.CLAIMS if c.erratum_refutes] == ["003-C21"]
    df = _frame(theory.remark51_rows(cs=(0.1, 1.0), ds=(1, 10), epss=(0.1, 0.5)), "mia-limits/01-theorem-checks")
    assert F.claim_verdict(_claim("003-C8"), df)[0] == "holds"


def _overfit_run(plateaus):
    """Three fake runs of §6.1 at the paper's length: run i's train fraction at ε = 1e-6 rises to ``plateaus[i]``
    (by iteration 1200), the validation fraction stays at 0.003."""
    its = np.arange(0, 2501, 25)
    tf = np.stack([np.stack([np.clip(its / 1200, 0, 1) * p] * 2, -1) for p in plateaus])
    return OverfitRun(its, np.array([1e-2, 1e-6]), tf, np.full_like(tf, 0.003), np.zeros(tf.shape[:2]),
                      np.zeros(tf.shape[:2]))


def _overfit_frame(plateaus) -> pd.DataFrame:
    rows = overfitting.figure1_rows(_overfit_run(plateaus), [0, 1, 2])
    df = _frame(rows, "mia-limits/02-overfitting")
    df["ours"] = [str(r.ours) for r in rows]
    df["paper_value"] = [str(r.paper_value) for r in rows]
    df["scale"] = "paper (archived 2026-11-28, cpu)"
    return df


def test_final_iteration_causes_hold_while_a_run_meets_the_reading_and_fall_back_otherwise():
    """The worst-run rows of §6.1 that differ take the ``method`` cause (the initialisation drawn) while one of
    the runs alone meets the row's test; when every run fails the cause cannot hold and the row is unexplained."""
    out = F.assign_causes(_overfit_frame((1.0, 1.0, 0.948)), MF.ROW_CAUSES, stand_ins=MF.STAND_INS).set_index("quantity")
    for q in ("train fraction with loss ≤ 1e-6 at the last iteration",
              "Eq. 6 lower bound on Δ_n (ε = 1e-6) at the last iteration"):
        assert out.loc[q, "verdict"] in F.DIFFERING and out.loc[q, "cause"] == "method", q
        assert out.loc[q, "cause_evidence"].count("mia-limits/02-overfitting#") == 3
    first = "first iteration with train fraction ≥ 0.99 at ε = 1e-6"
    assert out.loc[first, "verdict"] == "differs" and out.loc[first, "cause"] == "unexplained"
    worse = F.assign_causes(_overfit_frame((0.95, 0.96, 0.948)), MF.ROW_CAUSES, stand_ins=MF.STAND_INS)
    worse = worse.set_index("quantity")
    q = "train fraction with loss ≤ 1e-6 at the last iteration"
    assert worse.loc[q, "cause"] == "unexplained" and "no variant of ours (probe row) passes" in worse.loc[q, "cause_why"]


def test_c17_keeps_the_timing_row_of_a_run_that_never_reaches_the_reading():
    """003-C17 ("only after at least 2000 iterations") on three runs of which one never reaches the reading:
    the timing row is kept and fails (runs 1 and 2 reach it by iteration 1200), so the claim holds in part —
    it no longer holds on the iteration-500 row alone."""
    df = _overfit_frame((1.0, 1.0, 0.948))
    v, tally = F.claim_verdict(_claim("003-C17"), df)
    assert (v, tally["judged"], tally["differ"]) == ("holds in part", 2, 1)
    assert F.claim_verdict(_claim("003-C17"), df[~df["quantity"].str.startswith("first iteration")])[0] == "consistent"


def test_c21_cause_names_the_confirmed_errata():
    df = _frame(mnist.table1_text_rows(), "mia-limits/03-mnist-table1")
    df["ours"] = df["paper_value"] = ""
    c = _claim("003-C21")
    ev = F.evidence_rows(c.cause, df.assign(id=F.row_ids(df)))
    assert len(ev) == 2 and set(ev["verdict"]) == {"erratum confirmed"}
    assert F.cause_check(c.cause, None, ev)[0]
    unconfirmed = ev.assign(verdict="erratum not confirmed")
    assert F.cause_check(c.cause, None, unconfirmed) == (False, "no evidence row is a confirmed erratum")


def test_attacks_module():
    assert isinstance(AF.CLAIMS, tuple) and not F.check_registry(AF.CLAIMS)
    assert all(isinstance(c, F.Claim) for c in AF.CLAIMS)
    assert not hasattr(AF, "SUMMARY")
