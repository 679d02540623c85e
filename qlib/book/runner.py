"""Papermill batch runner.

Executes the book's notebooks (all, or a subset) under a named parameter profile into an output
tree that the book is then built from::

    <output>/chapters/<part>/<nb>.ipynb      executed notebooks (only complete ones ever land here)
    <output>/_results/<part>/<nb>/           each notebook's result files (comparisons.csv, …)
    <output>/.stamps/<part>/<nb>.json        input hash of the last successful run
    <output>/.failed/<part>/<nb>.ipynb       the partially executed notebook of a failed run

A notebook is skipped when its inputs — the notebook, its parameters, the ``qlib`` sources, the
device and data directory (and, for the appendix, every other notebook's results) — hash to the
stamp of its last successful run, unless ``force``. Every selected notebook runs even when an earlier
one fails; the outcome lists one line per failure.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any, Iterable

import yaml

from . import profiles as _profiles
from .compare import FILENAME as COMPARISONS_FILE
from .compare import STAMPS
from .jobs import (  # noqa: F401 - re-exported: the runner's public vocabulary
    AGGREGATOR_PARTS,
    Job,
    Outcome,
    RunReport,
    chapter_id,
    dependencies,
    device_name,
    discard,
    execute,
    finish,
    kernel_env,
    papermill_execute,
    read_stamp,
    result_files,
)


# ---------------------------------------------------------------------------------------------
# Discovery
# ---------------------------------------------------------------------------------------------
def find_root(start: Path | None = None) -> Path:
    """The book root: the first folder upwards from ``start`` (default: cwd) holding ``_toc.yml``."""
    here = Path(start or Path.cwd()).resolve()
    for p in (here, *here.parents):
        if (p / "_toc.yml").is_file() and (p / "chapters").is_dir():
            return p
    raise FileNotFoundError(f"no book root (a folder with _toc.yml and chapters/) above {here}")


def _toc_entries(node: Any) -> Iterable[tuple[str, str]]:
    if isinstance(node, dict):
        for key in ("root", "file", "glob"):
            if key in node and isinstance(node[key], str):
                yield key if key != "root" else "file", node[key]
        for key in ("parts", "chapters", "sections"):
            for child in node.get(key, []) or []:
                yield from _toc_entries(child)
    elif isinstance(node, list):
        for child in node:
            yield from _toc_entries(child)


def notebooks(root: Path) -> list[str]:
    """Notebook paths below ``chapters/`` in table-of-contents order."""
    root = Path(root)
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    out: list[str] = []
    for kind, entry in _toc_entries(toc):
        if kind == "file":
            cands = [root / (entry if entry.endswith(".ipynb") else entry + ".ipynb")]
        else:
            cands = sorted(p for p in root.glob(entry) if p.suffix in ("", ".ipynb"))
            cands = [p if p.suffix else p.with_suffix(".ipynb") for p in cands]
        for p in cands:
            if p.is_file() and p.suffix == ".ipynb":
                rel = p.relative_to(root / "chapters").as_posix()
                if rel not in out:
                    out.append(rel)
    return out


def select(all_nbs: list[str], only: Iterable[str] | None) -> list[str]:
    """Notebooks matching any of ``only`` (a prefix such as ``eden/``, a path, or a glob)."""
    pats = [p.strip() for p in (only or []) if p and p.strip()]
    if not pats:
        return list(all_nbs)
    def matches(nb: str, pat: str) -> bool:
        pat = pat.removeprefix("chapters/")
        return nb == pat or nb.startswith(pat) or fnmatch.fnmatch(nb, pat) or nb == pat + ".ipynb"

    import difflib

    for pat in pats:  # a pattern that selects nothing is a typo: stop before anything runs
        if not any(matches(nb, pat) for nb in all_nbs):
            short = {nb.split("-", 1)[0]: nb for nb in all_nbs}  # eden/02 → eden/02-rotation-and-scale.ipynb
            cands = {**short, **{nb.removesuffix(".ipynb"): nb for nb in all_nbs}}
            close = difflib.get_close_matches(pat.removeprefix("chapters/").removesuffix(".ipynb"), list(cands),
                                              n=1, cutoff=0.6)
            hint = f"; did you mean {cands[close[0]].removesuffix('.ipynb')!r}?" if close else ""
            raise ValueError(f"--only {pat!r} matches no notebook{hint} (known: {', '.join(all_nbs)})")
    return [nb for nb in all_nbs if any(matches(nb, pat) for pat in pats)]


# ---------------------------------------------------------------------------------------------
# Hashing
# ---------------------------------------------------------------------------------------------
def _hash_files(files: Iterable[Path], base: Path) -> str:
    h = hashlib.sha256()
    for f in sorted(files):
        h.update(f.relative_to(base).as_posix().encode())
        h.update(b"\0")
        h.update(f.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


#: book machinery that cannot change what a notebook computes or shows: editing it re-executes nothing
MACHINERY = ("book/runner.py", "book/distributed.py", "book/cli.py", "book/profiles.py", "book/__main__.py",
             "book/sphinx_ext.py", "book/publish.py", "book/release.py", "book/launch.py")


def qlib_source_hash() -> str:
    """Hash of the ``qlib`` sources a notebook's output can depend on (all but :data:`MACHINERY`)."""
    pkg = Path(__file__).resolve().parents[1]
    files = (p for p in pkg.rglob("*.py")
             if "__pycache__" not in p.parts and p.relative_to(pkg).as_posix() not in MACHINERY)
    return _hash_files(files, pkg)


