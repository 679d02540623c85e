"""Randomized quantization projection (Algorithm 1) and the utility bound (Theorem 2) of paper 004."""

import numpy as np
import pytest
import torch
from scipy import stats

from qlib import rqp
from qlib import rqp_privacy as P

M = 0.3


# ---------------------------------------------------------------------------- quantization set
@pytest.mark.parametrize("b", [1, 2, 3, 4, 8])
def test_levels_uniform_symmetric(b):
    lv = rqp.levels(b, M)
    assert lv.shape == (2**b,)
    assert lv[0].item() == pytest.approx(-M, abs=1e-15) and lv[-1].item() == pytest.approx(M, abs=1e-15)
    np.testing.assert_allclose(torch.diff(lv).numpy(), 2 * M / (2**b - 1), rtol=1e-12)
    assert abs(lv.sum().item()) < 1e-12
    assert torch.all(lv != 0)


def test_levels_b4_example():
    np.testing.assert_allclose(rqp.levels(4, 0.3)[6:10].numpy(), [-0.06, -0.02, 0.02, 0.06], atol=1e-15)


# ---------------------------------------------------------------------------- deterministic projection
@pytest.mark.parametrize("b", [1, 3, 4])
def test_proj_det(b):
    lv = rqp.levels(b, M)
    assert torch.equal(rqp.proj_det(lv, b, M), lv)  # idempotent on levels
    x = torch.linspace(-M, M, 20001, dtype=torch.float64)
    h = M / (2**b - 1)
    assert (rqp.proj_det(x, b, M) - x).abs().max().item() <= h + 1e-12
    out = rqp.proj_det(torch.tensor([5 * M, -5 * M], dtype=torch.float64), b, M)
    np.testing.assert_allclose(out.numpy(), [M, -M], atol=1e-15)
    X = torch.rand(3, 4, 5, dtype=torch.float64) - 0.5  # vectorised per coordinate
    P = rqp.proj_det(X, b, M)
    assert P.shape == X.shape
    assert torch.equal(P[1, 2], rqp.proj_det(X[1, 2], b, M))
    # nearest level by brute force
    brute = lv[(X[..., None].clamp(-M, M) - lv).abs().argmin(-1)]
    assert torch.allclose(P, brute)


# ---------------------------------------------------------------------------- randomized projection
@pytest.mark.parametrize("b,q", [(3, 0.3), (3, 0.9), (4, 0.3), (4, 0.9)])
def test_randomized_projection_pmf(b, q):
    n = 200_000
    g = torch.Generator().manual_seed(1234)
    x = torch.full((n,), 0.123, dtype=torch.float64)
    out = rqp.randomized_projection(x, b, M, q, generator=g)
    lv = rqp.levels(b, M)
    i_star = rqp.nearest_index(x[:1], b, M).item()
    idx = torch.searchsorted(lv, out).numpy()
    assert np.allclose(lv.numpy()[idx], out.numpy())
    counts = np.bincount(idx, minlength=2**b)
    p_star = counts[i_star] / n
    assert abs(p_star - q) <= 5 * np.sqrt(q * (1 - q) / n)
    expected = np.full(2**b, (1 - q) / (2**b - 1))
    expected[i_star] = q
    assert expected.sum() == pytest.approx(1.0, abs=1e-12)
    assert stats.chisquare(counts, n * expected).pvalue > 1e-4


@pytest.mark.parametrize("b,q", [(3, 0.3), (4, 0.9), (4, 1 / 16)])
def test_mean_is_shrunk_not_unbiased(b, q):
    x = torch.tensor([0.21], dtype=torch.float64)
    qstar = rqp.proj_det(x, b, M).item()
    lv = rqp.levels(b, M).numpy()
    i_star = rqp.nearest_index(x, b, M).item()
    pmf = np.full(2**b, (1 - q) / (2**b - 1))
    pmf[i_star] = q
    exact_mean = float(pmf @ lv)
    A = (2**b * q - 1) / (2**b - 1)
    assert exact_mean == pytest.approx(A * qstar, abs=1e-12)
    assert rqp.mean_factor(q, b) == pytest.approx(A, abs=1e-15)
    n = 200_000
    out = rqp.randomized_projection(x.expand(n).clone(), b, M, q, generator=torch.Generator().manual_seed(7))
    se = out.std().item() / np.sqrt(n)
    assert abs(out.mean().item() - A * qstar) <= 5 * se
    if q < 1:
        assert abs(exact_mean - x.item()) > 0.01  # genuinely biased


