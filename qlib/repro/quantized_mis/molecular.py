"""Molecular study of paper 001 (§5.2, App. F): Figures 3, 4, 9, 10 and Tables 3–5.

For each TDC ADMET task (:mod:`qlib.molecules`) and each embedder, a two-layer MLP (hidden 128) is
trained for 500 full-batch Adam epochs, 10 runs per task, each run on its own random 90 % subsample
of the training part; 40 % of the task is the validation set (§5.2.1). All runs of a (task,
embedder) train in one batched computation (:func:`qlib.engine.train`), and along each trajectory
:class:`~qlib.recorder.RQRecorder` records r_Q^n (Algorithm 1) of the paper's eight quantizers on
the validation set. The final model of each run is quantized with each quantizer and scored on the
validation set: AUROC (classification), R² and the Spearman correlation between predictions and
labels (regression), and the relative performance r = m_quantized / m_original (§5.2.1).

Choices the paper does not state, and ours:

* learning rate 1e-3 (Adam's default; the paper gives none), full batch, loss BCE / MSE;
* features z-scored with the mean and standard deviation of the task's training part (constant
  columns left at 0); regression labels likewise (R² and Spearman are unchanged by one affine map
  applied to labels and predictions);
* quantization per tensor (each weight matrix and bias vector with its own scale, as PTQ does);
* the relative performance of a cell of Tables 3–5 is the mean over embedders and runs of the
  per-run ratio (the paper's percentages are not the ratio of its averages: e.g. VDss 3 bits,
  −0.010 (6 %)), the value the mean of the per-run metric.

Our embedders are offline stand-ins (MiniMol and three RDKit featurisations) for the paper's four
(GraphMVP, 3D-Infomax, MolR, ChemBERTa-MTR), whose weights cannot be obtained offline. Hence the
absolute metrics of the unquantized model (the ``original`` column) depend on the embedder and are
not compared (``not_comparable``); the relative performance of each quantizer — the quantity the
paper's claims are about, and which App. F.2 finds embedder-independent — is compared cell by cell
(``paper-number``, tolerances in :data:`.molecular_claims.REL_ATOL`).

The paper's printed values and settings are typed once in :mod:`qlib.repro.quantized_mis.paper`
(:data:`~.paper.PAPER_TABLE3`, :data:`~.paper.PAPER_TABLE4`, :data:`~.paper.PAPER_TABLE5`,
:data:`~.paper.PAPER_SETTINGS`, :data:`~.paper.PAPER_ROW_NAMES`). This module is the driver (the
metrics, one task's batched training, :class:`MolecularConfig`, :func:`run_study`); chapter 05's
tables, claims (``<item>_rows``) and generated prose are :mod:`.molecular_claims`.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import time
import warnings
from dataclasses import asdict, dataclass, field, fields

import numpy as np
import pandas as pd
import torch
from scipy import stats

from qlib import molecules
from qlib.data import MissingDataError
from qlib.devices import cpu_pool, resolve

# The batched engine and the r_Q^n estimator: the ONLY imports of them in this module.
from qlib.engine import BACKENDS, TrainConfig, train
from qlib.engine_models import MLP, init_params, param_sizes
from qlib.quantizers import check_names, quantize_many
from qlib.recorder import RecorderConfig, RQRecorder
from qlib.resume import check_units, fingerprint
from qlib.rqn import RQUndefinedWarning
from qlib.validation import (
    check_alloc,
    check_array,
    check_bool,
    check_callable,
    check_choice,
    check_float,
    check_int,
    check_seed,
    nested,
    resolve_config,
)

from .paper import PAPER_QUANTIZERS, PAPER_SETTINGS

__all__ = [
    "QUANTIZERS", "TABLE_READING", "auroc", "r2", "spearman_to_labels", "split_indices", "TaskRun", "TaskConfig",
    "train_task", "flops_per_task", "MolecularConfig", "Study", "run_study",
]

#: the paper's eight quantizers (Tables 3–5 column order, without ``original``; :mod:`.paper`)
QUANTIZERS = PAPER_QUANTIZERS
#: the 1.58b quantizers as Table 1 typesets them (keep the x % smallest |θ|, zero the rest;
#: :data:`qlib.quantizers.TERNARY_TABLE`): scored on each run's final model beside the text reading
#: (Tables 3–5); recorded along the trajectory too (r_Q^n, Figures 3/4) only with
#: ``MolecularConfig(record_table_reading=True)``
TABLE_READING = ("ternary33_table", "ternary50_table", "ternary90_table")


# ---------------------------------------------------------------------------------------------
# Metrics (vectorised over leading axes)
# ---------------------------------------------------------------------------------------------
def _scores(name: str, s, allow_nonfinite) -> np.ndarray:
    """Scores/predictions (..., n): real, non-empty, at least one axis. The metrics' non-finite policy
    (:mod:`qlib.validation`): a NaN/inf entry raises a ``ValueError`` naming ``name`` unless
    ``allow_nonfinite`` — for a caller that scores models which may have diverged: the row it sits in
    then scores NaN (a failed model, recorded as such), so one such model does not stop a batch."""
    s = check_array(name, s, finite=False)
    if s.ndim < 1:
        raise ValueError(f"{name} must have shape (..., n) with n the number of labels, got a scalar")
    if not check_bool("allow_nonfinite", allow_nonfinite) and not nested() and not np.isfinite(s).all():
        raise ValueError(f"{name} must be finite (no NaN or inf); pass allow_nonfinite=True to score a diverged "
                         "model's row as NaN")
    return s


def _labels(y, n: int, scores: str = "scores") -> np.ndarray:
    y = check_array("y", y, ndim=1, finite=False)
    if y.shape != (n,):
        raise ValueError(f"y must have shape ({n},) matching the last axis of {scores}, got {y.shape}")
    if not np.isfinite(y).all():
        raise ValueError("y contains non-finite labels (NaN or inf); y must be finite")
    return y


def _finite_rows(s: np.ndarray, value: np.ndarray) -> np.ndarray:
    """``value`` where the score row (last axis of ``s``) is finite, NaN elsewhere."""
    return np.where(np.isfinite(s).all(axis=-1), value, np.nan)


def auroc(scores, y, *, allow_nonfinite: bool = False) -> np.ndarray:
    """Area under the ROC curve of ``scores`` (..., n) against binary labels ``y`` (n,), by the
    rank (Mann–Whitney) formula with average ranks for ties — the value of scikit-learn's
    ``roc_auc_score`` (tests check it). Leading axes are batch axes (one model per row). A non-finite
    score raises unless ``allow_nonfinite``: then its row is NaN (a diverged model), so one such model
    does not stop a batch. ``y`` must be finite, 0/1 and hold both classes (``ValueError`` naming ``y``)."""
    s = _scores("scores", scores, allow_nonfinite)
    y = _labels(y, s.shape[-1], "scores")
    if not np.isin(y, (0.0, 1.0)).all():
        raise ValueError(f"y must be binary (0/1) for AUROC, got values {np.unique(y)[:5]}")
    pos = y == 1
    n1, n0 = int(pos.sum()), int((~pos).sum())
    if n1 == 0 or n0 == 0:
        raise ValueError("y must contain both classes for AUROC")
    with np.errstate(invalid="ignore"):
        r = stats.rankdata(s, axis=-1)
    auc = (r[..., pos].sum(axis=-1) - n1 * (n1 + 1) / 2) / (n1 * n0)
    return _finite_rows(s, auc)


def r2(pred, y, *, allow_nonfinite: bool = False) -> np.ndarray:
    """Coefficient of determination 1 − Σ(y − ŷ)² / Σ(y − ȳ)² of ``pred`` (..., n) against finite
    labels ``y`` (n,), not constant. Leading axes are batch axes; a non-finite prediction raises unless
    ``allow_nonfinite`` (then its row is NaN: a diverged model)."""
    p = _scores("pred", pred, allow_nonfinite)
    y = _labels(y, p.shape[-1], "pred")
    sst = ((y - y.mean()) ** 2).sum()
    if sst == 0:
        raise ValueError("y is constant: R² is undefined")
    with np.errstate(invalid="ignore", over="ignore"):
        return _finite_rows(p, 1.0 - ((p - y) ** 2).sum(axis=-1) / sst)


def spearman_to_labels(pred, y, *, allow_nonfinite: bool = False) -> np.ndarray:
    """Spearman ρ between each row of ``pred`` (..., n) and finite labels ``y`` (n,); NaN for a
    constant row. A non-finite prediction raises unless ``allow_nonfinite`` (then its row is NaN: a
    diverged model). Leading axes are batch axes."""
    p = _scores("pred", pred, allow_nonfinite)
    y = _labels(y, p.shape[-1], "pred")
    with np.errstate(invalid="ignore"):
        rp = stats.rankdata(p, axis=-1)
    ry = stats.rankdata(y)
    rp = rp - rp.mean(axis=-1, keepdims=True)
    ry = ry - ry.mean()
    den = np.sqrt((rp * rp).sum(axis=-1) * (ry * ry).sum())
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = np.where(den > 0, (rp * ry).sum(axis=-1) / np.where(den > 0, den, 1.0), np.nan)
    return _finite_rows(p, rho)


# ---------------------------------------------------------------------------------------------
# One task × one embedder: all runs in one batched computation
# ---------------------------------------------------------------------------------------------
def split_indices(n: int, *, runs: int, val_frac: float = 0.4, subsample: float = 0.9, seed: int = 0):
    """(validation indices (n_val,), training indices per run (runs, m)): a random ``val_frac``
    of the task is the validation set; each run draws its own ``subsample`` of the rest."""
    n = check_int("n", n, low=5)
    runs = check_int("runs", runs, low=1)
    val_frac = check_float("val_frac", val_frac, low=0.0, high=1.0, low_open=True, high_open=True)
    subsample = check_float("subsample", subsample, low=0.0, high=1.0, low_open=True)
    check_alloc("n and runs", n * (runs + 2), 8, value=(n, runs), what="a permutation and every run's training indices")
    rng = np.random.default_rng(check_seed("seed", seed))
    perm = rng.permutation(n)
    n_val = max(2, int(round(val_frac * n)))
    if n - n_val < 2:
        raise ValueError(f"val_frac={val_frac} leaves {n - n_val} of n={n} points for training; need at least 2")
    val, rest = np.sort(perm[:n_val]), perm[n_val:]
    m = max(2, int(math.floor(subsample * rest.size)))
    tr = np.stack([np.sort(rng.choice(rest, size=m, replace=False)) for _ in range(runs)])
    return val, tr


@dataclass
class TaskRun:
    """Results of :func:`train_task`: r_Q^n ``r`` (Q, runs); per metric the original model's score
    ``original[metric]`` (runs,) and the quantized ones ``quantized[metric]`` (Q, runs);
    ``losses`` (epochs, Q, runs, n_val) when kept; ``seconds`` of training; ``also`` the names
    scored on the final model only (their metrics follow the recorded ones in ``quantized``), and
    ``initial[metric]`` (Q + len(also), runs) the same metrics of each quantizer applied to the
    untrained initial parameters (the "untrained network" null of the ledger)."""

    kind: str
    quantizers: tuple[str, ...]
    r: np.ndarray
    original: dict[str, np.ndarray]
    quantized: dict[str, np.ndarray]
    n_train: int
    n_val: int
    d: int
    seconds: float
    losses: torch.Tensor | None = None
    #: the recorder's incremental path: per quantizer the mean fraction of first-layer coordinates
    #: whose quantized value changed per epoch, and the validation-product FLOPs it performed against
    #: a full recomputation every epoch (``RQRecorder.change_stats``; empty / 0 on the torch path)
    changes: dict = field(default_factory=dict)
    flops_done: float = 0.0
    flops_full: float = 0.0
    also: tuple[str, ...] = ()
    initial: dict = field(default_factory=dict)


def _standardise(A: np.ndarray, ref: np.ndarray) -> np.ndarray:
    mu = ref.mean(axis=0)
    sd = ref.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    return (A - mu) / sd


@dataclass(frozen=True)
class TaskConfig:
    """The settings of :func:`train_task` (one task × one embedder), checked once when built; frozen.
    Defaults: the paper's (:data:`~.paper.PAPER_SETTINGS`, §5.2.1) and ours where it gives none.

    ``runs`` (>= 1) MLPs of width ``hidden`` (>= 1) trained for ``epochs`` (>= 1) of full-batch Adam at
    ``lr`` (> 0); ``val_frac`` of the task is the validation set and each run trains on its own
    ``subsample`` of the rest (:func:`split_indices`); ``seed``; ``device``; ``quantizers``: recorded
    along each trajectory and scored on the final model, ``also``: scored on the final (and initial)
    model only (names of :mod:`qlib.quantizers`, stored as tuples); ``keep_losses``: keep the recorder's
    loss matrices (needs ``record``); ``backend``: the recorder's (:class:`qlib.recorder.RQRecorder`):
    ``"auto"`` records incrementally on the CPU, ``"torch"`` recomputes every quantized model's
    validation losses every epoch.

    Options of the Table 3 investigation (:mod:`.table3_probe`; the defaults are the study's
    procedure, bit for bit): ``scope`` — ``"tensor"`` quantizes each weight matrix and bias on its own,
    ``"model"`` the whole parameter vector at once (one scale / quantile, :data:`qlib.quantizers.SCOPES`);
    ``standardise`` — z-score the features with the training part's statistics (False: raw
    embeddings); ``prob_auroc`` — also score the AUROC of the float32 sigmoid probabilities (metric
    ``"auroc_prob"``, classification only; saturated probabilities tie); ``record`` — False skips the
    r_Q^n recorder (``r`` is NaN; the final models are the same: the recorder only observes)."""

    runs: int = 10
    epochs: int = 500
    lr: float = 1e-3
    hidden: int = 128
    val_frac: float = 0.4
    subsample: float = 0.9
    seed: int = 0
    device: str = "cpu"
    quantizers: tuple[str, ...] = QUANTIZERS
    keep_losses: bool = False
    backend: str = "auto"
    also: tuple[str, ...] = TABLE_READING
    scope: str = "tensor"
    standardise: bool = True
    prob_auroc: bool = False
    record: bool = True

    def __post_init__(self):
        def put(name, value):
            object.__setattr__(self, name, value)

        put("runs", check_int("runs", self.runs, low=1))
        put("epochs", check_int("epochs", self.epochs, low=1))
        put("hidden", check_int("hidden", self.hidden, low=1))
        put("lr", check_float("lr", self.lr, low=0.0, low_open=True))
        put("val_frac", check_float("val_frac", self.val_frac, low=0.0, high=1.0, low_open=True, high_open=True))
        put("subsample", check_float("subsample", self.subsample, low=0.0, high=1.0, low_open=True))
        put("seed", check_seed("seed", self.seed))
        put("quantizers", tuple(check_names(self.quantizers, "quantizers")))
        put("also", tuple(check_names(self.also, "also")) if len(self.also) else ())
        put("keep_losses", bool(check_bool("keep_losses", self.keep_losses)))
        check_choice("backend", self.backend, BACKENDS)
        check_choice("scope", self.scope, ("tensor", "model"))
        for name in ("standardise", "prob_auroc", "record"):
            put(name, check_bool(name, getattr(self, name)))
        if self.keep_losses and not self.record:
            raise ValueError("keep_losses=True needs record=True (the recorder keeps the losses)")
        if not (self.device is None or isinstance(self.device, (str, torch.device))):
            raise TypeError(f"device must be 'auto' (or None), 'cpu', 'cuda', 'cuda:N' or a torch.device, got {self.device!r}")


def train_task(X, y, kind: str, config: TaskConfig | None = None) -> TaskRun:
    """Train ``runs`` MLPs (one batched computation) on embeddings ``X`` (n, d) and labels ``y``;
    record r_Q^n of each quantizer along each trajectory and score each quantized final model.
    ``kind``: ``"classification"`` (0/1 labels, AUROC) or ``"regression"`` (R², Spearman).
    ``config``: the settings (:class:`TaskConfig`; None: its defaults):
    ``train_task(X, y, "classification", TaskConfig(runs=10, epochs=500))``."""
    cfg = resolve_config(TaskConfig, config)
    runs, epochs, lr, hidden, seed, device = cfg.runs, cfg.epochs, cfg.lr, cfg.hidden, cfg.seed, cfg.device
    quantizers, also, keep_losses, backend, scope = cfg.quantizers, cfg.also, cfg.keep_losses, cfg.backend, cfg.scope
    standardise, prob_auroc, record = cfg.standardise, cfg.prob_auroc, cfg.record
    X = check_array("X", X, ndim=2).astype(np.float32)
    y = check_array("y", y, ndim=1)
    if y.shape != (X.shape[0],):
        raise ValueError(f"y must have shape ({X.shape[0]},) (one label per row of X), got {y.shape}")
    check_choice("kind", kind, ("classification", "regression"))
    if kind == "classification" and not np.isin(y, (0.0, 1.0)).all():
        raise ValueError(f"y must be 0/1 labels for a classification task, got values {np.unique(y)[:5]}")
    val, tr = split_indices(X.shape[0], runs=runs, val_frac=cfg.val_frac, subsample=cfg.subsample, seed=seed)
    train_part = np.setdiff1d(np.arange(X.shape[0]), val)
    Xs = _standardise(X, X[train_part]).astype(np.float32) if standardise else X
    ys = y.copy()
    if kind == "regression":
        ys = (y - y[train_part].mean()) / max(y[train_part].std(), 1e-12)
    loss = "logistic" if kind == "classification" else "mse"
    model = MLP(X.shape[1], hidden)
    check_alloc("hidden", runs * model.n_params * 8 + runs * X.shape[0] * hidden * 3, 4, value=hidden,
                what="the runs' parameters (with Adam's moments and the recorder's copies) and hidden activations")
    Xt = torch.from_numpy(Xs)
    yt = torch.from_numpy(ys.astype(np.float32))
    vi = torch.from_numpy(val)
    X_val = Xt[vi].unsqueeze(0).expand(runs, -1, -1)
    y_val = yt[vi].unsqueeze(0).expand(runs, -1)
    rec = RQRecorder(model, list(quantizers), X_val, y_val,
                     RecorderConfig(epochs=epochs, loss=loss, scope=scope, keep_losses=keep_losses, device=device,
                                    backend=backend)) if record else None
    theta0 = init_params(model, runs, seed)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RQUndefinedWarning)
        # the runs' subsamples are rows of one training part: one product over it per epoch
        res = train(model, theta0, Xt[None], yt[None], TrainConfig(epochs=epochs, lr=lr, loss=loss, device=device),
                    rows=torch.from_numpy(tr), callbacks=[rec] if record else [])
        if record:
            rec.finish()
    seconds = time.perf_counter() - t0
    scored = list(quantizers) + list(also)
    split = param_sizes(model) if scope == "tensor" else None
    with torch.no_grad():
        thq = quantize_many(scored, res.theta, split=split)                     # (Q', R, p), per tensor
        xv = Xt[vi].unsqueeze(0).expand(runs, -1, -1)
        out_q = model.forward(thq, xv, allow_nonfinite=True).numpy()  # (Q', R, n_val)
        out_o = model.forward(res.theta, xv, allow_nonfinite=True).numpy()  # (R, n_val)
        th0q = quantize_many(scored, theta0, split=split)
        out_0 = model.forward(th0q, xv, allow_nonfinite=True).numpy()
    yv = ys[val]
    if kind == "classification":
        fns = {"auroc": auroc}
        if prob_auroc:
            fns["auroc_prob"] = lambda s, y_, **kw: auroc(torch.sigmoid(torch.from_numpy(s).float()).numpy(), y_, **kw)
    else:
        fns = {"r2": r2, "spearman": spearman_to_labels}
    # a diverged run (non-finite outputs) scores NaN and is recorded as such (the metrics' allow_nonfinite)
    original = {k: f(out_o, yv, allow_nonfinite=True) for k, f in fns.items()}
    quantized = {k: f(out_q, yv, allow_nonfinite=True) for k, f in fns.items()}
    initial = {k: f(out_0, yv, allow_nonfinite=True) for k, f in fns.items()}
    r = rec.r.copy() if record else np.full((len(quantizers), runs), np.nan)
    stats_ = rec.change_stats() if record else ({}, 0.0, 0.0)
    return TaskRun(kind, tuple(quantizers), r, original, quantized, int(tr.shape[1]), int(val.size),
                   int(X.shape[1]), seconds, rec.losses if keep_losses else None, *stats_, also, initial)


def flops_per_task(n: int, d: int, *, runs: int, epochs: int, hidden: int = 128, val_frac: float = 0.4,
                   subsample: float = 0.9, n_quantizers: int = len(QUANTIZERS)) -> float:
    """Multiply–add FLOPs (2 per MAC) of :func:`train_task`'s matrix products: the forward pass and the
    weights' gradient (2 products: the embeddings need no gradient) on each run's training subsample,
    and the forward pass of every quantized model on the validation set each epoch (r_Q^n recording)."""
    n = check_int("n", n, low=5)
    d = check_int("d", d, low=1)
    runs = check_int("runs", runs, low=1)
    epochs = check_int("epochs", epochs, low=1)
    hidden = check_int("hidden", hidden, low=1)
    val_frac = check_float("val_frac", val_frac, low=0.0, high=1.0, low_open=True, high_open=True)
    subsample = check_float("subsample", subsample, low=0.0, high=1.0, low_open=True)
    n_quantizers = check_int("n_quantizers", n_quantizers, low=1)
    n_val = max(2, int(round(val_frac * n)))
    m = int(math.floor(subsample * (n - n_val)))
    per_sample = 2 * (d * hidden + hidden)
    return float(epochs * runs * (2 * m * per_sample + n_quantizers * n_val * per_sample))


# ---------------------------------------------------------------------------------------------
# The study: tasks × embedders
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class MolecularConfig:
    """The settings of one molecular study (paper 001 §5.2), checked once when built; frozen,
    hashable and keyed (:meth:`key`). Defaults: the paper's (:data:`~.paper.PAPER_SETTINGS`), on the
    four offline embedders.

    ``tasks``: PyTDC task names (``"all"``: the 21 of Tables 3–4, :func:`qlib.molecules.task_names`),
    stored by their canonical names; ``embedders``: names registered in :mod:`qlib.molecules`;
    ``runs`` per task and ``epochs`` of full-batch Adam at ``lr`` (the paper gives none; ours 1e-3)
    of an MLP of width ``hidden``; ``val_frac`` of each task is the validation set and each run trains
    on its own ``subsample`` of the rest; ``max_molecules`` (None: all) subsamples larger tasks
    (seeded); ``keep_losses_for``: tasks whose loss matrices are kept (first embedder) for Figure 10;
    ``seed``; ``record_table_reading``: also record r_Q^n of the Table 1 reading of 1.58b x %
    (:data:`TABLE_READING`) along every trajectory, for Figures 3/4 under both readings (off by
    default: it adds about 15 % to the training time, measured at 10 runs × 500 epochs; its final
    models are scored either way)."""

    tasks: tuple[str, ...] | str = "all"
    embedders: tuple[str, ...] = ("minimol", "morgan", "rdkit2d", "maccs")
    runs: int = PAPER_SETTINGS["runs"]
    epochs: int = PAPER_SETTINGS["epochs"]
    lr: float = 1e-3
    hidden: int = PAPER_SETTINGS["hidden"]
    val_frac: float = PAPER_SETTINGS["val_frac"]
    subsample: float = PAPER_SETTINGS["subsample"]
    max_molecules: int | None = None
    keep_losses_for: tuple[str, ...] = ()
    seed: int = 0
    record_table_reading: bool = False

    def __post_init__(self):
        def put(name, value):
            object.__setattr__(self, name, value)

        tasks = molecules.task_names() if isinstance(self.tasks, str) and self.tasks == "all" else self.tasks
        if isinstance(tasks, str):
            tasks = [tasks]
        embedders = [self.embedders] if isinstance(self.embedders, str) else self.embedders
        for nm, v in (("tasks", tasks), ("embedders", embedders)):
            if not isinstance(v, (list, tuple)):
                raise TypeError(f"{nm} must be a list of names, got {type(v).__name__}")
        put("tasks", tuple(molecules.task_info(t).name for t in tasks))
        put("embedders", tuple(molecules.embedder(e).name for e in embedders))
        if not self.tasks or not self.embedders:
            raise ValueError("tasks and embedders must each name at least one")
        put("runs", check_int("runs", self.runs, low=2))
        put("epochs", check_int("epochs", self.epochs, low=1))
        put("lr", check_float("lr", self.lr, low=0.0, low_open=True))
        put("hidden", check_int("hidden", self.hidden, low=1))
        put("val_frac", check_float("val_frac", self.val_frac, low=0.0, high=1.0, low_open=True, high_open=True))
        put("subsample", check_float("subsample", self.subsample, low=0.0, high=1.0, low_open=True))
        put("max_molecules", check_int("max_molecules", self.max_molecules, low=10, allow_none=True))
        put("seed", check_seed("seed", self.seed))
        keep = [self.keep_losses_for] if isinstance(self.keep_losses_for, str) else self.keep_losses_for
        if not isinstance(keep, (list, tuple)):
            raise TypeError(f"keep_losses_for must be a list of task names, got {type(keep).__name__}")
        unknown = [t for t in keep if not isinstance(t, str) or t not in molecules.TASKS]
        if unknown:
            raise ValueError(f"keep_losses_for must name TDC ADMET tasks (qlib.molecules.TASKS); got {unknown}")
        put("keep_losses_for", tuple(keep))
        put("record_table_reading", check_bool("record_table_reading", self.record_table_reading))

    def as_dict(self) -> dict:
        """The fields as plain JSON types (tuples as lists): a :class:`Study`'s ``config``."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}

    def key(self) -> str:
        """SHA-256 (16 hex digits) of the fields: the same settings give the same key in every process."""
        return hashlib.sha256(json.dumps(self.as_dict(), sort_keys=True).encode()).hexdigest()[:16]

    def describe(self) -> str:
        """Markdown table of the settings beside the paper's (§5.2.1), for the chapter."""
        P = PAPER_SETTINGS
        paper = {"tasks": f"all {len(molecules.TASKS)}", "embedders": "GraphMVP, 3D-Infomax, MolR, ChemBERTa-MTR",
                 "runs": P["runs"], "epochs": P["epochs"], "lr": "not given", "hidden": P["hidden"],
                 "val_frac": P["val_frac"], "subsample": P["subsample"], "max_molecules": "every molecule"}
        out = ["| setting | this run | paper (§5.2.1) |", "|---|---|---|"]
        for f in fields(self):
            v = getattr(self, f.name)
            shown = (", ".join(v) or "—") if isinstance(v, tuple) else f"{v:g}" if isinstance(v, float) else str(v)
            out.append(f"| `{f.name}` | {shown} | {paper.get(f.name, '—')} |")
        return "\n".join(out)


