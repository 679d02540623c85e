"""Papermill batch runner.

Executes the book's notebooks (all, or a subset) under a named parameter profile into an output
tree that the book is then built from (:mod:`qlib.book.build`)::

    <output>/chapters/<part>/<nb>.ipynb      executed notebooks (only complete ones ever land here)
    <output>/_results/<part>/<nb>/           each notebook's result files (comparisons.csv, …)
    <output>/.stamps/<part>/<nb>.json        input hash of the last successful run
    <output>/.failed/<part>/<nb>.ipynb       the partially executed notebook of a failed run

A notebook is skipped when its stamp equals that of its last successful run, unless ``force``
(:func:`stamp_of`): its **inputs stamp** (:func:`qlib.book.stamps.notebook_stamp`: its code, its
parameters, the datasets it reads and every ``qlib`` module it reaches — the one stamp the archive's
staleness and the resumable units take too), and what only its **page** depends on: the notebook's
whole text (prose included), every parameter and the device, the data directory, the book machinery
that draws a page (:func:`page_hash`), the results of the notebooks it depends on (and, for the
appendix, every other notebook's). The module hashes are those of the run's start. Every selected
notebook runs even when an earlier one fails; the outcome lists one line per failure. Executing one
notebook (the job, papermill, the stamp, landing it atomically) is :mod:`qlib.book.jobs`; on Dask
workers, :mod:`qlib.book.distributed`.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Iterable

from tqdm.auto import tqdm

from ..stamp import NOT_STAMPED, source_snapshot
from . import profiles as _profiles
from .distributed import run_dask
from .gathering import STAMPS
from .jobs import Job, Outcome, RunReport, discard, execute, kernel_env, read_stamp, result_files
from .layout import archive_root
from .options import RunOptions, options_record
from .schema import FILENAME as COMPARISONS_FILE
from .stamps import notebook_stamp
from .toc import AGGREGATOR_PARTS, chapter_id, dependencies, find_root, notebooks, select

__all__ = ["MACHINERY", "page_hash", "plan", "REPLICATES", "replicate_seeds", "stamp_of", "stamp_job",
           "OutputDirError", "run"]


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
MACHINERY = ("qlib.book.runner", "qlib.book.options", "qlib.book.distributed", "qlib.book.cli", "qlib.book.profiles",
             "qlib.book.__main__", "qlib.book.sphinx_ext", "qlib.book.build", "qlib.book.provenance",
             "qlib.book.publish", "qlib.book.release", "qlib.book.launch", "qlib.book.toc", "qlib.book.archive")


def _draws_page(module: str) -> bool:
    """A module that draws a notebook's page but is in no inputs stamp: the book and the findings
    (:data:`qlib.stamp.NOT_STAMPED`), and the wings' findings modules, which the glance loads by name."""
    return module not in MACHINERY and (any(module == p or module.startswith(p + ".") for p in NOT_STAMPED)
                                        or (module.startswith("qlib.repro.") and module.endswith(".findings")))


def page_hash(snapshot: dict[str, str]) -> str:
    """Hash of the modules of ``snapshot`` (:func:`qlib.stamp.source_snapshot`) that draw a notebook's
    page but are in no inputs stamp: the book but :data:`MACHINERY`, and the findings."""
    return hashlib.sha256(json.dumps({m: h for m, h in sorted(snapshot.items()) if _draws_page(m)}).encode()).hexdigest()


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


def stamp_of(job: Job, root: Path, out: Path, page: str) -> str:
    """Hash of everything the notebook's executed page depends on: its inputs stamp (``job.inputs``),
    the notebook's whole file, its parameters, the data directory, ``page`` (:func:`page_hash`), and
    the result files of the notebooks it depends on (or, for the appendix, every other notebook's
    results)."""
    h = hashlib.sha256()
    h.update(job.inputs["hash"].encode())
    h.update(job.src.read_bytes())
    h.update(json.dumps(job.params, sort_keys=True, default=str).encode())
    h.update(job.data.encode())
    h.update(page.encode())
    for dep in dependencies(root, job.nb):  # what the dependency left in its results folder
        dep_results = out / "_results" / Path(dep).with_suffix("")
        files = result_files(dep_results)
        h.update(dep.encode())
        h.update(_hash_files(files, dep_results).encode() if files else b"none")
    if Path(job.nb).parts[0] in AGGREGATOR_PARTS:
        h.update(_results_hash(out / "_results", job.results).encode())
    return h.hexdigest()


