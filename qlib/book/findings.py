"""The book's findings: every claim of the four papers judged from the ledger's rows, every difference
with its cause, at the largest scale the book has.

The claims and the causes are typed once, in each wing's ``findings`` module
(``qlib.repro.<wing>.findings``: ``CLAIMS``, ``ROW_CAUSES``, ``SUMMARY``; the types and the verdict
derivation are :mod:`qlib.repro.findings`). This module gathers them and renders what the reader
meets: the landing page's claim counts and five most consequential findings, each chapter's claims in
its *Result at a glance*, one summary page per paper, and ``findings.csv`` (one row per claim; its
JSON Schema is :data:`SCHEMA_FILE`), written into every build and published beside ``ledger.csv``.

**Scale.** A chapter's rows are taken from the archived ``paper`` run when its entry is current, else
from this build (:func:`qlib.book.scale.rows_at_largest_scale`); every claim and row says which
(``scale``).

**Inputs.** Each function taking ``rows`` (ledger rows) or ``frame`` (claims) checks it first: the columns it reads,
the verdicts' words (:func:`qlib.repro.ledger.check_ledger`); ``k`` is a positive integer.
"""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from qlib.atomic import atomic_file
from qlib.repro import findings as F
from qlib.repro.ledger import DIFFERING, PAPERS, PASSING, UNJUDGED, check_ledger
from qlib.validation import check_int

from . import evidence
from .render import round_like, section_label
from .tables import markdown, md_math

__all__ = ["WINGS", "registry", "stand_ins", "evidence_pool", "with_causes", "findings_frame", "write_findings",
           "validate_findings", "landing_markdown", "summary_markdown",
           "largest_differences", "paper_label", "FINDINGS_FILE", "SCHEMA_FILE", "FINDINGS_COLUMNS",
           "PAPER_PART", "PAPER_ORDER", "PAPER_TITLE", "LABELS", "counts_table", "consequential", "difference_line",
           "cause_counts", "causes_by_paper"]

#: the wings whose ``findings`` modules hold claims and causes, in book order
WINGS = ("quantized_mis", "mia_limits", "attacks", "eden", "rqp_sgd")
#: the part of the book whose summary page presents each paper
PAPER_PART = {"001": "quantized-mis", "003": "mia-limits", "002": "eden", "004": "rqp-sgd"}
PAPER_ORDER = ("001", "003", "002", "004")
PAPER_TITLE = {"001": "quantized-model MIS", "003": "limits of MIA", "002": "EDEN", "004": "RQP-SGD"}
FINDINGS_FILE = "findings.csv"
SCHEMA_FILE = Path(__file__).with_name("findings.schema.json")
FINDINGS_COLUMNS = ["paper", "id", "quote", "where", "verdict", "scale", "cause", "why", "evidence", "rows", "judged",
                    "passed", "differ", "reproduced", "chapters", "untested"]
#: the paper's labels of the quantizers, for tables a reader meets (the ledger keeps our ids)
LABELS = {"ternary33": "1.58b 33 %", "ternary50": "1.58b 50 %", "ternary90": "1.58b 90 %", "sign": "Sign",
          "bits2": "2 bits", "bits3": "3 bits", "bits4": "4 bits", "bits5": "5 bits"}
#: the columns of a findings frame that one sentence about a claim reads
_CLAIM_LINE = ("paper", "id", "quote", "verdict", "scale", "cause", "why", "passed", "judged")


def _frame(frame: Any, cols: tuple, name: str = "frame") -> pd.DataFrame:
    """``frame`` checked: a findings frame (:func:`findings_frame`) holding ``cols``, its verdicts a claim's."""
    return check_ledger(frame, name, ("paper", "verdict", *cols), verdicts=F.CLAIM_VERDICTS, what="claims")


def paper_label(text: Any) -> str:
    """``text`` with our quantizer ids replaced by the paper's labels (``ternary33`` → ``1.58b 33 %``)."""
    s = str(text)
    for k, v in LABELS.items():
        s = re.sub(rf"\b{k}\b", v, s)
    return s


