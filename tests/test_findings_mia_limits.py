"""The findings of paper 003 (qlib.repro.mia_limits.findings) and of the attacks part
(qlib.repro.attacks.findings): ids, quotes, selections, derived verdicts, causes."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

import pandas as pd
import paper_texts

from qlib.repro import findings as F
from qlib.repro.attacks import findings as AF
from qlib.repro.mia_limits import findings as MF
from qlib.repro.mia_limits import mnist, theory

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


def test_causes_are_valid():
    for mod in (MF, AF):
        assert isinstance(mod.ROW_CAUSES, tuple)
        for pair in mod.ROW_CAUSES:
            sel, cause = pair
            assert isinstance(sel, F.Select) and isinstance(cause, F.Cause) and cause.kind in F.CAUSES


def test_attacks_module():
    assert isinstance(AF.CLAIMS, tuple) and not F.check_registry(AF.CLAIMS)
    assert all(isinstance(c, F.Claim) for c in AF.CLAIMS)
    assert not hasattr(AF, "SUMMARY")
    df = pd.DataFrame([{"chapter": "attacks/04-dp-sgd-bound", "paper": "004", "kind": "theory-check",
                        "where": "audit gap: DP-SGD", "quantity": "q", "verdict": "disagrees"}])
    out = F.assign_causes(df, list(MF.ROW_CAUSES) + list(AF.ROW_CAUSES))
    assert out["cause"].iloc[0] in F.CAUSES
