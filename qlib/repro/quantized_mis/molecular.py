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
(``paper-number``, tolerances in :data:`REL_ATOL`).

The paper's printed values and settings are typed once in :mod:`qlib.repro.quantized_mis.paper`
(:data:`~.paper.PAPER_TABLE3`, :data:`~.paper.PAPER_TABLE4`, :data:`~.paper.PAPER_TABLE5`,
:data:`~.paper.PAPER_SETTINGS`, :data:`~.paper.PAPER_ROW_NAMES`).
"""

from __future__ import annotations

import hashlib
import json
import math
import time
import warnings
from dataclasses import asdict, dataclass, field, fields
from typing import Sequence

import numpy as np
import pandas as pd
import torch
from scipy import stats

from qlib import molecules
from qlib.data import MissingDataError

# The batched engine and the r_Q^n estimator: the ONLY imports of them in this module.
from qlib.engine import MLP, TrainConfig, init_params, param_sizes, train
from qlib.quantizers import check_names, quantize_many
from qlib.recorder import RQRecorder
from qlib.repro.ledger import Row, claim, close, fmt, missing, not_comparable
from qlib.rqn import RQUndefinedWarning, trajectory_stats
from qlib.validation import (
    check_alloc,
    check_array,
    check_bool,
    check_callable,
    check_choice,
    check_float,
    check_int,
    check_seed,
    check_str,
    check_tensor,
)

from .paper import (
    PAPER_MIN_REL_AUROC,
    PAPER_MIN_REL_SPEARMAN,
    PAPER_QUANTIZERS,
    PAPER_SETTINGS,
    PAPER_SPARSE_AUROC_LOSS,
    PAPER_TABLE3,
    PAPER_TABLE4,
    PAPER_TABLE5,
    PAPER_TABLES345_COLUMNS,
)

__all__ = [
    "QUANTIZERS", "COLUMNS", "TABLE_READING", "readings_table", "reading_rows", "scale_note", "describe", "REL_ATOL", "auroc", "r2", "spearman_to_labels", "split_indices",
    "TaskRun", "train_task", "MolecularConfig", "Study", "run_study", "inputs_table", "dropped_text",
    "tables_note", "table_with_paper", "readings_text", "claims_text", "tradeoff", "table", "paper_table", "table_rows",
    "section522_rows", "lambda_profiles", "lambda_rows", "flops_per_task", "figure34_readings",
    "figure34_reading_rows", "figure34_readings_text",
]

#: the paper's eight quantizers (Tables 3–5 column order, without ``original``; :mod:`.paper`)
QUANTIZERS = PAPER_QUANTIZERS
#: Tables 3–5 columns: the eight quantizers, then the unquantized model (:mod:`.paper`)
COLUMNS = PAPER_TABLES345_COLUMNS
#: the 1.58b quantizers as Table 1 typesets them (keep the x % smallest |θ|, zero the rest;
#: :data:`qlib.quantizers.TERNARY_TABLE`): scored on each run's final model beside the text reading
#: (Tables 3–5); recorded along the trajectory too (r_Q^n, Figures 3/4) only with
#: ``MolecularConfig(record_table_reading=True)``
TABLE_READING = ("ternary33_table", "ternary50_table", "ternary90_table")
#: what every molecular row says of the scale and the embedders (filled by the study's notes)
_EMBEDDER_NOTE = "offline embedders (MiniMol, Morgan, RDKit 2-D, MACCS) stand in for the paper's four"

_PAPER = {"auroc": ("Table 3", PAPER_TABLE3), "r2": ("Table 4", PAPER_TABLE4),
          "spearman": ("Table 5", PAPER_TABLE5)}
_METRIC_LABEL = {"auroc": "AUROC", "r2": "R²", "spearman": "Spearman ρ"}

#: tolerance (absolute, on the relative performance m_Q / m_original) of a Tables 3–5 cell: our
#: embedders and training details differ from the paper's, so only agreement to a few percentage
#: points is asked of AUROC and Spearman; R² ratios are ill-conditioned (small denominators).
REL_ATOL = {"auroc": 0.05, "spearman": 0.05, "r2": 0.15}


# ---------------------------------------------------------------------------------------------
# Metrics (vectorised over leading axes)
# ---------------------------------------------------------------------------------------------
def _scores(name: str, s) -> np.ndarray:
    """Scores/predictions (..., n): real, non-empty, at least one axis; non-finite entries allowed
    (the row they sit in scores NaN)."""
    s = check_array(name, s, finite=False)
    if s.ndim < 1:
        raise ValueError(f"{name} must have shape (..., n) with n the number of labels, got a scalar")
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


def auroc(scores, y) -> np.ndarray:
    """Area under the ROC curve of ``scores`` (..., n) against binary labels ``y`` (n,), by the
    rank (Mann–Whitney) formula with average ranks for ties — the value of scikit-learn's
    ``roc_auc_score`` (tests check it). Leading axes are batch axes (one model per row); NaN where
    a score row is non-finite (a diverged model), so one such model does not stop a batch. ``y``
    must be finite, 0/1 and hold both classes (``ValueError`` naming ``y``)."""
    s = _scores("scores", scores)
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


def r2(pred, y) -> np.ndarray:
    """Coefficient of determination 1 − Σ(y − ŷ)² / Σ(y − ȳ)² of ``pred`` (..., n) against finite
    labels ``y`` (n,), not constant. Leading axes are batch axes; NaN where a prediction row is
    non-finite (a diverged model)."""
    p = _scores("pred", pred)
    y = _labels(y, p.shape[-1], "pred")
    sst = ((y - y.mean()) ** 2).sum()
    if sst == 0:
        raise ValueError("y is constant: R² is undefined")
    with np.errstate(invalid="ignore", over="ignore"):
        return _finite_rows(p, 1.0 - ((p - y) ** 2).sum(axis=-1) / sst)


def spearman_to_labels(pred, y) -> np.ndarray:
    """Spearman ρ between each row of ``pred`` (..., n) and finite labels ``y`` (n,); NaN for a
    constant row and for a non-finite one (a diverged model). Leading axes are batch axes."""
    p = _scores("pred", pred)
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


def train_task(X, y, kind: str, *, runs: int = 10, epochs: int = 500, lr: float = 1e-3, hidden: int = 128,
               val_frac: float = 0.4, subsample: float = 0.9, seed: int = 0, device="cpu",
               quantizers: Sequence[str] = QUANTIZERS, keep_losses: bool = False, backend: str = "auto",
               also: Sequence[str] = TABLE_READING) -> TaskRun:
    """Train ``runs`` MLPs (one batched computation) on embeddings ``X`` (n, d) and labels ``y``;
    record r_Q^n of each quantizer along each trajectory and score each quantized final model.
    ``backend``: the recorder's (:class:`qlib.recorder.RQRecorder`): ``"auto"`` records incrementally
    on the CPU, ``"torch"`` recomputes every quantized model's validation losses every epoch.
    ``also``: quantizers applied to the final (and initial) model only, for Tables 3–5."""
    X = check_array("X", X, ndim=2).astype(np.float32)
    y = check_array("y", y, ndim=1)
    if y.shape != (X.shape[0],):
        raise ValueError(f"y must have shape ({X.shape[0]},) (one label per row of X), got {y.shape}")
    check_choice("kind", kind, ("classification", "regression"))
    if kind == "classification" and not np.isin(y, (0.0, 1.0)).all():
        raise ValueError(f"y must be 0/1 labels for a classification task, got values {np.unique(y)[:5]}")
    epochs = check_int("epochs", epochs, low=1)
    hidden = check_int("hidden", hidden, low=1)
    lr = check_float("lr", lr, low=0.0, low_open=True)
    quantizers = tuple(check_names(quantizers, "quantizers"))
    also = tuple(check_names(also, "also")) if len(also) else ()
    keep_losses = bool(check_bool("keep_losses", keep_losses))
    val, tr = split_indices(X.shape[0], runs=runs, val_frac=val_frac, subsample=subsample, seed=seed)
    train_part = np.setdiff1d(np.arange(X.shape[0]), val)
    Xs = _standardise(X, X[train_part]).astype(np.float32)
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
    rec = RQRecorder(model, list(quantizers), X_val, y_val, epochs=epochs, loss=loss, scope="tensor",
                     keep_losses=keep_losses, device=device, backend=backend)
    theta0 = init_params(model, runs, seed)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RQUndefinedWarning)
        # the runs' subsamples are rows of one training part: one product over it per epoch
        res = train(model, theta0, Xt[None], yt[None], TrainConfig(epochs=epochs, lr=lr, loss=loss),
                    rows=torch.from_numpy(tr), callbacks=[rec], device=device)
        rec.finish()
    seconds = time.perf_counter() - t0
    scored = list(quantizers) + list(also)
    with torch.no_grad():
        thq = quantize_many(scored, res.theta, split=param_sizes(model))       # (Q', R, p), per tensor
        xv = Xt[vi].unsqueeze(0).expand(runs, -1, -1)
        out_q = model.forward(thq, xv).numpy()                                  # (Q', R, n_val)
        out_o = model.forward(res.theta, xv).numpy()                            # (R, n_val)
        th0q = quantize_many(scored, theta0, split=param_sizes(model))
        out_0 = model.forward(th0q, xv).numpy()
    yv = ys[val]
    if kind == "classification":
        fns = {"auroc": auroc}
    else:
        fns = {"r2": r2, "spearman": spearman_to_labels}
    original = {k: f(out_o, yv) for k, f in fns.items()}
    quantized = {k: f(out_q, yv) for k, f in fns.items()}
    initial = {k: f(out_0, yv) for k, f in fns.items()}
    return TaskRun(kind, tuple(quantizers), rec.r.copy(), original, quantized, int(tr.shape[1]), int(val.size),
                   int(X.shape[1]), seconds, rec.losses if keep_losses else None, *rec.change_stats(), also, initial)


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
              **settings) -> Study:
    """Run :func:`train_task` for every available task and embedder of ``config`` (embeddings from
    the cache).

    ``config``: the study's settings (:class:`MolecularConfig`); ``settings``, its fields by
    keyword, build the record instead (``run_study(tasks=[...], embedders=[...], runs=2)``; both at
    once is a ``TypeError`` naming them). A task whose file is absent offline is listed in
    ``missing`` (never an exception). Run-time settings that do not change the result stay outside
    the record: ``data_dir``, ``cache_dir`` (the embedding cache), ``device`` and ``progress`` (a
    callable ``progress(task, embedder, TaskRun)``).
    """
    if config is None:
        config = MolecularConfig(**settings)
    elif not isinstance(config, MolecularConfig):
        raise TypeError(f"config must be a MolecularConfig, got {type(config).__name__}")
    elif settings:
        raise TypeError(f"pass either config or its fields by keyword, not both: {', '.join(settings)} given "
                        "beside config (use dataclasses.replace(config, ...))")
    cfg = config
    tasks, embedders, runs, epochs, lr = list(cfg.tasks), list(cfg.embedders), cfg.runs, cfg.epochs, cfg.lr
    max_molecules, keep_losses_for, seed = cfg.max_molecules, cfg.keep_losses_for, cfg.seed
    if progress is not None:
        check_callable("progress", progress)
    parts, inputs, miss, kept = [], [], {}, {}
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
            tr = train_task(X, y, task.kind, runs=runs, epochs=epochs, lr=lr, hidden=cfg.hidden,
                            val_frac=cfg.val_frac, subsample=cfg.subsample, seed=seed + ti, device=device,
                            keep_losses=keep, quantizers=rec_q,
                            also=() if cfg.record_table_reading else TABLE_READING)
            if keep:
                kept[(name, e)] = tr.losses[:, :len(QUANTIZERS)]   # Figure 10: the eight quantizers
            inputs.append({"task": name, "kind": task.kind, "embedder": e, "molecules": len(task.smiles),
                           "nan_labels": task.n_nan_labels, "invalid_smiles": emb.n_invalid,
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
                    parts.append(pd.DataFrame({"task": name, "kind": task.kind, "embedder": e, "quantizer": q,
                                               "run": np.arange(runs), "metric": metric, "r_q": rq,
                                               "value": vals, "original": o, "relative": rel,
                                               "initial": init}))
            if progress is not None:
                progress(name, e, tr)
    frame = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(
        columns=["task", "kind", "embedder", "quantizer", "run", "metric", "r_q", "value", "original", "relative",
                 "initial"])
    return Study(frame, miss, pd.DataFrame(inputs), kept, cfg.as_dict())


def tradeoff(study: Study, metric: str, by: Sequence[str] = ("task", "quantizer")) -> pd.DataFrame:
    """Figures 3, 4 and 9: mean r_Q^n and mean relative performance per ``by`` group (quantized
    models only; means over runs and over whatever ``by`` leaves out, e.g. embedders)."""
    if metric not in _PAPER:
        raise ValueError(f"metric must be one of {', '.join(_PAPER)}; got {metric!r}")
    f = study.frame[(study.frame.metric == metric) & study.frame.quantizer.isin(QUANTIZERS)]
    return f.groupby(list(by), sort=False)[["r_q", "relative", "value"]].mean().reset_index()


# ---------------------------------------------------------------------------------------------
# Tables 3–5
# ---------------------------------------------------------------------------------------------
def _cell_means(frame: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Mean value, mean relative and mean value of the untrained quantized network (over embedders
    and runs) per (task, quantizer)."""
    f = frame[frame.metric == metric]
    if "initial" not in f:
        f = f.assign(initial=np.nan)
    g = f.groupby(["task", "quantizer"], sort=False)
    return g.agg(value=("value", "mean"), relative=("relative", "mean"), initial=("initial", "mean")).reset_index()


