"""Paper 002's findings (qlib.repro.eden.findings): ids, quotes, selections, derived verdicts, and the
Kashin+SQ probe (qlib.repro.eden.kashin_probe)."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

import pandas as pd
import paper_texts
import pytest

from qlib.repro.eden import findings as F
from qlib.repro.findings import CAUSES, Cause, Select, check_registry, claim_verdict

ROOT = Path(__file__).resolve().parents[1]
_HERE = Path(__file__).resolve()



def test_ids_unique_and_well_formed():
    assert not check_registry(F.CLAIMS)
    ids = [c.id for c in F.CLAIMS]
    assert 10 <= len(ids) <= 25
    assert all(re.fullmatch(r"002-C\d+", i) for i in ids)
    assert all(c.paper == "002" for c in F.CLAIMS)
    heads = [c for c in F.CLAIMS if c.headline]
    assert 2 <= len(heads) <= 3 and all(not re.search(r"\d", c.headline) for c in heads)
    assert all(0 <= c.weight <= 10 for c in F.CLAIMS)


def test_quotes_occur_in_the_paper():
    missing = paper_texts.missing_quotes(F.CLAIMS, "002")
    assert not missing, f"quotes not found verbatim in the paper: {missing}"

def test_selections_match_existing_notebooks():
    chapters = [p.relative_to(ROOT / "chapters").with_suffix("").as_posix()
                for p in (ROOT / "chapters" / "eden").glob("*.ipynb")]
    sels = [s for c in F.CLAIMS for s in c.rows] + [s for s, _ in F.ROW_CAUSES]
    for s in sels:
        assert any(fnmatch.fnmatchcase(ch, s.chapter) for ch in chapters), s.chapter


def test_causes_well_formed():
    assert all(isinstance(s, Select) and isinstance(c, Cause) and c.kind in CAUSES for s, c in F.ROW_CAUSES)
    for _, c in F.ROW_CAUSES:
        if c.kind == "scale":
            assert c.evidence  # the rows at the larger scale
    assert {"paper", "title", "scope", "hard", "stand_ins"} <= set(F.SUMMARY) and F.SUMMARY["paper"] == "002"
    assert isinstance(F.SUMMARY["stand_ins"], tuple)


def _frame(verdicts):
    ch = "eden/01-estimator-vnmse"
    rows = [("paper-claim", "§5.2, Figures 2, 7", "Hadamard+SQ vNMSE grows with d"),
            ("paper-claim", "§5.2, Figures 2, 7", "QSGD vNMSE grows with d"),
            ("paper-claim", "App. I.1, Figures 2, 7", "EDEN vNMSE bounded independently of d (max over d of vNMSE / limit)")]
    return pd.DataFrame([{"chapter": ch, "paper": "002", "kind": k, "where": w, "quantity": q, "verdict": v}
                         for (k, w, q), v in zip(rows, verdicts)])


def test_claim_verdict_on_a_hand_built_frame():
    c16 = next(c for c in F.CLAIMS if c.id == "002-C16")
    v, tally = claim_verdict(c16, _frame(["reproduced", "reproduced", "consistent"]))
    assert v == "holds" and tally["rows"] == 2  # the third row is another claim's
    assert claim_verdict(c16, _frame(["reproduced", "differs", "consistent"]))[0] == "holds in part"
    assert claim_verdict(c16, _frame(["differs", "differs", "consistent"]))[0] == "not reproduced"


def test_paper_scale_rows_give_expected_verdicts():
    csv = ROOT / F.PAPER_SCALE_CSV
    if not csv.exists():
        pytest.skip("paper-scale rows not available")
    df = pd.read_csv(csv, dtype=str).fillna("")
    got = {c.id: claim_verdict(c, df)[0] for c in F.CLAIMS if all(s.chapter == "eden/01-*" for s in c.rows)}
    assert got["002-C15"] == "holds" and got["002-C16"] == "holds"
    assert got["002-C17"] == "holds in part"  # Kashin+SQ grows with d (cause: method)
    assert got["002-C7"] == "holds in part"  # Example 2's printed E[Q²] (cause: paper)
    assert got["002-C3"] == "untested"


def test_kashin_probe_explains_growth():
    from qlib.repro.eden.kashin_probe import SETTINGS, growth, iterations_change_nothing, kashin_probe

    assert iterations_change_nothing(d=256) < 1e-12
    g = growth(kashin_probe(bits=(2,), logd=(10, 14), trials=3)).set_index("setting")["ratio"]
    assert g[SETTINGS[0]] > 1.2 and g[SETTINGS[0]] == pytest.approx(g[SETTINGS[1]])
    assert abs(g[SETTINGS[2]] - 1) < 0.15 < g[SETTINGS[0]] - 1
