"""The federated simulation: qlib.distributed (compressed mean, distributed GD and power iteration),
qlib.fedavg (the batched-client FedAvg engine and its config), qlib.fl_models, the budget compressors
of qlib.compressors."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch
import torch.nn as nn

from qlib import compressors as C
from qlib import data, distributed, fedavg, fl_models, wire


class Tiny(nn.Module):
    def __init__(self, d=6, k=3):
        super().__init__()
        self.lin = nn.Linear(d, k)

    def forward(self, x):
        return self.lin(x)


def _toy(n=240, d=6, k=3, clients=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    W = torch.randn(d, k, generator=g)
    X = torch.randn(n, d, generator=g)
    y = (X @ W).argmax(1)
    parts = data.partition_iid(n, clients, seed=seed)
    return fedavg.client_data(X, y, parts)


def _run(**kw):
    torch.manual_seed(0)
    args = dict(method="EDEN", bits=2, rounds=3, clients_per_round=4, local_steps=2, batch_size=5, client_lr=0.5,
                seed=1, device="cpu")
    args.update(kw)
    evals = {k: args.pop(k) for k in ("test", "train_eval") if k in args}      # beside the record
    return fedavg.run(Tiny(), _toy(), fedavg.FedAvgConfig(**args), **evals)


def test_batched_engine_equals_client_loop():
    a, b = _run(batched=True), _run(batched=False)
    torch.testing.assert_close(a.params, b.params, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(a.history["train_acc"], b.history["train_acc"], atol=1e-6)


def test_rerun_is_bit_identical_and_seed_matters():
    a, b, c = _run(), _run(), _run(seed=2)
    assert torch.equal(a.params, b.params)
    assert not torch.equal(a.params, c.params)


def test_float32_one_client_full_participation_is_local_sgd():
    # one client, one local step, server SGD lr 1: the global model is exactly that client's SGD step
    torch.manual_seed(0)
    cd = _toy(clients=1)
    model = Tiny()
    res = fedavg.run(model, cd,
                     fedavg.FedAvgConfig(method="Float32", rounds=1, clients_per_round=1, local_steps=1, batch_size=7,
                                         client_lr=0.3, seed=3, device="cpu"))
    gen = torch.Generator().manual_seed(distributed.derive_seed(3, 0, 0))
    clients = torch.randperm(1, generator=gen)[:1]
    xb, yb = cd.sample(clients, 7, gen)
    m2 = Tiny()
    m2.load_state_dict(model.state_dict())
    loss = nn.functional.cross_entropy(m2(xb[0]), yb[0])
    loss.backward()
    want = torch.cat([(p - 0.3 * p.grad).reshape(-1) for p in m2.parameters()]).detach()
    torch.testing.assert_close(res.params, want, rtol=1e-6, atol=1e-7)
    assert 32 * want.numel() < res.history["bits_per_client"].iloc[0] <= 32 * want.numel() + 8 * 64  # + header


def test_server_adam_first_step_is_signed_lr():
    # Adam's first bias-corrected step is lr·sign(mean update) (|m̂| = sqrt(v̂) when eps → 0)
    torch.manual_seed(0)
    init = torch.cat([p.detach().reshape(-1) for p in Tiny().parameters()])
    res = _run(method="Float32", rounds=1, server_optimizer="adam", server_lr=0.01, adam_eps=1e-12)
    step = res.params - init
    nz = step.abs() > 0
    torch.testing.assert_close(step[nz].abs(), torch.full_like(step[nz], 0.01), rtol=1e-4, atol=0)


def test_budget_is_respected_and_subbit_masks():
    res = _run(bits=0.25)
    d = res.config["n_params"]
    sent = round(0.25 * d)
    D = 2 ** math.ceil(math.log2(sent))
    # the bytes on the wire: header, the float64 scale, round(b·d) one-bit codes (EDEN pads nothing it sends)
    assert res.history["bits_per_client"].iloc[0] == 8 * (wire.HEADER.size + 8 + math.ceil(sent / 8))
    res2 = _run(method="Hadamard+SQ", bits=0.25)  # Hadamard+SQ sends its D padded codes
    assert D + 64 < res2.history["bits_per_client"].iloc[0] <= D + 64 + 8 * 64
    res3 = _run(bits=0.25, wire=False)
    assert res3.history["bits_per_client"].iloc[0] == sent + 64 and torch.equal(res3.params, res.params)


def test_random_mask_is_unbiased_and_exact_size():
    x = torch.randn(4000, 64, dtype=torch.float64)
    comp = C.RandomMask(C.Float32(), 0.25)
    msg = comp.compress(x, 5)
    xh = comp.decompress(msg).double()
    assert ((xh != 0).sum(-1) == 16).all()
    assert (xh.mean(0) - x.mean(0)).abs().max() < 5 * math.sqrt(3 / 4000) * x.abs().max()
    with pytest.raises(ValueError, match="p must be"):
        C.RandomMask(C.Float32(), 0.0)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("method", C.METHODS)
def test_compressed_mean_stays_on_cuda_through_the_wire(method):
    # every decoded message comes back on the device of the updates (Float32 and the SQ baselines
    # once decoded on the CPU: bench_fl.py on an H200 failed at the first non-EDEN round)
    xs = torch.randn(4, 1000, generator=torch.Generator().manual_seed(0))
    mean_c, dec_c, bits_c = distributed.compressed_mean(xs, method, 2, seed=3)
    mean, dec, bits = distributed.compressed_mean(xs.cuda(), method, 2, seed=3)
    assert mean.device.type == "cuda" and dec.device.type == "cuda"
    assert bits.tolist() == bits_c.tolist()
    if method == "Float32":
        torch.testing.assert_close(dec.cpu(), xs)


def test_compressed_mean_per_client_budgets_and_loss():
    xs = torch.randn(6, 100, dtype=torch.float64)
    mean, dec, nbits = distributed.compressed_mean(xs, "EDEN", [1, 1, 2, 2, 4, 0.5], seed=0, wire=False)
    assert nbits.tolist() == [128 + 64] * 2 + [256 + 64] * 2 + [512 + 64] + [50 + 64]  # 0.5 bit: 50 codes, not 64
    _, dec_w, nbytes = distributed.compressed_mean(xs, "EDEN", [1, 1, 2, 2, 4, 0.5], seed=0)
    torch.testing.assert_close(dec_w, dec, rtol=0, atol=1e-12)  # decoded from the bytes: the same vectors
    # header and scale, plus the padding of the codes to a whole byte (50 one-bit codes: 7 bytes)
    assert (nbytes - nbits).tolist() == [8 * (wire.HEADER.size + 8) - 64] * 5 + [8 * (wire.HEADER.size + 8) - 64 + 6]
    torch.testing.assert_close(mean, dec.mean(0))
    _, dec_l, _ = distributed.compressed_mean(xs, "EDEN", 4, seed=0, loss=0.5)
    assert float(((dec_l - xs) ** 2).sum() / (xs**2).sum()) > float(((dec - xs) ** 2).sum() / (xs**2).sum())
    with pytest.raises(ValueError, match="loss"):
        distributed.compressed_mean(xs, "QSGD", 2, seed=0, loss=0.1)
    with pytest.raises(ValueError, match="bits has 2 entries"):
        distributed.compressed_mean(xs, "EDEN", [1, 2], seed=0)


def test_make_compressor_names_and_errors():
    assert isinstance(C.make_compressor("Kashin+SQ", 0.5), C.RandomMask)
    assert isinstance(C.make_compressor("Count-Sketch", 0.5), C.CountSketch)
    with pytest.raises(ValueError, match="method must be one of"):
        C.make_compressor("TopK", 1)
    with pytest.raises(ValueError, match="integer in \\[1, 8\\] or < 1"):
        C.make_compressor("QSGD", 1.5)
    with pytest.raises(ValueError, match="bits must be"):
        C.make_compressor("EDEN", float("nan"))


def test_run_rejects_bad_arguments():
    with pytest.raises(ValueError, match="clients_per_round"):
        _run(clients_per_round=9)
    with pytest.raises(ValueError, match="server_optimizer"):
        _run(server_optimizer="rmsprop")
    with pytest.raises(TypeError, match="model"):
        fedavg.run("lenet", _toy())
    with pytest.raises(ValueError, match="bits"):
        _run(method="QSGD", bits=2.5)
    with pytest.raises(ValueError, match="every client needs"):
        fedavg.client_data(torch.zeros(3, 2), torch.zeros(3), [np.array([0, 1, 2]), np.array([], int)])


def test_learning_happens_and_history_columns():
    res = _run(method="Float32", rounds=15, test=(torch.randn(50, 6), torch.zeros(50, dtype=torch.long)), eval_every=5)
    h = res.history
    assert list(h.columns[:4]) == ["round", "train_acc", "train_loss", "test_acc"]
    assert h["test_acc"].notna().sum() == 3
    assert h["train_loss"].iloc[-3:].mean() < h["train_loss"].iloc[:3].mean()
    assert res.final("train_acc", 3) == pytest.approx(h["train_acc"].iloc[-3:].mean())


_DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.mark.parametrize("device", _DEVICES)
@pytest.mark.filterwarnings("ignore:There is a performance drop")  # vmap's per-example fallback for the LSTM
def test_charlstm_trains_under_fedavg_batched_and_loop_alike(device):
    # the Shakespeare model under torch.func's grad/vmap: on CUDA, cuDNN's fused LSTM failed there
    # ("Cannot access data pointer of Tensor that doesn't have storage", an H200, 2026-11-28)
    g = torch.Generator().manual_seed(0)
    X = torch.randint(1, 10, (60, 12), generator=g)
    data = fedavg.client_data(X, torch.roll(X, -1, 1), [np.arange(i * 10, i * 10 + 10) for i in range(6)])
    model = fl_models.CharLSTM(vocab=10, embed=4, hidden=8)
    runs = [fedavg.run(model, data,
                       fedavg.FedAvgConfig(rounds=2, clients_per_round=3, local_steps=2, batch_size=4,
                                           method="Float32", batched=b, device=device, seed=1,
                                           eval_every=0)).history for b in (False, True)]
    for h in runs:
        assert np.isfinite(h[["train_loss", "train_acc"]].to_numpy()).all()
    np.testing.assert_allclose(runs[1]["train_loss"], runs[0]["train_loss"], rtol=1e-5)


def test_lenet_and_resnet9_shapes():
    assert fl_models.LeNet5()(torch.zeros(2, 1, 28, 28)).shape == (2, 10)
    assert sum(p.numel() for p in fl_models.LeNet5().parameters()) == 61706
    assert fl_models.ResNet9(3, 10)(torch.zeros(1, 3, 32, 32)).shape == (1, 10)
    assert fl_models.CharLSTM()(torch.zeros(2, 5, dtype=torch.long)).shape == (2, 88, 5)  # padding, 86 characters, OOV
    assert sum(p.numel() for p in fl_models.CharLSTM().parameters()) == 822_040  # Reddi et al.: about 820 K


def test_logistic_regression_converges_to_optimum():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(400, 5, generator=g, dtype=torch.float64)
    y = torch.sign(X @ torch.ones(5, dtype=torch.float64) + 0.5 * torch.randn(400, generator=g, dtype=torch.float64))
    parts = np.array_split(np.arange(400), 4)
    w = distributed.logistic_regression(X, y, parts, distributed.LogisticRegressionConfig(rounds=400, l2=0.3))
    grad = (-(y * torch.sigmoid(-y * (X @ w))).unsqueeze(-1) * X).mean(0) + 0.3 * w
    assert float(grad.norm()) < 1e-8  # equal shares: the mean of client gradients is the full gradient
    w8 = distributed.logistic_regression(X, y, parts,
                                         distributed.LogisticRegressionConfig(method="EDEN", bits=8, rounds=60, l2=0.3))
    w1 = distributed.logistic_regression(X, y, parts,
                                         distributed.LogisticRegressionConfig(method="EDEN", bits=1, rounds=60, l2=0.3))
    assert float((w8 - w).norm()) < float((w1 - w).norm())


def test_power_iteration_finds_top_eigenvector():
    g = torch.Generator().manual_seed(0)
    A = torch.randn(600, 8, generator=g, dtype=torch.float64) * torch.tensor([5.0, 1, 1, 1, 1, 1, 1, 1])
    cov = distributed.client_covariances(A, np.array_split(np.arange(600), 3))
    torch.testing.assert_close(cov.sum(0), A.T @ A)
    v = distributed.power_iteration(cov, rounds=300, lr=0.5)
    top = torch.linalg.eigh(A.T @ A).eigenvectors[:, -1]
    assert min(float((v - top).norm()), float((v + top).norm())) < 0.05


def test_rolling_mean():
    np.testing.assert_allclose(fedavg.rolling_mean([1, 2, 3, 4], 2), [1, 1.5, 2.5, 3.5])


def test_divergence_gives_nan_rounds_not_an_error():
    cd = _toy()
    cd.X[cd.order[cd.offsets[3]]] = float("inf")  # one example of client 3 poisons its gradient
    torch.manual_seed(0)
    res = fedavg.run(Tiny(), cd,
                     fedavg.FedAvgConfig(method="EDEN", bits=2, rounds=6, clients_per_round=8, local_steps=1,
                                         batch_size=60, client_lr=0.5, seed=1, device="cpu"))
    h = res.history
    assert len(h) == 6 and h["round"].tolist() == list(range(1, 7))
    first = int(h["train_acc"].isna().idxmax())
    assert h["train_acc"].iloc[first:].isna().all() and h["train_acc"].iloc[:first].notna().all()


def test_an_update_whose_norm_overflows_is_divergence_too():
    """Found at the paper's rounds (Figure 13, QSGD at b = 0.1): a client update can stay finite entry by
    entry while its float32 norm, which every compressor sends, overflows. That is divergence too: NaN
    rounds from there on, not the wire's refusal of an infinite norm."""
    cd = _toy()
    three = cd.order[cd.offsets[3]:cd.offsets[4]]
    cd.X[three] = 1e30  # client 3's examples: finite, but its gradient's squared norm passes float32's 3.4e38
    assert torch.isfinite(cd.X).all() and len(set(cd.y[three].tolist())) > 1  # one logit wins; some labels differ
    torch.manual_seed(0)
    res = fedavg.run(Tiny(), cd,
                     fedavg.FedAvgConfig(method="QSGD", bits=2, rounds=6, clients_per_round=8, local_steps=1,
                                         batch_size=60, client_lr=0.5, seed=1, device="cpu"))
    h = res.history
    assert len(h) == 6 and h["train_acc"].isna().any()
    first = int(h["train_acc"].isna().idxmax())
    assert h["train_acc"].iloc[first:].isna().all() and h["train_acc"].iloc[:first].notna().all()


