"""The findings of paper 004 (qlib.repro.rqp_sgd.findings): ids, quotes, selections, the refuted claim."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

import pandas as pd
import pytest

from qlib.repro.findings import Claim, check_registry, claim_verdict
from qlib.repro.rqp_sgd.findings import CLAIMS, ROW_CAUSES, SUMMARY

ROOT = Path(__file__).resolve().parents[1]
_HERE = Path(__file__).resolve()
#: the shared paper texts: beside the checkout (/work/shared) or one level further up (a worktree)
PAPERS = next((p for p in (_HERE.parents[2] / "shared" / "papers", _HERE.parents[2].parent / "shared" / "papers")
               if p.is_dir()), _HERE.parents[2] / "shared" / "papers")


def _flat(s: str) -> str:
    return re.sub(r"\s+", " ", s).strip()


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
    files = sorted(PAPERS.glob("004_*.txt")) if PAPERS.is_dir() else []
    if not files:
        pytest.skip("paper text not available")
    text = _flat(files[0].read_text(encoding="utf-8"))
    missing = [c.id for c in CLAIMS if _flat(c.quote) not in text]
    assert not missing


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
