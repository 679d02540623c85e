"""The trainers and scoring of chapter 06's Table 3 investigation (private to the wing: :mod:`.table3_probe`
and :mod:`.table3_combos` share them; their arguments are checked by those modules' drivers).

* :func:`plain_fit` — Adam (``torch.optim.Adam``) on each run's rows, full batch or minibatches, one or
  more hidden layers (:func:`shapes`, :func:`forward`), its gradient by hand (:func:`_loss_grad`) or,
  as the reference, by autograd; the trainer of the probe's
  ``minibatch``, ``lr1e-4_minibatch`` and ``deep`` variants;
* :func:`fit` — one *training* of :mod:`.table3_combos` (hidden layers, lr, batch, standardisation): the batched
  engine where :func:`.molecular.train_task` would train (one hidden layer, full batch; bit for bit the same
  runs), :func:`plain_fit` elsewhere; optionally r_Q^n recorded along every trajectory
  (:class:`qlib.recorder.RQRecorder`; the deeper head through :class:`Stack`);
* :func:`score` — every procedure sharing a training scored on its trained runs (scope, AUROC of logits or of
  probabilities, the reading of 1.58b x %), each quantizer applied once per scope.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from qlib.engine import TrainConfig, train
from qlib.engine_models import MLP, init_params
from qlib.quantizers import quantize_many
from qlib.recorder import RecorderConfig, RQRecorder
from qlib.rqn import RQUndefinedWarning

from .molecular import QUANTIZERS, TABLE_READING, auroc, split_indices

__all__ = ["shapes", "forward", "plain_fit", "Stack", "Trained", "fit", "score"]


# ---------------------------------------------------------------------------------------------
# The autograd trainer (minibatch, deeper head; table3_probe)
# ---------------------------------------------------------------------------------------------
def shapes(d: int, hidden: int, layers: int) -> list[tuple[int, ...]]:
    """The tensors' shapes of a head on ``d`` inputs with ``layers`` hidden layers of ``hidden``, in θ's order."""
    out, fan = [], d
    for _ in range(layers):
        out += [(hidden, fan), (hidden,)]
        fan = hidden
    return out + [(1, fan), (1,)]


def forward(theta: torch.Tensor, X: torch.Tensor, shapes) -> torch.Tensor:
    """theta (..., R, p) flattened [W1, b1, …, w_out, b_out]; X (R, n, d) -> logits (..., R, n)."""
    lead = theta.shape[:-2]
    R = theta.shape[-2]
    th = theta.reshape(-1, theta.shape[-1])
    Q = th.shape[0] // R
    h = X.unsqueeze(0).expand(Q, *X.shape).reshape(Q * R, X.shape[1], X.shape[2])
    i = 0
    for k in range(0, len(shapes), 2):
        (o, f), size = shapes[k], shapes[k][0] * shapes[k][1]
        W = th[:, i:i + size].reshape(-1, o, f)
        b = th[:, i + size:i + size + o]
        i += size + o
        h = torch.baddbmm(b.unsqueeze(1), h, W.transpose(1, 2))
        if k + 2 < len(shapes):
            h = h.relu()
    return h.squeeze(-1).reshape(*lead, R, X.shape[1])


def _views(flat: torch.Tensor, shapes) -> list[torch.Tensor]:
    """The tensors of a flat (R, p) parameter (or gradient) vector in θ's order, as views: (R, *shape) each."""
    out, i = [], 0
    for s in shapes:
        size = int(np.prod(s))
        out.append(flat[:, i:i + size].view(flat.shape[0], *s))
        i += size
    return out


