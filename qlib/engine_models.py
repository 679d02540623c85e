"""The model families of the batched engine: K independent small models as one stacked parameter tensor.

A *model* is any object satisfying the :class:`Model` protocol (``n_params``, ``init``, ``unflatten``,
``prepare``, ``apply``; optionally ``vjp`` for an analytic gradient, :class:`AnalyticModel`): the
parameters of K models are the rows of one (K, p) tensor θ and every method works on all K at once
(one batched matmul per layer), which :func:`qlib.engine.train` trains and
:class:`qlib.recorder.RQRecorder` records. The models know their layers and their gradients; how they
are trained (Adam, chunks, backends, callbacks) is :mod:`qlib.engine`'s.

Two families ship: :class:`Linear` (one linear layer + bias; with ``qlib.synthetic.features`` the
logistic model on [x, x²] of paper 001 §5.1) and :class:`MLP` (two layers, ReLU). :func:`init_params`
draws the K models' initial parameters as ``torch.nn.Linear`` does; :func:`param_sizes` gives the
blocks of per-tensor quantization.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import torch

from .losses import loss_functions
from .validation import check_alloc, check_bool, check_int, check_seed, check_tensor, nested

__all__ = ["Model", "AnalyticModel", "Linear", "MLP", "init_params", "param_sizes"]


@runtime_checkable
class Model(Protocol):
    """What :func:`qlib.engine.train` and :class:`qlib.recorder.RQRecorder` need of a model family.

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
    (K, p): :func:`qlib.engine.train` then skips autograd."""

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
    entries: the models' methods run on the hot path of every epoch; :func:`qlib.engine.train` checks ``theta0`` once)."""
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
        Used by :func:`qlib.engine.train` with ``rows=``; the gradient is analytic (no autograd graph)."""
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
