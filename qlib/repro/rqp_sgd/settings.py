"""The settings and printed values of paper 004 (Feng & Venkitasubramaniam, RQP-SGD), typed once.

Stated by the paper (§4, "Training Details"): Diagnostic — m = 10, η = 1, T = 46; MNIST — m = 64,
η = 1, T = 938; per-example clip 0.45 (ρ); M = 0.3; b = 4; DP-SGD / Proj-DP-SGD at (1, 1e-7),
RQP-SGD at (1, 0); 10 runs. Figure 1 (caption): b = 4, M = 0.3, ρ = 0.45, T = 445, m/n = 1/445 — its
m, η and d are not stated; we take m = 1, η = 1, d = 30 (the Diagnostic feature count).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from ...rqp_privacy import check_bits
from ...validation import check_float, check_int, check_positive

__all__ = ["Setting", "DIAGNOSTIC", "MNIST", "FIGURE1", "FIGURE1_D", "FIGURE1_QS", "FIGURE2_PANELS", "EPS", "DIAGNOSTIC_TEST_SIZE",
           "PAPER_RUNS", "PAPER_TABLE1", "PAPER_TABLE1_STD", "PAPER_SVM_GAIN_PCT", "PAPER_FIG2_ACC_AT_Q03",
           "FIG2_Q", "METHOD_NAMES"]


@dataclass(frozen=True)
class Setting:
    """One experiment's hyperparameters: mini-batch m, iterations T, step η, clip norm ρ, range M,
    bits b and the δ of the (ε, δ) baselines. Every field is checked (a bad value raises a
    ValueError/TypeError naming the field)."""

    m: int
    T: int
    eta: float
    clip: float
    M: float
    b: int
    delta: float

    def __post_init__(self):
        object.__setattr__(self, "m", check_int("m (mini-batch size)", self.m, low=1))
        object.__setattr__(self, "T", check_int("T (iterations)", self.T, low=1))
        object.__setattr__(self, "eta", check_positive("eta (step size)", self.eta))
        object.__setattr__(self, "clip", check_positive("clip (per-example clip norm ρ)", self.clip))
        object.__setattr__(self, "M", check_positive("M (quantization range)", self.M))
        object.__setattr__(self, "b", check_bits(self.b))
        object.__setattr__(self, "delta", check_float("delta", self.delta, low=0.0, high=1.0, low_open=True,
                                                       high_open=True))

    @property
    def privacy_kw(self) -> dict:
        """The keywords of :func:`qlib.rqp_privacy.eps_step` that this setting fixes (b excluded)."""
        return dict(M=self.M, rho=self.clip, eta=self.eta, m=self.m)


#: §4: Diagnostic (Breast Cancer Wisconsin) with logistic regression and linear SVM
DIAGNOSTIC = Setting(m=10, T=46, eta=1.0, clip=0.45, M=0.3, b=4, delta=1e-7)
#: §4: MNIST with softmax ("LogReg") regression
MNIST = Setting(m=64, T=938, eta=1.0, clip=0.45, M=0.3, b=4, delta=1e-7)
#: Figure 1's caption (b, M, ρ, T, m/n = 1/445); m = 1 and η = 1 are our assumptions (n = 445·m)
FIGURE1 = Setting(m=1, T=445, eta=1.0, clip=0.45, M=0.3, b=4, delta=1e-7)
FIGURE1_D = 30  # number of parameters in Figure 1: unstated, the Diagnostic feature count
FIGURE1_QS = (0.90, 0.95)  # Figure 1 (a), (b)
#: Figure 2 panels: (label, bits, ε)
FIGURE2_PANELS = (("a", 4, 0.5), ("b", 3, 0.5), ("c", 4, 1.0), ("d", 3, 1.0))
EPS = 1.0  # §4: the budget of Table 1
DIAGNOSTIC_TEST_SIZE = 0.2  # §4 "Setup": the Diagnostic data "split into 80% training and 20% testing"
PAPER_RUNS = 10  # §4 and the captions of Table 1 and Figure 2: medians over 10 runs

#: Table 1: median test accuracy in %, 10 runs
PAPER_TABLE1 = pd.DataFrame(
    {
        "Diagnostic (LogReg)": [97.37, 96.92, 94.30, 95.18],
        "Diagnostic (SVM)": [98.68, 96.49, 69.74, 94.74],
        "MNIST (LogReg)": [87.25, 86.02, 84.32, 84.81],
    },
    index=["Non-Private", "DP-SGD", "Proj-DP-SGD", "RQP-SGD"],
)
#: Table 1: standard deviation of the test accuracy in %, 10 runs
PAPER_TABLE1_STD = pd.DataFrame(
    {
        "Diagnostic (LogReg)": [0.56, 1.80, 1.41, 1.42],
        "Diagnostic (SVM)": [0.68, 1.24, 18.37, 1.53],
        "MNIST (LogReg)": [0.07, 0.33, 0.29, 0.30],
    },
    index=PAPER_TABLE1.index,
)
PAPER_SVM_GAIN_PCT = 35.84  # §4 "Results": median gain of RQP-SGD over Proj-DP-SGD, SVM on Diagnostic
PAPER_FIG2_ACC_AT_Q03 = 62.5  # §4 "Impact of noise scale": "when q is 0.3, the test accuracy decreases to around 62.5%"
FIG2_Q = 0.3
METHOD_NAMES = {"sgd": "Non-Private", "dpsgd": "DP-SGD", "projdp": "Proj-DP-SGD", "rqp": "RQP-SGD"}
