"""The compiled CPU path of the engine and the recorder (qlib._kernels.engine, .quantize, .rqn) against the torch path.

* quantizers: the same values as ``qlib.quantizers.quantize_many``, exactly (every family, both
  b-bit variants, per-tensor blocks, ties and zero blocks, the ternary pivot carried between calls);
* Algorithm-1 statistics: ``qlib.rqn.batched_rates`` and ``qlib.rqn.trajectory_stats`` per stream;
* training: the torch backend to float32 rounding, the same bits on every run and thread count;
* the recorder: the torch recorder's r_Q^n, epochs and distinct counts.
"""

from __future__ import annotations

import warnings

import numba
import numpy as np
import pytest
import torch

from qlib import engine, engine_models, quantizers, recorder, rqn, synthetic
from qlib._kernels import quantize as kq
from qlib._kernels import rqn as kr

ALL = quantizers.names() + list(quantizers.TERNARY_TABLE.values())   # both 1.58b readings


def _codes(names, split, variant):
    return kq.quantizer_codes(names, split, variant)


def _rows(E=12, K=5, p=41, seed=0, walk=True):
    g = torch.Generator().manual_seed(seed)
    if walk:   # a trajectory: small steps from one epoch to the next (the pivots' case)
        x = torch.randn(1, K, p, generator=g) * 0.05 + torch.randn(E, K, p, generator=g).mul(3e-3).cumsum(0)
    else:
        x = torch.randn(E, K, p, generator=g) * 0.05
    if E < 5 or K < 5:
        return x.contiguous()
    x[0, 0, :6] = 0.0                       # zeros (sign(0) = +1 for sign, 0 for ternary)
    x[1, 1] = 0.0                           # an all-zero row: α = 0
    x[2, 2, 3:15] = 0.01                    # ties in |θ| across the ternary cut
    x[3, 3, 5:9] = torch.tensor([-0.02, 0.02, -0.02, 0.02])
    x[4, 4, -1] = 1.0                       # a power of two (α exact)
    x[2, 3, -8:-4] = torch.tensor([0.02, -0.02, 0.0, 0.02])   # ties and a zero in a small block
    return x.contiguous()


@pytest.mark.parametrize("variant", quantizers.VARIANTS)
@pytest.mark.parametrize("split", [[40, 1], [41], [10, 30, 1], [30, 3, 8]])
@pytest.mark.parametrize("walk", [True, False])
def test_quantize_rows_equals_quantize_many_exactly(variant, split, walk):
    x = _rows(walk=walk)
    E, K, p = x.shape
    kinds, params, offsets = _codes(ALL, split, variant)
    out = np.empty((K, E, len(ALL), p), np.float32)
    pivots = np.full((K, len(ALL) * len(split)), -1, np.int64)
    # two calls: the second starts from the pivots the first left
    kq.quantize_rows(x[:5].numpy(), kinds, params, offsets, out[:, :5], pivots)
    kq.quantize_rows(x[5:].numpy(), kinds, params, offsets, out[:, 5:], pivots)
    ref = quantizers.quantize_many(ALL, x.reshape(E * K, p), split=split, variant=variant)
    ref = ref.reshape(len(ALL), E, K, p).permute(2, 1, 0, 3).numpy()
    np.testing.assert_array_equal(out, ref)


def test_ternary_pivot_from_any_start_is_the_stable_argsort_cut():
    """Whatever index the kept pivot holds, the zeroed set is the first kz of the stable argsort."""
    x = _rows(E=1, K=1, p=64, walk=False)
    x[0, 0, 10:30] = 0.01                   # ties across every cut
    x[0, 0, 40:44] = 0.0
    kinds, params, offsets = _codes(["ternary33", "ternary50", "ternary90"], [64], "printed")
    ref = quantizers.quantize_many(["ternary33", "ternary50", "ternary90"], x[0]).numpy()
    for start in (-1, 0, 17, 63):
        out = np.empty((1, 1, 3, 64), np.float32)
        pivots = np.full((1, 3), start, np.int64)
        kq.quantize_rows(x.numpy(), kinds, params, offsets, out, pivots)
        np.testing.assert_array_equal(out[0, 0], ref[:, 0])