def _modules():
    for w in WINGS:
        try:
            yield importlib.import_module(f"qlib.repro.{w}.findings")
        except ModuleNotFoundError as exc:
            if exc.name != f"qlib.repro.{w}.findings":
                raise


def registry() -> tuple[list, list, dict]:
    """``(claims, row_causes, summaries)`` of every wing that has a ``findings`` module."""
    claims, causes, summaries = [], [], {}
    for mod in _modules():
        claims += list(getattr(mod, "CLAIMS", ()))
        causes += list(getattr(mod, "ROW_CAUSES", ()))
        s = getattr(mod, "SUMMARY", None)
        if s:
            summaries[s["paper"]] = s
    probs = F.check_registry(claims)
    if probs:
        raise ValueError("; ".join(probs))
    return claims, causes, summaries


def stand_ins() -> dict:
    """The stand-ins each chapter's inputs include (chapter glob → names), from every wing's
    ``STAND_INS``."""
    out: dict = {}
    for mod in _modules():
        out.update(getattr(mod, "STAND_INS", {}))
    return out


def evidence_pool(rows: pd.DataFrame, archived: pd.DataFrame | None = None) -> pd.DataFrame:
    """The rows a cause may name as evidence: ``rows`` (with ids) and the current archived ``paper`` runs'
    rows (ids ``…@paper``) that ``rows`` does not already hold."""
    check_ledger(rows, "rows", F.CLAIM_COLUMNS)
    if archived is not None:
        check_ledger(archived, "archived", F.CLAIM_COLUMNS)
    pool = rows if "id" in rows.columns else rows.assign(id=F.row_ids(rows) if len(rows) else [])
    if archived is None or archived.empty:
        return pool
    a = archived if "id" in archived.columns else archived.assign(id=F.row_ids(archived, "paper"))
    a = a[~a["id"].isin(set(pool["id"]))]
    return pd.concat([pool, a], ignore_index=True) if len(a) else pool


def with_causes(rows: pd.DataFrame, causes: list | None = None, *, archived: pd.DataFrame | None = None,
                pool: pd.DataFrame | None = None) -> pd.DataFrame:
    """``rows`` with ``id`` and ``cause`` / ``cause_why`` / ``cause_evidence`` on every differing row: the
    wings' typed causes, each kept only while its predicate holds on its evidence rows (the rows and
    ``archived``, the current archived ``paper`` runs' rows, :func:`qlib.book.scale.archived_ledger`),
    except where ``archived`` holds the same row passing — then the cause is ``scale``, the archived
    row its evidence (the same code at the paper's scale). ``pool``: the evidence rows (default ``rows``
    and ``archived``)."""
    check_ledger(rows, "rows", F.CLAIM_COLUMNS)
    if archived is not None:
        check_ledger(archived, "archived", (*F.CLAIM_COLUMNS, "ours"))
    if pool is not None:
        check_ledger(pool, "pool", F.POOL_COLUMNS)
    causes = registry()[1] if causes is None else causes
    if not isinstance(causes, (list, tuple)) or not all(
            isinstance(c, tuple) and len(c) == 2 and isinstance(c[0], F.Select) and isinstance(c[1], F.Cause) for c in causes):
        raise TypeError(f"causes must be a list of (Select, Cause) pairs or None, got {causes!r:.200}")
    rows = rows if "id" in rows.columns or rows.empty else rows.assign(id=F.row_ids(rows))
    pool = evidence_pool(rows, archived) if pool is None else pool
    out = F.assign_causes(rows, causes, pool=pool, stand_ins=stand_ins())
    if archived is None or archived.empty or out.empty:
        return out
    a = archived if "id" in archived.columns else archived.assign(id=F.row_ids(archived, "paper"))

    def keyed(d):
        k = ["chapter", "where", "quantity"]
        return d.assign(_n=d.groupby(k).cumcount().to_numpy())

    a = keyed(a)[["chapter", "where", "quantity", "_n", "ours", "verdict", "id"]].rename(
        columns={"ours": "ours_paper", "verdict": "verdict_paper", "id": "id_paper"})
    m = keyed(out.reset_index(drop=True)[["chapter", "where", "quantity", "verdict"]]).merge(
        a, on=["chapter", "where", "quantity", "_n"], how="left")
    at_paper = (out["scale"].astype(str).str.startswith("paper (").to_numpy(dtype=bool) if "scale" in out.columns
                else np.zeros(len(out), dtype=bool))  # rows that are the archived run's own need no scale cause
    hit = (m["verdict"].isin(DIFFERING) & m["verdict_paper"].isin(PASSING)).to_numpy() & ~at_paper
    out = out.reset_index(drop=True)
    out.loc[hit, "cause"] = "scale"
    out.loc[hit, "cause_why"] = [f"the same row passes at the paper's scale. Evidence: {i} ours {o} ({v})."
                                 for i, o, v in zip(m.loc[hit, "id_paper"], m.loc[hit, "ours_paper"],
                                                    m.loc[hit, "verdict_paper"])]
    out.loc[hit, "cause_evidence"] = m.loc[hit, "id_paper"].to_numpy()
    return out


