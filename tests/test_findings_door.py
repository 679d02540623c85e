"""The findings' door (issue 54, item 1): every function of ``qlib.repro.findings`` and ``qlib.book.findings``
that takes a ledger frame (``df``, ``rows``, ``pool``, ``ev``, ``archived``) or a findings frame (``frame``)
refuses, naming the argument, what it cannot judge — not a DataFrame, a column it reads missing, a verdict
that is NaN or outside the vocabulary — instead of counting it as a difference; ``Select`` checks its filters
when made; ``k`` is a positive integer. And a valid frame still gives the answer derived by hand."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from qlib.book import findings as BF
from qlib.book import glance
from qlib.book.schema import COLUMNS
from qlib.repro import findings as F
from qlib.repro.ledger import KINDS, LEDGER_COLUMNS, VERDICTS, check_ledger

CH = "quantized-mis/05-molecular"
SEL = F.Select("quantized-mis/05-*", "Table 3")
CLAIM = F.Claim("001", "001-T", "a quoted claim", "§5", rows=(SEL,), weight=3)
OTHER = F.Claim("001", "001-U", "never tested", "§6", untested="needs the paper's GPUs")
CAUSE = F.Cause("method", "Our reading of the table.", (F.Select("quantized-mis/05-*", "Table 4"),))


def _ledger() -> pd.DataFrame:
    """Four ledger rows (every column of comparisons.csv, a scale, a cause), indexed 10…13 so that a message
    can be seen to give both the row's position and its index label."""
    base = {c: "" for c in COLUMNS}
    specs = [("Table 3, AMES", "rel AUROC", "reproduced", "0.9", "0.9"),
             ("Table 3, HIA", "rel AUROC", "differs", "0.9", "0.5"),     # relative gap 0.444
             ("Table 3, BBB", "rel AUROC", "not comparable", "0.9", ""),
             ("Table 4", "R2", "differs", "0.5", "0.1")]                 # relative gap 0.8
    df = pd.DataFrame([{**base, "chapter": CH, "paper": "001", "kind": "paper-number", "where": w, "quantity": q,
                        "verdict": v, "paper_value": p, "ours": o, "scale": "default"} for w, q, v, p, o in specs])
    df.index = [10, 11, 12, 13]
    return df


def _pool() -> pd.DataFrame:
    return _ledger().assign(id=F.row_ids(_ledger()))


def _judged() -> pd.DataFrame:
    return F.assign_causes(_ledger(), [])


def _frame() -> pd.DataFrame:
    return BF.findings_frame(_judged(), [CLAIM, OTHER])


