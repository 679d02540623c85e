"""Spot checks of the archive: one paper-sized unit per archived chapter, re-run to see that the
archived numbers still come out of today's code.

A stale entry's ``smoke`` rows show that the code still computes what it computed at a small scale;
they cannot see a change that moves only paper-scale numbers. So :func:`qlib.book.archive.revalidate`
also re-runs, for each entry, the unit of work declared here — the parameters over the entry's profile
that make its notebook compute one part at the paper's full size (one law, one task, one σ with the
paper's epochs and runs, or the whole notebook where it is cheap) while the rest shrinks — and compares
the rows that unit produces with the archived entry's rows of the same (where, quantity, occurrence):
bitwise (the row's text: ``ours``, ``tolerance``, ``verdict``, ``paper_value``, ``kind``, ``null``), or,
where the unit states one, within a relative tolerance (an archived run on other hardware) or an absolute
one (rows that measure a round-off error) on every number of ``ours`` and ``tolerance``, with the same
verdict. A measured time is compared by its verdict only. An entry whose
spot rows differ, or whose unit produced no row to compare, is not carried forward: it stays stale and
the report names the rows that moved.

The table (:data:`SPOTS`; expected time: one run of the unit on the quiet 2-core VM, the kernel's start
included — on the shared VM, with other work beside it, the measured wall time was 1.5–3 × that; the rows
compared are the unit's, selected by a pattern over ``where | quantity``):

=====================================  =================================================================  =====
chapter                                the unit at paper size (the rest of the notebook shrunk)            time
=====================================  =================================================================  =====
quantized-mis/01-quantizers            the whole notebook (27 rows)                                        25 s
quantized-mis/02-theory                the whole notebook (15 rows; round-off rows to 1e-12)               40 s
quantized-mis/03-synthetic-study       the Table 1 reading study, 9 laws × 20 runs × 1000 epochs (5 rows)  60 s
quantized-mis/04-synthetic-ranking     none: every row needs chapter 03's 300-run study (≈ 5 min)          —
quantized-mis/05-molecular             one task, Carcinogens_Lagunin: 4 embedders × 10 runs × 500 epochs   60 s
quantized-mis/06-table3-investigation  the best procedure on Carcinogens_Lagunin, 4 embedders (4 rows)         120 s
mia-limits/01-theorem-checks           the whole notebook (87 rows)                                        45 s
mia-limits/02-overfitting              none: minima over 3 seeds of a 2500-iteration net (≈ 8 min each)    —
mia-limits/03-mnist-table1             the three discretisations: C(P) and Δ_n rows (15 rows)              45 s
attacks/01-toys-vs-limit               none: rows over all sample sizes (≈ 4.5 min each)                   —
attacks/02-synthetic                   none: rows are means over 5 seeds (≈ 14 min each)                   —
attacks/03-molecular                   none: one task ≈ 6 min                                              —
attacks/04-dp-sgd-bound                none: one ε ≈ 6.5 min                                               —
eden/01-estimator-vnmse                the closed-form rows and Figure 4 (33 rows; the run was on a GPU)   40 s
eden/02-rotation-and-scale             Theorem 2.1's bias check, d = 64, 100,000 trials (2 rows)           35 s
eden/03-subbit-loss-heterogeneous      Figure 11, d = 2^19, 13 fractions × 20 trials (15 rows)             60 s
eden/04-distributed                    Figure 10, a9a, 8 budgets × 100 rounds                              70 s
eden/05-federated                      none: a figure's 5 federated runs (≥ 5 min at eden05-fifth)         —
rqp-sgd/01-theory                      the whole notebook (57 rows)                                        80 s
rqp-sgd/02-table1                      the two Diagnostic columns: σ tuning, 10 runs, the gap probe        45 s
rqp-sgd/03-figure2-and-bits            the whole notebook (22 rows)                                        25 s
=====================================  =================================================================  =====

A chapter missing from :data:`SPOTS`, or whose entry there is a string (why it has no unit of a few
minutes), is never carried forward: run it again. ``python -m qlib.book archive-spot`` runs the spot
checks alone (any entry, nothing written).
"""

