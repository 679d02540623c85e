"""Membership-inference security (MIS) from an attack's accuracy (paper 001, Theorem A.2).

MIS_n = 2(1 − sup_φ Acc_n(φ)): every attack φ of balanced accuracy ``acc`` bounds the MIS from
above by 2(1 − acc). :func:`binomial_ci` gives the Clopper–Pearson interval of an accuracy measured
as successes / trials, which maps to an interval of that upper bound.
"""

from __future__ import annotations

import numpy as np

from .validation import check_array, check_probability

__all__ = ["binomial_ci", "mis_from_accuracy"]


def _counts(name: str, value, low: int) -> np.ndarray:
    """Finite (``ValueError`` on NaN/inf), integral (``TypeError`` on 2.5) counts >= ``low``, int64."""
    v = check_array(name, value, low=low)
    if not np.all(v == np.round(v)):
        raise TypeError(f"{name} must be integer counts, got non-integral values")
    return v.astype(np.int64)


def binomial_ci(successes, trials, level: float = 0.95):
    """Clopper–Pearson interval for a binomial proportion (vectorised): (lo, hi) arrays.

    ``successes`` and ``trials``: integer counts (0 <= successes <= trials, trials >= 1) of equal
    shape, or one of them a scalar. NaN, inf and non-integral counts are a ``ValueError``/``TypeError``
    naming the argument (an interval is never reported for a broken count)."""
    from scipy import stats  # deferred: scipy.stats takes ~0.6 s to import

    check_probability("level", level, open_low=True, open_high=True)
    k = _counts("successes", successes, low=0)
    n = _counts("trials", trials, low=1)
    if k.shape != n.shape and k.ndim and n.ndim:
        raise ValueError(f"successes and trials must have the same shape (or one be a scalar), got "
                         f"{k.shape} and {n.shape}")
    if np.any(k > n):
        raise ValueError("successes must be <= trials")
    a = (1 - level) / 2
    lo = np.where(k > 0, stats.beta.ppf(a, k, n - k + 1), 0.0)
    hi = np.where(k < n, stats.beta.ppf(1 - a, k + 1, n - k), 1.0)
    return lo, hi


def mis_from_accuracy(acc):
    """MIS estimate 2(1 − acc) of an attack of balanced accuracy ``acc`` (Thm A.2, paper 001).

    Elementwise over an array of any shape; ``acc`` must be finite and in [0, 1] (a NaN accuracy is
    a ``ValueError``, never a NaN estimate)."""
    acc = check_array("acc", acc, low=0.0, high=1.0)
    return 2.0 * (1.0 - acc)
