"""One floor plan for every paper's wing: a chapter imports only its own wing and the library, and a
wing never imports another wing. Checked on the source with :mod:`ast` (nothing is imported or run).

* A *wing* is a package ``qlib/repro/<wing>/``; the part of the book it serves is ``chapters/<part>/``
  with ``<wing> == <part>.replace("-", "_")`` (``chapters/mia-limits`` → ``qlib.repro.mia_limits``).
* The modules of ``qlib.repro`` that are not wings (``qlib.repro.ledger``, ``qlib.repro.inventory``)
  are shared by every wing and chapter, and so is ``qlib.book``.
* A notebook of ``chapters/<part>/`` may import ``qlib.repro.<part's wing>`` (any module of it) and
  the library (``qlib.<idea>``), never another wing. A notebook of ``chapters/appendix/``, which reads
  every part's results, imports the book machinery and the ledger only: no wing, no library.
* A module of a wing may import its own wing, the shared modules and the library, never another
  wing (absolute or relative imports, at module level or inside a function).
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
REPRO = ROOT / "qlib" / "repro"
CHAPTERS = ROOT / "chapters"
WINGS = sorted(p.name for p in REPRO.iterdir() if p.is_dir() and (p / "__init__.py").is_file())
#: the parts of the book that hold no paper's chapters: what their notebooks may import from qlib
READERS = {"appendix": ("qlib.book", "qlib.repro.ledger")}


def _imports(tree: ast.AST, package: str | None = None) -> list[tuple[int, str]]:
    """(line, dotted name) of every module an import binds or reads from, names imported from a
    package included (``from qlib.repro import eden`` gives ``qlib.repro.eden``); relative imports
    resolved against ``package``."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = (package or "").split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            out.append((node.lineno, base))
            out += [(node.lineno, f"{base}.{a.name}") for a in node.names if a.name != "*"]
    return out


def _wing_of(name: str) -> str | None:
    """The wing a dotted name lies in (``qlib.repro.eden.federated`` → ``eden``), or None."""
    parts = name.split(".")
    if parts[:2] == ["qlib", "repro"] and len(parts) > 2 and parts[2] in WINGS:
        return parts[2]
    return None


def _code(nb: Path) -> str:
    """The code cells of a notebook, IPython magics and shell lines blanked (line numbers kept)."""
    cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
    src = []
    for c in cells:
        if c["cell_type"] == "code":
            text = "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
            src.append("\n".join("" if ln.lstrip().startswith(("%", "!")) else ln for ln in text.splitlines()))
    return "\n".join(src)


def notebook_violations(nb: Path, part: str) -> list[str]:
    """Why the notebook ``nb`` of ``chapters/<part>/`` breaks the rule (empty when it does not)."""
    own = part.replace("-", "_")
    out, seen = [], set()
    for line, name in _imports(ast.parse(_code(nb))):
        if not (name == "qlib" or name.startswith("qlib.")):
            continue
        if part in READERS:
            if name not in ("qlib", "qlib.repro") and not any(name == a or name.startswith(a + ".")
                                                              for a in READERS[part]) and line not in seen:
                seen.add(line)  # one report per import statement
                out.append(f"{nb.relative_to(nb.parents[2])}:{line}: imports {name} "
                           f"(the {part} part reads results: {', '.join(READERS[part])} only)")
            continue
        wing = _wing_of(name)
        if wing is not None and wing != own and (line, wing) not in seen:  # one report per import statement
            seen.add((line, wing))
            out.append(f"{nb.relative_to(nb.parents[2])}:{line}: imports {name}, of the wing {wing} "
                       f"(a chapter of {part} imports qlib.repro.{own} and the library only)")
    return out


def module_violations(path: Path) -> list[str]:
    """Why the wing module at ``path`` imports another wing (empty when it does not)."""
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    package = ".".join(parts[:-1] if parts[-1] != "__init__" else parts[:-1])
    own = parts[2]
    out, seen = [], set()
    for line, name in _imports(ast.parse(path.read_text(encoding="utf-8")), package):
        wing = _wing_of(name)
        if wing is not None and wing != own and (line, wing) not in seen:
            seen.add((line, wing))
            out.append(f"{rel}.py:{line}: imports {name}, of the wing {wing}")
    return out


def _parts() -> list[str]:
    return sorted(p.name for p in CHAPTERS.iterdir() if p.is_dir() and any(p.glob("[0-9]*.ipynb")))


def test_every_part_with_chapters_has_its_wing_or_reads_results():
    for part in _parts():
        assert part in READERS or part.replace("-", "_") in WINGS, (
            f"chapters/{part} has notebooks but no wing qlib/repro/{part.replace('-', '_')}/")


@pytest.mark.parametrize("part", _parts())
def test_a_chapter_imports_only_its_own_wing_and_the_library(part):
    bad = [v for nb in sorted((CHAPTERS / part).glob("[0-9]*.ipynb")) for v in notebook_violations(nb, part)]
    assert not bad, "\n".join(bad)


def test_a_wing_never_imports_another_wing():
    bad = [v for wing in WINGS for p in sorted((REPRO / wing).rglob("*.py")) for v in module_violations(p)]
    assert not bad, "\n".join(bad)


def test_the_checker_sees_each_kind_of_import(tmp_path):
    def nb(path, *sources):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"cells": [{"cell_type": "code", "source": s, "metadata": {}, "outputs": []}
                                              for s in sources]}))
        return path

    other = next(w for w in WINGS if w != "eden")
    root = tmp_path / "chapters"
    ok = nb(root / "eden" / "01-x.ipynb", "%matplotlib inline\nfrom qlib.repro.eden import federated, paper\n"
            "from qlib.repro import ledger\nimport qlib.repro.eden.sweeps as sw\nfrom qlib import eden_theory\n"
            "from qlib.book import chapter")
    assert notebook_violations(ok, "eden") == []
    for src in (f"from qlib.repro.{other} import paper", f"from qlib.repro import {other}",
                f"import qlib.repro.{other}.paper", f"def f():\n    from qlib.repro.{other}.paper import X"):
        assert len(notebook_violations(nb(root / "eden" / "02-y.ipynb", "x = 1", src), "eden")) == 1, src
    app = root / "appendix" / "01-z.ipynb"
    assert notebook_violations(nb(app, "from qlib.book import chapter, compare\nfrom qlib.repro import ledger"),
                               "appendix") == []
    assert len(notebook_violations(nb(app, "from qlib.repro.eden import paper"), "appendix")) == 1
    assert len(notebook_violations(nb(app, "from qlib import eden"), "appendix")) == 1
    mod = ast.parse(f"from ..{other} import paper\nfrom . import paper\nfrom ..ledger import Row")
    assert [n for _, n in _imports(mod, "qlib.repro.eden") if _wing_of(n) == other] == [
        f"qlib.repro.{other}", f"qlib.repro.{other}.paper"]
