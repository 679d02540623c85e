"""ERM over a finite parameter set Θ̄ on discrete data: exact MIS_n and the rates of paper 001 §3.

Setting (paper 001 §3, App. A–C): candidates θ̄_1..θ̄_K with loss ℓ(θ̄_k, u_a) = ``losses[k, a]`` on
atoms u_a of law p. A_Q returns the empirical-risk minimiser over Θ̄; it is a deterministic function
of the count vector N ~ Multinomial(n, p). Candidates are ordered by population risk
m_k = Σ_a p_a ℓ_{k,a} (θ̄_1 best), L_k = ℓ(θ̄_k, z) − ℓ(θ̄_1, z), δ_k = E L_k.

* :func:`erm_log_delta` — exact log Δ_n = log(1 − MIS_n) by Lemma C.2 of paper 003,
  Δ_n = (1/2) Σ_j Σ_l |S_{j,l}|, S_{j,l} = E[(p_j − N_j/n) 1{θ̂ = θ̄_l}], summed in log space with
  signs, and S_{j,1} = −Σ_{l≥2} S_{j,l} (because E N_j = n p_j), so that values far below 1e−300
  keep full relative precision.
* :func:`chernoff_rate` — the constant C_P^1 of Theorem 3.1 (eq. 11). By the contraction principle
  the infimum of the Cramér transform of D^{-1}(L − δ) over Ω^c = {∃k: x_k < −1} is
  min_{k≥2} of the Chernoff exponent −log min_{s} E exp(s L_k); :func:`cramer_rate_eq11` computes
  eq. 11 literally (nested convex optimisation) to show the equivalence.
* :func:`gap_statistics` — δ_k, σ_k², the covariances, c_k = δ_2/δ_k, Λ, σ² = max_k Λ_kk, the
  Theorem 3.3 rate 1/(2σ²) and r_Q = δ_2²/(2σ²) (= min_k δ_k²/(2σ_k²)).
* Prop. C.4 (:func:`prop_c4_inf`): inf over Ω^c of xᵀΛ⁺x/2 equals 1/(2 max_k Λ_kk) when x is
  restricted to range(Λ); over all of Ω^c (as printed) the infimum is 0 for singular Λ (erratum).
* Lemma B.1, Lemma B.2 and the bound Δ_n ≤ 2(1 − P(θ̂ = θ̄_1)) (proof of Prop. C.3).

Tie rule (paper silent, eq. 11 presumes ties go to θ̄_1): ``ties='best'`` (default) picks the tied
candidate of lowest population risk; 'worst' the highest; 'uniform' draws uniformly among the tied
(a randomised algorithm; Lemma C.2 then holds with fractional membership).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize
from scipy.special import logsumexp

from qlib.validation import check_array, check_choice, check_float, check_int

from .exact import MAX_STATES, check_max_states, check_prob_vector, count_vectors, log_multinomial_pmf

TIES = ("best", "worst", "uniform")


def check_loss_matrix(name: str, losses, m: int | None = None) -> np.ndarray:
    """A finite K × m float64 loss matrix with K >= 2 candidate rows and (if given) m atom columns."""
    m = check_int("m", m, low=1, allow_none=True)
    arr = check_array(name, losses, ndim=2)
    if arr.shape[0] < 2:
        raise ValueError(f"{name} must have K >= 2 candidate rows, got K = {arr.shape[0]}")
    if m is not None and arr.shape[1] != m:
        raise ValueError(f"{name} must have one column per atom of p (m = {m}), got {arr.shape[1]}")
    return arr


def _problem(losses, p):
    p = check_prob_vector("p", p)
    L = check_loss_matrix("losses", losses, p.size)
    risk = L @ p
    order = np.argsort(risk, kind="stable")
    return L[order], p, risk[order], order


def _tie_weights(R: np.ndarray, ties: str, scale: float) -> np.ndarray:
    """(S, K) weights of each candidate being returned, given empirical risks R (S, K)."""
    tol = 1e-9 * scale
    rmin = R.min(1, keepdims=True)
    tied = R <= rmin + tol
    if ties == "uniform":
        return tied / tied.sum(1, keepdims=True)
    K = R.shape[1]
    idx = np.argmax(tied, axis=1) if ties == "best" else K - 1 - np.argmax(tied[:, ::-1], axis=1)
    w = np.zeros_like(R)
    w[np.arange(R.shape[0]), idx] = 1.0
    return w


def _log_abs_diff(lpos: float, lneg: float) -> tuple[float, int]:
    """log|e^lpos − e^lneg| and its sign."""
    if lpos == lneg:
        return -math.inf, 0
    if lpos > lneg:
        return lpos + math.log1p(-math.exp(lneg - lpos)), 1
    return lneg + math.log1p(-math.exp(lpos - lneg)), -1


def _lse(x: np.ndarray) -> float:
    return float(logsumexp(x)) if x.size else -math.inf


@dataclass(frozen=True)
class ERMExact:
    """Exact law of the ERM output: log P(θ̂ = θ̄_k) (candidates sorted by population risk),
    log(1 − P(θ̂ = θ̄_1)) and log Δ_n = log(1 − MIS_n)."""

    log_pick: np.ndarray
    log_not_best: float
    log_delta: float
    order: np.ndarray

    @property
    def delta(self) -> float:
        return math.exp(self.log_delta)

    @property
    def mis(self) -> float:
        return -math.expm1(self.log_delta)


def erm_exact(losses, p, n: int, *, ties: str = "best", max_states: int = MAX_STATES) -> ERMExact:
    """Exact Δ_n (in logs) of ERM over the rows of ``losses`` (K × m) for atom law p and sample size n.

    Enumerates the C(n+m−1, m−1) count vectors (ValueError above ``max_states``).
    """
    check_choice("ties", ties, TIES)
    L, p, _, order = _problem(losses, p)
    n = check_int("n", n, low=1, integral_float=True)
    max_states = check_max_states(max_states)
    K, m = L.shape
    N = count_vectors(n, m, max_states=max_states)
    logP = log_multinomial_pmf(N, p)
    R = N @ L.T  # (S, K) empirical risks (times n)
    W = _tie_weights(R, ties, scale=n * max(1.0, float(np.abs(L).max())))
    with np.errstate(divide="ignore"):
        logW = np.log(W)
    log_pick = np.array([_lse(logP + logW[:, k]) for k in range(K)])
    log_not_best = _lse(np.concatenate([logP + logW[:, k] for k in range(1, K)]))
    dev = p[None, :] - N / n  # (S, m)
    with np.errstate(divide="ignore"):
        logabs = np.log(np.abs(dev))
    pieces = []
    for j in range(m):
        pos, neg = dev[:, j] > 0, dev[:, j] < 0
        lp_all, ln_all = [], []
        for k in range(1, K):
            base = logP + logW[:, k] + logabs[:, j]
            lp, ln = _lse(base[pos]), _lse(base[neg])
            lp_all.append(lp)
            ln_all.append(ln)
            pieces.append(_log_abs_diff(lp, ln)[0])  # |S_{j,k}|, k ≥ 2
        pieces.append(_log_abs_diff(_lse(np.array(lp_all)), _lse(np.array(ln_all)))[0])  # |S_{j,1}|
    log_delta = math.log(0.5) + _lse(np.array(pieces))
    return ERMExact(log_pick, log_not_best, log_delta, order)


def erm_log_delta(losses, p, n: int, *, ties: str = "best", max_states: int = MAX_STATES) -> float:
    """log Δ_n = log(1 − MIS_n) of ERM over the rows of ``losses``; exact far below 1e−300 (``ties``,
    ``max_states``: :func:`erm_exact`'s)."""
    return erm_exact(losses, p, n, ties=ties, max_states=max_states).log_delta


def erm_delta(losses, p, n: int, *, ties: str = "best", max_states: int = MAX_STATES) -> float:
    """Δ_n = 1 − MIS_n of ERM over the rows of ``losses`` (K × m) for atom law p, sample size n
    (``ties``, ``max_states``: :func:`erm_exact`'s)."""
    return math.exp(erm_log_delta(losses, p, n, ties=ties, max_states=max_states))


def loss_gaps(losses, p) -> np.ndarray:
    """Atom-wise loss gaps L_k(u_a) = ℓ(θ̄_k, u_a) − ℓ(θ̄_1, u_a), k ≥ 2 ((K−1) × m), sorted candidates."""
    L, p, _, _ = _problem(losses, p)
    return L[1:] - L[:1]


def chernoff_exponent(gap, p, *, closed: bool = False) -> float:
    """−log min_{s ≤ 0} E exp(s L) for one loss gap L (atom values ``gap``, law p), E L > 0.

    This is the rate of P(mean of n copies of L < 0) (open set, ties to θ̄_1): +inf when L ≥ 0 a.s.
    With ``closed=True``, the rate of P(mean ≤ 0): −log P(L = 0) when L ≥ 0 a.s.
    """
    p = check_prob_vector("p", p)
    g = check_array("gap", gap, ndim=1)
    if g.shape != p.shape:
        raise ValueError(f"gap must have one value per atom of p ({p.size}), got shape {g.shape}")
    if np.all(g >= 0):
        if not closed:
            return math.inf
        pz = float(p[g == 0].sum())
        return math.inf if pz == 0 else -math.log(pz)
    lp = np.log(p)
    f = lambda s: float(logsumexp(lp + s * g))  # noqa: E731  (convex in s)
    fp = lambda s: float(np.exp(lp + s * g - logsumexp(lp + s * g)) @ g)  # noqa: E731  tilted mean
    if fp(0.0) <= 0:
        return 0.0
    lo = -1.0
    while fp(lo) > 0:
        lo *= 2.0
    s = optimize.brentq(fp, lo, 0.0, xtol=1e-15, rtol=1e-15, maxiter=500)
    return -f(s)


def chernoff_exponents(losses, p, *, closed: bool = False) -> np.ndarray:
    """Per-candidate Chernoff exponents of P(L̄_k < 0), k = 2..K (sorted candidates)."""
    G = loss_gaps(losses, p)
    if np.any(G @ check_prob_vector("p", p) <= 0):
        raise ValueError("H1.2 requires a unique best candidate (δ_2 > 0); two rows of losses have equal "
                         "population risk under p")
    return np.array([chernoff_exponent(g, p, closed=closed) for g in G])


def chernoff_rate(losses, p, *, closed: bool = False) -> float:
    """The constant C_P^1 of Theorem 3.1 of paper 001 (eq. 11) = min_{k≥2} Chernoff exponent of L_k."""
    return float(np.min(chernoff_exponents(losses, p, closed=closed)))


def _in_hull(Y: np.ndarray, x: np.ndarray) -> bool:
    """Is x in the convex hull of the rows of Y (LP feasibility)?"""
    m = Y.shape[0]
    res = optimize.linprog(np.zeros(m), A_eq=np.vstack([Y.T, np.ones((1, m))]),
                           b_eq=np.concatenate([x, [1.0]]), bounds=[(0, None)] * m, method="highs")
    return res.status == 0


def cramer_transform(Y: np.ndarray, p, x: np.ndarray) -> float:
    """Λ*(x) = sup_t [⟨t, x⟩ − log E e^{⟨t, Y⟩}] for the discrete vector Y (m × d atom values).

    +inf outside the convex hull of the atoms (the supremum is then unbounded).
    """
    p = check_prob_vector("p", p)
    lp = np.log(p)
    Y = check_array("Y", Y, ndim=2)
    if Y.shape[0] != p.size:
        raise ValueError(f"Y must have one row per atom of p ({p.size}), got shape {Y.shape}")
    x = check_array("x", x, ndim=1)
    if x.shape[0] != Y.shape[1]:
        raise ValueError(f"x must have one coordinate per column of Y ({Y.shape[1]}), got shape {x.shape}")
    if not _in_hull(Y, x):
        return math.inf

    def negobj(t):
        z = lp + Y @ t
        zm = z.max()
        lse = zm + math.log(np.exp(z - zm).sum())
        return -(t @ x - lse)

    def grad(t):
        z = lp + Y @ t
        w = np.exp(z - z.max())
        w /= w.sum()
        return -(x - w @ Y)

    def hess(t):
        z = lp + Y @ t
        w = np.exp(z - z.max())
        w /= w.sum()
        mu = w @ Y
        return (Y * w[:, None]).T @ Y - np.outer(mu, mu)

    t = np.zeros(Y.shape[1])  # damped Newton on the smooth convex dual
    f = negobj(t)
    for _ in range(200):
        g = grad(t)
        if np.max(np.abs(g)) < 1e-12:
            break
        step = np.linalg.lstsq(hess(t), g, rcond=None)[0]
        a = 1.0
        while a > 1e-12:
            tn = t - a * step
            fn = negobj(tn)
            if fn <= f - 1e-4 * a * (g @ step):
                break
            a *= 0.5
        if a <= 1e-12:
            break
        t, f = tn, fn

    class res:  # noqa: N801
        fun = f
    return float(-res.fun) if np.isfinite(res.fun) else math.inf


def cramer_rate_eq11(losses, p) -> float:
    """Eq. 11 literally: inf over x ∈ Ω^c = {∃j: x_j < −1} of the Cramér transform of D^{-1}(L − δ).

    The infimum is approached on {x_j = −1}; for each j the remaining coordinates are optimised
    (Nelder–Mead, started at the exponentially tilted mean, which the contraction principle says is
    optimal). Intended for small K as an independent check of :func:`chernoff_rate`.
    """
    G = loss_gaps(losses, p)
    p = check_prob_vector("p", p)
    delta = G @ p
    if np.any(delta <= 0):
        raise ValueError("H1.2 requires δ_2 > 0: two rows of losses have equal population risk under p")
    Y = ((G - delta[:, None]) / delta[:, None]).T  # (m, K−1): atoms of D^{-1}(L − δ)
    d = Y.shape[1]
    best = math.inf
    for j in range(d):
        if np.all(G[j] >= 0):
            continue  # Y_j ≥ −1 a.s.: the open set {x_j < −1} has probability 0
        # tilted law achieving the Chernoff exponent of coordinate j
        lp = np.log(p)
        fp = lambda s, g=G[j], lp=lp: float(np.exp(lp + s * g - logsumexp(lp + s * g)) @ g)  # noqa: E731
        lo = -1.0
        while fp(lo) > 0:
            lo *= 2
        s = optimize.brentq(fp, lo, 0.0, xtol=1e-15)
        w = np.exp(lp + s * G[j] - logsumexp(lp + s * G[j]))
        x0 = w @ Y
        # search x = x0 + B u over the affine hull of the atoms intersected with {x_j = x0_j = −1}
        # (off that hull Λ* = +inf)
        _, sv, Vt = np.linalg.svd(Y - Y.mean(0), full_matrices=False)
        V = Vt[sv > 1e-12 * max(1.0, sv.max())].T  # (d, r) directions of the affine hull
        row = V[j][None, :]
        _, s2, W = np.linalg.svd(row)
        Nb = W[int(np.sum(s2 > 1e-12)):].T  # null space of row in c-space
        B = V @ Nb

        def obj(u, x0=x0, B=B):
            return cramer_transform(Y, p, x0 + B @ u)

        if B.shape[1]:
            res = optimize.minimize(obj, np.zeros(B.shape[1]), method="Nelder-Mead",
                                    options={"xatol": 1e-8, "fatol": 1e-13, "maxiter": 200 * B.shape[1]})
            val = min(float(res.fun), obj(np.zeros(B.shape[1])))
        else:
            val = obj(np.zeros(0))
        best = min(best, val)
    return best


@dataclass(frozen=True)
class GapStatistics:
    """Theorem 3.3 quantities for a finite problem (candidates sorted by population risk)."""

    delta: np.ndarray  # δ_k, k = 2..K
    sigma2: np.ndarray  # σ_k² = Var(L_k)
    cov: np.ndarray  # σ_{k,l}² = Cov(L_k, L_l)
    c: np.ndarray  # c_k = δ_2 / δ_k
    Lambda: np.ndarray  # Λ_{kl} = σ_{kl}² c_k c_l
    sigma2_max: float  # σ² = max_k Λ_kk
    rate: float  # 1/(2σ²), Theorem 3.3
    r_q: float  # δ_2² / (2σ²)


def gap_statistics(losses, p) -> GapStatistics:
    """δ_k, σ_k², covariances, c_k, Λ, σ², 1/(2σ²) and r_Q = δ_2²/(2σ²) (paper 001, Thm 3.3, Prop. C.3)."""
    G = loss_gaps(losses, p)
    p = check_prob_vector("p", p)
    delta = G @ p
    if delta[0] <= 0:
        raise ValueError("Theorem 3.3 quantities need δ_2 > 0 (a unique best candidate): two rows of losses "
                         "have equal population risk under p")
    Gc = G - delta[:, None]
    cov = (Gc * p[None, :]) @ Gc.T
    c = delta[0] / delta
    Lam = cov * np.outer(c, c)
    s2 = float(np.max(np.diag(Lam)))
    return GapStatistics(delta, np.diag(cov).copy(), cov, c, Lam, s2,
                         math.inf if s2 == 0 else 1 / (2 * s2),
                         math.inf if s2 == 0 else delta[0] ** 2 / (2 * s2))


def _check_square(name: str, M) -> np.ndarray:
    """A finite non-empty square matrix."""
    M = check_array(name, M, ndim=2)
    if M.shape[0] != M.shape[1]:
        raise ValueError(f"{name} must be a square matrix, got shape {M.shape}")
    return M


def _check_lam(Lam) -> np.ndarray:
    """Λ: a finite symmetric positive semi-definite matrix."""
    Lam = _check_square("Lam", Lam)
    if not np.allclose(Lam, Lam.T, atol=1e-12):
        raise ValueError("Lam must be symmetric")
    lam = np.linalg.eigvalsh(Lam)
    if lam.min() < -1e-9 * max(1.0, abs(lam).max()):
        raise ValueError("Lam must be positive semi-definite")
    return Lam


def prop_c4_closed_form(Lam) -> float:
    """The value 1/(2 max_k Λ_kk) claimed by Prop. C.4 (eq. 14)."""
    Lam = _check_lam(Lam)
    if not np.max(np.diag(Lam)) > 0:
        raise ValueError("Lam must have a positive diagonal entry (Λ = 0 has no finite value)")
    return 1.0 / (2.0 * float(np.max(np.diag(Lam))))


def prop_c4_inf(Lam, *, restrict_to_range: bool = True, tol: float = 1e-10) -> float:
    """inf over Ω^c = {∃j: x_j < −1} of xᵀΛ⁺x/2, by exact per-face minimisation.

    ``restrict_to_range=True`` (the Cameron–Martin space of N(0, Λ), as the proof of Prop. C.3
    requires): x = U c over the eigenvectors U of non-zero eigenvalues λ; on the face x_j = −1 the
    minimum of Σ c_i²/(2λ_i) subject to u_jᵀc = −1 is 1/(2 Σ_i U_ji² λ_i) (Lagrange), computed here
    by a least-norm solve rather than the diagonal identity. ``False`` (eq. 13–14 as printed): x
    ranges over all of R^{K−1}; a null vector v of Λ with v_j ≠ 0 makes the infimum 0.
    """
    Lam = _check_lam(Lam)
    tol = check_float("tol", tol, low=0.0)
    lam, U = np.linalg.eigh(Lam)
    keep = lam > tol * max(1.0, lam.max())
    Ur, lr = U[:, keep], lam[keep]
    best = math.inf
    for j in range(Lam.shape[0]):
        if not restrict_to_range and np.any(np.abs(U[j, ~keep]) > 1e-12):
            return 0.0
        # minimise ½ Σ c_i²/λ_i s.t. (Ur c)_j = −1: scaled variables y_i = c_i/√λ_i, min-norm solve
        a = Ur[j] * np.sqrt(lr)
        if not np.any(np.abs(a) > 0):
            continue  # x_j ≡ 0 on range(Λ): the face is unreachable
        y = np.linalg.lstsq(a[None, :], np.array([-1.0]), rcond=None)[0]
        best = min(best, 0.5 * float(y @ y))
    return best


def lemma_b1_bounds(P, Q) -> tuple[float, float, float]:
    """Lemma B.1 of paper 001 for laws on {1..K}: (|a − b|, TV(P, Q), (|a − b| + a + b)/2),
    with a = 1 − P(1), b = 1 − Q(1)."""
    P, Q = check_prob_vector("P", P, allow_zero=True), check_prob_vector("Q", Q, allow_zero=True)
    if P.size != Q.size:
        raise ValueError("P and Q must live on the same K atoms")
    a, b = 1 - P[0], 1 - Q[0]
    return float(abs(a - b)), 0.5 * float(np.abs(P - Q).sum()), float((abs(a - b) + a + b) / 2)


def schur_inverse_diag(M, j: int) -> float:
    """Lemma B.2 of paper 001: (M^{-1})_{jj} = (M_jj − M_{j,−j} M_{−j,−j}^{-1} M_{−j,j})^{-1}."""
    M = _check_square("M", M)
    j = check_int("j", j, low=0, high=M.shape[0] - 1)
    idx = [i for i in range(M.shape[0]) if i != j]
    s = M[j, j] - M[j, idx] @ np.linalg.solve(M[np.ix_(idx, idx)], M[idx, j])
    return 1.0 / float(s)


__all__ = [
    "TIES", "check_loss_matrix", "ERMExact", "erm_exact", "erm_log_delta", "erm_delta", "loss_gaps", "chernoff_exponent",
    "chernoff_exponents", "chernoff_rate", "cramer_transform", "cramer_rate_eq11", "GapStatistics",
    "gap_statistics", "prop_c4_closed_form", "prop_c4_inf", "lemma_b1_bounds", "schur_inverse_diag",
]
