"""Batched quantization of K parameter vectors in one call vs a Python loop over the rows."""

from __future__ import annotations

import argparse
import time

import torch

from qlib import quantizers as Q


def best_of(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--models", type=int, default=2700, help="K: e.g. 9 laws x 300 runs")
    ap.add_argument("--d", type=int, default=257)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    x = torch.randn(args.models, args.d, generator=torch.Generator().manual_seed(0))
    print(f"K = {args.models} vectors of d = {args.d}, float32, {torch.get_num_threads()} threads")
    print(f"{'quantizer':12s} {'batched ms':>11s} {'loop ms':>10s} {'speed-up':>9s}")
    for name in Q.names():
        q = Q.get(name)
        tb = best_of(lambda q=q: q.batched(x), args.repeat)
        tl = best_of(lambda q=q: [q(r) for r in x], max(1, args.repeat // 2))
        print(f"{name:12s} {1e3 * tb:11.2f} {1e3 * tl:10.1f} {tl / tb:8.0f}x")


if __name__ == "__main__":
    main()
