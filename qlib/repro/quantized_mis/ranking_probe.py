"""A probe of the r_Q^n ranking's stability (paper 001, Figures 1 and 7, §5.1.2): two choices of the
estimator tried each alone, the run average (mean or median over runs) and the de-duplication of
quantized models in Algorithm 1.

Algorithm 1 as printed sorts the K epoch models by mean validation loss and takes
``δ_2 = m_val[2] − m_val[1]``; :mod:`qlib.rqn` keeps identical quantized models once (Θ̄ is a set).
Without that de-duplication a copy of θ̄_1 (the best quantized model met at two or more epochs) sits
at rank 2, so δ_2 = 0 and the printed r_Q^n = r_Q·δ_2² is 0 (its bracket is 0/0, so 0 is the most
favourable reading). Copies of any other model repeat a term of the maximum and change nothing. So
the literal estimator is the de-duplicated one with the runs whose θ̄_1 recurs set to 0
(``r_literal``), and all it needs beyond the study is, per run and quantizer, whether θ̄_1 recurs:
a training callback records it, :func:`copies_study` reruns the synthetic study of chapter 03 (a
subset of its laws) with it, and :func:`variant_table` ranks under each variant.
"""

from __future__ import annotations

import warnings
from typing import Sequence

import numpy as np
import pandas as pd
import torch

from ... import devices, engine, engine_models, losses, quantizers
from ...ranking import average_runs, rq_rank_stability
from ...recorder import RecorderConfig, RQRecorder
from ...rqn import RQUndefinedWarning
from ...synthetic import features, make_laws, sample
from ...validation import check_array, check_int, check_int_sequence, check_seed, check_str, resolve_config
from ..ledger import Item, Row, claim, not_comparable
from .paper import PAPER_RHO_LEVEL
from .study import StudyConfig
from .synthetic_claims import section512_claims

__all__ = ["copies_study", "variant_table", "variant_rows"]

_SIGN_CLAIM = "Sign is less private than 1.58b 33%"


class _BestCopies(engine.Callback):
    """Training callback: for each (quantizer, model) stream, whether the best quantized model θ̄_1
    (the first epoch of smallest mean validation loss, as :func:`qlib.rqn.trajectory_stats` picks it)
    is met at two or more epochs. Identical quantized models are told apart by a float64 projection
    of their parameters. After training: ``copied`` (Q, K) bool and ``count`` (Q, K) int (epochs at
    which θ̄_1 was met)."""

    def __init__(self, model, names: Sequence[str], X_val: torch.Tensor, y_val: torch.Tensor, *,
                 scope: str = "tensor", variant: str = "printed", transform=None, device="cpu"):
        self.names = quantizers.check_names(names)
        engine.check_data(X_val, y_val, None, name="X_val", y_name="y_val", loss="logistic")
        self.model, self.X_val, self.y_val, self.variant, self.transform = model, X_val, y_val, variant, transform
        self.split = engine_models.param_sizes(model) if scope == "tensor" else None
        self.device = devices.resolve(device)
        self._lossfn = losses.loss_functions("logistic")[0]
        Q, K = len(self.names), X_val.shape[0]
        self.count = np.zeros((Q, K), dtype=np.int64)
        self._best = np.full((Q, K), np.inf)
        self._hash = np.zeros((Q, K))
        g = torch.Generator().manual_seed(12345)
        self._proj = torch.randn(model.n_params, generator=g, dtype=torch.float64).to(self.device)

    def on_chunk_start(self, models: slice) -> None:
        Xv = self.X_val[models].to(self.device, torch.float32)
        if self.transform is not None:
            Xv = self.transform(Xv)
        self._data = self.model.prepare(Xv)
        self._yv = self.y_val[models].to(self.device, torch.float32)

    def on_epoch_end(self, epoch: int, theta: torch.Tensor, models: slice) -> None:
        thq = quantizers.quantize_many(self.names, theta.to(self.device), split=self.split, variant=self.variant)
        out = self.model.apply(thq.to(self._yv.dtype), self._data)               # (Q, k, n)
        mean = self._lossfn(out, self._yv).double().mean(dim=-1).cpu().numpy()
        h = (thq.double() @ self._proj).cpu().numpy()                            # (Q, k)
        best, hs, cnt = self._best[:, models], self._hash[:, models], self.count[:, models]
        new = mean < best
        same = ~new & (h == hs)
        self._best[:, models] = np.where(new, mean, best)
        self._hash[:, models] = np.where(new, h, hs)
        self.count[:, models] = np.where(new, 1, cnt + same)

    @property
    def copied(self) -> np.ndarray:
        return self.count >= 2


