"""The synthetic study of paper 001 §5.1 under practical attacks (chapter ``attacks/02``): for each law
and quantizer, the strongest practical attack's advantage against r_Q^n and the discriminator estimate
({cite}`aubinais2025quantized`).

**Protocol** (:func:`synthetic_attacks`, per seed and law of ``qlib.synthetic``; settings in the frozen
:class:`SyntheticConfig`). A pool of 2n points of the law and ``n_val`` fresh validation points; K
models of the study's family (the linear model on [x, x²], full-batch Adam at the study's learning
rate) trained at once on complementary halves of the pool (:func:`qlib.attacks.shadow.paired_keep`:
every model on the study's n points, every point in K/2 models), with r_Q^n of every quantizer recorded
along training on the validation points (:class:`qlib.recorder.RQRecorder`, Algorithm 1). After
training each model is quantized by every quantizer (post-training, per tensor, as in the study) and by
the identity (the unquantized model, the reference the data-processing inequality compares with).

The K models are split into two halves, each made of whole complementary pairs (models 4i, 4i + 1 and
4i + 2, 4i + 3), so every pool point is *in* exactly half of each half. Every model of one half is a
**target**, and the other half are its K/2 **shadows** (LiRA's leave-out protocol, both ways, so every
model is a target once, :mod:`qlib.attacks.lira`). A target's member pairs are its n training points,
its non-member pairs the other n pool points (balanced, ν = ½). The attacks on the quantized target,
from its logit-scaled confidence φ = (2y − 1)·f(x) (:func:`qlib.attacks.shadow.binary_scores`):

* the global loss threshold (:func:`qlib.attacks.threshold.loss_scores`);
* LiRA offline, one-sided, with one global variance (:func:`qlib.attacks.lira.lira_offline`);
* LiRA online with one global variance (:func:`qlib.attacks.lira.lira_online`; the reference code's
  choice for few shadows), and with per-example variances (the reference code's default). Where a
  quantizer makes every shadow agree on an example, a per-example variance is zero and the score
  undefined (0/0) or infinite: :func:`_finite_scores` ranks an undefined score below every other (no
  evidence of membership) and an infinite one beyond the finite range, its sign kept.

**Held-out accuracy.** Each attack's threshold is fitted (:func:`qlib.attacks.threshold.fit_threshold`)
on the pairs of one fold of targets (the even-numbered) and applied to the other, and vice versa, so
every target's 2n pairs get an out-of-fold prediction: the balanced accuracy of those predictions is
unbiased and at most ½ + Δ_n/2 (Theorem 3.1 of paper 003); the **advantage** is 2·acc − 1, the TPR − FPR
of the fitted thresholds. Per target, the number of correct predictions is kept (``correct``), so the
bootstrap of :func:`analyse` resamples whole targets (their pairs share the model) jointly over the
quantizers and attacks. AUC, TPR at 0.1 % and 1 % FPR and the optimistic advantage (threshold chosen on
the pairs it is measured on) come from :func:`qlib.attacks.metrics.evaluate` on all pairs.

**The discriminator estimate** (paper 001 §4.2, :func:`qlib.discriminator.train_discriminators`): per
law and quantizer, g_ψ(θ̂, x, ℓ) trained on the quantized models of the runs :func:`qlib.discriminator.split_runs`
gives it (half train, a quarter early stopping, a quarter test — the paper's protocol), members and
non-members as above; its MIS estimate 2(1 − acc), clipped to [0, 1] as the paper reports it, read as an
advantage 1 − MIS (so at least 0), with its Clopper–Pearson interval.

**The question** (paper 001 §5.1 ranks the quantizers by r_Q^n; Theorem 3.3 there: MIS ≈ 1 − e^{−n r_Q^n},
so Δ_n ≈ e^{−n r_Q^n}): does r_Q^n rank the quantizers as the strongest attack does? A larger r_Q^n
should mean a weaker attack. :func:`analyse` computes, per seed and law, the Spearman correlation over
the quantizers between r_Q^n and the strongest attack's **negated** advantage (so ρ = +1 is the same
ranking, both read "more private"), its mean over seeds with the seeds' spread and a bootstrap interval,
and the one-sided permutation p-value of ρ = 0 (the quantizers' r_Q^n permuted independently within
each seed × law).

Decisions where the paper is silent or that are ours: the pool of 2n points (so that every model trains
on the study's n), K models per law, the three attacks and their fixed variance, the cross-fitted
thresholds, the strongest attack per quantizer as the maximum of the three held-out advantages (the same
selection for every quantizer; it biases every advantage up alike), a law's r_Q^n as the mean over its
K models (NaN ones — fewer than two distinct quantized models along training — left out), and a
quantizer whose r_Q^n is NaN for every model left out of that law's ρ.
"""

