"""Rankings and their stability over runs (qlib.ranking)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from qlib import ranking


def test_spearman_matches_scipy():
    rng = np.random.default_rng(4)
    a, b = rng.normal(size=(7, 8)), rng.normal(size=(7, 8))
    np.testing.assert_allclose(ranking.spearman(a, b), [stats.spearmanr(a[i], b[i])[0] for i in range(7)])


def test_ranks_one_is_largest():
    np.testing.assert_array_equal(ranking.ranks([0.1, 3.0, 2.0]), [3, 1, 2])


def test_rankings_reject_broken_input_by_name():
    with pytest.raises(TypeError, match=r"\baxis\b"):
        ranking.ranks([1.0, 2.0], axis=None)
    with pytest.raises(ValueError, match=r"\baxis\b"):
        ranking.ranks([1.0, 2.0], axis=1)
    with pytest.raises(TypeError, match=r"\bvalues\b"):
        ranking.ranks(np.array([1.0 + 1j, 2.0]))
    with pytest.raises(ValueError, match=r"\bk_runs\b"):
        ranking.rq_rank_stability(np.zeros((2, 3, 6)), [2, 7])
    with pytest.raises(ValueError, match=r"\bfull_mis\b"):
        ranking.threshold_rank_stability(np.ones((1, 2, 4, 3)), np.ones((1, 2, 4, 3)), [[0.2, np.nan]], [2])
    with pytest.raises(ValueError, match=r"\bpred_ranks\b"):
        ranking.rank_confusion([[1.0, 4.0]], [[1.0, 2.0]])



@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_rankings_refuse_nonfinite_values_unless_allowed(bad):
    """The non-finite policy (qlib.validation): every ranking refuses NaN/inf by name by default;
    allow_nonfinite=True is the r_Q^n reading (NaN, undefined, ranks last and is ignored by averages;
    +inf, unbounded, ranks first)."""
    v = [bad, 1.0, 2.0]
    calls = {"values": lambda **k: ranking.ranks(v, **k), "a": lambda **k: ranking.spearman(v, [1.0, 2.0, 3.0], **k),
             "b": lambda **k: ranking.spearman([1.0, 2.0, 3.0], v, **k),
             "x": lambda **k: ranking.average_runs([v], **k),
             r"r \(laws": lambda **k: ranking.rq_rank_stability(np.array([[v, [1.0, 2.0, 3.0]]]), [2], 3, **k)}
    for name, call in calls.items():
        with pytest.raises(ValueError, match=rf"^{name}.* must be finite.*allow_nonfinite=True"):
            call()
        call(allow_nonfinite=True)  # the r_Q^n reading: no error
    np.testing.assert_array_equal(ranking.ranks([np.nan, 1.0, np.inf], allow_nonfinite=True), [3, 2, 1])
    np.testing.assert_allclose(ranking.average_runs([[1.0, np.nan, 3.0]], allow_nonfinite=True), [2.0])
    with pytest.raises(TypeError, match=r"\ballow_nonfinite\b"):
        ranking.ranks([1.0, 2.0], allow_nonfinite="yes")


def test_rank_stability_is_perfect_without_run_noise_and_errors():
    rng = np.random.default_rng(5)
    per_law = rng.normal(size=(3, 8, 1))
    r = np.repeat(per_law, 20, axis=2) + 1e-9 * rng.normal(size=(3, 8, 20))
    st_ = ranking.rq_rank_stability(r, [2, 5, 20], n_subsets=10)
    assert np.allclose(st_["spearman"], 1.0)
    cm = ranking.rank_confusion(st_["ranks"][0], st_["full_ranks"])
    assert cm.sum() == 10 * 3 * 8 and np.trace(cm) == cm.sum()
    with pytest.raises(ValueError, match="k_run"):
        ranking.run_subsets(20, 1, 5)
    with pytest.raises(ValueError, match="k_run"):
        ranking.run_subsets(20, 21, 5)


def test_rank_stability_subsets_reproducible():
    a = ranking.run_subsets(30, 5, 4, seed=3)
    b = ranking.run_subsets(30, 5, 4, seed=3)
    np.testing.assert_array_equal(a, b)
    assert all(len(set(row)) == 5 for row in a)
