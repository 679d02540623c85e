"""Proof facts of paper 001 §3 (ERM over a finite parameter set), checked on random instances.

Rows carry ``paper="001"``: they belong to paper 001 although their library (:mod:`qlib.mia.erm`)
is shared with paper 003. Kinds: an identity or inequality stated in paper 001, checked on random
instances against an independent computation → ``theory-check`` (such a check of a mathematical
statement is not a reproduced number: the ledger counts only rows whose null could fail);
the printed Prop. C.4 over all of Ω^c → ``erratum`` (id ``001-C4`` in ``where``; passed = confirmed).
"""

from __future__ import annotations

import math

import numpy as np

from qlib.mia import erm
from qlib.repro.ledger import Item, Row, claim, close
from qlib.validation import check_alloc, check_int, check_seed

PAPER = "001"
#: these rows check mathematical statements on random instances: theory-checks, not reproductions
MATH_NOTE = "a mathematical statement checked on random instances against an independent computation"


def _violations(where: str, quantity: str, bad: int) -> Row:
    return claim(Item(where, quantity, 0, paper=PAPER), int(bad), int(bad) == 0, kind="theory-check", tolerance="1e-12",
                 note=MATH_NOTE)


def _rng(draws, seed) -> tuple[int, np.random.Generator]:
    """``draws`` >= 1 (zero draws would report a vacuous pass) and the generator of ``seed``."""
    return check_int("draws", draws, low=1, integral_float=True), np.random.default_rng(check_seed("seed", seed))


def lemma_b1_rows(draws: int = 1000, seed: int = 0) -> list[Row]:
    """Lemma B.1: |a − b| ≤ TV(P, Q) ≤ (|a − b| + a + b)/2 on random pairs of laws."""
    draws, rng = _rng(draws, seed)
    bad = 0
    for _ in range(draws):
        K = int(rng.integers(2, 8))
        lo, tv, hi = erm.lemma_b1_bounds(rng.dirichlet(np.ones(K)), rng.dirichlet(np.ones(K)))
        bad += not (lo - 1e-12 <= tv <= hi + 1e-12)
    return [_violations("Lemma B.1", f"violations of |a−b| ≤ TV ≤ (|a−b|+a+b)/2 ({draws} random pairs)", bad)]


def lemma_b2_rows(draws: int = 200, seed: int = 0) -> list[Row]:
    """Lemma B.2 (Schur complement formula for a diagonal entry of M⁻¹) on random SPD matrices."""
    draws, rng = _rng(draws, seed)
    worst = 0.0
    for _ in range(draws):
        J = int(rng.integers(2, 7))
        A = rng.standard_normal((J, J))
        M = A @ A.T + 0.1 * np.eye(J)
        j = int(rng.integers(0, J))
        worst = max(worst, abs(erm.schur_inverse_diag(M, j) / np.linalg.inv(M)[j, j] - 1))
    return [close(Item("Lemma B.2", f"max relative |Schur formula − (M⁻¹)_jj| ({draws} random SPD M)", 0.0, paper=PAPER), worst,
                  kind="theory-check", atol=1e-9, note=MATH_NOTE)]


def random_erm_problem(rng: np.random.Generator, K: int, m: int):
    """A random finite-Θ̄ problem: uniform losses in [0, 1], Dirichlet(1) atom law (K >= 2 candidates,
    m >= 1 atoms)."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    K = check_int("K", K, low=2)
    m = check_int("m", m, low=1)
    check_alloc("K and m", (K + 2) * m, 8, value=(K, m), what="the loss matrix and the atom law")
    return rng.random((K, m)), rng.dirichlet(np.ones(m))


def erm_bound_rows(draws: int = 30, seed: int = 0) -> list[Row]:
    """Δ_n ≤ 2(1 − P(θ̂ = θ̄_1)) (proof of Prop. C.3) on random problems, exact (in logs)."""
    draws, rng = _rng(draws, seed)
    bad = 0
    for _ in range(draws):
        L, p = random_erm_problem(rng, int(rng.integers(2, 5)), int(rng.integers(2, 4)))
        e = erm.erm_exact(L, p, int(rng.integers(1, 40)))
        bad += e.log_delta > math.log(2) + e.log_not_best + 1e-12
    return [_violations("Proof of Prop. C.3", f"violations of Δ_n ≤ 2(1 − p_1) ({draws} random problems)", bad)]


def prop_c4_rows(draws: int = 200, seed: int = 0) -> list[Row]:
    """Prop. C.4: inf over Ω^c of xᵀΛ⁺x/2 = 1/(2 max Λ_kk) — holds for invertible Λ and, for singular
    Λ, with x restricted to range(Λ) (as the proof of Prop. C.3 needs); over all of Ω^c, as printed,
    the infimum is 0 for singular Λ (erratum 001-C4)."""
    draws, rng = _rng(draws, seed)
    worst_full, worst_sing, zero_unres, n_sing = 0.0, 0.0, 0, 0
    for i in range(draws):
        J = int(rng.integers(1, 6))
        r = J if i % 2 == 0 else int(rng.integers(1, J + 1))
        A = rng.standard_normal((J, r))
        Lam = A @ A.T
        cf = erm.prop_c4_closed_form(Lam)
        v = erm.prop_c4_inf(Lam, restrict_to_range=True)
        if r == J:
            worst_full = max(worst_full, abs(v / cf - 1))
        else:
            n_sing += 1
            worst_sing = max(worst_sing, abs(v / cf - 1))
            zero_unres += erm.prop_c4_inf(Lam, restrict_to_range=False) == 0.0
    return [close(Item("Proposition C.4", "max relative gap of inf xᵀΛ⁺x/2 to 1/(2 max Λ_kk), Λ invertible", 0.0, paper=PAPER),
                  worst_full, kind="theory-check", atol=1e-9, note=MATH_NOTE),
            close(Item("Proposition C.4 (x in range Λ)", f"same, singular Λ ({n_sing} draws)", 0.0, paper=PAPER), worst_sing,
                  kind="theory-check", atol=1e-9,
                  note="restricting x to range(Λ) is our reading of what the proof of Prop. C.3 needs"),
            claim(Item("Proposition C.4 as printed (erratum 001-C4)",
                       f"singular Λ ({n_sing} draws): draws where the "
                       "infimum over all of Ω^c is 0 instead of 1/(2 max Λ_kk)", 0, paper=PAPER), int(zero_unres),
                  zero_unres > 0, kind="erratum", note="a null vector of Λ scaled into Ω^c has cost 0")]


__all__ = ["lemma_b1_rows", "lemma_b2_rows", "random_erm_problem", "erm_bound_rows", "prop_c4_rows"]
