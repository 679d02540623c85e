"""Chapter ``attacks/04``: auditing DP-SGD and RQP-SGD on the Diagnostic task of paper 004
({cite:p}`feng2023rqpsgd`) — a membership-inference attack on a canary, its TPR/FPR set against the
hypothesis-testing region that the accountant's (ε, δ) implies (:mod:`qlib.attacks.dp_bound`).

The protocol (one canary, many models; {cite:p}`jagielski2020auditing`, {cite:p}`nasr2021adversary`):
R models are trained *with* the canary and R *without* it — two batched :func:`qlib.dpsgd.train` calls with
the same hyperparameters and different seeds — and each final model w_T is scored by the canary's
margin (2y − 1)·w_T·x (for logistic regression the loss is a decreasing function of it, so loss and
margin give the same ROC). The runs with the canary are the "members".

Choices where nothing is prescribed, with reasons:

* **Data.** Diagnostic exactly as the RQP-SGD part prepares it (scikit-learn's breast-cancer data, one
  80/20 split, standardised on the training split, a bias feature 1 appended; logistic regression, labels
  {0, 1}); ``tests/test_repro_attacks_dp.py`` checks the arrays equal that part's.
* **Adjacency: add or remove one example**, as dp-accounting's RDP accountant assumes for DP-SGD. The
  *typical* canary is a training point — the point of the majority class nearest its class mean (the
  least exposed kind of example): "with" is the training set, "without" the set less that point. The
  *worst-case* canary is added: a point far out along the training features' direction of least
  variance (:data:`WORST_SCALE` × the largest training-row norm, so its gradient is always clipped to
  the full ρ, in a direction the other examples' gradients hardly touch), labelled with the minority
  class (against the prior the bias learns, so its gradient never vanishes).
* **Noise.** DP-SGD: σ = z·ρ with z from the RDP accountant for (ε, δ), sampling rate m/n and T steps
  (n = the training set without the worst-case canary, as the RQP-SGD part calibrates).
  RQP-SGD: σ is an argument (``rqp_sigma``) and q is solved from Theorem 1 at (ε, σ) as printed
  (``c_mode="paper"``, the linear composition T·(m/n)·ε_t, δ = 0).
* **Sampling.** The accountant assumes Poisson sampling at rate m/n; :func:`qlib.dpsgd.train` draws
  fixed-size batches of m examples with replacement (Algorithm 2 of paper 004; ``sampling=``), so the
  canary is in a step's batch with probability 1 − (1 − 1/n)^m ≈ m/n and may appear twice (a step's
  sensitivity is then 2ρ). Theorem 1's composition uses the same rate m/n. The audit measures the
  algorithm as implemented; a gap between the two samplings could only show as ε_lo above ε.
* **Paper 004's ε for RQP-SGD is per coordinate** (its analysis is of one coordinate; no factor d is
  applied, :mod:`qlib.rqp_privacy`), while the attack sees the whole model (d = 31): an ε_lo above it
  would measure that gap, not a fault of the attack.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np
import pandas as pd
import torch

from qlib import dpsgd
from qlib.attacks import dp_bound, metrics
from qlib.devices import resolve
from qlib.resume import check_units, fingerprint
from qlib.rqp_privacy import check_bits, dpsgd_noise_multiplier, solve_q
from qlib.validation import (
    check_alloc,
    check_choice,
    check_float,
    check_float_sequence,
    check_int,
    check_positive,
    check_probability,
    check_seed,
    resolve_config,
    skip_nested,
)

from .paper import RQP_DIAGNOSTIC, RQP_EPS, RQP_TEST_SIZE

__all__ = ["METHODS", "CANARIES", "AUDIT_FPRS", "WORST_SCALE", "diagnostic_task", "canary", "noise", "AuditConfig",
           "audit", "DPAudit"]

#: the methods audited (keys of :data:`qlib.dpsgd.METHODS`) and their names in the book
METHODS = {"dpsgd": "DP-SGD", "projdp": "Proj-DP-SGD", "rqp": "RQP-SGD"}
#: the canaries (module docstring)
CANARIES = ("typical", "worst")
#: the false-positive rates at which the TPR is reported
AUDIT_FPRS = (0.001, 0.01, 0.1)
#: the worst-case canary's distance from the origin, in units of the largest training-row norm
WORST_SCALE = 2.0


def _setting(setting) -> dict:
    """The audit's hyperparameters: a mapping with m, T, eta, clip, M, b, delta (each checked)."""
    if setting is None:
        setting = RQP_DIAGNOSTIC
    if not isinstance(setting, Mapping):
        raise TypeError(f"setting must be a mapping of m, T, eta, clip, M, b, delta, got {type(setting).__name__}")
    keys = ("m", "T", "eta", "clip", "M", "b", "delta")
    missing = [k for k in keys if k not in setting]
    if missing:
        raise ValueError(f"setting must hold {', '.join(keys)}; missing {', '.join(missing)}")
    return dict(m=check_int("setting['m']", setting["m"], low=1), T=check_int("setting['T']", setting["T"], low=1),
                eta=check_positive("setting['eta']", setting["eta"]),
                clip=check_positive("setting['clip']", setting["clip"]),
                M=check_positive("setting['M']", setting["M"]), b=check_bits(setting["b"]),
                delta=check_float("setting['delta']", setting["delta"], low=0.0, high=1.0, low_open=True,
                                  high_open=True))


