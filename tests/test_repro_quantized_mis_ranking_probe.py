"""The ranking probe of paper 001's chapter 04: run average (mean, median) and Algorithm 1 without
de-duplication (qlib.repro.quantized_mis.ranking_probe)."""

import warnings

import numpy as np
import pytest

from qlib.repro.quantized_mis import ranking_probe as RP
from qlib.repro.quantized_mis.paper import PAPER_QUANTIZERS
from qlib.repro.quantized_mis.study import StudyConfig

NAMES = list(PAPER_QUANTIZERS)


@pytest.fixture(scope="module")
def tiny():
    cfg = StudyConfig(runs=3, epochs=40, n=8, n_val=8, lr=1e-2, grid=((1.5, 6),), discriminator=None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return RP.copies_study(cfg, device="cpu")


def test_copies_study_literal_is_dedup_with_copies_zeroed(tiny):
    r, lit, cop, nd = tiny["r"], tiny["r_literal"], tiny["copied"], tiny["n_distinct"]
    assert r.shape == lit.shape == cop.shape == nd.shape == (1, len(NAMES), 3) and cop.dtype == bool
    ok = np.isfinite(r)
    assert (lit[ok & cop] == 0).all() and (lit[ok & ~cop] == r[ok & ~cop]).all()
    # a copy of θ̄_1 needs fewer distinct models than epochs
    assert not cop[nd == 40].any()
    assert cop[nd == 1].all()  # one model met at every epoch is its own copy


def test_variant_table_properties():
    rng = np.random.default_rng(0)
    base = np.arange(1, len(NAMES) + 1, dtype=float)[None, :, None]
    stable = base + 0.01 * rng.random((2, len(NAMES), 30))   # runs agree: the ranking is stable
    zeros = np.zeros((2, len(NAMES), 30))                     # every r = 0: no ranking at all
    t = RP.variant_table({"stable": stable, "zeros": zeros}, NAMES, k=5, n_subsets=5).set_index(["variant", "run average"])
    assert (t.loc["stable", "ρ at k = 5"] > 0.99).all() and (t.loc["stable", "ρ undefined (share)"] == 0).all()
    assert t.loc["zeros", "ρ undefined (share)"].eq(1).all() and t.loc["zeros", "runs with r = 0 (share)"].eq(1).all()
    # Sign (rank 1) below 1.58b 33 % (rank 2) in both laws
    assert (t.loc["stable", "Sign < 1.58b 33 % (laws)"] == "2/2").all()
    with pytest.raises(ValueError, match="k"):
        RP.variant_table({"stable": stable}, NAMES, k=31)


def test_variant_rows_are_probes_passing_above_the_papers_level():
    rng = np.random.default_rng(1)
    base = np.arange(1, len(NAMES) + 1, dtype=float)[None, :, None]
    stable = base + 0.01 * rng.random((2, len(NAMES), 30))
    noisy = rng.random((2, len(NAMES), 30))                    # no order: ρ near 0
    zeros = np.zeros((2, len(NAMES), 30))
    t = RP.variant_table({"stable": stable, "noisy": noisy, "zeros": zeros}, NAMES, k=5, n_subsets=5)
    rows = RP.variant_rows(t, note="a test", skip=[("stable", "mean")])
    assert len(rows) == 5 and all(r.kind == "probe" and "a test" in r.note for r in rows)
    by = {(r.quantity.split(", ")[1], r.quantity.split(", ")[2].split(" over")[0]): r for r in rows}
    assert ("stable", "mean") not in by                        # the paper's own estimator: a claim row elsewhere
    assert by[("stable", "median")].verdict == "probe passes" and by[("noisy", "mean")].verdict == "probe fails"
    assert by[("zeros", "mean")].verdict == "not comparable"   # every ρ undefined
    assert all(r.quantity.endswith("> 0.95 at k_run = 5") for r in rows)
    with pytest.raises(TypeError, match="table"):
        RP.variant_rows(t.drop(columns="variant"), note="x")
