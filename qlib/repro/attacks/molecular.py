"""LiRA and the loss threshold on the molecular MLPs of paper 001 §5.2 (chapter ``attacks/03``): per task and
quantizer, the attacks' TPR at low FPR, per-molecule exposure, and whether quantization lowers the attacks where
r_Q^n says it should ({cite:p}`aubinais2025quantized`, {cite:p}`carlini2022lira`).

**Protocol** (:func:`molecular_attacks`, per binary TDC ADMET task of :mod:`qlib.molecules`; settings in the
frozen :class:`MolecularAttackConfig`). The task's molecules are embedded (:func:`qlib.molecules.embed_cached`);
a random ``val_frac`` of them (paper 001's 40 %) is the validation set on which r_Q^n is recorded, the rest the
**pool** (one molecule dropped when the count is odd). Features are z-scored with the pool's mean and standard
deviation. K MLPs of paper 001's molecular study (one hidden layer of 128 ReLU units, full-batch Adam for 500
epochs, logistic loss) train at once (:func:`qlib.attacks.shadow.train_shadows`) on complementary halves of
the pool (:func:`qlib.attacks.shadow.paired_keep`: every model on half the pool, every molecule in K/2
models), recording r_Q^n of every quantizer along training (:class:`qlib.recorder.RQRecorder`, Algorithm 1,
per-tensor scope as the molecular study). After training every model is quantized by every quantizer and by
the identity (the unquantized model). The attacks are those of :mod:`.protocol` (the global loss threshold,
LiRA offline and online), each target attacked with the other half of the models as its K/2 shadows; a
target's members are its training molecules, its non-members the rest of the pool.

**Metrics** (:func:`analyse`). TPR at 1 % and 0.1 % FPR read off the ROC curve of all pairs of all targets
(the threshold chosen on the pairs it is measured on, as LiRA reports it), AUC, and the held-out advantage of
:func:`.protocol.held_out_correct` (thresholds fitted on one fold of targets). Intervals: a percentile bootstrap
that resamples whole targets (their pairs share the model), jointly over the attacked models and attacks (so a
difference between the unquantized and a quantized model is resampled paired) and over r_Q^n (a target is
also one of the models whose r_Q^n is averaged). The **strongest attack** of an attacked model is the one with
the largest TPR at 1 % FPR (the maximum over the four, in every resample: the same selection for every
quantizer, which biases every TPR up alike).

**Per-molecule exposure.** For an attacked model and its strongest attack: the threshold of that attack's
ROC point at 1 % FPR (all pairs), and for each molecule the fraction of the targets that trained on it in
which its score reaches the threshold — the molecule's own TPR at the attack's 1 % FPR operating point.

**The questions.** Does quantization lower TPR at low FPR (the data-processing inequality bounds only the best
attack)? Does r_Q^n rank the quantizers as the strongest attack's TPR at 1 % FPR does (a larger r_Q^n, a
weaker attack: Theorem 3.3 of paper 001, Δ_n ≈ e^{−n r_Q^n})? Spearman ρ over quantizers per task and pooled
over tasks with the permutation test of :func:`.protocol.permutation_test`. The statistics are those of
:mod:`.protocol`, which the synthetic study (chapter 02) shares.

Decisions where paper 001 is silent or that are ours: binary tasks only (LiRA's statistic is the
logit-scaled confidence of a classifier), one embedder per run (default MACCS keys, an offline stand-in for
the paper's four pretrained embedders), the learning rate 1e-3 (the molecular chapter's choice), the pool and
its halves (a model trains on 30 % of the task, the paper's runs on 90 % of its 60 % training part), the K
models and the four attacks, the strongest attack as above, and a quantizer whose r_Q^n is NaN for every
model left out of that task's ρ.
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

from qlib import engine, engine_models, molecules, quantizers, recorder
from qlib.attacks import metrics, shadow
from qlib.data import MissingDataError
from qlib.devices import resolve
from qlib.resume import check_units, fingerprint
from qlib.rqn import RQUndefinedWarning
from qlib.validation import (
    check_alloc,
    check_array,
    check_callable,
    check_float,
    check_int,
    check_probability,
    check_seed,
    check_str,
    resolve_config,
    skip_nested,
)

from . import protocol
from .paper import LIRA_SHADOWS, MOLECULAR_SETTINGS
from .protocol import REFERENCE

__all__ = ["MOLECULAR_TASKS", "LOW_FPR", "MolecularAttackConfig", "TaskAttacks", "MolecularAttackStudy",
           "molecular_attacks", "weighted_tpr", "exposure", "MolecularAnalysis", "analyse"]

#: the default tasks: three small binary tasks of paper 001's Figure 10 (280, 404 and 475 molecules)
MOLECULAR_TASKS = ("Carcinogens_Lagunin", "Skin_Reaction", "DILI")
#: the FPR levels at which TPR is read (the first is the one the questions use)
LOW_FPR = (0.01, 0.001)


@dataclass(frozen=True)
class MolecularAttackConfig:
    """The settings of :func:`molecular_attacks`, checked once when built; frozen.

    ``tasks`` binary TDC task names (:func:`qlib.molecules.task_names`); ``embedder`` a registered embedder
    name; ``models`` K (a multiple of 4, ≥ 8: each half of K/2 models is the other half's shadows);
    ``epochs``, ``lr``, ``hidden`` the MLP's training (paper 001 §5.2.1: 500 epochs, 128 hidden units;
    lr ours); ``val_frac`` the validation share for r_Q^n (paper: 0.4); ``max_molecules`` None or a seeded
    subsample of larger tasks; ``names`` the quantizers (default: every quantizer but the identity);
    ``seed`` the split, halves and initialisations."""

    tasks: tuple[str, ...] = MOLECULAR_TASKS
    embedder: str = "maccs"
    models: int = 32
    epochs: int = MOLECULAR_SETTINGS["epochs"]
    lr: float = 1e-3
    hidden: int = MOLECULAR_SETTINGS["hidden"]
    val_frac: float = MOLECULAR_SETTINGS["val_frac"]
    max_molecules: int | None = None
    names: tuple[str, ...] = protocol.default_quantizers()
    seed: int = 0

    def __post_init__(self):
        def put(name, value):
            object.__setattr__(self, name, value)

        if isinstance(self.tasks, str) or not hasattr(self.tasks, "__iter__"):
            raise TypeError(f"tasks must be a list of task names, got {type(self.tasks).__name__}")
        tasks = tuple(self.tasks)
        allowed = molecules.task_names("classification")
        if not tasks:
            raise ValueError("tasks must name at least one task")
        for t in tasks:
            if t not in allowed:
                raise ValueError(f"tasks must be binary TDC tasks (LiRA scores a classifier), one of "
                                 f"{', '.join(allowed)}; got {t!r}")
        if len(set(tasks)) != len(tasks):
            raise ValueError(f"tasks must be distinct, got {list(tasks)}")
        put("tasks", tasks)
        emb = check_str("embedder", self.embedder)
        if emb not in molecules.embedder_names():
            raise ValueError(f"embedder must be a registered embedder, one of {', '.join(molecules.embedder_names())}; "
                             f"got {emb!r}")
        for nm, lo in (("models", 8), ("epochs", 1), ("hidden", 1)):
            put(nm, check_int(nm, getattr(self, nm), low=lo))
        if self.models % 4:
            raise ValueError(f"models must be a multiple of 4 (two halves of complementary pairs), got {self.models}")
        put("lr", check_float("lr", self.lr, low=0.0, low_open=True))
        put("val_frac", check_float("val_frac", self.val_frac, low=0.0, high=1.0, low_open=True, high_open=True))
        if self.max_molecules is not None:
            put("max_molecules", check_int("max_molecules", self.max_molecules, low=16))
        names = tuple(quantizers.check_names(self.names, "names"))
        if REFERENCE in names:
            raise ValueError("names must list quantizers only; the identity model is always attacked beside them")
        if len(set(names)) != len(names) or not names:
            raise ValueError(f"names must be distinct and non-empty, got {list(names)}")
        put("names", names)
        put("seed", check_seed("seed", self.seed))

    def as_dict(self) -> dict:
        """The fields as plain JSON types."""
        d = asdict(self)
        d["tasks"], d["names"] = list(self.tasks), list(self.names)
        return d

    def describe(self) -> str:
        """Markdown table of the settings beside paper 001's molecular study (§5.2.1) and the LiRA paper's
        shadow count, for the chapter."""
        paper = {"epochs": MOLECULAR_SETTINGS["epochs"], "hidden": MOLECULAR_SETTINGS["hidden"],
                 "val_frac": MOLECULAR_SETTINGS["val_frac"], "models": f"{LIRA_SHADOWS} shadows (LiRA paper)",
                 "embedder": "GraphMVP, 3D-Infomax, MolR, ChemBERTa-MTR", "tasks": "21 TDC ADMET tasks",
                 "lr": "not stated"}
        out = ["| setting | this run | paper |", "|---|---|---|"]
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name in ("names", "tasks"):
                shown = ", ".join(map(str, v))
            else:
                shown = f"{v:g}" if isinstance(v, float) else str(v)
            p = paper.get(f.name)
            out.append(f"| `{f.name}` | {shown} | {'—' if p is None else p} |")
        return "\n".join(out)

    def run_text(self) -> str:
        """What this run trains, and on which embedding (:func:`.protocol.reductions_text`)."""
        return (f"This run trains {self.models} MLPs per task ({len(self.tasks)} task(s)) for {self.epochs} epochs. "
                f"The embedding is `{self.embedder}`, an offline stand-in for the paper's four pretrained embedders "
                "(GraphMVP, 3D-Infomax, MolR, ChemBERTa-MTR), whose weights cannot be obtained offline.")

    def paper_text(self) -> str:
        """Paper 001's epochs (§5.2.1) where this run trains fewer; empty otherwise."""
        if self.epochs < MOLECULAR_SETTINGS["epochs"]:
            return f"Paper 001 trains {MOLECULAR_SETTINGS['epochs']} epochs."
        return ""


