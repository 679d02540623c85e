"""Baselines for the core area (see baselines/__init__.py)."""

from __future__ import annotations

import atexit
import functools
import json
import shutil
import tempfile
from pathlib import Path

import numpy as np
import torch

from badinput.harness import data_dir

BASELINES: dict = {}
"""Valid calls, one per public callable: ``BASELINES[qualified name]`` is a zero-argument function
returning the keyword arguments of a small, fast, valid call (parameters left out take their
defaults). One file per area of ``qlib``; each call should take well under a second."""


def _g(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def _labels01(K: int, n: int, seed: int = 0) -> torch.Tensor:
    y = torch.randint(0, 2, (K, n), generator=_g(seed)).float()
    y[:, 0], y[:, 1] = 0.0, 1.0
    return y


@functools.lru_cache(maxsize=1)
def _fake_shakespeare() -> Path:
    """A one-shard LEAF Shakespeare split (the real one is not in the offline data directory)."""
    root = Path(tempfile.mkdtemp(prefix="qlib-badinput-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    (root / "shakespeare" / "train").mkdir(parents=True)
    blob = {"users": ["A"], "user_data": {"A": {"x": ["to be or not to b", "hello worl"], "y": ["e", "d"]}}}
    (root / "shakespeare" / "train" / "a.json").write_text(json.dumps(blob))
    return root


# ---------------------------------------------------------------------------------------------- data
BASELINES["qlib.data.data_dir"] = lambda: {"path": data_dir()}
BASELINES["qlib.data.tdc_path"] = lambda: {"data_dir": data_dir()}
BASELINES["qlib.data.require_file"] = lambda: {"relpath": "mnist/t10k-labels-idx1-ubyte.gz", "data_dir_": data_dir()}
BASELINES["qlib.data.load_mnist"] = lambda: {"split": "test", "data_dir": data_dir()}
BASELINES["qlib.data.load_a9a"] = lambda: {"split": "test", "data_dir": data_dir()}
BASELINES["qlib.data.verify_sha256"] = lambda: {"path": data_dir() / "a9a" / "a9a.t",
                                                "expected": "1f448a153f0320399a7e40836eb207655b0bde0f21fc941cc472193daa9f5de9"}
BASELINES["qlib.data.load_shakespeare"] = lambda: {"split": "train", "data_dir": _fake_shakespeare(), "seq_len": 8}
BASELINES["qlib.data.partition_iid"] = lambda: {"n": 20, "n_clients": 4, "seed": 0}
BASELINES["qlib.data.partition_by_class"] = lambda: {"labels": np.repeat(np.arange(4), 5), "n_clients": 4,
                                                     "classes_per_client": 1, "seed": 0}
BASELINES["qlib.data.partition_dirichlet"] = lambda: {"labels": np.repeat(np.arange(4), 5), "n_clients": 4,
                                                      "alpha": 1.0, "seed": 0, "min_size": 1}

# ---------------------------------------------------------------------------------------------- devices
BASELINES["qlib.devices.resolve"] = lambda: {"device": "cpu"}
BASELINES["qlib.resume.run_units"] = lambda: {"name": "u", "jobs": [(None, abs, (-3,))]}
BASELINES["qlib.devices.cpu_pool"] = lambda: {"processes": 1}  # (no worker starts before a submission)

# ---------------------------------------------------------------------------------------------- mis
BASELINES["qlib.mis.binomial_ci"] = lambda: {"successes": np.array([3, 5]), "trials": np.array([10, 10]),
                                             "level": 0.95}
BASELINES["qlib.mis.mis_from_accuracy"] = lambda: {"acc": np.array([0.5, 0.75])}

# ---------------------------------------------------------------------------------------------- quantizers
BASELINES["qlib.quantizers.n_zeros"] = lambda: {"fraction": 0.5, "d": 10}


def _quantizer():
    from qlib import quantizers

    return {"name": "ternary50", "label": "1.58b 50%", "formula": "t", "_rows": quantizers._rows_sign,
            "levels": 3, "zero_fraction": 0.5}


BASELINES["qlib.quantizers.Quantizer"] = _quantizer
BASELINES["qlib.quantizers.check_names"] = lambda: {"names": ["sign", "bits2"], "arg": "quantizers"}
BASELINES["qlib.quantizers.get"] = lambda: {"name": "bits2", "variant": "capped"}
BASELINES["qlib.quantizers.quantize"] = lambda: {"name": "bits2", "theta": torch.randn(3, 4, generator=_g())}
BASELINES["qlib.quantizers.quantize_batch"] = lambda: {"name": "ternary50", "thetas": torch.randn(3, 6, generator=_g())}
BASELINES["qlib.quantizers.quantize_many"] = lambda: {"names": ["sign", "ternary33", "bits3"],
                                                      "thetas": torch.randn(3, 6, generator=_g()), "split": [4, 2]}
BASELINES["qlib.quantizers.apply"] = lambda: {"model": torch.nn.Linear(3, 2), "name": "bits2"}
BASELINES["qlib.quantizers.distinct_per_row"] = lambda: {"x": torch.randn(3, 4, generator=_g())}
BASELINES["qlib.quantizers.level_stats"] = lambda: {"thetas": torch.randn(3, 6, generator=_g())}

# ---------------------------------------------------------------------------------------------- rqn
BASELINES["qlib.rqn.distinct_rows"] = lambda: {"losses": _rng().random((4, 5))}
BASELINES["qlib.rqn.trajectory_stats"] = lambda: {"losses": _rng().random((4, 5)), "ddof": 1}
BASELINES["qlib.rqn.r_q"] = lambda: {"losses": _rng().random((4, 5)), "ddof": 1}
BASELINES["qlib.rqn.batched_rates"] = lambda: {"B": torch.rand(4, 3, 5, generator=_g()), "ddof": 1, "t_block": 2}

# ---------------------------------------------------------------------------------------------- recorder


def _recorder():
    from qlib import engine_models, recorder

    return {"model": engine_models.Linear(2), "names": ["sign", "bits2"], "X_val": torch.randn(2, 4, 2, generator=_g()),
            "y_val": _labels01(2, 4), "config": recorder.RecorderConfig(epochs=3, every=1, ddof=1, device="cpu", block=2)}


BASELINES["qlib.recorder.RQRecorder"] = _recorder
BASELINES["qlib.recorder.RecorderConfig"] = lambda: {"epochs": 3, "every": 1, "ddof": 1, "device": "cpu", "block": 2,
                                                     "refresh": 5, "dense_above": 0.3}

# ---------------------------------------------------------------------------------------------- ranking
BASELINES["qlib.ranking.ranks"] = lambda: {"values": np.array([0.1, 3.0, 2.0]), "axis": -1}
BASELINES["qlib.ranking.spearman"] = lambda: {"a": _rng(1).normal(size=5), "b": _rng(2).normal(size=5), "axis": -1}
BASELINES["qlib.ranking.run_subsets"] = lambda: {"n_runs": 6, "k_run": 3, "n_subsets": 2, "seed": 0}
BASELINES["qlib.ranking.average_runs"] = lambda: {"x": _rng().normal(size=(2, 3)), "axis": -1, "how": "mean"}
BASELINES["qlib.ranking.rq_rank_stability"] = lambda: {"r": _rng().normal(size=(2, 3, 6)), "k_runs": [2, 4],
                                                       "n_subsets": 3, "how": "mean", "seed": 0}
BASELINES["qlib.ranking.threshold_rank_stability"] = lambda: {
    "loss_in": _rng(1).random((1, 2, 4, 3)), "loss_out": _rng(2).random((1, 2, 4, 3)) + 0.5,
    "full_mis": np.array([[0.2, 0.6]]), "k_runs": [2, 4], "n_subsets": 2, "seed": 0}
BASELINES["qlib.ranking.rank_confusion"] = lambda: {"pred_ranks": np.array([[[1.0, 2.0, 3.0]], [[2.0, 1.0, 3.0]]]),
                                                    "full_ranks": np.array([[1.0, 2.0, 3.0]])}

# ---------------------------------------------------------------------------------------------- discriminator
BASELINES["qlib.discriminator.split_runs"] = lambda: {"n_runs": 8, "fractions": (0.5, 0.25, 0.25), "seed": 0}
BASELINES["qlib.discriminator.fit_thresholds"] = lambda: {"loss_in": torch.rand(2, 6, generator=_g(1)),
                                                          "loss_out": torch.rand(2, 5, generator=_g(2)) + 0.5}
BASELINES["qlib.discriminator.threshold_attack"] = lambda: {
    "loss_in": _rng(1).random((2, 8, 3)), "loss_out": _rng(2).random((2, 8, 3)) + 0.5,
    "train_runs": np.arange(4), "test_runs": np.arange(4, 8), "level": 0.95}


BASELINES["qlib.discriminator.DiscriminatorConfig"] = lambda: {"hidden": 4, "lr": 1e-2, "epochs": 2, "patience": 2,
                                                               "runs_per_batch": 2, "seed": 0, "device": "cpu",
                                                               "level": 0.95}

# ---------------------------------------------------------------------------------------------- engine


def _model():
    from qlib import engine_models

    return engine_models.Linear(3)


BASELINES["qlib.engine_models.Linear"] = lambda: {"in_features": 3}
BASELINES["qlib.engine_models.MLP"] = lambda: {"in_features": 3, "hidden": 4}
BASELINES["qlib.losses.loss_functions"] = lambda: {"loss": "mse"}
BASELINES["qlib.losses.per_sample_loss"] = lambda: {"loss": "logistic", "out": torch.randn(2, 5, generator=_g()),
                                                    "y": _labels01(2, 5)}
BASELINES["qlib.engine_models.param_sizes"] = lambda: {"model": _model()}
BASELINES["qlib.engine_models.init_params"] = lambda: {"model": _model(), "K": 2, "seed": 0}
BASELINES["qlib.engine.check_data"] = lambda: {"X": torch.randn(2, 5, 3, generator=_g()), "y": _labels01(2, 5),
                                               "K": 2}
BASELINES["qlib.engine.compiled_backend"] = lambda: {"model": _model(), "device": "cpu", "dtype": torch.float32}
BASELINES["qlib.engine.compiled_reason"] = lambda: {"model": _model(), "dev": torch.device("cpu"),
                                                   "dtype": torch.float32}
BASELINES["qlib.recorder.compiled_reason"] = lambda: {"model": _model(), "device": "cpu"}
BASELINES["qlib.engine.default_chunk_size"] = lambda: {"device": torch.device("cpu"), "K": 4}


def _train():
    from qlib import engine, engine_models

    m = engine_models.Linear(3)
    return {"model": m, "theta0": engine_models.init_params(m, 2, 0), "X": torch.randn(2, 5, 3, generator=_g()),
            "y": _labels01(2, 5),
            "config": engine.TrainConfig(epochs=3, lr=1e-2, betas=(0.9, 0.999), eps=1e-8, device="cpu", chunk_size=1)}


BASELINES["qlib.engine.train"] = _train
BASELINES["qlib.engine.TrainConfig"] = lambda: {"epochs": 3, "lr": 1e-2, "betas": (0.9, 0.999), "eps": 1e-8,
                                                "loss": "logistic", "device": "cpu", "chunk_size": 1}

# ---------------------------------------------------------------------------------------------- synthetic


def _law():
    return {"k_modes": 2, "sigma": 1.5, "centres": torch.randn(2, 3, generator=_g(), dtype=torch.float64),
            "labels": torch.tensor([0, 1])}


def _sample():
    from qlib import synthetic

    return {"laws": [synthetic.make_law(2, 1.5, dim=3)], "shape": (2, 3), "generator": _g()}


BASELINES["qlib.synthetic.MixtureLaw"] = _law
BASELINES["qlib.synthetic.make_law"] = lambda: {"k_modes": 2, "sigma": 1.5, "dim": 3, "centre_scale": 1.4, "seed": 0}
BASELINES["qlib.synthetic.make_laws"] = lambda: {"seed": 0, "grid": [(1.5, 6), (3.0, 8)], "dim": 4, "centre_scale": 1.4}
BASELINES["qlib.synthetic.sample"] = _sample
BASELINES["qlib.synthetic.features"] = lambda: {"x": torch.randn(2, 3, generator=_g())}
BASELINES["qlib.synthetic.law_labels"] = lambda: {"grid": [(1.5, 6), (3.0, 8)]}
BASELINES["qlib.synthetic.check_grid"] = lambda: {"grid": [(1.5, 6), (3.0, 8)]}


# ---------------------------------------------------------------------------------------------- methods
# (issue 30: the methods of the public classes join the common test; a method's baseline passes ``self``)


def _linear_method(method):
    def make():
        from qlib import engine_models

        m = engine_models.Linear(3)
        theta = engine_models.init_params(m, 2, 0)
        X = torch.randn(2, 5, 3, generator=_g())
        return {"self": m, **{
            "init": {"K": 2, "generator": _g(), "dtype": torch.float32},
            "unflatten": {"theta": theta},
            "prepare": {"X": X},
            "apply": {"theta": theta, "data": m.prepare(X)},
            "vjp": {"theta": theta, "data": m.prepare(X), "grad_out": torch.randn(2, 5, generator=_g(1))},
            "forward": {"theta": theta, "X": X},
        }[method]}
    return make


def _mlp_method(method):
    def make():
        from qlib import engine_models

        m = engine_models.MLP(3, 4)
        theta = engine_models.init_params(m, 2, 0)
        X = torch.randn(2, 5, 3, generator=_g())
        w = torch.zeros(6, 2)
        w[:3, 0], w[3:, 1] = 1 / 3, 1 / 3
        return {"self": m, **{
            "init": {"K": 2, "generator": _g(), "dtype": torch.float32},
            "unflatten": {"theta": theta},
            "prepare": {"X": X},
            "apply": {"theta": theta, "data": m.prepare(X)},
            "forward": {"theta": theta, "X": X},
            "shared_loss_grad": {"theta": theta, "X": torch.randn(6, 3, generator=_g()),
                                 "y": torch.tensor([0.0, 1.0, 1.0, 0.0, 1.0, 0.0]), "weights": w, "loss": "logistic"},
        }[method]}
    return make


for _m in ("init", "unflatten", "prepare", "apply", "vjp", "forward"):
    BASELINES[f"qlib.engine_models.Linear.{_m}"] = _linear_method(_m)
for _m in ("init", "unflatten", "prepare", "apply", "forward", "shared_loss_grad"):
    BASELINES[f"qlib.engine_models.MLP.{_m}"] = _mlp_method(_m)
BASELINES["qlib.quantizers.Quantizer.batched"] = lambda: {"self": __import__("qlib.quantizers").quantizers.get("bits2"),
                                                          "thetas": torch.randn(3, 6, generator=_g())}


def _law_sample():
    from qlib import synthetic

    return {"self": synthetic.make_law(2, 1.5, dim=3), "shape": (2, 3), "generator": _g()}


BASELINES["qlib.synthetic.MixtureLaw.sample"] = _law_sample


def _recorder_hook(method):
    def make():
        from qlib import engine_models, recorder

        rec = recorder.RQRecorder(**_recorder())
        models = slice(0, 2)
        theta = engine_models.init_params(engine_models.Linear(2), 2, 0)
        if method == "on_chunk_start":
            return {"self": rec, "models": models}
        rec.on_chunk_start(models)
        if method == "on_epoch_end":
            return {"self": rec, "epoch": 1, "theta": theta, "models": models}
        return {"self": rec, "models": models, "theta": theta}
    return make


for _m in ("on_chunk_start", "on_epoch_end", "on_chunk_end"):
    BASELINES[f"qlib.recorder.RQRecorder.{_m}"] = _recorder_hook(_m)
BASELINES["qlib.discriminator.AttackResult.from_counts"] = lambda: {"successes": np.array([3, 5]),
                                                                   "trials": np.array([10, 10]), "level": 0.95}


# ---------------------------------------------------------------------------------------------- resume
@functools.lru_cache(maxsize=1)
def _units_dir() -> Path:
    root = Path(tempfile.mkdtemp(prefix="qlib-badinput-units-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    return root


def _units():
    from qlib.resume import Units

    return Units(_units_dir())


BASELINES["qlib.resume.Units"] = lambda: {"folder": _units_dir(), "reuse": True, "stop_after": 5}
BASELINES["qlib.resume.units_from_env"] = lambda: {"folder": _units_dir()}
BASELINES["qlib.resume.Units.path"] = lambda: {"self": _units(), "name": "w", "inputs": {"x": 1}}
BASELINES["qlib.resume.Units.run"] = lambda: {"self": _units(), "name": "w", "inputs": {"x": 1}, "fn": lambda: 1}
BASELINES["qlib.resume.Units.clear"] = lambda: {"self": _units()}
BASELINES["qlib.resume.check_units"] = lambda: {"name": "units", "units": _units()}
BASELINES["qlib.atomic.write_bytes"] = lambda: {"path": _units_dir() / "atomic.bin", "data": b"x"}
BASELINES["qlib.atomic.write_text"] = lambda: {"path": _units_dir() / "atomic.txt", "text": "x"}
BASELINES["qlib.atomic.atomic_file"] = lambda: {"path": _units_dir() / "atomic.ctx"}


def _move():
    fd, src = tempfile.mkstemp(dir=_units_dir(), prefix="move-", suffix=".bin")  # a fresh file for each call
    with open(fd, "wb") as fh:
        fh.write(b"x")
    return {"src": Path(src), "dest": _units_dir() / "moved" / "atomic.bin"}


def _replace_folder():
    staged = Path(tempfile.mkdtemp(dir=_units_dir(), prefix="staged-"))  # a fresh folder for each call
    (staged / "entry.txt").write_text("x")
    return {"staged": staged, "dest": _units_dir() / "replaced"}


BASELINES["qlib.atomic.move"] = _move
BASELINES["qlib.atomic.replace_folder"] = _replace_folder


# ---------------------------------------------------------------------------------------------- stamp
_CODE = ["import qlib.atomic\nx = 1", "%matplotlib inline\nfrom qlib import stamp"]


def _stamp(n: int = 3) -> dict:
    from qlib import stamp

    return stamp.inputs_stamp(_CODE, {"n": n}, parameters_cell="n = 3", data_dir=_units_dir())


BASELINES["qlib.stamp.imported_modules"] = lambda: {"sources": _CODE, "rules": 2}
def _hashed_file() -> Path:
    path = _units_dir() / "hashed.txt"
    path.write_text("x")
    return path


BASELINES["qlib.stamp.file_hash"] = lambda: {"path": _hashed_file()}
BASELINES["qlib.stamp.inputs_stamp"] = lambda: {"code": _CODE, "params": {"n": 3, "device": "cpu"},
                                                "parameters_cell": "n = 3", "depends": {"other": ["x = 2"]},
                                                "data_dir": _units_dir(), "rules": 2}
BASELINES["qlib.stamp.stamp_changes"] = lambda: {"old": _stamp(3), "new": _stamp(4)}


# ---------------------------------------------------------------------------------------------- plotting
@functools.lru_cache(maxsize=1)
def _agg_figure_class():
    """A matplotlib ``Figure`` on an Agg canvas that keeps one when copied: the harness deep-copies a baseline's
    arguments, and a copied figure otherwise gets matplotlib's base canvas, which draws nothing (a pyplot
    figure would be re-registered with pyplot, and left open, at every copy)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    class AggFigure(Figure):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            FigureCanvasAgg(self)

        def __setstate__(self, state):
            super().__setstate__(state)
            FigureCanvasAgg(self)

    return AggFigure


def _figure(width: float = 4.0, log: bool = False):
    """A small figure drawn off screen (no pyplot: nothing is left open): a line, points, a bar and a band,
    labelled."""
    fig = _agg_figure_class()(figsize=(width, 3.0))
    ax = fig.add_subplot()
    x = np.array([1.0, 2.0, 5.0, 10.0, 20.0])
    ax.plot(x, x**0.5, label="line")
    ax.scatter(x, x**0.4, label="points")
    ax.bar([3.0], [1.0], width=0.5, label="bar")
    ax.fill_between(x, x**0.3, x**0.5, alpha=0.2, label="band")
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    ax.set_title("t")
    if log:
        ax.set_xscale("log")
    return fig


def _figure_file() -> Path:
    from qlib.plotting import capture

    return capture.save_figure_data(_figure(), _units_dir() / "figure.npz")


BASELINES["qlib.plotting.capture.figure_data"] = lambda: {"fig": _figure()}
def _figure_arrays() -> dict:
    from qlib.plotting import capture

    return capture.figure_data(_figure())


BASELINES["qlib.plotting.capture.compact"] = lambda: {"arrays": _figure_arrays()}
BASELINES["qlib.plotting.capture.save_figure_data"] = lambda: {"fig": _figure(), "path": _units_dir() / "saved.npz"}
BASELINES["qlib.plotting.capture.compact_file"] = lambda: {"path": _figure_file()}
BASELINES["qlib.plotting.capture.redraw"] = lambda: {"path": _figure_file(), "title": "again"}
BASELINES["qlib.plotting.style.legend_outside"] = lambda: {"fig": _figure(), "loc": "lower center", "ncol": 2,
                                                          "title": "legend", "fontsize": 9.0}
BASELINES["qlib.plotting.style.tidy_log_axis"] = lambda: {"ax": _figure(log=True).axes[0], "axis": "x"}
BASELINES["qlib.plotting.style.fit_to_column"] = lambda: {"fig": _figure(width=10.0)}
BASELINES["qlib.plotting.style.overlaps"] = lambda: {"fig": _figure()}
BASELINES["qlib.plotting.style.check_figure"] = lambda: {"fig": _figure(width=10.0)}
