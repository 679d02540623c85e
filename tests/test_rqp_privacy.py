"""Theorem 1 of paper 004 (RQP-SGD): per-step ε, composition, the q and σ solvers, the baselines."""

import math

import numpy as np
import pytest

from qlib import rqp_privacy as P

KW = dict(M=0.3, rho=0.45, eta=1.0, m=10)
DIAG = dict(KW, T=46, n=455)


# ---------------------------------------------------------------------------- pinned values
@pytest.mark.parametrize(
    "q,sigma,b,paper,plus",
    [
        (0.9, 1.0, 4, 1.022586, 3.101965),
        (0.95, 1.0, 4, 1.066859, 3.829066),
        (0.5, 0.5, 4, 1.618657, 1.677435),
        (0.3, 0.5, 3, 0.764768, 0.796276),
        (0.3, 0.1, 4, 1.821572, 1.821572),
        (0.99, 0.1, 4, 7.256634, 7.256634),
    ],
)
def test_eps_step_pinned(q, sigma, b, paper, plus):
    assert P.eps_step(q, sigma, b=b, c_mode="paper", **KW) == pytest.approx(paper, rel=1e-5)
    assert P.eps_step(q, sigma, b=b, c_mode="plus", **KW) == pytest.approx(plus, rel=1e-5)


def test_eps_step_matches_direct_formula():
    # the formula of the paper typed out with scipy's Φ, in a regime where nothing underflows
    from scipy.stats import norm

    q, s, b, M, rho, eta, m = 0.7, 3.0, 3, 0.3, 0.45, 1.0, 10
    L, h, C, sl = 2**b, M / (2**b - 1), M - eta * rho, eta * s / m
    A, B = (L * q - 1) / (L - 1), (1 - q) / (L - 1)
    num = A * (2 * norm.cdf(h / sl) - 1) + B
    den = A * (norm.cdf((M + h + C) / sl) - norm.cdf((M - h + C) / sl)) + B
    assert P.eps_step(q, s, b=b, M=M, rho=rho, eta=eta, m=m) == pytest.approx(math.log(num / den), rel=1e-12)


# ---------------------------------------------------------------------------- properties
@pytest.mark.parametrize("b", [2, 3, 4])
@pytest.mark.parametrize("c_mode", ["paper", "plus"])
def test_eps_step_properties(b, c_mode):
    q = np.linspace(1 / 2**b, 0.999, 60)
    for s in (0.05, 0.3, 1.0, 5.0):
        e = P.eps_step(q, s, b=b, c_mode=c_mode, **KW)
        assert e[0] == pytest.approx(0.0, abs=1e-12)
        assert np.all(e >= 0) and np.all(np.diff(e) > 0)
        assert np.all(e <= P.rr_limit(q, b) + 1e-12)
    # σ → 0: the randomized-response limit (σ_l = ησ/m = 1e-4)
    for qq in (0.3, 0.5, 0.9):
        assert P.eps_step(qq, 1e-3, b=b, c_mode=c_mode, **KW) == pytest.approx(P.rr_limit(qq, b), abs=1e-3)
    # σ → ∞: 0
    assert P.eps_step(0.9, 1e7, b=b, c_mode=c_mode, **KW) < 1e-6


def test_rr_limit_values():
    np.testing.assert_allclose(P.rr_limit([0.3, 0.5, 0.9], 4), [1.860752, 2.708050, 4.905275], atol=1e-6)
    np.testing.assert_allclose(P.rr_limit([0.3, 0.5, 0.9], 3), [1.098612, 1.945910, 4.143135], atol=1e-6)


def test_tiny_sigma_is_finite():
    e = P.eps_step(0.9, 1e-9, b=4, **KW)
    assert np.isfinite(e) and e == pytest.approx(P.rr_limit(0.9, 4), rel=1e-9)
    assert np.isfinite(P.eps_step(1.0, 0.05, b=4, **KW))


# ---------------------------------------------------------------------------- composition
def test_composition_factors():
    assert P.composition_factor(46, 10, 455) == pytest.approx(1.010989, abs=1e-6)
    assert P.composition_factor(938, 64, 60000) == pytest.approx(1.000533, abs=1e-6)
    assert P.composition_factor(445, 1, 445) == 1.0


def test_amplified_never_smaller():
    q = np.linspace(0.07, 0.99, 40)
    for s in (0.1, 0.5, 2.0):
        a = P.eps_total(q, s, b=4, composition="paper", **DIAG)
        b = P.eps_total(q, s, b=4, composition="amplified", **DIAG)
        assert np.all(b >= a - 1e-12)
        np.testing.assert_allclose(a, 46 * 10 / 455 * P.eps_step(q, s, b=4, **KW), rtol=1e-12)


