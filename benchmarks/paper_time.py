"""The `paper` time of one notebook from scaled runs, where the full run takes too long to wait for.

A notebook's `paper` run is a fixed part (imports, data, the cheap figures) plus work proportional
to one or more count parameters (trials, repetitions, rounds, epochs). This script runs the notebook
at its `paper` profile twice more, with those parameters scaled by two fractions f1 < f2 of their
`paper` values (each ``max(1, round(f * value))``), reads each run's time from the runner's stamp, fits
``T(f) = a + b·f`` through the two points and prints ``T(1) = a + b``, the extrapolated `paper` time,
with the two measurements and the fit. The linear model is stated, not checked; a third fraction
(``--check``) runs once more and prints how far the fit's prediction was from it.

    python benchmarks/paper_time.py eden/01-estimator-vnmse --scale fig2_trials --fractions 0.02 0.05
    python benchmarks/paper_time.py eden/05-federated --scale fig3_rounds fig13_rounds fig14_rounds \\
        --fractions 0.02 0.04 --check 0.06

Every other parameter is the `paper` profile's. Runs go to a temporary output directory (``--keep``
to keep it) with ``--force``; ``--set`` passes further overrides (e.g. ``threads=2``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from qlib.book import profiles  # noqa: E402


def scaled(paper: dict, names: list[str], f: float) -> dict:
    out = {}
    for n in names:
        v = paper.get(n)
        if not isinstance(v, int) or isinstance(v, bool):
            raise SystemExit(f"--scale {n}: the paper profile's value must be an integer, got {v!r}")
        out[n] = max(1, round(f * v))
    return out


def run_once(nb: str, sets: dict, extra: list[str], out: Path, data_dir: str | None) -> float:
    cmd = [sys.executable, "-m", "qlib.book", "--output-dir", str(out), "run", "--profile", "paper",
           "--only", nb + ".ipynb", "--force", "--jobs", "1", "--no-progress"]
    for k, v in sets.items():
        cmd += ["--set", f"{k}={v}"]
    for s in extra:
        cmd += ["--set", s]
    if data_dir:
        cmd += ["--data-dir", data_dir]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"run failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    stamp = json.loads((out / ".stamps" / (nb + ".json")).read_text())
    print(f"  {sets}: {stamp['seconds']:.1f} s in the notebook ({wall:.1f} s with the runner)", flush=True)
    return float(stamp["seconds"])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("notebook", help="path below chapters/ without .ipynb, e.g. eden/01-estimator-vnmse")
    ap.add_argument("--scale", nargs="+", required=True, help="count parameters scaled together")
    ap.add_argument("--fractions", nargs=2, type=float, default=(0.02, 0.05), metavar=("F1", "F2"))
    ap.add_argument("--check", type=float, default=None, help="a third fraction, to test the linear fit")
    ap.add_argument("--set", action="append", default=[], dest="extra", metavar="NAME=VALUE")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args(argv)
    f1, f2 = sorted(a.fractions)
    if not 0 < f1 < f2 <= 1:
        raise SystemExit("--fractions: need 0 < F1 < F2 <= 1")
    paper = profiles.load(ROOT, "paper").get(a.notebook + ".ipynb")
    if paper is None:
        raise SystemExit(f"{a.notebook}: not in profiles/paper.yml")
    declared = profiles.cell_parameters(ROOT / "chapters" / (a.notebook + ".ipynb"))
    full = {**declared, **paper}
    s1, s2 = scaled(full, a.scale, f1), scaled(full, a.scale, f2)
    # the fraction actually run (rounding): the mean over the scaled parameters
    g1 = sum(s1[n] / full[n] for n in a.scale) / len(a.scale)
    g2 = sum(s2[n] / full[n] for n in a.scale) / len(a.scale)
    out = Path(tempfile.mkdtemp(prefix="paper-time-"))
    print(f"{a.notebook}: paper values {({n: full[n] for n in a.scale})}; scaled runs at f = {g1:.4g}, {g2:.4g}")
    t1 = run_once(a.notebook, s1, a.extra, out, a.data_dir)
    t2 = run_once(a.notebook, s2, a.extra, out, a.data_dir)
    b = (t2 - t1) / (g2 - g1)
    fixed = t1 - b * g1
    est = fixed + b
    if b <= 0:
        print(f"the time did not grow with {a.scale} ({t1:.1f} s → {t2:.1f} s): they do not drive it, so "
              f"no extrapolation; the paper run costs about the larger measurement, {max(t1, t2):.0f} s")
        return 0
    print(f"fit T(f) = {fixed:.1f} s + {b:.1f} s · f  →  paper (f = 1): {est:.0f} s = {est / 60:.1f} min")
    if a.check is not None:
        s3 = scaled(full, a.scale, a.check)
        g3 = sum(s3[n] / full[n] for n in a.scale) / len(a.scale)
        t3 = run_once(a.notebook, s3, a.extra, out, a.data_dir)
        pred = fixed + b * g3
        print(f"check at f = {g3:.4g}: measured {t3:.1f} s, the fit predicted {pred:.1f} s ({(t3 - pred) / t3:+.0%})")
    if not a.keep:
        import shutil

        shutil.rmtree(out, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
