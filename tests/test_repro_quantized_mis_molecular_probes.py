"""qlib.repro.quantized_mis.molecular_probes: chapter 05's probes of Tables 3–5 (the embedder spread, the
unquantized R², the b-bit zero level, the other reading of 1.58b x %) and its two further §5.2.2 claims, on
constructed studies; and, on a tiny real study, that the findings' causes find the probe rows they name."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from qlib.repro.findings import assign_causes
from qlib.repro.ledger import DIFFERING
from qlib.repro.quantized_mis import findings as F
from qlib.repro.quantized_mis import molecular as MM
from qlib.repro.quantized_mis import molecular_claims as MC
from qlib.repro.quantized_mis import molecular_probes as MP
from qlib.repro.quantized_mis import paper as P

EIGHT = MM.QUANTIZERS


def _reg_study(rel, *, orig=None, r_order=None, table=None, tasks=("LD50_Zhu",), embedders=("e1", "e2"), runs=3,
               clf_tasks=()):
    """A Study of regression tasks (R² and Spearman) and classification tasks (AUROC). ``rel``: relative
    performance per (embedder, quantizer), a float or a callable (task, embedder, quantizer) -> float;
    ``orig``: the unquantized R² per (task, embedder, run), a callable (default 0.5); ``r_order``: r_Q^n per
    quantizer (task -> {quantizer: r}, or one dict); ``table``: relative performance of the Table 1 reading."""
    recs = []
    f = rel if callable(rel) else (lambda t, e, q: rel)
    o = orig or (lambda t, e, r: 0.5)
    for t in (*tasks, *clf_tasks):
        kind, metrics = ("classification", ("auroc",)) if t in clf_tasks else ("regression", ("r2", "spearman"))
        ro = r_order.get(t, r_order) if isinstance(r_order, dict) else {}
        for e in embedders:
            for q in (*EIGHT, *MM.TABLE_READING, "identity"):
                for run in range(runs):
                    for m in metrics:
                        base = o(t, e, run) if m == "r2" else 0.8
                        v = 1.0 if q == "identity" else (table(t, e, q) if q in MM.TABLE_READING and table
                                                          else f(t, e, q))
                        recs.append({"task": t, "kind": kind, "embedder": e, "quantizer": q, "run": run,
                                     "metric": m, "r_q": ro.get(q, np.nan) if q in EIGHT else np.nan,
                                     "value": base * v, "original": base, "relative": v, "initial": np.nan})
    return MM.Study(pd.DataFrame(recs), {}, pd.DataFrame(), config={"embedders": list(embedders), "runs": runs})


def _by(rows, where, quantity):
    (r,) = [x for x in rows if x.where == where and x.quantity == quantity]
    return r


# --- the embedder spread -------------------------------------------------------------------------------
def test_spread_is_max_minus_min_over_embedders_and_passes_at_the_gap():
    rel = lambda t, e, q: {"e1": 0.2, "e2": 0.9, "e3": 0.5}[e] if q == "bits4" else 1.0  # noqa: E731
    st = _reg_study(rel, embedders=("e1", "e2", "e3"))
    rows = MP.spread_rows(st)
    r = _by(rows, "Table 4 probe, LD50_Zhu", "embedder spread of relative R², bits4")
    paper = P.PAPER_TABLE4["LD50_Zhu"][6][1] / 100                     # bits4 (0.67)
    ours = (0.2 + 0.9 + 0.5) / 3
    assert r.kind == "probe" and r.ours == pytest.approx(0.7)
    assert r.paper_value == f"gap {abs(ours - paper):.3g}" and r.passed is (0.7 >= abs(ours - paper))
    # Table 4's −inf cells are claims, not numbers: no spread row for them; Table 5 has every column
    assert not any(x.where == "Table 4 probe, LD50_Zhu" and x.quantity.endswith(", sign") for x in rows)
    assert sum(x.where == "Table 5 probe, LD50_Zhu" for x in rows) == len(EIGHT)
    # a cell the embedders agree on (1.0), off the paper's 0.99: a spread of 0 does not cover the gap
    flat = _by(rows, "Table 5 probe, LD50_Zhu", "embedder spread of relative Spearman ρ, bits5")
    assert flat.ours == 0.0 and flat.passed is False and flat.paper_value == "gap 0.01"
    # one embedder: no spread, not comparable with the reason
    one = MP.spread_rows(_reg_study(rel, embedders=("e1",)))
    assert {x.verdict for x in one} == {"not comparable"} and "one embedder" in one[0].note


# --- the unquantized R² ------------------------------------------------------------------------------
def test_conditioning_passes_only_for_a_loosely_known_denominator():
    tight = lambda t, e, r: 0.5 + 0.001 * r  # noqa: E731
    loose = lambda t, e, r: [0.02, 0.3, -0.1][r] + (0.05 if e == "e2" else 0.0)  # noqa: E731
    (a,) = MP.conditioning_rows(_reg_study(0.9, orig=tight))
    (b,) = MP.conditioning_rows(_reg_study(0.9, orig=loose))
    assert a.where == b.where == "Table 4 probe, LD50_Zhu" and a.paper_value == P.PAPER_TABLE4["LD50_Zhu"][-1][0]
    assert a.ours == pytest.approx(0.501) and a.passed is False and a.verdict == "probe fails"
    assert b.passed is True and "smallest per-run R² -0.1" in b.note
    (c,) = MP.conditioning_rows(_reg_study(0.9, runs=1, embedders=("e1",)))
    assert c.verdict == "not comparable"


def test_the_printed_b_bit_quantizer_has_no_zero_level():
    (row,) = MP.zero_level_rows()
    assert row.kind == "theory-check" and row.verdict == "agrees"
    assert row.ours == "2 bits 0.5; 3 bits 0.25; 4 bits 0.125; 5 bits 0.0625"
    with pytest.raises(ValueError, match="bits"):
        MP.zero_level_rows(bits=(1,))


# --- the other reading of 1.58b x % --------------------------------------------------------------------
def test_reading_cells_pass_within_the_cell_tolerance():
    paper90 = P.PAPER_TABLE5["LD50_Zhu"][3][1] / 100                    # 0.77
    st = _reg_study(0.5, table=lambda t, e, q: paper90 + 0.04 if q == "ternary90_table" else 0.1)
    rows = MP.reading_cell_rows(st)
    assert all(r.kind == "probe" and r.where == "Table 5 probe, LD50_Zhu" for r in rows) and len(rows) == 3
    ok = _by(rows, "Table 5 probe, LD50_Zhu", "relative Spearman ρ, ternary90 under Table 1's reading")
    bad = _by(rows, "Table 5 probe, LD50_Zhu", "relative Spearman ρ, ternary33 under Table 1's reading")
    assert ok.passed and not bad.passed and ok.tolerance.startswith(f"±{MC.REL_ATOL['spearman']:g}")


# --- the two further claims of §5.2.2 ----------------------------------------------------------------
def test_least_private_claim_follows_the_r_q_order():
    bits_last = {q: (0.0 if q.startswith("bits") else 1.0) + i * 1e-3 for i, q in enumerate(EIGHT)}
    bits2_up = dict(bits_last, bits2=5.0)                              # 2 bits among the most private
    clf = ("AMES", "DILI")
    good = MP.section522_more_rows(_reg_study(1.0, tasks=(), clf_tasks=clf, r_order=bits_last))
    half = MP.section522_more_rows(_reg_study(1.0, tasks=(), clf_tasks=clf,
                                              r_order={"AMES": bits_last, "DILI": bits2_up}))
    (g,), (h,) = good, half
    assert g.where == "§5.2.2, classification" and g.passed and g.ours == 1.0 and g.verdict == "reproduced"
    assert not h.passed and h.ours == 0.5 and "DILI" in h.note


def test_regression_trade_off_claim_needs_every_private_quantizer_below_the_mean():
    private = {q: (2.0 if not q.startswith("bits") else 0.0) + i * 1e-3 for i, q in enumerate(EIGHT)}
    bad_r2 = lambda t, e, q: -3.0 if not q.startswith("bits") else 0.9  # noqa: E731
    (ok,) = MP.section522_more_rows(_reg_study(bad_r2, r_order=private))
    assert ok.where == "§5.2.2, regression" and ok.passed and ok.ours == "1/1 tasks" and ok.null_fails
    # 1.58b 90 % keeps its R² (> 0) while among the four most private: a viable trade-off, the claim fails
    viable = lambda t, e, q: 0.8 if q == "ternary90" else bad_r2(t, e, q)  # noqa: E731
    (no,) = MP.section522_more_rows(_reg_study(viable, r_order=private))
    assert not no.passed and "ternary90 0.4" in no.note               # R² = 0.5 × 0.8


def test_probes_text_counts_passes_per_table():
    rel = lambda t, e, q: {"e1": 0.2, "e2": 0.9}[e]  # noqa: E731
    rows = MP.probe_rows(_reg_study(rel))
    txt = MP.probes_text(rows)
    n4 = [r for r in rows if r.where == "Table 4 probe, LD50_Zhu" and "spread" in r.quantity]
    assert f"Table 4 {sum(r.passed for r in n4)} of {len(n4)}" in txt
    assert list(MP.rows_table(rows[:2]).columns) == ["where", "quantity", "paper / reference", "ours", "verdict"]
    one = MP.probes_text(MP.probe_rows(_reg_study(rel, embedders=("e1",))))
    assert "Table 4 none judged" in one and "one embedder ran" in one
    with pytest.raises(TypeError, match="rows"):
        MP.probes_text("rows")


def test_bad_input_is_named():
    with pytest.raises(TypeError, match="study"):
        MP.spread_rows(pd.DataFrame())
    with pytest.raises(ValueError, match="metric"):
        MP.embedder_spread(_reg_study(1.0), "accuracy")


# --- the causes find the rows the chapter records -------------------------------------------------------
def test_findings_causes_read_the_probe_rows_of_a_real_study(shared_data_dir, tmp_path):
    st = MM.run_study(MM.MolecularConfig(tasks=["VDss_Lombardo"], embedders=["maccs", "morgan"], runs=2, epochs=5,
                                         max_molecules=120, keep_losses_for=[]),
                      data_dir=shared_data_dir, cache_dir=tmp_path)
    rows = MC.table_rows(st) + MP.probe_rows(st)
    df = pd.DataFrame([{"chapter": "quantized-mis/05-molecular", "kind": r.kind, "where": r.where,
                        "quantity": r.quantity, "paper_value": r.paper_value, "ours": r.ours, "verdict": r.verdict,
                        "scale": "paper (test)"} for r in rows])
    out = assign_causes(df, F.ROW_CAUSES, stand_ins=F.STAND_INS)
    spread = {(r.where.split(", ")[-1], r.quantity.rsplit(", ", 1)[-1]): r for r in rows
              if r.quantity.startswith("embedder spread") and r.where.startswith("Table 4")}
    cells = out[out["where"].str.startswith("Table 4, ") & out["quantity"].str.startswith("relative")
                & out["verdict"].isin(DIFFERING)]
    assert len(cells)
    for _, c in cells.iterrows():
        probe = spread[(c["where"].split(", ")[-1], c["quantity"].rsplit(", ", 1)[-1])]
        assert (c.cause == "stand-in") == bool(probe.passed), (c["quantity"], c.cause, c.cause_why)
        assert c.cause_evidence.count("#") == 1                       # exactly its own cell's probe row
