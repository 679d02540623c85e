"""CONTRIBUTING's layers and sizes, computed from the source with :mod:`ast` (nothing is imported or run).

* **Layers** — book → reproduction → library. A *library* module is ``qlib/*.py`` or a module of
  ``qlib/mia``, ``qlib/attacks``, ``qlib/compressors``, ``qlib/_kernels``, ``qlib/plotting``; it never imports
  ``qlib.repro`` or ``qlib.book``, and ``qlib.repro`` never imports ``qlib.book``. No import circle among the
  modules of ``qlib``. Every import counts: at module level, inside a function, under ``if TYPE_CHECKING``.
  An edge goes to the module an import names (``from qlib.repro.eden import paper`` → ``qlib.repro.eden.paper``;
  ``from qlib.engine import train`` → ``qlib.engine``), not to the packages above it.
* **Imports inside functions** — none in ``qlib``, except one that defers a heavy or optional dependency and
  says so: a comment holding the word ``deferred`` (and why) on its line, or on the line above it (or above the
  block of imports it opens).
* **Sizes** — no file of ``qlib/book/``, ``qlib/compressors/`` or the codecs' kernels over
  :data:`MAX_WING_LINES` lines; no library module over :data:`MAX_LIBRARY_LINES`.
* **Keyword catch-alls** — at most :data:`MAX_KWARGS` public callables take ``**kwargs``, each in
  :data:`KWARGS` with the reason (a settings rule driver takes explicit keyword parameters or its record).
* **One atomic write** — ``os.replace`` appears in at most :data:`MAX_OS_REPLACE_FILES` files of ``qlib``.

Each rule's checker is tested on synthetic source, so that each can be seen to fail.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "qlib"

LIBRARY_PACKAGES = ("qlib.mia", "qlib.attacks", "qlib.compressors", "qlib._kernels", "qlib.plotting")
MAX_WING_LINES = 450
MAX_LIBRARY_LINES = 600
MAX_KWARGS = 10
MAX_OS_REPLACE_FILES = 2

#: the public callables that keep ``**kwargs``, and why (each a pass-through or a mapping of names the caller
#: chooses; no settings driver is among them)
KWARGS = {
    "qlib.validation.check_same_length": "the keywords are the caller's own names for its arrays (check_same_length("
                                         "X=X, y=y) names them in the error); there is no fixed set to list",
}


# ---------------------------------------------------------------------------------------------- reading the source
def module_names(pkg: Path = PKG) -> dict[str, Path]:
    """Dotted name → path of every module of the package at ``pkg`` (a package is its ``__init__``)."""
    out = {}
    for path in sorted(pkg.rglob("*.py")):
        parts = list(path.relative_to(pkg.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _package(mod: str, path: Path) -> str:
    return mod if path.name == "__init__.py" else mod.rpartition(".")[0]


def imports(mod: str, path: Path, tree: ast.Module, known: set[str]) -> list[tuple[int, str]]:
    """(line, module of ``known``) of every import in ``tree`` (anywhere in it): the module an import names, a
    name imported from a package resolved to its submodule where it is one."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name in known]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = _package(mod, path).split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            for a in node.names:
                if f"{base}.{a.name}" in known:
                    out.append((node.lineno, f"{base}.{a.name}"))
                elif base in known:
                    out.append((node.lineno, base))
    return out


def import_graph(modules: dict[str, Path]) -> dict[str, dict[str, int]]:
    """Module → {imported module: first line} over the modules given."""
    known = set(modules)
    graph: dict[str, dict[str, int]] = {}
    for mod, path in modules.items():
        edges: dict[str, int] = {}
        for line, target in imports(mod, path, ast.parse(path.read_text(encoding="utf-8")), known):
            if target != mod:
                edges.setdefault(target, line)
        graph[mod] = edges
    return graph


def circles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v):
        work = [(v, iter(sorted(graph.get(v, {}))))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        while work:
            node, it = work[-1]
            for w in it:
                if w not in graph:
                    continue
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, {})))))
                    break
                if w in on:
                    low[node] = min(low[node], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == node:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def layer(mod: str) -> int:
    """0 the library, 1 the reproduction (``qlib.repro``), 2 the book (``qlib.book``)."""
    if mod == "qlib.book" or mod.startswith("qlib.book."):
        return 2
    if mod == "qlib.repro" or mod.startswith("qlib.repro."):
        return 1
    return 0


def is_library(mod: str) -> bool:
    """``qlib/*.py`` (``qlib`` itself included) or a module of a library package."""
    return mod.count(".") <= 1 and layer(mod) == 0 or any(mod == p or mod.startswith(p + ".") for p in LIBRARY_PACKAGES)


def arrows_up(graph: dict[str, dict[str, int]]) -> list[str]:
    """Every import from a lower layer into a higher one."""
    return [f"{m}:{line}: imports {t} ({'the book' if layer(t) == 2 else 'the reproduction'}, a layer above)"
            for m, edges in sorted(graph.items()) for t, line in sorted(edges.items()) if layer(t) > layer(m)]


def undeclared_inner_imports(path: Path, text: str | None = None) -> list[str]:
    """The imports inside a function of the module at ``path`` without a ``deferred`` comment (module docstring)."""
    text = path.read_text(encoding="utf-8") if text is None else text
    lines = text.splitlines()
    tree = ast.parse(text)
    import_lines = {n.lineno for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))}

    def said(line: int) -> bool:
        if "deferred" in _comment(lines[line - 1]).lower():
            return True
        above = line - 1
        while above in import_lines:          # the first of a block of imports carries it for the block
            if "deferred" in _comment(lines[above - 1]).lower():
                return True
            above -= 1
        return above >= 1 and lines[above - 1].lstrip().startswith("#") and \
            "deferred" in lines[above - 1].lower()

    where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    inner = {n.lineno for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
             for n in ast.walk(f) if isinstance(n, (ast.Import, ast.ImportFrom))}
    return [f"{where}:{line}: {lines[line - 1].strip()}" for line in sorted(inner) if not said(line)]


