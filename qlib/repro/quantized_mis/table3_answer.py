"""The first screen of chapter 06 (the Table 3 investigation): its conclusion and its figure, both computed.

* :func:`conclusion` — which procedures of :mod:`.table3_combos` pass the pattern test, the best one by the
  rule fixed there, whether it is the paper's likely procedure, and why Table 3 does not reproduce, in
  Markdown, every number from the runs (the chapter displays it right after its introduction);
* :func:`figure` — the column means of every procedure against the pattern test's bands, the paper's
  Table 3 on the same tasks first.
"""

from __future__ import annotations

from typing import Mapping

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from qlib import quantizers
from qlib.plotting import style

from . import table3_combos as C
from . import table3_probe as tp
from .molecular import QUANTIZERS
from .paper import PAPER_TABLE3

__all__ = ["conclusion", "figure", "verdict_first", "VERDICT_COLUMNS"]

#: the columns that decide a row of the chapter's tables, shown right after its name (on screen at 1280 px)
VERDICT_COLUMNS = ("verdict", "passes", "tasks passed")


def _labels(labels) -> dict:
    if labels is not None and not isinstance(labels, Mapping):
        raise TypeError(f"labels must be a mapping quantizer -> label or None, got {type(labels).__name__}")
    return dict(quantizers.labels() if labels is None else labels)


def _paper(tasks):
    """The paper's Table 3 column means on ``tasks`` (None: none of them is in it)."""
    tasks = [t for t in tasks if t in PAPER_TABLE3]
    return tp.pattern_test(tp.paper_means(tasks)).iloc[0] if tasks else None


def _n(k: int, word: str) -> str:
    return f"{k} {word}{'' if k == 1 else 's'}"


def _in_band(q: str, v: float) -> bool:
    lo, hi = tp.SPARSE_BAND if q in tp.SPARSE else tp.BITS_BAND
    return bool(lo <= v <= hi)


def conclusion(combos: C.RunResult, best_run: C.RunResult | None = None, *, labels: Mapping[str, str] | None = None) -> str:
    """The chapter's conclusion in Markdown, every number from ``combos`` (:func:`combine`'s result) and
    ``best_run`` (:func:`run`'s result of :func:`best` on every task and embedder; None: not run):
    which procedures pass, the best, whether it is the paper's likely procedure, and why Table 3 does not
    reproduce. ``labels``: quantizer → the paper's label (None: :func:`qlib.quantizers.labels`)."""
    if not isinstance(combos, C.RunResult):
        raise TypeError(f"combos must be combine()'s RunResult, got {type(combos).__name__}")
    lab = _labels(labels)
    df = C.means(combos)
    tab, hp = C.combination_table(df), combos.helpers if combos.helpers is not None else C.helpers(df)
    tasks, b = sorted(df.task.unique()), C.best(tab)
    paper = _paper(tasks)

    def cols(r):
        return ", ".join(f"{lab.get(q, q)} {r[q]:.2f}" for q in tp.SPARSE) + f"; {lab.get('bits2', 'bits2')}–" \
            f"{lab.get('bits5', 'bits5')} {min(r[q] for q in tp.BITS):.2f}–{max(r[q] for q in tp.BITS):.2f}"

    tried = [v for v in tab.index if v != "default"]
    passing = [v for v in tried if tab.loc[v, "passes"]]
    trip = [v for v in tried if len(C.procedure_changes(v)) == 3]
    out = [f"**Which procedures pass.** On {_n(len(tasks), 'task')} of Table 3 ({', '.join(tasks)}; "
           f"{C.scale_text(combos)}), {len(passing)} of the {len(tried)} procedures tried — the six single changes, "
           f"their {sum(len(C.procedure_changes(v)) == 2 for v in tried)} pairs"
           + (f" and the triple `{trip[0]}`" if trip else " (fewer than three single changes help: no triple)")
           + f" — {'passes' if len(passing) == 1 else 'pass'} the pattern test fixed in advance"
           + (": " + ", ".join(f"`{v}`" for v in passing) if passing else "") + "."]
    moved = [f"`{r.hypothesis}` moves {', '.join(lab.get(q, q) for q in r.moved.split(', '))}" for r in hp.itertuples()
             if r.helps]
    none = [f"`{r.hypothesis}`" for r in hp.itertuples() if not r.helps]
    out.append("**Single changes** (a change helps when it moves a column mean into the paper's band that the default "
               "leaves outside): " + ("; ".join(moved) if moved else "none helps") + (f"; {', '.join(none)} move{'s' if len(none) == 1 else ''} "
                                                                                     "no column into it" if none else "") + ".")
    ref = f" against the paper's {cols(paper)} on the same tasks" if paper is not None else ""
    out.append(f"**The best combination** by the rule fixed in advance (the most tasks passing the test, then the "
               f"column means closest to the paper's) is `{b}` — {C.describe(b)} — which passes on "
               f"{int(tab.loc[b, 'tasks_passed'])} of {_n(len(tasks), 'task')}, column means {cols(tab.loc[b])}{ref}; "
               f"our default gives {cols(tab.loc['default'])}.")
    outside = [q for q in QUANTIZERS if not _in_band(q, tab.loc["default", q])]
    reached = sorted({q for r in hp.itertuples() if r.helps for q in r.moved.split(", ")}, key=QUANTIZERS.index)
    why = (f"Under our default {len(outside)} of the eight column means lie outside the paper's band"
           + (f" ({', '.join(lab.get(q, q) for q in outside)})" if outside else "")
           + f"; single changes bring {len(reached)} of them into it"
           + (f" ({', '.join(lab.get(q, q) for q in reached)})" if reached else "") + ". ")
    if best_run is None:
        out.append(f"**Why Table 3 does not reproduce.** {why}The best combination was not run on every task and "
                   "embedder at this profile, so no procedure is named the paper's and the default stays.")
        return "\n\n".join(out)
    L = C.likely(best_run)
    (kt, nt), (ke, ne), (kp, npair) = L["tasks"], L["embedders"], L["pairs"]
    out.append(f"**On every binary task of Table 3** ({C.scale_text(best_run)}), `{L['procedure']}` passes the test on "
               f"{kt} of {_n(nt, 'task')}, {ke} of {_n(ne, 'embedder')} and {kp} of {npair} task–embedder pairs: "
               + ("it passes on most tasks and embedders, so it is the paper's likely procedure."
                  if L["likely"] else "not on most tasks and embedders, so no procedure is named the paper's and "
                                      "the default (AUROC of the logits, one scale per tensor) stays."))
    if L["likely"]:
        out.append(f"**Why Table 3 does not reproduce.** {why}Our default differs from the procedure under which the "
                   f"paper's pattern appears in these steps: {C.describe(L['procedure'])}.")
    else:
        out.append(f"**Why Table 3 does not reproduce.** {why}No procedure tried — the six steps the paper leaves open "
                   f"that we could change, alone{', in pairs and the triple' if trip else ' and in pairs'} — reproduces "
                   "the pattern on most tasks and embedders, so the difference is not explained by them; it stays with "
                   "what the paper does not state beyond these steps, and with its embedders, which are not available "
                   "offline.")
    return "\n\n".join(out)