def test_q_min_output_independent_of_input():
    b = 3
    g1, g2 = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    n = 100_000
    a = rqp.randomized_projection(torch.full((n,), -0.29, dtype=torch.float64), b, M, 1 / 8, generator=g1)
    c = rqp.randomized_projection(torch.full((n,), 0.29, dtype=torch.float64), b, M, 1 / 8, generator=g2)
    ca = np.unique(a.numpy(), return_counts=True)[1]
    cc = np.unique(c.numpy(), return_counts=True)[1]
    assert stats.chisquare(ca).pvalue > 1e-4 and stats.chisquare(cc).pvalue > 1e-4


def test_q_one_is_deterministic_projection():
    x = torch.randn(1000, dtype=torch.float64) * 0.4
    for seed in (0, 1, 2):
        out = rqp.randomized_projection(x, 4, M, 1.0, generator=torch.Generator().manual_seed(seed))
        assert torch.equal(out, rqp.proj_det(x, 4, M))


def test_same_seed_same_numbers_and_per_run_q():
    x = torch.randn(5, 100, dtype=torch.float64)
    q = torch.tensor([[1.0], [0.9], [0.5], [0.3], [1.0]], dtype=torch.float64)
    a = rqp.randomized_projection(x, 4, M, q, generator=torch.Generator().manual_seed(3))
    b = rqp.randomized_projection(x, 4, M, q, generator=torch.Generator().manual_seed(3))
    assert torch.equal(a, b)
    det = rqp.proj_det(x, 4, M)
    assert torch.equal(a[0], det[0]) and torch.equal(a[4], det[4])
    assert not torch.equal(a[3], det[3])


MSE_CASES = [(b, q) for b in (1, 2, 3, 4, 8) for q in ("min", 0.3, 0.5, 0.9, 1.0) if q == "min" or q >= 1 / 2**b]


@pytest.mark.parametrize("b,q_kind", MSE_CASES)
def test_exact_mse_below_EQ_over_d(b, q_kind):
    q = 1 / 2**b if q_kind == "min" else q_kind
    x = np.linspace(-M, M, 20001)
    mse = rqp.exact_mse(x, b, M, q)
    assert mse.max() <= rqp.quantization_error(q, b, M, 1) + 1e-12
    if q == 1.0:
        h = M / (2**b - 1)
        edge = -M + h + 1e-15  # just past a cell edge: distance h to the nearest level
        assert rqp.exact_mse(np.array([-M + h]), b, M, 1.0)[0] == pytest.approx(h**2, abs=1e-12)
        assert rqp.exact_mse(np.array([edge]), b, M, 1.0)[0] == pytest.approx(h**2, abs=1e-12)


def test_exact_mse_fails_beyond_M():
    # the proof applies the bound to the unclipped v_{t+1}: false for |x| > M (erratum)
    assert rqp.exact_mse(np.array([3.0]), 4, M, 1.0)[0] > rqp.quantization_error(1.0, 4, M, 1)


def test_exact_mse_matches_monte_carlo():
    x = torch.full((200_000,), 0.17, dtype=torch.float64)
    out = rqp.randomized_projection(x, 3, M, 0.6, generator=torch.Generator().manual_seed(11))
    err = (out - x) ** 2
    assert abs(err.mean().item() - rqp.exact_mse(np.array([0.17]), 3, M, 0.6)[0]) <= 5 * err.std().item() / np.sqrt(len(x))


# ---------------------------------------------------------------------------- pmf of one step
def test_pmf_exact_sums_to_one_paper_does_not():
    for mu in (-0.5, -0.3, 0.0, 0.29, 0.7):
        p = rqp.pmf(mu, 0.05, 4, M, 0.9, edges="exact")
        assert p.sum() == pytest.approx(1.0, abs=1e-12)
        pp = rqp.pmf(mu, 0.05, 4, M, 0.9, edges="paper")
        assert pp.sum() < 1.0
    assert rqp.pmf(0.3, 0.05, 4, M, 0.9, edges="paper").sum() < 0.75  # noticeable near ±M
    # far outside: only the uniform part B per level survives, 2^b·(1 − q)/(2^b − 1)
    assert rqp.pmf(5.0, 0.05, 4, M, 0.9, edges="paper").sum() == pytest.approx(16 * 0.1 / 15, abs=1e-12)