from __future__ import annotations

import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from . import runner
from .layout import entry_dir
from .options import RunOptions
from .profiles import PROFILES
from .schema import FILENAME

__all__ = ["Spot", "SPOTS", "COMPARED", "SpotResult", "measured_time", "spot_for", "close_cells", "compare", "run_spot"]

#: the columns of a row a spot check compares (``note`` and ``cause`` are prose about the whole run)
COMPARED = ("kind", "paper_value", "ours", "tolerance", "verdict", "null", "null_fails")


@dataclass(frozen=True)
class Spot:
    """One paper-sized unit of a chapter: ``overrides`` over the entry's profile, ``rows`` a regular
    expression searched in ``"<where> | <quantity>"`` (None: every row) selecting the rows the unit
    computes at full size, ``seconds`` its expected time on the 2-core VM, ``tol`` None for bitwise rows
    or a relative tolerance on every number of ``ours`` and ``tolerance`` (the archived run was on other
    hardware), ``atol`` an absolute one (rows that measure a round-off error, ~1e-15, which the BLAS of
    another machine or release moves; it holds for the entry's smoke rows too), and ``unit`` what it is,
    in words."""

    unit: str
    seconds: int
    overrides: dict[str, Any] = field(default_factory=dict)
    rows: str | None = None
    tol: float | None = None
    atol: float = 0.0

    def __post_init__(self):
        if not isinstance(self.unit, str) or not self.unit:
            raise ValueError(f"unit must be a non-empty description, got {self.unit!r}")
        if not isinstance(self.seconds, int) or isinstance(self.seconds, bool) or self.seconds <= 0:
            raise ValueError(f"seconds must be a positive int, got {self.seconds!r}")
        if not isinstance(self.overrides, dict):
            raise TypeError(f"overrides must be a dict, got {type(self.overrides).__name__}")
        if self.rows is not None:
            re.compile(self.rows)
        if self.tol is not None and not (isinstance(self.tol, float) and 0 < self.tol < 1):
            raise ValueError(f"tol must be None (bitwise) or a float in (0, 1), got {self.tol!r}")
        if not (isinstance(self.atol, float) and 0 <= self.atol < 1e-6):
            raise ValueError(f"atol must be a float in [0, 1e-6) (a round-off error), got {self.atol!r}")


#: rows whose value is a measured time or speed (the quantity or the place names the unit or the comparison)
_TIMED = re.compile(r"\((?:[^()]*, )?(?:ms|s|seconds|µs)\)$|\btimes?\b|\bfaster\b|\bslower\b|\bspeed", re.I)


def measured_time(where: str, quantity: str) -> bool:
    """Whether a ledger row's value is a measured time or speed (it changes from run to run on any
    machine, so two runs are compared by its verdict, not its value)."""
    return bool(_TIMED.search(str(quantity)) or _TIMED.search(str(where)))


_WHOLE = "the whole notebook"

