"""Why does paper 001's Table 3 not reproduce? The hypotheses of :mod:`.table3_probe`, combined.

:mod:`.table3_probe` changes one step of the molecular procedure at a time; some single changes move
columns of Table 3 into the paper's band, none passes the pattern test alone. This module combines them.

* **procedures** — ``default``, the six hypotheses (:data:`HYPOTHESES`), every pair of them and one triple,
  named by their changes joined with ``+`` in :data:`HYPOTHESES` order (``probability+scope_model``);
* :func:`run` trains each distinct *training* (hidden layers, lr, batch, standardisation) once per (task,
  embedder) and scores every procedure sharing it: the scoring changes (:data:`SCORING`) reuse the trained
  models, so only pairs of two training changes train anew; ``RunConfig(record=True)`` records r_Q^n of the
  procedure's own quantizers (its scope and reading) along every trajectory, as chapter 05 does.
  :func:`combine` runs the singles and pairs, then the triple.

The rules, fixed in code before any combination ran
---------------------------------------------------
* **helps** (:func:`helpers`): a single hypothesis helps when at least one of the eight column means over
  the probe's tasks lies inside its band of the pattern test (sparse 0.84–0.96, b bits 0.97–1.01) under it
  and outside under ``default``;
* **the triple** (:func:`triple`): the three helping hypotheses moving the most columns, ties by the smaller
  mean |column mean − the paper's column mean| over the eight columns, then :data:`HYPOTHESES` order; none
  when fewer than three help;
* **the best** (:func:`best`): among singles, pairs and triple, the procedure passing the pattern test
  (:func:`.table3_probe.pattern_test`) on the most tasks taken one at a time; ties by the smaller mean
  |column mean − paper column mean|, then fewer changes, then name;
* **the paper's likely procedure** (:func:`likely`): the best, run on every binary task of Table 3 with
  every embedder, passes the test on more than half of the tasks (cells averaged over embedders, as the
  paper's Table 3) and on more than half of the embedders (cells of all tasks); otherwise no procedure is
  named the paper's and the default (AUROC of the logits, one scale per tensor) stays.

Ledger rows, all ``probe`` (our variants: never a difference from the paper): each combination's test
(:func:`combo_rows`); the best per embedder and the likely-procedure verdict (:func:`best_rows`); under the
best, claim 001-C19's rows (:func:`c19_rows`) and 001-C22's (:func:`c22_rows`), each chapter 05's test
(:mod:`.molecular_claims`) on the best's numbers. The chapter's first screen: :mod:`.table3_answer`.

Seeds: ``seeding="probe"`` starts the i-th task of ``tasks`` from ``seed + i`` (as the probe, so a
procedure here and the same variant of :func:`.table3_probe.probe` share split and initial parameters);
``seeding="study"`` seeds a task by its index in :func:`qlib.molecules.task_names` and subsamples
``max_molecules`` as :func:`.molecular.run_study` (``default`` there is chapter 05's run).
"""

from __future__ import annotations

import functools
import itertools
import math
import time
from concurrent.futures import as_completed
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from qlib import molecules
from qlib.data import MissingDataError
from qlib.devices import cpu_pool
from qlib.repro import ledger
from qlib.resume import check_units, fingerprint
from qlib.validation import check_bool, check_callable, check_choice, check_frame, check_int, check_seed, resolve_config

from . import table3_probe as tp
from ._table3_train import fit, score
from .molecular import QUANTIZERS
from .paper import PAPER_SPARSE_AUROC_LOSS, PAPER_TABLE3, PAPER_TABLES345_COLUMNS

__all__ = ["HYPOTHESES", "SCORING", "TRAINING", "SINGLES", "CELL_ATOL", "LOSS_BAND", "procedure_name",
           "procedure_changes", "describe", "scale_text", "PAIRS", "RunConfig", "RunResult", "run", "combine", "means", "helpers", "triple",
           "combination_table", "best", "likely", "combo_rows", "best_rows", "c19_rows", "c22_rows"]

