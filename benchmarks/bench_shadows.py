"""Speed of LiRA's shadow models trained as one batched computation (``qlib.attacks.shadow.train_shadows``)
against a plain per-model PyTorch loop — issue 25's goal: ≥ 20× at the synthetic study's model size.

The workload: M shadow models of the synthetic study of paper 001 §5.1 — the linear model on [x, x²]
(d = 256 features, p = 257 parameters) — each trained with full-batch Adam (lr 1e-4) on its half of a
pool of 2n = 256 points (n = 128, the study's training-set size), the halves drawn by
``shadow.paired_keep``. Both sides do the same Adam arithmetic on the same rows:

* ``loop`` — ``torch.nn.Linear`` + ``torch.optim.Adam``, model by model (the reference);
* ``batched`` — ``shadow.train_shadows`` (``qlib.engine.train(rows=...)``: the compiled CPU backend where
  it applies, else the batched torch one; ``--backend`` forces one).

    python benchmarks/bench_shadows.py [--models 64] [--loop-models 8] [--epochs 300] [--threads 1]

The loop is timed on ``--loop-models`` models and scaled linearly to ``--models``; both sides' final
parameters are compared on those models. Timings depend on the machine's load (printed).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import time

import numpy as np
import torch
import torch.nn.functional as F

from qlib import engine, engine_models, synthetic
from qlib.attacks import shadow


def pool(n_pool: int, seed: int = 0):
    laws = synthetic.make_laws(0)
    g = torch.Generator().manual_seed(seed)
    x, y = synthetic.sample(laws[:1], n_pool, g)
    return synthetic.features(x[0]), y[0].float()


def loop(theta0, X, y, keep, epochs: int, lr: float) -> torch.Tensor:
    out = []
    d = X.shape[1]
    for i in range(theta0.shape[0]):
        rows = np.flatnonzero(keep[i])
        lin = torch.nn.Linear(d, 1)
        with torch.no_grad():
            lin.weight.copy_(theta0[i, :d])
            lin.bias.copy_(theta0[i, d:])
        opt = torch.optim.Adam(lin.parameters(), lr=lr)
        Xi, yi = X[rows], y[rows]
        for _ in range(epochs):
            opt.zero_grad()
            F.binary_cross_entropy_with_logits(lin(Xi).squeeze(1), yi).backward()
            opt.step()
        out.append(torch.cat([lin.weight.detach()[0], lin.bias.detach()]))
    return torch.stack(out)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", type=int, default=64)
    ap.add_argument("--loop-models", type=int, default=8)
    ap.add_argument("--epochs", type=int, default=300)
    ap.add_argument("--n", type=int, default=128)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--backend", default="auto", choices=engine.BACKENDS)
    a = ap.parse_args(argv)
    torch.set_num_threads(a.threads)
    X, y = pool(2 * a.n)
    keep = shadow.paired_keep(a.models, 2 * a.n, seed=0)
    model = engine_models.Linear(X.shape[1])
    cfg = engine.TrainConfig(epochs=a.epochs, lr=1e-4)
    theta0 = engine_models.init_params(model, a.models, 0)
    shadow.train_shadows(model, X, y, keep[:2], engine.TrainConfig(epochs=2, lr=1e-4, device="cpu", backend=a.backend))  # compile / warm up before the clock
    t = time.perf_counter()
    th = shadow.train_shadows(model, X, y, keep, dataclasses.replace(cfg, device="cpu", backend=a.backend), seed=0)
    t_batched = time.perf_counter() - t
    k = min(a.loop_models, a.models)
    t = time.perf_counter()
    ref = loop(theta0[:k], X, y, keep[:k], a.epochs, 1e-4)
    t_loop = (time.perf_counter() - t) * a.models / k
    err = float((th[:k] - ref).abs().max())
    print(f"load average {os.getloadavg()[0]:.2f}; threads {a.threads}; {a.models} shadows × {a.epochs} epochs, "
          f"n = {a.n}, p = {model.n_params}")
    print(f"loop (scaled from {k} models): {t_loop:.2f} s;  batched ({a.backend}): {t_batched:.2f} s;  "
          f"speed-up {t_loop / t_batched:.1f}×;  max |Δθ| on the common models {err:.2e}")


if __name__ == "__main__":
    main()