def test_client_data_validates_when_constructed():
    """ClientData is an input record: it checks its arrays in __post_init__ (once; to() does not re-check)."""
    cd = _toy(n=12, clients=3)
    fields = dict(X=cd.X, y=cd.y, order=cd.order, offsets=cd.offsets, sizes=cd.sizes)
    X = cd.X.clone()
    X[0, 0] = float("nan")
    for name, bad, exc in (("X", X, ValueError), ("y", cd.y.double() + 0.5, TypeError), ("y", cd.y - 5, ValueError),
                           ("order", cd.order + 100, ValueError), ("sizes", cd.sizes * 0, ValueError),
                           ("offsets", cd.offsets[:1], ValueError), ("sizes", None, TypeError)):
        with pytest.raises(exc, match=rf"\b{name}\b"):
            fedavg.ClientData(**{**fields, name: bad})
    with pytest.raises(ValueError, match=r"\bX\b must be finite"):
        fedavg.client_data(X, cd.y, [np.arange(12)])
    with pytest.raises(TypeError, match=r"\by\b must be an array of integers"):
        fedavg.client_data(cd.X, np.full(12, 0.5), [np.arange(12)])
    assert fedavg.client_data(cd.X.numpy(), cd.y.numpy(), [np.arange(12)]).n_clients == 1


