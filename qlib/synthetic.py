"""The nine Gaussian-mixture laws of the synthetic study (paper 001, §5.1.1 and App. E).

Each law is a mixture in R^128 (``dim``) of ``k_modes ∈ {6, 8, 16}`` isotropic Gaussians of
standard deviation ``sigma ∈ {1.5, 2, 3}``, each cluster carrying a label in {0, 1}. The paper does
not say how the centres and labels are drawn; this module's documented scheme is:

* **centres** μ_1, …, μ_k i.i.d. ~ N(0, s² I_dim) with ``centre_scale`` s = 1.4 (one value for all
  nine laws, chosen once so that the held-out accuracy of the unquantized model is of the order of
  the paper's Table 2 identity column: the spec's trial found s ≈ 1.4 matches it to about 0.02);
* **labels** balanced: a random permutation of k/2 zeros and k/2 ones over the clusters;
* **weights** uniform: a sample picks its cluster uniformly, then x = μ_c + sigma·ε, y = label_c.

The law itself (centres, labels) is drawn from ``law_seed`` and the law's position in the grid, so
that every run of an experiment sees the same nine laws; samples are drawn from a separate
``torch.Generator`` so that each run gets fresh i.i.d. sets. Classifier inputs are the features
[x, x²] (element-wise square) of §5.1.1: :func:`features`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

__all__ = [
    "K_MODES",
    "SIGMAS",
    "GRID",
    "CENTRE_SCALE",
    "MixtureLaw",
    "make_law",
    "make_laws",
    "sample",
    "features",
    "PAPER_QUANTIZERS",
    "StudyResult",
    "run_study",
]

K_MODES = (6, 8, 16)
SIGMAS = (1.5, 2.0, 3.0)
#: the 9 laws in the order of the paper's Table 2: sigma outer, k_modes inner
GRID = tuple((s, k) for s in SIGMAS for k in K_MODES)
CENTRE_SCALE = 1.4
DIM = 128


@dataclass(frozen=True)
class MixtureLaw:
    """One Gaussian mixture: ``centres`` (k_modes, dim) float64, ``labels`` (k_modes,) int64."""

    k_modes: int
    sigma: float
    centres: torch.Tensor
    labels: torch.Tensor

    @property
    def dim(self) -> int:
        return int(self.centres.shape[1])

    @property
    def name(self) -> str:
        return f"σ={self.sigma:g}, {self.k_modes} modes"

    def sample(self, shape: int | Sequence[int], generator: torch.Generator,
               dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
        """Draw i.i.d. points: returns x (*shape, dim) and y (*shape,) float labels in {0, 1}."""
        x, y = sample([self], shape, generator, dtype=dtype)
        return x[0], y[0]


def _check_positive_int(name: str, v, minimum: int = 1) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"{name} must be an int, got {type(v).__name__}")
    if v < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {v}")
    return v


def make_law(k_modes: int, sigma: float, *, dim: int = DIM, centre_scale: float = CENTRE_SCALE,
             seed: int = 0) -> MixtureLaw:
    """Draw one law (centres ~ N(0, centre_scale² I), balanced labels) from ``seed``."""
    _check_positive_int("k_modes", k_modes, 2)
    if k_modes % 2:
        raise ValueError(f"k_modes must be even (balanced labels), got {k_modes}")
    _check_positive_int("dim", dim, 1)
    for nm, v in (("sigma", sigma), ("centre_scale", centre_scale)):
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            raise TypeError(f"{nm} must be a real number, got {type(v).__name__}")
        if not (v > 0 and v < float("inf")):
            raise ValueError(f"{nm} must be finite and > 0, got {v}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    g = torch.Generator().manual_seed(seed)
    centres = centre_scale * torch.randn(k_modes, dim, generator=g, dtype=torch.float64)
    labels = torch.cat([torch.zeros(k_modes // 2), torch.ones(k_modes // 2)]).long()
    labels = labels[torch.randperm(k_modes, generator=g)]
    return MixtureLaw(int(k_modes), float(sigma), centres, labels)


def make_laws(seed: int = 0, *, grid: Sequence[tuple[float, int]] = GRID, dim: int = DIM,
              centre_scale: float = CENTRE_SCALE) -> list[MixtureLaw]:
    """The laws of ``grid`` ((sigma, k_modes) pairs; default: the paper's 9, Table 2 order).

    Law i is drawn from seed ``1000 * seed + i`` so that the laws differ from one another.
    """
    if len(grid) == 0:
        raise ValueError("grid must hold at least one (sigma, k_modes) pair")
    return [make_law(int(k), float(s), dim=dim, centre_scale=centre_scale, seed=1000 * seed + i)
            for i, (s, k) in enumerate(grid)]


def sample(laws: Sequence[MixtureLaw], shape: int | Sequence[int], generator: torch.Generator,
           dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    """Fresh i.i.d. samples from every law at once.

    Returns x of shape (len(laws), *shape, dim) and y of shape (len(laws), *shape) (float 0/1).
    """
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    if len(laws) == 0:
        raise ValueError("laws must hold at least one MixtureLaw")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    for s in shape:
        _check_positive_int("shape entries", s, 1)
    dims = {law.dim for law in laws}
    if len(dims) != 1:
        raise ValueError(f"all laws must share one dimension, got {sorted(dims)}")
    dim = dims.pop()
    kmax = max(law.k_modes for law in laws)
    L = len(laws)
    centres = torch.zeros(L, kmax, dim, dtype=torch.float64)
    labels = torch.zeros(L, kmax)
    for i, law in enumerate(laws):
        centres[i, : law.k_modes] = law.centres
        labels[i, : law.k_modes] = law.labels.to(labels.dtype)
    k = torch.tensor([law.k_modes for law in laws], dtype=torch.float64)
    sig = torch.tensor([law.sigma for law in laws], dtype=torch.float64)
    u = torch.rand((L, *shape), generator=generator, dtype=torch.float64)
    kshape = (L,) + (1,) * len(shape)
    c = torch.clamp((u * k.view(kshape)).long(), max=kmax - 1)           # cluster index
    flat_c = c.reshape(L, -1)
    mu = torch.gather(centres, 1, flat_c.unsqueeze(-1).expand(-1, -1, dim)).reshape(L, *shape, dim)
    eps = torch.randn((L, *shape, dim), generator=generator, dtype=torch.float64)
    x = mu + sig.view(*kshape, 1) * eps
    y = torch.gather(labels, 1, flat_c).reshape(L, *shape)
    return x.to(dtype), y.to(dtype)


def features(x: torch.Tensor) -> torch.Tensor:
    """The classifier's inputs [x, x²] (element-wise square), last dimension doubled (§5.1.1)."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
    if x.ndim < 1:
        raise ValueError("x must have at least one dimension")
    if not torch.isfinite(x).all():
        raise ValueError("x contains non-finite values")
    return torch.cat([x, x * x], dim=-1)


# ---------------------------------------------------------------------------------------------
# The study of §5.1: train k_run models per law, r_Q^n per quantizer, accuracies, baselines
# ---------------------------------------------------------------------------------------------
PAPER_QUANTIZERS = ("sign", "ternary33", "ternary50", "ternary90", "bits2", "bits3", "bits4", "bits5")


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
        import json
        import os
        import tempfile
        from pathlib import Path

        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        meta = json.dumps({"config": self.config, "names": self.names, "acc_names": self.acc_names,
                           "seconds": self.seconds})
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".npz")
        os.close(fd)
        np.savez_compressed(tmp, meta=np.array(meta), **{k: getattr(self, k) for k in self._ARRAYS})
        os.replace(tmp, path)

    @classmethod
    def load(cls, path) -> "StudyResult":
        import json

        with np.load(path) as z:
            meta = json.loads(str(z["meta"]))
            arrays = {k: z[k] for k in cls._ARRAYS}
        return cls(meta["config"], meta["names"], meta["acc_names"], seconds=meta["seconds"], **arrays)

    # summaries ---------------------------------------------------------------------------
    def r_summary(self, how: str = "mean") -> np.ndarray:
        """(L, Q) r_Q^n averaged over runs ('mean' or 'median', NaN runs ignored)."""
        if how not in ("mean", "median"):
            raise ValueError(f"how must be 'mean' or 'median', got {how!r}")
        f = np.nanmean if how == "mean" else np.nanmedian
        with np.errstate(all="ignore"):
            import warnings
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                return f(self.r, axis=2)


