"""qlib.attacks.dp_bound: the (ε, δ) hypothesis-testing region (exact identities, the Gaussian mechanism's
exact trade-off curve touching it), and the audit's lower bound on ε (its closed form for a perfectly
separating attack, its coverage and power on randomized response — an exact (ε, 0) mechanism — and on a
Gaussian pair of known (ε, δ))."""

import math

import numpy as np
import pytest
from scipy import optimize, stats

from qlib.attacks import dp_bound

ALPHA = np.linspace(0.0, 1.0, 2001)


# ---- the region ---------------------------------------------------------------------------------
@pytest.mark.parametrize("eps,delta", [(0.5, 0.0), (1.0, 1e-7), (3.0, 0.05)])
def test_bound_identities(eps, delta):
    b = dp_bound.tpr_bound(ALPHA, eps, delta)
    assert b[0] == pytest.approx(delta, abs=1e-15)                         # α = 0: δ
    assert np.all(b[ALPHA >= 1 - delta] == 1.0)                            # 1 from α = 1 − δ on
    assert np.all(np.diff(b) >= -1e-15) and np.all(b >= ALPHA - 1e-15)     # non-decreasing, above chance
    star = (1 - delta) / (1 + math.exp(eps))                              # the branches meet at α*
    assert math.exp(eps) * star + delta == pytest.approx(1 - math.exp(-eps) * (1 - delta - star), abs=1e-14)
    # symmetric about the anti-diagonal: (α, f(α)) reflects to (1 − f(α), 1 − α), again on the curve
    a = ALPHA[ALPHA <= 1 - delta]
    np.testing.assert_allclose(dp_bound.tpr_bound(1 - dp_bound.tpr_bound(a, eps, delta), eps, delta), 1 - a,
                               atol=1e-12)


def test_bound_at_eps_zero_is_chance_plus_delta():
    np.testing.assert_allclose(dp_bound.tpr_bound(ALPHA, 0.0, 0.0), ALPHA, atol=1e-15)
    np.testing.assert_allclose(dp_bound.tpr_bound(ALPHA, 0.0, 0.1), np.minimum(1, ALPHA + 0.1), atol=1e-15)


def _gauss_delta(eps, mu):
    """The exact δ(ε) of the Gaussian mechanism of sensitivity/σ = μ (Balle & Wang 2018, Theorem 8)."""
    return stats.norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2)


@pytest.mark.parametrize("mu,eps", [(0.5, 0.5), (1.0, 1.0), (2.0, 3.0)])
def test_gaussian_tradeoff_lies_in_its_exact_region_and_touches_it(mu, eps):
    # the optimal test between N(μ, 1) and N(0, 1): TPR = Φ(μ − Φ^{-1}(1 − α)); an independent reference
    a = np.logspace(-9, 0, 20001)[:-1]
    tpr = stats.norm.cdf(mu - stats.norm.ppf(1 - a))
    gap = dp_bound.tpr_bound(a, eps, _gauss_delta(eps, mu)) - tpr
    assert gap.min() >= -1e-9          # inside the region of its exact (ε, δ(ε))
    assert gap.min() <= 1e-6           # and tangent to it: (ε, δ(ε)) is tight
    # a smaller δ than the exact one is violated
    assert (dp_bound.tpr_bound(a, eps, 0.5 * _gauss_delta(eps, mu)) - tpr).min() < 0


def test_implied_epsilon_inverts_the_bound():
    for eps, delta in ((0.5, 0.0), (2.0, 1e-5)):
        a = np.linspace(1e-4, 0.6, 50)
        b = dp_bound.tpr_bound(a, eps, delta)
        keep = b < 1
        np.testing.assert_allclose(dp_bound.implied_epsilon(a[keep], b[keep], delta), eps, rtol=1e-10)
    e = 1.3  # randomized response: the point (1/(1 + e^ε), e^ε/(1 + e^ε)) implies exactly ε
    assert dp_bound.implied_epsilon(1 / (1 + math.exp(e)), math.exp(e) / (1 + math.exp(e))) == pytest.approx(e)
    assert dp_bound.implied_epsilon(0.3, 0.2) == 0.0                       # below chance: nothing proved
    assert dp_bound.implied_epsilon(0.0, 0.5) == np.inf                    # no false positive: unbounded


# ---- the audit ----------------------------------------------------------------------------------
def _separated(n):
    return np.r_[np.arange(n) + 1000.0, np.arange(n, dtype=float)], np.r_[np.ones(n, bool), np.zeros(n, bool)]


@pytest.mark.parametrize("correction", ["bonferroni", "none"])
@pytest.mark.parametrize("n,delta", [(50, 0.0), (1000, 0.0), (1000, 1e-3)])
def test_perfectly_separating_attack_has_the_closed_form(n, delta, correction):
    s, m = _separated(n)
    a = dp_bound.epsilon_lower_bound(s, m, delta=delta, level=0.95, correction=correction)
    K = 2 * n                                        # distinct scores, one threshold each
    tail = 0.05 / 2 / (K if correction == "bonferroni" else 1)
    lo = tail ** (1 / n)                             # Clopper–Pearson: TPR_lo of n/n, 1 − FPR_hi of 0/n
    assert a.eps_lo == pytest.approx(math.log((lo - delta) / (1 - lo)), rel=1e-9)
    assert (a.tp, a.fp, a.tests, a.eps_hat) == (n, 0, K, math.inf)
    assert a.tpr_lo == pytest.approx(lo, rel=1e-9) and a.fpr_hi == pytest.approx(1 - lo, rel=1e-9)