def stamp_job(job: Job, root: Path, snapshot: dict[str, str], *, pkg: Path | None = None) -> str:
    """Give ``job`` its inputs stamp (``job.inputs``: :func:`qlib.book.stamps.notebook_stamp` with the
    module hashes of ``snapshot``, the run's start; ``pkg``: the ``qlib`` package folder whose imports
    are read, default the installed one) and its runner stamp (``job.stamp``, :func:`stamp_of`, whose
    page is that of ``snapshot``); returns the latter. Called when the job is due, after its
    dependencies ran."""
    job.inputs = notebook_stamp(root, job.nb, job.params, data_dir=job.data, snapshot=snapshot, pkg=pkg)
    job.stamp = stamp_of(job, root, job.out, page_hash(snapshot))
    return job.stamp


class OutputDirError(RuntimeError):
    """The output directory cannot be used (not writable, or held by another runner)."""


class _OutputLock:
    """An exclusive lock on the output directory (``<out>/.lock`` holding the owner's PID), so that two
    runners never execute into the same tree: the second stops at once, naming the holder."""

    def __init__(self, out: Path):
        self.path = out / ".lock"
        self.fh = None

    def __enter__(self):
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


def run(root: Path | None = None, options: RunOptions | None = None, *, log=print) -> RunReport:
    """Execute the notebooks ``options`` selects (a :class:`~qlib.book.options.RunOptions`; None: its
    defaults: ``run(root, RunOptions(profile="smoke"))``) of the book at ``root`` (None: found upwards
    from the working directory); see the module docstring. ``log`` receives one line per event.

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
    :mod:`qlib.resume`) reuses those of an earlier, interrupted or finished, run with the same inputs
    stamp, and the log says how many (``[ ok ] … ; 5 units reused, 3 computed``); ``resume=False``
    or ``force`` computes them all again (the kernels get ``QLIB_RESUME=0``). Units persist in the
    notebook's results folder (``.units/``) for runs in this process (``jobs=1``); a Dask worker
    executes in a temporary folder and keeps none."""
    opts = options_record(options, RunOptions())
    profile, device, force, timeout = opts.profile, opts.device, opts.force, opts.timeout
    root = find_root(root)
    all_nbs = notebooks(root)
    selected = select(all_nbs, opts.only)
    params_by_nb = _profiles.resolve(root, profile, all_nbs, selected, opts.overrides)
    pname = _profiles.profile_name(profile)

    out = Path(opts.output_dir or root / "_build" / "book").resolve()
    data = (str(Path(opts.data_dir).expanduser().resolve()) if opts.data_dir
            else os.environ.get("QLIB_DATA_DIR", ""))
    _check_writable(out)
    snapshot = source_snapshot()  # the code as this run starts: every stamp of the run reads its hashes
    units = plan(root, out, pname, params_by_nb, selected, device=device, data=data)
    for seed in replicate_seeds(root, selected, params_by_nb, opts.replicates):
        rep_out = out / REPLICATES / f"seed-{seed}"
        units += [j for j in plan(root, rep_out, pname, params_by_nb, selected, device=device, data=data,
                                  replicate=seed) if not j.aggregator]
    first = [j for j in units if not j.aggregator]
    last = [j for j in units if j.aggregator]

    for o in {j.out for j in units}:  # marks a runner's tree: gathering.gather counts only stamped rows there
        (o / STAMPS).mkdir(parents=True, exist_ok=True)
    report = RunReport()
    reuse = None if opts.resume and not force else "0"
    arch = archive_root(root)  # the kernels run in the staged tree: they read the checkout's archive
    with _OutputLock(out), kernel_env({"QLIB_DATA_DIR": data, "QLIB_RESUME": reuse,  # the caller's env is restored
                                       "QLIB_ARCHIVE_DIR": str(arch) if arch.is_dir() else None}):
        def skip(job: Job) -> bool:
            stamp_job(job, root, snapshot)  # after its dependencies ran
            if not force and job.target.is_file() and read_stamp(job.stamp_file).get("hash") == job.stamp:
                report.outcomes.append(Outcome(job.label, "skipped"))
                log(f"[skip] {job.label} (inputs unchanged)")
                return True
            return False

        t_start = time.perf_counter()
        try:
            if first and (opts.jobs > 1 or opts.scheduler):
                run_dask(first, opts, root=root, skip=skip, report=report, log=log)
            else:
                _run_here(first, skip=skip, report=report, timeout=timeout, progress=opts.progress, log=log)
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
