"""Why does paper 001's Table 3 lose AUROC under Sign and 1.58b and ours not? One hypothesis at a time.

Paper 001's Table 3 (App. F.1) keeps ≈ 0.86–0.94 of the unquantized AUROC under Sign and 1.58b
33/50/90 % and ≈ 0.98–1.00 under 2–5 bits. The molecular chapter's procedure
(:func:`.molecular.train_task`, chapter 05) keeps ≈ 1.00 under Sign and 1.58b 33/50 % and loses up
to 43 % under 1.58b 90 %. Each variant below changes ONE thing of that default procedure (lr 1e-3,
full batch, one hidden layer of 128, z-scored embeddings, per-tensor quantization, AUROC of the
logits, §5.1's reading of 1.58b x %) and is scored like it (relative AUROC = mean over runs of the
per-run ratio quantized / unquantized on the validation set):

* ``default`` — the procedure as it is (the reference; not a hypothesis);
* ``probability`` — hypothesis 1: AUROC of the float32 sigmoid probabilities (saturated
  probabilities tie at 0 or 1) instead of the logits (same trained models as ``default``);
* ``scope_model`` — hypothesis 2: one scale / quantile for the whole parameter vector
  (``scope="model"`` of :mod:`qlib.quantizers`) instead of one per tensor;
* ``lr1e-4_minibatch`` — hypothesis 3: Adam at lr 1e-4 on minibatches of :data:`BATCH_SIZE` (§5.1's
  learning rate; the paper gives neither for §5.2), with its two halves ``lr1e-4`` (full batch) and
  ``minibatch`` (lr 1e-3) for attribution;
* ``raw_features`` — hypothesis 4: unstandardised embeddings;
* ``deep`` — hypothesis 5: two hidden layers of 128 (a "two-layer" network read as two hidden layers);
* ``table_reading`` — hypothesis 6: Table 1's reading of 1.58b x % (keep the x % smallest |θ_j| as
  ±1, zero the rest; :data:`.molecular.TABLE_READING`) instead of §5.1's (``default`` is §5.1's);
  Sign is the same under both readings (same trained models as ``default``);
* ``plain`` — not a hypothesis: the default procedure re-implemented with autograd and
  ``torch.optim.Adam`` (the trainer of ``minibatch`` and ``deep``), to show that trainer alone moves
  no column (a theory-check row against ``default``).

The pattern test (fixed before any variant was run, and not changed after)
--------------------------------------------------------------------------
A variant *reproduces the paper's pattern* on a set of tasks when, with c_q the mean over the tasks
of the relative AUROC of column q (the paper's eight columns, its 1.58b columns under the variant's
reading):

1. every sparse column (Sign, 1.58b 33 %, 50 %, 90 %) has 0.84 ≤ c_q ≤ 0.96;
2. every b-bit column (2, 3, 4, 5 bits) has 0.97 ≤ c_q ≤ 1.01;
3. at least 75 % of the sparse (task, column) cells lie in [0.80, 0.97] (so that one collapsed task
   cannot make a mean land in the band).

The bands are the paper's own range (its sparse column means over the 14 tasks are 0.887–0.901,
its cells 0.79–0.95; its b-bit column means 0.984–0.998) widened by about 0.04 for run-to-run
noise and for our stand-in embedder; the paper's Table 3 passes the test and the "no quantization
loss" null (every column 1.00) fails it (tests). Each variant's test is a ledger row of kind ``probe``
(:func:`probe_rows`: "probe passes" iff the test passes; a variant of ours is never a difference from the
paper). :mod:`.table3_combos` combines the hypotheses (pairs, a triple) and names a procedure the paper's
likely one only if it passes the test on most tasks and embedders.

The subset
----------
MACCS keys (166 bits): the cheapest of our four offline embedders, deterministic, and binary, so
that unstandardised embeddings (hypothesis 4) mean something; App. F.2 finds the quantizers' effect
embedder-independent. The paper profile runs the four binary tasks of Table 3 with fewer than 700
molecules (hERG, HIA_Hou, Bioavailability_Ma, DILI), every molecule, 10 runs × 500 epochs — the
paper's §5.2.1 setting on a quarter of its tasks.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pandas as pd
import torch

from qlib import molecules
from qlib.quantizers import quantize_many
from qlib.repro import ledger
from qlib.validation import check_callable, check_float, check_int, check_seed, resolve_config

from ._table3_train import forward, plain_fit
from .molecular import QUANTIZERS, TABLE_READING, TaskConfig, auroc, split_indices, train_task
from .paper import PAPER_TABLE3, PAPER_TABLES345_COLUMNS

__all__ = ["VARIANTS", "HYPOTHESES", "SPARSE", "BITS", "BATCH_SIZE", "ProbeConfig", "probe", "pattern_test", "pattern_table",
           "probe_rows", "paper_means"]

#: the variants in the order of the chapter's table (module docstring)
VARIANTS = ("default", "probability", "scope_model", "lr1e-4_minibatch", "lr1e-4", "minibatch", "raw_features",
            "deep", "table_reading", "plain")
#: what each variant changes, for tables and the rows' notes
HYPOTHESES = {
    "default": "none: the molecular chapter's procedure (lr 1e-3, full batch, 1 hidden layer, z-scored embeddings, "
               "per-tensor quantization, AUROC of the logits, §5.1's reading of 1.58b x %)",
    "probability": "(1) AUROC of the float32 sigmoid probabilities instead of the logits (same models as default)",
    "scope_model": "(2) quantization of the whole parameter vector (scope='model') instead of each tensor",
    "lr1e-4_minibatch": "(3) Adam lr 1e-4 on minibatches of 32 instead of lr 1e-3 full batch",
    "lr1e-4": "(3a) Adam lr 1e-4, full batch",
    "minibatch": "(3b) minibatches of 32, lr 1e-3",
    "raw_features": "(4) unstandardised embeddings",
    "deep": "(5) two hidden layers of 128 instead of one",
    "table_reading": "(6) Table 1's reading of 1.58b x % (keep the x % smallest |θ| as ±1) instead of §5.1's "
                     "(same models as default; Sign unchanged)",
    "plain": "none: the default procedure on the autograd trainer of 'minibatch' and 'deep' (trainer check)",
}
SPARSE = ("sign", "ternary33", "ternary50", "ternary90")
BITS = ("bits2", "bits3", "bits4", "bits5")
#: minibatch size of the minibatch variants (the paper states none)
BATCH_SIZE = 32
#: the fixed test's bands (module docstring)
SPARSE_BAND = (0.84, 0.96)
BITS_BAND = (0.97, 1.01)
CELL_BAND = (0.80, 0.97)
CELL_SHARE = 0.75

_ENGINE = {  # variant -> train_task options
    "default": {}, "scope_model": {"scope": "model"}, "lr1e-4": {"lr": 1e-4}, "raw_features": {"standardise": False},
}
_PLAIN = {  # variant -> (hidden layers, lr, batch size)
    "plain": (1, 1e-3, None), "minibatch": (1, 1e-3, BATCH_SIZE), "lr1e-4_minibatch": (1, 1e-4, BATCH_SIZE),
    "deep": (2, 1e-3, None),
}
_FROM_DEFAULT = ("probability", "table_reading")


def _check_variants(variants) -> tuple[str, ...]:
    if isinstance(variants, str):
        variants = [variants]
    if not isinstance(variants, (list, tuple)) or not variants:
        raise TypeError(f"variants must be a non-empty list of names from {', '.join(VARIANTS)}, got {variants!r}")
    bad = [v for v in variants if v not in VARIANTS]
    if bad:
        raise ValueError(f"variants must be names from {', '.join(VARIANTS)}; got {bad}")
    return tuple(dict.fromkeys(variants))


# ---------------------------------------------------------------------------------------------
# The driver
# ---------------------------------------------------------------------------------------------
def _row(variant, task, q, rel, auc, orig, runs, seconds) -> dict:
    return {"variant": variant, "task": task, "quantizer": q, "relative": float(np.nanmean(rel)),
            "relative_sd": float(np.nanstd(rel, ddof=1)), "auroc": float(np.nanmean(auc)),
            "original": float(np.nanmean(orig)), "runs": runs, "seconds": float(seconds)}


@dataclass(frozen=True)
class ProbeConfig:
    """The settings of :func:`probe`, checked once when built; frozen. Defaults: the paper profile's
    (module docstring, "The subset").

    ``embedder``: a name registered in :mod:`qlib.molecules` (stored by its canonical name); ``runs``
    (>= 2) × ``epochs`` (>= 1) per (task, variant); ``variants``: names of :data:`VARIANTS` (a tuple,
    duplicates dropped); ``seed``: the i-th task runs from ``seed + i`` (as :func:`.molecular.run_study`);
    ``hidden``: the width of the hidden layer(s) (>= 1)."""

    embedder: str = "maccs"
    runs: int = 10
    epochs: int = 500
    variants: tuple[str, ...] = VARIANTS
    seed: int = 0
    hidden: int = 128

    def __post_init__(self):
        def put(name, value):
            object.__setattr__(self, name, value)

        put("embedder", molecules.embedder(self.embedder).name)
        put("runs", check_int("runs", self.runs, low=2))
        put("epochs", check_int("epochs", self.epochs, low=1))
        put("hidden", check_int("hidden", self.hidden, low=1))
        put("seed", check_seed("seed", self.seed))
        put("variants", _check_variants(self.variants))


def probe(tasks: Sequence[str], config: ProbeConfig | None = None, *, data_dir=None, cache_dir=None,
          progress=None) -> pd.DataFrame:
    """Run each variant (:data:`VARIANTS`) on each binary classification task with one embedder.

    ``tasks``: TDC task names of Table 3. ``config``: the settings (:class:`ProbeConfig`: the embedder,
    ``runs`` × ``epochs`` per (task, variant), the variants, the seed, the width; None: its defaults) —
    ``probe(tasks, ProbeConfig("maccs", runs=10, epochs=500))``.
    The split and the initial parameters are the default's (``seed + i`` for the i-th task, as
    :func:`.molecular.run_study`); ``data_dir`` / ``cache_dir``: the offline data and the embedding cache
    (:func:`qlib.molecules.embed_cached`); ``progress(task, variant, seconds)`` is called after each.
    Returns a tidy frame, one row per (variant, task, quantizer): ``relative`` (mean over runs of the
    per-run relative AUROC), ``relative_sd`` (over runs), ``auroc`` and ``original`` (means), ``runs``
    and ``seconds`` (training time of the variant on the task; 0 for the variants that reuse
    ``default``'s models). The quantizer names are the paper's columns (:data:`.molecular.QUANTIZERS`),
    the 1.58b ones under the variant's reading."""
    cfg = resolve_config(ProbeConfig, config)
    emb_name, runs, epochs, variants, seed, hidden = cfg.embedder, cfg.runs, cfg.epochs, cfg.variants, cfg.seed, cfg.hidden
    if isinstance(tasks, str):
        tasks = [tasks]
    if not isinstance(tasks, (list, tuple)) or not tasks:
        raise TypeError(f"tasks must be a non-empty list of TDC task names, got {tasks!r}")
    names = [molecules.task_info(t).name for t in tasks]
    for t in names:
        if molecules.task_info(t).kind != "classification":
            raise ValueError(f"tasks must be classification tasks (Table 3); {t!r} is a regression task")
    if progress is not None:
        check_callable("progress", progress)
    scored = tuple(QUANTIZERS) + tuple(TABLE_READING)
    rows: list[dict] = []
    for ti, name in enumerate(names):
        task = molecules.load_task(name, data_dir=data_dir)
        emb, _ = molecules.embed_cached(name, task.smiles, emb_name, cache_dir=cache_dir)
        X, y = emb.X.astype(np.float32), task.y[emb.valid]
        s = seed + ti
        common = dict(runs=runs, epochs=epochs, hidden=hidden, seed=s, quantizers=QUANTIZERS[:1],
                      also=scored[1:], record=False)
        jobs = [v for v in variants if v not in _FROM_DEFAULT]
        if "default" not in jobs and any(v in variants for v in _FROM_DEFAULT):
            jobs.insert(0, "default")
        for v in jobs:
            t0 = time.perf_counter()
            if v in _ENGINE:
                run = train_task(X, y, "classification",
                                 TaskConfig(**common, **_ENGINE[v], prob_auroc=(v == "default" and "probability" in variants)))
                sec = time.perf_counter() - t0
                # train_task keeps metrics per (quantizer, run), not the logits
                emit = [(v, "auroc", False)]
                if v == "default":
                    emit = [(var, "auroc_prob" if var == "probability" else "auroc", var == "table_reading")
                            for var in ("default",) + _FROM_DEFAULT if var in variants]
                for var, metric, table in emit:
                    q_, o_ = run.quantized[metric], run.original[metric]
                    with np.errstate(invalid="ignore", divide="ignore"):
                        rel = q_ / o_
                    for qi, qn in enumerate(scored):
                        # Table 1's reading replaces the three 1.58b columns; Sign and b bits are shared
                        is_tab = qn.endswith("_table")
                        if (is_tab != table) and (not table or qn.startswith("ternary")):
                            continue
                        rows.append(_row(var, name, qn.removesuffix("_table"), rel[qi], q_[qi], o_, runs,
                                         sec if var == v else 0.0))
            else:
                layers, lr, bs = _PLAIN[v]
                val, tr = split_indices(X.shape[0], runs=runs, seed=s)
                train_part = np.setdiff1d(np.arange(X.shape[0]), val)
                mu, sd = X[train_part].mean(axis=0), X[train_part].std(axis=0)
                Xs = ((X - mu) / np.where(sd > 0, sd, 1.0)).astype(np.float32)
                _, theta, shapes = plain_fit(Xs, y, tr, layers=layers, hidden=hidden, lr=lr, batch_size=bs,
                                              epochs=epochs, seed=s)
                sec = time.perf_counter() - t0
                split = [int(np.prod(sh)) for sh in shapes]
                with torch.no_grad():
                    xv = torch.from_numpy(Xs[val]).unsqueeze(0).expand(runs, -1, -1)
                    o_ = auroc(forward(theta, xv, shapes).numpy(), y[val], allow_nonfinite=True)
                    q_ = auroc(forward(quantize_many(list(QUANTIZERS), theta, split=split), xv, shapes).numpy(),
                               y[val], allow_nonfinite=True)
                with np.errstate(invalid="ignore", divide="ignore"):
                    rel = q_ / o_
                rows += [_row(v, name, qn, rel[qi], q_[qi], o_, runs, sec) for qi, qn in enumerate(QUANTIZERS)]
            if progress is not None:
                progress(name, v, time.perf_counter() - t0)
    df = pd.DataFrame(rows, columns=["variant", "task", "quantizer", "relative", "relative_sd", "auroc", "original",
                                     "runs", "seconds"])
    order = {v: i for i, v in enumerate(VARIANTS)}
    qo = {q: i for i, q in enumerate(QUANTIZERS)}
    return (df.assign(_v=df.variant.map(order), _q=df.quantizer.map(qo))
              .sort_values(["_v", "task", "_q"]).drop(columns=["_v", "_q"]).reset_index(drop=True))


# ---------------------------------------------------------------------------------------------
# The fixed test
# ---------------------------------------------------------------------------------------------
def _check_frame(df) -> pd.DataFrame:
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"df must be a pandas DataFrame (probe's), got {type(df).__name__}")
    need = {"variant", "task", "quantizer", "relative"}
    if not need <= set(df.columns):
        raise ValueError(f"df must have the columns {sorted(need)}, got {list(df.columns)}")
    if df.empty:
        raise ValueError("df is empty: no variant to test")
    return df