@dataclass
class Study:
    """``frame``: one row per (task, embedder, quantizer, run, metric) with r_q, value, original and
    relative; ``missing`` (task → reason); ``inputs``: per (task, embedder) the molecules used and
    what was dropped; ``losses``: (task, embedder) → loss tensors kept for Figure 10; ``config``:
    the :class:`MolecularConfig` that ran, :meth:`~MolecularConfig.as_dict`."""

    frame: pd.DataFrame
    missing: dict[str, str]
    inputs: pd.DataFrame
    losses: dict[tuple[str, str], torch.Tensor] = field(default_factory=dict)
    config: dict = field(default_factory=dict)


def run_study(config: MolecularConfig | None = None, *, data_dir=None, cache_dir=None, device="cpu", progress=None,
              units=None, processes: int = 1) -> Study:
    """Run :func:`train_task` for every available task and embedder of ``config`` (embeddings from
    the cache).

    ``config``: the study's settings (:class:`MolecularConfig`; None: its defaults):
    ``run_study(MolecularConfig(tasks=[...], embedders=[...], runs=2))``. A task whose file is absent offline is listed in
    ``missing`` (never an exception). Run-time settings that do not change the result stay outside
    the record: ``data_dir``, ``cache_dir`` (the embedding cache), ``device``, ``progress`` (a
    callable ``progress(task, embedder, TaskRun)``) and ``units`` (a :class:`qlib.resume.Units`: each
    (task, embedder)'s training is a unit, keyed by its settings and a fingerprint of its embeddings
    and labels, saved when done and reused by a rerun; each is seeded by its task's index alone, so a
    resumed study equals an uninterrupted one) and ``processes``: on the CPU, the (task, embedder)
    trainings run in that many worker processes (each with this process's torch thread count), while
    this one embeds the next tasks; the results are the same, bit for bit, and come in the same order
    (each training is seeded by its task alone; the recorder's products whose summation order the thread
    count could change run at one thread, so one and two torch threads record the same r_Q^n,
    ``tests/test_recorder_incremental.py``). On CUDA one process trains (the device is shared).
    """
    cfg = resolve_config(MolecularConfig, config)
    runs = cfg.runs
    if progress is not None:
        check_callable("progress", progress)
    check_units("units", units)
    processes = check_int("processes", processes, low=1)
    if resolve(device).type != "cpu":
        processes = 1
    pool = cpu_pool(processes) if processes > 1 else None
    specs = []   # (name, kind, embedder, molecules, nan labels, emb, hit, keep, the training or its future)
    miss = {}
    try:
        _study_units(cfg, data_dir, cache_dir, device, units, pool, specs, miss)
        results = [_finish_unit(sp, units) for sp in specs]
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    parts, inputs, kept = [], [], {}
    for sp, tr in zip(specs, results):
        name, kind, e, n_mol, n_nan, emb, hit, keep = sp[:8]
        X = emb.X
        if keep:
            kept[(name, e)] = tr.losses[:, :len(QUANTIZERS)]   # Figure 10: the eight quantizers
        inputs.append({"task": name, "kind": kind, "embedder": e, "molecules": n_mol,
                       "nan_labels": n_nan, "invalid_smiles": emb.n_invalid,
                       "used": X.shape[0], "n_train_run": tr.n_train, "n_val": tr.n_val, "d": tr.d,
                       "cache_hit": hit, "train_s": tr.seconds,
                       "val_flops_done": tr.flops_done, "val_flops_full": tr.flops_full,
                       **{f"changed_{q}": f for q, f in tr.changes.items()}})
        for metric in tr.original:
            o = tr.original[metric]
            qv = tr.quantized[metric]
            nq = len(tr.quantizers)
            for qi, q in enumerate(tr.quantizers + tr.also + ("identity",)):
                vals = qv[qi] if q != "identity" else o
                rq = tr.r[qi] if qi < nq else np.full(runs, np.nan)
                init = tr.initial[metric][qi] if q != "identity" else np.full(runs, np.nan)
                with np.errstate(invalid="ignore", divide="ignore"):
                    rel = vals / o
                parts.append(pd.DataFrame({"task": name, "kind": kind, "embedder": e, "quantizer": q,
                                           "run": np.arange(runs), "metric": metric, "r_q": rq,
                                           "value": vals, "original": o, "relative": rel,
                                           "initial": init}))
        if progress is not None:
            progress(name, e, tr)
    frame = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(
        columns=["task", "kind", "embedder", "quantizer", "run", "metric", "r_q", "value", "original", "relative",
                 "initial"])
    return Study(frame, miss, pd.DataFrame(inputs), kept, cfg.as_dict())


