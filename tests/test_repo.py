"""Repository hygiene: notebooks stripped and parameterised, profiles complete, environment.yml in
step with pyproject.toml, README commands true."""

from __future__ import annotations

import ast
import re
import subprocess
import tomllib
from pathlib import Path

import nbformat
import pytest
import yaml

from qlib.book import profiles, toc

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = toc.notebooks(ROOT)


def test_every_chapter_notebook_is_in_the_toc():
    on_disk = sorted(p.relative_to(ROOT / "chapters").as_posix() for p in (ROOT / "chapters").rglob("*.ipynb")
                     if ".ipynb_checkpoints" not in p.parts)
    assert sorted(NOTEBOOKS) == on_disk


@pytest.mark.parametrize("nb", NOTEBOOKS)
def test_notebook_committed_without_outputs(nb):
    tracked = subprocess.run(["git", "ls-files", "--error-unmatch", f"chapters/{nb}"], cwd=ROOT, capture_output=True)
    book = nbformat.read(ROOT / "chapters" / nb, as_version=4)
    for cell in book.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, f"{nb} carries outputs (tracked: {tracked.returncode == 0})"
            assert "papermill" not in cell.metadata and "execution" not in cell.metadata
    assert "papermill" not in book.metadata
    assert book.metadata.kernelspec.name == "python3"


def test_chapters_are_stored_as_jupyterlab_saves_them():
    """Issue 57: opening a chapter in JupyterLab and saving it unedited changes nothing — every chapter is in
    nbformat's serialisation (what Lab's save goes through) with ipykernel's kernel spec and language info;
    and the form itself is Lab's: a string-valued source becomes its list of lines, keys are sorted, the
    kernel is renamed as ipykernel names it."""
    from qlib.book import nbfile

    differ = [p.relative_to(ROOT).as_posix() for p in nbfile.normalise(ROOT, check=True)]
    assert not differ, f"{differ}: run `python -m qlib.book lab-form`"
    text = ('{"cells": [{"cell_type": "code", "execution_count": null, "id": "a", "metadata": {}, "outputs": [], '
            '"source": "x = 1\\ny = 2"}], "metadata": {"kernelspec": {"display_name": "Python 3", "language": '
            '"python", "name": "python3"}}, "nbformat": 4, "nbformat_minor": 5}')
    form = nbfile.lab_form(text)
    nb = nbformat.reads(form, as_version=4)
    assert '"x = 1\\n",\n    "y = 2"' in form and nb.cells[0].source == "x = 1\ny = 2"      # lines, same text
    assert nb.metadata.kernelspec.display_name == "Python 3 (ipykernel)"
    assert nb.metadata.language_info.pygments_lexer == "ipython3" and form.endswith("}\n")
    assert nbfile.lab_form(form) == form                                                   # a second save: no change
    assert form.index('"cell_type"') < form.index('"execution_count"') < form.index('"source"')   # sorted keys
    with pytest.raises(TypeError, match="text"):
        nbfile.lab_form(b"{}")
    with pytest.raises(ValueError, match="version"):
        nbfile.language_info("three")


