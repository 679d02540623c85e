"""Practical membership-inference attacks against the theory's limits — the part ``chapters/attacks/``
of the book (papers 003 and 001: {cite:p}`aubinais2024fundamental`, {cite:p}`aubinais2025quantized`;
chapter 04 audits the privacy guarantees of paper 004, {cite:p}`feng2023rqpsgd`).

* :mod:`.paper` — the settings this part takes from the papers it tests (none of their printed numbers
  is reproduced here: every row is a ``theory-check``);
* :mod:`.toys` — the discrete toys where the exact Δ_n is known, and the driver (with its frozen settings
  record) that runs every attack of :mod:`qlib.attacks` against them;
* :mod:`.protocol` — the leave-out attack protocol (targets, shadows, the four attacks, held-out thresholds)
  that chapters 02 and 03 share, and the statistics both analyses compute from it (the analysis settings,
  bootstrap weights, resampled advantage and r_Q^n, Spearman ρ, the permutation test, the theory's gap);
* :mod:`.synthetic` — the synthetic study of paper 001 §5.1 under practical attacks (chapter 02): the
  driver, its frozen settings record and the analysis' tables;
* :mod:`.molecular` — LiRA and the loss threshold on paper 001's molecular MLPs (chapter 03): the driver, its
  frozen settings record, the weighted bootstrap of TPR at low FPR, per-molecule exposure and the analysis'
  tables; its rows and prose are :mod:`.molecular_claims`;
* :mod:`.claims` — the rows (``<item>_rows``) and the generated prose of chapter 01;
* :mod:`.synthetic_claims` — those of chapter 02;
* :mod:`.dp_audit` — the canary audit of DP-SGD and RQP-SGD on paper 004's Diagnostic task (chapter 04),
  with its frozen settings record, and :mod:`.dp_claims`, its rows and prose.

Every driver here takes its settings as one frozen record (CONTRIBUTING's settings rule):
``toys.attack_study(toy, ns, toys.AttackStudyConfig(shadows=8))``.

The library these call is :mod:`qlib.attacks` (the attacks, metrics and the DP region), :mod:`qlib.mia` (the exact
limits) and :mod:`qlib.dpsgd` (the private training). :mod:`.figures` draws the chapters' figures from the
studies' frames (in the house style of :mod:`qlib.plotting.style`; not imported with the package).
"""

from . import (
               claims,
               dp_audit,
               dp_claims,
               molecular,
               molecular_claims,
               paper,
               protocol,
               synthetic,
               synthetic_claims,
               toys,
)

#: each chapter of ``chapters/attacks/`` → its claims modules (tests/test_architecture_wings.py)
CLAIMS = {
    "01-toys-vs-limit": ("claims",),
    "02-synthetic": ("synthetic_claims",),
    "03-molecular": ("molecular_claims",),
    "04-dp-sgd-bound": ("dp_claims",),
}

__all__ = ["claims", "dp_audit", "dp_claims", "molecular", "molecular_claims", "paper", "protocol", "synthetic",
           "synthetic_claims", "toys", "CLAIMS"]
