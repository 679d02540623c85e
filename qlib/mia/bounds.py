"""The worst case over all algorithms on discrete data and the diversity constant C(P).

Paper 003 §5.2 and App. C/G: Theorem 5.4 (max_A Δ_n = (1/2) Σ_j E|B_j/n − p_j|, attained by any
injective algorithm of the empirical law), De Moivre's closed form (Eq. 37), Corollary 5.4.1
(c·C(P)/√n ≤ max Δ_n ≤ C(P)/(2√n)), the diversity constant C(P) = Σ_j sqrt(p_j(1 − p_j)) with
its entropy bounds (Lemmas C.4, C.5, Eq. 17–19), Lemma C.1 (infinite C(P): slow rates) and the
Bernoulli closed forms (Lemma C.3 and its generalisation to a threshold on the sum, our derivation).

Errata: Corollary 5.4.1's proof claims −(3/2) ln 2 + 1 > 0 (it is −0.0397); the stated
constant c = 0.2974 nevertheless holds numerically (the infimum of :func:`cor541_ratio` over the grids of the chapter is computed there).
Eq. 19 needs the *natural* logarithm.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln, zeta
from scipy.stats import binom

from qlib.validation import check_alloc, check_choice, check_float, check_int, check_positive, check_probability

from .exact import MAX_STATES, check_max_states, check_prob_vector, delta_discrete_algorithm

COR541_C = math.exp(1.5 * math.log(2) - 1 - 1 / 3) / math.sqrt(2 * math.pi)  #: stated constant, 0.29744
COR541_LIMIT = 1 / math.sqrt(2 * math.pi)  #: n → ∞ limit of the ratio, 0.398942


def _abs_dev_demoivre(p: np.ndarray, n: int) -> np.ndarray:
    """E|B − np| for B ~ Bin(n, p), elementwise: 2(m+1) C(n, m+1) p^{m+1}(1−p)^{n−m}, m = ⌊np⌋."""
    p = np.asarray(p, dtype=np.float64)
    m = np.floor(n * p)
    out = np.zeros_like(p)
    ok = (m + 1 <= n) & (p > 0) & (p < 1)
    mk = m[ok]
    pk = p[ok]
    logv = (math.log(2) + np.log(mk + 1) + gammaln(n + 1) - gammaln(mk + 2) - gammaln(n - mk)
            + (mk + 1) * np.log(pk) + (n - mk) * np.log1p(-pk))
    out[ok] = np.exp(logv)
    return out


def max_delta_discrete(p, n: int, method: str = "binomial", *, max_states: int = MAX_STATES) -> float:
    """Theorem 5.4 of paper 003: max over all algorithms of Δ_n = (1/2) Σ_j E|B_j/n − p_j|.

    ``method``: 'binomial' (sum over binomial pmfs, O(K n)), 'demoivre' (Eq. 37, O(K)) or
    'enumerate' (TV of the injective algorithm over all count vectors, Eq. 31/32 and 24).
    """
    p = check_prob_vector("p", p)
    n = check_int("n", n, low=1, integral_float=True)
    check_choice("method", method, ("binomial", "demoivre", "enumerate"))
    max_states = check_max_states(max_states)
    if method == "binomial":
        check_alloc("n", len(p) * (n + 1), 8 * 4, value=n, what="the binomial pmfs of the K atoms (K, n + 1)")

        b = np.arange(n + 1)
        pmf = binom.pmf(b[None, :], n, p[:, None])
        return 0.5 * float((pmf * np.abs(b[None, :] / n - p[:, None])).sum())
    if method == "demoivre":
        return 0.5 * float(_abs_dev_demoivre(p, n).sum()) / n
    if method == "enumerate":
        return delta_discrete_algorithm(p, n, None, max_states=max_states)
    raise ValueError(f"method must be 'binomial', 'demoivre' or 'enumerate', got {method!r}")


def C_P(p) -> float:
    """The diversity constant C(P) = Σ_j sqrt(p_j (1 − p_j)) (paper 003, §5.2)."""
    p = check_prob_vector("p", p, allow_zero=True)
    return float(np.sqrt(p * (1 - p)).sum())


def gini_simpson(p) -> float:
    """Gini–Simpson index Σ p_j (1 − p_j) (= 1 − Σ p_j², computed without cancellation)."""
    p = check_prob_vector("p", p, allow_zero=True)
    return float((p * (1 - p)).sum())


def shannon(p) -> float:
    """Shannon entropy in nats (natural log, as Eq. 19 requires)."""
    p = check_prob_vector("p", p, allow_zero=True)
    q = p[p > 0]
    return float(-(q * np.log(q)).sum())


def C_P_range(delta: float, K: int) -> tuple[float, float]:
    """Lemma C.5: (inf, max) of C(P) over laws on K atoms with max_j p_j = δ ∈ [1/K, 1)."""
    K = check_int("K", K, low=2)
    delta = check_float("delta", delta, low=1.0 / K - 1e-15, high=1.0, high_open=True)
    mx = math.sqrt(delta * (1 - delta)) + math.sqrt((1 - delta) * (K - 2 + delta))
    f = math.floor(1.0 / delta + 1e-12)
    r = max(0.0, delta * f)
    inf = math.sqrt(delta * (1 - delta)) * f + math.sqrt(max(0.0, r * (1 - r)))
    return inf, mx


def cor541_ratio(p, n: int) -> float:
    """R = max_A Δ_n · sqrt(n) / C(P), the ratio bounded by Corollary 5.4.1 (c ≤ R ≤ 1/2)."""
    return max_delta_discrete(p, n, "demoivre") * math.sqrt(check_int("n", n, low=1, integral_float=True)) / C_P(p)


def cor541_condition(p, n: int) -> bool:
    """The corollary's condition: n ≥ 5 and n > 1/p_j for every atom j (erratum: j = 1..K)."""
    p = check_prob_vector("p", p)
    n = check_int("n", n, low=1, integral_float=True)
    return bool(n >= 5 and np.all(n > 1.0 / p))


