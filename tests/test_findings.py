"""The findings (qlib.repro.findings, qlib.book.findings): a claim's verdict is derived from its rows
(and flips with them), causes come from one vocabulary and reach every differing row, findings.csv
matches its schema, and the scale is the archived paper run where it is current."""

from __future__ import annotations

import re
import string

import pandas as pd
import pytest

from qlib.book import findings as BF
from qlib.book.schema import COLUMNS
from qlib.repro import findings as F


def _rows(*specs):
    base = {c: "" for c in COLUMNS}  # every ledger column, empty
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
    assert v == "holds" and tally == {"rows": 2, "judged": 2, "pass": 2, "differ": 0, "erratum": 0, "reproduced": 1}
    df.loc[1, "verdict"] = "differs"                         # one row flips: the claim holds in part
    assert F.claim_verdict(CLAIM, df)[0] == "holds in part"
    df.loc[0, "verdict"] = "differs"
    assert F.claim_verdict(CLAIM, df)[0] == "not reproduced"
    df.loc[[0, 1], "verdict"] = "not comparable"             # nothing judged: untested
    assert F.claim_verdict(CLAIM, df)[0] == "untested"


def test_a_claim_on_rows_whose_null_passes_is_only_consistent():
    df = _rows(("quantized-mis/05-molecular", "Table 3, AMES", "rel AUROC", "paper-number", "consistent", "1.0", "1.0"),
               ("quantized-mis/05-molecular", "Table 3, HIA", "rel AUROC", "paper-number", "consistent", "1.0", "1.0"))
    assert F.claim_verdict(CLAIM, df)[0] == "consistent"
    df.loc[0, "verdict"] = "reproduced"                      # one row that could have failed, and did not
    assert F.claim_verdict(CLAIM, df)[0] == "holds"


def test_probe_rows_never_test_a_claim_nor_count_as_differences():
    df = _rows(("quantized-mis/05-molecular", "Table 3, AMES", "rel AUROC", "paper-number", "reproduced", "0.9", "0.9"),
               ("quantized-mis/05-molecular", "Table 3, AMES", "rel AUROC (probability)", "probe", "probe fails",
                "0.9", "0.5"))
    assert F.claim_verdict(CLAIM, df) == ("holds", {"rows": 1, "judged": 1, "pass": 1, "differ": 0, "erratum": 0,
                                                   "reproduced": 1})
    out = F.assign_causes(df, [])
    assert out["cause"].tolist() == ["", ""] and int(BF.cause_counts(out).sum()) == 0


@pytest.mark.parametrize("bad", [float("nan"), "mostly", None])
def test_rows_with_a_verdict_outside_the_vocabulary_are_refused(bad):
    df = _rows(("quantized-mis/05-molecular", "Table 3, AMES", "rel AUROC", "paper-number", "differs", "0.9", "0.5"))
    df.loc[0, "verdict"] = bad
    with pytest.raises(ValueError, match=r"^df\['verdict'\] holds .* at row 0 \(index 0\): a verdict must be one of"):
        F.claim_verdict(CLAIM, df)
    with pytest.raises(ValueError, match=r"^df\['verdict'\] holds .* at row 0 \(index 0\): a verdict must be one of"):
        F.assign_causes(df, [])


def test_a_confirmed_erratum_refutes_only_a_claim_that_rests_on_it():
    df = _rows(("rqp-sgd/01-theory", "Theorem 1", "eps_t", "erratum", "erratum confirmed", "", ""),
               ("rqp-sgd/01-theory", "Theorem 1", "grid", "theory-check", "agrees", "", ""))
    sel = (F.Select("rqp-sgd/01-*", "Theorem 1"),)
    assert F.claim_verdict(F.Claim("004", "004-T", "q", "Thm 1", rows=sel, erratum_refutes=True), df)[0] == "refuted"
    assert F.claim_verdict(F.Claim("004", "004-U", "q", "Thm 1", rows=sel), df)[0] == "holds"
    df.loc[0, "verdict"] = "erratum not confirmed"
    assert F.claim_verdict(F.Claim("004", "004-T", "q", "Thm 1", rows=sel, erratum_refutes=True), df)[0] == "holds in part"


# ---- causes: each kind's predicate on its evidence rows ---------------------------------------------------------
_T3 = F.Select("x/05-*", r"^Table 3, (?P<task>\w+)$", r"(?P<col>sign)$")


