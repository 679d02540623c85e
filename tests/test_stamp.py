"""One stamp for "the inputs of this run changed" (qlib.stamp, read from the book by
qlib.book.stamps): the batch runner's skip, the archive's staleness and the resumable units agree on
every kind of edit — a library module the notebook imports, the plotting style, the notebook's code,
its parameters, a data file it reads change all three; a module it does not reach changes none; what
only the page shows (the notebook's prose, the book machinery that draws it) re-runs the notebook and
touches neither the archive nor the units.

Every edit is made in a temporary copy of the ``qlib`` package, a one-notebook book and a data folder."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import nbformat
import pytest
import yaml

from qlib import stamp
from qlib.book import check, jobs, layout, profiles, runner
from qlib.book.stamps import current_params, notebook_stamp
from qlib.resume import units_from_env

ROOT = Path(__file__).resolve().parents[1]
NB = "demo/01-demo.ipynb"
PARAMS = ('profile = "default"\ndevice = "auto"\ndata_dir = None\nout_dir = "_results/x"\nresults_dir = "_results"\n'
          'chapter_id = None\nthreads = 1\nn = 3\n')
CODE = "from qlib.book import chapter\nfrom qlib import hadamard\nfrom qlib.plotting import style\nsource = 'mnist'\n"


def _notebook(path: Path, params: str = PARAMS, code: str = CODE, prose: str = "How the demo goes.") -> None:
    nb = nbformat.v4.new_notebook()
    p = nbformat.v4.new_code_cell(params)
    p.metadata["tags"] = ["parameters"]
    nb.cells = [nbformat.v4.new_markdown_cell(f"# Demo\n\n{prose}"), p, nbformat.v4.new_code_cell(code)]
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)


@pytest.fixture()
def world(tmp_path):
    """(book root, package copy, data folder): a one-notebook book, its profiles, and the MNIST it names."""
    pkg = tmp_path / "pkg" / "qlib"
    shutil.copytree(ROOT / "qlib", pkg, ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc", "*.json"))
    root = tmp_path / "book"
    (root / "_toc.yml").parent.mkdir(parents=True)
    (root / "_toc.yml").write_text(yaml.safe_dump({"format": "jb-book", "root": "chapters/demo/01-demo"}))
    _notebook(root / "chapters" / NB)
    (root / "profiles").mkdir()
    for name in profiles.PROFILES:
        (root / "profiles" / f"{name}.yml").write_text(yaml.safe_dump({NB: {}}))
    data = tmp_path / "data"
    (data / "mnist").mkdir(parents=True)
    (data / "mnist" / "train.bin").write_bytes(b"\x00" * 64)
    return root, pkg, data


def _consumers(root: Path, pkg: Path, data: Path, monkeypatch) -> dict:
    """What each consumer keys on now: the runner's stamp of the job it would run, the archive's state of
    an entry archived from the first run (see :func:`_archive`), and the file a unit is saved to."""
    out = root / "out"
    params = profiles.resolve(root, "smoke", [NB], [NB])
    (job,) = runner.plan(root, out, "smoke", params, [NB], device="cpu", data=str(data))
    runner.stamp_job(job, root, stamp.source_snapshot(pkg), pkg=pkg)
    monkeypatch.setenv(stamp.STAMP_VARIABLE, job.inputs["hash"])  # what jobs.execute hands the kernel
    unit = units_from_env(root / "units").path("unit", {"k": 1})
    arch = root / layout.ARCHIVE
    state = {s.chapter: s.state for s in check.check(root, archive=arch, data_dir=str(data), pkg=pkg)}
    return {"runner": job.stamp, "archive": state.get("demo/01-demo"), "units": unit, "inputs": job.inputs}


def _archive(root: Path, inputs: dict) -> None:
    """An archive entry of the demo whose stamp is the one the runner recorded (what ``store`` keeps)."""
    d = layout.entry_dir(root / layout.ARCHIVE, "smoke", "demo/01-demo")
    d.mkdir(parents=True)
    prov = {"schema": layout.SCHEMA, "chapter": "demo/01-demo", "notebook": NB, "profile": "smoke",
            "params": current_params(root, NB, "smoke"), "commit": "0" * 40, "device": {"resolved": "cpu"},
            "started": "2026-01-01T00:00:00+00:00", "finished": "2026-01-01T00:01:00+00:00", "wall_s": 60.0,
            "packages": {}, "data": inputs["data"], "stamp": inputs, "archived": "2026-01-01T00:01:00+00:00"}
    (d / layout.PROVENANCE).write_text(json.dumps(prov))
    (d / "comparisons.csv").write_text("chapter,paper,kind,where,quantity,paper_value,ours,tolerance,verdict,note\n")


def _append(path: Path, text: str) -> None:
    path.write_text(path.read_text() + text)


EDITS = {
    "a library module it imports": (lambda r, p, d: _append(p / "hadamard.py", "\n# an edit\n"), True),
    "the plotting style": (lambda r, p, d: _append(p / "plotting" / "style.py", "\n# an edit\n"), True),
    "the notebook's code": (lambda r, p, d: _notebook(r / "chapters" / NB, code=CODE + "y = 2\n"), True),
    "its parameters": (lambda r, p, d: _notebook(r / "chapters" / NB, params=PARAMS.replace("n = 3", "n = 4")), True),
    "a data file it reads": (lambda r, p, d: (d / "mnist" / "train.bin").write_bytes(b"\x01" * 64), True),
    "a module it does not reach": (lambda r, p, d: _append(p / "mia" / "bounds.py", "\n# an edit\n"), False),
    "a speed-only parameter": (lambda r, p, d: (r / "profiles" / "smoke.yml").write_text(yaml.safe_dump(
        {NB: {"threads": 2}})), "page"),
    "the notebook's prose": (lambda r, p, d: _notebook(r / "chapters" / NB, prose="Said otherwise."), "page"),
    "book machinery that draws the page": (lambda r, p, d: _append(p / "book" / "render.py", "\n# an edit\n"), "page"),
    "book machinery that draws nothing": (lambda r, p, d: _append(p / "book" / "cli.py", "\n# an edit\n"), False),
}


@pytest.mark.parametrize("edit", list(EDITS))
def test_the_runner_the_archive_and_the_units_agree_on_what_changed(world, edit, monkeypatch):
    root, pkg, data = world
    before = _consumers(root, pkg, data, monkeypatch)
    assert "qlib.hadamard" in before["inputs"]["modules"] and "qlib.plotting.style" in before["inputs"]["modules"]
    assert "qlib.mia.bounds" not in before["inputs"]["modules"] and before["inputs"]["data"]["mnist"]
    _archive(root, before["inputs"])
    assert _consumers(root, pkg, data, monkeypatch)["archive"] == "current"
    change, expected = EDITS[edit]
    change(root, pkg, data)
    after = _consumers(root, pkg, data, monkeypatch)
    seen = {"runner": after["runner"] != before["runner"], "archive": after["archive"] == "stale",
            "units": after["units"] != before["units"]}
    if expected == "page":  # the executed page changes, the numbers cannot
        assert seen == {"runner": True, "archive": False, "units": False}, edit
    else:
        assert seen == {"runner": expected, "archive": expected, "units": expected}, edit


def test_the_runner_hands_the_kernel_its_notebooks_stamp(world, monkeypatch, tmp_path):
    """The units of a notebook the runner executes are keyed by that notebook's stamp: ``jobs.execute``
    sets ``$QLIB_STAMP`` for the kernel (and restores the caller's environment)."""
    root, pkg, data = world
    params = profiles.resolve(root, "smoke", [NB], [NB])
    (job,) = runner.plan(root, root / "out", "smoke", params, [NB], device="cpu", data=str(data))
    runner.stamp_job(job, root, stamp.source_snapshot(pkg), pkg=pkg)
    seen = []
    monkeypatch.setattr(jobs, "papermill_execute", lambda *a: seen.append(os.environ.get(stamp.STAMP_VARIABLE)))
    monkeypatch.delenv(stamp.STAMP_VARIABLE, raising=False)
    jobs.execute(job, timeout=None, log=lambda *a: None)  # fails to land (nothing was executed): no matter
    assert seen == [job.inputs["hash"]] and stamp.STAMP_VARIABLE not in os.environ


def test_an_entry_is_compared_by_the_rules_it_was_stamped_under(world):
    """Version 2 of the stamp also covers the compiled kernels a reached module loads by name: an entry
    stamped by version 1 (no ``rules`` key: the archive committed before) is compared by version 1, so the
    wider cover marks no entry stale by itself; an edit of a kernel marks a version-2 entry stale."""
    root, pkg, data = world
    code = ["from qlib import hadamard"]
    v1 = stamp.inputs_stamp(code, {}, pkg=pkg, rules=1)
    v2 = stamp.inputs_stamp(code, {}, pkg=pkg)
    assert "rules" not in v1 and v2["rules"] == stamp.RULES == 2
    # hadamard loads the transform and the rotation by name; the rotation imports the look-up and the distances
    kernels = {f"qlib._kernels.{k}" for k in ("fwht", "rotation", "lookup", "distances")}
    assert set(v2["modules"]) - set(v1["modules"]) == kernels
    params = current_params(root, NB, "smoke")
    _archive(root, notebook_stamp(root, NB, params, data_dir=data, pkg=pkg, rules=1))
    def states() -> list[str]:
        return [s.state for s in check.check(root, archive=root / layout.ARCHIVE, data_dir=str(data), pkg=pkg)]

    assert states() == ["current"]
    shutil.rmtree(root / layout.ARCHIVE)
    _archive(root, notebook_stamp(root, NB, params, data_dir=data, pkg=pkg))
    assert states() == ["current"]
    _append(pkg / "_kernels" / "fwht.py", "\n# an edit\n")
    assert states() == ["stale"]


def test_bad_arguments_are_named(tmp_path):
    # one string of code would be read one character per cell and reach no module: refused
    with pytest.raises(TypeError, match=r"\bsources\b"):
        stamp.imported_modules("from qlib import eden")
    with pytest.raises(TypeError, match=r"\bcode\b"):
        stamp.inputs_stamp("from qlib import eden", {})
    with pytest.raises(TypeError, match=r"\bsources\b"):
        stamp.imported_modules(["x = 1", None])
    for bad, err in ((3, ValueError), (0, ValueError), (float("nan"), TypeError), (True, TypeError)):
        with pytest.raises(err, match=r"\brules\b"):
            stamp.imported_modules(["x = 1"], rules=bad)
    # a package folder that is not there would find no module and stamp nothing
    with pytest.raises(ValueError, match=r"\bpkg\b"):
        stamp.imported_modules(["from qlib import eden"], tmp_path / "nothing")
    with pytest.raises(TypeError, match=r"\bparams\b"):
        stamp.inputs_stamp(["x = 1"], None)
    with pytest.raises(TypeError, match=r"\bnew\b"):
        stamp.stamp_changes({}, None)
    with pytest.raises(ValueError, match=r"\bpath\b"):
        stamp.file_hash(tmp_path / "missing.txt")