# (label, the argument's name, how the function is called with x in that argument, a column it reads,
#  whether x is a findings frame rather than ledger rows, a valid x)
CASES = [
    ("Select.mask", "df", lambda x: SEL.mask(x), "where", False, _ledger),
    ("claim_rows", "df", lambda x: F.claim_rows(CLAIM, x), "quantity", False, _ledger),
    ("claim_verdict", "df", lambda x: F.claim_verdict(CLAIM, x), "kind", False, _ledger),
    ("assign_causes", "df", lambda x: F.assign_causes(x, []), "kind", False, _ledger),
    ("assign_causes", "pool", lambda x: F.assign_causes(_ledger(), [], pool=x), "chapter", False, _ledger),
    ("row_ids", "df", lambda x: F.row_ids(x), "chapter", False, _ledger),
    ("evidence_rows", "pool", lambda x: F.evidence_rows(CAUSE, x), "id", False, _pool),
    ("cause_check", "ev", lambda x: F.cause_check(CAUSE, _ledger().iloc[0], x), "kind", False, _pool),
    ("render_why", "ev", lambda x: F.render_why(CAUSE, x), "ours", False, _pool),
    ("evidence_pool", "rows", lambda x: BF.evidence_pool(x), "kind", False, _ledger),
    ("evidence_pool", "archived", lambda x: BF.evidence_pool(_ledger(), x), "where", False, _ledger),
    ("with_causes", "rows", lambda x: BF.with_causes(x, []), "verdict", False, _ledger),
    ("with_causes", "archived", lambda x: BF.with_causes(_ledger(), [], archived=x), "ours", False, _ledger),
    ("with_causes", "pool", lambda x: BF.with_causes(_ledger(), [], pool=x), "id", False, _pool),
    ("findings_frame", "rows", lambda x: BF.findings_frame(x, [CLAIM]), "kind", False, _judged),
    ("findings_frame", "pool", lambda x: BF.findings_frame(_judged(), [CLAIM], pool=x), "id", False, _pool),
    ("cause_counts", "rows", lambda x: BF.cause_counts(x), "cause", False, _judged),
    ("largest_differences", "rows", lambda x: BF.largest_differences(x), "paper_value", False, _judged),
    ("causes_by_paper", "rows", lambda x: BF.causes_by_paper(x), "paper", False, _judged),
    ("landing_markdown", "rows", lambda x: BF.landing_markdown(_frame(), x), "cause", False, _judged),
    ("summary_markdown", "rows", lambda x: BF.summary_markdown("001", _frame(), x, {}), "cause", False, _judged),
    ("counts_table", "frame", lambda x: BF.counts_table(x), "paper", True, _frame),
    ("consequential", "frame", lambda x: BF.consequential(x), "id", True, _frame),
    ("landing_markdown", "frame", lambda x: BF.landing_markdown(x, _judged()), "chapters", True, _frame),
    ("claims_table", "frame", lambda x: glance.claims_table(CH, x, _judged()), "chapters", True, _frame),
    ("claims_table", "judged", lambda x: glance.claims_table(CH, _frame(), x), "chapter", False, _judged),
    ("summary_markdown", "frame", lambda x: BF.summary_markdown("001", x, _judged(), {}), "untested", True, _frame),
]
IDS = [f"{c[0]}-{c[1]}" for c in CASES]
#: the frame arguments whose default is None ("none given")
NONE_IS_DEFAULT = {("assign_causes", "pool"), ("evidence_pool", "archived"), ("with_causes", "archived"),
                   ("with_causes", "pool"), ("findings_frame", "pool"), ("cause_check", "ev"), ("render_why", "ev")}


@pytest.mark.parametrize("case", CASES, ids=IDS)
@pytest.mark.parametrize("bad", [None, [{"verdict": "differs"}], {"verdict": ["differs"]}, "ledger.csv"],
                         ids=["None", "list", "dict", "str"])
def test_a_frame_argument_that_is_not_a_dataframe_is_refused_by_name(case, bad):
    _, name, call, _, _, _ = case
    if bad is None and (case[0], name) in NONE_IS_DEFAULT:
        call(bad)                                    # None is these arguments' default ("none given"): accepted
        return
    with pytest.raises(TypeError, match=rf"^{name} must be a pandas DataFrame of .*, got {type(bad).__name__}$"):
        call(bad)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_a_missing_column_is_named_with_the_argument(case):
    _, name, call, col, _, valid = case
    with pytest.raises(ValueError, match=rf"^{name} lacks the column '{col}' \(it has "):
        call(valid().drop(columns=[col]))


@pytest.mark.parametrize("case", CASES, ids=IDS)
@pytest.mark.parametrize("bad, shown", [(float("nan"), "NaN"), ("mostly", "'mostly'"), (None, "None"), (1, "1")],
                         ids=["NaN", "mostly", "None", "number"])
def test_a_verdict_outside_the_vocabulary_is_refused_with_its_row_and_the_allowed_words(case, bad, shown):
    _, name, call, _, findings, valid = case
    x = valid()
    x["verdict"] = x["verdict"].astype(object)
    pos = 1
    x.iloc[pos, x.columns.get_loc("verdict")] = bad
    words = F.CLAIM_VERDICTS if findings else VERDICTS
    with pytest.raises(ValueError, match=rf"^{name}\['verdict'\] holds {re.escape(shown)} at row {pos} "
                                         rf"\(index {x.index.tolist()[pos]!r}\): a verdict must be one of "
                                         rf"{re.escape(', '.join(words))}$"):
        call(x)