def test_weights_models_and_history_values_are_checked():
    xs = torch.randn(3, 16)
    for bad, exc in ((torch.tensor([1.0, float("nan"), 1.0]), ValueError), (torch.ones(2), ValueError),
                     (torch.tensor([1.0, -1.0, 1.0]), ValueError), (torch.ones(3, 1), ValueError)):
        with pytest.raises(exc, match=r"\bweights\b"):
            distributed.compressed_mean(xs, "EDEN", 2, 0, weights=bad)
    for make, name in ((lambda: fl_models.MLP(hidden=0), "hidden"), (lambda: fl_models.LeNet5(size=30), "size"),
                       (lambda: fl_models.ResNet9(n_classes=1.5), "n_classes"), (lambda: fl_models.CharLSTM(vocab=-1), "vocab")):
        with pytest.raises((ValueError, TypeError), match=rf"\b{name}\b"):
            make()
    with pytest.raises(ValueError, match=r"\badam_betas\b"):
        _run(server_optimizer="adam", adam_betas=(0.9,))
    with pytest.raises(ValueError, match=r"\bvalues\b must not hold inf"):
        fedavg.rolling_mean([1.0, float("inf")], 2)
    np.testing.assert_allclose(fedavg.rolling_mean([1.0, float("nan"), 3.0], 1), [1.0, float("nan"), 3.0])
    with pytest.raises(ValueError, match=r"\by\b must hold labels in \{-1, \+1\}"):
        distributed.logistic_regression(torch.randn(4, 2), torch.tensor([0.0, 1.0, 1.0, 0.0]), [np.arange(4)])
    with pytest.raises(ValueError, match=r"parts\[0\] indexes row 9"):
        distributed.client_covariances(torch.randn(4, 2), [np.array([9])])
    with pytest.raises(ValueError, match=r"\bbits\b must be"):
        distributed.power_iteration(torch.eye(2).expand(2, 2, 2), bits=0)


