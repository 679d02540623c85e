"""The comparison rows: kinds, verdicts from kind and outcome, recording, gathering."""

from __future__ import annotations

import math
import re

import pandas as pd
import pytest

from qlib.book import Comparisons, gather
from qlib.book.schema import COLUMNS
from qlib.book.summary import counts_by, reproduced_mask
from qlib.repro import ledger


def test_close_verdicts_and_tolerance(tmp_path):
    c = Comparisons("quantized-mis/01-x", tmp_path / "a")
    assert c.record(ledger.close(ledger.Item("Table 2", "acc", 0.996), 0.990, atol=0.01, kind="paper-number", null=ledger.Null(0.5)))[0] == "reproduced"
    assert c.record(ledger.close(ledger.Item("Table 2", "acc", 0.996), 0.980, atol=0.01, kind="paper-number"))[0] == "differs"
    assert c.record(ledger.close(ledger.Item("Fig 2", "vNMSE", 0.5708, paper="002"), 0.5708 * 1.019, rtol=0.02, kind="paper-number",
                                 null=ledger.Null(1.0)))[0] == "reproduced"
    assert c.record(ledger.close(ledger.Item("Fig 2", "vNMSE", 0.5708, paper="002"), 0.5708 * 1.021, rtol=0.02, kind="paper-number"))[0] == "differs"
    assert c.record(ledger.close(ledger.Item("TC-01", "levels", 8), 8, kind="theory-check"))[0] == "agrees"
    assert c.record(ledger.claim(ledger.Item("§5.1", "claim", "Sign < 33%"), "no", False, kind="paper-claim"))[0] == "differs"
    assert c.record(ledger.not_comparable(ledger.Item("Table 3", "AUROC", 0.8), 0.7,
                                          reason="stand-in embedder"))[0] == "not comparable"
    assert c.record(ledger.missing(ledger.Item("Figure 3", "r_Q^n vs AUROC"), reason="no embedder offline",
                                   offline=True))[0] == "not available offline"
    df = pd.read_csv(tmp_path / "a" / "comparisons.csv", dtype=str, keep_default_na=False)
    assert list(df.columns) == COLUMNS and len(df) == 8
    assert df["null"].iloc[0] == "0.5" and df["null_fails"].iloc[0] == "True" and df["null_fails"].iloc[1] == ""
    assert df["verdict"].tolist() == ["reproduced", "differs", "reproduced", "differs", "agrees", "differs",
                                      "not comparable", "not available offline"]
    assert df["paper"].tolist() == ["001", "001", "002", "002", "001", "001", "001", "001"]
    assert df["tolerance"].iloc[0] == "±0.01" and df["tolerance"].iloc[2] == "±2%" and df["tolerance"].iloc[4] == "exact"
    assert c.summary() == {"reproduced": 2, "differs": 3, "agrees": 1, "not comparable": 1, "not available offline": 1}
    assert reproduced_mask(df).sum() == 2  # the theory check does not count as a reproduction


def test_kind_and_paper_are_checked(tmp_path):
    c = Comparisons("eden/01-x", None)
    with pytest.raises(ValueError, match="kind must be one of"):
        c.record(ledger.close(ledger.Item("T", "q", 1.0), 1.0, kind="paper"))
    with pytest.raises(ValueError, match="not judged needs a note"):
        ledger.Row("paper-number", "T", "q", 1, 1, None)
    with pytest.raises(ValueError, match="no outcome"):
        ledger.Row("not-implemented", "T", "q", "", None, True)
    with pytest.raises(ValueError, match="paper must be one of"):
        c.record(ledger.close(ledger.Item("T", "q", 1.0, paper="005"), 1.0, kind="paper-number"))


def test_nan_result_is_a_failed_row_not_an_exception():
    r = ledger.close(ledger.Item("T", "q", 1.0), math.nan, kind="paper-number")
    assert r.passed is False and r.verdict == "differs" and ledger.fmt(r.ours) == "nan"
    with pytest.raises(ValueError, match="paper_value must be finite"):
        ledger.close(ledger.Item("T", "q", math.inf), 1.0, kind="paper-number")