@dataclass
class TaskAttacks:
    """One task of :func:`molecular_attacks`. Axes: A = 1 + Q attacked models (the identity, then the
    quantizers), P attacks (:data:`.protocol.ATTACKS`), K models (targets), N pool molecules.

    ``smiles`` (N,) and ``y`` (N,) the pool; ``keep`` (K, N) which molecules each model trained on; ``r``
    (Q, K) r_Q^n per model (NaN: undefined); ``scores`` (A, P, K, N) every attack's member scores, made
    finite (:func:`.protocol.finite_scores`); ``correct`` (A, P, K) held-out correct predictions per target;
    ``n_val`` validation molecules; ``d`` the embedding's dimension; ``n_invalid`` SMILES RDKit rejected;
    ``seconds`` training (with r_Q^n) and attacks."""

    task: str
    smiles: list
    y: np.ndarray
    keep: np.ndarray
    r: np.ndarray
    scores: np.ndarray
    correct: np.ndarray
    n_val: int
    d: int
    n_invalid: int
    seconds: dict

    @property
    def n(self) -> int:
        """Molecules each model trained on (half the pool)."""
        return int(self.keep.shape[1] // 2)


@dataclass
class MolecularAttackStudy:
    """:func:`molecular_attacks`'s output: ``config`` (as a dict), ``names`` the quantizers, ``tasks`` one
    :class:`TaskAttacks` per task that ran, ``missing`` task → why it did not (its file absent offline),
    ``table`` one row per task × attacked model × attack (held-out ``accuracy`` and ``advantage``, ``auc``,
    ``tpr@0.001``, ``tpr@0.01`` of all pairs)."""

    config: dict
    names: list
    tasks: list
    missing: dict
    table: pd.DataFrame

    @property
    def attacked(self) -> list:
        """The attacked models: the identity, then the quantizers."""
        return [REFERENCE, *self.names]


def _split(n: int, val_frac: float, seed: int):
    rng = np.random.default_rng(seed)
    perm = rng.permutation(n)
    n_val = max(2, int(round(val_frac * n)))
    pool = perm[n_val:]
    if pool.size % 2:
        pool = pool[:-1]
    if pool.size < 4:
        raise ValueError(f"val_frac={val_frac} leaves a pool of {pool.size} of {n} molecules; need at least 4")
    return np.sort(perm[:n_val]), np.sort(pool)


def molecular_attacks(config: MolecularAttackConfig | None = None, *, data_dir=None, cache_dir=None, device="auto",
                      progress=None, units=None) -> MolecularAttackStudy:
    """Every attack on every quantized (and the unquantized) molecular MLP of every task (module docstring),
    at the settings of ``config`` (a :class:`MolecularAttackConfig`; None: its defaults:
    ``molecular_attacks(MolecularAttackConfig(models=8))``). ``data_dir`` the TDC files
    (:func:`qlib.molecules.load_task`: a task absent offline is listed in ``missing``), ``cache_dir`` the
    embedding cache, ``device`` where the models train (the attacks run on the CPU), ``progress`` an optional
    callable ``progress(task, TaskAttacks)``. ``units`` (a :class:`qlib.resume.Units`): each task is a unit,
    keyed by the settings and a fingerprint of its embeddings and labels, saved when done and reused by a
    rerun (each task is seeded by its own index alone, so a resumed study equals an uninterrupted one)."""
    cfg = resolve_config(MolecularAttackConfig, config)
    if progress is not None:
        check_callable("progress", progress)
    check_units("units", units)
    names, attacked = list(cfg.names), [REFERENCE, *cfg.names]
    A, P, K = len(attacked), len(protocol.ATTACKS), cfg.models
    half = protocol.halves(K)
    out, missing, rows = [], {}, []
    with skip_nested():
        for task_index, name in enumerate(cfg.tasks):
            try:
                task = molecules.load_task(name, data_dir=data_dir)
            except MissingDataError as exc:
                missing[name] = f"{molecules.task_info(name).filename} is not in the offline data directory ({exc.__class__.__name__})"
                continue
            task_seed = cfg.seed * 1_000_003 + task_index          # the task's own seed: split, halves, init
            smiles, labels, key = list(task.smiles), task.y, name
            if cfg.max_molecules is not None and len(smiles) > cfg.max_molecules:
                pick = np.sort(np.random.default_rng(task_seed).choice(len(smiles), cfg.max_molecules, replace=False))
                smiles, labels, key = [smiles[i] for i in pick], labels[pick], f"{name}~{cfg.max_molecules}~{cfg.seed}"
            emb, _ = molecules.embed_cached(key, smiles, cfg.embedder, cache_dir=cache_dir)
            X = emb.X.astype(np.float32)
            y = labels[emb.valid]

            def one_task(name=name, X=X, y=y, emb=emb, smiles=smiles, task_seed=task_seed):
                """One task: train the shadows with r_Q^n recorded, quantize, attack."""
                task_rows = []
                smiles = [s for s, v in zip(smiles, emb.valid) if v]
                val, pool = _split(X.shape[0], cfg.val_frac, task_seed)
                N = pool.size
                check_alloc("models", A * (P + 2) * K * N, 8, value=K, what="every attacked model's attack scores on the "
                            "pool (attacked models × attacks × models × pool)")
                mu, sd = X[pool].mean(0), X[pool].std(0)
                Xs = (X - mu) / np.where(sd > 0, sd, 1.0)
                Xp, yp = torch.from_numpy(Xs[pool]), torch.from_numpy(y[pool].astype(np.float32))
                Xv, yv = torch.from_numpy(Xs[val]), torch.from_numpy(y[val].astype(np.float32))
                model = engine_models.MLP(X.shape[1], cfg.hidden)
                keep = shadow.paired_keep(K, N, seed=task_seed)
                t0 = time.perf_counter()
                rec = recorder.RQRecorder(model, names, Xv.expand(K, -1, -1).contiguous(),
                                          yv.expand(K, -1).contiguous(),
                                          recorder.RecorderConfig(epochs=cfg.epochs, loss="logistic", scope="tensor",
                                                                  device=device))
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RQUndefinedWarning)   # NaN r_Q^n: left out, counted in the tables
                    train_cfg = engine.TrainConfig(epochs=cfg.epochs, lr=cfg.lr, loss="logistic")
                    theta = shadow.train_shadows(model, Xp, yp, keep, dataclasses.replace(train_cfg, device=device),
                                                 seed=task_seed, callbacks=[rec]).cpu()
                    rec.finish()
                r = np.asarray(rec.r, dtype=float).copy()
                thq = quantizers.quantize_many(attacked, theta, split=engine_models.param_sizes(model))   # (A, K, p)
                t1 = time.perf_counter()
                scores = np.empty((A, P, K, N))
                correct = np.empty((A, P, K), dtype=np.int64)
                for a in range(A):
                    phi = shadow.binary_scores(model, thq[a], Xp, yp)
                    sc = protocol.attack_scores(phi, keep, half)
                    for p in range(P):
                        s = protocol.finite_scores(sc[p])
                        scores[a, p] = s
                        correct[a, p] = protocol.held_out_correct(s, keep)
                        m = metrics.evaluate(s.ravel(), keep.ravel()).values
                        acc = correct[a, p].sum() / (K * N)
                        task_rows.append({"task": name, "quantizer": attacked[a], "attack": protocol.ATTACKS[p],
                                          "accuracy": acc, "advantage": 2 * acc - 1, "auc": m["auc"],
                                          "tpr@0.001": m["tpr@0.001"], "tpr@0.01": m["tpr@0.01"]})
                seconds = {"train_and_r_q": t1 - t0, "attacks": time.perf_counter() - t1}
                ta = TaskAttacks(name, [smiles[i] for i in pool], y[pool].astype(float), keep, r, scores, correct,
                                 int(val.size), int(X.shape[1]), int(emb.n_invalid), seconds)
                return ta, task_rows

            if units is None:
                ta, task_rows = one_task()
            else:
                ta, task_rows = units.run("molecular_attacks_task", {
                    "config": cfg.as_dict(), "task": name, "data": fingerprint(X, y, smiles), "n_invalid": int(emb.n_invalid),
                    "device": resolve(device).type}, one_task)
            rows += task_rows
            out.append(ta)
            if progress is not None:
                progress(name, ta)
    return MolecularAttackStudy(cfg.as_dict(), names, out, missing, pd.DataFrame(rows))


