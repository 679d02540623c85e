"""The one rule for a driver's settings (:func:`qlib.validation.resolve_config`), driver by driver.

Every driver below takes a frozen record ``config`` and keyword overrides of its fields. For each, on
tiny data: (a) the record with a keyword override gives the same result, bit for bit, as the record
with that field replaced (``driver(data, cfg, f=v)`` is ``driver(data, dataclasses.replace(cfg, f=v))``),
and the keywords alone build the record from its defaults; (b) a keyword that is not a field is a
``TypeError`` naming it (before any work is done)."""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn as nn

from qlib import data, discriminator, distributed, dpsgd, engine, fedavg, recorder, synthetic
from qlib.mia import game, overfit
from qlib.repro.mia_limits import mnist
from qlib.repro.quantized_mis import molecular, ranking_probe, study, synthetic_claims, table3_probe

#: result fields that are not results: measured times, and whether an embedding came from the cache
TIMES = {"seconds", "t_local", "t_compress", "train_s", "cache_hit"}
SMALL_TASK = "Carcinogens_Lagunin"   # the smallest TDC task file (280 rows)


def _same(a, b, where="result"):
    """``a`` and ``b`` equal bit for bit (NaN equal to NaN), measured times left out."""
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        assert type(a) is type(b), where
        for f in dataclasses.fields(a):
            if f.name not in TIMES:
                _same(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")
    elif isinstance(a, dict):
        assert set(a) == set(b), where
        for k in a:
            if k not in TIMES:
                _same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, pd.DataFrame):
        keep = [c for c in a.columns if not (isinstance(c, str) and c in TIMES)]
        pd.testing.assert_frame_equal(a[keep], b[keep], check_exact=True, obj=where)
    elif isinstance(a, torch.Tensor):
        assert torch.equal(a, b) or (a.shape == b.shape and torch.equal(a.isnan(), b.isnan())
                                     and torch.equal(a.nan_to_num(), b.nan_to_num())), where
    elif isinstance(a, (np.ndarray, np.generic)):
        np.testing.assert_array_equal(a, b, err_msg=where)
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{where}[{i}]")
    elif isinstance(a, float) and np.isnan(a):
        assert isinstance(b, float) and np.isnan(b), where
    else:
        assert a == b, where


@dataclass
class Case:
    """A driver on tiny data: ``call(config, **overrides)``, its record ``cls``, a base record and one
    override of its fields (a value other than the base's)."""

    cls: type
    call: Callable[..., Any]
    base: dict
    override: dict
    needs_data: bool = False


# ---------------------------------------------------------------------------------------------- the drivers
def _engine():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(3, 10, 2, generator=g)
    y = (X[..., 0] > 0).float()
    model = engine.Linear(2)
    th0 = engine.init_params(model, 3, 0)
    return Case(engine.TrainConfig, lambda c=None, **o: engine.train(model, th0, X, y, c, **o),
                dict(epochs=3, lr=1e-2, device="cpu"), dict(epochs=5, record_loss=True))


def _dpsgd():
    rng = np.random.default_rng(0)
    X = np.c_[rng.normal(size=(30, 3)), np.ones(30)]
    y = (X[:, 0] > 0).astype(np.int64)
    task = dpsgd.Task("toy", "logreg", X, y, X[:10], y[:10])
    return Case(dpsgd.DPSGDConfig, lambda c=None, **o: dpsgd.train(task, "rqp", c, **o),
                dict(runs=2, T=4, m=5, eta=1.0, clip=0.5, sigma=0.5, q=0.9, b=4, M=0.3, device="cpu"),
                dict(sigma=(0.1, 0.2), seed=3))


class _Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 3)

    def forward(self, x):
        return self.lin(x)


def _fedavg():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(40, 4, generator=g)
    y = X[:, :3].argmax(1)
    cd = fedavg.client_data(X, y, data.partition_iid(40, 4, seed=0))
    torch.manual_seed(0)
    model = _Tiny()
    return Case(fedavg.FedAvgConfig, lambda c=None, **o: fedavg.run(model, cd, c, **o),
                dict(method="EDEN", bits=2.0, rounds=2, clients_per_round=2, batch_size=4, device="cpu"),
                dict(rounds=3, seed=5))


def _recorder():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(2, 12, 2, generator=g)
    y = (X[..., 0] > 0).float()
    Xv = torch.randn(2, 6, 2, generator=g)
    yv = (Xv[..., 0] > 0).float()
    model = engine.Linear(4)
    th0 = engine.init_params(model, 2, 0)

    def call(c=None, **o):
        rec = recorder.RQRecorder(model, ["sign", "bits2"], Xv, yv, c, **o)
        engine.train(model, th0, X, y, epochs=rec.epochs, lr=1e-1, callbacks=[rec], transform=synthetic.features,
                     device="cpu")
        return {"r": rec.r, "delta2": rec.delta2, "best": rec.best_epoch, "n_distinct": rec.n_distinct,
                "losses": rec.losses}
    return Case(recorder.RecorderConfig, call, dict(epochs=6, transform=synthetic.features, device="cpu"),
                dict(keep_losses=True, block=2, backend="torch"))


def _discriminator():
    g = torch.Generator().manual_seed(0)
    G, R, n, p, d = 2, 8, 3, 3, 2
    args = (torch.randn(G, R, p, generator=g), torch.randn(1, R, n, d, generator=g), torch.rand(G, R, n, generator=g),
            torch.randn(1, R, n, d, generator=g), torch.rand(G, R, n, generator=g) + 0.3)
    runs = discriminator.split_runs(R, seed=0)
    return Case(discriminator.DiscriminatorConfig,
                lambda c=None, **o: discriminator.train_discriminators(*args, runs, group_law=[0, 0], config=c, **o),
                dict(hidden=4, epochs=2, device="cpu"), dict(hidden=5, seed=2))


