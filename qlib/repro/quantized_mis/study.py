"""The synthetic study of paper 001 §5.1 (experiment driver) and its cache.

:func:`run_study` trains every law × run model at once (:func:`qlib.engine.train`), records r_Q^n for
every quantizer (:class:`qlib.recorder.RQRecorder`), and estimates the two baseline MIS
(:mod:`qlib.discriminator`). The result is cached under a key of the configuration AND of the
sources of every module the study runs (:func:`code_hash`), so a code change never reuses a stale
result. Its settings are one frozen record, :class:`StudyConfig` (checked once when built, keyed for
the cache, shown by the chapter with :meth:`StudyConfig.describe`). Chapter 03 runs it and saves it to its results folder; chapter 04 declares 03 as a dependency
and reads it from there (:func:`load_study`). Two more the chapters share: :func:`scale_note` (the run's
scale against the paper's, for notes and prose) and :func:`variant_effect` (the study under both b-bit
formulas, shown by chapters 01 and 03).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import time
import warnings
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd
import torch

from ... import devices, engine, engine_models, losses, quantizers
from ... import discriminator as disc
from ...atomic import atomic_file
from ...ranking import average_runs, ranks, spearman
from ...recorder import RecorderConfig, RQRecorder
from ...resume import check_units
from ...rqn import RQUndefinedWarning
from ...synthetic import CENTRE_SCALE, GRID, check_grid, features, make_laws, sample
from ...validation import check_choice, check_float, check_int, check_seed, resolve_config
from .paper import PAPER_QUANTIZERS, PAPER_TABLE2, PAPER_TABLE2_COLUMNS, STUDY_SETTINGS

__all__ = ["StudyConfig", "StudyResult", "run_study", "STUDY_MODULES", "code_hash", "study_key", "STUDY_FILE",
           "load_study", "table2", "scale_note", "variant_effect"]

#: the modules whose code decides a study's result (the cache key hashes their sources)
STUDY_MODULES = ("qlib.engine", "qlib.engine_models", "qlib.losses", "qlib.rqn", "qlib.recorder", "qlib.mis",
                 "qlib.ranking", "qlib.discriminator", "qlib.quantizers", "qlib.synthetic", "qlib.validation", "qlib.devices",
                 "qlib.repro.quantized_mis.study")
#: file name of a study saved by chapter 03 in its results folder
STUDY_FILE = "study.npz"


def code_hash(modules: Sequence[str] = STUDY_MODULES) -> str:
    """SHA-256 (16 hex digits) of the source files of ``modules``, in order."""
    h = hashlib.sha256()
    for m in modules:
        spec = importlib.util.find_spec(m)
        if spec is None or spec.origin is None:
            raise ValueError(f"module {m!r} has no source file to hash")
        h.update(m.encode())
        h.update(Path(spec.origin).read_bytes())
    return h.hexdigest()[:16]


def study_key(config: "StudyConfig | dict") -> str:
    """Cache key of a study: its configuration (a :class:`StudyConfig`, or its :meth:`~StudyConfig.as_dict`)
    and the code that runs it (:func:`code_hash`)."""
    if isinstance(config, StudyConfig):
        config = config.as_dict()
    elif not isinstance(config, dict):
        raise TypeError(f"config must be a StudyConfig or its as_dict(), got {type(config).__name__}")
    blob = json.dumps(config, sort_keys=True) + code_hash()
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class StudyConfig:
    """The settings of one synthetic study (paper 001 §5.1), checked once when built; frozen, hashable
    and keyed (:meth:`key`; the cache adds the code, :func:`study_key`). Defaults: the paper's
    (:data:`~.paper.STUDY_SETTINGS`, :data:`~.paper.PAPER_QUANTIZERS`, the nine laws of
    ``qlib.synthetic.GRID``).

    ``runs`` models per law (>= 3: the baselines split the runs in three), each trained for
    ``epochs`` full-batch Adam epochs at ``lr`` on ``n`` fresh points and validated on ``n_val``
    fresh points; ``names`` the quantizers (the identity model is always added; a Table 1 reading
    of 1.58b x% such as ``ternary33_table`` may be listed); ``grid`` the (σ, modes) laws, their
    centres drawn from ``law_seed`` at ``centre_scale``; ``scope`` and ``variant`` of the quantizers
    (``qlib.quantizers.SCOPES`` / ``VARIANTS``); ``seed`` the data, initialisations and run split;
    ``discriminator`` the settings of the paper's discriminator baseline
    (:class:`qlib.discriminator.DiscriminatorConfig`, the one record of them; its ``seed`` and ``device`` are
    the study's: ``seed`` and :func:`run_study`'s ``device``), None: not trained."""

    runs: int = STUDY_SETTINGS["runs"]
    epochs: int = STUDY_SETTINGS["epochs"]
    n: int = STUDY_SETTINGS["n"]
    n_val: int = STUDY_SETTINGS["n"]
    lr: float = STUDY_SETTINGS["lr"]
    names: tuple[str, ...] = PAPER_QUANTIZERS
    grid: tuple[tuple[float, int], ...] = GRID
    centre_scale: float = CENTRE_SCALE
    scope: str = "tensor"
    seed: int = 0
    law_seed: int = 0
    discriminator: disc.DiscriminatorConfig | None = disc.DiscriminatorConfig()
    variant: str = "printed"

    def __post_init__(self):
        def put(name, value):
            object.__setattr__(self, name, value)

        for nm, lo in (("runs", 3), ("epochs", 1), ("n", 2), ("n_val", 2)):
            put(nm, check_int(nm, getattr(self, nm), low=lo))
        for nm in ("lr", "centre_scale"):
            put(nm, check_float(nm, getattr(self, nm), low=0.0, low_open=True))
        names = tuple(quantizers.check_names(self.names, "names"))
        if "identity" in names:
            raise ValueError("names must list quantizers only; the identity model is always added")
        put("names", names)
        put("grid", tuple(check_grid(self.grid)))
        put("seed", check_seed("seed", self.seed))
        put("law_seed", check_seed("law_seed", self.law_seed))
        if not (self.discriminator is None or isinstance(self.discriminator, disc.DiscriminatorConfig)):
            raise TypeError("discriminator must be a qlib.discriminator.DiscriminatorConfig or None (no discriminator), "
                            f"got {self.discriminator!r}")
        check_choice("scope", self.scope, quantizers.SCOPES)
        check_choice("variant", self.variant, quantizers.VARIANTS)

    def as_dict(self) -> dict:
        """The fields as plain JSON types: the ``config`` a :class:`StudyResult` carries and the cache
        key hashes (``names`` a list, ``grid`` a list of [σ, modes] floats)."""
        d = asdict(self)
        d["names"] = list(self.names)
        d["grid"] = [list(map(float, g)) for g in self.grid]
        d["discriminator"] = None if self.discriminator is None else self.discriminator.as_dict()
        return d

    @classmethod
    def from_dict(cls, config: dict) -> "StudyConfig":
        """The record of a :class:`StudyResult`'s ``config`` (:meth:`as_dict`)."""
        if not isinstance(config, dict):
            raise TypeError(f"config must be a dict (StudyConfig.as_dict()), got {type(config).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(config) - known)
        if unknown:
            raise ValueError(f"config holds fields StudyConfig does not have: {', '.join(unknown)}")
        if isinstance(config.get("discriminator"), dict):
            config = {**config, "discriminator": disc.DiscriminatorConfig(**config["discriminator"])}
        return cls(**config)

    def key(self) -> str:
        """SHA-256 (16 hex digits) of the fields: the same settings give the same key in every process
        (the cache's key adds the code, :func:`study_key`)."""
        return hashlib.sha256(json.dumps(self.as_dict(), sort_keys=True).encode()).hexdigest()[:16]

    def describe(self) -> str:
        """Markdown table of the settings beside the paper's (§5.1.1), for the chapter."""
        paper = {**STUDY_SETTINGS, "names": PAPER_QUANTIZERS, "grid": GRID}
        out = ["| setting | this run | paper (§5.1) |", "|---|---|---|"]
        for f in fields(self):
            v, p = getattr(self, f.name), paper.get(f.name)
            if f.name == "discriminator":
                shown = "none" if v is None else v.summary()
            elif f.name == "names":
                shown = ", ".join(v)
            elif f.name == "grid":
                shown = " ".join(f"({s:g}, {k})" for s, k in v)
            else:
                shown = f"{v:g}" if isinstance(v, float) else str(v)
            if p is None:
                ref = "—"
            elif f.name in ("names", "grid"):
                ref = "the same" if tuple(map(tuple, p)) == tuple(map(tuple, v)) else "other"
            else:
                ref = f"{p:g}" if isinstance(p, float) else str(p)
            out.append(f"| `{f.name}` | {shown} | {ref} |")
        return "\n".join(out)


@dataclass
class StudyResult:
    """Everything the chapter tabulates. Axes: L laws, Q quantizers (``names``), R runs.

    ``r`` (L, Q, R) r_Q^n per run; ``n_distinct`` (L, Q, R); ``acc_val`` / ``acc_train``
    (L, Q+1, R) accuracies of the final quantized models, identity first (``acc_names``);
    ``loss_in`` / ``loss_out`` (L, Q+1, R, min(n, n_val)) losses of the final quantized models on
    the (first) training points / on fresh points (the negatives of the baselines); ``thr_*`` and ``disc_*``
    (L, Q+1) the loss-threshold and discriminator MIS estimates with their intervals;
    ``seconds`` the wall time of each stage.
    """

    config: dict
    names: list
    acc_names: list
    r: np.ndarray
    n_distinct: np.ndarray
    acc_val: np.ndarray
    acc_train: np.ndarray
    loss_in: np.ndarray
    loss_out: np.ndarray
    thr_mis: np.ndarray
    thr_lo: np.ndarray
    thr_hi: np.ndarray
    disc_mis: np.ndarray
    disc_lo: np.ndarray
    disc_hi: np.ndarray
    seconds: dict

    _ARRAYS = ("r", "n_distinct", "acc_val", "acc_train", "loss_in", "loss_out", "thr_mis", "thr_lo",
               "thr_hi", "disc_mis", "disc_lo", "disc_hi")

    def save(self, path) -> None:
        meta = json.dumps({"config": self.config, "names": self.names, "acc_names": self.acc_names,
                           "seconds": self.seconds})
        with atomic_file(path) as fh:
            np.savez_compressed(fh, meta=np.array(meta), **{k: getattr(self, k) for k in self._ARRAYS})

    @classmethod
    def load(cls, path) -> "StudyResult":
        with np.load(path) as z:
            meta = json.loads(str(z["meta"]))
            arrays = {k: z[k] for k in cls._ARRAYS}
        return cls(meta["config"], meta["names"], meta["acc_names"], seconds=meta["seconds"], **arrays)

    # summaries ---------------------------------------------------------------------------
    def r_summary(self, how: str = "mean") -> np.ndarray:
        """(L, Q) r_Q^n averaged over runs ('mean' or 'median', NaN runs ignored)."""
        return average_runs(self.r, 2, how, allow_nonfinite=True)


def run_study(config: StudyConfig | None = None, *, device="auto", chunk_size: int | None = None, block: int = 50,
              cache_dir=None, units=None) -> StudyResult:
    """The synthetic study of paper 001 §5.1 at any scale (paper: :class:`StudyConfig`'s defaults).

    ``config``: the study's settings (:class:`StudyConfig`; None: its defaults): ``run_study(StudyConfig(runs=5))``,
    ``run_study(dataclasses.replace(cfg, runs=5))``. All L·runs models (one fresh training set of ``n`` points
    and one fresh validation set of ``n_val`` points per run) are trained together by
    :func:`qlib.engine.train` (full-batch Adam, ``lr``, ``epochs``) with
    :class:`qlib.recorder.RQRecorder` recording every epoch for every quantizer. The validation
    points double as the baselines' negatives (fresh, never trained on). ``variant``: the b-bit
    formula (``qlib.quantizers.VARIANTS``). ``names`` may include the Table 1 reading of 1.58b x%
    (``qlib.quantizers.TERNARY_TABLE``).

    Run-time settings that do not change the result stay outside the record: ``device``,
    ``chunk_size`` (models per training chunk), ``block`` (the recorder's epochs per block) and
    ``cache_dir``: with it, the result is stored under :func:`study_key` — a hash of the record
    AND of the sources of the code the study runs (:func:`code_hash`) — and reloaded. ``units`` (a
    :class:`qlib.resume.Units`): the study's two stages are units — the training of every model with
    r_Q^n recorded, the final models and the threshold baseline; then the discriminator, which is
    batched over laws — saved when done and reused by a rerun (each stage is seeded from the record
    alone, so a resumed study equals an uninterrupted one).
    """
    cfg = resolve_config(StudyConfig, config)
    check_int("block", block, low=1)
    check_int("chunk_size", chunk_size, low=1, allow_none=True)
    check_units("units", units)
    config = cfg.as_dict()
    if cache_dir is not None:
        path = Path(cache_dir) / f"study-{study_key(config)}.npz"
        if path.is_file():
            return StudyResult.load(path)
    dev = devices.resolve(device)
    key = {"config": config, "device": dev.type}

    def stage1():
        return _train_stage(cfg, dev, chunk_size, block)

    st = stage1() if units is None else units.run("synthetic_study_train", key, stage1)
    seconds = dict(st["seconds"])

    def stage2():
        return _discriminator_stage(cfg, dev, st)

    dm, dl, dh, seconds["discriminator"] = stage2() if units is None else units.run(
        "synthetic_study_discriminator", key, stage2)
    seconds["total"] = sum(seconds.values())   # the stages' own times (a reused stage keeps its first run's)
    names, L, R, Qa = cfg.names, st["L"], cfg.runs, len(st["acc_names"])
    li, lo, thr = st["loss_in"], st["loss_out"], st["thr"]

    out = StudyResult(
        config=config, names=list(names), acc_names=st["acc_names"],
        r=st["r"].reshape(len(names), L, R).transpose(1, 0, 2),
        n_distinct=st["n_distinct"].reshape(len(names), L, R).transpose(1, 0, 2),
        acc_val=st["acc_val"].reshape(Qa, L, R).transpose(1, 0, 2),
        acc_train=st["acc_train"].reshape(Qa, L, R).transpose(1, 0, 2),
        loss_in=li, loss_out=lo,
        thr_mis=thr.mis.reshape(L, Qa), thr_lo=thr.mis_lo.reshape(L, Qa), thr_hi=thr.mis_hi.reshape(L, Qa),
        disc_mis=dm, disc_lo=dl, disc_hi=dh, seconds=seconds)
    if cache_dir is not None:
        out.save(path)
    return out


def _train_stage(cfg: StudyConfig, dev, chunk_size, block) -> dict:
    """:func:`run_study`'s first stage: every model trained with r_Q^n recorded, the final models'
    accuracies and losses, the threshold baseline."""
    runs, epochs, n, n_val, lr = cfg.runs, cfg.epochs, cfg.n, cfg.n_val, cfg.lr
    names, grid, centre_scale, scope, seed = cfg.names, cfg.grid, cfg.centre_scale, cfg.scope, cfg.seed
    law_seed, variant = cfg.law_seed, cfg.variant
    seconds = {}
    t0 = time.perf_counter()
    laws = make_laws(law_seed, grid=grid, centre_scale=centre_scale)
    L, R = len(laws), runs
    g = torch.Generator().manual_seed(seed)
    x_tr, y_tr = sample(laws, (R, n), g)
    x_va, y_va = sample(laws, (R, n_val), g)
    K = L * R
    model = engine_models.Linear(2 * laws[0].dim)
    theta0 = engine_models.init_params(model, K, torch.Generator().manual_seed(seed + 1))
    rec = RQRecorder(model, names, x_va.reshape(K, n_val, -1), y_va.reshape(K, n_val),
                     RecorderConfig(epochs=epochs, transform=features, scope=scope, device=dev, block=block,
                                    variant=variant))
    res = engine.train(model, theta0, x_tr.reshape(K, n, -1), y_tr.reshape(K, n),
                       engine.TrainConfig(epochs=epochs, lr=lr, device=dev, chunk_size=chunk_size), callbacks=[rec],
                       transform=features)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RQUndefinedWarning)
        rec.finish()
    seconds["train_and_r_q"] = time.perf_counter() - t0

    # final models: accuracies and losses, identity first
    t1 = time.perf_counter()
    acc_names = ["identity"] + list(names)
    Qa = len(acc_names)
    acc_val = np.empty((Qa, K))
    acc_tr = np.empty((Qa, K))
    nneg = min(n, n_val)
    loss_in = np.empty((Qa, K, nneg), dtype=np.float32)
    loss_out = np.empty((Qa, K, nneg), dtype=np.float32)
    thq_all = torch.empty(Qa, K, model.n_params)
    cs = 256
    lossfn = losses.loss_functions("logistic")[0]
    split = engine_models.param_sizes(model) if scope == "tensor" else None
    for s0 in range(0, K, cs):
        sl = slice(s0, min(K, s0 + cs))
        thq = quantizers.quantize_many(acc_names, res.theta[sl].to(dev), split=split, variant=variant)
        thq_all[:, sl] = thq.cpu()
        for xs, ys, acc, lo_arr in ((x_tr, y_tr, acc_tr, loss_in), (x_va, y_va, acc_val, loss_out)):
            xx = features(xs.reshape(K, xs.shape[2], -1)[sl].to(dev))
            yy = ys.reshape(K, -1)[sl].to(dev)
            out = model.apply(thq, model.prepare(xx))
            acc[:, sl] = ((out > 0).float() == yy).float().mean(dim=-1).cpu().numpy()
            lo_arr[:, sl] = lossfn(out, yy)[..., :nneg].cpu().numpy()
    seconds["final_models"] = time.perf_counter() - t1

    # baselines, one per (law, quantizer) including the identity model
    t2 = time.perf_counter()
    li = loss_in.reshape(Qa, L, R, nneg).transpose(1, 0, 2, 3)              # (L, Qa, R, nneg)
    lo = loss_out.reshape(Qa, L, R, nneg).transpose(1, 0, 2, 3)
    tr_runs, es_runs, te_runs = disc.split_runs(R, seed=seed)
    thr = disc.threshold_attack(li.reshape(L * Qa, R, nneg), lo.reshape(L * Qa, R, nneg),
                                np.concatenate([tr_runs, es_runs]), te_runs)
    seconds["threshold"] = time.perf_counter() - t2
    return {"L": L, "acc_names": acc_names, "r": np.asarray(rec.r), "n_distinct": np.asarray(rec.n_distinct),
            "acc_val": acc_val, "acc_train": acc_tr, "loss_in": li, "loss_out": lo, "thr": thr,
            "thq_all": thq_all, "x_tr": x_tr[:, :, :nneg].clone(), "x_va": x_va[:, :, :nneg].clone(),
            "splits": (tr_runs, es_runs, te_runs), "seconds": seconds}