def weighted_tpr(scores, members, weights, levels=LOW_FPR) -> np.ndarray:
    """(B, L): for each row of ``weights`` (B, K) ≥ 0 — a bootstrap resample's count of each target — the
    TPR at FPR ≤ each of ``levels`` of the ROC of all pairs, a target's pairs weighted by its count.
    ``scores`` (K, N) finite, ``members`` (K, N) boolean. With integer weights it equals
    :func:`qlib.attacks.metrics.tpr_at_fpr` of the pairs repeated that many times (one sort, shared by every
    resample); with unit weights, of the pairs themselves."""
    s = check_array("scores", scores, ndim=2)
    m = np.asarray(members)
    if m.dtype.kind != "b" or m.shape != s.shape:
        raise ValueError(f"members must be a boolean array of scores' shape {s.shape}, got {m.dtype} {m.shape}")
    w = check_array("weights", weights, ndim=2)
    if w.shape[1] != s.shape[0]:
        raise ValueError(f"weights must have one column per target (row of scores, {s.shape[0]}), got {w.shape}")
    if (w < 0).any():
        raise ValueError("weights must be non-negative")
    levels = [check_probability("levels", v) for v in np.atleast_1d(np.asarray(levels, dtype=object))]
    if not levels:
        raise ValueError("levels must hold at least one FPR level in [0, 1]")
    K, N = s.shape
    check_alloc("weights", 3 * w.shape[0] * K * N, 8, value=w.shape, what="the weighted ROC of every resample")
    flat, mem = s.ravel(), m.ravel()
    order = np.argsort(-flat, kind="stable")
    ss, ms, tg = flat[order], mem[order], np.repeat(np.arange(K), N)[order]
    idx = np.r_[np.flatnonzero(np.diff(ss)), ss.size - 1]           # the last pair of each tie group
    wp = w[:, tg]                                                    # (B, KN)
    tp = np.cumsum(wp * ms, axis=1)[:, idx]
    fp = np.cumsum(wp * ~ms, axis=1)[:, idx]
    P_, N_ = tp[:, -1:], fp[:, -1:]
    if (P_ <= 0).any() or (N_ <= 0).any():
        raise ValueError("weights: a resample holds no member or no non-member pair")
    tpr, fpr = tp / P_, fp / N_
    out = np.empty((w.shape[0], len(levels)))
    for j, lv in enumerate(levels):
        out[:, j] = np.max(np.where(fpr <= lv + 1e-15, tpr, 0.0), axis=1)
    return out