def test_pmf_matches_simulation():
    mu, sl, b, q = 0.1, 0.08, 3, 0.7
    g = torch.Generator().manual_seed(0)
    v = mu + sl * torch.randn(200_000, generator=g, dtype=torch.float64)
    out = rqp.randomized_projection(v, b, M, q, generator=g)
    counts = np.bincount(torch.searchsorted(rqp.levels(b, M), out).numpy(), minlength=2**b)
    assert stats.chisquare(counts, len(v) * rqp.pmf(mu, sl, b, M, q)).pvalue > 1e-4


# ---------------------------------------------------------------------------- Theorem 2
def test_kappa():
    assert rqp.kappa(1) == pytest.approx(4.0, abs=1e-12)
    assert rqp.kappa(2) == pytest.approx(56 / 27, abs=1e-12)
    assert rqp.kappa(3) == pytest.approx(240 / 147, abs=1e-12)
    assert rqp.kappa(4) == pytest.approx(992 / 675, abs=1e-12)
    assert rqp.kappa(3) == pytest.approx(1.632653, abs=1e-6)
    assert rqp.kappa(4) == pytest.approx(1.469630, abs=1e-6)
    assert rqp.kappa(30) == pytest.approx(4 / 3, rel=1e-8)


def test_quantization_error_pinned():
    assert rqp.quantization_error(0.95, 4, 0.3, 30) == pytest.approx(0.2098, abs=1e-9)
    assert rqp.quantization_error(0.90, 4, 0.3, 30) == pytest.approx(0.4076, abs=1e-9)
    assert rqp.quantization_error(1.0, 4, 0.3, 30) == pytest.approx(0.0120, abs=1e-9)


@pytest.mark.parametrize("b", [1, 3, 4, 6])
def test_quantization_error_equals_paper_sum_and_decreases(b):
    q = np.linspace(1 / 2**b, 1, 50)
    L, d = 2**b, 7
    h = M / (L - 1)
    paper_sum = d * h**2 * q + d * sum((2 * M * i / (L - 1)) ** 2 for i in range(1, L)) * (1 - q) / (L - 1)
    eq = rqp.quantization_error(q, b, M, d)
    np.testing.assert_allclose(eq, paper_sum, rtol=1e-12)
    assert np.all(np.diff(eq) < 0)
    assert rqp.quantization_error(1.0, b, M, d) == pytest.approx(d * h**2, rel=1e-12)


def test_utility_bound_terms_and_monotonicity():
    kw = dict(b=4, M=M, rho=0.45, eta=1.0, d=30)
    u = rqp.utility_bound(0.95, 0.10335, T=445, **kw)
    assert u == pytest.approx(M**2 / 890 + 0.2098 + 0.45**2 / 2 + 0.10335**2 * 30, rel=1e-12)
    Ts = [10, 100, 1000]
    assert np.all(np.diff([rqp.utility_bound(0.9, 0.2, T=t, **kw) for t in Ts]) < 0)
    assert np.all(np.diff(rqp.utility_bound(0.9, np.array([0.1, 0.2, 0.3]), T=445, **kw)) > 0)
    c = rqp.utility_bound(0.95, 0.1, T=445, variant="corrected", m=1, **kw)
    assert c == pytest.approx(4 * M**2 / 890 + 0.2098 / 2 + 0.45**2 / 2 + 0.01 * 30 / 2, rel=1e-12)


# ---------------------------------------------------------------------------- bad input
def test_bad_input():
    x = torch.zeros(3, dtype=torch.float64)
    with pytest.raises(ValueError, match="q must be in"):
        rqp.randomized_projection(x, 4, M, 0.05)
    with pytest.raises(ValueError, match="q must be in"):
        rqp.randomized_projection(x, 4, M, 1.2)
    with pytest.raises(ValueError, match="b"):
        rqp.randomized_projection(x, 0, M, 0.9)
    with pytest.raises(TypeError, match="b"):
        rqp.levels(2.5, M)
    with pytest.raises(ValueError, match="M"):
        rqp.randomized_projection(x, 4, 0.0, 0.9)
    with pytest.raises(ValueError, match="M"):
        rqp.levels(4, -1.0)
    with pytest.raises(TypeError, match="x"):
        rqp.randomized_projection([0.1], 4, M, 0.9)
    with pytest.raises(ValueError, match="q must be in"):
        rqp.quantization_error(0.01, 4, M, 30)
    with pytest.raises(ValueError, match="d"):
        rqp.quantization_error(0.9, 4, M, 0)
    with pytest.raises(ValueError, match="sigma"):
        rqp.utility_bound(0.9, -1.0, b=4, M=M, rho=0.45, eta=1.0, T=10, d=3)
    with pytest.raises(ValueError, match="edges"):
        rqp.pmf(0.0, 0.1, 4, M, 0.9, edges="open")


