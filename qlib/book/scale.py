"""The archived runs read beside a build's rows: the largest scale the book has for each chapter.

A build at a reduced profile (``smoke``, ``default``) shows, on each chapter's page, the archived run
at the largest scale beside its own rows (:func:`shown_profile`, :func:`paper_scale_rows`): ``paper``
where the chapter has such an entry, else its own reduced profile (a chapter whose ``paper`` run does
not fit a session). The findings judge the papers' claims on the rows of the archived ``paper`` runs
whose entries are current, else on the current run at a chapter's own reduced profile (labelled so), and
on this build's rows elsewhere (:func:`rows_at_largest_scale`); every row says which (``scale``) and has
an id (``<chapter>#<k>``, ``@<profile>`` for an archived run's). The rows of current runs at a chapter's
own reduced profile are also published beside the build's (:func:`reduced_scale_ledger`); a ``finding``
(a difference at the paper's scale) is never given on them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from .check import EntryStatus, check
from .layout import PROVENANCE, archive_root, entry_dir
from .schema import COLUMNS, FILENAME

__all__ = ["shown_profile", "paper_scale_rows", "rows_at_largest_scale", "reduced_scale_ledger", "archived_ledger",
           "scale_flips"]

#: archived profiles that never stand for a larger scale
_NOT_SHOWN = ("paper", "smoke", "default")


def shown_profile(chapter: str, *, archive: Path | None = None, root: Path | None = None,
                  exclude: str | None = None) -> str | None:
    """The archived profile a chapter page shows beside its own run: ``paper`` where the chapter has a
    ``paper`` entry, else the archived profile of its own name with the longest run (a chapter whose
    ``paper`` run does not fit a session: eden/05's ``eden05-fifth``), else None. ``smoke``, ``default``
    and ``exclude`` (the build's own profile) are never shown."""
    archive = Path(archive) if archive is not None else archive_root(root)
    if exclude != "paper" and (entry_dir(archive, "paper", chapter) / PROVENANCE).is_file():
        return "paper"
    best, wall = None, -1.0
    if not archive.is_dir():
        return None
    for d in sorted(p for p in archive.iterdir() if p.is_dir() and p.name not in (*_NOT_SHOWN, exclude)):
        prov = entry_dir(archive, d.name, chapter) / PROVENANCE
        if prov.is_file():
            try:
                w = float(json.loads(prov.read_text()).get("wall_s") or 0)
            except (OSError, ValueError, TypeError, AttributeError):
                w = 0.0
            if w > wall:
                best, wall = d.name, w
    return best


def _keyed(df: pd.DataFrame) -> pd.Series:
    key = df["where"].astype(str) + "\x1f" + df["quantity"].astype(str)
    return key + "\x1f" + key.groupby(key).cumcount().astype(str)


def paper_scale_rows(rows: pd.DataFrame, chapter: str, *, profile: str = "paper", archive: Path | None = None,
                     root: Path | None = None) -> pd.DataFrame:
    """``rows`` (a chapter's comparisons frame) with the archived run at ``profile`` beside it: columns
    ``ours_archived``, ``verdict_archived`` (empty where the archive has no such row) and ``k_archived``
    (the archived row's place in its run, the ``k`` of its id; 0 where there is none), the archived rows
    this build lacks in ``attrs["archived_only"]``, and the entry's status (an :class:`~qlib.book.check.EntryStatus`, or None when there is no entry) in
    ``attrs["archived"]``. Rows are matched by (where, quantity, occurrence)."""
    archive = Path(archive) if archive is not None else archive_root(root)
    df = rows.copy()
    df["ours_archived"] = ""
    df["verdict_archived"] = ""
    df.attrs["archived"] = None
    d = entry_dir(archive, profile, chapter)
    if not (d / PROVENANCE).is_file():
        return df
    try:
        status = next(s for s in check(root, archive=archive) if s.profile == profile and s.chapter == chapter)
    except (StopIteration, FileNotFoundError):
        return df
    df.attrs["archived"] = status
    if status.state == "invalid":
        return df
    arch = pd.read_csv(d / FILENAME, dtype=str, keep_default_na=False)
    if arch.empty or df.empty:
        return df
    akeys = _keyed(arch)
    amap = dict(zip(akeys, zip(arch["ours"], arch["verdict"], range(1, len(arch) + 1))))
    keys = _keyed(df)
    df["ours_archived"] = [amap.get(k, ("", "", 0))[0] for k in keys]
    df["verdict_archived"] = [amap.get(k, ("", "", 0))[1] for k in keys]
    # the archived row's place in its run (its id's k, ``<chapter>#<k>@<profile>``): a claim judged on the
    # archived run links there (:func:`qlib.book.evidence.anchor`); 0 where the archive has no such row
    df["k_archived"] = [amap.get(k, ("", "", 0))[2] for k in keys]
    # the archived run's rows that this build does not have (a paper-only task, a larger grid): shown below
    # the table so that every archived id a claim can cite lands on a row of the page
    only = arch.assign(k_archived=range(1, len(arch) + 1))[~akeys.isin(set(keys)).to_numpy()]
    df.attrs["archived_only"] = only.reset_index(drop=True)
    return df


def _statuses(root: Path | None, arch_dir: Path) -> list[EntryStatus]:
    try:
        return check(root, archive=arch_dir)
    except FileNotFoundError:  # no book root: no archive to read
        return []


def _archived_scale(profile: str, s: EntryStatus) -> str:
    dev = s.provenance.get("device", {})
    return f"{profile} (archived {str(s.provenance.get('finished', ''))[:10]}, " \
           f"{dev.get('gpu') or dev.get('cpu') or dev.get('resolved', '?')})"


def _ids(df: pd.DataFrame, tag: str = "") -> list[str]:
    k = df.groupby("chapter", sort=False).cumcount().to_numpy() + 1
    return [f"{c}#{n}" + (f"@{tag}" if tag else "") for c, n in zip(df["chapter"].astype(str), k)]


def rows_at_largest_scale(rows: pd.DataFrame, *, build_profile: str, archive: Path | None = None,
                          root: Path | None = None) -> pd.DataFrame:
    """The ledger rows the findings judge: per chapter, the archived ``paper`` run's rows where its
    entry is current (``scale`` "paper (archived <date>, <device>)", ids ``<chapter>#<k>@paper``), else
    the current archived run at the chapter's own reduced profile with the longest run where there is
    one (eden/05's ``eden05-no-shakespeare``: ``scale`` "<profile> (archived …)", ids ``…@<profile>``),
    else this build's (``scale`` its profile, ids ``<chapter>#<k>``). ``attrs["stale"]``: the chapters
    whose archived entry is stale (left out)."""
    df = rows.copy()
    df["scale"] = build_profile
    if "id" not in df.columns:
        df["id"] = _ids(df) if len(df) else []
    stale = {}
    if build_profile == "paper":
        df.attrs["stale"] = stale
        return df
    arch_dir = Path(archive) if archive is not None else archive_root(root)
    frames = [df]
    statuses = _statuses(root, arch_dir)
    taken: set[str] = set()
    reduced: dict[str, tuple[float, EntryStatus]] = {}
    for s in statuses:
        if s.profile in _NOT_SHOWN or s.state != "current":
            continue
        w = float(s.provenance.get("wall_s") or 0)
        if s.chapter not in reduced or w > reduced[s.chapter][0]:
            reduced[s.chapter] = (w, s)
    chosen = [s for s in statuses if s.profile == "paper"]
    for s in chosen:
        if s.state != "current":
            stale[s.chapter] = "; ".join(s.changes or s.problems)
    chosen = [s for s in chosen if s.state == "current"]
    have = {s.chapter for s in chosen}
    chosen += [s for c, (_, s) in sorted(reduced.items()) if c not in have]
    for s in chosen:
        a = pd.read_csv(entry_dir(arch_dir, s.profile, s.chapter) / FILENAME, dtype=str, keep_default_na=False)
        if a.empty or s.chapter in taken:
            continue
        taken.add(s.chapter)
        for c in df.columns:
            if c not in a.columns:
                a[c] = ""
        a["scale"] = _archived_scale(s.profile, s)
        a["id"] = _ids(a, s.profile)
        frames[0] = frames[0][frames[0]["chapter"] != s.chapter]
        frames.append(a[df.columns])
    out = pd.concat(frames, ignore_index=True)
    out.attrs["stale"] = stale
    return out


def reduced_scale_ledger(root: Path | None = None, *, archive: Path | None = None) -> pd.DataFrame:
    """The rows of every *current* archived run at a chapter's own reduced profile (not ``paper``,
    ``smoke`` or ``default``: a chapter whose ``paper`` run does not fit a session, such as eden/05's
    ``eden05-fifth``), with a ``scale`` column ("<profile> (archived <date>, <device>)"). They are shown
    and published beside the build's rows; the findings do not count them as the paper's scale."""
    arch_dir = Path(archive) if archive is not None else archive_root(root)
    frames = []
    for s in (s for s in _statuses(root, arch_dir) if s.profile not in _NOT_SHOWN):
        if s.state != "current":
            continue
        a = pd.read_csv(entry_dir(arch_dir, s.profile, s.chapter) / FILENAME, dtype=str, keep_default_na=False)
        if a.empty:
            continue
        for c in COLUMNS:
            if c not in a.columns:
                a[c] = ""
        a["scale"] = _archived_scale(s.profile, s)
        frames.append(a[[*COLUMNS, "scale"]])
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=[*COLUMNS, "scale"])


def archived_ledger(root: Path | None = None, *, archive: Path | None = None) -> pd.DataFrame:
    """The rows of every *current* archived ``paper`` run, with a ``scale`` column ("paper (archived …)")."""
    empty = pd.DataFrame(columns=[*COLUMNS, "scale", "id"])
    both = rows_at_largest_scale(empty, build_profile="none", archive=archive, root=root)
    return both[both["scale"].str.startswith("paper (")].reset_index(drop=True) if len(both) else both


def scale_flips(rows: pd.DataFrame, archived: pd.DataFrame) -> pd.DataFrame:
    """Rows whose verdict at this build's scale differs from the archived ``paper`` run's (matched by
    chapter, where, quantity and occurrence): chapter, where, quantity, paper, ours and verdict at each."""
    cols = ["chapter", "where", "quantity", "paper_value", "ours", "verdict", "ours at paper", "verdict at paper"]
    if rows.empty or archived.empty:
        return pd.DataFrame(columns=cols)

    def keyed(d):
        k = ["chapter", "where", "quantity"]
        return d.assign(_n=d.groupby(k).cumcount())

    m = keyed(rows).merge(keyed(archived)[["chapter", "where", "quantity", "_n", "ours", "verdict"]],
                          on=["chapter", "where", "quantity", "_n"], suffixes=("", " at paper"))
    m = m[m["verdict"] != m["verdict at paper"]]
    return m[cols].reset_index(drop=True)