def exposure(scores, members, level: float = LOW_FPR[0]) -> np.ndarray:
    """(N,) each example's own TPR at the attack's ``level``-FPR operating point: the threshold of the ROC
    point of all pairs with the largest TPR at FPR ≤ ``level`` (:func:`qlib.attacks.metrics.roc_curve`), and
    per example (column) the fraction of the targets that trained on it (``members`` True) whose score
    reaches it. ``scores`` (K, N) finite, ``members`` (K, N) boolean, every column with a member."""
    s = check_array("scores", scores, ndim=2)
    m = np.asarray(members)
    if m.dtype.kind != "b" or m.shape != s.shape:
        raise ValueError(f"members must be a boolean array of scores' shape {s.shape}, got {m.dtype} {m.shape}")
    level = check_probability("level", level)
    if not m.any(axis=0).all():
        raise ValueError("members: every example (column) must be a member of at least one target")
    fpr, tpr, thr = metrics.roc_curve(s.ravel(), m.ravel())
    ok = fpr <= level + 1e-15
    tau = thr[ok][np.argmax(tpr[ok])]
    return ((s >= tau) & m).sum(axis=0) / m.sum(axis=0)


@dataclass
class MolecularAnalysis:
    """:func:`analyse`'s output. ``per_quantizer``: one row per task × attacked model (the identity first):
    r_Q^n (mean over models) with its interval, the theory's order e^{−n r_Q^n}, the strongest attack (largest
    TPR at 1 % FPR), its TPR at 1 % and 0.1 % FPR with intervals and AUC, the largest held-out advantage
    over the attacks with its interval, the drop of TPR at 1 % FPR from the unquantized model (``drop``, paired
    interval), and the gap e^{−n r_Q^n} − advantage (:func:`.protocol.theory_gap`). ``per_task``: per task,
    the pool and training sizes, ρ with its interval, the mean drop over quantizers with its interval and the
    number of quantizers whose drop interval is above 0. ``pooled``: the mean ρ over tasks, its interval,
    permutation p-value and critical value. ``exposure``: task → (A, N) per-molecule TPR at each attacked
    model's strongest attack's 1 % FPR operating point (:func:`exposure`). ``settings``: the
    :class:`.protocol.AnalysisConfig` as a dict (reps, level, draws, alpha, seed)."""

    per_quantizer: pd.DataFrame
    per_task: pd.DataFrame
    pooled: dict
    exposure: dict
    settings: dict


