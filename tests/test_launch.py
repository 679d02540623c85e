"""Launching a chapter: every notebook carries the current launch line (from _config.yml's repository)
just above its parameters, which installs qlib in Colab and does nothing elsewhere, and the one setup line
below them, whose import sets the chapter up from the notebook's parameters; the launch/edit links of a page
are read back to the repository file they open; Binder's folder installs the CPU build. The links of the
built smoke site are followed in test_book.py."""

from __future__ import annotations

import ast
import functools
import json
import os
import stat
import subprocess
from pathlib import Path

import nbformat
import pytest
import yaml
from IPython.core.inputtransformer2 import TransformerManager

from qlib.book import chapter, launch, publish, setup, toc
from qlib.data import DOWNLOAD_ENV_VAR

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = toc.notebooks(ROOT)
URL, BRANCH = launch.repository(ROOT)


def test_config_names_the_repository_and_launchers():
    cfg = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert URL.startswith("https://github.com/") and BRANCH == "main"
    assert all(cfg["html"][k] for k in ("use_repository_button", "use_issues_button", "use_edit_page_button"))
    lb = cfg["launch_buttons"]
    assert lb["binderhub_url"] == "https://mybinder.org" and lb["colab_url"] == "https://colab.research.google.com"
    assert "jupyterhub_url" in lb
    assert cfg["sphinx"]["config"]["html_theme_options"]["use_download_button"] is True


@pytest.mark.parametrize("nb", NOTEBOOKS)
def test_every_notebook_has_the_current_launch_line_and_the_setup_line(nb):
    book = nbformat.read(ROOT / "chapters" / nb, as_version=4)
    assert launch.problems(book.cells, URL, BRANCH) == [], nb


def _shell_line(source: str) -> str:
    """The command IPython runs for a ``!`` line (what its input transformer hands to ``system``)."""
    call = ast.parse(TransformerManager().transform_cell(source)).body[0].value
    assert call.func.attr == "system", source
    return call.args[0].value


def _run_launch(tmp_path, colab: bool) -> list[str]:
    """Run the launch line in a shell whose ``pip`` records its arguments (one line per call)."""
    bin_dir, log = tmp_path / "bin", tmp_path / "pip.log"
    bin_dir.mkdir(exist_ok=True)
    pip = bin_dir / "pip"
    pip.write_text(f'#!/bin/sh\nfor a in "$@"; do printf "[%s]" "$a"; done >> {log}\necho >> {log}\n')
    pip.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != setup.COLAB_ENV}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    if colab:
        env[setup.COLAB_ENV] = "release-colab_20250101-060000_RC00"
    subprocess.run(["sh", "-c", _shell_line(launch.launch_source(URL, BRANCH))], env=env, check=False)
    return log.read_text().splitlines() if log.exists() else []


def test_the_launch_line_does_nothing_outside_colab(tmp_path):
    assert _run_launch(tmp_path, colab=False) == []


def test_the_launch_line_installs_qlib_from_the_repository_in_colab(tmp_path):
    assert _run_launch(tmp_path, colab=True) == [
        f"[install][-q][qlib[book] @ git+{URL}@{BRANCH}]",
        "[install][-q][--no-deps]" + "".join(f"[{p}]" for p in launch.NO_DEPS)]


def test_the_launch_line_installs_what_binder_installs_without_dependencies():
    post = (ROOT / "binder/postBuild").read_text().splitlines()
    pinned = {w for line in post if "--no-deps" in line and not line.lstrip().startswith("#")
              for w in line.split() if "==" in w}
    assert pinned == set(launch.NO_DEPS)


def _import_setup(namespace: dict, names: str = "ch, dev"):
    exec(f"from {launch.SETUP_MODULE} import {names}", namespace)
    return namespace


@pytest.fixture
def quiet_chapter(monkeypatch):
    """The setup's chapter without the book's plotting style (a process-wide setting other tests share)."""
    monkeypatch.setattr(setup, "chapter", functools.partial(chapter, plot_style=False))


