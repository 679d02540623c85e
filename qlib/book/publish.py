"""Publishing: everything that goes online, in one folder, or nothing.

``python -m qlib.book publish`` (``make publish``) executes the notebooks under a profile (the runner,
:func:`qlib.book.runner.run`; unchanged notebooks are skipped), builds the HTML
(:func:`qlib.book.build.build`) and assembles the site folder (default ``_build/site``)::

    <site>/index.html …            the HTML book
    <site>/executed/chapters/…     the executed notebooks (what the download button of a page serves too)
    <site>/ledger.csv              every comparison row of the book (what :mod:`qlib.book.release` compares)
    <site>/manifest.json           version, commit, profile, device, per-notebook times, ledger counts
    <site>/.nojekyll               GitHub Pages serves the ``_static``/``_sources`` folders as they are

It **refuses** — exit status 4, one line per problem, and no site folder written (a previous one is
left as it was) — a site with a page missing for an entry of ``_toc.yml``, an empty ``index.html`` or
landing page, a link to a file (or an anchor of a page) that is not in the site, or a notebook that
failed or was never executed. A failed build can therefore never be deployed as an empty site.
"""

from __future__ import annotations

import datetime
import html.parser
import json
import os
import posixpath
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path
from urllib.parse import unquote, urlsplit

from ..atomic import replace_folder
from . import build, findings, launch, runner, summary
from .build import ledger_rows
from .jobs import kernel_env, read_stamp
from .machine import git
from .options import RunOptions, check_unused, options_record
from .provenance import build_costs
from .toc import find_root, notebooks, toc_pages

__all__ = ["MANIFEST", "LEDGER", "EXECUTED", "EXIT_REFUSED", "PDF_NAME", "MIN_LANDING_TEXT", "PublishRefused",
           "check_site", "failed_notebooks", "version", "git_commit", "ledger_rows", "manifest", "assemble", "build_pdf",
           "PUBLISH_FIELDS", "publish"]

MANIFEST = "manifest.json"
LEDGER = "ledger.csv"
EXECUTED = "executed"
EXIT_REFUSED = 4
PDF_NAME = "qlib-book.pdf"  # _config.yml's latex.latex_documents.targetname, as .pdf
#: fewer characters of text than this in the landing page's article: an empty landing page
MIN_LANDING_TEXT = 200
#: link schemes that leave the site (not followed)
_SKIP_LINK_SCHEMES = ("http", "https", "mailto", "data", "javascript", "tel", "ftp")


class PublishRefused(RuntimeError):
    """The site would be broken; ``problems`` lists why, one line each."""

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        super().__init__(f"refusing to publish: {len(self.problems)} problem(s)\n  " + "\n  ".join(self.problems))


