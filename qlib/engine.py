"""Vectorised training of K independent small models in one batched computation.

Every model has its own data, its own initialisation and its own Adam state; the K models are
stacked along a leading dimension and trained together (one batched matmul per layer, one Adam
update for all), which is the same computation as training each alone with ``torch.optim.Adam``
(tests/test_engine.py checks it to float tolerance). The model families (the ``Model`` protocol,
``Linear``, ``MLP``, their initialisation) live in :mod:`qlib.engine_models`, the per-sample losses
(``"logistic"``, ``"mse"``) in :mod:`qlib.losses`. This module is the training: :func:`train` with its settings (:class:`TrainConfig`), its result, its
callbacks and its two backends.

Callbacks (:class:`Callback`) see every chunk start, every epoch end (epoch counts from 1) and every
chunk end. On CPU the K models are trained in chunks of a few tens (each chunk runs all its epochs
with its data in cache; measured ~10× faster than one batch of thousands of models, see
``benchmarks/bench_engine.py``); on CUDA all at once. Every chunk of the torch backend runs the one
epoch loop (:func:`_epochs`): an Adam step on a gradient that is analytic where the model has ``vjp``,
autograd's elsewhere, or one product over shared rows (``train(rows=)``).

Two backends (``backend=``): ``"torch"`` — the batched torch computation above, on any device, any
model, autograd where the model has no ``vjp``; and ``"compiled"`` — for ``Linear`` in float32
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
from typing import Callable, Sequence

import numpy as np
import torch

from . import _kernels, devices
from .engine_models import Linear, Model
from .losses import LOSSES, check_targets, loss_functions
from .validation import check_alloc, check_bool, check_choice, check_float, check_int, check_tensor, resolve_config

__all__ = ["train", "TrainConfig", "TrainResult", "Callback", "check_data", "default_chunk_size", "BACKENDS",
           "compiled_backend", "compiled_reason"]

#: the training backends of :func:`train`
BACKENDS = ("auto", "torch", "compiled")


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
    ``lr`` (1e-4, paper 001 §5.1.1); ``loss``, one of :data:`qlib.losses.LOSSES`.

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
    check_targets(y_name, y, loss)


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
    config: TrainConfig,
    *,
    callbacks: Sequence[Callback | Callable] = (),
    transform: Callable[[torch.Tensor], torch.Tensor] | None = None,
    rows: torch.Tensor | None = None,
) -> TrainResult:
    """Train K models at once, full batch, with Adam (the update of ``torch.optim.Adam``).

    ``config``: the settings (:class:`TrainConfig`: epochs, Adam's lr, betas, eps, the loss, and the
    device, chunk size, backend and loss recording; ``epochs`` has no default, so the record is required):
    ``train(..., TrainConfig(epochs=5, lr=1e-2))``, ``train(..., dataclasses.replace(cfg, device="cpu"))``.
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
    rounding), without the K copies; for :class:`~qlib.engine_models.MLP` (which has ``shared_loss_grad``) every epoch's
    products run as one large matrix product over the shared rows instead of K small ones (the rows
    no model uses are dropped first). Other models, and the compiled backend, get the copies.
    """
    cfg = resolve_config(TrainConfig, config)
    epochs, loss, chunk_size, backend, record_loss = cfg.epochs, cfg.loss, cfg.chunk_size, cfg.backend, cfg.record_loss
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
    dev = devices.resolve(cfg.device)
    why = compiled_reason(model, dev, theta0.dtype)
    if backend == "compiled" and why:
        raise ValueError(f"backend='compiled' does not apply here: {why}")
    compiled = backend != "torch" and not why
    K, dtype = theta0.shape[0], theta0.dtype
    if record_loss:
        check_alloc("epochs", epochs * K, 2 * theta0.element_size(), value=epochs, what="the loss history (epochs, K)")
    if shared is not None:  # one product over the shared rows: all K models in one chunk
        chunk_size = K
    elif chunk_size is None:
        chunk_size = default_chunk_size(dev, K)
    cbs = _callbacks(callbacks)
    out_theta = torch.empty_like(theta0, device="cpu")
    hist = torch.empty(epochs, K, dtype=dtype) if record_loss else torch.empty(0)
    for start in range(0, K, chunk_size):
        sl = slice(start, min(K, start + chunk_size))
        if shared is not None:
            data = yc = None
            step = _shared_gradient(model, X[0], y[0], shared, loss, dev, dtype)
        else:
            Xc = X[sl].to(dev, dtype)
            if transform is not None:
                Xc = transform(Xc)
            yc = y[sl].to(dev, dtype)
            data = model.prepare(Xc)
            step = _gradient(model, data, yc, loss, record_loss)
        theta = theta0[sl].detach().to(dev).clone()
        losses = torch.empty(epochs, theta.shape[0], dtype=dtype, device=dev) if record_loss else None
        for c in cbs:
            c.on_chunk_start(sl)
        if compiled:
            theta = _train_compiled(data, theta, yc, cfg, cbs, sl, losses)
        else:
            theta = _epochs(theta, step, cfg, cbs, sl, losses)
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


def _gradient(model, data, yc, loss, record_loss):
    """One chunk's epoch gradient, each model's mean loss on its own data: ``step(theta) -> (theta, g,
    per-model loss)``, analytic where the model has ``vjp`` (the loss then only where ``record_loss``),
    else by autograd (which hands back ``theta`` detached)."""
    lossfn, lossgrad = loss_functions(loss)
    n = yc.shape[1]
    if hasattr(model, "vjp"):
        def step(theta):
            out = model.apply(theta, data)
            g = model.vjp(theta, data, lossgrad(out, yc).div_(n))
            return theta, g, (lossfn(out, yc).mean(dim=1) if record_loss else None)
    else:
        def step(theta):
            theta.requires_grad_(True)
            per_model = lossfn(model.apply(theta, data), yc).mean(dim=1)
            (g,) = torch.autograd.grad(per_model.sum(), theta)
            return theta.detach(), g, per_model.detach()
    return step


def _shared_gradient(model, X, y, rows, loss, dev, dtype):
    """The epoch gradient of :func:`train` with ``rows=`` for a model with ``shared_loss_grad``: model k's
    mean loss over its rows ``rows[k]`` of one data set ``X`` (N, d), ``y`` (N,), all K models as one
    product over the rows some model uses (weighted 1/m on a model's own rows, 0 elsewhere)."""
    K, m = rows.shape
    used = torch.unique(rows)                                           # sorted rows some model uses
    pos = torch.full((X.shape[0],), -1, dtype=torch.long)
    pos[used] = torch.arange(used.numel())
    Xs = X[used].to(dev, dtype).contiguous()
    ys = y[used].to(dev, dtype)
    weights = torch.zeros(used.numel(), K, dtype=dtype)
    weights[pos[rows.long()], torch.arange(K).unsqueeze(1).expand(K, m)] = 1.0 / m
    weights = weights.to(dev)

    def step(theta):
        per_model, g = model.shared_loss_grad(theta, Xs, ys, weights, loss)
        return theta, g, per_model
    return step


def _epochs(theta, step, cfg: TrainConfig, cbs, sl: slice, losses) -> torch.Tensor:
    """The epoch loop of the torch backend, for every kind of gradient ``step`` (:func:`_gradient`,
    :func:`_shared_gradient`): ``cfg.epochs`` Adam steps from zero moments, each epoch's per-model loss
    into ``losses`` (None: not recorded), the callbacks told after each step."""
    m, v = torch.zeros_like(theta), torch.zeros_like(theta)
    b1, b2 = cfg.betas
    for t in range(1, cfg.epochs + 1):
        theta, g, per_model = step(theta)
        if losses is not None:
            losses[t - 1] = per_model
        _adam_step(theta, g, m, v, t, cfg.lr, b1, b2, cfg.eps)
        for c in cbs:
            c.on_epoch_end(t, theta, sl)
    return theta


def compiled_reason(model, dev: torch.device, dtype: torch.dtype) -> str:
    """Why the compiled backend cannot train ``model`` on the device ``dev`` with parameters of
    ``dtype`` (empty string: it can)."""
    if not isinstance(dev, torch.device):
        raise TypeError(f"dev must be a torch.device (see qlib.devices.resolve), got {type(dev).__name__}")
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"dtype must be a torch.dtype such as torch.float32, got {dtype!r}")
    if type(model) is not Linear:
        return f"it trains engine_models.Linear only, not {type(model).__name__}"
    if dev.type != "cpu":
        return f"it runs on the CPU, not {dev.type}"
    if dtype != torch.float32:
        return f"it trains float32 parameters, not {dtype}"
    if _kernels.load("engine") is None:
        return "numba cannot be imported"
    return ""