def copies_study(config: StudyConfig | None = None, *, laws: Sequence[int] | None = None, device="cpu",
                 chunk_size: int | None = None) -> dict:
    """The synthetic study of chapter 03 (:func:`.study.run_study`'s data, model, training and
    recorder), on the laws of index ``laws`` (None: all), with a callback that tracks the copies of the best
    model beside the recorder. Fewer laws draw other data than the full study (the draws are per law and run).
    Returns ``{"names", "laws", "r" (L, Q, R) de-duplicated r_Q^n, "r_literal" (L, Q, R) Algorithm 1
    without de-duplication (0 where θ̄_1 recurs), "copied" (L, Q, R) bool (θ̄_1 met at two or more
    epochs), "n_distinct" (L, Q, R)}``. ``config``: the settings (:class:`.study.StudyConfig`; None: its
    defaults)."""
    cfg = resolve_config(StudyConfig, config)
    chunk_size = check_int("chunk_size", chunk_size, low=1, allow_none=True)
    all_laws = make_laws(cfg.law_seed, grid=cfg.grid, centre_scale=cfg.centre_scale)
    idx = list(range(len(all_laws))) if laws is None else \
        check_int_sequence("laws", laws, low=0, high=len(all_laws) - 1)
    if not idx:
        raise ValueError("laws must name at least one law")
    chosen = [all_laws[i] for i in idx]
    dev = devices.resolve(device)
    L, R, n, nv = len(chosen), cfg.runs, cfg.n, cfg.n_val
    g = torch.Generator().manual_seed(cfg.seed)
    x_tr, y_tr = sample(chosen, (R, n), g)
    x_va, y_va = sample(chosen, (R, nv), g)
    K = L * R
    model = engine_models.Linear(2 * chosen[0].dim)
    theta0 = engine_models.init_params(model, K, torch.Generator().manual_seed(cfg.seed + 1))
    Xv, yv = x_va.reshape(K, nv, -1), y_va.reshape(K, nv)
    rec = RQRecorder(model, cfg.names, Xv, yv,
                     RecorderConfig(epochs=cfg.epochs, transform=features, scope=cfg.scope, device=dev,
                                    variant=cfg.variant))
    cop = _BestCopies(model, cfg.names, Xv, yv, scope=cfg.scope, variant=cfg.variant, transform=features, device=dev)
    engine.train(model, theta0, x_tr.reshape(K, n, -1), y_tr.reshape(K, n),
                 engine.TrainConfig(epochs=cfg.epochs, lr=cfg.lr, device=dev, chunk_size=chunk_size),
                 callbacks=[rec, cop], transform=features)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RQUndefinedWarning)
        rec.finish()
    Q = len(cfg.names)
    shape = lambda a: a.reshape(Q, L, R).transpose(1, 0, 2)  # noqa: E731  (Q, K) -> (L, Q, R)
    r, copied = shape(rec.r), shape(cop.copied)
    return {"names": list(cfg.names), "laws": idx, "r": r, "r_literal": _literal_r(r, copied), "copied": copied,
            "n_distinct": shape(rec.n_distinct)}


def _literal_r(r, copied) -> np.ndarray:
    """Algorithm 1 without de-duplication: the de-duplicated ``r`` (L, Q, R) with 0 where θ̄_1 recurs
    (``copied``, same shape, bool): a copy at rank 2 makes δ_2 = 0. NaN (undefined) stays NaN."""
    r, c = np.asarray(r, dtype=float), np.asarray(copied, dtype=bool)
    return np.where(c & ~np.isnan(r), 0.0, r)