def _comment(line: str) -> str:
    """The comment of a source line (what follows a ``#`` outside a string), or ''."""
    try:
        import io
        import tokenize

        for tok in tokenize.generate_tokens(io.StringIO(line + "\n").readline):
            if tok.type == tokenize.COMMENT:
                return tok.string
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return line[line.index("#"):] if "#" in line else ""
    return ""


def line_count(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


#: the codecs' kernels (their encoders, and their decoders fused with the error), bound as the codecs are
CODEC_KERNELS = ("qlib._kernels.compressors", "qlib._kernels.compressor_errors")


def oversized(modules: dict[str, Path], root: Path = ROOT) -> list[str]:
    """The files over their bound: a module of ``qlib.book`` or ``qlib.compressors`` or the codecs' kernels over
    MAX_WING_LINES, another library module over MAX_LIBRARY_LINES."""
    out = []
    for mod, path in sorted(modules.items()):
        n = line_count(path)
        wing = mod.startswith(("qlib.book", "qlib.compressors")) or mod in CODEC_KERNELS
        if wing and n > MAX_WING_LINES:
            out.append(f"{path.relative_to(root)}: {n} lines (over {MAX_WING_LINES})")
        elif not wing and is_library(mod) and n > MAX_LIBRARY_LINES:
            out.append(f"{path.relative_to(root)}: {n} lines (over {MAX_LIBRARY_LINES})")
    return out


def kwargs_callables(trees: dict[str, ast.Module]) -> list[str]:
    """The public functions and methods (``__init__`` included) of public modules that take ``**kwargs``."""
    out = []

    def walk(node, prefix):
        for n in ast.iter_child_nodes(node):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and (not n.name.startswith("_")
                                                                          or n.name == "__init__"):
                if n.args.kwarg is not None:
                    out.append(f"{prefix}.{n.name}")
            elif isinstance(n, ast.ClassDef) and not n.name.startswith("_"):
                walk(n, f"{prefix}.{n.name}")

    for mod, tree in trees.items():
        if not any(p.startswith("_") for p in mod.split(".")):
            walk(tree, mod)
    return sorted(out)


def os_replace_sites(tree: ast.Module) -> list[int]:
    """The lines of ``os.replace`` (an attribute of a name bound to ``os``) and ``from os import replace``."""
    os_names = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.Import)
                for a in n.names if a.name == "os"}
    out = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "replace"
           and isinstance(n.value, ast.Name) and n.value.id in os_names]
    out += [n.lineno for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module == "os"
            and any(a.name == "replace" for a in n.names)]
    return sorted(out)


MODULES = module_names()
GRAPH = import_graph(MODULES)
TREES = {m: ast.parse(p.read_text(encoding="utf-8")) for m, p in MODULES.items()}


# ---------------------------------------------------------------------------------------------- the rules
def test_no_import_circle_among_the_modules_of_qlib():
    found = circles(GRAPH)
    assert not found, "import circles (a module reaches itself through its imports):\n" + "\n".join(
        "  " + " ↔ ".join(c) for c in found)


def test_no_arrow_back_up():
    bad = arrows_up(GRAPH)
    assert not bad, "book → reproduction → library: a lower layer imports a higher one:\n  " + "\n  ".join(bad)


def test_no_import_inside_a_function_unless_a_deferred_dependency_says_so():
    bad = [v for path in MODULES.values() for v in undeclared_inner_imports(path)]
    assert not bad, ("imports inside functions without a comment saying why they are deferred (move them to "
                     "the top, or say `# deferred: <why>`):\n  " + "\n  ".join(bad))


def test_no_file_over_its_bound():
    bad = oversized(MODULES)
    assert not bad, "files over their line bound (one idea per file):\n  " + "\n  ".join(bad)