def _results_hash(results: Path, exclude: Path) -> str:
    files = [p for p in results.rglob(COMPARISONS_FILE) if exclude not in p.parents] if results.is_dir() else []
    return _hash_files(files, results)


# ---------------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------------
def plan(root: Path, out: Path, profile: str, params_by_nb: dict, selected: list[str], *, device: str,
         data: str, replicate: int | None = None) -> list[Job]:
    """The jobs for ``selected``, with the parameters each notebook receives (``replicate``: the
    seed of a replicate run, executed into its own tree ``out``)."""
    results = out / "_results"
    jobs = []
    for nb in selected:
        rel = Path(nb)
        nb_results = results / rel.with_suffix("")
        params = dict(params_by_nb[nb])
        here = out / "chapters" / rel.parent  # the kernel's working directory
        # paths relative to the kernel's directory, and no data path: the executed notebooks a reader
        # downloads carry nothing of the builder's machine (the kernels read $QLIB_DATA_DIR)
        params.update(profile=profile, device=device, data_dir=None,
                      out_dir=os.path.relpath(nb_results, here), results_dir=os.path.relpath(results, here),
                      chapter_id=chapter_id(nb))
        if replicate is not None:
            params["seed"] = replicate
        jobs.append(Job(nb, root / "chapters" / nb, out / "chapters" / rel, out / ".stamps" / rel.with_suffix(".json"),
                        nb_results, params, data=data, out=out, replicate=replicate))
    return jobs


REPLICATES = "_replicates"  # <output>/_replicates/seed-<s>/ : the trees of replicate runs


def replicate_seeds(root: Path, selected: list[str], params_by_nb: dict, replicates: int) -> list[int]:
    """The seeds of the extra runs: the book's seed + 1 … + replicates − 1 (the book's own run is the
    first replicate). The book's seed is the profile's ``seed`` or, else, the cells' (0 by convention)."""
    base = {params_by_nb[nb].get("seed", _profiles.cell_parameters(root / "chapters" / nb).get("seed", 0))
            for nb in selected}
    b = max((x for x in base if isinstance(x, int)), default=0)
    return [b + r for r in range(1, replicates)]