def _fmt(v: float, rel: float) -> str:
    if metric_inf(v):
        return f"-inf ({rel * 100:.0f}%)" if math.isfinite(rel) else "-inf (-inf%)"
    return f"{v:.3f} ({rel * 100:.0f}%)"


def metric_inf(v: float) -> bool:
    """The paper prints R² < −1 as −inf (Table 4)."""
    return not math.isfinite(v) or v < -1


def table(study: Study, metric: str) -> pd.DataFrame:
    """Our Table 3 / 4 / 5 (``metric`` auroc / r2 / spearman): task × column, 'value (relative %)';
    R² below −1 printed −inf as the paper does. Missing tasks get an empty row."""
    if metric not in _PAPER:
        raise ValueError(f"metric must be one of {', '.join(_PAPER)}; got {metric!r}")
    c = _cell_means(study.frame, metric)
    paper_tasks = list(_PAPER[metric][1])
    rows = {}
    for t in paper_tasks:
        sub = c[c.task == t].set_index("quantizer")
        rows[t] = {q: (_fmt(sub.value[q], sub.relative[q]) if q in sub.index else "") for q in COLUMNS}
    out = pd.DataFrame.from_dict(rows, orient="index")
    return out


def paper_table(metric: str) -> pd.DataFrame:
    """The paper's Table 3 / 4 / 5 in the same layout as :func:`table`."""
    if metric not in _PAPER:
        raise ValueError(f"metric must be one of {', '.join(_PAPER)}; got {metric!r}")
    tab = _PAPER[metric][1]
    return pd.DataFrame.from_dict({t: {q: _fmt(v, p / 100) for q, (v, p) in zip(COLUMNS, cells)}
                                   for t, cells in tab.items()}, orient="index")


