"""The FedAvg engine with compressed client updates (paper 002 §5.3, App. I.4–I.7).

FedAvg (McMahan et al. 2017) with a server optimizer (Reddi et al. 2021): ``n`` clients, ``k``
sampled per round, ``local_steps`` SGD steps of ``batch_size`` examples each; every sampled client's
model update (local − global, flattened) is compressed by any compressor of :mod:`qlib.compressors`
at its own bit budget; the server decodes and averages them (:func:`qlib.distributed.compressed_mean`)
and applies SGD or Adam to the pseudo-gradient ``−mean update``. Optional packet loss drops a
fraction of every EDEN message's rotated coordinates at the receiver (§4.2). A run's settings are one
frozen record, :class:`FedAvgConfig`, checked once when built (and usable as a cache key); the data
(:class:`ClientData`, :func:`client_data`) and the model (e.g. :mod:`qlib.fl_models`) are passed
beside it.

Design decisions (the paper leaves them open):

* **Batched clients.** The clients of a round are trained as ONE computation: their parameters are
  stacked along a leading axis and one ``torch.func.vmap(grad(loss))`` over
  ``torch.func.functional_call`` does every client's step at once (``batched=False`` runs the same
  maths client by client, for checking and benchmarking).
* **Local batches** are drawn uniformly with replacement from the client's own examples (clients
  have different sizes; with-replacement sampling keeps the draw one tensor operation).
* **Sub-bit budgets for every method** use the random mask of §4.1 (Figure 3's caption:
  "Sparsification is done using a random mask"): :class:`qlib.compressors.RandomMask` keeps exactly
  ``round(p·d)`` coordinates, rescales them by ``d/m`` and compresses the kept ones at 1 bit. EDEN
  does the same natively.
* **Seeds.** Round ``r`` derives its client sample, batches and compression seeds from
  ``SeedSequence([seed, r, purpose])`` (:func:`qlib.distributed.derive_seed`); the draws do not
  depend on the compressor, so every method sees the same clients and batches, and a rerun is
  bit-identical.
* **Aggregation** weighs clients equally (every client takes the same number of local steps);
  ``weighting="examples"`` weighs by local dataset size (TFF's default).
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, grad, vmap

from .compressors import METHODS, make_compressor
from .devices import resolve
from .distributed import compressed_mean, derive_seed
from .validation import (
    check_alloc,
    check_array,
    check_bool,
    check_choice,
    check_float,
    check_float_sequence,
    check_int,
    check_probability,
    check_seed,
    check_tensor,
    nested,
    resolve_config,
)

__all__ = [
    "ClientData",
    "client_data",
    "FedAvgConfig",
    "FLResult",
    "run",
    "rolling_mean",
]


# ------------------------------------------------------------------------------------------------
# Client data
# ------------------------------------------------------------------------------------------------
@dataclass
class ClientData:
    """Every client's examples, stored once: ``X[order[offsets[c]:offsets[c] + sizes[c]]]`` are
    client ``c``'s inputs (targets likewise)."""

    X: torch.Tensor
    y: torch.Tensor
    order: torch.Tensor
    offsets: torch.Tensor
    sizes: torch.Tensor

    def __post_init__(self):
        # one check of the arrays (no per-round cost): X finite when floating, y class indices >= 0,
        # order an index into X, client c's rows order[offsets[c] : offsets[c] + sizes[c]] inside order
        X = _check_inputs("X", self.X)
        _check_labels("y", self.y, X, "X and y must have the same length")
        idx = {}
        for name in ("order", "offsets", "sizes"):
            t = check_tensor(name, getattr(self, name), ndim=1, floating=False, convert=False)
            if t.is_floating_point():
                raise TypeError(f"{name} must be a tensor of integers, got dtype {t.dtype}")
            idx[name] = t
        order, offsets, sizes = idx["order"], idx["offsets"], idx["sizes"]
        if int(order.min()) < 0 or int(order.max()) >= X.shape[0]:
            raise ValueError(f"order must index rows of X, in [0, {X.shape[0]}), got [{int(order.min())}, {int(order.max())}]")
        if offsets.shape != sizes.shape:
            raise ValueError(f"offsets and sizes must have one entry per client, got {offsets.shape[0]} and {sizes.shape[0]}")
        if int(sizes.min()) < 1:
            raise ValueError(f"sizes must be >= 1 (every client needs an example), got min {int(sizes.min())}")
        if int(offsets.min()) < 0 or int((offsets + sizes).max()) > order.shape[0]:
            raise ValueError(f"offsets must be >= 0 with offsets + sizes <= len(order) = {order.shape[0]}")

    @property
    def n_clients(self) -> int:
        return int(self.sizes.numel())

    def to(self, device):
        """The same data on ``device`` (not checked again: the arrays were checked when constructed)."""
        new = object.__new__(ClientData)
        for name in ("X", "y", "order", "offsets", "sizes"):
            setattr(new, name, getattr(self, name).to(device))
        return new

    def sample(self, clients: torch.Tensor, batch_size: int, gen: torch.Generator):
        """A batch of ``batch_size`` examples per client, uniformly with replacement: (k, B, …); ``clients``:
        a non-empty 1-D integer tensor of client indices."""
        if not nested():  # (the range of the indices on the host only: on CUDA it would cost a sync per step)
            clients = check_tensor("clients", clients, ndim=1, floating=False, convert=False)
            if clients.is_floating_point():
                raise TypeError(f"clients must be a tensor of client indices (integers), got dtype {clients.dtype}")
            if clients.device.type == "cpu" and not (0 <= int(clients.min()) and int(clients.max()) < len(self.sizes)):
                raise ValueError(f"clients must hold client indices in [0, {len(self.sizes)}), got {clients.tolist()}")
            batch_size = check_int("batch_size", batch_size, low=1)
            check_alloc("batch_size", clients.numel() * batch_size, 4 + 8 + 8 + self.X[:1].element_size()
                        * max(1, self.X[0].numel()), value=batch_size, what="the clients' batches")
            if not isinstance(gen, torch.Generator):
                raise TypeError(f"gen must be a torch.Generator, got {type(gen).__name__}")
        u = torch.rand((clients.numel(), batch_size), generator=gen, device=gen.device)
        local = (u * self.sizes[clients].unsqueeze(-1)).long().clamp_max(self.sizes[clients].unsqueeze(-1) - 1)
        idx = self.order[self.offsets[clients].unsqueeze(-1) + local.to(self.order.device)]
        return self.X[idx], self.y[idx]