def stamp_of(job: Job, root: Path, out: Path, src_hash: str) -> str:
    """Hash of everything the notebook's output depends on: the notebook, its parameters, the
    ``qlib`` sources, and the result files of the notebooks it depends on (or, for the appendix, every
    other notebook's results)."""
    h = hashlib.sha256()
    h.update(job.src.read_bytes())
    h.update(json.dumps(job.params, sort_keys=True, default=str).encode())
    h.update(job.data.encode())
    h.update(src_hash.encode())
    for dep in dependencies(root, job.nb):  # what the dependency left in its results folder
        dep_results = out / "_results" / Path(dep).with_suffix("")
        files = result_files(dep_results)
        h.update(dep.encode())
        h.update(_hash_files(files, dep_results).encode() if files else b"none")
    if Path(job.nb).parts[0] in AGGREGATOR_PARTS:
        h.update(_results_hash(out / "_results", job.results).encode())
    return h.hexdigest()


def build_costs(out: Path) -> list[dict]:
    """The stamps of the notebooks executed into ``out``: notebook, profile, device, seconds, when."""
    rows = []
    for f in sorted((Path(out) / ".stamps").rglob("*.json")):
        st = read_stamp(f)
        if st:
            nb = f.relative_to(Path(out) / ".stamps").with_suffix(".ipynb").as_posix()
            rows.append({"notebook": nb, "profile": st.get("profile", ""), "device": st.get("device", ""),
                         "seconds": st.get("seconds"), "when": st.get("when")})
    return rows


class OutputDirError(RuntimeError):
    """The output directory cannot be used (not writable, or held by another runner)."""


