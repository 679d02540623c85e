"""Batched noisy (projected) SGD on linear models (qlib.dpsgd); the paper-004 experiment helpers are
tested in tests/test_repro_rqp_sgd.py."""

import numpy as np
import pytest
import torch

from qlib import dpsgd, rqp
from qlib.repro.rqp_sgd import experiments as E

HP = dict(runs=1, eta=1.0, clip=0.45, b=4, M=0.3)  # the hyperparameters train() requires


def _train(task, method, **kw):
    """``dpsgd.train`` with the record of :data:`HP` and these fields replaced."""
    return dpsgd.train(task, method, dpsgd.DPSGDConfig(**{**HP, **kw}))


def _data(model, R=3, m=6, D=5, K=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(R, m, D, generator=g, dtype=torch.float64)
    if model == "softmax":
        y = torch.randint(0, K, (R, m), generator=g)
        w = torch.randn(R, K * D, generator=g, dtype=torch.float64)
    else:
        y = torch.randint(0, 2, (R, m), generator=g).to(torch.float64)
        if model == "svm":
            y = 2 * y - 1
        w = torch.randn(R, D, generator=g, dtype=torch.float64)
    return w, X, y


def _closed_form(model, w, X, y):
    """Textbook per-example gradients of the three losses (independent reference)."""
    if model == "logreg":
        return (torch.sigmoid(torch.einsum("rd,rmd->rm", w, X)) - y)[..., None] * X
    if model == "svm":
        z = torch.einsum("rd,rmd->rm", w, X)
        return (-(y * (y * z < 1)))[..., None] * X
    R, m, D = X.shape
    W = w.reshape(R, -1, D)
    s = torch.softmax(torch.einsum("rkd,rmd->rmk", W, X), -1)
    r = s - torch.nn.functional.one_hot(y, W.shape[1]).to(s.dtype)
    return torch.einsum("rmk,rmd->rmkd", r, X).reshape(R, m, -1)


@pytest.mark.parametrize("model", dpsgd.MODELS)
def test_per_example_grads_match_closed_form(model):
    w, X, y = _data(model)
    torch.testing.assert_close(dpsgd.per_example_grads(model, w, X, y), _closed_form(model, w, X, y))


@pytest.mark.parametrize("model", dpsgd.MODELS)
@pytest.mark.parametrize("clip", [0.05, 0.45, 100.0])
def test_factored_clipped_sum_equals_full(model, clip):
    w, X, y = _data(model, seed=3)
    full = dpsgd.clipped_grad_sum(model, w, X, y, clip, mode="full")
    fact = dpsgd.clipped_grad_sum(model, w, X, y, clip, mode="factored")
    torch.testing.assert_close(fact, full)
    ref = _closed_form(model, w, X, y)
    nrm = ref.norm(dim=-1, keepdim=True)
    torch.testing.assert_close(full, (ref * torch.clamp(clip / nrm, max=1.0)).sum(1))
    wts = torch.tensor([1.0, 1.0, 0.0, 1.0, 0.0, 1.0], dtype=torch.float64)
    torch.testing.assert_close(dpsgd.clipped_grad_sum(model, w, X, y, clip, wts, "factored"),
                               dpsgd.clipped_grad_sum(model, w, X[:, wts > 0], y[:, wts > 0], clip, mode="full"))


def test_clip_rows():
    g = torch.tensor([[3.0, 4.0], [0.03, 0.04], [0.0, 0.0]])
    c = dpsgd.clip_rows(g, 0.45)
    torch.testing.assert_close(c[0], torch.tensor([0.27, 0.36]))
    torch.testing.assert_close(c[1], g[1])
    assert torch.all(c[2] == 0)


@pytest.fixture(scope="module")
def diag():
    return E.diagnostic_task("logreg")


def test_same_seed_same_numbers(diag):
    kw = dict(runs=3, T=10, m=10, sigma=0.5, q=0.6)
    a = _train(diag, "rqp", seed=4, **kw)
    b = _train(diag, "rqp", seed=4, **kw)
    c = _train(diag, "rqp", seed=5, **kw)
    assert torch.equal(a.w, b.w) and not torch.equal(a.w, c.w)


def test_per_run_sigma_and_zero_noise_is_sgd(diag):
    # batches are drawn before the loop, so with the same seed DP-SGD at σ = 0 is clipped SGD, run by run
    sgd = _train(diag, "sgd", runs=3, T=20, m=10, seed=1)
    dp = _train(diag, "dpsgd", runs=3, T=20, m=10, sigma=[0.0, 0.0, 5.0], seed=1)
    torch.testing.assert_close(dp.w[:2], sgd.w[:2])
    assert not torch.allclose(dp.w[2], sgd.w[2])


def test_projected_weights_are_levels(diag):
    lv = rqp.levels(4, 0.3, dtype=torch.float32)
    for method, q in (("projdp", 1.0), ("rqp", 0.4)):
        w = _train(diag, method, runs=4, T=5, m=10, sigma=0.3, q=q, seed=0).w.cpu()
        assert torch.all((w[..., None] - lv).abs().min(-1).values < 1e-6)
    w = _train(diag, "dpsgd", runs=2, T=5, m=10, sigma=0.3, seed=0).w.cpu()
    assert not torch.all((w[..., None] - lv).abs().min(-1).values < 1e-6)


def test_single_step_by_hand(diag):
    # one DP-SGD step from w0 = 0 re-derived from the same random draws (a CPU generator's: on CUDA
    # the same seed draws other numbers)
    res = _train(diag, "dpsgd", runs=2, T=1, m=10, sigma=0.7, eta=0.5, seed=9, dtype=torch.float64, device="cpu")
    g = torch.Generator().manual_seed(9)
    idx = torch.randint(0, diag.n, (1, 2, 10), generator=g)[0]
    X = torch.as_tensor(diag.X_train)[idx]
    y = torch.as_tensor(diag.y_train, dtype=torch.float64)[idx]
    G = _closed_form("logreg", torch.zeros(2, 31, dtype=torch.float64), X, y)
    G = (G * torch.clamp(0.45 / G.norm(dim=-1, keepdim=True), max=1.0)).sum(1)
    noise = 0.7 * torch.randn(2, 31, generator=g, dtype=torch.float64)
    torch.testing.assert_close(res.w, -(0.5 / 10) * (G + noise))


def test_epoch_sampling_covers_each_example_once():
    n, m = 23, 5
    idx, wts = dpsgd._batches(n, m, 5, 2, "epoch", torch.Generator().manual_seed(0), torch.device("cpu"))
    assert idx.shape == (5, 2, 5) and wts.shape == (5, 5)
    for r in range(2):
        seen = idx[:, r][wts > 0]
        assert sorted(seen.tolist()) == list(range(n))
    assert wts[-1].sum() == n - 4 * m


def test_learning_sanity(diag):
    # clipped SGD for one epoch learns the Diagnostic task (majority rate 62.7 %); q = 1/2^b RQP does not
    good = _train(diag, "sgd", runs=5, T=46, m=10, seed=0).test_acc
    assert np.median(good) >= 0.9
    noise = _train(diag, "rqp", runs=5, T=46, m=10, sigma=0.1, q=1 / 16, seed=0).test_acc
    assert np.median(noise) < 0.8


def test_bad_input(diag):
    with pytest.raises(ValueError, match="method"):
        _train(diag, "adam", T=1, m=10)
    with pytest.raises(ValueError, match="sampling"):
        _train(diag, "sgd", T=1, m=10, sampling="poisson")
    with pytest.raises(ValueError, match="clip"):
        _train(diag, "sgd", T=1, m=10, clip=0.0)
    with pytest.raises(ValueError, match="M"):
        _train(diag, "projdp", T=1, m=10, M=-0.3)
    with pytest.raises(ValueError, match="sigma"):
        _train(diag, "dpsgd", T=1, m=10, sigma=-1.0)
    with pytest.raises(ValueError, match="q must be in"):
        _train(diag, "rqp", T=1, m=10, sigma=1.0, q=0.01)
    with pytest.raises(ValueError, match="b"):
        _train(diag, "rqp", T=1, m=10, sigma=1.0, b=0)
    with pytest.raises(ValueError, match="m must be"):
        _train(diag, "sgd", T=1, m=1000)
    with pytest.raises(ValueError, match="one value per run"):
        _train(diag, "dpsgd", runs=3, T=1, m=10, sigma=[0.1, 0.2])
    with pytest.raises(ValueError, match="b \\(quantization bits\\) and M"):
        dpsgd.train(diag, "rqp", dpsgd.DPSGDConfig(runs=1, T=1, m=10, eta=1.0, clip=0.45, sigma=1.0, q=0.9))
    with pytest.raises(TypeError, match="eta"):
        dpsgd.train(diag, "sgd", dpsgd.DPSGDConfig(runs=1, T=1, m=10, clip=0.45))


def test_no_paper_defaults():
    import inspect

    params = inspect.signature(dpsgd.DPSGDConfig).parameters
    for name in ("runs", "T", "m", "eta", "clip"):
        assert params[name].default is inspect.Parameter.empty
    assert params["b"].default is None and params["M"].default is None


def test_helpers_reject_bad_input():
    g = torch.ones(2, 3)
    with pytest.raises(ValueError, match="clip"):
        dpsgd.clip_rows(g, float("nan"))
    with pytest.raises(ValueError, match="g must be finite"):
        dpsgd.clip_rows(torch.tensor([[float("nan"), 1.0]]), 0.45)
    with pytest.raises(ValueError, match="model"):
        dpsgd.predict("tree", torch.zeros(1, 3), torch.zeros(4, 3))
    with pytest.raises(ValueError, match="X must have ndim 2"):
        dpsgd.predict("logreg", torch.zeros(1, 3), torch.zeros(3))
    with pytest.raises(ValueError, match="model"):
        dpsgd.loss_fn("tree")


# ---------------------------------------------------------------------------- regression: bad data and divergence
def _copy(task, **fields):
    import dataclasses

    t = dataclasses.replace(task)  # a valid copy, then broken in place (a Task is mutable)
    for k, v in fields.items():
        setattr(t, k, v)
    return t


@pytest.mark.parametrize("method", ["sgd", "dpsgd", "projdp", "rqp"])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_train_rejects_non_finite_features_by_name(diag, method, bad):
    """NaN features used to give 41 % accuracy with NaN weights, or an IndexError (NaN → INT64_MIN)."""
    X = diag.X_train.copy()
    X[3, 2] = bad
    with pytest.raises(ValueError, match=r"task\.X_train must be finite"):
        _train(_copy(diag, X_train=X), method, T=5, m=10, sigma=0.5, q=0.9)
    Xt = diag.X_test.copy()
    Xt[0, 0] = bad
    with pytest.raises(ValueError, match=r"task\.X_test must be finite"):
        _train(_copy(diag, X_test=Xt), method, T=5, m=10, sigma=0.5, q=0.9)
    with pytest.raises(ValueError, match=r"\bX_train must be finite"):
        dpsgd.Task("t", "logreg", X, diag.y_train, diag.X_test, diag.y_test)


def test_train_rejects_bad_labels_by_name(diag):
    y = diag.y_train.astype(float)
    y[0] = np.nan
    with pytest.raises(ValueError, match=r"task\.y_train must be finite"):
        _train(_copy(diag, y_train=y), "sgd", T=5, m=10)
    y = diag.y_train.copy()
    y[0] = 2
    with pytest.raises(ValueError, match=r"task\.y_train must hold labels in \{0, 1\}"):
        _train(_copy(diag, y_train=y), "sgd", T=5, m=10)
    with pytest.raises(TypeError, match=r"\btask must be a Task"):
        _train({"X_train": diag.X_train}, "sgd", T=5, m=10)


@pytest.mark.parametrize("model, labels, bad", [
    ("logreg", [0, 1], 2), ("logreg", [0, 1], -1), ("svm", [-1, 1], 0), ("svm", [-1, 1], 2), ("softmax", [0, 1, 2], 3),
])
def test_labels_outside_the_label_set_are_rejected_by_name(model, labels, bad):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 3))
    y = np.resize(labels, 12)
    K = len(labels) if model == "softmax" else 2
    dpsgd.Task("ok", model, X, y, X, y, K)
    y_bad = y.copy()
    y_bad[5] = bad
    with pytest.raises(ValueError, match=r"\by_train must hold labels"):
        dpsgd.Task("t", model, X, y_bad, X, y, K)
    with pytest.raises(ValueError, match=r"\by_test must hold labels"):
        dpsgd.Task("t", model, X, y, X, y_bad, K)
    w = torch.zeros(1, 3 * K if model == "softmax" else 3, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"\by must hold labels"):
        dpsgd.accuracy(model, w, torch.as_tensor(X), torch.as_tensor(y_bad))
    with pytest.raises(ValueError, match=r"\by must hold labels"):
        dpsgd.clipped_grad_sum(model, w, torch.as_tensor(X)[None], torch.as_tensor(y_bad, dtype=w.dtype
                               if model != "softmax" else torch.int64)[None], 0.45)
    assert dpsgd.label_set(model, K) == tuple(labels)


