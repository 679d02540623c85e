"""Chapter 03 of the quantized-MIS part (qlib.repro.quantized_mis.synthetic_claims): Table 2, Figure 2,
§5.1.2's claims, the two readings of 1.58b x% and App. E's figures, on tiny studies."""

from __future__ import annotations

import re

import numpy as np
import pytest

from qlib.discriminator import DiscriminatorConfig
from qlib.repro.quantized_mis import paper as P
from qlib.repro.quantized_mis import study, synthetic_claims


@pytest.fixture
def tiny(qmis_tiny_study):
    return qmis_tiny_study


def test_claims():
    names = list(P.PAPER_QUANTIZERS)
    good = np.array([[3, 4, 5, 9, 2.5, 2, 1, 0.5]])         # sign < t33, t90 max, b4/b5 least
    out = synthetic_claims.section512_claims(good, names)
    assert all(v.all() for v in out.values())
    bad = good.copy()
    bad[0, names.index("sign")] = 10
    out = synthetic_claims.section512_claims(bad, names)
    assert not out["1.58b 90% is the most private"][0] and not out["Sign is less private than 1.58b 33%"][0]


def test_table2_rows_leave_out_the_calibrated_identity_column(tiny):
    rows, summ = synthetic_claims.table2_rows(tiny)
    cells = [r for r in rows if r.kind == "paper-number"]
    assert len(cells) == summ["compared"] == 2 * len(P.PAPER_QUANTIZERS)      # two laws, no identity cell
    assert summ["identity_left_out"] == 2 and not any("original" in r.quantity for r in cells)
    assert summ["passed"] == sum(r.passed for r in cells)
    assert all(abs(r.ours - r.paper_value) <= 0.03 + 1e-12 for r in cells if r.passed)


def test_figure2_paper_pairing_and_ablation_kinds(tiny):
    rho = synthetic_claims.spearman_table(tiny)
    assert list(rho.law)[-1] == "mean" and len(rho) == 3
    rows = synthetic_claims.figure2_rows(rho, tiny)
    assert [r.kind for r in rows] == ["paper-number", "probe"]                  # our estimator pair is a probe
    assert rows[0].paper_value == P.PAPER_MEAN_SPEARMAN
    assert "discriminator" in rows[0].quantity and "threshold" in rows[1].quantity
    claims, table = synthetic_claims.section512_rows(tiny)
    paper = [r for r in claims if r.kind == "paper-claim"]
    probes = [r for r in claims if r.kind == "probe"]
    assert len(paper) == 6 and len(probes) == 6 and len(claims) == 12 and len(table) == 12
    # the paper's estimates are claims; the median of r_Q^n and the threshold attack are our variants
    assert all(re.search(r"\((?:r_Q\^n \(mean\)|discriminator MIS)\)$", r.quantity) for r in paper)
    assert all(re.search(r"\((?:r_Q\^n \(median\)|threshold MIS)\)$", r.quantity) for r in probes)
    # each probe row passes exactly where its table line holds in every law
    held = {(t["estimate"], t["claim"]): t["laws where it holds"] for _, t in table.iterrows()}
    for r in probes:
        claim_, est = re.match(r"^(.*) \((r_Q\^n \(median\)|threshold MIS)\)$", r.quantity).groups()
        k, n = held[(est, claim_)].split("/")
        assert r.passed == (k == n) and r.ours == f"{k}/{n} laws"
    assert all(r.passed is None for r in synthetic_claims.cost_rows(tiny))


def test_figure2_text_follows_the_verdicts(tiny):
    from qlib.repro.ledger import Item, Null, close, not_comparable

    ok = [close(Item("Figure 2", "q", 0.86), 0.8, atol=0.1, null=Null(0.0)),
          close(Item("Figure 2 (ablation)", "q", 0.8), 0.5, atol=0.1, kind="probe", note="our variant")]
    t = synthetic_claims.figure2_text(ok)
    assert "0.800" in t and "reproduced" in t and "outside ±0.1 of the paper's pairing" in t
    ok[1] = close(Item("Figure 2 (ablation)", "q", 0.8), 0.75, atol=0.1, kind="probe", note="our variant")
    assert "within ±0.1 of the paper's pairing" in synthetic_claims.figure2_text(ok)
    nc = [not_comparable(Item("Figure 2", "q", 0.86), reason="ρ undefined"),
          not_comparable(Item("Figure 2 (ablation)", "q", None), None, reason="ρ undefined", kind="probe")]
    assert "cannot be compared" in synthetic_claims.figure2_text(nc) and "None" not in synthetic_claims.figure2_text(nc)


def test_figure6_and_figure8_rows():
    import types

    L, Q, Rn = 2, 3, 4
    r = np.ones((L, Q, Rn))
    r[:, 2] = 0.1                                   # quantizer 2: the smallest r_Q^n, the least private
    acc = np.ones((L, Q + 1, Rn))
    acc[0, 3] = 0.97                                # keeps 97 % of the training accuracy on law 0 ...
    acc[1, 3] = 0.90                                # ... but only 90 % on law 1
    acc[:, 2] = 0.5                                 # quantizer 1 (column 2; column 0 is unquantized) loses half
    val = np.ones_like(acc)                         # validation accuracy is not Figure 6's axis
    cfg = {"runs": Rn, "epochs": 10}
    res = types.SimpleNamespace(r=r, acc_train=acc, acc_val=val, config=cfg)
    (row,) = synthetic_claims.figure6_rows(res)
    assert row.kind == "paper-claim" and row.passed is False and row.ours.startswith("1/2 laws")
    acc[1, 3] = 0.99
    assert synthetic_claims.figure6_rows(res)[0].passed is True
    r[:, 2] = 2.0                                   # now quantizer 1 (r = 1, keeps 50 %) is the least private
    r[:, 0] = 3.0
    assert synthetic_claims.figure6_rows(res)[0].passed is False
    (f8,) = synthetic_claims.figure8_rows()
    assert f8.verdict == "not comparable" and "Figure 8" in f8.where