def scale_note(study: Study) -> str:
    """The run's scale against the paper's, in one phrase (every molecular row carries it)."""
    c = study.config
    P = PAPER_SETTINGS
    mm = c.get("max_molecules")
    sub_ = f", tasks subsampled to ≤ {mm} molecules (seeded)" if mm else ", every molecule"
    return (f"{len(c.get('embedders', []))} embedder(s) × {c.get('runs')} runs × {c.get('epochs')} epochs{sub_} "
            f"(paper: 4 × {P['runs']} × {P['epochs']}, every molecule)")


def table_rows(study: Study) -> list[Row]:
    """Every cell of Tables 3–5 as a ledger row.

    Quantizer columns: the relative performance (the bracketed percentage) against ours,
    ``paper-number`` within :data:`REL_ATOL`; a cell the paper prints as −inf (R² < −1) is checked as
    "R² < −1". The ``original`` column (absolute metric of the unquantized model) is
    ``not_comparable``: it depends on the embedder, and ours are stand-ins. A task absent offline
    gives one ``not-available-offline`` row per table.
    """
    rows: list[Row] = []
    scale = scale_note(study)
    for metric, (tname, tab) in _PAPER.items():
        c = _cell_means(study.frame, metric)
        lab = _METRIC_LABEL[metric]
        for task, cells in tab.items():
            where = f"{tname}, {task}"
            if task in study.missing:
                rows.append(missing(where, f"{lab} of the 8 quantizers and the original model",
                                    reason=study.missing[task], offline=True))
                continue
            sub = c[c.task == task].set_index("quantizer")
            if sub.empty:
                continue
            for q, (pv, pp) in zip(COLUMNS, cells):
                qlab = "original" if q == "identity" else q
                if q == "identity":
                    rows.append(not_comparable(where, f"{lab}, original model", pv, float(sub.value[q]),
                                               reason="absolute score depends on the embedder; ours are offline "
                                                      "stand-ins for the paper's four"))
                elif metric == "r2" and not math.isfinite(pv):
                    ours = float(sub.value[q])
                    init = float(sub.initial[q])
                    rows.append(claim(where, f"R², {qlab}: below −1 (printed −inf)", "< -1", ours,
                                      bool(ours < -1), tolerance="R² < −1 (our reading of the printed −inf)",
                                      note="mean over embedders and runs; null: the same quantizer applied to "
                                           "the untrained network (any ±1-weight regression net is far off scale)",
                                      null=f"untrained {qlab} net: R² = {fmt(init)}",
                                      null_fails=None if not math.isfinite(init) else bool(not init < -1)))
                else:
                    rows.append(close(where, f"relative {lab}, {qlab}", pp / 100, float(sub.relative[q]),
                                      atol=REL_ATOL[metric], null=1.0, null_label="no effect of quantization",
                                      basis="fixed in advance: a few percentage points, our embedders differ",
                                      note="relative to the unquantized model; mean over embedders and runs; "
                                           f"our {_EMBEDDER_NOTE}; {scale}"))
    return rows


# ---------------------------------------------------------------------------------------------
# Claims of §5.2 / App. F
# ---------------------------------------------------------------------------------------------
def _mean_by(frame, metric, keys):
    f = frame[(frame.metric == metric) & frame.quantizer.isin(QUANTIZERS)]
    return f.groupby(keys, sort=False)[["r_q", "relative", "value"]].mean()


