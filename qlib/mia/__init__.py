"""Membership-inference security theory (papers 003 and 001 §3).

Modules, one idea each:

* :mod:`~qlib.mia.exact` — exact Δ_n, best-attack accuracy, Sec_n/MIS_n for discrete data and any
  deterministic algorithm of the empirical law (count-vector enumeration, Eq. 31/32, Lemma C.2).
* :mod:`~qlib.mia.bounds` — Theorem 5.4's maximum over all algorithms, C(P) and its entropy
  bounds, Corollary 5.4.1, Lemmas C.1/C.3/C.5, Bernoulli closed forms.
* :mod:`~qlib.mia.gaussian` — the empirical mean on Gaussian data (Theorem 5.1 made exact,
  Prop. G.1, Remark 5.1).
* :mod:`~qlib.mia.erm` — ERM over a finite Θ̄ (paper 001): exact MIS_n in logs, the Theorem 3.1
  constant C_P^1, Theorem 3.3 quantities, Prop. C.4, Lemmas B.1/B.2.
* :mod:`~qlib.mia.game` — the MIA game simulated literally (Monte Carlo cross-checks).
* :mod:`~qlib.mia.overfit` — overfitting and insecurity (Prop. 4.2, Thm 4.3, Ex. 4.5, Simulation 1,
  Prop. B.1).
* :mod:`~qlib.mia.discretise` — Simulation 2 (MNIST discretisation, Table 1).

Public entry points relied on elsewhere: :func:`max_delta_discrete`, :func:`C_P`, :func:`erm_delta`,
:func:`chernoff_rate`.
"""

from .bounds import C_P, max_delta_discrete
from .erm import chernoff_rate, erm_delta, erm_exact, erm_log_delta, gap_statistics
from .exact import bayes_accuracy, delta_discrete_algorithm, max_acc_discrete, sec_from_acc, tv_discrete
from .game import simulate_mia_game

__all__ = [
    "max_delta_discrete", "C_P", "erm_delta", "chernoff_rate", "erm_log_delta", "erm_exact",
    "gap_statistics", "bayes_accuracy", "delta_discrete_algorithm", "max_acc_discrete", "sec_from_acc",
    "tv_discrete", "simulate_mia_game",
]
