"""Practical membership-inference attacks and their metrics, to set against the limits of
:mod:`qlib.mia` (paper 003, {cite:p}`aubinais2024fundamental`) and :mod:`qlib.rqn` (paper 001).

Modules, one idea each:

* :mod:`~qlib.attacks.metrics` — ROC curve, AUC, TPR at a fixed low FPR (0.1 %, 1 %), balanced
  accuracy (of fixed predictions, and the optimistic best over thresholds), advantage TPR − FPR,
  percentile bootstrap intervals (per pair or per group), one summary :func:`~qlib.attacks.metrics.evaluate`.
* :mod:`~qlib.attacks.threshold` — the global loss threshold {cite:p}`yeom2018privacy`, the per-example
  calibrated threshold with reference models {cite:p}`watson2022difficulty`, a threshold fitted on
  calibration pairs.
* :mod:`~qlib.attacks.lira` — LiRA online and offline {cite:p}`carlini2022lira` as its reference code scores
  it: logit-scaled confidence, per-example Gaussians (median, std), ``scipy.stats.norm.logpdf``.
* :mod:`~qlib.attacks.dp_bound` — what an (ε, δ)-DP guarantee allows an attack (the hypothesis-testing
  region of {cite:p}`kairouz2015composition`: TPR ≤ min(1, e^ε·FPR + δ, 1 − e^{−ε}(1 − δ − FPR))) and the
  lower bound on ε an attack's measured TPR/FPR proves, with Clopper–Pearson intervals (the auditing of
  {cite:p}`jagielski2020auditing`, {cite:p}`nasr2021adversary`).
* :mod:`~qlib.attacks.shadow` — shadow models of :mod:`qlib.engine` trained as one batched computation
  on complementary halves of a pool; their per-example scores and losses.

Every attack returns per-example **member scores** (higher = more likely a member), kept so that any
metric can be computed from them afterwards.
"""

from . import dp_bound, lira, metrics, shadow, threshold
from .metrics import auc, evaluate, roc_curve, tpr_at_fpr

__all__ = ["dp_bound", "lira", "metrics", "shadow", "threshold", "auc", "evaluate", "roc_curve", "tpr_at_fpr"]