def figure(combos: C.RunResult, *, labels: Mapping[str, str] | None = None) -> Figure:
    """Column means of the relative AUROC per procedure of ``combos`` (:func:`combine`'s result; the paper's
    Table 3 on the same tasks first) against the bands of the pattern test: left Sign and 1.58b (band
    0.84–0.96), right 2–5 bits (0.97–1.01); the best procedure's name in bold."""
    if not isinstance(combos, C.RunResult):
        raise TypeError(f"combos must be combine()'s RunResult, got {type(combos).__name__}")
    lab = _labels(labels)
    df = C.means(combos)
    tab = C.combination_table(df)
    b = C.best(tab)
    paper = _paper(sorted(df.task.unique()))
    rows = ([("paper (Table 3)", paper)] if paper is not None else []) + [(v, tab.loc[v]) for v in tab.index]
    y = np.arange(len(rows))[::-1]
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    fig, axes = plt.subplots(1, 2, figsize=(style.COLUMN_IN, 0.22 * len(rows) + 1.6), sharey=True,
                             layout="constrained")
    for ax, cols_, band, title in ((axes[0], tp.SPARSE, tp.SPARSE_BAND, "Sign and 1.58b"),
                                   (axes[1], tp.BITS, tp.BITS_BAND, "2–5 bits")):
        ax.axvspan(*band, color="0.85", zorder=0, label="the pattern test's band")
        xs = [float(r[q]) for _, r in rows for q in cols_]
        for q in cols_:
            k = QUANTIZERS.index(q)
            ax.scatter([float(r[q]) for _, r in rows], y, s=18, marker="osD^vP*X"[k], color=colors[k % len(colors)],
                       label=lab.get(q, q), zorder=2)
        ax.set_xlim(min(xs + [band[0]]) - 0.01, max(xs + [band[1]]) + 0.01)
        ax.set_title(title, fontsize=9)
    fig.supxlabel("relative AUROC, column mean over the tasks")
    axes[0].set_yticks(y, [n for n, _ in rows], fontsize=8)
    for t in axes[0].get_yticklabels():
        t.set_fontweight("bold" if t.get_text() == b else "normal")
    style.legend_outside(fig)
    return fig


def verdict_first(df, labels: Mapping[str, str] | None = None):
    """``df`` for display: the quantizer columns under the paper's labels (``labels``; None:
    :func:`qlib.quantizers.labels`) and the columns that decide a row (:data:`VERDICT_COLUMNS`) right after
    its first column, so that the verdict stays on screen however many columns follow."""
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"df must be a pandas DataFrame, got {type(df).__name__}")
    d = df.rename(columns=_labels(labels))
    cols = list(d.columns)
    decide = [c for c in VERDICT_COLUMNS if c in cols]
    rest = [c for c in cols if c not in decide]
    return d[rest[:1] + decide + rest[1:]]
