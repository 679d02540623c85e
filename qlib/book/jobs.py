"""Executing one notebook: the job, its outcome, its stamp, papermill, and landing it atomically.

Shared by the in-process runner (:mod:`qlib.book.runner`) and the Dask executor
(:mod:`qlib.book.distributed`), which both import it; it imports neither. A landed notebook carries
the *What ran* box and the *Result at a glance* (:mod:`qlib.book.glance`).
"""

from __future__ import annotations

import json
import os
import shutil
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..atomic import move, write_text
from ..stamp import STAMP_VARIABLE
from .glance import glance_markdown, param_text
from .machine import device_name
from .profiles import COMMON, cell_parameters
from .schema import FILENAME as COMPARISONS_FILE
from .toc import AGGREGATOR_PARTS

__all__ = ["Outcome", "RunReport", "error_line", "Job", "read_stamp", "WORKER_ONLY_ENV", "kernel_env",
           "discard", "papermill_execute", "finish", "UNITS_DIR", "result_files", "units_line", "execute"]


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
    wall: float | None = None  # seconds from the first notebook sent to the last one back (set by the runner)

    @property
    def failures(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.status == "failed"]

    def summary(self) -> str:
        counts = {s: sum(o.status == s for o in self.outcomes) for s in ("ran", "skipped", "failed")}
        total = sum(o.seconds for o in self.outcomes)
        head = f"{counts['ran']} ran, {counts['skipped']} skipped, {counts['failed']} failed in {total:.0f} s"
        if self.wall is not None and abs(self.wall - total) >= 1:  # notebooks ran side by side
            head += f" of notebook time ({self.wall:.0f} s wall)"
        if self.interrupted:
            head += " (interrupted)"
        lines = [head]
        lines += [f"FAILED {o.notebook}: {o.error}" for o in self.failures]
        return "\n".join(lines)

    def timings(self) -> str:
        """One line per notebook that ran: seconds and name (what reproducing costs)."""
        return "\n".join(f"  {o.seconds:7.1f} s  {o.status:7s} {o.notebook}" for o in self.outcomes if o.status != "skipped")


def error_line(exc: BaseException) -> str:
    name = getattr(exc, "ename", None) or type(exc).__name__
    value = getattr(exc, "evalue", None) or str(exc)
    line = f"{name}: {value}".strip().splitlines()
    return line[0][:300] if line else name


def _annotate(nb_path: Path, job: "Job", seconds: float) -> None:
    """Hide papermill's injected-parameters cell in the book (tag it remove-cell), fold the notebook's
    own parameters cell (hide-input: one click shows it), and put, in the injected cell's place (just
    below the parameters cell), a compact box saying what ran: the profile, the device and every
    parameter whose value differs from the parameters cell."""
    nb = json.loads(nb_path.read_text())
    pm = nb.get("metadata", {}).get("papermill")
    if isinstance(pm, dict):  # the reader downloads this file: no temporary paths of the build machine
        pm["input_path"] = f"chapters/{job.nb}"
        pm["output_path"] = f"chapters/{job.nb}"
    cells = nb.get("cells", [])
    at = None
    for i, cell in enumerate(cells):
        tags = cell.setdefault("metadata", {}).setdefault("tags", [])
        if "injected-parameters" in tags:
            at = i
            if "remove-cell" not in tags:
                tags.append("remove-cell")
        elif "parameters" in tags and "hide-input" not in tags:
            tags.append("hide-input")
    declared = cell_parameters(job.src)
    changed = {k: v for k, v in job.params.items() if k not in COMMON and declared.get(k) != v}
    lines = [f"Profile `{job.params['profile']}`, device `{device_name(job.params['device'])}`, "
             f"{seconds:.0f} s."]
    if changed:
        lines.append("Parameters that differ from the parameters cell above: "
                     + "; ".join(f"`{k} = {param_text(v)}` (cell: `{param_text(declared.get(k))}`)"
                                 for k, v in changed.items()) + ".")
    else:
        lines.append("Every parameter is the value in the parameters cell above.")
    box = {"cell_type": "markdown", "id": "qlib-what-ran", "metadata": {"tags": ["qlib-what-ran"]},
           "source": ":::{admonition} What ran\n:class: note\n" + "\n".join(lines) + "\n:::\n"}
    if at is not None:
        cells.insert(at, box)
    glance = glance_markdown(nb=job.nb, src=job.src, params=job.params, results=job.results)
    title = next((i for i, c in enumerate(cells) if c.get("cell_type") == "markdown"
                  and _source(c).lstrip().startswith("# ")), None)
    if glance and title is not None:
        cells.insert(title + 1, {"cell_type": "markdown", "id": "qlib-at-a-glance",
                                 "metadata": {"tags": ["qlib-at-a-glance"]}, "source": glance})
    nb_path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


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
    inputs: dict = field(default_factory=dict)  # its inputs stamp (qlib.book.stamps.notebook_stamp)

    @property
    def label(self) -> str:
        return self.nb if self.replicate is None else f"{self.nb} [seed {self.replicate}]"

    @property
    def aggregator(self) -> bool:
        return Path(self.nb).parts[0] in AGGREGATOR_PARTS


