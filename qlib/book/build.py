"""Building the HTML book from the runner's output tree (:mod:`qlib.book.runner`).

:func:`stage` copies the book's static sources next to the executed notebooks (with a table of
contents pruned of globs that match no executed notebook) and writes the pages made from the whole
build: the landing page's account of it (:mod:`qlib.book.provenance`), the claims and findings
(:mod:`qlib.book.findings`), each paper's summary and the execution status page. :func:`build` stages
the tree and runs ``jupyter-book`` on it (warnings are errors); :func:`figure_collisions` names the
figures whose text collides, which fail the build too.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from . import findings
from .check import status_frame
from .gathering import IncompleteResultsWarning, gather
from .glance import restamp
from .provenance import build_costs, provenance_markdown, status_markdown
from .scale import archived_ledger, reduced_scale_ledger, rows_at_largest_scale
from .toc import find_root

__all__ = ["STATIC", "STATIC_DIRS", "stage", "stage_findings", "build", "figure_collisions"]

#: the files and folders of the book root that the staged tree needs beside the executed notebooks
STATIC = ("_config.yml", "_toc.yml", "references.bib")
STATIC_DIRS = ("_static",)


def _prune_toc(node: Any, out: Path) -> Any:
    """Drop glob entries that match no executed notebook (a part run with ``--only`` builds too)."""
    if isinstance(node, list):
        kept = [_prune_toc(c, out) for c in node]
        return [c for c in kept if c is not None]
    if isinstance(node, dict):
        if "glob" in node and not any(out.glob(node["glob"])):
            return None
        new = {}
        for k, v in node.items():
            v = _prune_toc(v, out) if isinstance(v, (list, dict)) else v
            if k in ("sections", "chapters", "parts") and not v:
                continue
            new[k] = v
        return new
    return node


def stage(root: Path, out: Path) -> None:
    """Copy the book's static sources (config, bibliography, Markdown pages and assets below
    ``chapters/``) next to the executed notebooks in ``out``, with a table of contents pruned of
    globs that match no executed notebook."""
    for name in STATIC:
        if name != "_toc.yml":
            shutil.copy2(root / name, out / name)
    for name in STATIC_DIRS:
        if (root / name).is_dir():
            shutil.copytree(root / name, out / name, dirs_exist_ok=True)
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    (out / "_toc.yml").write_text(yaml.safe_dump(_prune_toc(toc, out), sort_keys=False))
    for p in (root / "chapters").rglob("*"):
        if p.is_file() and p.suffix != ".ipynb" and not any(part.startswith(".") or part == "_results" for part in p.parts):
            dest = out / p.relative_to(root)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(p, dest)
    info = out / "chapters" / "intro" / "build-info.md"
    info.parent.mkdir(parents=True, exist_ok=True)
    info.write_text(provenance_markdown(root, out))
    stage_findings(root, out)


def stage_findings(root: Path, out: Path) -> None:
    """The pages made from the whole build: ``findings.csv`` (beside the rows, in ``_results``), the
    landing page's claim counts and findings (``intro/findings-info.md``), each paper's summary
    (``<part>/summary-info.md``) and the execution status page (``appendix/status-info.md``)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IncompleteResultsWarning)
        rows = gather(out / "_results")
    rows = rows[~rows["chapter"].str.startswith("appendix/")] if len(rows) else rows
    profiles = sorted({c["profile"] for c in build_costs(out)}) or ["none"]
    claims, causes, summaries = findings.registry()
    arch = archived_ledger(root)
    largest = rows_at_largest_scale(rows, build_profile=", ".join(profiles), root=root)
    # the evidence a cause may name: the rows judged, this build's rows of every chapter (a probe the archive
    # lacks; never evidence for a paper-scale row: qlib.repro.findings.cause_check) and the archived runs'
    pool = findings.evidence_pool(largest, pd.concat([rows.assign(scale=", ".join(profiles), id=findings.F.row_ids(rows)),
                                                      arch], ignore_index=True) if len(rows) else arch)
    judged = findings.with_causes(largest, causes, archived=arch, pool=pool)
    frame = findings.findings_frame(judged, claims, pool=pool)
    findings.write_findings(frame, out / "_results" / findings.FINDINGS_FILE)
    restamp(out, frame, judged)  # every chapter's glance reads the same claims and causes as the pages below
    (out / "chapters" / "intro" / "findings-info.md").write_text(findings.landing_markdown(frame, judged))
    for paper, part in findings.PAPER_PART.items():
        dest = out / "chapters" / part / "summary-info.md"
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(findings.summary_markdown(paper, frame, judged, summaries))
    dest = out / "chapters" / "appendix" / "status-info.md"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(status_markdown(root, out, status_frame(root)))


