"""The leave-out attack protocol that chapters ``attacks/02`` (the synthetic study) and ``attacks/03``
(the molecular tasks) share, and the statistics both analyses compute from it: K models of one family
trained at once on complementary halves of a pool (:func:`qlib.attacks.shadow.paired_keep`), split into
two halves of whole complementary pairs; every model of one half is a **target** whose **shadows** are
the other half (LiRA's leave-out protocol, both ways, {cite:p}`carlini2022lira`). Every quantized model
is attacked beside :data:`REFERENCE`, the unquantized one.

The attacks:

* :data:`ATTACKS` — the practical attacks, in table order: the global loss threshold
  (:func:`qlib.attacks.threshold.loss_scores`), LiRA offline (one-sided, one global variance), LiRA online
  with one global variance (the reference code's choice for few shadows) and with per-example variances (the
  reference code's default) (:mod:`qlib.attacks.lira`);
* :func:`halves` — which half each model is in;
* :func:`attack_scores` — every attack's member scores of every target, from the binary models'
  logit-scaled confidences φ = (2y − 1)·f(x) (:func:`qlib.attacks.shadow.binary_scores`);
* :func:`finite_scores` — an attack's scores made finite for the ROC (a per-example variance of zero,
  where every shadow agrees, gives 0/0 or ±inf);
* :func:`held_out_correct` — the correct out-of-fold predictions per target of thresholds fitted on the
  other fold of targets (so the balanced accuracy is unbiased, at most ½ + Δ_n/2 by Theorem 3.1 of
  paper 003).

The statistics (paper 001 ranks the quantizers by r_Q^n, and its Theorem 3.3, MIS ≈ 1 − e^{−n r_Q^n}, reads
Δ_n ≈ e^{−n r_Q^n}: a larger r_Q^n should mean a weaker attack; {cite:p}`aubinais2025quantized`):

* :class:`AnalysisConfig` — the settings of both analyses (resamples, level, permutations, seed);
* :func:`bootstrap_weights` — how many times each target (or model) is drawn in each bootstrap resample,
  the data first; :func:`resampled_advantage` and :func:`resampled_r` — the held-out advantage and the
  mean r_Q^n under those weights; :func:`percentile_interval` — the percentile interval of the resamples;
* :func:`rank_rho` — Spearman ρ between r_Q^n and the negated attack strength (+1: the same ranking);
  :func:`rank_rho_over` — over the quantizers whose r_Q^n is defined;
* :func:`permutation_test` — the one-sided test of ρ = 0 and its critical value;
  :func:`pooled_permutation_test` — that test of the mean ρ over cells, on the quantizers defined in all;
* :func:`theory_gap` — the theory's order e^{−n r_Q^n} minus the attack's advantage, with its interval.

The prose both chapters print of their sizes: :func:`reductions_text`, from the study's settings record
(:class:`StudySettings`: what the record says of its run and of paper 001's sizes) and the analysis' sizes.
"""

from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass
from typing import Protocol, runtime_checkable

import numpy as np
import pandas as pd

from qlib import quantizers
from qlib.attacks import lira, threshold
from qlib.ranking import spearman
from qlib.validation import (
    check_alloc,
    check_array,
    check_bool,
    check_float,
    check_int,
    check_int_sequence,
    check_probability,
    check_seed,
    nested,
    skip_nested,
)

from .paper import LIRA_SHADOWS

__all__ = ["ATTACKS", "REFERENCE", "ALPHA", "default_quantizers", "halves", "finite_scores", "attack_scores",
           "held_out_correct", "AnalysisConfig", "bootstrap_weights", "resampled_advantage", "resampled_r",
           "percentile_interval", "rank_rho", "rank_rho_over", "permutation_test", "pooled_permutation_test",
           "theory_gap", "StudySettings", "reductions_text"]

#: the practical attacks of the protocol, in table order
ATTACKS = ("global loss threshold", "LiRA offline (one-sided)", "LiRA online (fixed variance)",
           "LiRA online (per-example variance)")
