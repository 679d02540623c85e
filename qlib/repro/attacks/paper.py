"""The settings this part takes from the papers it sets the attacks against, typed once.

No printed *value* of papers 001, 003 or 004 is reproduced by this part: its rows compare practical attacks
with the exact limits those papers prove or the guarantees they state (``theory-check``). What it takes from
the literature is settings:

* the number of shadow models of the LiRA paper's experiments ({cite:p}`carlini2022lira`), which the
  ``paper`` profile uses;
* the settings of paper 001's synthetic study that chapter ``attacks/02`` keeps (the training set size, the
  learning rate, the epochs and runs of §5.1.1). The quantized-MIS wing holds the same settings for its own
  chapters; a wing never imports another, so this part states the four it uses;
* the Diagnostic setting of paper 004 (§4, "Training Details" and "Setup"; {cite:p}`feng2023rqpsgd`) and its
  privacy budgets, for chapter 04's audit of DP-SGD and RQP-SGD. The same values are the record
  ``qlib.repro.rqp_sgd.paper.DIAGNOSTIC`` of that part, which a wing may not import
  (``tests/test_architecture_wings.py``); ``tests/test_repro_attacks_dp.py`` checks that the two agree.
"""

from __future__ import annotations

from types import MappingProxyType

__all__ = ["LIRA_SHADOWS", "SYNTHETIC_SETTINGS", "MOLECULAR_SETTINGS", "RQP_DIAGNOSTIC", "RQP_EPS", "RQP_TEST_SIZE"]

#: the largest shadow-model count of the LiRA paper's experiments (256 shadow models on CIFAR-10)
LIRA_SHADOWS = 256

#: paper 001 §5.1.1: n = 128 training points per model, full-batch Adam at learning rate 1e-4 for 3000 epochs,
#: 300 runs (models) per law
SYNTHETIC_SETTINGS = dict(n=128, lr=1e-4, epochs=3000, runs=300)
#: paper 001 §5.2.1 (the molecular study): a network with one hidden layer of 128 units, 500 full-batch epochs,
#: 40 % of each task as the validation set, 10 runs per task
MOLECULAR_SETTINGS = MappingProxyType(dict(hidden=128, epochs=500, val_frac=0.4, runs=10))
#: paper 004 §4: Diagnostic with logistic regression — mini-batch m = 10, T = 46 iterations, step η = 1,
#: per-example clip ρ = 0.45, quantization range M = 0.3 and b = 4 bits, δ = 1e-7 for the (ε, δ) baselines
RQP_DIAGNOSTIC = MappingProxyType(dict(m=10, T=46, eta=1.0, clip=0.45, M=0.3, b=4, delta=1e-7))
#: paper 004: the budgets it trains at — ε = 1 (§4, Table 1) and ε = 0.5 (Figure 2, panels a and b)
RQP_EPS = (0.5, 1.0)
#: paper 004 §4 "Setup": Diagnostic "split into 80% training and 20% testing"
RQP_TEST_SIZE = 0.2
