"""The values and settings printed in paper 003 (fundamental limits of membership inference,
{cite:p}`aubinais2024fundamental`), typed once.

Every constant names the section, table or figure it is printed in, with the page's own precision;
nothing here is computed, and nothing here is a choice of ours (our numeric readings of the paper's
words, :data:`.overfitting.FIGURE1_READING`, and our tolerances stay in the claims modules). Each record
is a module constant (a number, a tuple, or a dict of them) and is never modified.
"""

from __future__ import annotations

__all__ = ["PAPER_S61", "PAPER_TABLE1_C", "PAPER_TABLE1_DELTA", "PAPER_TABLE1_ACC", "PAPER_TABLE1_N", "PAPER_S62_TEXT"]

# ---- Simulation 1 (§6.1, Figure 1) --------------------------------------------------------------
#: §6.1 of paper 003: the threshold named, the iterations run, the iteration the attack needs
PAPER_S61 = {"threshold": 1e-6, "iters": 2500, "attack_from": 2000, "evaluated_every": 1, "runs": 1}

# ---- Simulation 2 (§6.2, Table 1) ---------------------------------------------------------------
#: Table 1 of paper 003: C(P) of the three discretisations (clusters K -> C(P))
PAPER_TABLE1_C = {20: 4.30, 50: 6.74, 100: 9.20}
#: Table 1: the Δ_n bounds printed beside the accuracies, by (n, K)
PAPER_TABLE1_DELTA = {(1000, 20): 0.07, (1000, 50): 0.11, (1000, 100): 0.15, (5000, 20): 0.03, (5000, 50): 0.05,
                      (5000, 100): 0.07, (10000, 20): 0.02, (10000, 50): 0.03, (10000, 100): 0.05}
#: Table 1: mean accuracies by (n, "raw" or K as a string); the raw column is printed once, for all n
PAPER_TABLE1_ACC = {(1000, "raw"): 0.993, (1000, "20"): 0.963, (1000, "50"): 0.968, (1000, "100"): 0.986,
                    (5000, "20"): 0.967, (5000, "50"): 0.971, (5000, "100"): 0.984, (10000, "20"): 0.971,
                    (10000, "50"): 0.977, (10000, "100"): 0.984}
#: Table 1: training-set sizes
PAPER_TABLE1_N = (1000, 5000, 10000)
#: §6.2 text: raw accuracy at n = 1000 and the stated accuracy losses from discretising (C(P) -> loss)
PAPER_S62_TEXT = {"raw_acc_1000": 0.989, "loss": {4.30: 0.025, 6.74: 0.02, 9.20: 0.02}}

