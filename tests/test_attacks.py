"""qlib.attacks: metrics against scikit-learn and the Mann–Whitney statistic, TPR at FPR on a hand-built
case, the threshold attacks, LiRA's scoring against a transcription of its reference code's arithmetic
and against the optimal test on Gaussians, and the batched shadow models against one-at-a-time training."""

import dataclasses
import math

import numpy as np
import pytest
import torch
from scipy import stats

from qlib import engine, engine_models
from qlib.attacks import lira, metrics, shadow, threshold


def _scores(n=400, seed=0, ties=False):
    rng = np.random.default_rng(seed)
    m = rng.random(n) < 0.4
    s = rng.normal(size=n) + 0.8 * m
    if ties:
        s = np.round(s * 2) / 2
    return s, m


# ---- metrics ------------------------------------------------------------------------------------
@pytest.mark.parametrize("ties", [False, True])
def test_auc_equals_mann_whitney_and_sklearn(ties):
    s, m = _scores(ties=ties)
    a = metrics.auc(s, m)
    u = stats.mannwhitneyu(s[m], s[~m], alternative="two-sided").statistic
    assert a == pytest.approx(u / (m.sum() * (~m).sum()), abs=1e-12)
    sk = pytest.importorskip("sklearn.metrics")
    assert a == pytest.approx(sk.roc_auc_score(m, s), abs=1e-12)


@pytest.mark.parametrize("ties", [False, True])
def test_roc_curve_equals_sklearn_without_dropping(ties):
    sk = pytest.importorskip("sklearn.metrics")
    s, m = _scores(ties=ties)
    fpr, tpr, thr = metrics.roc_curve(s, m)
    f2, t2, th2 = sk.roc_curve(m, s, drop_intermediate=False)
    np.testing.assert_allclose(fpr, f2)
    np.testing.assert_allclose(tpr, t2)
    np.testing.assert_allclose(thr[1:], th2[1:])
    assert thr[0] == np.inf and (fpr[0], tpr[0], fpr[-1], tpr[-1]) == (0, 0, 1, 1)


def test_tpr_at_fpr_hand_built():
    # 1000 non-members with scores 0..999 and 10 members: 5 above every non-member, 5 at -1
    s = np.r_[np.arange(1000.0), [2000, 2001, 2002, 2003, 2004], [-1.0] * 5]
    m = np.r_[np.zeros(1000, bool), np.ones(10, bool)]
    assert metrics.tpr_at_fpr(s, m, 0.0) == 0.5           # threshold 2000: no false positive
    assert metrics.tpr_at_fpr(s, m, 0.001) == 0.5         # one false positive allowed: no more members
    assert metrics.tpr_at_fpr(s, m, 0.0009) == 0.5
    assert metrics.tpr_at_fpr(s, m, 1.0) == 1.0
    # members just below the top non-member: TPR at 0.1 % FPR needs the one allowed false positive
    s2 = np.r_[np.arange(1000.0), [997.5] * 4]
    m2 = np.r_[np.zeros(1000, bool), np.ones(4, bool)]
    assert metrics.tpr_at_fpr(s2, m2, 0.0) == 0.0
    assert metrics.tpr_at_fpr(s2, m2, 0.001) == 0.0        # 997.5 sits below 2 non-members (FPR 0.2 %)
    assert metrics.tpr_at_fpr(s2, m2, 0.002) == 1.0


def test_best_accuracy_advantage_threshold_against_brute_force():
    s, m = _scores(ties=True)
    best = max(0.5 * ((s[m] >= t).mean() + (s[~m] < t).mean()) for t in np.r_[np.unique(s), np.inf])
    assert metrics.best_balanced_accuracy(s, m) == pytest.approx(best, abs=1e-12)
    assert metrics.advantage(s, m) == pytest.approx(2 * best - 1, abs=1e-12)
    t = metrics.best_threshold(s, m)
    assert metrics.balanced_accuracy(s >= t, m) == pytest.approx(best, abs=1e-12)


def test_balanced_accuracy_hand_case():
    m = np.array([1, 1, 1, 1, 0, 0], bool)
    p = np.array([1, 1, 1, 0, 1, 0], bool)
    assert metrics.balanced_accuracy(p, m) == pytest.approx(0.5 * (3 / 4 + 1 / 2))
    assert metrics.balanced_accuracy(p.astype(int), m.astype(int)) == pytest.approx(0.625)


