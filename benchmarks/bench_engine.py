"""Speed of the batched engine + r_Q^n recorder against a plain per-model PyTorch loop, and its
fraction of the machine's matrix-multiply peak.

The workload is one run of the synthetic study of paper 001 §5.1: a linear model on [x, x²]
(p = 257 parameters), n = 128 training points, full-batch Adam, and after every epoch the model
quantized by the Q = 8 quantizers and its per-sample losses on n_val = 128 validation points recorded
(Algorithm 1). Every side does exactly this:

* ``loop`` — ``torch.nn.Linear``, ``torch.optim.Adam`` and ``qlib.quantizers.apply`` model by model,
  quantizer by quantizer, and ``qlib.rqn.r_q`` at the end (the reference);
* ``torch`` — ``qlib.engine.train`` with ``TrainConfig(backend="torch")`` and ``qlib.recorder.RQRecorder``
  with ``RecorderConfig(backend="torch")``;
* ``compiled`` — the same with ``backend="compiled"`` (``qlib._kernels.engine``; the default on the CPU).

FLOPs are counted the same way on every side and for the peak: 2 per multiply-add of the matrix
products, nothing for the elementwise work (loss, Adam, quantizers, statistics). Per model-epoch:

    training forward  X₁θ (n × p)   2·n·p
    training gradient X₁ᵀr (p × n)  2·n·p
    validation, Q quantized models  2·Q·n_val·p
    total = 2·p·(2·n + Q·n_val) = 657,920 FLOP

and the peak is one ``torch.mm`` of two 1024 × 1024 float32 matrices, 2·1024³ FLOP, best of 10, at
the same thread count. Measured side by side in one process at a reduced size (the compiled
kernels are compiled, or loaded from numba's cache, before the clock starts), then projected to
the paper's size (9 laws × 300 runs × 3000 epochs) linearly in model-epochs.

    python benchmarks/bench_engine.py [--loop-models 4] [--engine-models 288] [--epochs 200] [--threads 1 2]

Timings depend on the load of the machine (shared here): the script prints what it measured and
ends with the single-thread line ``engine: … GFLOP/s = … % of peak``.
"""

from __future__ import annotations

import argparse
import resource
import time
import warnings

import numpy as np
import torch
import torch.nn.functional as F

from qlib import engine, engine_models, quantizers, recorder, rqn, synthetic
from qlib.repro.quantized_mis.paper import PAPER_QUANTIZERS

PAPER_MODEL_EPOCHS = 9 * 300 * 3000
NAMES = list(PAPER_QUANTIZERS)