from __future__ import annotations

import functools
import time
import warnings
from dataclasses import asdict, dataclass, fields

import numpy as np
import pandas as pd
import torch

from qlib import discriminator, engine, quantizers, recorder, synthetic
from qlib.attacks import metrics, shadow
from qlib.devices import resolve
from qlib.ranking import spearman
from qlib.resume import check_units
from qlib.rqn import RQUndefinedWarning
from qlib.validation import (
    check_alloc,
    check_array,
    check_bool,
    check_float,
    check_int,
    check_int_sequence,
    check_probability,
    check_seed,
    skip_nested,
)

from . import protocol
from .paper import SYNTHETIC_SETTINGS

__all__ = ["SYNTHETIC_ATTACKS", "REFERENCE", "SyntheticConfig", "SyntheticStudy", "synthetic_attacks",
           "default_quantizers", "rank_rho", "SyntheticAnalysis", "analyse", "permutation_test", "ALPHA"]

#: the practical attacks of the study, in table order (the protocol shared with chapter 03, :mod:`.protocol`)
SYNTHETIC_ATTACKS = protocol.ATTACKS
#: the one-sided level of the permutation test of ρ = 0 (ours, fixed before any result)
ALPHA = 0.05
#: the unquantized model, attacked beside the quantizers (no r_Q^n: a continuous model never repeats)
REFERENCE = "identity"


def default_quantizers() -> tuple[str, ...]:
    """Every quantizer of ``qlib.quantizers`` but the identity (whose r_Q^n is not defined: a continuous
    model is never repeated), in the paper's column order."""
    return tuple(q for q in quantizers.names() if q != REFERENCE)


@dataclass(frozen=True)
class SyntheticConfig:
    """The settings of :func:`synthetic_attacks`, checked once when built; frozen.

    ``n`` training points per model (pool of 2n), ``n_val`` validation points for r_Q^n; ``models`` K
    (a multiple of 4, ≥ 8): per law and seed, each half of K/2 models is the other half's shadows;
    ``epochs`` of full-batch Adam at ``lr`` (defaults: paper 001 §5.1.1, :data:`~.paper.SYNTHETIC_SETTINGS`);
    ``seeds`` one independent repetition each (data, initialisations, halves); ``names`` the quantizers
    (default :func:`default_quantizers`); ``grid`` the (σ, modes) laws drawn from ``law_seed``
    (``qlib.synthetic``); ``discriminator``: train the paper's discriminator baseline, with ``disc_hidden``
    units, ``disc_epochs``, ``disc_patience`` and ``disc_lr``."""

    n: int = SYNTHETIC_SETTINGS["n"]
    n_val: int = SYNTHETIC_SETTINGS["n"]
    models: int = 64
    epochs: int = SYNTHETIC_SETTINGS["epochs"]
    lr: float = SYNTHETIC_SETTINGS["lr"]
    seeds: tuple[int, ...] = (0, 1, 2)
    names: tuple[str, ...] = default_quantizers()
    grid: tuple[tuple[float, int], ...] = synthetic.GRID
    law_seed: int = 0
    discriminator: bool = True
    disc_hidden: int = 16
    disc_epochs: int = 30
    disc_patience: int = 8
    disc_lr: float = 1e-2

    def __post_init__(self):
        def put(name, value):
            object.__setattr__(self, name, value)

        for nm, lo in (("n", 2), ("n_val", 2), ("models", 8), ("epochs", 1), ("disc_hidden", 1), ("disc_epochs", 1),
                       ("disc_patience", 1)):
            put(nm, check_int(nm, getattr(self, nm), low=lo))
        if self.models % 4:
            raise ValueError(f"models must be a multiple of 4 (two halves of complementary pairs), got {self.models}")
        for nm in ("lr", "disc_lr"):
            put(nm, check_float(nm, getattr(self, nm), low=0.0, low_open=True))
        seeds = tuple(check_int_sequence("seeds", self.seeds, low=0))
        if len(set(seeds)) != len(seeds):
            raise ValueError(f"seeds must be distinct, got {list(seeds)}")
        put("seeds", seeds)
        names = tuple(quantizers.check_names(self.names, "names"))
        if REFERENCE in names:
            raise ValueError("names must list quantizers only; the identity model is always attacked beside them")
        if len(set(names)) != len(names):
            raise ValueError(f"names must be distinct, got {list(names)}")
        put("names", names)
        put("grid", tuple(synthetic.check_grid(self.grid)))
        put("law_seed", check_seed("law_seed", self.law_seed))
        put("discriminator", check_bool("discriminator", self.discriminator))

    def as_dict(self) -> dict:
        """The fields as plain JSON types."""
        d = asdict(self)
        d["seeds"], d["names"] = list(self.seeds), list(self.names)
        d["grid"] = [[float(s), int(k)] for s, k in self.grid]
        return d

    def describe(self) -> str:
        """Markdown table of the settings beside the paper's (§5.1.1), for the chapter."""
        paper = {"n": SYNTHETIC_SETTINGS["n"], "lr": SYNTHETIC_SETTINGS["lr"], "epochs": SYNTHETIC_SETTINGS["epochs"],
                 "models": SYNTHETIC_SETTINGS["runs"]}
        out = ["| setting | this run | paper 001 (§5.1.1) |", "|---|---|---|"]
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name in ("names", "seeds"):
                shown = ", ".join(map(str, v))
            elif f.name == "grid":
                shown = " ".join(f"({s:g}, {k})" for s, k in v)
            else:
                shown = f"{v:g}" if isinstance(v, float) else str(v)
            p = paper.get(f.name)
            ref = "—" if p is None else (f"{p:g}" if isinstance(p, float) else str(p))
            out.append(f"| `{f.name}` | {shown} | {ref} |")
        return "\n".join(out)


