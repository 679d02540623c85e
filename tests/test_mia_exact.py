"""Exact discrete MIA quantities (paper 003 Thm 3.1, Eq. 23 erratum, Eq. 31/32, Lemma C.2)."""

import math

import numpy as np
import pytest

from qlib.mia import exact


def bern_mean_tables(n, p1=0.3):
    return exact.joint_tables([1 - p1, p1], n, lambda c: c[:, 1])


def test_count_vectors_complete_and_unique():
    for n, K in ((0 + 1, 1), (3, 3), (5, 4), (7, 2)):
        c = exact.count_vectors(n, K)
        assert c.shape == (math.comb(n + K - 1, K - 1), K)
        assert np.all(c.sum(1) == n) and np.all(c >= 0)
        assert len({tuple(r) for r in c}) == c.shape[0]


def test_count_vectors_refuses_huge_enumeration():
    with pytest.raises(ValueError, match="max_states"):
        exact.count_vectors(50, 10)


def test_multinomial_pmf_sums_to_one():
    p = [0.2, 0.3, 0.5]
    assert math.isclose(np.exp(exact.log_multinomial_pmf(exact.count_vectors(9, 3), p)).sum(), 1.0, rel_tol=1e-13)


# Bernoulli(0.3), n = 2, θ̂ = mean: the 3 × 2 joint tables by hand give Δ = 0.294
@pytest.mark.parametrize("nu,best,printed,sec", [(0.5, 0.647, 0.647, 0.706), (0.2, 0.842, 0.800, 0.790),
                                                  (0.7, 0.7081, 0.763, 0.973), (0.9, 0.900, 0.921, 1.000)])
def test_spec_table_eq23(nu, best, printed, sec):
    q, p = bern_mean_tables(2)
    assert math.isclose(exact.tv_discrete(q, p), 0.294, abs_tol=1e-12)
    acc = exact.brute_force_accuracies(q, p, nu)
    assert math.isclose(acc.max(), best, abs_tol=1e-12)
    assert math.isclose(exact.bayes_accuracy(q, p, nu), best, abs_tol=1e-12)
    assert math.isclose(exact.printed_eq23_accuracy(q, p, nu), printed, abs_tol=1e-12)
    assert math.isclose(exact.sec_from_acc(acc.max(), nu), sec, abs_tol=1e-12)
    assert math.isclose(acc.min(), 1 - acc.max(), abs_tol=1e-12)


def test_bayes_attack_table_attains_best():
    q, p = bern_mean_tables(3)
    for nu in (0.1, 0.5, 0.8):
        a = exact.bayes_attack_table(q, p, nu)
        assert math.isclose(exact.attack_accuracy(a, q, p, nu), exact.brute_force_accuracies(q, p, nu).max(),
                            abs_tol=1e-12)


def test_theorem_3_1_bounds_and_equality_at_half():
    q, p = bern_mean_tables(3)
    d = exact.tv_discrete(q, p)
    for nu in (0.1, 0.3, 0.5, 0.7):
        acc = exact.brute_force_accuracies(q, p, nu)
        lo, hi = exact.accuracy_bounds(d, nu)
        assert lo - 1e-12 <= acc.min() and acc.max() <= hi + 1e-12
        assert exact.sec_from_acc(acc.max(), nu) >= 1 - d - 1e-12
    assert math.isclose(exact.sec_from_acc(exact.bayes_accuracy(q, p, 0.5), 0.5), 1 - d, abs_tol=1e-12)
    assert math.isclose(exact.mis_from_acc(exact.bayes_accuracy(q, p, 0.5)), 1 - d, abs_tol=1e-12)


def test_max_acc_discrete_matches_enumeration():
    p, n = (0.2, 0.3, 0.5), 6
    q, pn = exact.joint_tables(p, n)
    for nu in (0.3, 0.5, 0.6):
        assert math.isclose(exact.max_acc_discrete(p, n, nu), exact.bayes_accuracy(q, pn, nu), abs_tol=1e-12)


def test_lemma_c2_matches_direct_tv_and_spec_value():
    rng = np.random.default_rng(3)
    p, n = (0.2, 0.3, 0.5), 8
    S = exact.n_count_vectors(n, 3)
    for L in (2, 3, 5):
        lab = rng.integers(0, L, S)
        F = lambda c, lab=lab: lab  # noqa: E731
        assert math.isclose(exact.delta_discrete_algorithm(p, n, F), exact.delta_finite_theta(p, n, F), abs_tol=1e-13)


def test_bad_input():
    with pytest.raises(ValueError, match="nu"):
        exact.bayes_accuracy([0.5], [0.5], 1.0)
    with pytest.raises(ValueError, match="sum to 1"):
        exact.max_acc_discrete([0.5, 0.6], 3, 0.5)
    with pytest.raises(ValueError, match="n must be"):
        exact.joint_tables([0.5, 0.5], 0)
    with pytest.raises(ValueError, match="entries"):
        exact.joint_tables([-0.5, 1.5], 2)
    with pytest.raises(TypeError):
        exact.max_acc_discrete([0.5, 0.5], 2.5, 0.5)
    with pytest.raises(ValueError, match="max_cells"):
        exact.brute_force_accuracies(np.ones(20) / 20, np.ones(20) / 20, 0.5)