def _claim_cause(c, judged: pd.DataFrame, pool: pd.DataFrame | None) -> tuple[str, str, str]:
    """A claim's own cause (``Claim.cause``), checked on its evidence: ``(kind, why, evidence ids)``, or
    ``unexplained`` with the reason."""
    if pool is None or pool.empty:
        return "unexplained", f"the claim's {c.cause.kind} cause has no rows to check it on", ""
    ev = F.evidence_rows(c.cause, pool)
    dif = judged[judged["verdict"].isin(DIFFERING)] if len(judged) else judged
    targets = [r for _, r in dif.iterrows()] or [None]
    for r in targets:
        ok, reason = F.cause_check(c.cause, r, ev, stand_ins())
        if not ok:
            return ("unexplained", f"the {c.cause.kind} cause typed for this claim does not hold: {reason} "
                    f"(it read: {c.cause.why})", "; ".join(ev["id"].astype(str)))
    return c.cause.kind, F.render_why(c.cause, ev), "; ".join(ev["id"].astype(str))


def findings_frame(rows: pd.DataFrame, claims: list | None = None, *, pool: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per claim (:data:`FINDINGS_COLUMNS`), its verdict derived from ``rows`` (with causes and
    a ``scale`` column, as :func:`qlib.book.scale.rows_at_largest_scale` and :func:`with_causes` give them);
    ``pool``: the rows a claim's own cause may name as evidence (default ``rows``)."""
    check_ledger(rows, "rows", F.CLAIM_COLUMNS)
    if pool is not None:
        check_ledger(pool, "pool", F.POOL_COLUMNS)
    claims = registry()[0] if claims is None else claims
    if not isinstance(claims, (list, tuple)) or not all(isinstance(c, F.Claim) for c in claims):
        raise TypeError(f"claims must be a list of Claim or None, got {claims!r:.200}")
    if pool is None:
        pool = rows if "id" in rows.columns or rows.empty else rows.assign(id=F.row_ids(rows))
    recs = []
    for c in claims:
        verdict, tally = F.claim_verdict(c, rows)
        sel = F.claim_rows(c, rows)
        judged = sel[~sel["verdict"].isin(UNJUDGED)] if len(sel) else sel
        cause, why, evidence = "", "", ""
        if verdict not in ("holds", "consistent", "untested"):
            if c.cause is not None:
                cause, why, evidence = _claim_cause(c, judged, pool)
            elif len(judged) and "cause" in judged:
                dif = judged[judged["verdict"].isin(DIFFERING)]
                if len(dif):
                    top = dif["cause"].replace("", "unexplained").value_counts()
                    cause = str(top.index[0])
                    pick = dif[dif["cause"].replace("", "unexplained") == cause]
                    why = next((w for w in pick["cause_why"].astype(str) if w.strip()),
                               "no experiment has explained this difference yet")
                    if len(top) > 1:
                        why += " (" + ", ".join(f"{n} row(s) {k}" for k, n in top.items()) + ")"
                    if "cause_evidence" in pick:
                        evidence = "; ".join(dict.fromkeys(e for es in pick["cause_evidence"].astype(str)
                                                           for e in es.split("; ") if e))
            if verdict == "refuted" and not cause:
                cause, why = "unexplained", "an erratum row refutes the claim, but no cause names it"
        untested = c.untested if verdict == "untested" else ""
        if verdict == "untested" and not untested:
            untested = "its rows cannot be judged (" + ", ".join(sorted(set(sel["verdict"]))) + ")" if len(sel) \
                else "no row of this build tests it"
        scales = sorted(set(judged["scale"])) if len(judged) and "scale" in judged else []
        recs.append({"paper": c.paper, "id": c.id, "quote": c.quote, "where": c.where, "verdict": verdict,
                     "scale": "; ".join(scales), "cause": cause, "why": why, "evidence": evidence,
                     "rows": tally["rows"], "judged": tally["judged"], "passed": tally["pass"],
                     "differ": tally["differ"], "reproduced": tally["reproduced"],
                     "chapters": "; ".join(sorted(set(sel["chapter"]))) if len(sel) else "", "untested": untested})
    df = pd.DataFrame(recs, columns=FINDINGS_COLUMNS)
    df.attrs["claims"] = {(c.paper, c.id): c for c in claims}
    return df


def validate_findings(records: list[dict]) -> None:
    """Validate ``findings.csv`` records against :data:`SCHEMA_FILE` (``jsonschema``); raises
    ``ValueError`` naming the first bad record and field."""
    import jsonschema  # deferred: jsonschema comes with the book extra, and only writing findings.csv needs it

    schema = json.loads(SCHEMA_FILE.read_text())
    try:
        jsonschema.validate(records, schema)
    except jsonschema.ValidationError as exc:
        path = "/".join(str(p) for p in exc.absolute_path)
        raise ValueError(f"findings.csv does not match its schema at {path or 'top'}: {exc.message}") from None


def write_findings(frame: pd.DataFrame, path: Path) -> Path:
    """Write ``frame`` (:func:`findings_frame`) to ``path`` after validating it against the schema."""
    _frame(frame, tuple(FINDINGS_COLUMNS))
    recs = json.loads(frame[FINDINGS_COLUMNS].to_json(orient="records"))
    validate_findings(recs)
    path = Path(path)
    with atomic_file(path, "w", encoding="utf-8", newline="") as fh:
        frame[FINDINGS_COLUMNS].to_csv(fh, index=False)
    return path


def cause_counts(rows: pd.DataFrame) -> pd.Series:
    """Differing rows per cause (every cause of the vocabulary, zeros included)."""
    check_ledger(rows, "rows", ("verdict", "cause"))
    dif = rows[rows["verdict"].isin(DIFFERING)] if len(rows) else rows
    vc = dif["cause"].replace("", "unexplained").value_counts() if len(dif) else pd.Series(dtype=int)
    return pd.Series({c: int(vc.get(c, 0)) for c in F.CAUSES})


# ---------------------------------------------------------------------------------------------
# Rendering
# ---------------------------------------------------------------------------------------------
def _md(s: Any) -> str:
    return md_math(str(s)).replace("|", r"\|").replace("\n", " ")


def _section_ref(chapter: str) -> str:
    try:
        return section_label(chapter)
    except ValueError:
        return ""


def counts_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Claims per paper and verdict (the papers in book order)."""
    _frame(frame, ())
    rows = []
    for p in PAPER_ORDER:
        sub = frame[frame["paper"] == p]
        if sub.empty:
            continue
        rows.append({"paper": p, **{v: int((sub["verdict"] == v).sum()) for v in F.CLAIM_VERDICTS},
                     "claims": len(sub)})
    return pd.DataFrame(rows, columns=["paper", *F.CLAIM_VERDICTS, "claims"])


def consequential(frame: pd.DataFrame, k: int = 5) -> pd.DataFrame:
    """The ``k`` most consequential findings: claims that do not hold (refuted, not reproduced, holds in
    part) by weight, then the heaviest that hold."""
    _frame(frame, ("id",))
    k = check_int("k", k, low=1)
    claims = frame.attrs.get("claims", {})
    w = frame.apply(lambda r: getattr(claims.get((r["paper"], r["id"])), "weight", 0), axis=1) if len(frame) else []
    f = frame.assign(_w=w, _bad=frame["verdict"].isin(["refuted", "not reproduced", "holds in part"]))
    f = f[f["verdict"] != "untested"].sort_values(["_bad", "_w"], ascending=[False, False], kind="stable")
    return f.head(k)


def landing_markdown(frame: pd.DataFrame, rows: pd.DataFrame, *, k: int = 5) -> str:
    """The landing page's first screen: claims per paper and verdict, and the ``k`` most consequential
    findings, one sentence each, linked to their chapter's *Paper vs ours* section."""
    _frame(frame, (*_CLAIM_LINE, "chapters"))
    check_ledger(rows, "rows", ("verdict", "cause"))
    k = check_int("k", k, low=1)
    if frame.empty:
        return "No claim of the papers is typed in this build yet."
    claims = frame.attrs.get("claims", {})
    t = counts_table(frame)
    t["paper"] = [f"[{p} {PAPER_TITLE.get(p, p)}](../{PAPER_PART[p]}/summary.md)" for p in t["paper"]]
    lines = ["**The papers' claims, judged** from the rows that test them, at the largest scale the book has "
             "(each paper's summary gives every claim and its evidence):", "",
             ":::{table}\n:class: qlib-claims-table\n" + markdown(t) + "\n:::", ""]
    top = consequential(frame, k)
    if len(top):
        lines += [f"**The {len(top)} most consequential findings:**", ""]
        for i, (_, r) in enumerate(top.iterrows(), 1):
            ch = r["chapters"].split("; ")[0] if r["chapters"] else ""
            ref = _section_ref(ch) if ch else ""
            link = f" ({{ref}}`{r['paper']}/{r['id']} <{ref}>`)" if ref else f" ({r['paper']}/{r['id']})"
            c = claims.get((r["paper"], r["id"]))
            words = _md(getattr(c, "short", "") or r["quote"])
            cause = f"; cause *{r['cause']}*" if r["cause"] else ""
            lines.append(f"{i}. **{r['verdict']}** — {words} ({r['passed']} of {r['judged']} rows pass{cause}){link}")
        lines.append("")
    cc = cause_counts(rows)
    n = int(cc.sum())
    if n:
        lines.append(f"Of the {n} differing rows, " + ", ".join(f"{v} *{c}*" for c, v in cc.items() if v)
                     + " (the cause of each is in its chapter's table).")
    lines += ["", 'The data behind this page: <a href="../../findings.csv">findings.csv</a> (one row per claim, its '
              'verdict, cause and evidence rows) and <a href="../../ledger.csv">ledger.csv</a> (every ledger row).']
    return "\n".join(lines) + "\n"


def _relative_gap(paper: str, ours: str) -> float:
    try:
        p, o = float(paper), float(ours)
    except (TypeError, ValueError):
        return float("nan")
    if p != p or o != o:
        return float("nan")
    return abs(o - p) / max(abs(p), 1e-12)


def largest_differences(rows: pd.DataFrame, k: int = 3) -> pd.DataFrame:
    """The ``k`` differing rows farthest from the paper (relative gap), numeric ones first."""
    check_ledger(rows, "rows", ("verdict", "paper_value", "ours"))
    k = check_int("k", k, low=1)
    dif = rows[rows["verdict"].isin(DIFFERING)].copy() if len(rows) else rows
    if dif.empty:
        return dif
    dif["_gap"] = [_relative_gap(p, o) for p, o in zip(dif["paper_value"], dif["ours"])]
    dif = dif.sort_values("_gap", ascending=False, na_position="last", kind="stable")
    return dif.head(k)


def difference_line(r) -> str:
    """One differing row in words: the paper's label, values rounded to the paper's precision, cause."""
    where = f"{paper_label(r['where'])}: " if str(r.get("where", "")).strip() else ""
    if r.get("kind") in ("theory-check", "arithmetic") and str(r.get("note", "")).strip():
        body = f"{paper_label(r['quantity'])} — {r['note']}"
    else:
        body = (f"{paper_label(r['quantity'])} — paper {r['paper_value'] or '—'}, "
                f"ours {round_like(r['ours'], r['paper_value']) or '—'}")
    cause = f" (cause: *{r['cause']}*)" if str(r.get("cause", "")).strip() else ""
    return _md(where + body) + cause


def summary_markdown(paper: str, frame: pd.DataFrame, rows: pd.DataFrame, summaries: dict) -> str:
    """One paper's reproducibility summary: scope, what holds, what does not and why, what was hard,
    the stand-ins — from its claims' derived verdicts."""
    if paper not in PAPERS:
        raise ValueError(f"paper must be one of {', '.join(PAPERS)}, got {paper!r}")
    _frame(frame, (*_CLAIM_LINE, "where", "untested"))
    check_ledger(rows, "rows", ("paper", "verdict", "cause"))
    if not isinstance(summaries, dict):
        raise TypeError(f"summaries must be a dict of paper → summary, got {type(summaries).__name__}")
    s, claims = summaries.get(paper, {}), frame.attrs.get("claims", {})
    sub = frame[frame["paper"] == paper]
    lines = []
    if s.get("scope"):
        lines += ["## Scope", "", _md(s["scope"]), ""]
    if len(sub):
        t = counts_table(sub).drop(columns=["paper"])
        lines += [f"## Claims ({len(sub)})", "", markdown(t), ""]
        for title, verdicts in (("What holds", ("holds",)),
                                ("What is only consistent (every row's null passes the same test)", ("consistent",)),
                                ("What holds in part, or does not, and why", ("holds in part", "not reproduced", "refuted")),
                                ("What we could not test", ("untested",))):
            part = sub[sub["verdict"].isin(verdicts)]
            if part.empty:
                continue
            lines += [f"### {title}", ""]
            for _, r in part.iterrows():
                tail = (f" — {r['untested']}" if r["verdict"] == "untested" else
                        f" — {r['passed']}/{r['judged']} rows pass ({r['scale']})"
                        + (f"; cause *{r['cause']}*: {r['why']}" if r["cause"] else ""))
                ev = evidence.links_html(evidence.deciding_ids(claims.get((paper, r["id"])), rows), f"{PAPER_PART[paper]}/summary")
                lines.append(f"* **{r['id']}** ({r['where']}, {r['verdict']}): “{_md(r['quote'])}”{_md(tail)}"
                             + (f" Evidence: {ev}." if ev else ""))
            lines.append("")
    prow = rows[rows["paper"] == paper] if len(rows) else rows
    cc = cause_counts(prow)
    if int(cc.sum()):
        lines += ["## Why rows differ", "",
                  f"{int(cc.sum())} rows of this paper differ: "
                  + ", ".join(f"{v} *{c}*" for c, v in cc.items() if v) + ".", ""]
    if s.get("hard"):
        lines += ["## What was hard", "", _md(s["hard"]), ""]
    if s.get("stand_ins"):
        lines += ["## Stand-ins", ""] + [f"* {_md(x)}" for x in s["stand_ins"]] + [""]
    return "\n".join(lines) if lines else "No claim of this paper is typed yet.\n"


def causes_by_paper(rows: pd.DataFrame) -> pd.DataFrame:
    """Differing rows per paper (the index, named ``paper``) and cause (every cause of the vocabulary a
    column; the cause ``paper`` is a column like the others)."""
    check_ledger(rows, "rows", ("paper", "verdict", "cause"))
    out, ids = [], []
    for p in PAPER_ORDER:
        sub = rows[rows["paper"] == p] if len(rows) else rows
        if len(sub):
            out.append(cause_counts(sub).to_dict())
            ids.append(p)
    return pd.DataFrame(out, index=pd.Index(ids, name="paper"), columns=list(F.CAUSES)).fillna(0).astype(int)