@pytest.mark.parametrize("case", [c for c in CASES if c[4]], ids=[i for c, i in zip(CASES, IDS) if c[4]])
def test_a_findings_frame_holding_a_ledger_verdict_is_refused(case):
    _, name, call, _, _, valid = case
    x = valid()
    x.loc[x.index[0], "verdict"] = "differs"            # a row's verdict, not a claim's
    with pytest.raises(ValueError, match=rf"^{name}\['verdict'\] holds 'differs' at row 0"):
        call(x)


@pytest.mark.parametrize("case", [c for c in CASES if not c[4]], ids=[i for c, i in zip(CASES, IDS) if not c[4]])
def test_an_unknown_kind_is_refused(case):
    _, name, call, _, _, valid = case
    x = valid()
    x.loc[x.index[2], "kind"] = "guess"
    x.loc[x.index[3], "kind"] = float("nan")
    with pytest.raises(ValueError, match=rf"^{name}\['kind'\] holds 'guess' at row 2 \(index 12\) \(2 rows are bad\)"
                                         rf": a kind must be one of {re.escape(', '.join(KINDS))}$"):
        call(x)


# ---- k ------------------------------------------------------------------------------------------------------------
K_CALLS = {"consequential": lambda k: BF.consequential(_frame(), k),
           "largest_differences": lambda k: BF.largest_differences(_judged(), k),
           "landing_markdown": lambda k: BF.landing_markdown(_frame(), _judged(), k=k)}


@pytest.mark.parametrize("fn", K_CALLS)
@pytest.mark.parametrize("k, exc", [(0, ValueError), (-1, ValueError), (None, TypeError), (True, TypeError),
                                    (1.5, TypeError), ("3", TypeError)])
def test_k_must_be_a_positive_integer(fn, k, exc):
    with pytest.raises(exc, match=r"^k must be an integer"):
        K_CALLS[fn](k)


# ---- Select -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kw, exc, field", [
    ({"verdicts": ("mostly",)}, ValueError, "verdicts"),
    ({"verdicts": ("differs", "mostly")}, ValueError, "verdicts"),
    ({"verdicts": "differs"}, TypeError, "verdicts"),
    ({"verdicts": ["differs"]}, TypeError, "verdicts"),
    ({"verdicts": (float("nan"),)}, TypeError, "verdicts"),
    ({"chapter": None}, TypeError, "chapter"),
    ({"chapter": " "}, ValueError, "chapter"),
    ({"where": 3}, TypeError, "where"),
    ({"where": "("}, ValueError, "where"),
    ({"quantity": re.compile("R2")}, TypeError, "quantity"),
    ({"quantity": "["}, ValueError, "quantity"),
])
def test_select_checks_its_filters_when_made(kw, exc, field):
    with pytest.raises(exc, match=rf"^{field} "):
        F.Select(**{"chapter": "quantized-mis/05-*", **kw})


def test_an_unknown_verdict_filter_names_the_word_and_the_vocabulary():
    with pytest.raises(ValueError, match=r"verdicts holds 'mostly', not a verdict of the ledger .* must be one of "
                                         + re.escape(", ".join(VERDICTS))):
        F.Select("quantized-mis/05-*", verdicts=("reproduced", "mostly"))


# ---- valid frames still work ----------------------------------------------------------------------------------------
def test_valid_frames_give_the_answers_derived_by_hand():
    df = _ledger()
    # CLAIM selects the three Table 3 rows: one reproduced, one differs, one not comparable → judged 2, pass 1
    assert F.claim_verdict(CLAIM, df) == ("holds in part", {"rows": 3, "judged": 2, "pass": 1, "differ": 1,
                                                            "erratum": 0, "reproduced": 1})
    assert F.Select("quantized-mis/05-*", verdicts=("differs",)).mask(df).tolist() == [False, True, False, True]
    assert F.row_ids(df, "paper") == [f"{CH}#{i}@paper" for i in (1, 2, 3, 4)]
    judged = _judged()
    assert judged["cause"].tolist() == ["", "unexplained", "", "unexplained"]
    assert BF.cause_counts(judged).to_dict() == {**{c: 0 for c in F.CAUSES}, "unexplained": 2}
    # the Table 4 row is farther from the paper (|0.1 − 0.5| / 0.5 = 0.8) than Table 3, HIA (0.4 / 0.9)
    assert BF.largest_differences(judged, 1)["where"].tolist() == ["Table 4"]
    assert BF.largest_differences(judged, 2)["where"].tolist() == ["Table 4", "Table 3, HIA"]
    frame = _frame()
    assert frame["verdict"].tolist() == ["holds in part", "untested"]
    assert BF.counts_table(frame).iloc[0].to_dict() == {"paper": "001", "holds": 0, "consistent": 0,
                                                         "holds in part": 1, "not reproduced": 0, "refuted": 0,
                                                         "untested": 1, "claims": 2}
    assert BF.consequential(frame, 1)["id"].tolist() == ["001-T"]     # the untested claim is never consequential
    assert "| **holds in part** | 001-T · " in glance.claims_table(CH, frame, _judged())


