"""The one stamp of "the inputs of this run changed": what a run's numbers depend on, and a hash of it.

A run is some code (the source of a notebook's code cells, or any Python text), the parameters it was
given and the data it reads. Its **inputs stamp** (:func:`inputs_stamp`) holds

* ``notebook``: the hash of that code; ``parameters_cell``: of the text that declares the parameters;
* ``params``: the parameters that shape the numbers (the caller leaves out those that cannot, such as
  thread counts); a value that is not plain data (a computed one) reads ``<expression>``;
* ``modules``: every ``qlib`` module the code reaches, each with the hash of its file — found by reading
  the ``import`` statements of the code, then of each module they reach, transitively (parent packages
  included), and the compiled kernels a reached module loads by name (``qlib._kernels.OWNERS``);
  modules that draw and record but compute no number are left out (:data:`NOT_STAMPED`);
* ``data``: the datasets the code reads (named in it or in the wing modules it reaches: ``tdc``,
  ``mnist``, ``a9a``), each with the hash of its folder's files;
* ``depends``: the same code hash for each run it reads the results of;
* ``hash``: one hash of all of it.

Three consumers take it, so that they agree on when a run's inputs changed: the batch runner skips a
notebook whose stamp (and page) are unchanged, the archive of long runs marks an entry stale when its
stamp differs from today's (and names what differs, :func:`stamp_changes`), and the resumable units of
:mod:`qlib.resume` key a unit's result by it. A refactor of a module the code does not reach leaves the
stamp as it was; an edit of one it reaches changes it.

**Rules.** What a stamp covers is versioned (:data:`RULES`, recorded as ``rules`` from version 2): a
stamp is compared with one made by its own rules, so that covering more (version 2 follows the kernels
loaded by name) marks no earlier stamp stale by itself. Version 1 stamps carry no ``rules`` key.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
from pathlib import Path
from typing import Iterable

__all__ = ["RULES", "STAMP_VARIABLE", "NOT_STAMPED", "DATASETS", "imported_modules", "file_hash", "source_snapshot", "inputs_stamp",
           "stamp_changes", "library_stamp"]

#: the version of what a stamp covers: 1 the imports read from the code; 2 also the kernels loaded by name
RULES = 2
#: the environment variable that hands a notebook's kernel its stamp's hash (set by the batch runner, read
#: by :func:`qlib.resume.units_from_env`)
STAMP_VARIABLE = "QLIB_STAMP"
#: modules (and the packages below them) that draw and record but compute no number: the book machinery
#: and the findings (claims and causes are applied when rows are read, to archived rows as to fresh ones)
NOT_STAMPED = ("qlib.book", "qlib.repro.findings")
#: datasets a run reads, found by these words in its code and the wing modules it reaches
DATASETS = {"tdc": re.compile(r"\btdc\b", re.I), "mnist": re.compile(r"mnist", re.I),
            "a9a": re.compile(r"\ba9a\b", re.I)}
_PACKAGE = Path(__file__).resolve().parent  # the installed qlib


# ---------------------------------------------------------------------------------------------
# The modules a piece of code reaches
# ---------------------------------------------------------------------------------------------
def _python(src: str) -> str:
    """A cell's source with IPython's magics and shell lines blanked, so :mod:`ast` can read it."""
    return "\n".join("" if ln.lstrip().startswith(("%", "!")) else ln for ln in src.splitlines())


def _module_file(pkg: Path, name: str) -> Path | None:
    rel = Path(*name.split("."))
    for cand in (pkg.parent / rel.with_suffix(".py"), pkg.parent / rel / "__init__.py"):
        if cand.is_file():
            return cand
    return None


def _imports(tree: ast.AST, current: str | None, is_pkg: bool) -> set[str]:
    """Absolute module names an AST imports (``from a import b`` yields ``a`` and ``a.b``: the caller
    keeps those that are modules)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                if current is None:
                    continue
                parts = current.split(".")
                base = parts if is_pkg else parts[:-1]
                base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if mod:
                found.add(mod)
                found.update(f"{mod}.{a.name}" for a in node.names if a.name != "*")
    return found


