"""Speed of qlib.hadamard.fwht vs the PyPI package `hadamard-transform` 0.2.0, and of EDEN
compress+decompress vs one forward+inverse fwht pair — side by side, interleaved, in one run.

Targets (issue 3): fwht ≥ 3× faster than hadamard-transform at 2^24 and not slower at 2^10, 2^20;
EDEN compress+decompress within 3× one fwht pair (the rotation is the floor) at 2^20 and 2^24.
The peer is a dependency of this benchmark only: ``pip install hadamard-transform==0.2.0``.

    .venv/bin/python benchmarks/bench_hadamard.py [--device cpu|cuda|auto] [--repeat 7]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from qlib import eden
from qlib import hadamard as H
from qlib.devices import resolve

try:
    from hadamard_transform import hadamard_transform as peer
except ImportError:  # pragma: no cover
    peer = None


def _sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize()


def interleaved(fns: dict, repeat: int, dev) -> dict:
    """Median wall time (s) of each function, calls interleaved round-robin (a busy machine slows
    every side alike)."""
    for f in fns.values():  # warm-up
        f()
    _sync(dev)
    times = {k: [] for k in fns}
    for _ in range(repeat):
        for k, f in fns.items():
            _sync(dev)
            t0 = time.perf_counter()
            f()
            _sync(dev)
            times[k].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in times.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--logd", type=int, nargs="+", default=[10, 20, 24])
    args = ap.parse_args()
    dev = resolve(args.device)
    print(f"device {dev}, torch {torch.__version__}, {torch.get_num_threads()} threads, float32, one vector")
    print("(ratios measured side by side in one run; the machine may be shared with other jobs)\n")
    print(f"{'d':>6s} {'peer ms':>9s} {'fwht ms':>9s} {'peer/fwht':>9s} {'pair ms':>9s} {'EDEN b=2 ms':>11s} "
          f"{'EDEN/pair':>9s} {'EDEN b=1 ms':>11s} {'EDEN/pair':>9s}")
    for k in args.logd:
        d = 2**k
        x = torch.randn(d, generator=torch.Generator().manual_seed(0)).to(dev)
        rep = args.repeat if k < 24 else max(3, args.repeat // 2)
        fns = {"fwht": lambda: H.fwht(x), "pair": lambda: H.fwht(H.fwht(x))}
        if peer is not None:
            fns["peer"] = lambda: peer(x)
        if k >= 20:
            fns["eden2"] = lambda: eden.decompress(eden.compress(x, 2, 1))
            fns["eden1"] = lambda: eden.decompress(eden.compress(x, 1, 1))
        t = interleaved(fns, rep if k > 10 else 200, dev)
        ms = {n: 1e3 * v for n, v in t.items()}
        pr = f"{ms['peer']:9.3f}" if "peer" in ms else f"{'n/a':>9s}"
        ratio = f"{ms['peer'] / ms['fwht']:8.2f}x" if "peer" in ms else f"{'n/a':>9s}"
        e2 = f"{ms['eden2']:11.2f} {ms['eden2'] / ms['pair']:8.2f}x" if "eden2" in ms else f"{'':>11s} {'':>9s}"
        e1 = f"{ms['eden1']:11.2f} {ms['eden1'] / ms['pair']:8.2f}x" if "eden1" in ms else ""
        print(f"2^{k:<4d} {pr} {ms['fwht']:9.3f} {ratio} {ms['pair']:9.3f} {e2} {e1}", flush=True)


if __name__ == "__main__":
    main()