@dataclass
class SyntheticStudy:
    """:func:`synthetic_attacks`'s output. Axes: S seeds, L laws, A = 1 + Q attacked models (the identity,
    then ``names``), P attacks (:data:`SYNTHETIC_ATTACKS`), K models.

    ``table`` — one row per seed × law × attacked model × attack: held-out ``accuracy`` and ``advantage``
    (2·acc − 1), ``auc``, ``tpr@0.001``, ``tpr@0.01``, ``advantage_opt`` (optimistic); ``r`` (S, L, Q, K)
    r_Q^n per model (NaN: undefined); ``correct`` (S, L, A, P, K) held-out correct predictions among each
    target's 2n pairs; ``disc_acc``, ``disc_lo``, ``disc_hi`` (S, L, A) the discriminator's held-out
    accuracy as its MIS estimate reads it (1 − MIS/2, the MIS clipped to [0, 1] as paper 001 reports it, so
    at least ½) and the Clopper–Pearson interval (NaN without it); ``seconds`` the wall time of each stage."""

    config: dict
    laws: list
    names: list
    table: pd.DataFrame
    r: np.ndarray
    correct: np.ndarray
    disc_acc: np.ndarray
    disc_lo: np.ndarray
    disc_hi: np.ndarray
    seconds: dict

    @property
    def attacked(self) -> list:
        """The attacked models: the identity, then the quantizers."""
        return [REFERENCE, *self.names]


