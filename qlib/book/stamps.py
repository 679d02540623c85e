"""A notebook's inputs stamp (:func:`qlib.stamp.inputs_stamp`): its code cells, its parameters at a
profile and the notebooks it depends on, read from the book.

The code is the source of the notebook's code cells (the ``parameters`` cell and papermill's injected
one aside: the parameters are stamped as values, and the parameters cell's text on its own); the
parameters are the cell's defaults with the run's over them, all but those the runner sets itself
(:data:`qlib.book.profiles.COMMON`) and those that only change the speed (:data:`NOT_STAMPED_PARAMS`);
the dependencies are the notebooks named in its metadata (:func:`qlib.book.toc.dependencies`). The
runner's skip, the archive's staleness and the resumable units all take this stamp.

:func:`resolved_parameters` gives the values a parameters cell computes (``sigmas = [round(0.05 * k, 2)
for k in range(1, 33)]``, ``fig8_d = 2**20``) as values, for an archive entry's provenance; the stamp keeps
reading a computed value as ``<expression>`` (its text is stamped with the cell's). :func:`plain_params`
is the rule for the parameters an entry records: values that JSON writes as they are — never an object's
``repr`` (``<object object at 0x…>``, what a sentinel turned into by ``str`` becomes) — or a
``ValueError`` naming the parameter; :func:`object_reprs` finds such values in an entry already written.
"""

from __future__ import annotations

import ast
import json
import os
import re
from pathlib import Path
from typing import Any

from .. import stamp
from .profiles import COMMON, PROFILES, cell_parameters, read
from .toc import dependencies

__all__ = ["NOT_STAMPED_PARAMS", "code_cells", "parameters_cell", "resolved_parameters", "plain_params",
           "object_reprs", "stamped_params", "current_params", "notebook_stamp"]

#: parameters that never change a notebook's numbers (speed only), left out of the stamp
NOT_STAMPED_PARAMS = ("threads", "processes")


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def code_cells(nb_path: Path) -> list[str]:
    """The source of every code cell of a notebook but its parameters cells (declared and injected)."""
    nb = json.loads(Path(nb_path).read_text())
    out = []
    for c in nb.get("cells", []):
        if c.get("cell_type") != "code":
            continue
        tags = (c.get("metadata") or {}).get("tags") or []
        if "parameters" in tags or "injected-parameters" in tags:
            continue  # the parameters are stamped as values, not as text
        out.append(_source(c))
    return out


def parameters_cell(nb_path: Path) -> str:
    """The source of a notebook's cell tagged ``parameters`` (empty when it has none)."""
    nb = json.loads(Path(nb_path).read_text())
    for c in nb.get("cells", []):
        if "parameters" in ((c.get("metadata") or {}).get("tags") or []):
            return _source(c)
    return ""


#: what a computed parameter may call (pure functions of numbers and sequences)
_CALLS = {"range": range, "round": round, "int": int, "float": float, "abs": abs, "min": min, "max": max,
          "len": len, "sum": sum, "list": list, "tuple": tuple, "sorted": sorted}
#: the syntax a computed parameter may use: arithmetic, comparisons, containers, comprehensions, those calls
_NODES = (ast.Expression, ast.Constant, ast.List, ast.Tuple, ast.Dict, ast.Set, ast.Name, ast.Load, ast.Store,
          ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.ListComp, ast.comprehension, ast.Call,
          ast.Subscript, ast.Slice, ast.operator, ast.unaryop, ast.boolop, ast.cmpop, ast.keyword)


class _NotPlain(ValueError):
    """An expression outside the plain arithmetic a computed parameter may use."""


def _evaluate(node: ast.expr, known: dict[str, Any]) -> Any:
    """The value of a parameter's expression: literals, arithmetic, comprehensions and :data:`_CALLS` over
    the parameters assigned before it; anything else raises :class:`_NotPlain`."""
    tree = ast.Expression(node)
    bound = {t.id for c in ast.walk(tree) if isinstance(c, ast.comprehension) for t in ast.walk(c.target)
             if isinstance(t, ast.Name)}
    for n in ast.walk(tree):
        if not isinstance(n, _NODES):
            raise _NotPlain(f"{type(n).__name__} is not allowed")
        if isinstance(n, ast.Call) and not (isinstance(n.func, ast.Name) and n.func.id in _CALLS):
            raise _NotPlain("only calls of " + ", ".join(_CALLS))
        if isinstance(n, ast.Name) and n.id not in bound and n.id not in known and n.id not in _CALLS:
            raise _NotPlain(f"{n.id!r} is not a parameter assigned before")
        if (isinstance(n, ast.BinOp) and isinstance(n.op, ast.Pow) and
                not (isinstance(n.right, ast.Constant) and isinstance(n.right.value, int) and n.right.value <= 256)):
            raise _NotPlain("a power must have a constant exponent <= 256")
    code = compile(ast.fix_missing_locations(tree), "<parameters>", "eval")
    # one namespace: a comprehension's scope sees the parameters assigned before (as the kernel's globals)
    return eval(code, {"__builtins__": {}, **_CALLS, **known})  # noqa: S307 - checked above: plain arithmetic


