"""Exact membership-inference quantities for discrete data (paper 003 §2–§3, App. E and G).

Notation (paper 003, Eq. 1–3, 24): θ̂_n = A(z_1..z_n), the member pair is (θ̂_n, z_1), the
non-member pair is (θ̂_n, z_0) with z_0 ~ P independent. Δ_n = TV(member law, non-member law),
the balanced-prior best accuracy is 1/2 + Δ_n/2 and the security Sec_n = 1 − Δ_n at ν = 1/2
(Theorem 3.1); the companion paper's MIS_n is Sec_n at ν = 1/2 (paper 001, Thm A.2).

Convention (paper 003): T ~ Bernoulli(ν), T = 1 means *non-member*; the member case has
probability 1 − ν.

Erratum handled here: Eq. 21–23 of paper 003 swap the member and non-member densities. The
correct best accuracy is 1/2 + (1/2) Σ |(1 − ν) q_member − ν p_nonmember| (:func:`bayes_accuracy`);
the printed form is kept as :func:`printed_eq23_accuracy` to show that it differs for ν ≠ 1/2.

For a deterministic algorithm of the empirical distribution on K atoms, θ̂ = F(N) with
N ~ Multinomial(n, p) the count vector (Prop. A.3); the two joint laws follow from Eq. 31/32:
P(N) is the multinomial pmf, and the member pair (F(N), u_k) has mass P(N)·N_k/n, the non-member
pair has mass P(F(N) = θ)·p_k.
"""

from __future__ import annotations

from math import comb

import numpy as np
from scipy.special import gammaln
from scipy.stats import binom

from qlib.validation import check_alloc, check_array, check_callable, check_float, check_int, check_probability

#: enumeration of more count vectors than this raises instead of hanging (override per call)
MAX_STATES = 10_000_000
#: tolerance on the sum of a probability vector
PROB_ATOL = 1e-9


def check_prob_vector(name: str, p, *, allow_zero: bool = False) -> np.ndarray:
    """A law on K atoms: a finite non-empty 1-D float64 vector, entries > 0 (>= 0 with
    ``allow_zero``; atoms of mass 0 are otherwise to be dropped), summing to 1 within ``PROB_ATOL``."""
    arr = check_array(name, p, ndim=1)
    if allow_zero and arr.min() < 0:
        raise ValueError(f"{name} must have entries >= 0, got min {arr.min()}")
    if not allow_zero and arr.min() <= 0:
        raise ValueError(f"{name} must have entries in (0, 1] (drop atoms of mass 0), got min {arr.min()}")
    s = float(arr.sum())
    if abs(s - 1.0) > PROB_ATOL:
        raise ValueError(f"{name} must sum to 1 (within {PROB_ATOL}), got sum {s!r}")
    return arr


def check_max_states(max_states) -> int:
    """The enumeration cap: an integer >= 1."""
    return check_int("max_states", max_states, low=1)


def _check_mass(name: str, value) -> np.ndarray:
    """A non-empty finite array of masses (entries >= 0), any shape."""
    return check_array(name, value, low=0.0)


def _check_tables(q_member, p_nonmember) -> tuple[np.ndarray, np.ndarray]:
    """The member and non-member mass tables: finite, >= 0, non-empty, of the same shape."""
    q = _check_mass("q_member", q_member)
    p = _check_mass("p_nonmember", p_nonmember)
    if q.shape != p.shape:
        raise ValueError(f"q_member and p_nonmember must have the same shape, got {q.shape} and {p.shape}")
    return q, p


def _check_acc(acc) -> float:
    return check_float("acc", acc, low=0.0, high=1.0)


# --------------------------------------------------------------------------------------------
# elementary TV / accuracy / security identities (Theorem 3.1, App. E)
# --------------------------------------------------------------------------------------------
def tv_discrete(p, q) -> float:
    """Total variation (1/2) Σ |p − q| between two mass arrays of the same shape."""
    p = _check_mass("p", p)
    q = _check_mass("q", q)
    if p.shape != q.shape:
        raise ValueError(f"p and q must have the same shape, got {p.shape} and {q.shape}")
    return 0.5 * float(np.abs(p - q).sum())