def diagnostic_task(*, split_seed: int = 0, test_size: float = RQP_TEST_SIZE) -> dpsgd.Task:
    """Diagnostic (scikit-learn's breast-cancer data) for logistic regression: one 80/20
    ``train_test_split(random_state=split_seed)``, standardised on the training split, bias appended."""
    # deferred: scikit-learn is optional (the book extra)
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    split_seed = check_int("split_seed", split_seed, low=0)
    test_size = check_float("test_size", test_size, low=0.0, high=1.0, low_open=True, high_open=True)
    X, y = load_breast_cancer(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=test_size, random_state=split_seed)
    sc = StandardScaler().fit(Xtr)
    bias = lambda A: np.hstack([A, np.ones((A.shape[0], 1), dtype=A.dtype)])  # noqa: E731
    return dpsgd.Task("diagnostic-logreg", "logreg", bias(sc.transform(Xtr)), ytr.astype(np.int64),
                      bias(sc.transform(Xte)), yte.astype(np.int64), 2)


def _logreg_task(task) -> dpsgd.Task:
    if not isinstance(task, dpsgd.Task):
        raise TypeError(f"task must be a qlib.dpsgd.Task, got {type(task).__name__}")
    if task.model != "logreg":
        raise ValueError(f"task must be a logistic-regression task (model 'logreg'), got model {task.model!r}")
    if task.n < 2:
        raise ValueError(f"task must have at least 2 training rows, got {task.n}")
    return task


def canary(task: dpsgd.Task, kind: str, *, scale: float = WORST_SCALE) -> tuple[np.ndarray, int, int | None]:
    """``(x, y, index)``: the canary of ``kind`` for ``task`` (a logistic-regression task whose last
    feature is the bias) — ``"typical"``: the training row of the majority class nearest its class mean
    (``index`` its row); ``"worst"``: a new point (``index`` None) at ``scale`` × the largest training-row
    norm along the features' least-variance direction, bias 1, labelled with the minority class."""
    task = _logreg_task(task)
    check_choice("kind", kind, CANARIES)
    scale = check_positive("scale", scale)
    X, y = np.asarray(task.X_train, float), np.asarray(task.y_train)
    vals, counts = np.unique(y, return_counts=True)
    major, minor = int(vals[np.argmax(counts)]), int(vals[np.argmin(counts)]) if len(vals) > 1 else 1 - int(vals[0])
    if kind == "typical":
        rows = np.flatnonzero(y == major)
        F = X[rows, :-1]
        i = int(rows[np.argmin(np.linalg.norm(F - F.mean(0), axis=1))])
        return X[i].copy(), major, i
    F = X[:, :-1]
    _, vecs = np.linalg.eigh(np.cov(F, rowvar=False))
    v = vecs[:, 0] / np.linalg.norm(vecs[:, 0])
    v = v * np.sign(v[np.argmax(np.abs(v))])  # a sign fixed by the data, not by the solver
    x = np.r_[scale * np.linalg.norm(F, axis=1).max() * v, 1.0]
    return x, minor, None


def noise(method: str, eps: float, n: int, *, setting=None, rqp_sigma: float | None = None) -> tuple[float, float]:
    """``(sigma, q)`` at which ``method`` is ε-private on n training rows: DP-SGD and Proj-DP-SGD
    (ε, δ) by the RDP accountant (q = 1, unused); RQP-SGD (ε, 0) by Theorem 1 at ``rqp_sigma``."""
    check_choice("method", method, tuple(METHODS))
    eps = check_positive("eps", eps)
    s = _setting(setting)
    n = check_int("n", n, low=s["m"])
    if method == "rqp":
        rqp_sigma = check_positive("rqp_sigma", rqp_sigma)
        q = solve_q(eps, rqp_sigma, b=s["b"], M=s["M"], rho=s["clip"], eta=s["eta"], m=s["m"], T=s["T"], n=n)
        return float(rqp_sigma), float(q)
    return float(dpsgd_noise_multiplier(eps, s["delta"], s["m"] / n, s["T"]) * s["clip"]), 1.0


