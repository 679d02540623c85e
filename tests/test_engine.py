"""The vectorised trainer equals training each model alone with torch.optim.Adam."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from qlib import engine, engine_models, losses


def _data(K=5, n=24, d=7, seed=0, regression=False):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(K, n, d, generator=g)
    y = torch.randn(K, n, generator=g) if regression else (torch.rand(K, n, generator=g) > 0.5).float()
    return X, y


def _alone_linear(theta0, X, y, epochs, lr, loss):
    d = X.shape[1]
    lin = torch.nn.Linear(X.shape[1], 1)
    with torch.no_grad():
        lin.weight.copy_(theta0[:X.shape[1]][None])
        lin.bias.copy_(theta0[X.shape[1]:])
    opt = torch.optim.Adam(lin.parameters(), lr=lr)
    for _ in range(epochs):
        opt.zero_grad()
        out = lin(X).squeeze(-1)
        val = F.binary_cross_entropy_with_logits(out, y) if loss == "logistic" else F.mse_loss(out, y)
        val.backward()
        opt.step()
    assert d == X.shape[1]
    return torch.cat([lin.weight.detach()[0], lin.bias.detach()])


@pytest.mark.parametrize("backend", ["torch", "compiled"])
@pytest.mark.parametrize("loss", ["logistic", "mse"])
def test_linear_equals_torch_adam_alone(loss, backend):
    X, y = _data(regression=loss == "mse")
    model = engine_models.Linear(X.shape[2])
    th0 = engine_models.init_params(model, X.shape[0], 0)
    res = engine.train(model, th0, X, y,
                       engine.TrainConfig(epochs=80, lr=1e-2, loss=loss, chunk_size=2, record_loss=True,
                                          backend=backend))
    for k in range(X.shape[0]):
        ref = _alone_linear(th0[k], X[k], y[k], 80, 1e-2, loss)
        torch.testing.assert_close(res.theta[k], ref, atol=2e-6, rtol=1e-5)
    # the recorded training loss is the loss before each step
    out0 = model.forward(th0, X)
    torch.testing.assert_close(res.train_loss[0], losses.per_sample_loss(loss, out0, y).mean(dim=1))


def test_mlp_equals_torch_adam_alone():
    X, y = _data(K=3, d=5, regression=True)
    model = engine_models.MLP(5, hidden=8)
    th0 = engine_models.init_params(model, 3, 1)
    res = engine.train(model, th0, X, y, engine.TrainConfig(epochs=40, lr=5e-3, loss="mse"))
    for k in range(3):
        net = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
        p = model.unflatten(th0[k:k + 1])
        with torch.no_grad():
            for name, t in net.state_dict().items():
                t.copy_(p[name][0])
        opt = torch.optim.Adam(net.parameters(), lr=5e-3)
        for _ in range(40):
            opt.zero_grad()
            F.mse_loss(net(X[k]).squeeze(-1), y[k]).backward()
            opt.step()
        ref = torch.cat([t.detach().reshape(-1) for t in net.state_dict().values()])
        torch.testing.assert_close(res.theta[k], ref, atol=2e-6, rtol=1e-5)


def test_init_matches_nn_linear_bounds_and_is_seeded():
    model = engine_models.Linear(100)
    a = engine_models.init_params(model, 200, 3)
    b = engine_models.init_params(model, 200, 3)
    assert torch.equal(a, b)
    assert not torch.equal(a, engine_models.init_params(model, 200, 4))
    assert a.abs().max() <= 0.1 and a.abs().max() > 0.099          # U(−1/√100, 1/√100)
    assert a.std().item() == pytest.approx(0.1 / 3**0.5, rel=0.02)


@pytest.mark.parametrize("backend", ["torch", "compiled"])
def test_chunking_does_not_change_the_result(backend):
    X, y = _data(K=9)
    model = engine_models.Linear(X.shape[2])
    th0 = engine_models.init_params(model, 9, 0)
    a = engine.train(model, th0, X, y, engine.TrainConfig(epochs=30, lr=1e-2, chunk_size=1, backend=backend)).theta
    b = engine.train(model, th0, X, y, engine.TrainConfig(epochs=30, lr=1e-2, chunk_size=9, backend=backend)).theta
    torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("backend", ["torch", "compiled"])
def test_callbacks_see_every_epoch_and_chunk(backend):
    X, y = _data(K=5)
    model = engine_models.Linear(X.shape[2])
    seen = []

    class Rec(engine.Callback):
        def on_chunk_start(self, models):
            seen.append(("start", models.start, models.stop))

        def on_epoch_end(self, epoch, theta, models):
            seen.append(("epoch", epoch, theta.shape[0]))

        def on_chunk_end(self, models, theta):
            seen.append(("end", models.start, models.stop))

    fn_calls = []
    engine.train(model, engine_models.init_params(model, 5, 0), X, y,
                 engine.TrainConfig(epochs=3, chunk_size=3, backend=backend),
                 callbacks=[Rec(), lambda e, th, m: fn_calls.append(e)])
    assert seen[0] == ("start", 0, 3) and seen[4] == ("end", 0, 3) and seen[5] == ("start", 3, 5)
    assert [s[1] for s in seen if s[0] == "epoch"] == [1, 2, 3, 1, 2, 3]
    assert fn_calls == [1, 2, 3, 1, 2, 3]


def test_forward_with_leading_quantizer_axis():
    X, _ = _data(K=4)
    for model in (engine_models.Linear(X.shape[2]), engine_models.MLP(X.shape[2], hidden=3)):
        th = torch.stack([engine_models.init_params(model, 4, s) for s in range(3)])     # (Q, K, p)
        out = model.forward(th, X)
        assert out.shape == (3, 4, X.shape[1])
        for q in range(3):
            torch.testing.assert_close(out[q], model.forward(th[q], X))


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(epochs=-1), ValueError, "epochs"),
    (dict(lr=0.0), ValueError, "lr"),
    (dict(loss="hinge"), ValueError, "loss"),
    (dict(chunk_size=0), ValueError, "chunk_size"),
    (dict(betas=(1.0, 0.9)), ValueError, "betas"),
    (dict(callbacks=[3]), TypeError, "callbacks"),
])
def test_bad_arguments(kwargs, exc, match):
    X, y = _data()
    model = engine_models.Linear(X.shape[2])
    th0 = engine_models.init_params(model, X.shape[0], 0)
    args = dict(epochs=2)
    args.update(kwargs)
    callbacks = args.pop("callbacks", ())
    with pytest.raises(exc, match=match):
        engine.train(model, th0, X, y, engine.TrainConfig(**args), callbacks=callbacks)


def test_bad_shapes_and_values():
    X, y = _data()
    model = engine_models.Linear(X.shape[2])
    th0 = engine_models.init_params(model, X.shape[0], 0)
    with pytest.raises(ValueError, match="models"):
        engine.train(model, th0[:3], X, y, engine.TrainConfig(epochs=1))  # 3 models, 5 data sets
    with pytest.raises(ValueError, match="theta0"):
        engine.train(model, th0[:, :3], X, y, engine.TrainConfig(epochs=1))
    with pytest.raises(ValueError, match="targets"):
        engine.train(model, th0, X, y[:, :3], engine.TrainConfig(epochs=1))
    bad = X.clone()
    bad[0, 0, 0] = float("inf")
    with pytest.raises(ValueError, match="non-finite"):
        engine.train(model, th0, bad, y, engine.TrainConfig(epochs=1))
    with pytest.raises(ValueError, match="K"):
        engine_models.init_params(model, 0, 0)
    with pytest.raises(ValueError, match="in_features"):
        engine_models.Linear(0)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_matches_cpu():
    X, y = _data()
    model = engine_models.Linear(X.shape[2])
    th0 = engine_models.init_params(model, X.shape[0], 0)
    a = engine.train(model, th0, X, y, engine.TrainConfig(epochs=20, lr=1e-2, device="cpu")).theta
    b = engine.train(model, th0, X, y, engine.TrainConfig(epochs=20, lr=1e-2, device="cuda")).theta
    torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


def test_model_protocol_and_public_accessors():
    lin, mlp = engine_models.Linear(3), engine_models.MLP(3, hidden=4)
    assert isinstance(lin, engine_models.AnalyticModel) and isinstance(mlp, engine_models.Model)
    assert not isinstance(mlp, engine_models.AnalyticModel)                 # no vjp: trained with autograd
    assert engine_models.param_sizes(lin) == [3, 1] and engine_models.param_sizes(mlp) == [12, 4, 4, 1]
    assert sum(engine_models.param_sizes(mlp)) == mlp.n_params
    fn, grad = losses.loss_functions("mse")
    out, y = torch.tensor([[1.0, 3.0]]), torch.tensor([[0.0, 1.0]])
    assert torch.equal(fn(out, y), torch.tensor([[1.0, 4.0]])) and torch.equal(grad(out, y), torch.tensor([[2.0, 4.0]]))
    with pytest.raises(ValueError, match="loss must be one of"):
        losses.loss_functions("hinge")
    with pytest.raises(ValueError, match="targets of X"):
        engine.check_data(torch.zeros(2, 3, 1), torch.zeros(2, 4))


def test_non_finite_theta0_and_bad_seed():
    X, y = _data()
    model = engine_models.Linear(X.shape[2])
    th0 = engine_models.init_params(model, X.shape[0], 0)
    th0[0, 0] = float("nan")
    with pytest.raises(ValueError, match="theta0 must be finite"):
        engine.train(model, th0, X, y, engine.TrainConfig(epochs=1))
    with pytest.raises(ValueError, match="seed"):
        engine_models.init_params(model, 2, -1)


# ----------------------------------------------------------------------------- broken input (issue 11)
@pytest.mark.parametrize("kwargs, exc, arg", [
    (dict(in_features=0), ValueError, "in_features"),
    (dict(in_features=1.5), TypeError, "in_features"),
    (dict(in_features=True), TypeError, "in_features"),
    (dict(in_features=3, hidden=0), ValueError, "hidden"),
    (dict(in_features=3, hidden=2.0), TypeError, "hidden"),
    (dict(in_features=3, hidden=None), TypeError, "hidden"),
])
def test_mlp_validates_its_sizes(kwargs, exc, arg):
    with pytest.raises(exc, match=rf"\b{arg}\b"):
        engine_models.MLP(**kwargs)


def test_mlp_checks_the_data_shape_once_per_chunk():
    mlp = engine_models.MLP(3, hidden=4)
    with pytest.raises(ValueError, match=r"\bX\b.*\(K, n, 3\)"):
        mlp.prepare(torch.zeros(2, 5, 4))
    with pytest.raises(ValueError, match=r"\bX\b"):
        mlp.prepare(torch.zeros(5, 3))
    X, y = _data(K=2, d=4)
    with pytest.raises(ValueError, match=r"\bX\b"):
        engine.train(mlp, engine_models.init_params(mlp, 2, 0), X, y, engine.TrainConfig(epochs=1))


@pytest.mark.parametrize("label", [2.0, -1.0, 0.5])
def test_logistic_loss_rejects_labels_outside_0_1(label):
    """Labels outside {0, 1} used to train silently under binary cross-entropy."""
    X, y = _data()
    model = engine_models.Linear(X.shape[2])
    th0 = engine_models.init_params(model, X.shape[0], 0)
    y[1, 3] = label
    with pytest.raises(ValueError, match=r"\by\b.*\{0, 1\}"):
        engine.train(model, th0, X, y, engine.TrainConfig(epochs=1))
    with pytest.raises(ValueError, match=r"\by\b.*\{0, 1\}"):
        losses.per_sample_loss("logistic", torch.zeros_like(y), y)
    engine.train(model, th0, X, y, engine.TrainConfig(epochs=1, loss="mse"))  # any real target for MSE


def test_targets_and_sizes_are_named():
    X, y = _data()
    bad = y.clone()
    bad[0, 0] = float("nan")
    with pytest.raises(ValueError, match=r"\by\b"):
        engine.check_data(X, bad)
    with pytest.raises(ValueError, match=r"\bK\b"):
        engine.check_data(X, y, 0)
    with pytest.raises(TypeError, match=r"\bbetas\b"):
        model = engine_models.Linear(X.shape[2])
        engine.train(model, engine_models.init_params(model, X.shape[0], 0), X, y, engine.TrainConfig(epochs=1, betas=None))
    with pytest.raises(ValueError, match=r"\bK\b"):
        engine.default_chunk_size(torch.device("cpu"), 0)
    with pytest.raises(ValueError, match=r"\by\b.*\bout\b"):
        losses.per_sample_loss("mse", torch.zeros(2, 5), torch.zeros(10))


# ----------------------------------------------------------------------------- the TrainConfig record
def test_train_needs_a_config_with_epochs():
    X, y = _data()
    model = engine_models.Linear(X.shape[2])
    th0 = engine_models.init_params(model, X.shape[0], 0)
    with pytest.raises(TypeError, match=r"\bconfig\b"):
        engine.train(model, th0, X, y)
    with pytest.raises(TypeError, match=r"\bepochs\b"):
        engine.train(model, th0, X, y, engine.TrainConfig(lr=1e-2))
    with pytest.raises(TypeError, match=r"\bconfig\b"):
        engine.train(model, th0, X, y, {"epochs": 2})


@pytest.mark.parametrize("kwargs, exc, arg", [
    (dict(epochs=-1), ValueError, "epochs"), (dict(epochs=1.5), TypeError, "epochs"),
    (dict(epochs=2, lr=0.0), ValueError, "lr"), (dict(epochs=2, lr=float("nan")), ValueError, "lr"),
    (dict(epochs=2, betas=(1.0, 0.9)), ValueError, "betas"), (dict(epochs=2, betas=0.9), TypeError, "betas"),
    (dict(epochs=2, betas=(0.9,)), ValueError, "betas"), (dict(epochs=2, eps=-1.0), ValueError, "eps"),
    (dict(epochs=2, loss="hinge"), ValueError, "loss"),
])
def test_train_config_validates_each_field_by_name(kwargs, exc, arg):
    with pytest.raises(exc, match=rf"\b{arg}\b"):
        engine.TrainConfig(**kwargs)


def test_train_config_is_frozen_hashable_and_keyed():
    import dataclasses

    a = engine.TrainConfig(epochs=5, lr=1e-3, betas=[0.9, 0.99])
    b = engine.TrainConfig(epochs=5, lr=1e-3, betas=(0.9, 0.99))
    assert a == b and hash(a) == hash(b) and a.key() == b.key()
    assert a.betas == (0.9, 0.99) and isinstance(a.betas, tuple)
    assert a.key() != dataclasses.replace(a, lr=2e-3).key()
    assert a.key() != dataclasses.replace(a, loss="mse").key()
    # the key is a pure function of the fields (pinned: stable across processes and versions)
    assert engine.TrainConfig(epochs=5).key() == "c2be39a1df16321b"
    assert len(a.key()) == 16 and int(a.key(), 16) >= 0
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.lr = 1.0


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
@pytest.mark.parametrize("where", ["theta", "X"])
@pytest.mark.parametrize("family", ["Linear", "MLP"])
def test_forward_refuses_nonfinite_parameters_and_inputs_unless_allowed(family, where, bad):
    """The forward passes' non-finite policy (qlib.validation): forward, the user's call, names the
    argument; allow_nonfinite=True scores a diverged model as NaN; apply, the training loop's call,
    checks kind and shape only."""
    model = engine_models.Linear(3) if family == "Linear" else engine_models.MLP(3, 4)
    th = engine_models.init_params(model, 2, 0)
    X = torch.randn(2, 5, 3, generator=torch.Generator().manual_seed(1))
    (th if where == "theta" else X)[1, 0] = bad
    with pytest.raises(ValueError, match=rf"^{where} must be finite"):
        model.forward(th, X)
    out = model.forward(th, X, allow_nonfinite=True)
    assert torch.isfinite(out[0]).all() and not torch.isfinite(out[1]).all()
    torch.testing.assert_close(model.apply(th, model.prepare(X)), out, equal_nan=True)