def _train_unit(kw: dict) -> TaskRun:
    """One (task, embedder) training in a worker process (:func:`train_task` with ``kw``)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RQUndefinedWarning)
        return train_task(**kw)


def _finish_unit(sp, units) -> TaskRun:
    """A unit's training: computed here, or the worker's result; saved as a unit (when ``units``)."""
    key, work = sp[8], sp[9]
    fn = work if callable(work) else work.result
    return fn() if units is None or key is None else units.run("molecular_task", key, fn)


def _study_units(cfg, data_dir, cache_dir, device, units, pool, specs: list, miss: dict) -> None:
    """Load and embed each task of ``cfg`` (in this process) and set each (task, embedder)'s training
    going: a unit saved earlier is read, a missing one is submitted to ``pool`` (or left to compute
    here when there is none). Appends to ``specs`` and ``miss``."""
    tasks, embedders, runs, epochs, lr = list(cfg.tasks), list(cfg.embedders), cfg.runs, cfg.epochs, cfg.lr
    max_molecules, keep_losses_for, seed = cfg.max_molecules, cfg.keep_losses_for, cfg.seed
    for ti, name in enumerate(tasks):
        try:
            task = molecules.load_task(name, data_dir=data_dir)
        except MissingDataError as exc:
            miss[name] = f"{molecules.task_info(name).filename} is not in the offline data directory ({exc.__class__.__name__})"
            continue
        smiles, labels, key = task.smiles, task.y, name
        if max_molecules is not None and len(smiles) > max_molecules:
            # subsample before embedding (seeded), cached under its own key
            pick = np.sort(np.random.default_rng(seed + 7919 * ti).choice(len(smiles), max_molecules, replace=False))
            smiles, labels, key = [smiles[i] for i in pick], labels[pick], f"{name}~{max_molecules}~{seed}"
        for e in embedders:
            emb, hit = molecules.embed_cached(key, smiles, e, cache_dir=cache_dir)
            X, y = emb.X, labels[emb.valid]
            keep = name in keep_losses_for and e == embedders[0]
            rec_q = QUANTIZERS + TABLE_READING if cfg.record_table_reading else QUANTIZERS
            also = () if cfg.record_table_reading else TABLE_READING

            kw = dict(X=X, y=y, kind=task.kind,
                      config=TaskConfig(runs=runs, epochs=epochs, lr=lr, hidden=cfg.hidden, val_frac=cfg.val_frac,
                                        subsample=cfg.subsample, seed=seed + ti, device=device,
                                        keep_losses=keep, quantizers=rec_q, also=also))
            ukey = None if units is None else {
                "task": name, "embedder": e, "kind": task.kind, "data": fingerprint(X, y), "runs": runs,
                "epochs": epochs, "lr": lr, "hidden": cfg.hidden, "val_frac": cfg.val_frac,
                "subsample": cfg.subsample, "seed": seed + ti, "device": resolve(device).type, "keep": keep,
                "quantizers": list(rec_q), "also": list(also)}
            saved = ukey is not None and units.reuse and units.path("molecular_task", ukey).is_file()
            if pool is not None and not saved:
                work = pool.submit(_train_unit, kw)
            else:
                work = functools.partial(train_task, **kw)
            specs.append((name, task.kind, e, len(task.smiles), task.n_nan_labels, emb, hit, keep, ukey, work))

