"""Parameter profiles: ``profiles/<name>.yml`` maps each notebook (path below ``chapters/``) to its
parameters for that profile. ``smoke`` is CI (whole book ≤ 5 min on 2 cores), ``default`` the book a
reader builds on a laptop CPU (≤ 30 min), ``paper`` the papers' own scale (hours, or a GPU).

Rules, checked by :func:`resolve` before any notebook starts (every error names the profile file, the
notebook and the parameter):

* a notebook's ``parameters`` cell holds its ``default`` values, so ``default.yml`` entries hold only
  what differs from the cell (nothing, today);
* every key of an entry is a parameter of the notebook's cell (a misspelling is an error with a
  did-you-mean suggestion), its value has the cell value's type (ints pass for floats, ``None`` in the
  cell accepts anything) or one of the types the cell declares by a quoted annotation
  (``max_molecules: "Optional[int]" = 1000``), and no entry sets a parameter the runner injects
  (:data:`COMMON`);
* every notebook key names a notebook of the book, once (a duplicate YAML key is an error).

A user profile is any other YAML file (``--profile path/to/mine.yml``): its entries apply over the
cells' defaults, and notebooks it does not name run with their defaults. ``--set name=value`` (YAML
typed) overrides one parameter of every selected notebook that declares it.
"""

from __future__ import annotations

import ast
import difflib
import json
from pathlib import Path
from typing import Any, Iterable

import yaml

__all__ = ["PROFILES", "COMMON", "ProfileError", "profile_path", "profile_name", "read", "load", "cell_parameters", "declared_types", "check_entry", "parse_overrides", "resolve"]

PROFILES = ("smoke", "default", "paper")
# Parameters the runner injects into every notebook (each notebook's parameters cell defines them).
COMMON = ("profile", "device", "data_dir", "out_dir", "results_dir", "chapter_id")
_UNKNOWN = object()


class ProfileError(ValueError):
    """A profile (or an override) that cannot run; the message names the file, notebook and parameter."""


class _UniqueKeyLoader(yaml.SafeLoader):
    """A YAML loader that rejects duplicate mapping keys (PyYAML silently keeps the last)."""


def _construct_mapping(loader, node, deep=False):
    seen = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise ProfileError(f"duplicate key {key!r} (line {key_node.start_mark.line + 1}, first at line {seen[key]})")
        seen[key] = key_node.start_mark.line + 1
    return loader.construct_mapping(node, deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def profile_path(root: Path, name: str | Path) -> Path:
    """``profiles/<name>.yml`` for a named profile, else ``name`` as a path to a user profile file."""
    if isinstance(name, str) and name in PROFILES:
        return Path(root) / "profiles" / f"{name}.yml"
    path = Path(name).expanduser()
    if path.suffix in (".yml", ".yaml") and path.is_file():
        return path.resolve()
    raise ProfileError(f"profile must be one of {', '.join(PROFILES)} or a path to a .yml file, got {str(name)!r}")


def profile_name(name: str | Path) -> str:
    """The name recorded in the notebooks: the built-in name, or the user file's stem."""
    return name if isinstance(name, str) and name in PROFILES else Path(name).stem


def read(path: Path) -> dict[str, dict[str, Any]]:
    """A profile file as {notebook: {parameter: value}}: YAML errors and duplicates name the file."""
    path = Path(path)
    if not path.is_file():
        raise ProfileError(f"profile file {path} is missing")
    try:
        data = yaml.load(path.read_text(), Loader=_UniqueKeyLoader) or {}
    except ProfileError as exc:
        raise ProfileError(f"{path}: {exc}") from None
    except yaml.YAMLError as exc:
        raise ProfileError(f"{path}: malformed YAML: {exc}".replace("\n", " ")) from None
    if not isinstance(data, dict):
        raise ProfileError(f"{path}: expected a mapping of notebook path -> parameters, got {type(data).__name__}")
    out = {}
    for nb, params in data.items():
        if params is None:
            params = {}
        if not isinstance(params, dict):
            raise ProfileError(f"{path}: entry {nb!r} must be a mapping of parameters, got {type(params).__name__}")
        clash = set(params) & set(COMMON)
        if clash:
            raise ProfileError(f"{path}: entry {nb!r} sets {sorted(clash)}, which the runner injects itself")
        out[str(nb)] = dict(params)
    return out


def load(root: Path, name: str | Path) -> dict[str, dict[str, Any]]:
    """The profile ``name`` as {notebook path below chapters/: {parameter: value}} (not validated)."""
    return read(profile_path(root, name))


def cell_parameters(nb_path: Path) -> dict[str, Any]:
    """The parameters a notebook declares in its ``parameters`` cell, with their literal values
    (``_UNKNOWN`` where the value is not a literal)."""
    nb = json.loads(Path(nb_path).read_text())
    cells = [c for c in nb.get("cells", []) if "parameters" in c.get("metadata", {}).get("tags", [])]
    if len(cells) != 1:
        raise ProfileError(f"{nb_path}: needs exactly one cell tagged 'parameters', found {len(cells)}")
    src = "".join(cells[0]["source"]) if isinstance(cells[0]["source"], list) else cells[0]["source"]
    out: dict[str, Any] = {}
    for node in ast.parse(src).body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                value = _UNKNOWN
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Name):
                    out[t.id] = value
                    if isinstance(node, ast.AnnAssign):
                        _ANNOTATIONS.setdefault(str(nb_path), {})[t.id] = _annotation_types(node.annotation)
    return out