#: the percentile bootstrap interval of :mod:`.protocol` (an undefined resampled ρ is NaN, left out)
_interval = functools.partial(protocol.percentile_interval, allow_nonfinite=True)


@dataclass(frozen=True)
class _TaskResampled:
    """One task's statistics in the data (index 0 of axis B) and in each bootstrap resample of whole
    targets (1 … reps). Axes: A attacked models (the identity, then the quantizers), B, Q quantizers.

    ``strongest`` (A, B) the index in :data:`.protocol.ATTACKS` of the attack with the largest TPR at 1 % FPR;
    ``tpr`` and ``tpr_low`` (A, B) that attack's TPR at 1 % and at 0.1 % FPR (:data:`LOW_FPR`); ``advantage``
    (A, B) the largest held-out advantage over the attacks; ``r`` (B, Q) r_Q^n, the mean over the models;
    ``rho`` (B,) ρ of r_Q^n against ``tpr`` over the quantizers whose r_Q^n is defined in the data
    (``ranked`` of them)."""

    strongest: np.ndarray
    tpr: np.ndarray
    tpr_low: np.ndarray
    advantage: np.ndarray
    r: np.ndarray
    rho: np.ndarray
    ranked: int

    @property
    def drop(self) -> np.ndarray:
        """(Q, B): the unquantized model's TPR at 1 % FPR minus each quantized model's (paired)."""
        return self.tpr[:1] - self.tpr[1:]