def _study_key(config: dict) -> str:
    import hashlib
    import json

    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:16]


def run_study(*, runs: int = 300, epochs: int = 3000, n: int = 128, n_val: int = 128, lr: float = 1e-4,
              names: Sequence[str] = PAPER_QUANTIZERS, grid: Sequence[tuple[float, int]] = GRID,
              centre_scale: float = CENTRE_SCALE, scope: str = "tensor", seed: int = 0,
              law_seed: int = 0, discriminator: bool = True, disc_hidden: int = 16,
              disc_epochs: int = 30, disc_patience: int = 8, disc_lr: float = 1e-2,
              disc_runs_per_batch: int = 2,
              device="auto", chunk_size: int | None = None, block: int = 50,
              cache_dir=None, progress: bool = False) -> StudyResult:
    """The synthetic study of paper 001 §5.1 at any scale (paper: the defaults).

    All L·runs models (one fresh training set of ``n`` points and one fresh validation set of
    ``n_val`` points per run) are trained together by :func:`qlib.engine.train` (full-batch Adam,
    ``lr``, ``epochs``) with :class:`qlib.estimators.RQRecorder` recording every epoch for every
    quantizer. The validation points double as the baselines' negatives (fresh, never trained on).
    With ``cache_dir``, the result is stored under a hash of the configuration and reloaded.
    """
    import time
    from pathlib import Path

    from . import devices, discriminator as disc, engine, estimators

    names = estimators.check_quantizer_names(names)
    if "identity" in names:
        raise ValueError("names must list quantizers only; the identity model is always added")
    for nm, v, lo in (("runs", runs, 3), ("epochs", epochs, 1), ("n", n, 2), ("n_val", n_val, 2)):
        _check_positive_int(nm, v, lo)
    config = dict(runs=runs, epochs=epochs, n=n, n_val=n_val, lr=lr, names=list(names),
                  grid=[list(map(float, g)) for g in grid], centre_scale=centre_scale, scope=scope,
                  seed=seed, law_seed=law_seed, discriminator=discriminator, disc_hidden=disc_hidden,
                  disc_epochs=disc_epochs, disc_patience=disc_patience, disc_lr=disc_lr,
                  disc_runs_per_batch=disc_runs_per_batch)
    if cache_dir is not None:
        path = Path(cache_dir) / f"study-{_study_key(config)}.npz"
        if path.is_file():
            return StudyResult.load(path)
    dev = devices.resolve(device)
    seconds = {}
    t0 = time.perf_counter()
    laws = make_laws(law_seed, grid=grid, centre_scale=centre_scale)
    L, R = len(laws), runs
    g = torch.Generator().manual_seed(seed)
    x_tr, y_tr = sample(laws, (R, n), g)
    x_va, y_va = sample(laws, (R, n_val), g)
    K = L * R
    model = engine.Linear(2 * laws[0].dim)
    theta0 = engine.init_params(model, K, torch.Generator().manual_seed(seed + 1))
    rec = estimators.RQRecorder(model, names, x_va.reshape(K, n_val, -1), y_va.reshape(K, n_val),
                                epochs=epochs, transform=features, scope=scope, device=dev,
                                block=block)
    res = engine.train(model, theta0, x_tr.reshape(K, n, -1), y_tr.reshape(K, n), epochs=epochs,
                       lr=lr, callbacks=[rec], device=dev, chunk_size=chunk_size, transform=features)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", estimators.RQUndefinedWarning)
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
    lossfn = engine.LOSSES["logistic"][0]
    for s0 in range(0, K, cs):
        sl = slice(s0, min(K, s0 + cs))
        thq = estimators.quantize_many(model, res.theta[sl].to(dev), acc_names, scope)
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
    t3 = time.perf_counter()
    if discriminator:
        th = thq_all.reshape(Qa, L, R, -1).transpose(0, 1).reshape(L * Qa, R, -1)
        group_law = np.repeat(np.arange(L), Qa)
        dres = disc.train_discriminators(
            th, x_tr[:, :, :nneg], li.reshape(L * Qa, R, nneg), x_va[:, :, :nneg], lo.reshape(L * Qa, R, nneg),
            tr_runs, es_runs, te_runs, group_law=group_law, hidden=disc_hidden, lr=disc_lr,
            epochs=disc_epochs, patience=disc_patience, runs_per_batch=disc_runs_per_batch, seed=seed,
            device=dev)
        dm, dl, dh = (a.reshape(L, Qa) for a in (dres.mis, dres.mis_lo, dres.mis_hi))
    else:
        dm = dl = dh = np.full((L, Qa), np.nan)
    seconds["discriminator"] = time.perf_counter() - t3
    seconds["total"] = time.perf_counter() - t0

    out = StudyResult(
        config=config, names=list(names), acc_names=acc_names,
        r=rec.r.reshape(len(names), L, R).transpose(1, 0, 2),
        n_distinct=rec.n_distinct.reshape(len(names), L, R).transpose(1, 0, 2),
        acc_val=acc_val.reshape(Qa, L, R).transpose(1, 0, 2),
        acc_train=acc_tr.reshape(Qa, L, R).transpose(1, 0, 2),
        loss_in=li, loss_out=lo,
        thr_mis=thr.mis.reshape(L, Qa), thr_lo=thr.mis_lo.reshape(L, Qa), thr_hi=thr.mis_hi.reshape(L, Qa),
        disc_mis=dm, disc_lo=dl, disc_hi=dh, seconds=seconds)
    if cache_dir is not None:
        out.save(path)
    return out


