"""Binomial intervals and the MIS of an accuracy (qlib.mis)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from qlib import mis


def test_binomial_ci_matches_scipy_clopper_pearson():
    for k, n in ((0, 10), (3, 10), (10, 10), (512, 1000)):
        ci = stats.binomtest(k, n).proportion_ci(0.95, method="exact")
        lo, hi = mis.binomial_ci(k, n)
        assert lo == pytest.approx(ci.low, abs=1e-12) and hi == pytest.approx(ci.high, abs=1e-12)
    with pytest.raises(ValueError):
        mis.binomial_ci(5, 3)


def test_mis_from_accuracy():
    np.testing.assert_allclose(mis.mis_from_accuracy([0.5, 1.0, 0.75]), [1.0, 0.0, 0.5])
    with pytest.raises(ValueError):
        mis.mis_from_accuracy(1.5)


# estimators.binomial_ci / mis_from_accuracy of the issue: a NaN must never become an interval (0, 1)
# or a NaN MIS estimate
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), [0.5, float("nan")]])
def test_mis_from_accuracy_rejects_non_finite_by_name(bad):
    with pytest.raises(ValueError, match=r"\bacc\b"):
        mis.mis_from_accuracy(bad)


@pytest.mark.parametrize("arg", ["successes", "trials"])
@pytest.mark.parametrize("bad, exc", [(float("nan"), ValueError), (float("inf"), ValueError),
                                      (2.5, TypeError), (None, TypeError), (-1, ValueError)])
def test_binomial_ci_rejects_broken_counts_by_name(arg, bad, exc):
    kw = {"successes": 3, "trials": 10, arg: bad}
    with pytest.raises(exc, match=rf"\b{arg}\b"):
        mis.binomial_ci(**kw)


def test_binomial_ci_shapes_and_level():
    lo, hi = mis.binomial_ci(np.array([3, 5]), 10)                    # a scalar broadcasts
    assert lo.shape == hi.shape == (2,)
    lo2, _ = mis.binomial_ci(np.array([3.0, 5.0]), np.array([10, 10]))  # integral floats are counts
    np.testing.assert_array_equal(lo, lo2)
    with pytest.raises(ValueError, match=r"\bsuccesses\b.*\btrials\b"):
        mis.binomial_ci(np.array([[3, 5]]), np.array([10, 10]))
    for level in (float("nan"), 0.0, 1.0, 1.5):
        with pytest.raises(ValueError, match=r"\blevel\b"):
            mis.binomial_ci(3, 10, level)