def test_verdict_words_by_kind():
    assert ledger.verdict("erratum", True) == "erratum confirmed"
    assert ledger.verdict("arithmetic", False) == "disagrees"
    assert ledger.verdict("paper-claim", None) == "not comparable"
    with pytest.raises(ValueError):
        ledger.verdict("not-implemented", True)


def test_record_rows_from_the_reproduction(tmp_path):
    c = Comparisons("eden/01-x", tmp_path)
    rows = [ledger.close(ledger.Item("§3", "q", 1.0), 1.0, kind="paper-number", null=ledger.Null(0.0)),
            ledger.claim(ledger.Item("§5", "c", "x"), "y", True, null=ledger.Null("z", fails=True))]
    assert c.record(rows) == ["reproduced", "reproduced"]
    assert gather(tmp_path)["paper"].tolist() == ["002", "002"]
    c2 = Comparisons("appendix/01-x", None)
    with pytest.raises(ValueError, match="has no paper"):
        c2.record(rows[0])
    with pytest.raises(TypeError, match="Row objects"):
        c.record([{"kind": "paper-number"}])


def test_gather_and_counts(tmp_path):
    a = Comparisons("p/01-a", tmp_path / "p" / "01-a", paper="001")
    a.record(ledger.close(ledger.Item("T1", "q", 1.0), 1.0, kind="paper-number", null=ledger.Null(0.0)))
    b = Comparisons("p/02-b", tmp_path / "p" / "02-b", paper="003")
    b.record(ledger.close(ledger.Item("T2", "q", 1.0), 2.0, kind="paper-number"))
    rows = gather(tmp_path)
    assert len(rows) == 2 and set(rows["chapter"]) == {"p/01-a", "p/02-b"}
    tab = counts_by(rows, ["chapter"]).set_index("chapter")
    assert tab.loc["p/01-a", "reproduced"] == 1 and tab.loc["p/02-b", "differs"] == 1
    assert gather(tmp_path / "nothing").empty


def test_rerun_starts_from_empty_table(tmp_path):
    Comparisons("c/01", tmp_path, paper="001").record(ledger.close(ledger.Item("T", "q", 1), 1, kind="paper-number"))
    Comparisons("c/01", tmp_path, paper="001")
    assert len(gather(tmp_path)) == 0


def test_old_files_are_named(tmp_path):
    (tmp_path / "comparisons.csv").write_text("chapter,paper,where\nx,001,T\n")
    with pytest.raises(ValueError, match="lacks columns"):
        gather(tmp_path)


def test_bad_chapter_name(tmp_path):
    with pytest.raises(ValueError):
        Comparisons("", tmp_path)


def test_distinct_errata_counts_each_erratum_once(tmp_path):
    from qlib.book.summary import distinct_errata

    c = Comparisons("mia-limits/01-x", tmp_path)
    for nu in (0.1, 0.2, 0.3):
        c.record(ledger.claim(ledger.Item(f"Eq. 23 as printed (erratum 003-E1), ν={nu}", "acc", 1), 2, True, kind="erratum"))
    c.record(ledger.claim(ledger.Item("Prop. B.1 (erratum 003-E5)", "P(E)", 0.998), 0.49, True, kind="erratum"))
    c.record(ledger.claim(ledger.Item("Lemma X", "typo", "a"), "b", False, kind="erratum"))
    d = distinct_errata(gather(tmp_path)).set_index("erratum")
    assert len(d) == 3 and d.loc["003-E1", "rows"] == 3 and d.loc["003-E1", "confirmed"] == 3
    assert d.loc["Lemma X", "confirmed"] == 0