def bayes_accuracy(q_member, p_nonmember, nu: float) -> float:
    """Best MIA accuracy sup_φ Acc (corrected Eq. 23 of paper 003): 1/2 + (1/2)Σ|(1−ν)q − νp|.

    ``q_member``: mass of the member pair (θ̂, z_1); ``p_nonmember``: mass of (θ̂, z_0), same shape.
    """
    nu = check_probability("nu", nu, open_low=True, open_high=True)
    q, p = _check_tables(q_member, p_nonmember)
    return 0.5 + 0.5 * float(np.abs((1 - nu) * q - nu * p).sum())


def printed_eq23_accuracy(q_member, p_nonmember, nu: float) -> float:
    """Eq. 23 *as printed* in paper 003 (densities swapped): 1/2 + (1/2)Σ|(1−ν)p − νq|. Erratum."""
    q, p = _check_tables(q_member, p_nonmember)  # checked here, so that messages name our arguments
    return bayes_accuracy(p, q, nu)


def bayes_attack_table(q_member, p_nonmember, nu: float) -> np.ndarray:
    """The Bayes-optimal attack φ*(θ, z) = 1{(1 − ν) q ≥ ν p} ("member") on the cells of the table."""
    nu = check_probability("nu", nu, open_low=True, open_high=True)
    q, p = _check_tables(q_member, p_nonmember)
    return (1 - nu) * q >= nu * p


def attack_accuracy(attack, q_member, p_nonmember, nu: float) -> float:
    """Acc(φ) = ν·P_nonmember(φ = 0) + (1 − ν)·P_member(φ = 1) (Eq. 20) for a 0/1 table ``attack``."""
    nu = check_probability("nu", nu, open_low=True, open_high=True)
    q, p = _check_tables(q_member, p_nonmember)
    a = np.asarray(attack)
    if a.dtype.kind not in "biu" or (a.dtype.kind != "b" and not np.isin(a, (0, 1)).all()):
        raise TypeError(f"attack must be a 0/1 (boolean) table, got dtype {a.dtype}")
    a = a.astype(bool)
    if a.shape != q.shape:
        raise ValueError(f"attack must have the shape of q_member and p_nonmember {q.shape}, got {a.shape}")
    return float(nu * p[~a].sum() + (1 - nu) * q[a].sum())


def brute_force_accuracies(q_member, p_nonmember, nu: float, max_cells: int = 16) -> np.ndarray:
    """Accuracies of *all* 2^{cells} attacks on a small table (at most ``max_cells`` cells)."""
    nu = check_probability("nu", nu, open_low=True, open_high=True)
    max_cells = check_int("max_cells", max_cells, low=1, high=30)
    q, p = _check_tables(q_member, p_nonmember)
    q, p = q.ravel(), p.ravel()
    c = q.size
    if c > max_cells:
        raise ValueError(f"brute force over 2^{c} attacks refused: the table has {c} cells > max_cells={max_cells}")
    masks = ((np.arange(2**c)[:, None] >> np.arange(c)[None, :]) & 1).astype(bool)
    return nu * ((~masks) * p).sum(1) + (1 - nu) * (masks * q).sum(1)


def sec_from_acc(acc: float, nu: float) -> float:
    """Sec_n = ν_*^{-1}(1 − sup Acc) with ν_* = min(ν, 1 − ν) (Eq. 2 of paper 003)."""
    nu = check_probability("nu", nu, open_low=True, open_high=True)
    return (1.0 - _check_acc(acc)) / min(nu, 1 - nu)


def mis_from_acc(acc: float) -> float:
    """MIS_n = 2(1 − sup Acc) (paper 001, Eq. 2): Sec_n at ν = 1/2."""
    return 2.0 * (1.0 - _check_acc(acc))


def accuracy_bounds(delta: float, nu: float) -> tuple[float, float]:
    """Theorem 3.1 of paper 003: ν_* − ν_*Δ ≤ Acc(φ) ≤ 1 − ν_* + ν_*Δ for every attack."""
    nu = check_probability("nu", nu, open_low=True, open_high=True)
    delta = check_probability("delta", delta)
    ns = min(nu, 1 - nu)
    return ns - ns * delta, 1 - ns + ns * delta


def delta_lower_bound_from_acc(acc: float) -> float:
    """Any attack's accuracy at ν = 1/2 gives Δ_n ≥ 2·Acc − 1 (Theorem 3.1 at ν = 1/2)."""
    return 2.0 * _check_acc(acc) - 1.0


