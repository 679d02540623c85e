"""Noisy projected SGD on linear models, many runs at once (paper 004, Algorithm 2 and baselines).

One function, :func:`train`, runs R independent runs of one of four methods in a single batched
loop over iterations (no Python loop over runs): weights are a (R, d) tensor, per-example gradients
come from ``torch.func.vmap(torch.func.grad(·))`` vmapped over runs and examples — by default of the
loss with respect to the model's outputs, the per-example parameter gradient being its outer product
with the input (exact for linear models; see :func:`clipped_grad_sum`).

==============  ============================================================================
``method``      update (per run; g_j = per-example gradient clipped to L2 norm ``clip``)
==============  ============================================================================
``"sgd"``       w ← w − η·(1/m) Σ_j g_j                          (non-private; clipped as in §4)
``"dpsgd"``     w ← w − η·(1/m)[Σ_j g_j + G_t],  G_t ~ N(0, σ² I_d)     (eq. 3)
``"projdp"``    w ← Proj^D(w − η·(1/m)[Σ_j g_j + G_t])                  (eq. 7, Proj-DP-SGD)
``"rqp"``       w ← Proj^R_q(w − η·(1/m)[Σ_j g_j + G_t])                (Algorithm 2, RQP-SGD)
==============  ============================================================================

Models (parameters flattened into one vector w of length d, the bias is the last input feature and
is clipped, noised and quantized like every other coordinate):

* ``"logreg"``: y ∈ {0, 1}, loss softplus(w·x) − y·w·x, predict w·x ≥ 0.
* ``"svm"``: y ∈ {−1, +1}, hinge max(0, 1 − y·w·x) (no regulariser), predict sign(w·x) (0 → +1).
* ``"softmax"``: y ∈ {0..K−1}, W = w.reshape(K, D), cross-entropy, predict argmax.

``sigma`` and ``q`` may be scalars or length-R sequences, so a sweep over (σ, q) × seeds is one call.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch.func import grad, vmap

from . import devices
from .rqp import proj_det, randomized_projection
from .rqp_privacy import check_bits, check_q
from .validation import (
    check_alloc,
    check_array,
    check_choice,
    check_int,
    check_positive,
    check_seed,
    check_tensor,
    nested,
    resolve_config,
    skip_nested,
)

METHODS = ("sgd", "dpsgd", "projdp", "rqp")
MODELS = ("logreg", "svm", "softmax")
SAMPLINGS = ("with_replacement", "epoch")

__all__ = ["METHODS", "MODELS", "SAMPLINGS", "label_set", "Task", "DPSGDConfig", "TrainResult", "loss_fn", "per_example_grads", "clip_rows", "clipped_grad_sum",
           "predict", "accuracy", "train"]


def label_set(model: str, n_classes: int = 2) -> tuple[int, ...]:
    """The labels ``model`` is trained on: {0, 1} (logreg), {−1, +1} (svm), {0..K−1} (softmax)."""
    check_choice("model", model, MODELS)
    n_classes = check_int("n_classes", n_classes, low=2)
    if model != "softmax" and n_classes != 2:
        raise ValueError(f"n_classes must be 2 for model={model!r}, got {n_classes}")
    if model == "logreg":
        return (0, 1)
    if model == "svm":
        return (-1, 1)
    check_alloc("n_classes", n_classes, 8 * 4, value=n_classes, what="the tuple of labels")
    return tuple(range(n_classes))


def _check_features(name: str, X) -> None:
    """A 2-D, non-empty, real, finite feature matrix (numpy or torch); checked in place, no copy."""
    if isinstance(X, torch.Tensor):
        if X.is_complex() or X.dtype == torch.bool:
            raise TypeError(f"{name} must be a real numeric array, got dtype {X.dtype}")
        if X.ndim != 2:
            raise ValueError(f"{name} must have ndim 2, got shape {tuple(X.shape)}")
        if X.numel() == 0:
            raise ValueError(f"{name} must be non-empty, got shape {tuple(X.shape)}")
        if X.is_floating_point() and not bool(torch.isfinite(X).all()):
            raise ValueError(f"{name} must be finite (no NaN or inf)")
        return
    if not isinstance(X, np.ndarray):
        raise TypeError(f"{name} must be a 2-D numpy array, got {type(X).__name__}")
    if X.dtype.kind not in "fiu":
        raise TypeError(f"{name} must be a real numeric array, got dtype {X.dtype}")
    if X.ndim != 2:
        raise ValueError(f"{name} must have ndim 2, got shape {X.shape}")
    if X.size == 0:
        raise ValueError(f"{name} must be non-empty, got shape {X.shape}")
    if X.dtype.kind == "f" and not np.isfinite(X).all():
        raise ValueError(f"{name} must be finite (no NaN or inf)")


def _check_labels(name: str, y, model: str, n_classes: int, n_rows: int | None = None) -> None:
    """1-D integer-valued labels, all in :func:`label_set`, one per row when ``n_rows`` is given."""
    if isinstance(y, torch.Tensor) and (y.is_complex() or y.dtype == torch.bool):
        raise TypeError(f"{name} must be integer labels, got dtype {y.dtype}")
    if isinstance(y, np.ndarray) and y.dtype.kind == "f" and not np.isfinite(y).all():
        raise ValueError(f"{name} must be finite integer labels (no NaN or inf)")
    arr = check_array(name, y, ndim=1, dtype="int")
    if n_rows is not None and arr.shape[0] != n_rows:
        raise ValueError(f"{name} must have one label per row ({n_rows}), got {arr.shape[0]} labels")
    allowed = np.asarray(label_set(model, n_classes))
    bad = ~np.isin(arr, allowed)
    if bad.any():
        want = "{" + ", ".join(map(str, allowed)) + "}" if len(allowed) <= 3 else f"{{0, ..., {len(allowed) - 1}}}"
        raise ValueError(f"{name} must hold labels in {want} for model={model!r}, got {arr[bad][0]}")


def _check_task_data(t, prefix: str = "") -> None:
    """Every array of a :class:`Task`: features finite and 2-D, labels in the model's label set."""
    check_choice(prefix + "model", t.model, MODELS)
    k = check_int(prefix + "n_classes", t.n_classes, low=2)
    if t.model != "softmax" and k != 2:
        raise ValueError(f"{prefix}n_classes must be 2 for model={t.model!r}, got {k}")
    _check_features(prefix + "X_train", t.X_train)
    _check_features(prefix + "X_test", t.X_test)
    if t.X_train.shape[1] != t.X_test.shape[1]:
        raise ValueError(f"{prefix}X_train and {prefix}X_test must have the same number of columns, got "
                         f"{t.X_train.shape[1]} and {t.X_test.shape[1]}")
    _check_labels(prefix + "y_train", t.y_train, t.model, k, t.X_train.shape[0])
    _check_labels(prefix + "y_test", t.y_test, t.model, k, t.X_test.shape[0])


