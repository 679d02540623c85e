"""Executing one notebook: the job, its outcome, stamps, atomic landing and papermill.

Shared by the in-process runner (:mod:`qlib.book.runner`) and the Dask executor
(:mod:`qlib.book.distributed`), which both import it; it imports neither.
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

from ..atomic import write_text
from .compare import FILENAME as COMPARISONS_FILE

__all__ = ["AGGREGATOR_PARTS", "dependencies", "Outcome", "RunReport", "error_line", "scale_against_paper",
           "glance_markdown", "Job", "chapter_id", "read_stamp", "WORKER_ONLY_ENV", "kernel_env", "device_name",
           "discard", "papermill_execute", "finish", "UNITS_DIR", "result_files", "units_line", "execute"]

AGGREGATOR_PARTS = ("appendix",)  # notebooks that read every other notebook's results


def dependencies(root: Path, nb: str) -> list[str]:
    """Notebooks whose results ``nb`` reads, declared in its metadata as
    ``{"qlib": {"depends": ["<part>/<nb>.ipynb", …]}}``; the runner runs them first and re-runs
    ``nb`` whenever one of them re-ran."""
    meta = json.loads((Path(root) / "chapters" / nb).read_text()).get("metadata", {})
    deps = (meta.get("qlib") or {}).get("depends") or []
    if not isinstance(deps, list) or not all(isinstance(d, str) for d in deps):
        raise ValueError(f"chapters/{nb}: metadata qlib.depends must be a list of notebook paths, got {deps!r}")
    return deps


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


def _fmt_param(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


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
    from .profiles import COMMON, cell_parameters

    declared = cell_parameters(job.src)
    changed = {k: v for k, v in job.params.items() if k not in COMMON and declared.get(k) != v}
    lines = [f"Profile `{job.params['profile']}`, device `{device_name(job.params['device'])}`, "
             f"{seconds:.0f} s."]
    if changed:
        lines.append("Parameters that differ from the parameters cell above: "
                     + "; ".join(f"`{k} = {_fmt_param(v)}` (cell: `{_fmt_param(declared.get(k))}`)"
                                 for k, v in changed.items()) + ".")
    else:
        lines.append("Every parameter is the value in the parameters cell above.")
    box = {"cell_type": "markdown", "id": "qlib-what-ran", "metadata": {"tags": ["qlib-what-ran"]},
           "source": ":::{admonition} What ran\n:class: note\n" + "\n".join(lines) + "\n:::\n"}
    if at is not None:
        cells.insert(at, box)
    glance = glance_markdown(job)
    title = next((i for i, c in enumerate(cells) if c.get("cell_type") == "markdown"
                  and _source(c).lstrip().startswith("# ")), None)
    if glance and title is not None:
        cells.insert(title + 1, {"cell_type": "markdown", "id": "qlib-at-a-glance",
                                 "metadata": {"tags": ["qlib-at-a-glance"]}, "source": glance})
    nb_path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


#: verdicts that say a paper's item did not come out as printed (the glance lists a few of them)
_DIFFERING = ("differs", "disagrees", "erratum not confirmed")
#: parameters that never describe an experiment's scale (the glance's scale line leaves them out)
_NOT_SCALE = ("threads", "device", "seed")


def _book_root(src: Path) -> Path | None:
    for d in Path(src).resolve().parents:
        if (d / "_toc.yml").is_file() and (d / "profiles").is_dir():
            return d
    return None


def scale_against_paper(job: "Job") -> list[tuple[str, Any, Any]]:
    """``(parameter, value that ran, value of the `paper` profile)`` for every parameter of the
    notebook (outside the runner's own and ``threads``/``device``/``seed``) whose run value differs
    from the ``paper`` profile's — the run's scale against the papers'. Empty when the run was at
    the ``paper`` scale, or when the book has no ``paper`` profile entry for the notebook."""
    from .profiles import COMMON, ProfileError, cell_parameters, load

    root = _book_root(job.src)
    if root is None:
        return []
    try:
        paper = load(root, "paper").get(job.nb)
        declared = cell_parameters(job.src)
    except (ProfileError, OSError, ValueError):
        return []
    if paper is None:
        return []
    ran = {**declared, **{k: v for k, v in job.params.items() if k not in COMMON}}
    at_paper = {**declared, **paper}
    return [(k, ran[k], at_paper[k]) for k in declared
            if k not in COMMON and k not in _NOT_SCALE and ran.get(k) != at_paper.get(k)]


def glance_markdown(job: "Job", *, max_differences: int = 3) -> str:
    """The chapter's *result at a glance* (placed under its title in the book): the verdict counts of
    the rows it recorded, up to ``max_differences`` items that differ from the paper (quantity,
    paper, ours) with a link to the chapter's ``Paper vs ours`` section, and the run's scale against
    the ``paper`` profile. Empty for a notebook that recorded no rows (the appendix)."""
    import pandas as pd

    from .render import section_label

    rows_file = job.results / COMPARISONS_FILE
    if not rows_file.is_file():
        return ""
    try:
        rows = pd.read_csv(rows_file, dtype=str, keep_default_na=False)
    except (OSError, ValueError, pd.errors.EmptyDataError):
        return ""
    if rows.empty or "verdict" not in rows:
        return ""
    cid = chapter_id(job.nb)
    try:
        label = section_label(cid)
    except ValueError:
        label = None
    src_text = job.src.read_text() if job.src.is_file() else ""
    link = f"{{ref}}`Paper vs ours <{label}>`" if label and f"({label})=" in src_text else "Paper vs ours"
    tally = rows["verdict"].value_counts()
    order = ["reproduced", "consistent", "differs", "not comparable", "agrees", "disagrees",
             "erratum confirmed", "erratum not confirmed", "not implemented", "not available offline"]
    counts = ", ".join(f"**{int(tally[v])}** {v}" for v in order if v in tally)
    counts += "".join(f", **{int(n)}** {v}" for v, n in tally.items() if v not in order)
    lines = [f"{len(rows)} rows compared with the paper: {counts} (every row in {link} below)."]
    from . import findings

    try:  # a finished run must land even if the findings cannot be judged: the glance then says why
        claims, causes, _ = findings.registry()
        rows = findings.with_causes(findings.rows_at_largest_scale(rows.assign(chapter=cid),
                                                                   build_profile=str(job.params.get("profile", "?")),
                                                                   root=_book_root(job.src)), causes)
        rows = rows[rows["chapter"] == cid]
        claims_md = findings.chapter_claims_markdown(cid, findings.findings_frame(rows, claims))
    except Exception as exc:  # noqa: BLE001 - reported on the page, never hidden
        rows = rows.assign(cause="")
        claims_md = f"The claims could not be judged in this build: {error_line(exc)}."
    if claims_md:
        lines += ["", claims_md.rstrip()]
    diff = rows[rows["verdict"].isin(_DIFFERING)]
    if len(diff):
        lines.append("")
        lines.append(f"Where ours differs from the paper ({len(diff)} rows"
                     + (f"; the {max_differences} farthest from the paper" if len(diff) > max_differences else "")
                     + "; causes: " + ", ".join(f"{n} {c}" for c, n in findings.cause_counts(diff).items() if n)
                     + "):")
        lines.append("")
        for _, r in findings.largest_differences(diff, max_differences).iterrows():
            lines.append(f"* {findings.difference_line(r)}")
    scale = scale_against_paper(job)
    lines.append("")
    prof = job.params.get("profile", "?")
    if scale:
        shown = "; ".join(f"`{k}` {_fmt_param(ran)} (paper profile: {_fmt_param(pap)})" for k, ran, pap in scale[:6])
        more = f"; {len(scale) - 6} more in *What ran*" if len(scale) > 6 else ""
        lines.append(f"Scale: profile `{prof}` — {shown}{more}.")
    else:
        lines.append(f"Scale: profile `{prof}`, every parameter at the `paper` profile's value.")
    body = "\n".join(lines)
    return ":::{admonition} Result at a glance\n:class: tip\n" + body + "\n:::\n"


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
    """Set environment variables for the kernels papermill starts (and remove those named in
    ``unset``), restoring the caller's after."""

    def __init__(self, unset: tuple[str, ...] = (), **env: str | None):
        self.env = {k: v for k, v in env.items() if v}
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


def device_name(device: str) -> str:
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


def discard(job: Job, out: Path | None = None) -> None:
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
        # the kernel's own log is noise on a local run: its "running over TCP without encryption" notice, and
        # "ERROR | KeyboardInterrupt caught in kernel" when jupyter_client interrupts the idle kernel before
        # shutting it down (shutdown_kernel calls interrupt_kernel first). A cell's error reaches papermill
        # as a message, not through this log.
        extra_arguments=["--IPKernelApp.log_level=CRITICAL"],
    )


def finish(job: Job, executed: Path, seconds: float, where: str = "") -> None:
    """Land an executed notebook in the book: annotate it, move it in atomically, write its stamp."""
    _annotate(executed, job, seconds)
    job.target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(executed, job.target)  # atomic: the book only ever sees complete notebooks
    write_text(job.stamp_file, json.dumps({"hash": job.stamp, "profile": job.params["profile"],
                                           "device": device_name(job.params["device"]),
                                           "seconds": round(seconds, 2), "when": time.time(),
                                           "worker": where, "seed": job.params.get("seed")}))


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
    # the rows it wrote have no finished-run stamp, so the ledger leaves them out (compare.gather) and the
    # next run re-runs the notebook instead of skipping it
    job.stamp_file.unlink(missing_ok=True)
    units = job.results / UNITS_DIR
    if os.environ.get("QLIB_RESUME", "1") == "0":  # --force / --no-resume: nothing of an earlier run is reused
        shutil.rmtree(units, ignore_errors=True)
    (units / "summary.json").unlink(missing_ok=True)  # this run's counts only
    try:
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
