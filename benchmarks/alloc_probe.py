"""Allocation probe (issue 30, item 6): every public callable and method of ``qlib`` (the plan of the common
bad-input test, ``tests/test_common_bad_input.py``) called once per size argument set to a huge value, in a
worker process whose address space is capped (``RLIMIT_AS``: what it uses after the imports + 4 GiB) and
whose ``qlib`` memory limit is 2 GiB (``QLIB_MEMORY_LIMIT``). A call must refuse fast, naming the argument,
before it allocates.

Probes: each integer argument whose baseline value is ``>= 1`` (seeds left out) set to ``10**12``; each
sequence of integers ``>= 1`` (a shape) with its last entry ``10**12``; an empty ``shape``/``batch`` set to
``(10**12,)``. Outcomes:

``refused``   a ValueError/TypeError naming the argument within 1 s (a size, range or memory check);
``slow``      a refusal naming it after 1 s, or no answer within 2 s (it computes at that size);
``alloc``     it tried to allocate: a MemoryError, or an error about memory/allocation, or the worker died;
``obscure``   another error;
``accepted``  it returned within 1 s (a size that does not set an allocation, e.g. a window or a count).

    python benchmarks/alloc_probe.py [-v] [--only PREFIX] [--json out.json]
"""

from __future__ import annotations

import argparse
import contextvars
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HUGE = 10**12
HEADROOM = 4 * 2**30
ALLOC_RE = re.compile(r"alloc|memory|too big|too large|maximum possible size|std::bad|overflow", re.I)
SKIP_NAME = re.compile(r"seed|^gen$|^generator$")


def _plan():
    sys.path.insert(0, str(ROOT / "tests"))
    import test_common_bad_input as common  # noqa: E402

    return common


def probes(only: str | None = None) -> list[tuple[str, str, str]]:
    """(callable, argument, label) of every probe, in a stable order."""
    common = _plan()
    from badinput import harness

    out = []
    for q in sorted(common.PLAN):
        if only and not q.startswith(only):
            continue
        fn = common.METHODS.get(q) or common.CALLABLES[q]
        try:
            base = common.PLAN[q]()
        except Exception:  # noqa: BLE001 - a broken baseline is the common test's business
            continue
        for name, (value, _default) in harness.parameter_values(fn, base).items():
            if SKIP_NAME.search(name) or isinstance(value, bool):
                continue
            if harness._is_int(value) and not hasattr(value, "shape") and value >= 1:
                out.append((q, name, "int"))
            elif harness._seq_kind(value) == "int" and min(value) >= 1:
                out.append((q, name, "seq"))
            elif isinstance(value, (tuple, list)) and not value and name in ("shape", "batch"):
                out.append((q, name, "empty-seq"))
    return out


def _huge(value, label):
    if label == "int":
        return HUGE
    if label == "seq":
        return type(value)([*value[:-1], HUGE])
    return (HUGE,)


