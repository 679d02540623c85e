"""The cost of the transforms' non-finite check (issue 41 §2): ``qlib.hadamard.fwht(x)`` as it is
(NaN/inf refused: the first output coordinate of each row is read after the transform) against the
same call with ``allow_nonfinite=True`` (no check) and against ``fwht`` of the tree before the policy
(``--before REV``: its ``qlib/hadamard.py`` loaded beside today's), interleaved in one process, float32,
one thread, one vector. Goal: the checked call within 3 % of the tree before at 2^20 and 2^24.

    python benchmarks/bench_finite_check.py [--before f20bdb5] [--repeat 41] [--logd 12 20 24]

Also times ``seeded_rht`` (the compressors' rotation) the same way.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from qlib import hadamard  # noqa: E402

sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_hadamard import interleaved  # noqa: E402  (medians of round-robin calls, after a warm-up)


def before_module(rev: str):
    """``qlib/hadamard.py`` of ``rev`` as the module ``qlib._hadamard_before`` (its relative imports
    resolve to today's ``qlib._kernels`` and ``qlib.validation``, which the policy did not change)."""
    src = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:qlib/hadamard.py"], check=True,
                         capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp()) / "hadamard_before.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("qlib._hadamard_before", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", default="f20bdb5", help="the commit before the policy")
    ap.add_argument("--repeat", type=int, default=41)
    ap.add_argument("--logd", type=int, nargs="+", default=[12, 20, 24])
    args = ap.parse_args()
    torch.set_num_threads(1)
    old = before_module(args.before)
    print(f"before = {args.before}; medians of {args.repeat} interleaved repeats, ms; float32, one thread")
    print(f"{'':>14} {'d':>5} {'before':>10} {'checked':>10} {'unchecked':>10} {'checked/before':>15}")
    for k in args.logd:
        x = torch.randn(2**k, generator=torch.Generator().manual_seed(k))
        for f in (hadamard.fwht, old.fwht, hadamard.seeded_rht, old.seeded_rht):  # warm: compile, pages
            f(x) if f in (hadamard.fwht, old.fwht) else f(x, 1)
        assert torch.equal(hadamard.fwht(x), old.fwht(x)) and torch.equal(hadamard.seeded_rht(x, 1), old.seeded_rht(x, 1))
        rows = {
            "fwht": {"before": lambda x=x: old.fwht(x), "checked": lambda x=x: hadamard.fwht(x),
                     "unchecked": lambda x=x: hadamard.fwht(x, allow_nonfinite=True)},
            "seeded_rht": {"before": lambda x=x: old.seeded_rht(x, 1), "checked": lambda x=x: hadamard.seeded_rht(x, 1),
                           "unchecked": lambda x=x: hadamard.seeded_rht(x, 1, allow_nonfinite=True)},
        }
        for name, fns in rows.items():
            m = {k: v * 1e3 for k, v in interleaved(fns, args.repeat).items()}
            print(f"{name:>14} {'2^' + str(k):>5} {m['before']:10.3f} {m['checked']:10.3f} {m['unchecked']:10.3f} "
                  f"{m['checked'] / m['before']:14.3f}x")


if __name__ == "__main__":
    main()
