"""Two discrete toys where the best possible attack is known exactly, and the practical attacks of
:mod:`qlib.attacks` run against them (chapter ``attacks/01``).

**The toys.** Data are atoms u_1..u_m of a law p; a training set of n points is summarised by its
count vector N ~ Multinomial(n, p), and both algorithms are deterministic functions of N, so paper
003's exact calculators apply ({cite:p}`aubinais2024fundamental`, Eq. 31/32).

* :func:`empirical_toy` — the model is the smoothed empirical law θ̂ = (N + α)/(n + mα) (α = ½, ours:
  the Krichevsky–Trofimov estimator, so no atom has confidence 0). It is injective in N, so its Δ_n is
  the maximum over all algorithms (Theorem 5.4): ``qlib.mia.max_delta_discrete``, with the rate
  C(P)/(2√n) of Corollary 5.4.1 as an upper bound. A model's confidence on atom a is θ̂_a.
* :func:`erm_toy` — a *finite* Θ̄: logistic classifiers f_w(x) = w·x with the weight on a grid (a
  quantized model, paper 001 §3, {cite:p}`aubinais2025quantized`), chosen by empirical risk minimisation
  (ties to the lowest population risk, as ``qlib.mia.erm``) on atoms (x, y), x ∈ {−1, 1} uniform,
  P(y = 1 | x) = σ(βx). Δ_n is exact (``qlib.mia.erm_delta``, Lemma C.2 of paper 003) and decays
  exponentially; Δ_n ≤ 2(1 − P(θ̂ = θ̄_1)) ≤ 2 Σ_{k≥2} e^{−n C_k} with C_k the Chernoff exponents of the
  loss gaps (``qlib.mia.erm.chernoff_exponents``; their minimum is the rate C_P^1 of paper 001's
  Theorem 3.1). A model's confidence on (x, y) is σ((2y − 1)·w·x).

**The protocol** (:func:`attack_study`, per sample size n; settings in the frozen :class:`AttackStudyConfig`):
T target models, each trained on n points; k = min(n, ``per_target``) of its training points, drawn uniformly without replacement, are its member
pairs and k fresh points its non-member pairs (balanced, ν = ½: each member pair has the law of
(θ̂_n, U) with U a uniform training point, as in the game, so the held-out accuracy of any attack is at
most ½ + Δ_n/2 — Theorem 3.1 of paper 003). T is the smallest number ≥ ``min_targets`` giving
``pairs`` pairs; capping the pairs per model spreads them over more independent models, which the
intervals (resampling whole models) need. A second, independent set of T games is the
attacker's calibration set: every attack's threshold is fitted there (the threshold of best balanced
accuracy) and applied to the evaluated pairs, so the reported **accuracy** is unbiased; the intervals
resample whole target models (their pairs share the model). The attacker knows the law only through
samples: M reference ("out") models on fresh data sets of n points, and, for online LiRA, M "in"
models per atom trained on n − 1 fresh points plus that atom. Since every example with the same atom
has the same in/out laws, one in-set per atom serves all of them — the per-example Gaussians of LiRA
are per atom here (``shadows`` = M out-models, and M in-models per atom for the online test).

The attacks (member scores, :mod:`qlib.attacks`): the global loss threshold (loss −log c), the
calibrated threshold (M reference models), LiRA offline as the reference code scores it (two-sided),
LiRA offline one-sided (the LiRA paper's test), LiRA online with per-atom and with one global
variance (the reference code's ``fix_variance``); and the **Bayes oracle**: the exact
likelihood ratio q/p of the pair (θ̂, z) under the two joint laws of Eq. 31/32 with the Bayes rule
"member iff q ≥ p" (no fitting), whose accuracy is exactly ½ + Δ_n/2 — the check of the whole pipeline.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd

from qlib.attacks import lira, metrics, threshold
from qlib.mia import C_P, erm, exact, max_delta_discrete
from qlib.resume import check_units, fingerprint
from qlib.validation import (
    check_array,
    check_choice,
    check_float,
    check_float_sequence,
    check_int,
    check_int_sequence,
    check_seed,
    resolve_config,
    skip_nested,
)

__all__ = ["Toy", "empirical_toy", "erm_toy", "zipf_law", "ATTACKS", "PRACTICAL", "ORACLE", "AttackStudyConfig",
           "AttackStudy", "attack_study", "TOY_KINDS"]

TOY_KINDS = ("empirical", "erm")
#: the oracle's name in the tables
ORACLE = "Bayes oracle"
#: the practical attacks, in table order
PRACTICAL = ("global loss threshold", "calibrated threshold", "LiRA offline (reference, two-sided)",
             "LiRA offline (one-sided)", "LiRA online", "LiRA online (fixed variance)")
ATTACKS = PRACTICAL + (ORACLE,)


def zipf_law(m: int, exponent: float = 1.0) -> np.ndarray:
    """p_j ∝ j^{−exponent}, j = 1..m: atoms of very different frequency (the global threshold's weakness)."""
    m = check_int("m", m, low=2)
    exponent = check_float("exponent", exponent, low=0.0)
    w = np.arange(1, m + 1, dtype=np.float64) ** -exponent
    return w / w.sum()


@dataclass(frozen=True)
class Toy:
    """A discrete toy (module docstring): the law ``p`` of its m atoms, its ``kind``, and for ``erm`` the
    loss matrix (K × m, candidates sorted by population risk) and their confidences."""

    name: str
    kind: str
    p: np.ndarray
    alpha: float = 0.5
    losses: np.ndarray | None = None
    conf: np.ndarray | None = None
    weights: tuple = ()
    _tables: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def m(self) -> int:
        return int(self.p.size)

    def _counts(self, counts) -> np.ndarray:
        """``counts`` checked: (B, m) non-negative integers, every row summing to the same n ≥ 1."""
        counts = check_array("counts", counts, ndim=2, dtype="int", low=0)
        if counts.shape[1] != self.m:
            raise ValueError(f"counts must have {self.m} columns (the toy's atoms), got shape {counts.shape}")
        n = counts.sum(-1)
        if n.min() < 1 or n.min() != n.max():
            raise ValueError("counts must have rows summing to one sample size n >= 1")
        return counts

    def fit(self, counts: np.ndarray) -> np.ndarray:
        """The model of each count vector: the smoothed law (B, m), or the ERM candidate index (B,)."""
        counts = self._counts(counts)
        if self.kind == "empirical":
            n = counts.sum(-1, keepdims=True)
            return (counts + self.alpha) / (n + self.alpha * self.m)
        R = counts @ self.losses.T  # (B, K) empirical risks × n
        tol = 1e-9 * counts.sum(-1, keepdims=True) * max(1.0, float(np.abs(self.losses).max()))
        return np.argmax(R <= R.min(-1, keepdims=True) + tol, axis=-1)  # the first tied: lowest population risk

    def confidence(self, counts: np.ndarray) -> np.ndarray:
        """(B, m): each model's confidence on every atom."""
        theta = self.fit(self._counts(counts))
        return theta if self.kind == "empirical" else self.conf[theta]

    def delta(self, n: int) -> float:
        """Exact Δ_n (the TV of Eq. 24 of paper 003)."""
        n = check_int("n", n, low=1)
        if self.kind == "empirical":
            return max_delta_discrete(self.p, n)
        return erm.erm_delta(self.losses, self.p, n)

    def bound(self, n: int) -> float:
        """The theory's bound on Δ_n: C(P)/(2√n) (Corollary 5.4.1), or min(1, 2 Σ_k e^{−n C_k})."""
        n = check_int("n", n, low=1)
        if self.kind == "empirical":
            return C_P(self.p) / (2 * math.sqrt(n))
        return min(1.0, 2.0 * float(np.exp(-n * erm.chernoff_exponents(self.losses, self.p)).sum()))

    def chernoff_rate(self) -> float:
        """C_P^1 = min_k C_k (paper 001, Theorem 3.1; finite Θ only): −(log Δ_n)/n tends to it."""
        if self.kind != "erm":
            raise ValueError("chernoff_rate is defined for the finite-Θ (erm) toy only")
        return erm.chernoff_rate(self.losses, self.p)

    def oracle_ratio(self, counts: np.ndarray) -> np.ndarray:
        """(B, m): the exact likelihood ratio q/p of the pair (θ̂(N), a) (Eq. 31/32)."""
        counts = self._counts(counts)
        n = int(counts[0].sum())
        if self.kind == "empirical":
            return counts / (n * self.p)
        if n not in self._tables:
            N = exact.count_vectors(n, self.m)
            P = np.exp(exact.log_multinomial_pmf(N, self.p))
            k = self.fit(N)
            K = self.losses.shape[0]
            q = np.zeros((K, self.m))
            np.add.at(q, k, P[:, None] * N / n)
            pk = np.bincount(k, weights=P, minlength=K)
            with np.errstate(divide="ignore", invalid="ignore"):
                self._tables[n] = q / (pk[:, None] * self.p[None, :])
        return self._tables[n][self.fit(counts)]


def empirical_toy(p, alpha: float = 0.5, name: str = "empirical law") -> Toy:
    """The smoothed empirical law on the atoms of ``p`` (module docstring)."""
    p = exact.check_prob_vector("p", p)
    alpha = check_float("alpha", alpha, low=0.0, low_open=True)
    return Toy(name, "empirical", p, alpha)


def erm_toy(beta: float = 1.0, weights=(0.0, 1.0, 2.0), name: str = "finite-Θ ERM") -> Toy:
    """ERM over the logistic classifiers f_w(x) = w·x, w ∈ ``weights`` (at least two distinct), on atoms
    (x, y) ∈ {−1, 1} × {0, 1}, x uniform, P(y = 1 | x) = σ(βx) (module docstring)."""
    beta = check_float("beta", beta)
    w = np.array(check_float_sequence("weights", weights), dtype=np.float64)
    if np.unique(w).size < 2:
        raise ValueError(f"weights must hold at least two distinct values, got {weights!r}")
    x = np.array([-1.0, -1.0, 1.0, 1.0])
    y = np.array([0.0, 1.0, 0.0, 1.0])
    sig = 1 / (1 + np.exp(-beta * x))
    p = 0.5 * np.where(y == 1, sig, 1 - sig)
    margin = (2 * y - 1)[None, :] * w[:, None] * x[None, :]
    losses = np.logaddexp(0.0, -margin)
    order = np.argsort(losses @ p, kind="stable")
    if np.any(np.diff((losses @ p)[order])[:1] <= 0):
        raise ValueError("weights must give a unique best classifier (two have the same population risk)")
    losses, margin = losses[order], margin[order]
    return Toy(name, "erm", p, losses=losses, conf=1 / (1 + np.exp(-margin)), weights=tuple(w[order]))


def _games(rng, toy: Toy, n: int, T: int, per_target: int):
    """T games: training counts N (T, m); the atoms of the evaluated members, a uniform sample without
    replacement of min(n, per_target) training points (T, m); as many fresh points (T, m)."""
    N = rng.multinomial(n, toy.p, size=T)
    k = min(n, per_target)
    members = N if k == n else np.stack([rng.multivariate_hypergeometric(row, k) for row in N])
    return N, members, rng.multinomial(k, toy.p, size=T)


def _pairs(S: np.ndarray, N: np.ndarray, F: np.ndarray):
    """Expand per-(target, atom) scores S (T, m) to pairs: members with multiplicity N, non-members F."""
    T = S.shape[0]
    s = np.r_[np.repeat(S.ravel(), N.ravel()), np.repeat(S.ravel(), F.ravel())]
    g = np.repeat(np.arange(T), S.shape[1])
    groups = np.r_[np.repeat(g, N.ravel()), np.repeat(g, F.ravel())]
    members = np.r_[np.ones(int(N.sum()), bool), np.zeros(int(F.sum()), bool)]
    return s, members, groups


def _attack_scores(toy: Toy, N: np.ndarray, conf_out: np.ndarray, shadow_phi: np.ndarray, keep: np.ndarray) -> dict:
    """Per (target, atom) member scores of every attack."""
    conf = toy.confidence(N)
    phi = lira.scaled_logit_from_confidence(conf)
    loss = -np.log(conf)
    phi_out = shadow_phi[~keep[:, 0]]
    return {
        PRACTICAL[0]: threshold.loss_scores(loss),
        PRACTICAL[1]: threshold.calibrated_scores(loss, -np.log(conf_out)),
        PRACTICAL[2]: lira.lira_offline(phi, phi_out),
        PRACTICAL[3]: lira.lira_offline(phi, phi_out, tail="one-sided"),
        PRACTICAL[4]: lira.lira_online(phi, shadow_phi, keep),
        PRACTICAL[5]: lira.lira_online(phi, shadow_phi, keep, fix_variance=True),
        ORACLE: toy.oracle_ratio(N),
    }


@dataclass(frozen=True)
class AttackStudyConfig:
    """The settings of :func:`attack_study`, checked once when built; frozen (module docstring).

    ``shadows`` M reference models (and M in-models per atom for online LiRA); about ``pairs`` evaluated
    pairs per sample size, from at least ``min_targets`` target models, each contributing at most
    ``per_target`` member pairs (and as many non-member pairs); ``reps`` bootstrap resamples of the target
    models; ``seed`` the games, the shadows and the resamples (each sample size n seeded by ``(seed, n)``)."""

    shadows: int = 64
    pairs: int = 40_000
    min_targets: int = 50
    per_target: int = 50
    reps: int = 200
    seed: int = 0

    def __post_init__(self):
        for name, low in (("shadows", 2), ("pairs", 2), ("min_targets", 2), ("per_target", 1), ("reps", 1)):
            object.__setattr__(self, name, check_int(name, getattr(self, name), low=low))
        object.__setattr__(self, "seed", check_seed("seed", self.seed))


@dataclass
class AttackStudy:
    """:func:`attack_study`'s output: ``table`` (one row per n × attack: accuracy held out and its
    interval, AUC, TPR at 0.1 % and 1 % FPR, the optimistic best accuracy, advantage, the limit
    ½ + Δ_n/2, Δ_n, the theory's bound, targets, pairs and shadows) and ``scores`` — the per-pair
    member scores kept: ``scores[(n, attack)] = (scores, members, groups)`` of the evaluated pairs."""

    toy: Toy
    table: pd.DataFrame
    scores: dict


def attack_study(toy: Toy, ns, config: AttackStudyConfig | None = None, *, units=None) -> AttackStudy:
    """Every attack against ``toy`` at each sample size of ``ns`` (module docstring), at the settings of
    ``config`` (an :class:`AttackStudyConfig`; None: its defaults:
    ``attack_study(toy, ns, AttackStudyConfig(shadows=8))``). ``units`` (a :class:`qlib.resume.Units`):
    each sample size is a unit, saved when done and reused by a rerun (each is seeded by ``(seed, n)``
    alone, so a resumed study equals an uninterrupted one)."""
    if not isinstance(toy, Toy):
        raise TypeError(f"toy must be a Toy (empirical_toy, erm_toy), got {type(toy).__name__}")
    check_choice("toy.kind", toy.kind, TOY_KINDS)
    ns = check_int_sequence("ns", ns, low=2)
    cfg = resolve_config(AttackStudyConfig, config)
    check_units("units", units)
    rows, kept = [], {}
    with skip_nested():
        for n in ns:
            if units is None:
                n_rows, n_kept = _one_size(toy, n, cfg)
            else:
                n_rows, n_kept = units.run("toy_attacks_n", {
                    "toy": fingerprint(toy.name, toy.kind, toy.p, toy.alpha, toy.losses, toy.conf, toy.weights),
                    "n": n, **asdict(cfg)}, lambda n=n: _one_size(toy, n, cfg))
            rows += n_rows
            kept.update(n_kept)
    return AttackStudy(toy, pd.DataFrame(rows), kept)


def _one_size(toy: Toy, n: int, cfg: AttackStudyConfig) -> tuple[list, dict]:
    """:func:`attack_study` at one sample size ``n`` (checked arguments): its rows and kept scores."""
    rows, kept = [], {}
    rng = np.random.default_rng([cfg.seed, n])
    T = max(cfg.min_targets, math.ceil(cfg.pairs / (2 * min(n, cfg.per_target))))
    M, m = cfg.shadows, toy.m
    conf_out = toy.confidence(rng.multinomial(n, toy.p, size=M))
    ins = rng.multinomial(n - 1, toy.p, size=(m, M)) + np.eye(m, dtype=np.int64)[:, None, :]
    conf_in = toy.confidence(ins.reshape(m * M, m)).reshape(m, M, m)[np.arange(m), :, np.arange(m)].T
    shadow_phi = lira.scaled_logit_from_confidence(np.r_[conf_out, conf_in])
    keep = np.r_[np.zeros((M, m), bool), np.ones((M, m), bool)]
    games = {part: _games(rng, toy, n, T, cfg.per_target) for part in ("calibration", "evaluation")}
    per = {part: _attack_scores(toy, N, conf_out, shadow_phi, keep) for part, (N, _, _) in games.items()}
    delta = toy.delta(n)
    for a in ATTACKS:
        cs, cm, _ = _pairs(per["calibration"][a], *games["calibration"][1:])
        es, em, eg = _pairs(per["evaluation"][a], *games["evaluation"][1:])
        pred = es >= 1.0 if a == ORACLE else threshold.threshold_attack(cs, cm, es)[1]
        r = metrics.evaluate(es, em, pred, reps=cfg.reps, seed=cfg.seed, groups=eg)
        rows.append({"toy": toy.name, "n": n, "attack": a, **r.row(), "limit": 0.5 + delta / 2,
                     "delta": delta, "bound": toy.bound(n), "targets": T, "pairs": es.size,
                     "shadows": M})
        kept[(n, a)] = (es, em, eg)
    return rows, kept
