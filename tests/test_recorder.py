"""The r_Q^n recording callback (qlib.recorder) on batched training (qlib.engine), and the fused
quantization it records with (qlib.quantizers.quantize_many); its incremental path is tested in
test_recorder_incremental.py."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from qlib import engine, engine_models, losses, quantizers, recorder, rqn, synthetic


# ----------------------------------------------------------------------------- fused quantizers
@pytest.mark.parametrize("variant", quantizers.VARIANTS)
@pytest.mark.parametrize("scope", ["model", "tensor"])
def test_quantize_many_equals_quantizers_module(scope, variant):
    model = engine_models.Linear(30)
    th = engine_models.init_params(model, 50, 0)
    th[0, :5] = 0.0                                   # exact zeros and ties
    th[1, :10] = 0.25
    names = quantizers.names()
    split = engine_models.param_sizes(model) if scope == "tensor" else None
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
        recorder.RQRecorder(model, ["sign"], Xv, Yv, recorder.RecorderConfig(epochs=5, scope="layer"))


# ----------------------------------------------------------------------------- the recorder
def _tiny_setup(R=3, n=32, d=6, epochs=60, seed=0):
    laws = synthetic.make_laws(seed, grid=[(1.5, 6), (3.0, 8)], dim=d)
    g = torch.Generator().manual_seed(seed)
    x, y = synthetic.sample(laws, (R, n), g)
    xv, yv = synthetic.sample(laws, (R, n), g)
    K = len(laws) * R
    model = engine_models.Linear(2 * d)
    th0 = engine_models.init_params(model, K, seed)
    return model, th0, x.reshape(K, n, d), y.reshape(K, n), xv.reshape(K, n, d), yv.reshape(K, n), epochs


@pytest.mark.parametrize("backend", ["torch", "compiled"])
def test_recorder_equals_r_q_on_each_trajectory(backend):
    model, th0, X, Y, Xv, Yv, epochs = _tiny_setup()
    names = ["sign", "ternary50", "bits2", "bits4"]
    rec = recorder.RQRecorder(model, names, Xv, Yv,
                              recorder.RecorderConfig(epochs=epochs, transform=synthetic.features, keep_losses=True,
                                                      block=7, backend=backend))
    res = engine.train(model, th0, X, Y, engine.TrainConfig(epochs=epochs, lr=3e-2, chunk_size=4, backend=backend),
                       transform=synthetic.features, callbacks=[rec])
    # the recorded losses are those of the quantized models of every epoch (checked on the last)
    thq = quantizers.quantize_many(names, res.theta, split=engine_models.param_sizes(model))
    last = losses.per_sample_loss("logistic", model.forward(thq, synthetic.features(Xv)), Yv)
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
    rec = recorder.RQRecorder(model, ["sign"], Xv, Yv,
                              recorder.RecorderConfig(epochs=5, transform=synthetic.features, backend=backend))
    engine.train(model, th0, X, Y, engine.TrainConfig(epochs=5, lr=1e-9, backend=backend),
                 transform=synthetic.features, callbacks=[rec])
    assert np.isnan(rec.r).all()
    with pytest.warns(rqn.RQUndefinedWarning):
        rec.finish()


def test_recorder_bad_input():
    model, th0, X, Y, Xv, Yv, _ = _tiny_setup(R=2, epochs=5)
    with pytest.raises(ValueError, match="unknown quantizer"):
        recorder.RQRecorder(model, ["nope"], Xv, Yv, recorder.RecorderConfig(epochs=5))
    with pytest.raises(ValueError, match="epochs"):
        recorder.RQRecorder(model, ["sign"], Xv, Yv, recorder.RecorderConfig(epochs=0))
    with pytest.raises(ValueError, match="ndim 3"):
        recorder.RQRecorder(model, ["sign"], Xv[0], Yv, recorder.RecorderConfig(epochs=5))
    bad = Xv.clone()
    bad[0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match="non-finite"):
        recorder.RQRecorder(model, ["sign"], bad, Yv, recorder.RecorderConfig(epochs=5))


@pytest.mark.parametrize("ddof, exc", [(2, ValueError), (-1, ValueError), (1.0, TypeError), (True, TypeError),
                                       (float("nan"), TypeError), ("1", TypeError)])
def test_recorder_accepts_only_ddof_0_or_1(ddof, exc):
    """RQRecorder(ddof=2) used to be accepted; the estimator uses the biased (0) or unbiased (1)
    variance only."""
    model, _, _, _, Xv, Yv, _ = _tiny_setup(R=2, epochs=5)
    with pytest.raises(exc, match=r"\bddof\b"):
        recorder.RQRecorder(model, ["sign"], Xv, Yv, recorder.RecorderConfig(epochs=5, ddof=ddof))
    for ok in (0, 1):
        assert recorder.RQRecorder(model, ["sign"], Xv, Yv, recorder.RecorderConfig(epochs=5, ddof=ok)).ddof == ok


def test_recorder_names_y_val_and_rejects_non_binary_labels_under_logistic_loss():
    model, _, _, _, Xv, Yv, _ = _tiny_setup(R=2, epochs=5)
    bad = Yv.clone()
    bad[0, 0] = 2.0
    with pytest.raises(ValueError, match=r"\by_val\b.*\{0, 1\}"):
        recorder.RQRecorder(model, ["sign"], Xv, bad, recorder.RecorderConfig(epochs=5))
    recorder.RQRecorder(model, ["sign"], Xv, bad, recorder.RecorderConfig(epochs=5, loss="mse"))  # any target for MSE
    bad[0, 0] = float("nan")
    with pytest.raises(ValueError, match=r"\by_val\b"):
        recorder.RQRecorder(model, ["sign"], Xv, bad, recorder.RecorderConfig(epochs=5, loss="mse"))