def _eval_pair(name: str, ev):
    """An evaluation pair (X, y) checked as the client data is: X non-empty, finite inputs, y integer
    class indices >= 0, one per row of X. None passes through."""
    if ev is None:
        return None
    if not (isinstance(ev, (tuple, list)) and len(ev) == 2):
        raise TypeError(f"{name} must be None or a pair (X, y) of tensors, got {type(ev).__name__}")
    X = _check_inputs(f"{name}[0]", ev[0])  # non-empty, finite
    y = ev[1]
    if not isinstance(y, torch.Tensor):
        y = torch.as_tensor(np.asarray(y))
    return X, _check_labels(f"{name}[1]", y, X, f"{name}[0] and {name}[1] must have the same length")


def _check_labels(name: str, y, X: torch.Tensor, length_msg: str) -> torch.Tensor:
    """Labels ``y`` of the rows of ``X``: a tensor of integer class indices >= 0, one per row (the
    ``ValueError`` for a length mismatch starts with ``length_msg``)."""
    y = check_tensor(name, y, floating=False, convert=False)
    if y.dim() == 0:
        raise ValueError(f"{name} must have one label (or one row of labels) per example, got a scalar")
    if y.is_floating_point():
        raise TypeError(f"{name} must be a tensor of integer class indices, got dtype {y.dtype}")
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"{length_msg}, got {X.shape[0]} and {y.shape[0]}")
    if int(y.min()) < 0:
        raise ValueError(f"{name} must hold class indices >= 0, got min {int(y.min())}")
    return y


