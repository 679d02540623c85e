"""The batch runner on Dask: notebooks executed in parallel by Dask ``distributed`` workers.

``qbook run --jobs N`` starts a :class:`distributed.LocalCluster` of N single-threaded worker
processes on this machine; ``--scheduler tcp://host:8786`` uses an existing cluster (``dask-jobqueue``
on SLURM/PBS, ``dask-kubernetes``, or ``dask scheduler`` + ``dask worker`` by hand). Workers need the
same environment (``qlib`` with its ``book`` extra) and, where notebooks read data, ``--data-dir`` must
be valid on them; they need **not** share a filesystem with the client:

* the client sends each worker the notebook's bytes, its parameters and the result files of the
  notebooks it depends on;
* the worker runs papermill in a private temporary tree laid out like the book and sends back the
  executed notebook and the notebook's result files as bytes;
* the client lands them exactly as an in-process run does — atomically, with the stamp, under the
  output-directory lock — or, on failure, keeps the partial notebook and rows under ``.failed/``.

A worker that dies is retried once on another (Dask's ``retries=1``), then reported as failed.
With ``--device cuda`` every notebook asks for one unit of the worker resource ``GPU``, so a mixed
cluster runs them only on workers started with ``--resources GPU=1``; a local cluster declares one GPU
per worker when CUDA is present. Notebooks whose inputs are unchanged are skipped before anything is
sent; a notebook that declares dependencies is sent when they have finished. Among the notebooks
ready at once, the longest starts first (Dask ``priority`` = its expected seconds,
:func:`expected_seconds`), so that with two workers the molecular chapter does not start last and
run alone at the end of the book.
"""

from __future__ import annotations

import itertools
import os
import signal
import socket
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

import torch
import yaml

from ..atomic import write_bytes
from ..stamp import STAMP_VARIABLE
from .jobs import (
    WORKER_ONLY_ENV,
    Job,
    Outcome,
    RunReport,
    discard,
    error_line,
    finish,
    kernel_env,
    papermill_execute,
    read_stamp,
    result_files,
)
from .options import RunOptions
from .toc import dependencies

__all__ = ["COSTS_FILE", "expected_seconds", "task_key", "execute_remote", "run_dask"]

COSTS_FILE = "profiles/costs.yml"


def expected_seconds(job: Job, root: Path) -> float:
    """How long ``job`` is expected to take, to start the longest first: its own last run's time
    (the stamp in the output directory, when it ran the same profile), else the measured time in ``profiles/costs.yml`` for its
    profile (:data:`COSTS_FILE`; seconds on the 2-core development machine), else 0."""
    st = read_stamp(job.stamp_file)
    last = st.get("seconds")
    if isinstance(last, (int, float)) and st.get("profile") == job.params.get("profile"):
        return float(last)
    f = Path(root) / COSTS_FILE
    try:
        costs = yaml.safe_load(f.read_text()) or {}
    except (OSError, yaml.YAMLError):
        return 0.0
    v = (costs.get(str(job.params.get("profile"))) or {}).get(job.nb)
    return float(v) if isinstance(v, (int, float)) else 0.0


_SUBMITTED = itertools.count()


def task_key(label: str) -> str:
    """A notebook's Dask key: ``qbook-<ns>-<n>-<notebook>``, new at every submission. Dask groups tasks by their key's prefix
    (``dask.utils.key_split``), and this one's is ``qbook`` for every notebook: one group, which the
    scheduler queues and hands out longest first (``priority``). A key that began with the notebook
    (``qbook-<notebook>-<ns>``) would make a group per part (``qbook-eden``, ``qbook-quantized``, …), each
    placed on its own, and the longest notebook (eden/05 of the default book, 504 s expected) could
    start long after the first."""
    return f"qbook-{time.time_ns()}-{next(_SUBMITTED)}-{label}"


def execute_remote(payload: dict[str, Any], inputs: dict[str, bytes] | None = None) -> dict[str, Any]:
    """Run on a worker: execute one notebook in a private tree and return its bytes and results.
    ``inputs``: the result files of the notebooks it depends on (``payload["inputs"]`` when not given);
    the scheduler scatters them to the cluster first rather than embedding them in the task graph."""
    if inputs is None:
        inputs = payload.get("inputs", {})
    nb = payload["nb"]
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="qbook-") as tmp:
        base = Path(tmp)
        src = base / "src" / nb
        src.parent.mkdir(parents=True)
        src.write_bytes(payload["notebook"])
        for rel, data in inputs.items():  # results of the notebooks it depends on
            f = base / "_results" / rel
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_bytes(data)
        cwd = base / "chapters" / Path(nb).parent
        cwd.mkdir(parents=True, exist_ok=True)
        dest = base / "executed.ipynb"
        error = ""
        try:
            # the archive the chapter pages show beside their rows, where this worker can read it (a worker
            # on the runner's machine; elsewhere the pages say no archived run)
            arch = payload.get("archive")
            with kernel_env({"QLIB_DATA_DIR": payload["data"],
                             "QLIB_ARCHIVE_DIR": arch if arch and Path(arch).is_dir() else None,
                             STAMP_VARIABLE: payload.get("stamp")},  # the kernel's units are keyed by it
                            unset=WORKER_ONLY_ENV):
                papermill_execute(src, dest, payload["params"], cwd, payload["timeout"])
        except Exception as exc:  # a failing notebook is a result, not a worker error
            error = error_line(exc)
        results_dir = base / "_results" / Path(nb).with_suffix("")
        results = {p.relative_to(results_dir).as_posix(): p.read_bytes() for p in result_files(results_dir)}
        return {"error": error, "seconds": time.perf_counter() - t0,
                "notebook": dest.read_bytes() if dest.exists() else b"",
                "results": results, "worker": f"{socket.gethostname()} pid {os.getpid()}"}