def test_bootstrap_and_evaluate():
    s, m = _scores(n=600)
    est, lo, hi = metrics.bootstrap(metrics.auc, s, m, reps=200, seed=1)
    assert lo < est < hi and est == metrics.auc(s, m)
    assert metrics.bootstrap(metrics.auc, s, m, reps=200, seed=1) == (est, lo, hi)
    groups = np.arange(s.size) // 60
    _, glo, ghi = metrics.bootstrap(metrics.auc, s, m, reps=200, seed=1, groups=groups)
    assert glo < est < ghi
    r = metrics.evaluate(s, m, s >= 0.4, reps=100, seed=0)
    assert r.values["auc"] == pytest.approx(metrics.auc(s, m))
    assert r.values["accuracy"] == pytest.approx(metrics.balanced_accuracy(s >= 0.4, m))
    assert r.values["tpr@0.01"] == metrics.tpr_at_fpr(s, m, 0.01)
    for k in r.values:
        assert r.lo[k] <= r.values[k] + 1e-12 and r.values[k] <= r.hi[k] + 1e-12
    assert set(r.row()) >= {"auc", "auc_lo", "auc_hi"}


def test_metrics_reject_one_class_and_bad_lengths():
    with pytest.raises(ValueError, match="members"):
        metrics.auc([0.1, 0.2], [True, True])
    with pytest.raises(ValueError, match="members"):
        metrics.auc([0.1, 0.2, 0.3], [True, False])
    with pytest.raises(ValueError, match="scores"):
        metrics.auc([0.1, np.nan], [True, False])


# ---- threshold attacks -----------------------------------------------------------------------
def test_loss_and_calibrated_scores():
    loss = np.array([[0.1, 2.0, 0.5]])
    ref = np.array([[0.2, 1.0, 0.5], [0.4, 3.0, 1.5]])
    np.testing.assert_allclose(threshold.loss_scores(loss), -loss)
    np.testing.assert_allclose(threshold.calibrated_scores(loss, ref), [[0.2, 0.0, 0.5]])


def test_fit_threshold_separable_and_midpoint():
    s = np.array([0.0, 1.0, 2.0, 5.0, 6.0])
    m = np.array([0, 0, 0, 1, 1], bool)
    tau = threshold.fit_threshold(s, m)
    assert tau == 3.5
    t2, pred = threshold.threshold_attack(s, m, np.array([3.0, 4.0, 7.0]))
    assert t2 == tau and pred.tolist() == [False, True, True]


