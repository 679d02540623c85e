"""Vectorised training of K independent small models in one batched computation.

Every model has its own data, its own initialisation and its own Adam state; the K models are
stacked along a leading dimension and trained together (one batched matmul per layer, one Adam
update for all), which is the same computation as training each alone with ``torch.optim.Adam``
(tests/test_engine.py checks it to float tolerance). The model family is pluggable: a *model* is
any object satisfying the :class:`Model` protocol (``n_params``, ``init``, ``unflatten``, ``prepare``,
``apply``; optionally ``vjp`` for an analytic gradient, see :class:`AnalyticModel`).

Two families ship: :class:`Linear` (one linear layer + bias; with ``qlib.synthetic.features`` the
logistic model on [x, x²] of paper 001 §5.1) and :class:`MLP` (two layers, ReLU). Losses per sample:
``"logistic"`` (binary cross-entropy with logits, y ∈ {0, 1}) and ``"mse"``.

Callbacks (:class:`Callback`) see every chunk start, every epoch end (epoch counts from 1) and every
chunk end. On CPU the K models are trained in chunks of a few tens (each chunk runs all its epochs
with its data in cache; measured ~10× faster than one batch of thousands of models, see
``benchmarks/bench_engine.py``); on CUDA all at once.

Two backends (``backend=``): ``"torch"`` — the batched torch computation above, on any device, any
model, autograd where the model has no ``vjp``; and ``"compiled"`` — for :class:`Linear` in float32
on the CPU, one compiled kernel (:mod:`qlib._kernels.engine`, numba) that runs many epochs of one model
with its data in the core's L2 cache, in parallel over models (``benchmarks/bench_engine.py``: about
4× the torch backend per model-epoch). ``"auto"`` (the default) takes the compiled one where it
applies and numba imports, the torch one elsewhere. Both do the same Adam arithmetic in float32; the
matrix-vector products sum in another order, so they agree to float32 rounding, not bit for bit
(tests/test_engine_compiled.py), and each gives the same bits on every run.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence, runtime_checkable

import numpy as np
import torch
import torch.nn.functional as F

from . import _kernels, devices
from .validation import (
    check_alloc,
    check_bool,
    check_choice,
    check_float,
    check_int,
    check_seed,
    check_tensor,
    nested,
    resolve_config,
)

__all__ = ["Model", "AnalyticModel", "Linear", "MLP", "LOSSES", "loss_functions", "per_sample_loss",
           "init_params", "train", "TrainConfig", "TrainResult", "Callback", "check_data", "param_sizes",
           "default_chunk_size", "BACKENDS", "compiled_backend", "compiled_reason"]

#: the training backends of :func:`train`
BACKENDS = ("auto", "torch", "compiled")


@runtime_checkable
class Model(Protocol):
    """What :func:`train` and :class:`qlib.recorder.RQRecorder` need of a model family.

    * ``n_params`` — the length p of one model's flat parameter vector θ;
    * ``init(K, generator, dtype)`` — (K, p) initial parameters;
    * ``unflatten(theta)`` — dict name → (..., *shape) tensors, the layers in the order of θ (for
      per-tensor quantization, :func:`param_sizes`);
    * ``prepare(X)`` — the data X (K, n, d) in whatever form ``apply`` wants (done once per chunk);
    * ``apply(theta, data)`` — outputs (K, n) from θ (K, p), or (Q, K, n) from θ (Q, K, p).
    """

    @property
    def n_params(self) -> int: ...

    def init(self, K: int, generator: torch.Generator, dtype: torch.dtype = ...) -> torch.Tensor: ...

    def unflatten(self, theta: torch.Tensor) -> dict[str, torch.Tensor]: ...

    def prepare(self, X: torch.Tensor) -> Any: ...

    def apply(self, theta: torch.Tensor, data: Any) -> torch.Tensor: ...


@runtime_checkable
class AnalyticModel(Model, Protocol):
    """A :class:`Model` with ``vjp(theta, data, grad_out)`` = ∂/∂θ of Σ grad_out·apply(θ, data),
    (K, p): :func:`train` then skips autograd."""

    def vjp(self, theta: torch.Tensor, data: Any, grad_out: torch.Tensor) -> torch.Tensor: ...


def _nn_linear_init(K: int, fan_in: int, fan_out: int, generator: torch.Generator,
                    dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """torch.nn.Linear's default init: weight and bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
    bound = 1.0 / math.sqrt(fan_in)
    w = (torch.rand(K, fan_out, fan_in, generator=generator, dtype=torch.float64) * 2 - 1) * bound
    b = (torch.rand(K, fan_out, generator=generator, dtype=torch.float64) * 2 - 1) * bound
    return w.to(dtype), b.to(dtype)