def _names(name: str, values, allowed, what: str) -> tuple[str, ...]:
    """``values``: a non-empty sequence of ``what`` (names), each one of ``allowed``."""
    if isinstance(values, str) or not values or not all(isinstance(x, str) for x in values):
        raise TypeError(f"{name} must be a non-empty sequence of {what}, got {values!r}")
    for x in values:
        check_choice(name, x, allowed)
    return tuple(values)


@dataclass(frozen=True)
class AuditConfig:
    """The settings of :func:`audit`, checked once when built; frozen (module docstring).

    ``eps_values`` the budgets ε audited (default paper 004's, :data:`~.paper.RQP_EPS`); ``runs`` models per
    ε trained with the canary, and as many without (the chapter's 10 000); ``rqp_sigma`` RQP-SGD's noise σ (q
    solved from Theorem 1 at each ε); ``methods`` keys of :data:`METHODS`; ``canaries`` of :data:`CANARIES`;
    ``setting`` the hyperparameters m, T, eta, clip, M, b, delta (default paper 004's Diagnostic setting,
    :data:`~.paper.RQP_DIAGNOSTIC`; kept read-only); ``seed`` the trainings' (each method and canary
    seeded by ``(seed, method, canary)``); ``sampling`` the batches of :func:`qlib.dpsgd.train`; ``level``
    and ``correction`` the confidence of the Clopper–Pearson intervals and their multiplicity correction
    (:func:`qlib.attacks.dp_bound.epsilon_lower_bound`)."""

    eps_values: tuple[float, ...] = RQP_EPS
    runs: int = 10_000
    rqp_sigma: float = 1.0
    methods: tuple[str, ...] = ("dpsgd", "rqp")
    canaries: tuple[str, ...] = CANARIES
    setting: Mapping = field(default_factory=lambda: RQP_DIAGNOSTIC)
    seed: int = 0
    sampling: str = "with_replacement"
    level: float = 0.95
    correction: str = "bonferroni"

    def __post_init__(self):
        def put(name, value):
            object.__setattr__(self, name, value)

        put("eps_values", tuple(check_float_sequence("eps_values", self.eps_values, low=0.0, low_open=True)))
        put("runs", check_int("runs", self.runs, low=2))
        put("rqp_sigma", check_positive("rqp_sigma", self.rqp_sigma))
        put("methods", _names("methods", self.methods, tuple(METHODS), "method names"))
        put("canaries", _names("canaries", self.canaries, CANARIES, "canary kinds"))
        put("setting", MappingProxyType(_setting(self.setting)))
        put("seed", check_seed("seed", self.seed))
        check_choice("sampling", self.sampling, ("with_replacement", "epoch"))
        put("level", check_probability("level", self.level, open_low=True, open_high=True))
        check_choice("correction", self.correction, dp_bound.CORRECTIONS)

    def __reduce__(self):
        """Rebuilt from its fields, the read-only ``setting`` as a dict: the record pickles and copies (to a
        worker process, ``copy.deepcopy``) like the other settings records."""
        return type(self), (self.eps_values, self.runs, self.rqp_sigma, self.methods, self.canaries,
                            dict(self.setting), self.seed, self.sampling, self.level, self.correction)


@dataclass
class DPAudit:
    """The result of :func:`audit`: ``table`` (one row per method, ε and canary: σ, q, δ, the attack's
    AUC and TPR at :data:`AUDIT_FPRS`, ε_lo and ε̂ of :func:`qlib.attacks.dp_bound.epsilon_lower_bound`,
    the region excess, the mean test accuracy of the runs with the canary), ``scores``
    ((method, ε, canary) → (scores, members)), the setting, runs per side, level, correction and the
    training-set size n of the task (without the worst-case canary)."""

    table: pd.DataFrame
    scores: dict
    setting: dict
    runs: int
    level: float
    correction: str
    n_train: int


def _seeds(seed: int, *key: int) -> tuple[int, int]:
    s = np.random.SeedSequence([seed, *key]).generate_state(2, dtype=np.uint32)
    return int(s[0]), int(s[1])


