"""Reproduction of paper 002 (EDEN, {cite}`vargaftik2022eden`), mirroring ``chapters/eden/``.

* :mod:`.sweeps` — input laws and the experiment drivers (Figures 2, 5, 6, 7, 8, 11);
* :mod:`.paper` — the paper's printed values and settings, typed once;
* :mod:`.estimator` — claims of §2–§3, Figure 4 and Appendix G (chapter 01);
* :mod:`.rotation` — one randomized Hadamard transform and the NMSE of many clients (chapter 02);
* :mod:`.subbit` — sub-bit budgets, packet loss and heterogeneous clients (chapter 03).

Every claim function returns a ``list[qlib.repro.ledger.Row]``.
"""