def _logistic_regression():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(12, 3, generator=g, dtype=torch.float64)
    y = torch.where(X[:, 0] > 0, 1.0, -1.0).double()
    parts = [np.arange(0, 6), np.arange(6, 12)]
    return Case(distributed.LogisticRegressionConfig,
                lambda c=None, **o: distributed.logistic_regression(X, y, parts, c, **o),
                dict(method="EDEN", bits=1.0, rounds=2), dict(rounds=3, l2=0.1))


def _overfit():
    return Case(overfit.OverfitConfig, lambda c=None, **o: overfit.train_overfit_mlp(c, device="cpu", **o),
                dict(n=6, d=3, width=8, iters=3, n_val=8, eval_every=1), dict(iters=4, seeds=(0, 1)))


def _game():
    p = np.array([0.2, 0.3, 0.5])
    args = (game.discrete_sampler(p), game.count_algorithm(3), game.discrete_bayes_attack(p, 4, 0.5))
    return Case(game.GameConfig, lambda c=None, **o: game.simulate_mia_game(*args, config=c, **o),
                dict(n=4, trials=200, chunk=64), dict(trials=300, seed=3))


def _table1():
    rng = np.random.default_rng(0)
    X = rng.random((60, 6)).astype(np.float32)
    y = rng.integers(0, 10, 60)
    Xt, yt = X[:20], y[:20]
    disc = mnist.fit_discretisations(X, y, [2], n_fit=10, n_freq=20, seed=0)
    return Case(mnist.Table1Config, lambda c=None, **o: mnist.table1_accuracies(X, y, Xt, yt, disc, c, device="cpu", **o),
                dict(n_list=[10], raw_n_list=[], reps=1, iters=2, lr=0.05, hidden=4), dict(raw_n_list=(10,), seed=2))


def _train_task():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(20, 4))
    y = (X[:, 0] > 0).astype(float)
    return Case(molecular.TaskConfig, lambda c=None, **o: molecular.train_task(X, y, "classification", c, **o),
                dict(runs=2, epochs=2, hidden=4, quantizers=("sign", "bits2"), also=()), dict(epochs=3, scope="model"))


_STUDY = dict(runs=3, epochs=3, n=8, n_val=8, lr=1e-2, grid=[(1.5, 6)], names=["sign", "bits2"], discriminator=False)


def _study():
    def call(c=None, **o):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return study.run_study(c, device="cpu", **o)
    return Case(study.StudyConfig, call, _STUDY, dict(epochs=4, seed=1))


def _copies():
    return Case(study.StudyConfig, lambda c=None, **o: ranking_probe.copies_study(c, device="cpu", **o),
                _STUDY, dict(epochs=4, seed=1))


def _reading():
    def call(c=None, **o):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return synthetic_claims.reading_effect(c, device="cpu", **o)["res"]
    return Case(study.StudyConfig, call, {k: v for k, v in _STUDY.items() if k != "names"}, dict(seed=1))


def _molecular(data_dir, tmp):
    return Case(molecular.MolecularConfig,
                lambda c=None, **o: molecular.run_study(c, data_dir=data_dir, cache_dir=tmp, **o),
                dict(tasks=[SMALL_TASK], embedders=["maccs"], runs=2, epochs=2, max_molecules=30),
                dict(epochs=3, seed=1), needs_data=True)


def _probe(data_dir, tmp):
    return Case(table3_probe.ProbeConfig,
                lambda c=None, **o: table3_probe.probe([SMALL_TASK], config=c, data_dir=data_dir, cache_dir=tmp, **o),
                dict(runs=2, epochs=1, variants=("default",), hidden=4), dict(hidden=3, seed=1), needs_data=True)


CASES = {"engine.train": _engine, "dpsgd.train": _dpsgd, "fedavg.run": _fedavg, "recorder.RQRecorder": _recorder,
         "discriminator.train_discriminators": _discriminator,
         "distributed.logistic_regression": _logistic_regression, "mia.overfit.train_overfit_mlp": _overfit,
         "mia.game.simulate_mia_game": _game, "mia_limits.mnist.table1_accuracies": _table1,
         "quantized_mis.molecular.train_task": _train_task, "quantized_mis.study.run_study": _study,
         "quantized_mis.ranking_probe.copies_study": _copies,
         "quantized_mis.synthetic_claims.reading_effect": _reading,
         "quantized_mis.molecular.run_study": _molecular, "quantized_mis.table3_probe.probe": _probe}


@pytest.fixture
def case(request, tmp_path):
    make = CASES[request.param]
    if make in (_molecular, _probe):
        return make(request.getfixturevalue("shared_data_dir"), tmp_path)
    return make()


@pytest.mark.parametrize("case", sorted(CASES), indirect=True)
def test_keywords_replace_the_fields_of_the_record(case):
    cfg = case.cls(**case.base)
    a = case.call(cfg, **case.override)
    b = case.call(dataclasses.replace(cfg, **case.override))
    _same(a, b)
    c = case.call(**{**case.base, **case.override})     # no record: the keywords build it from the defaults
    _same(a, c)


@pytest.mark.parametrize("case", sorted(CASES), indirect=True)
def test_an_unknown_keyword_is_a_type_error_naming_it(case):
    with pytest.raises(TypeError, match=r"\bnot_a_setting\b"):
        case.call(case.cls(**case.base), not_a_setting=1)
    with pytest.raises(TypeError, match=r"\bconfig\b"):
        case.call(dict(case.base))