def _discriminator_stage(cfg: StudyConfig, dev, st: dict):
    """:func:`run_study`'s second stage: the discriminator baseline on the first stage's final models
    ((L, Qa) MIS, its interval, and the stage's seconds)."""
    t3 = time.perf_counter()
    L, R, Qa, seed = st["L"], cfg.runs, len(st["acc_names"]), cfg.seed
    li, lo, nneg = st["loss_in"], st["loss_out"], st["loss_in"].shape[-1]
    tr_runs, es_runs, te_runs = st["splits"]
    thq_all, x_tr, x_va = st["thq_all"], st["x_tr"], st["x_va"]
    if cfg.discriminator:
        th = thq_all.reshape(Qa, L, R, -1).transpose(0, 1).reshape(L * Qa, R, -1)
        group_law = np.repeat(np.arange(L), Qa)
        dres = disc.train_discriminators(
            th, x_tr[:, :, :nneg], li.reshape(L * Qa, R, nneg), x_va[:, :, :nneg], lo.reshape(L * Qa, R, nneg),
            (tr_runs, es_runs, te_runs), group_law=group_law,
            config=replace(cfg.discriminator, seed=seed, device=dev))
        dm, dl, dh = (a.reshape(L, Qa) for a in (dres.mis, dres.mis_lo, dres.mis_hi))
    else:
        dm = dl = dh = np.full((L, Qa), np.nan)
    return dm, dl, dh, time.perf_counter() - t3