# ---------------------------------------------------------------------------------------------
# What the site must contain
# ---------------------------------------------------------------------------------------------
class _Links(html.parser.HTMLParser):
    """The ``href``/``src`` targets and the element ids of one HTML page."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.links: list[str] = []
        self.ids: set[str] = set()
        self.text = 0  # characters of text inside <article> (the page's own content, not the navigation)
        self._in_main = 0
        self._skip = 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for key in ("id", "name"):
            if a.get(key) and (key == "id" or tag == "a"):
                self.ids.add(a[key])
        if tag in ("a", "link", "area") and a.get("href") is not None:
            if tag != "link" or (a.get("rel") or "") in ("stylesheet", "icon", "shortcut icon", "prev", "next", "index", "search"):
                self.links.append(a["href"])
        if tag in ("img", "script", "source", "iframe") and a.get("src"):
            self.links.append(a["src"])
        if tag == "article":
            self._in_main += 1
        if tag in ("script", "style"):
            self._skip += 1

    def handle_endtag(self, tag):
        if tag == "article" and self._in_main:
            self._in_main -= 1
        if tag in ("script", "style") and self._skip:
            self._skip -= 1

    def handle_data(self, data):
        if self._in_main and not self._skip:
            self.text += len(data.strip())


def _parse(page: Path) -> _Links:
    p = _Links()
    p.feed(page.read_text(errors="replace"))
    return p


def _internal_target(site: Path, page: Path, link: str) -> tuple[str, str] | None:
    """``(path relative to the site, fragment)`` of a link into the site (a bare ``#frag`` names the page
    itself); None for a link to another host or scheme; ``("", "")`` for a scheme that cannot be served."""
    link = link.strip()
    if not link or link.startswith("//"):
        return None
    parts = urlsplit(link)
    if parts.scheme or parts.netloc:
        return None if parts.scheme.lower() in _SKIP_LINK_SCHEMES or parts.netloc else ("", "")
    here = page.relative_to(site).parent.as_posix()
    path = unquote(parts.path)
    rel = page.relative_to(site).as_posix() if not path else posixpath.normpath(posixpath.join(here, path))
    return rel, unquote(parts.fragment)


def check_site(site: Path, root: Path) -> list[str]:
    """The problems of the built HTML ``site`` of the book at ``root``: a page missing for an entry of
    ``_toc.yml``, an empty ``index.html`` or landing page, a link to a file or an anchor that is not in
    the site, a launch (Binder, Colab, JupyterHub), edit or source link to a file that is not in the
    repository at ``root`` (other links outside the site are not followed). Empty when the site can go
    online."""
    site, root = Path(site), Path(root)
    problems: list[str] = []
    if not site.is_dir():
        return [f"no site at {site}"]
    for name in toc_pages(root):
        if not (site / (name + ".html")).is_file():
            problems.append(f"missing page: {name}.html (named by _toc.yml)")
    index = site / "index.html"
    if not index.is_file() or not index.read_text(errors="replace").strip():
        problems.append("empty index.html" if index.is_file() else "no index.html")
    # the pages; the theme's Jinja templates copied into _static/ are assets, not pages
    pages = sorted(p for p in site.rglob("*.html") if p.relative_to(site).parts[0] not in ("_static", "_sources"))
    parsed = {p.relative_to(site).as_posix(): _parse(p) for p in pages}
    first = toc_pages(root)[:1]
    if first and (site / (first[0] + ".html")).is_file() and parsed[first[0] + ".html"].text < MIN_LANDING_TEXT:
        problems.append(f"empty landing page: {first[0]}.html has {parsed[first[0] + '.html'].text} characters "
                        f"of text (< {MIN_LANDING_TEXT})")
    try:
        repo = launch.repository(root)
    except (ValueError, FileNotFoundError):
        repo = None
    for rel, p in parsed.items():
        if repo is not None:
            for kind, path, link in launch.repository_links((site / rel).read_text(errors="replace"), *repo):
                if not (root / path).is_file():
                    problems.append(f"{rel}: {kind} link to {path}, which is not in the repository ({link})")
        for link in p.links:
            target = _internal_target(site, site / rel, link)
            if target is None:
                continue
            path, frag = target
            if path.startswith("..") or path.startswith("/") or not path:
                problems.append(f"{rel}: link {link!r} leaves the site")
                continue
            f = site / path
            if f.is_dir():
                f, path = f / "index.html", posixpath.join(path, "index.html")
            if not f.is_file():
                problems.append(f"{rel}: broken link {link!r} (no {path})")
            elif frag and path.endswith(".html") and path in parsed and frag not in parsed[path].ids:
                problems.append(f"{rel}: broken link {link!r} (no anchor #{frag} in {path})")
    return problems


def failed_notebooks(root: Path, build_dir: Path) -> list[str]:
    """The book's notebooks that failed, or were never executed, in the executed tree ``build_dir``:
    no executed notebook or stamp, or a partial notebook under ``.failed/`` newer than its stamp."""
    out = []
    build_dir = Path(build_dir)
    for nb in notebooks(root):
        target = build_dir / "chapters" / nb
        stamp = read_stamp(build_dir / ".stamps" / Path(nb).with_suffix(".json"))
        failed = build_dir / ".failed" / nb
        if failed.is_file() and (not stamp or failed.stat().st_mtime > float(stamp.get("when") or 0)):
            out.append(f"failed notebook: {nb} (partial output in {failed})")
        elif not target.is_file() or not stamp:
            out.append(f"notebook not executed: {nb} (no {target.relative_to(build_dir)} or no stamp)")
    return out


# ---------------------------------------------------------------------------------------------
# The manifest
# ---------------------------------------------------------------------------------------------
def version(root: Path) -> str:
    """The release: ``project.version`` of the book's ``pyproject.toml`` (the one ``CITATION.cff`` states
    and the landing page shows)."""
    return tomllib.loads((Path(root) / "pyproject.toml").read_text())["project"]["version"]


def git_commit(root: Path) -> dict:
    """The commit the site is built from: full hash, and whether tracked files had changes."""
    sha = git(root, "rev-parse", "HEAD")
    dirty = bool(git(root, "status", "--porcelain", "--untracked-files=no"))
    return {"commit": sha or "unknown", "dirty": dirty}


def manifest(root: Path, build_dir: Path) -> dict:
    """What the site was built from and what its ledger says: version, commit, profile(s), device(s),
    each notebook's time, and per paper the paper numbers and claims reproduced / consistent / differs."""
    costs = build_costs(build_dir)
    rows = ledger_rows(build_dir)
    rows = rows[~rows["scale"].astype(str).str.contains(" (archived ", regex=False)] if len(rows) else rows  # this build's
    byp = summary.verdicts_by_paper(rows)
    counts = [c for c in byp.columns if c != "paper"]  # reproduced, consistent, differs, not comparable, paper items
    per_paper = {str(r["paper"]): {k: int(r[k]) for k in counts} for _, r in byp.iterrows()}
    total = {k: sum(v[k] for v in per_paper.values()) for k in counts}
    return {
        "name": "qlib",
        "version": version(root),
        **git_commit(root),
        "built": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "profiles": sorted({c["profile"] for c in costs}),
        "devices": sorted({c["device"] for c in costs}),
        "notebooks": [{"notebook": c["notebook"], "seconds": c["seconds"], "profile": c["profile"],
                       "device": c["device"]} for c in costs],
        "execution_seconds": round(sum(c["seconds"] or 0 for c in costs), 1),
        "ledger": {"rows": len(rows), "by_paper": per_paper, "total": total},
    }