def test_task_rejects_non_binary_n_classes_for_binary_models(diag):
    with pytest.raises(ValueError, match=r"\bn_classes must be 2"):
        dpsgd.Task("t", "logreg", diag.X_train, diag.y_train, diag.X_test, diag.y_test, 3)


@pytest.mark.parametrize("method", ["sgd", "dpsgd", "projdp", "rqp"])
def test_divergence_raises_naming_the_step_size(diag, method):
    """An iterate that overflows (here: η = 1e300 in float32) is an error naming eta, not an accuracy."""
    with pytest.raises(ValueError, match=r"diverged.*\beta\b"):
        _train(diag, method, T=3, m=10, eta=1e300, sigma=0.5, q=0.9)
    with pytest.raises(ValueError, match=r"diverged.*\beta\b.*\bsigma\b"):
        _train(diag, "dpsgd", T=3, m=10, sigma=1e300)


def test_batch_helpers_check_shapes_by_name():
    w, X, y = _data("logreg")
    with pytest.raises(ValueError, match=r"\bw must have 5 columns"):
        dpsgd.per_example_grads("logreg", w[:, :3], X, y)
    with pytest.raises(ValueError, match=r"\by must have shape"):
        dpsgd.clipped_grad_sum("logreg", w, X, y[:, :2], 0.45)
    with pytest.raises(ValueError, match=r"\bweights must have one entry per example"):
        dpsgd.clipped_grad_sum("logreg", w, X, y, 0.45, weights=torch.ones(2, dtype=torch.float64))
    with pytest.raises(ValueError, match=r"\bX must be finite"):
        dpsgd.per_example_grads("logreg", w, X.index_fill(1, torch.tensor([0]), float("nan")), y)
