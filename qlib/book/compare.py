"""Paper-vs-ours comparison rows: the chapter-side recorder and the appendix's gatherer.

A chapter records rows — computed by the reproduction (:mod:`qlib.repro`, a list of
:class:`qlib.repro.ledger.Row`) or directly through the shortcuts below — and every record rewrites,
atomically, ``<out_dir>/comparisons.csv``. The appendix gathers every chapter's file with
:func:`gather`, which, in the batch runner's output, counts a file only with the stamp of its
notebook's finished run (a notebook killed mid-run leaves rows that never reach the ledger). Each row has a **kind** (see :mod:`qlib.repro.ledger`); only ``paper-number`` and
``paper-claim`` rows can count as reproductions, and only when their stated null fails the same test
(``null`` / ``null_fails`` columns; a passing row whose null passes reads *consistent*).
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterable

import pandas as pd

from qlib.atomic import atomic_file
from qlib.repro import ledger
from qlib.repro.ledger import KINDS, REPRODUCING_KINDS, VERDICTS, Row

from .tables import md_math

COLUMNS = ["chapter", "paper", "kind", "where", "quantity", "paper_value", "ours", "tolerance", "verdict", "note",
           "null", "null_fails", "cause"]
#: columns a file written before nulls (or causes) existed may lack (read as empty)
OPTIONAL_COLUMNS = ("null", "null_fails", "cause")
_OPTIONAL = OPTIONAL_COLUMNS
FILENAME = "comparisons.csv"

#: the paper of each part of the book (the default ``paper`` of its rows)
PART_PAPER = {"quantized-mis": "001", "mia-limits": "003", "eden": "002", "rqp-sgd": "004"}
#: the parts in book order
PART_ORDER = ("intro", "quantized-mis", "mia-limits", "attacks", "eden", "rqp-sgd", "appendix")

#: verdicts that need no reader's attention: folded away in a chapter's "Paper vs ours" section
SETTLED = ("reproduced", "agrees", "erratum confirmed")

__all__ = ["Comparisons", "gather", "unfinished_reason", "IncompleteResultsWarning", "STAMPS", "counts_by", "verdicts_by_paper", "ledger_defects", "section_label", "paper_vs_ours_markdown", "ledger_markdown",
           "ledger_groups_markdown", "papers_in_book_order", "round_like", "prose_math", "COLUMNS", "FILENAME", "with_causes", "OPTIONAL_COLUMNS",
           "KINDS", "VERDICTS", "PART_PAPER", "SETTLED"]


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
                extra += f" {_md_cell(round_like(a, r['paper_value']) + (f' ({av})' if av else '') if a else '')} |"
            if causes:
                extra += f" {_md_cell(r.get('cause', '') or '')} |"
            lines.append(f"| {_md_cell(prose_math(q))} | "
                         f"**{_md_cell(r['verdict'])}**{_kind_suffix(r)}{_md_cell(tol) if tol else ''} | "
                         f"{_text_cell(r['paper_value'])} | {_text_cell(round_like(r['ours'], r['paper_value']))} |"
                         f"{extra} {_null_cell(r)} | {_md_cell(note) if note else ''} |")
        return "\n".join(lines)

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
            line += (f" **It is stale** — changed since: {prose_math('; '.join(st.changes or st.problems))} — so it is "
                     "shown for reference and not counted in the findings.")
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
    return "\n\n".join(out)


class Comparisons:
    """Recorder of paper-vs-ours rows for one chapter, saved to ``<out_dir>/comparisons.csv``.

    ``chapter`` is the notebook's id below ``chapters/`` (e.g. ``eden/01-estimator-vnmse``); rows with
    no ``paper`` take the paper of its part (``paper=`` overrides it).
    """

    def __init__(self, chapter: str, out_dir: str | os.PathLike | None, *, paper: str | None = None):
        if not isinstance(chapter, str) or not chapter.strip():
            raise ValueError("chapter must be a non-empty string")
        self.chapter = chapter
        self.paper = paper if paper is not None else PART_PAPER.get(chapter.split("/")[0])
        self.out_dir = None if out_dir is None else Path(out_dir)
        self.rows: list[Row] = []
        if self.out_dir is not None:
            self.out_dir.mkdir(parents=True, exist_ok=True)
            self.save()  # a re-run starts from an empty table

    # -- recording ---------------------------------------------------------------------------
    def record(self, rows: Row | Iterable[Row]) -> list[str]:
        """Record one row or many (as returned by a :mod:`qlib.repro` function); returns the verdicts."""
        rows = [rows] if isinstance(rows, Row) else list(rows)
        for r in rows:
            if not isinstance(r, Row):
                raise TypeError(f"rows must be qlib.repro.ledger.Row objects, got {type(r).__name__}")
            if r.paper is None:
                if self.paper is None:
                    raise ValueError(f"row {r.where!r} has no paper and chapter {self.chapter!r} has no default")
                r = replace(r, paper=self.paper)
            self.rows.append(r)
        self.save()
        return [r.verdict for r in rows]

    def close(self, where: str, quantity: str, paper_value: float, ours: float, *, kind: str,
              rtol: float = 0.0, atol: float = 0.0, note: str = "", paper: str | None = None,
              null: float | None = None, null_label: str = "", basis: str = "") -> str:
        """Numeric comparison (see :func:`qlib.repro.ledger.close`, ``null=`` and ``basis=`` included);
        returns the verdict."""
        return self.record(ledger.close(where, quantity, paper_value, ours, kind=kind, rtol=rtol, atol=atol,
                                        note=note, paper=paper, null=null, null_label=null_label, basis=basis))[0]

    def check(self, where: str, quantity: str, paper_value: Any, ours: Any, passed: bool, *, kind: str,
              tolerance: str = "", note: str = "", paper: str | None = None, null: Any = None,
              null_fails: bool | None = None) -> str:
        """A claim or inequality whose test was computed (``passed``; ``null_fails`` for its null, see
        :func:`qlib.repro.ledger.claim`); returns the verdict."""
        return self.record(ledger.claim(where, quantity, paper_value, ours, passed, kind=kind,
                                        tolerance=tolerance, note=note, paper=paper, null=null,
                                        null_fails=null_fails))[0]

    def not_comparable(self, where: str, quantity: str, paper_value: Any, ours: Any = None, *, reason: str,
                       kind: str = "paper-number", paper: str | None = None) -> str:
        """A row that cannot be judged (different data, stand-in embedder, …): say why."""
        return self.record(ledger.not_comparable(where, quantity, paper_value, ours, reason=reason, kind=kind,
                                                 paper=paper))[0]

    def missing(self, where: str, quantity: str, *, reason: str, offline: bool = False,
                paper: str | None = None) -> str:
        """An item of the paper not reproduced here (``not-implemented`` / ``not-available-offline``)."""
        return self.record(ledger.missing(where, quantity, reason=reason, offline=offline, paper=paper))[0]

    # -- output --------------------------------------------------------------------------------
    def frame(self) -> pd.DataFrame:
        recs = [
            {"chapter": self.chapter, "paper": r.paper, "kind": r.kind, "where": r.where, "quantity": r.quantity,
             "paper_value": ledger.fmt(r.paper_value), "ours": ledger.fmt(r.ours), "tolerance": r.tolerance,
             "verdict": r.verdict, "note": r.note, "null": ledger.fmt(r.null),
             "null_fails": "" if r.null_fails is None else str(r.null_fails), "cause": ""}
            for r in self.rows
        ]
        df = pd.DataFrame(recs, columns=COLUMNS)
        return with_causes(df)

    def save(self) -> None:
        if self.out_dir is None:
            return
        _atomic_write_csv(self.frame(), self.out_dir / FILENAME)

    def show(self):
        """The chapter's table, verdicts coloured, for display as a notebook cell's output."""
        return style_table(self.frame().drop(columns=["chapter"]))

    def markdown(self) -> str:
        """The body of the chapter's ``Paper vs ours`` section (see :func:`paper_vs_ours_markdown`)."""
        return paper_vs_ours_markdown(self.frame())

    def summary(self) -> dict[str, int]:
        """Rows per verdict word (only the words that occur)."""
        counts: dict[str, int] = {}
        for r in self.rows:
            counts[r.verdict] = counts.get(r.verdict, 0) + 1
        return counts