def _theta(model, theta, ndim=(2, 3)) -> torch.Tensor:
    """A model's parameters (K, p) or (Q, K, p), p = ``model.n_params``: kind and shape only (no pass over the
    entries: the models' methods run on the hot path of every epoch; :func:`train` checks ``theta0`` once)."""
    theta = check_tensor("theta", theta, ndim=ndim, finite=False, convert=False)
    if theta.shape[-1] != model.n_params:
        raise ValueError(f"theta must have {model.n_params} parameters in its last dimension, got shape "
                         f"{tuple(theta.shape)}")
    return theta


def _X(model, X, theta=None) -> torch.Tensor:
    """Inputs (K, n, d), d = ``in_features``, K the models of ``theta`` (kind and shape only)."""
    X = check_tensor("X", X, ndim=3, finite=False, convert=False)
    if X.shape[-1] != model.in_features or (theta is not None and X.shape[0] != theta.shape[-2]):
        raise ValueError(f"X must have shape (K, n, {model.in_features})"
                         + ("" if theta is None else f" with K = {theta.shape[-2]} models") + f", got {tuple(X.shape)}")
    return X


def _check_finite_inputs(theta: torch.Tensor, X: torch.Tensor, allow_nonfinite) -> None:
    """The forward passes' non-finite policy (:mod:`qlib.validation`): NaN/inf parameters or inputs raise
    a ``ValueError`` naming ``theta`` or ``X`` (one pass over each: ``forward`` is the user's call; the
    training loop's ``apply`` checks kind and shape only). ``allow_nonfinite=True`` is for a caller that
    scores models which may have diverged and records their NaN outputs as results."""
    if check_bool("allow_nonfinite", allow_nonfinite) or nested():
        return
    for name, t in (("theta", theta), ("X", X)):
        if t.is_floating_point() and t.numel() and not bool(torch.isfinite(t).all()):
            raise ValueError(f"{name} must be finite (no NaN or inf); pass allow_nonfinite=True to score models "
                             "that may have diverged (their outputs are then NaN)")


def _init_args(model, K, generator, dtype) -> int:
    K = check_int("K", K, low=1)
    check_alloc("K", K * model.n_params, 8 + 8, value=K,
                what=f"the initial parameters of K models of {model.n_params} parameters (float64 draws)")
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    if not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
        raise TypeError(f"dtype must be a floating torch.dtype, got {dtype!r}")
    return K


@dataclass(frozen=True)
class Linear:
    """One linear layer with bias and a single output: f(x) = wᵀx + b. θ = [w (d), b].

    Implements the fast path of the engine: ``prepare`` keeps a transposed copy of the data so
    that the forward and backward passes are row-vector × matrix products, and ``vjp`` is the
    analytic gradient (no autograd graph per epoch).
    """

    in_features: int

    def __post_init__(self):
        check_int("in_features", self.in_features, low=1)

    @property
    def n_params(self) -> int:
        return self.in_features + 1

    def init(self, K: int, generator: torch.Generator, dtype=torch.float32) -> torch.Tensor:
        K = _init_args(self, K, generator, dtype)
        w, b = _nn_linear_init(K, self.in_features, 1, generator, dtype)
        return torch.cat([w[:, 0, :], b], dim=1)

    def unflatten(self, theta: torch.Tensor) -> dict[str, torch.Tensor]:
        theta = _theta(self, theta, None)
        d = self.in_features
        return {"weight": theta[..., :d], "bias": theta[..., d:]}

    def prepare(self, X: torch.Tensor):
        """X (K, n, d) -> ([X, 1] and its transpose): the bias is the weight of a ones column."""
        X = _X(self, X)
        X1 = torch.cat([X, X.new_ones(X.shape[:-1] + (1,))], dim=-1)
        return (X1, X1.transpose(1, 2).contiguous())

    def _data(self, data, theta) -> tuple[torch.Tensor, torch.Tensor]:
        """``data`` as :meth:`prepare` returns it, for the K models of ``theta`` (kind and shape only)."""
        if not (isinstance(data, tuple) and len(data) == 2 and all(isinstance(t, torch.Tensor) for t in data)):
            raise TypeError(f"data must be what prepare(X) returns (a pair of tensors), got {type(data).__name__}")
        X1, X1t = data
        if X1.ndim != 3 or X1.shape[-1] != self.n_params or X1t.shape != X1.transpose(1, 2).shape \
                or X1.shape[0] != theta.shape[-2]:
            raise ValueError(f"data must be prepare(X) of X (K={theta.shape[-2]}, n, {self.in_features}), got "
                             f"shapes {tuple(X1.shape)}, {tuple(X1t.shape)}")
        return X1, X1t

    def apply(self, theta: torch.Tensor, data) -> torch.Tensor:
        """theta (K, p) or (Q, K, p) -> outputs (K, n) or (Q, K, n)."""
        theta = _theta(self, theta)
        _, X1t = self._data(data, theta)
        if theta.ndim == 2:
            return torch.bmm(theta.unsqueeze(1), X1t).squeeze(1)
        return torch.bmm(theta.transpose(0, 1), X1t).transpose(0, 1)   # (K,Q,p)@(K,p,n) -> (Q,K,n)

    def vjp(self, theta: torch.Tensor, data, grad_out: torch.Tensor) -> torch.Tensor:
        """∂/∂θ of Σ grad_out·apply(θ, data) for theta (K, p) and grad_out (K, n) (linear: theta's
        values do not enter, its shape does)."""
        theta = _theta(self, theta, 2)
        X1, _ = self._data(data, theta)
        grad_out = check_tensor("grad_out", grad_out, ndim=2, finite=False, convert=False)
        if tuple(grad_out.shape) != tuple(X1.shape[:2]):
            raise ValueError(f"grad_out must have the outputs' shape {tuple(X1.shape[:2])}, got {tuple(grad_out.shape)}")
        return torch.bmm(grad_out.unsqueeze(1), X1).squeeze(1)

    def forward(self, theta: torch.Tensor, X: torch.Tensor, *, allow_nonfinite: bool = False) -> torch.Tensor:
        """theta (K, p) or (Q, K, p), X (K, n, d) -> (K, n) or (Q, K, n). A NaN/inf in ``theta`` or ``X``
        raises unless ``allow_nonfinite`` (:func:`_check_finite_inputs`)."""
        theta = _theta(self, theta)
        X = _X(self, X, theta)
        _check_finite_inputs(theta, X, allow_nonfinite)
        return self.apply(theta, self.prepare(X))