def compiled_backend(model, device="auto", dtype=torch.float32) -> bool:
    """Whether ``backend="auto"`` trains ``model`` (a :class:`qlib.engine_models.Model`) with the compiled kernel on
    ``device`` with parameters of ``dtype`` (a ``torch.dtype``)."""
    if not isinstance(model, Model):
        raise TypeError(f"model must be a qlib.engine_models.Model (Linear, MLP, ...), got {type(model).__name__}")
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"dtype must be a torch.dtype such as torch.float32, got {dtype!r}")
    return not compiled_reason(model, devices.resolve(device), dtype)


#: epochs per call of the compiled kernel (then the callbacks see each of them)
_COMPILED_BLOCK = 50


def _train_compiled(data, theta, yc, cfg: TrainConfig, cbs, sl: slice, losses) -> torch.Tensor:
    """All epochs of one chunk with :func:`qlib._kernels.engine.linear_adam`, ``_COMPILED_BLOCK`` at a
    time, from zero moments; the callbacks see each epoch's parameters (a view of the block's history)."""
    epochs, (b1, b2) = cfg.epochs, cfg.betas
    ec = _kernels.load("engine")
    adam = ec.kernel("linear_adam", torch.get_num_threads())
    X1, X1t = data
    X1 = X1.contiguous().numpy()
    X1t = X1t.contiguous().numpy()
    th = theta.contiguous().numpy()
    mm, vv = np.zeros_like(th), np.zeros_like(th)
    y = yc.contiguous().numpy()
    k, p = th.shape
    want_hist = bool(cbs)
    hist = np.empty((min(_COMPILED_BLOCK, epochs) if want_hist else 0, k, p), np.float32)
    rec = losses is not None
    lbuf = np.empty((min(_COMPILED_BLOCK, epochs) if rec else 0, k), np.float32)
    for t0 in range(0, epochs, _COMPILED_BLOCK):
        steps = min(_COMPILED_BLOCK, epochs - t0)
        adam(th, mm, vv, X1, X1t, y, t0, steps, float(cfg.lr), float(b1), float(b2), float(cfg.eps),
             cfg.loss == "logistic", hist[:steps], lbuf[:steps])
        if rec:
            losses[t0:t0 + steps] = torch.from_numpy(lbuf[:steps])
        if want_hist:
            ht = torch.from_numpy(hist)
            for s in range(steps):
                for c in cbs:
                    c.on_epoch_end(t0 + s + 1, ht[s], sl)
    return torch.from_numpy(th)