def test_config_record_is_frozen_hashable_and_equals_the_keywords():
    cfg = fedavg.FedAvgConfig(method="EDEN", bits=[2, 2, 2, 2, 2, 2, 2, 2], rounds=3, clients_per_round=4,
                              local_steps=2, batch_size=5, client_lr=0.5, seed=1, device="cpu")
    assert cfg.bits == (2.0,) * 8 and cfg.adam_betas == (0.9, 0.99)
    assert hash(cfg) == hash(dataclasses.replace(cfg)) and cfg == dataclasses.replace(cfg)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.rounds = 4
    torch.manual_seed(0)
    a = fedavg.run(Tiny(), _toy(), cfg)
    b = _run(bits=2)  # the same settings by keyword
    torch.manual_seed(0)
    c = fedavg.run(Tiny(), _toy(),
                   dataclasses.replace(fedavg.FedAvgConfig(), method="EDEN", bits=2, rounds=3, clients_per_round=4,
                                       local_steps=2, batch_size=5, client_lr=0.5, seed=1, device="cpu"))  # keywords replace fields
    assert torch.equal(a.params, b.params) and torch.equal(a.params, c.params)
    assert a.config == b.config
    with pytest.raises(ValueError, match=r"\bbits\b has 3 entries for 8 clients"):
        fedavg.run(Tiny(), _toy(), fedavg.FedAvgConfig(bits=(1, 2, 4), clients_per_round=2))
    with pytest.raises(TypeError, match=r"\bconfig\b"):
        fedavg.run(Tiny(), _toy(), {"rounds": 2})
    for kw, name in (({"rounds": 0}, "rounds"), ({"bits": 2.5, "method": "QSGD"}, "bits"),
                     ({"loss": 1.0}, "loss"), ({"device": 3}, "device")):
        with pytest.raises((ValueError, TypeError), match=rf"\b{name}\b"):
            fedavg.FedAvgConfig(**kw)