def section522_rows(study: Study) -> list[Row]:
    """The qualitative claims of §5.2.2 and App. F.1–F.2, tested on our numbers."""
    fr = study.frame
    rows: list[Row] = []
    has_clf = (fr.metric == "auroc").any()
    has_reg = (fr.metric == "r2").any()
    if has_clf:
        m = _mean_by(fr, "auroc", ["task", "quantizer"]).reset_index()
        hi = m[m.quantizer.isin(["bits2", "bits3", "bits4", "bits5"])]
        worst = hi.loc[hi.relative.idxmin()]
        a = PAPER_MIN_REL_AUROC
        rows.append(claim("§5.2.2 / Table 3", f"classification keeps ≥ {round(100 * a)} % of AUROC from 2 bits up",
                          f"min relative AUROC (2–5 bits) ≥ {a}", float(worst.relative),
                          bool(worst.relative >= a), tolerance=f"≥ {a} (the paper's printed bound)",
                          note=f"worst cell: {worst.task}, {worst.quantizer} (mean over embedders and runs)",
                          null="no effect of quantization: relative 1.0", null_fails=False))
        lo = m[m.quantizer.isin(["sign", "ternary33", "ternary50", "ternary90"])]
        loss = 1 - lo.relative
        rows.append(claim("§5.2.2 / Table 3", "Sign and ternary quantizers lose AUROC (paper: "
                          f"{round(100 * PAPER_SPARSE_AUROC_LOSS[0])}–{round(100 * PAPER_SPARSE_AUROC_LOSS[1])} %)",
                          "median loss in [0.03, 0.25]", float(loss.median()),
                          bool(0.03 <= loss.median() <= 0.25),
                          tolerance="median in [3 %, 25 %] (ours: the paper's 6–20 % widened for our embedders)",
                          note=f"range of our losses {loss.min():.3f}–{loss.max():.3f} over tasks × 4 quantizers",
                          null="no effect of quantization: loss 0", null_fails=True))
    if has_reg:
        m = _mean_by(fr, "r2", ["task", "quantizer"]).reset_index()
        low = m[m.quantizer.isin(["sign", "ternary33", "ternary50", "ternary90", "bits2", "bits3"])]
        frac = float((low.value < 0).mean())
        null_frac = float((low.value / low.relative < 0).mean())           # the unquantized models' R²
        high = m[m.quantizer.isin(["bits4", "bits5"])]
        rows.append(claim("§5.2.2 / App. F.1 / Table 4", "R² collapses below 4 bits (worse than the mean predictor)",
                          "share of cells < 4 bits with R² < 0 ≥ 0.8, and mean R² at 4–5 bits > 0",
                          f"{frac:.2f}; {high.value.mean():.3f}",
                          bool(frac >= 0.8 and high.value.mean() > 0),
                          tolerance="≥ 0.8; > 0 (our reading of 'collapses': most cells below the mean predictor)",
                          note="cells = task × quantizer, mean over embedders and runs",
                          null=f"no effect of quantization (the unquantized R²): share {null_frac:.2f}",
                          null_fails=bool(null_frac < 0.8)))
        s = _mean_by(fr, "spearman", ["task", "quantizer"]).reset_index()
        b = PAPER_MIN_REL_SPEARMAN
        rows.append(claim("App. F.1 / Table 5", f"Spearman ρ stays high at every bit width (paper: ≥ {round(100 * b)} % "
                          "of original)", f"min relative Spearman ≥ {b}", float(s.relative.min()),
                          bool(s.relative.min() >= b), tolerance=f"≥ {b} (the paper's printed bound)",
                          note=f"worst cell: {s.loc[s.relative.idxmin()].task}, {s.loc[s.relative.idxmin()].quantizer}",
                          null="no effect of quantization: relative 1.0", null_fails=False))
    # privacy–performance trade-off: more private (larger r_Q^n) ⇒ lower relative performance
    for metric in ("auroc", "r2"):
        if not (fr.metric == metric).any():
            continue
        m = _mean_by(fr, metric, ["task", "quantizer"]).reset_index()
        rhos = []
        for _, g in m.groupby("task", sort=False):
            ok = np.isfinite(g.r_q) & np.isfinite(g.relative)
            if ok.sum() >= 3 and g.r_q[ok].nunique() > 1 and g.relative[ok].nunique() > 1:
                rhos.append(stats.spearmanr(g.r_q[ok], g.relative[ok]).statistic)
        rhos = np.array(rhos, dtype=float)
        rhos = rhos[np.isfinite(rhos)]
        if rhos.size:
            med = float(np.median(rhos))
            neg = int((rhos < 0).sum())
            # a sign test over tasks: r_Q^n unrelated to performance makes each task's ρ negative with
            # probability 1/2 (the null); the claim needs a one-sided p < 0.05 and a negative median
            p_sign = float(stats.binomtest(neg, rhos.size, 0.5, alternative="greater").pvalue)
            rows.append(claim("§5.2.2 / Figs. 3–4", f"privacy–performance trade-off ({_METRIC_LABEL[metric]}): "
                              "larger r_Q^n, lower relative performance",
                              "median over tasks of Spearman(r_Q^n, relative) < 0, sign test p < 0.05",
                              f"median {med:.2f}; {neg}/{rhos.size} tasks negative, p = {p_sign:.2g}",
                              bool(med < 0 and p_sign < 0.05),
                              tolerance="median < 0 and p < 0.05 (a one-sided sign test at the conventional 5 % level)",
                              note="one-sided sign test over tasks (ρ per task over the 8 quantizers)",
                              null=f"r_Q^n unrelated to performance: half the tasks negative, p = "
                                   f"{float(stats.binomtest(rhos.size // 2, rhos.size, 0.5, alternative='greater').pvalue):.2g}",
                              null_fails=True))
    # 1.58b 90% the most private on almost all datasets (§5.2.2)
    m = fr[fr.quantizer.isin(QUANTIZERS)].drop_duplicates(["task", "embedder", "quantizer", "run"])
    pt = m.groupby(["task", "quantizer"])["r_q"].mean().unstack()
    if not pt.empty:
        top = pt.idxmax(axis=1)
        share = float((top == "ternary90").mean())
        rows.append(claim("§5.2.2", "1.58b 90 % is the most private quantizer on almost all datasets",
                          "share of tasks where it has the largest mean r_Q^n ≥ 2/3", share, bool(share >= 2 / 3),
                          tolerance="≥ 0.67 (our reading of 'almost all': two thirds of the tasks)", note=f"{len(top)} tasks; most frequent top: {top.mode().iloc[0]}",
                          null="a quantizer drawn at random tops each task: share 1/8", null_fails=True))
    # App. F.2: no significant difference between embedders
    embs = sorted(fr.embedder.unique())
    where = "App. F.2 / Fig. 9"
    qty = "no significant difference between embedders in the quantizers' privacy ranking"
    if len(embs) < 2:
        rows.append(not_comparable(where, qty, "same ranking for every embedder", None,
                                   reason="this profile runs a single embedder", kind="paper-claim"))
    else:
        pe = m.groupby(["task", "embedder", "quantizer"])["r_q"].mean()
        rhos = []
        for task in pe.index.get_level_values(0).unique():
            tab = pe[task].unstack()                                   # embedder × quantizer
            for i in range(len(embs)):
                for j in range(i + 1, len(embs)):
                    a, b = tab.loc[embs[i]], tab.loc[embs[j]]
                    rhos.append(stats.spearmanr(a, b, nan_policy="omit").statistic)
        mean_rho = float(np.nanmean(rhos))
        rows.append(claim(where, qty, "mean Spearman between embedders' r_Q^n rankings ≥ 0.8", mean_rho,
                          bool(mean_rho >= 0.8),
                          tolerance="≥ 0.8 (our reading of 'no significant difference' between rankings)",
                          note=f"{len(rhos)} (task, embedder pair) rankings of the 8 quantizers",
                          null="rankings unrelated across embedders: mean ρ 0", null_fails=True))
        rows += _tradeoff_by_embedder(fr, embs)
    rows += _sparse_performance_rows(fr)
    return rows


