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
  undefined (0/0) or infinite: :func:`.protocol.finite_scores` ranks an undefined score below every other
  (no evidence of membership) and an infinite one beyond the finite range, its sign kept.

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
ranking, both read "more private"; :func:`.protocol.rank_rho`), its mean over seeds with the seeds' spread
and a bootstrap interval, and the one-sided permutation p-value of ρ = 0 (the quantizers' r_Q^n permuted
independently within each seed × law; :func:`.protocol.permutation_test`). The statistics are those of
:mod:`.protocol`, which the molecular study (chapter 03) shares.

Decisions where the paper is silent or that are ours: the pool of 2n points (so that every model trains
on the study's n), K models per law, the four attacks and their fixed variance, the cross-fitted
thresholds, the strongest attack per quantizer as the maximum of the four held-out advantages (the same
selection for every quantizer; it biases every advantage up alike), a law's r_Q^n as the mean over its
K models (NaN ones — fewer than two distinct quantized models along training — left out), and a
quantizer whose r_Q^n is NaN for every model left out of that law's ρ.
"""

from __future__ import annotations

import dataclasses
import functools
import time
import warnings
from dataclasses import asdict, dataclass, fields

import numpy as np
import pandas as pd
import torch

from qlib import discriminator, engine, engine_models, quantizers, recorder, synthetic
from qlib.attacks import metrics, shadow
from qlib.devices import resolve
from qlib.resume import check_units
from qlib.rqn import RQUndefinedWarning
from qlib.validation import (
    check_alloc,
    check_float,
    check_int,
    check_int_sequence,
    check_seed,
    resolve_config,
    skip_nested,
)

from . import protocol
from .paper import SYNTHETIC_SETTINGS

__all__ = ["SYNTHETIC_ATTACKS", "REFERENCE", "SyntheticConfig", "SyntheticStudy", "synthetic_attacks",
           "SyntheticAnalysis", "analyse"]

#: the practical attacks of the study, in table order (the protocol shared with chapter 03, :mod:`.protocol`)
SYNTHETIC_ATTACKS = protocol.ATTACKS
#: the unquantized model, attacked beside the quantizers (the protocol's, :data:`.protocol.REFERENCE`)
REFERENCE = protocol.REFERENCE


@dataclass(frozen=True)
class SyntheticConfig:
    """The settings of :func:`synthetic_attacks`, checked once when built; frozen.

    ``n`` training points per model (pool of 2n), ``n_val`` validation points for r_Q^n; ``models`` K
    (a multiple of 4, ≥ 8): per law and seed, each half of K/2 models is the other half's shadows;
    ``epochs`` of full-batch Adam at ``lr`` (defaults: paper 001 §5.1.1, :data:`~.paper.SYNTHETIC_SETTINGS`);
    ``seeds`` one independent repetition each (data, initialisations, halves); ``names`` the quantizers
    (default :func:`.protocol.default_quantizers`); ``grid`` the (σ, modes) laws drawn from ``law_seed``
    (``qlib.synthetic``); ``discriminator``: the settings of the paper's discriminator baseline
    (:class:`qlib.discriminator.DiscriminatorConfig`, the one record of them; its ``seed`` is ``law_seed`` and
    its ``device`` :func:`synthetic_attacks`'), None: not trained."""

    n: int = SYNTHETIC_SETTINGS["n"]
    n_val: int = SYNTHETIC_SETTINGS["n"]
    models: int = 64
    epochs: int = SYNTHETIC_SETTINGS["epochs"]
    lr: float = SYNTHETIC_SETTINGS["lr"]
    seeds: tuple[int, ...] = (0, 1, 2)
    names: tuple[str, ...] = protocol.default_quantizers()
    grid: tuple[tuple[float, int], ...] = synthetic.GRID
    law_seed: int = 0
    discriminator: discriminator.DiscriminatorConfig | None = discriminator.DiscriminatorConfig()

    def __post_init__(self):
        def put(name, value):
            object.__setattr__(self, name, value)

        for nm, lo in (("n", 2), ("n_val", 2), ("models", 8), ("epochs", 1)):
            put(nm, check_int(nm, getattr(self, nm), low=lo))
        if self.models % 4:
            raise ValueError(f"models must be a multiple of 4 (two halves of complementary pairs), got {self.models}")
        put("lr", check_float("lr", self.lr, low=0.0, low_open=True))
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
        if not (self.discriminator is None or isinstance(self.discriminator, discriminator.DiscriminatorConfig)):
            raise TypeError("discriminator must be a qlib.discriminator.DiscriminatorConfig or None (no discriminator), "
                            f"got {self.discriminator!r}")

    def as_dict(self) -> dict:
        """The fields as plain JSON types."""
        d = asdict(self)
        d["seeds"], d["names"] = list(self.seeds), list(self.names)
        d["grid"] = [[float(s), int(k)] for s, k in self.grid]
        d["discriminator"] = None if self.discriminator is None else self.discriminator.as_dict()
        return d

    def describe(self) -> str:
        """Markdown table of the settings beside the paper's (§5.1.1), for the chapter."""
        paper = {"n": SYNTHETIC_SETTINGS["n"], "lr": SYNTHETIC_SETTINGS["lr"], "epochs": SYNTHETIC_SETTINGS["epochs"],
                 "models": SYNTHETIC_SETTINGS["runs"]}
        out = ["| setting | this run | paper 001 (§5.1.1) |", "|---|---|---|"]
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name == "discriminator":
                shown = "none" if v is None else v.summary()
            elif f.name in ("names", "seeds"):
                shown = ", ".join(map(str, v))
            elif f.name == "grid":
                shown = " ".join(f"({s:g}, {k})" for s, k in v)
            else:
                shown = f"{v:g}" if isinstance(v, float) else str(v)
            p = paper.get(f.name)
            ref = "—" if p is None else (f"{p:g}" if isinstance(p, float) else str(p))
            out.append(f"| `{f.name}` | {shown} | {ref} |")
        return "\n".join(out)

    def run_text(self) -> str:
        """What this run trains, in one sentence (:func:`.protocol.reductions_text`)."""
        return (f"This run trains {self.models} models per law and seed on n = {self.n} points each for "
                f"{self.epochs} epochs ({len(self.seeds)} seed(s), {len(self.grid)} laws, {len(self.names)} "
                f"quantizers and the unquantized model), {self.models * 2 * self.n:,} evaluated pairs per law, seed "
                "and quantizer.")

    def paper_text(self) -> str:
        """Paper 001's sizes (§5.1.1) where this run's are smaller; empty where none is."""
        out = []
        if self.models < SYNTHETIC_SETTINGS["runs"]:
            out.append(f"Paper 001 trains {SYNTHETIC_SETTINGS['runs']} models (runs) per law.")
        if self.epochs < SYNTHETIC_SETTINGS["epochs"]:
            out.append(f"Paper 001 trains {SYNTHETIC_SETTINGS['epochs']} epochs.")
        return " ".join(out)


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


def synthetic_attacks(config: SyntheticConfig | None = None, *, device="auto", units=None) -> SyntheticStudy:
    """Every attack on every quantized (and the unquantized) model of every law (module docstring),
    at the settings of ``config`` (a :class:`SyntheticConfig`; None: its defaults:
    ``synthetic_attacks(SyntheticConfig(models=8))``). ``device``: where the models train
    (``qlib.devices``); the attacks run on the CPU. ``units`` (a :class:`qlib.resume.Units`): each
    (seed, law) is a unit, saved when done and reused by a rerun (its pool comes from the seed's
    generator, drawn for all laws first, and its keep sets and initialisations from the law's own seed,
    so a resumed study equals an uninterrupted one)."""
    cfg = resolve_config(SyntheticConfig, config)
    check_units("units", units)
    check_alloc("models", (len(cfg.names) + 1) * cfg.models * 2 * cfg.n * (len(SYNTHETIC_ATTACKS) + 2), 8,
                value=cfg.models,
                what="every attacked model's scores on its pool (attacked models × models × 2n × attacks)")
    check_alloc("epochs", cfg.models * len(cfg.names) * cfg.epochs, 4 * 2, value=cfg.epochs,
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
        model = engine_models.Linear(2 * laws[0].dim)
        split = engine_models.param_sizes(model)
        train_cfg = engine.TrainConfig(epochs=cfg.epochs, lr=cfg.lr)

        def one_law(seed, law, x_pool, y_pool, x_val, y_val) -> dict:
            """One (seed, law): train, record r_Q^n, attack, and (optionally) the discriminator."""
            out = {"rows": [], "correct": np.zeros((A, P, K), dtype=np.int64), "disc": np.full((3, A), np.nan),
                   "seconds": {"train_and_r_q": 0.0, "attacks": 0.0, "discriminator": 0.0}}
            t0 = time.perf_counter()
            law_seed = seed * 1_000_003 + law                              # the law's own seed for keep and init
            keep = shadow.paired_keep(K, 2 * n, seed=law_seed)
            X, y = synthetic.features(x_pool[law]), y_pool[law]
            X_val = synthetic.features(x_val[law]).expand(K, -1, -1).contiguous()
            rec = recorder.RQRecorder(model, names, X_val, y_val[law].expand(K, -1).contiguous(),
                                      recorder.RecorderConfig(epochs=cfg.epochs, device=device))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RQUndefinedWarning)   # NaN r_Q^n: counted in the tables
                theta = shadow.train_shadows(model, X, y, keep, dataclasses.replace(train_cfg, device=device),
                                             seed=law_seed, callbacks=[rec]).cpu()
            out["r"] = np.asarray(rec.r)
            theta_q = quantizers.quantize_many(attacked, theta, split=split)  # (A, K, p)
            t1 = time.perf_counter()
            out["seconds"]["train_and_r_q"] = t1 - t0
            phis = [shadow.binary_scores(model, theta_q[a], X, y) for a in range(A)]
            for a in range(A):
                scores = protocol.attack_scores(phis[a], keep, half)
                for p in range(P):
                    s = protocol.finite_scores(scores[p])
                    out["correct"][a, p] = protocol.held_out_correct(s, keep)
                    m = metrics.evaluate(s.ravel(), keep.ravel()).values
                    acc = out["correct"][a, p].sum() / (2 * n * K)
                    out["rows"].append({"seed": seed, "law": labels[law], "quantizer": attacked[a],
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
                x_law = x_pool[law]
                tr, es, te = discriminator.split_runs(K, seed=law_seed)
                res = discriminator.train_discriminators(
                    theta_q, x_law[torch.from_numpy(idx_in)][None], loss_in, x_law[torch.from_numpy(idx_out)][None],
                    loss_out, (tr, es, te), group_law=np.zeros(A, dtype=np.int64),
                    config=dataclasses.replace(cfg.discriminator, seed=law_seed, device=device))
                out["disc"] = np.stack([1 - res.mis / 2, 1 - res.mis_hi / 2, 1 - res.mis_lo / 2])  # MIS clipped
            out["seconds"]["discriminator"] = time.perf_counter() - t2
            return out

        for seed_index, seed in enumerate(cfg.seeds):
            g = torch.Generator().manual_seed(seed)
            x_pool, y_pool = synthetic.sample(laws, 2 * n, g)                 # (L, 2n, dim), (L, 2n)
            x_val, y_val = synthetic.sample(laws, cfg.n_val, g)
            for law in range(L):
                def work(seed=seed, law=law, pools=(x_pool, y_pool, x_val, y_val)):
                    return one_law(seed, law, *pools)

                if units is None:
                    unit = work()
                else:
                    unit = units.run("synthetic_attacks_law", {"config": cfg.as_dict(), "seed": seed, "law": law,
                                                               "device": resolve(device).type}, work)
                cell = (seed_index, law)
                r[cell] = unit["r"]
                correct[cell] = unit["correct"]
                disc_acc[cell], disc_lo[cell], disc_hi[cell] = unit["disc"]
                rows += unit["rows"]
                for k, v in unit["seconds"].items():
                    seconds[k] += v
    seconds["total"] = sum(seconds.values())
    return SyntheticStudy(cfg.as_dict(), labels, names, pd.DataFrame(rows), r, correct, disc_acc, disc_lo, disc_hi,
                          seconds)


@dataclass
class SyntheticAnalysis:
    """:func:`analyse`'s output. ``per_quantizer``: one row per law × attacked model — r_Q^n (mean over
    seeds and models) with its bootstrap interval, the theory's order e^{−n r_Q^n}, each attack's held-out
    advantage, the strongest attack, its advantage and interval (mean over seeds), AUC and TPR at 1 % FPR of
    the strongest attack, the discriminator's advantage with its interval, and the gap e^{−n r_Q^n} − advantage
    (``gap``, interval from the advantage's; :func:`.protocol.theory_gap`). ``per_law``: per law, ρ
    (mean over seeds) with its bootstrap interval, the seeds' values and standard deviation, and ρ of the
    discriminator's advantage. ``pooled``: the mean ρ over laws and seeds, its interval, its permutation
    p-value; the same for the discriminator; the identity's advantage over the quantizers' (mean and
    interval) and the strongest practical attack's over the discriminator's. ``settings``: the
    :class:`.protocol.AnalysisConfig` as a dict (reps, level, draws, alpha, seed)."""

    per_quantizer: pd.DataFrame
    per_law: pd.DataFrame
    pooled: dict
    settings: dict


#: the percentile bootstrap interval of :mod:`.protocol` (an undefined resampled ρ is NaN, left out)
_interval = functools.partial(protocol.percentile_interval, allow_nonfinite=True)


@dataclass(frozen=True)
class _Resampled:
    """A study's statistics in the data (index 0 of axis B) and in each bootstrap resample (1 … reps).
    Axes: S seeds, L laws, B, A attacked models (the identity, then the quantizers), P attacks, Q quantizers.

    ``advantage`` (S, L, B, A, P) every attack's held-out advantage; ``strongest`` (S, L, B, A) the largest
    over the attacks; ``r`` (S, L, B, Q) r_Q^n, the mean over models; ``disc_advantage`` (S, L, A) the
    discriminator's (the data only); ``rho`` (S, L, B) ρ of r_Q^n against the strongest attack;
    ``rho_disc`` (S, L) against the discriminator (the data only)."""

    advantage: np.ndarray
    strongest: np.ndarray
    r: np.ndarray
    disc_advantage: np.ndarray
    rho: np.ndarray
    rho_disc: np.ndarray


def _resample(study: SyntheticStudy, cfg: protocol.AnalysisConfig) -> _Resampled:
    """The bootstrap: within each seed and law, whole targets for the advantages (jointly over the attacked
    models and attacks: a target's quantized models share it) and, independently, whole models for r_Q^n."""
    S, L, Q, K = study.r.shape
    rng = np.random.default_rng(cfg.seed)
    target_weights = protocol.bootstrap_weights(rng, K, cfg.reps, shape=(S, L))   # (S, L, B, K)
    model_weights = protocol.bootstrap_weights(rng, K, cfg.reps, shape=(S, L))
    advantage = protocol.resampled_advantage(study.correct, target_weights, pairs=2 * int(study.config["n"]))
    strongest = advantage.max(axis=-1)
    r = protocol.resampled_r(study.r, model_weights)
    disc_advantage = 2 * study.disc_acc - 1
    rho = np.full((S, L, cfg.reps + 1), np.nan)
    rho_disc = np.full((S, L), np.nan)
    with skip_nested():
        for seed_index in range(S):
            for law in range(L):
                cell_r = r[seed_index, law]                                      # (B, Q)
                defined = np.isfinite(cell_r[0])
                rho[seed_index, law] = protocol.rank_rho_over(cell_r, strongest[seed_index, law, :, 1:], defined)
                if np.isfinite(disc_advantage[seed_index, law, 1:]).all():
                    rho_disc[seed_index, law] = protocol.rank_rho_over(cell_r[0], disc_advantage[seed_index, law, 1:],
                                                                       defined)
    return _Resampled(advantage, strongest, r, disc_advantage, rho, rho_disc)


def _quantizer_frame(study: SyntheticStudy, boot: _Resampled, level: float) -> pd.DataFrame:
    """:attr:`SyntheticAnalysis.per_quantizer`: means over seeds; the strongest attack of each law and
    attacked model is the one of the largest mean advantage in the data."""
    n = int(study.config["n"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        r_law = np.nanmean(boot.r, axis=0)                                        # (L, B, Q)
    r_lo, r_hi = _interval(r_law[:, 1:], level, axis=1)                          # (L, Q)
    strongest_law = boot.strongest.mean(axis=0)                                   # (L, B, A)
    strongest_lo, strongest_hi = _interval(strongest_law[:, 1:], level, axis=1)
    attack_advantage = boot.advantage[..., 0, :, :].mean(axis=0)                  # (L, A, P): the data
    strongest_attack = attack_advantage.argmax(axis=-1)                          # (L, A)
    roc = study.table.groupby(["law", "quantizer", "attack"], sort=False)[["auc", "tpr@0.01"]].mean()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        disc = np.nanmean(boot.disc_advantage, axis=0)                            # (L, A)
        disc_lo = np.nanmean(2 * study.disc_lo - 1, axis=0)
        disc_hi = np.nanmean(2 * study.disc_hi - 1, axis=0)
    rows = []
    for law_index, law in enumerate(study.laws):
        for a, q in enumerate(study.attacked):
            best = SYNTHETIC_ATTACKS[strongest_attack[law_index, a]]
            row = {"law": law, "quantizer": q}
            if a == 0:
                row.update(r=np.nan, r_lo=np.nan, r_hi=np.nan, theory=np.nan)
            else:
                rq = r_law[law_index, 0, a - 1]
                row.update(r=rq, r_lo=r_lo[law_index, a - 1], r_hi=r_hi[law_index, a - 1],
                           theory=float(np.exp(-n * rq)))
            for p, name in enumerate(SYNTHETIC_ATTACKS):
                row[name] = attack_advantage[law_index, a, p]
            row.update(strongest=best, advantage=strongest_law[law_index, 0, a], advantage_lo=strongest_lo[law_index, a],
                       advantage_hi=strongest_hi[law_index, a], auc=roc.loc[(law, q, best), "auc"],
                       **{"tpr@0.01": roc.loc[(law, q, best), "tpr@0.01"]},
                       disc=disc[law_index, a], disc_lo=disc_lo[law_index, a], disc_hi=disc_hi[law_index, a])
            rows.append(row)
    return protocol.theory_gap(pd.DataFrame(rows))


def _law_frame(study: SyntheticStudy, boot: _Resampled, level: float) -> pd.DataFrame:
    """:attr:`SyntheticAnalysis.per_law`: ρ per law, means over seeds."""
    S, L = boot.rho.shape[:2]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        rho_law = np.nanmean(boot.rho, axis=0)                                    # (L, B)
    rho_lo, rho_hi = _interval(rho_law[:, 1:], level, axis=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        seed_sd = np.nanstd(boot.rho[..., 0], axis=0, ddof=1) if S > 1 else np.full(L, np.nan)
        rho_disc = np.nanmean(boot.rho_disc, axis=0)
    return pd.DataFrame({"law": study.laws, "rho": rho_law[:, 0], "rho_lo": rho_lo, "rho_hi": rho_hi,
                         "rho_seeds": [list(map(float, boot.rho[:, law, 0])) for law in range(L)],
                         "rho_seed_sd": seed_sd, "rho_disc": rho_disc})


def _pooled(study: SyntheticStudy, boot: _Resampled, cfg: protocol.AnalysisConfig) -> dict:
    """:attr:`SyntheticAnalysis.pooled`: over every seed × law (a cell)."""
    S, L, Q, K = study.r.shape
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        rho_pooled = np.nanmean(boot.rho.reshape(S * L, -1), axis=0)              # (B,)
    rho_lo, rho_hi = _interval(rho_pooled[1:], cfg.level)
    r_cells = boot.r[:, :, 0].reshape(S * L, Q)
    mean_rho = float(np.nanmean(boot.rho[..., 0]))
    mean_rho_disc = float(np.nanmean(boot.rho_disc)) if np.isfinite(boot.rho_disc).any() else float("nan")
    with skip_nested():
        p, crit, ranked = protocol.pooled_permutation_test(mean_rho, r_cells,
                                                           boot.strongest[:, :, 0, 1:].reshape(S * L, Q), cfg)
        p_disc, crit_disc, _ = protocol.pooled_permutation_test(mean_rho_disc, r_cells,
                                                                boot.disc_advantage[:, :, 1:].reshape(S * L, Q), cfg)
    identity_gap = (boot.strongest[..., :1] - boot.strongest[..., 1:]).mean(axis=(0, 1, 3))   # (B,)
    identity_lo, identity_hi = _interval(identity_gap[1:], cfg.level)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        vs_disc = np.nanmean(boot.strongest - boot.disc_advantage[:, :, None, :], axis=(0, 1, 3))   # (B,)
    vs_lo, vs_hi = _interval(vs_disc[1:], cfg.level)
    return {"rho": mean_rho, "rho_lo": float(rho_lo), "rho_hi": float(rho_hi), "p": p, "crit": crit,
            "cells": S * L, "quantizers": ranked, "rho_disc": mean_rho_disc, "p_disc": p_disc, "crit_disc": crit_disc,
            "identity_gap": float(identity_gap[0]), "identity_gap_lo": float(identity_lo),
            "identity_gap_hi": float(identity_hi), "vs_disc": float(vs_disc[0]), "vs_disc_lo": float(vs_lo),
            "vs_disc_hi": float(vs_hi), "seeds": S, "laws": L, "models": K, "n": int(study.config["n"])}


def analyse(study: SyntheticStudy, config: protocol.AnalysisConfig | None = None) -> SyntheticAnalysis:
    """Summaries, rank agreement and intervals of a study (module docstring), at the settings of ``config``
    (a :class:`.protocol.AnalysisConfig`; None: its defaults: ``analyse(study, AnalysisConfig(reps=50))``).
    The bootstrap (``reps`` resamples, percentile intervals at ``level``)
    resamples, within each seed and law, whole targets for the advantages (jointly over quantizers and
    attacks: a target's quantized models share it) and whole models for r_Q^n; each resample's ρ is computed
    as the estimate's. ``draws`` permutations for the p-value and the critical value at ``alpha``
    (:func:`.protocol.permutation_test`)."""
    if not isinstance(study, SyntheticStudy):
        raise TypeError(f"study must be the SyntheticStudy synthetic_attacks returns, got {type(study).__name__}")
    cfg = resolve_config(protocol.AnalysisConfig, config)
    S, L, Q, K = study.r.shape
    A, P = study.correct.shape[2:4]
    check_alloc("reps", S * L * (cfg.reps + 1) * (2 * K + 2 * A * P + 3 * Q), 8, value=cfg.reps,
                what="the bootstrap weights and resampled statistics")
    boot = _resample(study, cfg)
    return SyntheticAnalysis(_quantizer_frame(study, boot, cfg.level), _law_frame(study, boot, cfg.level),
                             _pooled(study, boot, cfg), cfg.as_dict())
