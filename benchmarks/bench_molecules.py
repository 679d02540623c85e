"""Speed of the molecular study of paper 001 §5.2 (chapter quantized-mis/05-molecular).

Three numbers:

1. **Embedding throughput** per embedder (molecules/s), on the first ``--embed-n`` molecules of
   AMES, no cache.
2. **Training FLOP rate**: :func:`qlib.repro.quantized_mis.molecular.train_task` (10 runs batched,
   r_Q^n of 8 quantizers recorded every epoch) on a ``--train-n``-molecule subsample of AMES for
   ``--epochs`` epochs, per embedder dimension; FLOPs counted by
   :func:`~qlib.repro.quantized_mis.molecular.flops_per_task` (matrix products only) against the
   machine's measured float32 matmul peak (one 1024² × 1024² product, same thread count).
3. **Paper-profile time per task** (all molecules, 10 runs, 500 epochs, four embedders), with
   embeddings cached: EXTRAPOLATED, not measured — each task's FLOPs divided by the rate measured in
   (2) for the same embedder dimension (the rate at ``--train-n`` molecules; larger tasks reach a
   higher rate, so this overestimates their time).

    python benchmarks/bench_molecules.py [--threads 1] [--embed-n 200] [--train-n 1000] [--epochs 30]

Timings depend on the load of the machine (shared here): the script prints what it measured.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from qlib import molecules
from qlib.data import MissingDataError
from qlib.repro.quantized_mis import molecular as MM

EMBEDDERS = ("minimol", "morgan", "rdkit2d", "maccs")
DIMS = {"minimol": 512, "morgan": 1024, "rdkit2d": 217, "maccs": 167}


def matmul_peak(threads: int, size: int = 1024, reps: int = 10) -> float:
    torch.set_num_threads(threads)
    a, b = torch.randn(size, size), torch.randn(size, size)
    a @ b
    t = time.perf_counter()
    for _ in range(reps):
        a @ b
    return 2 * size**3 * reps / (time.perf_counter() - t)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--embed-n", type=int, default=200)
    ap.add_argument("--train-n", type=int, default=1000)
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--data-dir", default=None)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    ames = molecules.load_task("AMES", data_dir=args.data_dir)

    print(f"== embedding throughput ({args.embed_n} AMES molecules, no cache)")
    for e in EMBEDDERS:
        smiles = ames.smiles[: args.embed_n]
        molecules.embed(smiles[:2], e)                       # load the model / warm up
        t = time.perf_counter()
        emb = molecules.embed(smiles, e)
        dt = time.perf_counter() - t
        print(f"{e:8s} d={emb.X.shape[1]:5d}  {len(smiles) / dt:8.1f} molecules/s")

    peak = matmul_peak(args.threads)
    print(f"\n== float32 matmul peak ({args.threads} thread(s)): {peak / 1e9:.1f} GFLOP/s")
    print(f"== training: {args.train_n} molecules, 10 runs batched, {args.epochs} epochs, r_Q^n of 8 quantizers")
    rng = np.random.default_rng(0)
    y = ames.y[: args.train_n]
    rates = {}
    for e, d in DIMS.items():
        X = rng.normal(size=(args.train_n, d)).astype(np.float32)   # timing only depends on shapes
        t = time.perf_counter()
        tr = MM.train_task(X, y, "classification", runs=10, epochs=args.epochs, seed=0)
        dt = time.perf_counter() - t
        fl = MM.flops_per_task(args.train_n, d, runs=10, epochs=args.epochs)
        rates[e] = fl / dt
        print(f"{e:8s} d={d:5d}  {dt:7.2f} s  {fl / dt / 1e9:6.2f} GFLOP/s  ({100 * fl / dt / peak:4.1f} % of peak;"
              f" train loop {tr.seconds:.2f} s)")

    print("\n== paper profile (all molecules, 10 runs, 500 epochs, 4 embedders), embeddings cached:"
          " EXTRAPOLATED from the rates above")
    total = 0.0
    for name in molecules.task_names():
        try:
            n = len(molecules.load_task(name, data_dir=args.data_dir))
        except MissingDataError:
            print(f"{name:32s} not available offline")
            continue
        s = sum(MM.flops_per_task(n, d, runs=10, epochs=500) / rates[e] for e, d in DIMS.items())
        total += s
        print(f"{name:32s} n={n:6d}  {s / 60:7.1f} min")
    print(f"{'total':32s}          {total / 60:7.1f} min on {args.threads} thread(s) "
          f"(target: 60 min on 2 cores)")


if __name__ == "__main__":
    main()