def test_the_setup_import_sets_the_chapter_up_from_the_notebooks_parameters(tmp_path, quiet_chapter):
    ns = _import_setup({"chapter_id": "eden/01-estimator-vnmse", "out_dir": str(tmp_path), "device": "cpu",
                        "threads": None, "seed": 3})
    ch = ns["ch"]
    assert (ch.id, ch.part, ch.out_dir, ch.threads) == ("eden/01-estimator-vnmse", "eden", tmp_path, None)
    assert ns["dev"] is ch.device and ch.device.type == "cpu"
    again = _import_setup(ns)["ch"]
    assert again is not ch and again.id == ch.id, "re-running the line sets the chapter up again"
    ns["chapter_id"] = "rqp-sgd/02-table1"
    assert _import_setup(ns, "dev")["dev"].type == "cpu" and ns["ch"] is again  # dev alone: a new chapter
    assert _import_setup(ns, "ch")["ch"].id == "rqp-sgd/02-table1"
    with pytest.raises(ImportError, match="device"):
        _import_setup(ns, "device")


def test_the_setup_lets_the_loaders_download_in_colab_only(tmp_path, quiet_chapter, monkeypatch):
    params = {"chapter_id": "eden/01-estimator-vnmse", "out_dir": str(tmp_path), "device": "cpu", "threads": None}
    monkeypatch.setenv(DOWNLOAD_ENV_VAR, "0")  # so that monkeypatch restores its absence after the test
    monkeypatch.delenv(DOWNLOAD_ENV_VAR)
    monkeypatch.delenv(setup.COLAB_ENV, raising=False)
    _import_setup(dict(params))
    assert DOWNLOAD_ENV_VAR not in os.environ
    monkeypatch.setenv(setup.COLAB_ENV, "release-colab")
    _import_setup(dict(params))
    assert os.environ[DOWNLOAD_ENV_VAR] == "1"


def test_problems_names_a_missing_setup_line_and_a_stale_launch_line():
    params = nbformat.v4.new_code_cell("chapter_id = None", metadata={"tags": ["parameters"]})
    cells = [nbformat.from_dict(launch.launch_cell(URL, BRANCH)), params,
             nbformat.v4.new_code_cell(launch.setup_line(True) + "\n\nx = dev")]
    assert launch.problems(cells, URL, BRANCH) == []
    assert launch.problems(cells[:2] + [nbformat.v4.new_code_cell("from qlib.book import chapter\n"
                                                                  "ch = chapter(chapter_id)")], URL, BRANCH) == [
        f"the first code cell after the parameters does not start with `{launch.setup_line(True)}` "
        f"(or `{launch.setup_line(False)}`)",
        "the setup is not that one line (another import of qlib.book.setup or a chapter() call)"]
    assert launch.problems(cells, "https://github.com/someone/fork", BRANCH) == [
        "stale launch cell (run python -m qlib.book.launch)"]
    assert launch.problems(cells[1:], URL, BRANCH) == ["0 launch cells (run python -m qlib.book.launch)"]


def test_sync_writes_and_then_leaves_the_launch_line(tmp_path):
    root = tmp_path
    (root / "chapters/a").mkdir(parents=True)
    (root / "_config.yml").write_text("repository:\n  url: https://github.com/someone/fork\n  branch: dev\n")
    (root / "_toc.yml").write_text("format: jb-book\nroot: chapters/a/01-x\n")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# X"), nbformat.v4.new_code_cell("seed = 0", metadata={"tags": ["parameters"]}),
                nbformat.v4.new_code_cell(launch.setup_line(False))]
    nbformat.write(nb, root / "chapters/a/01-x.ipynb")
    assert launch.sync(root) == ["a/01-x.ipynb"]
    book = nbformat.read(root / "chapters/a/01-x.ipynb", as_version=4)
    assert [c.cell_type for c in book.cells] == ["markdown", "code", "code", "code"]
    assert "git+https://github.com/someone/fork@dev" in book.cells[1].source
    assert launch.problems(book.cells, "https://github.com/someone/fork", "dev") == []
    assert launch.sync(root) == []


HTML = """<a href="https://mybinder.org/v2/gh/qlib-book/qlib/main?urlpath=lab/tree/chapters/eden/01-x.ipynb">B</a>
<a href="https://colab.research.google.com/github/qlib-book/qlib/blob/main/chapters/eden/01-x.ipynb">C</a>
<a href="https://hub.example.org/hub/user-redirect/git-pull?repo=https://github.com/qlib-book/qlib&urlpath=lab/tree/qlib/chapters/eden/01-x.ipynb&branch=main">J</a>
<a href="https://github.com/qlib-book/qlib/edit/main/chapters/eden/01-x.ipynb">E</a>
<a href="https://github.com/qlib-book/qlib/blob/main/chapters/intro/index.md?plain=1">S</a>
<a href="https://github.com/qlib-book/qlib/issues/new?title=x">I</a>
<a href="https://colab.research.google.com/github/other/repo/blob/main/x.ipynb">C2</a>"""


