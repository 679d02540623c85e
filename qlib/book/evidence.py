"""Links from a claim to the ledger rows that decide it (issue 53: every claim one click from its evidence).

A ledger row's id is ``<chapter>#<k>`` (:func:`qlib.repro.findings.row_ids`; ``@paper`` for an archived
run's row); a chapter's *Paper vs ours* table gives its row ``k`` the anchor ``row-k``
(:func:`qlib.book.render.paper_vs_ours_markdown`), and the archived run's row ``k`` (id ``…@<profile>``, numbered
in its own run) the anchor ``row-k-<profile>``, in its *ours at scale* cell or, for a row this build lacks, in
the table of the archived run's own rows below; so ``<chapter>.html#…`` opens the row whether the claim was
judged on this build's run or on the archived one.
"""

from __future__ import annotations

import posixpath

import numpy as np
import pandas as pd

from qlib.repro import findings as F
from qlib.repro.ledger import DIFFERING

__all__ = ["deciding_ids", "anchor", "href", "links_html"]


def deciding_ids(claim, judged: pd.DataFrame) -> list[str]:
    """The ids of the rows of ``judged`` that decide ``claim`` (its differing rows first); none when the
    claim is None or ``judged`` has no ``id`` column."""
    if claim is None or judged is None or judged.empty or "id" not in judged:
        return []
    sel = F.claim_rows(claim, judged)
    if sel.empty:
        return []
    sel = sel.assign(_settled=~sel["verdict"].isin(DIFFERING)).sort_values("_settled", kind="stable")
    return [str(i) for i in sel["id"]]


def anchor_id(k, tag: str | None = None) -> str:
    """The HTML id of row ``k`` of a chapter's *Paper vs ours* table: ``row-k`` for this build's run,
    ``row-k-<tag>`` for row ``k`` of the archived run ``tag`` (one format for the anchors
    :mod:`qlib.book.render` writes and the links :func:`href` makes)."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be a positive integer (a row's number in its run), got {k!r}")
    if tag is not None and (not isinstance(tag, str) or not tag or any(c.isspace() or c in "#@\"'<>" for c in tag)):
        raise ValueError(f"tag must be None or a profile name without spaces, '#', '@' or quotes, got {tag!r}")
    return f"row-{int(k)}" + (f"-{tag}" if tag else "")


def anchor(row_id: str) -> tuple[str, str]:
    """``(chapter, anchor)`` of a row id: ``row-k`` for this build's row ``<chapter>#<k>``, ``row-k-<tag>``
    for an archived run's ``<chapter>#<k>@<tag>`` (the archived rows are numbered in their own run, which
    may have rows this build lacks; :func:`qlib.book.render.paper_vs_ours_markdown` anchors both)."""
    if not isinstance(row_id, str) or "#" not in row_id:
        raise ValueError(f"row_id must read '<chapter>#<k>' (optionally '@<tag>'), got {row_id!r}")
    chapter, _, k = row_id.partition("#")
    k, _, tag = k.partition("@")
    if not k.isdigit() or int(k) < 1:
        raise ValueError(f"row_id must read '<chapter>#<k>' with k a positive integer, got {row_id!r}")
    if "@" in row_id and not tag:
        raise ValueError(f"row_id's tag after '@' is empty: {row_id!r}")
    return chapter, anchor_id(int(k), tag or None)


def href(row_id: str, from_page: str) -> str:
    """The relative link from the page ``from_page`` (``<part>/<name>``, below ``chapters/``) to row ``row_id``
    on its chapter's page (``#row-k`` alone on the chapter's own page)."""
    chapter, a = anchor(row_id)
    if chapter == from_page:
        return f"#{a}"
    return posixpath.relpath(f"{chapter}.html", posixpath.dirname(from_page) or ".") + f"#{a}"


def links_html(ids: list[str], from_page: str, *, most: int = 3) -> str:
    """Raw-HTML links to the first ``most`` rows of ``ids`` (one per chapter), each labelled with its chapter's
    number and the row (``05 row 12``), for a MyST page; empty when there are none."""
    seen, out = set(), []
    for i in ids:
        chapter, a = anchor(i)
        if chapter in seen:
            continue
        seen.add(chapter)
        k = a.split("-")[1]
        label = f"{chapter.split('/')[-1][:2]} row {k}" + (f" ({i.partition('@')[2]})" if "@" in i else "")
        out.append(f'<a href="{href(i, from_page)}">{label}</a>')
        if len(out) >= most:
            break
    return ", ".join(out)