def load_study(results_dir, chapter: str = "quantized-mis/03-synthetic-study") -> StudyResult:
    """The study saved by chapter ``chapter`` under ``results_dir`` (the runner's results folder)."""
    path = Path(results_dir) / chapter / STUDY_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: run {chapter} first (it is a declared dependency)")
    return StudyResult.load(path)


def table2(res: StudyResult, which: str = "acc_val"):
    """Table 2 as (ours, paper) long frame: law, quantizer, accuracy (mean over runs), ratio to
    the identity model, the paper's accuracy and ratio (NaN where the law is not in the paper). A
    Table 1 reading of 1.58b x% (``ternary33_table`` …) is set against the paper's 1.58b x% column."""
    check_choice("which", which, ("acc_val", "acc_train"))
    acc = getattr(res, which).mean(axis=2)                                # (L, Q+1)
    rows = []
    for li, (s, k) in enumerate(res.config["grid"]):
        paper = PAPER_TABLE2.get((float(s), int(k)))
        for qi, name in enumerate(res.acc_names):
            col = _TEXT_OF.get(name, name)
            p = paper[PAPER_TABLE2_COLUMNS.index(col)] if paper and col in PAPER_TABLE2_COLUMNS else np.nan
            pid = paper[-1] if paper else np.nan
            rows.append({"sigma": float(s), "k_modes": int(k), "quantizer": name, "ours": acc[li, qi],
                         "ours_ratio": acc[li, qi] / acc[li, 0], "paper": p, "paper_ratio": p / pid})
    return pd.DataFrame(rows)


