"""Reproduction of paper 003 (fundamental limits of membership inference) and the proof facts of
paper 001 §3 — the part ``chapters/mia-limits/`` of the book.

* :mod:`.theory` — the theorem checks of paper 003 (Theorems 3.1, 5.1, 5.4, Corollary 5.4.1, the
  Appendix C lemmas, Propositions 4.2, G.1, B.1, Remark 5.1, Example 4.5), one function per result,
  each returning ledger rows; the paper's errata (:data:`.theory.ERRATA`) and its results that have
  no check (:func:`.theory.not_implemented`).
* :mod:`.erm_facts` — proof facts of paper 001 §3 (Lemmas B.1, B.2, Prop. C.3's bound, Prop. C.4).
* :mod:`.simulations` — Simulation 1 (Figure 1) and Simulation 2 (Table 1): the paper's printed
  values, the MNIST protocol driver and their rows.

The library these call is :mod:`qlib.mia`; nothing here knows the book machinery.
"""

from . import erm_facts, simulations, theory

__all__ = ["erm_facts", "simulations", "theory"]