def build(*, root: Path | None = None, output_dir: str | os.PathLike | None = None, html_parent: Path | None = None,
          check_figures: bool = True) -> int:
    """Build the HTML book from the executed notebooks (warnings are errors, full rebuild); with
    ``check_figures`` (the default) a figure whose text collides (:func:`figure_collisions`) fails it too.

    The HTML lands in ``<html_parent>/_build/html`` (default: the book root, i.e. ``_build/html``).
    Returns jupyter-book's exit status.
    """
    root = find_root(root)
    out = Path(output_dir or root / "_build" / "book").resolve()
    out.mkdir(parents=True, exist_ok=True)
    stage(root, out)
    parent = Path(html_parent or root).resolve()
    html = parent / "_build" / "html"
    if html.exists():
        shutil.rmtree(html)
    exe = Path(sys.executable).with_name("jupyter-book")
    cmd = [str(exe) if exe.exists() else "jupyter-book", "build", "--all", "-W", "-n", "--keep-going",
           "--path-output", str(parent), str(out)]
    status = subprocess.call(cmd)
    if status == 0:
        data_files(out, html)
    collisions = figure_collisions(out) if check_figures else []
    if collisions:
        print(f"error: {len(collisions)} figure(s) with colliding or too small text (qlib.plotting.style.overlaps):",
              file=sys.stderr)
        for line in collisions:
            print(f"  {line}", file=sys.stderr)
        return status or 1
    return status


def ledger_rows(build_dir: Path):
    """Every chapter's comparison rows of the executed tree (the appendix's own excluded), with a
    ``scale`` column (the build's profile), followed by the rows of the current archived ``paper`` runs
    (``scale`` "paper (archived …)") of the chapters this build did not run at ``paper``, and those of the
    current archived runs at a chapter's own reduced profile (``scale`` "<profile> (archived …)":
    :func:`qlib.book.scale.reduced_scale_ledger`). Every row has its id, and every differing row its
    cause, checked on its evidence rows (``evidence``: their ids) as the findings check it."""
    rows = gather(Path(build_dir) / "_results")
    rows = rows[~rows["chapter"].str.startswith("appendix/")] if len(rows) else rows
    profiles = ", ".join(sorted({c["profile"] for c in build_costs(build_dir)})) or "none"
    both = rows_at_largest_scale(rows, build_profile=profiles, root=Path(build_dir).parent.parent
                                 if (Path(build_dir).parent.parent / "_toc.yml").is_file() else None)
    rows = rows.assign(scale=profiles)
    extra = both[both["scale"].str.startswith("paper (")] if len(both) else both
    root = Path(build_dir).parent.parent if (Path(build_dir).parent.parent / "_toc.yml").is_file() else None
    reduced = reduced_scale_ledger(root)
    if len(reduced):
        reduced = reduced.assign(id=[f"{i}@{s.split(' ')[0]}" for i, s in
                                     zip(findings.F.row_ids(reduced), reduced["scale"].astype(str))])
    rows = rows.assign(id=findings.F.row_ids(rows) if len(rows) else [])
    parts = [f for f in (rows, extra, reduced) if len(f)]
    out = pd.concat(parts, ignore_index=True) if len(parts) > 1 else rows
    if out.empty:
        return out
    judged = findings.with_causes(out.drop(columns=["cause"], errors="ignore"), archived=extra)
    return out.assign(cause=judged["cause"].to_numpy(), evidence=judged["cause_evidence"].to_numpy(),
                      cause_why=judged["cause_why"].to_numpy())


def data_files(out: Path, html: Path) -> None:
    """The data the landing page links, at the HTML's root as on the published site: ``findings.csv`` (one
    row per claim, with its schema) and ``ledger.csv`` (every row, as :func:`ledger_rows`)."""
    found = Path(out) / "_results" / findings.FINDINGS_FILE
    if found.is_file():
        shutil.copy2(found, Path(html) / findings.FINDINGS_FILE)
        shutil.copy2(findings.SCHEMA_FILE, Path(html) / findings.SCHEMA_FILE.name)
    ledger_rows(Path(out)).to_csv(Path(html) / "ledger.csv", index=False)


def figure_collisions(out: Path) -> list[str]:
    """One line per figure of the executed notebooks in ``out`` whose text collides, lies on its data or
    is too small (the checks :mod:`qlib.plotting.style` wrote while each notebook ran): the build fails on
    them, not only the tests."""
    found = []
    for f in sorted((Path(out) / "_results").rglob("figure-checks.json")):
        try:
            recs = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
        for rec in recs if isinstance(recs, list) else []:
            for p in rec.get("overlaps") or []:
                found.append(f"{f.parent.relative_to(Path(out) / '_results').as_posix()} figure {rec.get('figure')}: {p}")
    return found