def test_the_door_itself():
    df = _ledger()
    assert check_ledger(df, "rows") is df
    empty = pd.DataFrame(columns=list(LEDGER_COLUMNS))
    assert check_ledger(empty, "rows") is empty                  # an empty frame with its columns passes
    with pytest.raises(ValueError, match=r"^rows lacks the columns 'chapter', 'where', 'quantity', 'verdict' "
                                         r"\(it has no columns\)$"):
        check_ledger(pd.DataFrame(), "rows")
    twice = pd.concat([df, df[["verdict"]]], axis=1)
    with pytest.raises(ValueError, match=r"^rows has 2 columns named 'verdict'"):
        check_ledger(twice, "rows")
    unhashable = df.astype({"verdict": object})
    unhashable.at[13, "verdict"] = ["differs"]
    with pytest.raises(ValueError, match=r"^rows\['verdict'\] holds \['differs'\] at row 3 \(index 13\)"):
        check_ledger(unhashable, "rows")
    with pytest.raises(TypeError, match=r"^verdicts must be a non-empty tuple of words"):
        check_ledger(df, "rows", verdicts="differs")
    with pytest.raises(TypeError, match=r"^columns must be a tuple of column names"):
        check_ledger(df, "rows", columns="verdict")


def test_evidence_anchor_names_the_run_a_row_comes_from():
    """Issue 53: this build's row k anchors ``row-k``; an archived run's row k (numbered in its own run) anchors
    ``row-k-<profile>``; ids that name no row are refused."""
    from qlib.book import evidence

    assert evidence.anchor("eden/01-estimator-vnmse#12") == ("eden/01-estimator-vnmse", "row-12")
    assert evidence.anchor("eden/05-federated#3@eden05-no-shakespeare") == ("eden/05-federated",
                                                                          "row-3-eden05-no-shakespeare")
    assert evidence.href("rqp-sgd/01-theory#54@paper", "rqp-sgd/summary") == "01-theory.html#row-54-paper"
    assert evidence.href("rqp-sgd/01-theory#4", "rqp-sgd/01-theory") == "#row-4"
    assert evidence.links_html(["a/05-x#2@paper", "a/05-x#3"], "a/summary") == \
        '<a href="05-x.html#row-2-paper">05 row 2 (paper)</a>'
    for bad in ("no-hash", "a/b#0", "a/b#x", "a/b#3@", 7):
        with pytest.raises(ValueError, match="row_id"):
            evidence.anchor(bad)
    # the anchors render writes are the ids anchor() links to: one format
    from qlib.book import render

    d = pd.DataFrame([{"where": "w", "quantity": "q", "verdict": "differs", "paper_value": "1", "ours": "2",
                       "tolerance": "", "note": "", "kind": "paper", "k_archived": 7}])
    assert '<span id="row-7-paper">' in render._archived_only_markdown(d, "paper")
    assert evidence.anchor_id(7, "paper") == evidence.anchor("a/b#7@paper")[1]
    for k, tag in ((0, None), (True, None), (2.0, None), (3, ""), (3, "a b"), (3, 'x"y')):
        with pytest.raises(ValueError, match="k must|tag must"):
            evidence.anchor_id(k, tag)