def with_causes(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` (ledger rows) with the ``cause`` of every differing row filled from the wings' typed
    causes (:mod:`qlib.book.findings`; ``unexplained`` where none applies), other columns unchanged."""
    if df.empty:
        return df
    from .findings import with_causes as _causes

    out = _causes(df)
    df = df.copy()
    df["cause"] = out["cause"]
    return df


def _atomic_write_csv(df: pd.DataFrame, path: Path) -> None:
    with atomic_file(path, "w", newline="") as fh:
        df.to_csv(fh, index=False)


#: the batch runner's stamps, beside ``_results`` in its output tree: ``<output>/.stamps/<chapter>.json``,
#: written when a notebook has finished (:func:`qlib.book.jobs.finish`); the folder marks a runner's tree
STAMPS = ".stamps"
#: seconds a chapter's rows may be newer than its stamp (file-system time stamps are coarse on some systems)
STAMP_SLACK = 1.0


class IncompleteResultsWarning(UserWarning):
    """Rows left out of :func:`gather` because their notebook did not finish (the message names it)."""


def unfinished_reason(results_file: str | os.PathLike, stamp_file: str | os.PathLike) -> str | None:
    """Why the rows in ``results_file`` are not those of a finished run of their notebook, or None when
    they are: the finished-run stamp ``stamp_file`` must exist, be readable, carry the time the run
    finished (``when``) and be no older than the rows (a run killed mid-way leaves rows written after the
    stamp of an earlier run, or, since the runner removes a notebook's stamp when it starts it, none)."""
    import json

    stamp = Path(stamp_file)
    try:
        data = json.loads(stamp.read_text())
    except FileNotFoundError:
        return "its notebook has no stamp of a finished run (killed, failed or still running)"
    except (OSError, ValueError):
        return f"its notebook's stamp {stamp} is unreadable"
    when = data.get("when") if isinstance(data, dict) else None
    if isinstance(when, bool) or not isinstance(when, (int, float)):
        return f"its notebook's stamp {stamp} does not say when the run finished"
    written = Path(results_file).stat().st_mtime
    if written > when + STAMP_SLACK:
        return (f"the rows were written after its notebook's last finished run ({written - when:.0f} s later): "
                "a later run did not finish")
    return None


def gather(results_dir: str | os.PathLike) -> pd.DataFrame:
    """Every chapter's comparison rows under ``results_dir`` (recursively), in one frame.

    In a batch runner's output tree (a ``.stamps`` folder beside ``results_dir``) a chapter's rows count
    only with the stamp of a finished run of its notebook, no older than the rows
    (:func:`unfinished_reason`): the rows of a notebook killed mid-run (SIGKILL, out of memory, power
    loss) are left out, with an :class:`IncompleteResultsWarning` naming the notebook and why, and the
    frame's ``attrs["incomplete"]`` maps each such chapter to the reason. Elsewhere (a chapter run by
    hand, a test's folder) every file counts."""
    import warnings

    root = Path(results_dir)
    stamps = root.parent / STAMPS
    runner_tree = stamps.is_dir()
    frames: list[pd.DataFrame] = []
    incomplete: dict[str, str] = {}
    for f in sorted(root.rglob(FILENAME)) if root.is_dir() else []:
        df = pd.read_csv(f, dtype=str, keep_default_na=False)
        for c in _OPTIONAL:
            if c not in df.columns:
                df[c] = ""
        missing = set(COLUMNS) - set(df.columns)
        if missing:
            raise ValueError(f"{f} lacks columns {sorted(missing)} (written by an older qlib: re-run its notebook)")
        if runner_tree and len(df):
            chapter = f.parent.relative_to(root).as_posix()
            why = unfinished_reason(f, stamps / f"{chapter}.json")
            if why is not None:
                incomplete[chapter] = why
                warnings.warn(IncompleteResultsWarning(
                    f"left out {len(df)} rows of {chapter} ({f}): {why}. Re-run it "
                    f"(python -m qlib.book run --only {chapter}) to count them."), stacklevel=2)
                continue
        frames.append(df[COLUMNS])
    out = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=COLUMNS)
    out.attrs["incomplete"] = incomplete
    return out


_COLOURS = {
    "reproduced": "#d9f2d9", "consistent": "#eef5e0", "agrees": "#e6f2e6", "erratum confirmed": "#fff3cd",
    "differs": "#f9d6d5", "disagrees": "#f9d6d5", "erratum not confirmed": "#f9d6d5",
    "not comparable": "#eeeeee", "not implemented": "#eeeeee", "not available offline": "#eeeeee",
}


def style_table(df: pd.DataFrame):
    def colour(v):
        return f"background-color: {_COLOURS[v]}" if v in _COLOURS else ""

    sty = df.style.hide(axis="index")
    if "verdict" in df.columns:
        sty = sty.map(colour, subset=["verdict"])
    return sty


def counts_by(df: pd.DataFrame, by: Iterable[str] = ("chapter",)) -> pd.DataFrame:
    """Number of rows per verdict word, grouped by ``by`` (for the appendix summary)."""
    by = list(by)
    cols = [v for v in VERDICTS if v in set(df.get("verdict", []))] or ["reproduced"]
    if df.empty:
        return pd.DataFrame(columns=by + list(VERDICTS[:3]))
    tab = pd.crosstab([df[c] for c in by], df["verdict"]).reindex(columns=cols, fill_value=0)
    return tab.reset_index()


def reproduced_mask(df: pd.DataFrame) -> pd.Series:
    """Rows that count as reproductions: a reproducing kind, the verdict ``reproduced`` and a null
    that fails the same test (``null_fails`` True)."""
    nf = df["null_fails"].astype(str) if "null_fails" in df.columns else pd.Series("", index=df.index)
    return df["kind"].isin(REPRODUCING_KINDS) & (df["verdict"] == "reproduced") & (nf == "True")


def ledger_defects(df: pd.DataFrame) -> list[str]:
    """Rows that break the rule "a row counts only if it could have failed": a paper number or claim
    reading *reproduced* without a stated null that fails (``null`` empty or ``null_fails`` not True),
    a *consistent* row whose null fails (it should read reproduced), a null outcome on a row of another
    kind, a paper number or claim whose numeric tolerance states no basis in brackets (printed precision,
    spread over runs, our reading: CONTRIBUTING.md). One line per defect, naming the chapter and the
    row; empty when the ledger is clean."""
    out = []
    for _, r in df.iterrows():
        kind, v = str(r["kind"]), str(r["verdict"])
        null, nf = str(r.get("null", "") or "").strip(), str(r.get("null_fails", "") or "").strip()
        name = f"{r['chapter']}: {r['where']}: {r['quantity']}"
        if kind in REPRODUCING_KINDS and v == "reproduced" and (not null or nf != "True"):
            out.append(f"{name} reads reproduced without a null that fails (null={null!r}, null_fails={nf!r})")
        elif v == ledger.CONSISTENT and nf == "True":
            out.append(f"{name} reads consistent although its null fails")
        elif kind not in REPRODUCING_KINDS and nf:
            out.append(f"{name} is a {kind} row with a null outcome")
        tol = str(r.get("tolerance", "") or "")
        if kind in REPRODUCING_KINDS and re.search(r"[0-9]", tol) and not re.search(r"\([^)]*[A-Za-z][^)]*\)", tol):
            out.append(f"{name} has a numeric tolerance {tol!r} that states no basis (where it comes from, in "
                       "brackets: ledger.close(..., basis=...))")
    return out


def papers_in_book_order(papers: Iterable[str]) -> list[str]:
    """Paper ids in the order their parts appear in the book (001, 003, 002, 004), others after."""
    order = [PART_PAPER[p] for p in PART_ORDER if p in PART_PAPER]
    rank = {p: i for i, p in enumerate(order)}
    return sorted(set(papers), key=lambda p: (rank.get(p, len(rank)), p))


def verdicts_by_paper(df: pd.DataFrame) -> pd.DataFrame:
    """Per paper, the paper numbers and claims by outcome: *reproduced* (passed, and the stated null
    fails the same test), *consistent* (passed, but the null passes too or none is stated), *differs*,
    and not comparable; only the first counts in the headline."""
    cols = ["paper", "reproduced", "consistent", "differs", "not comparable", "paper items"]
    if df.empty:
        return pd.DataFrame(columns=cols)
    out = []
    for p in papers_in_book_order(df["paper"]):
        d = df[(df["paper"] == p) & df["kind"].isin(REPRODUCING_KINDS)]
        out.append({"paper": p, "reproduced": int(reproduced_mask(d).sum()),
                    "consistent": int((d["verdict"] == ledger.CONSISTENT).sum()),
                    "differs": int((d["verdict"] == "differs").sum()),
                    "not comparable": int((d["verdict"] == "not comparable").sum()), "paper items": len(d)})
    return pd.DataFrame(out, columns=cols)


def by_paper_and_kind(df: pd.DataFrame) -> pd.DataFrame:
    """The ledger's headline: per paper, the rows of each kind, as ``passed/total`` for the kinds that
    are judged (reproduced for paper numbers and claims, agrees for checks, confirmed for errata) and
    plain counts for the items not reproduced; ``reproduced`` counts only paper numbers and claims
    whose null fails (rows that could have failed), ``consistent`` the passing ones whose null passes."""
    papers = papers_in_book_order(df["paper"]) if len(df) else []
    ok = {"reproduced", "agrees", "erratum confirmed"}
    out = []
    for p in papers:
        d = df[df["paper"] == p]
        rec = {"paper": p}
        for k in KINDS:
            dk = d[d["kind"] == k]
            if k in ("not-implemented", "not-available-offline"):
                rec[k] = str(len(dk))
            else:
                rec[k] = f"{int(dk['verdict'].isin(ok).sum())}/{len(dk)}" if len(dk) else "0"
        rec["reproduced"] = int(reproduced_mask(d).sum())
        rec["consistent"] = int((d["kind"].isin(REPRODUCING_KINDS) & (d["verdict"] == ledger.CONSISTENT)).sum())
        rec["of paper items"] = int(d["kind"].isin(REPRODUCING_KINDS).sum())
        out.append(rec)
    # the answer first: what reproduces, of how many paper items, then the kinds
    return pd.DataFrame(out, columns=["paper", "reproduced", "of paper items", "consistent", *KINDS])


ERRATUM_ID = r"\(erratum ([0-9]{3}-[A-Z0-9]+)\)"


def distinct_errata(df: pd.DataFrame) -> pd.DataFrame:
    """Errata counted once each (many rows can test one erratum at several points): a row's
    ``where`` names its erratum as ``"… (erratum 003-E1)"``; a row without an id is its own erratum.
    One line per erratum, with how many rows test it and how many confirm it."""
    e = df[df["kind"] == "erratum"]
    if e.empty:
        return pd.DataFrame(columns=["paper", "erratum", "rows", "confirmed"])
    ids = e["where"].str.extract(ERRATUM_ID, expand=False)
    e = e.assign(erratum=ids.fillna(e["where"]))
    g = e.groupby(["paper", "erratum"], sort=True)
    return pd.DataFrame({"rows": g.size(),
                         "confirmed": g["verdict"].apply(lambda v: int((v == "erratum confirmed").sum()))}).reset_index()


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


def replicate_rows(results_dir: str | os.PathLike) -> pd.DataFrame:
    """The rows of the replicate runs (``<output>/_replicates/seed-<s>/_results``), with a ``seed``
    column; empty when the book ran with one seed."""
    base = Path(results_dir).parent / "_replicates"
    frames = []
    for d in sorted(base.glob("seed-*")) if base.is_dir() else []:
        rows = gather(d / "_results")
        if len(rows):
            frames.append(rows.assign(seed=d.name.removeprefix("seed-")))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=[*COLUMNS, "seed"])


def stability(rows: pd.DataFrame, replicates: pd.DataFrame, base_seed: str = "book") -> pd.DataFrame:
    """Per comparison row of the book's run: over the book's seed and every replicate seed, the range
    of our value (numbers), how many seeds give the book's verdict, and whether the verdict flips.
    Rows are matched on (chapter, kind, where, quantity, occurrence)."""
    keys = ["chapter", "kind", "where", "quantity"]
    if replicates.empty or rows.empty:
        return pd.DataFrame(columns=[*keys, "verdict", "seeds", "same verdict", "ours (min – max)", "flips"])
    allr = pd.concat([rows.assign(seed=base_seed), replicates], ignore_index=True)
    allr["occ"] = allr.groupby([*keys, "seed"]).cumcount()
    base = allr[allr["seed"] == base_seed]
    out = []
    for _, r in base.iterrows():
        m = allr[(allr[keys + ["occ"]] == r[keys + ["occ"]]).all(axis=1)]
        vals = pd.to_numeric(m["ours"], errors="coerce").dropna()
        spread = f"{vals.min():.4g} – {vals.max():.4g}" if len(vals) else "—"
        same = int((m["verdict"] == r["verdict"]).sum())
        out.append({**{k: r[k] for k in keys}, "verdict": r["verdict"], "seeds": len(m), "same verdict": same,
                    "ours (min – max)": spread, "flips": same < len(m)})
    return pd.DataFrame(out)