# ---- LiRA ------------------------------------------------------------------------------------
def test_scaled_logit_forms_agree():
    rng = np.random.default_rng(0)
    z = rng.normal(size=(5, 7, 4)) * 3
    y = rng.integers(0, 4, size=(5, 7))
    p = np.exp(z - z.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    py = np.take_along_axis(p, y[..., None], -1)[..., 0]
    ref = np.log(py + 1e-45) - np.log(p.sum(-1) - py + 1e-45)   # the reference code's form
    np.testing.assert_allclose(lira.scaled_logit(z, y), ref, rtol=1e-9, atol=1e-9)
    f = rng.normal(size=(3, 6))
    yb = rng.integers(0, 2, size=(3, 6))
    two = np.stack([np.zeros_like(f), f], -1)                      # softmax of (0, f) = (1 − σ(f), σ(f))
    np.testing.assert_allclose(lira.scaled_logit_binary(f, yb), lira.scaled_logit(two, yb), atol=1e-12)
    sig = 1 / (1 + np.exp(-f))
    np.testing.assert_allclose(lira.scaled_logit_from_confidence(sig), f, atol=1e-9)


def _reference_online(keep, scores, check_scores, fix_variance=False):
    """A transcription of the arithmetic of the reference code's generate_ours (plot.py), for equal
    in/out counts: per example the median and np.std over its in- and out-shadows; the returned value
    is negated there (a sweep over −prediction), so the member score is logpdf_in − logpdf_out."""
    dat_in = np.array([scores[keep[:, j], j, :] for j in range(scores.shape[1])])
    dat_out = np.array([scores[~keep[:, j], j, :] for j in range(scores.shape[1])])
    mean_in, mean_out = np.median(dat_in, 1), np.median(dat_out, 1)
    if fix_variance:
        std_in = std_out = np.std(dat_in)
    else:
        std_in, std_out = np.std(dat_in, 1), np.std(dat_out, 1)
    pr_in = -stats.norm.logpdf(check_scores, mean_in, std_in + 1e-30)
    pr_out = -stats.norm.logpdf(check_scores, mean_out, std_out + 1e-30)
    return -(pr_in - pr_out).mean(-1)


def _reference_offline(keep, scores, check_scores, fix_variance=False):
    dat_out = np.array([scores[~keep[:, j], j, :] for j in range(scores.shape[1])])
    mean_out = np.median(dat_out, 1)
    std_out = np.std(dat_out) if fix_variance else np.std(dat_out, 1)
    return -stats.norm.logpdf(check_scores, mean_out, std_out + 1e-30).mean(-1)


@pytest.mark.parametrize("fix_variance", [False, True])
def test_lira_matches_reference_arithmetic(fix_variance):
    rng = np.random.default_rng(3)
    M, N, A = 16, 30, 2
    keep = shadow.paired_keep(M, N, seed=1)
    scores = rng.normal(size=(M, N, A)) + keep[..., None] * 1.5
    target = rng.normal(size=(4, N, A))
    ours = lira.lira_online(target, scores, keep, fix_variance=fix_variance)
    np.testing.assert_allclose(ours, _reference_online(keep, scores, target, fix_variance), rtol=1e-12)
    off = lira.lira_offline(target, scores, keep, fix_variance=fix_variance)
    np.testing.assert_allclose(off, _reference_offline(keep, scores, target, fix_variance), rtol=1e-12)
    # 2-D scores (no augmentation axis) = the 3-D case with A = 1
    np.testing.assert_allclose(lira.lira_online(target[..., 0], scores[..., 0], keep),
                               lira.lira_online(target[..., :1], scores[..., :1], keep), rtol=1e-12)


def test_lira_online_is_the_optimal_test_on_gaussians():
    """Per example, φ ~ N(μ_out + d, 1) when in and N(μ_out, 1) when out (μ_out varies by example): the
    Neyman–Pearson test is the log-likelihood ratio, whose AUC is Φ(d/√2). LiRA online with 256 shadows
    estimates that ratio; its AUC must match the optimum and beat the global threshold's."""
    rng = np.random.default_rng(0)
    M, N, d = 256, 4000, 1.0
    mu = rng.normal(size=N) * 3
    keep = shadow.paired_keep(M, N, seed=0)
    sh = mu + d * keep + rng.normal(size=(M, N))
    member = rng.random(N) < 0.5
    target = mu + d * member + rng.normal(size=N)
    on = lira.lira_online(target, sh, keep)
    exact_llr = stats.norm.logpdf(target, mu + d, 1) - stats.norm.logpdf(target, mu, 1)
    assert np.corrcoef(on, exact_llr)[0, 1] > 0.95   # variances estimated from 128 values per Gaussian
    opt = stats.norm.cdf(d / math.sqrt(2))
    se = 0.01  # ~ the AUC's standard error at N = 4000
    assert metrics.auc(on, member) == pytest.approx(opt, abs=3 * se)
    assert metrics.auc(exact_llr, member) == pytest.approx(opt, abs=3 * se)
    assert metrics.auc(target, member) < opt - 0.1            # the global threshold ignores μ_out
    one = lira.lira_offline(target, sh, keep, tail="one-sided")  # equal variances: monotone in φ − μ_out
    assert metrics.auc(one, member) == pytest.approx(opt, abs=3 * se)


def test_lira_offline_without_keep_and_errors():
    rng = np.random.default_rng(1)
    sh = rng.normal(size=(8, 5))
    a = lira.lira_offline(rng.normal(size=5), sh)
    b = lira.lira_offline(rng.normal(size=5), sh, np.zeros((8, 5), bool))
    assert a.shape == b.shape == (5,)
    with pytest.raises(ValueError, match="shadow_keep"):
        lira.lira_online(rng.normal(size=5), sh, np.zeros((8, 5), bool))
    with pytest.raises(ValueError, match="target_scores"):
        lira.lira_offline(rng.normal(size=6), sh)
    with pytest.raises(ValueError, match="tail"):
        lira.lira_offline(rng.normal(size=5), sh, tail="left")


# ---- shadow models ---------------------------------------------------------------------------
def test_paired_keep_balance():
    k = shadow.paired_keep(8, 10, seed=2)
    assert (k.sum(0) == 4).all() and (k.sum(1) == 5).all()
    assert (k[0] == ~k[1]).all()
    with pytest.raises(ValueError, match="n_models"):
        shadow.paired_keep(7, 10)


@pytest.mark.parametrize("model", [engine_models.Linear(3), engine_models.MLP(3, hidden=5)])
def test_train_shadows_equals_one_model_at_a_time(model):
    g = torch.Generator().manual_seed(0)
    X = torch.randn(20, 3, generator=g)
    y = (torch.rand(20, generator=g) < 0.5).float()
    keep = shadow.paired_keep(4, 20, seed=0)
    cfg = engine.TrainConfig(epochs=15, lr=0.05)
    th = shadow.train_shadows(model, X, y, keep, dataclasses.replace(cfg, device="cpu", backend="torch"), seed=5)
    th0 = engine_models.init_params(model, 4, 5, dtype=X.dtype)
    for i in range(4):
        rows = np.flatnonzero(keep[i])
        one = engine.train(model, th0[i:i + 1], X[rows][None], y[rows][None],
                           dataclasses.replace(cfg, device="cpu", backend="torch"))
        torch.testing.assert_close(th[i], one.theta[0], rtol=1e-4, atol=1e-5)
    phi = shadow.binary_scores(model, th, X, y)
    f = model.forward(th, X.expand(4, 20, 3)).detach().double().numpy()
    np.testing.assert_allclose(phi, (2 * y.double().numpy() - 1) * f, rtol=1e-6)
    np.testing.assert_allclose(shadow.binary_losses(model, th, X, y), np.log1p(np.exp(-phi)), rtol=1e-9)


def test_train_shadows_follows_the_settings_rule():
    """The training's settings are the engine's record (qlib.engine.TrainConfig): an equal record gives the
    same models; a keyword that is no parameter is a TypeError naming it, a missing epochs the record's own."""
    X = torch.randn(8, 2, generator=torch.Generator().manual_seed(2))
    y = (torch.arange(8) % 2).float()
    keep = shadow.paired_keep(4, 8, seed=1)
    cfg = engine.TrainConfig(epochs=4, lr=0.1, device="cpu", backend="torch")
    by_record = shadow.train_shadows(engine_models.Linear(2), X, y, keep, cfg, seed=3)
    replaced = shadow.train_shadows(engine_models.Linear(2), X, y, keep,
                                    dataclasses.replace(engine.TrainConfig(epochs=9, lr=0.1, device="cpu",
                                                                           backend="torch"), epochs=4), seed=3)
    torch.testing.assert_close(by_record, replaced, rtol=0, atol=0)
    with pytest.raises(TypeError, match=r"\bepochz\b"):
        shadow.train_shadows(engine_models.Linear(2), X, y, keep, cfg, epochz=3)
    with pytest.raises(TypeError, match="config must be a TrainConfig"):
        shadow.train_shadows(engine_models.Linear(2), X, y, keep, {"epochs": 3})
    with pytest.raises(TypeError, match=r"\bconfig\b"):                 # the record is required
        shadow.train_shadows(engine_models.Linear(2), X, y, keep)
    with pytest.raises(TypeError, match="epochs"):
        engine.TrainConfig(lr=0.1)


def test_train_shadows_passes_callbacks():
    seen = []
    X = torch.randn(8, 2, generator=torch.Generator().manual_seed(1))
    y = (torch.arange(8) % 2).float()
    shadow.train_shadows(engine_models.Linear(2), X, y, shadow.paired_keep(2, 8),
                         engine.TrainConfig(epochs=3, lr=0.1, device="cpu", backend="torch"),
                         callbacks=[lambda epoch, theta, models: seen.append(epoch)])
    assert seen == [1, 2, 3]
