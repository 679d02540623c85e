"""The ledger in numbers: rows counted per verdict, paper and kind (the headline counts only paper
numbers and claims whose stated null fails the same test), errata counted once each, the rows that
break the counting rule, and the stability of each row's verdict over replicate seeds.

Every function takes rows as :mod:`qlib.book.compare` writes them (the columns of
:data:`qlib.book.schema.COLUMNS`) and returns a frame, a mask or a list; none reads a file.
"""

from __future__ import annotations

import re
from typing import Iterable

import pandas as pd

from qlib.repro import ledger
from qlib.repro.ledger import KINDS, REPRODUCING_KINDS, VERDICTS

from .render import PART_ORDER, SETTLED
from .schema import PART_PAPER

__all__ = ["counts_by", "reproduced_mask", "ledger_defects", "papers_in_book_order", "verdicts_by_paper",
           "by_paper_and_kind", "ERRATUM_ID", "distinct_errata", "stability"]


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
    out = []
    for p in papers:
        d = df[df["paper"] == p]
        rec = {"paper": p}
        for k in KINDS:
            dk = d[d["kind"] == k]
            if k in ("not-implemented", "not-available-offline"):
                rec[k] = str(len(dk))
            else:
                rec[k] = f"{int(dk['verdict'].isin(SETTLED).sum())}/{len(dk)}" if len(dk) else "0"
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

