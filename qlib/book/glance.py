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

from qlib.repro.ledger import DIFFERING, VERDICTS, check_ledger

from . import evidence, findings
from .profiles import COMMON, ProfileError, cell_parameters, load
from .render import section_label
from .scale import archived_ledger, rows_at_largest_scale
from .schema import FILENAME
from .tables import md_math
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


#: the order a glance lists claims in: what does not hold first
_ORDER = ("refuted", "not reproduced", "holds in part", "untested", "consistent", "holds")


def _claim_words(c, r) -> str:
    """A claim in our words for one line: its ``short`` text, else its headline or quote cut to 90 characters."""
    text = (getattr(c, "short", "") or getattr(c, "headline", "") or str(r["quote"])).strip()
    return text if len(text) <= 90 else text[:87].rstrip() + "…"


def claims_table(cid: str, frame: pd.DataFrame, judged: pd.DataFrame) -> str:
    """The claims chapter ``cid``'s rows test, one line each (what does not hold first): the verdict, the
    claim's id and its words, the rows that pass out of those judged, linked to the first deciding row of
    this page's *Paper vs ours* table (``#row-k``). Empty when its rows test no claim."""
    if not isinstance(cid, str) or not cid.strip():
        raise (ValueError if isinstance(cid, str) else TypeError)(f"cid must be a chapter id (a non-empty string), "
                                                                  f"got {cid!r}")
    check_ledger(frame, "frame", ("paper", "id", "quote", "verdict", "scale", "passed", "judged", "chapters"),
                 verdicts=findings.F.CLAIM_VERDICTS, what="claims")
    check_ledger(judged, "judged", ("chapter", "verdict"))
    if frame.empty:
        return ""
    sub = frame[frame["chapters"].astype(str).str.split("; ").apply(lambda cs: cid in cs)]
    if sub.empty:
        return ""
    sub = sub.assign(_o=sub["verdict"].map({v: i for i, v in enumerate(_ORDER)}).fillna(len(_ORDER)))
    claims = frame.attrs.get("claims", {})
    lines = ["| verdict | claim of the paper | passing |", "|---|---|---|"]
    for _, r in sub.sort_values("_o", kind="stable").iterrows():
        c = claims.get((r["paper"], r["id"]))
        tally = f"{r['passed']} of {r['judged']}" if str(r["judged"]) not in ("", "0") else "—"
        ids = [i for i in evidence.deciding_ids(c, judged) if i.startswith(cid + "#")]
        cell = f'<a href="{evidence.href(ids[0], cid)}">{tally}</a>' if ids else tally
        words = md_math(_claim_words(c, r)).replace("|", r"\|")
        lines.append(f"| **{r['verdict']}** | {r['id']} · {words} | {cell} |")
    scales = sorted({s for v in sub["scale"].astype(str) for s in v.split("; ") if s})
    if scales:
        lines += ["", "Judged at: " + "; ".join(f"`{s}`" if " " not in s else s for s in scales) + "."]
    return "\n".join(lines) + "\n"


def findings_block(cid: str, frame: pd.DataFrame | str, judged: pd.DataFrame, max_differences: int = 3) -> str:
    """The glance's findings for chapter ``cid``: the claims its rows test, one line each with its verdict
    from ``frame`` (:func:`qlib.book.findings.findings_frame`, or a sentence saying why there is none) and a
    link to its deciding row, then its ``max_differences`` rows farthest from the paper with their causes,
    from ``judged``, each cause named once."""
    lines = []
    claims_md = frame if isinstance(frame, str) else claims_table(cid, frame, judged)
    if claims_md:
        lines += [claims_md.rstrip()]
    rows = judged[judged["chapter"] == cid] if len(judged) and "chapter" in judged else judged
    diff = rows[rows["verdict"].isin(DIFFERING)] if len(rows) else rows
    if len(diff):
        far = findings.largest_differences(diff, max_differences)
        shown = "; ".join(findings.difference_line(r) for _, r in far.iterrows())
        causes = ", ".join(f"{n} *{c}*" for c, n in findings.cause_counts(diff).items() if n)
        lines += ["", f"{len(diff)} rows differ from the paper (causes: {causes}); "
                      + ("the farthest: " if len(diff) > max_differences else "") + shown + "."]
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
    extra = f"; **{int(probes.sum())}** probes (our variants: evidence, not comparisons)" \
        if probes.any() else ""
    prof = params.get("profile", "?")
    judged, frame = _claims(rows, cid, src, str(prof))
    lines = [FINDINGS_START, findings_block(cid, frame, judged, max_differences), FINDINGS_END, ""]
    scale = scale_against_paper(nb, src, params)
    if scale:
        shown = ", ".join(f"`{k}` {param_text(ran)}" for k, ran, _ in scale[:3])
        more = f" and {len(scale) - 3} more" if len(scale) > 3 else ""
        ran = f"This page's run: profile `{prof}`, below the paper's scale in {shown}{more} (*What ran*)."
    else:
        ran = f"This page's run: profile `{prof}`, every parameter at the `paper` profile's value."
    lines.append(f"{ran} Its {int((~probes).sum())} rows: {counts}{extra} (all in {link}).")
    body = "\n".join(lines)
    return ":::{admonition} Result at a glance\n:class: tip qlib-glance\n" + body + "\n:::\n"
