"""The figures of the common bad-input test over every public callable of ``qlib`` (outside
``qlib.book``), their methods and the result objects handed to their consumers (the plan of
``tests/test_common_bad_input.py``): how many bad calls gave a clear error naming the argument, an obscure one, a silent
result, or hung. Prints a table by area and by kind of bad value; ``--json PATH`` writes every outcome.

    python benchmarks/bad_input_audit.py [--area core] [--json out.json]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
import traceback
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import torch  # noqa: E402
from badinput import allowlist, harness  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--area", action="append", help="only these areas (core, mia, eden, rqp, mol)")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--verbose", "-v", action="store_true", help="list every call that is not clear")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    import test_common_bad_input as common  # the common test's plan: functions, classes and methods

    callables = {**common.CALLABLES, **common.METHODS}
    outcomes, no_baseline, broken = [], [], []
    kinds: dict[str, str] = {}
    t0 = time.perf_counter()
    for q, fn in callables.items():
        area = harness.area_of(q if q in common.CALLABLES else q.rsplit(".", 1)[0])
        if args.area and area not in args.area:
            continue
        if harness.not_called_reason(q, allowlist.NOT_CALLED) or q in common.RECORDS:
            continue
        make = common.PLAN.get(q)
        if make is None:
            no_baseline.append(q)
            continue
        kinds[q] = "method" if q in common.METHODS else "function"
        try:
            outcomes += harness.run_callable(q, fn, make, allowlist.ALLOW)
        except Exception as exc:  # noqa: BLE001
            broken.append((q, "".join(traceback.format_exception_only(type(exc), exc)).strip()))
    for name, make in common.RESULTS.items():
        if args.area and harness.area_of(name.split(" -> ")[0]) not in args.area:
            continue
        kinds[name] = "result object"
        try:
            outcomes += harness.run_result(name, make, allowlist.ALLOW_FIELDS)
        except Exception as exc:  # noqa: BLE001
            broken.append((name, "".join(traceback.format_exception_only(type(exc), exc)).strip()))
    wall = time.perf_counter() - t0
    tot = harness.figures(outcomes)
    by_area = defaultdict(list)
    by_cat = defaultdict(list)
    by_kind = defaultdict(list)
    for o in outcomes:
        q = o.callable.split(" -> ")[0]
        by_area[harness.area_of(q if q in common.CALLABLES else q.rsplit(".", 1)[0])].append(o)
        by_cat[o.category].append(o)
        by_kind[kinds[o.callable]].append(o)
    print(f"{'':10} {'callables':>9} {'bad calls':>9} {'clear %':>8} {'obscure':>8} {'silent':>7} {'hang':>5} {'allowed':>8}")
    for k, os_ in [*sorted(by_area.items()), ("ALL", outcomes)]:
        f = harness.figures(os_)
        print(f"{k:10} {f['callables']:9d} {f['bad_calls']:9d} {f['clear_pct']:8.1f} {f['obscure']:8d} "
              f"{f['silent']:7d} {f['hang']:5d} {f['allowed']:8d}")
    print("\nby kind of callable:")
    for k, os_ in sorted(by_kind.items()):
        f = harness.figures(os_)
        print(f"  {k:14} {f['callables']:4d} callables, {f['bad_calls']:5d} calls, clear {f['clear_pct']:5.1f} %, "
              f"obscure {f['obscure']}, silent {f['silent']}, hang {f['hang']}")
    print("\nby kind of bad value:")
    for k in harness.CATEGORIES:
        f = harness.figures(by_cat.get(k, []))
        print(f"  {k:6} {f['bad_calls']:5d} calls, clear {f['clear_pct']:5.1f} %, silent {f['silent']}, hang {f['hang']}")
    print(f"\nsilent on NaN/inf/out-of-range: {tot['silent_on_nan_inf_range']}; hangs: {tot['hang']}; "
          f"wall {wall:.1f} s")
    if no_baseline:
        print(f"\n{len(no_baseline)} callables without a baseline: {', '.join(no_baseline)}")
    if broken:
        print(f"\n{len(broken)} baselines that failed:")
        for q, e in broken:
            print(f"  {q}: {e[:300]}")
    if args.verbose:
        for o in outcomes:
            if o.outcome not in ("clear", "allowed"):
                print(f"  {o.callable}({o.param}={o.label}) {o.outcome}: {o.detail[:160]}")
    if args.json:
        args.json.write_text(json.dumps({"figures": tot, "no_baseline": no_baseline, "broken": broken,
                                         "outcomes": [dataclasses.asdict(o) for o in outcomes]}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
