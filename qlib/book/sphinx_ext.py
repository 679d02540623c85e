"""A small Sphinx extension for the book (listed in ``_config.yml``'s ``extra_extensions``).

* Drops duplicate inline scripts from every page. sphinx-thebe registers its inline configuration
  (``const THEBE_JS_URL = …``) once per read phase; Jupyter Book's build ends up with it twice on each
  page, and the second ``const`` declaration is a JavaScript error in the reader's console.
* Defines the MyST substitutions of the landing page: ``{{ qlib_version }}``, the release (the
  ``project.version`` of the checkout's ``pyproject.toml``, else the installed package's version), and
  ``{{ qlib_pdf }}``, a sentence linking the book's PDF when the site publishes one (``$QLIB_BOOK_PDF``,
  its file name at the site's root, set by :func:`qlib.book.publish.publish`), else nothing.
"""

from __future__ import annotations

import os
from typing import Any


def _dedup_scripts(app, pagename, templatename, context, doctree) -> None:
    scripts = context.get("script_files")
    if not scripts:
        return
    seen: set[tuple[str, str]] = set()
    kept = []
    for js in scripts:
        filename = getattr(js, "filename", js) or ""  # inline scripts carry None or ""
        body = (getattr(js, "attributes", None) or {}).get("body", "")
        key = (str(filename), str(body))
        if key in seen:
            continue
        seen.add(key)
        kept.append(js)
    scripts[:] = kept


def release_version() -> str:
    """The book's release: ``pyproject.toml`` beside the ``qlib`` package (a checkout), else the
    installed distribution's version."""
    import tomllib
    from pathlib import Path

    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    try:
        return tomllib.loads(pyproject.read_text())["project"]["version"]
    except (OSError, KeyError, ValueError):
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("qlib")
        except PackageNotFoundError:
            return "unknown"


def _substitutions(app, config) -> None:
    subs = dict(getattr(config, "myst_substitutions", None) or {})
    subs.setdefault("qlib_version", release_version())
    pdf = os.environ.get("QLIB_BOOK_PDF", "").strip()
    subs.setdefault("qlib_pdf", f'The whole book is also one PDF: <a href="../../{pdf}">{pdf}</a>.' if pdf else "")
    config.myst_substitutions = subs


def setup(app) -> dict[str, Any]:
    app.set_html_assets_policy("always")
    app.connect("config-inited", _substitutions)
    app.connect("html-page-context", _dedup_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