def _one(sub: pd.DataFrame) -> dict:
    piv = sub.pivot_table(index="task", columns="quantizer", values="relative", aggfunc="mean")
    means = {q: float(piv[q].mean()) if q in piv else np.nan for q in QUANTIZERS}
    cells = np.concatenate([piv[q].to_numpy(float) for q in SPARSE if q in piv]) if any(q in piv for q in SPARSE) \
        else np.array([])
    share = float(np.mean((cells >= CELL_BAND[0]) & (cells <= CELL_BAND[1]))) if cells.size else np.nan
    c1 = all(SPARSE_BAND[0] <= means[q] <= SPARSE_BAND[1] for q in SPARSE)     # NaN compares False
    c2 = all(BITS_BAND[0] <= means[q] <= BITS_BAND[1] for q in BITS)
    c3 = bool(share >= CELL_SHARE)
    return {**means, "tasks": int(piv.shape[0]), "sparse_cells_in_band": share,
            "sparse_ok": bool(c1), "bits_ok": bool(c2), "cells_ok": c3, "passes": bool(c1 and c2 and c3)}


def pattern_test(df: pd.DataFrame) -> pd.DataFrame:
    """The fixed test of the module docstring, per variant of ``df`` (:func:`probe`'s frame; a frame
    without a ``variant`` column is one variant, ``"-"``). One row per variant: the eight column
    means over tasks, the number of tasks, the share of sparse cells in [0.80, 0.97], the three
    conditions and ``passes`` (all three; a missing column or a NaN fails)."""
    df = _check_frame(df.assign(variant="-") if isinstance(df, pd.DataFrame) and "variant" not in df.columns else df)
    out = {v: _one(sub) for v, sub in df.groupby("variant", sort=False)}
    return pd.DataFrame.from_dict(out, orient="index").rename_axis("variant")


