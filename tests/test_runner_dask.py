"""The batch runner on a 2-worker Dask LocalCluster: parallel runs, failures, a killed worker,
replicates — with every promise of the in-process runner kept."""

from __future__ import annotations

import nbformat
import pytest
import yaml
from test_runner import make_book

from qlib.book import gathering, runner, summary, toc
from qlib.book.options import RunOptions

pytest.importorskip("distributed")
_nb = make_book.nb


@pytest.fixture(autouse=True)
def _fixed_source_hash(monkeypatch):
    """Pin the inputs stamp and the page's machinery (see test_runner.py)."""
    monkeypatch.setattr(runner, "notebook_stamp", lambda *a, **kw: {"hash": "fixed"})
    monkeypatch.setattr(runner, "page_hash", lambda snapshot: "fixed")


@pytest.fixture()
def book(tmp_path):
    return make_book(tmp_path)


@pytest.fixture(scope="module")
def cluster():
    """One 2-worker cluster for the tests that use an existing scheduler (``--scheduler``)."""
    import dask
    from distributed import LocalCluster

    dask.config.set({"distributed.scheduler.allowed-failures": 1})
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address="127.0.0.1:0",
                      silence_logs=40) as c:
        yield c.scheduler_address


def _run(book, **kw):
    kw.setdefault("profile", "smoke")
    if "scheduler" not in kw:
        kw["jobs"] = 2
    logs: list[str] = []
    rep = runner.run(book, RunOptions(output_dir=book / "out", progress=False, **kw), log=logs.append)
    return rep, logs


def test_parallel_run_failure_skip_and_appendix_last(book, tmp_path):
    # an aggregator (appendix) that gathers the others' rows must run last, from finished notebooks only
    (book / "chapters" / "appendix").mkdir()
    _nb(book / "chapters/appendix/01-all.ipynb", "",
        "from qlib.book.gathering import gather\nrows = gather(results_dir)\nprint('rows', len(rows))")
    contents = yaml.safe_load((book / "_toc.yml").read_text())
    contents["parts"].append({"caption": "Appendix", "chapters": [{"file": "chapters/appendix/01-all"}]})
    (book / "_toc.yml").write_text(yaml.safe_dump(contents))
    for name in ("smoke", "default", "paper"):
        prof = yaml.safe_load((book / "profiles" / f"{name}.yml").read_text())
        prof["appendix/01-all.ipynb"] = {}
        (book / "profiles" / f"{name}.yml").write_text(yaml.safe_dump(prof))

    rep, logs = _run(book, data_dir=tmp_path)
    status = {o.notebook: o.status for o in rep.outcomes}
    assert status == {"a/01-ok.ipynb": "ran", "a/02-fail.ipynb": "failed", "a/03-slow.ipynb": "ran",
                      "appendix/01-all.ipynb": "ran"}
    assert [o.notebook for o in rep.outcomes][-1] == "appendix/01-all.ipynb"
    assert any(line.startswith("[dask] local cluster of 2 workers; dashboard http") for line in logs)
    assert any(" on " in line and line.startswith("[ ok ] a/01-ok.ipynb") for line in logs)  # where it ran
    assert rep.summary().splitlines()[1:] == ["FAILED a/02-fail.ipynb: RuntimeError: boom"]
    out = book / "out"
    # shipped back: executed notebook (with the injected parameters hidden) and its result files
    nb = nbformat.read(out / "chapters/a/01-ok.ipynb", as_version=4)
    assert any("remove-cell" in c.metadata.get("tags", []) for c in nb.cells)
    assert f"data {tmp_path.resolve()}" in "".join(o.get("text", "") for o in nb.cells[-1].outputs)
    assert gathering.gather(out / "_results")["ours"].tolist() == ["2"]
    appendix = nbformat.read(out / "chapters/appendix/01-all.ipynb", as_version=4)
    assert "rows 1" in "".join(o.get("text", "") for o in appendix.cells[-1].outputs)
    assert not (out / "chapters/a/02-fail.ipynb").exists() and (out / ".failed/a/02-fail.ipynb").exists()
    # skip-if-unchanged holds on the Dask path too (nothing is even sent)
    rep2, logs2 = _run(book, data_dir=tmp_path, only=["a/01", "a/03"])
    assert [o.status for o in rep2.outcomes] == ["skipped", "skipped"]
    assert not any(line.startswith("[sent]") for line in logs2)


def test_skipped_dependency_lets_its_dependent_skip_too(book, cluster):
    """A second run with nothing changed: the dependency is skipped before anything is sent, and the
    notebook that depends on it is then ready and skipped too (not reported as waiting on a failure)."""
    dep = book / "chapters/a/03-slow.ipynb"
    nb = nbformat.read(dep, as_version=4)
    nb.metadata["qlib"] = {"depends": ["a/01-ok.ipynb"]}
    nbformat.write(nb, dep)
    rep, _ = _run(book, scheduler=cluster, only=["a/01", "a/03"])
    assert [o.status for o in rep.outcomes] == ["ran", "ran"]
    rep, logs = _run(book, scheduler=cluster, only=["a/01", "a/03"])
    assert [(o.notebook, o.status) for o in rep.outcomes] == [("a/01-ok.ipynb", "skipped"), ("a/03-slow.ipynb", "skipped")]
    assert not rep.failures and not any(line.startswith("[sent]") for line in logs)


