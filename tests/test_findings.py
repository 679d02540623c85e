"""The findings (qlib.repro.findings, qlib.book.findings): a claim's verdict is derived from its rows
(and flips with them), causes come from one vocabulary and reach every differing row, findings.csv
matches its schema, and the scale is the archived paper run where it is current."""

from __future__ import annotations

import pandas as pd
import pytest

from qlib.book import findings as BF
from qlib.book.schema import COLUMNS
from qlib.repro import findings as F


def _rows(*specs):
    base = {c: "" for c in COLUMNS}
    return pd.DataFrame([{**base, "paper": "001", "kind": k, "chapter": ch, "where": w, "quantity": q,
                          "verdict": v, "paper_value": p, "ours": o}
                         for ch, w, q, k, v, p, o in specs])


CLAIM = F.Claim("001", "001-T", "a quoted claim", "§5", rows=(F.Select("quantized-mis/05-*", "Table 3"),))


def test_claim_verdict_is_derived_and_flips_with_a_row():
    df = _rows(("quantized-mis/05-molecular", "Table 3, AMES", "rel AUROC", "paper-number", "reproduced", "0.9", "0.9"),
               ("quantized-mis/05-molecular", "Table 3, HIA", "rel AUROC", "paper-number", "consistent", "1.0", "1.0"),
               ("quantized-mis/05-molecular", "Table 4", "R2", "paper-number", "differs", "0.5", "0.1"),
               ("quantized-mis/04-synthetic-ranking", "Table 3", "rho", "paper-claim", "differs", "1", "0"))
    v, tally = F.claim_verdict(CLAIM, df)
    assert v == "holds" and tally == {"rows": 2, "judged": 2, "pass": 2, "differ": 0, "erratum": 0}
    df.loc[1, "verdict"] = "differs"                         # one row flips: the claim holds in part
    assert F.claim_verdict(CLAIM, df)[0] == "holds in part"
    df.loc[0, "verdict"] = "differs"
    assert F.claim_verdict(CLAIM, df)[0] == "not reproduced"
    df.loc[[0, 1], "verdict"] = "not comparable"             # nothing judged: untested
    assert F.claim_verdict(CLAIM, df)[0] == "untested"


def test_a_confirmed_erratum_refutes_only_a_claim_that_rests_on_it():
    df = _rows(("rqp-sgd/01-theory", "Theorem 1", "eps_t", "erratum", "erratum confirmed", "", ""),
               ("rqp-sgd/01-theory", "Theorem 1", "grid", "theory-check", "agrees", "", ""))
    sel = (F.Select("rqp-sgd/01-*", "Theorem 1"),)
    assert F.claim_verdict(F.Claim("004", "004-T", "q", "Thm 1", rows=sel, erratum_refutes=True), df)[0] == "refuted"
    assert F.claim_verdict(F.Claim("004", "004-U", "q", "Thm 1", rows=sel), df)[0] == "holds"
    df.loc[0, "verdict"] = "erratum not confirmed"
    assert F.claim_verdict(F.Claim("004", "004-T", "q", "Thm 1", rows=sel, erratum_refutes=True), df)[0] == "holds in part"


def test_causes_reach_every_differing_row_from_one_vocabulary():
    df = _rows(("eden/01-estimator-vnmse", "Figure 2", "Kashin", "paper-number", "differs", "1", "2"),
               ("eden/01-estimator-vnmse", "Figure 2", "EDEN", "paper-number", "differs", "1", "2"),
               ("eden/01-estimator-vnmse", "Figure 2", "QSGD", "paper-number", "reproduced", "1", "1"),
               ("eden/02-rotation-and-scale", "Figure 8", "x", "theory-check", "disagrees", "1", "2"))
    pairs = [(F.Select("eden/01-*", quantity="Kashin"), F.Cause("method", "iterations differ")),
             (F.Select("eden/*", "Figure 2"), F.Cause("scale", "one repetition", "eden/01 at paper"))]
    out = F.assign_causes(df, pairs)
    assert out["cause"].tolist() == ["method", "scale", "", "unexplained"]   # first match wins
    assert out.loc[1, "cause_evidence"] == "eden/01 at paper"
    assert set(BF.cause_counts(out).index) == set(F.CAUSES) and BF.cause_counts(out)["unexplained"] == 1
    with pytest.raises(ValueError, match="kind must be one of"):
        F.Cause("guess", "it seems so")
    with pytest.raises(ValueError, match="untested"):
        F.Claim("001", "001-X", "q", "§1")
    with pytest.raises(ValueError, match="regular expression"):
        F.Select("eden/*", "(")