# ------------------------------------------------------------------------ bad input (issue 11 §1)
def test_nan_can_never_read_reproduced():
    # close: a NaN or infinite result is an explicit failed comparison, the value shown
    for bad in (math.nan, math.inf, -math.inf):
        r = ledger.close(ledger.Item("T", "q", 1.0), bad, atol=10.0)
        assert r.passed is False and r.verdict == "differs" and not r.counts_as_reproduction
    # claim / Row: a passing row whose value is NaN (e.g. passed = not (x > 0) with x NaN) is refused
    with pytest.raises(ValueError, match=r"\bours is NaN, so the row cannot pass"):
        ledger.claim(ledger.Item("§5", "q", "> 0"), math.nan, True)
    with pytest.raises(ValueError, match=r"\bpaper_value is NaN, so the row cannot pass"):
        ledger.Row("theory-check", "T", "q", math.nan, 1.0, True)
    assert ledger.claim(ledger.Item("§5", "q", "> 0"), math.nan, False).verdict == "differs"
    assert ledger.not_comparable(ledger.Item("T", "q", math.nan), math.nan, reason="ρ undefined").verdict == "not comparable"
    with pytest.raises(ValueError, match=r"\bours must hold the value a judged row"):
        ledger.claim(ledger.Item("§5", "q", "> 0"), None, True)
    with pytest.raises(TypeError, match=r"\bours must be a real number"):
        ledger.claim(ledger.Item("§5", "q", "> 0"), 1 + 2j, True)
    assert ledger.claim(ledger.Item("Table 4", "R²", "< -1"), -math.inf, True).verdict == "consistent"
    assert ledger.claim(ledger.Item("Table 4", "R²", "< -1"), -math.inf, True, null=ledger.Null(0.0, fails=True)).verdict == "reproduced"


def test_tolerance_and_verdict_check_arguments():
    for bad in (math.nan, -0.1, math.inf):
        with pytest.raises(ValueError, match=r"\batol\b"):
            ledger.tolerance_text(0.0, bad)
    with pytest.raises(TypeError, match=r"\brtol\b"):
        ledger.tolerance_text(None, 0.0)
    with pytest.raises(ValueError, match=r"\bkind must be one of"):
        ledger.verdict("paper", True)
    with pytest.raises(TypeError, match=r"\bpassed must be True, False or None"):
        ledger.verdict("paper-number", 1)


# ------------------------------------------------------------------------ nulls (issue 28)
def test_a_row_reads_reproduced_only_if_its_null_fails():
    # close(null=…): the null meets the row's own tolerance
    r = ledger.close(ledger.Item("T", "acc", 0.90), 0.91, atol=0.02, null=ledger.Null(0.5, label="chance"))
    assert r.verdict == "reproduced" and r.null_fails is True and r.null == "chance = 0.5" and r.counts_as_reproduction
    r = ledger.close(ledger.Item("T", "acc", 0.90), 0.91, atol=0.02, null=ledger.Null(0.89))  # a trivial model is as close: cannot fail
    assert r.verdict == "consistent" and r.null_fails is False and not r.counts_as_reproduction
    r = ledger.close(ledger.Item("T", "acc", 0.90), 0.91, atol=0.02)  # no null stated
    assert r.verdict == "consistent" and r.null_fails is None
    r = ledger.close(ledger.Item("T", "acc", 0.90), 0.99, atol=0.02, null=ledger.Null(0.5))  # a failing row differs whatever its null
    assert r.verdict == "differs"
    # check: one callable tests ours and the null
    r = ledger.check(ledger.Item("T", "RQP better", "> 0"), -0.88, lambda v: v > 0, null=ledger.Null(0.0), tolerance="> 0 pp")
    assert r.verdict == "differs" and r.null_fails is True
    r = ledger.check(ledger.Item("T", "≥", "≥ 0.1"), 0.64, lambda v: v >= 0.1, null=ledger.Null(2 / math.pi))
    assert r.verdict == "consistent" and r.null_fails is False
    r = ledger.check(ledger.Item("T", "laws", "all"), 9, lambda k: k == 9, null=ledger.Null(0, shown="0/9"), shown="9/9")
    assert r.verdict == "reproduced" and r.ours == "9/9" and r.null == "0/9"
    # theory checks and errata carry no null; a null_fails needs its null
    with pytest.raises(ValueError, match="only paper-number"):
        ledger.close(ledger.Item("T", "q", 1.0), 1.0, kind="theory-check", null=ledger.Null(0.0))
    with pytest.raises(ValueError, match="must state its null"):
        ledger.Row("paper-claim", "T", "q", "x", "y", True, null_fails=True)
    with pytest.raises(TypeError, match="must return a bool"):
        ledger.check(ledger.Item("T", "q", "x"), 1.0, lambda v: "yes", null=ledger.Null(0.0))
    assert ledger.verdict("paper-number", True, True) == "reproduced"
    assert ledger.verdict("paper-number", True, False) == "consistent"
    assert ledger.verdict("theory-check", True, None) == "agrees"