#: chapter → its spot unit, or why it has none (see the module docstring's table)
SPOTS: dict[str, Spot | str] = {
    "quantized-mis/01-quantizers": Spot(_WHOLE, 25),
    "quantized-mis/02-theory": Spot(_WHOLE, 40, atol=1e-12),  # three rows are round-off errors (~1e-15)
    "quantized-mis/03-synthetic-study": Spot(
        "the Table 1 reading study (9 laws × 20 runs × 1000 epochs, the discriminator at its paper epochs); the main "
        "study shrunk to 5 runs × 40 epochs", 60, {"runs": 5, "epochs": 40},
        rows=r"^(Table 1 vs Table 2|§5\.2\.2|Figure 2 \(ablation: Table 1 reading\))"),
    "quantized-mis/04-synthetic-ranking": (
        "every row is computed from chapter 03's 300-run × 3000-epoch study (≈ 5 min), which the archive does not keep"),
    "quantized-mis/05-molecular": Spot(
        "one task, Carcinogens_Lagunin: 4 embedders × 10 runs × 500 epochs, every molecule, seeded as in the whole "
        "study (a task's trainings are seeded seed + its index among the 21 tasks: 5)", 60,
        {"tasks": ["Carcinogens_Lagunin"], "seed": 5, "fig10_tasks": ["Carcinogens_Lagunin"]},
        rows=r"^Table 3, Carcinogens_Lagunin \|"),
    "quantized-mis/06-table3-investigation": Spot(
        "the best procedure (probability+lr1e-4_minibatch, named: the combinations shrunk could pick another) on one "
        "task, Carcinogens_Lagunin: 4 embedders × 10 runs × 500 epochs, every molecule, seeded as in the whole run "
        "(by the task's index among the 21); the combinations shrunk to 2 runs × 5 epochs on that task", 120,
        {"tasks": ["Carcinogens_Lagunin"], "runs": 2, "epochs": 5, "best_tasks": ["Carcinogens_Lagunin"],
         "best_procedure": "probability+lr1e-4_minibatch"},
        rows=r"^Table 3, Carcinogens_Lagunin \(procedure "),
    "mia-limits/01-theorem-checks": Spot(_WHOLE, 45),
    "mia-limits/02-overfitting": (
        "its four rows are minima over the three seeds of one 4096-wide network trained 2500 iterations; one seed "
        "alone takes ≈ 8 min (the archived run: 1433 s for 3 seeds)"),
    "mia-limits/03-mnist-table1": Spot(
        "the three discretisations (K = 20, 50, 100) and their C(P) and Δ_n rows; the networks shrunk to n = 1000, "
        "1 repetition, 5 iterations", 45, {"n_list": [1000], "raw_n_list": [1000], "reps": 1, "iters": 5},
        rows=r"^Table 1( \(tolerance\))? \| (C\(P\)|Δ_n bound)"),
    "attacks/01-toys-vs-limit": (
        "every row is a maximum or a slope over all sample sizes; one sample size alone (256 shadows, 200,000 pairs, "
        "1000 bootstrap resamples) takes ≈ 4.5 min (the archived run: 4653 s for 17 sizes)"),
    "attacks/02-synthetic": (
        "every row is a mean over the five seeds; one seed alone (9 laws × 512 models × 3000 epochs) takes ≈ 14 min (the archived run: 4143 s)"),
    "attacks/03-molecular": (
        "its smallest unit, one task (128 MLPs × 500 epochs, 1000 bootstrap resamples), takes ≈ 6 min (the archived "
        "run: 1154 s for 3 tasks)"),
    "attacks/04-dp-sgd-bound": (
        "its smallest unit, one ε (50,000 trainings per method and canary), takes ≈ 6.5 min (the archived run: "
        "1165 s for 3 ε)"),
    "eden/01-estimator-vnmse": Spot(
        "the closed-form rows (Lloyd–Max codebooks, vNMSE limits, entropies, App. D.2, Figure 4 at the paper's step); "
        "Figures 2, 5, 7 shrunk (the archived run drew its vectors on a GPU, which a CPU does not repeat; the closed forms are bitwise all the same)", 40,
        {"fig2_logd": [10], "fig2_trials": 2, "fig5_logd": 10, "fig5_trials": 2, "fig5_laws": ["lognormal", "normal"]},
        rows=r"^(§3 |§4\.|App\. D\.2|App\. G\.1, Figure 4)"),
    "eden/02-rotation-and-scale": Spot(
        "Theorem 2.1's bias check (d = 64, 100,000 trials); Figures 6 and 8 and the Kashin probe shrunk", 35,
        {"fig6_logd": [4], "fig6_trials": 2, "fig8_d": 4096, "fig8_reps": 1, "kashin_logd": [8], "kashin_trials": 1,
         "processes": 1}, rows=r"^Theorem 2\.1"),
    "eden/03-subbit-loss-heterogeneous": Spot(
        "Figure 11 (d = 2^19, 13 fractions × 20 trials); the heterogeneous clients shrunk", 60,
        {"het_logd": 10, "het_trials": 4}, rows=r"Figure 11|Corollary 4\.2"),
    "eden/04-distributed": Spot(
        "Figure 10 (a9a, 8 budgets × 100 rounds); Figure 12 shrunk", 70,
        {"fig12_bits": [1], "fig12_rounds": 2, "fig12_rows": 1000}, rows=r"^Figure 10"),
    "eden/05-federated": (
        "each of its rows compares the five methods' federated runs of one figure; the cheapest, Figure 14 at "
        "eden05-fifth's 100 rounds, is five LeNet-5 runs of 1–3 min each (its first three took 9 min on the shared "
        "2-core VM), and eden05-no-shakespeare's 500 rounds five times that"),
    "rqp-sgd/01-theory": Spot(_WHOLE, 80),
    "rqp-sgd/02-table1": Spot(
        "the two Diagnostic columns (32 σ × 10 tuning runs, 10 runs per method, the gap probe); MNIST shrunk", 45,
        {"mnist_sigmas": [5.0], "mnist_sweep_runs": 1, "mnist_n_train": 2000, "mnist_n_test": 1000, "mnist_T": 30},
        rows=r"Diagnostic|SVM"),
    "rqp-sgd/03-figure2-and-bits": Spot(_WHOLE, 25),
}