@dataclass(frozen=True)
class MLP:
    """Two linear layers with ReLU between and one output. θ = [W1, b1, W2, b2] flattened."""

    in_features: int
    hidden: int = 128

    def __post_init__(self):
        check_int("in_features", self.in_features, low=1)
        check_int("hidden", self.hidden, low=1)

    @property
    def n_params(self) -> int:
        return self.hidden * self.in_features + self.hidden + self.hidden + 1

    def init(self, K: int, generator: torch.Generator, dtype=torch.float32) -> torch.Tensor:
        K = _init_args(self, K, generator, dtype)
        w1, b1 = _nn_linear_init(K, self.in_features, self.hidden, generator, dtype)
        w2, b2 = _nn_linear_init(K, self.hidden, 1, generator, dtype)
        return torch.cat([w1.reshape(K, -1), b1, w2.reshape(K, -1), b2], dim=1)

    def unflatten(self, theta: torch.Tensor) -> dict[str, torch.Tensor]:
        theta = _theta(self, theta, None)
        d, h = self.in_features, self.hidden
        lead = theta.shape[:-1]
        i = 0
        out = {}
        for name, shape in (("0.weight", (h, d)), ("0.bias", (h,)), ("2.weight", (1, h)), ("2.bias", (1,))):
            size = math.prod(shape)
            out[name] = theta[..., i:i + size].reshape(*lead, *shape)
            i += size
        return out

    def prepare(self, X: torch.Tensor):
        """X (K, n, d) with d = ``in_features`` (checked here, once per chunk, not in ``forward``)."""
        return _X(self, X)

    def apply(self, theta: torch.Tensor, data) -> torch.Tensor:
        """:meth:`forward` on ``data`` = :meth:`prepare` (X), the inputs (K, n, d)."""
        theta = _theta(self, theta)
        try:
            data = _X(self, data, theta)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"data (prepare(X)): {exc}") from None
        return self.forward(theta, data, allow_nonfinite=True)  # the hot path: kind and shape only

    def shared_loss_grad(self, theta: torch.Tensor, X: torch.Tensor, y: torch.Tensor, weights: torch.Tensor,
                         loss: str) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-model weighted loss (K,) and its gradient (K, p) for K models on ONE data set:
        Σ_i weights[i, k]·ℓ(f_k(X_i), y_i), with X (N, d), y (N,), weights (N, K) (model k's rows
        weighted 1/m_k, the others 0: the mean loss over its own rows). The K first layers run as
        one (N × d)·(d × K·h) product and their gradient as one (K·h × N)·(N × d) product — the
        same arithmetic as K separate products on each model's rows, in another summation order.
        Used by :func:`train` with ``rows=``; the gradient is analytic (no autograd graph)."""
        lossfn, lossgrad = loss_functions(loss)
        theta = _theta(self, theta, 2)
        K = theta.shape[0]
        X = check_tensor("X", X, ndim=2, finite=False, convert=False)
        N = X.shape[0]
        if X.shape[1] != self.in_features:
            raise ValueError(f"X must have shape (N, {self.in_features}), got {tuple(X.shape)}")
        y = check_tensor("y", y, ndim=1, finite=False, convert=False)
        weights = check_tensor("weights", weights, ndim=2, finite=False, convert=False)
        if y.shape[0] != N:
            raise ValueError(f"y must have one label per row of X (N = {N}), got shape {tuple(y.shape)}")
        if tuple(weights.shape) != (N, K):
            raise ValueError(f"weights must have shape (N, K) = ({N}, {K}), got {tuple(weights.shape)}")
        h, d = self.hidden, self.in_features
        hd = h * d
        W1 = theta[:, :hd].reshape(K * h, d)
        b1, w2, b2 = theta[:, hd:hd + h], theta[:, hd + h:hd + 2 * h], theta[:, hd + 2 * h]
        Z = torch.mm(X, W1.t()).view(N, K, h).add_(b1)                 # pre-activations + b1
        A = Z.clamp_min(0)
        out = torch.einsum("nkh,kh->nk", A, w2).add_(b2)
        yc = y.unsqueeze(1)
        per_model = (lossfn(out, yc) * weights).sum(dim=0)
        dout = lossgrad(out, yc).mul_(weights)                          # (N, K)
        g_b2 = dout.sum(dim=0)
        g_w2 = torch.einsum("nk,nkh->kh", dout, A)
        dZ = (dout.unsqueeze(2) * w2).mul_(Z > 0)                       # (N, K, h)
        g_b1 = dZ.sum(dim=0)
        g_W1 = torch.mm(dZ.reshape(N, K * h).t(), X)                    # (K·h, d)
        return per_model, torch.cat([g_W1.view(K, hd), g_b1, g_w2, g_b2.unsqueeze(1)], dim=1)

    def forward(self, theta: torch.Tensor, X: torch.Tensor, *, allow_nonfinite: bool = False) -> torch.Tensor:
        """theta (K, p) or (Q, K, p), X (K, n, d) -> (K, n) or (Q, K, n). A NaN/inf in ``theta`` or ``X``
        raises unless ``allow_nonfinite`` (:func:`_check_finite_inputs`)."""
        theta = _theta(self, theta)
        X = _X(self, X, theta)
        _check_finite_inputs(theta, X, allow_nonfinite)
        p = self.unflatten(theta)
        lead = theta.shape[:-2]
        if lead:  # fold leading dims into the model dimension
            Q = math.prod(lead)
            flat = theta.reshape(Q * theta.shape[-2], -1)
            Xr = X.unsqueeze(0).expand(Q, *X.shape).reshape(-1, *X.shape[1:])
            return self.forward(flat, Xr, allow_nonfinite=True).reshape(*lead, theta.shape[-2], X.shape[1])
        h = torch.baddbmm(p["0.bias"].unsqueeze(1), X, p["0.weight"].transpose(1, 2)).relu_()
        return torch.baddbmm(p["2.bias"].unsqueeze(1), h, p["2.weight"].transpose(1, 2)).squeeze(-1)


def _logistic(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    # softplus(±out): log(1 + e^{-out}) for y = 1, log(1 + e^{out}) for y = 0, accurate to float32
    # rounding for confident predictions too (binary_cross_entropy_with_logits computes
    # log(1 + e^{-|out|}) as log of a number near 1: a relative error of ~2.6e-4 at a loss of 5e-4)
    return F.softplus(out * (1 - 2 * y))


def _logistic_grad(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return torch.sigmoid(out) - y


def _mse(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return (out - y) ** 2


def _mse_grad(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return 2 * (out - y)


#: per-sample loss ℓ(out, y) and its derivative ∂ℓ/∂out
LOSSES: dict[str, tuple[Callable, Callable]] = {
    "logistic": (_logistic, _logistic_grad),
    "mse": (_mse, _mse_grad),
}


def loss_functions(loss: str) -> tuple[Callable, Callable]:
    """The per-sample loss ``ℓ(out, y)`` called ``loss`` and its derivative ``∂ℓ/∂out``."""
    check_choice("loss", loss, sorted(LOSSES))
    return LOSSES[loss]


def per_sample_loss(loss: str, out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Per-sample loss of outputs ``out`` against targets ``y`` (broadcast over leading dims:
    ``y.shape`` must be the trailing dimensions of ``out.shape``). Labels in {0, 1} for
    ``"logistic"``."""
    fn = loss_functions(loss)[0]
    check_tensor("out", out, convert=False, finite=False)
    check_tensor("y", y, convert=False, finite=False)
    if y.ndim > out.ndim or tuple(out.shape[out.ndim - y.ndim:]) != tuple(y.shape):
        raise ValueError(f"y {tuple(y.shape)} must be the trailing dimensions of out {tuple(out.shape)}")
    if not torch.isfinite(out).all():
        raise ValueError("out contains non-finite values (NaN or inf)")
    _check_targets("y", y, loss)
    return fn(out, y)