def _tradeoff_by_embedder(fr: pd.DataFrame, embs: list[str]) -> list[Row]:
    """App. F.2, second half: "no significant difference … in the trade-off between security and
    downstream performance". Per embedder, Spearman ρ between r_Q^n and relative AUROC over every
    (task, quantizer) cell (means over runs); the test the claim implies: the ρ of the embedders do
    not differ (χ² homogeneity test of their Fisher z, Σ (n_e − 3)(z_e − z̄)² on k − 1 degrees of
    freedom, p > 0.05) AND each embedder shows the trade-off (ρ_e < 0, one-sided p < 0.05) — a
    difference test alone could pass on noise, the second half fails for r_Q^n unrelated to
    performance (the null)."""
    where = "App. F.2 / Fig. 9"
    qty = "the privacy–performance trade-off is the same for every embedder"
    f = fr[(fr.metric == "auroc") & fr.quantizer.isin(QUANTIZERS)]
    if f.empty:
        return [not_comparable(where, qty, "no significant difference", None, kind="paper-claim",
                               reason="no classification task ran")]
    g = f.groupby(["embedder", "task", "quantizer"])[["r_q", "relative"]].mean().reset_index()
    z, w, ps, shown = [], [], [], []
    for e in embs:
        s = g[(g.embedder == e) & np.isfinite(g.r_q) & np.isfinite(g.relative)]
        if len(s) < 5:
            continue
        if s.r_q.nunique() < 2 or s.relative.nunique() < 2:       # ρ undefined: no association shown
            rho, pval = 0.0, 1.0
        else:
            res = stats.spearmanr(s.r_q, s.relative)
            rho, pval = float(res.statistic), float(res.pvalue)
        z.append(math.atanh(max(min(rho, 0.999999), -0.999999)))
        w.append(len(s) - 3)
        ps.append(pval / 2 if rho < 0 else 1 - pval / 2)
        shown.append(f"{e} {rho:.2f}")
    if len(z) < 2:
        return [not_comparable(where, qty, "no significant difference", None, kind="paper-claim",
                               reason="fewer than two embedders with five or more cells")]
    z, w = np.array(z), np.array(w, dtype=float)
    zbar = float((w * z).sum() / w.sum())
    chi2 = float((w * (z - zbar) ** 2).sum())
    p_het = float(stats.chi2.sf(chi2, len(z) - 1))
    each = all(p < 0.05 for p in ps)
    return [claim(where, qty, "ρ(r_Q^n, relative AUROC) alike across embedders (homogeneity p > 0.05) and "
                  "negative for each (p < 0.05)", f"{'; '.join(shown)}; homogeneity p = {p_het:.2g}",
                  bool(p_het > 0.05 and each), tolerance="p_het > 0.05 and every one-sided p < 0.05 (tests at the conventional 5 % level)",
                  note="χ² test of the Fisher z of the embedders' Spearman ρ over (task, quantizer) cells",
                  null="r_Q^n unrelated to performance: ρ = 0 for every embedder", null_fails=True)]


def _sparse_performance_rows(fr: pd.DataFrame) -> list[Row]:
    """§5.2.2: "the 1.58b 90 % quantizer … obtaining better performance than other sparse quantizers,
    notably on ClinTox, Carcinogens_Lagunin and CYP2C9 substrate" — the share of classification
    tasks where its mean relative AUROC beats both 1.58b 33 % and 50 %, under §5.1's reading (the
    default) and under Table 1's (:data:`TABLE_READING`). Null: the three sparse quantizers
    interchangeable (each is best on a third of the tasks)."""
    rows = []
    f = fr[fr.metric == "auroc"]
    if f.empty:
        return rows
    m = f.groupby(["task", "quantizer"])["relative"].mean().unstack()
    for label, names in (("§5.1's text", ("ternary33", "ternary50", "ternary90")),
                         ("Table 1 as typeset", TABLE_READING)):
        if not set(names) <= set(m.columns):
            continue
        t = m[list(names)].dropna()
        if t.empty:
            continue
        best = (t[names[2]] > t[names[0]]) & (t[names[2]] > t[names[1]])
        share = float(best.mean())
        notable = [x for x in ("ClinTox", "Carcinogens_Lagunin", "CYP2C9_Substrate_CarbonMangels") if x in t.index]
        rows.append(claim("§5.2.2 / Table 3", f"1.58b 90 % performs better than the other sparse quantizers ({label})",
                          "share of classification tasks where its relative AUROC beats 1.58b 33 % and 50 % ≥ 1/2",
                          share, bool(share >= 0.5),
                          tolerance="≥ 0.5 (our reading of 'performs better': on at least half the tasks)",
                          note=f"{len(t)} tasks; on the three the paper names: "
                               + (", ".join(f"{x} {'yes' if best[x] else 'no'}" for x in notable) or "none ran"),
                          null="the three sparse quantizers interchangeable: share 1/3", null_fails=True))
    return rows


