"""A chapter's *Result at a glance*: the block the runner puts under an executed notebook's title.

It says, from the rows the notebook recorded, how many rows of each verdict it compared with the paper,
the papers' claims those rows test (judged at the largest scale the book has: :mod:`qlib.book.findings`,
:mod:`qlib.book.scale`), the rows farthest from the paper with their causes, and the run's scale
against the ``paper`` profile's. :func:`qlib.book.jobs.finish` inserts it when it lands the notebook.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from qlib.repro.ledger import DIFFERING, VERDICTS

from . import findings
from .profiles import COMMON, ProfileError, cell_parameters, load
from .render import section_label
from .scale import archived_ledger, rows_at_largest_scale
from .schema import FILENAME
from .toc import chapter_id

__all__ = ["param_text", "scale_against_paper", "glance_markdown", "findings_block", "restamp", "GLANCE_ID",
           "FINDINGS_START", "FINDINGS_END"]

#: the glance cell's id, and the markers around its findings (claims and differences), which the book's
#: stage rewrites from the whole book's findings table (:func:`restamp`): one verdict everywhere
GLANCE_ID = "qlib-at-a-glance"
FINDINGS_START, FINDINGS_END = "<!-- qlib-findings -->", "<!-- /qlib-findings -->"

#: parameters that never describe an experiment's scale (the glance's scale line leaves them out)
_NOT_SCALE = ("threads", "device", "seed")


def param_text(v: Any) -> str:
    """A parameter's value as the page shows it: its ``repr``, cut to 60 characters."""
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def _book_root(src: Path) -> Path | None:
    for d in Path(src).resolve().parents:
        if (d / "_toc.yml").is_file() and (d / "profiles").is_dir():
            return d
    return None


def scale_against_paper(nb: str, src: Path, params: dict) -> list[tuple[str, Any, Any]]:
    """``(parameter, value that ran, value of the `paper` profile)`` for every parameter of the
    notebook ``nb`` (its file ``src``, run with ``params``; the runner's own and
    ``threads``/``device``/``seed`` aside) whose run value differs from the ``paper`` profile's — the
    run's scale against the papers'. Empty when the run was at the ``paper`` scale, or when the book
    has no ``paper`` profile entry for the notebook."""
    root = _book_root(src)
    if root is None:
        return []
    try:
        paper = load(root, "paper").get(nb)
        declared = cell_parameters(src)
    except (ProfileError, OSError, ValueError):
        return []
    if paper is None:
        return []
    ran = {**declared, **{k: v for k, v in params.items() if k not in COMMON}}
    at_paper = {**declared, **paper}
    return [(k, ran[k], at_paper[k]) for k in declared
            if k not in COMMON and k not in _NOT_SCALE and ran.get(k) != at_paper.get(k)]


def _claims(rows: pd.DataFrame, cid: str, src: Path, profile: str) -> tuple[pd.DataFrame, pd.DataFrame | str]:
    """The chapter's rows with their causes, and the findings frame of the claims they test (the book's
    stage replaces both with the whole book's: :func:`restamp`); when the findings cannot be judged (a
    registry, profile or archive problem), the rows without causes and a sentence saying why: a finished
    run lands all the same."""
    try:
        claims, causes, _ = findings.registry()
        root = _book_root(src)
        arch = archived_ledger(root) if root is not None else None
        judged = findings.with_causes(rows_at_largest_scale(rows.assign(chapter=cid), build_profile=profile, root=root),
                                      causes, archived=arch)
        frame = findings.findings_frame(judged, claims, pool=findings.evidence_pool(judged, arch))
        return judged[judged["chapter"] == cid], frame
    except (ValueError, KeyError, OSError, ImportError) as exc:  # reported on the page, never hidden
        first = (f"{type(exc).__name__}: {exc}".strip().splitlines() or [type(exc).__name__])[0][:300]
        return rows.assign(cause=""), f"The claims could not be judged in this build: {first}."