# --------------------------------------------------------------------------------------------
# count vectors and the two joint laws (Eq. 31/32)
# --------------------------------------------------------------------------------------------
#: n_count_vectors computes C(n + K − 1, K − 1) exactly up to this many bits (beyond: seconds to minutes)
MAX_COUNT_BITS = 1_000_000


def n_count_vectors(n: int, K: int) -> int:
    """Number of count vectors of n draws over K atoms, C(n + K − 1, K − 1) (exact; a count of more than
    :data:`MAX_COUNT_BITS` bits is refused, naming n and K: ``count_vectors(10**6, 10**6)`` took > 30 s)."""
    n = check_int("n", n, low=1, integral_float=True)
    K = check_int("K", K, low=1)
    bits = (gammaln(n + K) - gammaln(n + 1) - gammaln(K)) / np.log(2)
    if bits > MAX_COUNT_BITS:
        raise ValueError(f"C(n+K-1, K-1) for n={n}, K={K} has about {bits:.3g} bits, more than "
                         f"MAX_COUNT_BITS={MAX_COUNT_BITS}: use fewer atoms or a smaller n")
    return comb(n + K - 1, K - 1)


def _count_exceeds(n: int, K: int, cap: int) -> int | None:
    """C(n + K − 1, K − 1) when it is at most ``cap``, else None — in at most a few steps past ``cap``:
    C(m − k + i, i) for i = 1..k (k = min(n, K − 1), m = n + K − 1) grows with i, so the product stops
    as soon as it passes the cap (the exact count of C(2·10^6, 10^6) takes > 30 s)."""
    m, k = n + K - 1, min(n, K - 1)
    v = 1
    for i in range(1, k + 1):
        v = v * (m - k + i) // i
        if v > cap:
            return None
    return v


def count_vectors(n: int, K: int, *, max_states: int = MAX_STATES) -> np.ndarray:
    """All count vectors N ∈ ℕ^K with Σ N = n, as an (S, K) int64 array (lexicographic order).

    Raises ValueError when S = C(n+K−1, K−1) exceeds ``max_states``, instead of hanging.
    """
    n = check_int("n", n, low=1, integral_float=True)
    K = check_int("K", K, low=1)
    max_states = check_max_states(max_states)
    S = _count_exceeds(n, K, max_states)
    if S is None:
        log10 = (gammaln(n + K) - gammaln(n + 1) - gammaln(K)) / np.log(10)
        raise ValueError(
            f"enumeration of C(n+K-1, K-1) ≈ 10^{log10:.1f} count vectors (n={n}, K={K}) exceeds "
            f"max_states={max_states:.3g}; use fewer atoms, a smaller n or raise max_states"
        )
    check_alloc("n and K", S * K, 8 * 3, value=(n, K), what=f"the {S} count vectors of K={K} atoms")
    if K == 1:
        return np.array([[n]], dtype=np.int64)
    # rows of (N_1..N_{K-1}) with partial sums <= n, built coordinate by coordinate
    rows = np.arange(n + 1, dtype=np.int64)[:, None]
    for _ in range(K - 2):
        used = rows.sum(1)
        reps = n - used + 1
        first = np.repeat(rows, reps, axis=0)
        nxt = np.concatenate([np.arange(r, dtype=np.int64) for r in reps]) if rows.shape[0] else np.zeros(0, np.int64)
        rows = np.concatenate([first, nxt[:, None]], axis=1)
    last = n - rows.sum(1, keepdims=True)
    return np.concatenate([rows, last], axis=1)


def log_multinomial_pmf(counts: np.ndarray, p) -> np.ndarray:
    """log P(N = counts) for N ~ Multinomial(Σ counts, p) (Eq. 31); rows of ``counts``."""
    p = check_prob_vector("p", p)
    counts = check_array("counts", counts, ndim=(1, 2), dtype="int", low=0)
    if counts.shape[-1] != p.size:
        raise ValueError(f"counts must have one column per atom of p ({p.size}), got shape {counts.shape}")
    n = counts.sum(-1)
    return gammaln(n + 1) - gammaln(counts + 1).sum(-1) + (counts * np.log(p)).sum(-1)


def _labels(F, counts):
    out = np.asarray(F(counts))
    if out.shape[:1] != (counts.shape[0],):
        raise ValueError("F must return one value (or one row) per count vector")
    if out.ndim > 1:
        out = out.reshape(out.shape[0], -1)
        _, inv = np.unique(out, axis=0, return_inverse=True)
    else:
        _, inv = np.unique(out, return_inverse=True)
    return inv.ravel()