# ---------------------------------------------------------------------------- direct check of Theorem 1
def test_log_pmf_matches_pmf_and_is_finite():
    mu = np.array([-0.9, -0.3, 0.0, 0.17, 0.5])
    for q in (1 / 16, 0.4, 0.9, 1.0):
        np.testing.assert_allclose(np.exp(rqp.log_pmf(mu, 0.05, 4, M, q)), rqp.pmf(mu, 0.05, 4, M, q), rtol=1e-10, atol=1e-15)  # pmf itself cancels below ~1e-16
    assert np.all(np.isfinite(rqp.log_pmf(mu, 1e-3, 4, M, 1.0)))


KW1 = dict(M=0.3, rho=0.45, eta=1.0, m=10, adjacency="replace-one")
KWP = dict(M=0.3, rho=0.45, eta=1.0, m=10)


def test_coordinate_loss_limits():
    assert rqp.coordinate_privacy_loss(1 / 16, 0.5, b=4, **KW1) == pytest.approx(0.0, abs=1e-12)
    for q in (0.3, 0.9):
        # never above the randomized-response limit, and reaches it as σ → 0 (edge cells of mass → 1 vs → 0)
        assert rqp.coordinate_privacy_loss(q, 0.5, b=4, **KW1) <= P.rr_limit(q, 4) + 1e-12
        assert rqp.coordinate_privacy_loss(q, 1e-3, b=4, **KW1) == pytest.approx(P.rr_limit(q, 4), abs=1e-6)
    assert rqp.coordinate_privacy_loss(0.9, 1e4, b=4, **KW1) < 1e-3


def test_theorem1_eps_below_exact_one_coordinate_loss():
    """Erratum: at the paper's settings Theorem 1's ε_t is below the loss of one coordinate.

    Independent brute force with scipy.stats.norm: two adjacent means μ, μ' (|μ − μ'| = 2ηρ/m) in the
    feasible range whose output laws differ by more than e^{ε_t} on some level.
    """
    from scipy.stats import norm

    q, s, b = 0.9, 1.0, 4
    eps_t = P.eps_step(q, s, b=b, **KWP)
    L, h, sl, D = 16, 0.3 / 15, 1.0 / 10, 2 * 0.45 / 10
    lv = np.linspace(-0.3, 0.3, L)
    lo, hi = lv - h, lv + h
    lo[0], hi[-1] = -np.inf, np.inf

    def law(mu):
        p = norm.cdf((hi - mu) / sl) - norm.cdf((lo - mu) / sl)
        return (L * q - 1) / (L - 1) * p + (1 - q) / (L - 1)

    best = max(np.max(np.abs(np.log(law(mu)) - np.log(law(mu + D)))) for mu in np.linspace(-0.75, 0.75 - D, 301))
    assert best > eps_t + 0.4  # 1.585 vs 1.023
    assert rqp.coordinate_privacy_loss(q, s, b=b, **KW1) == pytest.approx(best, rel=1e-3)
    # deterministic projection (q = 1) at σ = 1.1: the formula says 0.92, one coordinate leaks ≈ 7.4
    assert P.eps_step(1.0, 1.1, b=4, **KWP) < 1 < rqp.coordinate_privacy_loss(1.0, 1.1, b=4, **KW1)