# ---------------------------------------------------------------------------------------------
# Assembling and publishing
# ---------------------------------------------------------------------------------------------
def assemble(root: Path, build_dir: Path, html_dir: Path, site_dir: Path, *, pdf: Path | None = None) -> dict:
    """Write the site folder ``site_dir`` from the executed tree ``build_dir`` and the built ``html_dir``:
    the HTML, the executed notebooks, ``ledger.csv``, ``manifest.json`` and, if given, the ``pdf`` (as
    :data:`PDF_NAME`). The folder is staged beside ``site_dir``, checked (:func:`failed_notebooks`,
    :func:`check_site`) and moved in at once; when the site would be broken nothing is written and
    :class:`PublishRefused` lists every problem. Returns the manifest."""
    root, build_dir, html_dir, site_dir = (Path(p).resolve() for p in (root, build_dir, html_dir, site_dir))
    problems = failed_notebooks(root, build_dir)
    if problems:
        raise PublishRefused(problems + check_site(html_dir, root))
    man = {**manifest(root, build_dir), "pdf": PDF_NAME if pdf else None}
    site_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{site_dir.name}.", dir=site_dir.parent))
    try:
        staged = tmp / "site"
        shutil.copytree(html_dir, staged, ignore=shutil.ignore_patterns(".doctrees", ".buildinfo"))
        for nb in notebooks(root):
            dest = staged / EXECUTED / "chapters" / nb
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(build_dir / "chapters" / nb, dest)
        if pdf:
            shutil.copy2(pdf, staged / PDF_NAME)
        ledger_rows(build_dir).to_csv(staged / LEDGER, index=False)
        found = build_dir / "_results" / findings.FINDINGS_FILE
        if found.is_file():  # one row per claim, and its schema beside it
            shutil.copy2(found, staged / findings.FINDINGS_FILE)
            shutil.copy2(findings.SCHEMA_FILE, staged / findings.SCHEMA_FILE.name)
        (staged / ".nojekyll").write_text("")
        (staged / MANIFEST).write_text(json.dumps(man, indent=1) + "\n")
        problems = check_site(staged, root)
        if problems:
            raise PublishRefused(problems)
        replace_folder(staged, site_dir)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return man


