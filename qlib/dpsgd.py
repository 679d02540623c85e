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
from .validation import check_array, check_choice, check_int, check_positive, check_seed, check_tensor

METHODS = ("sgd", "dpsgd", "projdp", "rqp")
MODELS = ("logreg", "svm", "softmax")
SAMPLINGS = ("with_replacement", "epoch")

__all__ = ["METHODS", "MODELS", "Task", "TrainResult", "loss_fn", "per_example_grads", "clip_rows", "clipped_grad_sum",
           "predict", "accuracy", "train"]


@dataclass
class Task:
    """A linear classification task: features already scaled, bias column appended (last)."""

    name: str
    model: str
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    n_classes: int = 2

    def __post_init__(self):
        check_choice("model", self.model, MODELS)
        check_int("n_classes", self.n_classes, low=2)
        check_array("X_train", self.X_train, ndim=2)
        check_array("X_test", self.X_test, ndim=2)
        if self.X_train.shape[1] != self.X_test.shape[1]:
            raise ValueError("X_train and X_test must have the same number of columns, got "
                             f"{self.X_train.shape[1]} and {self.X_test.shape[1]}")
        if len(self.y_train) != len(self.X_train) or len(self.y_test) != len(self.X_test):
            raise ValueError("X and y must have the same number of rows")

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


def per_example_grads(model: str, w: torch.Tensor, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """∇_w l(w_r; x_rj, y_rj) for runs r and examples j: w (R, d), X (R, m, D), y (R, m) → (R, m, d)."""
    g = grad(loss_fn(model))
    return vmap(vmap(g, in_dims=(None, 0, 0)), in_dims=(0, 0, 0))(w, X, y)


def clip_rows(g: torch.Tensor, clip: float) -> torch.Tensor:
    """g_j·min(1, clip/‖g_j‖₂) along the last axis."""
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
    softmax regression on MNIST (d = 7850).
    """
    if mode == "full":
        g = clip_rows(per_example_grads(model, w, X, y), clip)
        if weights is not None:
            g = g * weights[None, :, None]
        return g.sum(1)
    check_choice("mode", mode, ("factored", "full"))
    check_choice("model", model, MODELS)
    clip = check_positive("clip", clip)
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
    check_tensor("w", w, ndim=2, convert=False)
    check_tensor("X", X, ndim=2, convert=False)
    if model == "softmax":
        logits = torch.einsum("rkd,nd->rnk", w.reshape(w.shape[0], -1, X.shape[1]), X)
        return logits.argmax(-1)
    z = w @ X.T
    if model == "logreg":
        return (z >= 0).to(torch.int64)
    return torch.where(z >= 0, 1, -1)


def accuracy(model: str, w: torch.Tensor, X: torch.Tensor, y: torch.Tensor) -> np.ndarray:
    """Fraction correct per run (R,)."""
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


def train(task: Task, method: str, *, runs: int, T: int, m: int, eta: float, clip: float,
          sigma=0.0, q=1.0, b: int | None = None, M: float | None = None, sampling: str = "with_replacement",
          seed: int = 0, device="auto", dtype=torch.float32, grad_mode: str = "factored") -> TrainResult:
    """Run ``runs`` independent runs of ``method`` on ``task`` for T iterations, batched.

    w_0 = 0. ``sigma``: std of G_t on the summed clipped gradient (ignored for "sgd").
    ``q``: randomness coefficient of RQP ("rqp" only). ``b`` and ``M`` (bits and range of the
    quantization set) are required for the projected methods ("projdp", "rqp") and ignored otherwise;
    no hyperparameter defaults to a paper value. ``sampling``: "with_replacement" (Algorithm 2)
    or "epoch" (shuffled passes without replacement, short last batch). Same seed ⇒ same numbers.
    ``grad_mode``: "factored" (default) or "full" per-example gradients, see :func:`clipped_grad_sum`.
    Returns the last iterate w_T (Algorithm 2, step 7) and its train/test accuracy.
    """
    check_choice("method", method, METHODS)
    check_choice("grad_mode", grad_mode, ("factored", "full"))
    check_choice("sampling", sampling, SAMPLINGS)
    runs = check_int("runs", runs, low=1)
    T = check_int("T", T, low=1)
    m = check_int("m", m, low=1, high=task.n)
    eta = check_positive("eta", eta)
    clip = check_positive("clip", clip)
    seed = check_seed("seed", seed)
    check_array("sigma", sigma, low=0.0)
    projected = method in ("projdp", "rqp")
    if projected:
        if b is None or M is None:
            raise ValueError(f"b (quantization bits) and M (range) must be given for method={method!r}, got b={b!r}, M={M!r}")
        b = check_bits(b)
        M = check_positive("M", M)
        check_q(q, b)

    dev = devices.resolve(device)
    gen = torch.Generator(device=dev).manual_seed(int(seed))
    Xtr = torch.as_tensor(task.X_train, dtype=dtype, device=dev)
    ytr = torch.as_tensor(task.y_train, device=dev)
    ytr = ytr.to(torch.int64) if task.model == "softmax" else ytr.to(dtype)
    R, d = int(runs), task.d
    sig = _per_run("sigma", sigma, R, dev, dtype)[:, None]
    q_r = _per_run("q", q, R, dev, dtype)[:, None]
    idx, weights = _batches(task.n, m, T, R, sampling, gen, dev)
    w = torch.zeros(R, d, dtype=dtype, device=dev)
    for t in range(T):
        wt = None if weights is None else weights[t]
        step = clipped_grad_sum(task.model, w, Xtr[idx[t]], ytr[idx[t]], clip, wt, grad_mode)
        denom = m if wt is None else float(wt.sum())
        if method != "sgd":
            step = step + sig * torch.randn(R, d, generator=gen, device=dev, dtype=dtype)
        v = w - (eta / denom) * step
        if method == "projdp":
            w = proj_det(v, b, M)
        elif method == "rqp":
            w = randomized_projection(v, b, M, q_r, generator=gen)
        else:
            w = v
    Xte = torch.as_tensor(task.X_test, dtype=dtype, device=dev)
    yte = torch.as_tensor(task.y_test, device=dev)
    return TrainResult(w=w, test_acc=accuracy(task.model, w, Xte, yte), train_acc=accuracy(task.model, w, Xtr, ytr))