def paper_means(tasks: Sequence[str] | None = None) -> pd.DataFrame:
    """The paper's Table 3 as :func:`probe`'s frame (variant ``"paper"``, relative = its printed
    percentage / 100), on ``tasks`` (None: its 14 tasks; tasks it does not print are skipped)."""
    if tasks is not None and (isinstance(tasks, str) or not isinstance(tasks, (list, tuple))):
        raise TypeError(f"tasks must be a list of task names or None, got {tasks!r}")
    keep = PAPER_TABLE3 if tasks is None else {t: PAPER_TABLE3[t] for t in tasks if t in PAPER_TABLE3}
    if not keep:
        raise ValueError(f"none of {tasks} is a task of the paper's Table 3 ({', '.join(PAPER_TABLE3)})")
    rows = [{"variant": "paper", "task": t, "quantizer": q, "relative": cells[i][1] / 100.0}
            for t, cells in keep.items() for i, q in enumerate(PAPER_TABLES345_COLUMNS) if q in QUANTIZERS]
    return pd.DataFrame(rows)


def pattern_table(df: pd.DataFrame) -> pd.DataFrame:
    """:func:`pattern_test` of every variant of ``df`` beside the paper's own Table 3 on the same tasks
    (first row), with what each variant changes; column means rounded to 3 decimals."""
    df = _check_frame(df)
    pt = pattern_test(pd.concat([paper_means(sorted(df.task.unique())), df], ignore_index=True))
    pt.insert(0, "changes", [HYPOTHESES.get(v, "the paper's printed Table 3") for v in pt.index])
    return pt.round(3)


