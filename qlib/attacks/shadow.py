"""Shadow models for LiRA and the calibrated attack, trained as one batched computation on
:mod:`qlib.engine`.

* :func:`paired_keep` — which pool examples each of M shadows trains on. Shadows come in complementary
  pairs: shadow 2j trains on a random half S_j of the N pool examples, shadow 2j + 1 on the other half.
  So every shadow trains on exactly N/2 examples (the engine's ``rows=`` needs equal counts) and every
  example is *in* exactly M/2 shadows (LiRA's reference code draws each example into half of the
  shadows, :mod:`qlib.attacks.lira`), with in/out counts equal across examples.
* :func:`train_shadows` — the M models of one :mod:`qlib.engine` family trained at once, each on its
  own rows of one shared pool (``engine.train(rows=...)``: for the MLP every epoch is one large product
  over the shared rows; the linear model gets its rows copied and runs the compiled CPU backend where it
  applies). A per-model loop would repeat M small computations (``benchmarks/bench_shadows.py``).
* :func:`binary_scores` — every model's logit-scaled confidence φ = (2y − 1)·f(x) on every pool example
  (M, N), the LiRA statistic of a binary model; :func:`binary_losses` the per-example logistic loss.

The target models of an evaluation can be trained in the same call: train M + T models, keep T of
them as targets and score them with the other M (the reference code's leave-out protocol).
"""

from __future__ import annotations

import numpy as np
import torch

from qlib import engine, engine_models
from qlib.validation import check_int, check_seed, check_tensor, resolve_config, skip_nested

__all__ = ["paired_keep", "train_shadows", "binary_scores", "binary_losses"]


def paired_keep(n_models: int, n_examples: int, seed: int = 0) -> np.ndarray:
    """(M, N) boolean: complementary pairs of random halves (module docstring). ``n_models`` and
    ``n_examples`` even, ≥ 2."""
    n_models = check_int("n_models", n_models, low=2)
    n_examples = check_int("n_examples", n_examples, low=2)
    seed = check_seed("seed", seed)
    for name, v in (("n_models", n_models), ("n_examples", n_examples)):
        if v % 2:
            raise ValueError(f"{name} must be even (complementary halves), got {v}")
    rng = np.random.default_rng(seed)
    keep = np.zeros((n_models, n_examples), dtype=bool)
    for j in range(n_models // 2):
        half = rng.permutation(n_examples)[: n_examples // 2]
        keep[2 * j, half] = True
        keep[2 * j + 1] = ~keep[2 * j]
    return keep


def _check_pool(X, y):
    X = check_tensor("X", X, ndim=2)
    y = check_tensor("y", y, ndim=1)
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"y must have one label per row of X ({X.shape[0]}), got {y.shape[0]}")
    if not bool(((y == 0) | (y == 1)).all()):
        raise ValueError("y must hold labels in {0, 1}")
    return X, y


def _check_keep(keep, n: int) -> torch.Tensor:
    k = np.asarray(keep) if keep is not None and not isinstance(keep, (str, bytes)) else None
    if k is None or k.dtype.kind != "b":
        raise TypeError(f"keep must be a boolean (M, N) array, got {type(keep).__name__}")
    if k.ndim != 2 or k.shape[1] != n or k.shape[0] < 1:
        raise ValueError(f"keep must have shape (M, N = {n}) (one column per row of X), got {k.shape}")
    per = k.sum(1)
    if per.min() < 1 or per.min() != per.max():
        raise ValueError(f"keep must give every model the same number (>= 1) of rows, got {per.min()}..{per.max()}")
    return torch.from_numpy(np.nonzero(k)[1].reshape(k.shape[0], -1).astype(np.int64))


def train_shadows(model, X, y, keep, config: engine.TrainConfig, *, seed: int = 0, callbacks=()) -> torch.Tensor:
    """Train one model per row of ``keep`` (M, N boolean, equal counts, e.g. :func:`paired_keep`) on
    its rows of the pool ``X`` (N, d), ``y`` (N,) ∈ {0, 1}, all at once (:func:`qlib.engine.train` with
    ``rows=``); initial parameters from ``seed`` (:func:`qlib.engine_models.init_params`). ``X`` holds the
    model's inputs (apply a feature map such as ``qlib.synthetic.features`` first). The training's
    settings are the engine's record, ``config`` (a :class:`qlib.engine.TrainConfig`: epochs, Adam, the
    loss, the device and backend; required: ``epochs`` has no default).
    ``callbacks``: the engine's (e.g. a ``qlib.recorder.RQRecorder`` recording r_Q^n along training).
    Returns θ (M, p)."""
    X, y = _check_pool(X, y)
    rows = _check_keep(keep, X.shape[0])
    cfg = resolve_config(engine.TrainConfig, config)
    seed = check_seed("seed", seed)
    if not isinstance(model, engine_models.Model):
        raise TypeError(f"model must be a qlib.engine model (Linear, MLP, …), got {type(model).__name__}")
    with skip_nested():
        theta0 = engine_models.init_params(model, rows.shape[0], seed, dtype=X.dtype)
        res = engine.train(model, theta0, X[None], y[None].to(X.dtype), cfg, rows=rows, callbacks=callbacks)
    return res.theta


def _outputs(model, theta, X, chunk: int = 64) -> torch.Tensor:
    out = []
    for i in range(0, theta.shape[0], chunk):
        th = theta[i:i + chunk]
        out.append(model.forward(th, X.to(th.dtype).expand(th.shape[0], *X.shape), allow_nonfinite=True))  # a diverged shadow scores NaN
    return torch.cat(out)


def _check_theta(model, theta) -> torch.Tensor:
    if not isinstance(model, engine_models.Model):
        raise TypeError(f"model must be a qlib.engine model (Linear, MLP, …), got {type(model).__name__}")
    theta = check_tensor("theta", theta, ndim=2)
    if theta.shape[1] != model.n_params:
        raise ValueError(f"theta must have shape (M, {model.n_params}), got {tuple(theta.shape)}")
    return theta


def binary_scores(model, theta, X, y) -> np.ndarray:
    """(M, N) float64: φ = (2y − 1)·f_m(x) of each of the M models θ (M, p) on each pool example
    (``X`` (N, d), ``y`` (N,) ∈ {0, 1})."""
    theta = _check_theta(model, theta)
    X, y = _check_pool(X, y)
    with torch.no_grad():
        f = _outputs(model, theta, X).double()
    return ((2.0 * y.double() - 1.0) * f).numpy()


def binary_losses(model, theta, X, y) -> np.ndarray:
    """(M, N) float64: the logistic loss log(1 + e^{−φ}) of each model on each pool example."""
    phi = binary_scores(model, theta, X, y)
    return np.logaddexp(0.0, -phi)
