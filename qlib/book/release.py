"""Releases: which ledger rows — and which of the papers' claims (``findings.csv``) — changed verdict
between two builds of the book.

A published site carries every comparison row in ``ledger.csv`` (:mod:`qlib.book.publish`); an
executed tree has them under ``_results/``. :func:`verdict_changes` compares two such gatherings row by
row — rows are matched on chapter, paper, kind, where, quantity and, for rows that share all five,
their order — and lists the rows whose verdict flipped, and those added or removed::

    python -m qlib.book.release old-site/ _build/site/          # Markdown, for the release notes
    python -m qlib.book.release v0.1.0/ledger.csv _build/book/_results
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import pandas as pd

from .gathering import gather
from .render import book_order

__all__ = ["KEYS", "CHANGE_COLUMNS", "load_ledger", "verdict_changes", "load_findings", "claim_changes", "claims_markdown", "changelog_markdown", "main"]

KEYS = ["chapter", "paper", "kind", "where", "quantity"]
CHANGE_COLUMNS = [*KEYS, "old verdict", "new verdict", "old ours", "new ours", "change"]


def load_ledger(source: str | os.PathLike | pd.DataFrame) -> pd.DataFrame:
    """The comparison rows of ``source``: a frame as :func:`qlib.book.gathering.gather` returns, a
    ``ledger.csv`` / ``comparisons.csv`` file, a published site folder (its ``ledger.csv``) or a results
    folder (gathered). The appendix's own rows are left out (they restate the others)."""
    if isinstance(source, pd.DataFrame):
        rows = source
    else:
        path = Path(source)
        if path.is_file():
            rows = pd.read_csv(path, dtype=str, keep_default_na=False)
        elif (path / "ledger.csv").is_file():
            rows = pd.read_csv(path / "ledger.csv", dtype=str, keep_default_na=False)
        elif path.is_dir():
            rows = gather(path / "_results" if (path / "_results").is_dir() else path)
        else:
            raise FileNotFoundError(f"no ledger at {path} (a ledger.csv, a site folder or a results folder)")
    missing = set(KEYS + ["verdict", "ours"]) - set(rows.columns)
    if missing:
        raise ValueError(f"the ledger lacks columns {sorted(missing)}")
    rows = rows[~rows["chapter"].astype(str).str.startswith("appendix/")]
    if "scale" in rows.columns:  # a published ledger also holds the archived paper runs: compare the builds' own rows
        rows = rows[~rows["scale"].astype(str).str.startswith("paper (")]
    return rows.astype({k: str for k in KEYS + ["verdict", "ours"]}).reset_index(drop=True)


def _keyed(rows: pd.DataFrame) -> pd.DataFrame:
    return rows.assign(occurrence=rows.groupby(KEYS).cumcount())[[*KEYS, "occurrence", "verdict", "ours"]]


def verdict_changes(old, new, *, added_and_removed: bool = True) -> pd.DataFrame:
    """The rows whose verdict differs between the ledgers ``old`` and ``new`` (anything
    :func:`load_ledger` reads): ``change`` is ``flipped``, or — with ``added_and_removed`` — ``added`` /
    ``removed`` for a row only one of them has. In book order; empty when nothing changed."""
    a, b = _keyed(load_ledger(old)), _keyed(load_ledger(new))
    m = a.merge(b, on=[*KEYS, "occurrence"], how="outer", suffixes=(" old", " new"), indicator=True)
    m = m.rename(columns={"verdict old": "old verdict", "verdict new": "new verdict", "ours old": "old ours",
                          "ours new": "new ours"})
    m["change"] = m["_merge"].map({"both": "flipped", "left_only": "removed", "right_only": "added"}).astype(str)
    keep = (m["change"] == "flipped") & (m["old verdict"] != m["new verdict"])
    if added_and_removed:
        keep |= m["change"] != "flipped"
    out = m[keep][CHANGE_COLUMNS].fillna("")
    return book_order(out).reset_index(drop=True) if len(out) else pd.DataFrame(columns=CHANGE_COLUMNS)


