"""A small Sphinx extension for the book (listed in ``_config.yml``'s ``extra_extensions``).

* Drops duplicate inline scripts from every page. sphinx-thebe registers its inline configuration
  (``const THEBE_JS_URL = …``) once per read phase; Jupyter Book's build ends up with it twice on each
  page, and the second ``const`` declaration is a JavaScript error in the reader's console.
"""

from __future__ import annotations

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


def setup(app) -> dict[str, Any]:
    app.set_html_assets_policy("always")
    app.connect("html-page-context", _dedup_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