# ---------------------------------------------------------------------------------------------
# Figure 10: Λ_kk against k
# ---------------------------------------------------------------------------------------------
def lambda_profiles(losses: torch.Tensor, quantizers: Sequence[str] = QUANTIZERS) -> pd.DataFrame:
    """Λ_kk (Algorithm 1) of every (quantizer, run) trajectory from a kept loss tensor
    (epochs, Q, runs, n_val): long table quantizer, run, k (1-based rank by increasing mean loss),
    lam, and per trajectory ``argmax_k`` and ``n_distinct``."""
    losses = check_tensor("losses", losses, ndim=4)
    quantizers = check_names(quantizers, "quantizers")
    T, Q, R, _ = losses.shape
    if Q != len(quantizers):
        raise ValueError(f"losses hold {Q} quantizers but {len(quantizers)} names were given in quantizers")
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RQUndefinedWarning)
        for qi, q in enumerate(quantizers):
            for r in range(R):
                st = trajectory_stats(losses[:, qi, r])
                k = np.arange(1, st.n_distinct + 1)
                out.append(pd.DataFrame({"quantizer": q, "run": r, "k": k, "lam": st.lam,
                                         "argmax_k": st.argmax_k, "n_distinct": st.n_distinct}))
    return pd.concat(out, ignore_index=True)


def lambda_rows(profiles: dict[str, pd.DataFrame], low: float = 0.1) -> list[Row]:
    """App. F.3: "the maximum of Λ_kk is consistently reached on low k values" — share of
    trajectories whose argmax_k lies in the lowest ``low`` fraction of their distinct models."""
    low = check_float("low", low, low=0.0, high=1.0, low_open=True)
    per = []
    for _task, df in profiles.items():
        t = df.drop_duplicates(["quantizer", "run"])
        t = t[t.argmax_k > 0]
        per.append((t.argmax_k - 1) / np.maximum(t.n_distinct - 1, 1))
    if not per:
        return [missing("App. F.3 / Fig. 10", "argmax_k Λ_kk at low k",
                        reason="no loss matrices were kept (no task of fig10_tasks ran)")]
    pos = pd.concat(per)
    share = float((pos <= low).mean())
    return [claim("App. F.3 / Fig. 10", "max Λ_kk reached at low k (lowest-loss quantized models dominate)",
                  f"most trajectories have argmax_k in the lowest {low:.0%} of k", share, bool(share >= 0.5),
                  tolerance="share ≥ 0.5 (our reading of 'consistently': most trajectories)", note=f"{len(pos)} trajectories on {len(profiles)} tasks; k sorted by "
                                                "increasing mean loss as in Algorithm 1",
                  null=f"argmax_k anywhere along the sorted models (uniform): share {low:.2f}",
                  null_fails=bool(low < 0.5))]


# ---------------------------------------------------------------------------------------------
# The two readings of 1.58b x % against Tables 3–5
# ---------------------------------------------------------------------------------------------
def readings_table(study: Study) -> pd.DataFrame:
    """Each 1.58b column of Tables 3–5 (relative AUROC / R² / Spearman, every task the paper prints
    a finite value for) against ours under §5.1's text (zero the x % smallest |θ|, the default) and
    Table 1 as typeset (keep them, zero the rest): mean |ours − paper| over the cells and the share
    of cells within :data:`REL_ATOL`; one row per (metric, column, reading)."""
    out = []
    for metric, (_tname, tab) in _PAPER.items():
        c = _cell_means(study.frame, metric).set_index(["task", "quantizer"])
        for pct, ci in (("33", 1), ("50", 2), ("90", 3)):
            for reading, q in (("text (§5.1)", f"ternary{pct}"), ("Table 1", f"ternary{pct}_table")):
                diffs = []
                for task, cells in tab.items():
                    pp = cells[ci][1]
                    if (task, q) not in c.index or not math.isfinite(pp):
                        continue
                    ours = float(c.loc[(task, q), "relative"])
                    if math.isfinite(ours):
                        diffs.append(abs(ours - pp / 100))
                if diffs:
                    d = np.array(diffs)
                    out.append({"metric": metric, "column": f"1.58b {pct}%", "reading": reading, "cells": len(d),
                                "mean |ours − paper|": float(d.mean()),
                                "within tolerance": float((d <= REL_ATOL[metric]).mean())})
    return pd.DataFrame(out)


def reading_rows(study: Study) -> list[Row]:
    """Which reading of 1.58b x % matches the paper's Tables 3–5, column by column (computed from
    :func:`readings_table`): a reading matches a column when its mean |ours − paper| is the smaller
    one by more than a tenth of :data:`REL_ATOL` (otherwise the column does not tell them apart).
    One erratum row: "Table 1 and §5.1 define different quantizers" is confirmed when the columns
    the data resolve do not all pick the same reading, or when they pick the one the paper's text
    does not use for its results — not confirmed when every resolved column picks §5.1's."""
    t = readings_table(study)
    where = "Table 1 vs §5.1 / Tables 3–5"
    if t.empty or set(t.reading) != {"text (§5.1)", "Table 1"}:
        return [not_comparable(where, "which reading of 1.58b x % the paper's Tables 3–5 ran", "one reading",
                               None, kind="erratum", reason="the Table 1 reading was not scored in this run")]
    picks = {}
    for (metric, col), g in t.groupby(["metric", "column"], sort=False):
        g = g.set_index("reading")["mean |ours − paper|"]
        gap = float(g["Table 1"] - g["text (§5.1)"])
        margin = REL_ATOL[metric] / 10
        picks[(metric, col)] = "text" if gap > margin else ("Table 1" if gap < -margin else "unresolved")
    resolved = {k: v for k, v in picks.items() if v != "unresolved"}
    shown = "; ".join(f"{m} {c}: {v}" for (m, c), v in picks.items())
    if not resolved:
        return [not_comparable(where, "which reading of 1.58b x % the paper's Tables 3–5 ran", "one reading",
                               shown, kind="erratum", reason="no column tells the two readings apart at this scale")]
    confirmed = set(resolved.values()) != {"text"}
    return [claim(where, "1.58b x % is defined twice (zero the smallest x % in §5.1, keep them in Table 1); "
                  "the tables' columns pick the reading", "§5.1's reading throughout", shown, confirmed,
                  kind="erratum", tolerance="a reading is picked when its mean |ours − paper| is lower by "
                                            "> REL_ATOL/10",
                  note=f"{len(resolved)} of {len(picks)} (metric, column) pairs resolved")]


#: §5.2.2's "1.58b 90 % is the most private quantizer on almost all datasets", as section522_rows reads it
_MOST_PRIVATE_SHARE = 2 / 3
_FIGURE = {"auroc": "Figure 3", "r2": "Figure 4"}
_READINGS = (("text (§5.1)", ("ternary33", "ternary50", "ternary90")), ("Table 1", TABLE_READING))


