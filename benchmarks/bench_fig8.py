"""Figure 8 (eden/02) at the paper's dimension, one (law, repetition) unit, against its floor (issue 39 §1).

A unit is what ``qlib.repro.eden.rotation.figure8`` computes per (law, repetition): 10 clients' vectors of
d = 11,511,784 coordinates (padded to D = 2^24), each encoded and decoded by 5 methods at 8 budgets, and
the error of their mean. The floor is the unit's Walsh–Hadamard transforms of one 2^24 row each, timed
in the same run (``qlib.hadamard.fwht`` of one row, in place): 10 forward rotations, Kashin's 5 per
client (3 iterations), and the decoding of EDEN, Hadamard+SQ and Kashin+SQ at every budget (240): 300.

Each unit runs in a fresh subprocess (one thread; a warm-up unit first: compilation, the codebooks), for
today's tree and for ``--before REV`` (a git worktree of that commit), interleaved ``--repeat`` times;
the child reports its wall time and its user and system CPU time (the system time is the page faults of
fresh temporaries); a child keeps freed memory as the paper run's worker processes do
(``qlib.devices.keep_freed_memory``, where the tree has it). The projection for the paper's 3 laws × 100
repetitions assumes ``--processes`` units at once, each at the measured time; then ``--processes``
children run a unit side by side (sharing the memory bandwidth, as the workers do) and the slowest gives
the second projection.

    python benchmarks/bench_fig8.py [--before 3384c16] [--repeat 2] [--d 11511784] [--processes 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, resource, sys, time, torch
torch.set_num_threads(1)
from qlib.repro.eden import rotation
try:  # as nmse_sweep's worker processes do (qlib.devices.cpu_pool(keep_memory=True)), where the tree has it
    from qlib.devices import keep_freed_memory
    keep_freed_memory()
except ImportError:
    pass
d = int(sys.argv[1])
rotation.figure8([1, 2, 3, 4, 5, 6, 7, 8], d, 10, ["lognormal"], 1)   # warm-up unit
r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
rotation.figure8([1, 2, 3, 4, 5, 6, 7, 8], d, 10, ["lognormal"], 1, seed=1)
r1, t1 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
print(json.dumps({"wall": t1 - t0, "user": r1.ru_utime - r0.ru_utime, "sys": r1.ru_stime - r0.ru_stime,
                  "faults": r1.ru_minflt - r0.ru_minflt, "maxrss_gb": r1.ru_maxrss / 2**20}))
"""

FLOOR = r"""
import json, time, torch
torch.set_num_threads(1)
from qlib import hadamard
x = torch.randn(1, 2**24)
hadamard.fwht(x, overwrite=True)
ts = []
for _ in range(7):
    t = time.perf_counter(); hadamard.fwht(x, overwrite=True); ts.append(time.perf_counter() - t)
print(json.dumps({"row": sorted(ts)[3]}))
"""

TRANSFORMS = 10 + 10 * 5 + 10 * 8 * 3  # forward rotations, Kashin's iterations, the decodings


def child(tree: Path, code: str, *args) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree), OMP_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", code, *map(str, args)], cwd=tree, env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def children(tree: Path, code: str, n: int, *args) -> list[dict]:
    """``n`` children of ``child`` started together (their warm-ups and timed units overlap): what ``n``
    worker processes of the paper run do to each other's memory bandwidth."""
    env = dict(os.environ, PYTHONPATH=str(tree), OMP_NUM_THREADS="1")
    procs = [subprocess.Popen([sys.executable, "-c", code, *map(str, args)], cwd=tree, env=env,
                              stdout=subprocess.PIPE, text=True) for _ in range(n)]
    outs = [p.communicate()[0] for p in procs]
    if any(p.returncode for p in procs):
        raise RuntimeError("a child failed")
    return [json.loads(o.strip().splitlines()[-1]) for o in outs]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", default="3384c16", help="the commit to compare with ('' for none)")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--d", type=int, default=11_511_784)
    ap.add_argument("--processes", type=int, default=2)
    args = ap.parse_args()
    trees = {"today": ROOT}
    tmp = None
    if args.before:
        tmp = Path(tempfile.mkdtemp()) / "before"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tmp), args.before], check=True,
                       capture_output=True)
        trees = {"before": tmp, "today": ROOT}
    try:
        print(f"{time.strftime('%Y-%m-%d %H:%M')}, load {os.getloadavg()[0]:.2f}; d = {args.d:,}, 10 clients, "
              f"5 methods x 8 budgets; one thread; before = {args.before or '-'}")
        floor_row = child(ROOT, FLOOR)["row"]
        floor = TRANSFORMS * floor_row
        print(f"floor: {TRANSFORMS} transforms of 2^24 x {1e3 * floor_row:.1f} ms = {floor:.1f} s per unit")
        res = {k: [] for k in trees}
        for i in range(args.repeat):
            for name, tree in trees.items():
                m = child(tree, CHILD, args.d)
                res[name].append(m)
                print(f"  {name:>6} #{i + 1}: {m['wall']:.1f} s wall, {m['user']:.1f} s user, {m['sys']:.1f} s sys, "
                      f"{m['faults'] / 1e6:.2f} M faults, peak {m['maxrss_gb']:.1f} GB", flush=True)
        for name, ms in res.items():
            w = min(m["wall"] for m in ms)
            paper = 300 * w / args.processes
            print(f"{name:>6}: {w:.1f} s per unit (best of {len(ms)}) = {floor / w:.0%} of the floor's speed; "
                  f"the paper's 300 units on {args.processes} processes ≈ {paper / 60:.0f} min")
        if args.processes > 1:  # the units side by side, as the paper run's workers
            ms = children(ROOT, CHILD, args.processes, args.d)
            w = max(m["wall"] for m in ms)
            print(f" today, {args.processes} units at once: " + ", ".join(
                f"{m['wall']:.1f} s ({m['user']:.1f} user, {m['sys']:.1f} sys)" for m in ms)
                + f"; the paper's 300 units ≈ {300 * w / args.processes / 60:.0f} min")
    finally:
        if tmp is not None:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tmp)], capture_output=True)


if __name__ == "__main__":
    main()
