"""Figure 8 (eden/02) at the paper's dimension: one (law, repetition) unit under each of
``qlib.devices.cpu_pool``'s memory policies — time against memory (issue 39 §1: ≤ 60 min and ≤ 8 GB).

Each policy runs in fresh processes set up as a pool worker would be: ``default`` (glibc's own: a fresh
``mmap`` per block over 32 MiB), ``keep`` (:func:`qlib.devices.keep_freed_memory`) and ``huge-pages``
(glibc's ``glibc.malloc.hugetlb=1`` tunable in the environment at start). A process runs a warm-up unit
(compilation, codebooks), then ``--units`` units; for each it prints the wall, user and system time, the
minor page faults and the process's peak resident memory so far (``VmHWM``: the warm-up included) and its
resident memory after the unit. ``--processes`` processes run side by side (sharing the memory bandwidth,
as the paper run's two workers do). The projection for the paper's 300 units assumes ``--processes`` at
once, each at its mean unit time.

    python benchmarks/bench_fig8_memory.py [--policies default keep huge-pages] [--units 3] [--processes 2]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, resource, sys, time, torch
torch.set_num_threads(1)
from qlib.repro.eden import rotation
if sys.argv[2] == "keep":
    from qlib.devices import keep_freed_memory
    keep_freed_memory()
d, n = int(sys.argv[1]), int(sys.argv[3])
rotation.figure8([1, 2, 3, 4, 5, 6, 7, 8], d, 10, ["lognormal"], 1)   # warm-up unit
for i in range(n):
    r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    rotation.figure8([1, 2, 3, 4, 5, 6, 7, 8], d, 10, ["lognormal"], 1, seed=1 + i)
    r1, t1 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    st = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines() if ":" in l)
    print(json.dumps({"wall": t1 - t0, "user": r1.ru_utime - r0.ru_utime, "sys": r1.ru_stime - r0.ru_stime,
                      "faults": r1.ru_minflt - r0.ru_minflt, "peak_gb": int(st["VmHWM"].split()[0]) / 2**20,
                      "rss_after_gb": int(st["VmRSS"].split()[0]) / 2**20}), flush=True)
"""


def run(policy: str, d: int, units: int, processes: int) -> list[list[dict]]:
    from qlib.devices import HUGE_PAGES_TUNABLE

    env = {k: v for k, v in os.environ.items() if k != "GLIBC_TUNABLES"}
    if policy == "huge-pages":
        env["GLIBC_TUNABLES"] = HUGE_PAGES_TUNABLE
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, str(d), policy, str(units)], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, text=True) for _ in range(processes)]
    out = []
    for p in procs:
        stdout, _ = p.communicate()
        if p.returncode:
            raise SystemExit(f"{policy}: a child failed ({p.returncode})")
        out.append([json.loads(line) for line in stdout.splitlines() if line.startswith("{")])
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--policies", nargs="+", default=["default", "keep", "huge-pages"])
    ap.add_argument("--units", type=int, default=3)
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--d", type=int, default=11_511_784)
    a = ap.parse_args(argv)
    thp, info = Path("/sys/kernel/mm/transparent_hugepage/enabled"), Path("/proc/cpuinfo")
    model = next((line.split(":", 1)[1].strip() for line in (info.read_text().splitlines() if info.exists() else [])
                  if line.startswith("model name")), platform.machine())
    print(f"# {model}, {os.cpu_count()} cores, glibc {platform.libc_ver()[1]}, "
          f"THP {thp.read_text().strip() if thp.exists() else 'absent'}; d = {a.d}, {a.processes} process(es) "
          f"side by side, {a.units} unit(s) each after a warm-up")
    print("| policy | unit wall s (mean, min–max) | user s | sys s | faults | peak GB / process | after unit GB "
          "| 300 units at this rate |")
    print("|---|---|---|---|---|---|---|---|")
    for policy in a.policies:
        res = run(policy, a.d, a.units, a.processes)
        flat = [u for proc in res for u in proc]
        walls = [u["wall"] for u in flat]
        mean = sum(walls) / len(walls)
        m = {k: sum(u[k] for u in flat) / len(flat) for k in ("user", "sys", "faults")}
        print(f"| {policy} | {mean:.1f} ({min(walls):.1f}–{max(walls):.1f}) | {m['user']:.1f} | {m['sys']:.1f} "
              f"| {m['faults']:,.0f} | {max(u['peak_gb'] for u in flat):.2f} | {max(u['rss_after_gb'] for u in flat):.2f} "
              f"| {300 * mean / a.processes / 60:.1f} min |", flush=True)


if __name__ == "__main__":
    main()