def synthetic_attacks(config: SyntheticConfig, *, device="auto", units=None) -> SyntheticStudy:
    """Every attack on every quantized (and the unquantized) model of every law (module docstring),
    at the settings of ``config`` (a :class:`SyntheticConfig`; ``SyntheticConfig()`` for the defaults).
    ``device``: where the models train (``qlib.devices``); the attacks run on the CPU. ``units`` (a
    :class:`qlib.resume.Units`): each (seed, law) is a unit, saved when done and reused by a rerun
    (its pool comes from the seed's generator, drawn for all laws first, and its keep sets and
    initialisations from the law's own seed, so a resumed study equals an uninterrupted one)."""
    cfg = config
    if not isinstance(cfg, SyntheticConfig):
        raise TypeError(f"config must be a SyntheticConfig, got {type(cfg).__name__}")
    check_units("units", units)
    A_, K_, N_ = len(cfg.names) + 1, cfg.models, 2 * cfg.n
    check_alloc("models", A_ * K_ * N_ * (len(SYNTHETIC_ATTACKS) + 2), 8, value=K_,
                what="every attacked model's scores on its pool (attacked models × models × 2n × attacks)")
    check_alloc("epochs", K_ * len(cfg.names) * cfg.epochs, 4 * 2, value=cfg.epochs,
                what="the recorder's per-epoch statistics (models × quantizers × epochs)")
    laws = synthetic.make_laws(cfg.law_seed, grid=cfg.grid)
    labels = synthetic.law_labels(cfg.grid)
    names, attacked = list(cfg.names), [REFERENCE, *cfg.names]
    S, L, Q, A, P, K, n = len(cfg.seeds), len(laws), len(names), len(names) + 1, len(SYNTHETIC_ATTACKS), cfg.models, cfg.n
    r = np.full((S, L, Q, K), np.nan)
    correct = np.zeros((S, L, A, P, K), dtype=np.int64)
    disc_acc, disc_lo, disc_hi = (np.full((S, L, A), np.nan) for _ in range(3))
    seconds = {"train_and_r_q": 0.0, "attacks": 0.0, "discriminator": 0.0}
    half = protocol.halves(K)
    rows = []
    with skip_nested():
        model = engine.Linear(2 * laws[0].dim)
        split = engine.param_sizes(model)
        train_cfg = engine.TrainConfig(epochs=cfg.epochs, lr=cfg.lr)

        def one_law(seed, li, x_pool, y_pool, x_val, y_val) -> dict:
            """One (seed, law): train, record r_Q^n, attack, and (optionally) the discriminator."""
            out = {"rows": [], "correct": np.zeros((A, P, K), dtype=np.int64), "disc": np.full((3, A), np.nan),
                   "seconds": {"train_and_r_q": 0.0, "attacks": 0.0, "discriminator": 0.0}}
            t0 = time.perf_counter()
            sub = seed * 1_000_003 + li                                   # the law's own seed for keep and init
            keep = shadow.paired_keep(K, 2 * n, seed=sub)
            X, y = synthetic.features(x_pool[li]), y_pool[li]
            Xv = synthetic.features(x_val[li]).expand(K, -1, -1).contiguous()
            rec = recorder.RQRecorder(model, names, Xv, y_val[li].expand(K, -1).contiguous(), epochs=cfg.epochs,
                                      device=device)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RQUndefinedWarning)   # NaN r_Q^n: counted in the tables
                theta = shadow.train_shadows(model, X, y, keep, train_cfg, seed=sub, device=device,
                                             callbacks=[rec]).cpu()
            out["r"] = np.asarray(rec.r)
            thq = quantizers.quantize_many(attacked, theta, split=split)  # (A, K, p)
            t1 = time.perf_counter()
            out["seconds"]["train_and_r_q"] = t1 - t0
            phis = [shadow.binary_scores(model, thq[a], X, y) for a in range(A)]
            for a in range(A):
                sc = protocol.attack_scores(phis[a], keep, half)
                for p in range(P):
                    s = protocol.finite_scores(sc[p])
                    out["correct"][a, p] = protocol.held_out_correct(s, keep)
                    m = metrics.evaluate(s.ravel(), keep.ravel()).values
                    acc = out["correct"][a, p].sum() / (2 * n * K)
                    out["rows"].append({"seed": seed, "law": labels[li], "quantizer": attacked[a],
                                        "attack": SYNTHETIC_ATTACKS[p], "accuracy": acc, "advantage": 2 * acc - 1,
                                        "auc": m["auc"], "tpr@0.001": m["tpr@0.001"], "tpr@0.01": m["tpr@0.01"],
                                        "advantage_opt": m["advantage"]})
            t2 = time.perf_counter()
            out["seconds"]["attacks"] = t2 - t1
            if cfg.discriminator:
                idx_in = np.nonzero(keep)[1].reshape(K, n)
                idx_out = np.nonzero(~keep)[1].reshape(K, n)
                loss = np.stack([np.logaddexp(0.0, -ph) for ph in phis])     # (A, K, 2n)
                loss_in, loss_out = (np.take_along_axis(loss, ix[None], axis=2).astype(np.float32)
                                     for ix in (idx_in, idx_out))
                xr = x_pool[li]
                tr, es, te = discriminator.split_runs(K, seed=sub)
                res = discriminator.train_discriminators(
                    thq, xr[torch.from_numpy(idx_in)][None], loss_in, xr[torch.from_numpy(idx_out)][None], loss_out,
                    tr, es, te, group_law=np.zeros(A, dtype=np.int64), hidden=cfg.disc_hidden, lr=cfg.disc_lr,
                    epochs=cfg.disc_epochs, patience=cfg.disc_patience, seed=sub, device=device)
                out["disc"] = np.stack([1 - res.mis / 2, 1 - res.mis_hi / 2, 1 - res.mis_lo / 2])  # MIS clipped
            out["seconds"]["discriminator"] = time.perf_counter() - t2
            return out

        for si, seed in enumerate(cfg.seeds):
            g = torch.Generator().manual_seed(seed)
            x_pool, y_pool = synthetic.sample(laws, 2 * n, g)                 # (L, 2n, dim), (L, 2n)
            x_val, y_val = synthetic.sample(laws, cfg.n_val, g)
            for li in range(L):
                def work(seed=seed, li=li, pools=(x_pool, y_pool, x_val, y_val)):
                    return one_law(seed, li, *pools)

                if units is None:
                    u = work()
                else:
                    u = units.run("synthetic_attacks_law", {"config": cfg.as_dict(), "seed": seed, "law": li,
                                                            "device": resolve(device).type}, work)
                r[si, li] = u["r"]
                correct[si, li] = u["correct"]
                disc_acc[si, li], disc_lo[si, li], disc_hi[si, li] = u["disc"]
                rows += u["rows"]
                for k, v in u["seconds"].items():
                    seconds[k] += v
    seconds["total"] = sum(seconds.values())
    return SyntheticStudy(cfg.as_dict(), labels, names, pd.DataFrame(rows), r, correct, disc_acc, disc_lo, disc_hi,
                          seconds)


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


