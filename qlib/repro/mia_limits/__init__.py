"""Reproduction of paper 003 (fundamental limits of membership inference) — the part
``chapters/mia-limits/`` of the book. (The proof facts of paper 001 §3 are paper 001's:
:mod:`qlib.repro.quantized_mis.erm_facts`.)

* :mod:`.paper` — the paper's printed values and settings (§6.1, Table 1, the §6.2 text), typed once;
* the claims, one module per chapter (:data:`CLAIMS`):

  * :mod:`.theory` (chapter 01) — the theorem checks of paper 003 (Theorems 3.1, 5.1, 5.4,
    Corollary 5.4.1, the Appendix C lemmas, Propositions 4.2, G.1, B.1, Remark 5.1, Example 4.5), one
    ``<item>_rows`` function per result, each returning ledger rows; the paper's errata
    (:data:`.theory.ERRATA`) and its results that have no check (:func:`.theory.not_implemented_rows`);
  * :mod:`.overfitting` (chapter 02) — Simulation 1 (Figure 1): our readings of §6.1 and its rows;
  * :mod:`.mnist` (chapter 03) — Simulation 2 (Table 1): the discretised-MNIST protocol driver, our
    tolerance and its rows.

The library these call is :mod:`qlib.mia`; nothing here knows the book machinery.
"""

from . import mnist, overfitting, paper, theory

#: the claims module(s) of each chapter of ``chapters/mia-limits/`` (by notebook name): a chapter
#: imports its own claims module(s) and :mod:`.paper`, never another chapter's claims
#: (``tests/test_architecture_wings.py``)
CLAIMS = {
    "01-theorem-checks": ("theory",),
    "02-overfitting": ("overfitting",),
    "03-mnist-table1": ("mnist",),
}

__all__ = ["paper", "theory", "overfitting", "mnist", "CLAIMS"]