def _unchanged_key(path: Path) -> tuple[str, int, int]:
    """(path, size, mtime): what the per-file caches below take as "the file is unchanged"."""
    st = Path(path).stat()
    return str(Path(path).resolve()), st.st_size, st.st_mtime_ns


_IMPORTS: dict[tuple, frozenset[str]] = {}  # (path, size, mtime, module) → its imports: parsed once per file


def _module_imports(path: Path, name: str) -> frozenset[str]:
    """What module ``name`` (the file ``path``) imports, parsed once while the file is unchanged: a check
    of the archive stamps every entry, and every stamp walks the same ``qlib`` modules."""
    key = (*_unchanged_key(path), name)
    if key not in _IMPORTS:
        _IMPORTS[key] = frozenset(_imports(ast.parse(path.read_text()), name, path.name == "__init__.py"))
    return _IMPORTS[key]


def _kernel_loads(pkg: Path) -> dict[str, list[str]]:
    """``{module: [kernel modules it loads by name]}`` from ``qlib._kernels.OWNERS`` (read as a literal)."""
    init = pkg / "_kernels" / "__init__.py"
    if not init.is_file():
        return {}
    for node in ast.parse(init.read_text()).body:
        target = node.target if isinstance(node, ast.AnnAssign) else (
            node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None)
        if isinstance(target, ast.Name) and target.id == "OWNERS" and node.value is not None:
            out: dict[str, list[str]] = {}
            for kernel, owners in ast.literal_eval(node.value).items():
                for owner in owners:
                    out.setdefault(owner.replace("qlib", pkg.name, 1), []).append(f"{pkg.name}._kernels.{kernel}")
            return out
    return {}


def _check_rules(rules) -> int:
    """``rules`` as a version of what a stamp covers (1 to :data:`RULES`): a ``TypeError``/``ValueError``
    naming it otherwise (a stamp made by unknown rules could never be compared)."""
    if isinstance(rules, bool) or not isinstance(rules, int):
        raise TypeError(f"rules must be an integer version from 1 to {RULES}, got {rules!r} ({type(rules).__name__})")
    if not 1 <= rules <= RULES:
        raise ValueError(f"rules must be a version from 1 to {RULES}, got {rules}")
    return rules


def _check_sources(name: str, sources) -> list[str]:
    """``sources`` as a list of code strings: one string is refused (iterating it would read one character
    per cell and find no import), as is any cell that is not a string."""
    if isinstance(sources, (str, bytes)) or not hasattr(sources, "__iter__"):
        raise TypeError(f"{name} must be a list of code strings (one per cell), got {type(sources).__name__}")
    out = list(sources)
    bad = [type(c).__name__ for c in out if not isinstance(c, str)]
    if bad:
        raise TypeError(f"{name} must be a list of code strings (one per cell), got a {bad[0]} among them")
    return out


def _check_stamp(name: str, value) -> dict:
    if not isinstance(value, dict):
        raise TypeError(f"{name} must be an inputs stamp (a dict, see inputs_stamp), got {type(value).__name__}")
    return value


def _file_path(name: str, value) -> Path:
    if not isinstance(value, (str, os.PathLike)) or (isinstance(value, str) and not value):
        raise TypeError(f"{name} must be a path (a non-empty string or an os.PathLike), got {value!r}")
    return Path(value)


def _package(pkg) -> Path:
    """The ``qlib`` package folder to read (``pkg``; default the installed one): a folder that is not there
    is refused, since no module would be found in it and the stamp would silently cover nothing."""
    if pkg is None:
        return _PACKAGE
    pkg = _file_path("pkg", pkg)
    if not (pkg / "__init__.py").is_file():
        raise ValueError(f"pkg must be a package folder (with an __init__.py), got {str(pkg)!r}")
    return pkg


