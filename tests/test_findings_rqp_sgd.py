"""The findings of paper 004 (qlib.repro.rqp_sgd.findings): ids, quotes, selections, the refuted claim."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

import pandas as pd
import paper_texts

from qlib.repro.findings import Claim, check_registry, claim_verdict
from qlib.repro.rqp_sgd.findings import CLAIMS, ROW_CAUSES, SUMMARY

ROOT = Path(__file__).resolve().parents[1]
_HERE = Path(__file__).resolve()



def test_ids_unique_and_well_formed():
    assert not check_registry(CLAIMS)
    assert 10 <= len(CLAIMS) <= 25
    assert all(re.fullmatch(r"004-C\d+", c.id) and c.paper == "004" for c in CLAIMS)
    heads = [c for c in CLAIMS if c.headline]
    assert 2 <= len(heads) <= 3 and not any(re.search(r"\d", c.headline) for c in heads)
    assert all(0 <= c.weight <= 10 for c in CLAIMS)
    assert [c.id for c in CLAIMS if c.erratum_refutes] == ["004-C4"]
    assert SUMMARY["paper"] == "004" and isinstance(SUMMARY["stand_ins"], tuple)


def test_quotes_occur_in_the_paper():
    missing = paper_texts.missing_quotes(CLAIMS, "004")
    assert not missing, f"quotes not found verbatim in the paper: {missing}"

def test_selects_match_notebooks():
    chapters = [str(p.relative_to(ROOT / "chapters").with_suffix("")) for p in (ROOT / "chapters").glob("*/*.ipynb")]
    sels = [s for c in CLAIMS for s in c.rows] + [s for s, _ in ROW_CAUSES]
    for s in sels:
        assert any(fnmatch.fnmatchcase(ch, s.chapter) for ch in chapters), s.chapter


def _frame(with_erratum: bool) -> pd.DataFrame:
    rows = [("rqp-sgd/01-theory", "theory-check", "Theorem 1",
             "ε_t ≥ loss of one step on one coordinate, add-remove (q = 0.3, σ = 0.5, b = 3)", "agrees")]
    if with_erratum:
        rows.append(("rqp-sgd/01-theory", "erratum", "Theorem 1",
                     "printed ε_t ≥ one-step loss for q in Algorithm 1's range, replace-one: smallest-q counterexample",
                     "erratum confirmed"))
    return pd.DataFrame(rows, columns=["chapter", "kind", "where", "quantity", "verdict"])


def test_theorem1_claim_refuted_by_erratum():
    c4 = next(c for c in CLAIMS if c.id == "004-C4")
    assert isinstance(c4, Claim)
    assert claim_verdict(c4, _frame(True))[0] == "refuted"
    assert claim_verdict(c4, _frame(False))[0] == "holds"
