"""The training callback that records r_Q^n (paper 001, Algorithm 1) for many models and quantizers.

:class:`RQRecorder` plugs into :func:`qlib.engine.train`: every epoch it quantizes the current
parameters of each model with every quantizer, evaluates their per-sample validation losses, and at
the end of each chunk of models reduces the loss buffer exactly with :func:`qlib.rqn.batched_rates`
(the same r_Q^n as :func:`qlib.rqn.r_q` on each trajectory, copies of a quantized model counted once).

For :class:`qlib.engine_models.Linear` on the CPU the three steps run compiled (:mod:`qlib._kernels.quantize`,
:mod:`qlib._kernels.rqn`; for the MLP incrementally, :mod:`qlib._kernels.incremental`):
the quantizers in one pass per parameter vector (the same values as
:func:`qlib.quantizers.quantize_many`), the validation losses as one matrix product per model, and
the statistics of Algorithm 1 in two passes per stream with variances in float64 (agreeing with
:func:`qlib.rqn.batched_rates` to ~1e-6 relative; tests/test_engine_compiled.py). A quantized model
equal to the one of the previous epoch (most are: 89 % in the synthetic study of paper 001) has the
same losses and repeats a term of Algorithm 1's minimum, so it is neither evaluated nor stored
again; copies of θ̄_1 and distinct models are told apart by a 64-bit hash of the quantized
parameters (the set Θ̄ of the paper) rather than by equal loss rows. ``backend="torch"`` keeps the
torch path.
"""

from __future__ import annotations

import contextlib
import warnings
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import torch

from . import _kernels, devices, engine, engine_models, losses, quantizers
from .rqn import RQUndefinedWarning, batched_rates, check_ddof
from .validation import (
    check_alloc,
    check_bool,
    check_callable,
    check_choice,
    check_float,
    check_int,
    check_tensor,
    resolve_config,
)

__all__ = ["RQRecorder", "RecorderConfig", "compiled_reason"]


def compiled_reason(model: engine_models.Model, device="auto") -> str:
    """Why :class:`RQRecorder` cannot record ``model`` with compiled kernels on ``device`` (empty
    string: it can). Compiled: :class:`qlib.engine_models.Linear` (training and recording) and
    :class:`qlib.engine_models.MLP` (incremental recording), in float32 on the CPU, where numba imports."""
    if not isinstance(model, engine_models.Model):
        raise TypeError(f"model must be a qlib.engine_models.Model (Linear, MLP, ...), got {type(model).__name__}")
    dev = devices.resolve(device)
    if type(model) is engine_models.MLP:
        if dev.type != "cpu":
            return f"it runs on the CPU, not {dev.type}"
        return "" if engine.compiled_backend(engine_models.Linear(1), "cpu") else "numba cannot be imported"
    return engine.compiled_reason(model, dev, torch.float32)


@dataclass(frozen=True)
class RecorderConfig:
    """The settings of :class:`RQRecorder`, checked once when built; frozen.

    ``epochs``: the epochs of the training it records (>= 1; no default); ``loss``: the per-sample loss
    of the validation losses (one of :data:`qlib.losses.LOSSES`); ``scope``: quantization per tensor or
    of the whole parameter vector (:data:`qlib.quantizers.SCOPES`); ``every``: record every ``every``-th
    epoch (>= 1); ``transform``: applied to each chunk's validation inputs (e.g.
    ``qlib.synthetic.features``; None: none); ``ddof`` of the variances, 0 or 1
    (:func:`qlib.rqn.check_ddof`); ``keep_losses``: keep the (T, Q, K, n_val) losses; ``device``;
    ``block``: epochs quantized per fused call (>= 1); ``variant``: the b-bit formula
    (:data:`qlib.quantizers.VARIANTS`); ``backend``: one of :data:`qlib.engine.BACKENDS`; ``refresh``
    and ``dense_above``: the incremental path's full recomputation every ``refresh`` epochs (>= 1) and
    its switch to a full product above that fraction of changed first-layer coordinates (in [0, 1])."""

    epochs: int
    loss: str = "logistic"
    scope: str = "tensor"
    every: int = 1
    transform: Callable | None = None
    ddof: int = 1
    keep_losses: bool = False
    device: str | torch.device = "auto"
    block: int = 50
    variant: str = "printed"
    backend: str = "auto"
    refresh: int = 50
    dense_above: float = 0.3

    def __post_init__(self):
        def put(name, value):
            object.__setattr__(self, name, value)

        put("epochs", check_int("epochs", self.epochs, low=1))
        put("every", check_int("every", self.every, low=1))
        check_choice("loss", self.loss, sorted(losses.LOSSES))
        check_choice("scope", self.scope, quantizers.SCOPES)
        put("ddof", check_ddof(self.ddof))
        check_choice("variant", self.variant, quantizers.VARIANTS)
        check_choice("backend", self.backend, engine.BACKENDS)
        put("refresh", check_int("refresh", self.refresh, low=1))
        put("dense_above", check_float("dense_above", self.dense_above, low=0.0, high=1.0))
        put("block", check_int("block", self.block, low=1))
        put("keep_losses", check_bool("keep_losses", self.keep_losses))
        if self.transform is not None:
            check_callable("transform", self.transform)
        if not (self.device is None or isinstance(self.device, (str, torch.device))):
            raise TypeError(f"device must be 'auto' (or None), 'cpu', 'cuda', 'cuda:N' or a torch.device, got {self.device!r}")