def imported_modules(sources: Iterable[str], pkg: Path | None = None, *, rules: int = RULES) -> list[str]:
    """The ``qlib`` modules that code ``sources`` import, transitively, parent packages included, and
    (``rules`` ≥ 2) the kernel modules those load by name (``pkg``: the ``qlib`` package folder;
    default the installed one)."""
    sources = _check_sources("sources", sources)
    rules = _check_rules(rules)
    pkg = _package(pkg)

    def ours(m: str) -> bool:
        return m == pkg.name or m.startswith(pkg.name + ".")

    loads = _kernel_loads(pkg) if rules >= 2 else {}
    todo: list[str] = []
    for src in sources:
        try:
            tree = ast.parse(_python(src))
        except SyntaxError:
            continue
        todo += [m for m in _imports(tree, None, False) if ours(m)]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        f = _module_file(pkg, name)
        if f is None:
            continue
        seen.add(name)
        parts = name.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]  # importing a.b.c runs a and a.b
        todo += [m for m in _module_imports(f, name) if ours(m) and m not in seen]
        todo += loads.get(name, [])
    return sorted(seen)


def _not_stamped(module: str) -> bool:
    return any(module == m or module.startswith(m + ".") for m in NOT_STAMPED)


# ---------------------------------------------------------------------------------------------
# Hashes of files
# ---------------------------------------------------------------------------------------------
_HASHES: dict[tuple, str] = {}  # (path, size, mtime) → sha256: a check of many entries hashes each file once


def file_hash(path: str | os.PathLike) -> str:
    """The SHA-256 of a file, computed once while it is unchanged (same size and modification time)."""
    path = _file_path("path", path)
    try:
        key = _unchanged_key(path)
    except FileNotFoundError:
        raise ValueError(f"path must be an existing file, got {str(path)!r}") from None
    if key not in _HASHES:
        _HASHES[key] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    return _HASHES[key]


def _tree_hash(folder: Path) -> str | None:
    folder = Path(folder)
    if not folder.is_dir():
        return None
    h = hashlib.sha256()
    for f in sorted(p for p in folder.rglob("*") if p.is_file()):
        h.update(f.relative_to(folder).as_posix().encode() + b"\0")
        h.update(file_hash(f).encode())
    return h.hexdigest()


def source_snapshot(pkg: Path | None = None) -> dict[str, str]:
    """The hash of every ``qlib`` source file now (``{module: sha256}``): taken when a run starts, so that
    its stamps describe the code that ran even if the files change while it runs."""
    pkg = _package(pkg)
    out = {}
    for f in pkg.rglob("*.py"):
        if "__pycache__" in f.parts:
            continue
        rel = f.relative_to(pkg.parent).with_suffix("")
        name = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
        out[name] = file_hash(f)
    return out


def library_stamp(pkg: Path | None = None) -> str:
    """The stamp of code that names no run: one hash of every stamped module of the package (all of
    ``qlib`` but :data:`NOT_STAMPED`). What a resumable unit is keyed by outside the batch runner."""
    snap = source_snapshot(pkg)
    return hashlib.sha256(json.dumps({m: h for m, h in sorted(snap.items()) if not _not_stamped(m)}).encode()
                          ).hexdigest()


# ---------------------------------------------------------------------------------------------
# The stamp
# ---------------------------------------------------------------------------------------------
def _datasets(texts: Iterable[str], modules: Iterable[str]) -> list[str]:
    blob = "\n".join(texts)
    found = {k for k, rx in DATASETS.items() if rx.search(blob)}
    if "qlib.molecules" in modules:
        found.add("tdc")
    return sorted(found)


def _plain(v):
    return v if isinstance(v, (str, int, float, bool, list, tuple, dict, type(None))) else "<expression>"


def _code_hash(cells: list[str]) -> str:
    return hashlib.sha256("\0".join(cells).encode()).hexdigest()