def _check_inputs(name, X) -> torch.Tensor:
    """Model inputs: a non-empty tensor (N, …), floating and finite (images) or integer (token ids)."""
    if not isinstance(X, torch.Tensor):
        if X is None or isinstance(X, (str, bytes)):
            raise TypeError(f"{name} must be a tensor or an array, got {X!r}")
        a = np.asarray(X)
        if a.dtype.kind not in "fiu":
            raise TypeError(f"{name} must be an array of numbers, got dtype {a.dtype}")
        X = torch.from_numpy(np.ascontiguousarray(a))
    X = check_tensor(name, X, floating=False, finite=False, convert=False)
    if X.dim() == 0:
        raise ValueError(f"{name} must have a first dimension (one row per example), got a scalar")
    if X.is_floating_point() and not bool(torch.isfinite(X).all()):
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    return X


def client_data(X, y, parts: Sequence[np.ndarray]) -> ClientData:
    """:class:`ClientData` from arrays ``X`` (N, …), ``y`` (N,) and one index array per client
    (e.g. from :mod:`qlib.data`'s partitions). Every client needs at least one example. ``X``: floating
    and finite (images, features) or integer (token ids); ``y``: integer class indices ``>= 0``."""
    X = _check_inputs("X", X)
    if not isinstance(y, torch.Tensor):
        y = torch.from_numpy(check_array("y", y, ndim=None, dtype="int"))
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"X and y must have the same length, got {X.shape[0]} and {y.shape[0]}")
    if len(parts) < 1:
        raise ValueError("parts must hold at least one client")
    sizes = [len(p) for p in parts]
    if min(sizes) < 1:
        raise ValueError(f"every client needs at least one example; client {int(np.argmin(sizes))} has none")
    order = torch.as_tensor(np.concatenate([np.asarray(p, dtype=np.int64) for p in parts]))
    if int(order.min()) < 0 or int(order.max()) >= X.shape[0]:
        raise ValueError(f"parts index outside [0, {X.shape[0]})")
    sizes_t = torch.tensor(sizes, dtype=torch.long)
    offsets = torch.cumsum(sizes_t, 0) - sizes_t
    return ClientData(X, y, order, offsets, sizes_t)



# ------------------------------------------------------------------------------------------------
# The federated engine
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FedAvgConfig:
    """The settings of one federated run, checked once when built; frozen and hashable (a cache key).

    ``method`` (one of :data:`qlib.compressors.METHODS`) at ``bits`` bits per coordinate — one budget,
    or one per client (a sequence, stored as a tuple; its length is checked against the data by
    :func:`run`); every budget is checked against the method here (:func:`qlib.compressors.make_compressor`).
    ``rounds`` rounds of ``clients_per_round`` sampled clients (at most the number of clients, checked
    by :func:`run`), ``local_steps`` SGD steps of ``batch_size`` examples at ``client_lr``;
    ``server_optimizer`` "sgd" or "adam" at ``server_lr`` (Adam with ``adam_betas``/``adam_eps``);
    ``loss``: the packet-loss fraction of EDEN messages; ``weighting`` "uniform" or "examples";
    ``eval_every`` (0: only at the last round); ``seed``; ``device`` (resolved by :func:`run`);
    ``batched`` (the clients of a round in one ``vmap``); ``wire`` (every update sent as bytes)."""

    method: str = "EDEN"
    bits: float | tuple[float, ...] = 1.0
    rounds: int = 10
    clients_per_round: int = 10
    local_steps: int = 1
    batch_size: int = 32
    client_lr: float = 0.1
    server_optimizer: str = "sgd"
    server_lr: float = 1.0
    adam_eps: float = 1e-8
    adam_betas: tuple[float, float] = (0.9, 0.99)
    loss: float = 0.0
    weighting: str = "uniform"
    eval_every: int = 0
    seed: int = 0
    device: str | torch.device = "auto"
    batched: bool = True
    wire: bool = True

    def __post_init__(self):
        def put(name, value):
            object.__setattr__(self, name, value)

        check_choice("method", self.method, METHODS)
        put("rounds", check_int("rounds", self.rounds, low=1))
        put("clients_per_round", check_int("clients_per_round", self.clients_per_round, low=1))
        put("local_steps", check_int("local_steps", self.local_steps, low=1))
        put("batch_size", check_int("batch_size", self.batch_size, low=1))
        put("client_lr", check_float("client_lr", self.client_lr, low=0.0, low_open=True))
        check_choice("server_optimizer", self.server_optimizer, ("sgd", "adam"))
        put("server_lr", check_float("server_lr", self.server_lr, low=0.0, low_open=True))
        put("adam_eps", check_float("adam_eps", self.adam_eps, low=0.0, low_open=True))
        betas = check_float_sequence("adam_betas", self.adam_betas, low=0.0, high=1.0)
        if len(betas) != 2 or not all(b < 1 for b in betas):
            raise ValueError(f"adam_betas must be two numbers in [0, 1), got {self.adam_betas!r}")
        put("adam_betas", (betas[0], betas[1]))
        put("loss", check_probability("loss", self.loss, open_high=True))
        check_choice("weighting", self.weighting, ("uniform", "examples"))
        put("eval_every", check_int("eval_every", self.eval_every, low=0))
        put("seed", check_seed("seed", self.seed))
        put("batched", check_bool("batched", self.batched))
        put("wire", check_bool("wire", self.wire))
        if not isinstance(self.device, (str, torch.device)):
            raise TypeError(f"device must be 'auto', 'cpu', 'cuda', 'cuda:N' or a torch.device, got {self.device!r}")
        bits = self.bits
        if isinstance(bits, (list, tuple, np.ndarray, torch.Tensor)):
            if len(bits) == 0:
                raise ValueError("bits must be one budget or a non-empty sequence of budgets (one per client)")
            put("bits", tuple(check_float(f"bits[{i}]", b, low=0.0, high=8.0, low_open=True) for i, b in enumerate(bits)))
            budgets = set(self.bits)
        else:
            put("bits", check_float("bits", bits, low=0.0, high=8.0, low_open=True))
            budgets = {self.bits}
        for b in budgets:
            make_compressor(self.method, b)  # reject an unsupported budget before any training

    def budgets(self, n_clients: int) -> list[float]:
        """Every client's bit budget (``n_clients`` entries; a per-client ``bits`` must have as many)."""
        n_clients = check_int("n_clients", n_clients, low=1)
        check_alloc("n_clients", n_clients, 8, value=n_clients, what="the list of budgets")
        if isinstance(self.bits, tuple):
            if len(self.bits) != n_clients:
                raise ValueError(f"bits has {len(self.bits)} entries for {n_clients} clients")
            return list(self.bits)
        return [self.bits] * n_clients