#: the six hypotheses of :mod:`.table3_probe`, in the order procedures are named
HYPOTHESES = ("probability", "scope_model", "lr1e-4_minibatch", "raw_features", "deep", "table_reading")
#: the hypotheses that change only how a trained model is quantized or scored, and those that change the training
SCORING, TRAINING = ("probability", "scope_model", "table_reading"), ("lr1e-4_minibatch", "raw_features", "deep")
SINGLES = ("default",) + HYPOTHESES
#: chapter 05's tolerance of a Table 3 cell (``molecular_claims.REL_ATOL["auroc"]``; tests check they agree)
CELL_ATOL = 0.05
#: chapter 05's band of the median AUROC loss of the sparse quantizers (claim 001-C19)
LOSS_BAND = (0.03, 0.25)
_SEP = "+"


def procedure_changes(name: str) -> tuple[str, ...]:
    """The hypotheses a procedure name holds, in :data:`HYPOTHESES` order (``"default"``: none)."""
    if not isinstance(name, str):
        raise TypeError(f"name must be a procedure name (str), got {type(name).__name__}")
    if name == "default":
        return ()
    parts = name.split(_SEP)
    bad = [p for p in parts if p not in HYPOTHESES]
    if bad or len(set(parts)) != len(parts):
        raise ValueError(f"name must be 'default' or distinct hypotheses of {', '.join(HYPOTHESES)} joined by "
                         f"'{_SEP}'; got {name!r}")
    return tuple(sorted(parts, key=HYPOTHESES.index))


def procedure_name(changes: Sequence[str]) -> str:
    """The name of the procedure with ``changes`` (hypotheses of :data:`HYPOTHESES`; empty: ``"default"``)."""
    if isinstance(changes, str) or not isinstance(changes, (list, tuple)) or not all(isinstance(c, str) for c in changes):
        raise TypeError(f"changes must be a list of hypothesis names, got {changes!r}")
    return _SEP.join(procedure_changes(_SEP.join(changes))) if changes else "default"


#: every pair of :data:`HYPOTHESES` (15 procedures)
PAIRS = tuple(procedure_name(list(p)) for p in itertools.combinations(HYPOTHESES, 2))


def describe(name: str) -> str:
    """What the procedure ``name`` changes, in words (:data:`.table3_probe.HYPOTHESES`)."""
    ch = procedure_changes(name)
    return "; ".join(tp.HYPOTHESES[h] for h in ch) if ch else tp.HYPOTHESES["default"]


def _training(changes) -> tuple:
    """(hidden layers, lr, batch size, standardise) of a procedure's training."""
    mb = "lr1e-4_minibatch" in changes
    return (2 if "deep" in changes else 1, 1e-4 if mb else 1e-3, tp.BATCH_SIZE if mb else None,
            "raw_features" not in changes)


def _names(changes) -> list[str]:
    """The eight quantizers of a procedure: Table 1's 1.58b ones under ``table_reading``."""
    return [q + "_table" if "table_reading" in changes and q.startswith("ternary") else q for q in QUANTIZERS]


def _spec(name: str) -> tuple:
    """(scope, AUROC of probabilities, the eight quantizers) of a procedure's scoring."""
    ch = procedure_changes(name)
    return "model" if "scope_model" in ch else "tensor", "probability" in ch, _names(ch)


@dataclass(frozen=True)
class RunConfig:
    """The settings of :func:`run`, checked once when built; frozen. ``embedders``: names registered in
    :mod:`qlib.molecules`; ``runs`` (>= 2) × ``epochs`` (>= 1) per (task, embedder, training); ``seed``;
    ``hidden`` (>= 1) the width of each hidden layer; ``record``: record r_Q^n along every trajectory;
    ``max_molecules`` (None: every molecule) subsamples larger tasks as chapter 05 (needs
    ``seeding="study"``); ``seeding``: ``"probe"`` or ``"study"`` (module docstring); ``processes`` (>= 1):
    worker processes for the trainings (:func:`run`; the same numbers at any count)."""

    embedders: tuple[str, ...] = ("maccs",)
    runs: int = 10
    epochs: int = 500
    seed: int = 0
    hidden: int = 128
    record: bool = False
    max_molecules: int | None = None
    seeding: str = "probe"
    processes: int = 1

    def __post_init__(self):
        def put(name, value):
            object.__setattr__(self, name, value)

        embs = [self.embedders] if isinstance(self.embedders, str) else self.embedders
        if not isinstance(embs, (list, tuple)) or not embs:
            raise TypeError(f"embedders must be a non-empty list of embedder names, got {self.embedders!r}")
        put("embedders", tuple(dict.fromkeys(molecules.embedder(e).name for e in embs)))
        put("runs", check_int("runs", self.runs, low=2))
        put("epochs", check_int("epochs", self.epochs, low=1))
        put("seed", check_seed("seed", self.seed))
        put("hidden", check_int("hidden", self.hidden, low=1))
        put("record", check_bool("record", self.record))
        put("max_molecules", check_int("max_molecules", self.max_molecules, low=10, allow_none=True))
        check_choice("seeding", self.seeding, ("probe", "study"))
        put("processes", check_int("processes", self.processes, low=1))
        if self.max_molecules is not None and self.seeding != "study":
            raise ValueError("max_molecules needs seeding='study' (chapter 05's subsample and embedding cache)")


