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
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import yaml

from . import profiles as _profiles
from .compare import FILENAME as COMPARISONS_FILE

AGGREGATOR_PARTS = ("appendix",)  # notebooks that read every other notebook's results


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
    chosen = []
    for nb in all_nbs:
        for pat in pats:
            pat = pat.removeprefix("chapters/")
            if nb == pat or nb.startswith(pat) or fnmatch.fnmatch(nb, pat) or nb == pat + ".ipynb":
                chosen.append(nb)
                break
    if not chosen:
        raise ValueError(f"no notebook matches {pats}; known: {', '.join(all_nbs)}")
    return chosen


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
MACHINERY = ("book/runner.py", "book/cli.py", "book/profiles.py", "book/__main__.py", "book/sphinx_ext.py")


def qlib_source_hash() -> str:
    """Hash of the ``qlib`` sources a notebook's output can depend on (all but :data:`MACHINERY`)."""
    pkg = Path(__file__).resolve().parents[1]
    files = (p for p in pkg.rglob("*.py")
             if "__pycache__" not in p.parts and p.relative_to(pkg).as_posix() not in MACHINERY)
    return _hash_files(files, pkg)


def dependencies(root: Path, nb: str) -> list[str]:
    """Notebooks whose results ``nb`` reads, declared in its metadata as
    ``{"qlib": {"depends": ["<part>/<nb>.ipynb", …]}}``; the runner runs them first and re-runs
    ``nb`` whenever one of them re-ran."""
    meta = json.loads((Path(root) / "chapters" / nb).read_text()).get("metadata", {})
    deps = (meta.get("qlib") or {}).get("depends") or []
    if not isinstance(deps, list) or not all(isinstance(d, str) for d in deps):
        raise ValueError(f"chapters/{nb}: metadata qlib.depends must be a list of notebook paths, got {deps!r}")
    return deps


def _results_hash(results: Path, exclude: Path) -> str:
    files = [p for p in results.rglob(COMPARISONS_FILE) if exclude not in p.parents] if results.is_dir() else []
    return _hash_files(files, results)


# ---------------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------------
@dataclass
class Outcome:
    notebook: str
    status: str  # "ran", "skipped", "failed"
    seconds: float = 0.0
    error: str = ""


@dataclass
class RunReport:
    outcomes: list[Outcome] = field(default_factory=list)
    interrupted: bool = False

    @property
    def failures(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.status == "failed"]

    def summary(self) -> str:
        counts = {s: sum(o.status == s for o in self.outcomes) for s in ("ran", "skipped", "failed")}
        total = sum(o.seconds for o in self.outcomes)
        head = f"{counts['ran']} ran, {counts['skipped']} skipped, {counts['failed']} failed in {total:.0f} s"
        if self.interrupted:
            head += " (interrupted)"
        lines = [head]
        lines += [f"FAILED {o.notebook}: {o.error}" for o in self.failures]
        return "\n".join(lines)

    def timings(self) -> str:
        """One line per notebook that ran: seconds and name (what reproducing costs)."""
        return "\n".join(f"  {o.seconds:7.1f} s  {o.status:7s} {o.notebook}" for o in self.outcomes if o.status != "skipped")


def _error_line(exc: BaseException) -> str:
    name = getattr(exc, "ename", None) or type(exc).__name__
    value = getattr(exc, "evalue", None) or str(exc)
    line = f"{name}: {value}".strip().splitlines()
    return line[0][:300] if line else name