#: the unquantized model, attacked beside the quantizers (no r_Q^n: a continuous model never repeats)
REFERENCE = "identity"
#: the one-sided level of the permutation test of ρ = 0 (ours, fixed before any result)
ALPHA = 0.05


def default_quantizers() -> tuple[str, ...]:
    """Every quantizer of ``qlib.quantizers`` but the identity (whose r_Q^n is not defined: a continuous
    model is never repeated), in the paper's column order."""
    return tuple(q for q in quantizers.names() if q != REFERENCE)


def halves(K: int) -> np.ndarray:
    """(K,) 0/1: which half each model is in; halves made of whole complementary pairs (2j, 2j + 1), so
    that with :func:`qlib.attacks.shadow.paired_keep` every pool example is *in* exactly half of each half.
    ``K`` a multiple of 4, ≥ 4."""
    K = check_int("K", K, low=4)
    if K % 4:
        raise ValueError(f"K must be a multiple of 4 (two halves of complementary pairs), got {K}")
    return (np.arange(K) // 2) % 2


def finite_scores(s) -> np.ndarray:
    """An attack's scores made finite for the ROC: NaN (0/0 of a zero variance: every shadow agrees, the
    attack has no information) → one shared value below every finite score; ±inf → just beyond the
    finite range (their order kept). Finite input is returned unchanged."""
    s = check_array("s", s, finite=False)
    ok = np.isfinite(s)
    if ok.all():
        return s
    lo, hi = (float(s[ok].min()), float(s[ok].max())) if ok.any() else (0.0, 0.0)
    span = max(hi - lo, 1.0)
    out = s.copy()
    out[np.isposinf(s)] = hi + span
    out[np.isneginf(s)] = lo - span
    out[np.isnan(s)] = lo - 2 * span
    return out


def attack_scores(phi, keep, half=None) -> np.ndarray:
    """(P, K, N) member scores of every attack of :data:`ATTACKS` on every target, the other half as its
    shadows. ``phi`` (K, N) the K models' logit-scaled confidences on the N pool examples, ``keep`` (K, N)
    boolean (which examples each model trained on), ``half`` (K,) 0/1 (default :func:`halves`). May hold
    NaN/±inf (:func:`finite_scores`)."""
    phi = check_array("phi", phi, ndim=2)
    K, N = phi.shape
    keep = np.asarray(keep)
    if keep.dtype.kind != "b" or keep.shape != (K, N):
        raise ValueError(f"keep must be a boolean array of phi's shape {(K, N)}, got {keep.dtype} {keep.shape}")
    half = halves(K) if half is None else np.asarray(half)
    if half.shape != (K,) or not np.isin(half, (0, 1)).all() or half.min() == half.max():
        raise ValueError(f"half must be a (K = {K},) array of 0/1 with both halves present")
    out = np.empty((len(ATTACKS), K, N))
    out[0] = threshold.loss_scores(np.logaddexp(0.0, -phi))
    with np.errstate(all="ignore"):
        for h in (0, 1):
            tgt, sh = half == h, half != h
            out[1, tgt] = lira.lira_offline(phi[tgt], phi[sh], keep[sh], fix_variance=True, tail="one-sided")
            out[2, tgt] = lira.lira_online(phi[tgt], phi[sh], keep[sh], fix_variance=True)
            out[3, tgt] = lira.lira_online(phi[tgt], phi[sh], keep[sh], fix_variance=False)
    return out


def held_out_correct(scores, keep) -> np.ndarray:
    """(K,) correct out-of-fold predictions per target among its N pairs: thresholds fitted
    (:func:`qlib.attacks.threshold.threshold_attack`) on the even-numbered targets' pairs, applied to the
    odd ones', and vice versa. ``scores`` (K, N) finite, ``keep`` (K, N) boolean, K ≥ 2."""
    scores = check_array("scores", scores, ndim=2)
    keep = np.asarray(keep)
    if keep.dtype.kind != "b" or keep.shape != scores.shape:
        raise ValueError(f"keep must be a boolean array of scores' shape {scores.shape}, got {keep.dtype} {keep.shape}")
    K = scores.shape[0]
    if K < 2:
        raise ValueError(f"scores must hold at least 2 targets (rows) for two folds, got {K}")
    fold = np.arange(K) % 2
    correct = np.empty(K, dtype=np.int64)
    for f in (0, 1):
        cal, ev = fold != f, fold == f
        _, pred = threshold.threshold_attack(scores[cal].ravel(), keep[cal].ravel(), scores[ev])
        correct[ev] = (pred == keep[ev]).sum(axis=1)
    return correct


@dataclass(frozen=True)
class AnalysisConfig:
    """The settings of the analyses of chapters 02 and 03 (``synthetic.analyse``, ``molecular.analyse``),
    checked once when built; frozen. ``reps`` bootstrap resamples, percentile intervals at ``level``;
    ``draws`` permutations for the one-sided test of ρ = 0 at ``alpha`` (:func:`permutation_test`);
    ``seed`` the resamples' and the permutations'."""

    reps: int = 200
    level: float = 0.95
    draws: int = 10_000
    alpha: float = ALPHA
    seed: int = 0

    def __post_init__(self):
        def put(name, value):
            object.__setattr__(self, name, value)

        put("reps", check_int("reps", self.reps, low=1))
        put("level", check_probability("level", self.level, open_low=True, open_high=True))
        put("draws", check_int("draws", self.draws, low=1))
        put("alpha", check_probability("alpha", self.alpha, open_low=True, open_high=True))
        put("seed", check_seed("seed", self.seed))

    def as_dict(self) -> dict:
        """The fields as plain JSON types."""
        return asdict(self)


def bootstrap_weights(rng, K: int, reps: int, shape=()) -> np.ndarray:
    """(*shape, 1 + reps, K) float: how many times each of K targets (or models) is drawn in each resample
    of the bootstrap, independently for every index of ``shape``: row 0 all ones (the data), then ``reps``
    rows drawn from ``rng`` (a ``numpy.random.Generator``), each a multinomial of K draws with equal odds
    (so every row sums to K)."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    K = check_int("K", K, low=1)
    reps = check_int("reps", reps, low=1)
    shape = tuple(check_int_sequence("shape", shape, low=1, nonempty=False))
    draws = rng.multinomial(K, np.full(K, 1 / K), size=(*shape, reps))
    return np.concatenate([np.ones((*shape, 1, K)), draws], axis=-2)


def _check_weights(weights, K: int, lead: tuple, what: str) -> np.ndarray:
    """``weights`` (*lead, B, K) ≥ 0, one column per target (model) of ``what``."""
    weights = check_array("weights", weights, low=0.0)
    if weights.ndim != len(lead) + 2 or weights.shape[:-2] != lead or weights.shape[-1] != K:
        raise ValueError(f"weights must have shape {(*lead, 'B', K)} (a row of K weights per resample, "
                         f"K the {what}), got {weights.shape}")
    return weights


def resampled_advantage(correct, weights, pairs: int) -> np.ndarray:
    """(…, B, A, P): the held-out advantage 2·acc − 1 of each attacked model and attack in each resample.
    ``correct`` (…, A, P, K) every target's correct held-out predictions among its ``pairs`` pairs
    (:func:`held_out_correct`), ``weights`` (…, B, K) each target's count in each resample
    (:func:`bootstrap_weights`); acc the weighted share of correct predictions over all pairs."""
    correct = check_array("correct", correct, dtype="int", low=0)
    if correct.ndim < 3:
        raise ValueError(f"correct must have at least the axes (A, P, K), got shape {correct.shape}")
    weights = _check_weights(weights, correct.shape[-1], correct.shape[:-3], "targets (last axis of correct)")
    pairs = check_int("pairs", pairs, low=1)
    accuracy = np.einsum("...bk,...apk->...bap", weights, correct) / (pairs * weights.sum(axis=-1))[..., None, None]
    return 2 * accuracy - 1


def _check_rates(name: str, r) -> None:
    """``r`` holds r_Q^n values as Algorithm 1 of paper 001 gives them (the policy of :mod:`qlib.validation`):
    ≥ 0, NaN where undefined (fewer than two distinct quantized models), +inf where unbounded (every
    distinct model's loss differs from θ̄_1's by a constant); −inf or a negative value is no rate: a
    ``ValueError`` naming ``name`` and the first such entry."""
    if nested():
        return
    bad = np.isneginf(r) | (np.isfinite(r) & (r < 0))
    if bad.any():
        at = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"{name} must hold r_Q^n values: >= 0, NaN (undefined) or +inf (unbounded); got "
                         f"{r[at]} at index {at}")


def resampled_r(r, weights) -> np.ndarray:
    """(…, B, Q): each quantizer's r_Q^n in each resample, the weighted mean over the models whose r_Q^n is
    defined (NaN where none is). ``r`` (…, Q, K) per model: ≥ 0, NaN where undefined (fewer than two distinct
    quantized models along training: left out of the mean), +inf where unbounded (:func:`qlib.rqn.r_q`: a
    resample that draws such a model has an unbounded mean, +inf); −inf or a negative value raises, naming
    ``r``. ``weights`` (…, B, K) each model's count in each resample (:func:`bootstrap_weights`)."""
    r = check_array("r", r, finite=False)
    if r.ndim < 2:
        raise ValueError(f"r must have at least the axes (Q, K), got shape {r.shape}")
    _check_rates("r", r)
    weights = _check_weights(weights, r.shape[-1], r.shape[:-2], "models (last axis of r)")
    finite, unbounded = np.isfinite(r), np.isposinf(r)
    total = np.einsum("...bk,...qk->...bq", weights, np.where(finite, r, 0.0))
    count = np.einsum("...bk,...qk->...bq", weights, finite.astype(float))
    drawn_unbounded = np.einsum("...bk,...qk->...bq", weights, unbounded.astype(float)) > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(count > 0, total / np.where(count > 0, count, 1), np.nan)
    return np.where(drawn_unbounded, np.inf, mean)


def percentile_interval(x, level: float = 0.95, axis: int = 0, *, allow_nonfinite: bool = False):
    """``(lo, hi)``: the ``(1 − level)/2`` and ``(1 + level)/2`` quantiles of bootstrap resamples ``x`` along
    ``axis``. A NaN/inf resample raises (naming ``x``) unless ``allow_nonfinite``, for resampled statistics
    that can be undefined (a Spearman ρ of a constant resample): NaN resamples are then ignored (an
    all-NaN slice gives NaN) and ±inf ones are quantiles like any other."""
    x = check_array("x", x, finite=False)
    if not check_bool("allow_nonfinite", allow_nonfinite) and not nested() and not np.isfinite(x).all():
        raise ValueError("x must be finite (no NaN or inf); pass allow_nonfinite=True where a resampled statistic "
                         "can be undefined (NaN resamples are then ignored)")
    level = check_probability("level", level, open_low=True, open_high=True)
    axis = check_int("axis", axis, low=-x.ndim, high=x.ndim - 1) if x.ndim else check_int("axis", axis, low=0, high=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return (np.nanquantile(x, (1 - level) / 2, axis=axis), np.nanquantile(x, (1 + level) / 2, axis=axis))


def rank_rho(r, advantage) -> np.ndarray:
    """Spearman ρ between r_Q^n and the negated advantage over the last axis (vectorised over the others):
    +1 when r_Q^n ranks the quantizers exactly as the attack does (a larger r_Q^n, a weaker attack),
    −1 when in reverse, NaN where either side is constant. Both arrays broadcast; finite values only."""
    r = check_array("r", r)
    advantage = check_array("advantage", advantage)
    if r.ndim < 1:
        raise ValueError("r must have a last axis of quantizers")
    if advantage.ndim < 1:
        raise ValueError("advantage must have a last axis of quantizers")
    try:
        np.broadcast_shapes(r.shape, advantage.shape)
    except ValueError:
        raise ValueError(f"advantage must broadcast against r {r.shape}, got shape {advantage.shape}") from None
    with skip_nested():
        return spearman(r, -advantage, axis=-1, allow_nonfinite=True)


def rank_rho_over(r, advantage, defined) -> np.ndarray:
    """:func:`rank_rho` over the quantizers ``defined`` ((Q,) boolean: those whose r_Q^n is defined) of
    ``r`` and ``advantage`` (…, Q); NaN of the other axes' shape where fewer than 3 are (a ρ of two
    quantizers is ±1 whatever the data). A resample may leave a defined quantizer without a model (its
    r_Q^n NaN there): such entries are ranked as :func:`qlib.ranking.spearman` ranks non-finite values."""
    r = check_array("r", r, finite=False)
    defined = np.asarray(defined)
    if defined.dtype.kind != "b" or defined.ndim != 1 or r.ndim < 1 or defined.shape[0] != r.shape[-1]:
        raise ValueError(f"defined must be a boolean array with one entry per quantizer (last axis of r, "
                         f"{r.shape[-1] if r.ndim else 0}), got {defined.dtype} {defined.shape}")
    if defined.sum() < 3:
        return np.full(r.shape[:-1], np.nan)
    advantage = check_array("advantage", advantage)
    if advantage.ndim < 1 or advantage.shape[-1] != r.shape[-1]:
        raise ValueError(f"advantage must have r's last axis of {r.shape[-1]} quantizers, got shape {advantage.shape}")
    with skip_nested():  # checked above; NaN entries of a resample are ranked, not refused
        return rank_rho(r[..., defined], advantage[..., defined])


def permutation_test(rho, r, advantage, *, draws: int = 10_000, alpha: float = ALPHA, seed: int = 0):
    """``(p, critical)``: the one-sided p-value of the mean ρ of :func:`rank_rho` over cells under ρ = 0,
    and the critical value of that mean at level ``alpha`` (the (1 − α) quantile of its null). ``r`` and
    ``advantage`` (C, Q), one row per cell (seed × law, or task), finite; the null: the quantizers' r_Q^n
    permuted independently in every cell, ``draws`` times; p = (1 + #{mean ρ* ≥ ρ}) / (1 + draws). ``rho``
    the observed mean."""
    rho = check_float("rho", rho, low=-1.0, high=1.0)
    r = check_array("r", r, ndim=2)
    advantage = check_array("advantage", advantage, ndim=2)
    if r.shape != advantage.shape:
        raise ValueError(f"advantage must have the shape of r {r.shape}, got {advantage.shape}")
    if r.shape[1] < 3:
        raise ValueError(f"r must have at least 3 quantizers (columns) to rank, got {r.shape[1]}")
    draws = check_int("draws", draws, low=1)
    alpha = check_probability("alpha", alpha, open_low=True, open_high=True)
    seed = check_seed("seed", seed)
    C, Q = r.shape
    check_alloc("draws", draws * C * Q * 4, 8, value=draws, what="the permuted r_Q^n and their ranks")
    rng = np.random.default_rng(seed)
    order = np.argsort(rng.random((draws, C, Q)), axis=-1)
    rp = np.take_along_axis(np.broadcast_to(r, (draws, C, Q)), order, axis=-1)
    with skip_nested(), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        null = np.nanmean(rank_rho(rp, advantage[None]), axis=-1)
    null = np.where(np.isfinite(null), null, 0.0)
    return float((1 + np.sum(null >= rho - 1e-12)) / (1 + draws)), float(np.quantile(null, 1 - alpha))


def pooled_permutation_test(rho, r, advantage, config: AnalysisConfig) -> tuple[float, float, int]:
    """``(p, critical, quantizers)``: :func:`permutation_test` of the mean ρ ``rho`` over cells, on the
    quantizers whose r_Q^n is finite in every cell (the columns of ``r`` (C, Q) finite in every row, as the
    cells' ρ of :func:`rank_rho_over` are taken; their number is ``quantizers``), with ``config``'s draws, alpha
    and seed (an :class:`AnalysisConfig`). ``r`` holds r_Q^n values (≥ 0, NaN where undefined, +inf where
    unbounded: such a column is left out; −inf or a negative value raises, naming ``r``). ``advantage`` (C, Q)
    must be finite, as :func:`permutation_test` requires (NaN or ±inf raises, naming ``advantage``), except
    where ``rho`` is NaN (no cell has a ρ: nothing is tested, ``advantage`` is not read). p and the critical
    value are NaN where fewer than 3 quantizers are defined or ``rho`` is NaN."""
    if not isinstance(config, AnalysisConfig):
        raise TypeError(f"config must be an AnalysisConfig, got {type(config).__name__}")
    r = check_array("r", r, ndim=2, finite=False)
    _check_rates("r", r)
    advantage = check_array("advantage", advantage, ndim=2, finite=False)
    if advantage.shape != r.shape:
        raise ValueError(f"advantage must have the shape of r {r.shape}, got {advantage.shape}")
    rho = float("nan") if isinstance(rho, float) and np.isnan(rho) else check_float("rho", rho, low=-1.0, high=1.0)
    defined = np.isfinite(r).all(axis=0)
    if np.isnan(rho):
        return float("nan"), float("nan"), int(defined.sum())
    if not nested() and not np.isfinite(advantage).all():
        at = tuple(int(i) for i in np.argwhere(~np.isfinite(advantage))[0])
        raise ValueError(f"advantage must be finite (no NaN or inf), as permutation_test requires; got "
                         f"{advantage[at]} at (cell, quantizer) {at} (a NaN advantage is allowed only with rho NaN: "
                         "no cell has a ρ)")
    if defined.sum() < 3:
        return float("nan"), float("nan"), int(defined.sum())
    with skip_nested():
        p, critical = permutation_test(rho, r[:, defined], advantage[:, defined], draws=config.draws,
                                       alpha=config.alpha, seed=config.seed)
    return p, critical, int(defined.sum())


#: the columns :func:`theory_gap` reads
_GAP_INPUTS = ("theory", "advantage", "advantage_lo", "advantage_hi")


def theory_gap(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with the gap between the theory's order and the attack appended: ``gap`` = ``theory`` −
    ``advantage`` (the theory's order e^{−n r_Q^n} of Δ_n, Theorem 3.3 of paper 001, minus the measured
    advantage: positive where the attack stays below it), and its interval from the advantage's,
    ``gap_lo`` = theory − advantage_hi and ``gap_hi`` = theory − advantage_lo (the theory's order is one
    value). ``frame`` holds the columns theory, advantage, advantage_lo and advantage_hi."""
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"frame must be a pandas DataFrame, got {type(frame).__name__}")
    missing = [c for c in _GAP_INPUTS if c not in frame.columns]
    if missing:
        raise ValueError(f"frame must hold the columns {', '.join(_GAP_INPUTS)}; missing {', '.join(missing)}")
    theory = frame["theory"]
    return frame.assign(gap=theory - frame["advantage"], gap_lo=theory - frame["advantage_hi"],
                        gap_hi=theory - frame["advantage_lo"])


@runtime_checkable
class StudySettings(Protocol):
    """What :func:`reductions_text` reads of a study's settings record (``synthetic.SyntheticConfig``,
    ``molecular.MolecularAttackConfig``): ``models`` K, each half the other half's shadows; ``run_text()``,
    what the run trains in its own words; ``paper_text()``, paper 001's sizes where the run's are smaller
    (empty where none is)."""

    models: int

    def run_text(self) -> str: ...

    def paper_text(self) -> str: ...


def reductions_text(config: StudySettings, reps: int, draws: int) -> str:
    """Prose of chapters 02 and 03: a study's sizes against paper 001's and the LiRA paper's shadow count,
    generated from its settings record ``config`` (:class:`StudySettings`) and the analysis' ``reps``
    bootstrap resamples and ``draws`` permutations."""
    if not isinstance(config, StudySettings):
        raise TypeError(f"config must be a study's settings record (SyntheticConfig, MolecularAttackConfig), got "
                        f"{type(config).__name__}")
    reps = check_int("reps", reps, low=1)
    draws = check_int("draws", draws, low=1)
    shadows = config.models // 2
    s = (f"{config.run_text()} Every model is a target once, with {shadows} shadows. Intervals: {reps} bootstrap "
         f"resamples; the permutation test: {draws} draws.")
    if config.paper_text():
        s += " " + config.paper_text()
    if shadows < LIRA_SHADOWS:
        s += f" The LiRA paper trains up to {LIRA_SHADOWS} shadow models."
    return s