def figure34_readings(study: Study) -> pd.DataFrame:
    """Figures 3/4 (r_Q^n against relative performance) for each 1.58b column under both readings:
    per (figure, column, reading), over the tasks of that figure (means over embedders and runs), the
    mean r_Q^n, its mean rank among the eight quantizers of that reading (1: the largest r_Q^n, the
    most private), the share of tasks where it is the most private, the mean relative performance
    (AUROC, Figure 3; R², Figure 4) and the mean |ours − paper| of that relative performance against
    Tables 3/4 (the paper's x-axis). r_Q^n of the Table 1 reading is NaN unless the study recorded it
    (``MolecularConfig(record_table_reading=True)``)."""
    if not isinstance(study, Study):
        raise TypeError(f"study must be a Study, got {type(study).__name__}")
    rt = readings_table(study)
    out = []
    for metric, fig in _FIGURE.items():
        f = study.frame[study.frame.metric == metric]
        if f.empty:
            continue
        m = f.groupby(["task", "quantizer"])[["r_q", "relative"]].mean()
        rq, rel = m["r_q"].unstack(), m["relative"].unstack()
        for reading, names in _READINGS:
            eight = [dict(zip(("ternary33", "ternary50", "ternary90"), names)).get(q, q) for q in QUANTIZERS]
            if not set(eight) <= set(rq.columns):
                continue
            r8 = rq[eight]
            rank = r8.rank(axis=1, ascending=False)          # 1: the most private of the eight
            recorded = bool(r8[list(names)].notna().to_numpy().any())
            top = r8.fillna(-np.inf).idxmax(axis=1) if recorded else None
            for pct, q in zip(("33", "50", "90"), names):
                col = f"1.58b {pct}%"
                d = rt[(rt.metric == metric) & (rt.column == col) & (rt.reading == reading)] if len(rt) else rt
                out.append({"figure": fig, "column": col, "reading": reading, "tasks": len(r8),
                            "mean r_Q^n": float(r8[q].mean()), "mean rank of r_Q^n": float(rank[q].mean()),
                            "share of tasks most private": float((top == q).mean()) if recorded else np.nan,
                            "mean relative performance": float(rel[q].mean()),
                            "mean |ours − paper| (relative)": float(d["mean |ours − paper|"].iloc[0]) if len(d) else np.nan})
    return pd.DataFrame(out)


def figure34_reading_rows(study: Study) -> list[Row]:
    """§5.2.2's "1.58b 90 % is the most private quantizer on almost all datasets" (Figures 3/4) under
    Table 1's reading of 1.58b x %: one ``theory-check`` row (an ablation; the text reading's row is
    :func:`section522_rows`'), with the same test, or not comparable when the study did not record
    r_Q^n of that reading (``record_table_reading`` off, the default)."""
    if not isinstance(study, Study):
        raise TypeError(f"study must be a Study, got {type(study).__name__}")
    where = "§5.2.2 / Figs. 3–4 (ablation: Table 1 reading)"
    q = "1.58b 90 % (Table 1 reading) is the most private quantizer on almost all datasets"
    eight = [dict(zip(("ternary33", "ternary50", "ternary90"), TABLE_READING)).get(x, x) for x in QUANTIZERS]
    m = study.frame[study.frame.quantizer.isin(eight)].drop_duplicates(["task", "embedder", "quantizer", "run"])
    pt = m.groupby(["task", "quantizer"])["r_q"].mean().unstack()
    if pt.empty or not set(eight) <= set(pt.columns) or pt[list(TABLE_READING)].isna().all(axis=None):
        return [not_comparable(where, q, "share of tasks ≥ 2/3", None, kind="theory-check",
                               reason="r_Q^n of the Table 1 reading was not recorded in this run "
                                      "(MolecularConfig(record_table_reading=False), the default)")]
    top = pt[eight].idxmax(axis=1)
    share = float((top == TABLE_READING[2]).mean())
    return [claim(where, q, "share of tasks where it has the largest mean r_Q^n ≥ 2/3", share,
                  bool(share >= _MOST_PRIVATE_SHARE), kind="theory-check",
                  tolerance="≥ 0.67 (the text reading's row's reading of 'almost all')",
                  note=f"{len(top)} tasks; the 1.58b columns under Table 1's reading, the other five unchanged")]


def figure34_readings_text(study: Study) -> str:
    """Per 1.58b column, which reading's r_Q^n / relative performance matches the paper's Figures 3/4,
    computed from :func:`figure34_readings`: relative performance against Tables 3/4 (the closer
    reading by more than a tenth of :data:`REL_ATOL`) and, for 1.58b 90 %, the paper's "most private on
    almost all datasets" (share of tasks ≥ 2/3); the paper places 1.58b 33 % and 50 % on no r_Q^n rank."""
    t = figure34_readings(study)
    if t.empty:
        return "No task of Figures 3/4 ran."
    parts = []
    for (fig, col), g in t.groupby(["figure", "column"], sort=False):
        g = g.set_index("reading")
        if len(g) < 2:
            continue
        metric = "auroc" if fig == "Figure 3" else "r2"
        dt, db = g.loc["text (§5.1)", "mean |ours − paper| (relative)"], g.loc["Table 1", "mean |ours − paper| (relative)"]
        margin = REL_ATOL[metric] / 10
        if not (np.isfinite(dt) and np.isfinite(db)):
            s = f"{fig}, {col}: the paper prints no finite relative performance to compare (its cells are −inf)"
        else:
            perf = ("neither reading (not resolved)" if abs(dt - db) <= margin else
                    "the text reading" if dt < db else "the Table 1 reading")
            s = (f"{fig}, {col}: relative performance closer to the paper under **{perf}** (mean |Δ| {dt:.3f} text "
                 f"vs {db:.3f} Table 1)")
        rt_, rb = g.loc["text (§5.1)", "mean r_Q^n"], g.loc["Table 1", "mean r_Q^n"]
        if np.isfinite(rb):
            s += (f"; mean r_Q^n {rt_:.3g} text vs {rb:.3g} Table 1, mean rank {g.loc['text (§5.1)', 'mean rank of r_Q^n']:.1f}"
                  f" vs {g.loc['Table 1', 'mean rank of r_Q^n']:.1f} of 8")
            if col == "1.58b 90%":
                st_, sb = (g.loc[r, "share of tasks most private"] for r in ("text (§5.1)", "Table 1"))
                ok = [r for r, v in (("text", st_), ("Table 1", sb)) if v >= _MOST_PRIVATE_SHARE]
                s += (f"; the most private on {st_:.0%} of tasks (text) vs {sb:.0%} (Table 1), so the paper's "
                      f"'most private on almost all datasets' holds under "
                      + (" and ".join(f"the {r} reading" for r in ok) if ok else "neither reading"))
        else:
            s += "; r_Q^n of the Table 1 reading not recorded (record_table_reading off)"
        parts.append(s + ".")
    return "\n\n".join(parts)