def _fmt_param(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def _annotate(nb_path: Path, job: "Job", seconds: float) -> None:
    """Hide papermill's injected-parameters cell in the book (tag it remove-cell) and put, in its
    place, a compact box saying what ran: the profile, the device and every parameter whose value
    differs from the notebook's own parameters cell (which the reader sees)."""
    nb = json.loads(nb_path.read_text())
    cells = nb.get("cells", [])
    at = None
    for i, cell in enumerate(cells):
        tags = cell.setdefault("metadata", {}).setdefault("tags", [])
        if "injected-parameters" in tags:
            at = i
            if "remove-cell" not in tags:
                tags.append("remove-cell")
    from .profiles import COMMON, cell_parameters

    declared = cell_parameters(job.src)
    changed = {k: v for k, v in job.params.items() if k not in COMMON and declared.get(k) != v}
    lines = [f"**What ran:** profile `{job.params['profile']}`, device `{_device_name(job.params['device'])}`, "
             f"{seconds:.0f} s."]
    if changed:
        lines.append("Parameters that differ from the cell below: "
                     + "; ".join(f"`{k} = {_fmt_param(v)}` (cell: `{_fmt_param(declared.get(k))}`)"
                                 for k, v in changed.items()) + ".")
    else:
        lines.append("Every parameter is the value in the cell below.")
    box = {"cell_type": "markdown", "id": "qlib-what-ran", "metadata": {"tags": ["qlib-what-ran"]},
           "source": ":::{admonition} What ran\n:class: note\n" + "\n".join(lines) + "\n:::\n"}
    if at is not None:
        cells.insert(at, box)
    nb_path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")


@dataclass
class Job:
    """One notebook to execute: where it comes from and goes, its parameters and input stamp."""

    nb: str
    src: Path
    target: Path
    stamp_file: Path
    results: Path
    params: dict[str, Any]
    data: str = ""
    stamp: str = ""
    out: Path = Path(".")
    replicate: int | None = None  # the seed of a replicate run (None: the book's own run)

    @property
    def label(self) -> str:
        return self.nb if self.replicate is None else f"{self.nb} [seed {self.replicate}]"

    @property
    def aggregator(self) -> bool:
        return Path(self.nb).parts[0] in AGGREGATOR_PARTS


def chapter_id(nb: str) -> str:
    """The id a notebook is known by (its path below ``chapters/`` without ``.ipynb``)."""
    return nb[: -len(".ipynb")] if nb.endswith(".ipynb") else nb


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


def read_stamp(stamp_file: Path) -> dict:
    """A stamp's contents; an unreadable (truncated, foreign) stamp counts as absent."""
    try:
        data = json.loads(stamp_file.read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


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
        files = [p for p in dep_results.rglob("*") if p.is_file()] if dep_results.is_dir() else []
        h.update(dep.encode())
        h.update(_hash_files(files, dep_results).encode() if files else b"none")
    if Path(job.nb).parts[0] in AGGREGATOR_PARTS:
        h.update(_results_hash(out / "_results", job.results).encode())
    return h.hexdigest()


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


class _kernel_env:
    """Set environment variables for the kernels papermill starts, restoring the caller's after."""

    def __init__(self, **env: str | None):
        self.env = {k: v for k, v in env.items() if v}
        self.saved: dict[str, str | None] = {}

    def __enter__(self):
        for k, v in self.env.items():
            self.saved[k] = os.environ.get(k)
            os.environ[k] = v
        return self

    def __exit__(self, *exc):
        for k, v in self.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        return False


def _device_name(device: str) -> str:
    """What ``device`` resolved to on this machine (for the cost table of the appendix)."""
    try:
        import torch

        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        if str(device).startswith("cuda") and torch.cuda.is_available():
            return f"{device} ({torch.cuda.get_device_name()})"
    except Exception:  # noqa: BLE001 - best effort, for display only
        pass
    return str(device)


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


def _discard(job: Job, out: Path | None = None) -> None:
    """After a failed or interrupted run: no stale notebook or stamp in the book, and the run's
    comparison rows moved beside its partial notebook (``.failed/``), so the ledger never counts them."""
    out = out or job.out
    for stale in (job.target, job.stamp_file):
        if stale.exists():
            stale.unlink()
    rows = job.results / COMPARISONS_FILE
    if rows.exists():
        dest = out / ".failed" / Path(job.nb).with_suffix("") / COMPARISONS_FILE
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.replace(rows, dest)
    tmp = out / ".tmp" / job.nb
    if tmp.exists():
        failed = out / ".failed" / job.nb
        failed.parent.mkdir(parents=True, exist_ok=True)
        os.replace(tmp, failed)


def papermill_execute(src: Path, dest: Path, params: dict, cwd: Path, timeout: int | None) -> None:
    """Run one notebook with papermill (the only place the runner calls it)."""
    import papermill as pm

    pm.execute_notebook(
        str(src),
        str(dest),
        parameters=params,
        kernel_name="python3",
        cwd=str(cwd),
        progress_bar=False,
        execution_timeout=timeout,
        report_mode=False,
        # the kernel's "running over TCP without encryption" notice is noise on a local run
        extra_arguments=["--IPKernelApp.log_level=ERROR"],
    )


def finish(job: Job, executed: Path, seconds: float, where: str = "") -> None:
    """Land an executed notebook in the book: annotate it, move it in atomically, write its stamp."""
    _annotate(executed, job, seconds)
    job.target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(executed, job.target)  # atomic: the book only ever sees complete notebooks
    _write_atomic(job.stamp_file, json.dumps({"hash": job.stamp, "profile": job.params["profile"],
                                              "device": _device_name(job.params["device"]),
                                              "seconds": round(seconds, 2), "when": time.time(),
                                              "worker": where, "seed": job.params.get("seed")}))


def execute(job: Job, out: Path | None = None, *, timeout: int | None, log=print) -> "Outcome":
    """Execute one notebook in this process with papermill into a temporary file, then land it
    (:func:`finish`); on failure keep the partial notebook and its rows under ``.failed/``."""
    out = out or job.out
    rel = Path(job.nb)
    tmp = out / ".tmp" / rel
    tmp.parent.mkdir(parents=True, exist_ok=True)
    job.target.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    log(f"[run ] {job.label}")
    try:
        papermill_execute(job.src, tmp, job.params, job.target.parent, timeout)
        dt = time.perf_counter() - t0
        finish(job, tmp, dt)
        log(f"[ ok ] {job.label} ({dt:.1f} s)")
        return Outcome(job.label, "ran", dt)
    except Exception as exc:  # papermill raises PapermillExecutionError, kernels may die, …
        dt = time.perf_counter() - t0
        failed = out / ".failed" / rel
        _discard(job, out)
        msg = _error_line(exc)
        log(f"[FAIL] {job.label} ({dt:.1f} s): {msg}  — see {failed}")
        if not getattr(exc, "ename", None):
            log(traceback.format_exc(limit=3))
        return Outcome(job.label, "failed", dt, msg)


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
    (``report.interrupted``)."""
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

    report = RunReport()
    with _OutputLock(out), _kernel_env(QLIB_DATA_DIR=data):  # kernels read it; the caller's env is restored
        def skip(job: Job) -> bool:
            job.stamp = stamp_of(job, root, job.out, src_hash)  # after its dependencies ran
            if not force and job.target.is_file() and read_stamp(job.stamp_file).get("hash") == job.stamp:
                report.outcomes.append(Outcome(job.label, "skipped"))
                log(f"[skip] {job.label} (inputs unchanged)")
                return True
            return False

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
            _discard(current)
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


def provenance_markdown(root: Path, out: Path) -> str:
    """The landing page's account of this build: what the ledger counts, per paper and kind, and
    where the rows came from — commit, profile, device, date, and each notebook's time."""
    import datetime

    import pandas as pd

    from . import compare, tables

    costs = build_costs(out)
    rows = compare.gather(out / "_results")
    rows = rows[~rows["chapter"].str.startswith("appendix/")] if len(rows) else rows
    lines = ["## This build", ""]
    if not costs:
        return "\n".join(lines + ["No notebook has been executed into this build yet.", ""])
    profiles = sorted({c["profile"] for c in costs})
    devices = sorted({c["device"] for c in costs})
    when = max(c["when"] or 0 for c in costs)
    total = sum(c["seconds"] or 0 for c in costs)
    head = compare.by_paper_and_kind(rows)
    n_rep, n_items = int(head["reproduced"].sum()), int(head["of paper items"].sum())
    lines += [
        f"Commit `{_git_commit(root)}`, profile **{', '.join(profiles)}**, device {', '.join(devices)}, "
        f"finished {datetime.datetime.fromtimestamp(when, datetime.UTC):%Y-%m-%d %H:%M} UTC; "
        f"{len(costs)} notebooks in {total / 60:.1f} min of execution.",
        "",
        f"**{n_rep}** of the {n_items} paper numbers and claims compared reproduce; {len(rows) - n_items} more "
        "rows are checks, recomputations, errata and items not reproduced. Per paper and kind "
        "(*passed/total*; the [ledger](../appendix/01-comparisons.ipynb) has every row):",
        "",
        tables.markdown(head),
        "",
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


def build(*, root: Path | None = None, output_dir: str | os.PathLike | None = None, html_parent: Path | None = None) -> int:
    """Build the HTML book from the executed notebooks (warnings are errors, full rebuild).

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
    return subprocess.call(cmd)