def worker(start: int, only: str | None) -> None:
    """Run the probes from ``start`` on, one JSON line each on stdout."""
    import resource
    import warnings

    os.environ["QLIB_MEMORY_LIMIT"] = "2G"
    import torch

    torch.set_num_threads(1)
    common = _plan()
    from badinput import harness

    todo = probes(only)
    with open("/proc/self/statm") as f:
        vm = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    resource.setrlimit(resource.RLIMIT_AS, (vm + HEADROOM, resource.RLIM_INFINITY))

    for i in range(start, len(todo)):
        q, name, label = todo[i]
        print(json.dumps({"i": i, "start": True}), flush=True)
        fn = common.METHODS.get(q) or common.CALLABLES[q]
        kwargs = common.PLAN[q]()
        kwargs[name] = _huge(kwargs.get(name, harness.parameter_values(fn, kwargs)[name][0]), label)
        t0 = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                # in a copy of the context: a call stopped by the alarm inside skip_nested cannot leave the
                # switch on for the next probes (their checks would then trust every value)
                contextvars.copy_context().run(harness.call, fn, kwargs, timeout=2.0)
            res, detail = "accepted", "returned"
        except harness.Hang:
            res, detail = "slow", "no answer within 2 s"
        except MemoryError as exc:
            res, detail = "alloc", f"MemoryError: {str(exc)[:200]}"
        except (ValueError, TypeError) as exc:
            msg = str(exc)
            if harness.names_param(msg, name) and ("above the memory limit" in msg or not ALLOC_RE.search(msg)):
                res, detail = "refused", f"{type(exc).__name__}: {msg[:200]}"
            elif "above the memory limit" in msg:  # a guard refused before allocating, naming another argument
                res, detail = "obscure", f"{type(exc).__name__}: {msg[:200]}"
            elif ALLOC_RE.search(msg):
                res, detail = "alloc", f"{type(exc).__name__}: {msg[:200]}"
            elif harness.names_param(msg, name):
                res, detail = "refused", f"{type(exc).__name__}: {msg[:200]}"
            else:
                res, detail = "obscure", f"{type(exc).__name__}: {msg[:200]}"
        except Exception as exc:  # noqa: BLE001 - every failure is classified
            msg = str(exc)
            res = "alloc" if ALLOC_RE.search(msg) else "obscure"
            detail = f"{type(exc).__name__}: {msg[:200]}"
        dt = time.perf_counter() - t0
        if res == "refused" and dt > 1.0:
            res = "slow"
        print(json.dumps({"i": i, "callable": q, "param": name, "label": label, "outcome": res, "seconds": dt,
                          "detail": detail}), flush=True)


def run(only: str | None = None, verbose: bool = False) -> list[dict]:
    n = len(probes(only))
    results: dict[int, dict] = {}
    start = 0
    env = {**os.environ, "MALLOC_ARENA_MAX": "2", "OMP_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join(
        [str(ROOT), os.environ.get("PYTHONPATH", "")])}
    while start < n:
        cmd = [sys.executable, __file__, "--worker", str(start)] + (["--only", only] if only else [])
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
        current = None
        t_start = time.time()
        import selectors

        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        died = False
        while True:
            if not sel.select(timeout=60 if current is None else 20):
                proc.kill()
                died = True
                break
            line = proc.stdout.readline()
            if not line:
                died = proc.wait() != 0 or current is not None
                break
            rec = json.loads(line)
            if rec.get("start"):
                current = rec["i"]
                t_start = time.time()
                continue
            results[rec["i"]] = rec
            current = None
            if verbose:
                print(f"  {rec['callable']}({rec['param']}={rec['label']}) {rec['outcome']} {rec['seconds']:.2f} s: "
                      f"{rec['detail'][:150]}", flush=True)
        proc.wait()
        if current is not None and died:
            q, name, label = probes(only)[current]
            rec = {"i": current, "callable": q, "param": name, "label": label, "seconds": time.time() - t_start,
                   "outcome": "alloc" if proc.returncode not in (None, -9) else "slow",
                   "detail": f"worker ended (status {proc.returncode}) during the call"}
            results[current] = rec
            if verbose:
                print(f"  {q}({name}={label}) {rec['outcome']}: {rec['detail']}", flush=True)
            start = current + 1
        else:
            start = n
    return [results[i] for i in sorted(results)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--only", default=None, help="only callables whose qualified name starts with this")
    ap.add_argument("--json", type=Path)
    ap.add_argument("-v", "--verbose", action="store_true", help="print every probe")
    args = ap.parse_args(argv)
    if args.worker is not None:
        worker(args.worker, args.only)
        return 0
    t0 = time.perf_counter()
    res = run(args.only, args.verbose)
    c = Counter(r["outcome"] for r in res)
    print(f"{len(res)} probes over {len({r['callable'] for r in res})} callables in {time.perf_counter() - t0:.0f} s: "
          + ", ".join(f"{k} {c.get(k, 0)}" for k in ("refused", "accepted", "slow", "alloc", "obscure")))
    for r in res:
        if r["outcome"] in ("alloc", "slow", "obscure"):
            print(f"  {r['outcome']:8} {r['callable']}({r['param']}) {r['seconds']:.1f} s: {r['detail'][:160]}")
    if args.json:
        args.json.write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
