"""The settings and printed values of paper 004 (Feng & Venkitasubramaniam, RQP-SGD,
{cite:p}`feng2023rqpsgd`), typed once.

Stated by the paper (§4, "Training Details"): Diagnostic — m = 10, η = 1, T = 46; MNIST — m = 64,
η = 1, T = 938; per-example clip 0.45 (ρ); M = 0.3; b = 4; DP-SGD / Proj-DP-SGD at (1, 1e-7),
RQP-SGD at (1, 0); 10 runs. Figure 1 (caption): b = 4, M = 0.3, ρ = 0.45, T = 445, m/n = 1/445 — its
m and η are not stated; we take m = 1, η = 1 (marked below), and its number of parameters d is ours
(:data:`.theory.FIGURE1_D`).

Every constant names the section, table or figure it is printed in; the settings are
:class:`.settings.Setting` records (frozen), the values module constants never modified. Our own
choices (tolerances, run sizes, grids) stay in the driver and claims modules.
"""

from __future__ import annotations

import pandas as pd

from .settings import Setting

__all__ = ["DIAGNOSTIC", "MNIST", "FIGURE1", "FIGURE1_QS", "FIGURE2_PANELS", "EPS", "DIAGNOSTIC_TEST_SIZE",
           "PAPER_RUNS", "PAPER_TABLE1", "PAPER_TABLE1_STD", "PAPER_SVM_GAIN_PCT", "PAPER_FIG2_ACC_AT_Q03",
           "FIG2_Q", "METHOD_NAMES"]

#: §4: Diagnostic (Breast Cancer Wisconsin) with logistic regression and linear SVM
DIAGNOSTIC = Setting(m=10, T=46, eta=1.0, clip=0.45, M=0.3, b=4, delta=1e-7)
#: §4: MNIST with softmax ("LogReg") regression
MNIST = Setting(m=64, T=938, eta=1.0, clip=0.45, M=0.3, b=4, delta=1e-7)
#: Figure 1's caption (b, M, ρ, T, m/n = 1/445); m = 1 and η = 1 are our assumptions (n = 445·m)
FIGURE1 = Setting(m=1, T=445, eta=1.0, clip=0.45, M=0.3, b=4, delta=1e-7)
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
FIG2_Q = 0.3  # §4 "Impact of noise scale": the q of the statement above
#: Table 1 and Figure 2: the methods as the paper names them (keys: ours)
METHOD_NAMES = {"sgd": "Non-Private", "dpsgd": "DP-SGD", "projdp": "Proj-DP-SGD", "rqp": "RQP-SGD"}