@dataclass
class RunResult:
    """:func:`run`'s result: ``frame``, one row per (variant, embedder, task, quantizer, run) — relative AUROC,
    quantized and original AUROC, r_Q^n (NaN unless recorded); ``trainings``, one row per (embedder, task,
    training): the procedures it served, its seconds (0: reused from ``models``); ``missing``: task → why it
    did not run; ``config``; ``helpers``: :func:`helpers`' table (:func:`combine`)."""

    frame: pd.DataFrame
    trainings: pd.DataFrame
    missing: dict = field(default_factory=dict)
    config: RunConfig | None = None
    helpers: pd.DataFrame | None = None


def _tasks(tasks) -> list[str]:
    if isinstance(tasks, str) and tasks == "all":
        return molecules.task_names("classification")
    tasks = [tasks] if isinstance(tasks, str) else tasks
    if not isinstance(tasks, (list, tuple)) or not tasks:
        raise TypeError(f"tasks must be 'all' or a non-empty list of TDC task names, got {tasks!r}")
    names = [molecules.task_info(t).name for t in tasks]
    bad = [t for t in names if molecules.task_info(t).kind != "classification"]
    if bad:
        raise ValueError(f"tasks must be classification tasks (Table 3); {bad} are regression tasks")
    return names


def _unit(X, y, tkey, gp, rec, cfg, seed, models, ident) -> tuple:
    """One (task, embedder, training): trained (or taken from ``models``) and every procedure of ``gp`` scored."""
    mkey = tuple(sorted((k, str(v)) for k, v in ident.items()))
    t = models.get(mkey) if models is not None and rec is None else None
    hit = t is not None
    if not hit:
        t = fit(X, y, tkey, runs=cfg.runs, epochs=cfg.epochs, hidden=cfg.hidden, seed=seed, record=rec)
        if models is not None and rec is None:
            models[mkey] = t
    return score(t, {p: _spec(p) for p in gp}), t.r, 0.0 if hit else t.seconds   # a reused training cost nothing


