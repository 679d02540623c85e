"""The sections of the ledger page (``chapters/appendix/01-comparisons.ipynb``) as Markdown, from the rows
every chapter recorded (:func:`qlib.book.gathering.gather`): the headline per paper, the rows at the
papers' scale and the causes of the differing ones, the errata, the verdicts over seeds, the open rows,
the whole ledger, and the cost of the build. The notebook shows each with one call."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from . import findings, gathering, provenance, render, summary, tables
from .scale import archived_ledger, reduced_scale_ledger, scale_flips

__all__ = ["ledger_rows", "headline", "scale_and_causes", "errata", "seeds", "open_rows", "all_rows", "costs"]


def ledger_rows(results_dir, chapter_id: str) -> pd.DataFrame:
    """Every row the chapters of the build in ``results_dir`` recorded, in book order, without the ledger
    page's own (``chapter_id``)."""
    rows = render.book_order(gathering.gather(results_dir))
    return rows[rows["chapter"] != chapter_id]


def headline(rows: pd.DataFrame, profile: str) -> str:
    """The counts of the build at ``profile``: reproduced / consistent / differing paper items per paper,
    then every kind of row per paper as *passed/total*."""
    byp = summary.verdicts_by_paper(rows)
    n_rep, n_items = int(byp["reproduced"].sum()), int(byp["paper items"].sum())
    return "\n\n".join([
        f"Profile **{profile}**: {len(rows)} rows from {rows['chapter'].nunique()} chapters. "
        f"**{n_rep}** of the {n_items} paper numbers and claims compared reproduce *and* could have failed "
        f"(their null fails the same test); {int(byp['consistent'].sum())} more pass but their null passes "
        f"too (*consistent*, not counted), {int(byp['differs'].sum())} differ. The other {len(rows) - n_items} "
        "rows are checks, recomputations, errata and items not reproduced, and are not counted as reproductions.",
        tables.markdown(byp),
        "Per paper and kind (*passed/total*; for paper numbers and claims *passed* means reproduced):",
        tables.markdown(summary.by_paper_and_kind(rows)),
    ])


def scale_and_causes(rows: pd.DataFrame) -> str:
    """The archived ``paper`` runs per paper and the rows whose verdict changes at that scale, the chapters
    archived at a reduced scale of their own, and this build's differing rows per paper and cause."""
    out = []
    arch = archived_ledger()
    if len(arch):
        out += [f"Current archived `paper` runs: {arch['chapter'].nunique()} chapters, {len(arch)} rows. "
                "Their paper numbers and claims per paper:", tables.markdown(summary.verdicts_by_paper(arch))]
        flips = scale_flips(rows, arch)
        out.append(f"{len(flips)} rows have another verdict at `paper` scale than in this build" + (":" if len(flips) else "."))
        if len(flips):
            out.append(tables.markdown(flips))
    else:
        out.append("The archive holds no current `paper`-scale run.")
    reduced = reduced_scale_ledger()
    if len(reduced):
        out.append("Archived at a chapter's own reduced scale (its `paper` run does not fit a session on this "
                   "machine; shown on its page beside this build, not counted as the paper's scale): "
                   + "; ".join(f"{c}, {len(g)} rows at {g['scale'].iloc[0]}" for c, g in reduced.groupby("chapter")) + ".")
    judged = findings.with_causes(rows, archived=arch)
    out += ["Differing rows of this build per paper and cause:", tables.markdown(findings.causes_by_paper(judged))]
    return "\n\n".join(out)


def errata(rows: pd.DataFrame) -> str:
    """The distinct errata tested, confirmed, and the rows that test them."""
    err = summary.distinct_errata(rows)
    if not len(err):
        return "No erratum rows in this run."
    return "\n\n".join([
        f"{len(err)} distinct errata are tested ({int(err['confirmed'].gt(0).sum())} confirmed), in "
        f"{int(err['rows'].sum())} rows: one erratum is often checked at several points.",
        tables.markdown(err)])


def seeds(rows: pd.DataFrame, results_dir) -> str:
    """Per row, the range of our value over the seeds of ``--replicates`` and how many seeds give the book's
    verdict, the rows that change verdict first; a sentence when the build ran one seed."""
    stab = summary.stability(rows, gathering.replicate_rows(results_dir))
    if not len(stab):
        return ("This build ran with one seed (`--replicates K` runs every notebook with K seeds and shows here how "
                "many give the same verdict).")
    flips = stab[stab["flips"]]
    return "\n\n".join([
        f"The book ran with {stab['seeds'].max()} seeds. {len(flips)} of {len(stab)} rows change verdict with "
        "the seed: a reproduction that depends on the seed is not one, and those rows are listed first.",
        tables.markdown(pd.concat([flips, stab[~stab["flips"]]]))])


def open_rows(rows: pd.DataFrame) -> str:
    """The rows whose verdict is not settled, one dropdown per chapter."""
    return "\n\n".join(["One dropdown per chapter, titled with its counts: open one to see its rows.",
                        render.ledger_groups_markdown(rows[~rows["verdict"].isin(render.SETTLED)], fold=True)])


def all_rows(rows: pd.DataFrame) -> str:
    """The whole ledger in book order, one group per chapter."""
    return "\n\n".join(["One group per chapter, in book order; open a group to see its rows. Each row's *where* "
                        "links to the chapter's own Paper vs ours section.",
                        render.ledger_groups_markdown(rows, fold=True)])


def costs(results_dir) -> str:
    """The wall time of each notebook of the last build (the ledger page not included), from the runner's
    records."""
    table = pd.DataFrame(provenance.build_costs(Path(results_dir).parent))
    if not len(table):
        return "No build record: the notebooks ran outside the runner."
    table["when"] = pd.to_datetime(table["when"], unit="s").dt.strftime("%Y-%m-%d %H:%M")
    return "\n\n".join([f"{len(table)} notebooks, {table['seconds'].sum():.0f} s of execution in all "
                        "(the appendix itself not included).", tables.markdown(table)])