def param_sizes(model: Model) -> list[int]:
    """Sizes of the model's tensors (``unflatten``) in the order of the flat θ: the blocks of
    per-tensor quantization (``qlib.quantizers.quantize_many(..., split=...)``)."""
    parts = model.unflatten(torch.zeros(1, model.n_params))
    return [int(t[0].numel()) for t in parts.values()]


def init_params(model, K: int, seed: int | torch.Generator, dtype=torch.float32) -> torch.Tensor:
    """(K, p) initial parameters, reproducible from an int seed or a torch.Generator."""
    check_int("K (number of models)", K, low=1)
    g = seed if isinstance(seed, torch.Generator) else torch.Generator().manual_seed(check_seed("seed", seed))
    return model.init(K, g, dtype)


class Callback:
    """Hooks of :func:`train` (all optional). ``models`` is the slice of the K models being trained
    (the engine trains them in chunks of ``chunk_size``; a chunk runs all its epochs, then the next
    chunk starts); ``theta`` holds those models' parameters (detached; do not modify in place)."""

    def on_chunk_start(self, models: slice) -> None:  # pragma: no cover - default no-op
        pass

    def on_epoch_end(self, epoch: int, theta: torch.Tensor, models: slice) -> None:  # pragma: no cover
        pass

    def on_chunk_end(self, models: slice, theta: torch.Tensor) -> None:  # pragma: no cover
        pass


