"""The CPU a local Dask cluster of the book's runner spends on itself while its two workers wait on a task
(as a worker waits on a notebook's kernel): the client process, the scheduler and the two worker processes,
their CPU seconds over the wait, with Dask's default monitoring and with the runner's settings
(``qlib.book.distributed._cluster``: no worker profiler, system monitor every 5 s without disk I/O, event
loop tick every second).

    python benchmarks/dask_overhead.py [--seconds 20]

Measured 2026-12-08 on the 2-core VM (an archive run on both cores beside it): default 3.01 CPU-s over 18 s
(16.7 % of a core), the runner's settings 0.87 CPU-s (4.8 %); without the dashboard too, 0.87 CPU-s.
"""

from __future__ import annotations

import argparse
import time

import dask
import psutil
from distributed import Client, LocalCluster

#: Dask's own values of what the runner changes (distributed's distributed.yaml)
DEFAULT = {"distributed.scheduler.allowed-failures": 1, "distributed.scheduler.worker-saturation": 1.0,
           "distributed.worker.profile.enabled": True, "distributed.admin.system-monitor.interval": "500ms",
           "distributed.admin.system-monitor.disk": True, "distributed.admin.tick.interval": "20ms"}


def _wait(s: float) -> float:
    time.sleep(s)
    return s


def measure(settings: dict, seconds: float, dashboard: bool = True) -> tuple[float, float]:
    """(CPU seconds of the client, scheduler and workers, wall seconds) while two tasks of ``seconds`` run."""
    with dask.config.set(settings):
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                               dashboard_address="127.0.0.1:0" if dashboard else None, silence_logs=40)
        client = Client(cluster)
        me = psutil.Process()
        procs = [me, *me.children(recursive=True)]
        futs = [client.submit(_wait, seconds, pure=False) for _ in range(2)]
        time.sleep(2)
        t0, w0 = [p.cpu_times() for p in procs], time.time()
        client.gather(futs)
        t1, wall = [p.cpu_times() for p in procs], time.time() - w0
        client.close()
        cluster.close()
    return sum((b.user + b.system) - (a.user + a.system) for a, b in zip(t0, t1)), wall


def runner_settings() -> dict:
    """The settings ``qlib.book.distributed._cluster`` sets (read back from dask's config after it ran)."""
    import qlib.book.distributed as D

    seen = {}
    real = dask.config.set

    def spy(cfg=None, **kw):
        seen.update(cfg or {})
        return real(cfg, **kw)
    dask.config.set = spy
    try:
        client, cluster = D._cluster(1, None, "cpu", lambda *_: None)
        client.close()
        cluster.close()
    finally:
        dask.config.set = real
    return seen


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=20.0)
    a = ap.parse_args()
    ours = runner_settings()
    for name, cfg, dash in (("dask defaults", DEFAULT, True), ("the runner's settings", ours, True),
                            ("the runner's, no dashboard", ours, False)):
        cpu, wall = measure(cfg, a.seconds, dash)
        print(f"{name:>28}: {cpu:.2f} CPU-s over {wall:.1f} s = {100 * cpu / wall:.1f} % of a core")


if __name__ == "__main__":
    main()