def data(K: int, n: int = 128, seed: int = 0):
    laws = synthetic.make_laws(0)
    g = torch.Generator().manual_seed(seed)
    R = -(-K // len(laws))
    x, y = synthetic.sample(laws, (R, n), g)
    xv, yv = synthetic.sample(laws, (R, n), g)
    f = lambda a: a.reshape(-1, *a.shape[2:])[:K]  # noqa: E731
    return f(x), f(y), f(xv), f(yv)


def per_model_loop(th0, x, y, xv, yv, epochs: int, lr: float = 1e-4) -> np.ndarray:
    K = x.shape[0]
    out = np.empty((len(NAMES), K))
    for k in range(K):
        X, Xv = synthetic.features(x[k]), synthetic.features(xv[k])
        lin = torch.nn.Linear(X.shape[1], 1)
        with torch.no_grad():
            lin.weight.copy_(th0[k, :-1][None])
            lin.bias.copy_(th0[k, -1:])
        opt = torch.optim.Adam(lin.parameters(), lr=lr)
        qlin = torch.nn.Linear(X.shape[1], 1)
        losses = [[] for _ in NAMES]
        for _ in range(epochs):
            opt.zero_grad()
            F.binary_cross_entropy_with_logits(lin(X).squeeze(-1), y[k]).backward()
            opt.step()
            with torch.no_grad():
                for qi, name in enumerate(NAMES):
                    qlin.load_state_dict(quantizers.apply(lin.state_dict(), name))
                    losses[qi].append(F.binary_cross_entropy_with_logits(qlin(Xv).squeeze(-1), yv[k], reduction="none"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", rqn.RQUndefinedWarning)
            for qi in range(len(NAMES)):
                out[qi, k] = rqn.r_q(torch.stack(losses[qi]))
    return out


def batched(th0, x, y, xv, yv, epochs: int, lr: float = 1e-4, chunk_size=None, backend="auto") -> np.ndarray:
    model = engine_models.Linear(2 * x.shape[2])
    rec = recorder.RQRecorder(model, NAMES, xv, yv,
                              recorder.RecorderConfig(epochs=epochs, transform=synthetic.features, backend=backend))
    engine.train(model, th0, x, y, engine.TrainConfig(epochs=epochs, lr=lr, chunk_size=chunk_size, backend=backend),
                 callbacks=[rec], transform=synthetic.features)
    return rec.r


def flop_per_model_epoch(n: int = 128, n_val: int = 128, p: int = 257, Q: int = len(NAMES)) -> int:
    """2·p·(2·n + Q·n_val): the matrix products of one model-epoch (module docstring)."""
    return 2 * p * (2 * n + Q * n_val)


def mm_peak(reps: int = 10, size: int = 1024) -> float:
    """GFLOP/s of one float32 ``size × size`` torch.mm at the current thread count, best of ``reps``."""
    a, b = torch.randn(size, size), torch.randn(size, size)
    for _ in range(3):
        a @ b
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t)
    return 2 * size**3 / best / 1e9


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--loop-models", type=int, default=4)
    ap.add_argument("--engine-models", type=int, default=288)
    ap.add_argument("--epochs", type=int, default=200)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    args = ap.parse_args()
    K = max(args.loop_models, args.engine_models)
    x, y, xv, yv = data(K)
    th0 = engine_models.init_params(engine_models.Linear(2 * x.shape[2]), K, 0)
    flop = flop_per_model_epoch()
    print(f"workload: linear model on [x, x^2] (257 params), n = n_val = 128, {len(NAMES)} quantizers "
          f"recorded every epoch, {args.epochs} epochs; {flop:,} FLOP per model-epoch (matrix products)")
    t = time.perf_counter()
    for nt in args.threads:   # the serial kernels (one thread) and the parallel ones: compile / load
        torch.set_num_threads(nt)
        batched(th0[:2], x[:2], y[:2], xv[:2], yv[:2], 60, backend="compiled")
    print(f"compiled kernels ready in {time.perf_counter() - t:.1f} s (first calls; numba caches them on disk)")
    L, E_ = args.loop_models, args.engine_models
    summary = {}
    for nt in args.threads:
        torch.set_num_threads(nt)
        peak = mm_peak()
        t = time.perf_counter()
        r_loop = per_model_loop(th0[:L], x[:L], y[:L], xv[:L], yv[:L], args.epochs)
        t_loop = (time.perf_counter() - t) / (L * args.epochs)
        print(f"threads={nt}: matmul peak {peak:6.1f} GFLOP/s | per-model loop {1e6 * t_loop:8.1f} µs/model-epoch "
              f"(paper size: {t_loop * PAPER_MODEL_EPOCHS / 3600:5.1f} h)")
        for backend in ("torch", "compiled"):
            t = time.perf_counter()
            r_eng = batched(th0[:E_], x[:E_], y[:E_], xv[:E_], yv[:E_], args.epochs, backend=backend)
            t_eng = (time.perf_counter() - t) / (E_ * args.epochs)
            agree = np.nanmax(np.abs(r_eng[:, :L] - r_loop) / np.abs(r_loop))
            gf = flop / t_eng / 1e9
            summary[nt, backend] = (gf, peak)
            print(f"  engine ({backend:8s}) {1e6 * t_eng:7.1f} µs/model-epoch = {gf:5.1f} GFLOP/s = "
                  f"{100 * gf / peak:3.0f} % of peak | paper size: {t_eng * PAPER_MODEL_EPOCHS / 60:5.1f} min | "
                  f"{t_loop / t_eng:6.1f}x the loop | max rel. diff of r_Q^n vs the loop {agree:.1e}")
    peak_mem = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory of this process: {peak_mem:.0f} MiB")
    nt = 1 if (1, "compiled") in summary else args.threads[0]
    gf, peak = summary[nt, "compiled"]
    print(f"engine: {gf:.1f} GFLOP/s = {100 * gf / peak:.0f} % of peak ({nt} thread{'s' if nt > 1 else ''}, "
          f"peak {peak:.1f} GFLOP/s)")


if __name__ == "__main__":
    main()
