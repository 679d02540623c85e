"""``python -m qlib.book publish``: a site folder is written only when every page of the table of
contents is there, the index and landing page have content, every link inside the site resolves and
no notebook failed — on a tiny fake book (fast); the real smoke book is published in test_book.py."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from qlib.book import cli, publish, toc

NB = {"cells": [], "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
      "nbformat": 4, "nbformat_minor": 5}
PAGE = "<html><body><main><article>{body}</article></main></body></html>"


def _fake(tmp_path: Path):
    """A book root with a landing page and one notebook, its executed tree and its HTML site."""
    root, out, html = tmp_path / "root", tmp_path / "book", tmp_path / "html"
    (root / "chapters/intro").mkdir(parents=True)
    (root / "chapters/a").mkdir(parents=True)
    (root / "_toc.yml").write_text("format: jb-book\nroot: chapters/intro/index\nparts:\n  - caption: A\n"
                                   "    chapters:\n      - glob: chapters/a/[0-9]*\n")
    (root / "chapters/intro/index.md").write_text("# Intro\n")
    (root / "chapters/a/01-x.ipynb").write_text(json.dumps(NB))
    (root / "pyproject.toml").write_text('[project]\nname = "qlib"\nversion = "9.8.7"\n')
    (out / "chapters/a").mkdir(parents=True)
    (out / "chapters/a/01-x.ipynb").write_text(json.dumps(NB))
    (out / ".stamps/a").mkdir(parents=True)
    (out / ".stamps/a/01-x.json").write_text(json.dumps({"hash": "h", "profile": "smoke", "device": "cpu",
                                                         "seconds": 1.5, "when": time.time()}))
    res = out / "_results/a/01-x"
    res.mkdir(parents=True)
    (res / "comparisons.csv").write_text(
        "chapter,paper,kind,where,quantity,paper_value,ours,tolerance,verdict,note,null,null_fails\n"
        "a/01-x,001,paper-number,Table 1,q,1,1,,reproduced,,0,True\n"
        "a/01-x,001,paper-claim,Fig 2,c,yes,yes,,consistent,,yes,False\n")
    (html / "chapters/intro").mkdir(parents=True)
    (html / "chapters/a").mkdir(parents=True)
    (html / "_static").mkdir()
    (html / "_static/style.css").write_text("body{}")
    (html / "index.html").write_text('<meta http-equiv="Refresh" content="0; url=chapters/intro/index.html" />')
    (html / "chapters/intro/index.html").write_text(PAGE.format(
        body='<h1 id="intro">Intro</h1><p>' + "What this book reproduces. " * 10 + '</p><a href="../a/01-x.html#sec">x</a><a href="https://example.org/">out</a>'
             '<link rel="stylesheet" href="../../_static/style.css">'))
    (html / "chapters/a/01-x.html").write_text(PAGE.format(body='<h1 id="sec">X</h1><a href="#sec">here</a>'
                                                                '<a href="../intro/index.html">up</a>'))
    return root, out, html


def test_a_good_site_is_assembled_with_manifest_ledger_and_notebooks(tmp_path):
    root, out, html = _fake(tmp_path)
    site = tmp_path / "site"
    man = publish.assemble(root, out, html, site)
    assert (site / "chapters/a/01-x.html").is_file() and (site / ".nojekyll").is_file()
    assert (site / "executed/chapters/a/01-x.ipynb").is_file()
    on_disk = json.loads((site / "manifest.json").read_text())
    assert on_disk == man
    assert man["version"] == "9.8.7" and man["profiles"] == ["smoke"] and man["devices"] == ["cpu"]
    assert man["notebooks"] == [{"notebook": "a/01-x.ipynb", "seconds": 1.5, "profile": "smoke", "device": "cpu"}]
    assert man["ledger"]["by_paper"]["001"] == {"reproduced": 1, "consistent": 1, "differs": 0,
                                                "not comparable": 0, "paper items": 2}
    assert "a/01-x,001,paper-number" in (site / "ledger.csv").read_text()


def _refused(tmp_path, root, out, html) -> list[str]:
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "old.txt").write_text("the previous site")
    with pytest.raises(publish.PublishRefused) as exc:
        publish.assemble(root, out, html, site)
    assert sorted(os.listdir(site)) == ["old.txt"], "a refused publish must leave the previous site as it was"
    return exc.value.problems


def test_refuses_a_missing_page(tmp_path):
    root, out, html = _fake(tmp_path)
    (html / "chapters/a/01-x.html").unlink()
    problems = _refused(tmp_path, root, out, html)
    assert any(p.startswith("missing page: chapters/a/01-x.html") for p in problems), problems


def test_refuses_an_empty_index_or_landing_page(tmp_path):
    root, out, html = _fake(tmp_path)
    (html / "index.html").write_text("  \n")
    (html / "chapters/intro/index.html").write_text(PAGE.format(body='<a href="../a/01-x.html">x</a>'))
    problems = _refused(tmp_path, root, out, html)
    assert "empty index.html" in problems
    assert any(p.startswith("empty landing page: chapters/intro/index.html") for p in problems), problems


def test_refuses_a_broken_link_or_anchor(tmp_path):
    root, out, html = _fake(tmp_path)
    (html / "chapters/a/01-x.html").write_text(PAGE.format(
        body='<h1 id="sec">X</h1><a href="../intro/nowhere.html">a</a><a href="../intro/index.html#gone">b</a>'
             '<img src="../../_images/fig.png">'))
    problems = _refused(tmp_path, root, out, html)
    assert any("'../intro/nowhere.html'" in p for p in problems), problems
    assert any("no anchor #gone" in p for p in problems), problems
    assert any("_images/fig.png" in p for p in problems), problems
    assert len(problems) == 3


def test_refuses_a_failed_or_unexecuted_notebook(tmp_path):
    root, out, html = _fake(tmp_path)
    failed = out / ".failed/a/01-x.ipynb"
    failed.parent.mkdir(parents=True)
    failed.write_text(json.dumps(NB))
    stamp = out / ".stamps/a/01-x.json"
    st = json.loads(stamp.read_text())
    stamp.write_text(json.dumps({**st, "when": time.time() - 60}))  # the failure is newer than the success
    assert any(p.startswith("failed notebook: a/01-x.ipynb") for p in _refused(tmp_path, root, out, html))
    stamp.write_text(json.dumps({**st, "when": time.time() + 60}))  # an old failure, fixed since: publishes
    publish.assemble(root, out, html, tmp_path / "site2")
    (out / "chapters/a/01-x.ipynb").unlink()
    assert any(p.startswith("notebook not executed: a/01-x.ipynb") for p in _refused(tmp_path, root, out, html))


def test_cli_exit_status_4_names_the_problems(tmp_path, capsys, monkeypatch):
    root, out, html = _fake(tmp_path)
    (html / "index.html").write_text("")
    monkeypatch.setattr(publish.build, "build", lambda **kw: _copy_html(html, kw["html_parent"]))
    code = cli.main(["publish", "--root", str(root), "--output-dir", str(out), "--skip-run",
                     "--site-dir", str(tmp_path / "site")])
    assert code == cli.EXIT_REFUSED == 4
    assert "empty index.html" in capsys.readouterr().err
    assert not (tmp_path / "site").exists()


def _copy_html(html: Path, parent: Path) -> int:
    import shutil

    shutil.copytree(html, Path(parent) / "_build" / "html")
    return 0


def test_toc_pages_expand_globs_in_order(tmp_path):
    root, _, _ = _fake(tmp_path)
    (root / "chapters/a/02-y.md").write_text("# y\n")
    assert toc.toc_pages(root) == ["chapters/intro/index", "chapters/a/01-x", "chapters/a/02-y"]


def test_the_pdf_goes_to_the_site_root_and_its_link_must_resolve(tmp_path):
    root, out, html = _fake(tmp_path)
    landing = html / "chapters/intro/index.html"
    landing.write_text(landing.read_text().replace("</article>", f'<a href="../../{publish.PDF_NAME}">PDF</a></article>'))
    problems = _refused(tmp_path, root, out, html)
    assert problems == [f"chapters/intro/index.html: broken link '../../{publish.PDF_NAME}' (no {publish.PDF_NAME})"]
    pdf = tmp_path / "built.pdf"
    pdf.write_bytes(b"%PDF-1.5 test")
    man = publish.assemble(root, out, html, tmp_path / "site3", pdf=pdf)
    assert man["pdf"] == publish.PDF_NAME and (tmp_path / "site3" / publish.PDF_NAME).read_bytes() == pdf.read_bytes()


def test_landing_page_substitutions(monkeypatch):
    from types import SimpleNamespace

    from qlib.book import sphinx_ext

    cfg = SimpleNamespace(myst_substitutions={"other": "x"})
    monkeypatch.delenv("QLIB_BOOK_PDF", raising=False)
    sphinx_ext._substitutions(None, cfg)
    assert cfg.myst_substitutions == {"other": "x", "qlib_version": publish.version(Path(__file__).resolve().parents[1]),
                                      "qlib_pdf": ""}
    monkeypatch.setenv("QLIB_BOOK_PDF", publish.PDF_NAME)
    cfg = SimpleNamespace(myst_substitutions=None)
    sphinx_ext._substitutions(None, cfg)
    assert f'<a href="../../{publish.PDF_NAME}">' in cfg.myst_substitutions["qlib_pdf"]


def test_proof_index_names_theorems_not_labels():
    # issue 29: the proof index listed labels (thm-eden-2-1), not theorem names
    from qlib.book.sphinx_ext import index_title

    assert index_title("Theorem 2.1 of {cite}`vargaftik2022eden`", "thm-eden-2-1") == "Theorem 2.1"
    assert index_title("Theorem 2.3 and Corollary 2.4 of {cite}`v`", "x") == "Theorem 2.3 and Corollary 2.4"
    assert index_title("Lemma 1 ({cite:t}`a`)", "x") == "Lemma 1"
    assert index_title("Lemma 2, {ref}`the bound <eq-b>`", "x") == "Lemma 2, the bound"
    assert index_title("", "thm-a") == "thm-a"


def test_sources_stay_portable_to_jupyter_book_2():
    # issue 26 §4: {cite:p}/{cite:t} only (Jupyter Book 2 reads no bare {cite}), and every figure cell carries
    # its label and caption both in myst-nb's place and at the top level of the cell's metadata
    import json

    root = Path(__file__).resolve().parents[1]
    bad = []
    for p in sorted((root / "chapters").rglob("*")):
        if p.suffix == ".md" and "{cite}`" in p.read_text():
            bad.append(f"{p.relative_to(root)}: bare {{cite}}")
        elif p.suffix == ".ipynb":
            for i, c in enumerate(json.loads(p.read_text())["cells"]):
                src = "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
                md = c.get("metadata", {})
                if "{cite}`" in src or "{cite}`" in json.dumps(md):
                    bad.append(f"{p.relative_to(root)} cell {i}: bare {{cite}}")
                fig = (md.get("mystnb") or {}).get("figure")
                if isinstance(fig, dict) and (md.get("caption") != fig.get("caption") or md.get("label") != fig.get("name")):
                    bad.append(f"{p.relative_to(root)} cell {i}: figure without top-level label/caption")
    assert not bad, "\n".join(bad)