def inputs_stamp(code: list[str], params: dict, *, parameters_cell: str = "", depends: dict[str, list[str]] | None = None,
                 data_dir: str | os.PathLike | None = None, pkg: Path | None = None,
                 snapshot: dict[str, str] | None = None, rules: int = RULES) -> dict:
    """The inputs stamp of a run (see the module docstring) whose code is the cells ``code``, whose
    parameters that shape the numbers are ``params``, declared by the text ``parameters_cell``, and
    which reads the results of the runs ``depends`` (``{name: their code cells}``). Module hashes come
    from ``snapshot`` where it has them (:func:`source_snapshot`), else from today's files of ``pkg``
    (default the installed package); datasets are hashed below ``data_dir`` (default
    ``$QLIB_DATA_DIR``; none: each dataset's hash is None). ``rules``: the version to stamp by."""
    code = _check_sources("code", code)
    if not isinstance(params, dict):
        raise TypeError(f"params must be a dict of the run's parameters, got {type(params).__name__}")
    if not isinstance(parameters_cell, str):
        raise TypeError(f"parameters_cell must be the text of the parameters cell, got {type(parameters_cell).__name__}")
    if depends is not None and not isinstance(depends, dict):
        raise TypeError(f"depends must be a dict {{name: code cells}} or None, got {type(depends).__name__}")
    depends = {n: _check_sources(f"depends[{n!r}]", cells) for n, cells in (depends or {}).items()}
    rules = _check_rules(rules)
    pkg = _package(pkg)
    texts = [*code, *(s for cells in depends.values() for s in cells)]
    mods = [m for m in imported_modules(texts, pkg, rules=rules) if not _not_stamped(m)]
    snap = snapshot or {}
    modules = {m: snap.get(m) or file_hash(_module_file(pkg, m)) for m in mods}
    wing_text = [_module_file(pkg, m).read_text() for m in mods
                 if ".repro." in m and not m.endswith((".paper", ".inventory", ".ledger"))]
    data = Path(data_dir or os.environ.get("QLIB_DATA_DIR") or "")
    datasets = {d: (_tree_hash(data / d) if str(data) else None) for d in _datasets(texts + wing_text, mods)}
    stamp = {"notebook": _code_hash(code),
             "parameters_cell": hashlib.sha256(parameters_cell.encode()).hexdigest(),
             "params": json.loads(json.dumps({k: _plain(v) for k, v in sorted(params.items())}, default=str)),
             "modules": modules, "data": datasets,
             "depends": {n: _code_hash(cells) for n, cells in depends.items()}}
    if rules >= 2:
        stamp["rules"] = rules
    stamp["hash"] = hashlib.sha256(json.dumps(stamp, sort_keys=True).encode()).hexdigest()
    return stamp


def stamp_changes(old: dict, new: dict) -> list[str]:
    """What differs between two inputs stamps, in words (empty: nothing the stamps cover changed)."""
    old, new = _check_stamp("old", old), _check_stamp("new", new)
    out = []
    if old.get("notebook") != new.get("notebook"):
        out.append("the notebook's code")
    if old.get("parameters_cell") != new.get("parameters_cell"):
        out.append("the notebook's parameters cell")
    om, nm = old.get("modules", {}), new.get("modules", {})
    changed = sorted(m for m in set(om) | set(nm) if om.get(m) != nm.get(m))
    if changed:
        out.append("modules " + ", ".join(f"`{m}`" for m in changed))
    op, np_ = old.get("params", {}), new.get("params", {})
    pch = sorted(k for k in set(op) | set(np_) if op.get(k) != np_.get(k))
    if pch:
        out.append("parameters " + ", ".join(f"`{k}` ({op.get(k, '—')!s} → {np_.get(k, '—')!s})" for k in pch))
    od, nd = old.get("data", {}), new.get("data", {})
    dch = sorted(k for k in set(od) | set(nd) if od.get(k) != nd.get(k) and nd.get(k) is not None)
    if dch:
        out.append("data " + ", ".join(dch))
    if old.get("depends") != new.get("depends"):
        out.append("the notebooks it depends on")
    return out
