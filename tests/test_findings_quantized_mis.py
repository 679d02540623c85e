"""The findings of paper 001 (qlib.repro.quantized_mis.findings): the claims' registry, their quotes
against the paper's text, their selections against the book's chapters and rows, the derived verdicts
on hand-built ledgers, the causes of differing rows; and figure6_rows' choice of the least private
quantizer when a run's r_Q^n is undefined."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

import numpy as np
import pandas as pd
import paper_texts
import pytest

from qlib.repro.findings import (
    CAUSES,
    CLAIM_VERDICTS,
    Cause,
    Claim,
    Select,
    assign_causes,
    check_registry,
    claim_rows,
    claim_verdict,
)
from qlib.repro.quantized_mis import findings as F

REPO = Path(__file__).resolve().parents[1]
MOLECULAR_CSV = REPO / "benchmarks" / "results" / "cpu-2026-11-26" / "molecular-default-comparisons.csv"



def _claim(cid: str) -> Claim:
    return next(c for c in F.CLAIMS if c.id == cid)


def _frame(rows) -> pd.DataFrame:
    """A ledger frame from (chapter, kind, where, quantity, verdict) tuples."""
    return pd.DataFrame(rows, columns=["chapter", "kind", "where", "quantity", "verdict"]).assign(paper="001")


# --- registry ---------------------------------------------------------------------------------------
def test_ids_unique_and_registry_clean():
    ids = [c.id for c in F.CLAIMS]
    assert len(ids) == len(set(ids))
    assert check_registry(F.CLAIMS) == []
    assert 10 <= len(F.CLAIMS) <= 25
    assert all(c.paper == "001" and re.fullmatch(r"001-C\d+", c.id) for c in F.CLAIMS)
    assert all(0 <= c.weight <= 10 for c in F.CLAIMS)
    heads = [c for c in F.CLAIMS if c.headline]
    assert 2 <= len(heads) <= 3
    assert not any(re.search(r"\d", c.headline) for c in heads), "headlines carry no numbers"


def test_every_claim_has_rows_or_says_why():
    for c in F.CLAIMS:
        assert c.rows or c.untested.strip(), c.id


def test_quotes_occur_in_the_paper():
    missing = paper_texts.missing_quotes(F.CLAIMS, "001")
    assert not missing, f"quotes not found verbatim in the paper: {missing}"

def _chapter_ids() -> list[str]:
    return [f"{p.parent.name}/{p.stem}" for p in (REPO / "chapters").glob("*/*.ipynb")]


def _selects():
    for c in F.CLAIMS:
        yield from c.rows
    for s, _ in F.ROW_CAUSES:
        yield s


def test_every_select_names_an_existing_chapter():
    chapters = _chapter_ids()
    assert chapters
    bad = sorted({s.chapter for s in _selects() if not any(fnmatch.fnmatchcase(ch, s.chapter) for ch in chapters)})
    assert not bad, f"chapter globs matching no notebook under chapters/: {bad}"


def test_row_causes_use_the_vocabulary():
    assert F.ROW_CAUSES
    for s, c in F.ROW_CAUSES:
        assert isinstance(s, Select) and isinstance(c, Cause) and c.kind in CAUSES
        assert s.chapter.startswith("quantized-mis/"), "causes are given for the quantized-MIS chapters' rows"


def test_summary_keys():
    s = F.SUMMARY
    assert s["paper"] == "001"
    assert {"title", "scope", "hard", "stand_ins"} <= set(s)
    assert isinstance(s["stand_ins"], tuple) and s["stand_ins"] and all(isinstance(x, str) for x in s["stand_ins"])


# --- the selections hit real rows ---------------------------------------------------------------------
def test_molecular_selections_hit_rows_of_the_recorded_ledger():
    if not MOLECULAR_CSV.is_file():
        pytest.skip("the recorded molecular ledger is absent")
    df = pd.read_csv(MOLECULAR_CSV)
    for c in F.CLAIMS:
        for s in c.rows:
            if s.chapter == "quantized-mis/05-*":
                assert s.mask(df).any(), f"{c.id}: {s} selects no row of {MOLECULAR_CSV.name}"
    # Table 3's Sign / 1.58b cells belong to C19, its 2–5 bit cells to C18, never both
    c18, c19 = _claim("001-C18"), _claim("001-C19")
    t3 = df[df["where"].str.startswith("Table 3, ") & ~df["quantity"].str.contains("original")]
    a, b = set(claim_rows(c18, t3).index), set(claim_rows(c19, t3).index)
    assert a and b and not (a & b) and a | b == set(t3.index)


def test_molecular_differing_rows_get_the_recorded_causes():
    if not MOLECULAR_CSV.is_file():
        pytest.skip("the recorded molecular ledger is absent")
    df = assign_causes(pd.read_csv(MOLECULAR_CSV), F.ROW_CAUSES)
    d = df[df.verdict.isin(["differs", "disagrees", "erratum not confirmed"])]
    assert len(d) and (d.cause != "").all()

    def cause(where, quantity):
        row = df[(df["where"] == where) & (df["quantity"] == quantity)]
        assert len(row) == 1, (where, quantity)
        return row.cause.iloc[0]

    assert cause("Table 3, hERG_Karim", "relative AUROC, bits2") == "scale"
    assert cause("Table 3, AMES", "relative AUROC, sign") == "finding"
    assert cause("Table 3, AMES", "relative AUROC, ternary50") == "scale"
    assert cause("Table 3, AMES", "relative AUROC, ternary90") == "finding"
    assert cause("Table 4, Solubility_AqSolDB", "relative R², bits3") == "finding"  # the average is not why
    assert cause("Table 5, LD50_Zhu", "relative Spearman ρ, bits3") == "scale"
    assert cause("Table 5, PPBR_AZ", "relative Spearman ρ, ternary90") == "paper"
    # the finding's own why (the investigation), not the default one of assign_causes
    why = df[(df["where"] == "Table 3, AMES") & (df["quantity"] == "relative AUROC, sign")].cause_why.iloc[0]
    assert "independent implementation" in why
    # the same rows read at a scale below the paper's are not explained by it (the recorded CSV is default)
    at_default = assign_causes(pd.read_csv(MOLECULAR_CSV).assign(scale="default"), F.ROW_CAUSES)
    row = at_default[(at_default["where"] == "Table 3, AMES") & (at_default["quantity"] == "relative AUROC, sign")]
    assert row.cause.iloc[0] == "unexplained" and "paper's scale" in row.cause_why.iloc[0]


# --- derived verdicts on hand-built ledgers -------------------------------------------------------------
_SYN = "quantized-mis/03-synthetic-study"
_SIGN = "Sign is less private than 1.58b 33%"


def test_claim_verdict_sign_less_private_flips_with_one_row():
    c = _claim("001-C13")
    rows = [(_SYN, "paper-claim", "§5.1.2 / Figure 2", f"{_SIGN} (r_Q^n (mean))", "differs"),
            (_SYN, "paper-claim", "§5.1.2 / Figure 2", f"{_SIGN} (discriminator MIS)", "reproduced"),
            # not this claim's: other claims of the same section, the same words in another chapter
            (_SYN, "paper-claim", "§5.1.2 / Figure 2", "1.58b 90% is the most private (r_Q^n (mean))", "differs"),
            ("quantized-mis/04-synthetic-ranking", "paper-claim", "§5.1.2 / Figure 2", f"{_SIGN} (r_Q^n (mean))",
             "differs")]
    v, tally = claim_verdict(c, _frame(rows))
    assert (v, tally["rows"], tally["pass"]) == ("holds in part", 2, 1)
    flipped = list(rows)
    flipped[0] = flipped[0][:4] + ("reproduced",)
    assert claim_verdict(c, _frame(flipped))[0] == "holds"
    both_fail = list(rows)
    both_fail[1] = both_fail[1][:4] + ("differs",)
    assert claim_verdict(c, _frame(both_fail))[0] == "not reproduced"


def test_claim_verdict_erratum_refutes_and_untested():
    c3 = _claim("001-C3")
    th = "quantized-mis/02-theory"
    rows = [(th, "theory-check", "Proposition C.4", "max relative gap", "agrees"),
            (th, "erratum", "Proposition C.4 as printed (erratum 001-C4)", "singular Λ", "erratum confirmed")]
    assert claim_verdict(c3, _frame(rows))[0] == "refuted"
    rows[1] = rows[1][:4] + ("erratum not confirmed",)
    assert claim_verdict(c3, _frame(rows))[0] == "holds in part"
    c16 = _claim("001-C16")   # only not-comparable rows (timings, the threshold baseline's curve)
    nc = [("quantized-mis/04-synthetic-ranking", "paper-number", "Figure 7 / App. E.2",
           "runs the baseline needs to reach ρ = 0.95", "not comparable"),
          (_SYN, "paper-number", "§5.1.2 Computational cost", "time of the baseline MIS", "not comparable")]
    v, tally = claim_verdict(c16, _frame(nc))
    assert v == "untested" and tally["rows"] == 2
    assert v in CLAIM_VERDICTS


def test_claim_verdict_figure2_selects_the_paper_pairing_only():
    c = _claim("001-C9")
    rows = [(_SYN, "paper-number", "Figure 2", "mean Spearman ρ over the laws, r_Q^n (mean over runs) vs "
                                              "discriminator MIS", "reproduced"),
            (_SYN, "theory-check", "Figure 2 (ablation)", "ablation: mean ρ", "disagrees")]
    assert claim_verdict(c, _frame(rows))[0] == "holds"
    rows[0] = rows[0][:4] + ("differs",)
    assert claim_verdict(c, _frame(rows))[0] == "not reproduced"


# --- figure6_rows: the least private quantizer with an undefined run -------------------------------------
def _study(r: np.ndarray, acc_train: np.ndarray):
    from qlib.repro.quantized_mis.study import StudyResult

    names = ["sign", "ternary33", "ternary50", "ternary90", "bits2", "bits3", "bits4", "bits5"]
    L, Q, R = r.shape
    z = np.zeros((L, Q + 1))
    return StudyResult(config={"runs": R, "epochs": 3000}, names=names, acc_names=["identity"] + names, r=r,
                       n_distinct=np.full((L, Q, R), 10), acc_val=acc_train.copy(), acc_train=acc_train,
                       loss_in=np.zeros((L, Q + 1, R, 2)), loss_out=np.zeros((L, Q + 1, R, 2)), thr_mis=z,
                       thr_lo=z, thr_hi=z, disc_mis=z, disc_lo=z, disc_hi=z, seconds={})


def test_figure6_least_private_ignores_undefined_runs():
    from qlib.repro.quantized_mis.synthetic_claims import figure6_rows

    R = 3
    r = np.tile(np.linspace(0.08, 0.01, 8)[None, :, None], (1, 1, R))   # bits5 (last) has the smallest r_Q^n
    r[0, 0, 1] = np.nan                                                # one undefined run of Sign (most private)
    acc = np.ones((1, 9, R))
    acc[0, 1] = 0.5                                                    # Sign keeps half the training accuracy
    row = figure6_rows(_study(r, acc))[0]
    # the least private quantizer is bits5 (keeps all of it); a NaN-propagating mean picked Sign
    assert row.passed is True and row.ours.startswith("1/1 laws")
    # a quantizer whose every run is undefined is never the least private
    r2 = r.copy()
    r2[0, 0, :] = np.nan
    assert figure6_rows(_study(r2, acc))[0].passed is True
    # and the row still fails when the least private quantizer loses accuracy
    acc3 = acc.copy()
    acc3[0, 8] = 0.5
    assert figure6_rows(_study(r, acc3))[0].passed is False
