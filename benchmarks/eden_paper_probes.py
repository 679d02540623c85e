"""Probes of the EDEN notebooks' `paper` cost (issue 23), one thread: the functions that dominate, on one
vector or one repetition, multiplied out in ``benchmarks/README.md``.

    PYTHONPATH=<checkout> python benchmarks/eden_paper_probes.py fig2 22        # Figure 2, one vector at d = 2^22
    PYTHONPATH=<checkout> python benchmarks/eden_paper_probes.py fig8 11511784  # Figure 8, one (law, repetition)
    PYTHONPATH=<checkout> python benchmarks/eden_paper_probes.py fig5 20 10     # Figure 5, one law, 10 vectors
    DEVICE=cuda python benchmarks/eden_paper_probes.py fig8 11511784            # the same on a GPU (fig2, fig8)

It runs whichever ``qlib`` is importable, so the same command measures two checkouts (before: a checkout
without ``squared_errors``, whose sweep compresses, decompresses and compares every (budget, method); after:
the rotated-domain default). Figure 2's probe prints, for a checkout that has it, the errors alone
(``timing_trials=0``, the best of two), the cost of one timed vector (``compress`` of each (budget, method)),
and the ``domain="original"`` path up to d = 2^22. Each probe first warms the compiled kernels on a small size.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import sys
import time

import torch

from qlib.repro.eden import paper, sweeps

BITS7 = [1, 2, 3, 4, 5, 6, 7]
BITS8 = [1, 2, 3, 4, 5, 6, 7, 8]
FIG5_BITS = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1, 2, 3, 4, 5, 6, 7, 8]


def _t(f, sync=lambda: None) -> float:
    sync()
    t0 = time.perf_counter()
    f()
    sync()
    return time.perf_counter() - t0


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    what, n = argv[0], int(argv[1])
    torch.set_num_threads(1)
    dev = os.environ.get("DEVICE", "cpu")  # fig2 and fig8 run there (their sweeps take a device)
    sync = torch.cuda.synchronize if dev.startswith("cuda") else (lambda: None)
    cfg = getattr(sweeps, "VnmseSweepConfig", None)  # the sweep's settings record (older trees: its keywords)
    new = ("timing_trials" in {f.name for f in dataclasses.fields(cfg)} if cfg is not None
           else "timing_trials" in inspect.signature(sweeps.vnmse_sweep).parameters)
    tag = "after (rotated domain)" if new else "before"
    sweeps.vnmse_sweep(list(paper.FIG2_METHODS), [1, 2], [2**10],
                       sweeps.VnmseSweepConfig(trials=1, device=dev))  # warm the kernels
    sweeps.nmse_sweep(list(paper.FIG8_METHODS), [1, 2], 2**10,
                      sweeps.NmseSweepConfig(n_clients=2, laws=("lognormal",), reps=1, device=dev))
    fig2 = lambda d, **kw: sweeps.vnmse_sweep(list(paper.FIG2_METHODS), BITS7, [d],  # noqa: E731
                                              sweeps.VnmseSweepConfig(trials=1, device=dev, **kw))
    if what == "fig2":
        d = 2**n
        if not new:
            print(f"fig2 logd={n} {tag}: {min(_t(lambda: fig2(d)) for _ in range(2)):.2f} s per vector")
            return 0
        err = min(_t(lambda: fig2(d, timing_trials=0), sync) for _ in range(2))
        both = _t(lambda: fig2(d, timing_trials=1), sync)
        orig = _t(lambda: fig2(d, timing_trials=1, domain="original"), sync) if n <= 22 else float("nan")
        print(f"fig2 logd={n} {tag} on {dev}: errors {err:.2f} s per vector; one timed vector {both - err:.2f} s more; "
              f"domain='original' {orig:.2f} s per vector")
    elif what == "fig8":
        d = n if n > 64 else 2**n
        cfg8 = sweeps.NmseSweepConfig(n_clients=10, laws=("lognormal",), reps=1, device=dev)
        one = lambda: sweeps.nmse_sweep(list(paper.FIG8_METHODS), BITS8, d, cfg8)  # noqa: E731
        s = min(_t(one, sync) for _ in range(2))
        print(f"fig8 d={d} {tag} on {dev}: {s:.2f} s per (law, repetition) (best of 2)")
    elif what == "fig5":
        trials = int(argv[2]) if len(argv) > 2 else 1
        s = _t(lambda: sweeps.variable_length_sweep(FIG5_BITS, 2**n, laws=["lognormal"], trials=trials))
        print(f"fig5 logd={n} trials={trials} {tag}: {s:.2f} s per law ({s / trials:.2f} s per (law, vector))")
    else:
        raise SystemExit(f"unknown probe {what!r}: fig2, fig8 or fig5")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