def test_derive_seed_is_the_seed_sequence_word():
    want = int(np.random.SeedSequence([3, 0, 1]).generate_state(1, dtype=np.uint64)[0] >> 1)
    assert distributed.derive_seed(3, 0, 1) == want and 0 <= want < 2**63
    with pytest.raises(ValueError, match=r"keys\[0\]"):
        distributed.derive_seed(3, -1)


def test_fedavg_checks_its_evaluation_pairs_like_its_client_data():
    g = torch.Generator().manual_seed(0)
    X = torch.rand(40, 1, 28, 28, generator=g)
    y = torch.randint(0, 10, (40,), generator=g)
    data = fedavg.client_data(X, y, [np.arange(i * 10, i * 10 + 10) for i in range(4)])
    kw = dict(rounds=1, clients_per_round=2, local_steps=1, batch_size=4, method="Float32", device="cpu", eval_every=1)
    nan = X[:5].clone()
    nan[0, 0, 0, 0] = float("nan")
    for test, err, match in (
            ((nan, y[:5]), ValueError, r"test\[0\] must be finite"),
            ((X[:0], y[:0]), ValueError, r"test\[0\] must be non-empty"),
            ((X[:5], y[:4]), ValueError, r"test\[0\] and test\[1\] must have the same length, got 5 and 4"),
            ((X[:5], y[:5].float()), TypeError, r"test\[1\] must be a tensor of integer class indices"),
            ((X[:5], y[:5] - 20), ValueError, r"test\[1\] must hold class indices >= 0"),
            ((X[:5], y[:5] + 10), ValueError, r"test\[1\] must hold class indices < 10 \(the model's outputs\)"),
            ((X[:5],), TypeError, r"test must be None or a pair")):
        with pytest.raises(err, match=match):
            fedavg.run(fl_models.LeNet5(), data, fedavg.FedAvgConfig(**kw), test=test)
    with pytest.raises(ValueError, match=r"train_eval\[0\] must be finite"):
        fedavg.run(fl_models.LeNet5(), data, fedavg.FedAvgConfig(**kw), train_eval=(nan, y[:5]))
    h = fedavg.run(fl_models.LeNet5(), data, fedavg.FedAvgConfig(**kw), test=(X[:5].numpy(), y[:5].numpy())).history  # arrays pass
    assert 0 <= h["test_acc"].iloc[-1] <= 1