def test_item_and_null_records_build_the_rows_the_fields_say():
    Item, Null, Row = ledger.Item, ledger.Null, ledger.Row
    # close: the null's label is shown beside its value and its outcome uses the row's own tolerance
    r = ledger.close(Item("Table 2", "accuracy", 0.91, paper="001"), 0.92, atol=0.03, basis="printed precision",
                     null=Null(0.5, label="chance"), note="n")
    assert r == Row("paper-number", "Table 2", "accuracy", 0.91, 0.92, True, "±0.03 (printed precision)", "n",
                    "001", "chance = 0.5", True)
    # without a label the null column holds the value itself; a null inside the tolerance passes too
    r = ledger.close(Item("T", "q", 1.0), 1.0, rtol=0.1, null=Null(0.95))
    assert (r.null, r.null_fails, r.verdict) == (0.95, False, "consistent")
    # claim takes the null's outcome from the caller; check computes it and shows what it is told to
    r = ledger.claim(Item("§5", "q", "better"), "+1 pp", True, tolerance="> 0", null=Null("+0 pp", fails=True))
    assert (r.paper, r.null, r.null_fails, r.verdict) == (None, "+0 pp", True, "reproduced")
    r = ledger.check(Item("§5", "q", "all"), 9, lambda k: k == 9, null=Null(0, shown="0/9"), shown="9/9")
    assert (r.ours, r.null, r.null_fails) == ("9/9", "0/9", True)
    # the two records are checked where they are made, and a builder takes only them
    with pytest.raises(ValueError, match="where"):
        Item(" ", "q", 1.0)
    with pytest.raises(ValueError, match="paper"):
        Item("T", "q", 1.0, paper="005")
    with pytest.raises(ValueError, match="null=None"):
        Null(None)
    with pytest.raises(ValueError, match="close computes"):
        ledger.close(Item("T", "q", 1.0), 1.0, null=Null(0.0, fails=True))
    with pytest.raises(ValueError, match="check computes"):
        ledger.check(Item("T", "q", 1.0), 1.0, lambda v: v > 0, null=Null(0.0, fails=True))
    with pytest.raises(TypeError, match="check needs null"):
        ledger.check(Item("T", "q", 1.0), 1.0, lambda v: v > 0, null=None)
    with pytest.raises(TypeError, match="item must be an Item"):
        ledger.close(("T", "q", 1.0), 1.0)
    with pytest.raises(TypeError, match="null must be a Null"):
        ledger.claim(Item("T", "q", 1.0), 1.0, True, null=0.0)
    with pytest.raises(ValueError, match="null.value must be finite"):
        ledger.close(Item("T", "q", 1.0), 1.0, null=Null(float("nan")))
    with pytest.raises(TypeError, match="item.paper_value must be a real number"):
        ledger.close(Item("T", "q", "text"), 1.0)
    # missing: an item without a value
    r = ledger.missing(Item("Figure 3", "Shakespeare", paper="002"), reason="not offline", offline=True)
    assert (r.kind, r.paper_value, r.paper, r.verdict) == ("not-available-offline", "", "002", "not available offline")


def test_verdicts_by_paper_counts_consistent_apart(tmp_path):
    from qlib.book.summary import by_paper_and_kind, verdicts_by_paper

    c = Comparisons("eden/01-x", tmp_path)
    c.record(ledger.close(ledger.Item("A", "q", 1.0), 1.0, kind="paper-number", null=ledger.Null(0.0)))
    c.record(ledger.close(ledger.Item("B", "q", 1.0), 1.0, kind="paper-number", null=ledger.Null(1.0)))
    c.record(ledger.close(ledger.Item("C", "q", 1.0), 3.0, kind="paper-number", null=ledger.Null(0.0)))
    c.record(ledger.close(ledger.Item("D", "q", 1.0), 1.0, kind="theory-check"))
    v = verdicts_by_paper(gather(tmp_path)).set_index("paper")
    assert v.loc["002", ["reproduced", "consistent", "differs", "paper items"]].tolist() == [1, 1, 1, 3]
    h = by_paper_and_kind(gather(tmp_path)).set_index("paper")
    assert h.loc["002", "reproduced"] == 1 and h.loc["002", "consistent"] == 1