def joint_tables(p, n: int, F=None, *, max_states: int = MAX_STATES):
    """Member and non-member joint laws of (θ̂, z) for θ̂ = F(N) (Eq. 31/32 of paper 003).

    ``F`` maps an (S, K) array of count vectors to S parameter values (any values; equal values are
    the same θ). ``None`` is the injective algorithm (θ̂ = N). Returns ``(q_member, p_nonmember)``,
    two (L, K) arrays over the L distinct parameters and the K atoms.
    """
    p = check_prob_vector("p", p)
    n = check_int("n", n, low=1, integral_float=True)
    max_states = check_max_states(max_states)
    if F is not None:
        check_callable("F", F)
    counts = count_vectors(n, p.size, max_states=max_states)
    lab = np.arange(counts.shape[0]) if F is None else _labels(F, counts)
    L = int(lab.max()) + 1
    P = np.exp(log_multinomial_pmf(counts, p))
    q = np.zeros((L, p.size))
    np.add.at(q, lab, P[:, None] * counts / n)
    ptheta = np.bincount(lab, weights=P, minlength=L)
    return q, ptheta[:, None] * p[None, :]


def delta_discrete_algorithm(p, n: int, F=None, *, max_states: int = MAX_STATES) -> float:
    """Δ_n(P, A) = TV of the two joint laws, for θ̂ = F(counts) (direct enumeration)."""
    q, pn = joint_tables(p, n, F, max_states=max_states)
    return tv_discrete(q, pn)


def delta_finite_theta(p, n: int, F, *, max_states: int = MAX_STATES) -> float:
    """Lemma C.2 of paper 003: Δ_n = (1/2) Σ_j Σ_l |E[(p_j − N_j/n) 1{N ∈ D_l}]|."""
    p = check_prob_vector("p", p)
    n = check_int("n", n, low=1, integral_float=True)
    max_states = check_max_states(max_states)
    check_callable("F", F)
    counts = count_vectors(n, p.size, max_states=max_states)
    lab = _labels(F, counts)
    P = np.exp(log_multinomial_pmf(counts, p))
    terms = P[:, None] * (p[None, :] - counts / n)
    S = np.zeros((int(lab.max()) + 1, p.size))
    np.add.at(S, lab, terms)
    return 0.5 * float(np.abs(S).sum())


def max_acc_discrete(p, n: int, nu: float) -> float:
    """Best accuracy against the worst (injective) algorithm for any ν (corrected Eq. 23 applied to
    the joint laws of Eq. 31/32, whose cells sum binomially over the atoms):
    1/2 + (1/2) Σ_k E|(1 − ν) B_k/n − ν p_k|, B_k ~ Bin(n, p_k)."""
    p = check_prob_vector("p", p)
    n = check_int("n", n, low=1, integral_float=True)
    nu = check_probability("nu", nu, open_low=True, open_high=True)
    check_alloc("n", len(p) * (n + 1), 8 * 4, value=n, what="the binomial pmfs of the K atoms (K, n + 1)")
    b = np.arange(n + 1)
    pmf = binom.pmf(b[None, :], n, p[:, None])
    return 0.5 + 0.5 * float((pmf * np.abs((1 - nu) * b[None, :] / n - nu * p[:, None])).sum())


def sec_discrete(p, n: int, nu: float) -> float:
    """Sec_n of the injective algorithm for prior ν (Eq. 2 of paper 003 with :func:`max_acc_discrete`)."""
    return sec_from_acc(max_acc_discrete(p, n, nu), nu)


def all_partitions_labels(S: int, L: int, rng: np.random.Generator) -> np.ndarray:
    """A random labelling of S count vectors into {0..L−1} (a random deterministic algorithm F, to test the maximality of Theorem 5.4)."""
    return rng.integers(0, L, size=S)


__all__ = [
    "tv_discrete", "bayes_accuracy", "printed_eq23_accuracy", "bayes_attack_table", "attack_accuracy",
    "brute_force_accuracies", "check_prob_vector", "check_max_states", "PROB_ATOL", "sec_from_acc", "mis_from_acc", "accuracy_bounds",
    "delta_lower_bound_from_acc", "n_count_vectors", "count_vectors", "log_multinomial_pmf",
    "joint_tables", "delta_discrete_algorithm", "delta_finite_theta", "max_acc_discrete", "sec_discrete",
]
