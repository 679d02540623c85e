"""CONTRIBUTING's rule "a module never reaches into another's private names", checked on the source.

Every module of ``qlib`` (``qlib/**/*.py``) is parsed with :mod:`ast` (nothing is imported) and every
use of a *private name* of another module fails the test. A private name is one with a leading
underscore that is not a dunder (``_helper``, ``_KERNEL``; ``__version__`` is public). Exactly:

1. ``from X import _y`` (absolute or relative) and an attribute ``X._y`` where ``X`` is a name bound to
   a ``qlib`` module (``from . import hadamard as _h`` then ``_h._rht``; ``import qlib.x as y``;
   chains ``qlib.hadamard._rht``) are allowed only inside ``X`` itself.
2. A private *module* (a dotted path with a component ``_m``: ``qlib.repro.eden._args``) is private to
   the package that holds it: ``from P._m import name`` / ``from P import _m`` / ``import P._m`` is
   allowed in a module of ``P`` (or below), and its names without an underscore are its API there.
   In the top-level package ``qlib`` (one module per idea) the only private module is the kernel
   package ``qlib._kernels``, which every ``qlib`` module may import (its public names: ``load``,
   ``scratch``, ``rows``).
3. A kernel module ``qlib._kernels.<k>`` is imported (``from qlib._kernels import <k>``, ``import
   qlib._kernels.<k>``, or ``load("<k>")`` through ``qlib._kernels.load``) only by its owners,
   ``qlib._kernels.OWNERS[k]``, and by the other kernel modules.

A module's own private names, ``self._x`` / ``obj._x`` on objects that are not modules (a subclass's
hook such as ``Compressor._compress``), and the tests are outside the rule. The allow-list below
holds sites left for a reason stated beside each (none today): each entry must still
occur (a stale entry fails too), so that it is removed with its site.
"""

from __future__ import annotations

import ast
from pathlib import Path

import qlib._kernels

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "qlib"

#: (module, the private name it reaches, as "owner.name") -> why it is still there
ALLOWED: dict = {
    # none left: every site was fixed (entries would name a site and why it stays)
}