@dataclass
class FLResult:
    """Per-round history and the final global parameters of one federated run."""

    history: pd.DataFrame
    params: torch.Tensor
    config: dict = field(default_factory=dict)

    def final(self, column: str = "train_acc", window: int = 1) -> float:
        """The last value of ``column`` (rolling mean over the last ``window >= 1`` rounds; NaNs skipped)."""
        window = check_int("window", window, low=1)
        if column not in self.history:
            raise ValueError(f"column must be one of the history's columns {list(self.history.columns)}, got {column!r}")
        s = self.history[column].dropna()
        return float(s.iloc[-window:].mean()) if len(s) else float("nan")


def _flat(params: dict[str, torch.Tensor], lead: int) -> torch.Tensor:
    return torch.cat([v.reshape(*v.shape[:lead], -1) for v in params.values()], -1)


def _unflat(vec: torch.Tensor, like: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    out, i = {}, 0
    lead = vec.shape[:-1]
    for k, v in like.items():
        n = v[0].numel() if len(lead) else v.numel()
        shape = v.shape[1:] if len(lead) else v.shape
        out[k] = vec[..., i : i + n].reshape(*lead, *shape)
        i += n
    return out


def _sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize()


def _evaluate(model, params, X, y, dev, chunk=2048):
    correct, total = 0, 0
    with torch.no_grad():
        for i in range(0, X.shape[0], chunk):
            out = functional_call(model, params, (X[i : i + chunk].to(dev),))
            yy = y[i : i + chunk].to(dev)
            correct += int((out.argmax(1) == yy).sum())
            total += yy.numel()
    return correct / max(total, 1)



def run(
    model: nn.Module,
    data: ClientData,
    config: FedAvgConfig | None = None,
    *,
    test: tuple[torch.Tensor, torch.Tensor] | None = None,
    train_eval: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> FLResult:
    """FedAvg with compressed client updates and a server optimizer; returns the per-round history.

    ``model`` gives the architecture and the initial parameters; it is not modified. ``config``: the
    run's settings (:class:`FedAvgConfig`; None: its defaults): ``run(model, data, FedAvgConfig(rounds=5))``,
    or ``run(model, data, dataclasses.replace(cfg, rounds=5))`` to change one field of a record. ``bits`` is one budget or one per client
    (``data.n_clients`` entries). Every round: sample ``clients_per_round`` distinct clients; each runs
    ``local_steps`` SGD steps (lr ``client_lr``, cross-entropy) on batches of ``batch_size`` of its
    examples; updates are compressed with ``method`` (:func:`qlib.compressors.make_compressor`) and
    averaged by the server (:func:`qlib.distributed.compressed_mean`); the server applies
    ``server_optimizer`` ("sgd": ``x += lr·mean``; "adam": Adam on the pseudo-gradient ``−mean`` with
    ``adam_betas``/``adam_eps``).

    ``wire`` (default True) sends every update as bytes (:func:`qlib.distributed.compressed_mean`), so
    ``bits_per_client`` is 8 × the bytes a client sends. History columns: ``round``, ``train_acc`` /
    ``train_loss`` (mean over the sampled clients' local batches, as TFF reports training accuracy),
    ``test_acc`` and ``global_train_acc`` (the global model on ``test`` and on ``train_eval``, every
    ``eval_every`` rounds and at the last one), ``bits_per_client``, ``t_local`` and ``t_compress``
    (seconds spent in local training and in compress + decompress). A run whose client updates
    stop being finite, or whose norms overflow (divergence), has NaN in every column from that round on.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not isinstance(data, ClientData):
        raise TypeError(f"data must be a qlib.fedavg.ClientData, got {type(data).__name__}")
    config = resolve_config(FedAvgConfig, config)
    test, train_eval = _eval_pair("test", test), _eval_pair("train_eval", train_eval)
    k = check_int("clients_per_round", config.clients_per_round, low=1, high=data.n_clients)
    budgets = config.budgets(data.n_clients)
    method, rounds, local_steps, batch_size = config.method, config.rounds, config.local_steps, config.batch_size
    client_lr, server_optimizer, server_lr = config.client_lr, config.server_optimizer, config.server_lr
    adam_eps, (b1, b2), loss, weighting = config.adam_eps, config.adam_betas, config.loss, config.weighting
    eval_every, seed, batched, wire = config.eval_every, config.seed, config.batched, config.wire
    dev = resolve(config.device)

    net = copy.deepcopy(model).to(dev)
    for name, ev in (("test", test), ("train_eval", train_eval)):  # labels within the model's outputs
        if ev is not None:
            with torch.no_grad():
                width = net(ev[0][:1].to(dev)).shape[1]
            if int(ev[1].max()) >= width:
                raise ValueError(f"{name}[1] must hold class indices < {width} (the model's outputs), "
                                 f"got max {int(ev[1].max())}")
    names = [n for n, _ in net.named_parameters()]
    x = torch.cat([p.detach().reshape(-1) for p in net.parameters()]).to(torch.float32)
    shapes = {n: p.shape for n, p in net.named_parameters()}
    like = {n: torch.empty(s) for n, s in shapes.items()}
    data = data.to(dev)

    def loss_fn(p, xb, yb):
        out = functional_call(net, p, (xb,))
        loss_ = F.cross_entropy(out, yb)
        acc = (out.argmax(1) == yb).float().mean()
        return loss_, (loss_.detach(), acc)

    step = vmap(grad(loss_fn, has_aux=True)) if batched else grad(loss_fn, has_aux=True)
    m_adam = torch.zeros_like(x)
    v_adam = torch.zeros_like(x)
    rows = []
    for r in range(rounds):
        gen = torch.Generator(device=dev).manual_seed(derive_seed(seed, r, 0))
        clients = torch.randperm(data.n_clients, generator=gen, device=dev)[:k].sort().values
        _sync(dev)
        t0 = time.perf_counter()
        accs, losses = [], []
        if batched:
            p = {n: v.unsqueeze(0).expand(k, *v.shape).clone() for n, v in _unflat(x, like).items()}
            for _ in range(local_steps):
                xb, yb = data.sample(clients, batch_size, gen)
                g, (lo, ac) = step(p, xb, yb)
                p = {n: p[n] - client_lr * g[n] for n in names}
                accs.append(ac)
                losses.append(lo)
            upd = _flat(p, 1) - x
        else:
            upd = torch.empty((k, x.numel()), dtype=x.dtype, device=dev)
            batches = [data.sample(clients, batch_size, gen) for _ in range(local_steps)]
            acc_c, loss_c = torch.zeros(local_steps, k), torch.zeros(local_steps, k)
            for c in range(k):
                p = _unflat(x, like)
                for s in range(local_steps):
                    g, (lo, ac) = step(p, batches[s][0][c], batches[s][1][c])
                    p = {n: p[n] - client_lr * g[n] for n in names}
                    acc_c[s, c], loss_c[s, c] = ac, lo
                upd[c] = _flat(p, 0) - x
            accs, losses = list(acc_c), list(loss_c)
        _sync(dev)
        t1 = time.perf_counter()
        # diverged: the remaining rounds are NaN, not an error. The test is on each update's norm, which
        # every compressor sends: it is NaN/inf for a non-finite update and also when finite entries'
        # squares overflow float32 (seen at the paper's rounds: Figure 13, QSGD at b = 0.1)
        if not bool(torch.isfinite(torch.linalg.vector_norm(upd, dim=-1)).all()):
            nan = float("nan")
            rows += [{"round": q + 1, "train_acc": nan, "train_loss": nan, "test_acc": nan, "global_train_acc": nan,
                      "bits_per_client": nan, "t_local": nan, "t_compress": nan} for q in range(r, rounds)]
            break
        w = data.sizes[clients].to(x.dtype) if weighting == "examples" else None
        cb = [budgets[int(c)] for c in clients.cpu()]
        mean, _, nbits = compressed_mean(upd.detach(), method, cb, derive_seed(seed, r, 1), loss=loss, weights=w,
                                         wire=wire)
        _sync(dev)
        t2 = time.perf_counter()
        if server_optimizer == "sgd":
            x = x + server_lr * mean
        else:
            gpseudo = -mean
            m_adam = b1 * m_adam + (1 - b1) * gpseudo
            v_adam = b2 * v_adam + (1 - b2) * gpseudo * gpseudo
            mh = m_adam / (1 - b1 ** (r + 1))
            vh = v_adam / (1 - b2 ** (r + 1))
            x = x - server_lr * mh / (vh.sqrt() + adam_eps)
        row = {"round": r + 1, "train_acc": float(torch.stack([a.mean() for a in accs]).mean()),
               "train_loss": float(torch.stack([a.mean() for a in losses]).mean()),
               "test_acc": float("nan"), "global_train_acc": float("nan"), "bits_per_client": float(nbits.double().mean()),
               "t_local": t1 - t0, "t_compress": t2 - t1}
        if (eval_every and (r + 1) % eval_every == 0) or r + 1 == rounds:
            for col, ev in (("test_acc", test), ("global_train_acc", train_eval)):
                if ev is not None:
                    row[col] = _evaluate(net, _unflat(x, like), ev[0], ev[1], dev)
        rows.append(row)
    cfg = {"method": method, "rounds": rounds, "clients_per_round": k, "local_steps": local_steps,
           "batch_size": batch_size, "client_lr": client_lr, "server_optimizer": server_optimizer,
           "server_lr": server_lr, "loss": loss, "seed": seed, "n_params": int(x.numel())}
    return FLResult(pd.DataFrame(rows), x.detach().cpu(), cfg)


def rolling_mean(values, window: int) -> np.ndarray:
    """Trailing rolling mean over ``window`` rounds (shorter at the start), as the paper smooths.

    ``values``: a non-empty 1-D sequence of numbers; NaN is accepted (a diverged run's history is NaN
    from that round on, :func:`run`) and gives NaN wherever it is in the window; inf is not."""
    window = check_int("window", window, low=1)
    v = check_array("values", values, ndim=1, finite=False)
    if np.isinf(v).any():
        raise ValueError("values must not hold inf (NaN marks a diverged round)")
    return pd.Series(v).rolling(window, min_periods=1).mean().to_numpy()