def variant_table(variants: dict, names: Sequence[str], *, k: int = 20, n_subsets: int = 100,
                  seed: int = 0) -> pd.DataFrame:
    """Per variant (``variants``: label -> r (L, Q, R)) and run average (mean, median): the mean
    Spearman ρ (over subsets and laws, undefined ρ left out) of the ranking from ``k`` runs against
    the one from all runs, the share of undefined ρ (all ranks tied), the laws where Sign is less
    private than 1.58b 33 % (the paper's §5.1.2 reading), and the share of runs with r_Q^n = 0."""
    names = quantizers.check_names(names, "names")
    k = check_int("k", k, low=2)
    n_subsets = check_int("n_subsets", n_subsets, low=1)
    seed = check_seed("seed", seed)
    if not isinstance(variants, dict) or not variants:
        raise TypeError("variants must be a non-empty dict label -> r (laws, quantizers, runs)")
    out = []
    for label, r in variants.items():
        r = check_array(f"variants[{label!r}]", r, ndim=3, finite=False)
        if r.shape[1] != len(names):
            raise ValueError(f"variants[{label!r}] has {r.shape[1]} quantizers, names has {len(names)}")
        if k > r.shape[2]:
            raise ValueError(f"k must be at most the runs ({r.shape[2]}), got {k}")
        for how in ("mean", "median"):
            st = rq_rank_stability(r, [k], n_subsets, how=how, seed=seed, allow_nonfinite=True)
            rho = st["spearman"][0]
            ok = np.isfinite(rho)
            summ = average_runs(r, 2, how, allow_nonfinite=True)
            sign = section512_claims(summ, names)[_SIGN_CLAIM]
            out.append({"variant": label, "run average": how, f"ρ at k = {k}": float(rho[ok].mean()) if ok.any() else np.nan,
                        "ρ undefined (share)": float(1 - ok.mean()),
                        "Sign < 1.58b 33 % (laws)": f"{int(sign.sum())}/{len(sign)}",
                        "runs with r = 0 (share)": float(np.mean(r == 0))})
    return pd.DataFrame(out)


def variant_rows(table: pd.DataFrame, *, note: str, skip: Sequence[tuple[str, str]] = ()) -> list[Row]:
    """The rows of :func:`variant_table` as ``probe`` rows (our variants of the estimator, evidence for the
    causes of Figure 1's difference, never a difference themselves): per (variant, run average) not in
    ``skip`` (e.g. the paper's own estimator, already a paper-claim row), the mean Spearman ρ of the
    ``k``-run ranking to the all-run ranking, passing above the paper's level 0.95; ``note`` says which
    runs the table ranked. Not comparable where every ρ is undefined."""
    if not isinstance(table, pd.DataFrame) or not {"variant", "run average"} <= set(table.columns):
        raise TypeError("table must be the frame variant_table returns")
    note = check_str("note", note)
    col = next((c for c in table.columns if str(c).startswith("ρ at k = ")), None)
    if col is None:
        raise ValueError("table lacks its 'ρ at k = …' column (variant_table's)")
    k = str(col)[len("ρ at k = "):]
    skip = {tuple(x) for x in skip}
    rows: list[Row] = []
    for _, t in table.iterrows():
        if (t["variant"], t["run average"]) in skip:
            continue
        item = Item("Figure 1 / §5.1.2 (probe: estimator variants)",
                    f"r_Q^n ranking, {t['variant']}, {t['run average']} over runs: mean Spearman ρ to the full ranking "
                    f"> {PAPER_RHO_LEVEL} at k_run = {k}", f"> {PAPER_RHO_LEVEL}")
        rho = float(t[col])
        why = f"our variant of the estimator ({t['variant']}, {t['run average']} over runs); {note}"
        if not np.isfinite(rho):
            rows.append(not_comparable(item, None, kind="probe", reason=f"{why}; every ρ undefined"))
            continue
        rows.append(claim(item, f"{rho:.3f}", bool(rho > PAPER_RHO_LEVEL), kind="probe",
                          tolerance=f"> {PAPER_RHO_LEVEL} (the paper's level)", note=why))
    return rows