class _OutputLock:
    """An exclusive lock on the output directory (``<out>/.lock`` holding the owner's PID), so that two
    runners never execute into the same tree: the second stops at once, naming the holder."""

    def __init__(self, out: Path):
        self.path = out / ".lock"
        self.fh = None

    def __enter__(self):
        import fcntl

        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.fh = open(self.path, "a+")
        except OSError as exc:
            raise OutputDirError(f"output directory {self.path.parent} is not usable: {exc.strerror or exc}") from None
        try:
            fcntl.flock(self.fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.fh.seek(0)
            holder = self.fh.read().strip() or "unknown"
            self.fh.close()
            raise OutputDirError(f"output directory {self.path.parent} is in use by another runner (PID {holder}); "
                                 "wait for it, or use --output-dir") from None
        self.fh.seek(0)
        self.fh.truncate()
        self.fh.write(str(os.getpid()))
        self.fh.flush()
        return self

    def __exit__(self, *exc):
        import fcntl

        fcntl.flock(self.fh, fcntl.LOCK_UN)
        self.fh.close()
        return False


def _check_writable(out: Path) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f".probe.{os.getpid()}"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise OutputDirError(f"output directory {out} is not writable: {exc.strerror or exc}") from None


def run(
    *,
    root: Path | None = None,
    profile: str | os.PathLike = "default",
    only: Iterable[str] | None = None,
    device: str = "auto",
    data_dir: str | os.PathLike | None = None,
    output_dir: str | os.PathLike | None = None,
    force: bool = False,
    timeout: int | None = None,
    progress: bool = True,
    overrides: dict[str, Any] | None = None,
    jobs: int = 1,
    scheduler: str | None = None,
    replicates: int = 1,
    resume: bool = True,
    log=print,
) -> RunReport:
    """Execute the selected notebooks under ``profile`` (a name or a user profile file) with
    ``overrides`` ({parameter: value}); see the module docstring.

    ``jobs`` > 1 runs them on a local Dask cluster of that many worker processes, ``scheduler``
    (``tcp://host:8786``) on an existing Dask cluster; ``jobs=1`` without a scheduler runs them one
    after the other in this process. ``replicates`` K > 1 also runs every selected notebook (but the
    appendix) with K − 1 further seeds into ``<output>/_replicates/seed-<s>/``, for the appendix's
    verdict stability. The appendix always runs last, here, from finished notebooks only.

    Profiles and overrides are validated before anything runs
    (:class:`qlib.book.profiles.ProfileError`); an unusable or busy output directory raises
    :class:`OutputDirError`; Ctrl-C stops, marking what was running as interrupted
    (``report.interrupted``).

    ``resume`` (default): a notebook that saves its finished units of work (``ch.units``,
    :mod:`qlib.resume`) reuses those of an earlier, interrupted or finished, run with the same code and
    parameters, and the log says how many (``[ ok ] … ; 5 units reused, 3 computed``); ``resume=False``
    or ``force`` computes them all again (the kernels get ``QLIB_RESUME=0``). Units persist in the
    notebook's results folder (``.units/``) for runs in this process (``jobs=1``); a Dask worker
    executes in a temporary folder and keeps none."""
    if device not in ("auto", "cpu", "cuda") and not str(device).startswith("cuda:"):
        raise ValueError(f"device must be 'auto', 'cpu' or 'cuda', got {device!r}")
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be an integer >= 1, got {jobs!r}")
    if isinstance(replicates, bool) or not isinstance(replicates, int) or not 1 <= replicates <= 100:
        raise ValueError(f"replicates must be an integer in [1, 100], got {replicates!r}")
    root = find_root(root)
    all_nbs = notebooks(root)
    selected = select(all_nbs, only)
    params_by_nb = _profiles.resolve(root, profile, all_nbs, selected, overrides)
    pname = _profiles.profile_name(profile)

    out = Path(output_dir or root / "_build" / "book").resolve()
    data = str(Path(data_dir).expanduser().resolve()) if data_dir else os.environ.get("QLIB_DATA_DIR", "")
    _check_writable(out)
    src_hash = qlib_source_hash()
    units = plan(root, out, pname, params_by_nb, selected, device=device, data=data)
    for seed in replicate_seeds(root, selected, params_by_nb, replicates):
        rep_out = out / REPLICATES / f"seed-{seed}"
        units += [j for j in plan(root, rep_out, pname, params_by_nb, selected, device=device, data=data,
                                  replicate=seed) if not j.aggregator]
    first = [j for j in units if not j.aggregator]
    last = [j for j in units if j.aggregator]

    for o in {j.out for j in units}:  # marks a runner's tree: compare.gather counts only stamped rows there
        (o / STAMPS).mkdir(parents=True, exist_ok=True)
    report = RunReport()
    if not isinstance(resume, bool):
        raise TypeError(f"resume must be a bool, got {type(resume).__name__}")
    reuse = None if resume and not force else "0"
    from .archive import archive_root

    arch = archive_root(root)  # the kernels run in the staged tree: they read the checkout's archive
    with _OutputLock(out), kernel_env(QLIB_DATA_DIR=data, QLIB_RESUME=reuse,
                                      QLIB_ARCHIVE_DIR=str(arch) if arch.is_dir() else None):  # the caller's env is restored
        def skip(job: Job) -> bool:
            job.stamp = stamp_of(job, root, job.out, src_hash)  # after its dependencies ran
            if not force and job.target.is_file() and read_stamp(job.stamp_file).get("hash") == job.stamp:
                report.outcomes.append(Outcome(job.label, "skipped"))
                log(f"[skip] {job.label} (inputs unchanged)")
                return True
            return False

        t_start = time.perf_counter()
        try:
            if first and (jobs > 1 or scheduler):
                from .distributed import run_dask

                run_dask(first, root=root, skip=skip, report=report, jobs=jobs, scheduler=scheduler,
                         timeout=timeout, device=device, log=log)
            else:
                _run_here(first, skip=skip, report=report, timeout=timeout, progress=progress, log=log)
            if not report.interrupted:
                _run_here(last, skip=skip, report=report, timeout=timeout, progress=False, log=log)
        finally:
            report.wall = time.perf_counter() - t_start
            for o in {j.out for j in units}:
                shutil.rmtree(o / ".tmp", ignore_errors=True)
    return report


def _run_here(jobs: list[Job], *, skip, report: RunReport, timeout, progress: bool, log) -> None:
    """Execute ``jobs`` one after the other in this process (table-of-contents order satisfies the
    declared dependencies)."""
    from tqdm.auto import tqdm

    bar = tqdm(jobs, desc="notebooks", unit="nb", disable=not progress or not jobs, file=sys.stderr)
    current = None
    try:
        for job in bar:
            current = job
            bar.set_postfix_str(job.label)
            if not skip(job):
                report.outcomes.append(execute(job, timeout=timeout, log=log))
            current = None
    except KeyboardInterrupt:
        report.interrupted = True
        if current is not None:
            discard(current)
            report.outcomes.append(Outcome(current.label, "failed", 0.0, "interrupted (Ctrl-C)"))
    finally:
        bar.close()


# ---------------------------------------------------------------------------------------------
# Building
# ---------------------------------------------------------------------------------------------
STATIC = ("_config.yml", "_toc.yml", "references.bib")
STATIC_DIRS = ("_static",)


def _prune_toc(node: Any, out: Path) -> Any:
    """Drop glob entries that match no executed notebook (a part run with ``--only`` builds too)."""
    if isinstance(node, list):
        kept = [_prune_toc(c, out) for c in node]
        return [c for c in kept if c is not None]
    if isinstance(node, dict):
        if "glob" in node and not any(out.glob(node["glob"])):
            return None
        new = {}
        for k, v in node.items():
            v = _prune_toc(v, out) if isinstance(v, (list, dict)) else v
            if k in ("sections", "chapters", "parts") and not v:
                continue
            new[k] = v
        return new
    return node


def _git_commit(root: Path) -> str:
    import subprocess

    try:
        sha = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=root, capture_output=True, text=True,
                             timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown (not a git checkout)"
    return (sha + (" with uncommitted changes" if dirty else "")) if sha else "unknown (not a git checkout)"


def _wall_text(costs: list[dict], total: float) -> str:
    """The wall-clock span of the notebooks' runs (first start to last finish), named as such; when the
    span is longer than the summed time the notebooks ran in several sittings, and the span means nothing."""
    spans = [(c["when"] - c["seconds"], c["when"]) for c in costs if c.get("when") and c.get("seconds") is not None]
    if not spans:
        return "wall-clock time unknown"
    wall = max(e for _, e in spans) - min(s for s, _ in spans)
    if wall > total + 60:
        return "run in several sittings (no single wall-clock time)"
    return f"{wall / 60:.1f} min wall clock from the first start to the last finish"


def provenance_markdown(root: Path, out: Path) -> str:
    """The landing page's account of this build: what the ledger counts, per paper and kind, and
    where the rows came from — commit, profile, device, date, and each notebook's time."""
    import datetime
    import warnings

    import pandas as pd

    from . import compare, tables

    costs = build_costs(out)
    with warnings.catch_warnings():  # said below, once
        warnings.simplefilter("ignore", compare.IncompleteResultsWarning)
        rows = compare.gather(out / "_results")
    incomplete = rows.attrs.get("incomplete", {})
    rows = rows[~rows["chapter"].str.startswith("appendix/")] if len(rows) else rows
    lines = ["## This build", ""]
    if not costs:
        return "\n".join(lines + ["No notebook has been executed into this build yet.", ""])
    profiles = sorted({c["profile"] for c in costs})
    devices = sorted({c["device"] for c in costs})
    when = max(c["when"] or 0 for c in costs)
    total = sum(c["seconds"] or 0 for c in costs)
    head = compare.by_paper_and_kind(rows)
    byp = compare.verdicts_by_paper(rows)
    n_rep, n_items = int(byp["reproduced"].sum()), int(byp["paper items"].sum())
    lines += [
        f"Commit `{_git_commit(root)}`, profile **{', '.join(profiles)}**, device {', '.join(devices)}, "
        f"finished {datetime.datetime.fromtimestamp(when, datetime.UTC):%Y-%m-%d %H:%M} UTC; "
        f"{len(costs)} notebooks: {total / 60:.1f} min of notebook time summed, {_wall_text(costs, total)}.",
        "",
        f"**{n_rep}** of the {n_items} paper numbers and claims compared reproduce and could have failed "
        f"(a stated null — no quantization effect, chance, the unquantized model… — fails the same test); "
        f"{int(byp['consistent'].sum())} more pass but so would their null (*consistent*, not counted), "
        f"{int(byp['differs'].sum())} differ. {len(rows) - n_items} more rows are checks, recomputations, errata "
        "and items not reproduced. Per paper (the [ledger](../appendix/01-comparisons.ipynb) has every row):",
        "",
        tables.markdown(byp),
        "",
        "Per paper and kind (*passed/total*):",
        "",
        tables.markdown(head),
        "",
        *([f"Left out of the counts: the rows of {len(incomplete)} notebook(s) whose run did not finish — "
           + "; ".join(f"`{c}` ({why})" for c, why in sorted(incomplete.items())) + ". Re-run them.", ""]
          if incomplete else []),
        "```{dropdown} Time per notebook",
        tables.markdown(pd.DataFrame(costs)[["notebook", "seconds", "device"]]),
        "```",
        "",
    ]
    return "\n".join(lines)


def stage(root: Path, out: Path) -> None:
    """Copy the book's static sources (config, bibliography, Markdown pages and assets below
    ``chapters/``) next to the executed notebooks in ``out``, with a table of contents pruned of
    globs that match no executed notebook."""
    for name in STATIC:
        if name != "_toc.yml":
            shutil.copy2(root / name, out / name)
    for name in STATIC_DIRS:
        if (root / name).is_dir():
            shutil.copytree(root / name, out / name, dirs_exist_ok=True)
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    (out / "_toc.yml").write_text(yaml.safe_dump(_prune_toc(toc, out), sort_keys=False))
    for p in (root / "chapters").rglob("*"):
        if p.is_file() and p.suffix != ".ipynb" and not any(part.startswith(".") or part == "_results" for part in p.parts):
            dest = out / p.relative_to(root)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(p, dest)
    info = out / "chapters" / "intro" / "build-info.md"
    info.parent.mkdir(parents=True, exist_ok=True)
    info.write_text(provenance_markdown(root, out))
    stage_findings(root, out)


def stage_findings(root: Path, out: Path) -> None:
    """The pages made from the whole build: ``findings.csv`` (beside the rows, in ``_results``), the
    landing page's claim counts and findings (``intro/findings-info.md``), each paper's summary
    (``<part>/summary-info.md``) and the execution status page (``appendix/status-info.md``)."""
    import warnings

    from . import archive, compare, findings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", compare.IncompleteResultsWarning)
        rows = compare.gather(out / "_results")
    rows = rows[~rows["chapter"].str.startswith("appendix/")] if len(rows) else rows
    profiles = sorted({c["profile"] for c in build_costs(out)}) or ["none"]
    claims, causes, summaries = findings.registry()
    judged = findings.with_causes(findings.rows_at_largest_scale(rows, build_profile=", ".join(profiles),
                                                                 root=root), causes,
                                  archived=findings.archived_ledger(root))
    frame = findings.findings_frame(judged, claims)
    findings.write_findings(frame, out / "_results" / findings.FINDINGS_FILE)
    (out / "chapters" / "intro" / "findings-info.md").write_text(findings.landing_markdown(frame, judged))
    for paper, part in findings.PAPER_PART.items():
        dest = out / "chapters" / part / "summary-info.md"
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(findings.summary_markdown(paper, frame, judged, summaries))
    dest = out / "chapters" / "appendix" / "status-info.md"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(status_markdown(root, out, archive.status_frame(root)))


def status_markdown(root: Path, out: Path, arch) -> str:
    """The execution status page: per notebook, this build's run (profile, device, time, date) and
    every archived run (profile, current or stale and what changed, device, time, date, commit)."""
    import datetime

    import pandas as pd

    from . import tables

    costs = {c["notebook"]: c for c in build_costs(out)}
    recs = []
    for nb in notebooks(root):
        cid = chapter_id(nb)
        c = costs.get(nb)
        recs.append({"notebook": cid, "run": "this build" if c else "not run in this build",
                     "profile": c["profile"] if c else "", "device": c["device"] if c else "",
                     "seconds": round(c["seconds"], 1) if c and c.get("seconds") is not None else "",
                     "date": (datetime.datetime.fromtimestamp(c["when"], datetime.UTC).strftime("%Y-%m-%d")
                              if c and c.get("when") else ""), "state": "", "commit": ""})
        for _, a in arch[arch["chapter"] == cid].iterrows() if len(arch) else []:
            recs.append({"notebook": cid, "run": "archived", "profile": a["profile"], "device": a["device"],
                         "seconds": a["wall_s"], "date": str(a["finished"])[:10],
                         "state": a["state"] + (f": {a['changes']}" if a["changes"] else ""), "commit": a["commit"]})
    lines = [f"{sum(1 for r in recs if r['run'] == 'this build')} notebooks ran in this build; "
             f"{len(arch)} archived runs ({int((arch['state'] == 'current').sum()) if len(arch) else 0} current, "
             f"{int((arch['state'] == 'stale').sum()) if len(arch) else 0} stale). A stale archived run is shown "
             "in its chapter, marked, and not counted in the findings.", "", tables.markdown(pd.DataFrame(recs)), ""]
    if len(arch):
        mach = arch[["profile", "chapter", "cpu", "threads", "device"]]
        lines += ["```{dropdown} The machines of the archived runs", tables.markdown(mach), "```", ""]
    return "\n".join(lines)


def build(*, root: Path | None = None, output_dir: str | os.PathLike | None = None, html_parent: Path | None = None,
          check_figures: bool = True) -> int:
    """Build the HTML book from the executed notebooks (warnings are errors, full rebuild); with
    ``check_figures`` (the default) a figure whose text collides (:func:`figure_collisions`) fails it too.

    The HTML lands in ``<html_parent>/_build/html`` (default: the book root, i.e. ``_build/html``).
    Returns jupyter-book's exit status.
    """
    import subprocess

    root = find_root(root)
    out = Path(output_dir or root / "_build" / "book").resolve()
    out.mkdir(parents=True, exist_ok=True)
    stage(root, out)
    parent = Path(html_parent or root).resolve()
    html = parent / "_build" / "html"
    if html.exists():
        shutil.rmtree(html)
    exe = Path(sys.executable).with_name("jupyter-book")
    cmd = [str(exe) if exe.exists() else "jupyter-book", "build", "--all", "-W", "-n", "--keep-going",
           "--path-output", str(parent), str(out)]
    status = subprocess.call(cmd)
    collisions = figure_collisions(out) if check_figures else []
    if collisions:
        print(f"error: {len(collisions)} figure(s) with colliding or too small text (qlib.book.style.overlaps):",
              file=sys.stderr)
        for line in collisions:
            print(f"  {line}", file=sys.stderr)
        return status or 1
    return status


def figure_collisions(out: Path) -> list[str]:
    """One line per figure of the executed notebooks in ``out`` whose text collides, lies on its data or
    is too small (the checks :mod:`qlib.book.style` wrote while each notebook ran): the build fails on
    them, not only the tests."""
    import json

    found = []
    for f in sorted((Path(out) / "_results").rglob("figure-checks.json")):
        try:
            recs = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
        for rec in recs if isinstance(recs, list) else []:
            for p in rec.get("overlaps") or []:
                found.append(f"{f.parent.relative_to(Path(out) / '_results').as_posix()} figure {rec.get('figure')}: {p}")
    return found
