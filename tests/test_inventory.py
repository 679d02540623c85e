"""The paper inventory that keeps the ledger complete."""

from __future__ import annotations

from qlib.repro.inventory import items_in, paper_items, stated_results, uncovered


def test_items_in_expands_lists_and_ranges():
    assert items_in("Figures 3/9") == {"Figure 3", "Figure 9"}
    assert items_in("Tables 3–5") == {"Table 3", "Table 4", "Table 5"}
    assert items_in("Lemmas D.1–D.7") == {f"Lemma D.{i}" for i in range(1, 8)}
    assert items_in("Fig. 2 and Table 1; Theorem 3.1 / Eq. 23") == {"Figure 2", "Table 1", "Theorem 3.1"}
    assert items_in("Figures 12, 13 and 14") == {"Figure 12", "Figure 13", "Figure 14"}
    assert items_in("§5.2 claim") == set()


def test_paper_items_and_uncovered():
    text = "As Figure 1 shows (see also Fig. 2) and Table 1 lists.\nLemma D.1. Let x.\nTheorem 3.1 (Key). Then.\n"
    assert paper_items(text, ("Figure", "Table")) == {"Figure 1", "Figure 2", "Table 1"}
    assert stated_results(text) == {"Lemma D.1", "Theorem 3.1"}
    assert uncovered(text, ["Figure 1", "Table 1 (col. 2)"]) == ["Figure 2"]
    assert uncovered(text, ["Figures 1/2", "Table 1"]) == []


def test_restatements_and_cut_numbers_are_not_items():
    text = "Theorem 3.1. A.\nTheorem C.1 (Theorem 3.1). A again.\nCorollary 5.\nCorollary 5.4.1. B.\n"
    assert stated_results(text) == {"Theorem 3.1", "Corollary 5.4.1"}


def test_abbreviated_plural_figures():
    assert items_in("§5.2.2 / Figs. 3–4") == {"Figure 3", "Figure 4"}
    assert items_in("App. F.2 / Fig. 9") == {"Figure 9"}


def test_text_must_be_a_string():
    import pytest

    for fn in (items_in, paper_items, stated_results):
        with pytest.raises(TypeError, match=r"\btext must be a string"):
            fn(None)
    with pytest.raises(TypeError, match=r"\bpaper_text must be a string"):
        uncovered(3, ["Figure 1"])