@dataclass
class Task:
    """A linear classification task: features already scaled, bias column appended (last).

    Checked on construction (and again by :func:`train`): features 2-D, real and finite; labels one
    per row and in the model's label set (:func:`label_set`); ``n_classes`` = 2 for the binary models.
    """

    name: str
    model: str
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    n_classes: int = 2

    def __post_init__(self):
        _check_task_data(self)

    @property
    def n(self) -> int:
        return int(self.X_train.shape[0])

    @property
    def d(self) -> int:
        """Number of parameters."""
        D = self.X_train.shape[1]
        return D * self.n_classes if self.model == "softmax" else D


@dataclass
class TrainResult:
    """Final weights w_T (R, d) and test accuracies (R,) of R runs."""

    w: torch.Tensor
    test_acc: np.ndarray
    train_acc: np.ndarray


def _head(model: str):
    """φ(z, y): the loss as a function of the model's outputs z = W x (shape (K,), K = 1 if binary)."""
    check_choice("model", model, MODELS)
    if model == "logreg":
        return lambda z, y: torch.nn.functional.softplus(z[0]) - y * z[0]
    if model == "svm":
        return lambda z, y: torch.relu(1.0 - y * z[0])
    return lambda z, y: torch.logsumexp(z, 0) - torch.gather(z, 0, y.reshape(1))[0]  # softmax


