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
* **One claims module per chapter.** A wing declares in its ``__init__.py`` a literal
  ``CLAIMS = {"<NN-topic>": ("<module>", ...), ...}``: for each notebook of its part (by file name), the
  module(s) of the wing holding that chapter's claims. Every notebook has an entry and every entry a
  notebook; each listed module exists, belongs to one chapter only, and is not named like a library
  module (a notebook imports both by their plain names); every module of the wing that defines a
  public ``*_rows`` function is listed (claims live in claims modules, not in drivers or ``paper``).
  A notebook imports at least one of its own claims modules and no other chapter's; the wing's other
  modules (``paper``, the drivers) are open to every chapter of the part. :data:`CLAIMS_PENDING`
  names the wings not yet split so, with the reason.
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
#: the wings whose chapters do not have one claims module each yet (issue 27), and why
CLAIMS_PENDING: dict[str, str] = {}
#: the library's top-level modules and packages (``qlib/<name>.py``, ``qlib/<name>/``), public ones
LIBRARY = sorted({p.stem for p in (ROOT / "qlib").glob("[!_]*.py")}
                 | {p.name for p in (ROOT / "qlib").iterdir() if p.is_dir() and (p / "__init__.py").is_file()
                    and not p.name.startswith("_") and p.name not in ("book", "repro")})


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


def declared_claims(init: Path) -> dict | None:
    """The ``CLAIMS`` mapping a wing's ``__init__.py`` declares (a literal, read with :mod:`ast`), or
    None where it declares none."""
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == "CLAIMS" for t in targets):
            return ast.literal_eval(node.value)
    return None


def _rows_functions(path: Path) -> list[str]:
    """The public top-level functions named ``*_rows`` that the module at ``path`` defines."""
    return [n.name for n in ast.parse(path.read_text(encoding="utf-8")).body
            if isinstance(n, ast.FunctionDef) and n.name.endswith("_rows") and not n.name.startswith("_")]


def claims_violations(wing_dir: Path, part_dir: Path, library=LIBRARY) -> list[str]:
    """Why the ``CLAIMS`` of the wing at ``wing_dir`` (serving the part at ``part_dir``) breaks the plan
    of one claims module per chapter (empty when it does not)."""
    wing = wing_dir.name
    claims = declared_claims(wing_dir / "__init__.py")
    if claims is None:
        return [f"qlib/repro/{wing}/__init__.py declares no CLAIMS (each chapter → its claims modules)"]
    if not isinstance(claims, dict):
        return [f"qlib/repro/{wing}: CLAIMS must be a dict of chapter → tuple of module names"]
    out = []
    chapters = sorted(nb.stem for nb in part_dir.glob("[0-9]*.ipynb"))
    out += [f"qlib/repro/{wing}: chapter {c} has no entry in CLAIMS" for c in chapters if c not in claims]
    out += [f"qlib/repro/{wing}: CLAIMS names {c!r}, which is no notebook of chapters/{part_dir.name}"
            for c in claims if c not in chapters]
    owner: dict[str, str] = {}
    for chapter, mods in claims.items():
        if not isinstance(mods, tuple) or not mods or not all(isinstance(m, str) for m in mods):
            out.append(f"qlib/repro/{wing}: CLAIMS[{chapter!r}] must be a non-empty tuple of module names")
            continue
        for m in mods:
            if not (wing_dir / f"{m}.py").is_file():
                out.append(f"qlib/repro/{wing}: CLAIMS[{chapter!r}] names {m}, which is no module of the wing")
            if m in owner:
                out.append(f"qlib/repro/{wing}: {m} is the claims module of both {owner[m]} and {chapter}")
            owner.setdefault(m, chapter)
            if m in library:
                out.append(f"qlib/repro/{wing}: the claims module {m} has the name of the library module qlib.{m}")
    for path in sorted(wing_dir.glob("*.py")):
        fns = _rows_functions(path)
        if fns and path.stem not in owner:
            out.append(f"qlib/repro/{wing}/{path.name} defines {', '.join(fns)} but is no chapter's claims "
                       "module (CLAIMS)")
    return out