# ---------------------------------------------------------------------------- solver
FIG2 = {  # sigma: (a) b=4 eps=.5, (b) b=3 eps=.5, (c) b=4 eps=1, (d) b=3 eps=1
    1e-9: (0.0985, 0.1898, 0.1520, 0.2775),
    0.1: (0.1002, 0.1898, 0.1559, 0.2775),
    0.2: (0.1144, 0.1918, 0.1880, 0.2817),
    0.3: (0.1326, 0.2005, 0.2273, 0.2997),
    0.4: (0.1513, 0.2136, 0.2657, 0.3264),
    0.5: (0.1716, 0.2306, 0.3070, 0.3628),
    0.6: (0.1963, 0.2533, 0.3604, 0.4145),
    0.7: (0.2288, 0.2836, 0.4349, 0.4876),
    0.8: (0.2713, 0.3233, 0.5381, 0.5895),
    0.9: (0.3259, 0.3744, 0.6779, 0.7288),
    1.0: (0.3947, 0.4388, 0.8630, 0.9165),
    1.2: (0.5813, 0.6157, 1.0, 1.0),
    1.5: (0.9939, 1.0, 1.0, 1.0),
}
PANELS = [(4, 0.5), (3, 0.5), (4, 1.0), (3, 1.0)]


@pytest.mark.parametrize("k", range(4))
def test_fig2_q_table(k):
    b, eps = PANELS[k]
    sig = np.array(sorted(FIG2))
    q = P.solve_q(eps, sig, b=b, **DIAG)
    np.testing.assert_allclose(q, [FIG2[s][k] for s in sorted(FIG2)], atol=1e-4 + 1e-12)
    assert np.all(np.diff(q) >= 0)
    inner = q < 1
    tot = P.eps_total(q[inner], sig[inner], b=b, **DIAG)
    np.testing.assert_allclose(tot, eps, atol=1e-8)


@pytest.mark.parametrize("k,s03,s1", [(0, 0.8555, 1.5038), (1, 0.7445, 1.4875), (2, 0.4844, 1.0602), (3, 0.3014, 1.0367)])
def test_fig2_landmarks(k, s03, s1):
    b, eps = PANELS[k]
    # σ at which q = 0.3 is the inverse solver's answer
    assert P.solve_sigma(eps, 0.3, b=b, **DIAG) == pytest.approx(s03, abs=1e-4)
    # smallest σ with q = 1: the deterministic projection meets ε exactly there
    assert P.solve_sigma(eps, 1.0, b=b, **DIAG) == pytest.approx(s1, abs=1e-4)
    assert P.solve_q(eps, s1 + 1e-3, b=b, **DIAG) == 1.0
    assert P.solve_q(eps, s1 - 1e-3, b=b, **DIAG) < 1.0


def test_q_first_below_for_more_bits():
    sig = np.linspace(0.05, 1.6, 32)
    for eps in (0.5, 1.0):
        q4 = P.solve_q(eps, sig, b=4, **DIAG)
        q3 = P.solve_q(eps, sig, b=3, **DIAG)
        both = (q4 < 1) & (q3 < 1)
        assert both.sum() > 10 and np.all(q4[both] < q3[both])


def test_plus_mode_rises_slowly():
    assert P.solve_q(1.0, 1.0, b=4, c_mode="plus", **DIAG) == pytest.approx(0.4372, abs=1e-4)
    assert P.solve_q(1.0, 5.0, b=4, c_mode="plus", **DIAG) == pytest.approx(0.8357, abs=1e-4)
    assert P.solve_sigma(1.0, 1.0, b=4, c_mode="plus", **DIAG) == pytest.approx(7.4644, abs=1e-4)


def test_q0_closed_form():
    for b, eps in PANELS:
        e1 = eps / P.composition_factor(46, 10, 455)
        assert P.solve_q(eps, 1e-9, b=b, **DIAG) == pytest.approx(math.exp(e1) / (math.exp(e1) + 2**b - 1), abs=1e-9)


def test_solve_sigma_round_trip_and_no_noise_case():
    s = P.solve_sigma(0.7, 0.6, b=4, **DIAG)
    assert P.eps_total(0.6, s, b=4, **DIAG) == pytest.approx(0.7, abs=1e-9)
    # the randomized-response limit of q = 0.2 (b = 4) is 1.322 > 1.01: no noise needed
    assert P.solve_sigma(1.5, 0.2, b=4, **DIAG) == 0.0


def test_infeasible_pair_explains():
    with pytest.raises(ValueError, match="infeasible.*needs q"):
        # ε = 0.05 at σ = 0.1 needs q ≈ 0.0655, below Algorithm 1's lower end 1/(2^b − 1) = 0.0667
        P.solve_q(0.05, 0.1, b=4, q_floor=1 / 15, **DIAG)


# ---------------------------------------------------------------------------- baselines
def test_gaussian_mechanism_constant():
    assert P.gaussian_sigma(1.0, 1e-7) == pytest.approx(5.716859, abs=1e-6)
    assert P.gaussian_sigma(1.0, 1e-7, 0.45) == pytest.approx(2.572587, abs=1e-6)


