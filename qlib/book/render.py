"""The ledger rows on the page: a chapter's ``Paper vs ours`` section, the appendix's ledger tables, a
notebook's coloured table, and the helpers that print a row's values (numbers to the paper's printed
precision, plain-text maths typeset).

Every function takes rows as :mod:`qlib.book.compare` writes them (the columns of
:data:`qlib.book.schema.COLUMNS`) and returns MyST Markdown or a pandas ``Styler``; none reads a file.
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

from qlib.repro.ledger import CONSISTENT, PASSING, VERDICTS

from .evidence import anchor_id
from .tables import md_math

__all__ = ["SETTLED", "PART_ORDER", "section_label", "round_like", "prose_math", "paper_vs_ours_markdown",
           "ledger_markdown", "ledger_groups_markdown", "ledger_table", "style_table", "book_order"]

#: verdicts that need no reader's attention (those that pass, but a ``consistent`` row, whose null passes
#: too): folded away in a chapter's "Paper vs ours" section
SETTLED = tuple(v for v in PASSING if v != CONSISTENT)
#: the parts in book order
PART_ORDER = ("intro", "quantized-mis", "mia-limits", "attacks", "eden", "rqp-sgd", "appendix")


def section_label(chapter_id: str) -> str:
    """The MyST label of a chapter's ``## Paper vs ours`` section: ``paper-vs-ours-<part>-<NN>``
    (``eden/01-estimator-vnmse`` → ``paper-vs-ours-eden-01``). Each chapter puts
    ``(paper-vs-ours-<part>-<NN>)=`` above the heading; the ledger links every row to it."""
    if not isinstance(chapter_id, str) or chapter_id.count("/") != 1:
        raise ValueError(f"chapter_id must look like '<part>/<NN-topic>', got {chapter_id!r}")
    part, stem = chapter_id.split("/")
    num = stem.split("-", 1)[0]
    return "paper-vs-ours-" + re.sub(r"[^a-z0-9]+", "-", f"{part}-{num}".lower()).strip("-")


def _md_cell(v) -> str:
    s = "—" if v is None or (isinstance(v, float) and v != v) or str(v).strip() in ("", "nan") else str(v)
    return s.replace("|", r"\|").replace("\n", " ")


def _text_cell(v) -> str:
    """A value cell: a number as it is, text with its plain-text maths typeset (``r_Q^n`` → $r_{Q}^{n}$)."""
    s = "" if v is None or (isinstance(v, float) and v != v) else str(v)
    return _md_cell(s if _PLAIN_NUMBER.match(s.strip()) else md_math(s)) if s.strip() not in ("", "nan") else _md_cell(v)


def _kind_suffix(r) -> str:
    """" · <kind>" after the verdict (in words: "paper number"), unless the verdict already says it."""
    kind = str(r["kind"]).replace("-", " ")
    return "" if kind == str(r["verdict"]) else f" · {_md_cell(kind)}"


_PLAIN_NUMBER = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")


def round_like(ours: Any, paper: Any) -> str:
    """``ours`` printed to the precision ``paper`` was printed with, plus one digit (0.994691 against
    a printed 0.99 reads 0.995): decimals + 1 for a fixed-point paper value, significant digits + 1 for
    one in scientific notation. Anything that is not a plain number on both sides is left as it is."""
    o, p = str(ours).strip(), str(paper).strip()
    if not (_PLAIN_NUMBER.match(o) and _PLAIN_NUMBER.match(p)):
        return str(ours)
    x = float(o)
    if "e" in p.lower():
        mant = p.lower().split("e")[0].lstrip("+-").replace(".", "").lstrip("0")
        return f"{x:.{max(len(mant), 1)}e}"
    dec = len(p.split(".")[1]) if "." in p else 0
    if dec == 0 and "." not in o and "e" not in o.lower():
        return o  # integers stay integers
    return f"{x:.{dec + 1}f}"


def prose_math(text: Any) -> str:
    """``text`` with its plain-text maths typeset for the page (see :func:`qlib.book.tables.md_math`)."""
    return md_math(str(text))


def _null_cell(r) -> str:
    """"<null> (fails)" / "<null> (passes)" / "—" for a row's null and its outcome."""
    null, nf = str(r.get("null", "") or ""), str(r.get("null_fails", "") or "")
    if not null.strip():
        return "—"
    return f"{_md_cell(prose_math(null))} ({'fails' if nf == 'True' else 'passes' if nf == 'False' else '?'})"