def describe(study: Study, *, elapsed: float, profile: str, lr: float | None = None) -> str:
    """The chapter's "Setup" paragraph (Markdown), generated from what ran: tasks, embedders, models,
    the scale against the paper's, the incremental recording's work, and the time. ``lr``: the
    learning rate to state (None: the study's own, ``study.config["lr"]``)."""
    elapsed = check_float("elapsed", elapsed, low=0.0)
    lr = check_float("lr", lr if lr is not None else study.config.get("lr"), low=0.0, low_open=True)
    profile = check_str("profile", profile)
    P = PAPER_SETTINGS
    c = study.config
    ran = sorted(set(study.inputs.task)) if len(study.inputs) else []
    embs = c.get("embedders", [])
    desc = "; ".join(f"`{e}` — {molecules.embedder(e).description}" for e in embs)
    lines = [
        f"* **Tasks** (`qlib.molecules`, read by PyTDC from the offline data directory): {len(ran)} of the "
        f"{len(molecules.TASKS)} tasks of Tables 3–4 ran"
        + (f"; not available offline: {', '.join(study.missing)} (a row in the ledger says so)" if study.missing else "")
        + ".",
        "* The HydrationFreeEnergy_FreeSolv file is a documented **reconstruction** (same molecules, labels and "
        "order as TDC's file as far as the evidence goes, not byte-identical; see the data folder's SOURCES.md)."
        if "HydrationFreeEnergy_FreeSolv" in ran else "",
        f"* **Embedders** (offline stand-ins for the paper's GraphMVP, 3D-Infomax, MolR and ChemBERTa-MTR, "
        f"whose weights cannot be downloaded here): {desc}."
        + (" MiniMol was pretrained on the LargeMix collection, not on TDC labels." if "minimol" in embs else ""),
        f"* **Models**: MLP with two layers, hidden width {P['hidden']}, loss BCE (classification) or MSE "
        f"(regression), full-batch Adam, learning rate {lr:g} (the paper gives none); "
        f"{P['val_frac']:.0%} of each task is the validation set, each run trains on its own random "
        f"{P['subsample']:.0%} of the rest; all runs of a task train in one batched computation.",
        f"* **This run** (profile `{profile}`): {scale_note(study)}. Total time {elapsed / 60:.1f} min.",
    ]
    inp = study.inputs
    if len(inp) and "val_flops_full" in inp and inp.val_flops_full.sum() > 0:
        frac = float(inp.val_flops_done.sum() / inp.val_flops_full.sum())
        ch = {q: float(inp[f"changed_{q}"].mean()) for q in QUANTIZERS if f"changed_{q}" in inp}
        lines.append(
            "* **$r_Q^n$ recorded incrementally** (`qlib.recorder`): each epoch only the first-layer coordinates "
            "whose quantized value changed update the validation pre-activations; that was "
            f"{100 * frac:.1f} % of the multiply–adds of recomputing every quantized model every epoch "
            "(changed per epoch, mean over tasks and embedders: "
            + ", ".join(f"{q} {100 * v:.1f} %" for q, v in ch.items()) + ").")
    return "\n".join(x for x in lines if x)


# ---------------------------------------------------------------------------------------------
# What chapter 05 shows, generated from what ran
# ---------------------------------------------------------------------------------------------
#: the columns of :func:`inputs_table`
_INPUT_COLUMNS = ["task", "embedder", "molecules", "nan_labels", "invalid_smiles", "used", "n_train_run", "n_val"]


def inputs_table(study: Study) -> pd.DataFrame:
    """Per (task, embedder): the molecules in the task file, the NaN labels and invalid SMILES
    dropped, the molecules used, each run's training size and the validation size."""
    inp = study.inputs
    return inp[_INPUT_COLUMNS] if len(inp) else pd.DataFrame(columns=_INPUT_COLUMNS)


def dropped_text(study: Study) -> str:
    """One sentence: how many invalid SMILES and NaN labels were dropped over the tasks."""
    inp = inputs_table(study)
    n_smiles, n_nan = int(inp.invalid_smiles.sum()), int(inp.nan_labels.sum())
    return (f"Molecules per task: {n_smiles} invalid SMILES and {n_nan} NaN labels were dropped in total "
            "(counted per task below)." + ("" if n_smiles + n_nan else " None was dropped."))


def tables_note() -> str:
    """The paragraph above Tables 3–5: what a cell holds and how it is compared (:data:`REL_ATOL`)."""
    return ("Each cell: mean over embedders and runs of the validation metric, and in brackets the mean ratio to "
            "the unquantized model. **Our embedders differ from the paper's** (offline stand-ins), so the "
            "`original` column is not compared (`not comparable`); the bracketed relative performance, which "
            "App. F.2 finds the same for every embedder, is compared cell by cell as a paper number within "
            f"±{REL_ATOL['auroc']:.2f} (AUROC, Spearman) and ±{REL_ATOL['r2']:.2f} (R²), and a cell the "
            "paper prints as −inf is checked as R² < −1.")


def table_with_paper(study: Study, metric: str) -> pd.DataFrame:
    """Our Table 3 / 4 / 5 (:func:`table`) with the paper's cell beside ours: 'ours · paper p', or
    'paper p' where we have no value."""
    ours, paper = table(study, metric), paper_table(metric)
    return ours.where(ours == "", ours + " · paper " + paper).where(ours != "", "paper " + paper)


def readings_text(study: Study) -> str:
    """One Markdown paragraph per row of :func:`reading_rows`: its quantity, verdict, value and note."""
    return "\n\n".join(f"**{r.quantity}** — {r.verdict}: {fmt(r.ours)} ({r.tolerance}; {r.note})"
                        for r in reading_rows(study))


def claims_text(rows: Sequence[Row]) -> str:
    """A Markdown list of the paper-claim rows among ``rows``: quantity, verdict, our value, the test."""
    return "\n".join(f"* {r.quantity}: **{r.verdict}** (ours {fmt(r.ours) or '—'}; test: {r.paper_value})"
                     for r in rows if r.kind == "paper-claim")