def run(tasks, procedures: Sequence[str], config: RunConfig | None = None, *, data_dir=None, cache_dir=None,
        models: dict | None = None, units=None, progress=None) -> RunResult:
    """Run ``procedures`` (names, :func:`procedure_name`) on each binary task of ``tasks`` (``"all"``: the
    14 of Table 3; one absent offline is listed in ``missing``) with each embedder of ``config``
    (:class:`RunConfig`), training each distinct training once per (task, embedder). ``models``: a dict
    kept between calls (trained runs are reused from it; not with ``record``); ``units``: a
    :class:`qlib.resume.Units` saving each (task, embedder, training) when done; ``progress(task,
    embedder, seconds)`` after each (with workers, when its results are collected). ``config.processes``
    (>= 1): the units not saved earlier train in that many spawned worker processes
    (:func:`qlib.devices.cpu_pool`, this process's thread count each), the largest task first, each sent as
    soon as this process has embedded it, and saved in ``units`` as soon as it ends (a kill loses only the
    units running); the result is the same as with one process (each
    unit is seeded by its task, not by the order it runs in), ``models`` is not used by the workers."""
    cfg = resolve_config(RunConfig, config)
    names = _tasks(tasks)
    if isinstance(procedures, str) or not isinstance(procedures, (list, tuple)) or not procedures:
        raise TypeError(f"procedures must be a non-empty list of procedure names, got {procedures!r}")
    procs = list(dict.fromkeys(procedure_name(list(procedure_changes(p))) for p in procedures))
    if models is not None and not isinstance(models, dict):
        raise TypeError(f"models must be a dict (kept between calls) or None, got {type(models).__name__}")
    if cfg.record and len(procs) != 1:
        raise ValueError("record=True records one procedure's quantizers: give one procedure")
    check_units("units", units)
    if progress is not None:
        check_callable("progress", progress)
    processes = cfg.processes
    groups: dict[tuple, list[str]] = {}
    for p in procs:
        groups.setdefault(_training(procedure_changes(p)), []).append(p)
    every = molecules.task_names()
    specs, missing, t_embed = [], {}, {}   # specs: (task, embedder, its procedures, the unit's key, the work)
    pool = cpu_pool(processes) if processes > 1 else None
    try:
        loaded = []
        for i, name in enumerate(names):
            ti = every.index(name) if cfg.seeding == "study" else i
            try:
                task = molecules.load_task(name, data_dir=data_dir)
            except MissingDataError as exc:
                missing[name] = (f"{molecules.task_info(name).filename} is not in the offline data directory "
                                 f"({type(exc).__name__})")
                continue
            smiles, labels, key = task.smiles, task.y, name
            mm = cfg.max_molecules
            if mm is not None and len(smiles) > mm:   # molecular.run_study's subsample (and cache key)
                pick = np.sort(np.random.default_rng(cfg.seed + 7919 * ti).choice(len(smiles), mm, replace=False))
                smiles, labels, key = [smiles[j] for j in pick], labels[pick], f"{name}~{mm}~{cfg.seed}"
            loaded.append((name, ti, smiles, labels, key))
        # with workers, the largest task is embedded and sent first (the shortest tail); the frame keeps the order
        futures: dict = {}
        order = sorted(range(len(loaded)), key=lambda j: -len(loaded[j][2])) if pool is not None else range(len(loaded))
        placed: dict = {}
        for j in order:
            name, ti, smiles, labels, key = loaded[j]
            for e in cfg.embedders:
                t0 = time.perf_counter()
                emb, _ = molecules.embed_cached(key, smiles, e, cache_dir=cache_dir)
                X, y = emb.X.astype(np.float32), labels[emb.valid]
                t_embed[(name, e)] = time.perf_counter() - t0
                for tkey, gp in groups.items():
                    rec = (_spec(gp[0])[0], _spec(gp[0])[2]) if cfg.record else None
                    ident = dict(task=name, embedder=e, data=fingerprint(X, y), runs=cfg.runs, epochs=cfg.epochs,
                                 seed=cfg.seed + ti, hidden=cfg.hidden, training=list(map(str, tkey)), record=cfg.record)
                    args = (X, y, tkey, gp, rec, cfg, cfg.seed + ti, None if pool is not None else models, ident)
                    ukey = {**ident, "procedures": gp}
                    saved = units is not None and units.reuse and units.path("table3_combos", ukey).is_file()
                    if pool is not None and not saved:
                        fut = pool.submit(_unit, *args)
                        futures[fut] = ukey
                        work = fut.result
                    else:
                        work = functools.partial(_unit, *args)
                    placed.setdefault(j, []).append((name, e, gp, ukey, work))
        specs = [sp for j in range(len(loaded)) for sp in placed.get(j, [])]
        if units is not None:   # each unit saved as soon as its worker ends it: a kill loses only those running
            for fut in as_completed(futures):
                units.run("table3_combos", futures[fut], fut.result)
        parts, trainings = [], []
        for (name, e), group in itertools.groupby(specs, key=lambda sp: sp[:2]):   # one (task, embedder) at a time
            t0 = time.perf_counter()
            for _, _, gp, ukey, work in group:
                scored, r, sec = work() if units is None else units.run("table3_combos", ukey, work)
                trainings.append({"embedder": e, "task": name, "training": gp[0], "procedures": ", ".join(gp),
                                  "seconds": sec})
                for p, (q_, o_) in scored.items():
                    with np.errstate(invalid="ignore", divide="ignore"):
                        rel = q_ / o_
                    rr = r if r is not None else np.full(q_.shape, np.nan)
                    parts.append(pd.DataFrame({
                        "variant": p, "embedder": e, "task": name, "quantizer": np.repeat(QUANTIZERS, cfg.runs),
                        "run": np.tile(np.arange(cfg.runs), len(QUANTIZERS)), "relative": rel.ravel(),
                        "auroc": q_.ravel(), "original": np.tile(o_, len(QUANTIZERS)), "r_q": rr.ravel()}))
            if progress is not None:
                progress(name, e, t_embed[(name, e)] + time.perf_counter() - t0)
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    cols = ["variant", "embedder", "task", "quantizer", "run", "relative", "auroc", "original", "r_q"]
    frame = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=cols)
    return RunResult(frame, pd.DataFrame(trainings, columns=["embedder", "task", "training", "procedures", "seconds"]),
                     missing, cfg)