def _cells(ours_probe="0.91", verdict_probe="probe passes", scale="paper (archived 2026-12-07, cpu)"):
    df = _rows(("x/05-a", "Table 3, AMES", "rel AUROC, sign", "paper-number", "differs", "0.9", "1.0"),
               ("x/05-a", "Table 3, HIA", "rel AUROC, sign", "paper-number", "differs", "0.9", "1.0"),
               ("x/06-b", "Table 3 combos, AMES", "rel AUROC, sign (probability)", "probe", verdict_probe, "0.9",
                ours_probe),
               ("x/05-a", "Table 4, LD50", "rel R2, sign", "paper-number", "differs", "0.9", "0.5"),
               ("x/06-b", "spread, LD50", "rel R2 spread, sign", "probe", "probe passes", "", "0.45"),
               ("x/05-a", "Erratum", "Table 4 percentages", "erratum", "erratum confirmed", "", ""))
    df["scale"] = scale
    return df


_METHOD = (_T3, F.Cause("method", "AUROC of the probabilities closes it.",
                        (F.Select("x/06-*", r"^Table 3 combos, {task}$", r"{col} \(probability\)$"),)))
_STAND_IN = (F.Select("x/05-*", r"^Table 4, (?P<task>\w+)$"),
             F.Cause("stand-in", "The embedder moves it.", (F.Select("x/06-*", r"^spread, {task}$"),),
                     stand_in="embedder"))


def test_a_method_cause_holds_while_its_probe_passes_and_falls_back_when_it_changes():
    out = F.assign_causes(_cells(), [_METHOD])
    # AMES's probe passes; HIA has no probe row: its cause cannot name evidence, so it is unexplained
    assert out["cause"].tolist()[:2] == ["method", "unexplained"]
    assert out.loc[0, "cause_evidence"] == "x/06-b#1" and "ours 0.91, paper 0.9 (probe passes, paper scale)" in out.loc[0, "cause_why"]
    assert "none of its evidence rows" in out.loc[1, "cause_why"]
    changed = F.assign_causes(_cells(ours_probe="0.5", verdict_probe="probe fails"), [_METHOD])
    assert changed.loc[0, "cause"] == "unexplained" and "no variant of ours" in changed.loc[0, "cause_why"]


def test_a_stand_in_cause_needs_the_declared_stand_in_and_a_spread_as_large_as_the_gap():
    declared = {"x/05-*": ("embedder",)}
    out = F.assign_causes(_cells(), [_STAND_IN], stand_ins=declared)
    assert out.loc[3, "cause"] == "stand-in"                  # spread 0.45 ≥ gap 0.4
    assert F.assign_causes(_cells(), [_STAND_IN], stand_ins={})["cause"][3] == "unexplained"
    narrow = _cells()
    narrow.loc[4, "ours"] = "0.3"                             # the spread shrinks below the gap
    out = F.assign_causes(narrow, [_STAND_IN], stand_ins=declared)
    assert out.loc[3, "cause"] == "unexplained" and "less than the gap (0.4)" in out.loc[3, "cause_why"]


def test_a_finding_needs_the_paper_scale_no_stand_in_and_every_alternative_failing():
    alt = (F.Select("x/06-*", r"^Table 3 combos, {task}$"),)
    pair = (_T3, F.Cause("finding", "Each alternative tried leaves it.", alt))
    failing = _cells(ours_probe="0.5", verdict_probe="probe fails")
    assert F.assign_causes(failing, [pair]).loc[0, "cause"] == "finding"
    assert F.assign_causes(_cells(), [pair]).loc[0, "cause"] == "unexplained"     # an alternative closes the gap
    small = F.assign_causes(_cells(ours_probe="0.5", verdict_probe="probe fails", scale="default"), [pair])
    assert small.loc[0, "cause"] == "unexplained" and "default scale" in small.loc[0, "cause_why"]
    blocked = F.assign_causes(failing, [pair], stand_ins={"x/05-*": "embedder"})
    assert blocked.loc[0, "cause"] == "unexplained" and "stand-in" in blocked.loc[0, "cause_why"]


def test_paper_and_scale_causes_check_their_evidence():
    paper = (F.Select("x/05-*", r"^Table 4"), F.Cause("paper", "Its percentages disagree with its cells.",
                                                       (F.Select("x/05-*", r"^Erratum$"),)))
    assert F.assign_causes(_cells(), [paper]).loc[3, "cause"] == "paper"
    unconfirmed = _cells()
    unconfirmed.loc[5, "verdict"] = "erratum not confirmed"
    assert F.assign_causes(unconfirmed, [paper]).loc[3, "cause"] == "unexplained"
    scale = (F.Select("x/05-*", r"^Table 4"), F.Cause("scale", "Passes with every molecule.",
                                                       (F.Select("x/05-*", r"^Table 3, AMES$"),)))
    at_paper = F.assign_causes(_cells(), [scale])
    assert at_paper.loc[3, "cause"] == "unexplained" and "itself at the paper's scale" in at_paper.loc[3, "cause_why"]