def _modules() -> dict[str, Path]:
    out = {}
    for p in sorted(PKG.rglob("*.py")):
        parts = list(p.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


MODULES = _modules()


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _package_of(mod: str) -> str:
    return mod if MODULES[mod].name == "__init__.py" else mod.rsplit(".", 1)[0]


def _resolve(mod: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = _package_of(mod).split(".")
    base = base[: len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _inside(mod: str, package: str) -> bool:
    return mod == package or mod.startswith(package + ".")


def _module_violation(mod: str, target: str) -> str | None:
    """Why ``mod`` may not import the ``qlib`` module ``target`` (rules 2 and 3), or None."""
    parts = target.split(".")
    for i, part in enumerate(parts):
        if _private(part):
            holder = ".".join(parts[:i])
            if holder == "qlib" and part != "_kernels":
                if not _inside(mod, target):
                    return f"imports the private module {target}"
            elif not _inside(mod, holder):
                return f"imports {target}, private to the package {holder}"
    if target.startswith("qlib._kernels.") and not _inside(mod, "qlib._kernels"):
        k = target.split(".")[2]
        if mod not in qlib._kernels.OWNERS.get(k, ()):
            return f"loads the kernel module {target}, whose owners are {qlib._kernels.OWNERS.get(k, ())}"
    return None


def violations(mod: str, path: Path) -> list[tuple[str, str, int, str]]:
    """(module, "owner.name", line, what) for every use of another module's private name in ``mod``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    modules: dict[str, str] = {}  # local name -> the qlib module it is bound to
    loaders: set[str] = set()  # local names bound to qlib._kernels.load

    def flag(target, line, what):
        out.append((mod, target, line, what))

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("qlib"):
                    why = _module_violation(mod, a.name)
                    if why:
                        flag(a.name, node.lineno, why)
                    modules[a.asname or a.name.split(".")[0]] = a.name if a.asname else "qlib"
        elif isinstance(node, ast.ImportFrom):
            src = _resolve(mod, node)
            if not src.startswith("qlib"):
                continue
            why = _module_violation(mod, src) if src in MODULES else None
            if why:
                flag(src, node.lineno, why)
            for a in node.names:
                full = f"{src}.{a.name}"
                if full in MODULES:  # a submodule
                    modules[a.asname or a.name] = full
                    why = _module_violation(mod, full)
                    if why:
                        flag(full, node.lineno, why)
                elif _private(a.name) and src != mod:
                    flag(full, node.lineno, f"imports {a.name} from {src}")
                elif src == "qlib._kernels" and a.name == "load":
                    loaders.add(a.asname or a.name)
    for node in ast.walk(tree):  # aliases of qlib._kernels.load at module level: _load = _kernels.load
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Attribute) and node.value.attr == "load":
            v = node.value.value
            if isinstance(v, ast.Name) and modules.get(v.id) == "qlib._kernels":
                loaders.update(t.id for t in node.targets if isinstance(t, ast.Name))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            chain, v = [node.attr], node.value
            while isinstance(v, ast.Attribute):
                chain.append(v.attr)
                v = v.value
            if not (isinstance(v, ast.Name) and v.id in modules):
                continue
            chain.reverse()
            owner = modules[v.id]
            for i, name in enumerate(chain):  # walk down submodules: qlib.hadamard._rht
                if f"{owner}.{name}" in MODULES and i < len(chain) - 1:
                    owner = f"{owner}.{name}"
                    continue
                if _private(name) and owner != mod:
                    flag(f"{owner}.{name}", node.lineno, f"reads {name} of {owner}")
                break
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            f = node.func
            is_load = (isinstance(f, ast.Name) and f.id in loaders) or (
                isinstance(f, ast.Attribute) and f.attr == "load" and isinstance(f.value, ast.Name)
                and modules.get(f.value.id) == "qlib._kernels")
            if is_load and isinstance(node.args[0].value, str):
                name = node.args[0].value
                target = name if "." in name else f"qlib._kernels.{name}"
                why = _module_violation(mod, target)
                if why:
                    flag(target, node.lineno, why)
    return out


def _all_violations():
    return [v for mod, path in MODULES.items() for v in violations(mod, path)]


def test_no_module_reaches_into_another_modules_private_names():
    found = _all_violations()
    bad = [v for v in found if (v[0], v[1]) not in ALLOWED]
    assert not bad, "private names used across modules (CONTRIBUTING: what two modules share is public in " \
                    "the module that owns the idea):\n" + "\n".join(f"  {m}:{line}: {what}" for m, _, line, what in bad)


def test_the_allow_list_has_no_stale_entries():
    found = {(v[0], v[1]) for v in _all_violations()}
    stale = sorted(set(ALLOWED) - found)
    assert not stale, f"allow-list entries whose site is gone (remove them): {stale}"


def test_the_checker_sees_each_kind_of_reach(tmp_path):
    """The checker itself: each form of the rule is caught, and the allowed forms are not."""
    cases = {
        "from .hadamard import _rht": True,
        "from . import hadamard as _h\nx = _h._rht": True,
        "import qlib.hadamard\nx = qlib.hadamard._KERNEL[0]": True,
        "from qlib import hadamard\nx = hadamard.__doc__": False,
        "from . import hadamard\nx = hadamard.rht": False,
        "from . import _kernels\nk = _kernels.load('wire')": True,  # qlib.eden does not own the wire kernels
        "from . import _kernels\n_load = _kernels.load\nk = _load('rotation')": False,  # it co-owns the rotation
        "from . import _kernels\n_load = _kernels.load\nk = _load('fwht')": True,  # qlib.hadamard's alone
        "from . import _kernels\n_load = _kernels.load\nk = _load('eden')": True,  # qlib.eden_quantizer's
        "from ._kernels import rotation": False,  # qlib.eden co-owns the rotation kernels
        "from ._kernels import fwht": True,
        "from ._kernels import lookup": True,  # loaded by kernel modules only
        "from ._kernels import wire": True,
        "from . import _engine_cpu": True,
        "from .repro.eden import _args": True,
        "from . import _kernels\nx = _kernels._LOADED": True,
        "x = self._compress": False,
    }
    for src, caught in cases.items():
        p = tmp_path / "m.py"
        p.write_text(src + "\n")
        MODULES["qlib.eden"], saved = p, MODULES["qlib.eden"]
        try:
            got = bool(violations("qlib.eden", p))
        finally:
            MODULES["qlib.eden"] = saved
        assert got == caught, (src, violations("qlib.eden", p))


def test_kernel_modules_are_in_the_kernel_package_and_have_owners():
    kernels = {m.split(".")[2] for m in MODULES if m.startswith("qlib._kernels.")}
    assert kernels == set(qlib._kernels.OWNERS), (kernels, set(qlib._kernels.OWNERS))
    for k, owners in qlib._kernels.OWNERS.items():
        assert all(o in MODULES for o in owners), (k, owners)
    assert not (PKG / "_fwht_cpu.py").exists() and not (PKG / "_eden_cpu.py").exists()
