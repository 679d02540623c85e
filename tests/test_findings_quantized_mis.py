"""The findings of paper 001 (qlib.repro.quantized_mis.findings): the claims' registry, their quotes
against the paper's text, their selections against the book's chapters and rows, the derived verdicts
on hand-built ledgers; the causes of differing rows checked against their evidence rows on constructed
ledgers (each falls back to ``unexplained`` when its evidence changes); and figure6_rows' choice of the
least private quantizer when a run's r_Q^n is undefined."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

import numpy as np
import pandas as pd
import paper_texts
import pytest

from qlib.repro.findings import (
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
MOLECULAR_CSV = REPO / "archive" / "paper" / "quantized-mis" / "05-molecular" / "comparisons.csv"
#: claims whose rows the archived molecular run predates (chapter 05's new §5.2.2 rows)
NEWER_THAN_ARCHIVE = ("001-C26", "001-C27")



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
    assert 10 <= len(F.CLAIMS) <= 30
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
        assert isinstance(s, Select) and isinstance(c, Cause)
        assert s.chapter.startswith("quantized-mis/"), "causes are given for the quantized-MIS chapters' rows"


def test_summary_keys():
    s = F.SUMMARY
    assert s["paper"] == "001"
    assert {"title", "scope", "hard", "stand_ins"} <= set(s)
    assert isinstance(s["stand_ins"], tuple) and s["stand_ins"] and all(isinstance(x, str) for x in s["stand_ins"])


# --- the selections hit real rows ---------------------------------------------------------------------
def test_molecular_selections_hit_rows_of_the_archived_ledger():
    if not MOLECULAR_CSV.is_file():
        pytest.skip("the archived molecular ledger is absent")
    df = pd.read_csv(MOLECULAR_CSV, dtype=str, keep_default_na=False)
    for c in F.CLAIMS:
        if c.id in NEWER_THAN_ARCHIVE:
            continue
        for s in c.rows:
            if s.chapter == "quantized-mis/05-*":
                assert s.mask(df).any(), f"{c.id}: {s} selects no row of {MOLECULAR_CSV.name}"
    # Table 3's Sign / 1.58b cells belong to C19, its 2–5 bit cells to C18, never both
    c18, c19 = _claim("001-C18"), _claim("001-C19")
    t3 = df[df["where"].str.startswith("Table 3, ") & ~df["quantity"].str.contains("original")]
    a, b = set(claim_rows(c18, t3).index), set(claim_rows(c19, t3).index)
    assert a and b and not (a & b) and a | b == set(t3.index)
    # every Table 4 / 5 relative cell the archive differs on is matched by a cause that needs evidence rows
    dif = df[df["where"].str.match(r"^Table [45], ") & df["quantity"].str.startswith("relative")
             & df["verdict"].isin(["differs"])]
    assert len(dif)
    out = assign_causes(dif.assign(id=[f"r{i}" for i in range(len(dif))]), F.ROW_CAUSES, pool=_pool([]),
                        stand_ins=F.STAND_INS)
    assert (out.cause == "unexplained").all()            # no probe row in the pool: no cause can hold
    assert out.cause_why.str.contains("none of its evidence rows").all()


# --- causes against their evidence, on constructed ledgers -----------------------------------------------
_MOL = "quantized-mis/05-molecular"
_COLS = ["chapter", "kind", "where", "quantity", "paper_value", "ours", "verdict", "scale"]


def _ledger(rows) -> pd.DataFrame:
    """A ledger from (chapter, kind, where, quantity, paper_value, ours, verdict[, scale]) tuples; ids r0, r1…"""
    df = pd.DataFrame([r if len(r) == 8 else (*r, "paper (archived)") for r in rows], columns=_COLS)
    return df.assign(paper="001", id=[f"r{i}" for i in range(len(df))])


def _pool(rows) -> pd.DataFrame:
    return _ledger(rows) if rows else pd.DataFrame(columns=[*_COLS, "paper", "id"])


def _causes(rows, evidence):
    """``rows`` with their causes, ``evidence`` the pool beside them."""
    df = _ledger(rows)
    pool = pd.concat([df, _ledger(evidence).assign(id=lambda d: "e" + d.id)], ignore_index=True)
    return assign_causes(df, F.ROW_CAUSES, pool=pool, stand_ins=F.STAND_INS)


def _spread(task, col, spread, table="4", metric="R²", verdict=None):
    passes = verdict or ("probe passes" if spread >= 0.5 else "probe fails")
    return (_MOL, "probe", f"Table {table} probe, {task}", f"embedder spread of relative {metric}, {col}", "gap 0.5",
            str(spread), passes)


def test_a_table4_cell_is_a_stand_in_only_while_the_embedder_spread_covers_its_gap():
    row = (_MOL, "paper-number", "Table 4, LD50_Zhu", "relative R², bits4", "0.67", "0.17", "differs")   # gap 0.5
    held = _causes([row], [_spread("LD50_Zhu", "bits4", 0.8)]).iloc[0]
    assert held.cause == "stand-in" and held.cause_evidence == "er0"
    assert "ours 0.8" in held.cause_why and "Evidence:" in held.cause_why      # the numbers come from the row
    shrunk = _causes([row], [_spread("LD50_Zhu", "bits4", 0.3)]).iloc[0]      # the spread shrinks below the gap
    assert shrunk.cause == "unexplained" and "less than the gap" in shrunk.cause_why
    # another task's or another column's spread is never this cell's evidence
    other = _causes([row], [_spread("PPBR_AZ", "bits4", 9.0), _spread("LD50_Zhu", "bits5", 9.0)]).iloc[0]
    assert other.cause == "unexplained" and other.cause_evidence == ""
    # a smoke run with one embedder: the probe is not comparable, the spread is no number
    one = _causes([row], [(*_spread("LD50_Zhu", "bits4", 0.8)[:5], "", "not comparable")]).iloc[0]
    assert one.cause == "unexplained" and "not a number" in one.cause_why


def test_a_table5_cell_reads_the_spread_of_its_own_table():
    row = (_MOL, "paper-number", "Table 5, Caco2_Wang", "relative Spearman ρ, sign", "0.89", "0.94", "differs")
    t4 = _causes([row], [_spread("Caco2_Wang", "sign", 1.0)]).iloc[0]                      # a Table 4 probe
    t5 = _causes([row], [_spread("Caco2_Wang", "sign", 1.0, table="5", metric="Spearman ρ")]).iloc[0]
    assert t4.cause == "unexplained" and t5.cause == "stand-in"


def test_the_other_reading_explains_a_table5_ternary90_cell_only_where_it_closes_the_gap():
    row = (_MOL, "paper-number", "Table 5, PPBR_AZ", "relative Spearman ρ, ternary90", "0.97", "0.36", "differs")
    probe = lambda v, ok: (_MOL, "probe", "Table 5 probe, PPBR_AZ", "relative Spearman ρ, ternary90 under Table 1's "  # noqa: E731
                           "reading", "0.97", v, "probe passes" if ok else "probe fails")
    assert _causes([row], [probe("0.95", True)]).iloc[0].cause == "method"
    failed = _causes([row], [probe("0.60", False)]).iloc[0]
    assert failed.cause == "unexplained" and "no variant of ours" in failed.cause_why


def test_no_finding_on_the_chapters_whose_inputs_are_stand_ins():
    finding = Cause("finding", "An alternative was tried and did not close the gap.",
                    (Select("quantized-mis/0*", r"^alternative$"),))
    probe = lambda ch: (ch, "probe", "alternative", "q", "1", "0", "probe fails")  # noqa: E731
    for ch, declared in (("quantized-mis/05-molecular", True), ("quantized-mis/03-synthetic-study", True),
                         ("quantized-mis/04-synthetic-ranking", True), ("quantized-mis/02-theory", False)):
        df = _ledger([(ch, "paper-claim", "claim", "q", "1", "0", "differs")])
        pool = pd.concat([df, _ledger([probe(ch)]).assign(id="e0")], ignore_index=True)
        out = assign_causes(df, [(Select(ch, "claim"), finding)], pool=pool, stand_ins=F.STAND_INS).iloc[0]
        assert (out.cause == "unexplained") == declared, ch
        if declared:
            assert "declared stand-in" in out.cause_why


def test_the_synthetic_sparse_claim_is_a_method_cause_only_with_a_probe_row():
    syn = "quantized-mis/03-synthetic-study"
    row = (syn, "paper-claim", "§5.2.2 (on the synthetic laws)", "1.58b 90% more accurate than the other sparse "
           "quantizers (1.58b 33%, 50%)", "almost all datasets", "2/9 laws", "differs")
    ablation = lambda kind, v: (syn, kind, "§5.2.2 (ablation: Table 1 reading)", row[3], "almost all datasets",  # noqa: E731
                                "9/9 laws", v)
    assert _causes([row], [ablation("probe", "probe passes")]).iloc[0].cause == "method"
    # the archived run recorded the same variant as a theory-check: not a probe, so no method cause
    old = _causes([row], [ablation("theory-check", "agrees")]).iloc[0]
    assert old.cause == "unexplained" and "not all probes" in old.cause_why
    # and when our variant fails too, the reading is not why
    assert _causes([row], [ablation("probe", "probe fails")]).iloc[0].cause == "unexplained"


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