def permutation_test(rho, r, advantage, *, draws: int = 10_000, alpha: float = ALPHA, seed: int = 0):
    """``(p, critical)``: the one-sided p-value of the mean ρ of :func:`rank_rho` over cells under ρ = 0,
    and the critical value of that mean at level ``alpha`` (the (1 − α) quantile of its null). ``r`` and
    ``advantage`` (C, Q), one row per cell (seed × law), finite; the null: the quantizers' r_Q^n permuted
    independently in every cell, ``draws`` times; p = (1 + #{mean ρ* ≥ ρ}) / (1 + draws). ``rho`` the
    observed mean."""
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


@dataclass
class SyntheticAnalysis:
    """:func:`analyse`'s output. ``per_quantizer``: one row per law × attacked model — r_Q^n (mean over
    seeds and models) with its bootstrap interval, the theory's order e^{−n r_Q^n}, each attack's held-out
    advantage, the strongest attack, its advantage and interval (mean over seeds), AUC and TPR at 1 % FPR of
    the strongest attack, the discriminator's advantage with its interval, and the gap e^{−n r_Q^n} − advantage
    (``gap``, interval from the advantage's). ``per_law``: per law, ρ
    (mean over seeds) with its bootstrap interval, the seeds' values and standard deviation, and ρ of the
    discriminator's advantage. ``pooled``: the mean ρ over laws and seeds, its interval, its permutation
    p-value; the same for the discriminator; the identity's advantage over the quantizers' (mean and
    interval) and the strongest practical attack's over the discriminator's. ``settings``: reps, level,
    draws, seed."""

    per_quantizer: pd.DataFrame
    per_law: pd.DataFrame
    pooled: dict
    settings: dict


#: the percentile bootstrap interval (shared with the other chapter of the protocol)
_pct = functools.partial(protocol.percentile_interval, allow_nonfinite=True)  # an undefined resampled ρ is NaN