def test_killed_worker_is_retried_once_then_reported(book, tmp_path, cluster):
    marker = tmp_path / "killed-once"
    kill = ("import os, signal, pathlib\n"
            f"m = pathlib.Path({str(marker)!r})\n"
            "if mode == 'always' or not m.exists():\n"
            "    m.write_text('x')\n"
            "    os.kill(os.getppid(), signal.SIGKILL)  # the kernel's parent: the Dask worker\n"
            "print('survived')")
    _nb(book / "chapters/a/04-kill.ipynb", "mode = 'once'\n", kill)
    for name in ("smoke", "default", "paper"):
        prof = yaml.safe_load((book / "profiles" / f"{name}.yml").read_text())
        prof["a/04-kill.ipynb"] = {}
        (book / "profiles" / f"{name}.yml").write_text(yaml.safe_dump(prof))
    rep, _ = _run(book, only=["a/04"], scheduler=cluster)
    assert [(o.notebook, o.status) for o in rep.outcomes] == [("a/04-kill.ipynb", "ran")]  # the retry succeeded
    rep, _ = _run(book, only=["a/04", "a/03"], overrides={"mode": "always"}, force=True, scheduler=cluster)
    status = {o.notebook: (o.status, o.error) for o in rep.outcomes}
    assert status["a/03-slow.ipynb"][0] == "ran"
    assert status["a/04-kill.ipynb"][0] == "failed" and status["a/04-kill.ipynb"][1].startswith("worker lost")
    assert not (book / "out/chapters/a/04-kill.ipynb").exists()


def test_replicates_run_each_seed_and_report_stability(book, cluster):
    src = book / "chapters/a/01-ok.ipynb"
    nb = nbformat.read(src, as_version=4)
    nb.cells[1].source += "seed = 0\n"
    # a verdict that depends on the seed: reproduced for seed 0, differs for seed 1
    nb.cells[2].source = ("from qlib.book import Comparisons\n"
                          "from qlib.repro import ledger\n"
                          "c = Comparisons(chapter_id, out_dir, paper='001')\n"
                          "c.record(ledger.close(ledger.Item('T1', 'x', 1.0), 1.0 + seed, kind='paper-number'))\n"
                          "c.record(ledger.close(ledger.Item('T2', 'y', 1.0), 1.0, kind='paper-number'))\n")
    nbformat.write(nb, src)
    rep, _ = _run(book, only=["a/01"], replicates=2, scheduler=cluster)
    assert sorted(o.notebook for o in rep.outcomes) == ["a/01-ok.ipynb", "a/01-ok.ipynb [seed 1]"]
    out = book / "out"
    assert (out / "_replicates/seed-1/chapters/a/01-ok.ipynb").is_file()
    rows = gathering.gather(out / "_results")
    stab = summary.stability(rows, gathering.replicate_rows(out / "_results")).set_index("where")
    assert stab.loc["T1", "seeds"] == 2 and stab.loc["T1", "same verdict"] == 1 and bool(stab.loc["T1", "flips"])
    assert stab.loc["T2", "same verdict"] == 2 and not bool(stab.loc["T2", "flips"])
    assert stab.loc["T1", "ours (min – max)"] == "1 – 2"


def test_expected_seconds_start_the_longest_first(tmp_path):
    # the order in which ready notebooks start on Dask: the own last run (same profile), else
    # profiles/costs.yml, else 0; and the committed costs name only notebooks of the book
    import json
    from pathlib import Path

    from qlib.book.distributed import COSTS_FILE, expected_seconds
    from qlib.book.jobs import Job

    root = Path(__file__).resolve().parents[1]
    costs = yaml.safe_load((root / COSTS_FILE).read_text())
    book = set(toc.notebooks(root))
    assert costs["default"] and all(set(v) <= book for v in costs.values())
    assert max(costs["default"], key=costs["default"].get) == "quantized-mis/05-molecular.ipynb"

    stamp = tmp_path / "s.json"
    job = Job("quantized-mis/05-molecular.ipynb", tmp_path / "a.ipynb", tmp_path / "b.ipynb", stamp, tmp_path,
              {"profile": "default"})
    assert expected_seconds(job, root) == costs["default"]["quantized-mis/05-molecular.ipynb"]
    stamp.write_text(json.dumps({"profile": "default", "seconds": 7.5}))
    assert expected_seconds(job, root) == 7.5
    stamp.write_text(json.dumps({"profile": "smoke", "seconds": 7.5}))      # another profile's time
    assert expected_seconds(job, root) == costs["default"]["quantized-mis/05-molecular.ipynb"]
    job.params["profile"] = "mine.yml"
    assert expected_seconds(job, tmp_path) == 0.0                            # no costs file, no stamp of it