_ANNOTATIONS: dict[str, dict[str, set[str]]] = {}
_TYPES = {"int": int, "float": (int, float), "str": str, "bool": bool, "list": (list, tuple), "dict": dict,
          "None": type(None)}


def _annotation_types(node) -> set[str]:
    """``"Optional[int]"`` → {"int", "None"}, ``"Union[str, list]"`` → {"str", "list"}; ``int | None``
    too. (Papermill recognises a parameter only with the quoted ``Optional``/``Union`` spelling.)"""
    text = ast.unparse(node).strip().strip("'\"").replace(" ", "")
    out: set[str] = set()
    for part in text.split("|"):
        if part.startswith("Optional[") and part.endswith("]"):
            out |= {part[9:-1].split("[")[0], "None"}
        elif part.startswith("Union[") and part.endswith("]"):
            out |= {t.split("[")[0] for t in part[6:-1].split(",")}
        else:
            out.add(part.split("[")[0])
    return out


def declared_types(nb_path: Path) -> dict[str, set[str]]:
    """The types a notebook's parameters cell declares by annotation (``tasks: str | list = "all"``)."""
    cell_parameters(nb_path)
    return _ANNOTATIONS.get(str(nb_path), {})


def _type_ok(default: Any, value: Any) -> bool:
    if default is None or default is _UNKNOWN:
        return True
    if isinstance(default, bool) or isinstance(value, bool):
        return isinstance(default, bool) and isinstance(value, bool)
    if isinstance(default, float):
        return isinstance(value, (int, float))
    if isinstance(default, (list, tuple)):
        if not isinstance(value, (list, tuple)):
            return False
        # the elements too: a list of numbers in the cell takes numbers, of strings strings, …
        kinds = {_kind(x) for x in default}
        return len(kinds) != 1 or all(_type_ok(default[0], x) for x in value)
    return isinstance(value, type(default))


def _kind(x: Any) -> str:
    if isinstance(x, bool):
        return "bool"
    if isinstance(x, (int, float)):
        return "number"
    return type(x).__name__


def _type_name(v: Any) -> str:
    return {bool: "a bool", int: "an int", float: "a number", str: "a string", list: "a list",
            tuple: "a list", dict: "a mapping"}.get(type(v), type(v).__name__)