def audit(task: dpsgd.Task, config: AuditConfig | None = None, *, device="cpu", units=None) -> DPAudit:
    """The audit of every method × canary × ε at the settings of ``config`` (an :class:`AuditConfig`;
    None: its defaults: ``audit(task, AuditConfig(runs=200))``): per method and canary two batched
    trainings (``runs`` models per ε with the canary, ``runs`` without; all ε of ``eps_values`` in the same
    call, σ and q per run), each final model scored by the canary's margin; the metrics and bounds per
    setting. ``device`` where the models train. ``units`` (a :class:`qlib.resume.Units`): each (method,
    canary)'s two trainings are a unit, saved when done and reused by a rerun (seeded by ``(seed, method,
    canary)`` alone, so a resumed audit equals an uninterrupted one)."""
    task = _logreg_task(task)
    cfg = resolve_config(AuditConfig, config)
    check_units("units", units)
    eps_values, runs, rqp_sigma, sampling = list(cfg.eps_values), cfg.runs, cfg.rqp_sigma, cfg.sampling
    level, correction, s = cfg.level, cfg.correction, dict(cfg.setting)
    E = len(eps_values)
    # what one call of dpsgd.train holds at once (the sides run one after the other): the example indices and
    # weights of every step (int64, int64, float32) and one step's batch of float64 features, with about two
    # more arrays of that size for the per-example gradients — for the runs of every ε
    check_alloc("runs", E * runs * s["m"] * (s["T"] * (8 + 8 + 4) + 3 * 8 * task.X_train.shape[1]), 1, value=runs,
                what="one side's example indices of every step and one step's float64 batch, for the runs of every ε")
    rows, scores = [], {}
    with skip_nested():
        for mi, method in enumerate(cfg.methods):
            delta = 0.0 if method == "rqp" else s["delta"]
            sq = [noise(method, e, task.n, setting=s, rqp_sigma=rqp_sigma) for e in eps_values]
            sig = np.repeat([a for a, _ in sq], runs)
            qs = np.repeat([b for _, b in sq], runs)
            for ci, kind in enumerate(cfg.canaries):
                x, y, idx = canary(task, kind)
                Xin, yin = task.X_train, task.y_train
                if idx is None:
                    Xin, yin = np.vstack([Xin, x[None]]), np.r_[yin, y]
                    Xout, yout = task.X_train, task.y_train
                else:
                    Xout, yout = np.delete(Xin, idx, axis=0), np.delete(yin, idx)
                seeds = _seeds(cfg.seed, mi, ci)

                def margins(method=method, x=x, y=y, Xin=Xin, yin=yin, Xout=Xout, yout=yout, sig=sig, qs=qs,
                            seeds=seeds):
                    """The canary's margin on every final model of both sides, and their test accuracy."""
                    margin = {}
                    for side, (Xs, ys), sd in zip(("in", "out"), ((Xin, yin), (Xout, yout)), seeds):
                        t = dpsgd.Task(task.name, "logreg", Xs, ys, task.X_test, task.y_test, 2)
                        res = dpsgd.train(t, method,
                                          dpsgd.DPSGDConfig(runs=E * runs, T=s["T"], m=s["m"], eta=s["eta"],
                                                            clip=s["clip"], sigma=sig, q=qs, b=s["b"], M=s["M"],
                                                            sampling=sampling, seed=sd, device=device,
                                                            dtype=torch.float64))
                        z = (res.w.cpu().numpy() @ x).reshape(E, runs)
                        margin[side] = ((2 * y - 1) * z, res.test_acc.reshape(E, runs).mean(1))
                    return margin

                margin = margins() if units is None else units.run("dp_audit_trainings", {
                    "task": fingerprint(task.X_train, task.y_train, task.X_test, task.y_test), "method": method,
                    "canary": kind, "eps": list(eps_values), "runs": runs, "sigma": sig, "q": qs, "setting": s,
                    "seeds": list(seeds), "sampling": sampling,
                    "device": resolve(device).type}, margins)
                for k, e in enumerate(eps_values):
                    sc = np.r_[margin["in"][0][k], margin["out"][0][k]]
                    mem = np.r_[np.ones(runs, bool), np.zeros(runs, bool)]
                    scores[(method, e, kind)] = (sc, mem)
                    a = dp_bound.epsilon_lower_bound(sc, mem, delta=delta, level=level, correction=correction)
                    fpr, tpr, _ = metrics.roc_curve(sc, mem)
                    rows.append({"method": METHODS[method], "key": method, "eps": e, "delta": delta, "canary": kind,
                                 "sigma": sq[k][0], "q": sq[k][1], "runs": runs,
                                 "auc": metrics.auc(sc, mem),
                                 **{f"tpr@{f:g}": float(tpr[fpr <= f + 1e-15].max()) for f in AUDIT_FPRS},
                                 "eps_lo": a.eps_lo, "eps_hat": a.eps_hat, "tp": a.tp, "fp": a.fp,
                                 "excess": dp_bound.region_excess(sc, mem, e, delta=delta, level=level,
                                                                  correction=correction),
                                 "test_acc": float(margin["in"][1][k])})
    return DPAudit(pd.DataFrame(rows), scores, s, runs, level, correction, task.n)
