"""The book's MyST is written in the subset both Jupyter Book generations read.

Jupyter Book 1 (Sphinx, myst-parser, sphinx-proof, sphinxcontrib-bibtex) builds the book today; Jupyter
Book 2 (mystmd) is where it will move. Every markdown source of the book — the ``.md`` pages under
``chapters/``, the notebooks' markdown cells, and the figure captions in cell metadata — is parsed here with
myst-parser's own markdown-it configuration (the extensions of ``_config.yml``), directive bodies included,
and every role and directive it uses must be one both generations define:

* roles: citations only as ``{cite:p}``/``{cite:t}`` (mystmd reads no bare ``{cite}``), cross-references
  (``ref``, ``numref``, ``doc``, ``eq``), ``math``, ``term``, ``abbr``, ``sub``, ``sup``, ``download``;
* directives: the proof directives (``prf:*``: sphinx-proof, mystmd's built-in proofs), admonitions,
  ``figure``/``image``/tables, ``math``, ``include``, ``bibliography``, ``glossary``, ``code``/``code-block``,
  ``dropdown``, ``margin``, ``aside``, ``topic``, ``card``/``grid``/``tab-set``/``tab-item``, ``exercise``/
  ``solution``, ``mermaid``, ``iframe``, ``embed``;
* no myst-nb-only roles (``{eval}``, ``{glue:*}``), and no ``{{ substitution }}`` in a notebook (mystmd
  substitutes differently). The one page with substitutions is the introduction's release line
  (``qlib_version``, ``qlib_pdf``), which the build fills in (:mod:`qlib.book`): a port sets the two values
  there, so it is named here rather than rewritten.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

SHARED_ROLES = {"cite:p", "cite:t", "ref", "numref", "doc", "eq", "math", "term", "abbr", "sub", "sup", "download",
                "prf:ref"}
SHARED_DIRECTIVES = {
    "note", "tip", "hint", "important", "warning", "caution", "attention", "danger", "error", "seealso",
    "admonition", "figure", "image", "table", "list-table", "csv-table", "math", "include", "bibliography",
    "glossary", "code", "code-block", "code-cell", "dropdown", "margin", "aside", "topic", "card", "grid",
    "grid-item-card", "tab-set", "tab-item", "exercise", "solution", "mermaid", "iframe", "embed",
}
PROOF_KINDS = {"proof", "theorem", "lemma", "proposition", "corollary", "definition", "remark", "conjecture",
               "example", "algorithm", "criterion", "axiom", "property", "observation", "assumption", "notation"}


def _parser():
    import yaml
    from markdown_it.renderer import RendererHTML
    from myst_parser.config.main import MdParserConfig
    from myst_parser.parsers.mdit import create_md_parser

    cfg = yaml.safe_load((ROOT / "_config.yml").read_text())
    ext = set(cfg.get("parse", {}).get("myst_enable_extensions", []))
    return create_md_parser(MdParserConfig(enable_extensions=ext), RendererHTML)


def _sources():
    """(where, markdown text) for every markdown source of the book."""
    for p in sorted((ROOT / "chapters").rglob("*")):
        rel = p.relative_to(ROOT)
        if p.suffix == ".md":
            yield str(rel), p.read_text(encoding="utf-8")
        elif p.suffix == ".ipynb":
            for i, c in enumerate(json.loads(p.read_text(encoding="utf-8"))["cells"]):
                src = "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
                if c["cell_type"] == "markdown":
                    yield f"{rel} cell {i}", src
                md = c.get("metadata", {})
                fig = (md.get("mystnb") or {}).get("figure") or {}
                for where, cap in (("caption", md.get("caption")), ("mystnb caption", fig.get("caption"))):
                    if isinstance(cap, str):
                        yield f"{rel} cell {i} {where}", cap


def _walk(tokens):
    for t in tokens:
        yield t
        if t.children:
            yield from _walk(t.children)


def _body(content: str) -> str:
    """A directive's content without its leading ``:option: value`` lines (and a YAML ``---`` block)."""
    lines = content.split("\n")
    if lines and lines[0].strip() == "---":
        end = next((i for i, s in enumerate(lines[1:], 1) if s.strip() == "---"), 0)
        lines = lines[end + 1:]
    while lines and re.match(r"^:[\w-]+:", lines[0]):
        lines = lines[1:]
    return "\n".join(lines)


#: the substitutions the build fills in, and the one page that uses them
BUILD_SUBSTITUTIONS = {"chapters/intro/index.md": {"qlib_version", "qlib_pdf"}}


def problems(md, where: str, text: str) -> list[str]:
    out = []
    allowed = BUILD_SUBSTITUTIONS.get(where, set())
    if any(m not in allowed for m in re.findall(r"\{\{\s*([\w.]+)\s*\}\}", text)):
        out.append(f"{where}: a {{{{ substitution }}}} (Jupyter Book 1 only)")
    for t in _walk(md.parse(text)):
        if t.type == "myst_role":
            name = t.meta.get("name", "")
            if name not in SHARED_ROLES:
                out.append(f"{where}: role {{{name}}} is not read by both generations")
        elif t.type in ("fence", "colon_fence"):
            m = re.match(r"^\{([^}]+)\}", t.info.strip())
            if not m:
                continue  # a plain code block
            name = m.group(1)
            ok = name in SHARED_DIRECTIVES or (name.startswith("prf:") and name[4:] in PROOF_KINDS)
            if not ok:
                out.append(f"{where}: directive {{{name}}} is not read by both generations")
            if name not in ("math", "code", "code-block", "code-cell", "mermaid", "include", "bibliography"):
                out.extend(problems(md, f"{where} {{{name}}}", _body(t.content)))
    return out


def test_every_markdown_source_uses_the_shared_myst_subset():
    md = _parser()
    found = [p for where, text in _sources() for p in problems(md, where, text)]
    assert not found, "\n".join(found)


@pytest.mark.parametrize("text,bad", [
    ("See {cite}`a`.", "role {cite}"),
    ("```{prf:theorem} T\n:label: x\nAs {cite}`a` shows.\n```\n", "role {cite}"),  # inside a directive body
    (":::{sidebar}\nx\n:::\n", "directive {sidebar}"),
    ("The value {{ n }}.", "substitution"),
    ("{glue:text}`n`", "role {glue:text}"),
])
def test_the_checker_sees_each_kind_of_problem(text, bad):
    found = problems(_parser(), "t", text)
    assert any(bad in p for p in found), found


def test_the_checker_passes_the_shared_forms():
    text = ("See {cite:p}`a`, {cite:t}`b`, {numref}`fig-x`, {ref}`sec`, {doc}`p` and $x$.\n\n"
            "```{prf:theorem} T\n:label: thm-x\nBy {cite:p}`a`, $y$.\n```\n\n:::{note}\nA {numref}`f`.\n:::\n")
    assert problems(_parser(), "t", text) == []
