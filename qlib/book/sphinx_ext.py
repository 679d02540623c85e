"""A small Sphinx extension for the book (listed in ``_config.yml``'s ``extra_extensions``).

* Drops duplicate inline scripts from every page. sphinx-thebe registers its inline configuration
  (``const THEBE_JS_URL = …``) once per read phase; Jupyter Book's build ends up with it twice on each
  page, and the second ``const`` declaration is a JavaScript error in the reader's console.
* Defines the MyST substitutions of the landing page: ``{{ qlib_version }}``, the release (the
  ``project.version`` of the checkout's ``pyproject.toml``, else the installed package's version), and
  ``{{ qlib_pdf }}``, a sentence linking the book's PDF when the site publishes one (``$QLIB_BOOK_PDF``,
  its file name at the site's root, set by :func:`qlib.book.publish.publish`), else nothing.
* Lists theorem blocks by name in the proof index, grouped by chapter (sphinx-proof lists bare labels).
* Typesets superscripts written as text (``r_Q^n``, ``n^{-1/2}``, ``P(A^c)`` in a note, a caption or a
  computed sentence) as maths, so that no rendered page shows raw TeX (issue 53; code, raw HTML, maths and
  titles are left as they are).
"""

from __future__ import annotations

import os
import re
import tomllib
from collections import defaultdict
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.transforms import Transform


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
    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    try:
        return tomllib.loads(pyproject.read_text())["project"]["version"]
    except (OSError, KeyError, ValueError):
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


_ROLE_OF = re.compile(r"\s*(?:\b(?:of|in)\s+)?\{cite(?::[a-z]+)?\}`[^`]*`")
_ROLE = re.compile(r"\{[a-z:]+\}`([^`<]*?)\s*(?:<[^>]*>)?`")


def index_title(title: str, label: str) -> str:
    """A theorem block's name as the proof index shows it: its title without the citation
    ("Theorem 2.1 of {cite}`eden`" → "Theorem 2.1"), other roles as their text, else its label."""
    t = _ROLE.sub(lambda m: m.group(1), _ROLE_OF.sub("", title or ""))
    t = re.sub(r"\(\s*\)", "", t).strip(" ,;:")
    return t or label


def _collect_titles(app, doctree) -> None:
    """Remember every theorem block's title (sphinx-proof keeps only its label)."""
    env = app.env
    store = env.__dict__.setdefault("qlib_proof_titles", {})
    for node in doctree.findall(lambda n: "label" in getattr(n, "attributes", {}) and "realtype" in n.attributes):
        store[node["label"]] = {"title": str(node.get("title", "")), "docname": env.docname,
                                "realtype": str(node["realtype"])}


def _purge_titles(app, env, docname) -> None:
    store = getattr(env, "qlib_proof_titles", {})
    for k in [k for k, v in store.items() if v["docname"] == docname]:
        del store[k]


def _merge_titles(app, env, docnames, other) -> None:
    env.__dict__.setdefault("qlib_proof_titles", {}).update(getattr(other, "qlib_proof_titles", {}))


def _proof_index_by_chapter(self, docnames=None):
    """sphinx-proof's index lists bare labels (``thm-eden-2-1``): list names instead ("Theorem 2.1",
    "Lemma 3"), grouped by the chapter that states them."""
    env = self.domain.env
    proofs = getattr(env, "proof_list", {})
    titles = getattr(env, "qlib_proof_titles", {})
    content = defaultdict(list)
    for anchor, values in proofs.items():
        doc = values["docname"]
        chapter = env.titles[doc].astext() if doc in env.titles else doc
        name = index_title(titles.get(anchor, {}).get("title", ""), anchor)
        content[chapter].append((name, values["prio"], doc, anchor, "", "", values["realtype"]))
    return sorted((k, sorted(v)) for k, v in content.items()), True


#: a superscript written as text: ``r_Q^n``, or a base and a bracketed, braced or alphanumeric exponent
#: (``e^(−n r)``, ``2^10``, ``B^c``)
_RAW_SUP = re.compile(r"((?<![\w$\\{])[A-Za-z0-9]+\^\((?:[^()]|\([^()]*\))*\)"
                      r"|(?<![\w$\\{])r_\{?Q\}?\^\{?n\}?"
                      r"|(?<![\w$\\{])[A-Za-z0-9]+\^(?:\{[^{}\s][^{}]*\}|[A-Za-z0-9]+)"
                      r"|\([^()]*\)\^(?:\{[^{}\s][^{}]*\}|[A-Za-z0-9]+))(?![\w{])")
#: nodes whose text is never maths: code, raw output, maths itself, titles (the navigation shows them as text)
_KEEP = (nodes.literal, nodes.literal_block, nodes.raw, nodes.math, nodes.math_block, nodes.title, nodes.comment,
         nodes.FixedTextElement, nodes.target)


def tex_of(token: str) -> str:
    """A superscript token as TeX: an alphanumeric exponent of several characters braced (``2^10`` →
    ``2^{10}``); ``r_Q^n`` and braced exponents as they are."""
    if token.startswith("r_"):
        return token
    base, _, exp = token.rpartition("^") if token.startswith("(") and "^(" not in token else token.partition("^")
    return token if exp.startswith("{") or len(exp) == 1 else f"{base}^{{{exp}}}"


class RawSuperscripts(Transform):
    """Text such as ``r_Q^n`` or ``n^{-1/2}`` outside code and maths becomes an inline maths node."""

    default_priority = 700

    def apply(self) -> None:
        for text in list(self.document.findall(nodes.Text)):
            if "^" not in text or any(isinstance(a, _KEEP) for a in _ancestors(text)):
                continue
            parts = _RAW_SUP.split(str(text))
            if len(parts) == 1:
                continue
            new = [nodes.math(p, tex_of(p)) if i % 2 else nodes.Text(p) for i, p in enumerate(parts) if p]
            text.parent.replace(text, new)


def _ancestors(node):
    n = node.parent
    while n is not None:
        yield n
        n = n.parent


def setup(app) -> dict[str, Any]:
    app.add_transform(RawSuperscripts)
    app.set_html_assets_policy("always")
    app.connect("config-inited", _substitutions)
    app.connect("html-page-context", _dedup_scripts, priority=900)
    app.connect("doctree-read", _collect_titles)
    app.connect("env-purge-doc", _purge_titles)
    app.connect("env-merge-info", _merge_titles)
    try:
        from sphinx_proof.domain import ProofIndex  # deferred: sphinx-proof (book extra) is there only in a build

        ProofIndex.generate = _proof_index_by_chapter
    except ImportError:  # pragma: no cover - sphinx-proof is in the book extra
        pass
    return {"parallel_read_safe": True, "parallel_write_safe": True}
