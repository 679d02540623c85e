"""Speed of the batched engine + r_Q^n recorder against a plain per-model PyTorch loop.

The workload is one run of the synthetic study of paper 001 §5.1: a linear model on [x, x²]
(257 parameters), n = 128 training points, full-batch Adam, and after every epoch the model
quantized by the 8 quantizers and its per-sample losses on 128 validation points recorded
(Algorithm 1). Both sides do exactly this; the loop uses ``torch.nn.Linear``, ``torch.optim.Adam``
and ``qlib.quantizers.apply`` model by model, quantizer by quantizer, and ``qlib.rqn.r_q``
at the end. Measured side by side in one process at a reduced size, then projected to the paper's
size (9 laws × 300 runs × 3000 epochs) linearly in model-epochs.

    python benchmarks/bench_engine.py [--loop-models 4] [--engine-models 288] [--epochs 200] [--threads 1 2]

Timings depend on the load of the machine (shared here): the script prints what it measured.
"""

from __future__ import annotations

import argparse
import resource
import time
import warnings

import numpy as np
import torch
import torch.nn.functional as F

from qlib import engine, quantizers, recorder, rqn, synthetic
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


def batched(th0, x, y, xv, yv, epochs: int, lr: float = 1e-4, chunk_size=None) -> np.ndarray:
    model = engine.Linear(2 * x.shape[2])
    rec = recorder.RQRecorder(model, NAMES, xv, yv, epochs=epochs, transform=synthetic.features)
    engine.train(model, th0, x, y, epochs=epochs, lr=lr, callbacks=[rec], transform=synthetic.features,
                 chunk_size=chunk_size)
    return rec.r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--loop-models", type=int, default=4)
    ap.add_argument("--engine-models", type=int, default=288)
    ap.add_argument("--epochs", type=int, default=200)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    args = ap.parse_args()
    K = max(args.loop_models, args.engine_models)
    x, y, xv, yv = data(K)
    th0 = engine.init_params(engine.Linear(2 * x.shape[2]), K, 0)
    print(f"workload: linear model on [x, x^2] (257 params), n = n_val = 128, {len(NAMES)} quantizers "
          f"recorded every epoch, {args.epochs} epochs")
    for nt in args.threads:
        torch.set_num_threads(nt)
        L = args.loop_models
        t = time.perf_counter()
        r_loop = per_model_loop(th0[:L], x[:L], y[:L], xv[:L], yv[:L], args.epochs)
        t_loop = (time.perf_counter() - t) / (L * args.epochs)
        t = time.perf_counter()
        E_ = args.engine_models
        r_eng = batched(th0[:E_], x[:E_], y[:E_], xv[:E_], yv[:E_], args.epochs)
        t_eng = (time.perf_counter() - t) / (args.engine_models * args.epochs)
        agree = np.nanmax(np.abs(r_eng[:, :L] - r_loop) / np.abs(r_loop))
        print(f"threads={nt}: per-model loop {1e6 * t_loop:8.1f} µs/model-epoch "
              f"(paper size: {t_loop * PAPER_MODEL_EPOCHS / 3600:6.1f} h) | engine {1e6 * t_eng:6.1f} µs/model-epoch "
              f"(paper size: {t_eng * PAPER_MODEL_EPOCHS / 60:5.1f} min) | speed-up {t_loop / t_eng:6.1f}x | "
              f"max rel. diff of r_Q^n on the shared models {agree:.1e}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory of this process: {peak:.0f} MiB")


if __name__ == "__main__":
    main()