def load_findings(source: str | os.PathLike) -> pd.DataFrame | None:
    """The claims of ``source`` (``findings.csv``, a site folder, an executed tree or its ``_results``),
    or None when it has none (a release without ``findings.csv``)."""
    path = Path(source)
    for cand in (path, path / "findings.csv", path / "_results" / "findings.csv", path.parent / "findings.csv"):
        if cand.is_file() and cand.name == "findings.csv":
            return pd.read_csv(cand, dtype=str, keep_default_na=False)
    return None


def claim_changes(old, new) -> pd.DataFrame:
    """Claims whose verdict differs between two releases (``added`` / ``removed`` for a claim only one
    has); empty when either has no ``findings.csv``."""
    cols = ["paper", "id", "quote", "old verdict", "new verdict", "change"]
    a, b = load_findings(old), load_findings(new)
    if a is None or b is None:
        return pd.DataFrame(columns=cols)
    m = a[["paper", "id", "quote", "verdict"]].merge(b[["paper", "id", "quote", "verdict"]], on=["paper", "id"],
                                                     how="outer", suffixes=(" old", " new"), indicator=True)
    m["quote"] = m["quote new"].fillna(m["quote old"])
    m = m.rename(columns={"verdict old": "old verdict", "verdict new": "new verdict"})
    m["change"] = m["_merge"].map({"both": "flipped", "left_only": "removed", "right_only": "added"}).astype(str)
    keep = (m["change"] != "flipped") | (m["old verdict"] != m["new verdict"])
    return m[keep][cols].fillna("").reset_index(drop=True)


def claims_markdown(changes: pd.DataFrame, old_label: str = "old", new_label: str = "new") -> str:
    """The claims whose verdict changed, as Markdown for release notes."""
    if changes.empty:
        return f"No claim changed verdict between {old_label} and {new_label}."
    lines = [f"Claims whose verdict changed between {old_label} and {new_label}: {len(changes)}.", "",
             f"| paper | claim | {old_label} | {new_label} | change |", "|---|---|---|---|---|"]
    for _, r in changes.iterrows():
        q = str(r["quote"]).replace("|", r"\|")
        lines.append(f"| {r['paper']} | {r['id']}: {q} | {r['old verdict'] or '—'} | {r['new verdict'] or '—'} | "
                     f"{r['change']} |")
    return "\n".join(lines)


def changelog_markdown(changes: pd.DataFrame, old_label: str = "old", new_label: str = "new") -> str:
    """The verdict changes as Markdown for release notes: a count per kind of change, then a table."""
    if changes.empty:
        return f"No ledger row changed verdict between {old_label} and {new_label}."
    n = changes["change"].value_counts()
    head = ", ".join(f"{int(n[c])} {c}" for c in ("flipped", "added", "removed") if c in n)
    lines = [f"Ledger rows that changed between {old_label} and {new_label}: {head}.", "",
             f"| chapter | where | quantity | kind | {old_label} | {new_label} | ours ({old_label} → {new_label}) |",
             "|---|---|---|---|---|---|---|"]
    def cell(v) -> str:
        return str(v).replace("|", r"\|").replace("\n", " ")

    for _, r in changes.iterrows():
        lines.append("| " + " | ".join(cell(x) for x in (
            r["chapter"], r["where"], r["quantity"], r["kind"], r["old verdict"] or "—", r["new verdict"] or "—",
            f"{r['old ours'] or '—'} → {r['new ours'] or '—'}")) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m qlib.book.release", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("old", help="the earlier ledger: a site folder, ledger.csv, or a results folder")
    ap.add_argument("new", help="the later ledger")
    ap.add_argument("--flips-only", action="store_true", help="leave out rows added or removed")
    args = ap.parse_args(argv)
    try:
        changes = verdict_changes(args.old, args.new, added_and_removed=not args.flips_only)
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(changelog_markdown(changes, args.old, args.new))
    claims = claim_changes(args.old, args.new)
    if load_findings(args.old) is not None and load_findings(args.new) is not None:
        print()
        print(claims_markdown(claims, args.old, args.new))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
