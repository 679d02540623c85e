"""Where the book lives online, and the notebooks' setup cell for a reader who launches one.

The launch buttons (Binder, Colab, JupyterHub; ``_config.yml``'s ``launch_buttons``) open the notebook
as committed, ``chapters/<part>/<NN>-<topic>.ipynb``: stripped of outputs, it runs as it is, its
parameters cell being the ``default`` profile. Opened outside the repository's environment (Colab, a
bare hub), its **setup cell** — just above the parameters cell, hidden in the book (``remove-cell``) —
installs ``qlib`` from the repository named in ``_config.yml`` and lets the loaders download the data
(``QLIB_DOWNLOAD=1``); where ``qlib`` is importable (a checkout, Binder, the runner) it does nothing.

``python -m qlib.book.launch`` writes that cell into every notebook from ``_config.yml`` (after a fork
changes ``repository.url``); ``tests/test_launch.py`` checks every notebook has it, current.
"""

from __future__ import annotations

import re
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import yaml

__all__ = ["SETUP_TAG", "SETUP_ID", "repository", "setup_source", "setup_cell", "sync", "repository_links", "same_repository", "check_repository", "main"]

SETUP_TAG = "qlib-setup"
SETUP_ID = "qlib-setup"


def repository(root: Path) -> tuple[str, str]:
    """``(url, branch)`` of ``_config.yml``'s ``repository`` (branch ``main`` when not given)."""
    cfg = yaml.safe_load((Path(root) / "_config.yml").read_text()) or {}
    repo = cfg.get("repository") or {}
    url = str(repo.get("url") or "").rstrip("/")
    if not url:
        raise ValueError("_config.yml names no repository.url")
    return url, str(repo.get("branch") or "main")


def setup_source(url: str, branch: str) -> str:
    """The setup cell's code for the repository ``url`` at ``branch`` (plain Python, no IPython magic:
    every tool that parses the notebooks' code reads it)."""
    return (
        "# Opened outside the book's repository (Colab, a bare JupyterHub)? Install qlib and let it download\n"
        "# the data it reads; in a checkout or on Binder qlib is importable and this does nothing.\n"
        "import importlib.util as _ilu\n"
        "\n"
        'if _ilu.find_spec("qlib") is None:\n'
        "    import os as _os\n"
        "    import subprocess as _sp\n"
        "    import sys as _sys\n"
        "\n"
        f'    _sp.check_call([_sys.executable, "-m", "pip", "install", "-q", "qlib[book] @ git+{url}@{branch}"])\n'
        '    _sp.check_call([_sys.executable, "-m", "pip", "install", "-q", "--no-deps", "pytdc==1.1.15"])\n'
        '    _os.environ["QLIB_DOWNLOAD"] = "1"'
    )


def setup_cell(url: str, branch: str) -> dict:
    return {"cell_type": "code", "execution_count": None, "id": SETUP_ID,
            "metadata": {"tags": ["remove-cell", SETUP_TAG]}, "outputs": [], "source": setup_source(url, branch)}


def sync(root: Path, notebooks: list[str] | None = None) -> list[str]:
    """Put the current setup cell just above the parameters cell of every notebook (or ``notebooks``,
    paths below ``chapters/``); returns those whose file changed."""
    import nbformat

    from . import runner

    root = Path(root)
    cell = nbformat.from_dict(setup_cell(*repository(root)))
    changed = []
    for nb in notebooks if notebooks is not None else runner.notebooks(root):
        path = root / "chapters" / nb
        book = nbformat.read(path, as_version=4)
        old = [c for c in book.cells if SETUP_TAG in c.metadata.get("tags", [])]
        if len(old) == 1 and old[0].source == cell.source and old[0].metadata == cell.metadata:
            continue
        cells = [c for c in book.cells if SETUP_TAG not in c.metadata.get("tags", [])]
        at = next((i for i, c in enumerate(cells) if "parameters" in c.metadata.get("tags", [])), 0)
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
    """Why ``_config.yml``, ``CITATION.cff`` and the notebooks' setup cells do not name the repository
    ``actual`` the book is built from (empty when they do). The publishing workflows run it first
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
        import nbformat

        from . import runner

        want = setup_source(url, branch)
        stale = [nb for nb in runner.notebooks(root)
                 if not any(SETUP_TAG in c.metadata.get("tags", []) and c.source == want
                            for c in nbformat.read(root / "chapters" / nb, as_version=4).cells)]
        if stale:
            out.append(f"{len(stale)} notebook(s) lack the setup cell for {url}@{branch} (first: {stale[0]}): "
                       "run `python -m qlib.book.launch`")
    return out


def main(argv: list[str] | None = None) -> int:
    """``python -m qlib.book.launch``: write the setup cell into every notebook from ``_config.yml``.
    ``--check URL``: change nothing; exit 1, one line per problem, when the sources do not name ``URL``."""
    import argparse

    from . import runner

    ap = argparse.ArgumentParser(prog="python -m qlib.book.launch", description=main.__doc__)
    ap.add_argument("--check", metavar="URL", help="the repository the book is built from (e.g. "
                    "https://github.com/${{ github.repository }} in a workflow)")
    args = ap.parse_args(argv)
    root = runner.find_root()
    if args.check is not None:
        problems = check_repository(root, args.check)
        for p in problems:
            print(p, file=sys.stderr)
        if not problems:
            print(f"the sources name {args.check}")
        return 1 if problems else 0
    changed = sync(root)
    url, branch = repository(root)
    print(f"setup cell for {url}@{branch}: {len(changed)} notebook(s) updated" + "".join(f"\n  {c}" for c in changed))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
