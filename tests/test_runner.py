"""The papermill batch runner on a tiny throw-away book: profiles, skipping, failures, atomicity."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
import yaml

from qlib.book import build, cli, profiles, runner, toc
from qlib.book.gathering import gather
from qlib.book.options import RunOptions
from qlib.book.profiles import ProfileError

PARAMS = """profile = "default"
device = "auto"
data_dir = None
out_dir = "_results/x"
results_dir = "_results"
chapter_id = None
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
    """qlib's sources are an input of every notebook (its inputs stamp, and the book machinery that draws
    its page); pin both so that edits made to the package while the suite runs do not change what these
    tests expect. The stamp itself is tested in tests/test_stamp.py."""
    monkeypatch.setattr(runner, "notebook_stamp", lambda *a, **kw: {"hash": "fixed"})
    monkeypatch.setattr(runner, "page_hash", lambda snapshot: "fixed")


@pytest.fixture()
def book(tmp_path: Path) -> Path:
    return make_book(tmp_path)


def make_book(tmp_path: Path) -> Path:
    """A throw-away book of three notebooks (ok, failing, slow) with its three profiles."""
    root = tmp_path / "book"
    (root / "chapters" / "a").mkdir(parents=True)
    (root / "_toc.yml").write_text(yaml.safe_dump({
        "format": "jb-book", "root": "chapters/a/index",
        "parts": [{"caption": "A", "chapters": [{"file": "chapters/a/index", "sections": [{"glob": "chapters/a/[0-9]*"}]}]}],
    }))
    (root / "chapters" / "a" / "index.md").write_text("# A\n")
    _nb(root / "chapters/a/01-ok.ipynb", "x = 1\n",
        "from qlib.book import Comparisons\n"
        "from qlib.repro import ledger\n"
        "import os\n"
        "Comparisons(chapter_id, out_dir, paper='001').record(ledger.close(ledger.Item('T1', 'x', 1.0), float(x), kind='paper-number'))\n"
        "print('device', device, 'data', os.environ.get('QLIB_DATA_DIR'), 'cwd', os.getcwd())")
    _nb(root / "chapters/a/02-fail.ipynb", "fail = True\n", "if fail:\n    raise RuntimeError('boom')")
    _nb(root / "chapters/a/03-slow.ipynb", "seconds = 0.0\n", "import time\ntime.sleep(seconds)\nprint('done')")
    (root / "profiles").mkdir()
    prof = {"a/01-ok.ipynb": {"x": 2}, "a/02-fail.ipynb": {"fail": True}, "a/03-slow.ipynb": {"seconds": 0.0}}
    for name in ("smoke", "default", "paper"):
        (root / "profiles" / f"{name}.yml").write_text(yaml.safe_dump(prof))
    return root


make_book.nb = _nb


def _run(book: Path, **kw):
    kw.setdefault("profile", "smoke")
    return runner.run(book, RunOptions(output_dir=book / "out", progress=False, **kw), log=lambda *a: None)


def test_discovery_in_toc_order(book):
    assert toc.notebooks(book) == ["a/01-ok.ipynb", "a/02-fail.ipynb", "a/03-slow.ipynb"]
    assert toc.select(toc.notebooks(book), ["a/02"]) == ["a/02-fail.ipynb"]
    assert toc.select(toc.notebooks(book), ["chapters/a/0[13]*"]) == ["a/01-ok.ipynb", "a/03-slow.ipynb"]
    with pytest.raises(ValueError, match="matches no notebook"):
        toc.select(toc.notebooks(book), ["zzz/"])