def _loss_grad(theta: torch.Tensor, X: torch.Tensor, sign: torch.Tensor, shapes, grad: torch.Tensor) -> None:
    """The gradient of Σ_runs mean_i softplus(logit_i · sign_i) with respect to θ (R, p), written into ``grad``
    (R, p): :func:`forward` and its backward pass by hand (no autograd graph). The loss's derivative follows
    ``torch.nn.functional.softplus``'s backward (1 above its threshold 20, e/(e+1) below, e = exp(z)), scaled
    by the run's mean (1/B) and the sign, in autograd's order; the matrix products' sums may run in another
    order than autograd's, so θ agrees with the autograd path to round-off, not bit for bit."""
    P, G = _views(theta, shapes), _views(grad, shapes)
    acts, h = [X], X
    for k in range(0, len(shapes) - 2, 2):
        h = torch.baddbmm(P[k + 1].unsqueeze(1), h, P[k].transpose(1, 2)).relu_()
        acts.append(h)
    out = torch.baddbmm(P[-1].unsqueeze(1), h, P[-2].transpose(1, 2)).squeeze(-1)   # (R, B)
    z = out * sign
    e = torch.exp(z)
    d = torch.where(z > 20, torch.ones_like(z), e / (e + 1))
    d = (d * (1.0 / out.shape[1])).mul_(sign).unsqueeze(-1)                           # (R, B, 1): dL/dlogit
    for k in range(len(shapes) - 2, -1, -2):                                          # (W, b) pairs, last first
        a = acts[k // 2]
        torch.bmm(d.transpose(1, 2), a, out=G[k])
        torch.sum(d, dim=1, out=G[k + 1])
        if k:
            d = torch.bmm(d, P[k]).mul_(a > 0)


def plain_fit(Xs: np.ndarray, y: np.ndarray, tr: np.ndarray, *, layers: int, hidden: int, lr: float,
              batch_size: int | None, epochs: int, seed: int, on_epoch=None,
              fast: bool = True) -> tuple[torch.Tensor, torch.Tensor, list]:
    """Adam on each run's rows ``tr[k]``: full batch (``batch_size=None``) or shuffled minibatches (the last
    one smaller). One hidden layer starts from :func:`qlib.engine_models.init_params` (the default's initial
    parameters, same seed); deeper heads from torch.nn.Linear's uniform init. ``on_epoch(epoch, θ)``
    (1-based epoch, θ (R, p) detached) is called after each epoch (:func:`fit` records r_Q^n with it).
    Returns (initial θ, final θ (R, p), shapes).

    ``fast=True`` (the default) computes the gradient by hand (:func:`_loss_grad`) and steps
    ``torch.optim.Adam(fused=True)``: the same algorithm, the same batches and initial parameters, about 3 ×
    fewer passes over θ per step (``benchmarks/table3_step.py``); ``fast=False`` is the reference, autograd and
    the single-tensor Adam (the path of chapter 06's runs archived before 2026-12-08). The two agree to
    round-off (``tests/test_repro_quantized_mis_table3_probe.py``), not bit for bit."""
    runs, d = tr.shape[0], Xs.shape[1]
    shp = shapes(d, hidden, layers)
    g = torch.Generator().manual_seed(seed)
    if layers == 1:
        theta0 = init_params(MLP(d, hidden), runs, seed)
    else:
        parts, prev_fan = [], d  # a bias takes the bound of the weight before it (torch.nn.Linear's init)
        for s in shp:
            bound = 1.0 / np.sqrt(s[1] if len(s) == 2 else prev_fan)
            prev_fan = s[1] if len(s) == 2 else prev_fan
            parts.append(((torch.rand(runs, int(np.prod(s)), generator=g, dtype=torch.float64) * 2 - 1)
                          * bound).float())
        theta0 = torch.cat(parts, dim=1)
    theta = theta0.clone().requires_grad_(not fast)
    opt = torch.optim.Adam([theta], lr=lr, fused=True) if fast else torch.optim.Adam([theta], lr=lr)
    grad = torch.zeros_like(theta) if fast else None
    Xt, yt = torch.from_numpy(Xs), torch.from_numpy(y.astype(np.float32))
    st = 1 - 2 * yt
    rows = torch.from_numpy(tr)
    m = rows.shape[1]
    for epoch in range(1, epochs + 1):
        if batch_size is None or batch_size >= m:
            batches = [rows]
        else:
            perm = torch.argsort(torch.rand(runs, m, generator=g), dim=1)
            batches = rows.gather(1, perm).split(batch_size, dim=1)
        for b in batches:
            if fast:
                with torch.no_grad():
                    _loss_grad(theta, Xt[b], st[b], shp, grad)
                theta.grad = grad
            else:
                out = forward(theta, Xt[b], shp)
                loss = F.softplus(out * (1 - 2 * yt[b])).mean(dim=1).sum()   # Σ over runs of each run's mean
                opt.zero_grad(set_to_none=True)
                loss.backward()
            opt.step()
        if on_epoch is not None:
            on_epoch(epoch, theta.detach())
    return theta0, theta.detach(), shp


# ---------------------------------------------------------------------------------------------
# Training once, scoring many (table3_combos)
# ---------------------------------------------------------------------------------------------
class Stack:
    """The autograd trainer's head (:func:`forward`) as a :class:`qlib.engine_models.Model`, so
    that :class:`qlib.recorder.RQRecorder` can record it (its torch path)."""

    def __init__(self, shapes):
        self.shapes = shapes
        self.n_params = int(sum(int(np.prod(s)) for s in shapes))

    def init(self, K, generator, dtype=torch.float32):   # the trainer initialises; Stack only records
        raise NotImplementedError

    def unflatten(self, theta):
        ends = np.cumsum([int(np.prod(s)) for s in self.shapes])
        return {str(k): theta[..., e - int(np.prod(s)):e].reshape(*theta.shape[:-1], *s)
                for k, (s, e) in enumerate(zip(self.shapes, ends))}

    def prepare(self, X):   # noqa: D102
        return X

    def apply(self, theta, data):
        return forward(theta, data, self.shapes)


@dataclass
class Trained:
    """One training's runs: final θ (R, p), the head's shapes, whether the engine trained it, the validation
    inputs and labels, the seconds, r_Q^n (Q, R) when recorded."""

    theta: torch.Tensor
    shapes: list
    engine: bool
    xv: torch.Tensor
    yv: np.ndarray
    seconds: float
    r: np.ndarray | None = None


def fit(X, y, key, *, runs, epochs, hidden, seed, record) -> Trained:
    """The runs of one training ``key`` = (hidden layers, lr, batch size or None, standardise) on ``X``, ``y``;
    ``record``: None, or (scope, quantizer names) to record r_Q^n of along every trajectory."""
    layers, lr, bs, standardise = key
    n, d = X.shape
    val, tr = split_indices(n, runs=runs, seed=seed)
    part = X[np.setdiff1d(np.arange(n), val)]   # the training part's statistics, as train_task and the probe
    mu, sd = part.mean(axis=0), part.std(axis=0)
    Xs = ((X - mu) / np.where(sd > 0, sd, 1.0)).astype(np.float32) if standardise else X
    Xt = torch.from_numpy(Xs)
    rec = None
    if record is not None:
        vi = torch.from_numpy(val)
        rmodel = MLP(d, hidden) if layers == 1 else Stack(shapes(d, hidden, layers))
        rec = RQRecorder(rmodel, list(record[1]), Xt[vi].unsqueeze(0).expand(runs, -1, -1),
                         torch.from_numpy(y.astype(np.float32))[vi].unsqueeze(0).expand(runs, -1),
                         RecorderConfig(epochs=epochs, loss="logistic", scope=record[0], device="cpu"))
    engine = layers == 1 and bs is None
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RQUndefinedWarning)
        if engine:   # molecular.train_task's training, bit for bit
            model = MLP(d, hidden)
            theta = train(model, init_params(model, runs, seed), Xt[None], torch.from_numpy(y.astype(np.float32))[None],
                          TrainConfig(epochs=epochs, lr=lr, loss="logistic", device="cpu"), rows=torch.from_numpy(tr),
                          callbacks=[rec] if rec is not None else []).theta
        else:
            sl = slice(0, runs)
            if rec is not None:
                rec.on_chunk_start(sl)
            _, theta, _ = plain_fit(Xs, y, tr, layers=layers, hidden=hidden, lr=lr, batch_size=bs, epochs=epochs,
                                    seed=seed, on_epoch=None if rec is None else (lambda e, th: rec.on_epoch_end(e, th, sl)))
            if rec is not None:
                rec.on_chunk_end(sl, theta)
        if rec is not None:
            rec.finish()
    return Trained(theta, shapes(d, hidden, layers), engine, Xt[torch.from_numpy(val)], y[val],
                   time.perf_counter() - t0, None if rec is None else rec.r.copy())