def chapter_claims_violations(nb: Path, part: str, claims: dict) -> list[str]:
    """Why the notebook ``nb`` of ``chapters/<part>/`` does not import its own claims module(s), or imports
    another chapter's (``claims``: its wing's ``CLAIMS``; empty when it does neither)."""
    own = part.replace("-", "_")
    mine = set(claims.get(nb.stem, ()))
    others = {m: c for c, mods in claims.items() if c != nb.stem for m in mods}
    rel = nb.relative_to(nb.parents[2])
    out, used = [], set()
    for line, name in _imports(ast.parse(_code(nb))):
        parts = name.split(".")
        if parts[:3] != ["qlib", "repro", own] or len(parts) < 4:
            continue
        if parts[3] in mine:
            used.add(parts[3])
        elif parts[3] in others and len(parts) == 4:
            out.append(f"{rel}:{line}: imports qlib.repro.{own}.{parts[3]}, the claims of {others[parts[3]]}")
    if not used:
        out.append(f"{rel}: imports none of its claims modules ({', '.join(sorted(mine)) or 'none declared'})")
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


def _split_wings() -> list[str]:
    return [w for w in WINGS if w not in CLAIMS_PENDING]


@pytest.mark.parametrize("wing", _split_wings())
def test_a_wing_declares_one_claims_module_set_per_chapter(wing):
    bad = claims_violations(REPRO / wing, CHAPTERS / wing.replace("_", "-"))
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("wing", _split_wings())
def test_a_chapter_imports_its_own_claims_and_no_other_chapters(wing):
    part = wing.replace("_", "-")
    claims = declared_claims(REPRO / wing / "__init__.py") or {}
    bad = [v for nb in sorted((CHAPTERS / part).glob("[0-9]*.ipynb")) for v in chapter_claims_violations(nb, part, claims)]
    assert not bad, "\n".join(bad)


def test_claims_pending_lists_only_wings_not_yet_split():
    assert set(CLAIMS_PENDING) <= set(WINGS), set(CLAIMS_PENDING) - set(WINGS)
    done = [w for w in CLAIMS_PENDING if not claims_violations(REPRO / w, CHAPTERS / w.replace("_", "-"))]
    assert not done, f"{done} now follow the plan: drop them from CLAIMS_PENDING"


def test_the_claims_checker_sees_each_breach(tmp_path):
    wing = tmp_path / "qlib" / "repro" / "w"
    part = tmp_path / "chapters" / "w"
    wing.mkdir(parents=True)
    part.mkdir(parents=True)
    for stem in ("01-a", "02-b"):
        (part / f"{stem}.ipynb").write_text("{}")
    (wing / "paper.py").write_text("X = 1\n")
    (wing / "drv.py").write_text("def run():\n    pass\n")
    (wing / "a_claims.py").write_text("def fig1_rows():\n    return []\n")
    (wing / "b_claims.py").write_text("def _helper_rows():\n    return []\n")

    def check(claims, library=()):
        (wing / "__init__.py").write_text(f"CLAIMS = {claims!r}\n")
        return claims_violations(wing, part, library)

    ok = {"01-a": ("a_claims",), "02-b": ("b_claims",)}
    assert check(ok) == []
    (wing / "__init__.py").write_text("")
    assert len(claims_violations(wing, part)) == 1                                    # none declared
    assert len(check({"01-a": ("a_claims",)})) == 1                                  # a chapter left out
    assert len(check({**ok, "03-c": ("drv",)})) == 1                                 # no such notebook
    assert len(check({"01-a": ("a_claims",), "02-b": ("a_claims",)})) == 1           # one module, two chapters
    assert len(check({"01-a": ("a_claims",), "02-b": ("nope",)})) == 1               # no such module
    assert len(check({"01-a": ("a_claims",), "02-b": ()})) == 1                      # empty entry
    assert len(check(ok, library=("b_claims",))) == 1                                # a library module's name
    (wing / "drv.py").write_text("def table_rows():\n    return []\n")
    assert len(check(ok)) == 1                                                        # claims in a driver
    root = tmp_path / "chapters"

    def nb(path, *sources):
        path.write_text(json.dumps({"cells": [{"cell_type": "code", "source": s, "metadata": {}, "outputs": []}
                                              for s in sources]}))
        return path

    claims = {"01-a": ("a_claims",), "02-b": ("b_claims", "b_facts")}
    good = nb(root / "w" / "02-b.ipynb", "from qlib.repro.w import b_claims, drv, paper\nfrom qlib import eden")
    assert chapter_claims_violations(good, "w", claims) == []
    assert chapter_claims_violations(nb(root / "w" / "02-b.ipynb", "import qlib.repro.w.b_facts"), "w", claims) == []
    for src in ("from qlib.repro.w import a_claims, b_claims", "from qlib.repro.w.a_claims import fig1_rows\n"
                "from qlib.repro.w import b_claims", "from qlib.repro.w import drv, paper"):
        assert len(chapter_claims_violations(nb(root / "w" / "02-b.ipynb", src), "w", claims)) == 1, src


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
