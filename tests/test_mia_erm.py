"""ERM over a finite Θ̄ (paper 001 §3, App. B–C): exact Δ_n in logs, C_P^1, Thm 3.3 quantities."""

import math

import numpy as np
import pytest

import qlib.mia as mia
from qlib.mia import bounds, erm, exact

SQ = np.array([[0.0, 1.0], [1.0, 0.0]])  # Θ̄ = {0, 1}, squared loss on Bernoulli data (atoms z = 0, 1)


def test_erm_matches_bernoulli_threshold_closed_form():
    p = [0.7, 0.3]
    for n in (1, 5, 10, 11, 40):
        # ties (n even, Σz = n/2) go to θ = 0 (lower population risk): θ̂ = 1{Σz ≥ ⌊n/2⌋ + 1}
        assert math.isclose(mia.erm_delta(SQ, p, n), bounds.bernoulli_threshold_delta(0.3, n, n // 2 + 1), rel_tol=1e-12)
        assert math.isclose(mia.erm_delta(SQ, p, n, ties="worst"),
                            bounds.bernoulli_threshold_delta(0.3, n, math.ceil(n / 2)), rel_tol=1e-12)


def test_erm_log_delta_far_below_float_range():
    n = 10_000
    ref = bounds.log_bernoulli_threshold_delta(0.3, n, n // 2 + 1)
    got = mia.erm_log_delta(SQ, [0.7, 0.3], n)
    assert ref < -800 and math.isclose(got, ref, rel_tol=1e-10)


def test_erm_matches_lemma_c2_on_random_problems_and_uniform_ties():
    rng = np.random.default_rng(1)
    for _ in range(10):
        K, m, n = int(rng.integers(2, 5)), int(rng.integers(2, 4)), int(rng.integers(1, 12))
        L, p = rng.random((K, m)), rng.dirichlet(np.ones(m))
        ref = exact.delta_finite_theta(p, n, lambda c, L=L: np.argmin(c @ L.T, 1))
        assert math.isclose(mia.erm_delta(L, p, n), ref, rel_tol=1e-9, abs_tol=1e-15)
    # uniform ties on a tie-heavy problem = average of the two deterministic joint laws, checked by direct TV
    L, p, n = np.array([[0.0, 1.0, 0.5], [1.0, 0.0, 0.5]]), np.array([0.5, 0.3, 0.2]), 6
    counts = exact.count_vectors(n, 3)
    R = counts @ L.T
    w1 = np.where(R[:, 0] < R[:, 1], 1.0, np.where(R[:, 0] > R[:, 1], 0.0, 0.5))
    P = np.exp(exact.log_multinomial_pmf(counts, p))
    q = np.stack([(P * w)[:, None] * counts / n for w in (w1, 1 - w1)]).sum(1)
    pn = np.stack([(P * w).sum() * p for w in (w1, 1 - w1)])
    assert math.isclose(mia.erm_delta(L, p, n, ties="uniform"), exact.tv_discrete(q, pn), rel_tol=1e-12)


def test_chernoff_rate_equals_eq11_and_bernoulli_kl():
    # K = 2 on Bernoulli data: C_P^1 = KL(1/2 ‖ 0.3) (Chernoff bound of the majority event)
    assert math.isclose(mia.chernoff_rate(SQ, [0.7, 0.3]), bounds.kl_bernoulli(0.5, 0.3), rel_tol=1e-12)
    rng = np.random.default_rng(0)
    for _ in range(2):
        L, p = rng.random((3, 4)), rng.dirichlet(np.ones(4))
        assert math.isclose(mia.chernoff_rate(L, p), erm.cramer_rate_eq11(L, p), rel_tol=1e-8)


def test_exact_rate_converges_to_chernoff_from_above():
    L, p = np.array([[0.0, 1.0, 0.3], [0.8, 0.1, 0.0], [0.5, 0.5, 0.9]]), np.array([0.5, 0.3, 0.2])
    C = mia.chernoff_rate(L, p)
    r = [-mia.erm_log_delta(L, p, n) / n for n in (100, 400, 1000)]
    assert all(a > b > C for a, b in zip(r, r[1:]))


def test_weakly_dominated_candidate_and_tie_rules():
    # candidate 2 is never better than candidate 1 (L_2 ≥ 0): infinite rate with ties to the best
    L, p = np.array([[0.0, 0.0], [0.0, 1.0]]), [0.5, 0.5]
    assert math.isinf(mia.chernoff_rate(L, p))
    assert mia.erm_delta(L, p, 20) == 0.0
    assert math.isclose(mia.chernoff_rate(L, p, closed=True), math.log(2), rel_tol=1e-14)
    assert mia.erm_delta(L, p, 20, ties="worst") > 0


def test_gap_statistics_and_prop_c4():
    L, p = np.array([[0.0, 1.0, 0.3], [0.8, 0.1, 0.0], [0.5, 0.5, 0.9]]), np.array([0.5, 0.3, 0.2])
    s = mia.gap_statistics(L, p)
    G = erm.loss_gaps(L, p)
    assert np.allclose(s.delta, G @ p) and np.all(s.delta > 0)
    assert np.allclose(s.sigma2, (G**2) @ p - (G @ p) ** 2)
    assert math.isclose(s.r_q, float(np.min(s.delta**2 / (2 * s.sigma2))), rel_tol=1e-12)
    assert math.isclose(erm.prop_c4_inf(s.Lambda), 1 / (2 * s.sigma2_max), rel_tol=1e-10)
    Lam = np.array([[1.0, 1.0], [1.0, 1.0]])  # singular
    assert math.isclose(erm.prop_c4_inf(Lam), 0.5, rel_tol=1e-12)
    assert erm.prop_c4_inf(Lam, restrict_to_range=False) == 0.0


def test_lemmas_b1_b2():
    lo, tv, hi = erm.lemma_b1_bounds([0.5, 0.5, 0.0], [0.2, 0.0, 0.8])
    assert lo <= tv <= hi and math.isclose(tv, 0.8, rel_tol=1e-14)
    M = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])
    for j in range(3):
        assert math.isclose(erm.schur_inverse_diag(M, j), np.linalg.inv(M)[j, j], rel_tol=1e-12)


def test_bad_input():
    with pytest.raises(ValueError, match="K >= 2"):
        mia.erm_delta([[0.0, 1.0]], [0.5, 0.5], 3)
    with pytest.raises(ValueError, match="finite"):
        mia.erm_delta([[0.0, np.inf], [1.0, 0.0]], [0.5, 0.5], 3)
    with pytest.raises(ValueError, match="one column per atom"):
        mia.erm_delta(SQ, [0.2, 0.3, 0.5], 3)
    with pytest.raises(ValueError, match="n must be"):
        mia.erm_delta(SQ, [0.5, 0.5], 0)
    with pytest.raises(ValueError, match="ties"):
        mia.erm_delta(SQ, [0.5, 0.5], 3, ties="random")
    with pytest.raises(ValueError, match="max_states"):
        mia.erm_delta(np.eye(3), [0.3, 0.3, 0.4], 100_000)
    with pytest.raises(ValueError, match="H1.2"):
        mia.chernoff_rate(np.array([[0.0, 1.0], [1.0, 0.0]]), [0.5, 0.5])
