"""r_Q^n (Algorithm 1 of paper 001) (qlib.rqn), the recording callback (qlib.recorder), rankings
(qlib.ranking) and binomial intervals (qlib.mis)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from qlib import engine, mis, quantizers, ranking, recorder, rqn, synthetic


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


# ----------------------------------------------------------------------------- fused quantizers
@pytest.mark.parametrize("variant", quantizers.VARIANTS)
@pytest.mark.parametrize("scope", ["model", "tensor"])
def test_quantize_many_equals_quantizers_module(scope, variant):
    model = engine.Linear(30)
    th = engine.init_params(model, 50, 0)
    th[0, :5] = 0.0                                   # exact zeros and ties
    th[1, :10] = 0.25
    names = quantizers.names()
    split = engine.param_sizes(model) if scope == "tensor" else None
    assert split in (None, [30, 1])
    got = quantizers.quantize_many(names, th, split=split, variant=variant)
    for i, nm in enumerate(names):
        if scope == "model":
            ref = quantizers.quantize_batch(nm, th, variant=variant)
        else:
            ref = torch.cat([quantizers.quantize_batch(nm, t, variant=variant)
                             for t in model.unflatten(th).values()], dim=1)
        assert torch.equal(got[i], ref), nm


def test_unknown_quantizer_and_scope():
    with pytest.raises(ValueError, match="unknown quantizer"):
        quantizers.check_names(["bits7"])
    with pytest.raises(ValueError, match="split"):
        quantizers.quantize_many(["sign"], torch.zeros(2, 4), split=[3, 2])
    model, _, _, _, Xv, Yv, _ = _tiny_setup(R=2, epochs=5)
    with pytest.raises(ValueError, match="scope"):
        recorder.RQRecorder(model, ["sign"], Xv, Yv, epochs=5, scope="layer")


# ----------------------------------------------------------------------------- the recorder
def _tiny_setup(R=3, n=32, d=6, epochs=60, seed=0):
    laws = synthetic.make_laws(seed, grid=[(1.5, 6), (3.0, 8)], dim=d)
    g = torch.Generator().manual_seed(seed)
    x, y = synthetic.sample(laws, (R, n), g)
    xv, yv = synthetic.sample(laws, (R, n), g)
    K = len(laws) * R
    model = engine.Linear(2 * d)
    th0 = engine.init_params(model, K, seed)
    return model, th0, x.reshape(K, n, d), y.reshape(K, n), xv.reshape(K, n, d), yv.reshape(K, n), epochs


@pytest.mark.parametrize("backend", ["torch", "compiled"])
def test_recorder_equals_r_q_on_each_trajectory(backend):
    model, th0, X, Y, Xv, Yv, epochs = _tiny_setup()
    names = ["sign", "ternary50", "bits2", "bits4"]
    rec = recorder.RQRecorder(model, names, Xv, Yv, epochs=epochs, transform=synthetic.features, keep_losses=True,
                              block=7, backend=backend)
    res = engine.train(model, th0, X, Y, epochs=epochs, lr=3e-2, transform=synthetic.features, callbacks=[rec],
                       chunk_size=4, backend=backend)
    # the recorded losses are those of the quantized models of every epoch (checked on the last)
    thq = quantizers.quantize_many(names, res.theta, split=engine.param_sizes(model))
    last = engine.per_sample_loss("logistic", model.forward(thq, synthetic.features(Xv)), Yv)
    torch.testing.assert_close(rec.losses[-1], last)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rqn.RQUndefinedWarning)
        ref = np.array([[rqn.r_q(rec.losses[:, q, k]) for k in range(X.shape[0])] for q in range(len(names))])
        nd = np.array([[rqn.trajectory_stats(rec.losses[:, q, k]).n_distinct for k in range(X.shape[0])]
                       for q in range(len(names))])
    np.testing.assert_allclose(rec.r, ref, rtol=1e-4)
    np.testing.assert_array_equal(rec.n_distinct, nd)
    assert (rec.n_distinct < epochs).any()           # copies met along the trajectories


@pytest.mark.parametrize("backend", ["torch", "compiled"])
def test_recorder_nan_when_model_never_changes(backend):
    model, th0, X, Y, Xv, Yv, _ = _tiny_setup(R=2, epochs=5)
    rec = recorder.RQRecorder(model, ["sign"], Xv, Yv, epochs=5, transform=synthetic.features, backend=backend)
    engine.train(model, th0, X, Y, epochs=5, lr=1e-9, transform=synthetic.features, callbacks=[rec],
                 backend=backend)
    assert np.isnan(rec.r).all()
    with pytest.warns(rqn.RQUndefinedWarning):
        rec.finish()


def test_recorder_bad_input():
    model, th0, X, Y, Xv, Yv, _ = _tiny_setup(R=2, epochs=5)
    with pytest.raises(ValueError, match="unknown quantizer"):
        recorder.RQRecorder(model, ["nope"], Xv, Yv, epochs=5)
    with pytest.raises(ValueError, match="epochs"):
        recorder.RQRecorder(model, ["sign"], Xv, Yv, epochs=0)
    with pytest.raises(ValueError, match="ndim 3"):
        recorder.RQRecorder(model, ["sign"], Xv[0], Yv, epochs=5)
    bad = Xv.clone()
    bad[0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match="non-finite"):
        recorder.RQRecorder(model, ["sign"], bad, Yv, epochs=5)


@pytest.mark.parametrize("ddof, exc", [(2, ValueError), (-1, ValueError), (1.0, TypeError), (True, TypeError),
                                       (float("nan"), TypeError), ("1", TypeError)])
def test_recorder_accepts_only_ddof_0_or_1(ddof, exc):
    """RQRecorder(ddof=2) used to be accepted; the estimator uses the biased (0) or unbiased (1)
    variance only."""
    model, _, _, _, Xv, Yv, _ = _tiny_setup(R=2, epochs=5)
    with pytest.raises(exc, match=r"\bddof\b"):
        recorder.RQRecorder(model, ["sign"], Xv, Yv, epochs=5, ddof=ddof)
    for ok in (0, 1):
        assert recorder.RQRecorder(model, ["sign"], Xv, Yv, epochs=5, ddof=ok).ddof == ok


def test_recorder_names_y_val_and_rejects_non_binary_labels_under_logistic_loss():
    model, _, _, _, Xv, Yv, _ = _tiny_setup(R=2, epochs=5)
    bad = Yv.clone()
    bad[0, 0] = 2.0
    with pytest.raises(ValueError, match=r"\by_val\b.*\{0, 1\}"):
        recorder.RQRecorder(model, ["sign"], Xv, bad, epochs=5)
    recorder.RQRecorder(model, ["sign"], Xv, bad, epochs=5, loss="mse")      # any target for MSE
    bad[0, 0] = float("nan")
    with pytest.raises(ValueError, match=r"\by_val\b"):
        recorder.RQRecorder(model, ["sign"], Xv, bad, epochs=5, loss="mse")


# ----------------------------------------------------------------------------- rankings, intervals
def test_spearman_matches_scipy():
    rng = np.random.default_rng(4)
    a, b = rng.normal(size=(7, 8)), rng.normal(size=(7, 8))
    np.testing.assert_allclose(ranking.spearman(a, b), [stats.spearmanr(a[i], b[i])[0] for i in range(7)])


def test_ranks_one_is_largest():
    np.testing.assert_array_equal(ranking.ranks([0.1, 3.0, 2.0]), [3, 1, 2])


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


def test_rankings_reject_broken_input_by_name():
    with pytest.raises(TypeError, match=r"\baxis\b"):
        ranking.ranks([1.0, 2.0], axis=None)
    with pytest.raises(ValueError, match=r"\baxis\b"):
        ranking.ranks([1.0, 2.0], axis=1)
    with pytest.raises(TypeError, match=r"\bvalues\b"):
        ranking.ranks(np.array([1.0 + 1j, 2.0]))
    with pytest.raises(ValueError, match=r"\bk_runs\b"):
        ranking.rq_rank_stability(np.zeros((2, 3, 6)), [2, 7])
    with pytest.raises(ValueError, match=r"\bfull_mis\b"):
        ranking.threshold_rank_stability(np.ones((1, 2, 4, 3)), np.ones((1, 2, 4, 3)), [[0.2, np.nan]], [2])
    with pytest.raises(ValueError, match=r"\bpred_ranks\b"):
        ranking.rank_confusion([[1.0, 4.0]], [[1.0, 2.0]])
    # NaN (an undefined r_Q^n) stays legitimate: ranked last, ignored by averages
    np.testing.assert_array_equal(ranking.ranks([np.nan, 1.0, np.inf]), [3, 2, 1])
    np.testing.assert_allclose(ranking.average_runs([[1.0, np.nan, 3.0]]), [2.0])


def test_rank_stability_is_perfect_without_run_noise_and_errors():
    rng = np.random.default_rng(5)
    per_law = rng.normal(size=(3, 8, 1))
    r = np.repeat(per_law, 20, axis=2) + 1e-9 * rng.normal(size=(3, 8, 20))
    st_ = ranking.rq_rank_stability(r, [2, 5, 20], n_subsets=10)
    assert np.allclose(st_["spearman"], 1.0)
    cm = ranking.rank_confusion(st_["ranks"][0], st_["full_ranks"])
    assert cm.sum() == 10 * 3 * 8 and np.trace(cm) == cm.sum()
    with pytest.raises(ValueError, match="k_run"):
        ranking.run_subsets(20, 1, 5)
    with pytest.raises(ValueError, match="k_run"):
        ranking.run_subsets(20, 21, 5)


def test_rank_stability_subsets_reproducible():
    a = ranking.run_subsets(30, 5, 4, seed=3)
    b = ranking.run_subsets(30, 5, 4, seed=3)
    np.testing.assert_array_equal(a, b)
    assert all(len(set(row)) == 5 for row in a)