class _FnCallback(Callback):
    def __init__(self, fn):
        self.fn = fn

    def on_epoch_end(self, epoch, theta, models):
        self.fn(epoch, theta, models)


@dataclass(frozen=True)
class TrainConfig:
    """The settings of :func:`train`, checked once when built; frozen and hashable, the optimisation keyed
    (:meth:`key`) for caches.

    The optimisation: ``epochs`` full-batch Adam steps (>= 0); Adam's ``lr`` (> 0), ``betas`` (two numbers
    in [0, 1), stored as a tuple of floats) and ``eps`` (> 0), the defaults of ``torch.optim.Adam`` but
    ``lr`` (1e-4, paper 001 §5.1.1); ``loss``, one of :data:`LOSSES`.

    How it runs (outside :meth:`key`): ``device`` ('auto', 'cpu', 'cuda', 'cuda:N' or a torch.device);
    ``chunk_size`` (models per chunk, >= 1; None: :func:`default_chunk_size`); ``backend``, one of
    :data:`BACKENDS` (module docstring); ``record_loss`` (keep the per-epoch losses in
    :attr:`TrainResult.train_loss`)."""

    epochs: int
    lr: float = 1e-4
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    loss: str = "logistic"
    device: str | torch.device = "auto"
    chunk_size: int | None = None
    backend: str = "auto"
    record_loss: bool = False

    def __post_init__(self):
        def put(name, value):
            object.__setattr__(self, name, value)

        put("epochs", check_int("epochs", self.epochs, low=0))
        put("lr", check_float("lr", self.lr, low=0.0, low_open=True))
        betas = self.betas
        if not isinstance(betas, (tuple, list)):
            raise TypeError(f"betas must be a pair of numbers in [0, 1), got {betas!r}")
        if len(betas) != 2:
            raise ValueError(f"betas must be two numbers in [0, 1), got {betas!r}")
        put("betas", tuple(check_float(f"betas[{i}]", b, low=0.0, high=1.0, high_open=True)
                           for i, b in enumerate(betas)))
        put("eps", check_float("eps", self.eps, low=0.0, low_open=True))
        check_choice("loss", self.loss, sorted(LOSSES))
        if not (self.device is None or isinstance(self.device, (str, torch.device))):
            raise TypeError(f"device must be 'auto' (or None), 'cpu', 'cuda', 'cuda:N' or a torch.device, got {self.device!r}")
        put("chunk_size", check_int("chunk_size", self.chunk_size, low=1, allow_none=True))
        check_choice("backend", self.backend, BACKENDS)
        put("record_loss", check_bool("record_loss", self.record_loss))

    #: the fields that set the trained parameters: :meth:`as_dict` and :meth:`key`
    KEYED = ("epochs", "lr", "betas", "eps", "loss")

    def as_dict(self) -> dict:
        """The optimisation fields (:attr:`KEYED`) as plain JSON types (``betas`` a list)."""
        d = {k: getattr(self, k) for k in self.KEYED}
        d["betas"] = list(d["betas"])
        return d

    def key(self) -> str:
        """SHA-256 (16 hex digits) of the optimisation fields: the same settings give the same key in every
        process."""
        return hashlib.sha256(json.dumps(self.as_dict(), sort_keys=True).encode()).hexdigest()[:16]


@dataclass
class TrainResult:
    """Final parameters (K, p) and the per-model mean training loss before each epoch's step."""

    theta: torch.Tensor
    train_loss: torch.Tensor