@contextlib.contextmanager
def _one_thread():
    """torch at one thread inside (the count restored after): for the products whose summation order the
    thread count could change (the recorded losses are the same bits at any thread count)."""
    n = torch.get_num_threads()
    if n == 1:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(n)


class RQRecorder:
    """Training callback: r_Q^n (Algorithm 1) for K models × Q quantizers, batched.

    ``names``: the quantizers; ``X_val`` (K, n_val, d), ``y_val`` (K, n_val): each model's own validation
    set; ``config``: the settings (:class:`RecorderConfig`; required: ``epochs`` has no default):
    ``RQRecorder(model, names, X_val, y_val, RecorderConfig(epochs=500))``.

    After every epoch (every ``every``-th) the current chunk's parameters are kept; every ``block``
    epochs they are quantized with all quantizers in one fused batched call
    (:func:`qlib.quantizers.quantize_many`, per tensor with ``scope="tensor"``), their per-sample losses on each model's own validation set are
    computed in one batched product, and stored in a (T, Q, chunk, n_val)
    buffer; at the chunk's end the exact statistics of :func:`qlib.rqn.r_q` are computed for every
    (quantizer, model) stream at once (:func:`qlib.rqn.batched_rates`) and the buffer is freed.
    Memory: T·Q·chunk·n_val float32 (3000·8·32·128 → 0.4 GB).

    After training: ``r`` (Q, K) r_Q^n (NaN where fewer than two distinct models, with one
    :class:`RQUndefinedWarning` summarising the count), ``delta2`` (Q, K) the gap δ_2,
    ``best_epoch`` and ``binding_epoch`` (Q, K) (1-based epochs of θ̄_1 and of the model attaining
    the minimum), ``n_distinct`` (Q, K) distinct quantized models met, and, with
    ``keep_losses=True``, ``losses`` (T, Q, K, n_val) for small runs.
    """

    def __init__(self, model: engine_models.Model, names: Sequence[str], X_val: torch.Tensor, y_val: torch.Tensor,
                 config: RecorderConfig):
        cfg = resolve_config(RecorderConfig, config)
        self.config = cfg
        epochs, loss, scope, every, ddof = cfg.epochs, cfg.loss, cfg.scope, cfg.every, cfg.ddof
        self.names = quantizers.check_names(names)
        engine.check_data(X_val, y_val, None, name="X_val", y_name="y_val", loss=loss)
        if X_val.shape[1] < 2:
            raise ValueError(f"X_val needs at least 2 validation samples per model, got {X_val.shape[1]}")
        self._lossfn = losses.loss_functions(loss)[0]
        self.variant = cfg.variant
        self.model, self.X_val, self.y_val = model, X_val, y_val
        self.loss, self.scope, self.every, self.transform, self.ddof = loss, scope, every, cfg.transform, ddof
        self.split = engine_models.param_sizes(model) if scope == "tensor" else None
        self.device = devices.resolve(cfg.device)
        why = compiled_reason(model, self.device)
        if cfg.backend == "compiled" and why:
            raise ValueError(f"backend='compiled' does not apply here: {why}")
        self._compiled = cfg.backend != "torch" and not why
        self._incremental = self._compiled and type(model) is engine_models.MLP
        self.refresh = cfg.refresh
        self.dense_above = cfg.dense_above
        #: per quantizer, the fraction of first-layer coordinates whose quantized value changed from
        #: one recorded epoch to the next (incremental path; summed over models, see ``change_stats``)
        self._changes = np.zeros(len(self.names))
        self._coords = np.zeros(len(self.names))
        self._flops_done = 0.0
        self._flops_full = 0.0
        self.block = cfg.block
        self.epochs = epochs
        self.T = epochs // every
        K, nv = X_val.shape[0], X_val.shape[1]
        Q = len(self.names)
        self.r = np.full((Q, K), np.nan)
        self.delta2 = np.full((Q, K), np.nan)
        self.best_epoch = np.zeros((Q, K), dtype=np.int64)
        self.binding_epoch = np.zeros((Q, K), dtype=np.int64)
        self.n_distinct = np.zeros((Q, K), dtype=np.int64)
        self.keep_losses = keep_losses = cfg.keep_losses
        if keep_losses:
            check_alloc("epochs", self.T * Q * K * nv, 4, value=epochs, what="the kept losses (T, Q, K, n_val)")
        self.losses = torch.empty(self.T, Q, K, nv) if keep_losses else None
        self._buf = None

    # engine.Callback protocol -------------------------------------------------------------
    def _check_models(self, models) -> slice:
        K = self.X_val.shape[0]
        if not (isinstance(models, slice) and models.step in (None, 1) and isinstance(models.start, int)
                and isinstance(models.stop, int) and 0 <= models.start < models.stop <= K):
            raise TypeError(f"models must be a slice start:stop of the K={K} models (0 <= start < stop <= K), "
                            f"got {models!r}")
        return models

    def _check_theta(self, theta, models) -> torch.Tensor:
        """The chunk's parameters (k, p): kind and shape only (called every epoch: no pass over the values;
        a diverged model's non-finite losses stop :meth:`on_chunk_end` with a named error)."""
        theta = check_tensor("theta", theta, ndim=2, finite=False, convert=False)
        want = (models.stop - models.start, self.model.n_params)
        if tuple(theta.shape) != want:
            raise ValueError(f"theta must have shape (models, parameters) = {want}, got {tuple(theta.shape)}")
        return theta

    def on_chunk_start(self, models: slice) -> None:
        models = self._check_models(models)
        k, Q, nv = models.stop - models.start, len(self.names), self.X_val.shape[1]
        check_alloc("epochs", k * Q * self.T * (nv + 4), 4, value=self.epochs,
                    what="the chunk's recorded validation losses (T, Q, models, n_val)")
        check_alloc("block", self.block * k * (Q + 1) * self.model.n_params, 4 * 2, value=self.block,
                    what="the chunk's buffered parameters (block, Q, models, p)")
        self._models = models
        Xv = self.X_val[models].to(self.device, torch.float32)
        if self.transform is not None:
            Xv = self.transform(Xv)
        self._yv = self.y_val[models].to(self.device, torch.float32)
        k = models.stop - models.start
        if self._incremental:
            self._start_incremental(k, Xv)
            return
        self._data = self.model.prepare(Xv)
        self._thetas = torch.empty(self.block, k, self.model.n_params, device=self.device)
        self._pending = []                                     # buffer rows waiting in _thetas
        if self._compiled:
            self._start_compiled(k, Xv.shape[1])
            return
        self._buf = torch.empty(self.T, len(self.names), k, Xv.shape[1], device=self.device)

    def _flush(self) -> None:
        E = len(self._pending)
        if E == 0:
            return
        if self._compiled:
            return self._flush_compiled(E)
        k, p = self._thetas.shape[1], self._thetas.shape[2]
        thq = quantizers.quantize_many(self.names, self._thetas[:E].reshape(E * k, p), split=self.split,
                                       variant=self.variant)
        Q = thq.shape[0]
        out = self.model.apply(thq.reshape(Q * E, k, p).to(self._yv.dtype), self._data)  # (QE, k, n)
        L = self._lossfn(out, self._yv).reshape(Q, E, k, -1).transpose(0, 1)
        i0 = self._pending[0]
        self._buf[i0:i0 + E] = L
        self._pending = []

    def on_epoch_end(self, epoch: int, theta: torch.Tensor, models: slice) -> None:
        epoch = check_int("epoch", epoch, low=1, high=self.epochs)
        theta = self._check_theta(theta, self._check_models(models))
        if epoch % self.every:
            return
        i = epoch // self.every - 1
        if i >= self.T:
            return
        if self._incremental:
            return self._record_incremental(i, theta)
        self._thetas[len(self._pending)] = theta
        self._pending.append(i)
        if len(self._pending) == self.block:
            self._flush()

    def on_chunk_end(self, models: slice, theta: torch.Tensor) -> None:
        self._check_theta(theta, self._check_models(models))
        if self._incremental:
            self._Z = self._q = self._XT = None
            return self._end_compiled(models)
        self._flush()
        if self._compiled:
            return self._end_compiled(models)
        Q, k = self._buf.shape[1], self._buf.shape[2]
        if not torch.isfinite(self._buf).all():
            raise ValueError("non-finite validation losses met while recording r_Q^n")
        B = self._buf.reshape(self.T, Q * k, -1)
        r, best, d2, kb, nd = batched_rates(B, ddof=self.ddof)
        sh = (Q, k)
        self.r[:, models] = r.reshape(sh).cpu().numpy()
        self.delta2[:, models] = d2.reshape(sh).cpu().numpy()
        self.best_epoch[:, models] = ((best + 1) * self.every).reshape(sh).cpu().numpy()
        self.binding_epoch[:, models] = np.where(kb.reshape(sh).cpu().numpy() >= 0,
                                                 (kb.reshape(sh).cpu().numpy() + 1) * self.every, -1)
        self.n_distinct[:, models] = nd.reshape(sh).cpu().numpy()
        if self.keep_losses:
            self.losses[:, :, models] = self._buf.cpu()
        self._buf = None

    # the compiled path (qlib._kernels.quantize and .rqn) ------------------------------------------
    def _start_compiled(self, k: int, nv: int) -> None:
        kq = _kernels.load("quantize")

        Q, p = len(self.names), self.model.n_params
        sizes = self.split if self.split is not None else [p]
        self._kinds, self._params, self._offsets = kq.quantizer_codes(self.names, sizes, self.variant)
        self._pivots = np.full((k, Q * len(sizes)), -1, np.int64)
        self._last = np.empty((k, Q, p), np.float32)           # each quantizer's previous row
        self._has_last = np.zeros(k, np.bool_)
        self._packed = np.zeros((k, self.block * Q, p), np.float32)
        self._sel = np.empty((k, self.block * Q), np.int64)
        self._hsel = np.empty((k, self.block * Q), np.int64)
        self._mult = kq.hash_multipliers(p)                    # of the quantized models' hash
        self._eh = np.empty((k, Q, self.T), np.int64)          # their quantized models' hashes
        self._count = np.zeros(k, np.int64)
        self._ep = np.empty((k, Q, self.T), np.int64)          # the epochs each stream holds
        self._ne = np.zeros((k, Q), np.int64)
        self._X1t = self._data[1].contiguous()                    # (k, p, n_val)
        self._ybc = self._yv.unsqueeze(1)                         # (k, 1, n_val)
        self._buf = torch.empty(k, self.T, Q, nv)

    def _flush_compiled(self, E: int) -> None:
        kq = _kernels.load("quantize")

        Q = len(self.names)
        nt = torch.get_num_threads()
        kq.kernel("quantize_unique", nt)(self._thetas[:E].numpy(), self._kinds, self._params, self._offsets,
                                         self._pivots, self._last, self._has_last, self._packed, self._sel,
                                         self._hsel, self._mult, self._count)
        M = int(self._count.max())
        if M:
            out = torch.bmm(torch.from_numpy(self._packed[:, :M]), self._X1t)          # (k, M, n)
            L = self._lossfn(out, self._ybc).contiguous()
            kq.kernel("scatter_unique", nt)(L.numpy(), self._sel, self._hsel, self._count, self._pending[0], Q,
                                            self._buf.numpy(), self._ep, self._eh, self._ne)
        self._pending = []

    # the incremental path (engine_models.MLP on the CPU: qlib._kernels.incremental) ----------------
    def _start_incremental(self, k: int, Xv: torch.Tensor) -> None:
        """State of one chunk: the quantized models of the last epoch, the first layer's validation
        pre-activations Z (k, Q, h, n) carried from epoch to epoch, and the loss buffer of the
        compiled path (only epochs whose quantized model changed are stored, as there)."""
        kq = _kernels.load("quantize")

        Q, p = len(self.names), self.model.n_params
        h, n = self.model.hidden, Xv.shape[1]
        sizes = self.split if self.split is not None else [p]
        self._kinds, self._params, self._offsets = kq.quantizer_codes(self.names, sizes, self.variant)
        self._pivots = np.full((k, Q * len(sizes)), -1, np.int64)
        # two (k, 1, Q, p) buffers, this epoch's quantized models and the last's (NaN: none yet,
        # which differs from everything and makes the first epoch a full product)
        self._q = np.full((2, k, 1, Q, p), np.nan, np.float32)
        self._flip = 0
        shared = self.X_val[self._models].stride(0) == 0 or bool((Xv == Xv[:1]).all())
        XT = (Xv[:1] if shared else Xv).transpose(1, 2).contiguous().to("cpu", torch.float32)   # (1 or k, d, n)
        self._XT = XT
        self._Z = torch.zeros(k, Q, h, n)
        self._out = np.zeros((k, Q, n), np.float32)
        self._counts = np.zeros((k, Q, h), np.int64)
        self._chg = np.zeros((k, Q), np.bool_)
        self._hash = np.zeros((k, Q), np.int64)
        self._mult = kq.hash_multipliers(p)
        self._idx = np.empty(0, np.int64)
        self._val = np.empty(0, np.float32)
        self._eh = np.empty((k, Q, self.T), np.int64)
        self._ep = np.empty((k, Q, self.T), np.int64)
        self._ne = np.zeros((k, Q), np.int64)
        self._ybc = self._yv.to("cpu", torch.float32).unsqueeze(1)           # (k, 1, n)
        self._buf = torch.empty(k, self.T, Q, n)
        self._since = 0

    def _record_incremental(self, i: int, theta: torch.Tensor) -> None:
        kq, ki = _kernels.load("quantize"), _kernels.load("incremental")

        nt = torch.get_num_threads()
        k, Q, h, n = self._Z.shape
        d = self.model.in_features
        hd = h * d
        x = theta.detach().to("cpu", torch.float32).contiguous().numpy()[None]        # (1, k, p)
        cur4, prev4 = self._q[self._flip], self._q[1 - self._flip]
        kq.kernel("quantize_rows", nt)(x, self._kinds, self._params, self._offsets, cur4, self._pivots)
        cur, prev = cur4[:, 0], prev4[:, 0]                                              # (k, Q, p)
        ki.kernel("mlp_diff", nt)(cur, prev, h, d, self._counts, self._chg, self._hash, self._mult)
        nchg = self._counts.sum(axis=2)                                                  # (k, Q)
        first = np.isnan(prev[0, 0, 0])
        self._since += 1
        refresh = first or self._since >= self.refresh
        if refresh:
            self._since = 0
        dense = self._chg & ((nchg > self.dense_above * hd) | refresh)
        sparse = self._chg & ~dense
        if not first:
            self._changes += nchg.sum(axis=0)
            self._coords += k * hd
        # dense models: one product each, Z = W̄ Xᵀ
        W = torch.from_numpy(cur[..., :hd]).view(k, Q, h, d)
        if dense.any():
            # at one thread: a matrix product's summation order may depend on the thread count (two threads
            # differ from one by ~1e-4 at 10 × 8 × 128 rows of 1024), and r_Q^n must not
            with _one_thread():
                if self._XT.shape[0] == 1:                  # shared validation set: one product for all
                    kk, qq = np.nonzero(dense)
                    self._Z[kk, qq] = torch.matmul(W[kk, qq].reshape(-1, d), self._XT[0]).view(len(kk), h, n)
                else:
                    for kk, q in np.argwhere(dense):
                        torch.mm(W[kk, q], self._XT[kk], out=self._Z[kk, q])
        # the others: only the changed coordinates, listed row by row
        cnt = np.where(sparse[..., None], self._counts, 0).reshape(-1)
        indptr = np.zeros(cnt.size + 1, np.int64)
        np.cumsum(cnt, out=indptr[1:])
        nnz = int(indptr[-1])
        if self._idx.size < nnz:
            self._idx = np.empty(int(nnz * 1.25) + 1, np.int64)
            self._val = np.empty(int(nnz * 1.25) + 1, np.float32)
        if nnz:
            ki.kernel("mlp_list_changes", nt)(cur, prev, h, d, indptr, self._idx, self._val)
        groups = np.argwhere(self._chg).astype(np.int64)
        if len(groups):
            ki.kernel("mlp_val_outputs", nt)(self._Z.numpy(), self._XT.numpy(), indptr, self._idx, self._val, cur,
                                             groups, h, d, self._out)
            L = self._lossfn(torch.from_numpy(self._out), self._ybc).numpy()            # (k, Q, n)
            kk, qq = groups[:, 0], groups[:, 1]
            buf = self._buf.numpy()
            buf[kk, i, qq] = L[kk, qq]
            slot = self._ne[kk, qq]
            self._ep[kk, qq, slot] = i
            self._eh[kk, qq, slot] = self._hash[kk, qq]
            self._ne[kk, qq] += 1
        self._flops_done += 2.0 * n * (int(dense.sum()) * hd + nnz)
        self._flops_full += 2.0 * n * k * Q * hd
        self._flip = 1 - self._flip

    def change_stats(self):
        """What the incremental path did so far: per quantizer the mean fraction of first-layer
        coordinates whose quantized value changed from one recorded epoch to the next, and the
        multiply–add FLOPs of the first layer's validation products performed against those of
        recomputing every model every epoch (``(fractions dict, flops_done, flops_full)``)."""
        frac = np.divide(self._changes, self._coords, out=np.full(len(self.names), np.nan), where=self._coords > 0)
        return dict(zip(self.names, frac.tolist())), self._flops_done, self._flops_full

    def _end_compiled(self, models: slice) -> None:
        kr, kq = _kernels.load("rqn"), _kernels.load("quantize")

        k, T, Q, n = self._buf.shape
        r = np.empty((k, Q))
        d2 = np.empty((k, Q))
        best = np.empty((k, Q), np.int64)
        kb = np.empty((k, Q), np.int64)
        nd = np.empty((k, Q), np.int64)
        bad = np.zeros(k, np.int64)
        buf = self._buf.numpy()
        nt = torch.get_num_threads()
        kr.kernel("rq_stats", nt)(buf, self._ep, self._eh, self._ne, self.ddof,
                                 kr.COPY_RTOL if self._incremental else 0.0, r, best, d2, kb, nd, bad)
        if bad.any():
            raise ValueError("non-finite validation losses met while recording r_Q^n")
        self.r[:, models] = r.T
        self.delta2[:, models] = d2.T
        self.best_epoch[:, models] = ((best + 1) * self.every).T
        self.binding_epoch[:, models] = np.where(kb >= 0, (kb + 1) * self.every, -1).T
        self.n_distinct[:, models] = nd.T
        if self.keep_losses:
            kq.kernel("fill_repeats", nt)(buf, self._ep, self._ne, T)
            self.losses[:, :, models] = self._buf.permute(1, 2, 0, 3)
        self._buf = None

    def finish(self) -> "RQRecorder":
        """Warn once if some streams had fewer than two distinct quantized models."""
        bad = int(np.isnan(self.r).sum())
        if bad:
            warnings.warn(
                f"r_Q^n is undefined (NaN) for {bad} of {self.r.size} (quantizer, model) pairs: "
                "fewer than two distinct quantized models along the trajectory",
                RQUndefinedWarning, stacklevel=2)
        return self

    def frame(self):
        """Long table: quantizer, model, r_q, delta2, n_distinct, best_epoch."""
        import pandas as pd  # deferred: pandas (~0.3 s) for this table only

        Q, K = self.r.shape
        return pd.DataFrame({
            "quantizer": np.repeat(self.names, K),
            "model": np.tile(np.arange(K), Q),
            "r_q": self.r.ravel(),
            "delta2": self.delta2.ravel(),
            "n_distinct": self.n_distinct.ravel(),
            "best_epoch": self.best_epoch.ravel(),
        })