def _inputs(job: Job, root: Path) -> dict[str, bytes]:
    """The result files of ``job``'s declared dependencies, keyed below ``_results/``."""
    out: dict[str, bytes] = {}
    for dep in dependencies(root, job.nb):
        d = job.out / "_results" / Path(dep).with_suffix("")
        for p in result_files(d):
            out[p.relative_to(job.out / "_results").as_posix()] = p.read_bytes()
    return out


def _land(job: Job, res: dict[str, Any], log) -> Outcome:
    """Write a worker's result into the output tree (atomically), or keep it under ``.failed/``."""
    job.stamp_file.unlink(missing_ok=True)  # rows without the stamp of this finished run never count
    for rel, data in res["results"].items():
        write_bytes(job.results / rel, data)
    tmp = job.out / ".tmp" / job.nb
    tmp.parent.mkdir(parents=True, exist_ok=True)
    if res["notebook"]:
        tmp.write_bytes(res["notebook"])
    if res["error"]:
        discard(job)
        log(f"[FAIL] {job.label} ({res['seconds']:.1f} s on {res['worker']}): {res['error']}  — see "
            f"{job.out / '.failed' / job.nb}")
        return Outcome(job.label, "failed", res["seconds"], res["error"])
    finish(job, tmp, res["seconds"], res["worker"])
    log(f"[ ok ] {job.label} ({res['seconds']:.1f} s on {res['worker']})")
    return Outcome(job.label, "ran", res["seconds"])


class _sigint_ignored:
    """``with _sigint_ignored():`` — SIGINT ignored in this process for the block (restored after), so that the
    processes started there inherit an ignored SIGINT (Python then installs no KeyboardInterrupt handler).

    Ctrl-C in a terminal sends SIGINT to the whole foreground process group — the runner *and* the Dask
    worker processes of a local cluster (the notebooks' kernels run in sessions of their own). A worker
    that handled it would die with its own KeyboardInterrupt traceback, reported by its nanny (dozens of
    lines under ``--jobs 2``, where ``--jobs 1`` prints one summary line). The runner alone handles
    Ctrl-C: it marks what was running as interrupted, then closes the cluster."""

    def __enter__(self):
        self._old = None
        if threading.current_thread() is threading.main_thread():
            self._old = signal.signal(signal.SIGINT, signal.SIG_IGN)

    def __exit__(self, *exc):
        if self._old is not None:
            signal.signal(signal.SIGINT, self._old)


def _ignore_sigint_plugin():
    """A Dask worker plugin: the worker process ignores SIGINT (see :class:`_sigint_ignored`), also a worker
    the nanny restarts after the cluster started (it is spawned while the runner handles SIGINT)."""
    # deferred: distributed (book extra) takes seconds to import, and only a run on Dask needs it
    from distributed.diagnostics.plugin import WorkerPlugin

    class IgnoreSigint(WorkerPlugin):
        idempotent = True

        def setup(self, worker):
            if threading.current_thread() is threading.main_thread():
                signal.signal(signal.SIGINT, signal.SIG_IGN)

    return IgnoreSigint()


