"""Issue 24 §4: where one client's LeNet-5 local step (Figure 14's setting: batch 128) spends its CPU time,
against this machine's matrix-product peak — the floor of the federated engine on a CPU.

Prints the step's CPU time (``torch.func.grad`` as the engine calls it, and plain autograd), the forward
pass alone, the GFLOP/s of a 1024³ matrix product on the same threads, the step's arithmetic (multiply-adds
counted from the layer shapes) and the per-operator table of ``torch.profiler``.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/profile_lenet_step.py [--threads 1] [--batch 128]
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F
from torch.func import functional_call, grad
from torch.profiler import ProfilerActivity, profile

from qlib import fl_models


def cpu_ms(f, repeat: int) -> float:
    """Mean CPU milliseconds of ``f()`` over ``repeat`` calls after 3 warm-ups (process time:
    other work on the machine inflates wall time, not this)."""
    for _ in range(3):
        f()
    t = time.process_time()
    for _ in range(repeat):
        f()
    return (time.process_time() - t) / repeat * 1e3


def step_macs(batch: int) -> tuple[int, int]:
    """Multiply-adds of LeNet-5's forward pass on ``batch`` 28×28 images, and of forward + backward (the
    backward pass: the weight gradients and the input gradients of every layer but the first)."""
    conv1, conv2 = 6 * 25 * 28 * 28, 16 * 6 * 25 * 10 * 10
    dense = 400 * 120 + 120 * 84 + 84 * 10
    fwd = batch * (conv1 + conv2 + dense)
    return fwd, fwd + batch * (conv1 + 2 * conv2 + 2 * dense)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--repeat", type=int, default=30)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    net = fl_models.LeNet5()
    P = {n: p.detach() for n, p in net.named_parameters()}
    g = torch.Generator().manual_seed(0)
    x = torch.randn(args.batch, 1, 28, 28, generator=g)
    y = torch.randint(0, 10, (args.batch,), generator=g)

    def loss(p, xb, yb):
        return F.cross_entropy(functional_call(net, p, (xb,)), yb)

    one = grad(loss)
    Pg = {n: v.clone().requires_grad_(True) for n, v in P.items()}
    step = cpu_ms(lambda: one(P, x, y), args.repeat)
    auto = cpu_ms(lambda: torch.autograd.grad(loss(Pg, x, y), list(Pg.values())), args.repeat)
    with torch.no_grad():
        fwd = cpu_ms(lambda: loss(P, x, y), args.repeat)
    a, b = torch.randn(1024, 1024, generator=g), torch.randn(1024, 1024, generator=g)
    mm = 2 * 1024**3 / (cpu_ms(lambda: a @ b, 10) / 1e3) / 1e9
    _, total = step_macs(args.batch)
    achieved = 2 * total / (step / 1e3) / 1e9
    print(f"{args.threads} thread(s), batch {args.batch}: one client step {step:.2f} ms (torch.func.grad), "
          f"{auto:.2f} ms (autograd); forward alone {fwd:.2f} ms")
    print(f"arithmetic: {2 * total / 1e6:.0f} MFLOP per step; achieved {achieved:.1f} GFLOP/s against a "
          f"1024³ matrix product's {mm:.1f} GFLOP/s ({100 * achieved / mm:.0f} %); at that peak the step would "
          f"take {2 * total / mm / 1e6:.2f} ms ({step / (2 * total / mm / 1e6):.1f}× less)")
    with profile(activities=[ProfilerActivity.CPU]) as pr:
        for _ in range(10):
            one(P, x, y)
    print(pr.key_averages().table(sort_by="self_cpu_time_total", row_limit=10))


if __name__ == "__main__":
    main()