def test_files_without_null_columns_still_gather(tmp_path):
    cols = [c for c in COLUMNS if c not in ("null", "null_fails")]
    pd.DataFrame([dict.fromkeys(cols, "x") | {"kind": "paper-number", "verdict": "reproduced"}]).to_csv(
        tmp_path / "comparisons.csv", index=False)
    g = gather(tmp_path)
    assert g["null"].tolist() == [""] and not reproduced_mask(g).any()


def test_ledger_defects_name_rows_that_could_not_have_failed(tmp_path):
    from qlib.book.summary import ledger_defects

    c = Comparisons("eden/01-x", tmp_path)
    c.record(ledger.close(ledger.Item("A", "q", 1.0), 1.0, kind="paper-number", null=ledger.Null(0.0)))
    c.record(ledger.close(ledger.Item("B", "q", 1.0), 1.0, kind="paper-number"))
    assert ledger_defects(gather(tmp_path)) == []
    bad = gather(tmp_path)
    bad.loc[1, "verdict"] = "reproduced"  # e.g. a file written before nulls existed
    (msg,) = ledger_defects(bad)
    assert "B: q reads reproduced without a null" in msg


def _stamp(out, chapter, when):
    import json

    f = out / ".stamps" / f"{chapter}.json"
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(json.dumps({"hash": "h", "profile": "smoke", "when": when}))


def test_rows_of_a_killed_notebook_never_reach_the_ledger(tmp_path):
    """Issue 30 §2: in a runner's output tree, rows count only with the stamp of their notebook's finished
    run, no older than the rows; a notebook killed with 5 of its rows written (no stamp, or the stamp of an
    earlier run) is left out, and a warning names it."""
    import os
    import time

    from qlib.book.gathering import IncompleteResultsWarning

    res = tmp_path / "_results"
    (tmp_path / ".stamps").mkdir()
    done = Comparisons("eden/01-a", res / "eden" / "01-a")
    for i in range(11):
        done.record(ledger.close(ledger.Item(f"T{i}", "q", 1.0), 1.0, kind="paper-number", null=ledger.Null(0.0)))
    _stamp(tmp_path, "eden/01-a", time.time())  # finished: its stamp written after the rows
    killed = Comparisons("eden/03-b", res / "eden" / "03-b")
    for i in range(5):  # ... then SIGKILL: no stamp
        killed.record(ledger.close(ledger.Item(f"T{i}", "q", 1.0), 1.0, kind="paper-number", null=ledger.Null(0.0)))
    with pytest.warns(IncompleteResultsWarning, match=r"left out 5 rows of eden/03-b .*no stamp of a finished run"):
        rows = gather(res)
    assert len(rows) == 11 and set(rows["chapter"]) == {"eden/01-a"}
    assert list(rows.attrs["incomplete"]) == ["eden/03-b"]
    # an earlier finished run's stamp does not vouch for rows written after it
    _stamp(tmp_path, "eden/03-b", time.time() - 3600)
    with pytest.warns(IncompleteResultsWarning, match="written after its notebook's last finished run"):
        assert set(gather(res)["chapter"]) == {"eden/01-a"}
    _stamp(tmp_path, "eden/03-b", time.time() + 1)  # that run finished after all
    assert len(gather(res)) == 16
    (tmp_path / ".stamps" / "eden" / "03-b.json").write_text('{"hash": "ab')  # a stamp cut mid-write
    with pytest.warns(IncompleteResultsWarning, match="unreadable"):
        assert len(gather(res)) == 11
    # outside a runner's tree (no .stamps beside _results: a notebook run by hand, a test) every file counts
    os.rename(tmp_path / ".stamps", tmp_path / "stamps-elsewhere")
    assert len(gather(res)) == 16


