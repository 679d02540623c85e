"""Reproduction of paper 002 (EDEN, {cite:p}`vargaftik2022eden`), mirroring ``chapters/eden/``.

* :mod:`.sweeps` — input laws and the experiment drivers (Figures 2, 5, 6, 7, 8, 11);
* :mod:`.paper` — the paper's printed values and settings (§3–§5, Table 1, the protocols of the
  figures), typed once;
* :mod:`.estimator` — claims of §2–§3, Figure 4 and Appendix G (chapter 01);
* :mod:`.layout` — padding against slicing: bits and vNMSE of both (chapter 01);
* :mod:`.rotation` — one randomized Hadamard transform and the NMSE of many clients (chapter 02);
* :mod:`.kashin_probe` — why our Kashin+SQ grows with d, and its probe rows (chapter 02);
* :mod:`.subbit` — sub-bit budgets, packet loss and heterogeneous clients (chapter 03);
* :mod:`.learning` — the drivers of distributed and federated learning (Figures 3/9, 10, 12, 13, 14) and
  their data (chapters 04, 05);
* :mod:`.distributed_claims` — claims of Figures 10 and 12 (chapter 04);
* :mod:`.federated` — claims of Table 1, Figures 3/9, 13 and 14 and the cost of encoding (chapter 05);
* :mod:`.figures` — one function per figure of the paper, drawing a driver's frame (chapters 01–05).

Every claim function is named ``<item>_rows`` and returns a ``list[qlib.repro.ledger.Row]``. A driver with
many settings takes one frozen record of them (``config``; CONTRIBUTING's settings rule): :class:`.sweeps.VnmseSweepConfig`, :class:`.sweeps.NmseSweepConfig`,
:class:`.rotation.Figure8Config`, :class:`.learning.Figure12Config`, :class:`.learning.FederatedFigureConfig`,
:class:`.learning.Figure3StandinConfig`, :class:`.learning.Figure3TaskConfig`.
"""

#: chapter (notebook of ``chapters/eden/``) → its claims modules
CLAIMS = {"01-estimator-vnmse": ("estimator",), "02-rotation-and-scale": ("rotation", "kashin_probe"),
          "03-subbit-loss-heterogeneous": ("subbit",), "04-distributed": ("distributed_claims",),
          "05-federated": ("federated",)}
