"""The account of a build: where the rows of the book came from.

:func:`build_costs` reads the stamps the runner left in its output tree (notebook, profile, device,
seconds, when); :func:`provenance_markdown` writes the landing page's account of the build (commit,
profile, device, date, what the ledger counts per paper and kind, each notebook's time) and
:func:`status_markdown` the execution status page (this build's run of each notebook beside its
archived runs). :mod:`qlib.book.build` puts both pages into the staged tree.
"""

from __future__ import annotations

import datetime
import warnings
from pathlib import Path

import pandas as pd

from . import summary, tables
from .gathering import IncompleteResultsWarning, gather
from .jobs import read_stamp
from .machine import git
from .toc import chapter_id, notebooks

__all__ = ["build_costs", "provenance_markdown", "status_markdown"]


def build_costs(out: Path) -> list[dict]:
    """The stamps of the notebooks executed into ``out``: notebook, profile, device, seconds, when."""
    rows = []
    for f in sorted((Path(out) / ".stamps").rglob("*.json")):
        st = read_stamp(f)
        if st:
            nb = f.relative_to(Path(out) / ".stamps").with_suffix(".ipynb").as_posix()
            rows.append({"notebook": nb, "profile": st.get("profile", ""), "device": st.get("device", ""),
                         "seconds": st.get("seconds"), "when": st.get("when")})
    return rows


def _git_commit(root: Path) -> str:
    sha = git(root, "rev-parse", "--short=12", "HEAD")
    dirty = git(root, "status", "--porcelain", "--untracked-files=no")
    return (sha + (" with uncommitted changes" if dirty else "")) if sha else "unknown (not a git checkout)"


def _wall_text(costs: list[dict], total: float) -> str:
    """The wall-clock span of the notebooks' runs (first start to last finish), named as such; when the
    span is longer than the summed time the notebooks ran in several sittings, and the span means nothing."""
    spans = [(c["when"] - c["seconds"], c["when"]) for c in costs if c.get("when") and c.get("seconds") is not None]
    if not spans:
        return "wall-clock time unknown"
    wall = max(e for _, e in spans) - min(s for s, _ in spans)
    if wall > total + 60:
        return "run in several sittings (no single wall-clock time)"
    return f"{wall / 60:.1f} min wall clock from the first start to the last finish"


def provenance_markdown(root: Path, out: Path) -> str:
    """The landing page's account of this build: what the ledger counts, per paper and kind, and
    where the rows came from — commit, profile, device, date, and each notebook's time."""
    costs = build_costs(out)
    with warnings.catch_warnings():  # said below, once
        warnings.simplefilter("ignore", IncompleteResultsWarning)
        rows = gather(out / "_results")
    incomplete = rows.attrs.get("incomplete", {})
    rows = rows[~rows["chapter"].str.startswith("appendix/")] if len(rows) else rows
    lines = ["## This build", ""]
    if not costs:
        return "\n".join(lines + ["No notebook has been executed into this build yet.", ""])
    profiles = sorted({c["profile"] for c in costs})
    devices = sorted({c["device"] for c in costs})
    when = max(c["when"] or 0 for c in costs)
    total = sum(c["seconds"] or 0 for c in costs)
    head = summary.by_paper_and_kind(rows)
    byp = summary.verdicts_by_paper(rows)
    n_rep, n_items = int(byp["reproduced"].sum()), int(byp["paper items"].sum())
    lines += [
        f"Commit `{_git_commit(root)}`, profile **{', '.join(profiles)}**, device {', '.join(devices)}, "
        f"finished {datetime.datetime.fromtimestamp(when, datetime.UTC):%Y-%m-%d %H:%M} UTC; "
        f"{len(costs)} notebooks: {total / 60:.1f} min of notebook time summed, {_wall_text(costs, total)}.",
        "",
        f"**{n_rep}** of the {n_items} paper numbers and claims compared reproduce and could have failed "
        f"(a stated null — no quantization effect, chance, the unquantized model… — fails the same test); "
        f"{int(byp['consistent'].sum())} more pass but so would their null (*consistent*, not counted), "
        f"{int(byp['differs'].sum())} differ. {len(rows) - n_items} more rows are checks, recomputations, errata "
        "and items not reproduced. Per paper (the [ledger](../appendix/01-comparisons.ipynb) has every row):",
        "",
        tables.markdown(byp),
        "",
        "Per paper and kind (*passed/total*):",
        "",
        tables.markdown(head),
        "",
        *([f"Left out of the counts: the rows of {len(incomplete)} notebook(s) whose run did not finish — "
           + "; ".join(f"`{c}` ({why})" for c, why in sorted(incomplete.items())) + ". Re-run them.", ""]
          if incomplete else []),
        "```{dropdown} Time per notebook",
        tables.markdown(pd.DataFrame(costs)[["notebook", "seconds", "device"]]),
        "```",
        "",
    ]
    return "\n".join(lines)


def status_markdown(root: Path, out: Path, arch) -> str:
    """The execution status page: per notebook, this build's run (profile, device, time, date) and
    every archived run (profile, current or stale and what changed, device, time, date, commit)."""
    costs = {c["notebook"]: c for c in build_costs(out)}
    recs = []
    for nb in notebooks(root):
        cid = chapter_id(nb)
        c = costs.get(nb)
        recs.append({"notebook": cid, "run": "this build" if c else "not run in this build",
                     "profile": c["profile"] if c else "", "device": c["device"] if c else "",
                     "seconds": round(c["seconds"], 1) if c and c.get("seconds") is not None else "",
                     "date": (datetime.datetime.fromtimestamp(c["when"], datetime.UTC).strftime("%Y-%m-%d")
                              if c and c.get("when") else ""), "state": "", "commit": ""})
        for _, a in arch[arch["chapter"] == cid].iterrows() if len(arch) else []:
            recs.append({"notebook": cid, "run": "archived", "profile": a["profile"], "device": a["device"],
                         "seconds": a["wall_s"], "date": str(a["finished"])[:10],
                         "state": a["state"] + (f": {a['changes']}" if a["changes"] else ""), "commit": a["commit"]})
    def n(state: str) -> int:
        return int((arch["state"] == state).sum()) if len(arch) else 0

    lines = [f"{sum(1 for r in recs if r['run'] == 'this build')} notebooks ran in this build; "
             f"{len(arch)} archived runs ({n('current')} current, {n('stale')} stale"
             + (f", {n('dirty')} run from uncommitted code" if n("dirty") else "") + "). A stale archived run, "
             "or one run from uncommitted code, is shown in its chapter, marked, and not counted in the findings.",
             "", tables.markdown(pd.DataFrame(recs)), ""]
    if len(arch):
        mach = arch[["profile", "chapter", "cpu", "threads", "device"]]
        lines += ["```{dropdown} The machines of the archived runs", tables.markdown(mach), "```", ""]
    return "\n".join(lines)