# ---------------------------------------------------------------------------------------------
# Paper values (Table 2 of paper 001, App. E) and the chapter's tables
# ---------------------------------------------------------------------------------------------
#: Table 2's columns as printed (the table is captioned "Description of the quantizers" but holds
#: accuracies; the σ=1.5 / 6 modes row lost its identity cell in one text copy, restored from the
#: other: 0.996)
PAPER_TABLE2_COLUMNS = ("sign", "ternary33", "ternary50", "bits2", "ternary90", "bits3", "bits4", "bits5",
                        "identity")
PAPER_TABLE2 = {
    (1.5, 6): (0.954, 0.980, 0.981, 0.986, 0.938, 0.993, 0.995, 0.995, 0.996),
    (1.5, 8): (0.904, 0.946, 0.953, 0.958, 0.897, 0.973, 0.978, 0.980, 0.981),
    (1.5, 16): (0.825, 0.870, 0.878, 0.889, 0.805, 0.912, 0.920, 0.923, 0.925),
    (2.0, 6): (0.822, 0.876, 0.892, 0.894, 0.890, 0.928, 0.941, 0.945, 0.950),
    (2.0, 8): (0.760, 0.811, 0.833, 0.831, 0.833, 0.869, 0.885, 0.892, 0.897),
    (2.0, 16): (0.681, 0.724, 0.737, 0.741, 0.729, 0.772, 0.787, 0.793, 0.798),
    (3.0, 6): (0.625, 0.662, 0.681, 0.684, 0.779, 0.724, 0.746, 0.757, 0.767),
    (3.0, 8): (0.595, 0.622, 0.639, 0.636, 0.716, 0.670, 0.689, 0.697, 0.706),
    (3.0, 16): (0.555, 0.575, 0.585, 0.581, 0.635, 0.604, 0.616, 0.622, 0.628),
}
#: Figure 2: mean Spearman ρ between r_Q^n and the baseline MIS over the 9 laws
PAPER_MEAN_SPEARMAN = 0.86


