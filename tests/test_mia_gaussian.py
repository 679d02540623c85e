"""Gaussian empirical mean: Theorem 5.1 made exact, Prop. G.1, Remark 5.1 (paper 003, Theorem 5.1, App. G)."""

import math

import numpy as np
import pytest

from qlib.mia import gaussian as g

REF = {1: [0.30599382, 0.16039389, 0.10709178, 0.03206911, 0.01007478],
       2: [0.45292364, 0.24560108, 0.16571455, 0.05024345, 0.01581922],
       10: [0.85231520, 0.55292007, 0.39069366, 0.12311351, 0.03891299]}


@pytest.mark.parametrize("d", sorted(REF))
def test_reference_table(d):
    for n, r in zip((2, 5, 10, 100, 1000), REF[d]):
        assert abs(g.gaussian_mean_delta(n, d) - r) < 1e-8


def test_closed_and_mixture_forms_agree():
    for n in (2, 5, 100):
        assert abs(g.gaussian_mean_delta(n, 2) - g.gaussian_mean_delta_d2(n)) < 1e-8
    assert abs(g.gaussian_mean_delta_mixture(10, 1) - g.gaussian_mean_delta(10, 1)) < 1e-7


def test_m1_and_bound_and_limit():
    assert np.allclose([g.m1(d) for d in (1, 2, 3, 5, 10)], [0.797885, 1.253314, 1.595769, 2.127692, 3.084328], atol=1e-6)
    assert math.isclose(g.gaussian_mean_limit(2), 0.5, rel_tol=1e-14)
    for d in (1, 3):
        for n in (2, 10, 1000):
            assert g.gaussian_mean_delta(n, d) <= g.gaussian_mean_bound(n, d)
    assert abs(math.sqrt(1e5) * g.gaussian_mean_delta(100_000, 1) / g.gaussian_mean_limit(1) - 1) < 1e-4


def test_prop_g1_and_tv_sanity():
    assert g.tv_gauss_shift_scale(0.0, 0.999999, 1) < 1e-5
    for b in (0.0, 1.0, 4.0):
        for n in (2, 50):
            assert g.prop_g1_tv(b, n, 3) <= g.prop_g1_bound(b, n, 3)


def test_remark_51():
    for c in (1e-3, 0.5, 20.0):
        for d in (1, 100):
            for e in (0.01, 0.5):
                n = g.remark51_n(c, d, e)
                assert g.remark51_lhs(c, d, n) <= e
                assert g.remark51_n_exact(c, d, e) <= n
                assert math.isclose(g.remark51_lhs(c, d, g.remark51_n_exact(c, d, e)), e, rel_tol=1e-9)


def test_bad_input():
    with pytest.raises(ValueError):
        g.gaussian_mean_delta(0, 1)
    with pytest.raises(ValueError, match="s2"):
        g.tv_gauss_shift_scale(0.1, 1.5, 2)
    with pytest.raises(ValueError, match="eps"):
        g.remark51_n(1.0, 1, 1.5)
    with pytest.raises(ValueError, match="n must be an integer >= 2"):
        g.prop_g1_tv(1.0, 1, 1)