def score(t: Trained, specs: dict) -> dict:
    """Per procedure of ``specs`` (name → (scope ``"tensor"``/``"model"``, AUROC of probabilities, the eight
    quantizer names)): (quantized AUROC (8, R), original AUROC (R,)) of the trained runs ``t``."""
    R, shp = t.theta.shape[0], t.shapes
    if t.engine:
        mlp = MLP(shp[0][1], shp[0][0])
        fwd = lambda th, x: mlp.forward(th, x, allow_nonfinite=True)   # noqa: E731 (train_task's scoring)
    else:
        fwd = lambda th, x: forward(th, x, shp)                       # noqa: E731
    names = list(QUANTIZERS + TABLE_READING)
    xv = t.xv.unsqueeze(0).expand(R, -1, -1)
    out, res = {}, {}
    with torch.no_grad():
        out_o = fwd(t.theta, xv).numpy()
        for scope in dict.fromkeys(s[0] for s in specs.values()):
            split = [int(np.prod(s)) for s in shp] if scope == "tensor" else None
            out[scope] = fwd(quantize_many(names, t.theta, split=split), xv).numpy()
    for p, (scope, prob, qnames) in specs.items():
        sq, so = out[scope][[names.index(q) for q in qnames]], out_o
        if prob:   # train_task's auroc_prob: float32 sigmoid probabilities (saturated ones tie)
            sq, so = (torch.sigmoid(torch.from_numpy(a).float()).numpy() for a in (sq, so))
        res[p] = (auroc(sq, t.yv, allow_nonfinite=True), auroc(so, t.yv, allow_nonfinite=True))
    return res
