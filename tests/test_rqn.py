"""r_Q^n, Algorithm 1 of paper 001 (qlib.rqn). The recording callback is tested in test_recorder.py,
rankings in test_ranking.py, binomial intervals in test_mis.py."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from qlib import rqn


def algorithm1_literal(L: np.ndarray) -> float:
    """Algorithm 1 line by line (lines 11–18), on a matrix without duplicate rows."""
    m = L.mean(axis=1)
    idx = np.argsort(m, kind="stable")
    m, L = m[idx], L[idx]
    K = len(m)
    best = -np.inf
    for k in range(1, K):
        s2 = np.var(L[k] - L[0], ddof=1)
        best = max(best, s2 * ((m[1] - m[0]) / (m[k] - m[0])) ** 2)
    r = 0.5 / best
    return r * (m[1] - m[0]) ** 2


def test_matches_literal_algorithm_without_duplicates():
    rng = np.random.default_rng(0)
    L = rng.exponential(size=(40, 25)) + np.linspace(0, 0.5, 40)[:, None]
    assert rqn.r_q(L) == pytest.approx(algorithm1_literal(L), rel=1e-12)


def test_two_models_closed_form():
    # L_1 = (0, 0), L_2 = (a, b): δ = (a+b)/2, σ² = (a−b)²/2 (ddof 1), r = δ²/(2σ²)
    a, b = 0.3, 0.1
    L = np.array([[0.0, 0.0], [a, b]])
    assert rqn.r_q(L) == pytest.approx(((a + b) / 2) ** 2 / (a - b) ** 2, rel=1e-12)


def test_min_form_equals_lambda_form():
    rng = np.random.default_rng(1)
    L = rng.normal(size=(30, 50)) + rng.normal(size=(30, 1))
    s = rqn.trajectory_stats(L)
    terms = s.delta[1:] ** 2 / (2 * s.sigma2[1:])
    assert s.r_q == pytest.approx(terms.min(), rel=1e-12)
    assert s.r_q == pytest.approx(s.delta[1] ** 2 / (2 * np.nanmax(s.lam)), rel=1e-12)
    assert s.argmax_k == int(np.argmin(terms)) + 2
    assert np.all(np.diff(s.mean) >= 0) and s.delta[0] == 0


def test_duplicates_removed_and_literal_algorithm_would_divide_zero_by_zero():
    rng = np.random.default_rng(2)
    base = rng.normal(size=(6, 20))
    b = int(np.argmin(base.mean(axis=1)))                     # θ̄_1
    L = np.concatenate([base, base[[b, b, 3, 5]], base[:2]])
    with np.errstate(all="ignore"):
        lit = algorithm1_literal(L)                           # δ_2 = 0 and 0/0 from the copies of θ̄_1
    assert np.isnan(lit) or lit == 0.0
    s = rqn.trajectory_stats(L)
    assert s.n_distinct == 6 and s.n_rows == 12
    assert rqn.r_q(L) == pytest.approx(algorithm1_literal(base), rel=1e-12)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 12), st.integers(2, 9))
def test_invariant_to_row_order_and_copies(seed, K, n):
    rng = np.random.default_rng(seed)
    L = rng.normal(size=(K, n))
    perm = rng.permutation(K)
    copies = rng.integers(0, K, size=5)
    L2 = np.concatenate([L[perm], L[copies]])
    assert rqn.r_q(L2) == pytest.approx(rqn.r_q(L), rel=1e-9, abs=0)


def test_fewer_than_two_distinct_is_nan_with_warning():
    with pytest.warns(rqn.RQUndefinedWarning):
        assert math.isnan(rqn.r_q(np.ones((7, 4))))
    with pytest.warns(rqn.RQUndefinedWarning):
        assert math.isnan(rqn.r_q(np.arange(5.0)[None]))


def test_tie_in_mean_gives_zero_and_constant_shift_never_binds():
    L = np.array([[0.0, 1.0], [1.0, 0.0], [2.0, 2.0]])       # rows 1, 2 tie in mean, σ > 0
    assert rqn.r_q(L) == 0.0
    # a model differing from θ̄_1 by a positive constant has σ_k = 0: never the minimum
    L = np.array([[0.0, 1.0, 2.0], [1.0, 2.0, 3.0]])
    assert rqn.r_q(L) == math.inf
    L3 = np.vstack([L, [[0.0, 2.0, 4.0]]])
    s = rqn.trajectory_stats(L3)
    assert math.isfinite(s.r_q) and s.r_q == pytest.approx(1.0 ** 2 / (2 * 1.0))


def test_numpy_and_torch_agree():
    rng = np.random.default_rng(3)
    L = rng.normal(size=(10, 8))
    assert rqn.r_q(torch.from_numpy(L).float()) == pytest.approx(rqn.r_q(L.astype(np.float32)), rel=1e-12)


@pytest.mark.parametrize("bad, exc", [
    (np.array([[0.0, np.nan], [1.0, 2.0]]), ValueError),
    (np.array([[0.0, np.inf], [1.0, 2.0]]), ValueError),
    (np.zeros(5), ValueError),
    (np.zeros((3, 1)), ValueError),
    (np.zeros((2, 3, 4)), ValueError),
    ("losses", TypeError),
])
def test_bad_input(bad, exc):
    with pytest.raises(exc):
        rqn.r_q(bad)


def test_bad_ddof():
    with pytest.raises(ValueError, match="ddof"):
        rqn.r_q(np.eye(3), ddof=2)
    for bad in (1.0, True, float("nan")):
        with pytest.raises(TypeError, match=r"\bddof\b"):
            rqn.r_q(np.eye(3), ddof=bad)
    with pytest.raises(ValueError, match=r"\bt_block\b"):
        rqn.batched_rates(torch.rand(3, 2, 4), t_block=0)