def test_at_most_ten_public_callables_take_kwargs_each_with_its_reason():
    found = kwargs_callables(TREES)
    assert len(KWARGS) <= MAX_KWARGS
    unlisted = sorted(set(found) - set(KWARGS))
    assert not unlisted, ("public callables taking **kwargs (the settings rule: explicit keyword parameters or a "
                          f"settings record): {unlisted}")
    stale = sorted(set(KWARGS) - set(found))
    assert not stale, f"KWARGS entries that no longer take **kwargs (remove them): {stale}"


def test_os_replace_in_at_most_two_files():
    files = sorted(str(MODULES[m].relative_to(ROOT)) for m, t in TREES.items() if os_replace_sites(t))
    assert len(files) <= MAX_OS_REPLACE_FILES, (f"os.replace in {len(files)} files (the atomic write is "
                                                f"qlib.atomic's; at most {MAX_OS_REPLACE_FILES}): {files}")


# ---------------------------------------------------------------------------------------------- the checkers fail
def _package_at(tmp_path: Path, files: dict[str, str]) -> dict[str, Path]:
    for rel, text in files.items():
        p = tmp_path / "qlib" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return module_names(tmp_path / "qlib")


def test_the_graph_checkers_see_circles_and_arrows_up(tmp_path):
    mods = _package_at(tmp_path, {
        "__init__.py": "", "a.py": "from . import b\n", "b.py": "def f():\n    from qlib import a\n",
        "c.py": "import qlib.d\n", "d.py": "x = 1\n",
        "repro/__init__.py": "", "repro/w/__init__.py": "from . import p\n", "repro/w/p.py": "from qlib.repro.w import q\n",
        "repro/w/q.py": "from qlib.engine import train\n",
        "book/__init__.py": "", "book/x.py": "from qlib.repro.w import p\n",
        "mia/__init__.py": "", "mia/g.py": "from ..book import x\n", "e.py": "from .repro.w.p import thing\n",
        "repro/w/r.py": "from qlib.book.x import y\n"})
    graph = import_graph(mods)
    assert circles(graph) == [["qlib.a", "qlib.b"]]        # a function's import counts; packages add no edge
    up = arrows_up(graph)
    assert len(up) == 3 and {u.split(":")[0] for u in up} == {"qlib.mia.g", "qlib.e", "qlib.repro.w.r"}
    assert is_library("qlib.e") and is_library("qlib.mia.g") and is_library("qlib.plotting.style")
    assert not is_library("qlib.repro.w.p") and not is_library("qlib.book.x")


def test_the_inner_import_checker_wants_a_deferred_comment(tmp_path):
    p = tmp_path / "m.py"
    src = ("import os\n"
           "def f():\n"
           "    import json\n"                                         # 3: bare
           "    import scipy  # deferred: seconds to import\n"          # 4: said on its line
           "    # deferred: the book extra\n"
           "    import dask\n"                                          # 6: said above
           "    from distributed import Client\n"                       # 7: the block's comment
           "    x = 1\n"
           "    import numba  # imported here\n"                        # 9: a comment that says nothing
           "    s = '# deferred'; import yaml\n")                       # 10: a string is no comment
    p.write_text(src)
    bad = undeclared_inner_imports(p)
    assert [int(b.split(":")[1]) for b in bad] == [3, 9, 10]


def test_the_size_checker_sees_each_bound(tmp_path):
    mods = _package_at(tmp_path, {"__init__.py": "", "big.py": "x = 1\n" * 601, "ok.py": "x = 1\n" * 600,
                                  "book/__init__.py": "", "book/w.py": "x = 1\n" * 451,
                                  "compressors/__init__.py": "x = 1\n" * 450, "_kernels/__init__.py": "",
                                  "_kernels/compressors.py": "x = 1\n" * 451, "repro/__init__.py": "",
                                  "repro/long.py": "x = 1\n" * 900})
    bad = oversized(mods, tmp_path)
    assert sorted(b.split(":")[0] for b in bad) == ["qlib/_kernels/compressors.py", "qlib/big.py", "qlib/book/w.py"]


def test_the_kwargs_and_os_replace_checkers_see_each_site():
    trees = {"qlib.m": ast.parse("def f(x, **kw): pass\ndef g(x, *, y=1): pass\ndef _h(**kw): pass\n"
                                 "class C:\n    def __init__(self, **kw): pass\n    def _p(self, **kw): pass\n"
                                 "class _D:\n    def m(self, **kw): pass\n"),
             "qlib._private": ast.parse("def f(**kw): pass\n")}
    assert kwargs_callables(trees) == ["qlib.m.C.__init__", "qlib.m.f"]
    assert os_replace_sites(ast.parse("import os\nos.replace('a', 'b')\n")) == [2]
    assert os_replace_sites(ast.parse("import os as _os\n_os.replace('a', 'b')\n")) == [2]
    assert os_replace_sites(ast.parse("from os import replace\nreplace('a', 'b')\n")) == [1]
    assert os_replace_sites(ast.parse("import os\n'a'.replace('a', 'b')\nos.rename('a', 'b')\n")) == []