def _letters():
    i = 0
    while True:
        yield chr(ord("A") + i % 26) + ("" if i < 26 else str(i // 26))
        i += 1


def paper_vs_ours_markdown(df: pd.DataFrame, *, shared_note_min: int = 3, fold_open_over: int = 30) -> str:
    """One chapter's ``Paper vs ours`` section body, as MyST Markdown: a sentence with the counts, the
    notes that several rows share stated once above the table (the rows say "note A"), the rows that
    need attention (differs, not comparable, not reproduced, …) as quantity | verdict | paper | ours |
    null | note, and the settled rows (reproduced, agrees, erratum confirmed) folded into a dropdown.
    When more than ``fold_open_over`` rows need attention (the molecular chapter: about 240, a
    52,000-px table), each verdict's rows are a dropdown of their own, titled with its count, so the
    section opens as a short list the reader unfolds verdict by verdict."""
    if isinstance(fold_open_over, bool) or not isinstance(fold_open_over, int) or fold_open_over < 0:
        raise ValueError(f"fold_open_over must be an integer >= 0, got {fold_open_over!r}")
    if df.empty:
        return "No comparison rows were recorded in this run."
    notes = df["note"].fillna("").astype(str)
    counts = notes[notes.str.strip() != ""].value_counts()
    shared = {n: k for n, k in zip([n for n, c in counts.items() if c >= shared_note_min], _letters())}

    archived = "ours_archived" in df.columns and (df["ours_archived"].astype(str) != "").any()
    causes = "cause" in df.columns and (df["cause"].astype(str) != "").any()
    st = df.attrs.get("archived")
    scale = getattr(st, "profile", "paper") or "paper"  # the archived run's profile (a chapter's own reduced one)

    def table(d: pd.DataFrame) -> str:
        # the verdict second, so that it stays on screen on a phone (the quantity is the row's name)
        head = "| quantity | verdict | paper | ours |" + (f" ours at `{scale}` scale |" if archived else "") \
            + (" cause |" if causes else "") + " null (fails?) | note |"
        lines = [head, "|---|---|---:|---:|" + ("---:|" if archived else "") + ("---|" if causes else "") + "---|---|"]
        for _, r in d.iterrows():
            q = f"{r['where']}: {r['quantity']}" if str(r["where"]).strip() else r["quantity"]
            note = str(r["note"]) if r["note"] == r["note"] else ""
            note = f"note {shared[note]}" if note in shared else prose_math(note)
            tol = f" ({prose_math(r['tolerance'])})" if str(r.get("tolerance", "")).strip() else ""
            extra = ""
            if archived:
                a, av = str(r.get("ours_archived", "")), str(r.get("verdict_archived", ""))
                ka = _archived_k(r)
                aanchor = f'<span id="{anchor_id(ka, scale)}"></span>' if ka else ""   # a claim judged on the archive
                extra += f" {aanchor}{_md_cell(round_like(a, r['paper_value']) + (f' ({av})' if av else '') if a else '')} |"
            if causes:
                extra += f" {_md_cell(r.get('cause', '') or '')} |"
            anchor = f'<span id="{anchor_id(int(r["_k"]))}"></span>' if "_k" in r else ""   # a claim's link lands here
            lines.append(f"| {anchor}{_md_cell(prose_math(q))} | "
                         f"**{_md_cell(r['verdict'])}**{_kind_suffix(r)}{_md_cell(tol) if tol else ''} | "
                         f"{_text_cell(r['paper_value'])} | {_text_cell(round_like(r['ours'], r['paper_value']))} |"
                         f"{extra} {_null_cell(r)} | {_md_cell(note) if note else ''} |")
        return "\n".join(lines)

    df = df.assign(_k=range(1, len(df) + 1))   # the row's place in its chapter: its id's k (`<chapter>#<k>`)
    tally = df["verdict"].value_counts()
    parts = [", ".join(f"{int(tally[v])} {v}" for v in VERDICTS if v in tally)]
    out = [f"{len(df)} rows: {parts[0]}. Each row's kind follows its verdict; only paper numbers and paper "
           "claims whose stated null would have failed the same test count as reproductions (a passing row "
           "whose null passes too reads *consistent*)."]
    if st is not None:
        p = st.provenance
        dev = p.get("device", {}) if isinstance(p.get("device"), dict) else {}
        where = dev.get("gpu") or f"{dev.get('cpu', '?')}, {dev.get('threads') or 1} thread(s)"
        line = (f"The column *ours at `{scale}` scale* is the archived run of this chapter at the `{scale}` profile "
                f"({str(p.get('finished', ''))[:10]}, {where}, {float(p.get('wall_s', 0)) / 60:.1f} min, commit "
                f"`{str(p.get('commit', ''))[:10]}`), its verdict in brackets.")
        if scale != "paper":
            line += (f" It is not the paper's scale: the `paper` run of this chapter does not fit a session on a 2-core "
                     f"machine, and `profiles/{scale}.yml` gives the largest one that does (its parameters are in the "
                     f"archive's `provenance.json`).")
        if st.state != "current":
            why = ("ran from a working tree with uncommitted changes" if st.state == "dirty"
                   else "changed since: " + prose_math('; '.join(st.changes or st.problems)))
            line += (f" **It is not current** ({st.state}: {why}), so it is shown for reference and not counted in "
                     "the findings.")
        pv = df.get("verdict_archived")
        if pv is not None and st.state == "current":
            flips = df[(pv.astype(str) != "") & (pv.astype(str) != df["verdict"].astype(str))]
            line += f" {len(flips)} row(s) have another verdict at `{scale}` scale than in this run."
        out.append(line)
    if shared:
        out.append("\n".join(f"* **Note {k}** ({int(counts[n])} rows): {prose_math(n)}" for n, k in shared.items()))
    open_rows = df[~df["verdict"].isin(SETTLED)]
    settled = df[df["verdict"].isin(SETTLED)]
    if len(open_rows) > fold_open_over:
        for v in [v for v in VERDICTS if v not in SETTLED and (open_rows["verdict"] == v).any()] + \
                sorted(set(open_rows["verdict"]) - set(VERDICTS)):
            d = open_rows[open_rows["verdict"] == v]
            out.append(f":::{{admonition}} {len(d)} {'row' if len(d) == 1 else 'rows'}: {v}\n:class: dropdown\n\n"
                       + table(d) + "\n:::")
    elif len(open_rows):
        out.append(table(open_rows))
    if len(settled):
        out.append(f":::{{admonition}} {len(settled)} rows reproduced, agreeing or confirmed\n:class: dropdown\n\n"
                   + table(settled) + "\n:::")
    only = df.attrs.get("archived_only")
    if st is not None and only is not None and len(only):
        out.append(_archived_only_markdown(only, scale))
    return "\n\n".join(out)


def _archived_k(r) -> int:
    """The archived row's ``k`` (its place in the archived run) of a row, 0 when there is none."""
    try:
        k = int(float(r.get("k_archived", 0) or 0))
    except (TypeError, ValueError):
        return 0
    return k if k > 0 else 0


def _archived_only_markdown(only: pd.DataFrame, scale: str) -> str:
    """The archived run's rows this build has no counterpart of (a task or a grid point only the larger run
    has), folded away: quantity | verdict | paper | ours at ``scale`` | note, each anchored ``row-k-<scale>``
    so that a claim judged on the archived run links to it."""
    lines = [f"| quantity | verdict at `{scale}` scale | paper | ours at `{scale}` scale | note |",
             "|---|---|---:|---:|---|"]
    for _, r in only.iterrows():
        where, q = str(r.get("where", "") or ""), str(r.get("quantity", ""))
        name = f"{where}: {q}" if where.strip() else q
        ka = _archived_k(r)
        anchor = f'<span id="{anchor_id(ka, scale)}"></span>' if ka else ""
        lines.append(f"| {anchor}{_md_cell(prose_math(name))} | **{_md_cell(r.get('verdict', ''))}** | "
                     f"{_text_cell(r.get('paper_value', ''))} | "
                     f"{_text_cell(round_like(r.get('ours', ''), r.get('paper_value', '')))} | "
                     f"{_md_cell(prose_math(r.get('note', '') or ''))} |")
    n = len(only)
    return (f":::{{admonition}} {n} {'row' if n == 1 else 'rows'} only in the archived `{scale}` run\n:class: dropdown\n\n"
            f"The archived run has {'this row' if n == 1 else 'these rows'}, which this build's smaller run does not "
            "compute.\n\n" + "\n".join(lines) + "\n:::")


_COLOURS = {
    "reproduced": "#d9f2d9", "consistent": "#eef5e0", "agrees": "#e6f2e6", "erratum confirmed": "#fff3cd",
    "differs": "#f9d6d5", "disagrees": "#f9d6d5", "erratum not confirmed": "#f9d6d5",
    "not comparable": "#eeeeee", "not implemented": "#eeeeee", "not available offline": "#eeeeee",
}


def style_table(df: pd.DataFrame):
    """``df`` (ledger rows) as a pandas ``Styler`` for a notebook cell's output: no index, each verdict's
    cell coloured by what it says (green: reproduced, consistent, agrees; yellow: erratum confirmed;
    red: differs, disagrees, erratum not confirmed; grey: not judged)."""

    def colour(v):
        return f"background-color: {_COLOURS[v]}" if v in _COLOURS else ""

    sty = df.style.hide(axis="index")
    if "verdict" in df.columns:
        sty = sty.map(colour, subset=["verdict"])
    return sty


def book_order(df: pd.DataFrame) -> pd.DataFrame:
    """Rows sorted by part (book order), chapter, then as recorded."""
    if df.empty:
        return df
    rank = {p: i for i, p in enumerate(PART_ORDER)}
    key = df["chapter"].map(lambda c: (rank.get(c.split("/")[0], len(rank)), c))
    return df.assign(_k=key, _i=range(len(df))).sort_values(["_k", "_i"]).drop(columns=["_k", "_i"])


def _ref_text(s: str) -> str:
    """A link's text (no maths can be typeset there): ``r_Q^n`` as rQⁿ, no raw markup."""
    s = re.sub(r"r_\{?Q\}?\^\{?n\}?", "rQⁿ", str(s))
    return s.replace("<", "‹").replace(">", "›").replace("`", "'") or "row"


def ledger_markdown(df: pd.DataFrame, chapter_id: str) -> str:
    """One chapter's ledger rows as a MyST table, the verdict and kind right after the quantity, each
    row's ``where`` a link to the chapter's ``Paper vs ours`` section (:func:`section_label`)."""
    label = section_label(chapter_id)
    lines = ["| quantity | verdict | kind | where | paper | ours | null (fails?) | tolerance | note |",
             "|---|---|---|---|---:|---:|---|---|---|"]
    for _, r in df.iterrows():
        where = f"{{ref}}`{_ref_text(r['where'])} <{label}>`"
        lines.append("| " + " | ".join([_md_cell(prose_math(r["quantity"])), f"**{_md_cell(r['verdict'])}**",
                                        _md_cell(str(r["kind"]).replace("-", " ")), where, _text_cell(r["paper_value"]),
                                        _text_cell(round_like(r["ours"], r["paper_value"])), _null_cell(r),
                                        _text_cell(r["tolerance"]), _md_cell(prose_math(r["note"]))]) + " |")
    return "\n".join(lines)


def ledger_groups_markdown(df: pd.DataFrame, *, fold: bool, fold_over: int | None = None) -> str:
    """Every chapter's rows in book order, one group per chapter (a heading and a link to its section;
    with ``fold`` each group is a dropdown whose title gives the counts; with ``fold_over`` only the
    groups of more than that many rows are, so that one long chapter does not bury the others)."""
    if fold_over is not None and (isinstance(fold_over, bool) or not isinstance(fold_over, int) or fold_over < 0):
        raise ValueError(f"fold_over must be an integer >= 0 or None, got {fold_over!r}")
    out = []
    for cid, d in book_order(df).groupby("chapter", sort=False):
        n_open = int((~d["verdict"].isin(SETTLED)).sum())
        link = f"{{ref}}`the chapter's Paper vs ours <{section_label(cid)}>`"
        body = f"{link}\n\n{ledger_markdown(d, cid)}"
        if fold or (fold_over is not None and len(d) > fold_over):
            out.append(f":::{{admonition}} {cid}: {len(d)} rows, {n_open} not settled\n:class: dropdown\n\n{body}\n:::")
        else:
            out.append(f"### {cid}\n\n{body}")
    return "\n\n".join(out)


def ledger_table(df: pd.DataFrame) -> pd.DataFrame:
    """The columns a reader needs, verdict and kind right after the quantity."""
    cols = ["quantity", "verdict", "kind", "where", "paper_value", "ours", "null", "null_fails", "tolerance", "note"]
    return df[[c for c in cols if c in df.columns]].rename(columns={"paper_value": "paper"})