def test_a_killed_run_loses_its_old_stamp(tmp_path, monkeypatch):
    """The runner removes a notebook's stamp when it starts it: a run killed mid-way (simulated by an
    exception the runner does not catch, as SIGKILL leaves no chance to clean up) leaves rows without a
    stamp, which gather leaves out, and the next run re-runs the notebook instead of skipping it."""
    import time

    from qlib.book import jobs as J
    from qlib.book.gathering import IncompleteResultsWarning

    out = tmp_path / "out"
    res = out / "_results"
    job = J.Job("eden/03-b.ipynb", tmp_path / "src.ipynb", out / "chapters" / "eden" / "03-b.ipynb",
                out / ".stamps" / "eden" / "03-b.json", res / "eden" / "03-b", {"profile": "smoke", "device": "cpu"},
                out=out)
    _stamp(out, "eden/03-b", time.time() + 5)  # an earlier finished run (even one stamped in the future)

    def killed(src, dest, params, cwd, timeout):
        c = Comparisons("eden/03-b", job.results)
        for i in range(5):
            c.record(ledger.close(ledger.Item(f"T{i}", "q", 1.0), 1.0, kind="paper-number", null=ledger.Null(0.0)))
        raise SystemExit("killed")  # not an Exception: execute() cannot discard anything

    monkeypatch.setattr(J, "papermill_execute", killed)
    with pytest.raises(SystemExit):
        J.execute(job, timeout=None, log=lambda *a: None)
    assert not job.stamp_file.exists()
    with pytest.warns(IncompleteResultsWarning, match="eden/03-b"):
        assert gather(res).empty


def test_ledger_defects_name_numeric_tolerances_without_a_basis(tmp_path):
    from qlib.book.summary import ledger_defects

    c = Comparisons("eden/01-x", tmp_path)
    c.record(ledger.close(ledger.Item("A", "q", 1.0), 1.0, kind="paper-number", atol=0.05, basis="printed precision",
                          null=ledger.Null(0.0)))
    c.record(ledger.close(ledger.Item("B", "q", 1.0), 1.0, kind="paper-number", atol=0.05, null=ledger.Null(0.0)))             # ±0.05, from where?
    c.record(ledger.close(ledger.Item("C", "q", 1.0), 1.0, kind="theory-check", atol=1e-9))                      # not a paper item
    c.record(ledger.close(ledger.Item("D", "q", 1.0), 1.0, kind="paper-number", null=ledger.Null(0.0)))                       # exact: nothing to derive
    claim, Item, Null = ledger.claim, ledger.Item, ledger.Null
    c.record([claim(Item("E", "q", "better"), "+1 pp", True, tolerance="> 0 pp (a claim of 'better' needs ours > 0)",
                    null=Null("+0", fails=True)),
              claim(Item("F", "q", "most"), 0.7, True, tolerance="≥ 0.5", null=Null("0.33", fails=True)),
              claim(Item("G", "q", "all"), "9/9", True, tolerance="every law", null=Null("0/9", fails=True))])
    msgs = ledger_defects(gather(tmp_path))
    assert [m.split(":")[1].strip() for m in msgs] == ["B", "F"]
    assert all("states no basis" in m for m in msgs)


def test_headline_tables_put_the_answer_first_and_papers_in_book_order(tmp_path):
    # issue 29: the landing page's table hid "reproduced" off-screen and listed 001–004 while the
    # parts run 001, 003, 002, 004
    from qlib.book.summary import by_paper_and_kind, papers_in_book_order, verdicts_by_paper

    for cid in ("rqp-sgd/01-x", "eden/01-x", "mia-limits/01-x", "quantized-mis/01-x"):
        Comparisons(cid, tmp_path / cid).record(ledger.close(ledger.Item("A", "q", 1.0), 1.0, kind="paper-number", null=ledger.Null(0.0)))
    rows = gather(tmp_path)
    assert papers_in_book_order(rows["paper"]) == ["001", "003", "002", "004"]
    assert verdicts_by_paper(rows)["paper"].tolist() == ["001", "003", "002", "004"]
    h = by_paper_and_kind(rows)
    assert h.columns[:3].tolist() == ["paper", "reproduced", "of paper items"]
    assert h["paper"].tolist() == ["001", "003", "002", "004"]