def findings_block(cid: str, frame: pd.DataFrame | str, judged: pd.DataFrame, max_differences: int = 3) -> str:
    """The glance's findings for chapter ``cid``: the claims its rows test, with their verdicts from
    ``frame`` (:func:`qlib.book.findings.findings_frame`, or a sentence saying why there is none), and its
    ``max_differences`` rows farthest from the paper with their causes, from ``judged``."""
    lines = []
    claims_md = frame if isinstance(frame, str) else findings.chapter_claims_markdown(cid, frame)
    if claims_md:
        lines += [claims_md.rstrip()]
    rows = judged[judged["chapter"] == cid] if len(judged) and "chapter" in judged else judged
    diff = rows[rows["verdict"].isin(DIFFERING)] if len(rows) else rows
    if len(diff):
        lines.append("")
        lines.append(f"Where ours differs from the paper ({len(diff)} rows"
                     + (f"; the {max_differences} farthest from the paper" if len(diff) > max_differences else "")
                     + "; causes: " + ", ".join(f"{n} {c}" for c, n in findings.cause_counts(diff).items() if n)
                     + "):")
        lines.append("")
        for _, r in findings.largest_differences(diff, max_differences).iterrows():
            lines.append(f"* {findings.difference_line(r)}")
    return "\n".join(lines)


def restamp(book: Path, frame: pd.DataFrame, judged: pd.DataFrame) -> list[str]:
    """Rewrite the findings of every executed notebook's glance under ``book`` (the executed tree) from the
    whole book's ``frame`` and ``judged`` rows, so that a claim reads the same on every page; returns the
    chapters rewritten."""
    done = []
    for nb_path in sorted(Path(book).glob("chapters/**/*.ipynb")):
        nb = json.loads(nb_path.read_text())
        cell = next((c for c in nb.get("cells", []) if c.get("id") == GLANCE_ID), None)
        if cell is None:
            continue
        src = "".join(cell["source"]) if isinstance(cell["source"], list) else str(cell["source"])
        a, b = src.find(FINDINGS_START), src.find(FINDINGS_END)
        if a < 0 or b < a:
            continue
        cid = chapter_id(nb_path.relative_to(book / "chapters").as_posix())
        text = src[:a + len(FINDINGS_START)] + "\n" + findings_block(cid, frame, judged) + "\n" + src[b:]
        if text != src:
            cell["source"] = text.splitlines(keepends=True)
            nb_path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
        done.append(cid)
    return done


def glance_markdown(*, nb: str, src: Path, params: dict, results: Path, max_differences: int = 3) -> str:
    """The *result at a glance* of notebook ``nb`` (its file ``src``, run with ``params``, its results in
    ``results``): the verdict counts of the rows it recorded, up to ``max_differences`` items that differ
    from the paper (quantity, paper, ours) with a link to the chapter's ``Paper vs ours`` section, and
    the run's scale against the ``paper`` profile. Empty for a notebook that recorded no rows (the
    appendix)."""
    rows_file = Path(results) / FILENAME
    if not rows_file.is_file():
        return ""
    try:
        rows = pd.read_csv(rows_file, dtype=str, keep_default_na=False)
    except (OSError, ValueError, pd.errors.EmptyDataError):
        return ""
    if rows.empty or "verdict" not in rows:
        return ""
    cid = chapter_id(nb)
    try:
        label = section_label(cid)
    except ValueError:
        label = None
    src_text = src.read_text() if src.is_file() else ""
    link = f"{{ref}}`Paper vs ours <{label}>`" if label and f"({label})=" in src_text else "Paper vs ours"
    probes = rows["kind"].astype(str).eq("probe") if "kind" in rows else pd.Series(False, index=rows.index)
    tally = rows.loc[~probes, "verdict"].value_counts()
    counts = ", ".join(f"**{int(tally[v])}** {v}" for v in VERDICTS if v in tally)
    counts += "".join(f", **{int(n)}** {v}" for v, n in tally.items() if v not in VERDICTS)
    extra = f"; and **{int(probes.sum())}** probes, variants of ours that are evidence, not comparisons" \
        if probes.any() else ""
    lines = [f"{int((~probes).sum())} rows compared with the paper: {counts}{extra} (every row in {link} below)."]
    prof = params.get("profile", "?")
    judged, frame = _claims(rows, cid, src, str(prof))
    lines += ["", FINDINGS_START, findings_block(cid, frame, judged, max_differences), FINDINGS_END]
    scale = scale_against_paper(nb, src, params)
    lines.append("")
    if scale:
        shown = "; ".join(f"`{k}` {param_text(ran)} (paper profile: {param_text(pap)})" for k, ran, pap in scale[:6])
        more = f"; {len(scale) - 6} more in *What ran*" if len(scale) > 6 else ""
        lines.append(f"Scale: profile `{prof}` — {shown}{more}.")
    else:
        lines.append(f"Scale: profile `{prof}`, every parameter at the `paper` profile's value.")
    body = "\n".join(lines)
    return ":::{admonition} Result at a glance\n:class: tip\n" + body + "\n:::\n"