def combine(tasks, config: RunConfig | None = None, *, data_dir=None, cache_dir=None, progress=None) -> RunResult:
    """The probe's procedures (``default`` and :data:`HYPOTHESES`) and every pair in one :func:`run`, then the
    triple :func:`triple` names from the singles (its training reused when a pair had it). The result's
    ``helpers`` is :func:`helpers`' table."""
    cfg = resolve_config(RunConfig, config)
    cache: dict = {}
    res = run(tasks, SINGLES + PAIRS, cfg, data_dir=data_dir, cache_dir=cache_dir, models=cache, progress=progress)
    res.helpers = helpers(means(res))
    trip = triple(res.helpers)
    if trip is not None:
        more = run(tasks, [trip], cfg, data_dir=data_dir, cache_dir=cache_dir, models=cache, progress=progress)
        res.frame = pd.concat([res.frame, more.frame], ignore_index=True)
        res.trainings = pd.concat([res.trainings, more.trainings], ignore_index=True)
    return res


# ---------------------------------------------------------------------------------------------
# Tables and the rules
# ---------------------------------------------------------------------------------------------
def _frame(result) -> pd.DataFrame:
    f = result.frame if isinstance(result, RunResult) else result
    return check_frame("result", f, ("variant", "task", "quantizer", "relative"), "table3_combos.run")


def means(result, by: Sequence[str] = ("variant", "task")) -> pd.DataFrame:
    """:func:`.table3_probe.probe`'s frame from :func:`run`'s result (or its frame): per ``by`` and quantizer
    the mean relative AUROC over runs (and embedders, unless ``by`` keeps them), its spread, the mean
    AUROC, original AUROC and r_Q^n, and the runs per cell."""
    f = _frame(result)
    if isinstance(by, str) or not isinstance(by, (list, tuple)) or not set(by) <= set(f.columns) or "task" not in by:
        raise ValueError(f"by must be a list of columns of the frame holding 'task', got {by!r}")
    extra = {c: (c, "mean") for c in ("auroc", "original", "r_q") if c in f.columns}
    out = f.groupby([*by, "quantizer"], sort=False).agg(relative=("relative", "mean"), relative_sd=("relative", "std"),
                                                        **extra, runs=("relative", "size")).reset_index()
    return out if "variant" in by else out.assign(variant="-")


def _in_band(q: str, v: float) -> bool:
    lo, hi = tp.SPARSE_BAND if q in tp.SPARSE else tp.BITS_BAND
    return bool(lo <= v <= hi)


def _paper_cols(tasks) -> pd.Series | None:
    tasks = [t for t in tasks if t in PAPER_TABLE3]
    return tp.pattern_test(tp.paper_means(tasks)).iloc[0][list(QUANTIZERS)] if tasks else None


def _distance(row, paper) -> float:
    return float(np.mean([abs(row[q] - paper[q]) for q in QUANTIZERS])) if paper is not None else math.nan


