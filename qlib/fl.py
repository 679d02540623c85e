"""Federated and distributed learning with compressed client messages (paper 002 §5.3, App. I.2–I.7).

A simulation engine for FedAvg (McMahan et al. 2017) with a server optimizer (Reddi et al. 2021):
``n`` clients, ``k`` sampled per round, ``local_steps`` SGD steps of ``batch_size`` examples each;
every sampled client's model update (local − global, flattened) is compressed by any compressor of
:mod:`qlib.compressors` at its own bit budget; the server decodes, averages and applies SGD or Adam
to the pseudo-gradient ``−mean update``. Optional packet loss drops a fraction of every EDEN
message's rotated coordinates at the receiver (§4.2).

Design decisions (the paper leaves them open):

* **Batched clients.** The clients of a round are trained as ONE computation: their parameters are
  stacked along a leading axis and one ``torch.func.vmap(grad(loss))`` over
  ``torch.func.functional_call`` does every client's step at once (``batched=False`` runs the same
  maths client by client, for checking and benchmarking).
* **Local batches** are drawn uniformly with replacement from the client's own examples (clients
  have different sizes; with-replacement sampling keeps the draw one tensor operation).
* **Sub-bit budgets for every method** use the random mask of §4.1 (Figure 3's caption:
  "Sparsification is done using a random mask"): :class:`RandomMask` keeps exactly ``round(p·d)``
  coordinates, rescales them by ``d/m`` and compresses the kept ones at 1 bit. EDEN does the same
  natively.
* **Seeds.** Round ``r`` derives its client sample, batches and compression seeds from
  ``SeedSequence([seed, r, purpose])``; the draws do not depend on the compressor, so every method
  sees the same clients and batches, and a rerun is bit-identical.
* **Aggregation** weighs clients equally (every client takes the same number of local steps);
  ``weighting="examples"`` weighs by local dataset size (TFF's default).

Also here: :func:`compressed_mean` (one round of distributed mean estimation for a batch of client
vectors), :func:`logistic_regression` (distributed gradient descent, Figure 10) and
:func:`power_iteration` (distributed power iteration, Figure 12), and the models LeNet-5, a 2-layer
CNN (the EMNIST model of Reddi et al. without dropout), ResNet-9 and a character LSTM.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd
import torch
import torch.nn as nn
import torch.nn.functional as F

from . import compressors as _C
from . import eden as _eden
from . import hadamard as _h
from . import wire as _wire
from .devices import resolve
from .validation import (
    check_array,
    check_bool,
    check_choice,
    check_float,
    check_float_sequence,
    check_int,
    check_probability,
    check_seed,
    check_tensor,
)

__all__ = [
    "METHODS",
    "RandomMask",
    "make_compressor",
    "compressed_mean",
    "ClientData",
    "client_data",
    "FLResult",
    "run",
    "LeNet5",
    "MLP",
    "CNN2",
    "ResNet9",
    "CharLSTM",
    "logistic_regression",
    "client_covariances",
    "power_iteration",
    "rolling_mean",
]

#: compressors of the common interface by name (the paper's §5 methods plus Count-Sketch)
METHODS = ("Float32", "EDEN", "Hadamard+SQ", "Kashin+SQ", "QSGD", "Count-Sketch")


def _derive(seed: int, *keys: int) -> int:
    return int(np.random.SeedSequence([seed, *keys]).generate_state(1, dtype=np.uint64)[0] >> 1)


# ------------------------------------------------------------------------------------------------
# Compressors at any budget
# ------------------------------------------------------------------------------------------------
class RandomMask(_C.Compressor):
    """Sub-bit wrapper (§4.1): keep a uniformly random subset of exactly ``m = round(p·d)``
    coordinates (shared seed, not sent), rescale by ``d/m`` and compress them with ``inner``;
    the receiver scatters the decoded values back. Unbiased when ``inner`` is."""

    def __init__(self, inner: _C.Compressor, p: float):
        if not isinstance(inner, _C.Compressor):
            raise TypeError(f"inner must be a qlib.compressors.Compressor, got {type(inner).__name__}")
        self.inner = inner
        self.p = check_float("p", p, low=0.0, high=1.0, low_open=True)
        self.name = f"{inner.name}@mask"

    def _keep(self, seed, batch, d, m, device):
        g = _h.generator(seed, "random-mask", device)
        keys = torch.rand((*batch, d), generator=g, device=device)
        return torch.topk(keys, m, dim=-1, sorted=False).indices

    def _compress(self, x, seed):
        batch, d = x.shape[:-1], x.shape[-1]
        m = max(1, int(round(self.p * d)))
        keep = self._keep(seed, batch, d, m, x.device)
        inner = self.inner.compress(torch.gather(x, -1, keep) * (d / m), seed)
        return _C.Message(self.name, {"inner": inner, "m": m}, inner.nbits, seed, tuple(x.shape))

    def _decompress(self, msg):
        v = self.inner.decompress(msg.data["inner"])
        batch, d = v.shape[:-1], msg.shape[-1]
        keep = self._keep(msg.seed, batch, d, msg.data["m"], v.device)
        return torch.zeros((*batch, d), dtype=v.dtype, device=v.device).scatter(-1, keep, v)


def make_compressor(method: str, bits: float) -> _C.Compressor:
    """The compressor ``method`` (one of :data:`METHODS`) at budget ``bits`` bits per coordinate.

    EDEN and Count-Sketch take any ``bits`` in (0, 8]; Hadamard+SQ, Kashin+SQ and QSGD take an
    integer ``bits`` in [1, 8] or a sub-bit ``bits < 1``, which becomes :class:`RandomMask` with
    ``p = bits`` around the 1-bit compressor. Float32 ignores ``bits``.
    """
    check_choice("method", method, METHODS)
    b = check_float("bits", bits, low=0.0, high=8.0, low_open=True)
    if method == "Float32":
        return _C.Float32()
    if method == "EDEN":
        return _C.EDEN(b)
    if method == "Count-Sketch":
        return _C.CountSketch(b)
    cls = {"Hadamard+SQ": _C.HadamardSQ, "Kashin+SQ": _C.KashinSQ, "QSGD": _C.QSGD}[method]
    if b < 1:
        return RandomMask(cls(1), b)
    if b != int(b):
        raise ValueError(f"bits must be an integer in [1, 8] or < 1 for {method}, got {bits}")
    return cls(int(b))


def _row(msg: _C.Message, i: int) -> _C.Message:
    data = {k: (v[i : i + 1] if isinstance(v, torch.Tensor) else v) for k, v in msg.data.items()}
    if "payload" in data:  # an EDEN payload: one row of it
        pl = data["payload"]
        data["payload"] = _eden.Payload(pl.indices[i : i + 1], pl.scale[i : i + 1], pl.seed, pl.bits, pl.d, pl.m,
                                        pl.D, pl.quantizer, pl.n_rotations, pl.nbits[i : i + 1])
    if "inner" in data:
        data["inner"] = _row(data["inner"], i)
    return _C.Message(msg.compressor, data, msg.nbits[i : i + 1], msg.seed, (1, *msg.shape[1:]))


def _wire_one(comp, msg, dtype):
    """(bytes, the message decoded back from them) of one client's message."""
    if isinstance(comp, RandomMask):
        raw, inner = _wire_one(comp.inner, msg.data["inner"], dtype)
        return raw, _C.Message(msg.compressor, {"inner": inner, "m": msg.data["m"]}, msg.nbits, msg.seed, msg.shape)
    if isinstance(comp, _C.EDEN):
        raw = _wire.to_bytes(msg.data["payload"])
        pl = _wire.from_bytes(raw, seed=msg.seed, device=msg.data["payload"].indices.device, dtype=dtype)
        return raw, _C.Message(msg.compressor, {"payload": pl}, msg.nbits, msg.seed, msg.shape)
    raw = _wire.message_to_bytes(msg, comp)
    dev = next((v.device for v in msg.data.values() if isinstance(v, torch.Tensor)), torch.device("cpu"))
    return raw, _wire.message_from_bytes(raw, comp, seed=msg.seed, device=dev, dtype=dtype)


