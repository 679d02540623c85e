"""A notebook's inputs stamp (:func:`qlib.stamp.inputs_stamp`): its code cells, its parameters at a
profile and the notebooks it depends on, read from the book.

The code is the source of the notebook's code cells (the ``parameters`` cell and papermill's injected
one aside: the parameters are stamped as values, and the parameters cell's text on its own); the
parameters are the cell's defaults with the run's over them, all but those the runner sets itself
(:data:`qlib.book.profiles.COMMON`) and those that only change the speed (:data:`NOT_STAMPED_PARAMS`);
the dependencies are the notebooks named in its metadata (:func:`qlib.book.toc.dependencies`). The
runner's skip, the archive's staleness and the resumable units all take this stamp.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from .. import stamp
from .profiles import COMMON, PROFILES, cell_parameters, read
from .toc import dependencies

__all__ = ["NOT_STAMPED_PARAMS", "code_cells", "parameters_cell", "stamped_params", "current_params",
           "notebook_stamp"]

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