def _cluster(jobs: int, scheduler: str | None, device: str, log):
    """A client on the given scheduler, or on a new local cluster of ``jobs`` worker processes."""
    # deferred: dask and distributed (book extra) take seconds to import, and only a run on Dask needs them
    import dask
    from distributed import Client, LocalCluster

    dask.config.set({"distributed.scheduler.allowed-failures": 1,  # a worker death is retried once
                     # a worker holds one notebook at a time: the next waits at the scheduler (longest first),
                     # not behind a 30-minute notebook in a busy worker's queue
                     "distributed.scheduler.worker-saturation": 1.0,
                     # monitoring a run of a few long tasks needs none of the defaults' sampling: the workers'
                     # stack profiler (every 10 ms), the system monitor (every 0.5 s, with disk I/O) and the event
                     # loop's health tick (every 20 ms) took 17 % of a core on two waiting workers and their
                     # scheduler, 4.8 % without (benchmarks/dask_overhead.py); the dashboard keeps its task stream
                     "distributed.worker.profile.enabled": False,
                     "distributed.admin.system-monitor.interval": "5s",
                     "distributed.admin.system-monitor.disk": False,
                     "distributed.admin.tick.interval": "1s"})
    if scheduler:
        client = Client(scheduler, timeout="30s")
        log(f"[dask] cluster {scheduler}: {len(client.scheduler_info()['workers'])} workers; "
            f"dashboard {client.dashboard_link}")
        return client, None
    resources = None
    if torch.cuda.is_available() and str(device).startswith(("cuda", "auto")):
        resources = {"GPU": 1}
    with _sigint_ignored():  # the worker processes inherit it: Ctrl-C stops the runner, which closes them
        cluster = LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True, dashboard_address="127.0.0.1:0",
                               resources=resources, silence_logs=40)
    client = Client(cluster)
    client.register_plugin(_ignore_sigint_plugin(), name="qbook-ignore-sigint")  # a worker restarted later, too
    log(f"[dask] local cluster of {jobs} workers; dashboard {client.dashboard_link}")
    return client, cluster


def run_dask(jobs_: list[Job], options: RunOptions, *, root: Path, skip: Callable[[Job], bool], report: RunReport,
             log) -> None:
    """Execute ``jobs_`` on Dask workers, honouring declared dependencies (see the module docstring):
    on the cluster at ``options.scheduler``, else on a local one of ``options.jobs`` worker processes,
    with ``options.timeout`` per cell and a GPU per notebook when ``options.device`` is CUDA. ``skip``
    decides (and records in ``report``) that a notebook's inputs are unchanged; every outcome is appended
    to ``report``."""
    from distributed import as_completed  # deferred: see _cluster

    if not isinstance(options, RunOptions):
        raise TypeError(f"options must be a RunOptions, got {type(options).__name__}")
    timeout = options.timeout
    client, cluster = _cluster(options.jobs, options.scheduler, options.device, log)
    gpu = str(options.device).startswith("cuda")
    pending = list(jobs_)
    by_key: dict[str, Job] = {}
    running = as_completed()
    done_nbs: set[tuple[Path, str]] = set()
    names = {(j.out, j.nb) for j in jobs_}

    def ready(job: Job) -> bool:
        return all((job.out, d) in done_nbs or (job.out, d) not in names for d in dependencies(root, job.nb))

    def submit_ready() -> None:
        # until nothing more is ready: a skipped notebook makes its dependents ready at once
        while batch := [j for j in pending if ready(j)]:
            # longest first here too: the first tasks submitted go straight to the idle workers
            for job in sorted(batch, key=lambda j: -expected_seconds(j, root)):
                _submit(job)

    def _submit(job: Job) -> None:
        pending.remove(job)
        if skip(job):
            done_nbs.add((job.out, job.nb))
            return
        payload = {"nb": job.nb, "notebook": job.src.read_bytes(), "params": job.params, "data": job.data,
                   "timeout": timeout, "archive": os.environ.get("QLIB_ARCHIVE_DIR"),  # (set by runner.run)
                   "stamp": job.inputs.get("hash")}
        # a dependency's results (tens of MB for the synthetic study) go to the cluster as data, not inside
        # the task graph (Dask's "Sending large graph" advice); small or none: passed as they are
        inputs = _inputs(job, root)
        if sum(map(len, inputs.values())) > 2**20:
            inputs = client.scatter(inputs, hash=False)
        fut = client.submit(execute_remote, payload, inputs, key=task_key(job.label), pure=False,
                            retries=1, resources={"GPU": 1} if gpu else None,
                            priority=int(expected_seconds(job, root)))
        by_key[fut.key] = job
        running.add(fut)
        log(f"[sent] {job.label}")

    try:
        submit_ready()
        while running.count() or pending:
            if not running.count():  # what is left waits on a dependency that did not run
                for job in pending:
                    report.outcomes.append(Outcome(job.label, "failed", 0.0, "a notebook it depends on failed"))
                    log(f"[FAIL] {job.label}: a notebook it depends on failed")
                break
            fut = next(running)
            job = by_key.pop(fut.key)
            try:
                res = fut.result()
            except Exception as exc:  # the worker died twice (KilledWorker), or the task could not run
                discard(job)
                msg = f"worker lost: {error_line(exc)}"
                log(f"[FAIL] {job.label}: {msg}")
                report.outcomes.append(Outcome(job.label, "failed", 0.0, msg))
                continue
            outcome = _land(job, res, log)
            report.outcomes.append(outcome)
            if outcome.status == "ran":
                done_nbs.add((job.out, job.nb))
            submit_ready()
    except KeyboardInterrupt:
        report.interrupted = True
        for job in by_key.values():
            discard(job)
            report.outcomes.append(Outcome(job.label, "failed", 0.0, "interrupted (Ctrl-C)"))
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
