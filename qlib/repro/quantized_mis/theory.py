"""Chapter 02 of the quantized-MIS part (paper 001 §3, Theorems 3.1 and 3.3, Algorithm 1, the
proof facts of App. B–C), as ledger rows: every statement is checked on toy instances against an
exact or second computation, so every row is a ``theory-check`` (or an erratum).

* :func:`eq11_rows` — eq. 11 literally against the per-candidate Chernoff exponent;
* :func:`rate_table`, :func:`theorem31_rows` — Theorem 3.1 on exact Δ_n;
* :func:`adaptive_table`, :func:`theorem33_rows` — Theorem 3.3 on a size-adaptive toy;
* :func:`proof_fact_rows` — Lemmas B.1, B.2, Prop. C.3's bound and Prop. C.4 (:mod:`.erm_facts`);
* :func:`algorithm1_rows` — Algorithm 1 (:func:`qlib.rqn.r_q`) against the exact (δ_2)²/(2σ²).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import pandas as pd

from ...mia import chernoff_rate, erm, erm_log_delta, gap_statistics
from ...mia.exact import check_prob_vector
from ...rqn import r_q
from ...validation import check_array, check_callable, check_float, check_int, check_int_sequence, check_seed
from ..ledger import Item, Row, claim, close
from . import erm_facts

__all__ = ["eq11_rows", "rate_table", "theorem31_rows", "adaptive_table", "theorem33_rows", "proof_fact_rows",
           "algorithm1_rows"]


def eq11_rows(toys: dict) -> tuple[list[Row], pd.DataFrame]:
    """Eq. 11 computed literally against the per-candidate Chernoff exponent (our reduction by the
    contraction principle): theory-check rows, and the table of exponents."""
    rows, table = [], []
    for name, (L, p) in toys.items():
        ch, lit = chernoff_rate(L, p), erm.cramer_rate_eq11(L, p)
        rows.append(close(Item("Theorem 3.1 / eq. 11", f"C_P^1 ({name}): eq. 11 literally vs per-k Chernoff", ch), lit, rtol=1e-8,
                          kind="theory-check", note="equivalence by the contraction principle"))
        table.append({"toy": name, "per-k Chernoff exponents": np.round(erm.chernoff_exponents(L, p), 6),
                      "C_P^1 (Chernoff)": ch, "eq. 11 literally": lit})
    return rows, pd.DataFrame(table)


def _law(p) -> np.ndarray:
    return check_prob_vector("p", p)


def rate_table(L, p, ns) -> pd.DataFrame:
    """−log Δ_n / n (exact) and its (½ log n)/n-corrected version for each n: ``L`` (candidates,
    atoms) the losses, ``p`` (atoms,) the law, ``ns`` the sample sizes (integers >= 1)."""
    L = check_array("L", L, ndim=2)
    p = _law(p)
    if L.shape[1] != p.size:
        raise ValueError(f"L must have one column per atom of p ({p.size}), got shape {L.shape}")
    ns = check_int_sequence("ns", ns, low=1)
    out = []
    for n in ns:
        ld = erm_log_delta(L, p, n)
        out.append({"n": n, "log Δ_n": ld, "log10 Δ_n": ld / math.log(10), "−log Δ_n / n": -ld / n,
                    "corrected": -(ld + 0.5 * math.log(n)) / n})
    return pd.DataFrame(out)


def theorem31_rows(tables: dict) -> list[Row]:
    """Theorem 3.1 on exact Δ_n: −(1/n) log Δ_n ≥ C_P^1 and decreasing (``tables``: name → (rate
    table, C_P^1))."""
    rows = []
    for name, (t, c) in tables.items():
        r = t["−log Δ_n / n"].to_numpy()
        rows.append(claim(Item("Theorem 3.1", f"{name}: −(1/n) log(1 − MIS_n) ≥ C_P^1 and decreasing, n ≤ {t['n'].max()}",
                               f"limit ≥ C_P^1 = {c:.5f}"),
                          f"{r[-1]:.5f} at n = {t['n'].max()} (corrected {t['corrected'].iloc[-1]:.5f})",
                          bool(np.all(r >= c) and np.all(np.diff(r) < 0)), kind="theory-check",
                          tolerance="exact values",
                          note="a theorem checked on a toy instance with exact Δ_n: a theory-check"))
    return rows


def adaptive_table(adaptive, p, ns, gap_exponent: float) -> tuple[pd.DataFrame, object]:
    """The size-adaptive toy of Theorem 3.3: ratio −log Δ_n/(n δ_2²), corrected, per-n Chernoff.

    ``adaptive(n)``: the loss matrix at sample size n; ``p`` the law; ``ns`` sample sizes (integers
    >= 1); δ_2 = n^−gap_exponent with ``gap_exponent`` in (0, 1/2) — Theorem 3.3's hypotheses
    δ_2 → 0 and √n δ_2 → ∞."""
    check_callable("adaptive", adaptive)
    p = _law(p)
    ns = check_int_sequence("ns", ns, low=1)
    gap_exponent = check_float("gap_exponent", gap_exponent, low=0.0, high=0.5, low_open=True, high_open=True)

    g = gap_statistics(adaptive(ns[-1]), p)
    target = g.rate
    out = []
    for n in ns:
        d2 = n ** -gap_exponent
        ld = erm_log_delta(adaptive(n), p, n)
        out.append({"n": n, "δ_2": d2, "√n δ_2": math.sqrt(n) * d2, "log Δ_n": ld, "ratio": -ld / (n * d2 ** 2),
                    "corrected": -(ld + math.log(math.sqrt(n) * d2 * math.sqrt(2 * target))) / (n * d2 ** 2),
                    "C_P^1(n)/δ_2²": chernoff_rate(adaptive(n), p) / d2 ** 2})
    return pd.DataFrame(out), g


def theorem33_rows(ad: pd.DataFrame, target: float) -> list[Row]:
    """Theorem 3.3 on :func:`adaptive_table`'s ``ad``: the ratio stays above ``target`` = 1/(2σ²) > 0."""
    target = check_float("target", target, low=0.0, low_open=True)
    if not isinstance(ad, pd.DataFrame) or not {"n", "ratio"} <= set(ad.columns) or ad.empty:
        raise ValueError("ad must be adaptive_table's non-empty frame (columns n and ratio)")
    r = ad["ratio"].to_numpy()
    return [claim(Item("Theorem 3.3", f"ratio −log(1 − MIS_n)/(n δ_2²) at n = {ad['n'].iloc[-1]}", f"limit ≥ 1/(2σ²) = {target:.4f}"),
                  f"{r[-1]:.4f} (decreasing: {bool(np.all(np.diff(r) < 0))})", bool(np.all(r >= target)),
                  kind="theory-check", tolerance="exact values, finite n",
                  note="a theorem checked on a toy instance with exact Δ_n: a theory-check")]


