"""A public function of ``qlib`` takes at most 8 parameters, unless it is a maths solver that says why.

Every public module of ``qlib`` (``qlib/**/*.py`` outside private packages and modules) is parsed with
:mod:`ast` (nothing is imported). A function's parameters are its positional and keyword-only ones and
``*args`` (``self``/``cls`` of a method are not counted); a ``**kwargs`` catch-all is not counted here:
``tests/test_architecture_layers.py`` bounds and lists those (the settings rule, CONTRIBUTING: a driver
takes explicit keyword parameters within this bound, else one settings record, ``tests/test_config_rule.py``).
A public function or method with more than ``MAX_PARAMETERS`` must be
in ``SOLVERS`` — a formula or root of a paper's equation whose symbols are its arguments, one keyword
each, so that a call reads against the equation — and its docstring must say why it takes no settings
record (the words "settings record").
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "qlib"
MAX_PARAMETERS = 8

#: the public functions allowed more than MAX_PARAMETERS parameters: maths solvers of paper 004
SOLVERS = {
    "qlib.rqp_privacy.solve_sigma", "qlib.rqp_privacy.solve_q", "qlib.rqp_privacy.eps_total",
    "qlib.rqp.utility_bound", "qlib.rqp.coordinate_privacy_loss", "qlib.rqp.coordinate_privacy_loss_upper",
    "qlib.repro.rqp_sgd.theory.reference_coordinate_loss",
}


def _public_modules():
    for path in sorted(PKG.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if any(p.startswith("_") and p != "__init__" for p in parts):
            continue
        yield ".".join(p for p in parts if p != "__init__"), ast.parse(path.read_text(), str(path))


def _count(fn: ast.FunctionDef, method: bool) -> int:
    a = fn.args
    names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
    if method and names and names[0] in ("self", "cls"):
        names = names[1:]
    return len(names) + (a.vararg is not None)


def wide_functions(modules) -> dict[str, tuple[int, str]]:
    """Qualified name -> (parameters, docstring) of every public function or method over the bound."""
    out = {}

    def walk(node, prefix, method):
        for n in ast.iter_child_nodes(node):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and (not n.name.startswith("_")
                                                                          or n.name == "__init__"):
                k = _count(n, method)
                if k > MAX_PARAMETERS:
                    out[f"{prefix}.{n.name}"] = (k, ast.get_docstring(n) or "")
            elif isinstance(n, ast.ClassDef) and not n.name.startswith("_"):
                walk(n, f"{prefix}.{n.name}", True)

    for name, tree in modules:
        walk(tree, name, False)
    return out


def test_only_maths_solvers_take_more_than_eight_parameters_and_they_say_why():
    wide = wide_functions(_public_modules())
    assert not set(wide) - SOLVERS, f"public functions over {MAX_PARAMETERS} parameters that are not solvers: " + \
        ", ".join(f"{q} ({wide[q][0]})" for q in sorted(set(wide) - SOLVERS))
    silent = [q for q in SOLVERS & set(wide) if "settings record" not in " ".join(wide[q][1].split())]
    assert not silent, f"solvers whose docstring does not say why they take no settings record: {silent}"
    assert not SOLVERS - set(wide), f"stale SOLVERS entries (now within the bound): {sorted(SOLVERS - set(wide))}"


def test_the_counter_counts_what_the_rule_says():
    src = ("def f(a, b, /, c, *args, d, e, f, g, h, **overrides): pass\n"
           "class C:\n    def m(self, a, b, c, d, e, f, g, h, i): pass\n    def _p(self, a, b, c, d, e, f, g, h, i): pass\n"
           "def _g(a, b, c, d, e, f, g, h, i): pass\n"
           "def ok(a, b, c, d, e, f, g, h, **kw): pass\n")
    wide = wide_functions([("m", ast.parse(src))])
    assert {q: k for q, (k, _) in wide.items()} == {"m.f": 9, "m.C.m": 9}