def _row_models(B, ep):
    """Stand-in model hashes: rows with equal losses are the same model (as qlib.rqn assumes)."""
    K, T, Q, n = B.shape
    eh = np.zeros(ep.shape, np.int64)
    for k in range(K):
        for q in range(Q):
            ids = {}
            for i, t in enumerate(ep[k, q]):
                eh[k, q, i] = ids.setdefault(B[k, t, q].numpy().tobytes(), len(ids))
    return eh


def _stats(B, ddof=1, ep=None, ne=None, eh=None):
    K, T, Q, n = B.shape
    outs = [np.empty((K, Q)), np.empty((K, Q), np.int64), np.empty((K, Q)), np.empty((K, Q), np.int64),
            np.empty((K, Q), np.int64), np.zeros(K, np.int64)]
    if ep is None:     # every epoch listed
        ep = np.broadcast_to(np.arange(T), (K, Q, T)).copy()
        ne = np.full((K, Q), T, np.int64)
    if eh is None:
        eh = _row_models(B, ep)
    r, best, d2, kb, nd, bad = outs
    kr.rq_stats(B.numpy(), ep, eh, ne, ddof, 0.0, r, best, d2, kb, nd, bad)
    return r, best, d2, kb, nd, bad


@pytest.mark.parametrize("ddof", [0, 1])
def test_rq_stats_equals_batched_rates_and_trajectory_stats(ddof):
    g = torch.Generator().manual_seed(3)
    K, T, Q, n = 4, 60, 3, 16
    B = torch.rand(K, T, Q, n, generator=g)
    B[:, 20:40, 0] = B[:, 5:6, 0]           # copies of one model
    B[1, :, 1] = B[1, :1, 1]                # a stream that never changes: NaN
    B[2, 7, 2] = B[2, 30, 2] + 0.25         # a constant shift of another row
    r, best, d2, kb, nd, bad = _stats(B, ddof)
    assert not bad.any()
    S = B.permute(1, 2, 0, 3).reshape(T, Q * K, n)                    # stream s = q·K + k
    rr, bb, dd, kk, nn = (a.reshape(Q, K).T.numpy() for a in rqn.batched_rates(S, ddof=ddof))
    np.testing.assert_allclose(r, rr, rtol=2e-5)
    np.testing.assert_array_equal(np.isnan(r), np.isnan(rr))
    np.testing.assert_array_equal(best, bb)
    np.testing.assert_array_equal(kb, kk)
    np.testing.assert_array_equal(nd, nn)
    np.testing.assert_allclose(d2, dd, rtol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rqn.RQUndefinedWarning)
        for k in range(K):
            for q in range(Q):
                st = rqn.trajectory_stats(B[k, :, q], ddof=ddof)
                np.testing.assert_allclose(r[k, q], st.r_q, rtol=1e-9)     # float64 variances
                assert nd[k, q] == st.n_distinct
    assert np.isnan(r[1, 1]) and nd[1, 1] == 1


def test_rq_stats_over_the_listed_epochs_equals_the_full_buffer():
    """Epochs left out repeat the last listed row (what quantize_unique skips): same statistics."""
    g = torch.Generator().manual_seed(5)
    K, T, Q, n = 3, 50, 2, 12
    B = torch.rand(K, T, Q, n, generator=g)
    keep = torch.rand(K, Q, T, generator=g) < 0.3
    keep[..., 0] = True
    ep = np.zeros((K, Q, T), np.int64)
    ne = np.zeros((K, Q), np.int64)
    for k in range(K):
        for q in range(Q):
            for t in range(T):
                if keep[k, q, t]:
                    ep[k, q, ne[k, q]] = t
                    ne[k, q] += 1
                else:
                    B[k, t, q] = B[k, t - 1, q]
    full = _stats(B)
    listed = _stats(B, ep=ep, ne=ne)
    for a, b in zip(full, listed):
        np.testing.assert_array_equal(a, b)
    C = B.clone()
    C[keep.permute(0, 2, 1).logical_not().unsqueeze(-1).expand_as(C)] = -1.0   # forget the repeats
    kq.fill_repeats(C.numpy(), ep, ne, T)
    assert torch.equal(C, B)