def test_long_chapter_groups_fold_in_the_open_rows_section(tmp_path):
    from qlib.book.render import ledger_groups_markdown

    long_ = Comparisons("quantized-mis/05-x", tmp_path / "a")
    for i in range(5):
        long_.record(ledger.close(ledger.Item(f"T{i}", "q", 1.0), 3.0, kind="paper-number"))
    Comparisons("eden/01-x", tmp_path / "b").record(ledger.close(ledger.Item("F", "q", 1.0), 3.0, kind="paper-number"))
    md = ledger_groups_markdown(gather(tmp_path), fold=False, fold_over=3)
    assert ":::{admonition} quantized-mis/05-x: 5 rows, 5 not settled\n:class: dropdown" in md
    assert "### eden/01-x" in md and "eden/01-x: 1 rows" not in md
    with pytest.raises(ValueError, match="fold_over"):
        ledger_groups_markdown(gather(tmp_path), fold=False, fold_over=-1)


def test_rows_read_as_words_and_maths_with_the_verdict_second(tmp_path):
    # issue 29: ours printed to the paper's precision + 1 digit, r_Q^n and 2^10 typeset, kinds in
    # words, the verdict right after the quantity (visible at 390 px)
    from qlib.book.render import paper_vs_ours_markdown, prose_math, round_like

    assert round_like("0.994691", "0.99") == "0.995"
    assert round_like("0.000123456", "1.2e-04") == "1.23e-04"
    assert round_like("12", "12") == "12" and round_like("n/a", "0.9") == "n/a"
    assert prose_math("r_Q^n at d = 2^10, 10^-1.5") == "$r_{Q}^{n}$ at d = $2^{10}$, $10^{-1.5}$"
    assert prose_math("n_draws and bits_per_coord, `r_Q^n`") == "n_draws and bits_per_coord, `r_Q^n`"
    c = Comparisons("quantized-mis/01-x", tmp_path)
    c.record(ledger.close(ledger.Item("T1", "r_Q^n of Sign", 0.99), 0.994691, kind="paper-number", rtol=0.1, null=ledger.Null(0.0)))
    c.record(ledger.missing(ledger.Item("T2", "table"), reason="offline", offline=True))
    md = paper_vs_ours_markdown(c.frame())
    assert "| quantity | verdict | paper | ours |" in md
    # each row carries the anchor a claim's evidence link lands on: row k of the chapter is #row-k
    assert '| <span id="row-1"></span>T1: $r_{Q}^{n}$ of Sign | **reproduced** · paper number' in md \
        and "| 0.99 | 0.995 |" in md and '<span id="row-2"></span>T2' in md
    assert "not-available-offline" not in md


def test_a_long_paper_vs_ours_section_folds_each_verdict(tmp_path):
    # issue 29: the molecular chapter's ~240 open rows were one 52,000-px table; over the threshold each
    # verdict's rows are a dropdown titled with the count, in the ledger's verdict order
    from qlib.book.render import paper_vs_ours_markdown

    c = Comparisons("quantized-mis/01-x", tmp_path)
    for i in range(4):
        c.record(ledger.close(ledger.Item(f"T{i}", "q", 1.0), 2.0, kind="paper-number", rtol=0.01, null=ledger.Null(0.0)))     # differs
    for i in range(2):
        c.record(ledger.missing(ledger.Item(f"M{i}", "table"), reason="offline", offline=True))
    c.record(ledger.close(ledger.Item("A", "q", 1.0), 1.0, kind="paper-number", rtol=0.01, null=ledger.Null(0.0)))            # reproduced
    df = c.frame()
    short = paper_vs_ours_markdown(df)
    assert short.count(":::{admonition}") == 1                      # only the settled rows are folded
    long = paper_vs_ours_markdown(df, fold_open_over=5)
    titles = [ln for ln in long.splitlines() if ln.startswith(":::{admonition}")]
    assert titles == [":::{admonition} 4 rows: differs", ":::{admonition} 2 rows: not available offline",
                      ":::{admonition} 1 rows reproduced, agreeing or confirmed"], titles
    assert len(re.findall(r"\| <span id=\"row-\d+\"></span>T", long)) == 4 and long.count("></span>M") == 2   # every row, anchored
    with pytest.raises(ValueError, match="fold_open_over"):
        paper_vs_ours_markdown(df, fold_open_over=-1)
