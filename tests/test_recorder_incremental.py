"""The incremental recording of an MLP (``qlib.recorder``, ``qlib._kernels.incremental.mlp_*``) against a full
recomputation every epoch (the torch recorder), and the shared-rows training of ``qlib.engine.train``.

Exactness asked of the incremental path (both paths compute in float32 and sum in different orders):

* per-sample validation losses equal the full recomputation to 1e-5 relative to the loss's own
  scale (|Δℓ| ≤ 1e-5·(|ℓ| + mean ℓ of the row): a confident prediction's loss of 1e-9 differs in
  relative terms by the rounding of its logit, as any two float32 computations of it do);
* r_Q^n of every (quantizer, run) agrees to 1e-4 relative (4 significant digits) wherever float32
  losses determine it to that precision (the gap δ_2 ≥ ~10⁻³·m_1: r's rounding error is about
  2ε·m_1/δ_2), and within 10× that error elsewhere; θ̄_1's epoch is the same or holds a model with
  the same losses;

on synthetic data, on a trajectory whose b-bit scale α jumps mid-way (every code changes: the
dense product), on per-model validation sets, and on three real TDC tasks (MACCS keys).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from qlib import engine, engine_models, molecules, recorder
from qlib.repro.quantized_mis import molecular as MM
from qlib.rqn import RQUndefinedWarning

NAMES = list(MM.QUANTIZERS)


def _close_losses(inc: torch.Tensor, full: torch.Tensor) -> None:
    scale = full.abs() + full.abs().mean(dim=-1, keepdim=True)
    bad = (inc - full).abs() > 1e-5 * scale
    assert not bad.any(), f"{int(bad.sum())} losses differ by more than 1e-5 of their scale"


def _compare(inc, full, streams_with_r=1):
    _close_losses(inc.losses, full.losses)
    ok = np.isfinite(full.r)
    assert ok.sum() >= streams_with_r
    np.testing.assert_array_equal(np.isfinite(inc.r), ok)
    # float32 determines r to 4 digits where the gap δ_2 is large against the rounding of the mean
    # losses: relative error ≈ 2·ε·m_1/δ_2 (ε = 2^-24). There r agrees to 1e-4 relative; elsewhere to
    # 10× that bound (what two float32 computations of the same losses can differ by).
    m1 = full.losses.double().mean(dim=-1).amin(dim=0).numpy()           # (Q, K)
    cond = 2 * 2.0**-24 * m1 / np.abs(full.delta2)
    rtol = np.where(cond <= 1e-5, 1e-4, np.maximum(1e-4, 10 * cond))
    err = np.abs(inc.r - full.r) / np.abs(full.r)
    assert (err[ok] <= rtol[ok]).all(), (err[ok], rtol[ok])
    assert (cond[ok] <= 1e-5).any()                                    # the strict test is not vacuous
    # θ̄_1: the same epoch, or one whose model has the same losses (a tie between copies of one
    # function, which float32 rounding may break either way)
    m = full.losses.double().mean(dim=-1).numpy()                       # (T, Q, K)
    Q, K = full.r.shape
    qi, ki = np.meshgrid(np.arange(Q), np.arange(K), indexing="ij")
    np.testing.assert_allclose(m[inc.best_epoch - 1, qi, ki], m[full.best_epoch - 1, qi, ki], rtol=1e-6)


def _recorders(model, Xv, yv, epochs, **kw):
    inc = recorder.RQRecorder(model, NAMES, Xv, yv,
                              recorder.RecorderConfig(epochs=epochs, keep_losses=True, device="cpu", **kw))
    full = recorder.RQRecorder(model, NAMES, Xv, yv,
                               recorder.RecorderConfig(epochs=epochs, keep_losses=True, device="cpu", backend="torch",
                                                       loss=kw.get("loss", "logistic")))
    assert inc._incremental and not full._incremental
    return inc, full


def _data(n=240, d=12, K=3, seed=0, shared=True):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, d, generator=g)
    y = (X[:, 0] + 0.5 * torch.randn(n, generator=g) > 0).float()
    Xv = torch.randn(1 if shared else K, n // 2, d, generator=g)
    yv = (Xv[..., 0] > 0).float()
    if shared:
        Xv, yv = Xv.expand(K, -1, -1), yv.expand(K, -1)
    rows = torch.stack([torch.randperm(n, generator=g)[: int(0.9 * n)] for _ in range(K)])
    return X, y, Xv, yv, rows


@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("loss", ["logistic", "mse"])
def test_incremental_equals_full_recomputation_along_training(shared, loss):
    X, y, Xv, yv, rows = _data(shared=shared)
    model = engine_models.MLP(X.shape[1], hidden=16)
    inc, full = _recorders(model, Xv, yv, 80, loss=loss, refresh=30)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RQUndefinedWarning)
        # the same trajectory feeds both recorders
        engine.train(model, engine_models.init_params(model, 3, 0), X[None], y[None],
                     engine.TrainConfig(epochs=80, lr=1e-2, loss=loss), rows=rows, callbacks=[inc, full])
        inc.finish(), full.finish()
    _compare(inc, full, streams_with_r=12)
    frac, done, total = inc.change_stats()
    assert set(frac) == set(NAMES) and all(0 < f < 1 for f in frac.values())
    assert 0 < done < total
    assert frac["sign"] < frac["bits5"]          # a finer grid moves more codes per step


def test_scale_jump_mid_trajectory_and_every_threshold():
    """A b-bit quantizer's α = 2^round(log2 max|θ|) doubles at epoch 25 (every code changes): the dense
    product takes over; the result does not depend on when the path is dense or sparse, nor on the
    refresh period."""
    X, y, Xv, yv, rows = _data(K=2)
    model = engine_models.MLP(X.shape[1], hidden=8)
    g = torch.Generator().manual_seed(3)
    th = engine_models.init_params(model, 2, 1)
    traj = th + torch.randn(50, 2, model.n_params, generator=g).mul(2e-3).cumsum(0)
    traj[25:] *= 1.6                                   # max|θ| crosses a power-of-two midpoint
    recs = {}
    for key, kw in {"full": dict(backend="torch"), "default": {}, "always_dense": dict(dense_above=0.0),
                    "never_dense": dict(dense_above=1.0, refresh=10**6), "refresh1": dict(refresh=1)}.items():
        rec = recorder.RQRecorder(model, NAMES, Xv[:2], yv[:2],
                                  recorder.RecorderConfig(epochs=50, keep_losses=True, device="cpu", **kw))
        rec.on_chunk_start(slice(0, 2))
        for t in range(50):
            rec.on_epoch_end(t + 1, traj[t], slice(0, 2))
        rec.on_chunk_end(slice(0, 2), traj[-1])
        recs[key] = rec
    a = torch.log2(traj[:, :, : 8 * X.shape[1]].abs().amax(-1)).round()
    assert (a[25] != a[24]).all()                       # the jump happened
    for key in ("default", "always_dense", "never_dense", "refresh1"):
        _compare(recs[key], recs["full"], streams_with_r=8)


def test_real_tasks_agree_with_full_recomputation(shared_data_dir, tmp_path):
    """Three real TDC tasks (MACCS keys), the chapter's model (hidden 128), 3 runs × 60 epochs."""
    for name in ("Carcinogens_Lagunin", "Skin_Reaction", "DILI"):
        task = molecules.load_task(name, data_dir=shared_data_dir)
        emb, _ = molecules.embed_cached(name, task.smiles, "maccs", cache_dir=tmp_path)
        Xn, yn = MM._standardise(emb.X, emb.X).astype(np.float32), task.y[emb.valid].astype(np.float32)
        val, tr = MM.split_indices(len(yn), runs=3, seed=0)
        X, y = torch.from_numpy(Xn), torch.from_numpy(yn)
        model = engine_models.MLP(X.shape[1], hidden=128)
        Xv = X[torch.from_numpy(val)].expand(3, -1, -1)
        yv = y[torch.from_numpy(val)].expand(3, -1)
        inc, full = _recorders(model, Xv, yv, 60)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RQUndefinedWarning)
            engine.train(model, engine_models.init_params(model, 3, 0), X[None], y[None],
                         engine.TrainConfig(epochs=60, lr=1e-3), rows=torch.from_numpy(tr), callbacks=[inc, full])
            inc.finish(), full.finish()
        _compare(inc, full, streams_with_r=12)


