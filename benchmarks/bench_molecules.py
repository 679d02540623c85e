"""Speed of the molecular study of paper 001 §5.2 (chapter quantized-mis/05-molecular).

Four numbers:

1. **Embedding throughput** per embedder (molecules/s), on the first ``--embed-n`` molecules of
   AMES, no cache.
2. **Training FLOP rate**: :func:`qlib.repro.quantized_mis.molecular.train_task` (10 runs batched,
   r_Q^n of 8 quantizers recorded every epoch) on a ``--train-n``-molecule subsample of AMES for
   ``--epochs`` epochs, per embedder dimension; FLOPs counted by
   :func:`~qlib.repro.quantized_mis.molecular.flops_per_task` (matrix products only) against the
   machine's measured float32 matmul peak (one 1024² × 1024² product, same thread count).
3. **Paper-profile time per task** (all molecules, 10 runs, 500 epochs, four embedders), with
   embeddings cached. By default EXTRAPOLATED, not measured: each task's FLOPs divided by the rate
   measured in (2) for the same embedder dimension (the rate at ``--train-n`` molecules; larger tasks
   reach a higher rate, so this overestimates their time). With ``--measure E``, MEASURED per task
   and embedder: :func:`~qlib.repro.quantized_mis.molecular.train_task` at the task's own size, the
   embedder's dimension, 10 runs and ``E`` epochs, its time scaled by 500 / E (the engine's cost per
   epoch is constant along a trajectory; ``--measure 500`` measures the whole profile). Features
   are standard-normal draws of the embedding's shape: the time depends on shapes only.

4. **Incremental recording** (CPU): on one real task's cached embeddings (``--real-task``, every
   embedder), the fraction of first-layer codes each quantizer changes per epoch, the validation
   products performed against a full recomputation every epoch, and the time of both paths.

The floor: the profile's matrix products (:func:`~qlib.repro.quantized_mis.molecular.flops_per_task`
summed over tasks and embedders) at 100 % of the measured matmul peak.

    python benchmarks/bench_molecules.py [--threads 1] [--embed-n 200] [--train-n 1000] [--epochs 30]
    python benchmarks/bench_molecules.py --device cuda --skip-embed --measure 50   # a GPU machine

``--write-sizes F`` saves each task's molecule count and kind as JSON, and ``--sizes F`` reads them
instead of the task files (a machine without PyTDC, such as a borrowed GPU box).

Timings depend on the load of the machine (shared here): the script prints what it measured.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch

from qlib import molecules
from qlib.data import MissingDataError
from qlib.devices import resolve
from qlib.repro.quantized_mis import molecular as MM

EMBEDDERS = ("minimol", "morgan", "rdkit2d", "maccs")
DIMS = {"minimol": 512, "morgan": 1024, "rdkit2d": 217, "maccs": 167}


def _sync(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize()


def matmul_peak(threads: int, size: int = 1024, reps: int = 10, device: torch.device | None = None) -> float:
    """float32 matmul rate: a 1024² product on one CPU thread count; 8192² on a GPU (fills it)."""
    device = device or torch.device("cpu")
    if device.type == "cpu":
        torch.set_num_threads(threads)
    else:
        size = 8192
    a, b = torch.randn(size, size, device=device), torch.randn(size, size, device=device)
    a @ b
    _sync(device)
    t = time.perf_counter()
    for _ in range(reps):
        a @ b
    _sync(device)
    return 2 * size**3 * reps / (time.perf_counter() - t)


def task_sizes(args) -> dict[str, tuple[int | None, str]]:
    """name → (molecules, kind); None where the task file is absent offline."""
    if args.sizes:
        with open(args.sizes) as f:
            return {k: (v[0], v[1]) for k, v in json.load(f).items()}
    out = {}
    for name in molecules.task_names():
        try:
            out[name] = (len(molecules.load_task(name, data_dir=args.data_dir)), molecules.task_info(name).kind)
        except MissingDataError:
            out[name] = (None, molecules.task_info(name).kind)
    if args.write_sizes:
        with open(args.write_sizes, "w") as f:
            json.dump(out, f, indent=1)
    return out


def incremental_report(args, rng) -> None:
    """The incremental r_Q^n recording against a full recomputation every epoch (``backend="torch"``),
    on one real task's cached embeddings (``--real-task``; standard-normal features where absent):
    per quantizer the fraction of first-layer codes that change per epoch, the validation-product
    FLOPs performed against the full path, and the time of both (same trajectories, same machine)."""
    print(f"\n== incremental recording: {args.real_task}, 10 runs, {args.inc_epochs} epochs, "
          "against recomputing every quantized model every epoch")
    try:
        task = molecules.load_task(args.real_task, data_dir=args.data_dir)
        real = True
    except (MissingDataError, ValueError):
        task, real = None, False
    for e, d in DIMS.items():
        if real:
            emb, _ = molecules.embed_cached(args.real_task, task.smiles, e)
            X, y = emb.X, task.y[emb.valid]
            kind = task.kind
        else:
            X, y, kind = rng.normal(size=(args.train_n, d)).astype(np.float32), (rng.random(args.train_n) < 0.5) * 1.0, \
                "classification"
        times = {}
        for backend in ("auto", "torch"):
            t = time.perf_counter()
            tr = MM.train_task(X, y, kind, MM.TaskConfig(runs=10, epochs=args.inc_epochs, seed=0, backend=backend))
            times[backend] = time.perf_counter() - t
            if backend == "auto":
                inc = tr
        fr = "  ".join(f"{q} {100 * f:5.2f}%" for q, f in inc.changes.items())
        print(f"{e:8s} d={X.shape[1]:5d} n={len(y):6d}  codes changed per epoch: {fr}")
        print(f"{'':8s} validation products: {inc.flops_done / 1e9:9.1f} of {inc.flops_full / 1e9:9.1f} GFLOP "
              f"({100 * inc.flops_done / inc.flops_full:4.1f} %); whole task: incremental {times['auto']:6.1f} s, "
              f"full recomputation {times['torch']:6.1f} s ({times['torch'] / times['auto']:4.2f}×)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--embed-n", type=int, default=200)
    ap.add_argument("--train-n", type=int, default=1000)
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--device", default="cpu", help="cpu, cuda or auto (training only; embedders run on the CPU)")
    ap.add_argument("--skip-embed", action="store_true", help="leave out (1), embedding throughput")
    ap.add_argument("--measure", type=int, default=0, metavar="E",
                    help="measure (3) at E epochs per task and embedder instead of extrapolating it")
    ap.add_argument("--sizes", default=None, help="JSON of task sizes (from --write-sizes) instead of the task files")
    ap.add_argument("--write-sizes", default=None)
    ap.add_argument("--real-task", default="BBB_Martins", help="task of the incremental-recording report")
    ap.add_argument("--inc-epochs", type=int, default=100, help="epochs of the incremental-recording report")
    args = ap.parse_args()
    dev = resolve(args.device)
    torch.set_num_threads(args.threads)
    sizes = task_sizes(args)

    if not args.skip_embed:
        ames = molecules.load_task("AMES", data_dir=args.data_dir)
        print(f"== embedding throughput ({args.embed_n} AMES molecules, no cache)")
        for e in EMBEDDERS:
            smiles = ames.smiles[: args.embed_n]
            molecules.embed(smiles[:2], e)                       # load the model / warm up
            t = time.perf_counter()
            emb = molecules.embed(smiles, e)
            dt = time.perf_counter() - t
            print(f"{e:8s} d={emb.X.shape[1]:5d}  {len(smiles) / dt:8.1f} molecules/s")

    peak = matmul_peak(args.threads, device=dev)
    where = f"{args.threads} thread(s)" if dev.type == "cpu" else torch.cuda.get_device_name(dev)
    print(f"\n== float32 matmul peak ({where}): {peak / 1e9:.1f} GFLOP/s")
    print(f"== training: {args.train_n} molecules, 10 runs batched, {args.epochs} epochs, r_Q^n of 8 quantizers")
    rng = np.random.default_rng(0)
    y = (rng.random(args.train_n) < 0.5).astype(np.float64)
    rates = {}
    for e, d in DIMS.items():
        X = rng.normal(size=(args.train_n, d)).astype(np.float32)   # timing only depends on shapes
        _sync(dev)
        t = time.perf_counter()
        tr = MM.train_task(X, y, "classification", MM.TaskConfig(runs=10, epochs=args.epochs, seed=0, device=dev))
        _sync(dev)
        dt = time.perf_counter() - t
        fl = MM.flops_per_task(args.train_n, d, runs=10, epochs=args.epochs)
        rates[e] = fl / dt
        print(f"{e:8s} d={d:5d}  {dt:7.2f} s  {fl / dt / 1e9:6.2f} GFLOP/s  ({100 * fl / dt / peak:4.1f} % of peak;"
              f" train loop {tr.seconds:.2f} s)")
    if dev.type == "cpu":
        incremental_report(args, rng)

    how = (f"MEASURED at {args.measure} epochs per task and embedder, scaled to 500" if args.measure
           else "EXTRAPOLATED from the rates above")
    print(f"\n== paper profile (all molecules, 10 runs, 500 epochs, 4 embedders), embeddings cached: {how}")
    total = flops = 0.0
    for name, (n, kind) in sizes.items():
        if n is None:
            print(f"{name:32s} not available offline")
            continue
        s = 0.0
        for e, d in DIMS.items():
            f = MM.flops_per_task(n, d, runs=10, epochs=500)
            flops += f
            if not args.measure:
                s += f / rates[e]
                continue
            X = rng.normal(size=(n, d)).astype(np.float32)
            yy = (rng.random(n) < 0.5).astype(np.float64) if kind == "classification" else rng.normal(size=n)
            _sync(dev)
            t = time.perf_counter()
            MM.train_task(X, yy, kind, MM.TaskConfig(runs=10, epochs=args.measure, seed=0, device=dev))
            _sync(dev)
            s += (time.perf_counter() - t) * 500 / args.measure
        total += s
        print(f"{name:32s} n={n:6d}  {s / 60:7.2f} min")
    print(f"{'total':32s}          {total / 60:7.1f} min on {where} (target: 60 min on 2 CPU cores)")
    print(f"floor of the full recomputation: {flops / 1e12:.0f} TFLOP of matrix products = {flops / peak / 60:.1f} min "
          f"at 100 % of the measured peak ({peak / 1e9:.1f} GFLOP/s); the incremental recording performs only the "
          "share of the validation products printed above (3/4 of these FLOPs are validation products), and an "
          "extrapolation from a short run at --train-n molecules overstates large tasks: measure with --measure "
          "or run the notebook (53.1 min end to end on 2 cores, benchmarks/README.md)")


if __name__ == "__main__":
    main()