def _cell_rho(r: np.ndarray, adv: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """ρ over the quantizers ``ok`` of (…, Q) arrays (NaN with fewer than 3)."""
    if ok.sum() < 3:
        return np.full(r.shape[:-1], np.nan)
    return rank_rho(r[..., ok], adv[..., ok])


def analyse(study: SyntheticStudy, *, reps: int = 200, level: float = 0.95, draws: int = 10_000,
            alpha: float = ALPHA, seed: int = 0) -> SyntheticAnalysis:
    """Summaries, rank agreement and intervals of a study (module docstring). The bootstrap (``reps``
    resamples, percentile intervals at ``level``) resamples, within each seed and law, whole targets for the
    advantages (jointly over quantizers and attacks: a target's quantized models share it) and whole models
    for r_Q^n; each resample's ρ is computed as the estimate's. ``draws`` permutations for the p-value and
    the critical value at ``alpha`` (:func:`permutation_test`)."""
    if not isinstance(study, SyntheticStudy):
        raise TypeError(f"study must be the SyntheticStudy synthetic_attacks returns, got {type(study).__name__}")
    reps = check_int("reps", reps, low=1)
    level = check_probability("level", level, open_low=True, open_high=True)
    draws = check_int("draws", draws, low=1)
    alpha = check_probability("alpha", alpha, open_low=True, open_high=True)
    seed = check_seed("seed", seed)
    S, L, Q, K = study.r.shape
    A, P = study.correct.shape[2:4]
    check_alloc("reps", S * L * (reps + 1) * (2 * K + 2 * A * P + 3 * Q), 8, value=reps,
                what="the bootstrap weights and resampled statistics")
    n = int(study.config["n"])
    rng = np.random.default_rng(seed)
    # bootstrap weights: targets (advantages) and models (r_Q^n), independent per seed and law; column 0 = the data
    wt = np.concatenate([np.ones((S, L, 1, K)), rng.multinomial(K, np.full(K, 1 / K), size=(S, L, reps))], axis=2)
    wm = np.concatenate([np.ones((S, L, 1, K)), rng.multinomial(K, np.full(K, 1 / K), size=(S, L, reps))], axis=2)
    acc = np.einsum("slbk,slapk->slbap", wt, study.correct) / (2 * n * K)   # Σ_b weights = K
    adv = 2 * acc - 1                                                        # (S, L, B, A, P)
    strongest = adv.max(axis=-1)                                             # (S, L, B, A)
    okr = np.isfinite(study.r)
    rr = np.einsum("slbk,slqk->slbq", wm, np.where(okr, study.r, 0.0))
    cnt = np.einsum("slbk,slqk->slbq", wm, okr.astype(float))
    with np.errstate(invalid="ignore", divide="ignore"):
        rbar = np.where(cnt > 0, rr / np.where(cnt > 0, cnt, 1), np.nan)      # (S, L, B, Q)
    disc_adv = 2 * study.disc_acc - 1                                       # (S, L, A)
    rho = np.full((S, L, reps + 1), np.nan)
    rho_disc = np.full((S, L), np.nan)
    with skip_nested():
        for s in range(S):
            for li in range(L):
                ok = np.isfinite(rbar[s, li, 0])
                rho[s, li] = _cell_rho(rbar[s, li], strongest[s, li, :, 1:], ok)
                if np.isfinite(disc_adv[s, li, 1:]).all():
                    rho_disc[s, li] = _cell_rho(rbar[s, li, 0], disc_adv[s, li, 1:], ok)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        rho_law = np.nanmean(rho, axis=0)
        rho_all = np.nanmean(rho.reshape(S * L, -1), axis=0)               # (B,)
    lo_law, hi_law = _pct(rho_law[:, 1:], level, axis=1)
    lo_all, hi_all = _pct(rho_all[1:], level)
    # per law × attacked model, means over seeds
    labels = study.laws
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        rmean = np.nanmean(rbar, axis=0)                                     # (L, B, Q)
    r_lo, r_hi = _pct(rmean[:, 1:], level, axis=1)                           # (L, Q)
    adv_s = strongest.mean(axis=0)                                           # (L, B, A)
    a_lo, a_hi = _pct(adv_s[:, 1:], level, axis=1)
    adv_p = adv[..., 0, :, :].mean(axis=0)                                   # (L, A, P)
    pick = adv_p.argmax(axis=-1)                                             # (L, A)
    t = study.table
    mean_tab = t.groupby(["law", "quantizer", "attack"], sort=False)[["auc", "tpr@0.01"]].mean()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        dmean = np.nanmean(disc_adv, axis=0)
        dlo = np.nanmean(2 * study.disc_lo - 1, axis=0)
        dhi = np.nanmean(2 * study.disc_hi - 1, axis=0)
    rows = []
    for li, law in enumerate(labels):
        for a, q in enumerate(study.attacked):
            best = SYNTHETIC_ATTACKS[pick[li, a]]
            row = {"law": law, "quantizer": q}
            if a == 0:
                row.update(r=np.nan, r_lo=np.nan, r_hi=np.nan, theory=np.nan)
            else:
                rq = rmean[li, 0, a - 1]
                row.update(r=rq, r_lo=r_lo[li, a - 1], r_hi=r_hi[li, a - 1], theory=float(np.exp(-n * rq)))
            for p, name in enumerate(SYNTHETIC_ATTACKS):
                row[name] = adv_p[li, a, p]
            row.update(strongest=best, advantage=adv_s[li, 0, a], advantage_lo=a_lo[li, a],
                       advantage_hi=a_hi[li, a], auc=mean_tab.loc[(law, q, best), "auc"],
                       **{"tpr@0.01": mean_tab.loc[(law, q, best), "tpr@0.01"]},
                       disc=dmean[li, a], disc_lo=dlo[li, a], disc_hi=dhi[li, a])
            rows.append(row)
    per_q = pd.DataFrame(rows)
    per_q["gap"] = per_q["theory"] - per_q["advantage"]                      # the theory's order − the attack
    per_q["gap_lo"] = per_q["theory"] - per_q["advantage_hi"]
    per_q["gap_hi"] = per_q["theory"] - per_q["advantage_lo"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        sd = np.nanstd(rho[..., 0], axis=0, ddof=1) if S > 1 else np.full(L, np.nan)
        rdisc_law = np.nanmean(rho_disc, axis=0)
    per_law = pd.DataFrame({"law": labels, "rho": rho_law[:, 0], "rho_lo": lo_law, "rho_hi": hi_law,
                            "rho_seeds": [list(map(float, rho[:, li, 0])) for li in range(L)], "rho_seed_sd": sd,
                            "rho_disc": rdisc_law})
    # pooled: ρ over every seed × law; its permutation p-value
    cells_r = rbar[:, :, 0].reshape(S * L, Q)
    cells_a = strongest[:, :, 0, 1:].reshape(S * L, Q)
    keep_q = np.isfinite(cells_r).all(axis=0)
    mean_rho = float(np.nanmean(rho[..., 0]))
    nan2 = (float("nan"), float("nan"))
    mean_rd = float(np.nanmean(rho_disc)) if np.isfinite(rho_disc).any() else float("nan")
    cells_d = disc_adv[:, :, 1:].reshape(S * L, Q)
    with skip_nested():
        p, crit = permutation_test(mean_rho, cells_r[:, keep_q], cells_a[:, keep_q], draws=draws, alpha=alpha,
                                   seed=seed) if keep_q.sum() >= 3 and np.isfinite(mean_rho) else nan2
        p_d, crit_d = permutation_test(mean_rd, cells_r[:, keep_q], cells_d[:, keep_q], draws=draws, alpha=alpha,
                                       seed=seed) if keep_q.sum() >= 3 and np.isfinite(mean_rd) else nan2
    gap = (strongest[..., :1] - strongest[..., 1:]).mean(axis=(0, 1, 3))    # (B,): identity − quantizers
    g_lo, g_hi = _pct(gap[1:], level)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        vs = np.nanmean(strongest - disc_adv[:, :, None, :], axis=(0, 1, 3))  # (B,): practical − discriminator
    v_lo, v_hi = _pct(vs[1:], level)
    pooled = {"rho": mean_rho, "rho_lo": float(lo_all), "rho_hi": float(hi_all), "p": p, "crit": crit,
              "cells": S * L, "quantizers": int(keep_q.sum()), "rho_disc": mean_rd, "p_disc": p_d, "crit_disc": crit_d,
              "identity_gap": float(gap[0]), "identity_gap_lo": float(g_lo), "identity_gap_hi": float(g_hi),
              "vs_disc": float(vs[0]), "vs_disc_lo": float(v_lo), "vs_disc_hi": float(v_hi), "seeds": S, "laws": L,
              "models": K, "n": n}
    settings = {"reps": reps, "level": level, "draws": draws, "alpha": alpha, "seed": seed}
    return SyntheticAnalysis(per_q, per_law, pooled, settings)