def read_stamp(stamp_file: Path) -> dict:
    """A stamp's contents; an unreadable (truncated, foreign) stamp counts as absent."""
    try:
        data = json.loads(stamp_file.read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


#: variables a Dask nanny sets for its worker processes that the kernels they start must not inherit:
#: ``MALLOC_TRIM_THRESHOLD_=65536`` (distributed's ``nanny.pre-spawn-environ``) returns every freed block
#: above 64 KiB to the system, so a kernel's next allocation faults its pages in again — measured on the
#: default book: 566 million minor page faults and 891 s of system time in 35.7 min (2 workers)
WORKER_ONLY_ENV = ("MALLOC_TRIM_THRESHOLD_",)


class kernel_env:
    """Set the environment variables ``env`` (``{name: value}``; a value None or empty leaves the
    variable as it is) for the kernels papermill starts, and remove those named in ``unset``; the
    caller's environment is restored after."""

    def __init__(self, env: dict[str, str | None] | None = None, *, unset: tuple[str, ...] = ()):
        self.env = {k: v for k, v in (env or {}).items() if v}
        self.unset = tuple(unset)
        self.saved: dict[str, str | None] = {}

    def __enter__(self):
        for k in self.unset:
            self.saved[k] = os.environ.get(k)
            os.environ.pop(k, None)
        for k, v in self.env.items():
            self.saved.setdefault(k, os.environ.get(k))
            os.environ[k] = v
        return self

    def __exit__(self, *exc):
        for k, v in self.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        return False


def discard(job: Job, out: Path | None = None) -> None:
    """After a failed or interrupted run: no stale notebook or stamp in the book, and the run's
    comparison rows moved beside its partial notebook (``.failed/``), so the ledger never counts them."""
    out = out or job.out
    for stale in (job.target, job.stamp_file):
        if stale.exists():
            stale.unlink()
    rows = job.results / COMPARISONS_FILE
    if rows.exists():
        move(rows, out / ".failed" / Path(job.nb).with_suffix("") / COMPARISONS_FILE)
    tmp = out / ".tmp" / job.nb
    if tmp.exists():
        move(tmp, out / ".failed" / job.nb)


def papermill_execute(src: Path, dest: Path, params: dict, cwd: Path, timeout: int | None) -> None:
    """Run one notebook with papermill (the only place the runner calls it)."""
    import papermill as pm  # deferred: papermill (book extra) loads nbclient and jupyter_client; only a run needs it

    pm.execute_notebook(
        str(src),
        str(dest),
        parameters=params,
        kernel_name="python3",
        cwd=str(cwd),
        progress_bar=False,
        execution_timeout=timeout,
        report_mode=False,
        # the kernel's own log is noise on a local run: its "running over TCP without encryption" notice, and
        # "ERROR | KeyboardInterrupt caught in kernel" when jupyter_client interrupts the idle kernel before
        # shutting it down (shutdown_kernel calls interrupt_kernel first). A cell's error reaches papermill
        # as a message, not through this log.
        extra_arguments=["--IPKernelApp.log_level=CRITICAL"],
    )


def finish(job: Job, executed: Path, seconds: float, where: str = "") -> None:
    """Land an executed notebook in the book: annotate it, move it in atomically, write its stamp (the
    runner's hash, and the inputs stamp the run started with: what an archive entry records)."""
    _annotate(executed, job, seconds)
    move(executed, job.target)  # atomic: the book only ever sees complete notebooks
    write_text(job.stamp_file, json.dumps({"hash": job.stamp, "profile": job.params["profile"],
                                           "device": device_name(job.params["device"]),
                                           "seconds": round(seconds, 2), "when": time.time(),
                                           "worker": where, "seed": job.params.get("seed"), "inputs": job.inputs}))


#: a notebook's finished units of work (qlib.resume.Units), in its results folder
UNITS_DIR = ".units"


def result_files(folder: Path) -> list[Path]:
    """The files below ``folder`` that are a run's results, sorted: none inside a hidden folder
    (``.units/``, a run's resume state, is never a result to ship, hash or archive)."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.rglob("*") if p.is_file()
                  and not any(part.startswith(".") for part in p.relative_to(folder).parts))


def units_line(units: Path, *, failed: bool = False) -> str:
    """``"; 5 units reused, 3 computed"`` from a notebook's units summary (empty when it has none)."""
    try:
        s = json.loads((units / "summary.json").read_text())
        reused, computed = int(s.get("reused", 0)), int(s.get("computed", 0))
    except (OSError, ValueError, TypeError, AttributeError):
        return ""
    if failed:
        return f"; {computed} units saved, {reused} reused: a rerun resumes after them"
    return f"; {reused} units reused, {computed} computed"


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
    # the stamp of an earlier run goes first: if this run is killed (SIGKILL, out of memory, power loss),
    # the rows it wrote have no finished-run stamp, so the ledger leaves them out (gathering.gather) and the
    # next run re-runs the notebook instead of skipping it
    job.stamp_file.unlink(missing_ok=True)
    units = job.results / UNITS_DIR
    if os.environ.get("QLIB_RESUME", "1") == "0":  # --force / --no-resume: nothing of an earlier run is reused
        shutil.rmtree(units, ignore_errors=True)
    (units / "summary.json").unlink(missing_ok=True)  # this run's counts only
    try:
        with kernel_env({STAMP_VARIABLE: job.inputs.get("hash")}):  # the kernel's units are keyed by it
            papermill_execute(job.src, tmp, job.params, job.target.parent, timeout)
        dt = time.perf_counter() - t0
        finish(job, tmp, dt)
        log(f"[ ok ] {job.label} ({dt:.1f} s{units_line(units)})")
        return Outcome(job.label, "ran", dt)
    except Exception as exc:  # papermill raises PapermillExecutionError, kernels may die, …
        dt = time.perf_counter() - t0
        failed = out / ".failed" / rel
        discard(job, out)
        msg = error_line(exc)
        log(f"[FAIL] {job.label} ({dt:.1f} s{units_line(units, failed=True)}): {msg}  — see {failed}")
        if not getattr(exc, "ename", None):
            log(traceback.format_exc(limit=3))
        return Outcome(job.label, "failed", dt, msg)
