"""Issue 28: every row of the book's last run that reads *reproduced* names a null that fails the same
test, and every paper number or claim with a numeric tolerance says where the tolerance comes from. Walks ``_build/book/_results`` (written by ``python -m qlib.book run --profile smoke``); skipped
when no book has been run here. ``tests/test_book.py`` checks the same on its own smoke run."""

from __future__ import annotations

from pathlib import Path

import pytest

from qlib.book.gathering import gather
from qlib.book.summary import ledger_defects, verdicts_by_paper

RESULTS = Path(__file__).resolve().parents[1] / "_build" / "book" / "_results"


@pytest.fixture(scope="module")
def rows():
    if not RESULTS.is_dir() or not any(RESULTS.rglob("comparisons.csv")):
        pytest.skip("no executed book under _build/book/_results (run the smoke profile first)")
    return gather(RESULTS)


def test_every_reproduced_row_has_a_null_that_fails(rows):
    defects = [d for d in ledger_defects(rows) if "states no basis" not in d]   # the next test has those
    assert not defects, f"{len(defects)} rows could not have failed:\n" + "\n".join(defects)


def test_every_numeric_tolerance_states_its_basis(rows):
    no_basis = [d for d in ledger_defects(rows) if "states no basis" in d]
    assert not no_basis, f"{len(no_basis)} tolerances say nothing of where they come from:\n" + "\n".join(no_basis)


def test_the_headline_counts_only_rows_that_could_have_failed(rows):
    v = verdicts_by_paper(rows[~rows["chapter"].str.startswith("appendix/")])
    rep = rows[rows["verdict"] == "reproduced"]
    assert int(v["reproduced"].sum()) == int((rep["null_fails"] == "True").sum()) == len(rep)