def _rr(eps, n, rng):
    """Randomized response on one bit: members report 1 w.p. e^ε/(1 + e^ε), non-members w.p. 1/(1 + e^ε)."""
    p = math.exp(eps) / (1 + math.exp(eps))
    return np.r_[rng.random(n) < p, rng.random(n) < 1 - p].astype(float), np.r_[np.ones(n, bool), np.zeros(n, bool)]


@pytest.mark.parametrize("correction", ["bonferroni", "none"])
def test_randomized_response_coverage_and_power(correction):
    eps, n, reps = 1.0, 2000, 300
    rng = np.random.default_rng(0)
    lows = np.array([dp_bound.epsilon_lower_bound(*_rr(eps, n, rng), correction=correction).eps_lo
                     for _ in range(reps)])
    # a valid 95 % bound exceeds the true ε in at most 5 % of the runs: ≤ the 99.9 % quantile of Bin(300, 0.05)
    assert (lows > eps).sum() <= stats.binom.ppf(0.999, reps, 0.05)
    # power: the median bound is the bound at the expected counts (ε_lo is monotone in each count)
    p = math.exp(eps) / (1 + math.exp(eps))
    k1, k0 = round(p * n), round((1 - p) * n)
    s = np.r_[np.ones(k1), np.zeros(n - k1), np.ones(k0), np.zeros(n - k0)]
    m = np.r_[np.ones(n, bool), np.zeros(n, bool)]
    expected = dp_bound.epsilon_lower_bound(s, m, correction=correction).eps_lo
    assert 0.8 < expected < eps
    assert np.median(lows) == pytest.approx(expected, abs=0.02)


def test_gaussian_pair_coverage():
    # scores N(μ, 1) with the canary, N(0, 1) without: the Gaussian mechanism, (ε, δ(ε)) exactly
    mu, delta, n, reps = 1.0, 1e-3, 2000, 60
    eps = optimize.brentq(lambda e: _gauss_delta(e, mu) - delta, 1e-6, 20)
    rng = np.random.default_rng(1)
    m = np.r_[np.ones(n, bool), np.zeros(n, bool)]
    lows = np.array([dp_bound.epsilon_lower_bound(np.r_[rng.normal(mu, 1, n), rng.normal(0, 1, n)], m,
                                                  delta=delta).eps_lo for _ in range(reps)])
    assert (lows > eps).sum() <= stats.binom.ppf(0.999, reps, 0.05)
    assert np.all(lows > 0)  # an attack this strong always proves some privacy loss at n = 2000


def test_region_excess_is_positive_exactly_when_eps_lo_exceeds_eps():
    rng = np.random.default_rng(2)
    s, m = _rr(2.0, 3000, rng)
    for delta in (0.0, 1e-3):
        lo = dp_bound.epsilon_lower_bound(s, m, delta=delta).eps_lo
        assert lo > 0
        assert dp_bound.region_excess(s, m, lo - 1e-6, delta=delta) > 0
        assert dp_bound.region_excess(s, m, lo + 1e-6, delta=delta) <= 0
    # an attack at chance proves nothing: ε_lo = 0 and the box lies inside the ε = 0 region
    s0 = rng.normal(size=400)
    m0 = np.arange(400) < 200
    assert dp_bound.epsilon_lower_bound(s0, m0).eps_lo == 0.0
    assert dp_bound.epsilon_lower_bound(s0, m0).form == "none"


def test_bonferroni_is_never_tighter_than_the_uncorrected_bound():
    rng = np.random.default_rng(3)
    s = np.r_[rng.normal(1.5, 1, 500), rng.normal(0, 1, 500)]
    m = np.arange(1000) < 500
    b = dp_bound.epsilon_lower_bound(s, m, correction="bonferroni")
    u = dp_bound.epsilon_lower_bound(s, m, correction="none")
    assert 0 < b.eps_lo < u.eps_lo
    assert b.interval_level == pytest.approx(1 - 0.05 / b.tests) and u.interval_level == 0.95


# ---- input checks -------------------------------------------------------------------------------
@pytest.mark.parametrize("call,name", [
    (lambda: dp_bound.tpr_bound([0.1], -1.0), "eps"),
    (lambda: dp_bound.tpr_bound([0.1], 1.0, 1.5), "delta"),
    (lambda: dp_bound.tpr_bound([1.1], 1.0), "fpr"),
    (lambda: dp_bound.tpr_bound([np.nan], 1.0), "fpr"),
    (lambda: dp_bound.implied_epsilon([0.1, 0.2], [0.1, 0.2, 0.3]), "fpr and tpr"),
    (lambda: dp_bound.implied_epsilon([0.1], [-0.1]), "tpr"),
    (lambda: dp_bound.epsilon_lower_bound([0.0, 1.0], [True, False], level=1.0), "level"),
    (lambda: dp_bound.epsilon_lower_bound([0.0, 1.0], [True, False], correction="holm"), "correction"),
    (lambda: dp_bound.epsilon_lower_bound([0.0, 1.0], [True, True]), "members"),
    (lambda: dp_bound.epsilon_lower_bound([0.0, np.inf], [True, False]), "scores"),
    (lambda: dp_bound.region_excess([0.0, 1.0], [True, False], math.nan), "eps"),
])
def test_bad_input_names_the_argument(call, name):
    with pytest.raises((ValueError, TypeError), match=name):
        call()
