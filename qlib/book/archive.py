"""The archive of long runs: a notebook's results at a profile (``paper``, or the largest scale a
machine could run), stored in the repository with their provenance and shown in every build.

:func:`archive` runs the notebooks at the profile (or takes them executed, from a runner's tree) and at
``smoke`` on the CPU, and :func:`store` makes each finished one an entry (:mod:`qlib.book.layout`: its
rows, its smoke rows, its printed text, its figures' data, its small result files and its provenance —
the commit, the machine, the packages, every parameter as the value that ran and the **inputs stamp**
the run started with, :mod:`qlib.stamp`). Nothing is archived from a working tree whose ``qlib``,
``chapters`` or ``profiles`` have uncommitted changes (the commit would not name the code that ran).
:mod:`qlib.book.check` compares an entry's stamp with today's: a refactor of a module the notebook does
not reach leaves its entry current; a change to one it reaches marks it **stale**. :func:`revalidate`
re-runs a stale entry's ``smoke`` rows and its spot unit (:mod:`qlib.book.spot`: one unit of the notebook
at the paper's full size) on today's code: when both give the archived rows the entry is carried forward
(its provenance kept, the revalidation recorded beside it); otherwise it stays stale, and the log names
the rows that moved.

``python -m qlib.book archive``, ``archive-check``, ``archive-revalidate`` and ``archive-spot`` are the
command line (``make archive``, ``make archive-check``, ``make archive-revalidate``, ``make archive-spot``).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterable

import pandas as pd

from ..atomic import replace_folder, write_text
from ..plotting.capture import compact_file
from . import runner
from .check import EntryStatus, check
from .jobs import read_stamp, result_files
from .layout import FIGURES, FILES, MAX_FILE, OUTPUTS, PROVENANCE, SCHEMA, SMOKE_ROWS, archive_root, entries, entry_dir
from .machine import git, iso, machine, packages
from .options import RunOptions, check_unused, options_record
from .profiles import cell_parameters, profile_name
from .schema import COLUMNS, FILENAME
from .spot import close_cells, measured_time, run_spot, spot_for
from .stamps import code_cells, current_params, notebook_stamp, object_reprs, plain_params, resolved_parameters
from .toc import chapter_id, find_root, notebooks, select

__all__ = ["MAX_TEXT", "DirtyTree", "text_outputs", "uncommitted", "store", "attach_smoke", "ARCHIVE_OPTIONS",
           "ARCHIVE_FIELDS", "archive", "measured_time", "revalidate", "spot_checks"]

#: text of one output cell kept in outputs.json (longer text is cut, saying so)
MAX_TEXT = 20_000
#: extensions of the result files archived beside the rows
_FILE_EXT = (".csv", ".json", ".txt", ".md")


def text_outputs(executed: Path) -> list[dict]:
    """The text an executed notebook printed: streams, Markdown and plain-text displays, per cell."""
    nb = json.loads(Path(executed).read_text())
    out = []
    for i, c in enumerate(nb.get("cells", [])):
        for o in c.get("outputs", []) or []:
            kind = o.get("output_type")
            if kind == "stream":
                text, mime = o.get("text", ""), "text/plain"
            elif kind in ("display_data", "execute_result"):
                data = o.get("data", {})
                mime = next((m for m in ("text/markdown", "text/plain") if m in data), None)
                if mime is None or any(k.startswith("image/") for k in data):
                    continue
                text = data[mime]
            else:
                continue
            text = "".join(text) if isinstance(text, list) else str(text)
            if len(text) > MAX_TEXT:
                text = text[:MAX_TEXT] + f"\n… ({len(text) - MAX_TEXT} characters cut)"
            out.append({"cell": i, "kind": kind, "mime": mime, "text": text})
    return out


def _write_json(path: Path, obj) -> None:
    write_text(path, json.dumps(obj, indent=1, sort_keys=True, default=str) + "\n")


class DirtyTree(ValueError):
    """The working tree has uncommitted changes in what a run reads: nothing is archived from it."""


#: the folders whose uncommitted changes would make an entry's commit misname the code that ran
_TRACKED = ("qlib", "chapters", "profiles")


def uncommitted(root: Path) -> str:
    """``git status --porcelain`` of :data:`_TRACKED` in ``root`` (empty: a clean tree, or no checkout)."""
    return git(root, "status", "--porcelain", "--", *_TRACKED)


def _refuse_dirty(root: Path, what: str) -> None:
    dirty = uncommitted(root)
    if dirty:
        files = dirty.splitlines()
        raise DirtyTree(f"{what} refused: the working tree has uncommitted changes in {', '.join(_TRACKED)} "
                        f"({len(files)}: {'; '.join(f.strip() for f in files[:5])}{' …' if len(files) > 5 else ''}); "
                        "commit them first, so that the entry's commit is the code that ran")


def store(root: Path, out: Path, nb: str, *, archive: Path | None = None, smoke_out: Path | None = None,
          data_dir: str | None = None) -> Path:
    """Store one executed notebook of the runner's tree ``out`` (its stamp, results and executed
    notebook) as an archive entry; ``smoke_out``: a runner's tree holding the same notebook run at
    ``smoke`` on the CPU (its rows are kept for :func:`revalidate`). The entry's inputs stamp is the one
    the runner recorded when the run started; a tree whose stamps have none (an older runner's) gets
    one from the code cells of the executed notebook (the code that ran) and today's files. Every
    parameter is recorded as the value that ran (the executed parameters cell's, a computed one evaluated,
    :func:`~qlib.book.stamps.resolved_parameters`; anything else is refused,
    :func:`~qlib.book.stamps.plain_params`). Refuses (:class:`DirtyTree`) a working tree with uncommitted
    changes. Returns the entry's folder."""
    root, out = Path(root), Path(out)
    _refuse_dirty(root, f"archiving {nb}")
    cid = chapter_id(nb)
    stamp_file = out / ".stamps" / Path(nb).with_suffix(".json")
    st = read_stamp(stamp_file)
    executed = out / "chapters" / nb
    results = out / "_results" / cid
    if not st or not executed.is_file():
        raise FileNotFoundError(f"{nb} has no finished run in {out} (no stamp or executed notebook)")
    enb = json.loads(executed.read_text())
    injected = ((enb.get("metadata") or {}).get("papermill") or {}).get("parameters") or {}
    params = plain_params({**resolved_parameters(executed), **injected})  # the parameters cell that ran
    stamped = {**cell_parameters(root / "chapters" / nb), **injected}  # as the stamps read them (check.check)
    profile = str(st.get("profile") or params.get("profile") or "")
    dest = entry_dir(archive or archive_root(root), profile, cid)
    tmp = dest.with_name(f".{dest.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    rows = results / FILENAME
    if rows.is_file():
        shutil.copy2(rows, tmp / FILENAME)
    else:
        (tmp / FILENAME).write_text(",".join(COLUMNS) + "\n")
    if smoke_out is not None:
        srows = Path(smoke_out) / "_results" / cid / FILENAME
        if srows.is_file():
            shutil.copy2(srows, tmp / SMOKE_ROWS)
    figs = results / FIGURES
    if figs.is_dir():
        shutil.copytree(figs, tmp / FIGURES)
        for f in (tmp / FIGURES).glob("*.npz"):
            compact_file(f)
    for f in result_files(results):
        rel = f.relative_to(results)
        if (f.suffix in _FILE_EXT and f.name != FILENAME and rel.parts[0] not in (FIGURES, "cache")
                and f.stat().st_size <= MAX_FILE):
            (tmp / FILES / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, tmp / FILES / rel)
    _write_json(tmp / OUTPUTS, text_outputs(executed))
    when, seconds = float(st.get("when", 0.0)), float(st.get("seconds", 0.0))
    data = data_dir or os.environ.get("QLIB_DATA_DIR", "")
    stamp = st.get("inputs")
    if not (isinstance(stamp, dict) and stamp.get("hash")):
        stamp = notebook_stamp(root, nb, stamped, data_dir=data, cells={nb: code_cells(executed)})
    head = git(root, "rev-parse", "HEAD")
    prov = {"schema": SCHEMA, "chapter": cid, "notebook": nb, "profile": profile,
            "params": params, "commit": head, "dirty": False,
            "device": machine(str(params.get("device", "auto")), params.get("threads")),
            "started": iso(when - seconds), "finished": iso(when), "wall_s": round(seconds, 1),
            "packages": packages(), "data": {k: v for k, v in stamp["data"].items()}, "stamp": stamp,
            "runner_stamp": st.get("hash", ""), "archived": iso(_dt.datetime.now().timestamp()),
            "smoke_rows": (tmp / SMOKE_ROWS).is_file(), "revalidated": []}
    _write_json(tmp / PROVENANCE, prov)
    return replace_folder(tmp, dest)


def attach_smoke(*, root: Path | None = None, profile: str = "paper", only: Iterable[str] | None = None,
                 data_dir: str | None = None, log=print) -> list[Path]:
    """Run the selected notebooks that have an entry at ``profile`` at ``smoke`` on this machine's CPU
    and keep those rows in their entries (``smoke-comparisons.csv``): for entries archived elsewhere
    (a lent GPU machine) with ``--no-smoke``, so that :func:`revalidate` compares rows of this machine.
    Refuses (:class:`DirtyTree`) a working tree with uncommitted changes."""
    root = find_root(root)
    _refuse_dirty(root, "attaching smoke rows")
    arch = archive_root(root)
    have = {c for p, c in entries(arch) if p == profile}
    selected = [nb for nb in select(notebooks(root), only) if nb.removesuffix(".ipynb") in have]
    if not selected:
        log(f"no entry at profile {profile!r} to attach smoke rows to")
        return []
    out = (root / "_build" / "archive-smoke").resolve()
    log(runner.run(root, _smoke(selected, data_dir, out), log=log).summary())
    done = []
    for nb in selected:
        cid = nb.removesuffix(".ipynb")
        rows = out / "_results" / cid / FILENAME
        d = entry_dir(arch, profile, cid)
        if rows.is_file():
            shutil.copy2(rows, d / SMOKE_ROWS)
            prov = json.loads((d / PROVENANCE).read_text())
            prov["smoke_rows"] = True
            prov["smoke_commit"] = git(root, "rev-parse", "HEAD")
            _write_json(d / PROVENANCE, prov)
            done.append(d)
            log(f"[smoke] {profile}/{cid}")
    return done


#: the run options of :func:`archive` when none are given: the ``paper`` profile
ARCHIVE_OPTIONS = RunOptions(profile="paper")
#: the fields of :class:`~qlib.book.options.RunOptions` that :func:`archive` honours (it runs on one seed,
#: in this process or a local Dask cluster, without a progress bar)
ARCHIVE_FIELDS = ("profile", "only", "device", "data_dir", "output_dir", "overrides", "jobs", "force", "resume",
                  "timeout")


def _smoke(selected: list[str], data_dir, out: Path, *, force: bool = False) -> RunOptions:
    """The options of a run of ``selected`` at ``smoke`` on the CPU, one notebook at a time, into ``out``."""
    return RunOptions(profile="smoke", only=selected, device="cpu", data_dir=data_dir, output_dir=out, jobs=1,
                      progress=False, force=force)


def archive(root: Path | None = None, options: RunOptions | None = None, *, from_dir: Path | None = None,
            smoke: bool = True, log=print) -> list[Path]:
    """Run the notebooks ``options`` selects at its profile (a :class:`~qlib.book.options.RunOptions`;
    None: :data:`ARCHIVE_OPTIONS`; the fields outside :data:`ARCHIVE_FIELDS` are refused) — or take
    them, executed, from the runner's tree ``from_dir`` — run each at ``smoke`` on the CPU too
    (``smoke=False``: not), and store every finished one as an archive entry. Returns the entries
    written; a notebook that failed is named in the log and left out (its earlier entry, if any,
    stays). The appendix is never archived. Refuses (:class:`DirtyTree`, before anything runs) a working
    tree with uncommitted changes in ``qlib``, ``chapters`` or ``profiles``."""
    opts = options_record(options, ARCHIVE_OPTIONS)
    check_unused(opts, ARCHIVE_FIELDS, name="archive")
    data_dir = opts.data_dir
    root = find_root(root)
    _refuse_dirty(root, "archive")
    selected = [nb for nb in select(notebooks(root), opts.only) if not nb.startswith("appendix/")]
    if from_dir is not None:
        out = Path(from_dir).resolve()
    else:
        out = Path(opts.output_dir or root / "_build" / f"archive-{profile_name(opts.profile)}").resolve()
        report = runner.run(root, RunOptions(profile=opts.profile, only=selected, device=opts.device,
                                             data_dir=data_dir, output_dir=out, overrides=opts.overrides,
                                             jobs=opts.jobs, force=opts.force, timeout=opts.timeout,
                                             resume=opts.resume, progress=False), log=log)
        log(report.summary())
    smoke_out = None
    if smoke:
        smoke_out = out.with_name(out.name + "-smoke")  # beside the run's tree: two archive runs never share it
        log(runner.run(root, _smoke(selected, data_dir, smoke_out), log=log).summary())
    written = []
    for nb in selected:
        try:
            written.append(store(root, out, nb, smoke_out=smoke_out, data_dir=data_dir))
            log(f"[arch] {nb} → {written[-1]}")
        except FileNotFoundError as exc:
            log(f"[miss] {exc}")
    return written


def _same_rows(a: Path, b: Path, atol: float = 0.0) -> list[str]:
    """Differences between two comparisons files (empty: identical rows); ``atol`` (the chapter's spot unit's,
    :class:`qlib.book.spot.Spot`): the numbers of ``ours`` and ``tolerance`` may differ by that much (rows that
    measure a round-off error, which moves between two runs on one machine as on two)."""
    x = pd.read_csv(a, dtype=str, keep_default_na=False)
    y = pd.read_csv(b, dtype=str, keep_default_na=False)
    # the cause is the findings' reading of a row, applied when rows are read: not a result to compare
    cols = [c for c in COLUMNS if c in x.columns and c in y.columns and c != "cause"]
    if len(x) != len(y):
        return [f"{len(x)} rows archived, {len(y)} now"]
    diff = []
    for i in range(len(x)):
        # a measured time changes from run to run on any machine: its verdict is compared, not its value
        timed = measured_time(x.iloc[i].get("where", ""), x.iloc[i]["quantity"])
        for c in cols:
            if timed and c == "ours":
                continue
            same = x.iloc[i][c] == y.iloc[i][c] or (
                atol > 0 and c in ("ours", "tolerance") and close_cells(x.iloc[i][c], y.iloc[i][c], None, atol))
            if not same:
                diff.append(f"row {i + 1} ({x.iloc[i]['quantity']}): {c} {x.iloc[i][c]!r} → {y.iloc[i][c]!r}")
    return diff


def _selected(chapter: str, only: Iterable[str] | None) -> bool:
    return not only or any(chapter.startswith(o.removeprefix("chapters/").removesuffix(".ipynb")) for o in only)


def _resolve_recorded(root: Path, prov: dict) -> dict:
    """The parameters an entry recorded as an object's repr (an older ``store``), resolved from the
    notebook's parameters cell at the entry's commit (the value that ran: the profile and the runner's
    injected parameters did not set them, else their value would have been recorded). Raises
    ``ValueError`` where that notebook cannot be read."""
    names = object_reprs(prov["params"])
    text = git(root, "show", f"{prov['commit']}:chapters/{prov['notebook']}")
    if not text:
        raise ValueError(f"the notebook at commit {str(prov['commit'])[:10]} cannot be read to resolve {names}")
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "nb.ipynb").write_text(text)
        cell = resolved_parameters(Path(tmp) / "nb.ipynb")
    missing = [k for k in names if k not in cell]
    if missing:
        raise ValueError(f"the parameters cell at commit {str(prov['commit'])[:10]} does not assign {missing}")
    return plain_params({k: cell[k] for k in names})


def spot_checks(root: Path | None = None, *, archive: Path | None = None, data_dir: str | None = None,
                only: Iterable[str] | None = None, log=print) -> list:
    """Run the spot unit (:mod:`qlib.book.spot`) of every selected entry that is not invalid, whatever its
    state, and compare its rows with the archive's; writes nothing in the archive. Returns the
    :class:`~qlib.book.spot.SpotResult` of each."""
    root = find_root(root)
    archive = Path(archive) if archive is not None else archive_root(root)
    out = (root / "_build" / "archive-spot").resolve()
    results = []
    for s in check(root, archive=archive, data_dir=data_dir):
        if s.state == "invalid" or not _selected(s.chapter, only):
            continue
        results.append(run_spot(root, archive, s.profile, s.chapter, out=out, data_dir=data_dir, log=log))
        log(results[-1].line())
    return results


def revalidate(root: Path | None = None, *, archive: Path | None = None, data_dir: str | None = None,
               only: Iterable[str] | None = None, dry_run: bool = False, log=print) -> list[EntryStatus]:
    """Re-run, on today's code and this machine's CPU, the ``smoke`` rows and the spot unit (one unit at
    the paper's full size, :mod:`qlib.book.spot`) of every stale entry (of ``only`` chapters); where both
    equal the archived rows, carry the entry forward: its stamp becomes today's, its provenance stays, and
    the revalidation (commit, date, what had changed, the spot unit and the rows it compared) is recorded
    beside it; parameters an older entry recorded as an object's repr are resolved from its notebook at
    its commit. An entry whose smoke or spot rows moved stays stale, and the log names the rows. A dirty
    entry (run from uncommitted code) is never carried forward. ``dry_run``: compute and report, write
    nothing; otherwise refuses (:class:`DirtyTree`) a working tree with uncommitted changes, whose
    commit would not name the code the entries are carried to."""
    root = find_root(root)
    if not dry_run:
        _refuse_dirty(root, "archive-revalidate (use --dry-run to only report)")
    archive = Path(archive) if archive is not None else archive_root(root)
    statuses = [s for s in check(root, archive=archive, data_dir=data_dir) if _selected(s.chapter, only)]
    for s in statuses:
        if s.state == "dirty":
            log(f"[dirty] {s.profile}/{s.chapter}: {s.changes[0]}")
    stale = []
    for s in (s for s in statuses if s.state == "stale"):
        unit = spot_for(s.chapter)
        if isinstance(unit, str):  # nothing to hold the paper-scale rows to: not worth its smoke run either
            log(f"[stale] {s.profile}/{s.chapter}: no spot unit ({unit}); run it again")
        else:
            stale.append(s)
    if not stale:
        log("no stale entry to revalidate")
        return []
    nbs = sorted({s.provenance["notebook"] for s in stale})
    out = (root / "_build" / "archive-revalidate").resolve()
    rep = runner.run(root, _smoke(nbs, data_dir, out, force=True), log=log)
    log(rep.summary())
    done = []
    for s in stale:
        d = entry_dir(archive, s.profile, s.chapter)
        now_rows = out / "_results" / s.chapter / FILENAME
        if not s.provenance.get("smoke_rows") or not now_rows.is_file():
            log(f"[stale] {s.profile}/{s.chapter}: no smoke rows to compare")
            continue
        diff = _same_rows(d / SMOKE_ROWS, now_rows, atol=spot_for(s.chapter).atol)
        if diff:
            log(f"[stale] {s.profile}/{s.chapter}: smoke rows changed ({len(diff)}): {diff[0]}")
            continue
        spot = run_spot(root, archive, s.profile, s.chapter, out=out.with_name("archive-spot"), data_dir=data_dir,
                        log=log)
        log(spot.line())
        if not spot.ok:
            log(f"[stale] {s.profile}/{s.chapter}: smoke rows identical, but the spot check "
                + (f"did not run ({spot.error})" if spot.error else f"moved {len(spot.diffs)} row(s)"))
            continue
        prov = s.provenance
        try:
            resolved = _resolve_recorded(root, prov) if object_reprs(prov["params"]) else {}
        except ValueError as exc:
            log(f"[stale] {s.profile}/{s.chapter}: {exc}")
            continue
        nb = prov["notebook"]
        record = {"commit": git(root, "rev-parse", "HEAD"), "when": iso(_dt.datetime.now().timestamp()),
                  "changed": s.changes, "smoke_rows": "identical",
                  "spot": {"unit": spot_unit(s.chapter), "rows": spot.compared, "seconds": round(spot.seconds, 1),
                           "result": "identical"}}
        if resolved:
            record["params_resolved"] = sorted(resolved)
        if dry_run:
            log(f"[would carry] {s.profile}/{s.chapter}: smoke and spot rows identical (dry run: nothing written)")
            continue
        prov["params"].update(resolved)
        prov.setdefault("revalidated", []).append(record)
        prov["stamp"] = notebook_stamp(root, nb, current_params(root, nb, s.profile), data_dir=data_dir)
        _write_json(d / PROVENANCE, prov)
        log(f"[carry] {s.profile}/{s.chapter}: smoke and spot rows identical; carried forward")
        s.state, s.changes = "current", []
        done.append(s)
    return done


def spot_unit(chapter: str) -> str:
    """The spot unit of ``chapter`` in words (with its parameters), for an entry's revalidation record."""
    sp = spot_for(chapter)
    return sp if isinstance(sp, str) else sp.unit + (f" ({sp.overrides})" if sp.overrides else "")