def test_quantize_unique_keeps_the_rows_that_change():
    x = _rows(E=30, K=5, p=41)
    x[10:20] = x[9]                                   # ten epochs without a step
    E, K, p = x.shape
    split = [40, 1]
    kinds, params, offsets = _codes(ALL, split, "printed")
    Q = len(ALL)
    full = quantizers.quantize_many(ALL, x.reshape(E * K, p), split=split).reshape(Q, E, K, p)
    last = np.empty((K, Q, p), np.float32)
    has = np.zeros(K, np.bool_)
    mult = kq.hash_multipliers(p, seed=1)
    hashes = {}
    pivots = np.full((K, Q * 2), -1, np.int64)
    kept = [[] for _ in range(K)]
    for e0 in (0, 13):                                # two blocks: the state carries over
        xe = x[e0:e0 + (13 if e0 == 0 else E - 13)].contiguous()
        Eb = xe.shape[0]
        packed = np.zeros((K, Eb * Q, p), np.float32)
        sel = np.empty((K, Eb * Q), np.int64)
        hsel = np.empty((K, Eb * Q), np.int64)
        count = np.zeros(K, np.int64)
        kq.quantize_unique(xe.numpy(), kinds, params, offsets, pivots, last, has, packed, sel, hsel, mult, count)
        for k in range(K):
            for i in range(count[k]):
                e, q = divmod(int(sel[k, i]), Q)
                np.testing.assert_array_equal(packed[k, i], full[q, e0 + e, k].numpy())
                kept[k].append((e0 + e, q))
                hashes.setdefault(full[q, e0 + e, k].numpy().tobytes(), set()).add(int(hsel[k, i]))
    for k in range(K):
        for q in range(Q):
            for e in range(E):
                new = e == 0 or not torch.equal(full[q, e, k], full[q, e - 1, k])
                assert ((e, q) in kept[k]) == new
    assert not any((e, 0) in kept[0] for e in range(10, 20))   # identity: no step, no new row
    # one hash per quantized model, distinct models distinct hashes
    assert all(len(h) == 1 for h in hashes.values())
    assert len({next(iter(h)) for h in hashes.values()}) == len(hashes)


def test_a_copy_of_the_best_model_is_the_same_model_whatever_its_last_bits():
    """The losses of one quantized model from two matrix products may differ in the last bit; the
    copy is the same model (equal hash), not a distinct one with a 0/0 term of rounding noise."""
    g = torch.Generator().manual_seed(7)
    B = torch.rand(1, 6, 1, 32, generator=g)
    B[0, 0, 0] -= 0.5                                  # row 0: θ̄_1
    B[0, 4, 0] = B[0, 0, 0]
    B[0, 4, 0, 3] = torch.nextafter(B[0, 0, 0, 3], torch.tensor(2.0))   # θ̄_1 again, one ulp off
    ep = np.arange(6)[None, None].copy()
    ne = np.array([[6]])
    eh = np.array([[[0, 1, 2, 3, 0, 5]]])
    r, best, _, kb, nd, _ = _stats(B, ep=ep, ne=ne, eh=eh)
    keep = [0, 1, 2, 3, 5]
    ref = rqn.r_q(B[0, keep, 0])
    np.testing.assert_allclose(r[0, 0], ref, rtol=1e-9)
    assert best[0, 0] == 0 and nd[0, 0] == 5 and kb[0, 0] != 4
    r_rows, _, _, kb_rows, _, _ = _stats(B, ep=ep, ne=ne)   # told apart by loss rows: the noise binds
    assert kb_rows[0, 0] == 4 and r_rows[0, 0] < 0.1 * r[0, 0]


def test_rq_stats_flags_non_finite_losses():
    B = torch.rand(2, 10, 2, 8)
    B[1, 3, 0, 2] = float("nan")
    assert list(_stats(B)[-1]) == [0, 1]