def check_data(X: torch.Tensor, y: torch.Tensor, K: int | None = None, name: str = "X", *,
               y_name: str = "y", loss: str | None = None) -> None:
    """``X`` (K, n, d) and its targets ``y`` (K, n), finite tensors, for ``K`` models (None: any).

    ``name``/``y_name`` are the names the errors use for the two arguments. With
    ``loss="logistic"`` the targets must be labels in {0, 1} (binary cross-entropy with logits would
    train silently on any other value)."""
    check_tensor(name, X, ndim=3, convert=False, finite=False)
    check_tensor(y_name, y, convert=False, finite=False)
    K = check_int("K", K, low=1, allow_none=True)
    if loss is not None:
        check_choice("loss", loss, sorted(LOSSES))
    if y.shape != X.shape[:2]:
        raise ValueError(f"{y_name} (the targets of {name}) must have shape (K, n) = {tuple(X.shape[:2])}, "
                         f"got {tuple(y.shape)}")
    if K is not None and X.shape[0] != K:
        raise ValueError(f"{name} holds data for {X.shape[0]} models but K = {K} (the models of theta0)")
    if not torch.isfinite(X).all():
        raise ValueError(f"{name} contains non-finite values (NaN or inf)")
    _check_targets(y_name, y, loss)


def _check_targets(y_name: str, y: torch.Tensor, loss: str | None) -> None:
    """Finite targets; labels in {0, 1} under the logistic loss. One pass over ``y``."""
    if not torch.isfinite(y).all():
        raise ValueError(f"{y_name} contains non-finite values (NaN or inf)")
    if loss == "logistic" and not bool(((y == 0) | (y == 1)).all()):
        bad = y[(y != 0) & (y != 1)]
        raise ValueError(f"{y_name} must hold labels in {{0, 1}} for the logistic loss, got "
                         f"{bad.numel()} other value(s) such as {float(bad.reshape(-1)[0]):g}")


def default_chunk_size(device: torch.device, K: int) -> int:
    """CPU: 32 models per chunk (their data stays in cache across epochs); CUDA: all at once."""
    if not isinstance(device, torch.device):
        raise TypeError(f"device must be a torch.device (see qlib.devices.resolve), got {type(device).__name__}")
    K = check_int("K", K, low=1)
    return K if device.type == "cuda" else min(K, 32)