def test_findings_frame_and_schema():
    df = _rows(("quantized-mis/05-molecular", "Table 3, AMES", "rel AUROC, ternary33", "paper-number", "differs",
                "0.89", "1.00305"),
               ("quantized-mis/05-molecular", "Table 3, HIA", "rel AUROC", "paper-number", "reproduced", "1.0", "1.0"))
    df["scale"] = "default"
    causes = [(F.Select("quantized-mis/05-*", "Table 3"), F.Cause("stand-in", "MACCS for MiniMol"))]
    claims = [CLAIM, F.Claim("001", "001-U", "never tested", "§6", untested="needs the paper's GPUs")]
    frame = BF.findings_frame(F.assign_causes(df, causes), claims)
    assert frame["verdict"].tolist() == ["holds in part", "untested"]
    assert frame.loc[0, "cause"] == "stand-in" and frame.loc[0, "scale"] == "default"
    assert frame.loc[1, "untested"] == "needs the paper's GPUs" and frame.loc[1, "cause"] == ""
    recs = frame[BF.FINDINGS_COLUMNS].to_dict(orient="records")
    BF.validate_findings(recs)
    bad = [dict(recs[0], cause="")]                          # a claim that does not hold needs a cause
    with pytest.raises(ValueError, match="schema"):
        BF.validate_findings(bad)
    with pytest.raises(ValueError, match="schema"):
        BF.validate_findings([dict(recs[0], verdict="mostly")])
    line = BF.difference_line(F.assign_causes(df, causes).iloc[0])
    assert "1.58b 33 %" in line and "ternary33" not in line and "1.003" in line and "stand-in" in line


def test_landing_and_summary_render_counts():
    df = _rows(("quantized-mis/05-molecular", "Table 3", "q", "paper-number", "differs", "1", "2"))
    df["scale"] = "default"
    frame = BF.findings_frame(F.assign_causes(df, []), [CLAIM])
    md = BF.landing_markdown(frame, F.assign_causes(df, []))
    assert "001 — quantized-model MIS](../quantized-mis/summary.md)" in md and "not reproduced" in md
    assert "1 *unexplained*" in md
    s = BF.summary_markdown("001", frame, F.assign_causes(df, []), {"001": {"paper": "001", "scope": "S", "hard": "H",
                                                                            "stand_ins": ("MACCS",)}})
    assert "## Scope" in s and "001-T" in s and "## Stand-ins" in s


def test_the_registry_is_consistent():
    claims, causes, summaries = BF.registry()
    assert not F.check_registry(claims)
    for c in claims:
        assert c.rows or c.untested
    for sel, cause in causes:
        assert isinstance(sel, F.Select) and cause.kind in F.CAUSES
    for p, s in summaries.items():
        assert s["paper"] == p and s.get("scope")


def test_release_lists_claims_whose_verdict_flipped(tmp_path):
    from qlib.book import release

    cols = BF.FINDINGS_COLUMNS
    base = {c: "" for c in cols}
    old = pd.DataFrame([{**base, "paper": "001", "id": "001-C1", "quote": "a", "verdict": "holds"},
                        {**base, "paper": "001", "id": "001-C2", "quote": "b", "verdict": "untested"}])
    new = old.copy()
    new.loc[0, "verdict"] = "not reproduced"
    (tmp_path / "old").mkdir()
    (tmp_path / "new").mkdir()
    old.to_csv(tmp_path / "old" / "findings.csv", index=False)
    new.to_csv(tmp_path / "new" / "findings.csv", index=False)
    ch = release.claim_changes(tmp_path / "old", tmp_path / "new")
    assert ch[["id", "old verdict", "new verdict", "change"]].values.tolist() == [
        ["001-C1", "holds", "not reproduced", "flipped"]]
    assert "001-C1" in release.claims_markdown(ch)
    assert release.claim_changes(tmp_path / "old", tmp_path / "missing").empty


