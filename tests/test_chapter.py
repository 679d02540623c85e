"""The one chapter setup: id, paper, device, threads, recorder."""

from __future__ import annotations

import pytest
import torch

from qlib.book import chapter
from qlib.book.chapter import infer_chapter_id, unknown_parameters


def test_chapter_setup(tmp_path):
    n = torch.get_num_threads()
    try:
        ch = chapter("eden/01-estimator-vnmse", out_dir=tmp_path, device="cpu", threads=1, plot_style=False)
        assert (ch.id, ch.part, ch.paper, ch.device.type) == ("eden/01-estimator-vnmse", "eden", "002", "cpu")
        assert torch.get_num_threads() == 1
        assert ch.cmp.chapter == ch.id and ch.cmp.paper == "002" and (tmp_path / "comparisons.csv").is_file()
    finally:
        torch.set_num_threads(n)


def test_default_out_dir_and_bad_arguments(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ch = chapter("rqp-sgd/02-table1", threads=None, plot_style=False)
    assert ch.out_dir == tmp_path.joinpath("_results", "rqp-sgd", "02-table1").relative_to(tmp_path)
    with pytest.raises(ValueError, match="chapter_id must look like"):
        chapter("no-slash", plot_style=False)
    with pytest.raises(ValueError, match="threads must be an integer >= 1"):
        chapter("eden/01", threads=0, plot_style=False)


def test_infer_chapter_id(tmp_path, monkeypatch):
    monkeypatch.setenv("JPY_SESSION_NAME", str(tmp_path / "book" / "chapters" / "mia-limits" / "02-overfitting.ipynb"))
    assert infer_chapter_id() == "mia-limits/02-overfitting"
    monkeypatch.delenv("JPY_SESSION_NAME")
    (tmp_path / "chapters" / "eden").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "chapters" / "eden")
    assert infer_chapter_id() == "eden/interactive"
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="could not be found"):
        infer_chapter_id()


def test_default_out_dir_is_below_the_book_root(tmp_path, monkeypatch):
    # JupyterLab runs a notebook in chapters/<part>/: results go to <root>/_results/<id>, not
    # chapters/<part>/_results/<part>/<topic> (the part twice)
    (tmp_path / "_toc.yml").write_text("format: jb-book\n")
    (tmp_path / "chapters" / "eden").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "chapters" / "eden")
    ch = chapter("eden/01-estimator-vnmse", threads=None, plot_style=False)
    assert ch.out_dir == tmp_path / "_results" / "eden" / "01-estimator-vnmse"


def test_unknown_parameters_found_in_papermills_injected_cell():
    params = 'profile = "default"\nchapter_id = None\nn_draws = 200_000  # samples\nx: "int" = 3\n'
    injected = '# Parameters\nn_draw = 2000\nx = 4\nchapter_id = "rqp-sgd/01-theory"\n'
    assert unknown_parameters(["import os", params, injected, "ch = 1"]) == {"n_draw": "n_draws"}
    assert unknown_parameters(["import os", params, "# Parameters\nn_draws = 5\n"]) == {}
    assert unknown_parameters([params, "y = 1"]) == {}  # no injected cell: nothing to say


def _tiny_book(root):
    import nbformat

    (root / "_toc.yml").write_text("format: jb-book\n")
    nb = nbformat.v4.new_notebook()
    p = nbformat.v4.new_code_cell('chapter_id = None\nn_draws = 5')
    p.metadata["tags"] = ["parameters"]
    nb.cells = [p, nbformat.v4.new_code_cell(
        "from qlib.book import chapter\nch = chapter(chapter_id, plot_style=False, threads=None)\n"
        "print('ID', ch.id, ch.out_dir.relative_to(ch.out_dir.parents[2]).as_posix(), n_draws)")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = root / "chapters" / "eden" / "01-demo.ipynb"
    path.parent.mkdir(parents=True)
    nbformat.write(nb, path)
    return path


def test_plain_papermill_cli_as_the_readme_shows(tmp_path):
    # `papermill chapters/<part>/<nb>.ipynb out.ipynb -p ...` from the book's root: papermill tells
    # the kernel neither the notebook's path nor its own; the chapter id comes from papermill's
    # command line, and a misspelled parameter is named on the page
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    _tiny_book(tmp_path)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    proc = subprocess.run([sys.executable, "-m", "papermill", "chapters/eden/01-demo.ipynb", "out.ipynb",
                           "-p", "n_draw", "7", "--no-progress-bar"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    text = json.dumps(json.loads((tmp_path / "out.ipynb").read_text())["cells"][-1]["outputs"])
    assert "ID eden/01-demo _results/eden/01-demo 5" in text
    assert "unknown parameter(s) ignored" in text and "did you mean 'n_draws'" in text