def train(
    model,
    theta0: torch.Tensor,
    X: torch.Tensor,
    y: torch.Tensor,
    config: TrainConfig | None = None,
    *,
    callbacks: Sequence[Callback | Callable] = (),
    transform: Callable[[torch.Tensor], torch.Tensor] | None = None,
    rows: torch.Tensor | None = None,
    **overrides,
) -> TrainResult:
    """Train K models at once, full batch, with Adam (the update of ``torch.optim.Adam``).

    ``config``: the settings (:class:`TrainConfig`: epochs, Adam's lr, betas, eps, the loss, and the
    device, chunk size, backend and loss recording); ``overrides``, its fields by keyword, replace those
    of ``config`` (:func:`qlib.validation.resolve_config`): ``train(..., epochs=5, lr=1e-2)`` is
    ``train(..., TrainConfig(epochs=5, lr=1e-2))`` and ``train(..., cfg, device="cpu")`` is
    ``train(..., dataclasses.replace(cfg, device="cpu"))``; ``epochs`` has no default.
    ``theta0`` (K, p): initial parameters; ``X`` (K, n, d), ``y`` (K, n): model k's own training
    set. One epoch = one full-batch Adam step on the mean loss of each model. The K models do not
    interact, so they are trained in chunks of ``chunk_size`` models (default
    :func:`default_chunk_size`), each chunk one batched computation over all its epochs.
    ``transform`` (e.g. ``qlib.synthetic.features``) is applied to each chunk's X on the device.
    ``callbacks``: :class:`Callback` objects, or callables ``fn(epoch, theta, models)``.
    ``backend``: one of :data:`BACKENDS` (module docstring); ``"compiled"`` where it does not apply
    (see :func:`compiled_backend`) is a ``ValueError`` saying why.

    ``rows`` (K, m) integer: the K models train on subsets of ONE data set, ``X`` (1, N, d) and
    ``y`` (1, N), model k on the rows ``rows[k]`` (distinct, in [0, N)) — e.g. runs that each draw
    their own subsample of a training part. Same result as ``X[0][rows]``, ``y[0][rows]`` (to float
    rounding), without the K copies; for :class:`MLP` (which has ``shared_loss_grad``) every epoch's
    products run as one large matrix product over the shared rows instead of K small ones (the rows
    no model uses are dropped first). Other models, and the compiled backend, get the copies.
    """
    cfg = resolve_config(TrainConfig, config, overrides)
    epochs, lr, (b1, b2), eps, loss = cfg.epochs, cfg.lr, cfg.betas, cfg.eps, cfg.loss
    device, chunk_size, backend, record_loss = cfg.device, cfg.chunk_size, cfg.backend, cfg.record_loss
    lossfn, lossgrad = loss_functions(loss)
    check_tensor("theta0", theta0, ndim=2, convert=False)
    if theta0.shape[1] != model.n_params:
        raise ValueError(f"theta0 must have shape (K, {model.n_params}), got {tuple(theta0.shape)}")
    shared = None
    if rows is not None:
        check_data(X, y, 1, loss=loss)
        if not isinstance(rows, torch.Tensor) or rows.dtype not in (torch.int32, torch.int64):
            raise TypeError(f"rows must be an integer tensor (K, m) of row indices, got "
                            f"{getattr(rows, 'dtype', type(rows).__name__)}")
        if rows.ndim != 2 or rows.shape[0] != theta0.shape[0] or rows.shape[1] < 1:
            raise ValueError(f"rows must have shape (K, m) = ({theta0.shape[0]}, m ≥ 1), got {tuple(rows.shape)}")
        N = X.shape[1]
        if int(rows.min()) < 0 or int(rows.max()) >= N:
            raise ValueError(f"rows must index the {N} rows of X, in [0, {N - 1}]; got values in "
                             f"[{int(rows.min())}, {int(rows.max())}]")
        srt = rows.sort(dim=1).values
        if bool((srt[:, 1:] == srt[:, :-1]).any()):
            raise ValueError("rows must list distinct row indices within each model's row")
        if hasattr(model, "shared_loss_grad"):
            shared = rows
        else:
            X, y = X[0][rows], y[0][rows]
    else:
        check_data(X, y, theta0.shape[0], loss=loss)
    dev = devices.resolve(device)
    why = compiled_reason(model, dev, theta0.dtype)
    if backend == "compiled" and why:
        raise ValueError(f"backend='compiled' does not apply here: {why}")
    compiled = backend != "torch" and not why
    K = theta0.shape[0]
    if record_loss:
        check_alloc("epochs", epochs * K, 2 * theta0.element_size(), value=epochs, what="the loss history (epochs, K)")
    if shared is not None:
        return _train_shared(model, theta0, X[0], y[0], shared, epochs, lr, b1, b2, eps, loss, callbacks, dev,
                             record_loss)
    if chunk_size is None:
        chunk_size = default_chunk_size(dev, K)
    cbs = _callbacks(callbacks)
    dtype = theta0.dtype
    out_theta = torch.empty_like(theta0, device="cpu")
    hist = torch.empty(epochs, K, dtype=dtype) if record_loss else torch.empty(0)
    analytic = hasattr(model, "vjp")
    for start in range(0, K, chunk_size):
        sl = slice(start, min(K, start + chunk_size))
        Xc = X[sl].to(dev, dtype)
        if transform is not None:
            Xc = transform(Xc)
        yc = y[sl].to(dev, dtype)
        n = yc.shape[1]
        data = model.prepare(Xc)
        theta = theta0[sl].detach().to(dev).clone()
        m = torch.zeros_like(theta)
        v = torch.zeros_like(theta)
        losses = torch.empty(epochs, theta.shape[0], dtype=dtype, device=dev) if record_loss else None
        for c in cbs:
            c.on_chunk_start(sl)
        if compiled:
            theta = _train_compiled(data, theta, m, v, yc, epochs, lr, b1, b2, eps, loss, cbs, sl, losses)
            epochs_left = range(0)
        else:
            epochs_left = range(1, epochs + 1)
        for t in epochs_left:
            if analytic:
                out = model.apply(theta, data)
                g = model.vjp(theta, data, lossgrad(out, yc).div_(n))
                if record_loss:
                    losses[t - 1] = lossfn(out, yc).mean(dim=1)
            else:
                theta.requires_grad_(True)
                per_model = lossfn(model.apply(theta, data), yc).mean(dim=1)
                (g,) = torch.autograd.grad(per_model.sum(), theta)
                theta = theta.detach()
                if record_loss:
                    losses[t - 1] = per_model.detach()
            _adam_step(theta, g, m, v, t, lr, b1, b2, eps)
            for c in cbs:
                c.on_epoch_end(t, theta, sl)
        for c in cbs:
            c.on_chunk_end(sl, theta)
        out_theta[sl] = theta.cpu()
        if record_loss:
            hist[:, sl] = losses.cpu()
    return TrainResult(out_theta, hist)


def _callbacks(callbacks) -> list:
    cbs = []
    for c in callbacks:
        if all(hasattr(c, h) for h in ("on_chunk_start", "on_epoch_end", "on_chunk_end")):
            cbs.append(c)
        elif callable(c):
            cbs.append(_FnCallback(c))
        else:
            raise TypeError(f"callbacks must be Callback-like objects or callables, got {type(c).__name__}")
    return cbs


def _adam_step(theta, g, m, v, t, lr, b1, b2, eps) -> None:
    """torch.optim.Adam's update (single-tensor path, no weight decay, amsgrad=False), in place."""
    m.lerp_(g, 1 - b1)
    v.mul_(b2).addcmul_(g, g, value=1 - b2)
    bc1 = 1 - b1**t
    bc2 = 1 - b2**t
    denom = (v.sqrt() / math.sqrt(bc2)).add_(eps)
    theta.addcdiv_(m, denom, value=-lr / bc1)