def build_pdf(*, root: Path | None = None, output_dir: str | os.PathLike | None = None,
              pdf_dir: str | os.PathLike | None = None) -> Path:
    """The book as one PDF, from the executed notebooks (``jupyter-book build --builder pdflatex``, no
    Jupyter Book LaTeX package: it builds offline with a reduced TeX set, see the README). The PDF lands
    in ``<pdf_dir>/`` (default ``<root>/_build/pdf``) as :data:`PDF_NAME`; a failed build raises
    :class:`PublishRefused` naming the LaTeX log."""
    root = find_root(root)
    out = Path(output_dir or root / "_build" / "book").resolve()
    dest = Path(pdf_dir or root / "_build" / "pdf").resolve()
    if shutil.which("latexmk") is None:
        raise PublishRefused(["no latexmk: install TeX (README, Publishing) to build the PDF"])
    build.stage(root, out)
    parent = Path(tempfile.mkdtemp(prefix="qlib-pdf-"))
    try:
        exe = Path(sys.executable).with_name("jupyter-book")
        cmd = [str(exe) if exe.exists() else "jupyter-book", "build", "--all", "--builder", "pdflatex",
               "--path-output", str(parent), str(out)]
        status = subprocess.call(cmd)
        built = parent / "_build" / "latex" / PDF_NAME
        dest.mkdir(parents=True, exist_ok=True)
        if status != 0 or not built.is_file():
            log = next((parent / "_build" / "latex").glob("*.log"), None)
            for f in (parent / "_build" / "latex").glob("*.tex"):  # beside the log, for the line it names
                shutil.copy2(f, dest / f.name)
            if log is not None:
                log = Path(shutil.copy2(log, dest / log.name))
            raise PublishRefused([f"the PDF build failed (exit status {status}); see {log or 'its output'}"])
        shutil.copy2(built, dest / PDF_NAME)
        (dest / PDF_NAME.replace(".pdf", ".log")).unlink(missing_ok=True)  # a failed build's log
        tex = parent / "_build" / "latex" / PDF_NAME.replace(".pdf", ".tex")
        if tex.is_file():
            shutil.copy2(tex, dest / tex.name)
    finally:
        shutil.rmtree(parent, ignore_errors=True)
    return dest / PDF_NAME


#: the fields of :class:`~qlib.book.options.RunOptions` that :func:`publish` honours (it runs every
#: notebook, on one seed, at the profile's parameters, without a progress bar)
PUBLISH_FIELDS = ("profile", "device", "data_dir", "output_dir", "jobs", "force")


def publish(root: Path | None = None, options: RunOptions | None = None, *, site_dir: str | os.PathLike | None = None,
            skip_run: bool = False, pdf: bool = False, log=print) -> dict:
    """Execute the book under ``options`` (a :class:`~qlib.book.options.RunOptions`; None: its
    defaults; the fields outside :data:`PUBLISH_FIELDS` are refused) — unless ``skip_run``: publish
    what ``output_dir`` holds —
    build and assemble the site in ``site_dir`` (:func:`assemble`; None: ``<root>/_build/site``), with
    the PDF (:func:`build_pdf`) when ``pdf``, linked from the landing page; raises
    :class:`PublishRefused` when a notebook failed, a build failed or the site would be broken.
    Returns the manifest."""
    opts = options_record(options, RunOptions())
    check_unused(opts, PUBLISH_FIELDS, name="publish")
    root = find_root(root)
    out = Path(opts.output_dir or root / "_build" / "book").resolve()
    site = Path(site_dir or root / "_build" / "site").resolve()
    if not skip_run:
        report = runner.run(root, RunOptions(profile=opts.profile, device=opts.device, data_dir=opts.data_dir,
                                             output_dir=out, force=opts.force, jobs=opts.jobs, progress=False),
                            log=log)
        log(report.summary())
        if report.interrupted or report.failures:
            raise PublishRefused([f"failed notebook: {o.notebook}: {o.error}" for o in report.failures]
                                 or ["the run was interrupted"])
    parent = Path(tempfile.mkdtemp(prefix="qlib-publish-"))
    try:
        pdf_file = build_pdf(root=root, output_dir=out, pdf_dir=parent / "pdf") if pdf else None
        with kernel_env({"QLIB_BOOK_PDF": PDF_NAME if pdf_file else None}):  # the landing page links it
            status = build.build(root=root, output_dir=out, html_parent=parent)
        if status != 0:
            raise PublishRefused([f"jupyter-book build failed (exit status {status}; warnings are errors)"])
        man = assemble(root, out, parent / "_build" / "html", site, pdf=pdf_file)
    finally:
        shutil.rmtree(parent, ignore_errors=True)
    r = man["ledger"]["total"]
    log(f"site: {site} — qlib {man['version']}, profile {', '.join(man['profiles'])}, "
        f"{r['reproduced']} reproduced / {r['consistent']} consistent / {r['differs']} differ")
    url, branch = launch.repository(root)  # the one setting (_config.yml) the buttons, launch cells and CITATION follow
    log(f"its launch, edit and repository buttons point to {url} (branch {branch}); a fork sets _config.yml's "
        "repository.url and runs python -m qlib.book.launch")
    return man