def test_cause_construction_refuses_typed_results_and_missing_evidence():
    ev = (F.Select("x/*"),)
    for why in ("ours keeps 0.765 of it", "35 % of the time", "in 7 of the 9 laws"):
        with pytest.raises(ValueError, match="must not type a result"):
            F.Cause("finding", why, ev)
    F.Cause("method", "the 1.58b 90 % column under Table 1's reading", ev)   # labels are not results
    with pytest.raises(ValueError, match="must name its evidence rows"):
        F.Cause("method", "our choice")
    with pytest.raises(TypeError, match="tuple of Select"):
        F.Cause("method", "our choice", "chapter 06")
    with pytest.raises(ValueError, match="stand_in names the declared stand-in"):
        F.Cause("stand-in", "the embedder", ev)
    with pytest.raises(ValueError, match="kind must be one of"):
        F.Cause("guess", "it seems so")
    with pytest.raises(ValueError, match="placeholder"):
        F.assign_causes(_cells(), [(F.Select("x/05-*", "Table 3"), _METHOD[1])])
    with pytest.raises(ValueError, match="scale_free applies to a 'finding' only"):
        F.Cause("method", "x", ev, scale_free=True)


def test_findings_frame_and_schema():
    df = _cells()
    claims = [F.Claim("001", "001-T", "a quoted claim", "§5", rows=(F.Select("x/05-*", "Table 3"),)),
              F.Claim("001", "001-U", "never tested", "§6", untested="needs the paper's GPUs")]
    judged = F.assign_causes(df, [_METHOD])
    frame = BF.findings_frame(judged, claims)
    assert frame["verdict"].tolist() == ["not reproduced", "untested"]
    # the claim's two differing rows: one explained by the method probe, one unexplained
    assert frame.loc[0, "cause"] in ("method", "unexplained") and "x/06-b#1" in frame.loc[0, "evidence"]
    assert frame.loc[1, "untested"] == "needs the paper's GPUs" and frame.loc[1, "cause"] == ""
    recs = frame[BF.FINDINGS_COLUMNS].to_dict(orient="records")
    BF.validate_findings(recs)
    with pytest.raises(ValueError, match="schema"):
        BF.validate_findings([dict(recs[0], cause="")])        # a claim that does not hold needs a cause
    with pytest.raises(ValueError, match="schema"):
        BF.validate_findings([dict(recs[0], verdict="mostly")])
    BF.validate_findings([dict(recs[0], verdict="consistent", cause="", why="")])
    line = BF.difference_line(_rows(("x/05-a", "Table 3, AMES", "rel AUROC, ternary33", "paper-number", "differs",
                                      "0.89", "1.00305")).assign(cause="stand-in").iloc[0])
    assert "1.58b 33 %" in line and "ternary33" not in line and "1.003" in line and "stand-in" in line


def test_a_claims_own_cause_is_checked_on_its_evidence():
    df = _cells()
    c = F.Claim("001", "001-T", "q", "§5", rows=(F.Select("x/05-*", "Table 4"),),
                cause=F.Cause("paper", "Its percentages disagree.", (F.Select("x/05-*", r"^Erratum$"),)))
    frame = BF.findings_frame(F.assign_causes(df, []), [c])
    assert frame.loc[0, "cause"] == "paper" and frame.loc[0, "evidence"] == "x/05-a#4"
    df.loc[5, "verdict"] = "erratum not confirmed"
    assert BF.findings_frame(F.assign_causes(df, []), [c]).loc[0, "cause"] == "unexplained"


def test_landing_and_summary_render_counts():
    df = _rows(("quantized-mis/05-molecular", "Table 3", "q", "paper-number", "differs", "1", "2"))
    df["scale"] = "default"
    frame = BF.findings_frame(F.assign_causes(df, []), [CLAIM])
    md = BF.landing_markdown(frame, F.assign_causes(df, []))
    assert "[001 quantized-model MIS](../quantized-mis/summary.md)" in md and "not reproduced" in md
    assert '<a href="../../findings.csv">findings.csv</a>' in md and '<a href="../../ledger.csv">ledger.csv</a>' in md
    assert "1 *unexplained*" in md
    s = BF.summary_markdown("001", frame, F.assign_causes(df, []), {"001": {"paper": "001", "scope": "S", "hard": "H",
                                                                            "stand_ins": ("MACCS",)}})
    assert "## Scope" in s and "001-T" in s and "## Stand-ins" in s