def loss_fn(model: str):
    """Per-example loss l(w; x, y) = φ(W x, y) of ``model`` (w flat of length K·D, x (D,), y scalar)."""
    phi = _head(model)
    return lambda w, x, y: phi(w.reshape(-1, x.shape[0]) @ x, y)


def _check_weights(w, model: str, D: int | None = None) -> torch.Tensor:
    """w: (R, d) floating and finite; d = D (binary) or a multiple of D (softmax) when D is known."""
    w = check_tensor("w", w, ndim=2, convert=False)
    if D is not None:
        d = w.shape[1]
        if (model != "softmax" and d != D) or (model == "softmax" and (d % D or d // D < 2)):
            want = f"{D}" if model != "softmax" else f"K·{D} (K >= 2 classes)"
            raise ValueError(f"w must have {want} columns for model={model!r} on {D} features, got shape {tuple(w.shape)}")
    return w


def _check_label_tensor(name: str, y, model: str, K: int, shape: tuple) -> torch.Tensor:
    """Labels as a tensor of ``shape``, integral, in the model's label set (integer dtype for softmax)."""
    y = check_tensor(name, y, floating=False, convert=False)
    if tuple(y.shape) != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}, got {tuple(y.shape)}")
    if model == "softmax" and y.is_floating_point():
        raise TypeError(f"{name} must be an integer tensor of class indices for model='softmax', got dtype {y.dtype}")
    allowed = torch.as_tensor(label_set(model, K), device=y.device, dtype=y.dtype)
    if not bool(torch.isin(y, allowed).all()):
        bad = y[~torch.isin(y, allowed)].reshape(-1)[0].item()
        raise ValueError(f"{name} must hold labels in {set(label_set(model, K)) if K <= 3 else f'0..{K - 1}'} "
                         f"for model={model!r}, got {bad}")
    return y


def _check_batch(model: str, w, X, y):
    """w (R, d), X (R, m, D), y (R, m), all consistent, finite and with valid labels."""
    check_choice("model", model, MODELS)
    X = check_tensor("X", X, ndim=3, convert=False)
    w = _check_weights(w, model, X.shape[-1])
    if X.shape[0] != w.shape[0]:
        raise ValueError(f"X must have one batch per run (w has {w.shape[0]} runs), got shape {tuple(X.shape)}")
    K = w.shape[1] // X.shape[-1] if model == "softmax" else 2
    y = _check_label_tensor("y", y, model, K, tuple(X.shape[:2]))
    return w, X, y


def per_example_grads(model: str, w: torch.Tensor, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """∇_w l(w_r; x_rj, y_rj) for runs r and examples j: w (R, d), X (R, m, D), y (R, m) → (R, m, d)."""
    if not nested():
        w, X, y = _check_batch(model, w, X, y)
    g = grad(loss_fn(model))
    return vmap(vmap(g, in_dims=(None, 0, 0)), in_dims=(0, 0, 0))(w, X, y)


def clip_rows(g: torch.Tensor, clip: float) -> torch.Tensor:
    """g_j·min(1, clip/‖g_j‖₂) along the last axis (any leading shape)."""
    g = check_tensor("g", g, convert=False)
    clip = check_positive("clip", clip)
    norms = torch.linalg.vector_norm(g, dim=-1, keepdim=True)
    return g * torch.clamp(clip / norms.clamp_min(1e-30), max=1.0)


def clipped_grad_sum(model: str, w: torch.Tensor, X: torch.Tensor, y: torch.Tensor, clip: float,
                     weights: torch.Tensor | None = None, mode: str = "factored") -> torch.Tensor:
    """Σ_j ω_j·clip(∇_w l(w_r; x_rj, y_rj)) per run (R, d); ω_j = 1 unless ``weights`` (m,) is given.

    ``mode="full"`` materialises the (R, m, d) per-example gradients (torch.func.vmap of grad).
    ``mode="factored"`` uses that a linear model's per-example gradient is the outer product
    r_j ⊗ x_j with r_j = ∂φ/∂z (again from torch.func.vmap(grad(φ))), so ‖g_j‖ = ‖r_j‖·‖x_j‖ and the
    clipped sum is one einsum ("ghost clipping"); identical up to rounding, and much cheaper for
    softmax regression on MNIST (d = 7850). Inside a checked caller (:func:`qlib.validation.skip_nested`:
    :func:`train`'s loop) the arguments are not checked.
    """
    if not nested():
        check_choice("mode", mode, ("factored", "full"))
        w, X, y = _check_batch(model, w, X, y)
        clip = check_positive("clip", clip)
        if weights is not None:
            weights = check_tensor("weights", weights, ndim=1, convert=False)
            if weights.shape[0] != X.shape[1]:
                raise ValueError(f"weights must have one entry per example ({X.shape[1]}), got shape {tuple(weights.shape)}")
            if bool((weights < 0).any()):
                raise ValueError("weights must be >= 0")
    if mode == "full":
        with skip_nested():
            g = clip_rows(per_example_grads(model, w, X, y), clip)
        if weights is not None:
            g = g * weights[None, :, None]
        return g.sum(1)
    R, D = w.shape[0], X.shape[-1]
    W = w.reshape(R, -1, D)
    z = torch.einsum("rkd,rmd->rmk", W, X)
    r = vmap(vmap(grad(_head(model))))(z, y)  # (R, m, K)
    norms = torch.linalg.vector_norm(r, dim=-1) * torch.linalg.vector_norm(X, dim=-1)
    c = torch.clamp(clip / norms.clamp_min(1e-30), max=1.0)
    if weights is not None:
        c = c * weights[None, :]
    return torch.einsum("rmk,rmd->rkd", r * c[..., None], X).reshape(R, -1)


def predict(model: str, w: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
    """Predicted labels (R, n) for weights w (R, d) on X (n, D), in the model's label coding."""
    check_choice("model", model, MODELS)
    X = check_tensor("X", X, ndim=2, convert=False)
    w = _check_weights(w, model, X.shape[1])
    if model == "softmax":
        logits = torch.einsum("rkd,nd->rnk", w.reshape(w.shape[0], -1, X.shape[1]), X)
        return logits.argmax(-1)
    z = w @ X.T
    if model == "logreg":
        return (z >= 0).to(torch.int64)
    return torch.where(z >= 0, 1, -1)


def accuracy(model: str, w: torch.Tensor, X: torch.Tensor, y: torch.Tensor) -> np.ndarray:
    """Fraction correct per run (R,); ``y`` (n,) holds labels in the model's coding."""
    check_choice("model", model, MODELS)
    X = check_tensor("X", X, ndim=2, convert=False)
    w = _check_weights(w, model, X.shape[1])
    K = w.shape[1] // X.shape[1] if model == "softmax" else 2
    y = _check_label_tensor("y", y, model, K, (X.shape[0],))
    with skip_nested():
        return (predict(model, w, X) == y.to(torch.int64)).double().mean(1).cpu().numpy()


def _per_run(name: str, v, R: int, dev, dtype) -> torch.Tensor:
    t = torch.as_tensor(np.asarray(v, dtype=float), dtype=dtype, device=dev)
    if t.ndim == 0:
        t = t.expand(R)
    if t.shape != (R,):
        raise ValueError(f"{name} must be a scalar or have one value per run (length {R}), got shape {tuple(t.shape)}")
    return t


def _batches(n: int, m: int, T: int, R: int, sampling: str, gen: torch.Generator, dev):
    """Example indices (T, R, m), and for ``"epoch"`` a validity mask (T, m) (0 marks the padding of a
    short last batch of an epoch; None for with-replacement sampling)."""
    if sampling == "with_replacement":
        idx = torch.randint(0, n, (T, R, m), generator=gen, device=dev)
        return idx, None
    per_epoch = math.ceil(n / m)
    epochs = math.ceil(T / per_epoch)
    perms = torch.argsort(torch.rand(R, epochs, n, generator=gen, device=dev), dim=-1)
    pad = per_epoch * m - n
    idx = torch.cat([perms, perms[..., :pad]], dim=-1).reshape(R, epochs * per_epoch, m)
    valid = torch.ones(epochs, per_epoch * m, device=dev)
    if pad:
        valid[:, n:] = 0.0
    valid = valid.reshape(epochs * per_epoch, m)
    return idx.permute(1, 0, 2)[:T], valid[:T]


@dataclass(frozen=True)
class DPSGDConfig:
    """The settings of :func:`train`, checked once when built; frozen.

    ``runs`` independent runs (>= 1) of ``T`` iterations (>= 1) on batches of ``m`` examples (>= 1; at
    most the task's n, checked by :func:`train`), step size ``eta`` (> 0), per-example clipping norm
    ``clip`` (> 0) — these five have no default (no hyperparameter defaults to a paper value).
    ``sigma``: std of G_t on the summed clipped gradient (>= 0; ignored for "sgd"), ``q``: the
    randomness coefficient of RQP (in [0, 1]; used by "rqp" only, which needs it in [1/2^b, 1]) — each a
    scalar or one value per run (stored as a tuple).
    ``b`` and ``M`` (bits and range of the quantization set) are required for the projected methods
    ("projdp", "rqp") and ignored otherwise. ``sampling``: one of :data:`SAMPLINGS`, "with_replacement"
    (Algorithm 2) or "epoch" (shuffled passes without replacement, short last batch); ``seed``;
    ``device``; ``dtype`` (a real floating torch dtype); ``grad_mode``: "factored" or "full"
    per-example gradients (:func:`clipped_grad_sum`)."""

    runs: int
    T: int
    m: int
    eta: float
    clip: float
    sigma: float | tuple[float, ...] = 0.0
    q: float | tuple[float, ...] = 1.0
    b: int | None = None
    M: float | None = None
    sampling: str = "with_replacement"
    seed: int = 0
    device: str | torch.device = "auto"
    dtype: torch.dtype = torch.float32
    grad_mode: str = "factored"

    def __post_init__(self):
        def put(name, value):
            object.__setattr__(self, name, value)

        check_choice("grad_mode", self.grad_mode, ("factored", "full"))
        check_choice("sampling", self.sampling, SAMPLINGS)
        put("runs", check_int("runs", self.runs, low=1))
        put("T", check_int("T", self.T, low=1))
        put("m", check_int("m", self.m, low=1))
        put("eta", check_positive("eta", self.eta))
        put("clip", check_positive("clip", self.clip))
        put("seed", check_seed("seed", self.seed))
        for name in ("sigma", "q"):
            v = getattr(self, name)
            arr = check_array(name, v, low=0.0) if name == "sigma" else check_array(name, v, low=0.0, high=1.0)
            if arr.ndim > 1:
                raise ValueError(f"{name} must be a scalar or have one value per run, got shape {arr.shape}")
            put(name, float(arr) if arr.ndim == 0 else tuple(float(x) for x in arr))
        if not (isinstance(self.dtype, torch.dtype) and self.dtype.is_floating_point and not self.dtype.is_complex):
            raise TypeError(f"dtype must be a real floating torch dtype, got {self.dtype!r}")
        if not (self.device is None or isinstance(self.device, (str, torch.device))):
            raise TypeError(f"device must be 'auto' (or None), 'cpu', 'cuda', 'cuda:N' or a torch.device, got {self.device!r}")
        put("b", check_bits(self.b) if self.b is not None else None)
        put("M", check_positive("M", self.M, allow_none=True))


def train(task: Task, method: str, config: DPSGDConfig) -> TrainResult:
    """Run ``runs`` independent runs of ``method`` on ``task`` for T iterations, batched.

    ``config``: the settings (:class:`DPSGDConfig`; required: some fields have no default): ``train(task, "rqp",
    DPSGDConfig(runs=4, T=100, m=32, eta=1.0, clip=1.0, sigma=0.5, b=4, M=0.3))``. w_0 = 0; ``b`` and ``M`` must be given for the
    projected methods, and ``q`` must suit ``b`` (:func:`qlib.rqp_privacy.check_q`) for them. Same seed
    ⇒ same numbers. Returns the last iterate w_T (Algorithm 2, step 7) and its train/test accuracy.
    """
    if not isinstance(task, Task):
        raise TypeError(f"task must be a Task, got {type(task).__name__}")
    _check_task_data(task, "task.")  # a Task is mutable: its arrays are checked again here
    check_choice("method", method, METHODS)
    cfg = resolve_config(DPSGDConfig, config)
    runs, T, eta, clip, sigma, q, b, M = cfg.runs, cfg.T, cfg.eta, cfg.clip, cfg.sigma, cfg.q, cfg.b, cfg.M
    sampling, seed, device, dtype, grad_mode = cfg.sampling, cfg.seed, cfg.device, cfg.dtype, cfg.grad_mode
    m = check_int("m", cfg.m, low=1, high=task.n)
    projected = method in ("projdp", "rqp")
    if projected:
        if b is None or M is None:
            raise ValueError(f"b (quantization bits) and M (range) must be given for method={method!r}, got b={b!r}, M={M!r}")
        check_q(q, b)
    # the batches' indices (T, runs, m) int64 (by epochs: runs × epochs × n keys and their order), drawn at once
    n_idx = T * runs * m if sampling == "with_replacement" else runs * math.ceil(T / math.ceil(task.n / m)) * \
        math.ceil(task.n / m) * m
    check_alloc("T, runs and m", n_idx, 8 + 8 + 4, value=(T, runs, m), what="the example indices of every step")
    dev = devices.resolve(device)
    gen = torch.Generator(device=dev).manual_seed(int(seed))
    Xtr = torch.as_tensor(task.X_train, dtype=dtype, device=dev)
    ytr = torch.as_tensor(task.y_train, device=dev)
    ytr = ytr.to(torch.int64) if task.model == "softmax" else ytr.to(dtype)
    R, d = int(runs), task.d
    sig = _per_run("sigma", sigma, R, dev, dtype)[:, None]
    q_r = _per_run("q", q, R, dev, dtype)[:, None] if method == "rqp" else None
    idx, weights = _batches(task.n, m, T, R, sampling, gen, dev)
    w = torch.zeros(R, d, dtype=dtype, device=dev)
    # the first step whose iterate is not finite (-1: none), kept on the device: no sync per step
    first_bad = torch.full((), -1, dtype=torch.int64, device=dev)
    with skip_nested():  # every argument is checked above: the loop's calls trust them
        for t in range(T):
            wt = None if weights is None else weights[t]
            step = clipped_grad_sum(task.model, w, Xtr[idx[t]], ytr[idx[t]], clip, wt, grad_mode)
            denom = m if wt is None else float(wt.sum())
            if method != "sgd":
                step = step + sig * torch.randn(R, d, generator=gen, device=dev, dtype=dtype)
            v = w - (eta / denom) * step
            first_bad = torch.where((first_bad < 0) & ~torch.isfinite(v).all(), t, first_bad)
            if projected:
                v = torch.nan_to_num(v)  # NaN has no nearest level; such a run is reported below, not projected
            if method == "projdp":
                w = proj_det(v, b, M)
            elif method == "rqp":
                w = randomized_projection(v, b, M, q_r, gen)
            else:
                w = v
    bad = int(first_bad)
    if bad >= 0:
        raise ValueError(f"training diverged: the iterate became non-finite (NaN or inf in {dtype}) at step {bad} of {T}; "
                         f"eta (the step size, {eta:g}) is too large" + ("" if method == "sgd" else " or sigma too large")
                         + " for these features")
    Xte = torch.as_tensor(task.X_test, dtype=dtype, device=dev)
    yte = torch.as_tensor(task.y_test, device=dev)
    return TrainResult(w=w, test_acc=accuracy(task.model, w, Xte, yte), train_acc=accuracy(task.model, w, Xtr, ytr))