@pytest.mark.parametrize("sigma, expected", [(1.1, 7.42), (2.0, 2.30)])
def test_coordinate_loss_q1_independent(sigma, expected):
    """q = 1, replace-one: both means must stay in the feasible range [−M − ηρ, M + ηρ] = [−0.75, 0.75].
    Independent: scipy quad of the normal density over the end cell (−∞, Q_0 + h), written relative
    to the far tail so that it does not underflow, at the worst pair μ = 0.75, μ' = 0.75 − 2ηρ/m."""
    from scipy import integrate

    sl, D, edge = sigma / 10, 0.09, -0.3 + 0.02
    lo_z = (edge - 0.75) / sl  # the farther mean: log Φ(lo_z) from the integral of φ(z)/φ(lo_z)

    def log_cdf(z):
        val, _ = integrate.quad(lambda t: np.exp(-0.5 * (t * t - z * z)), -np.inf, z, epsabs=0, epsrel=1e-12)
        return np.log(val) - 0.5 * z * z - 0.5 * np.log(2 * np.pi)

    ref = log_cdf((edge - 0.75 + D) / sl) - log_cdf(lo_z)
    assert ref == pytest.approx(expected, abs=0.005)
    ours = rqp.coordinate_privacy_loss(1.0, sigma, b=4, **KW1)
    assert ours == pytest.approx(ref, rel=1e-6)
    # the old grid let the shifted mean leave the range (μ' = 0.84) and reported more (8.08 at σ = 1.1)
    assert ours < expected + 0.01


def test_coordinate_loss_adjacency():
    kw = dict(KW1)
    kw.pop("adjacency")
    assert rqp.adjacent_shift(eta=1.0, rho=0.45, m=10, adjacency="replace-one") == pytest.approx(0.09)
    assert rqp.adjacent_shift(eta=1.0, rho=0.45, m=10, adjacency="add-remove") == pytest.approx(0.045)
    rep = rqp.coordinate_privacy_loss(0.9, 1.0, b=4, adjacency="replace-one", **kw)
    add = rqp.coordinate_privacy_loss(0.9, 1.0, b=4, adjacency="add-remove", **kw)
    eps_t = P.eps_step(0.9, 1.0, b=4, **KWP)
    assert add < eps_t < rep  # q < 1: Theorem 1 holds under add/remove, fails under replace-one
    with pytest.raises(ValueError, match="adjacency"):
        rqp.coordinate_privacy_loss(0.9, 1.0, b=4, adjacency="swap", **kw)


# ---------------------------------------------------------------------------- properties (hypothesis)
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=60, deadline=None)
@given(
    b=st.integers(1, 8),
    M=st.floats(0.01, 10.0),
    xs=st.lists(st.floats(-100.0, 100.0, allow_nan=False), min_size=1, max_size=20),
    u=st.floats(0.0, 1.0),
    seed=st.integers(0, 2**31 - 1),
)
def test_outputs_are_levels_and_projection_is_nearest(b, M, xs, u, seed):
    x = torch.tensor(xs, dtype=torch.float64)
    q = 1 / 2**b + u * (1 - 1 / 2**b)
    lv = rqp.levels(b, M)
    out = rqp.randomized_projection(x, b, M, q, generator=torch.Generator().manual_seed(seed))
    assert torch.all((out[:, None] - lv).abs().min(1).values <= 1e-12 * M)
    det = rqp.proj_det(x, b, M)
    dist = (x.clamp(-M, M)[:, None] - lv).abs()
    assert torch.allclose((x.clamp(-M, M) - det).abs(), dist.min(1).values, atol=1e-12 * M)


def test_nan_inputs_raise():
    with pytest.raises(ValueError, match="mu"):
        rqp.pmf(float("nan"), 0.1, 4, 0.3, 0.9)
    with pytest.raises(ValueError, match="x must be finite"):
        rqp.exact_mse([0.1, float("nan")], 4, 0.3, 0.9)
    with pytest.raises(ValueError, match="x must be finite"):
        rqp.randomized_projection(torch.tensor([float("inf")]), 4, 0.3, 0.9)


# ---------------------------------------------------------------------------- regression: NaN has no nearest level
@pytest.mark.parametrize("fn", [rqp.nearest_index, rqp.proj_det])
def test_nan_is_rejected_not_mapped_to_int64_min(fn):
    """nearest_index(NaN) used to give index -9223372036854775808 (an IndexError downstream)."""
    with pytest.raises(ValueError, match=r"\bx must be finite"):
        fn(torch.tensor([0.1, float("nan")], dtype=torch.float64), 4, M)
    with pytest.raises(TypeError, match=r"\bx\b"):
        fn(None, 4, M)