def spot_for(chapter: str, table: dict[str, Spot | str] | None = None) -> Spot | str:
    """The spot unit of ``chapter`` (a :class:`Spot`), or why there is none (a string)."""
    entry = (SPOTS if table is None else table).get(chapter)
    if entry is None:
        return f"no spot unit is declared for {chapter} in qlib.book.spot.SPOTS"
    return entry


_NUM = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


def close_cells(a: str, b: str, tol: float | None, atol: float = 0.0) -> bool:
    """Whether two cells agree: the same text, or the same text around numbers that agree within ``tol``
    relative or ``atol`` absolute."""
    if a == b:
        return True
    if tol is None and not atol:
        return False
    xa, xb = _NUM.findall(a), _NUM.findall(b)
    if len(xa) != len(xb) or _NUM.sub("#", a) != _NUM.sub("#", b):
        return False
    return all(abs(float(x) - float(y)) <= max(atol, (tol or 0.0) * max(abs(float(x)), abs(float(y))))
               for x, y in zip(xa, xb))


def _keyed(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` indexed by (where, quantity, occurrence of that pair)."""
    df = df.copy()
    df["_n"] = df.groupby(["where", "quantity"]).cumcount()
    return df.set_index(["where", "quantity", "_n"])


def compare(archived: pd.DataFrame, now: pd.DataFrame, spot: Spot) -> tuple[int, list[str]]:
    """The rows of ``now`` (a spot run's comparisons) that ``spot`` selects, against the archived
    entry's rows of the same (where, quantity, occurrence): how many were compared and what moved (one
    line per moved row; empty: none). No selected row at all is a difference too (the unit ran nothing
    the archive can be held to)."""
    for name, df in (("archived", archived), ("now", now)):
        missing = [c for c in ("where", "quantity", "verdict", "ours") if c not in df.columns]
        if missing:
            raise ValueError(f"{name} rows lack columns {missing}")
    a, b = _keyed(archived.astype(str)), _keyed(now.astype(str))
    labels = [f"{w} | {q}" for w, q, _ in b.index]
    sel = b[[re.search(spot.rows, x) is not None for x in labels]] if spot.rows is not None else b
    if sel.empty:
        what = f"matching {spot.rows!r}" if spot.rows is not None else "at all"
        return 0, [f"the spot run produced no row {what} ({len(b)} rows in all)"]
    cols = [c for c in COMPARED if c in a.columns and c in sel.columns]
    diffs = []
    for key, row in sel.iterrows():
        name = f"{key[0]} | {key[1]}" + (f" (#{key[2] + 1})" if key[2] else "")
        if key not in a.index:
            diffs.append(f"{name}: not in the archived entry (now {row['ours']!r}, {row['verdict']})")
            continue
        old = a.loc[key]
        timed = measured_time(key[0], key[1])
        for c in cols:
            if timed and c not in ("kind", "verdict"):
                continue
            exact = c not in ("ours", "tolerance")
            if not (close_cells(str(old[c]), str(row[c]), None) if exact else
                    close_cells(str(old[c]), str(row[c]), spot.tol, spot.atol)):
                diffs.append(f"{name}: {c} {old[c]!r} archived, {row[c]!r} now")
    return len(sel), diffs


@dataclass
class SpotResult:
    """A spot check of one entry: rows compared, the differences, the unit's seconds, or why it did not run."""

    profile: str
    chapter: str
    compared: int = 0
    diffs: list[str] = field(default_factory=list)
    seconds: float = 0.0
    error: str = ""

    @property
    def ok(self) -> bool:
        return not self.error and not self.diffs and self.compared > 0

    def line(self) -> str:
        head = f"{self.profile}/{self.chapter}"
        if self.error:
            return f"[spot ] {head}: not checked — {self.error}"
        if self.diffs:
            return (f"[spot ] {head}: {len(self.diffs)} difference(s) in {self.compared} rows ({self.seconds:.0f} s): "
                    + "; ".join(self.diffs[:5]) + (" …" if len(self.diffs) > 5 else ""))
        return f"[spot ] {head}: {self.compared} rows identical to the archive ({self.seconds:.0f} s)"


def _profile_arg(root: Path, profile: str) -> str | Path | None:
    """What the runner takes for an entry's profile: a built-in name, else ``profiles/<name>.yml``."""
    if profile in PROFILES:
        return profile
    path = Path(root) / "profiles" / f"{profile}.yml"
    return path if path.is_file() else None


def run_spot(root: Path, archive: Path, profile: str, chapter: str, *, out: Path, data_dir: str | None = None,
             table: dict[str, Spot | str] | None = None, log=print) -> SpotResult:
    """Run the spot unit of the entry ``archive/<profile>/<chapter>`` at its profile on this machine's
    CPU (into ``out/<profile>``; every unit computed again) and compare its rows with the entry's."""
    res = SpotResult(profile, chapter)
    spot = spot_for(chapter, table)
    if isinstance(spot, str):
        res.error = spot
        return res
    if not (Path(root) / "chapters" / f"{chapter}.ipynb").is_file():
        res.error = f"the notebook {chapter}.ipynb is no longer in the book"
        return res
    prof = _profile_arg(root, profile)
    if prof is None:
        res.error = f"the profile {profile!r} is neither built in nor profiles/{profile}.yml"
        return res
    dest = Path(out) / profile
    # nothing of an earlier spot run is reused: no saved unit, no cache of the notebook's own
    shutil.rmtree(dest / "_results" / chapter, ignore_errors=True)
    t0 = time.perf_counter()
    rep = runner.run(root, RunOptions(profile=prof, only=[f"{chapter}.ipynb"], device="cpu", data_dir=data_dir,
                                      output_dir=dest, overrides=dict(spot.overrides), jobs=1, progress=False,
                                      force=True), log=log)
    res.seconds = time.perf_counter() - t0
    rows = dest / "_results" / chapter / FILENAME
    if rep.failures or not rows.is_file():
        res.error = "the spot run failed: " + "; ".join(o.error for o in rep.failures) if rep.failures else \
            "the spot run wrote no rows"
        return res
    archived = pd.read_csv(entry_dir(archive, profile, chapter) / FILENAME, dtype=str, keep_default_na=False)
    now = pd.read_csv(rows, dtype=str, keep_default_na=False)
    res.compared, res.diffs = compare(archived, now, spot)
    return res