def helpers(df: pd.DataFrame) -> pd.DataFrame:
    """The rule *helps* (module docstring) on :func:`means`' frame holding ``default`` and the singles: per
    hypothesis the columns it moves into their band, their number, the mean |column mean − paper's| and
    ``helps``."""
    df = check_frame("df", df, ("variant", "task", "quantizer", "relative"), "table3_combos.means")
    pt = tp.pattern_test(df[df.variant.isin(SINGLES)])
    if "default" not in pt.index:
        raise ValueError("df must hold the 'default' procedure (the reference of the rule)")
    paper = _paper_cols(sorted(df.task.unique()))
    rows = []
    for h in HYPOTHESES:
        if h in pt.index:
            moved = [q for q in QUANTIZERS if _in_band(q, pt.loc[h, q]) and not _in_band(q, pt.loc["default", q])]
            rows.append({"hypothesis": h, "moved": ", ".join(moved), "n_moved": len(moved),
                         "distance": _distance(pt.loc[h], paper), "helps": bool(moved)})
    return pd.DataFrame(rows, columns=["hypothesis", "moved", "n_moved", "distance", "helps"])


def triple(table: pd.DataFrame) -> str | None:
    """The rule *the triple* (module docstring) on :func:`helpers`' table: a procedure name, or None."""
    table = check_frame("table", table, ("hypothesis", "n_moved", "distance", "helps"), "table3_combos.helpers",
                        nonempty=False)
    h = table[table.helps.astype(bool)]
    order = sorted(h.itertuples(), key=lambda r: (-r.n_moved, r.distance if np.isfinite(r.distance) else math.inf,
                                                 HYPOTHESES.index(r.hypothesis)))
    return procedure_name([r.hypothesis for r in order[:3]]) if len(order) >= 3 else None