def law_labels(config_grid) -> list[str]:
    """'σ=1.5, 6 modes', … for the grid stored in a StudyResult's config."""
    return [f"σ={s:g}, {int(k)} modes" for s, k in config_grid]


def table2(res: StudyResult, which: str = "acc_val"):
    """Table 2 as (ours, paper) long frame: law, quantizer, accuracy (mean over runs), ratio to
    the identity model, the paper's accuracy and ratio (NaN where the law is not in the paper)."""
    import pandas as pd

    if which not in ("acc_val", "acc_train"):
        raise ValueError(f"which must be 'acc_val' or 'acc_train', got {which!r}")
    acc = getattr(res, which).mean(axis=2)                                # (L, Q+1)
    rows = []
    for li, (s, k) in enumerate(res.config["grid"]):
        paper = PAPER_TABLE2.get((float(s), int(k)))
        for qi, name in enumerate(res.acc_names):
            p = paper[PAPER_TABLE2_COLUMNS.index(name)] if paper and name in PAPER_TABLE2_COLUMNS else np.nan
            pid = paper[-1] if paper else np.nan
            rows.append({"sigma": float(s), "k_modes": int(k), "quantizer": name, "ours": acc[li, qi],
                         "ours_ratio": acc[li, qi] / acc[li, 0], "paper": p, "paper_ratio": p / pid})
    return pd.DataFrame(rows)


def claims(values: np.ndarray, names: Sequence[str]) -> dict[str, np.ndarray]:
    """The paper's qualitative claims of §5.1.2, per law, for values (L, Q) where larger = more
    private (r_Q^n or MIS): 4/5 bits the two least private, 1.58b 90% the most private, Sign less
    private than 1.58b 33%. Returns law-wise booleans."""
    v = np.asarray(values, dtype=np.float64)
    names = list(names)
    idx = {n: names.index(n) for n in ("bits4", "bits5", "ternary90", "sign", "ternary33")}
    order = np.argsort(np.where(np.isnan(v), np.inf, v), axis=1)          # least private first
    two_least = np.sort(order[:, :2], axis=1)
    want = np.sort([idx["bits4"], idx["bits5"]])
    return {
        "4 and 5 bits are the two least private": (two_least == want).all(axis=1),
        "1.58b 90% is the most private": np.nanargmax(v, axis=1) == idx["ternary90"],
        "Sign is less private than 1.58b 33%": v[:, idx["sign"]] < v[:, idx["ternary33"]],
    }