def test_ctrl_c_under_two_jobs_prints_one_summary_line_like_one_job(book, tmp_path):
    """Issue 30: Ctrl-C under ``--jobs 2`` printed 66 lines of Dask tracebacks (the terminal sends SIGINT to the
    whole foreground process group: the runner and its worker processes). Now one summary line and exit 130,
    as with ``--jobs 1``."""
    import os
    import signal
    import subprocess
    import sys
    import time

    prof = yaml.safe_load((book / "profiles/smoke.yml").read_text())
    prof["a/03-slow.ipynb"]["seconds"] = 60.0
    (book / "profiles/smoke.yml").write_text(yaml.safe_dump(prof))
    out_f, err_f = tmp_path / "stdout.txt", tmp_path / "stderr.txt"
    with open(out_f, "w") as out, open(err_f, "w") as err:
        # a process group of its own (a terminal's foreground job), SIGINT at its default (see test_runner)
        proc = subprocess.Popen(
            [sys.executable, "-m", "qlib.book", "--root", str(book), "--output-dir", str(book / "out"), "run",
             "--profile", "smoke", "--only", "a/01", "a/03", "--no-progress", "--jobs", "2"],
            stdout=out, stderr=err, start_new_session=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        try:
            deadline = time.time() + 120
            while "[ ok ] a/01-ok.ipynb" not in out_f.read_text() and time.time() < deadline:
                assert proc.poll() is None, (out_f.read_text(), err_f.read_text())
                time.sleep(0.2)
            assert "[ ok ] a/01-ok.ipynb" in out_f.read_text(), (out_f.read_text(), err_f.read_text())
            time.sleep(2.0)  # a/03 is sleeping in its kernel on the other worker
            os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: the whole group
            proc.wait(timeout=90)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
    stdout, stderr = out_f.read_text(), err_f.read_text()
    assert proc.returncode == 130, (stdout, stderr)
    assert "1 ran, 0 skipped, 1 failed" in stdout and "(interrupted)" in stdout, stdout
    assert "FAILED a/03-slow.ipynb: interrupted (Ctrl-C)" in stdout
    assert "Traceback" not in stdout + stderr, stderr
    assert len(stderr.strip().splitlines()) <= 1, stderr
    assert not (book / "out/chapters/a/03-slow.ipynb").exists()


def test_a_dependency_s_large_results_reach_its_dependent_outside_the_graph(book, cluster, recwarn):
    """A dependency's results over 1 MiB are scattered to the cluster, not embedded in the task graph
    (Dask warned "Sending large graph" for the synthetic study's 45 MB); the dependent reads them intact."""
    import hashlib

    blob = bytes(range(256)) * (12 * 2**12)  # 12 MiB (Dask warns above 10 MB)
    _nb(book / "chapters/a/04-big.ipynb", "",
        f"from pathlib import Path\nPath(out_dir).mkdir(parents=True, exist_ok=True)\n(Path(out_dir) / 'big.bin').write_bytes(bytes(range(256)) * {12 * 2**12})")
    _nb(book / "chapters/a/05-reader.ipynb", "",
        "import hashlib\nfrom pathlib import Path\n"
        "print('sha', hashlib.sha256((Path(results_dir) / 'a/04-big/big.bin').read_bytes()).hexdigest())")
    reader = book / "chapters/a/05-reader.ipynb"
    nb = nbformat.read(reader, as_version=4)
    nb.metadata["qlib"] = {"depends": ["a/04-big.ipynb"]}
    nbformat.write(nb, reader)
    for name in ("smoke", "default", "paper"):
        prof = yaml.safe_load((book / "profiles" / f"{name}.yml").read_text())
        prof.update({"a/04-big.ipynb": {}, "a/05-reader.ipynb": {}})
        (book / "profiles" / f"{name}.yml").write_text(yaml.safe_dump(prof))
    rep, _ = _run(book, scheduler=cluster, only=["a/04", "a/05"])
    assert [o.status for o in rep.outcomes] == ["ran", "ran"], rep.summary()
    out = nbformat.read(book / "out/chapters/a/05-reader.ipynb", as_version=4)
    assert f"sha {hashlib.sha256(blob).hexdigest()}" in "".join(o.get("text", "") for o in out.cells[-1].outputs)
    assert not [w for w in recwarn if "large graph" in str(w.message)]


def test_every_notebook_is_in_one_dask_task_group():
    """Dask queues a task group and hands it out by priority (longest first); keys whose prefix
    differs per part were placed part by part instead."""
    from dask.utils import key_split

    from qlib.book.distributed import task_key

    labels = ["quantized-mis/05-molecular.ipynb", "eden/05-federated.ipynb", "attacks/01-toys-vs-limit.ipynb",
              "appendix/01-comparisons.ipynb"]
    assert {key_split(task_key(lab)) for lab in labels} == {"qbook"}
    assert len({task_key(labels[0]) for _ in range(3)}) == 3   # a fresh key per submission