def sample_size_discrete(C: float, eps: float) -> int:
    """Smallest n with C/(2 sqrt n) ≤ ε, i.e. n = ⌈(C/(2ε))²⌉ (Corollary 5.4.1's sample-size rule)."""
    C = check_positive("C", C)
    eps = check_positive("eps", eps)
    n = math.ceil((C / (2 * eps)) ** 2)
    while C / (2 * math.sqrt(n)) > eps:  # guard against rounding of the square
        n += 1
    return max(n, 1)


def bernoulli_max_delta(p: float, n: int) -> float:
    """Lemma C.3 of paper 003: θ̂ = max_j z_j on Bernoulli(p) data has Δ_n = 2p(1 − p)^n."""
    p = check_probability("p", p, open_low=True, open_high=True)
    return 2 * p * (1 - p) ** check_int("n", n, low=1, integral_float=True)


def bernoulli_threshold_delta(p: float, n: int, m: int) -> float:
    """θ̂ = 1{Σ z_j ≥ m} on Bernoulli(p) data: Δ_n = 2p(1 − p)·P(Bin(n − 1, p) = m − 1).

    Derivation (Lemma C.2 with two output cells): only training sets whose sum is m − 1 or m matter;
    it reduces to Lemma C.3 at m = 1."""
    p = check_probability("p", p, open_low=True, open_high=True)
    n = check_int("n", n, low=1, integral_float=True)
    m = check_int("m", m, low=1, high=n)
    return float(2 * p * (1 - p) * binom.pmf(m - 1, n - 1, p))


def log_bernoulli_threshold_delta(p: float, n: int, m: int) -> float:
    """log of :func:`bernoulli_threshold_delta`, exact far below the float range."""
    p = check_probability("p", p, open_low=True, open_high=True)
    n = check_int("n", n, low=1, integral_float=True)
    m = check_int("m", m, low=1, high=n)
    return float(math.log(2 * p * (1 - p)) + binom.logpmf(m - 1, n - 1, p))


def kl_bernoulli(t: float, p: float) -> float:
    """KL(Bern(t) ‖ Bern(p)) in nats."""
    t = check_probability("t", t)
    p = check_probability("p", p, open_low=True, open_high=True)
    out = 0.0
    if t > 0:
        out += t * math.log(t / p)
    if t < 1:
        out += (1 - t) * math.log((1 - t) / (1 - p))
    return out


def power_law_max_delta(a: float, n: int, J: int = 200_000) -> tuple[float, float, float]:
    """Lemma C.1 example: p_j = j^{−a}/ζ(a) (C(P) = ∞ for 1 < a ≤ 2).

    Returns (value, lower, upper): the exact sum over j ≤ J of (1/2)E|B_j/n − p_j| plus the tail
    Σ_{j>J} p_j(1 − p_j)^n, which lies in [T(1 − n p_{J+1}), T] with T = ζ(a, J+1)/ζ(a) (valid
    when n p_{J+1} < 1, where (1/2)E|B/n − p| = p(1 − p)^n exactly). ``value`` is the midpoint.
    """
    a = check_float("a", a, low=1.0, low_open=True)
    n = check_int("n", n, low=1, integral_float=True)
    J = check_int("J", J, low=1)
    check_alloc("J", J, 8 * 4, value=J, what="the power law's first J masses")
    j = np.arange(1, J + 1, dtype=np.float64)
    z = zeta(a)
    p = j ** (-a) / z
    head = 0.5 * float(_abs_dev_demoivre(p, n).sum()) / n
    T = float(zeta(a, J + 1)) / z
    pJ1 = (J + 1) ** (-a) / z
    if n * pJ1 >= 1:
        raise ValueError(f"J={J} too small for n={n}: need n·p_(J+1) < 1")
    lo, hi = head + T * (1 - n * pJ1), head + T
    return float(0.5 * (lo + hi)), float(lo), float(hi)


def entropy_bound_chain(p) -> dict:
    """The quantities of Eq. 17–19 and Lemma C.4 for one law (natural log)."""
    p = check_prob_vector("p", p, allow_zero=True)
    K = p.size
    C, G, H = C_P(p), gini_simpson(p), shannon(p)
    return {
        "C": C, "GS": G, "H": H, "K": K,
        "sqrt(K-1)": math.sqrt(K - 1),
        "sqrt(K(1-e^-H))": math.sqrt(K * (-math.expm1(-H))),
        "sqrt(KH)": math.sqrt(K * H),
        "sqrt(GS/K)": math.sqrt(G / K),
    }


__all__ = [
    "COR541_C", "COR541_LIMIT", "max_delta_discrete", "C_P", "gini_simpson", "shannon", "C_P_range",
    "cor541_ratio", "cor541_condition", "sample_size_discrete", "bernoulli_max_delta",
    "bernoulli_threshold_delta", "log_bernoulli_threshold_delta", "kl_bernoulli",
    "power_law_max_delta", "entropy_bound_chain",
]
