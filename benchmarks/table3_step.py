"""One minibatch step of chapter 06's best Table 3 procedure (``lr1e-4_minibatch``: Adam, lr 1e-4, 32 rows per
step, one hidden layer of 128, 10 runs batched) at each offline embedder's width, the reference path
(autograd and the single-tensor ``torch.optim.Adam``) against the fast one (the gradient by hand and the
fused Adam), and the floor of a step: the bytes a fused Adam step must move (read θ, its gradient and the two
moments, write θ and the moments: 7 × 4 bytes per parameter) at the memory bandwidth measured here (a
``torch.Tensor.copy_`` of a 64 MiB float32 array: 2 × 64 MiB moved), plus the matrix products (forward,
two gradient products: 3 × 2·B·p FLOP) at the ``torch.bmm`` rate measured on the same shapes.

Then the best procedure's training on the 13 offline binary tasks of Table 3 (10 runs × 500 epochs, every
molecule, 54 % of a task's molecules per run, ⌈m / 32⌉ steps per epoch) is projected from the measured step
times, per embedder, on one process.

    python benchmarks/table3_step.py [--steps 200] [--threads 1]

Timings depend on the load of the machine (shared here); the script prints what it measured.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
import torch

from qlib.repro.quantized_mis import _table3_train as T

WIDTHS = {"maccs": 167, "rdkit2d": 217, "minimol": 512, "morgan": 1024}
#: molecules of the 13 binary Table 3 tasks in the offline data (PAMPA_NCATS absent)
TASK_SIZES = {"AMES": 7278, "BBB_Martins": 2030, "Bioavailability_Ma": 640, "CYP2C9_Substrate_CarbonMangels": 669,
              "CYP2C9_Veith": 12092, "Carcinogens_Lagunin": 280, "ClinTox": 1478, "DILI": 475, "HIA_Hou": 578,
              "Pgp_Broccatelli": 1218, "Skin_Reaction": 404, "hERG": 655, "hERG_Karim": 13445}
R, H, B = 10, 128, 32


def _time(fn, steps: int) -> float:
    for _ in range(5):
        fn()
    t = time.perf_counter()
    for _ in range(steps):
        fn()
    return (time.perf_counter() - t) / steps


def step_time(d: int, fast: bool, steps: int) -> float:
    """Seconds per step of :func:`T.plain_fit`'s inner loop (one minibatch of 32 rows, 10 runs) at width d."""
    g = torch.Generator().manual_seed(0)
    shp = T.shapes(d, H, 1)
    theta = (torch.randn(R, sum(int(np.prod(s)) for s in shp), generator=g) * 0.05).requires_grad_(not fast)
    opt = torch.optim.Adam([theta], lr=1e-4, fused=fast)
    X = (torch.rand(R, B, d, generator=g) > 0.8).float()
    sign = 1 - 2 * (torch.rand(R, B, generator=g) > 0.5).float()
    grad = torch.zeros_like(theta)

    def one():
        if fast:
            with torch.no_grad():
                T._loss_grad(theta, X, sign, shp, grad)
            theta.grad = grad
        else:
            loss = torch.nn.functional.softplus(T.forward(theta, X, shp) * sign).mean(dim=1).sum()
            opt.zero_grad(set_to_none=True)
            loss.backward()
        opt.step()
    return _time(one, steps)


def floor(d: int) -> tuple[float, float, float]:
    """(bandwidth GB/s, bmm GFLOP/s, the floor of a step in seconds) at width d."""
    a, b = torch.empty(16 << 20), torch.ones(16 << 20)
    bw = 2 * a.numel() * 4 / _time(lambda: a.copy_(b), 20) / 1e9
    p = H * d + 2 * H + 1
    X, W = torch.rand(R, B, d), torch.rand(R, d, H)
    flops = 2 * R * B * d * H
    rate = flops / _time(lambda: torch.bmm(X, W), 50) / 1e9
    return bw, rate, 7 * 4 * R * p / (bw * 1e9) + 3 * 2 * R * B * p / (rate * 1e9)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    steps_per_embedder = sum(math.ceil(math.floor(0.9 * (n - round(0.4 * n))) / B) for n in TASK_SIZES.values()) * 500
    print(f"torch {torch.__version__}, {a.threads} thread(s); {steps_per_embedder:,} steps per embedder "
          "(13 tasks, 500 epochs)")
    print(f"{'embedder':>8} {'d':>5} {'reference ms':>13} {'fast ms':>8} {'speed-up':>9} {'floor ms':>9} "
          f"{'fast/floor':>10} {'ref h':>6} {'fast h':>7}")
    tot = [0.0, 0.0]
    for e, d in WIDTHS.items():
        ref, fast = step_time(d, False, a.steps), step_time(d, True, a.steps)
        bw, rate, fl = floor(d)
        tot[0] += ref * steps_per_embedder
        tot[1] += fast * steps_per_embedder
        print(f"{e:>8} {d:>5} {ref * 1e3:>13.2f} {fast * 1e3:>8.2f} {ref / fast:>8.2f}x {fl * 1e3:>9.2f} "
              f"{fast / fl:>9.1f}x {ref * steps_per_embedder / 3600:>6.2f} {fast * steps_per_embedder / 3600:>7.2f}"
              f"   (bandwidth {bw:.1f} GB/s, bmm {rate:.1f} GFLOP/s)", flush=True)
    print(f"training alone, 4 embedders, one process: reference {tot[0] / 3600:.2f} h, fast {tot[1] / 3600:.2f} h "
          "(r_Q^n recording and scoring not included)")


if __name__ == "__main__":
    main()
