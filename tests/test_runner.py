"""The papermill batch runner on a tiny throw-away book: profiles, skipping, failures, atomicity."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
import yaml

from qlib.book import cli, runner
from qlib.book.compare import gather

PARAMS = """profile = "default"
device = "auto"
data_dir = None
out_dir = "_results/x"
results_dir = "_results"
"""


def _nb(path: Path, extra_params: str, body: str) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    p = nbformat.v4.new_code_cell(PARAMS + extra_params)
    p.metadata["tags"] = ["parameters"]
    nb.cells = [nbformat.v4.new_markdown_cell(f"# {path.stem}"), p, nbformat.v4.new_code_cell(body)]
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)


@pytest.fixture(autouse=True)
def _fixed_source_hash(monkeypatch):
    """qlib's sources are an input of every notebook; pin their hash so that edits made to the
    package while the suite runs do not change what these tests expect."""
    monkeypatch.setattr(runner, "qlib_source_hash", lambda: "fixed")


@pytest.fixture()
def book(tmp_path: Path) -> Path:
    root = tmp_path / "book"
    (root / "chapters" / "a").mkdir(parents=True)
    (root / "_toc.yml").write_text(yaml.safe_dump({
        "format": "jb-book", "root": "chapters/a/index",
        "parts": [{"caption": "A", "chapters": [{"file": "chapters/a/index", "sections": [{"glob": "chapters/a/[0-9]*"}]}]}],
    }))
    (root / "chapters" / "a" / "index.md").write_text("# A\n")
    _nb(root / "chapters/a/01-ok.ipynb", "x = 1\n",
        "from qlib.book import Comparisons\n"
        "import os\n"
        "Comparisons('a/01-ok', out_dir).close('001', 'T1', 'x', 1.0, float(x))\n"
        "print('device', device, 'data', data_dir, 'cwd', os.getcwd())")
    _nb(root / "chapters/a/02-fail.ipynb", "fail = True\n", "if fail:\n    raise RuntimeError('boom')")
    _nb(root / "chapters/a/03-slow.ipynb", "seconds = 0.0\n", "import time\ntime.sleep(seconds)\nprint('done')")
    (root / "profiles").mkdir()
    prof = {"a/01-ok.ipynb": {"x": 2}, "a/02-fail.ipynb": {"fail": True}, "a/03-slow.ipynb": {"seconds": 0.0}}
    for name in ("smoke", "default", "paper"):
        (root / "profiles" / f"{name}.yml").write_text(yaml.safe_dump(prof))
    return root


def _run(book: Path, **kw):
    kw.setdefault("profile", "smoke")
    return runner.run(root=book, output_dir=book / "out", progress=False, log=lambda *a: None, **kw)


def test_discovery_in_toc_order(book):
    assert runner.notebooks(book) == ["a/01-ok.ipynb", "a/02-fail.ipynb", "a/03-slow.ipynb"]
    assert runner.select(runner.notebooks(book), ["a/02"]) == ["a/02-fail.ipynb"]
    assert runner.select(runner.notebooks(book), ["chapters/a/0[13]*"]) == ["a/01-ok.ipynb", "a/03-slow.ipynb"]
    with pytest.raises(ValueError, match="no notebook matches"):
        runner.select(runner.notebooks(book), ["zzz/"])


def test_run_continue_after_failure_skip_and_force(book, tmp_path):
    rep = _run(book, data_dir=tmp_path)
    status = {o.notebook: o.status for o in rep.outcomes}
    assert status == {"a/01-ok.ipynb": "ran", "a/02-fail.ipynb": "failed", "a/03-slow.ipynb": "ran"}
    assert rep.summary().splitlines()[1:] == ["FAILED a/02-fail.ipynb: RuntimeError: boom"]
    out = book / "out"
    # executed notebook: the profile's parameter was injected and the injected cell is hidden
    nb = nbformat.read(out / "chapters/a/01-ok.ipynb", as_version=4)
    injected = [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert len(injected) == 1 and "x = 2" in injected[0].source and "remove-cell" in injected[0].metadata.tags
    assert f"data {tmp_path.resolve()}" in "".join(o.get("text", "") for o in nb.cells[-1].outputs)
    assert gather(out / "_results")["ours"].tolist() == ["2"]
    # the failure left nothing in the book, but its partial notebook is kept for inspection
    assert not (out / "chapters/a/02-fail.ipynb").exists()
    assert (out / ".failed/a/02-fail.ipynb").exists()

    rep2 = _run(book, data_dir=tmp_path)
    assert [o.status for o in rep2.outcomes] == ["skipped", "failed", "skipped"]
    # a changed parameter re-runs exactly that notebook; --force re-runs everything
    prof = yaml.safe_load((book / "profiles/smoke.yml").read_text())
    prof["a/01-ok.ipynb"]["x"] = 3
    (book / "profiles/smoke.yml").write_text(yaml.safe_dump(prof))
    rep3 = _run(book, data_dir=tmp_path, only=["a/01", "a/03"])
    assert [o.status for o in rep3.outcomes] == ["ran", "skipped"]
    rep4 = _run(book, data_dir=tmp_path, only=["a/03"], force=True)
    assert [o.status for o in rep4.outcomes] == ["ran"]
    # a different device or another profile is a different input too
    assert [o.status for o in _run(book, data_dir=tmp_path, only=["a/03"], device="cpu").outcomes] == ["ran"]


def test_qlib_source_change_reruns(book, monkeypatch):
    assert [o.status for o in _run(book, only=["a/03"]).outcomes] == ["ran"]
    assert [o.status for o in _run(book, only=["a/03"]).outcomes] == ["skipped"]
    monkeypatch.setattr(runner, "qlib_source_hash", lambda: "changed")
    assert [o.status for o in _run(book, only=["a/03"]).outcomes] == ["ran"]


def test_source_hash_covers_every_module(tmp_path, monkeypatch):
    monkeypatch.undo()
    h = runner.qlib_source_hash()
    assert len(h) == 64 and h == runner.qlib_source_hash()
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("x = 1\n"); b.write_text("y = 2\n")
    h1 = runner._hash_files([a, b], tmp_path)
    b.write_text("y = 3\n")
    assert runner._hash_files([a, b], tmp_path) != h1


def test_failure_removes_stale_output(book):
    prof = yaml.safe_load((book / "profiles/smoke.yml").read_text())
    prof["a/02-fail.ipynb"]["fail"] = False
    (book / "profiles/smoke.yml").write_text(yaml.safe_dump(prof))
    assert [o.status for o in _run(book, only=["a/02"]).outcomes] == ["ran"]
    assert (book / "out/chapters/a/02-fail.ipynb").exists()
    prof["a/02-fail.ipynb"]["fail"] = True
    (book / "profiles/smoke.yml").write_text(yaml.safe_dump(prof))
    assert [o.status for o in _run(book, only=["a/02"]).outcomes] == ["failed"]
    assert not (book / "out/chapters/a/02-fail.ipynb").exists()  # no stale result from other inputs


def test_killed_run_leaves_no_half_written_notebook(book):
    prof = yaml.safe_load((book / "profiles/smoke.yml").read_text())
    prof["a/03-slow.ipynb"]["seconds"] = 60.0
    (book / "profiles/smoke.yml").write_text(yaml.safe_dump(prof))
    proc = subprocess.Popen(
        [sys.executable, "-m", "qlib.book", "--root", str(book), "--output-dir", str(book / "out"),
         "run", "--profile", "smoke", "--only", "a/03", "--no-progress"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    tmp = book / "out/.tmp/a/03-slow.ipynb"
    deadline = time.time() + 60
    while not tmp.exists() and time.time() < deadline:
        time.sleep(0.2)
    assert tmp.exists(), "papermill never started writing"
    time.sleep(1.0)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert not (book / "out/chapters/a/03-slow.ipynb").exists()
    assert not (book / "out/.stamps/a/03-slow.json").exists()


def test_cli_exit_codes_and_summary(book, capsys):
    args = ["--root", str(book), "--output-dir", str(book / "out")]
    assert cli.main(args + ["run", "--profile", "smoke", "--only", "a/02", "--no-progress"]) == 1
    out = capsys.readouterr().out
    assert "0 ran, 0 skipped, 1 failed" in out and "FAILED a/02-fail.ipynb: RuntimeError: boom" in out
    assert cli.main(args + ["run", "--profile", "smoke", "--only", "nope/"]) == 2
    assert cli.main(args + ["run", "--profile", "smoke", "--device", "tpu"]) == 2
    assert cli.main(args + ["list"]) == 0
    assert capsys.readouterr().out.split() == ["a/01-ok.ipynb", "a/02-fail.ipynb", "a/03-slow.ipynb"]


def test_profile_validation(book):
    (book / "profiles/smoke.yml").write_text(yaml.safe_dump({"a/01-ok.ipynb": {"device": "cpu"}}))
    with pytest.raises(ValueError, match="runner injects itself"):
        _run(book)
    (book / "profiles/smoke.yml").write_text(yaml.safe_dump({"a/01-ok.ipynb": {}}))
    with pytest.raises(ValueError, match="no entry for: a/02-fail.ipynb"):
        _run(book)
    with pytest.raises(ValueError, match="profile must be one of"):
        _run(book, profile="huge")


def test_prune_toc_keeps_only_executed(book, tmp_path):
    toc = yaml.safe_load((book / "_toc.yml").read_text())
    out = tmp_path / "o"
    (out / "chapters/a").mkdir(parents=True)
    pruned = runner._prune_toc(toc, out)
    assert pruned["parts"][0]["chapters"][0] == {"file": "chapters/a/index"}
    (out / "chapters/a/01-ok.ipynb").write_text("{}")
    assert runner._prune_toc(toc, out)["parts"][0]["chapters"][0]["sections"] == [{"glob": "chapters/a/[0-9]*"}]
    assert json.dumps(toc)  # the original is not modified