def combination_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per procedure of :func:`means`' frame: the eight column means over tasks, ``passes`` (the pattern test
    on all tasks), ``tasks_passed`` of ``tasks`` (the test on each task alone), ``distance`` (mean |column
    mean − the paper's column mean| on the same tasks) and ``changes`` (how many)."""
    df = check_frame("df", df, ("variant", "task", "quantizer", "relative"), "table3_combos.means")
    pt = tp.pattern_test(df)
    per = {(v, t): bool(tp.pattern_test(s.assign(variant="-")).iloc[0]["passes"])
           for (v, t), s in df.groupby(["variant", "task"], sort=False)}
    paper = _paper_cols(sorted(df.task.unique()))
    out = pt[list(QUANTIZERS) + ["passes"]].copy()
    out["tasks_passed"] = [sum(per.get((v, t), False) for t in df.task.unique()) for v in out.index]
    out["tasks"] = df.task.nunique()
    out["distance"] = [_distance(out.loc[v], paper) for v in out.index]
    out["changes"] = [len(procedure_changes(v)) if v in SINGLES or _SEP in v else -1 for v in out.index]
    return out.rename_axis("procedure")


def best(table: pd.DataFrame) -> str:
    """The rule *the best* (module docstring) on :func:`combination_table`'s table."""
    table = check_frame("table", table, ("tasks_passed", "distance", "changes"), "table3_combos.combination_table")
    cand = [v for v in table.index if v != "default" and table.loc[v, "changes"] >= 1]
    if not cand:
        raise ValueError("table must hold at least one procedure besides 'default'")
    d = table["distance"].where(np.isfinite(table["distance"].astype(float)), math.inf)
    return min(cand, key=lambda v: (-int(table.loc[v, "tasks_passed"]), float(d[v]), int(table.loc[v, "changes"]), v))


def _one_procedure(result) -> tuple[pd.DataFrame, str]:
    if not isinstance(result, RunResult):
        raise TypeError(f"result must be run()'s RunResult, got {type(result).__name__}")
    f = _frame(result)
    if f.variant.nunique() != 1 or "embedder" not in f.columns:
        raise ValueError("result must hold exactly one procedure, with its embedders")
    return f, str(f.variant.iloc[0])


def likely(result: RunResult) -> dict:
    """The rule *the paper's likely procedure* on :func:`run`'s result of one procedure over tasks and
    embedders: ``by_task`` (the test per task, cells averaged over embedders), ``by_embedder`` (per embedder,
    over tasks), ``matrix`` (task × embedder: the test on each cell), the counts ``tasks``, ``embedders``,
    ``pairs`` as (passed, of), ``procedure`` and ``likely``."""
    f, name = _one_procedure(result)

    def test(sub):
        return tp.pattern_test(sub.assign(variant="-")).iloc[0]

    per_emb = means(f, ("variant", "embedder", "task"))
    by_task = pd.DataFrame({t: test(s) for t, s in means(f).groupby("task", sort=False)}).T.infer_objects()
    by_emb = pd.DataFrame({e: test(s) for e, s in per_emb.groupby("embedder", sort=False)}).T.infer_objects()
    matrix = pd.Series({(t, e): bool(test(s)["passes"])
                        for (e, t), s in per_emb.groupby(["embedder", "task"], sort=False)}).unstack().astype(bool)
    nt, ne = len(by_task), len(by_emb)
    kt, ke = int(by_task.passes.sum()), int(by_emb.passes.sum())
    return {"procedure": name, "by_task": by_task, "by_embedder": by_emb, "matrix": matrix,
            "tasks": (kt, nt), "embedders": (ke, ne), "pairs": (int(matrix.to_numpy().sum()), int(matrix.size)),
            "likely": bool(kt > nt / 2 and ke > ne / 2)}


# ---------------------------------------------------------------------------------------------
# Ledger rows (all probes)
# ---------------------------------------------------------------------------------------------
def combo_rows(df: pd.DataFrame) -> list[ledger.Row]:
    """One ``probe`` row per combination (two or more changes) of :func:`means`' frame: the pattern test of
    :func:`.table3_probe.probe_rows`, its note naming the changes."""
    df = check_frame("df", df, ("variant", "task", "quantizer", "relative"), "table3_combos.means")
    keep = [v for v in df.variant.unique() if _SEP in str(v)]
    if not keep:
        raise ValueError("df holds no combination (a procedure of two or more changes)")
    return tp.probe_rows(df[df.variant.isin(keep)], changes={v: describe(v) for v in keep})


def scale_text(result: RunResult) -> str:
    """What ran, in one phrase: tasks, embedders, runs × epochs, molecules, tasks absent offline."""
    if not isinstance(result, RunResult):
        raise TypeError(f"result must be run()'s RunResult, got {type(result).__name__}")
    f, c = _frame(result), result.config
    ep = f" × {c.epochs} epochs" if c is not None else ""
    mm = (", every molecule" if c.max_molecules is None else f", tasks above {c.max_molecules} molecules subsampled "
          "to that many") if c is not None else ""
    miss = f"; absent offline: {', '.join(result.missing)}" if result.missing else ""
    nt, embs = f.task.nunique(), list(dict.fromkeys(f.embedder))
    return (f"{nt} task{'s' if nt != 1 else ''}, embedder{'s' if len(embs) != 1 else ''} {', '.join(embs)}, "
            f"{f.run.nunique()} runs{ep}{mm}{miss}")


def best_rows(result: RunResult) -> list[ledger.Row]:
    """``probe`` rows of the best procedure run on every task and embedder (:func:`run`'s result of one
    procedure): its pattern test per embedder (cells of all tasks), and the rule *the paper's likely
    procedure* (:func:`likely`)."""
    f, name = _one_procedure(result)
    L = likely(result)
    per = means(f, ("embedder", "task", "variant"))
    per = per.assign(variant=name + ", embedder " + per.embedder.astype(str))
    rows = tp.probe_rows(per, changes={v: describe(name) for v in per.variant.unique()})
    (kt, nt), (ke, ne), (kp, npair) = L["tasks"], L["embedders"], L["pairs"]
    rows.append(ledger.claim(
        ledger.Item("Table 3 pattern, the paper's likely procedure", f"procedure {name} passes the pattern test on "
                    "most tasks and embedders", "more than half of the tasks and more than half of the embedders"),
        f"{kt}/{nt} tasks, {ke}/{ne} embedders ({kp}/{npair} task–embedder pairs)", L["likely"], kind="probe",
        tolerance="> 1/2 of the tasks (cells averaged over embedders) and > 1/2 of the embedders (fixed before the runs)",
        note=f"The best combination by the rule fixed in code (changes: {describe(name)}); {scale_text(result)}."))
    return rows


def c19_rows(result: RunResult) -> list[ledger.Row]:
    """Claim 001-C19's rows (chapter 05: ``Table 3, <task>`` Sign / 1.58b cells and ``§5.2.2 / Table 3``
    "Sign and ternary quantizers lose AUROC") recomputed under the procedure of :func:`run`'s result, as
    ``probe`` rows: each cell's relative AUROC (mean over embedders and runs) within :data:`CELL_ATOL` of the
    paper's, and the median loss over the (task, sparse quantizer) cells in :data:`LOSS_BAND`."""
    f, name = _one_procedure(result)
    m = f.groupby(["task", "quantizer"], sort=False)["relative"].mean()
    note = f"Procedure {name} (ours; changes: {describe(name)}); mean over embedders and runs; {scale_text(result)}."
    rows = [ledger.close(ledger.Item(f"Table 3, {t} (procedure {name})", f"relative AUROC, {q}", cells[i][1] / 100),
                         float(m[(t, q)]), kind="probe", atol=CELL_ATOL, basis="chapter 05's tolerance", note=note)
            for t, cells in PAPER_TABLE3.items() if t in m.index.get_level_values(0)
            for i, q in enumerate(PAPER_TABLES345_COLUMNS) if q in tp.SPARSE]
    loss = 1 - m[m.index.get_level_values(1).isin(tp.SPARSE)]
    med = float(loss.median())
    lo, hi = PAPER_SPARSE_AUROC_LOSS
    rows.append(ledger.claim(
        ledger.Item(f"§5.2.2 / Table 3 (procedure {name})", f"Sign and ternary quantizers lose AUROC (paper: "
                    f"{round(100 * lo)}–{round(100 * hi)} %)", f"median loss in [{LOSS_BAND[0]}, {LOSS_BAND[1]}]"),
        med, bool(LOSS_BAND[0] <= med <= LOSS_BAND[1]), kind="probe",
        tolerance=f"median in [{LOSS_BAND[0]:.0%}, {LOSS_BAND[1]:.0%}] (chapter 05's test)",
        note=f"{note} Range of the losses {loss.min():.3f}–{loss.max():.3f} over tasks × 4 quantizers."))
    return rows


def c22_rows(result: RunResult) -> list[ledger.Row]:
    """Claim 001-C22's row (chapter 05: ``§5.2.2 / Figs. 3–4`` privacy–performance trade-off, AUROC) under the
    procedure of :func:`run`'s result (recorded, ``RunConfig(record=True)``), as a ``probe`` row: per task the
    Spearman ρ between mean r_Q^n and mean relative AUROC over the eight quantizers; passes when the median ρ
    is negative and a one-sided binomial test of the negative ρ (null: half) gives p < 0.05."""
    f, name = _one_procedure(result)
    item = ledger.Item(f"§5.2.2 / Figs. 3–4 (procedure {name})", "privacy–performance trade-off (AUROC): larger "
                       "r_Q^n, lower relative performance", "median over tasks of Spearman(r_Q^n, relative) < 0, p < 0.05")
    m = f.groupby(["task", "quantizer"], sort=False)[["r_q", "relative"]].mean().reset_index()
    rhos = []
    for _, g in m.groupby("task", sort=False):
        ok = np.isfinite(g.r_q) & np.isfinite(g.relative)
        if ok.sum() >= 3 and g.r_q[ok].nunique() > 1 and g.relative[ok].nunique() > 1:
            rhos.append(stats.spearmanr(g.r_q[ok], g.relative[ok]).statistic)
    rhos = np.array(rhos, dtype=float)
    rhos = rhos[np.isfinite(rhos)]
    if not rhos.size:
        return [ledger.not_comparable(item, None, kind="probe", reason=f"no task with r_Q^n recorded and varying under "
                                                                        f"procedure {name} ({scale_text(result)})")]
    med, neg = float(np.median(rhos)), int((rhos < 0).sum())
    p = float(stats.binomtest(neg, rhos.size, 0.5, alternative="greater").pvalue)
    return [ledger.claim(item, f"median {med:.2f}; {neg}/{rhos.size} tasks negative, p = {p:.2g}",
                         bool(med < 0 and p < 0.05), kind="probe",
                         tolerance="median < 0 and p < 0.05 (chapter 05's test: one-sided binomial test over tasks)",
                         note=f"Procedure {name} (ours; changes: {describe(name)}): r_Q^n recorded along each "
                              f"trajectory with its own quantizers; means over embedders and runs; {scale_text(result)}.")]