#: a Table 1 reading's name → the paper column it stands for (its text-reading name)
_TEXT_OF = {v: k for k, v in quantizers.TERNARY_TABLE.items()}


def scale_note(res: StudyResult) -> str:
    """'100 runs × 3000 epochs (paper 300 × 3000)' for notes and prose."""
    c = res.config
    return (f"{c['runs']} runs × {c['epochs']} epochs per law (paper {STUDY_SETTINGS['runs']} × "
            f"{STUDY_SETTINGS['epochs']})")


def variant_effect(config: StudyConfig, *, device="auto", cache_dir=None) -> tuple[pd.DataFrame, dict]:
    """How much the b-bit formula (printed vs capped, ``qlib.quantizers.VARIANTS``) changes the
    study: runs :func:`run_study` on ``config`` with each variant (its own ``variant`` replaced) and
    returns, per quantizer, mean r_Q^n (mean over runs, then over laws), mean Table 2 accuracy and
    mean rank under each variant, and a summary (mean Spearman ρ between the two r_Q^n rankings over
    laws, largest accuracy change). ``device`` and ``cache_dir`` go to :func:`run_study`."""
    if not isinstance(config, StudyConfig):
        raise TypeError(f"config must be a StudyConfig, got {type(config).__name__}")
    res = {v: run_study(replace(config, variant=v), device=device, cache_dir=cache_dir) for v in quantizers.VARIANTS}
    a, b = (res[v] for v in quantizers.VARIANTS)
    ra, rb = a.r_summary("mean"), b.r_summary("mean")
    acc_a, acc_b = a.acc_val.mean(axis=2)[:, 1:], b.acc_val.mean(axis=2)[:, 1:]
    labels = quantizers.labels()
    frame = pd.DataFrame({
        "quantizer": [labels[q] for q in a.names],
        f"r_Q^n ({quantizers.VARIANTS[0]})": np.nanmean(ra, axis=0),
        f"r_Q^n ({quantizers.VARIANTS[1]})": np.nanmean(rb, axis=0),
        f"accuracy ({quantizers.VARIANTS[0]})": acc_a.mean(axis=0),
        f"accuracy ({quantizers.VARIANTS[1]})": acc_b.mean(axis=0),
        f"mean rank ({quantizers.VARIANTS[0]})": ranks(ra, axis=-1, allow_nonfinite=True).mean(axis=0),
        f"mean rank ({quantizers.VARIANTS[1]})": ranks(rb, axis=-1, allow_nonfinite=True).mean(axis=0),
    })
    summary = {"rho": float(np.nanmean(spearman(ra, rb, allow_nonfinite=True))), "max_acc_change": float(np.abs(acc_a - acc_b).max()),
               "laws": ra.shape[0], "runs": a.config["runs"], "epochs": a.config["epochs"]}
    return frame, summary