def test_the_registry_is_consistent():
    claims, causes, summaries = BF.registry()
    assert not F.check_registry(claims)
    for sel, cause in causes:   # every placeholder of an evidence selection is captured by the row's selection
        groups = set(re.compile(sel.where).groupindex) | set(re.compile(sel.quantity).groupindex) | {"where", "quantity"}
        for ev in cause.evidence:
            names = {n for text in (ev.where, ev.quantity) for _, n, _, _ in string.Formatter().parse(text) if n}
            assert names <= groups, (sel, ev)
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
    typed = [(F.Select("eden/*", "Figure 2"), F.Cause("method", "our choice", (F.Select("eden/*", "Figure 9"),)))]
    out = BF.with_causes(df, typed, archived=arch)
    # the first occurrence passes at paper scale, the second does not; the archived evidence beats a typed cause
    assert out["cause"].tolist() == ["scale", "unexplained", "scale"]
    assert "1.0 (reproduced)" in out.loc[0, "cause_why"] and out.loc[0, "cause_evidence"] == "eden/01-estimator-vnmse#1@paper"
    assert BF.with_causes(df, typed)["cause"].tolist() == ["unexplained"] * 3


def test_scale_causes_for_rows_without_a_scale_column():
    """The ledger page passes the build's rows as gathered (no scale column)."""
    df = _rows(("eden/01-estimator-vnmse", "Figure 5", "same error", "paper-claim", "differs", "1", "2"))
    arch = df.assign(verdict="reproduced", scale="paper (archived 2026-11-28, cpu)")
    assert BF.with_causes(df, [], archived=arch)["cause"].tolist() == ["scale"]
    assert BF.with_causes(arch.assign(verdict="differs"), [], archived=arch)["cause"].tolist() == ["unexplained"]


def test_causes_by_paper_keeps_the_paper_id_beside_the_paper_cause():
    df = _rows(("rqp-sgd/01-theory", "Theorem 1", "a", "theory-check", "disagrees", "1", "2"),
               ("eden/01-estimator-vnmse", "Figure 2", "b", "paper-number", "differs", "1", "2"))
    df.loc[0, "paper"], df.loc[1, "paper"] = "004", "002"
    df = pd.concat([df, _rows(("rqp-sgd/01-theory", "Erratum", "c", "erratum", "erratum confirmed", "", ""))],
                   ignore_index=True)
    df.loc[2, "paper"] = "004"
    out = F.assign_causes(df, [(F.Select("rqp-sgd/*", "Theorem"),
                                F.Cause("paper", "the proof's cells", (F.Select("rqp-sgd/*", "Erratum"),)))])
    t = BF.causes_by_paper(out)
    assert list(t.index) == ["002", "004"] and t.index.name == "paper"
    assert t.loc["004", "paper"] == 1 and t.loc["002", "unexplained"] == 1 and t.loc["002", "paper"] == 0
    assert list(t.columns) == list(F.CAUSES)


def test_a_smaller_run_cannot_explain_a_paper_scale_row():
    df = _cells()
    df.loc[2, "scale"] = "default"                  # the passing probe ran at a smaller scale than the row
    out = F.assign_causes(df, [_METHOD])
    assert out.loc[0, "cause"] == "unexplained" and "smaller run cannot explain" in out.loc[0, "cause_why"]
    df["scale"] = "default"                         # a default-scale row may be explained by a default-scale probe
    assert F.assign_causes(df, [_METHOD]).loc[0, "cause"] == "method"


def test_evidence_of_a_chapter_held_at_two_scales_is_read_at_the_paper_scale():
    df = _cells()
    small = df.iloc[[2]].assign(scale="smoke", ours="0.5", verdict="probe fails")   # the same probe, a smoke run
    pool = pd.concat([df.assign(id=F.row_ids(df, "paper")), small.assign(id=F.row_ids(small))], ignore_index=True)
    out = F.assign_causes(df, [_METHOD], pool=pool)
    assert out.loc[0, "cause"] == "method" and out.loc[0, "cause_evidence"] == "x/06-b#1@paper"