@pytest.mark.parametrize("loss", ["logistic", "mse"])
def test_train_on_shared_rows_equals_gathered_copies(loss):
    X, y, _, _, rows = _data(d=7)
    model = engine_models.MLP(7, hidden=6)
    th0 = engine_models.init_params(model, 3, 0)
    a = engine.train(model, th0, X[rows], y[rows], engine.TrainConfig(epochs=40, lr=1e-2, loss=loss, record_loss=True))
    b = engine.train(model, th0, X[None], y[None], engine.TrainConfig(epochs=40, lr=1e-2, loss=loss, record_loss=True),
                     rows=rows)
    torch.testing.assert_close(b.train_loss, a.train_loss, rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(b.theta, a.theta, rtol=1e-4, atol=1e-5)
    # a model without shared_loss_grad trains on the gathered copies: the same numbers
    lin = engine_models.Linear(7)
    t0 = engine_models.init_params(lin, 3, 0)
    c = engine.train(lin, t0, X[rows], y[rows], engine.TrainConfig(epochs=5, lr=1e-2, backend="torch"))
    e = engine.train(lin, t0, X[None], y[None], engine.TrainConfig(epochs=5, lr=1e-2, backend="torch"), rows=rows)
    torch.testing.assert_close(e.theta, c.theta)


def test_rows_and_recorder_arguments_are_checked():
    X, y, Xv, yv, rows = _data(d=5)
    model = engine_models.MLP(5, hidden=4)
    th0 = engine_models.init_params(model, 3, 0)
    with pytest.raises(TypeError, match="rows must be an integer tensor"):
        engine.train(model, th0, X[None], y[None], engine.TrainConfig(epochs=1), rows=rows.float())
    with pytest.raises(ValueError, match=r"rows must have shape \(K, m\) = \(3"):
        engine.train(model, th0, X[None], y[None], engine.TrainConfig(epochs=1), rows=rows[:2])
    with pytest.raises(ValueError, match="rows must index the 240 rows"):
        engine.train(model, th0, X[None], y[None], engine.TrainConfig(epochs=1), rows=rows + 100)
    bad = rows.clone()
    bad[0, 1] = bad[0, 0]
    with pytest.raises(ValueError, match="distinct"):
        engine.train(model, th0, X[None], y[None], engine.TrainConfig(epochs=1), rows=bad)
    with pytest.raises(ValueError, match="X holds data for 2 models but K = 1"):
        engine.train(model, th0, X[None].expand(2, -1, -1), y[None].expand(2, -1), engine.TrainConfig(epochs=1),
                     rows=rows)
    for kw, msg in ((dict(refresh=0), "refresh"), (dict(dense_above=1.5), "dense_above"),
                    (dict(dense_above=float("nan")), "dense_above")):
        with pytest.raises(ValueError, match=msg):
            recorder.RQRecorder(model, ["sign"], Xv, yv, recorder.RecorderConfig(epochs=3, **kw))
    with pytest.raises(TypeError, match="model must be a qlib.engine_models.Model"):
        recorder.compiled_reason(object(), "cpu")


def test_recorded_losses_do_not_depend_on_the_thread_count():
    """The same training recorded at one and at two torch threads gives the same losses and r_Q^n, bit for
    bit. The first epoch's dense product (every model's first layer against the validation inputs, here
    10 runs × 8 quantizers × 128 hidden rows of 1024 inputs) is the shape where a two-thread ``torch.matmul``
    sums in another order than one thread (measured: 6.9e-5 apart); the product runs at one thread."""
    X, y, Xv, yv, rows = _data(n=320, d=1024, K=10, seed=4)
    model = engine_models.MLP(1024, 128)
    out = []
    old = torch.get_num_threads()
    try:
        for threads in (1, 2):
            torch.set_num_threads(threads)
            rec = recorder.RQRecorder(model, NAMES, Xv, yv, recorder.RecorderConfig(epochs=3, keep_losses=True,
                                                                                    device="cpu"))
            assert rec._incremental
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RQUndefinedWarning)
                engine.train(model, engine_models.init_params(model, 10, 0), X[None], y[None],
                             engine.TrainConfig(epochs=3, device="cpu"), rows=rows, callbacks=[rec])
            out.append(rec)
    finally:
        torch.set_num_threads(old)
    assert torch.equal(out[0].losses, out[1].losses)
    np.testing.assert_array_equal(out[0].r, out[1].r)
