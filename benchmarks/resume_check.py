"""Kill and resume every chapter whose heavy driver saves units (qlib.resume), and compare (issue 41).

For each notebook: one uninterrupted run, then a run stopped after a random number k of computed units
(``QLIB_UNITS_STOP_AFTER=k``, k drawn from [1, units − 1] with ``--seed``), then the resumed run; the
resumed run's rows must equal the uninterrupted run's exactly — but a measured time or speed, which differs
between any two runs (a resumed run reports the time its reused units took when they ran; at smoke size a
timing comparison's verdict moves with it): those rows are counted, not compared — and the log must report
the k reused units. Prints the times of the three runs and what the resume saved.

    PYTHONPATH=. python benchmarks/resume_check.py --profile smoke --data-dir ../shared/data
    PYTHONPATH=. python benchmarks/resume_check.py --only eden/02 --profile default

Exit status 1 if any resumed run differs.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from qlib.book import archive, runner  # noqa: E402
from qlib.book.options import RunOptions  # noqa: E402

#: the notebooks whose drivers save units (ch.units)
NOTEBOOKS = ("eden/01-estimator-vnmse", "eden/02-rotation-and-scale", "eden/05-federated", "quantized-mis/03-synthetic-study",
             "quantized-mis/05-molecular", "attacks/01-toys-vs-limit", "attacks/02-synthetic", "attacks/03-molecular",
             "attacks/04-dp-sgd-bound", "mia-limits/02-overfitting", "mia-limits/03-mnist-table1")


#: at the smoke profile these run one unit (one task; under 100 iterations): the check adds a second
OVERRIDES = {"smoke": {"attacks/03-molecular": {"tasks": ["Carcinogens_Lagunin", "DILI"]},
                       "mia-limits/02-overfitting": {"iters": 120}}}


def _run(nb, out, profile, data_dir, logs, force=False):
    t0 = time.perf_counter()
    rep = runner.run(ROOT, RunOptions(profile=profile, only=[nb], output_dir=out, data_dir=data_dir, progress=False,
                                      force=force, overrides=OVERRIDES.get(profile, {}).get(nb)), log=logs.append)
    return rep, time.perf_counter() - t0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="*", default=list(NOTEBOOKS))
    ap.add_argument("--profile", default="smoke")
    ap.add_argument("--data-dir", default=os.environ.get("QLIB_DATA_DIR"))
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    rng = random.Random(a.seed)
    bad = 0
    for nb in a.only:
        with tempfile.TemporaryDirectory(prefix="resume-") as tmp:
            whole_out, cut_out = Path(tmp) / "whole", Path(tmp) / "cut"
            logs: list[str] = []
            rep, t_whole = _run(nb, whole_out, a.profile, a.data_dir, logs, force=True)
            if rep.failures:
                print(f"{nb}: the uninterrupted run failed: {rep.failures}")
                bad += 1
                continue
            summary = next((whole_out / "_results").glob(f"{nb}*/.units/summary.json"), None)
            n = json.loads(summary.read_text())["computed"] if summary else 0
            if n < 2:
                print(f"{nb}: {n} units at profile {a.profile}: nothing to interrupt")
                continue
            k = rng.randint(1, n - 1)
            os.environ["QLIB_UNITS_STOP_AFTER"] = str(k)
            try:
                rep1, t_cut = _run(nb, cut_out, a.profile, a.data_dir, logs)
            finally:
                del os.environ["QLIB_UNITS_STOP_AFTER"]
            logs.clear()
            rep2, t_resume = _run(nb, cut_out, a.profile, a.data_dir, logs)
            rows = [pd.read_csv(next((o / "_results").glob(f"{nb}*/comparisons.csv")), dtype=str, keep_default_na=False)
                    for o in (whole_out, cut_out)]
            # a measured time or speed differs between any two runs (and a resumed run reports the time its
            # reused units took when they ran): not compared, but the verdicts that moved are counted
            timed = [[archive.measured_time(w, q) for w, q in zip(r["where"], r["quantity"])] for r in rows]
            moved = (sum(x != y for x, y in zip(rows[0].loc[timed[0], "verdict"], rows[1].loc[timed[1], "verdict"]))
                     if sum(timed[0]) == sum(timed[1]) else "?")
            for r, t in zip(rows, timed):
                r.loc[t, [c for c in r.columns if c not in ("chapter", "paper", "kind", "where", "quantity",
                                                            "paper_value", "tolerance")]] = "(measured)"
            same = rows[0].equals(rows[1])
            if not same and rows[0].shape == rows[1].shape:
                diff = (rows[0] != rows[1]).any(axis=1)
                for (_, x), (_, y) in zip(rows[0][diff].iterrows(), rows[1][diff].iterrows()):
                    print(f"  differs: {x['where']}: {x['quantity']}: {x['ours']!r} → {y['ours']!r}")
            reported = any(f"; {k} units reused, {n - k} computed" in line for line in logs)
            ok = bool(rep1.failures) and not rep2.failures and same and reported
            bad += not ok
            print(f"{nb}: {n} units, stopped after {k}: whole {t_whole:.1f} s, stopped run {t_cut:.1f} s, "
                  f"resumed {t_resume:.1f} s ({k} reused, {n - k} computed); rows identical: {same} "
                  f"({sum(timed[0])} measured-time rows not compared, {moved} of their verdicts moved); "
                  f"log reports the reuse: {reported} → {'OK' if ok else 'FAILED'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