def _train_data(K=6, n=40, d=9, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(K, n, d, generator=g), (torch.rand(K, n, generator=g) > 0.5).float()


@pytest.mark.parametrize("loss", ["logistic", "mse"])
def test_compiled_training_agrees_with_torch_and_repeats_bit_for_bit(loss):
    X, y = _train_data()
    if loss == "mse":
        y = y * 2 - 0.5
    model = engine_models.Linear(X.shape[2])
    th0 = engine_models.init_params(model, X.shape[0], 0)
    kw = dict(epochs=120, lr=1e-2, loss=loss, record_loss=True, chunk_size=4)
    a = engine.train(model, th0, X, y, engine.TrainConfig(backend="torch", **kw))
    b = engine.train(model, th0, X, y, engine.TrainConfig(backend="compiled", **kw))
    torch.testing.assert_close(b.theta, a.theta, atol=2e-6, rtol=1e-5)
    torch.testing.assert_close(b.train_loss, a.train_loss, atol=2e-6, rtol=1e-5)
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        c = engine.train(model, th0, X, y, engine.TrainConfig(backend="compiled", **kw))
    finally:
        torch.set_num_threads(threads)
    assert torch.equal(b.theta, c.theta) and torch.equal(b.train_loss, c.train_loss)


def test_compiled_callbacks_see_each_epochs_parameters():
    X, y = _train_data(K=3)
    model = engine_models.Linear(X.shape[2])
    th0 = engine_models.init_params(model, 3, 0)
    seen = {}
    for backend in ("torch", "compiled"):
        got = []
        engine.train(model, th0, X, y, engine.TrainConfig(epochs=120, lr=1e-2, backend=backend),
                     callbacks=[lambda e, th, m, got=got: got.append((e, th.clone()))])
        seen[backend] = got
    assert [e for e, _ in seen["compiled"]] == list(range(1, 121))
    for (_, a), (_, b) in zip(seen["torch"], seen["compiled"]):
        torch.testing.assert_close(b, a, atol=2e-6, rtol=1e-5)


def test_backend_choice_and_errors():
    X, y = _train_data(K=2)
    lin, mlp = engine_models.Linear(X.shape[2]), engine_models.MLP(X.shape[2], hidden=4)
    assert engine.compiled_backend(lin, "cpu")
    assert not engine.compiled_backend(mlp, "cpu")
    assert not engine.compiled_backend(lin, "cpu", torch.float64)
    with pytest.raises(ValueError, match="backend"):
        engine.train(lin, engine_models.init_params(lin, 2, 0), X, y, engine.TrainConfig(epochs=1, backend="numba"))
    with pytest.raises(ValueError, match="backend='compiled' does not apply here: .*Linear only"):
        engine.train(mlp, engine_models.init_params(mlp, 2, 0), X, y, engine.TrainConfig(epochs=1, backend="compiled"))
    with pytest.raises(ValueError, match="float32"):
        engine.train(lin, engine_models.init_params(lin, 2, 0, dtype=torch.float64), X, y,
                     engine.TrainConfig(epochs=1, backend="compiled"))
    # float64 parameters under "auto" take the torch path
    engine.train(lin, engine_models.init_params(lin, 2, 0, dtype=torch.float64), X, y, engine.TrainConfig(epochs=2))
    # the recorder's compiled path applies to an MLP on the CPU (incremental recording), not on CUDA
    assert recorder.compiled_reason(mlp, "cpu") == ""
    assert recorder.RQRecorder(mlp, ["sign"], X, y, recorder.RecorderConfig(epochs=3, backend="compiled"))._incremental
    with pytest.raises(ValueError, match="backend='compiled' does not apply here"):
        recorder.RQRecorder(engine_models.MLP(X.shape[2], hidden=4), ["sign"], X, y,
                            recorder.RecorderConfig(epochs=3, backend="compiled", device=torch.device("meta")))


@pytest.mark.parametrize("variant", quantizers.VARIANTS)
@pytest.mark.parametrize("scope", ["tensor", "model"])
def test_compiled_recorder_agrees_with_torch_recorder(variant, scope):
    laws = synthetic.make_laws(0, grid=[(1.5, 6), (3.0, 8)], dim=6)
    g = torch.Generator().manual_seed(0)
    x, y = synthetic.sample(laws, (4, 32), g)
    xv, yv = synthetic.sample(laws, (4, 32), g)
    K = 8
    X, Y, Xv, Yv = x.reshape(K, 32, 6), y.reshape(K, 32), xv.reshape(K, 32, 6), yv.reshape(K, 32)
    model = engine_models.Linear(12)
    th0 = engine_models.init_params(model, K, 0)
    names = [n for n in quantizers.names() if n != "identity"]
    recs = {}
    for backend in ("torch", "compiled"):
        rec = recorder.RQRecorder(model, names, Xv, Yv,
                                  recorder.RecorderConfig(epochs=90, transform=synthetic.features, block=13,
                                                          scope=scope, variant=variant, keep_losses=True,
                                                          backend=backend))
        # the same trajectories on both sides: the recorders differ, not the training
        engine.train(model, th0, X, Y, engine.TrainConfig(epochs=90, lr=3e-2, chunk_size=3, backend="torch"),
                     transform=synthetic.features, callbacks=[rec])
        recs[backend] = rec
    a, b = recs["torch"], recs["compiled"]
    torch.testing.assert_close(b.losses, a.losses, atol=1e-6, rtol=1e-5)
    np.testing.assert_allclose(b.r, a.r, rtol=1e-4)
    np.testing.assert_array_equal(b.n_distinct, a.n_distinct)
    np.testing.assert_array_equal(b.best_epoch, a.best_epoch)
    assert (b.n_distinct < 90).any()


def test_compiled_kernels_are_thread_count_independent():
    x = _rows(E=20, K=8, p=33)
    kinds, params, offsets = _codes(ALL, [32, 1], "printed")
    outs = []
    for nt in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
        numba.set_num_threads(nt)
        out = np.empty((8, 20, len(ALL), 33), np.float32)
        kq.quantize_rows(x.numpy(), kinds, params, offsets, out, np.full((8, len(ALL) * 2), -1, np.int64))
        outs.append(out)
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    out = np.empty((8, 20, len(ALL), 33), np.float32)
    kq.kernel("quantize_rows", 1)(x.numpy(), kinds, params, offsets, out, np.full((8, len(ALL) * 2), -1, np.int64))
    outs.append(out)                                  # the serial twin
    assert kq.kernel("quantize_rows", 1) is kq.SERIAL["quantize_rows"]
    assert kq.kernel("quantize_rows", 2) is kq.quantize_rows
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_array_equal(outs[0], outs[2])


@pytest.mark.parametrize("scale", [1e-3, 3e-2, 1.0])
def test_ternary_pivot_far_moves_select_in_a_band(scale):
    """Large blocks whose pivot moves by many ranks between calls (the band search of ``_pivot_band``,
    from steps of 1e-3 to a fresh draw) give the stable argsort's cut exactly, both 1.58b readings."""
    g = torch.Generator().manual_seed(7)
    E, K, p = 6, 2, 20000
    x = torch.randn(1, K, p, generator=g) * 0.05 + torch.randn(E, K, p, generator=g).mul(scale).cumsum(0)
    x[2, 0, :500] = 0.0                                   # zeros at the cut of the 1 % / 33 % quantizers
    x[3, 1, 1000:3000] = 0.01                             # a block of ties
    names = ["ternary33", "ternary50", "ternary90", "ternary33_table", "ternary90_table"]
    kinds, params, offsets = _codes(names, [p], "printed")
    out = np.empty((K, E, len(names), p), np.float32)
    pivots = np.full((K, len(names)), -1, np.int64)
    for e in range(E):                                    # one epoch per call: the pivots carry over
        kq.quantize_rows(x[e:e + 1].contiguous().numpy(), kinds, params, offsets, out[:, e:e + 1], pivots)
    ref = quantizers.quantize_many(names, x.reshape(E * K, p)).reshape(len(names), E, K, p).permute(2, 1, 0, 3)
    np.testing.assert_array_equal(out, ref.numpy())
