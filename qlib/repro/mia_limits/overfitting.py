"""Chapter 02 of the mia-limits part: Simulation 1 of paper 003 (§6.1, Figure 1), overfitting.

The paper's printed values are typed once in :mod:`.paper` (:data:`.paper.PAPER_S61`); the run is
:func:`qlib.mia.overfit.train_overfit_mlp`, and here the ``*_rows`` function turns it into ledger rows. Our readings
(:data:`FIGURE1_READING`) are ours and stay here.

Decision, with its reason:

* Figure 1's text gives "100%" training and "near 0%" validation fractions at ε = 1e-6 after 2500
  iterations and "at least 2000 iterations" before the attack works. These are the paper's claims
  (kind ``paper-claim``); the numeric readings of "100%" (≥ 0.99), "near 0%" (≤ 0.02), "only after
  2000 iterations" (first iteration at ≥ 0.99 within 2000 ± 500, fraction ≤ 0.9 at iteration 500)
  are ours (:data:`FIGURE1_READING`) and shown in the tolerance column. The Eq. 6 bound on Δ_n is
  our consequence (``theory-check``).
* Every run counts in every row, none is dropped. A run that never reaches the "100%" reading is
  right-censored at its last iteration for the timing row: when the run reaches the end of the window
  (2500 = 2000 + 500, the paper's length) such a run is known to lie outside it, so the row is judged on
  all runs; only a run stopped before the window's end leaves its first iteration unknown, and the row
  then reads not comparable, saying which run (:func:`figure1_rows`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from qlib.mia.overfit import OverfitRun
from qlib.repro.ledger import Item, Null, Row, claim, not_comparable
from qlib.validation import check_int, check_int_sequence

from .paper import PAPER_S61

__all__ = ["FIGURE1_READING", "figure1_table", "figure1_summary", "figure1_rows", "figure1_reductions"]

#: our numeric readings of the §6.1 words (see the module docstring)
FIGURE1_READING = {"train_min": 0.99, "val_max": 0.02, "bound_min": 0.97, "early_iter": 500, "early_max": 0.9,
                   "first_tol": 500}
FIGURE1_WHERE = "Figure 1 / §6.1"


def figure1_table(run: OverfitRun, marks=(0, 100, 500, 1000, 1500, 2000, 2500)) -> pd.DataFrame:
    """Training and validation fractions (first seed) at the marked iterations (and the last)."""
    marks = check_int_sequence("marks", marks, low=0)
    last = int(run.iterations[-1])
    idx = [i for i, it in enumerate(run.iterations) if it in set(marks) | {last}]
    tab = pd.DataFrame({"iteration": np.repeat(run.iterations[idx], 2), "set": ["train", "validation"] * len(idx)})
    vals = np.stack([run.train_frac[0, idx], run.val_frac[0, idx]], 1).reshape(-1, len(run.thresholds))
    tab[[f"ε={e:g}" for e in run.thresholds]] = vals
    return tab


def figure1_summary(run: OverfitRun) -> dict:
    """Per-seed numbers at ε = 1e-6: final train/val fractions, Eq. 6 bound, the fraction at the early
    iteration and the first iteration where the train fraction reaches the "100%" reading."""
    j = list(run.thresholds).index(PAPER_S61["threshold"])
    tr, va = run.train_frac[:, -1, j], run.val_frac[:, -1, j]
    its = list(run.iterations)
    e = FIGURE1_READING["early_iter"]
    early = run.train_frac[:, its.index(e), j] if e in its else np.full(len(tr), np.nan)
    hit = run.train_frac[:, :, j] >= FIGURE1_READING["train_min"]
    first = [int(run.iterations[np.argmax(h)]) if h.any() else None for h in hit]
    return {"train": tr, "val": va, "bound": tr - va, "early": early, "first": first,
            "attack_accuracy": 0.5 + 0.5 * (tr - va), "iters": int(run.iterations[-1])}


def _first_iteration_row(s: dict, item: Item) -> Row:
    """The timing claim on every run: its first iteration with the train fraction at the "100%" reading,
    each against 2000 ± 500 (our reading). A run that never reaches the reading within its iterations is
    right-censored there: it lies outside the window when the run reaches the window's end (it could
    only have reached the reading later), and is undetermined otherwise. Any run outside the window
    fails the row; a row with an undetermined run and none outside is not comparable, saying which."""
    R, P = FIGURE1_READING, PAPER_S61
    lo, hi, last = P["attack_from"] - R["first_tol"], P["attack_from"] + R["first_tol"], s["iters"]
    shown = ", ".join(str(f) if f is not None else f"never by {last}" for f in s["first"])
    outside = [f is not None and not lo <= f <= hi or f is None and last >= hi for f in s["first"]]
    unknown = [f is None and last < hi for f in s["first"]]
    if any(unknown) and not any(outside):
        return not_comparable(item, shown, kind="paper-claim",
                              reason=f"run(s) {', '.join(str(i + 1) for i, u in enumerate(unknown) if u)} never reach "
                                     f"{R['train_min']:g} within {last} iterations, before the window's end {hi}: "
                                     "their first iteration is unknown")
    censored = sum(f is None for f in s["first"])
    note = "initialisation unstated in the paper; every run counted"
    if censored:
        note += (f"; {censored} run(s) never reach {R['train_min']:g} within the {last} iterations, so their first "
                 f"iteration lies after {last}, outside the window")
    return claim(item, shown, not any(outside), tolerance=f"±{R['first_tol']} iterations, every run (our reading)",
                 note=note, null=Null("untrained: never", fails=True))


def figure1_rows(run: OverfitRun, seeds=None) -> list[Row]:
    """The §6.1 claims on our run; not comparable when the run is shorter than the paper's.

    Each final-iteration row takes the worst run (the paper shows one run from an unstated
    initialisation). With two runs or more, each run's train fraction and Eq. 6 bound at the last
    iteration are also recorded as ``probe`` rows (our runs one by one, labelled by ``seeds`` — the
    chapter's seeds, one per run — or by their order), each with its row's test: the evidence of
    the cause of a final-iteration row that differs."""
    s, R, P = figure1_summary(run), FIGURE1_READING, PAPER_S61
    n_runs = len(s["train"])
    if seeds is None:
        labels = [f"run {i + 1}" for i in range(n_runs)]
    else:
        seeds = check_int_sequence("seeds", seeds, low=0)
        if len(seeds) != n_runs:
            raise ValueError(f"seeds must name the {n_runs} runs of run (one seed each), got {len(seeds)}")
        labels = [f"seed {x}" for x in seeds]
    rows = [("train fraction with loss ≤ 1e-6 at the last iteration", f"100% after {P['iters']} iterations",
             float(s["train"].min()), s["train"].min() >= R["train_min"], f"≥ {R['train_min']:g} (our reading)", "paper-claim"),
            ("validation fraction with loss ≤ 1e-6 at the last iteration", "near 0%", float(s["val"].max()),
             s["val"].max() <= R["val_max"], f"≤ {R['val_max']:g} (our reading)", "paper-claim"),
            ("Eq. 6 lower bound on Δ_n (ε = 1e-6) at the last iteration", f"≥ {R['bound_min']:g}", float(s["bound"].min()),
             s["bound"].min() >= R["bound_min"], "ours: Theorem 4.3(i) with the two fractions", "theory-check"),
            (f"train fraction with loss ≤ 1e-6 at iteration {R['early_iter']}",
             f"attack works only after ≥ {P['attack_from']} iterations", float(s["early"].max()),
             bool(s["early"].max() <= R["early_max"]), f"≤ {R['early_max']:g} (our reading)", "paper-claim")]
    first = Item(FIGURE1_WHERE, f"first iteration with train fraction ≥ {R['train_min']:g} at ε = 1e-6",
                 f"≈ {P['attack_from']}")
    if s["iters"] < P["iters"]:
        reason = f"the profile runs {s['iters']} < {P['iters']} iterations"
        return ([not_comparable(Item(FIGURE1_WHERE, q, pv), ours, kind=k, reason=reason) for q, pv, ours, _, _, k in rows]
                + [not_comparable(first, ", ".join(str(f) if f is not None else "never" for f in s["first"]),
                                  kind="paper-claim", reason=reason)])
    # nulls: an untrained network (no training point reaches loss ≤ 1e-6 at any iteration)
    nulls = {0: ("untrained: 0", not 0.0 >= R["train_min"]), 1: ("untrained: 0", not 0.0 <= R["val_max"]),
             3: ("untrained: 0", not 0.0 <= R["early_max"])}
    out = [claim(Item(FIGURE1_WHERE, q, pv), ours, bool(ok), kind=k, tolerance=tol,
                 null=Null(nulls[i][0], fails=nulls[i][1]) if i in nulls and k == "paper-claim" else None)
           for i, (q, pv, ours, ok, tol, k) in enumerate(rows)]
    out.append(_first_iteration_row(s, first))
    if n_runs > 1:
        for (q, pv, *_), key, low in ((rows[0], "train", R["train_min"]), (rows[2], "bound", R["bound_min"])):
            for lab, v in zip(labels, s[key]):
                out.append(claim(Item(FIGURE1_WHERE, f"{q}, {lab}", pv), float(v), bool(v >= low), kind="probe",
                                 tolerance=f"passes: ≥ {low:g}, this run alone",
                                 note=f"one of our {n_runs} runs alone ({lab}); the row above takes the worst run"))
    return out


def figure1_reductions(iters: int, eval_every: int, seeds) -> str:
    """Prose: how this run differs from §6.1's (generated from the parameters)."""
    iters = check_int("iters", iters, low=1, integral_float=True)
    eval_every = check_int("eval_every", eval_every, low=1, integral_float=True)
    seeds = check_int_sequence("seeds", seeds, low=0)
    P = PAPER_S61
    parts = []
    if iters < P["iters"]:
        parts.append(f"{iters} iterations instead of the paper's {P['iters']}")
    if eval_every > P["evaluated_every"]:
        parts.append(f"fractions recorded every {eval_every} iterations instead of at every iteration")
    if len(list(seeds)) != P["runs"]:
        parts.append(f"{len(list(seeds))} runs (the paper shows {P['runs']}; curves are their mean)")
    return ("This run differs from the paper's: " + "; ".join(parts) + ".") if parts else "This run has the paper's size."