@pytest.mark.parametrize("nb", NOTEBOOKS)
def test_notebook_parameters_cell(nb):
    book = nbformat.read(ROOT / "chapters" / nb, as_version=4)
    cells = [c for c in book.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(cells) == 1, f"{nb}: exactly one cell tagged 'parameters'"
    names = set(profiles.cell_parameters(ROOT / "chapters" / nb))
    assert names == {t.id for node in ast.parse(cells[0].source).body if isinstance(node, (ast.Assign, ast.AnnAssign))
                     for t in (node.targets if isinstance(node, ast.Assign) else [node.target]) if isinstance(t, ast.Name)}
    missing = set(profiles.COMMON) - names
    assert not missing, f"{nb}: parameters cell lacks {sorted(missing)}"
    for prof in profiles.PROFILES:
        entry = profiles.load(ROOT, prof).get(nb)
        assert entry is not None, f"profiles/{prof}.yml has no entry for {nb}"
        unknown = set(entry) - names
        assert not unknown, f"profiles/{prof}.yml sets {sorted(unknown)} that {nb} does not declare"
    assert not re.search(r"sys\.path", "".join(c.source for c in book.cells if c.cell_type == "code")), f"{nb} edits sys.path"


@pytest.mark.parametrize("nb", NOTEBOOKS)
def test_parameters_cell_is_the_default_profile(nb):
    """The cell holds the `default` values, so an interactive run and `make book` agree: default.yml
    may only hold values that differ from the cell (and then the cell is not the default) — i.e. none."""
    declared = profiles.cell_parameters(ROOT / "chapters" / nb)
    entry = profiles.load(ROOT, "default").get(nb, {})
    repeated = {k: v for k, v in entry.items() if declared.get(k) == v}
    differs = {k: (declared.get(k), v) for k, v in entry.items() if declared.get(k) != v}
    assert not repeated, f"profiles/default.yml repeats the cell of {nb}: {repeated}"
    assert not differs, f"profiles/default.yml differs from the cell of {nb} (cell, profile): {differs}"


def test_every_profile_validates():
    for prof in profiles.PROFILES:
        profiles.resolve(ROOT, prof, NOTEBOOKS, NOTEBOOKS)


def test_profiles_have_no_stale_entries():
    for prof in profiles.PROFILES:
        stale = set(profiles.load(ROOT, prof)) - set(NOTEBOOKS)
        assert not stale, f"profiles/{prof}.yml has entries for missing notebooks: {sorted(stale)}"


def _norm(req: str) -> str:
    return re.split(r"[\s<>=!~;\[]", req.strip(), maxsplit=1)[0].lower().replace("_", "-")


def test_environment_yml_matches_pyproject():
    py = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = {_norm(r): r for r in py["dependencies"]}
    env_text = (ROOT / "environment.yml").read_text()
    for name, extra in py["optional-dependencies"].items():
        if name == "peers":  # the tests' oracles: installed afterwards, without deps or build isolation
            assert all(f"pip install --no-deps --no-build-isolation {r}" in env_text for r in extra), extra
            continue
        wanted |= {_norm(r): r for r in extra}
    env = yaml.safe_load(env_text)
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert "-e ." in pip, "environment.yml must install qlib itself (-e .)"
    listed = {_norm(r): r for r in pip if r != "-e ."}
    assert set(wanted) == set(listed), f"differ: {sorted(set(wanted) ^ set(listed))}"
    assert {k: v.replace(" ", "") for k, v in wanted.items()} == {k: v.replace(" ", "") for k, v in listed.items()}


def test_readme_commands_exist():
    readme = (ROOT / "README.md").read_text()
    assert "make book" in readme and "make test" in readme
    make = (ROOT / "Makefile").read_text()
    assert re.search(r"^book:", make, re.M) and re.search(r"^test:", make, re.M)
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make test" in ci


def test_jupyterlab_renders_myst():
    """jupyterlab-myst is installed, enabled and compatible with the installed JupyterLab, so that a
    chapter opened in JupyterLab renders its citations and theorem blocks."""
    import shutil
    import sys

    exe = Path(sys.executable).with_name("jupyter")
    res = subprocess.run([str(exe) if exe.exists() else shutil.which("jupyter") or "jupyter", "labextension", "list"],
                         capture_output=True, text=True, timeout=120)
    text = re.sub(r"\x1b\[[0-9;]*m", "", res.stdout + res.stderr)
    line = next((ln for ln in text.splitlines() if "jupyterlab-myst" in ln and " v" in ln), "")
    assert "enabled" in line and "OK" in line, f"jupyterlab-myst not usable:\n{text}"
    assert not re.search(r'"jupyterlab-myst@[^"]*" is not compatible', text), text


CHAPTERS = [nb for nb in NOTEBOOKS if nb.split("/")[0] not in ("intro", "appendix")]


@pytest.mark.parametrize("nb", CHAPTERS)
def test_chapter_has_one_labelled_paper_vs_ours_section(nb):
    """Every chapter ends its comparison with one ``## Paper vs ours`` section carrying the label the
    ledger links to, filled by ``ch.paper_vs_ours()``; no cell prints the raw recorder."""
    from qlib.book.render import section_label

    book = nbformat.read(ROOT / "chapters" / nb, as_version=4)
    label = section_label(nb.removesuffix(".ipynb"))
    heads = [c for c in book.cells if c.cell_type == "markdown" and re.search(r"^## Paper vs ours\s*$", c.source, re.M)]
    assert len(heads) == 1, f"{nb}: {len(heads)} '## Paper vs ours' headings"
    assert heads[0].source.startswith(f"({label})="), f"{nb}: the heading lacks its label ({label})="
    code = [c.source for c in book.cells if c.cell_type == "code"]
    assert sum("ch.paper_vs_ours()" in s for s in code) == 1, f"{nb}: call ch.paper_vs_ours() once"
    assert not any(re.search(r"cmp\.(show|summary)\(\)", s) for s in code), f"{nb}: prints the raw recorder"


@pytest.mark.parametrize("nb", CHAPTERS)
def test_bookkeeping_and_plotting_cells_are_folded(nb):
    """Figure cells and cells that only record rows are hidden behind a toggle (``hide-input``);
    calls into qlib that compute results stay visible."""
    book = nbformat.read(ROOT / "chapters" / nb, as_version=4)
    shown = []
    for c in book.cells:
        if c.cell_type != "code":
            continue
        tags = c.metadata.get("tags", [])
        plotting = bool(c.metadata.get("mystnb", {}).get("figure")) or "plt.subplots" in c.source
        recording_only = all(line.startswith(("ch.record(", "ch.paper_vs_ours(")) or not line.strip()
                             for line in c.source.splitlines())
        if (plotting or recording_only) and not {"hide-input", "remove-input", "remove-cell"} & set(tags):
            shown.append(c.source.splitlines()[0])
    assert not shown, f"{nb}: plotting/recording cells not hidden: {shown}"


@pytest.mark.parametrize("nb", CHAPTERS)
def test_every_figure_is_referenced(nb):
    book = nbformat.read(ROOT / "chapters" / nb, as_version=4)
    names = [c.metadata["mystnb"]["figure"]["name"] for c in book.cells
             if c.cell_type == "code" and c.metadata.get("mystnb", {}).get("figure", {}).get("name")]
    text = "\n".join(c.source for c in book.cells if c.cell_type == "markdown")
    missing = [n for n in names if f"{{numref}}`{n}`" not in text]
    assert not missing, f"{nb}: figures never referenced with {{numref}}: {missing}"