def _resample_task(task: TaskAttacks, weights: np.ndarray) -> _TaskResampled:
    """The statistics of one task under ``weights`` (B, K) (:func:`.protocol.bootstrap_weights`): the targets'
    pairs weighted in the ROC, the held-out advantage and r_Q^n (a target is one of the models)."""
    A, P, K, N = task.scores.shape
    tpr = np.empty((A, P, weights.shape[0], len(LOW_FPR)))
    for a in range(A):
        for p in range(P):
            tpr[a, p] = weighted_tpr(task.scores[a, p], task.keep, weights)
    strongest = tpr[..., 0].argmax(axis=1)                                          # (A, B)
    tpr_strongest, tpr_low = (np.take_along_axis(tpr[..., j], strongest[:, None], axis=1)[:, 0] for j in (0, 1))
    advantage = protocol.resampled_advantage(task.correct, weights, pairs=N).max(axis=2).T   # (A, B)
    r = protocol.resampled_r(task.r, weights)                                          # (B, Q)
    defined = np.isfinite(r[0])
    rho = protocol.rank_rho_over(r, tpr_strongest[1:].T, defined)
    return _TaskResampled(strongest, tpr_strongest, tpr_low, advantage, r, rho, int(defined.sum()))


def _task_frames(study: MolecularAttackStudy, task: TaskAttacks, boot: _TaskResampled, level: float):
    """``(rows, summary)``: one task's rows of :attr:`MolecularAnalysis.per_quantizer` and its row of
    :attr:`MolecularAnalysis.per_task`."""
    A, P, K, N = task.scores.shape
    r_lo, r_hi = _interval(boot.r[1:], level)
    tpr_lo, tpr_hi = _interval(boot.tpr[:, 1:], level, axis=1)
    tpr_low_lo, tpr_low_hi = _interval(boot.tpr_low[:, 1:], level, axis=1)
    advantage_lo, advantage_hi = _interval(boot.advantage[:, 1:], level, axis=1)
    drop = boot.drop
    drop_lo, drop_hi = _interval(drop[:, 1:], level, axis=1)
    roc = study.table[study.table["task"] == task.task].set_index(["quantizer", "attack"])
    rows = []
    for a, q in enumerate(study.attacked):
        strongest = protocol.ATTACKS[boot.strongest[a, 0]]
        row = {"task": task.task, "quantizer": q, "strongest": strongest, "tpr@0.01": boot.tpr[a, 0],
               "tpr@0.01_lo": tpr_lo[a], "tpr@0.01_hi": tpr_hi[a], "tpr@0.001": boot.tpr_low[a, 0],
               "tpr@0.001_lo": tpr_low_lo[a], "tpr@0.001_hi": tpr_low_hi[a], "auc": float(roc.loc[(q, strongest), "auc"]),
               "advantage": boot.advantage[a, 0], "advantage_lo": advantage_lo[a], "advantage_hi": advantage_hi[a]}
        if a == 0:
            row.update(r=np.nan, r_lo=np.nan, r_hi=np.nan, theory=np.nan, drop=np.nan, drop_lo=np.nan,
                       drop_hi=np.nan)
        else:
            rq = boot.r[0, a - 1]
            row.update(r=rq, r_lo=r_lo[a - 1], r_hi=r_hi[a - 1], theory=float(np.exp(-task.n * rq)),
                       drop=drop[a - 1, 0], drop_lo=drop_lo[a - 1], drop_hi=drop_hi[a - 1])
        rows.append(row)
    mean_drop = drop.mean(axis=0)                                                   # (B,): over quantizers
    mean_drop_lo, mean_drop_hi = _interval(mean_drop[1:], level)
    rho_lo, rho_hi = _interval(boot.rho[1:], level)
    summary = {"task": task.task, "pool": N, "n": task.n, "n_val": task.n_val, "d": task.d, "models": K,
               "rho": float(boot.rho[0]), "rho_lo": float(rho_lo), "rho_hi": float(rho_hi),
               "quantizers_ranked": boot.ranked, "mean_drop": float(mean_drop[0]),
               "mean_drop_lo": float(mean_drop_lo), "mean_drop_hi": float(mean_drop_hi),
               "drops_above_0": int((drop_lo > 0).sum()), "quantizers": int(A - 1),
               "seconds": float(sum(task.seconds.values()))}
    return rows, summary