def test_section512_claims_all_nan_law_and_bad_values():
    names = list(P.PAPER_QUANTIZERS)
    v = np.array([[3, 4, 5, 9, 2.5, 2, 1, 0.5], [np.nan] * 8])
    out = synthetic_claims.section512_claims(v, names)                       # crashed: "All-NaN slice encountered"
    assert out["1.58b 90% is the most private"].tolist() == [True, False]
    assert not out["Sign is less private than 1.58b 33%"][1]
    with pytest.raises(ValueError, match=r"\bvalues must be finite or NaN"):
        synthetic_claims.section512_claims(np.where(np.isnan(v), np.inf, v), names)
    with pytest.raises(ValueError, match=r"\bvalues must have ndim 2"):
        synthetic_claims.section512_claims(v[0], names)
    with pytest.raises(ValueError, match=r"\bnames must name the 8 columns"):
        synthetic_claims.section512_claims(v, names[:-1] + ["sign"] + ["bits5"])


def test_section512_rows_without_discriminator(tiny):
    import dataclasses

    no_disc = dataclasses.replace(tiny, disc_mis=np.full_like(tiny.disc_mis, np.nan))
    rows, table = synthetic_claims.section512_rows(no_disc)                      # crashed on the all-NaN discriminator MIS
    disc = [r for r in rows if "discriminator" in r.quantity]
    assert disc and all(r.verdict == "not comparable" for r in disc)   # not run is not "differs"
    assert len(disc) == len([r for r in rows if r.quantity.endswith("(r_Q^n (mean))")])
    assert "not run" in set(table["laws where it holds"])


def test_readings_study_tiny():
    import math

    rt = synthetic_claims.reading_effect(study.StudyConfig(runs=3, epochs=3, n=16, n_val=16, lr=1e-3, seed=0,
                                            grid=[(1.5, 6), (2.0, 6), (3.0, 6)]), device="cpu")
    assert list(rt["columns"]["paper column"]) == ["1.58b 33%", "1.58b 50%", "1.58b 90%"]
    assert set(rt["claims"]["reading"]) == {"text", "Table 1"}
    rows = synthetic_claims.reading_rows(rt, rt["res"])
    better = [r for r in rows if r.quantity.startswith("1.58b 90% more accurate")]
    assert [r.kind for r in better] == ["paper-claim", "probe"] and better[0].null_fails   # Table 1's: our variant
    assert math.isfinite(rt["columns"]["mean |Δ|, text reading"].iloc[0])
    assert "Table 1" in synthetic_claims.reading_text(rt) or "not resolved" in synthetic_claims.reading_text(rt)


def test_figure2_under_both_readings_tiny():
    import math

    cfg = study.StudyConfig(runs=3, epochs=3, n=16, n_val=16, lr=1e-3, seed=0, discriminator=DiscriminatorConfig(epochs=1),
                            grid=[(1.5, 6), (2.0, 6), (3.0, 6)])
    rt = synthetic_claims.reading_effect(cfg, device="cpu", discriminator=True)
    f2r = synthetic_claims.figure2_readings(rt["res"])
    assert list(f2r.law)[-1] == "mean" and len(f2r) == 4
    rows = synthetic_claims.figure2_reading_rows(f2r, rt["res"])
    assert [r.kind for r in rows] == ["probe", "probe"]       # our variant: never a second paper-number row
    assert all(r.passed is not None and "fixed before" in r.tolerance for r in rows)
    assert rows[1].paper_value == 0.86 and math.isfinite(rows[0].paper_value)
    # the discriminator changes no accuracy or r_Q^n; without it the rows are not comparable
    rt0 = synthetic_claims.reading_effect(cfg, device="cpu")
    assert np.array_equal(rt0["res"].acc_val, rt["res"].acc_val)
    assert np.array_equal(rt0["res"].r, rt["res"].r, equal_nan=True)
    assert all(r.passed is None for r in synthetic_claims.figure2_reading_rows(synthetic_claims.figure2_readings(rt0["res"]), rt0["res"]))


def test_row_functions_check_arguments_by_name(tiny):
    cases = [
        (lambda: synthetic_claims.table2_rows(tiny, atol=-0.1), ValueError, "atol"),
        (lambda: synthetic_claims.figure2_rows(synthetic_claims.spearman_table(tiny), tiny, atol=float("nan")),
         ValueError, "atol"),
        (lambda: synthetic_claims.reading_effect(dict(runs=3, epochs=4)), TypeError, "config"),
    ]
    for fn, exc, name in cases:
        with pytest.raises(exc, match=rf"(?<![A-Za-z0-9_]){name}(?![A-Za-z0-9_])"):
            fn()