def check_entry(where: str, nb: str, params: dict[str, Any], declared: dict[str, Any],
                types: dict[str, set[str]] | None = None) -> None:
    """Every parameter of ``params`` is declared by the notebook, with the declared value's type (or
    one of the types its annotation lists)."""
    for key, value in params.items():
        if key not in declared:
            close = difflib.get_close_matches(key, list(declared), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f"; it declares {', '.join(sorted(declared))}"
            raise ProfileError(f"{where}: {nb}: unknown parameter {key!r}{hint}")
        default = declared[key]
        allowed = (types or {}).get(key)
        if allowed:
            ok_types = tuple(t for name in allowed for t in (_TYPES.get(name, object),) for t in
                             (t if isinstance(t, tuple) else (t,)))
            if isinstance(value, bool) and "bool" not in allowed:
                ok_types = ()
            if not isinstance(value, ok_types):
                raise ProfileError(f"{where}: {nb}: parameter {key!r} must be {' | '.join(sorted(allowed))}, "
                                   f"got {value!r}")
            continue
        if not _type_ok(default, value):
            what = _type_name(default)
            if isinstance(default, (list, tuple)) and default and isinstance(value, (list, tuple)):
                what = f"a list of {_type_name(default[0]).split(' ', 1)[1]}s"
            raise ProfileError(f"{where}: {nb}: parameter {key!r} must be {what} like the "
                               f"notebook's {default!r}, got {value!r}")


def parse_overrides(pairs: Iterable[str]) -> dict[str, Any]:
    """``["a=1", "b=[2, 4]"]`` → ``{"a": 1, "b": [2, 4]}`` (values YAML-typed)."""
    out: dict[str, Any] = {}
    for pair in pairs or []:
        if "=" not in pair:
            raise ProfileError(f"--set takes name=value, got {pair!r}")
        key, raw = pair.split("=", 1)
        key = key.strip()
        if not key.isidentifier():
            raise ProfileError(f"--set: {key!r} is not a parameter name")
        if key in COMMON:
            raise ProfileError(f"--set: {key!r} is set by the runner itself (use --profile/--device/--data-dir)")
        try:
            out[key] = yaml.safe_load(raw)
        except yaml.YAMLError as exc:
            raise ProfileError(f"--set {key}: value {raw!r} is not valid YAML: {exc}") from None
    return out


def resolve(root: Path, name: str | Path, notebooks: list[str], selected: list[str],
            overrides: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """The validated parameters of each ``selected`` notebook under profile ``name`` plus ``overrides``.

    Built-in profiles must have an entry for every notebook of the book and none for another; a user
    profile may name a subset. Raises :class:`ProfileError` before anything runs.
    """
    root = Path(root)
    path = profile_path(root, name)
    data = read(path)
    known = set(notebooks)
    for nb in data:
        if nb not in known:
            close = difflib.get_close_matches(nb, sorted(known), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ProfileError(f"{path}: unknown notebook {nb!r}{hint}")
    builtin = isinstance(name, str) and name in PROFILES
    if builtin:
        missing = [nb for nb in selected if nb not in data]
        if missing:
            raise ProfileError(f"{path}: no entry for {', '.join(missing)}")
    declared = {nb: cell_parameters(root / "chapters" / nb) for nb in notebooks}
    types = {nb: declared_types(root / "chapters" / nb) for nb in notebooks}
    for nb, params in data.items():
        check_entry(str(path), nb, params, declared[nb], types[nb])
    out = {}
    overrides = dict(overrides or {})
    used: set[str] = set()
    for nb in selected:
        params = dict(data.get(nb, {}))
        for key, value in overrides.items():
            if key in declared[nb]:
                check_entry("--set", nb, {key: value}, declared[nb], types[nb])
                params[key] = value
                used.add(key)
        out[nb] = params
    unused = set(overrides) - used
    if unused:
        names = sorted({k for nb in selected for k in declared[nb]} - set(COMMON))
        hints = []
        for key in sorted(unused):
            close = difflib.get_close_matches(key, names, n=1)
            hints.append(f"{key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        raise ProfileError(f"--set: no selected notebook declares {', '.join(hints)}")
    return out