def test_run_continue_after_failure_skip_and_force(book, tmp_path):
    rep = _run(book, data_dir=tmp_path)
    status = {o.notebook: o.status for o in rep.outcomes}
    assert status == {"a/01-ok.ipynb": "ran", "a/02-fail.ipynb": "failed", "a/03-slow.ipynb": "ran"}
    assert rep.summary().splitlines()[1:] == ["FAILED a/02-fail.ipynb: RuntimeError: boom"]
    # one at a time: the wall time is the notebooks' time plus the runner's own
    assert rep.wall >= sum(o.seconds for o in rep.outcomes)
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
    monkeypatch.setattr(runner, "notebook_stamp", lambda *a, **kw: {"hash": "other inputs"})
    assert [o.status for o in _run(book, only=["a/03"]).outcomes] == ["ran"]
    assert [o.status for o in _run(book, only=["a/03"]).outcomes] == ["skipped"]
    monkeypatch.setattr(runner, "page_hash", lambda snapshot: "other book machinery")
    assert [o.status for o in _run(book, only=["a/03"]).outcomes] == ["ran"]
    st = json.loads((book / "out/.stamps/a/03-slow.json").read_text())
    assert st["inputs"] == {"hash": "other inputs"}  # the inputs stamp the run started with, for the archive


def test_page_hash_covers_the_book_and_the_findings_but_not_its_machinery(tmp_path, monkeypatch):
    monkeypatch.undo()
    snap = {"qlib.eden": "a", "qlib.book.chapter": "b", "qlib.book.runner": "c", "qlib.repro.findings": "d",
            "qlib.repro.eden.findings": "e", "qlib.repro.eden.sweeps": "f"}
    h = runner.page_hash(snap)
    assert len(h) == 64 and h == runner.page_hash(dict(snap))
    for m, drawn in (("qlib.book.chapter", True), ("qlib.repro.findings", True), ("qlib.repro.eden.findings", True),
                     ("qlib.book.runner", False), ("qlib.eden", False), ("qlib.repro.eden.sweeps", False)):
        assert (runner.page_hash({**snap, m: "edited"}) != h) == drawn, m  # a library module is in the stamp instead
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("x = 1\n")
    b.write_text("y = 2\n")
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


def _start_slow_run(book: Path, **popen) -> subprocess.Popen:
    """Start `qbook run` of the slow notebook (60 s) in a child process; return once papermill is
    writing its temporary notebook."""
    prof = yaml.safe_load((book / "profiles/smoke.yml").read_text())
    prof["a/03-slow.ipynb"]["seconds"] = 60.0
    (book / "profiles/smoke.yml").write_text(yaml.safe_dump(prof))
    # SIGINT at its default in the child: a shell without job control starts background commands with
    # SIGINT ignored, and an ignored SIGINT is inherited across exec (Python then installs no handler)
    proc = subprocess.Popen(
        [sys.executable, "-m", "qlib.book", "--root", str(book), "--output-dir", str(book / "out"),
         "run", "--profile", "smoke", "--only", "a/03", "--no-progress", "--jobs", "1"],
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL), **popen)
    tmp = book / "out/.tmp/a/03-slow.ipynb"
    deadline = time.time() + 60
    while not tmp.exists() and time.time() < deadline:
        time.sleep(0.2)
    assert tmp.exists(), "papermill never started writing"
    return proc