def proof_fact_rows(b1_draws: int, bound_draws: int, c4_draws: int, seed: int) -> tuple[list[Row], pd.DataFrame]:
    """Lemmas B.1, B.2, the bound Δ_n ≤ 2(1 − p_1) and Prop. C.4 (erratum 001-C4) on random instances
    (the checks: :mod:`qlib.repro.quantized_mis.erm_facts`)."""
    b1_draws = check_int("b1_draws", b1_draws, low=1)
    bound_draws = check_int("bound_draws", bound_draws, low=1)
    c4_draws = check_int("c4_draws", c4_draws, low=1)
    seed = check_seed("seed", seed)
    rows = [*erm_facts.lemma_b1_rows(b1_draws, seed), *erm_facts.lemma_b2_rows(200, seed),
            *erm_facts.erm_bound_rows(bound_draws, seed), *erm_facts.prop_c4_rows(c4_draws, seed)]
    table = pd.DataFrame([{"where": r.where, "quantity": r.quantity, "expected": r.paper_value, "ours": r.ours,
                           "verdict": r.verdict, "note": r.note} for r in rows])
    return rows, table


def algorithm1_rows(toys: dict, p, val_copies: Sequence[int], seed: int) -> list[Row]:
    """Algorithm 1 (:func:`qlib.rqn.r_q`) on a validation set whose empirical law is exactly ``p``
    against the exact (δ_2)²/(2σ²) of ``qlib.mia.gap_statistics`` (our second computation):
    population variance (ddof=0) and the default unbiased one (exact factor (M−1)/M).
    ``val_copies`` (atoms,): how many copies of each atom the validation set holds, integers >= 1
    proportional to ``p``."""
    p = _law(p)
    copies = check_array("val_copies", val_copies, ndim=1, dtype="int", low=1)
    if copies.shape != p.shape or not np.allclose(copies / copies.sum(), p, rtol=0, atol=1e-9):
        raise ValueError(f"val_copies must be proportional to p ({p.tolist()}) so that the validation law is p "
                         f"exactly, got {copies.tolist()}")
    seed = check_seed("seed", seed)
    val = np.repeat(np.arange(len(p)), copies)
    perm = np.random.default_rng(seed).permutation(len(p))
    M = val.size
    rows = []
    for name, L in toys.items():
        exact_r = gap_statistics(L, p).r_q
        rows.append(close(Item("Algorithm 1", f"r_Q^n by Algorithm 1, ddof=0 ({name}) vs (δ_2)²/(2σ²)", exact_r),
                          float(r_q(L[perm][:, val], ddof=0)), rtol=1e-9, kind="theory-check",
                          note="validation law = p exactly; population variance"))
        rows.append(close(Item("Algorithm 1", f"r_Q^n by Algorithm 1, ddof=1 default ({name}) vs (δ_2)²/(2σ²)·(M−1)/M", exact_r * (M - 1) / M),
                          float(r_q(L[perm][:, val])), rtol=1e-9, kind="theory-check",
                          note=f"unbiased variance: exact factor (M−1)/M, M = {M}"))
    return rows

