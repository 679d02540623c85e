"""qlib.repro.quantized_mis.molecular_claims: chapter 05's tables, claims and generated prose, on
constructed studies (the driver: test_repro_quantized_mis_molecular.py)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from qlib.repro.quantized_mis import molecular as MM
from qlib.repro.quantized_mis import molecular_claims as MC
from qlib.repro.quantized_mis import paper as P
from qlib.rqn import trajectory_stats

CLF6 = ("AMES", "BBB_Martins", "DILI", "ClinTox", "HIA_Hou", "hERG")


def _fake_study(rel_bits, rel_low, r_order, embedders=("maccs", "morgan"), tasks=CLF6, table=None):
    """A Study frame for classification tasks with chosen relative AUROC and r_Q^n (``table``: the
    relative AUROC of the Table 1 reading's three 1.58b quantizers, scored only)."""
    recs = []
    for t in tasks:
        for e in embedders:
            for q in MM.QUANTIZERS + (MM.TABLE_READING if table else ()):
                rel = rel_bits if q.startswith("bits") else (table[q] if q in MM.TABLE_READING else rel_low)
                if isinstance(rel, dict):
                    rel = rel[t]
                for run in range(2):
                    recs.append({"task": t, "kind": "classification", "embedder": e, "quantizer": q, "run": run,
                                 "metric": "auroc", "r_q": r_order.get(q, np.nan), "value": 0.8 * rel,
                                 "original": 0.8, "relative": rel})
    return MM.Study(pd.DataFrame(recs), {}, pd.DataFrame(), config={"embedders": list(embedders), "runs": 2,
                                                                        "epochs": 5, "max_molecules": 300})


def test_claims_pass_and_fail_on_constructed_numbers():
    r = {q: float(i) for i, q in enumerate(reversed(MM.QUANTIZERS))}        # sign most private, bits5 least
    good = {x.quantity: x for x in MC.section522_rows(_fake_study(0.99, 0.88, r))}
    bad = {x.quantity: x for x in MC.section522_rows(_fake_study(0.90, 1.0, {q: 1.0 + (not q.startswith("bits")) for q in r}))}
    k94 = "classification keeps ≥ 94 % of AUROC from 2 bits up"
    assert good[k94].passed and not bad[k94].passed
    trade = [k for k in good if k.startswith("privacy–performance trade-off (AUROC)")][0]
    assert good[trade].passed and not bad[trade].passed
    emb = [k for k in good if "between embedders" in k][0]
    assert good[emb].passed                                                      # identical rankings
    t90 = "1.58b 90 % is the most private quantizer on almost all datasets"
    assert not good[t90].passed                                                  # sign is top here


def test_lambda_profiles_match_trajectory_stats():
    g = torch.Generator().manual_seed(0)
    L = torch.rand(30, 8, 2, 12, generator=g)
    pr = MC.lambda_profiles(L)
    s = trajectory_stats(L[:, 3, 1])
    sub = pr[(pr.quantizer == MM.QUANTIZERS[3]) & (pr.run == 1)]
    np.testing.assert_allclose(sub.lam.to_numpy()[1:], s.lam[1:])
    assert int(sub.argmax_k.iloc[0]) == s.argmax_k
    rows = MC.lambda_rows({"x": pr})
    assert rows[0].kind == "paper-claim" and 0 <= rows[0].ours <= 1
    assert MC.lambda_rows({})[0].kind == "not-implemented"


def test_lambda_helpers_check_arguments():
    with pytest.raises(ValueError, match=r"\blosses must have ndim 4"):
        MC.lambda_profiles(torch.rand(5, 8, 2))
    with pytest.raises(ValueError, match=r"\blow\b"):
        MC.lambda_rows({}, low=math.nan)


def test_readings_pick_the_reading_that_matches_the_paper():
    """Table 3's 1.58b columns set against the two readings: where the Table 1 reading reproduces the
    paper's bracketed percentages and the text reading sits 0.1 below, the erratum is confirmed; the
    other way round it is not. The rows carry the paper's own values (PAPER_TABLE3)."""
    r = {q: float(i) for i, q in enumerate(reversed(MM.QUANTIZERS))}
    paper = {f"ternary{p}": {t: P.PAPER_TABLE3[t][ci][1] / 100 for t in CLF6}
             for p, ci in (("33", 1), ("50", 2), ("90", 3))}
    off = {q: {t: v - 0.1 for t, v in d.items()} for q, d in paper.items()}
    for text, tab, confirmed in ((off, paper, True), (paper, off, False)):
        st = _fake_study(0.99, 0.88, r, table={f"{q}_table": tab[q] for q in tab})
        st.frame.loc[st.frame.quantizer.str.fullmatch("ternary(33|50|90)"), "relative"] = [
            text[q][t] for q, t in st.frame.loc[st.frame.quantizer.str.fullmatch("ternary(33|50|90)"),
                                                 ["quantizer", "task"]].itertuples(index=False)]
        rt = MC.readings_table(st)
        assert set(rt.reading) == {"text (§5.1)", "Table 1"} and (rt.cells == len(CLF6)).all()
        good = rt[rt.reading == ("Table 1" if confirmed else "text (§5.1)")]
        np.testing.assert_allclose(good["mean |ours − paper|"], 0.0, atol=1e-12)
        (row,) = MC.reading_rows(st)
        assert row.kind == "erratum" and row.passed is confirmed


def test_embedder_tradeoff_and_sparse_claims_with_their_nulls():
    r = {q: float(i) for i, q in enumerate(reversed(MM.QUANTIZERS))}
    rel = {q: 0.80 + 0.02 * i for i, q in enumerate(MM.QUANTIZERS)}           # more private → worse
    st = _fake_study(0.99, 0.88, r)
    f = st.frame
    f["relative"] = f.quantizer.map(rel) + 0.001 * f.task.map({t: i for i, t in enumerate(CLF6)})
    rows = {x.quantity: x for x in MC.section522_rows(st)}
    same = rows["the privacy–performance trade-off is the same for every embedder"]
    assert same.passed and same.null_fails and same.verdict == "reproduced"
    sparse = rows["1.58b 90 % performs better than the other sparse quantizers (§5.1's text)"]
    assert sparse.passed and sparse.null_fails                    # ternary90 has the highest relative here
    # no trade-off at all: every embedder's ρ is 0 → the claim fails, as its null does
    f["relative"] = 0.9
    rows = {x.quantity: x for x in MC.section522_rows(st)}
    assert rows["the privacy–performance trade-off is the same for every embedder"].verdict == "not comparable" \
        or not rows["the privacy–performance trade-off is the same for every embedder"].passed
    assert "4 × 10 × 500" in MC.scale_note(st) and "≤ 300 molecules" in MC.scale_note(st)
    text = MC.describe(st, elapsed=90.0, profile="default", lr=1e-3)
    assert "1.5 min" in text and "2 runs × 5 epochs" in text


def test_chapter_texts_are_generated_from_the_study():
    st = _fake_study(0.99, 0.88, {q: float(i) for i, q in enumerate(reversed(MM.QUANTIZERS))})
    assert "±0.05 (AUROC, Spearman) and ±0.15 (R²)" in MC.tables_note()
    both = MC.table_with_paper(st, "auroc")
    assert list(both.columns) == list(MC.COLUMNS) and set(both.index) == set(P.PAPER_TABLE3)
    assert all(" · paper " in v or v.startswith("paper ") for v in both.to_numpy().ravel())
    claims = MC.section522_rows(st)
    text = MC.claims_text(claims)
    assert text.count("\n") + 1 == sum(r.kind == "paper-claim" for r in claims)
    empty = MM.Study(st.frame, {}, pd.DataFrame())
    assert list(MC.inputs_table(empty).columns)[:2] == ["task", "embedder"]
    assert MC.dropped_text(empty).endswith("None was dropped.")


def test_figure34_readings_pick_the_most_private_reading():
    r = {q: float(i) for i, q in enumerate(MM.QUANTIZERS)}                       # ternary90 not top (bits5 is)
    r |= {"ternary90_table": 100.0, "ternary33_table": 0.5, "ternary50_table": 0.6}
    st = _fake_study(0.99, 0.88, r, table={q: 0.9 for q in MM.TABLE_READING})
    t = MC.figure34_readings(st).set_index(["column", "reading"])
    assert t.loc[("1.58b 90%", "Table 1"), "share of tasks most private"] == 1.0
    assert t.loc[("1.58b 90%", "text (§5.1)"), "share of tasks most private"] == 0.0
    assert t.loc[("1.58b 90%", "Table 1"), "mean rank of r_Q^n"] == 1.0
    (row,) = MC.figure34_reading_rows(st)
    assert row.passed and row.kind == "probe"                                      # our variant, not a claim row
    assert "holds under the Table 1 reading" in MC.figure34_readings_text(st)
