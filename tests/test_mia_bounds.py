"""Theorem 5.4, C(P), Corollary 5.4.1 and Appendix C lemmas of paper 003 (reference values computed outside this code base)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import qlib.mia as mia
from qlib.mia import bounds

REF = [((0.5, 0.5), 10, 0.123046875000, 1.0), ((0.2, 0.3, 0.5), 7, 0.209107910000, 1.358258),
       ((0.2, 0.3, 0.5), 100, 0.054009955314, 1.358258), ((0.1,) * 10, 50, 0.166432140806, 3.0),
       ((0.25,) * 4, 6, 0.296630859375, 1.732051), ((0.3, 0.7), 1, 0.42, 0.916515), ((0.1, 0.9), 12, 0.069038331140, 0.6)]


@pytest.mark.parametrize("p,n,ref,C", REF)
def test_theorem_5_4_reference_values(p, n, ref, C):
    b = mia.max_delta_discrete(p, n)
    assert math.isclose(b, ref, abs_tol=1e-11)
    assert math.isclose(bounds.max_delta_discrete(p, n, "demoivre"), b, abs_tol=1e-12)
    if math.comb(n + len(p) - 1, len(p) - 1) < 100_000:
        assert math.isclose(bounds.max_delta_discrete(p, n, "enumerate"), b, abs_tol=1e-12)
    assert math.isclose(mia.C_P(p), C, abs_tol=1e-6)
    assert b <= C / (2 * math.sqrt(n)) + 1e-15


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(0.01, 1.0), min_size=2, max_size=6), st.integers(1, 300))
def test_corollary_541_upper_bound_and_methods_agree(w, n):
    p = np.asarray(w) / np.sum(w)
    b = bounds.max_delta_discrete(p, n)
    assert math.isclose(bounds.max_delta_discrete(p, n, "demoivre"), b, abs_tol=1e-12)
    assert b * math.sqrt(n) / mia.C_P(p) <= 0.5 + 1e-12
    if bounds.cor541_condition(p, n):
        assert b * math.sqrt(n) / mia.C_P(p) >= 0.366 - 1e-4 > bounds.COR541_C


def test_corollary_constants():
    assert math.isclose(bounds.COR541_C, 0.2974375, abs_tol=1e-7)
    assert math.isclose(bounds.cor541_ratio([0.5, 0.5], 1), 0.5, abs_tol=1e-15)  # attained
    assert bounds.cor541_ratio([0.01, 0.99], 2) < 0.29  # fails without the condition
    assert math.isclose(bounds.cor541_ratio([0.3, 0.7], 100_000), 0.398941, abs_tol=2e-6)


def test_lemma_c3_and_threshold():
    assert math.isclose(bounds.bernoulli_max_delta(0.5, 10), 0.0009765625, rel_tol=1e-14)
    assert math.isclose(bounds.bernoulli_max_delta(0.3, 5), 0.100842, abs_tol=1e-6)
    assert math.isclose(bounds.bernoulli_max_delta(0.05, 20), bounds.max_delta_discrete([0.05, 0.95], 20), rel_tol=1e-12)
    for n, m in ((10, 1), (10, 5), (9, 9)):
        assert math.isclose(mia.delta_discrete_algorithm([0.7, 0.3], n, lambda c, m=m: c[:, 1] >= m),
                            bounds.bernoulli_threshold_delta(0.3, n, m), abs_tol=1e-13)
    rates = [-bounds.log_bernoulli_threshold_delta(0.3, n, math.ceil(n / 2)) / n for n in (10, 51, 101, 401, 1001)]
    assert np.allclose(rates, [0.2630, 0.1454, 0.1200, 0.0972, 0.0916], atol=5e-5)
    assert math.isclose(bounds.kl_bernoulli(0.5, 0.3), 0.087177, abs_tol=1e-6)


def test_sample_size_rule():
    for p in ((0.5, 0.5), (0.1,) * 10):
        for e in (0.01, 0.1):
            n = bounds.sample_size_discrete(mia.C_P(p), e)
            assert mia.max_delta_discrete(p, n) <= e
            assert mia.C_P(p) / (2 * math.sqrt(n - 1)) > e or n == 1


def test_entropy_bounds_and_lemma_c4_c5():
    rng = np.random.default_rng(0)
    for K in (2, 3, 10):
        assert math.isclose(mia.C_P(np.full(K, 1 / K)), math.sqrt(K - 1), rel_tol=1e-14)
        for p in rng.dirichlet(np.ones(K), 200):
            c = bounds.entropy_bound_chain(p)
            assert c["H"] <= c["C"] + 1e-12 <= c["sqrt(K(1-e^-H))"] + 2e-12 <= c["sqrt(KH)"] + 3e-12
            assert c["C"] / 2 >= c["GS"] - 1e-12 and c["C"] <= c["sqrt(K-1)"] + 1e-12
            lo, hi = bounds.C_P_range(max(p.max(), 1 / K), K)
            assert lo - 1e-12 <= c["C"] <= hi + 1e-12
    # Lemma C.5 max is attained at (δ, (1−δ)/(K−1), …)
    d, K = 0.4, 5
    assert math.isclose(mia.C_P([d] + [(1 - d) / (K - 1)] * (K - 1)), bounds.C_P_range(d, K)[1], rel_tol=1e-14)
    assert math.isclose(bounds.C_P_range(0.7, 4)[0], 2 * math.sqrt(0.21), rel_tol=1e-14)


def test_lemma_c1_power_law_reference():
    ref15 = [0.27255, 0.13999, 0.06931, 0.03354]
    for n, r in zip((100, 1000, 10_000, 100_000), ref15):
        v, lo, hi = bounds.power_law_max_delta(1.5, n)
        assert abs(v - r) < 1e-5 and hi - lo < 1e-6


def test_bad_input():
    with pytest.raises(ValueError, match="sum to 1"):
        mia.max_delta_discrete([0.3, 0.3], 5)
    with pytest.raises(ValueError, match="n must be"):
        mia.max_delta_discrete([0.3, 0.7], 0)
    with pytest.raises(ValueError, match="method"):
        mia.max_delta_discrete([0.3, 0.7], 3, "magic")
    with pytest.raises(ValueError):
        mia.C_P([0.5, np.nan])
    with pytest.raises(ValueError, match="delta"):
        bounds.C_P_range(0.1, 5)
