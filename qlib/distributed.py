"""Distributed mean estimation and distributed convex problems with compressed client messages
(paper 002 §5.2, App. I.3 and I.5).

* :func:`compressed_mean` — one round of distributed mean estimation: every client's vector
  compressed at its own budget by a compressor of :mod:`qlib.compressors`
  (:func:`qlib.compressors.make_compressor`), sent through :mod:`qlib.wire` as bytes, decoded and
  averaged by the server; optional packet loss drops a fraction of every EDEN message's rotated
  coordinates at the receiver (§4.2). The federated engine (:mod:`qlib.fedavg`) averages its client
  updates with it.
* :func:`logistic_regression` — distributed gradient descent (Figure 10);
  :func:`client_covariances` and :func:`power_iteration` — distributed power iteration (Figure 12).
* :func:`derive_seed` — every per-round and per-purpose seed of these simulations and of
  :mod:`qlib.fedavg`: ``SeedSequence([seed, *keys])``, so the draws do not depend on the compressor
  and a rerun is bit-identical.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from . import compressors as _C
from . import eden as _eden
from . import wire as _wire
from .compressors import METHODS, RandomMask, make_compressor
from .validation import (
    check_array,
    check_bool,
    check_choice,
    check_float,
    check_int,
    check_probability,
    check_seed,
    check_tensor,
    resolve_config,
)

__all__ = [
    "derive_seed",
    "compressed_mean",
    "logistic_regression",
    "LogisticRegressionConfig",
    "client_covariances",
    "power_iteration",
]


def derive_seed(seed: int, *keys: int) -> int:
    """The seed in [0, 2^63) derived from ``seed`` and the non-negative integers ``keys`` (a round, a
    purpose): the first 64-bit word of ``numpy.random.SeedSequence([seed, *keys])``, halved."""
    seed = check_seed("seed", seed)
    keys = [check_int(f"keys[{i}]", k, low=0) for i, k in enumerate(keys)]
    return int(np.random.SeedSequence([seed, *keys]).generate_state(1, dtype=np.uint64)[0] >> 1)


# ------------------------------------------------------------------------------------------------
# Distributed mean estimation: every client's message through the wire
# ------------------------------------------------------------------------------------------------
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
        pl = _wire.from_bytes(raw, d=msg.shape[-1], seed=msg.seed, device=msg.data["payload"].indices.device,
                              dtype=dtype)
        return raw, _C.Message(msg.compressor, {"payload": pl}, msg.nbits, msg.seed, msg.shape)
    raw = _wire.message_to_bytes(msg, comp)
    dev = next((v.device for v in msg.data.values() if isinstance(v, torch.Tensor)), torch.device("cpu"))
    return raw, _wire.message_from_bytes(raw, comp, seed=msg.seed, shape=msg.shape, device=dev, dtype=dtype)


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
        gseed = derive_seed(seed, gi)
        msg = comp.compress(xs[rows], gseed)
        if wire:  # every client's message really travels as bytes; its size is their length
            msg, sizes = _through_wire(comp, msg, xs.dtype)
        else:
            sizes = msg.nbits.reshape(-1).cpu().long()
        if loss > 0:
            pl = msg.data["payload"]
            rec = _eden.received_mask(pl.D, loss, "random", seed=derive_seed(gseed, 1), batch=pl.batch_shape,
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


@dataclass(frozen=True)
class LogisticRegressionConfig:
    """The settings of :func:`logistic_regression`, checked once when built; frozen. Paper 002 states
    none of them (App. I.3).

    ``method``: the compressor of the clients' gradients (one of :data:`qlib.compressors.METHODS`;
    None: uncompressed float64, the reference run) at ``bits`` bits per coordinate (in (0, 8]);
    ``rounds`` of gradient descent (>= 1); ``lr`` (> 0; None: 1/L with L = λ_max(XᵀX)/(4N) + l2 the
    smoothness constant); ``l2`` (>= 0; None: 1/N); ``seed`` of the compressors' randomness."""

    method: str | None = None
    bits: float = 1.0
    rounds: int = 100
    lr: float | None = None
    l2: float | None = None
    seed: int = 0

    def __post_init__(self):
        def put(name, value):
            object.__setattr__(self, name, value)

        put("method", _method(self.method))
        put("bits", check_float("bits", self.bits, low=0.0, high=8.0, low_open=True))
        put("rounds", check_int("rounds", self.rounds, low=1))
        put("seed", check_seed("seed", self.seed))
        put("l2", None if self.l2 is None else check_float("l2", self.l2, low=0.0))
        put("lr", None if self.lr is None else check_float("lr", self.lr, low=0.0, low_open=True))


def logistic_regression(X: torch.Tensor, y: torch.Tensor, parts: Sequence[np.ndarray],
                        config: LogisticRegressionConfig | None = None) -> torch.Tensor:
    """Distributed gradient descent for L2-regularised logistic regression (App. I.3, after
    Malinovskiy et al. 2020 §4): every round each client computes the full gradient of its share's
    mean loss, sends it compressed with ``method`` at ``bits`` (``None``: uncompressed float64, the
    reference run); the server averages the decoded gradients and steps.

    ``y`` in {−1, +1}; ``parts``: each client's row indices of ``X``; ``config``: the settings
    (:class:`LogisticRegressionConfig`; None: its defaults). Zero initial weights. Returns the final weights (float64)."""
    cfg = resolve_config(LogisticRegressionConfig, config)
    method, bits, rounds, seed, lr, l2 = cfg.method, cfg.bits, cfg.rounds, cfg.seed, cfg.lr, cfg.l2
    X = check_tensor("X", X, ndim=2).double()
    y = check_tensor("y", y, ndim=1).double()
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"X and y must have the same length, got {X.shape[0]} and {y.shape[0]}")
    if not bool(((y == 1) | (y == -1)).all()):
        raise ValueError("y must hold labels in {-1, +1}")
    parts = _check_parts(parts, X.shape[0])
    N = X.shape[0]
    l2 = 1.0 / N if l2 is None else l2
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
            mean = compressed_mean(g, method, bits, derive_seed(seed, r))[0]
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
            uh = compressed_mean(u, method, bits, derive_seed(seed, r))[1]
        v = v + lr * (uh - v).mean(0)
        v = v / v.norm()
    return v
