"""Launching a chapter: every notebook carries the current setup cell (from _config.yml's repository),
which does nothing where qlib is importable and installs it from the repository elsewhere (Colab);
the launch/edit links of a page are read back to the repository file they open; Binder's folder
installs the CPU build. The links of the built smoke site are followed in test_book.py."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import nbformat
import pytest
import yaml

from qlib.book import launch, publish, runner

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = runner.notebooks(ROOT)
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
def test_every_notebook_has_the_current_setup_cell_above_its_parameters(nb):
    book = nbformat.read(ROOT / "chapters" / nb, as_version=4)
    tags = [c.metadata.get("tags", []) for c in book.cells]
    setup = [i for i, t in enumerate(tags) if launch.SETUP_TAG in t]
    params = [i for i, t in enumerate(tags) if "parameters" in t]
    assert len(setup) == 1, f"{nb}: {len(setup)} setup cells (run python -m qlib.book.launch)"
    assert setup[0] + 1 == params[0], f"{nb}: the setup cell is not just above the parameters cell"
    cell = book.cells[setup[0]]
    assert cell.source == launch.setup_source(URL, BRANCH), f"{nb}: stale setup cell (run python -m qlib.book.launch)"
    assert "remove-cell" in cell.metadata["tags"], "the book hides the setup cell"


def _run_setup(find_spec_result, monkeypatch):
    """Execute the setup cell, recording the commands it runs and the environment it sets."""
    import importlib.util
    import subprocess

    calls = []
    saved = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: find_spec_result if name == "qlib" else saved(name, *a))
    monkeypatch.setattr(subprocess, "check_call", lambda cmd: calls.append(cmd[1:]) or 0)
    # setenv first, so that monkeypatch restores the variable's absence after the cell sets it
    # (delenv of an absent variable records nothing, and later tests would see downloads allowed)
    monkeypatch.setenv("QLIB_DOWNLOAD", "0")
    monkeypatch.delenv("QLIB_DOWNLOAD")
    exec(launch.setup_source(URL, BRANCH), {})
    return calls, os.environ.get("QLIB_DOWNLOAD")


def test_setup_cell_does_nothing_where_qlib_is_importable(monkeypatch):
    assert _run_setup(object(), monkeypatch) == ([], None)


def test_setup_cell_installs_from_the_repository_and_allows_downloads_elsewhere(monkeypatch):
    calls, download = _run_setup(None, monkeypatch)
    assert calls == [["-m", "pip", "install", "-q", f"qlib[book] @ git+{URL}@{BRANCH}"],
                     ["-m", "pip", "install", "-q", "--no-deps", "pytdc==1.1.15"]]
    assert download == "1"


def test_sync_writes_and_then_leaves_the_cell(tmp_path):
    root = tmp_path
    (root / "chapters/a").mkdir(parents=True)
    (root / "_config.yml").write_text("repository:\n  url: https://github.com/someone/fork\n  branch: dev\n")
    (root / "_toc.yml").write_text("format: jb-book\nroot: chapters/a/01-x\n")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# X"), nbformat.v4.new_code_cell("seed = 0", metadata={"tags": ["parameters"]})]
    nbformat.write(nb, root / "chapters/a/01-x.ipynb")
    assert launch.sync(root) == ["a/01-x.ipynb"]
    book = nbformat.read(root / "chapters/a/01-x.ipynb", as_version=4)
    assert [c.cell_type for c in book.cells] == ["markdown", "code", "code"]
    assert "git+https://github.com/someone/fork@dev" in book.cells[1].source
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
    url, _ = launch.repository(runner.find_root())
    assert launch.check_repository(runner.find_root(), url.upper() + ".git/") == []   # the same repository
    root = tmp_path / "fork"
    (root / "chapters").mkdir(parents=True)
    (root / "_toc.yml").write_text("format: jb-book\nroot: chapters/intro/index\n")
    (root / "_config.yml").write_text(f"repository:\n  url: {url}\n  branch: main\n")
    (root / "CITATION.cff").write_text(f"repository-code: {url}\n")
    problems = launch.check_repository(root, "https://github.com/someone/fork")
    assert len(problems) == 2 and "repository.url" in problems[0] and "CITATION.cff" in problems[1], problems
    (root / "_config.yml").write_text("repository:\n  url: https://github.com/someone/fork\n  branch: main\n")
    (root / "CITATION.cff").write_text("repository-code: https://github.com/someone/fork\n")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1", metadata={"tags": ["parameters"]})])
    (root / "chapters" / "01-x.ipynb").write_text(nbformat.writes(nb))
    (root / "_toc.yml").write_text("format: jb-book\nroot: chapters/01-x\n")
    stale = launch.check_repository(root, "https://github.com/someone/fork")
    assert len(stale) == 1 and "setup cell" in stale[0], stale
    launch.sync(root)
    assert launch.check_repository(root, "https://github.com/someone/fork") == []


def test_workflows_check_the_repository_before_building():
    for wf in (ROOT / ".github/workflows").glob("*.yml"):
        steps = [s.get("run", "") for job in yaml.safe_load(wf.read_text())["jobs"].values() for s in job["steps"]]
        check = [i for i, r in enumerate(steps) if "qlib.book.launch --check" in r and "github.repository" in r]
        build = [i for i, r in enumerate(steps) if "make publish" in r]
        assert check and build and check[0] < build[0], wf.name
