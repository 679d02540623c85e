"""Chapter 05 of the quantized-MIS part (paper 001 §5.2, App. F): the hypotheses a reader tries first on
the differences of Tables 3–5, each computed from the study's own trained runs (no extra training) and
recorded as ``probe`` rows (our own variants and checks: evidence for the causes of
:mod:`.findings`, never a difference from the paper), and the two claims of §5.2.2 the chapter did not
test before.

* :func:`spread_rows` — per cell of Tables 3–5, the spread (max − min) across embedders of the cell's
  relative performance: our embedders stand in for the paper's, and a cell whose gap to the paper is
  within that spread can differ because of the embedder alone (the ``stand-in`` cause's evidence);
* :func:`conditioning_rows` — per regression task, the unquantized R² (the denominator of every
  relative R² of Table 4) and whether it is known too loosely for a ratio to be tested within the
  cell's tolerance (the ratio is ill-conditioned);
* :func:`zero_level_rows` — whether the b-bit quantizer of Table 1 has a level at 0 (it has none: every
  weight, however small, is pushed to at least α/2^(b−1));
* :func:`reading_cell_rows` — per 1.58b cell of Tables 3 and 5, ours under Table 1's reading of 1.58b x %
  (the paper's other definition, scored on the same final models) against the paper's cell;
* :func:`section522_more_rows` — §5.2.2's "Low-privacy quantizers (2 - 5 bits) … are consistently ranked
  least private" and "regression tasks lack a viable privacy-performance trade-off", each with its null.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import torch

from qlib.quantizers import get as get_quantizer
from qlib.repro.ledger import Item, Null, Row, claim, close, fmt, not_comparable
from qlib.validation import check_int

from .molecular import QUANTIZERS, Study
from .molecular_claims import COLUMNS, METRIC_LABEL, PAPER_TABLES, REL_ATOL, cell_means

__all__ = ["embedder_spread", "spread_rows", "conditioning_rows", "zero_level_rows", "reading_cell_rows",
           "section522_more_rows", "probe_rows", "probes_text", "rows_table", "LEAST_PRIVATE_SHARE", "BITS"]

#: the b-bit quantizers (the paper's "low-privacy quantizers (2 - 5 bits)")
BITS = ("bits2", "bits3", "bits4", "bits5")
#: "consistently ranked least private", read as on at least this share of the tasks (fixed before any run;
#: the share chapter 04 reads "consistently" with)
LEAST_PRIVATE_SHARE = 0.9


def _study(study) -> Study:
    if not isinstance(study, Study):
        raise TypeError(f"study must be a molecular Study, got {type(study).__name__}")
    return study


def _compared_cells(study: Study, metric: str):
    """(task, quantizer, paper relative, our relative) of every quantizer cell of Table 3 / 4 / 5 that
    :func:`.molecular_claims.table_rows` compares as a relative paper number (Table 4's −inf cells are
    claims, not numbers)."""
    c = cell_means(study.frame, metric).set_index(["task", "quantizer"])
    for task, cells in PAPER_TABLES[metric][1].items():
        for q, (pv, pp) in zip(COLUMNS[:-1], cells[:-1]):
            if (task, q) not in c.index or (metric == "r2" and not math.isfinite(pv)) or not math.isfinite(pp):
                continue
            yield task, q, pp / 100, float(c.loc[(task, q), "relative"])


def embedder_spread(study: Study, metric: str) -> pd.DataFrame:
    """Per (task, quantizer) of Table 3 / 4 / 5 (``metric`` auroc / r2 / spearman): the relative performance
    of each embedder (mean over its runs), their spread (max − min, NaN with fewer than two embedders) and
    the number of embedders with a finite value."""
    _study(study)
    if metric not in PAPER_TABLES:
        raise ValueError(f"metric must be one of {', '.join(PAPER_TABLES)}; got {metric!r}")
    f = study.frame[study.frame.metric == metric]
    cols = ["task", "quantizer", "spread", "embedders", "lowest", "highest"]
    if f.empty:
        return pd.DataFrame(columns=cols)
    per = f.groupby(["task", "quantizer", "embedder"], sort=False)["relative"].mean().reset_index()
    per = per[np.isfinite(per.relative)]
    out = []
    for (task, q), g in per.groupby(["task", "quantizer"], sort=False):
        lo, hi = g.loc[g.relative.idxmin()], g.loc[g.relative.idxmax()]
        out.append({"task": task, "quantizer": q, "spread": float(hi.relative - lo.relative) if len(g) > 1 else np.nan,
                    "embedders": len(g), "lowest": f"{lo.embedder} {lo.relative:.3g}",
                    "highest": f"{hi.embedder} {hi.relative:.3g}"})
    return pd.DataFrame(out, columns=cols)


def spread_rows(study: Study) -> list[Row]:
    """One ``probe`` row per compared cell of Tables 3–5: our stand-in embedders' spread of the cell's
    relative performance (max − min over embedders of the mean over runs) against the cell's gap
    |ours − paper|; it passes when the spread is at least the gap (the embedders alone move the cell that
    far). Not comparable where fewer than two embedders ran (no spread)."""
    _study(study)
    rows: list[Row] = []
    for metric, (tname, _tab) in PAPER_TABLES.items():
        sp = embedder_spread(study, metric).set_index(["task", "quantizer"])
        lab = METRIC_LABEL[metric]
        for task, q, paper, ours in _compared_cells(study, metric):
            gap = abs(ours - paper) if math.isfinite(ours) else float("nan")
            item = Item(f"{tname} probe, {task}", f"embedder spread of relative {lab}, {q}",
                        f"gap {gap:.3g}" if math.isfinite(gap) else "gap undefined")
            s = sp.loc[(task, q)] if (task, q) in sp.index else None
            if s is None or not math.isfinite(s.spread) or not math.isfinite(gap):
                why = ("one embedder ran: no spread across embedders" if s is None or s.embedders < 2
                       else "the cell's value is not a number")
                rows.append(not_comparable(item, None, kind="probe", reason=why))
                continue
            rows.append(claim(item, float(s.spread), bool(s.spread >= gap), kind="probe",
                              tolerance="spread ≥ the cell's gap |ours − paper| (the stand-in test)",
                              note=f"our variant: the cell per embedder (mean over runs), {s.embedders} embedders, "
                                   f"lowest {s.lowest}, highest {s.highest}; ours {ours:.3g} (mean over embedders "
                                   f"and runs), paper {paper:.3g}"))
    return rows


def conditioning_rows(study: Study) -> list[Row]:
    """Per regression task, one ``probe`` row: the unquantized R² ō (mean over embedders and runs; the
    paper's is the reference) and whether every relative R² of the task is ill-conditioned — ō known only
    to ±2 SE (over embedders × runs) wider than the cell tolerance on a ratio near 1 (2·SE/|ō| ≥
    ±0.15), or ō ≤ 0. The note gives the smallest per-run R² and how far the two averages of a ratio
    (mean of per-run ratios, ratio of the means) lie apart at the task's worst cell."""
    _study(study)
    f = study.frame[(study.frame.metric == "r2")]
    tab = PAPER_TABLES["r2"][1]
    rows: list[Row] = []
    tol = REL_ATOL["r2"]
    for task in tab:
        g = f[f.task == task]
        if g.empty:
            continue
        o = g.drop_duplicates(["embedder", "run"])["original"].to_numpy(dtype=float)
        o = o[np.isfinite(o)]
        item = Item(f"Table 4 probe, {task}", "unquantized R² near zero: every relative R² ill-conditioned",
                    tab[task][-1][0])
        if o.size < 2:
            rows.append(not_comparable(item, float(o.mean()) if o.size else None, kind="probe",
                                       reason="fewer than two unquantized runs: no standard error"))
            continue
        mean = float(o.mean())
        rel = 2 * float(o.std(ddof=1)) / math.sqrt(o.size) / abs(mean) if mean != 0 else math.inf
        avg_gap, worst = 0.0, "—"
        for q in BITS:
            s = g[g.quantizer == q]
            if s.empty:
                continue
            with np.errstate(invalid="ignore", divide="ignore"):
                d = abs(float(s.relative.mean()) - float(s.value.mean() / s.original.mean()))
            if math.isfinite(d) and d > avg_gap:
                avg_gap, worst = d, q
        rows.append(claim(item, mean, bool(mean <= 0 or rel >= tol), kind="probe",
                          tolerance=f"ill-conditioned when 2 SE of the mean unquantized R² ≥ {tol:g} of it (the "
                                    "cell tolerance on a ratio near 1), or the mean ≤ 0",
                          note=f"our variant: the denominator's precision; 2 SE / |mean| = {rel:.3g} over {o.size} "
                               f"(embedder, run) models, smallest per-run R² {o.min():.3g}; mean of per-run ratios "
                               f"vs ratio of the means differ by up to {avg_gap:.3g} ({worst})"))
    return rows


def zero_level_rows(bits: tuple[int, ...] = (2, 3, 4, 5), n_grid: int = 20001) -> list[Row]:
    """Whether the b-bit quantizer of Table 1 (as printed, the study's) has a level at 0: on a grid of
    [−1, 1] (α = 1) holding values down to 1/(n_grid − 1), the smallest |Q(θ)| / α for each b. The paper's
    formula (sign(θ)·(α/s)·int(1 + clip(s|θ|/α, 0, s)), s = 2^(b−1)) gives α/s > 0: no zero level, so a b-bit
    model has no weight at 0 however small its float weight. A ``theory-check`` row: our quantizer
    against the printed formula's property."""
    n_grid = check_int("n_grid", n_grid, low=3)
    if not isinstance(bits, tuple) or not bits or not all(isinstance(b, int) and 2 <= b <= 5 for b in bits):
        raise ValueError(f"bits must be a non-empty tuple of integers in 2..5, got {bits!r}")
    grid = torch.linspace(-1, 1, n_grid, dtype=torch.float64)
    grid = grid[grid != 0]                       # sign(0) is a choice of ours; the claim is about θ ≠ 0
    smallest = {b: float(get_quantizer(f"bits{b}")(grid).abs().min()) for b in bits}
    shown = "; ".join(f"{b} bits {v:.4g}" for b, v in smallest.items())
    return [claim(Item("Table 4 / Table 1 (b bits)", "the b-bit quantizer as printed has no level at 0: smallest "
                       "|Q(θ)| / α", "α / 2^(b−1) > 0 (no level at 0)"), shown,
                  all(abs(v - 2.0 ** (1 - b)) < 1e-12 for b, v in smallest.items()), kind="theory-check",
                  tolerance="equal to α / 2^(b−1) for every b",
                  note=f"grid of {n_grid} points of [−1, 1] (α = 1), smallest |θ| {2 / (n_grid - 1):.2g}; a weight "
                       "the float model leaves near 0 becomes ±α/2^(b−1) (a hypothesis for Table 4's R² loss, "
                       "the same in the paper's formula and ours)")]


def reading_cell_rows(study: Study) -> list[Row]:
    """Per 1.58b cell of Tables 3 and 5 (the paper's value finite), one ``probe`` row: our relative
    performance under Table 1's reading of 1.58b x % (keep the x % smallest |θ| as their sign, zero the
    rest; scored on the same final models) against the paper's cell, passing within the cell's
    tolerance :data:`.molecular_claims.REL_ATOL`."""
    _study(study)
    rows: list[Row] = []
    for metric in ("auroc", "spearman"):
        tname, tab = PAPER_TABLES[metric]
        c = cell_means(study.frame, metric).set_index(["task", "quantizer"])
        lab = METRIC_LABEL[metric]
        for task, cells in tab.items():
            for pct, ci in (("33", 1), ("50", 2), ("90", 3)):
                q = f"ternary{pct}"
                pp = cells[ci][1]
                if (task, f"{q}_table") not in c.index or (task, q) not in c.index or not math.isfinite(pp):
                    continue
                v = float(c.loc[(task, f"{q}_table"), "relative"])
                rows.append(close(Item(f"{tname} probe, {task}", f"relative {lab}, {q} under Table 1's reading", pp / 100),
                                  v, atol=REL_ATOL[metric], kind="probe",
                                  basis="the cell's tolerance",
                                  note=f"our variant: the 1.58b {pct} % column under Table 1's reading (§5.1's, "
                                       f"which the tables run, gives {float(c.loc[(task, q), 'relative']):.3g}); "
                                       "mean over embedders and runs"))
    return rows


def _privacy_order(study: Study, tasks) -> pd.DataFrame:
    """Mean r_Q^n (over embedders and runs) per task × quantizer, the eight quantizers as columns."""
    m = study.frame[study.frame.quantizer.isin(QUANTIZERS) & study.frame.task.isin(tasks)]
    m = m.drop_duplicates(["task", "embedder", "quantizer", "run"])
    return m.groupby(["task", "quantizer"])["r_q"].mean().unstack().reindex(columns=list(QUANTIZERS))


def section522_more_rows(study: Study) -> list[Row]:
    """§5.2.2's two claims the chapter's other rows do not test, each with its null:

    * "Low-privacy quantizers (2 - 5 bits) … are consistently ranked least private" (classification,
      Figure 3): the share of classification tasks whose four smallest mean r_Q^n are the four b-bit
      quantizers, at least :data:`LEAST_PRIVATE_SHARE`; null: r_Q^n unrelated to the quantizer (any four
      of eight are the least private: 1/70 of the tasks);
    * "regression tasks lack a viable privacy-performance trade-off: quantizers either degrade
      performance catastrophically or retain performance at the cost of privacy" (Figure 4): on every
      regression task, each of the four most private quantizers (largest mean r_Q^n) predicts worse
      than the mean (R² < 0, mean over embedders and runs); null: no effect of quantization (every
      quantizer keeps the unquantized R², > 0 on every task we ran)."""
    _study(study)
    fr = study.frame
    rows: list[Row] = []
    clf = sorted(set(fr[fr.metric == "auroc"].task))
    if clf:
        pt = _privacy_order(study, clf).dropna(how="any")
        if len(pt):
            least = pt.apply(lambda r: set(r.nsmallest(4).index) == set(BITS), axis=1)
            share = float(least.mean())
            chance = 1 / math.comb(len(QUANTIZERS), len(BITS))
            rows.append(claim(Item("§5.2.2, classification", "2–5 bits are consistently ranked least private",
                                   f"share of tasks whose four smallest mean r_Q^n are 2–5 bits ≥ {LEAST_PRIVATE_SHARE}"),
                              share, bool(share >= LEAST_PRIVATE_SHARE),
                              tolerance=f"≥ {LEAST_PRIVATE_SHARE} (our reading of 'consistently', fixed in advance)",
                              note=f"{len(pt)} classification tasks, mean r_Q^n over embedders and runs; not on "
                                   f"it: {', '.join(t for t in pt.index if not least[t]) or 'none'}",
                              null=Null(f"r_Q^n unrelated to the quantizer: share {chance:.3f}",
                                        fails=bool(chance < LEAST_PRIVATE_SHARE))))
    reg = sorted(set(fr[fr.metric == "r2"].task))
    if reg:
        pt = _privacy_order(study, reg)
        r2 = fr[(fr.metric == "r2") & fr.quantizer.isin(QUANTIZERS)].groupby(["task", "quantizer"])["value"].mean()
        orig = fr[(fr.metric == "r2") & (fr.quantizer == "identity")].groupby("task")["value"].mean()
        ok, shown = [], []
        for task in reg:
            r = pt.loc[task].dropna() if task in pt.index else pd.Series(dtype=float)
            if len(r) < len(QUANTIZERS):
                continue
            private = list(r.nlargest(4).index)
            best = max(private, key=lambda q: r2[(task, q)])
            ok.append(bool(all(r2[(task, q)] < 0 for q in private)))
            shown.append(f"{task} {best} {fmt(float(r2[(task, best)]))}")
        if ok:
            null_ok = [bool(orig.get(t, np.nan) < 0) for t in reg]
            rows.append(claim(Item("§5.2.2, regression", "no viable privacy–performance trade-off: each of the "
                                                                "four most private quantizers has R² < 0",
                                   "every regression task"),
                              f"{sum(ok)}/{len(ok)} tasks", bool(all(ok)),
                              tolerance="every task (the paper's statement is general)",
                              note="most private = the four largest mean r_Q^n; best R² among them per task: "
                                   + "; ".join(shown),
                              null=Null("no effect of quantization: every quantizer keeps the unquantized R²",
                                        fails=not all(null_ok))))
    return rows


def probe_rows(study: Study) -> list[Row]:
    """Every row of this module for ``study``, in the order chapter 05 records them: the two §5.2.2 claims,
    the b-bit zero level, the unquantized R² per regression task, the Table 1 reading per 1.58b cell and
    the embedder spread per cell."""
    return (section522_more_rows(study) + zero_level_rows() + conditioning_rows(study) + reading_cell_rows(study)
            + spread_rows(study))


def rows_table(rows) -> pd.DataFrame:
    """Ledger rows as a table a chapter shows: where, quantity, paper (or the reference), ours, verdict."""
    if isinstance(rows, (str, bytes)) or not all(isinstance(r, Row) for r in rows):
        raise TypeError("rows must be a list of ledger rows (qlib.repro.ledger.Row)")
    return pd.DataFrame([{"where": r.where, "quantity": r.quantity, "paper / reference": fmt(r.paper_value),
                          "ours": fmt(r.ours), "verdict": r.verdict} for r in rows],
                        columns=["where", "quantity", "paper / reference", "ours", "verdict"])


def probes_text(rows) -> str:
    """One sentence per kind of probe among ``rows`` (:func:`probe_rows`): how many cells of each table
    the embedder spread covers (spread ≥ gap) and how many Table 1's reading brings within tolerance."""
    if isinstance(rows, (str, bytes)) or not all(isinstance(r, Row) for r in rows):
        raise TypeError("rows must be a list of ledger rows (qlib.repro.ledger.Row)")
    parts = []
    for label, key in (("the spread across our embedders is at least the cell's gap to the paper", "embedder spread"),
                       ("Table 1's reading of 1.58b x % brings the cell within tolerance", "under Table 1's reading")):
        counts = []
        for tname in ("Table 3", "Table 4", "Table 5"):
            sel = [r for r in rows if r.kind == "probe" and r.where.startswith(f"{tname} probe") and key in r.quantity]
            if not sel:
                continue
            judged = [r for r in sel if r.passed is not None]
            if not judged:
                counts.append(f"{tname} none judged ({len(sel)} not comparable: {sel[0].note})")
                continue
            counts.append(f"{tname} {sum(bool(r.passed) for r in judged)} of {len(judged)}"
                          + (f" ({len(sel) - len(judged)} not comparable)" if len(judged) < len(sel) else ""))
        if counts:
            parts.append(f"Cells where {label}: " + "; ".join(counts) + ".")
    return " ".join(parts) or "No cell of Tables 3–5 was probed."