@pytest.mark.parametrize(
    "rate,T,z05,z1",
    [(10 / 455, 46, 2.0713, 1.4669), (64 / 60000, 938, 1.3825, 1.0182), (1 / 445, 445, 1.4691, 1.0834)],
)
def test_accountant_reference_values(rate, T, z05, z1):
    for eps, z in ((0.5, z05), (1.0, z1)):
        zz = P.dpsgd_noise_multiplier(eps, 1e-7, rate, T)
        assert zz == pytest.approx(z, rel=2e-3)
        assert P.dpsgd_epsilon(zz, 1e-7, rate, T) == pytest.approx(eps, abs=1e-3)


def test_accountant_without_subsampling_matches_rdp_self_check():
    # m/n = 1: Gaussian RDP composed T times, min over α of T α/(2z²) + log(1/δ)/(α − 1) (same order grid,
    # dp-accounting's improved conversion can only be tighter)
    from dp_accounting.rdp.rdp_privacy_accountant import DEFAULT_RDP_ORDERS

    z, T, delta = 5.0, 10, 1e-5
    eps = P.dpsgd_epsilon(z, delta, 1.0, T)
    a = np.asarray(DEFAULT_RDP_ORDERS, float)
    a = a[a > 1]
    classic = np.min(T * a / (2 * z**2) + np.log(1 / delta) / (a - 1))
    assert 0 < eps <= classic + 1e-9
    assert eps >= 0.8 * classic


# ---------------------------------------------------------------------------- bad input
def test_bad_input():
    with pytest.raises(ValueError, match="eps"):
        P.solve_q(0.0, 1.0, b=4, **DIAG)
    with pytest.raises(ValueError, match="eps"):
        P.solve_q(-1.0, 1.0, b=4, **DIAG)
    with pytest.raises(ValueError, match="sigma"):
        P.eps_step(0.9, 0.0, b=4, **KW)
    with pytest.raises(ValueError, match="sigma"):
        P.solve_q(1.0, -0.5, b=4, **DIAG)
    with pytest.raises(ValueError, match="q must be in"):
        P.eps_step(0.05, 1.0, b=4, **KW)
    with pytest.raises(ValueError, match="q must be in"):
        P.eps_step(1.01, 1.0, b=4, **KW)
    with pytest.raises(ValueError, match="b"):
        P.eps_step(0.9, 1.0, b=0, **KW)
    with pytest.raises(ValueError, match="M"):
        P.eps_step(0.9, 1.0, b=4, M=0.0, rho=0.45, eta=1.0, m=10)
    with pytest.raises(ValueError, match="rho"):
        P.eps_step(0.9, 1.0, b=4, M=0.3, rho=0.0, eta=1.0, m=10)
    with pytest.raises(ValueError, match="c_mode"):
        P.eps_step(0.9, 1.0, b=4, c_mode="minus", **KW)
    with pytest.raises(ValueError, match="composition"):
        P.eps_total(0.9, 1.0, b=4, composition="advanced", **DIAG)
    with pytest.raises(ValueError, match="delta"):
        P.gaussian_sigma(1.0, 1.5)
    with pytest.raises(ValueError, match="sample_rate"):
        P.dpsgd_noise_multiplier(1.0, 1e-7, 1.5, 10)
    with pytest.raises(ValueError, match="n"):
        P.eps_total(0.9, 1.0, b=4, M=0.3, rho=0.45, eta=1.0, m=10, T=5, n=5)


# ---------------------------------------------------------------------------- regression: delta in (0, 1)
@pytest.mark.parametrize("delta", [1.0, 1.5, 0.0, -1e-7, math.nan, math.inf])
def test_dpsgd_accountant_rejects_delta_outside_open_unit_interval(delta):
    """dpsgd_epsilon(delta >= 1) used to return ε = 0 and dpsgd_noise_multiplier(delta=1) a number."""
    with pytest.raises(ValueError, match=r"\bdelta\b"):
        P.dpsgd_epsilon(1.0, delta, 0.02, 10)
    with pytest.raises(ValueError, match=r"\bdelta\b"):
        P.dpsgd_noise_multiplier(1.0, delta, 0.02, 10)


def test_log_space_helpers_reject_nan_and_bad_ranges():
    with pytest.raises(ValueError, match=r"\blo\b"):
        P.log_phi_diff([math.nan, 0.0], [1.0, 1.0])
    with pytest.raises(ValueError, match=r"\blo must be <= hi"):
        P.log_phi_diff([2.0], [1.0])
    assert np.isfinite(P.log_phi_diff([-math.inf, 0.5], [0.0, math.inf])).all()  # semi-infinite cells are fine
    with pytest.raises(ValueError, match=r"\bA\b"):
        P.log_mix([-1.0], -0.5, 0.1)
    with pytest.raises(ValueError, match=r"\blog_p\b"):
        P.log_mix([math.nan], 0.5, 0.1)
    with pytest.raises(ValueError, match=r"\bq_floor\b"):
        P.solve_q(1.0, 0.8, b=4, q_floor=-1.0, **DIAG)
    with pytest.raises(ValueError, match=r"\bsigma_max\b"):
        P.solve_sigma(1.0, 0.9, b=4, sigma_max=math.nan, **DIAG)