def test_repository_links_name_the_file_they_open():
    got = [(k, p) for k, p, _ in launch.repository_links(HTML, "https://github.com/qlib-book/qlib", "main")]
    assert got == [("binder", "chapters/eden/01-x.ipynb"), ("colab", "chapters/eden/01-x.ipynb"),
                   ("jupyterhub", "chapters/eden/01-x.ipynb"), ("edit", "chapters/eden/01-x.ipynb"),
                   ("blob", "chapters/intro/index.md"), ("colab", "<not qlib-book/qlib@main: /github/other/repo/blob/main/x.ipynb>")]


def test_publish_refuses_a_launch_link_to_a_file_not_in_the_repository(tmp_path):
    root = tmp_path / "root"
    (root / "chapters/intro").mkdir(parents=True)
    (root / "_toc.yml").write_text("format: jb-book\nroot: chapters/intro/index\n")
    (root / "_config.yml").write_text("repository:\n  url: https://github.com/qlib-book/qlib\n  branch: main\n")
    (root / "chapters/intro/index.md").write_text("# Intro\n")
    site = tmp_path / "site"
    (site / "chapters/intro").mkdir(parents=True)
    (site / "index.html").write_text('<meta http-equiv="Refresh" content="0; url=chapters/intro/index.html" />')
    (site / "chapters/intro/index.html").write_text(
        "<article>" + "text " * 60 + HTML + "</article>")
    problems = publish.check_site(site, root)
    assert len(problems) == 5 and all("which is not in the repository" in p for p in problems), problems
    (root / "chapters/eden").mkdir()
    (root / "chapters/eden/01-x.ipynb").write_text(json.dumps({}))
    assert [p.split(": ")[1].split(" link")[0] for p in publish.check_site(site, root)] == ["colab"]  # the other repo


def test_binder_installs_the_cpu_build_and_qlib():
    req = (ROOT / "binder/requirements.txt").read_text()
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in req and "+cpu" in req
    post = ROOT / "binder/postBuild"
    assert os.stat(post).st_mode & stat.S_IXUSR and 'pip install --no-cache-dir -e ".[book]"' in post.read_text()
    assert "QLIB_DOWNLOAD=1" in (ROOT / "binder/start").read_text()


def test_check_repository_names_what_a_fork_forgot(tmp_path, capsys):
    url, _ = launch.repository(toc.find_root())
    assert launch.check_repository(toc.find_root(), url.upper() + ".git/") == []   # the same repository
    root = tmp_path / "fork"
    (root / "chapters").mkdir(parents=True)
    (root / "_toc.yml").write_text("format: jb-book\nroot: chapters/intro/index\n")
    (root / "_config.yml").write_text(f"repository:\n  url: {url}\n  branch: main\n")
    (root / "CITATION.cff").write_text(f"repository-code: {url}\n")
    problems = launch.check_repository(root, "https://github.com/someone/fork")
    assert len(problems) == 2 and "repository.url" in problems[0] and "CITATION.cff" in problems[1], problems
    (root / "_config.yml").write_text("repository:\n  url: https://github.com/someone/fork\n  branch: main\n")
    (root / "CITATION.cff").write_text("repository-code: https://github.com/someone/fork\n")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1", metadata={"tags": ["parameters"]}),
                                         nbformat.v4.new_code_cell(launch.setup_line(False))])
    (root / "chapters" / "01-x.ipynb").write_text(nbformat.writes(nb))
    (root / "_toc.yml").write_text("format: jb-book\nroot: chapters/01-x\n")
    stale = launch.check_repository(root, "https://github.com/someone/fork")
    assert stale == ["chapters/01-x.ipynb: 0 launch cells (run python -m qlib.book.launch)"], stale
    launch.sync(root)
    assert launch.check_repository(root, "https://github.com/someone/fork") == []


def test_workflows_check_the_repository_before_building():
    for wf in (ROOT / ".github/workflows").glob("*.yml"):
        steps = [s.get("run", "") for job in yaml.safe_load(wf.read_text())["jobs"].values() for s in job["steps"]]
        check = [i for i, r in enumerate(steps) if "qlib.book.launch --check" in r and "github.repository" in r]
        build = [i for i, r in enumerate(steps) if "make publish" in r]
        assert check and build and check[0] < build[0], wf.name