def resolved_parameters(nb_path: Path) -> dict[str, Any]:
    """The values a notebook's ``parameters`` cell assigns, in order: literals as written, and a computed
    value (a comprehension, ``2**20``) evaluated — from literals, arithmetic, comprehensions, the calls of
    :data:`_CALLS` and the parameters assigned before it — to the value the kernel computes. A value
    outside that (a call of anything else, an attribute) raises ``ValueError`` naming the parameter."""
    out: dict[str, Any] = {}
    for node in ast.parse(parameters_cell(nb_path)).body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [t.id for t in targets if isinstance(t, ast.Name)]
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                try:
                    value = _evaluate(node.value, out)
                except (_NotPlain, ArithmeticError, TypeError, NameError) as exc:
                    raise ValueError(f"{nb_path}: parameter {names[0] if names else '?'!r} is computed by "
                                     f"{ast.unparse(node.value)!r}, which cannot be recorded as a value ({exc})") from None
            for name in names:
                out[name] = value
    return out


#: the ``repr`` of an object that has no value to show (``<object object at 0x7f…>``, ``<Foo at 0x…>``)
_OBJECT_REPR = re.compile(r"<[^<>]*\bat 0x[0-9a-fA-F]+>")


def _reprs(value) -> bool:
    """Whether ``value`` (nested lists and mappings too) holds a string that is an object's ``repr``."""
    if isinstance(value, str):
        return bool(_OBJECT_REPR.search(value))
    if isinstance(value, dict):
        return any(_reprs(k) or _reprs(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(_reprs(v) for v in value)
    return False


def plain_params(params: dict) -> dict:
    """``params`` as JSON keeps them (tuples become lists), refused — ``ValueError`` naming the parameter —
    where a value is not JSON data (an object, a sentinel, a set) or is an object's ``repr`` (a string like
    ``<object object at 0x…>``): an entry's provenance records the values that ran, not a placeholder."""
    if not isinstance(params, dict):
        raise TypeError(f"params must be a dict, got {type(params).__name__}")
    out = {}
    for k, v in params.items():
        try:
            out[k] = json.loads(json.dumps(v))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"parameter {k!r} is {v!r}, not a value JSON can record ({exc}); "
                             "resolve it to the value that ran") from None
        if _reprs(v):
            raise ValueError(f"parameter {k!r} is {v!r}, an object's repr, not the value that ran; "
                             "resolve it to the value that ran")
    return out


def object_reprs(params) -> list[str]:
    """The names of the parameters an entry recorded as an object's ``repr`` instead of a value (sorted)."""
    return sorted(k for k, v in params.items() if _reprs(v)) if isinstance(params, dict) else []


def stamped_params(params: dict) -> dict:
    """The parameters that shape the numbers: ``params`` without :data:`COMMON` and
    :data:`NOT_STAMPED_PARAMS`."""
    return {k: v for k, v in params.items() if k not in COMMON and k not in NOT_STAMPED_PARAMS}


def current_params(root: Path, nb: str, profile: str) -> dict:
    """The parameters ``profile`` gives ``nb`` today (cell defaults with the profile's entry over them);
    a profile that is neither built in nor ``profiles/<name>.yml`` gives the cell's defaults."""
    params = dict(cell_parameters(Path(root) / "chapters" / nb))
    path = Path(root) / "profiles" / f"{profile}.yml"
    if profile in PROFILES or path.is_file():
        params.update(read(path).get(nb) or {})
    return params


def notebook_stamp(root: Path, nb: str, params: dict, *, data_dir: str | os.PathLike | None = None,
                   pkg: Path | None = None, snapshot: dict[str, str] | None = None, cells: dict | None = None,
                   rules: int = stamp.RULES) -> dict:
    """The inputs stamp of ``chapters/<nb>`` run with ``params`` (over its cell's defaults): see the
    module docstring and :func:`qlib.stamp.inputs_stamp` for ``data_dir``, ``pkg``, ``snapshot`` and
    ``rules``. ``cells``: ``{notebook: code cells}`` that replace those read from the files (the code of
    an executed notebook, which is the code that ran)."""
    root = Path(root)
    chapters = root / "chapters"
    deps = dependencies(root, nb)
    code = {**{n: code_cells(chapters / n) for n in (nb, *deps)}, **(cells or {})}
    return stamp.inputs_stamp(code[nb], stamped_params({**cell_parameters(chapters / nb), **params}),
                              parameters_cell=parameters_cell(chapters / nb), depends={n: code[n] for n in deps},
                              data_dir=data_dir, pkg=pkg, snapshot=snapshot, rules=rules)
