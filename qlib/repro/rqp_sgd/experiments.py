"""The experiments of paper 004 (RQP-SGD): datasets, Table 1 and Figure 2 drivers.

The paper's settings are in :mod:`.settings`. Settings it leaves unstated, chosen here (each is a
keyword so a notebook can change it):

* Diagnostic = scikit-learn's ``load_breast_cancer`` (same data as UCI WDBC), one 80/20
  ``train_test_split(random_state=split_seed)`` (455/114), StandardScaler fit on the training split,
  bias feature 1 appended. Labels {0, 1} for logreg, {−1, +1} for the SVM.
* MNIST = the IDX files via :func:`qlib.data.load_mnist`, pixels/255, bias appended, d = 10·785.
* Baseline σ = z·clip with z from dp-accounting's RDP accountant (Poisson rate m/n, T steps, δ);
  ``calibration="gaussian"`` instead takes the paper's Gaussian-mechanism formula (§2)
  z = √(2 ln(1.25/δ))/ε for every step (no composition, no subsampling).
* RQP σ (Table 1): swept on a grid with q from Theorem 1 at (ε, b); the σ with the best median
  test accuracy is reported ("tuned on test", as the paper appears to have done).

The drivers :func:`rqp_sweep` and :func:`run_methods` (and :func:`.figure2.bits_sweep`) take what they
evaluate as arguments (ε, the σ grid or σ, the bits) and how the runs are made as one frozen
:class:`RunConfig` (runs, seed, the C of Theorem 1, the batch sampling, the device):
``rqp_sweep(task, setting, eps=1.0, sigmas=grid, config=RunConfig(runs=3))``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from qlib.dpsgd import DPSGDConfig

from ... import data as qdata
from ...dpsgd import SAMPLINGS, Task, train
from ...rqp_privacy import C_MODES, check_bits, dpsgd_noise_multiplier, solve_q
from ...validation import (
    check_alloc,
    check_choice,
    check_float,
    check_frame,
    check_int,
    check_int_sequence,
    check_positive,
    check_seed,
    resolve_config,
)
from ._args import check_sigmas
from .paper import DIAGNOSTIC_TEST_SIZE, METHOD_NAMES, PAPER_RUNS
from .settings import Setting

#: how the baselines' σ is calibrated (:func:`baseline_sigma`): our RDP accountant (default) or the
#: paper's Gaussian-mechanism formula applied to each step
BASELINE_CALIBRATIONS = ("accountant", "gaussian")

__all__ = ["BASELINE_CALIBRATIONS", "RunConfig", "diagnostic_task", "mnist_task", "baseline_sigma", "rqp_q", "rqp_sweep", "run_methods", "summarise",
           "best_sigma", "sigma_at_q", "sklearn_reference", "majority_rate"]


def _with_bias(X: np.ndarray) -> np.ndarray:
    return np.hstack([X, np.ones((X.shape[0], 1), dtype=X.dtype)])


def diagnostic_task(model: str = "logreg", *, split_seed: int = 0, test_size: float = DIAGNOSTIC_TEST_SIZE) -> Task:
    """Breast Cancer Wisconsin (Diagnostic) from scikit-learn: 80/20 split, standardised, bias appended."""
    # deferred: scikit-learn is optional (the book extra)
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    check_choice("model", model, ("logreg", "svm"))
    split_seed = check_int("split_seed", split_seed, low=0)
    test_size = check_float("test_size", test_size, low=0.0, high=1.0, low_open=True, high_open=True)
    X, y = load_breast_cancer(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=test_size, random_state=split_seed)
    sc = StandardScaler().fit(Xtr)
    Xtr, Xte = _with_bias(sc.transform(Xtr)), _with_bias(sc.transform(Xte))
    if model == "svm":
        ytr, yte = 2 * ytr - 1, 2 * yte - 1
    return Task(f"diagnostic-{model}", model, Xtr, ytr.astype(np.int64), Xte, yte.astype(np.int64), 2)


def mnist_task(*, data_dir=None, n_train: int | None = None, n_test: int | None = None, subset_seed: int = 0) -> Task:
    """MNIST softmax regression: pixels/255, bias appended; optional random subsets (for small profiles).

    The arguments are checked before the files are read."""
    n_train = check_int("n_train", n_train, low=1, allow_none=True)
    n_test = check_int("n_test", n_test, low=1, allow_none=True)
    rng = np.random.default_rng(check_seed("subset_seed", subset_seed))
    Xtr, ytr = qdata.load_mnist("train", data_dir=data_dir)
    Xte, yte = qdata.load_mnist("test", data_dir=data_dir)
    if n_train is not None and n_train < len(ytr):
        keep = rng.choice(len(ytr), n_train, replace=False)
        Xtr, ytr = Xtr[keep], ytr[keep]
    if n_test is not None and n_test < len(yte):
        keep = rng.choice(len(yte), n_test, replace=False)
        Xte, yte = Xte[keep], yte[keep]
    f = lambda X: _with_bias(X.reshape(len(X), -1).astype(np.float32) / 255.0)  # noqa: E731
    return Task("mnist-softmax", "softmax", f(Xtr), ytr, f(Xte), yte, 10)


def _setting(setting) -> Setting:
    if not isinstance(setting, Setting):
        raise TypeError(f"setting must be a Setting, got {type(setting).__name__}")
    return setting


def _task(task) -> Task:
    if not isinstance(task, Task):
        raise TypeError(f"task must be a Task, got {type(task).__name__}")
    return task


def _n(n, setting: Setting) -> int:
    """The training-set size: an integer >= the mini-batch size m (sampling rate m/n <= 1)."""
    return check_int("n (training-set size)", n, low=setting.m)


def baseline_sigma(eps: float, setting: Setting, n: int, *, calibration: str = "accountant") -> float:
    """σ of DP-SGD / Proj-DP-SGD at (ε, δ): z·clip. ``calibration``: "accountant" (default), z from
    the RDP accountant (rate m/n, T steps); "gaussian", the paper's Gaussian mechanism (§2)
    z = √(2 ln(1.25/δ))/ε for each step, as if one step spent the whole (ε, δ)."""
    setting = _setting(setting)
    n = _n(n, setting)
    check_choice("calibration", calibration, BASELINE_CALIBRATIONS)
    if calibration == "gaussian":
        eps = check_positive("eps", eps)
        return float(np.sqrt(2 * np.log(1.25 / setting.delta)) / eps) * setting.clip
    return dpsgd_noise_multiplier(eps, setting.delta, setting.m / n, setting.T) * setting.clip


def rqp_q(eps: float, sigma, setting: Setting, n: int, *, b: int | None = None, c_mode: str = "paper"):
    """q from Theorem 1 so that RQP-SGD is (ε, 0)-DP at noise σ (array in, array out)."""
    s = _setting(setting)
    n = _n(n, s)
    return solve_q(eps, sigma, b=s.b if b is None else check_bits(b), M=s.M, rho=s.clip, eta=s.eta, m=s.m, T=s.T, n=n,
                   c_mode=c_mode)


@dataclass(frozen=True)
class RunConfig:
    """How the runs of a driver are made (:func:`rqp_sweep`, :func:`run_methods`,
    :func:`.figure2.bits_sweep`): ``runs`` independent runs per grid point or method (the paper: 10,
    §4), their ``seed`` (run r of a call is seeded from it), ``c_mode`` — the C of Theorem 1 when q is
    solved from (ε, σ) (:data:`qlib.rqp_privacy.C_MODES`; "paper": C = M − ηρ as printed) —,
    ``sampling`` of the mini-batches (:data:`qlib.dpsgd.SAMPLINGS`; "with_replacement" is Algorithm 2's
    step 3) and the torch ``device`` ("auto", "cpu", "cuda" or a ``torch.device``). Every field is
    checked (a bad value raises a ValueError/TypeError naming the field)."""

    runs: int = PAPER_RUNS
    seed: int = 0
    c_mode: str = "paper"
    sampling: str = "with_replacement"
    device: str = "auto"

    def __post_init__(self):
        object.__setattr__(self, "runs", check_int("runs", self.runs, low=1))
        object.__setattr__(self, "seed", check_seed("seed", self.seed))
        check_choice("c_mode", self.c_mode, C_MODES)
        check_choice("sampling", self.sampling, SAMPLINGS)


def rqp_sweep(task: Task, setting: Setting, *, eps: float, sigmas, b: int | None = None,
              config: RunConfig | None = None) -> pd.DataFrame:
    """RQP-SGD over a σ grid with q = q(ε, σ) from Theorem 1 at ``b`` bits (None: the setting's): one
    batched call for all σ × runs. ``config`` (a :class:`RunConfig`; None: its defaults; e.g.
    ``RunConfig(runs=3)``) says how the runs are made.

    Returns one row per (σ, run): eps, b, sigma, q, run, acc (test accuracy in %).
    """
    cfg = resolve_config(RunConfig, config)
    task, setting = _task(task), _setting(setting)
    b = setting.b if b is None else check_bits(b)
    sig = check_sigmas("sigmas", sigmas)
    runs = cfg.runs
    check_alloc("runs", len(sig) * runs, 8 * 8, value=runs, what="the σ × runs grid of runs")
    qs = np.atleast_1d(rqp_q(eps, sig, setting, task.n, b=b, c_mode=cfg.c_mode))
    S = len(sig)
    res = train(task, "rqp",
                DPSGDConfig(runs=S * runs, T=setting.T, m=setting.m, eta=setting.eta, clip=setting.clip,
                            sigma=np.repeat(sig, runs), q=np.repeat(qs, runs), b=b, M=setting.M, sampling=cfg.sampling,
                            seed=cfg.seed, device=cfg.device))
    return pd.DataFrame({"eps": eps, "b": b, "sigma": np.repeat(sig, runs), "q": np.repeat(qs, runs),
                         "run": np.tile(np.arange(runs), S), "acc": 100 * res.test_acc})


def run_methods(task: Task, setting: Setting, *, eps: float, rqp_sigma: float, baseline_calibration: str = "accountant",
                config: RunConfig | None = None) -> pd.DataFrame:
    """The four methods of Table 1 on one task; one row per (method, run) with acc in %.

    DP-SGD / Proj-DP-SGD: σ = z·clip for (ε, δ) (``baseline_calibration``: see :func:`baseline_sigma`).
    RQP-SGD: ``rqp_sigma`` with q = q(ε, σ) (Theorem 1). ``config`` (a :class:`RunConfig`; None: its
    defaults) says how the runs are made; every method runs from the
    same seed.
    """
    cfg = resolve_config(RunConfig, config)
    task, s = _task(task), _setting(setting)
    rqp_sigma = check_positive("rqp_sigma", rqp_sigma)
    runs = cfg.runs
    sig_b = baseline_sigma(eps, s, task.n, calibration=baseline_calibration)
    q = float(rqp_q(eps, rqp_sigma, s, task.n, c_mode=cfg.c_mode))
    rows = []
    for method, sigma, qq in (("sgd", 0.0, 1.0), ("dpsgd", sig_b, 1.0), ("projdp", sig_b, 1.0), ("rqp", rqp_sigma, q)):
        r = train(task, method,
                  DPSGDConfig(runs=runs, T=s.T, m=s.m, eta=s.eta, clip=s.clip, sigma=sigma, q=qq, b=s.b, M=s.M,
                              sampling=cfg.sampling, seed=cfg.seed, device=cfg.device))
        rows.append(pd.DataFrame({"method": METHOD_NAMES[method], "sigma": sigma, "q": qq,
                                  "run": np.arange(runs), "acc": 100 * r.test_acc}))
    return pd.concat(rows, ignore_index=True)


def summarise(df: pd.DataFrame, by) -> pd.DataFrame:
    """Median and (sample) std of ``acc`` per group of ``by``, as in the paper's "median (std)", and the
    group's ``runs``. ``df``: a frame of runs (:func:`run_methods`', :func:`rqp_sweep`'s) with at least one
    row and a column ``acc`` of finite numbers (a NaN or inf accuracy is no run: refused, with its row);
    ``by``: a column of ``df`` or a list of them, without NaN (a row without a group would be dropped).
    Each refusal is a ``ValueError`` (``TypeError`` for a wrong kind) naming ``df`` or ``by``."""
    cols = _check_by(df, by)
    acc = df["acc"]
    if not pd.api.types.is_numeric_dtype(acc) or pd.api.types.is_bool_dtype(acc):
        raise TypeError(f"df's column 'acc' must hold test accuracies (numbers, %), got dtype {acc.dtype}")
    bad = ~np.isfinite(acc.to_numpy(dtype=float))
    if bad.all():
        raise ValueError(f"df's column 'acc' holds no finite accuracy (all {len(df)} rows NaN or inf): nothing to "
                         "summarise")
    if bad.any():
        raise ValueError(f"df's column 'acc' must hold finite accuracies (a NaN or inf accuracy is no run), got "
                         f"{acc[bad].iloc[0]} at row {acc.index[bad][0]!r}")
    for c in cols:
        if df[c].isna().any():
            raise ValueError(f"by's column {c!r} of df must have a value in every row (a row without a group "
                             f"would be dropped), got NaN at row {df.index[df[c].isna()][0]!r}")
    g = df.groupby(cols if isinstance(by, (list, tuple)) else by, sort=False)["acc"]
    return pd.DataFrame({"median": g.median(), "std": g.std(ddof=1), "runs": g.size()})


def _check_by(df, by) -> list:
    """``by`` as a list of columns of ``df``, after ``df`` is checked: a DataFrame with a column ``acc`` and
    at least one row (errors naming ``df`` or ``by``)."""
    check_frame("df", df, ["acc"])
    cols = list(by) if isinstance(by, (list, tuple)) else [by]
    if not cols:
        raise ValueError("by must be a column of df or a non-empty list of them, got an empty list")
    for c in cols:
        try:
            ok = c in df.columns
        except TypeError:  # unhashable
            ok = False
        if not ok:
            raise ValueError(f"by must name columns of df ({', '.join(map(repr, df.columns))}), got {c!r}")
    return cols


def best_sigma(sweep: pd.DataFrame) -> tuple[float, float, float]:
    """(σ, q, median acc) of the grid point with the highest median test accuracy ("tuned on test")."""
    s = sweep.groupby(["sigma", "q"])["acc"].median().reset_index()
    r = s.loc[s["acc"].idxmax()]
    return float(r["sigma"]), float(r["q"]), float(r["acc"])


def sigma_at_q(sweep: pd.DataFrame, q_target: float) -> float:
    """The grid σ whose q is closest to ``q_target``."""
    q_target = check_float("q_target", q_target, low=0.0, high=1.0)
    s = sweep.drop_duplicates("sigma")
    return float(s.loc[(s["q"] - q_target).abs().idxmin(), "sigma"])



def sklearn_reference(model: str = "logreg", split_seeds=(0,)) -> np.ndarray:
    """Test accuracy (%) of scikit-learn's converged, non-private fit on the same preprocessing, one
    value per split seed: a ceiling for one epoch of clipped SGD (LogisticRegression or LinearSVC,
    default C, the bias as the appended feature)."""
    # deferred: scikit-learn is optional (the book extra)
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import LinearSVC

    check_choice("model", model, ("logreg", "svm"))
    out = []
    for s in check_int_sequence("split_seeds", split_seeds, low=0):
        t = diagnostic_task(model, split_seed=int(s))
        clf = LogisticRegression(max_iter=5000, fit_intercept=False) if model == "logreg" else \
            LinearSVC(fit_intercept=False, max_iter=20000)
        out.append(100 * clf.fit(t.X_train, t.y_train).score(t.X_test, t.y_test))
    return np.asarray(out)



def majority_rate(task: Task) -> float:
    """Test accuracy (%) of the classifier that always predicts the training set's majority class."""
    task = _task(task)
    vals, counts = np.unique(task.y_train, return_counts=True)
    return float(100 * np.mean(task.y_test == vals[np.argmax(counts)]))