def _train_shared(model, theta0, X, y, rows, epochs, lr, b1, b2, eps, loss, callbacks, dev, record_loss):
    """:func:`train` with ``rows=`` for a model with ``shared_loss_grad``: all K models in one chunk."""
    cbs = _callbacks(callbacks)
    K, m = rows.shape
    used = torch.unique(rows)                                           # sorted rows some model uses
    pos = torch.full((X.shape[0],), -1, dtype=torch.long)
    pos[used] = torch.arange(used.numel())
    dtype = theta0.dtype
    Xs = X[used].to(dev, dtype).contiguous()
    ys = y[used].to(dev, dtype)
    weights = torch.zeros(used.numel(), K, dtype=dtype)
    weights[pos[rows.long()], torch.arange(K).unsqueeze(1).expand(K, m)] = 1.0 / m
    weights = weights.to(dev)
    theta = theta0.detach().to(dev).clone()
    mom = torch.zeros_like(theta)
    var = torch.zeros_like(theta)
    hist = torch.empty(epochs, K, dtype=dtype) if record_loss else torch.empty(0)
    sl = slice(0, K)
    for c in cbs:
        c.on_chunk_start(sl)
    for t in range(1, epochs + 1):
        per_model, g = model.shared_loss_grad(theta, Xs, ys, weights, loss)
        if record_loss:
            hist[t - 1] = per_model.cpu()
        _adam_step(theta, g, mom, var, t, lr, b1, b2, eps)
        for c in cbs:
            c.on_epoch_end(t, theta, sl)
    for c in cbs:
        c.on_chunk_end(sl, theta)
    return TrainResult(theta.cpu(), hist)


def compiled_reason(model, dev: torch.device, dtype: torch.dtype) -> str:
    """Why the compiled backend cannot train ``model`` on the device ``dev`` with parameters of
    ``dtype`` (empty string: it can)."""
    if not isinstance(dev, torch.device):
        raise TypeError(f"dev must be a torch.device (see qlib.devices.resolve), got {type(dev).__name__}")
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"dtype must be a torch.dtype such as torch.float32, got {dtype!r}")
    if type(model) is not Linear:
        return f"it trains engine.Linear only, not {type(model).__name__}"
    if dev.type != "cpu":
        return f"it runs on the CPU, not {dev.type}"
    if dtype != torch.float32:
        return f"it trains float32 parameters, not {dtype}"
    if _kernels.load("engine") is None:
        return "numba cannot be imported"
    return ""


def compiled_backend(model, device="auto", dtype=torch.float32) -> bool:
    """Whether ``backend="auto"`` trains ``model`` (a :class:`Model`) with the compiled kernel on
    ``device`` with parameters of ``dtype`` (a ``torch.dtype``)."""
    if not isinstance(model, Model):
        raise TypeError(f"model must be a qlib.engine.Model (Linear, MLP, ...), got {type(model).__name__}")
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"dtype must be a torch.dtype such as torch.float32, got {dtype!r}")
    return not compiled_reason(model, devices.resolve(device), dtype)


#: epochs per call of the compiled kernel (then the callbacks see each of them)
_COMPILED_BLOCK = 50


def _train_compiled(data, theta, m, v, yc, epochs, lr, b1, b2, eps, loss, cbs, sl, losses):
    """All epochs of one chunk with :func:`qlib._kernels.engine.linear_adam`, ``_COMPILED_BLOCK`` at a
    time; the callbacks see each epoch's parameters (a view of the block's history)."""
    ec = _kernels.load("engine")
    adam = ec.kernel("linear_adam", torch.get_num_threads())
    X1, X1t = data
    X1 = X1.contiguous().numpy()
    X1t = X1t.contiguous().numpy()
    th, mm, vv = (a.contiguous().numpy() for a in (theta, m, v))
    y = yc.contiguous().numpy()
    k, p = th.shape
    want_hist = bool(cbs)
    hist = np.empty((min(_COMPILED_BLOCK, epochs) if want_hist else 0, k, p), np.float32)
    rec = losses is not None
    lbuf = np.empty((min(_COMPILED_BLOCK, epochs) if rec else 0, k), np.float32)
    for t0 in range(0, epochs, _COMPILED_BLOCK):
        steps = min(_COMPILED_BLOCK, epochs - t0)
        adam(th, mm, vv, X1, X1t, y, t0, steps, float(lr), float(b1), float(b2), float(eps),
                       loss == "logistic", hist[:steps], lbuf[:steps])
        if rec:
            losses[t0:t0 + steps] = torch.from_numpy(lbuf[:steps])
        if want_hist:
            ht = torch.from_numpy(hist)
            for s in range(steps):
                for c in cbs:
                    c.on_epoch_end(t0 + s + 1, ht[s], sl)
    return torch.from_numpy(th)