def test_killed_run_leaves_no_half_written_notebook(book):
    proc = _start_slow_run(book, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
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
    # --only repeated adds to the selection (it used to keep the last one only, silently)
    assert cli.main(args + ["run", "--profile", "smoke", "--only", "a/01", "--only", "a/03", "--no-progress"]) == 0
    assert "2 ran, 0 skipped, 0 failed" in capsys.readouterr().out


def test_cli_root_and_output_dir_after_the_subcommand(book, tmp_path, capsys):
    # the placement a reader types first (issue 29): `run ... --output-dir DIR`, same effect as before `run`
    out = tmp_path / "after"
    assert cli.main(["run", "--root", str(book), "--output-dir", str(out), "--profile", "smoke",
                     "--only", "a/01", "--no-progress"]) == 0
    assert (out / "chapters/a/01-ok.ipynb").exists()
    assert cli.main(["list", "--root", str(book)]) == 0
    assert capsys.readouterr().out.split()[-3:] == ["a/01-ok.ipynb", "a/02-fail.ipynb", "a/03-slow.ipynb"]
    # given on both sides, the value after the subcommand wins; given only before, it is kept
    before, after = tmp_path / "before", tmp_path / "after2"
    assert cli.main(["--root", str(book), "--output-dir", str(before), "run", "--output-dir", str(after),
                     "--profile", "smoke", "--only", "a/01", "--no-progress"]) == 0
    assert (after / "chapters/a/01-ok.ipynb").exists() and not before.exists()


def test_profile_validation(book):
    smoke = book / "profiles/smoke.yml"
    smoke.write_text(yaml.safe_dump({"a/01-ok.ipynb": {"device": "cpu"}}))
    with pytest.raises(ProfileError, match="runner injects itself"):
        _run(book)
    smoke.write_text(yaml.safe_dump({"a/01-ok.ipynb": {}}))
    with pytest.raises(ProfileError, match="no entry for a/02-fail.ipynb"):
        _run(book)
    with pytest.raises(ProfileError, match="profile must be one of"):
        _run(book, profile="huge")


@pytest.mark.parametrize("text, message", [
    # an unknown notebook, with a suggestion
    ("a/01-ok.ipynb: {}\na/02-fail.ipynb: {}\na/03-slow.ipynb: {}\na/04-slow.ipynb: {}\n",
     r"smoke.yml: unknown notebook 'a/04-slow.ipynb'; did you mean 'a/03-slow.ipynb'"),
    # a duplicate key (PyYAML would silently keep the last)
    ("a/01-ok.ipynb: {x: 1}\na/01-ok.ipynb: {x: 2}\na/02-fail.ipynb: {}\na/03-slow.ipynb: {}\n",
     r"smoke.yml: duplicate key 'a/01-ok.ipynb' \(line 2, first at line 1\)"),
    # a misspelled parameter, with a suggestion
    ("a/01-ok.ipynb: {xx: 1}\na/02-fail.ipynb: {}\na/03-slow.ipynb: {}\n",
     r"smoke.yml: a/01-ok.ipynb: unknown parameter 'xx'; did you mean 'x'"),
    # a wrong type
    ("a/01-ok.ipynb: {}\na/02-fail.ipynb: {fail: maybe}\na/03-slow.ipynb: {}\n",
     r"smoke.yml: a/02-fail.ipynb: parameter 'fail' must be a bool like the notebook's True, got 'maybe'"),
    ("a/01-ok.ipynb: {}\na/02-fail.ipynb: {}\na/03-slow.ipynb: {seconds: [1]}\n",
     r"parameter 'seconds' must be a number"),
    # malformed YAML names the file
    ("a/01-ok.ipynb: {x: [1\n", r"smoke.yml: malformed YAML"),
])
def test_profile_errors_name_file_notebook_and_parameter(book, text, message):
    (book / "profiles/smoke.yml").write_text(text)
    with pytest.raises(ProfileError, match=message):
        _run(book)
    assert not (book / "out").exists() or not list((book / "out").rglob("*.ipynb")), "nothing may run"


def test_overrides_and_user_profile(book, tmp_path):
    rep = _run(book, only=["a/01"], overrides={"x": 5})
    assert [o.status for o in rep.outcomes] == ["ran"]
    assert gather(book / "out/_results")["ours"].tolist() == ["5"]
    with pytest.raises(ProfileError, match=r"no selected notebook declares 'xy' \(did you mean 'x'\?\)"):
        _run(book, only=["a/01"], overrides={"xy": 5})
    with pytest.raises(ProfileError, match="parameter 'x' must be an int"):
        _run(book, only=["a/01"], overrides={"x": "five"})
    assert profiles.parse_overrides(["a=[2, 4]", "b=0.5", "c=text"]) == {"a": [2, 4], "b": 0.5, "c": "text"}
    with pytest.raises(ProfileError, match="name=value"):
        profiles.parse_overrides(["a"])
    mine = tmp_path / "mine.yml"
    mine.write_text("a/01-ok.ipynb: {x: 7}\n")  # a user profile may name a subset
    rep = _run(book, profile=mine)
    assert [o.status for o in rep.outcomes] == ["ran", "failed", "ran"]
    assert "7" in gather(book / "out/_results")["ours"].tolist()
    nb = nbformat.read(book / "out/chapters/a/01-ok.ipynb", as_version=4)
    injected = [c.source for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert len(injected) == 1 and 'profile = "mine"' in injected[0] and "x = 7" in injected[0]


def test_failed_run_rows_are_not_gathered(book):
    prof = yaml.safe_load((book / "profiles/smoke.yml").read_text())
    assert [o.status for o in _run(book, only=["a/01"]).outcomes] == ["ran"]
    assert len(gather(book / "out/_results")) == 1
    # the same notebook now records its row and then fails: the row must not reach the ledger
    src = book / "chapters/a/01-ok.ipynb"
    nb = nbformat.read(src, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("raise RuntimeError('after recording')"))
    nbformat.write(nb, src)
    assert [o.status for o in _run(book, only=["a/01"]).outcomes] == ["failed"]
    assert gather(book / "out/_results").empty
    assert (book / "out/.failed/a/01-ok/comparisons.csv").is_file()
    del prof


def test_truncated_stamp_reruns_instead_of_refusing(book):
    assert [o.status for o in _run(book, only=["a/03"]).outcomes] == ["ran"]
    stamp = book / "out/.stamps/a/03-slow.json"
    stamp.write_text('{"hash": "ab')  # a crash while writing (stamps are now written atomically)
    assert [o.status for o in _run(book, only=["a/03"]).outcomes] == ["ran"]
    assert json.loads(stamp.read_text())["profile"] == "smoke"


def test_second_runner_on_same_output_is_refused(book):
    out = book / "out"
    with runner._OutputLock(out):
        with pytest.raises(runner.OutputDirError, match=rf"in use by another runner \(PID {os.getpid()}\)"):
            _run(book, only=["a/03"])
        assert cli.main(["--root", str(book), "--output-dir", str(out), "run", "--profile", "smoke",
                         "--only", "a/03", "--no-progress"]) == 3
    assert [o.status for o in _run(book, only=["a/03"]).outcomes] == ["ran"]


def test_unwritable_output_dir_is_a_clear_error(book, tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    code = cli.main(["--root", str(book), "--output-dir", str(blocker / "sub"), "run", "--profile", "smoke",
                     "--only", "a/03", "--no-progress"])
    assert code == 3 and "is not writable" in capsys.readouterr().err


def test_sigint_gives_one_summary_line_and_exit_130(book):
    proc = _start_slow_run(book, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (out, err)
    assert "0 ran, 0 skipped, 1 failed" in out and "(interrupted)" in out
    assert "Traceback" not in out
    # the runner itself prints no traceback (a kernel torn down mid-cell may log its own on stderr)
    assert not re.search(r'File ".*(qlib/book|papermill/|nbclient/)', err), err
    assert not (book / "out/chapters/a/03-slow.ipynb").exists()


def test_declared_dependency_reruns_the_dependent(book):
    dep = book / "chapters/a/03-slow.ipynb"
    nb = nbformat.read(dep, as_version=4)
    nb.metadata["qlib"] = {"depends": ["a/01-ok.ipynb"]}
    nbformat.write(nb, dep)
    assert [o.status for o in _run(book, only=["a/01", "a/03"]).outcomes] == ["ran", "ran"]
    assert [o.status for o in _run(book, only=["a/01", "a/03"]).outcomes] == ["skipped", "skipped"]
    assert [o.status for o in _run(book, only=["a/01"], force=True).outcomes] == ["ran"]
    # the same results: nothing a/03 reads changed
    assert [o.status for o in _run(book, only=["a/03"]).outcomes] == ["skipped"]
    # a/01 re-ran with other results: a/03, whose inputs include them, re-runs too
    assert [o.status for o in _run(book, only=["a/01"], overrides={"x": 9}).outcomes] == ["ran"]
    assert [o.status for o in _run(book, only=["a/03"]).outcomes] == ["ran"]


def test_force_and_no_resume_drop_the_saved_units_a_plain_run_keeps(book):
    """``--force`` / ``--no-resume``: nothing of an earlier run is reused (the kernels get QLIB_RESUME=0 and
    the notebook's saved units are removed before it runs); a plain rerun keeps them."""
    from qlib.book.jobs import UNITS_DIR

    assert [o.status for o in _run(book, only=["a/01"]).outcomes] == ["ran"]
    saved = book / "out" / "_results" / "a" / "01-ok" / UNITS_DIR / "unit" / "k.pkl"
    for kw, kept in ((dict(overrides={"x": 5}), True), (dict(force=True), False),
                     (dict(resume=False, overrides={"x": 6}), False)):
        saved.parent.mkdir(parents=True, exist_ok=True)
        saved.write_bytes(b"x")
        assert [o.status for o in _run(book, only=["a/01"], **kw).outcomes] == ["ran"]
        assert saved.is_file() == kept, kw


def test_runner_does_not_mutate_the_callers_environment(book, tmp_path, monkeypatch):
    monkeypatch.delenv("QLIB_DATA_DIR", raising=False)
    _run(book, only=["a/01"], data_dir=tmp_path)
    assert "QLIB_DATA_DIR" not in os.environ
    nb = nbformat.read(book / "out/chapters/a/01-ok.ipynb", as_version=4)
    assert f"data {tmp_path.resolve()}" in "".join(o.get("text", "") for o in nb.cells[-1].outputs)


def test_editing_book_machinery_does_not_rerun(monkeypatch):
    monkeypatch.undo()
    assert all(m.startswith("qlib.book.") for m in runner.MACHINERY)
    assert "qlib.book.compare" not in runner.MACHINERY and "qlib.book.chapter" not in runner.MACHINERY
    assert {m for m in runner.MACHINERY if m.replace("qlib.book.", "") not in
            {p.stem for p in Path(runner.__file__).parent.glob("*.py")}} == set()  # no stale entry


def test_prune_toc_keeps_only_executed(book, tmp_path):
    contents = yaml.safe_load((book / "_toc.yml").read_text())
    out = tmp_path / "o"
    (out / "chapters/a").mkdir(parents=True)
    pruned = build._prune_toc(contents, out)
    assert pruned["parts"][0]["chapters"][0] == {"file": "chapters/a/index"}
    (out / "chapters/a/01-ok.ipynb").write_text("{}")
    assert build._prune_toc(contents, out)["parts"][0]["chapters"][0]["sections"] == [{"glob": "chapters/a/[0-9]*"}]
    assert json.dumps(contents)  # the original is not modified


def test_annotated_parameters_accept_their_declared_types(book):
    src = book / "chapters/a/01-ok.ipynb"
    nb = nbformat.read(src, as_version=4)
    nb.cells[1].source += "limit: \"Optional[int]\" = 10\nwhich: \"Union[str, list]\" = 'all'\n"
    nbformat.write(nb, src)
    names = toc.notebooks(book)
    ok = profiles.resolve(book, "smoke", names, ["a/01-ok.ipynb"], {"limit": None, "which": ["a", "b"]})
    assert ok["a/01-ok.ipynb"]["limit"] is None and ok["a/01-ok.ipynb"]["which"] == ["a", "b"]
    with pytest.raises(ProfileError, match=r"parameter 'limit' must be None \| int, got 'x'"):
        profiles.resolve(book, "smoke", names, ["a/01-ok.ipynb"], {"limit": "x"})


def test_summary_gives_the_wall_time_when_notebooks_ran_side_by_side():
    from qlib.book.jobs import Outcome, RunReport

    rep = RunReport([Outcome("a", "ran", 10.0), Outcome("b", "ran", 8.2), Outcome("c", "skipped")], wall=11.4)
    assert rep.summary() == "2 ran, 1 skipped, 0 failed in 18 s of notebook time (11 s wall)"
    rep.wall = 18.6  # one at a time: the two agree, said once
    assert rep.summary() == "2 ran, 1 skipped, 0 failed in 18 s"


def test_what_ran_box_sits_below_the_folded_parameters_cell(book):
    # issue 29: the box said "the cell below" of a cell above it, and printed its title twice
    rep = _run(book, only=["a/01"])
    assert not rep.failures
    cells = nbformat.read(book / "out/chapters/a/01-ok.ipynb", as_version=4).cells
    kinds = [("parameters" in c.metadata.get("tags", []), "qlib-what-ran" in c.metadata.get("tags", []))
             for c in cells]
    i = kinds.index((True, False))
    assert kinds[i + 1] == (False, True)                       # the box follows the parameters cell
    assert "hide-input" in cells[i].metadata["tags"]            # which is folded, one click away
    box = cells[i + 1].source
    assert box.count("What ran") == 1 and "parameters cell above" in box and "below" not in box
    assert "`x = 2` (cell: `1`)" in box


def test_result_at_a_glance_sits_under_the_title(book):
    # issue 29: every chapter states its result on its first screen — counts, what differs, the scale
    (book / "profiles" / "paper.yml").write_text(yaml.safe_dump(
        {"a/01-ok.ipynb": {"x": 5}, "a/02-fail.ipynb": {"fail": True}, "a/03-slow.ipynb": {"seconds": 0.0}}))
    rep = _run(book, only=["a/01", "a/03"])
    assert not rep.failures
    cells = nbformat.read(book / "out/chapters/a/01-ok.ipynb", as_version=4).cells
    assert cells[0].source.startswith("# ") and "qlib-at-a-glance" in cells[1].metadata["tags"]
    glance = cells[1].source
    assert glance.startswith(":::{admonition} Result at a glance")
    assert "Its 1 rows: **1** differs" in glance      # x = 2 against the paper's 1.0
    assert "1 rows differ from the paper" in glance and "T1: x — paper 1, ours 2" in glance
    assert "This page's run: profile `smoke`, below the paper's scale in `x` 2 (*What ran*)." in glance
    # a notebook that records no rows gets no block
    pm = nbformat.read(book / "out/chapters/a/01-ok.ipynb", as_version=4).metadata["papermill"]
    assert pm["input_path"] == pm["output_path"] == "chapters/a/01-ok.ipynb"  # no temporary build paths
    slow = nbformat.read(book / "out/chapters/a/03-slow.ipynb", as_version=4).cells
    assert not any("qlib-at-a-glance" in c.metadata.get("tags", []) for c in slow)


def test_glance_says_when_a_run_is_at_the_paper_scale(book):
    rep = _run(book, only=["a/01"], profile="paper")
    assert not rep.failures
    glance = nbformat.read(book / "out/chapters/a/01-ok.ipynb", as_version=4).cells[1].source
    assert "This page's run: profile `paper`, every parameter at the `paper` profile's value." in glance


def test_figure_collisions_are_read_from_every_chapter(tmp_path):
    # issue 29: the build (not only the tests) fails on a figure whose text collides
    out = tmp_path / "out"
    (out / "_results" / "a" / "01-ok").mkdir(parents=True)
    (out / "_results" / "a" / "01-ok" / "figure-checks.json").write_text(json.dumps(
        [{"figure": 1, "overlaps": []}, {"figure": 2, "overlaps": ["axes 0: legend lies on the data of axes 0"]}]))
    (out / "_results" / "a" / "02-b").mkdir(parents=True)
    (out / "_results" / "a" / "02-b" / "figure-checks.json").write_text("not json")  # unreadable: ignored
    assert build.figure_collisions(out) == ["a/01-ok figure 2: axes 0: legend lies on the data of axes 0"]


def test_an_only_pattern_that_matches_nothing_stops_the_run_naming_it():
    nbs = ["eden/01-estimator-vnmse.ipynb", "eden/02-rotation-and-scale.ipynb"]
    assert toc.select(nbs, ["eden/02"]) == ["eden/02-rotation-and-scale.ipynb"]
    with pytest.raises(ValueError, match=r"'eden/99' matches no notebook; did you mean 'eden/02-rotation-and-scale'\?"):
        toc.select(nbs, ["eden/02", "eden/99"])     # the typo was ignored silently before


def test_a_list_override_checks_its_elements():
    from qlib.book.profiles import ProfileError, check_entry

    declared = {"fig6_bits": [1, 2, 4], "laws": ["normal"], "any": [], "budgets": [0.1, 1, 2]}
    check_entry("--set", "eden/05", {"budgets": [1, 0.5]}, declared)      # a list of numbers takes ints and floats
    check_entry("--set", "eden/02", {"fig6_bits": [2, 3], "laws": ["beta"], "any": ["x", 1]}, declared)
    with pytest.raises(ProfileError, match="must be a list of ints"):
        check_entry("--set", "eden/02", {"fig6_bits": ["a", "b"]}, declared)
    with pytest.raises(ProfileError, match="must be a list of strings"):
        check_entry("--set", "eden/02", {"laws": [1]}, declared)


def test_kernels_started_by_a_dask_worker_do_not_inherit_its_malloc_trimming(monkeypatch):
    """A Dask nanny sets MALLOC_TRIM_THRESHOLD_=65536 for its workers; a kernel inheriting it faults its
    pages in again after every free (the default book: 891 s of system time). kernel_env removes it for
    the kernel and restores the caller's environment after."""
    import dask
    import distributed  # noqa: F401 - loads its configuration defaults

    from qlib.book.jobs import WORKER_ONLY_ENV, kernel_env

    assert "MALLOC_TRIM_THRESHOLD_" in dask.config.get("distributed.nanny.pre-spawn-environ")  # what we undo
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "65536")
    monkeypatch.setenv("QLIB_DATA_DIR", "/before")
    with kernel_env({"QLIB_DATA_DIR": "/data"}, unset=WORKER_ONLY_ENV):
        assert "MALLOC_TRIM_THRESHOLD_" not in os.environ and os.environ["QLIB_DATA_DIR"] == "/data"
    assert os.environ["MALLOC_TRIM_THRESHOLD_"] == "65536" and os.environ["QLIB_DATA_DIR"] == "/before"


def test_run_archive_and_publish_take_one_record_of_run_options(book, tmp_path):
    """``run``/``archive``/``publish`` take one :class:`RunOptions` (no keyword per field: their
    signatures name what they take); a field a driver does not honour is refused, before anything runs."""
    from dataclasses import FrozenInstanceError, replace

    from qlib.book import archive, publish
    from qlib.book.options import check_unused

    opts = RunOptions(profile="smoke", only=["a/03"], output_dir=book / "out", progress=False)
    with pytest.raises(FrozenInstanceError):
        opts.jobs = 2
    assert [o.status for o in runner.run(book, opts, log=lambda *a: None).outcomes] == ["ran"]
    assert [o.status for o in runner.run(book, replace(opts, force=True), log=lambda *a: None).outcomes] == ["ran"]
    with pytest.raises(TypeError, match="jobz"):
        runner.run(book, jobz=2)
    with pytest.raises(TypeError, match="options must be a RunOptions or None, got dict"):
        runner.run(book, {"jobs": 2})
    for bad, err, msg in ((dict(jobs=0), ValueError, "jobs must be an integer >= 1"),
                          (dict(replicates=101), ValueError, r"replicates must be an integer in \[1, 100\]"),
                          (dict(device="tpu"), ValueError, "device must be 'auto', 'cpu' or 'cuda'"),
                          (dict(resume="no"), TypeError, "resume must be a bool")):
        with pytest.raises(err, match=msg):
            RunOptions(**bad)
    assert archive.ARCHIVE_OPTIONS.profile == "paper" and RunOptions().profile == "default"
    with pytest.raises(TypeError, match="archive does not take 'replicates', 'progress'"):
        archive.archive(tmp_path, RunOptions(progress=False, replicates=2))
    with pytest.raises(TypeError, match="publish does not take 'only'"):
        publish.publish(tmp_path, RunOptions(only=["a/"]))
    check_unused(RunOptions(profile="paper", jobs=3), ("profile", "jobs"), name="x")  # set fields it takes: fine
    with pytest.raises(ValueError, match="used must name fields of RunOptions"):
        check_unused(RunOptions(), ("profile", "nope"), name="x")