def test_a_row_that_passes_at_paper_scale_gets_the_scale_cause():
    df = _rows(("eden/01-estimator-vnmse", "Figure 5", "same error", "paper-claim", "differs", "1", "2"),
               ("eden/01-estimator-vnmse", "Figure 5", "same error", "paper-claim", "differs", "1", "3"),
               ("eden/01-estimator-vnmse", "Figure 2", "other", "paper-claim", "differs", "1", "2"))
    df["scale"] = "smoke"
    arch = df.copy()
    arch["scale"] = "paper (archived 2026-11-28, cpu)"
    arch["verdict"] = ["reproduced", "differs", "reproduced"]
    arch["ours"] = ["1.0", "3", "1.0"]
    typed = [(F.Select("eden/*", "Figure 2"), F.Cause("method", "our choice"))]
    out = BF.with_causes(df, typed, archived=arch)
    # the first occurrence passes at paper scale, the second does not; the archived evidence beats a typed cause
    assert out["cause"].tolist() == ["scale", "unexplained", "scale"]
    assert "1.0 (reproduced)" in out.loc[0, "cause_why"] and out.loc[0, "cause_evidence"].startswith("archive/paper/")
    assert BF.with_causes(df, typed)["cause"].tolist() == ["unexplained", "unexplained", "method"]


def test_scale_causes_for_rows_without_a_scale_column():
    """The ledger page passes the build's rows as gathered (no scale column)."""
    df = _rows(("eden/01-estimator-vnmse", "Figure 5", "same error", "paper-claim", "differs", "1", "2"))
    arch = df.assign(verdict="reproduced", scale="paper (archived 2026-11-28, cpu)")
    assert BF.with_causes(df, [], archived=arch)["cause"].tolist() == ["scale"]
    assert BF.with_causes(arch.assign(verdict="differs"), [], archived=arch)["cause"].tolist() == ["unexplained"]


def test_a_finding_explains_only_rows_at_the_paper_scale():
    df = _rows(("rqp-sgd/02-table1", "Table 1", "SVM gain", "paper-claim", "differs", "35.84 %", "-2.44 %"),
               ("rqp-sgd/02-table1", "Table 1", "SVM gain", "paper-claim", "differs", "35.84 %", "-1.00 %"),
               ("eden/01-estimator-vnmse", "Figure 4", "gap", "paper-number", "differs", "0.25", "0.2546"))
    df["scale"] = ["paper (archived 2026-11-28, H200)", "default", "smoke"]
    pairs = [(F.Select("rqp-sgd/*", "Table 1"), F.Cause("finding", "still differs at 10 runs", "rqp-sgd/02")),
             (F.Select("eden/*", "Figure 4"), F.Cause("finding", "the exact curve", "eden/01", scale_free=True))]
    out = F.assign_causes(df, pairs)
    # the paper-scale row is the finding; the same row at default is not explained by it, and says why
    assert out["cause"].tolist() == ["finding", "unexplained", "finding"]
    assert "at the default profile" in out.loc[1, "cause_why"] and "still differs" in out.loc[1, "cause_why"]
    assert out.loc[1, "cause_evidence"] == "rqp-sgd/02"
    # without a scale column (a chapter's own table) the cause applies as typed
    assert F.assign_causes(df.drop(columns="scale"), pairs)["cause"].tolist() == ["finding"] * 3
    with pytest.raises(ValueError, match="scale_free applies to a 'finding' only"):
        F.Cause("method", "x", scale_free=True)
    with pytest.raises(TypeError, match="scale_free must be a bool"):
        F.Cause("finding", "x", scale_free="yes")


def test_causes_by_paper_keeps_the_paper_id_beside_the_paper_cause():
    df = _rows(("rqp-sgd/01-theory", "Theorem 1", "a", "theory-check", "disagrees", "1", "2"),
               ("eden/01-estimator-vnmse", "Figure 2", "b", "paper-number", "differs", "1", "2"))
    df.loc[0, "paper"], df.loc[1, "paper"] = "004", "002"
    out = F.assign_causes(df, [(F.Select("rqp-sgd/*"), F.Cause("paper", "the proof's cells"))])
    t = BF.causes_by_paper(out)
    assert list(t.index) == ["002", "004"] and t.index.name == "paper"
    assert t.loc["004", "paper"] == 1 and t.loc["002", "unexplained"] == 1 and t.loc["002", "paper"] == 0
    assert list(t.columns) == list(F.CAUSES)
