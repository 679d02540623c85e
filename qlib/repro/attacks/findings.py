"""Findings of the attacks part (:mod:`qlib.repro.findings`).

This part reproduces no printed value: its rows are ``theory-check`` rows that set practical attacks
against the limits proved or the guarantees stated by papers 003, 001 and 004. The claims they test are
those papers' own, typed in the findings of their wings: Theorem 3.1 and Corollary 5.4.1 of paper 003
select the rows of ``attacks/01`` in :mod:`qlib.repro.mia_limits.findings`; the rows on paper 001
(``attacks/01`` ``… of paper 001``, ``attacks/02``, ``attacks/03``) and on paper 004 (``attacks/04``) belong
to the findings of those papers' wings. So this part states no claim of its own.

Causes: the only run of this part the book shows so far is ``attacks/01`` (smoke profile), where every
row agrees; nothing has yet shown why a row of ``attacks/02``–``04`` would differ, so no cause is typed and
a differing row there reads ``unexplained`` (the default of :func:`qlib.repro.findings.assign_causes`).
"""

from __future__ import annotations

from qlib.repro.findings import Cause, Claim, Select

__all__ = ["CLAIMS", "ROW_CAUSES", "STAND_INS"]

CLAIMS: tuple[Claim, ...] = ()

ROW_CAUSES: tuple[tuple[Select, Cause], ...] = ()

#: the stand-ins the part's inputs include: the molecular chapter's offline embedders stand in for paper
#: 001's four, so no difference there can be a ``finding`` (same method, same inputs)
STAND_INS: dict[str, tuple[str, ...]] = {"attacks/03-*": ("embedder",)}