# ---------------------------------------------------------------------------------------------
# Ledger rows
# ---------------------------------------------------------------------------------------------
def _means_text(r) -> str:
    return ", ".join(f"{q} {r[q]:.3f}" for q in QUANTIZERS)


def probe_rows(df: pd.DataFrame, *, plain_atol: float = 0.02, changes: Mapping[str, str] | None = None) -> list[ledger.Row]:
    """Ledger rows of :func:`probe`'s frame (or of :func:`.table3_combos.means`): per variant but ``plain``
    one ``probe`` row "the paper's Table 3 pattern (sparse columns lose 6–20 %, b bits ≈ 1) holds under
    this procedure of ours" — *probe passes* iff the fixed test passes; the paper's own Table 3 on the same
    tasks and the "no quantization loss" null (every column 1.00) are judged by the same test in the note
    (a probe carries no null) —, its note saying what the variant changes (``changes``: variant → text;
    None: :data:`HYPOTHESES`); and for ``plain`` a ``theory-check`` row: the autograd trainer's column
    means against ``default``'s within ``plain_atol``."""
    df = _check_frame(df)
    plain_atol = check_float("plain_atol", plain_atol, low=0.0)
    if changes is not None and not isinstance(changes, Mapping):
        raise TypeError(f"changes must be a mapping variant -> what it changes, or None; got {type(changes).__name__}")
    changes = HYPOTHESES if changes is None else changes
    tasks = sorted(df.task.unique())
    paper = pattern_test(paper_means(tasks)).iloc[0] if any(t in PAPER_TABLE3 for t in tasks) else None
    pt = pattern_test(df)
    null = pattern_test(pd.DataFrame([{"variant": "null", "task": t, "quantizer": q, "relative": 1.0}
                                      for t in tasks for q in QUANTIZERS])).iloc[0]
    test = (f"every sparse column mean in [{SPARSE_BAND[0]}, {SPARSE_BAND[1]}], every b-bit one in "
            f"[{BITS_BAND[0]}, {BITS_BAND[1]}], ≥ {CELL_SHARE:.0%} of sparse cells in [{CELL_BAND[0]}, {CELL_BAND[1]}] "
            "(fixed before the runs)")
    runs = int(df.runs.iloc[0]) if "runs" in df.columns else None
    scale = f"{len(tasks)} task(s) ({', '.join(tasks)}), {runs} runs" if runs else f"{len(tasks)} task(s)"
    judged = (f"On the same test the paper's Table 3 on these tasks {'passes' if paper is not None and paper['passes'] else 'fails'}"
              f" and the no-quantization-loss null (every column 1.00) {'passes' if null['passes'] else 'fails'}.")
    rows = []
    for v, r in pt.iterrows():
        if v == "plain":
            continue
        paper_text = _means_text(paper) if paper is not None else "sparse ≈ 0.86–0.94, b bits ≈ 0.98–1.00"
        rows.append(ledger.claim(ledger.Item(f"Table 3 pattern, variant {v}", "relative AUROC column means (Sign, 1.58b 33/50/90 %, 2–5 bits)",
                                             paper_text), _means_text(r), bool(r["passes"]), kind="probe", tolerance=test,
                                 note=f"Our variant, changes: {changes.get(v, v)}. {scale}; sparse cells in band "
                                      f"{r['sparse_cells_in_band']:.0%}. {judged}"))
    if "plain" in pt.index and "default" in pt.index:
        a, b = pt.loc["plain"], pt.loc["default"]
        diff = max(abs(a[q] - b[q]) for q in QUANTIZERS)
        rows.append(ledger.close(ledger.Item("Table 3 probe, trainer check", "max |Δ| of the relative AUROC column means, autograd trainer vs engine",
                                             0.0), float(diff), kind="theory-check", atol=plain_atol,
                                 note=f"The default procedure run by the autograd trainer of the minibatch and deep variants against the "
                                      f"batched engine (same split and initial parameters): plain {_means_text(a)}; {scale}."))
    return rows
