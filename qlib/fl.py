"""Former home of the federated simulation (paper 002 §5.3), kept so that ``from qlib import fl`` and
``qlib.fl.<name>`` go on working; new code imports the modules the names moved to (one idea each):

| name | moved to |
|---|---|
| ``METHODS``, ``RandomMask``, ``make_compressor`` | :mod:`qlib.compressors` (any method at any budget) |
| ``compressed_mean``, ``logistic_regression``, ``client_covariances``, ``power_iteration`` | :mod:`qlib.distributed` (distributed mean estimation, Figures 10 and 12) |
| ``ClientData``, ``client_data``, ``FLResult``, ``run``, ``rolling_mean`` (and the new ``FedAvgConfig``) | :mod:`qlib.fedavg` (the FedAvg engine) |
| ``LeNet5``, ``MLP``, ``CNN2``, ``ResNet9``, ``CharLSTM`` | :mod:`qlib.fl_models` (the models) |

Nothing is defined here: every name is the object of its new module.
"""

from __future__ import annotations

from .compressors import METHODS, RandomMask, make_compressor
from .distributed import client_covariances, compressed_mean, logistic_regression, power_iteration
from .fedavg import ClientData, FedAvgConfig, FLResult, client_data, rolling_mean, run
from .fl_models import CNN2, MLP, CharLSTM, LeNet5, ResNet9

__all__ = [
    "METHODS",
    "RandomMask",
    "make_compressor",
    "compressed_mean",
    "ClientData",
    "client_data",
    "FedAvgConfig",
    "FLResult",
    "run",
    "LeNet5",
    "MLP",
    "CNN2",
    "ResNet9",
    "CharLSTM",
    "logistic_regression",
    "client_covariances",
    "power_iteration",
    "rolling_mean",
]