def _pooled(study: MolecularAttackStudy, per_task: pd.DataFrame, resampled: list, cfg: protocol.AnalysisConfig) -> dict:
    """:attr:`MolecularAnalysis.pooled`: over the tasks (one cell each)."""
    r_cells = np.array([boot.r[0] for boot in resampled])                             # (tasks, Q)
    tpr_cells = np.array([boot.tpr[1:, 0] for boot in resampled])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mean_rho = float(np.nanmean(per_task["rho"])) if np.isfinite(per_task["rho"]).any() else float("nan")
    with skip_nested():
        p, crit, ranked = protocol.pooled_permutation_test(mean_rho, r_cells, tpr_cells, cfg)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        rho_pooled = np.nanmean(np.array([boot.rho for boot in resampled]), axis=0)  # (B,): mean over tasks
    rho_lo, rho_hi = _interval(rho_pooled[1:], cfg.level)
    return {"rho": mean_rho, "rho_lo": float(rho_lo), "rho_hi": float(rho_hi), "p": p, "crit": crit,
            "tasks": len(per_task), "quantizers": ranked, "models": int(study.config["models"])}


def analyse(study: MolecularAttackStudy, config: protocol.AnalysisConfig | None = None) -> MolecularAnalysis:
    """Summaries, intervals and rank agreement of a study (module docstring), at the settings of ``config``
    (a :class:`.protocol.AnalysisConfig`; None: its defaults: ``analyse(study, AnalysisConfig(reps=50))``):
    ``reps`` bootstrap resamples of whole targets (percentile intervals at
    ``level``), ``draws`` permutations for the pooled ρ's test at ``alpha``."""
    if not isinstance(study, MolecularAttackStudy):
        raise TypeError(f"study must be the MolecularAttackStudy molecular_attacks returns, got {type(study).__name__}")
    cfg = resolve_config(protocol.AnalysisConfig, config)
    if not study.tasks:
        raise ValueError("study holds no task (every task's file was missing): nothing to analyse")
    rng = np.random.default_rng(cfg.seed)
    rows, task_rows, exposures, resampled = [], [], {}, []
    for task in study.tasks:
        A, P, K, N = task.scores.shape
        check_alloc("reps", 3 * (cfg.reps + 1) * K * N, 8, value=cfg.reps, what="the bootstrap's weighted ROC curves")
        boot = _resample_task(task, protocol.bootstrap_weights(rng, K, cfg.reps))
        exposures[task.task] = np.stack([exposure(task.scores[a, boot.strongest[a, 0]], task.keep) for a in range(A)])
        task_quantizer_rows, summary = _task_frames(study, task, boot, cfg.level)
        rows += task_quantizer_rows
        task_rows.append(summary)
        resampled.append(boot)
    per_task = pd.DataFrame(task_rows)
    return MolecularAnalysis(protocol.theory_gap(pd.DataFrame(rows)), per_task, _pooled(study, per_task, resampled, cfg),
                             exposures, cfg.as_dict())