def _through_wire(comp, msg, dtype):
    """Every row of a batched message encoded and decoded on its own; (decoded batch, bits per row)."""
    rows = msg.nbits.numel()
    outs = [_wire_one(comp, _row(msg, i), dtype) for i in range(rows)]
    sizes = torch.tensor([8 * len(raw) for raw, _ in outs], dtype=torch.long)
    return _cat([m for _, m in outs], msg), sizes


def _cat(msgs, like):
    data = {}
    for k, v in like.data.items():
        if isinstance(v, torch.Tensor):
            data[k] = torch.cat([m.data[k] for m in msgs])
        elif isinstance(v, _eden.Payload):
            ps = [m.data[k] for m in msgs]
            data[k] = _eden.Payload(torch.cat([p.indices for p in ps]), torch.cat([p.scale for p in ps]), v.seed,
                                    v.bits, v.d, v.m, v.D, v.quantizer, v.n_rotations, torch.cat([p.nbits for p in ps]))
        elif isinstance(v, _C.Message):
            data[k] = _cat([m.data[k] for m in msgs], v)
        else:
            data[k] = v
    return _C.Message(like.compressor, data, like.nbits, like.seed, like.shape)


def compressed_mean(
    xs: torch.Tensor,
    method: str,
    bits: float | Sequence[float],
    seed: int,
    *,
    loss: float = 0.0,
    weights: torch.Tensor | None = None,
    wire: bool = True,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One round of compressed mean estimation: each row of ``xs`` (n × d) is a client's vector,
    compressed at its budget ``bits[c]`` (clients sharing a budget form one batch, every row its own
    randomness) and decoded by the server. ``loss``: fraction of each EDEN message's rotated
    coordinates lost at random (§4.2; EDEN only). ``wire=True`` sends every client's message through
    :mod:`qlib.wire` (encoded to bytes, checked and decoded) and counts its size as 8 × the number
    of bytes, header included; ``wire=False`` uses the compressor's bit accounting. Returns
    (weighted mean of the decoded rows, the decoded rows, the message size in bits per client)."""
    xs = check_tensor("xs", xs, ndim=2)
    check_choice("method", method, METHODS)
    seed = check_seed("seed", seed)
    loss = check_probability("loss", loss, open_high=True)
    wire = check_bool("wire", wire)
    if loss > 0 and method != "EDEN":
        raise ValueError(f"loss > 0 (packet loss) is supported for method 'EDEN' only, got method {method!r}")
    n = xs.shape[0]
    if isinstance(bits, (list, tuple, np.ndarray, torch.Tensor)):
        bs = [check_float(f"bits[{i}]", b, low=0.0, high=8.0, low_open=True) for i, b in enumerate(bits)]
        if len(bs) != n:
            raise ValueError(f"bits has {len(bs)} entries for {n} clients")
    else:
        bs = [check_float("bits", bits, low=0.0, high=8.0, low_open=True)] * n
    if weights is not None:
        weights = check_tensor("weights", weights, ndim=1)
        if weights.shape[0] != n:
            raise ValueError(f"weights has {weights.shape[0]} entries for {n} clients (rows of xs)")
        if bool((weights < 0).any()) or not bool(weights.sum() > 0):
            raise ValueError("weights must be >= 0 with a positive sum")
    dec = torch.empty_like(xs)
    nbits = torch.zeros(n, dtype=torch.long)
    for gi, b in enumerate(sorted(set(bs))):
        rows = [c for c in range(n) if bs[c] == b]
        comp = make_compressor(method, b)
        gseed = _derive(seed, gi)
        msg = comp.compress(xs[rows], gseed)
        if wire:  # every client's message really travels as bytes; its size is their length
            msg, sizes = _through_wire(comp, msg, xs.dtype)
        else:
            sizes = msg.nbits.reshape(-1).cpu().long()
        if loss > 0:
            pl = msg.data["payload"]
            rec = _eden.received_mask(pl.D, loss, "random", seed=_derive(gseed, 1), batch=pl.batch_shape,
                                      device=xs.device)
            out = _eden.decompress(pl, rec)
        else:
            out = comp.decompress(msg)
        dec[rows] = out.to(xs.dtype)
        nbits[rows] = sizes
    if weights is None:
        mean = dec.mean(0)
    else:
        w = weights.to(xs.dtype).to(xs.device)
        mean = (dec * (w / w.sum()).unsqueeze(-1)).sum(0)
    return mean, dec, nbits


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
        y = check_tensor("y", self.y, floating=False, convert=False)
        if y.is_floating_point():
            raise TypeError(f"y must be a tensor of integer class indices, got dtype {y.dtype}")
        if y.shape[0] != X.shape[0]:
            raise ValueError(f"X and y must have the same length, got {X.shape[0]} and {y.shape[0]}")
        if int(y.min()) < 0:
            raise ValueError(f"y must hold class indices >= 0, got min {int(y.min())}")
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
        """A batch of ``batch_size`` examples per client, uniformly with replacement: (k, B, …)."""
        u = torch.rand((clients.numel(), batch_size), generator=gen, device=gen.device)
        local = (u * self.sizes[clients].unsqueeze(-1)).long().clamp_max(self.sizes[clients].unsqueeze(-1) - 1)
        idx = self.order[self.offsets[clients].unsqueeze(-1) + local.to(self.order.device)]
        return self.X[idx], self.y[idx]


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
# Models (inputs: images (B, C, H, W) or token ids (B, T))
# ------------------------------------------------------------------------------------------------
class LeNet5(nn.Module):
    """LeNet-5 (LeCun et al. 1998) for 28×28 inputs (first convolution padded by 2), ReLU, max-pool."""

    def __init__(self, in_channels: int = 1, n_classes: int = 10, size: int = 28):
        """``size``: the input side, 28 (MNIST: the first convolution padded by 2) or 32 (CIFAR)."""
        super().__init__()
        in_channels = check_int("in_channels", in_channels, low=1)
        n_classes = check_int("n_classes", n_classes, low=1)
        size = check_choice("size", check_int("size", size, low=1), (28, 32))
        pad = 2 if size == 28 else 0
        self.c1 = nn.Conv2d(in_channels, 6, 5, padding=pad)
        self.c2 = nn.Conv2d(6, 16, 5)
        self.f1 = nn.Linear(16 * 5 * 5, 120)
        self.f2 = nn.Linear(120, 84)
        self.f3 = nn.Linear(84, n_classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x)), 2)
        x = F.max_pool2d(F.relu(self.c2(x)), 2)
        return self.f3(F.relu(self.f2(F.relu(self.f1(x.flatten(1))))))


class MLP(nn.Module):
    """A fully connected network on flattened inputs (one hidden ReLU layer)."""

    def __init__(self, in_features: int = 784, hidden: int = 200, n_classes: int = 10):
        super().__init__()
        in_features = check_int("in_features", in_features, low=1)
        hidden = check_int("hidden", hidden, low=1)
        n_classes = check_int("n_classes", n_classes, low=1)
        self.f1 = nn.Linear(in_features, hidden)
        self.f2 = nn.Linear(hidden, n_classes)

    def forward(self, x):
        return self.f2(F.relu(self.f1(x.flatten(1))))


class CNN2(nn.Module):
    """The EMNIST CNN of Reddi et al. 2021 (two 3×3 convolutions 32/64, max-pool, dense 128),
    without its dropout layers (dropout would need per-client random streams inside vmap)."""

    def __init__(self, n_classes: int = 62):
        super().__init__()
        n_classes = check_int("n_classes", n_classes, low=1)
        self.c1 = nn.Conv2d(1, 32, 3)
        self.c2 = nn.Conv2d(32, 64, 3)
        self.f1 = nn.Linear(12 * 12 * 64, 128)
        self.f2 = nn.Linear(128, n_classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c2(F.relu(self.c1(x)))), 2)
        return self.f2(F.relu(self.f1(x.flatten(1))))


def _conv_bn(cin, cout, pool=False):
    # GroupNorm instead of BatchNorm: no running statistics, so the model is a pure function of its
    # parameters (needed by functional_call under vmap); one group per 32 channels
    layers = [nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.GroupNorm(max(1, cout // 32), cout), nn.ReLU()]
    if pool:
        layers.append(nn.MaxPool2d(2))
    return nn.Sequential(*layers)


class ResNet9(nn.Module):
    """ResNet-9 (the DAWNBench CIFAR network: prep 64, layer 128 + residual, layer 256, layer 512 +
    residual, global max-pool, linear) with GroupNorm in place of BatchNorm (see :func:`_conv_bn`)."""

    def __init__(self, in_channels: int = 3, n_classes: int = 10):
        super().__init__()
        in_channels = check_int("in_channels", in_channels, low=1)
        n_classes = check_int("n_classes", n_classes, low=1)
        self.prep = _conv_bn(in_channels, 64)
        self.l1 = _conv_bn(64, 128, pool=True)
        self.r1 = nn.Sequential(_conv_bn(128, 128), _conv_bn(128, 128))
        self.l2 = _conv_bn(128, 256, pool=True)
        self.l3 = _conv_bn(256, 512, pool=True)
        self.r3 = nn.Sequential(_conv_bn(512, 512), _conv_bn(512, 512))
        self.fc = nn.Linear(512, n_classes)

    def forward(self, x):
        x = self.l1(self.prep(x))
        x = x + self.r1(x)
        x = self.l3(self.l2(x))
        x = x + self.r3(x)
        return self.fc(torch.amax(x, dim=(-2, -1)))


class CharLSTM(nn.Module):
    """The Shakespeare next-character model of Reddi et al. 2021: embedding 8, two LSTM layers of
    256 units, a dense layer over the vocabulary; predicts every next character of the sequence.
    (Run it with ``batched=False``: recurrent kernels do not batch over clients.)"""

    def __init__(self, vocab: int = 86, embed: int = 8, hidden: int = 256):
        super().__init__()
        vocab = check_int("vocab", vocab, low=1)
        embed = check_int("embed", embed, low=1)
        hidden = check_int("hidden", hidden, low=1)
        self.emb = nn.Embedding(vocab, embed)
        self.lstm = nn.LSTM(embed, hidden, num_layers=2, batch_first=True)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, x):
        h, _ = self.lstm(self.emb(x))
        return self.out(h).transpose(1, 2)  # (B, vocab, T): cross-entropy over every position


# ------------------------------------------------------------------------------------------------
# The federated engine
# ------------------------------------------------------------------------------------------------
@dataclass
class FLResult:
    """Per-round history and the final global parameters of one federated run."""

    history: pd.DataFrame
    params: torch.Tensor
    config: dict = field(default_factory=dict)

    def final(self, column: str = "train_acc", window: int = 1) -> float:
        """The last value of ``column`` (rolling mean over the last ``window`` rounds; NaNs skipped)."""
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
    from torch.func import functional_call

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
    *,
    method: str = "EDEN",
    bits: float | Sequence[float] = 1.0,
    rounds: int = 10,
    clients_per_round: int = 10,
    local_steps: int = 1,
    batch_size: int = 32,
    client_lr: float = 0.1,
    server_optimizer: str = "sgd",
    server_lr: float = 1.0,
    adam_eps: float = 1e-8,
    adam_betas: tuple[float, float] = (0.9, 0.99),
    loss: float = 0.0,
    weighting: str = "uniform",
    test: tuple[torch.Tensor, torch.Tensor] | None = None,
    train_eval: tuple[torch.Tensor, torch.Tensor] | None = None,
    eval_every: int = 0,
    seed: int = 0,
    device: str = "auto",
    batched: bool = True,
    wire: bool = True,
) -> FLResult:
    """FedAvg with compressed client updates and a server optimizer; returns the per-round history.

    ``model`` gives the architecture and the initial parameters; it is not modified. ``bits`` is one budget or one per client (``data.n_clients`` entries). Every round:
    sample ``clients_per_round`` distinct clients; each runs ``local_steps`` SGD steps (lr
    ``client_lr``, cross-entropy) on batches of ``batch_size`` of its examples; updates are
    compressed with ``method`` (:func:`make_compressor`) and averaged by the server
    (:func:`compressed_mean`); the server applies ``server_optimizer`` ("sgd": ``x += lr·mean``;
    "adam": Adam on the pseudo-gradient ``−mean`` with ``adam_betas``/``adam_eps``).

    ``wire`` (default True) sends every update as bytes (:func:`compressed_mean`), so
    ``bits_per_client`` is 8 × the bytes a client sends. History columns: ``round``, ``train_acc`` / ``train_loss`` (mean over the sampled clients'
    local batches, as TFF reports training accuracy), ``test_acc`` and ``global_train_acc`` (the
    global model on ``test`` and on ``train_eval``, every ``eval_every`` rounds and at the last one), ``bits_per_client``, ``t_local`` and ``t_compress``
    (seconds spent in local training and in compress + decompress). A run whose client updates
    stop being finite (divergence) has NaN in every column from that round on.
    """
    from torch.func import functional_call, grad, vmap

    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not isinstance(data, ClientData):
        raise TypeError(f"data must be a qlib.fl.ClientData, got {type(data).__name__}")
    check_choice("method", method, METHODS)
    rounds = check_int("rounds", rounds, low=1)
    k = check_int("clients_per_round", clients_per_round, low=1, high=data.n_clients)
    local_steps = check_int("local_steps", local_steps, low=1)
    batch_size = check_int("batch_size", batch_size, low=1)
    client_lr = check_float("client_lr", client_lr, low=0.0, low_open=True)
    check_choice("server_optimizer", server_optimizer, ("sgd", "adam"))
    server_lr = check_float("server_lr", server_lr, low=0.0, low_open=True)
    adam_eps = check_float("adam_eps", adam_eps, low=0.0, low_open=True)
    betas = check_float_sequence("adam_betas", adam_betas, low=0.0, high=1.0)
    if len(betas) != 2 or not all(b < 1 for b in betas):
        raise ValueError(f"adam_betas must be two numbers in [0, 1), got {adam_betas!r}")
    b1, b2 = betas
    loss = check_probability("loss", loss, open_high=True)
    check_choice("weighting", weighting, ("uniform", "examples"))
    eval_every = check_int("eval_every", eval_every, low=0)
    seed = check_seed("seed", seed)
    batched = check_bool("batched", batched)
    wire = check_bool("wire", wire)
    for name, ev in (("test", test), ("train_eval", train_eval)):
        if ev is not None and not (isinstance(ev, (tuple, list)) and len(ev) == 2):
            raise TypeError(f"{name} must be None or a pair (X, y) of tensors, got {type(ev).__name__}")
    if isinstance(bits, (list, tuple, np.ndarray, torch.Tensor)):
        budgets = [check_float(f"bits[{i}]", b, low=0.0, high=8.0, low_open=True) for i, b in enumerate(bits)]
        if len(budgets) != data.n_clients:
            raise ValueError(f"bits has {len(budgets)} entries for {data.n_clients} clients")
    else:
        budgets = [check_float("bits", bits, low=0.0, high=8.0, low_open=True)] * data.n_clients
    for b in set(budgets):
        make_compressor(method, b)  # reject an unsupported budget before any training
    dev = resolve(device)

    import copy

    net = copy.deepcopy(model).to(dev)
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
        gen = torch.Generator(device=dev).manual_seed(_derive(seed, r, 0))
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
        if not bool(torch.isfinite(upd).all()):  # diverged: the remaining rounds are NaN, not an error
            nan = float("nan")
            rows += [{"round": q + 1, "train_acc": nan, "train_loss": nan, "test_acc": nan, "global_train_acc": nan,
                      "bits_per_client": nan, "t_local": nan, "t_compress": nan} for q in range(r, rounds)]
            break
        w = data.sizes[clients].to(x.dtype) if weighting == "examples" else None
        cb = [budgets[int(c)] for c in clients.cpu()]
        mean, _, nbits = compressed_mean(upd.detach(), method, cb, _derive(seed, r, 1), loss=loss, weights=w,
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


# ------------------------------------------------------------------------------------------------
# Distributed convex problems (Figures 10 and 12)
# ------------------------------------------------------------------------------------------------
def _check_parts(parts, n_rows: int) -> list[np.ndarray]:
    """One non-empty array of row indices in [0, n_rows) per client."""
    if isinstance(parts, (str, bytes, np.ndarray, torch.Tensor)) or not isinstance(parts, Sequence) or not parts:
        raise TypeError(f"parts must be a non-empty list of index arrays (one per client), got {type(parts).__name__}")
    out = []
    for i, p in enumerate(parts):
        a = check_array(f"parts[{i}]", p, ndim=1, dtype="int", low=0)
        if a.max() >= n_rows:
            raise ValueError(f"parts[{i}] indexes row {a.max()}, outside [0, {n_rows})")
        out.append(a)
    return out


def _method(method):
    return None if method is None else check_choice("method", method, METHODS)


def _stack_parts(X: torch.Tensor, parts: Sequence[np.ndarray]) -> tuple[torch.Tensor, torch.Tensor]:
    n = max(len(p) for p in parts)
    out = torch.zeros((len(parts), n, X.shape[1]), dtype=X.dtype, device=X.device)
    mask = torch.zeros((len(parts), n), dtype=X.dtype, device=X.device)
    for c, p in enumerate(parts):
        out[c, : len(p)] = X[torch.as_tensor(np.asarray(p, dtype=np.int64), device=X.device)]
        mask[c, : len(p)] = 1
    return out, mask


def logistic_regression(
    X: torch.Tensor,
    y: torch.Tensor,
    parts: Sequence[np.ndarray],
    *,
    method: str | None = None,
    bits: float = 1.0,
    rounds: int = 100,
    lr: float | None = None,
    l2: float | None = None,
    seed: int = 0,
) -> torch.Tensor:
    """Distributed gradient descent for L2-regularised logistic regression (App. I.3, after
    Malinovskiy et al. 2020 §4): every round each client computes the full gradient of its share's
    mean loss, sends it compressed with ``method`` at ``bits`` (``None``: uncompressed float64, the
    reference run); the server averages the decoded gradients and steps.

    ``y`` in {−1, +1}; zero initial weights; ``l2`` defaults to ``1/N``; ``lr`` to ``1/L`` with
    ``L = λ_max(XᵀX)/(4N) + l2`` the smoothness constant (the paper states none of these). Returns
    the final weights (float64)."""
    X = check_tensor("X", X, ndim=2).double()
    y = check_tensor("y", y, ndim=1).double()
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"X and y must have the same length, got {X.shape[0]} and {y.shape[0]}")
    if not bool(((y == 1) | (y == -1)).all()):
        raise ValueError("y must hold labels in {-1, +1}")
    parts = _check_parts(parts, X.shape[0])
    method = _method(method)
    bits = check_float("bits", bits, low=0.0, high=8.0, low_open=True)
    rounds = check_int("rounds", rounds, low=1)
    seed = check_seed("seed", seed)
    N = X.shape[0]
    l2 = 1.0 / N if l2 is None else check_float("l2", l2, low=0.0)
    lr = None if lr is None else check_float("lr", lr, low=0.0, low_open=True)
    if lr is None:
        lr = 1.0 / (float(torch.linalg.eigvalsh(X.T @ X)[-1]) / (4 * N) + l2)
    Xc, mask = _stack_parts(X, parts)
    yc, _ = _stack_parts(y.unsqueeze(-1), parts)
    yc = yc.squeeze(-1)
    cnt = mask.sum(-1, keepdim=True)
    w = torch.zeros(X.shape[1], dtype=torch.float64)
    for r in range(rounds):
        z = yc * torch.bmm(Xc, w.expand(Xc.shape[0], -1).unsqueeze(-1)).squeeze(-1)
        coef = -yc * torch.sigmoid(-z) * mask  # d/dz log(1 + e^{−z}) · y
        g = torch.bmm(coef.unsqueeze(1), Xc).squeeze(1) / cnt + l2 * w
        if method is None:
            mean = g.mean(0)
        else:
            mean = compressed_mean(g, method, bits, _derive(seed, r))[0]
        w = w - lr * mean
    return w


def client_covariances(X: torch.Tensor, parts: Sequence[np.ndarray]) -> torch.Tensor:
    """``A_cᵀA_c`` of every client's rows of ``X`` (n_clients × d × d, float64): the only thing
    distributed power iteration needs from the data (computed once, reused by every run)."""
    X = check_tensor("X", X, ndim=2).double()
    parts = _check_parts(parts, X.shape[0])
    return torch.stack([X[torch.as_tensor(np.asarray(p, dtype=np.int64))].T @ X[torch.as_tensor(np.asarray(p, dtype=np.int64))]
                        for p in parts])


def power_iteration(
    covariances: torch.Tensor,
    *,
    method: str | None = None,
    bits: float = 1.0,
    rounds: int = 100,
    lr: float = 0.1,
    seed: int = 0,
) -> torch.Tensor:
    """Distributed power iteration (App. I.5) over clients with data matrices ``A_c`` given by
    ``covariances[c] = A_cᵀA_c`` (:func:`client_covariances`): each round every client updates the
    top-eigenvector estimate on its own data, ``u_c = A_cᵀA_c v / ‖A_cᵀA_c v‖``, and sends it compressed; the server
    averages the differences ``û_c − v`` and steps ``v ← normalize(v + lr·mean)``; ``v`` starts at
    a seeded random unit vector; ``method=None`` sends ``u_c`` uncompressed (the reference). Returns the final unit vector (float64)."""
    covariances = check_tensor("covariances", covariances, ndim=3).double()
    if covariances.shape[1] != covariances.shape[2]:
        raise ValueError(f"covariances must be (n_clients, d, d), got shape {tuple(covariances.shape)}")
    method = _method(method)
    bits = check_float("bits", bits, low=0.0, high=8.0, low_open=True)
    rounds = check_int("rounds", rounds, low=1)
    lr = check_float("lr", lr, low=0.0, low_open=True)
    g = torch.Generator().manual_seed(check_seed("seed", seed))
    v = torch.randn(covariances.shape[-1], generator=g, dtype=torch.float64)
    v = v / v.norm()
    for r in range(rounds):
        s = covariances @ v
        u = s / s.norm(dim=-1, keepdim=True).clamp_min(1e-300)
        if method is None:
            uh = u
        else:
            uh = compressed_mean(u, method, bits, _derive(seed, r))[1]
        v = v + lr * (uh - v).mean(0)
        v = v / v.norm()
    return v
