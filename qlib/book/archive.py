"""The archive of long runs: a notebook's results at a profile (``paper``, or the largest scale a
machine could run), stored in the repository with their provenance and shown in every build.

Layout, one entry per (profile, notebook)::

    archive/<profile>/<part>/<NN-topic>/
        provenance.json          commit, profile, every parameter, device and its model, start/end and wall
                                 time, package versions, data-file hashes, the input stamp (below)
        comparisons.csv          the run's ledger rows (the columns of qlib.book.compare.COLUMNS)
        smoke-comparisons.csv    the same notebook's rows at the ``smoke`` profile, on the CPU, from the
                                 same commit: what ``revalidate`` recomputes to carry an entry forward
        outputs.json             the text the chapter printed (streams, Markdown and plain-text displays)
        figures/fig-<k>.npz      the data behind the k-th figure the chapter showed (lines, points, bars,
                                 bands, images, axes' labels, scales and limits): :func:`redraw` draws it
        files/…                  the small result files the notebook wrote (its figure tables)

**The input stamp** covers what the notebook's numbers depend on, and nothing else: the source of its
code cells, its parameters at that profile (all but the runner's own and ``threads``), the ``qlib``
modules it imports — found by reading the ``import`` statements of its code cells, then of each
``qlib`` module they reach, transitively (parent packages included), the book machinery
(``qlib.book``) and the findings (``qlib.repro.findings``) left out — each with the hash of its file,
the datasets it reads (by name in that code: ``tdc``, ``mnist``, ``a9a``) with the hash of their files,
and the same for the notebooks it depends on (metadata ``qlib.depends``). A refactor of a module the
notebook does not reach leaves its entry current; a change to one it reaches marks it **stale**, and
:func:`check` says what changed (which modules, which parameters, the code, the data). A stale entry
is shown as stale and not counted in the book's headline. :func:`revalidate` re-runs the entry's
``smoke`` rows on today's code: identical rows carry the entry forward (its provenance kept, the
revalidation recorded beside it), different rows leave it stale.

``python -m qlib.book archive``, ``archive-check`` and ``archive-revalidate`` are the command line
(``make archive``, ``make archive-check``, ``make archive-revalidate``).
"""

from __future__ import annotations

import ast
import datetime as _dt
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from ..atomic import atomic_file, write_text
from ..validation import resolve_config
from .compare import COLUMNS, FILENAME, OPTIONAL_COLUMNS
from .options import RunOptions, check_unused

__all__ = ["ARCHIVE", "SCHEMA", "MAX_BYTES", "MAX_FILE", "PROVENANCE", "SMOKE_ROWS", "OUTPUTS", "FIGURES", "FILES",
           "MAX_TEXT", "NOT_STAMPED", "DATASETS", "REQUIRED", "PACKAGES", "MAX_POINTS", "archive_root", "entry_dir",
           "entries", "imported_modules", "source_snapshot", "input_stamp", "stamp_changes", "current_params",
           "figure_data", "compact", "save_figure_data", "compact_file", "redraw", "machine", "packages",
           "text_outputs", "store", "attach_smoke", "ARCHIVE_OPTIONS", "ARCHIVE_FIELDS", "archive", "EntryStatus",
           "load_entry", "check", "size_bytes", "measured_time", "revalidate", "status_frame", "shown_profile",
           "paper_scale_rows", "main_check"]

ARCHIVE = "archive"
SCHEMA = 1
#: the whole archive in git stays under this (25 MB)
MAX_BYTES = 25_000_000
#: a result file the notebook wrote is archived when at most this large (a figure's table, not a cache)
MAX_FILE = 1_000_000
PROVENANCE = "provenance.json"
SMOKE_ROWS = "smoke-comparisons.csv"
OUTPUTS = "outputs.json"
FIGURES = "figures"
FILES = "files"
#: text of one output cell kept in outputs.json (longer text is cut, saying so)
MAX_TEXT = 20_000
#: parameters that never change a notebook's numbers (speed only), left out of the stamp
NOT_STAMPED = ("threads", "processes")
#: datasets a notebook reads, found by these words in its code and the wing modules it imports
DATASETS = {"tdc": re.compile(r"\btdc\b", re.I), "mnist": re.compile(r"mnist", re.I),
            "a9a": re.compile(r"\ba9a\b", re.I)}
#: extensions of the result files archived beside the rows
_FILE_EXT = (".csv", ".json", ".txt", ".md")
REQUIRED = {"schema": int, "chapter": str, "notebook": str, "profile": str, "params": dict, "commit": str,
            "device": dict, "started": str, "finished": str, "wall_s": (int, float), "packages": dict,
            "data": dict, "stamp": dict, "archived": str}
PACKAGES = ("qlib", "torch", "numpy", "scipy", "pandas", "numba", "matplotlib", "seaborn", "papermill",
            "dp-accounting", "rdkit", "pytdc", "scikit-learn")


# ---------------------------------------------------------------------------------------------
# Where things are
# ---------------------------------------------------------------------------------------------
def archive_root(root: Path | None = None) -> Path:
    """The archive folder: ``$QLIB_ARCHIVE_DIR``, else ``<book root>/archive`` of the first book root
    (a folder with ``_toc.yml`` and ``chapters/``) upwards from ``root``, the working directory, or the
    installed ``qlib``'s checkout that has one. A staged build tree (``_build/book``, where the runner
    executes the notebooks) is a book root without an archive, so the checkout above it is taken; with
    no archive anywhere, the first book root's (not yet made) folder."""
    env = os.environ.get("QLIB_ARCHIVE_DIR")
    if env:
        return Path(env)
    starts = [Path(root)] if root is not None else [Path.cwd(), Path(__file__).resolve().parents[2]]
    first = None
    for s in starts:
        for d in (s.resolve(), *s.resolve().parents):
            if (d / "_toc.yml").is_file() and (d / "chapters").is_dir():
                if (d / ARCHIVE).is_dir():
                    return d / ARCHIVE
                first = first or d
    return (first or starts[-1]) / ARCHIVE


def entry_dir(archive: Path, profile: str, chapter: str) -> Path:
    """``archive/<profile>/<part>/<NN-topic>``."""
    if not isinstance(chapter, str) or chapter.count("/") != 1:
        raise ValueError(f"chapter must look like '<part>/<NN-topic>', got {chapter!r}")
    if not isinstance(profile, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", profile):
        raise ValueError(f"profile must be a name of letters, digits, '.', '_' or '-', got {profile!r}")
    return Path(archive) / profile / chapter


def entries(archive: Path) -> list[tuple[str, str]]:
    """Every archived (profile, chapter), sorted."""
    archive = Path(archive)
    return sorted((p.parent.parent.parent.name, f"{p.parent.parent.name}/{p.parent.name}")
                  for p in archive.glob(f"*/*/*/{PROVENANCE}")) if archive.is_dir() else []


# ---------------------------------------------------------------------------------------------
# The input stamp
# ---------------------------------------------------------------------------------------------
def _code_cells(nb_path: Path) -> list[str]:
    nb = json.loads(Path(nb_path).read_text())
    out = []
    for c in nb.get("cells", []):
        if c.get("cell_type") != "code":
            continue
        tags = (c.get("metadata") or {}).get("tags") or []
        if "parameters" in tags or "injected-parameters" in tags:
            continue  # the parameters are stamped as values, not as text
        src = c.get("source", "")
        out.append("".join(src) if isinstance(src, list) else str(src))
    return out


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


def imported_modules(sources: Iterable[str], pkg: Path | None = None) -> list[str]:
    """The ``qlib`` modules that code ``sources`` import, transitively, parent packages included
    (``pkg``: the ``qlib`` package folder; default the installed one)."""
    pkg = Path(pkg) if pkg is not None else Path(__file__).resolve().parents[1]
    todo: list[str] = []
    for src in sources:
        try:
            tree = ast.parse(_python(src))
        except SyntaxError:
            continue
        todo += [m for m in _imports(tree, None, False) if m == pkg.name or m.startswith(pkg.name + ".")]
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
        todo += [m for m in _module_imports(f, name)
                 if (m == pkg.name or m.startswith(pkg.name + ".")) and m not in seen]
    return sorted(seen)


_IMPORTS: dict[tuple, frozenset[str]] = {}  # (path, size, mtime, module) → its imports: parsed once per file


def _module_imports(path: Path, name: str) -> frozenset[str]:
    """What module ``name`` (the file ``path``) imports, parsed once while the file is unchanged: an
    archive check stamps every entry, and every stamp walks the same ``qlib`` modules."""
    key = (*_unchanged_key(path), name)
    if key not in _IMPORTS:
        _IMPORTS[key] = frozenset(_imports(ast.parse(path.read_text()), name, path.name == "__init__.py"))
    return _IMPORTS[key]


_HASHES: dict[tuple, str] = {}  # (path, size, mtime) → sha256: a check of many entries hashes each file once


def _unchanged_key(path: Path) -> tuple[str, int, int]:
    """(path, size, mtime): what the per-file caches below take as "the file is unchanged"."""
    st = Path(path).stat()
    return str(Path(path).resolve()), st.st_size, st.st_mtime_ns


def _file_hash(path: Path) -> str:
    key = _unchanged_key(path)
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
        h.update(_file_hash(f).encode())
    return h.hexdigest()


def _datasets(texts: Iterable[str], modules: Iterable[str]) -> list[str]:
    blob = "\n".join(texts)
    found = {k for k, rx in DATASETS.items() if rx.search(blob)}
    if "qlib.molecules" in modules:
        found.add("tdc")
    return sorted(found)


def _not_stamped(module: str) -> bool:
    """Modules that cannot change a notebook's numbers, left out of the stamp (editing them marks no
    entry stale): the book machinery (``qlib.book``: setup, recorder, rendering, runner) and the
    findings (``qlib.repro.findings``: claims and causes are applied when rows are read, to archived
    rows as to fresh ones). The stamp covers the library and the wing the notebook imports."""
    return module == "qlib.book" or module.startswith("qlib.book.") or module == "qlib.repro.findings"


def _stamped_params(params: dict) -> dict:
    """The parameters that shape the numbers; a value the parameters cell computes (not a literal,
    e.g. a list comprehension) reads ``<expression>``: its text is stamped with the cell."""
    from .profiles import COMMON

    def value(v):
        return v if isinstance(v, (str, int, float, bool, list, tuple, dict, type(None))) else "<expression>"

    return {k: value(v) for k, v in sorted(params.items()) if k not in COMMON and k not in NOT_STAMPED}


def _parameters_cell(nb_path: Path) -> str:
    """The source of a notebook's cell tagged ``parameters`` (empty when it has none)."""
    nb = json.loads(Path(nb_path).read_text())
    for c in nb.get("cells", []):
        if "parameters" in ((c.get("metadata") or {}).get("tags") or []):
            src = c.get("source", "")
            return "".join(src) if isinstance(src, list) else str(src)
    return ""


def source_snapshot(pkg: Path | None = None) -> dict[str, str]:
    """The hash of every ``qlib`` source file now (``{module: sha256}``): taken when a run starts, so that
    the entry's stamp describes the code that ran even if the files change while it runs."""
    pkg = Path(pkg) if pkg is not None else Path(__file__).resolve().parents[1]
    out = {}
    for f in pkg.rglob("*.py"):
        if "__pycache__" in f.parts:
            continue
        rel = f.relative_to(pkg.parent).with_suffix("")
        name = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
        out[name] = _file_hash(f)
    return out


def input_stamp(root: Path, nb: str, params: dict, *, data_dir: str | os.PathLike | None = None,
                pkg: Path | None = None, snapshot: dict[str, str] | None = None, cells: dict | None = None) -> dict:
    """What ``chapters/<nb>``'s numbers depend on (see the module docstring): ``{"notebook": hash of
    its code cells, "params": …, "modules": {module: hash}, "data": {dataset: hash or None},
    "depends": {notebook: hash of its code cells}, "hash": all of it}``."""
    from .jobs import dependencies

    root = Path(root)
    pkg = Path(pkg) if pkg is not None else Path(__file__).resolve().parents[1]
    nbs = [nb, *dependencies(root, nb)]
    cells = {**{n: _code_cells(root / "chapters" / n) for n in nbs}, **(cells or {})}
    mods = [m for m in imported_modules([s for n in nbs for s in cells[n]], pkg) if not _not_stamped(m)]
    snap = snapshot or {}
    modules = {m: snap.get(m) or _file_hash(_module_file(pkg, m)) for m in mods}
    wing_text = [(_module_file(pkg, m)).read_text() for m in mods
                 if ".repro." in m and not m.endswith((".paper", ".inventory", ".ledger"))]
    data = Path(data_dir or os.environ.get("QLIB_DATA_DIR") or "")
    datasets = {d: (_tree_hash(data / d) if str(data) else None)
                for d in _datasets([s for n in nbs for s in cells[n]] + wing_text, mods)}
    stamp = {"notebook": hashlib.sha256("\0".join(cells[nb]).encode()).hexdigest(),
             "parameters_cell": hashlib.sha256(_parameters_cell(root / "chapters" / nb).encode()).hexdigest(),
             "params": json.loads(json.dumps(_stamped_params(params), default=str)),
             "modules": modules, "data": datasets,
             "depends": {n: hashlib.sha256("\0".join(cells[n]).encode()).hexdigest() for n in nbs[1:]}}
    stamp["hash"] = hashlib.sha256(json.dumps(stamp, sort_keys=True).encode()).hexdigest()
    return stamp


def stamp_changes(old: dict, new: dict) -> list[str]:
    """What differs between two input stamps, in words (empty: the entry is current)."""
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


def current_params(root: Path, nb: str, profile: str) -> dict:
    """The parameters ``profile`` gives ``nb`` today (cell defaults with the profile's entry over them);
    a profile that is neither built in nor ``profiles/<name>.yml`` gives the cell's defaults."""
    from .profiles import PROFILES, cell_parameters, read

    params = dict(cell_parameters(Path(root) / "chapters" / nb))
    path = Path(root) / "profiles" / f"{profile}.yml"
    if profile in PROFILES or path.is_file():
        params.update(read(path).get(nb) or {})
    return params


# ---------------------------------------------------------------------------------------------
# Figures: their data, and a figure drawn again from it
# ---------------------------------------------------------------------------------------------
def _rgba(c) -> list[float]:
    from matplotlib.colors import to_rgba

    try:
        return [float(x) for x in to_rgba(c)]
    except (ValueError, TypeError):
        return [0.0, 0.0, 0.0, 1.0]


def figure_data(fig) -> dict[str, np.ndarray]:
    """The data behind ``fig`` as arrays (``meta``: one JSON string describing axes and artists, the
    arrays named ``a<i>_<artist>_<j>``): enough for :func:`redraw`."""
    from matplotlib.collections import LineCollection, PathCollection, PolyCollection
    from matplotlib.image import AxesImage
    from matplotlib.patches import Rectangle

    arrays: dict[str, np.ndarray] = {}
    meta: dict[str, Any] = {"size": [float(x) for x in fig.get_size_inches()], "title": "", "axes": []}
    if fig._suptitle is not None:
        meta["title"] = fig._suptitle.get_text()
    for i, ax in enumerate(fig.axes):
        if not ax.get_visible():
            continue
        am: dict[str, Any] = {
            "pos": [float(v) for v in ax.get_position().bounds], "title": ax.get_title(),
            "xlabel": ax.get_xlabel(), "ylabel": ax.get_ylabel(), "xscale": ax.get_xscale(),
            "yscale": ax.get_yscale(), "xlim": [float(v) for v in ax.get_xlim()],
            "ylim": [float(v) for v in ax.get_ylim()], "artists": [],
            "xticklabels": [[float(t.get_position()[0]), t.get_text()] for t in ax.get_xticklabels() if t.get_text()],
            "yticklabels": [[float(t.get_position()[1]), t.get_text()] for t in ax.get_yticklabels() if t.get_text()],
            "legend": ax.get_legend() is not None,
            "xticks_shown": any(t.get_visible() for t in ax.xaxis.get_ticklabels()) and ax.xaxis.get_visible(),
            "yticks_shown": any(t.get_visible() for t in ax.yaxis.get_ticklabels()) and ax.yaxis.get_visible(),
        }
        k = 0

        def put(kind, arr, _i=i, _am=am, **info):
            nonlocal k
            key = f"a{_i}_{kind}_{k}"
            arrays[key] = np.asarray(arr, dtype=np.float64)
            _am["artists"].append({"kind": kind, "key": key, **info})
            k += 1

        for ln in ax.get_lines():
            xy = np.column_stack([np.asarray(ln.get_xdata(), float), np.asarray(ln.get_ydata(), float)]) \
                if len(ln.get_xdata()) else np.zeros((0, 2))
            lab = ln.get_label()
            put("line", xy, color=_rgba(ln.get_color()), ls=str(ln.get_linestyle()), lw=float(ln.get_linewidth()),
                marker=str(ln.get_marker()), label="" if lab.startswith("_") else lab)
        for col in ax.collections:
            lab = col.get_label()
            lab = "" if lab.startswith("_") else lab
            if isinstance(col, PathCollection):
                fc = col.get_facecolors()
                put("points", np.asarray(col.get_offsets(), float), color=_rgba(fc[0]) if len(fc) else _rgba("C0"),
                    size=float(np.median(col.get_sizes())) if len(col.get_sizes()) else 20.0, label=lab)
            elif isinstance(col, LineCollection):
                for seg in col.get_segments()[:2000]:
                    put("segment", np.asarray(seg, float), color=_rgba(col.get_colors()[0]) if len(col.get_colors())
                        else _rgba("k"), label="")
            elif isinstance(col, PolyCollection):
                fc = col.get_facecolors()
                for p in col.get_paths()[:200]:
                    put("band", np.asarray(p.vertices, float), color=_rgba(fc[0]) if len(fc) else _rgba("C0"),
                        label=lab)
                    lab = ""
        for p in ax.patches:
            if isinstance(p, Rectangle):
                put("bar", [p.get_x(), p.get_y(), p.get_width(), p.get_height()], color=_rgba(p.get_facecolor()),
                    label="" if p.get_label().startswith("_") else p.get_label())
        for im in ax.get_images():
            if isinstance(im, AxesImage):
                put("image", np.asarray(im.get_array(), float), extent=[float(v) for v in im.get_extent()],
                    cmap=im.get_cmap().name, clim=[float(v) for v in im.get_clim()])
        meta["axes"].append(am)
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    return arrays


#: points kept per line or point cloud in the archive (a 50,000-point ROC curve drawn at the column's
#: width needs far fewer; the first and last points are always kept)
MAX_POINTS = 2000


def compact(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Figure arrays for storage: float32, and lines / points of more than :data:`MAX_POINTS` points
    thinned to that many (evenly spaced indices, the ends kept)."""
    out = {}
    for k, a in arrays.items():
        if k == "meta" or a.dtype.kind not in "fc":
            out[k] = a
            continue
        if a.ndim == 2 and a.shape[1] == 2 and a.shape[0] > MAX_POINTS and ("_line_" in k or "_points_" in k):
            a = a[np.unique(np.linspace(0, a.shape[0] - 1, MAX_POINTS).round().astype(int))]
        out[k] = a.astype(np.float32)
    return out


def save_figure_data(fig, path: str | os.PathLike) -> Path:
    """Write :func:`figure_data` of ``fig`` to ``path`` (compressed NPZ, :func:`compact`, written atomically)."""
    path = Path(path)
    with atomic_file(path) as fh:
        np.savez_compressed(fh, **compact(figure_data(fig)))
    return path


def compact_file(path: str | os.PathLike) -> Path:
    """Rewrite a figure-data file with :func:`compact`, in place (a compacted file keeps its arrays)."""
    path = Path(path)
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    with atomic_file(path) as fh:
        np.savez_compressed(fh, **compact(arrays))
    return path


def redraw(path: str | os.PathLike, *, title: str | None = None):
    """A figure drawn from data saved by :func:`save_figure_data`: the same axes, positions, scales,
    labels, lines, points, bars, bands and images (the book's style, not the original's every detail)."""
    import matplotlib.pyplot as plt

    with np.load(path) as z:
        meta = json.loads(bytes(z["meta"]).decode())
        arrays = {k: z[k] for k in z.files if k != "meta"}
    fig = plt.figure(figsize=meta.get("size", (7.7, 4.0)))
    for am in meta["axes"]:
        ax = fig.add_axes(am["pos"])
        labelled = False
        for a in am["artists"]:
            arr, kind, lab = arrays[a["key"]], a["kind"], a.get("label") or None
            labelled |= bool(lab)
            if kind == "line" and arr.size:
                ax.plot(arr[:, 0], arr[:, 1], color=a["color"], ls=a["ls"] if a["ls"] != "None" else "none",
                        lw=a["lw"], marker=None if a["marker"] in ("None", "none") else a["marker"], label=lab)
            elif kind == "points" and arr.size:
                ax.scatter(arr[:, 0], arr[:, 1], color=[a["color"]], s=a["size"], label=lab)
            elif kind == "segment" and arr.size:
                ax.plot(arr[:, 0], arr[:, 1], color=a["color"], lw=1.0)
            elif kind == "band" and arr.size:
                ax.fill(arr[:, 0], arr[:, 1], color=a["color"], lw=0, label=lab)
            elif kind == "bar":
                x, y, w, h = arr
                ax.add_patch(plt.Rectangle((x, y), w, h, color=a["color"], label=lab))
            elif kind == "image":
                ax.imshow(arr, extent=a["extent"], cmap=a["cmap"], vmin=a["clim"][0], vmax=a["clim"][1],
                          aspect="auto", origin="upper")
        ax.set_xscale(am["xscale"])
        ax.set_yscale(am["yscale"])
        ax.set_xlim(am["xlim"])
        ax.set_ylim(am["ylim"])
        ax.set_xlabel(am["xlabel"])
        ax.set_ylabel(am["ylabel"])
        ax.set_title(am["title"])
        for axis, key in ((ax.xaxis, "xticklabels"), (ax.yaxis, "yticklabels")):
            ticks = am.get(key) or []
            if ticks and any(not re.fullmatch(r"[−\-+0-9.,eE$^{}\\mathrm ]*", t) for _, t in ticks):
                axis.set_ticks([p for p, _ in ticks], [t for _, t in ticks])  # categorical axes keep their names
        ax.tick_params(labelbottom=am.get("xticks_shown", True), labelleft=am.get("yticks_shown", True))
        if am.get("legend") and labelled:
            ax.legend(fontsize="small")
    if title or meta.get("title"):
        fig.suptitle(title or meta["title"])
    return fig


# ---------------------------------------------------------------------------------------------
# Provenance
# ---------------------------------------------------------------------------------------------
def _git(root: Path, *args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=30,
                              check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def _cpu_model() -> str:
    try:
        for ln in Path("/proc/cpuinfo").read_text().splitlines():
            if ln.startswith("model name"):
                return ln.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine(device: str, threads: Any) -> dict:
    """The machine a run used: device asked for and resolved, CPU model and cores, threads, GPU name."""
    from .jobs import device_name

    gpu = None
    try:
        import torch

        if torch.cuda.is_available() and device != "cpu":
            gpu = torch.cuda.get_device_name()
    except Exception:  # noqa: BLE001 - best effort
        pass
    return {"requested": device, "resolved": device_name(device), "cpu": _cpu_model(),
            "cpu_count": os.cpu_count(), "threads": threads, "gpu": gpu, "python": platform.python_version(),
            "platform": platform.platform()}


def packages() -> dict[str, str]:
    from importlib import metadata

    out = {}
    for p in PACKAGES:
        try:
            out[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            pass
    return out


def _iso(t: float) -> str:
    return _dt.datetime.fromtimestamp(t, _dt.timezone.utc).isoformat(timespec="seconds")


def text_outputs(executed: Path) -> list[dict]:
    """The text an executed notebook printed: streams, Markdown and plain-text displays, per cell."""
    nb = json.loads(Path(executed).read_text())
    out = []
    for i, c in enumerate(nb.get("cells", [])):
        for o in c.get("outputs", []) or []:
            kind = o.get("output_type")
            if kind == "stream":
                text, mime = o.get("text", ""), "text/plain"
            elif kind in ("display_data", "execute_result"):
                data = o.get("data", {})
                mime = next((m for m in ("text/markdown", "text/plain") if m in data), None)
                if mime is None or any(k.startswith("image/") for k in data):
                    continue
                text = data[mime]
            else:
                continue
            text = "".join(text) if isinstance(text, list) else str(text)
            if len(text) > MAX_TEXT:
                text = text[:MAX_TEXT] + f"\n… ({len(text) - MAX_TEXT} characters cut)"
            out.append({"cell": i, "kind": kind, "mime": mime, "text": text})
    return out


# ---------------------------------------------------------------------------------------------
# Archiving
# ---------------------------------------------------------------------------------------------
def _write_json(path: Path, obj) -> None:
    write_text(path, json.dumps(obj, indent=1, sort_keys=True, default=str) + "\n")


def store(root: Path, out: Path, nb: str, *, archive: Path | None = None, smoke_out: Path | None = None,
          data_dir: str | None = None, snapshot: dict[str, str] | None = None) -> Path:
    """Store one executed notebook of the runner's tree ``out`` (its stamp, results and executed
    notebook) as an archive entry; ``smoke_out``: a runner's tree holding the same notebook run at
    ``smoke`` on the CPU (its rows are kept for :func:`revalidate`). The input stamp takes the code
    cells of the executed notebook (the code that ran) and the module hashes of ``snapshot`` (taken
    when the run started; without one, today's files). Returns the entry's folder."""
    from .jobs import chapter_id, read_stamp, result_files

    root, out = Path(root), Path(out)
    cid = chapter_id(nb)
    stamp_file = out / ".stamps" / Path(nb).with_suffix(".json")
    st = read_stamp(stamp_file)
    executed = out / "chapters" / nb
    results = out / "_results" / cid
    if not st or not executed.is_file():
        raise FileNotFoundError(f"{nb} has no finished run in {out} (no stamp or executed notebook)")
    enb = json.loads(executed.read_text())
    from .profiles import cell_parameters

    injected = ((enb.get("metadata") or {}).get("papermill") or {}).get("parameters") or {}
    params = {**cell_parameters(root / "chapters" / nb), **injected}
    profile = str(st.get("profile") or params.get("profile") or "")
    dest = entry_dir(archive or archive_root(root), profile, cid)
    tmp = dest.with_name(f".{dest.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    rows = results / FILENAME
    if rows.is_file():
        shutil.copy2(rows, tmp / FILENAME)
    else:
        (tmp / FILENAME).write_text(",".join(COLUMNS) + "\n")
    if smoke_out is not None:
        srows = Path(smoke_out) / "_results" / cid / FILENAME
        if srows.is_file():
            shutil.copy2(srows, tmp / SMOKE_ROWS)
    figs = results / FIGURES
    if figs.is_dir():
        shutil.copytree(figs, tmp / FIGURES)
        for f in (tmp / FIGURES).glob("*.npz"):
            compact_file(f)
    for f in result_files(results):
        rel = f.relative_to(results)
        if (f.suffix in _FILE_EXT and f.name != FILENAME and rel.parts[0] not in (FIGURES, "cache")
                and f.stat().st_size <= MAX_FILE):
            (tmp / FILES / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, tmp / FILES / rel)
    _write_json(tmp / OUTPUTS, text_outputs(executed))
    when, seconds = float(st.get("when", 0.0)), float(st.get("seconds", 0.0))
    data = data_dir or os.environ.get("QLIB_DATA_DIR", "")
    stamp = input_stamp(root, nb, params, data_dir=data, snapshot=snapshot, cells={nb: _code_cells(executed)})
    head = _git(root, "rev-parse", "HEAD")
    dirty = bool(_git(root, "status", "--porcelain", "--", "qlib", "chapters", "profiles"))
    prov = {"schema": SCHEMA, "chapter": cid, "notebook": nb, "profile": profile,
            "params": json.loads(json.dumps(params, default=str)), "commit": head, "dirty": dirty,
            "device": machine(str(params.get("device", "auto")), params.get("threads")),
            "started": _iso(when - seconds), "finished": _iso(when), "wall_s": round(seconds, 1),
            "packages": packages(), "data": {k: v for k, v in stamp["data"].items()}, "stamp": stamp,
            "runner_stamp": st.get("hash", ""), "archived": _iso(_dt.datetime.now().timestamp()),
            "smoke_rows": (tmp / SMOKE_ROWS).is_file(), "revalidated": []}
    _write_json(tmp / PROVENANCE, prov)
    if dest.exists():
        shutil.rmtree(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    os.replace(tmp, dest)
    return dest


def attach_smoke(*, root: Path | None = None, profile: str = "paper", only: Iterable[str] | None = None,
                 data_dir: str | None = None, log=print) -> list[Path]:
    """Run the selected notebooks that have an entry at ``profile`` at ``smoke`` on this machine's CPU
    and keep those rows in their entries (``smoke-comparisons.csv``): for entries archived elsewhere
    (a lent GPU machine) with ``--no-smoke``, so that :func:`revalidate` compares rows of this machine."""
    from . import runner

    root = runner.find_root(root)
    arch = archive_root(root)
    have = {c for p, c in entries(arch) if p == profile}
    selected = [nb for nb in runner.select(runner.notebooks(root), only) if nb.removesuffix(".ipynb") in have]
    if not selected:
        log(f"no entry at profile {profile!r} to attach smoke rows to")
        return []
    out = (root / "_build" / "archive-smoke").resolve()
    log(runner.run(root=root, profile="smoke", only=selected, device="cpu", data_dir=data_dir, output_dir=out,
                   jobs=1, progress=False, log=log).summary())
    done = []
    for nb in selected:
        cid = nb.removesuffix(".ipynb")
        rows = out / "_results" / cid / FILENAME
        d = entry_dir(arch, profile, cid)
        if rows.is_file():
            shutil.copy2(rows, d / SMOKE_ROWS)
            prov = json.loads((d / PROVENANCE).read_text())
            prov["smoke_rows"] = True
            prov["smoke_commit"] = _git(root, "rev-parse", "HEAD")
            _write_json(d / PROVENANCE, prov)
            done.append(d)
            log(f"[smoke] {profile}/{cid}")
    return done


#: the run options of :func:`archive` when none are given: the ``paper`` profile
ARCHIVE_OPTIONS = RunOptions(profile="paper")
#: the fields of :class:`~qlib.book.options.RunOptions` that :func:`archive` honours (it runs on one seed,
#: in this process or a local Dask cluster, without a progress bar)
ARCHIVE_FIELDS = ("profile", "only", "device", "data_dir", "output_dir", "overrides", "jobs", "force", "resume",
                  "timeout")


def archive(root: Path | None = None, options: RunOptions | None = None, *, from_dir: Path | None = None,
            smoke: bool = True, log=print, **fields) -> list[Path]:
    """Run the notebooks ``options`` selects at its profile (a :class:`~qlib.book.options.RunOptions`;
    None: :data:`ARCHIVE_OPTIONS`; keywords ``fields`` replace its fields; the fields outside
    :data:`ARCHIVE_FIELDS` are refused) — or take them, executed, from the runner's tree ``from_dir`` —
    run each at ``smoke`` on the CPU too (``smoke=False``: not), and store every finished one as an
    archive entry. Returns the entries written; a notebook that failed is named in the log and left
    out (its earlier entry, if any, stays). The appendix is never archived."""
    from . import runner
    from .profiles import profile_name

    opts = resolve_config(RunOptions, ARCHIVE_OPTIONS if options is None else options, fields, name="options")
    check_unused(opts, ARCHIVE_FIELDS, name="archive")
    profile, data_dir = opts.profile, opts.data_dir
    root = runner.find_root(root)
    selected = runner.select(runner.notebooks(root), opts.only)
    selected = [nb for nb in selected if not nb.startswith("appendix/")]
    pname = profile_name(profile)
    snapshot = source_snapshot() if from_dir is None else None  # the code as this run starts
    if from_dir is not None:
        out = Path(from_dir).resolve()
    else:
        out = Path(opts.output_dir or root / "_build" / f"archive-{pname}").resolve()
        report = runner.run(root=root, profile=profile, only=selected, device=opts.device, data_dir=data_dir,
                            output_dir=out, overrides=opts.overrides, jobs=opts.jobs, force=opts.force,
                            timeout=opts.timeout, resume=opts.resume, progress=False, log=log)
        log(report.summary())
    smoke_out = None
    if smoke:
        smoke_out = out.with_name(out.name + "-smoke")  # beside the run's tree: two archive runs never share it
        rep = runner.run(root=root, profile="smoke", only=selected, device="cpu", data_dir=data_dir,
                         output_dir=smoke_out, jobs=1, progress=False, log=log)
        log(rep.summary())
    written = []
    for nb in selected:
        try:
            written.append(store(root, out, nb, smoke_out=smoke_out, data_dir=data_dir, snapshot=snapshot))
            log(f"[arch] {nb} → {written[-1]}")
        except FileNotFoundError as exc:
            log(f"[miss] {exc}")
    return written


# ---------------------------------------------------------------------------------------------
# Checking and carrying forward
# ---------------------------------------------------------------------------------------------
@dataclass
class EntryStatus:
    """One archived entry against today's code: ``state`` is ``current``, ``stale`` or ``invalid``."""

    profile: str
    chapter: str
    state: str
    changes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    provenance: dict = field(default_factory=dict)

    @property
    def current(self) -> bool:
        return self.state == "current"


def _schema_problems(d: Path, prov: Any) -> list[str]:
    import pandas as pd

    probs = []
    if not isinstance(prov, dict):
        return [f"{PROVENANCE} is not a JSON object"]
    for k, t in REQUIRED.items():
        if k not in prov:
            probs.append(f"{PROVENANCE} lacks {k!r}")
        elif not isinstance(prov[k], t) or isinstance(prov[k], bool):
            probs.append(f"{PROVENANCE}: {k!r} must be {getattr(t, '__name__', t)}, got {type(prov[k]).__name__}")
    if prov.get("schema") not in (None, SCHEMA) and isinstance(prov.get("schema"), int):
        probs.append(f"schema {prov['schema']} is not {SCHEMA}")
    for k in ("modules", "params", "data", "hash", "notebook"):
        if isinstance(prov.get("stamp"), dict) and k not in prov["stamp"]:
            probs.append(f"stamp lacks {k!r}")
    for name in (FILENAME, *((SMOKE_ROWS,) if prov.get("smoke_rows") else ())):
        f = d / name
        if not f.is_file():
            probs.append(f"{name} is missing")
            continue
        try:
            cols = list(pd.read_csv(f, dtype=str, keep_default_na=False, nrows=0).columns)
        except (ValueError, pd.errors.EmptyDataError) as exc:
            probs.append(f"{name} is unreadable: {exc}")
            continue
        missing = [c for c in COLUMNS if c not in cols and c not in OPTIONAL_COLUMNS]
        if missing:
            probs.append(f"{name} lacks columns {missing}")
    for f in sorted((d / FIGURES).glob("*.npz")) if (d / FIGURES).is_dir() else []:
        try:
            with np.load(f) as z:
                json.loads(bytes(z["meta"]).decode())
        except Exception as exc:  # noqa: BLE001 - any unreadable file is a schema problem
            probs.append(f"{f.relative_to(d)} is unreadable: {type(exc).__name__}")
    return probs


def load_entry(archive: Path, profile: str, chapter: str) -> dict:
    """An entry's provenance (``{}`` when there is none or it is unreadable)."""
    f = entry_dir(archive, profile, chapter) / PROVENANCE
    try:
        data = json.loads(f.read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def check(root: Path | None = None, *, archive: Path | None = None, data_dir: str | None = None,
          pkg: Path | None = None) -> list[EntryStatus]:
    """Every entry's schema and stamp against today's code, parameters and data (nothing executes).
    ``root`` None: the book root holding ``archive`` (a kernel in the runner's output tree, whose own
    folders are not a book: its archive comes from ``$QLIB_ARCHIVE_DIR``), else the one above the
    working directory."""
    from . import runner

    if root is None:
        arch = Path(archive) if archive is not None else archive_root()
        holder = arch.resolve().parent
        root = holder if (holder / "_toc.yml").is_file() and (holder / "chapters").is_dir() else None
    root = runner.find_root(root)
    archive = Path(archive) if archive is not None else archive_root(root)
    out = []
    known = set(runner.notebooks(root))
    for profile, cid in entries(archive):
        d = entry_dir(archive, profile, cid)
        try:
            prov = json.loads((d / PROVENANCE).read_text())
        except (OSError, ValueError) as exc:
            out.append(EntryStatus(profile, cid, "invalid", problems=[f"{PROVENANCE} unreadable: {exc}"]))
            continue
        probs = _schema_problems(d, prov)
        if probs:
            out.append(EntryStatus(profile, cid, "invalid", problems=probs, provenance=prov if isinstance(prov, dict) else {}))
            continue
        nb = prov["notebook"]
        if nb not in known:
            out.append(EntryStatus(profile, cid, "stale", changes=[f"the notebook {nb} is no longer in the book"],
                                   provenance=prov))
            continue
        now = input_stamp(root, nb, current_params(root, nb, profile), data_dir=data_dir, pkg=pkg)
        changes = stamp_changes(prov["stamp"], now)
        out.append(EntryStatus(profile, cid, "stale" if changes else "current", changes=changes, provenance=prov))
    return out


def size_bytes(archive: Path) -> int:
    archive = Path(archive)
    return sum(p.stat().st_size for p in archive.rglob("*") if p.is_file()) if archive.is_dir() else 0


#: rows whose value is a measured time or speed (the quantity or the place names the unit or the comparison)
_TIMED = re.compile(r"\((?:[^()]*, )?(?:ms|s|seconds|µs)\)$|\btimes?\b|\bfaster\b|\bslower\b|\bspeed", re.I)


def measured_time(where: str, quantity: str) -> bool:
    """Whether a ledger row's value is a measured time or speed (it changes from run to run on any
    machine, so two runs are compared by its verdict, not its value)."""
    return bool(_TIMED.search(str(quantity)) or _TIMED.search(str(where)))


def _same_rows(a: Path, b: Path) -> list[str]:
    """Differences between two comparisons files (empty: identical rows)."""
    import pandas as pd

    x = pd.read_csv(a, dtype=str, keep_default_na=False)
    y = pd.read_csv(b, dtype=str, keep_default_na=False)
    # the cause is the findings' reading of a row, applied when rows are read: not a result to compare
    cols = [c for c in COLUMNS if c in x.columns and c in y.columns and c != "cause"]
    if len(x) != len(y):
        return [f"{len(x)} rows archived, {len(y)} now"]
    diff = []
    for i in range(len(x)):
        # a measured time changes from run to run on any machine: its verdict is compared, not its value
        timed = measured_time(x.iloc[i].get("where", ""), x.iloc[i]["quantity"])
        for c in cols:
            if timed and c == "ours":
                continue
            if x.iloc[i][c] != y.iloc[i][c]:
                diff.append(f"row {i + 1} ({x.iloc[i]['quantity']}): {c} {x.iloc[i][c]!r} → {y.iloc[i][c]!r}")
    return diff


def revalidate(root: Path | None = None, *, archive: Path | None = None, data_dir: str | None = None,
               only: Iterable[str] | None = None, log=print) -> list[EntryStatus]:
    """Re-run the ``smoke`` rows of every stale entry (of ``only`` chapters) on today's code, on the
    CPU; where they equal the archived smoke rows, carry the entry forward: its stamp becomes today's,
    its provenance stays, and the revalidation (commit, date, what had changed) is recorded beside it."""
    from . import runner

    root = runner.find_root(root)
    archive = Path(archive) if archive is not None else archive_root(root)
    stale = [s for s in check(root, archive=archive, data_dir=data_dir) if s.state == "stale"
             and (not only or any(s.chapter.startswith(o.removeprefix("chapters/").removesuffix(".ipynb"))
                                  for o in only))]
    if not stale:
        log("no stale entry to revalidate")
        return []
    nbs = sorted({s.provenance["notebook"] for s in stale})
    out = (root / "_build" / "archive-revalidate").resolve()
    rep = runner.run(root=root, profile="smoke", only=nbs, device="cpu", data_dir=data_dir, output_dir=out,
                     jobs=1, progress=False, log=log, force=True)
    log(rep.summary())
    done = []
    for s in stale:
        d = entry_dir(archive, s.profile, s.chapter)
        now_rows = out / "_results" / s.chapter / FILENAME
        if not s.provenance.get("smoke_rows") or not now_rows.is_file():
            log(f"[stale] {s.profile}/{s.chapter}: no smoke rows to compare")
            continue
        diff = _same_rows(d / SMOKE_ROWS, now_rows)
        if diff:
            log(f"[stale] {s.profile}/{s.chapter}: smoke rows changed ({len(diff)}): {diff[0]}")
            continue
        prov = s.provenance
        nb = prov["notebook"]
        prov.setdefault("revalidated", []).append(
            {"commit": _git(root, "rev-parse", "HEAD"), "when": _iso(_dt.datetime.now().timestamp()),
             "changed": s.changes, "smoke_rows": "identical"})
        prov["stamp"] = input_stamp(root, nb, current_params(root, nb, s.profile), data_dir=data_dir)
        _write_json(d / PROVENANCE, prov)
        log(f"[carry] {s.profile}/{s.chapter}: smoke rows identical; carried forward")
        s.state, s.changes = "current", []
        done.append(s)
    return done


# ---------------------------------------------------------------------------------------------
# What the book shows
# ---------------------------------------------------------------------------------------------
def status_frame(root: Path | None = None, *, archive: Path | None = None):
    """One row per archived entry: profile, chapter, state, what changed, device, wall time, date, commit."""
    import pandas as pd

    rows = []
    for s in check(root, archive=archive):
        p = s.provenance
        dev = p.get("device", {}) if isinstance(p.get("device"), dict) else {}
        rows.append({"profile": s.profile, "chapter": s.chapter, "state": s.state,
                     "changes": "; ".join(s.changes or s.problems),
                     "device": dev.get("gpu") or dev.get("resolved", ""), "cpu": dev.get("cpu", ""),
                     "threads": dev.get("threads"), "wall_s": p.get("wall_s"), "finished": p.get("finished", ""),
                     "commit": str(p.get("commit", ""))[:10], "revalidated": len(p.get("revalidated") or [])})
    return pd.DataFrame(rows, columns=["profile", "chapter", "state", "changes", "device", "cpu", "threads",
                                       "wall_s", "finished", "commit", "revalidated"])


def _keyed(df):
    key = df["where"].astype(str) + "\x1f" + df["quantity"].astype(str)
    return key + "\x1f" + key.groupby(key).cumcount().astype(str)


def shown_profile(chapter: str, *, archive: Path | None = None, root: Path | None = None,
                  exclude: str | None = None) -> str | None:
    """The archived profile a chapter page shows beside its own run: ``paper`` where the chapter has a
    ``paper`` entry, else the archived profile of its own name with the longest run (a chapter whose
    ``paper`` run does not fit a session: eden/05's ``eden05-fifth``), else None. ``smoke``, ``default``
    and ``exclude`` (the build's own profile) are never shown."""
    archive = Path(archive) if archive is not None else archive_root(root)
    if exclude != "paper" and (entry_dir(archive, "paper", chapter) / PROVENANCE).is_file():
        return "paper"
    best, wall = None, -1.0
    if not archive.is_dir():
        return None
    for d in sorted(p for p in archive.iterdir() if p.is_dir() and p.name not in ("paper", "smoke", "default", exclude)):
        prov = entry_dir(archive, d.name, chapter) / PROVENANCE
        if prov.is_file():
            try:
                w = float(json.loads(prov.read_text()).get("wall_s") or 0)
            except (OSError, ValueError, TypeError, AttributeError):
                w = 0.0
            if w > wall:
                best, wall = d.name, w
    return best


def paper_scale_rows(rows, chapter: str, *, profile: str = "paper", archive: Path | None = None,
                     root: Path | None = None):
    """``rows`` (a chapter's comparisons frame) with the archived run at ``profile`` beside it: columns
    ``ours_archived`` and ``verdict_archived`` (empty where the archive has no such row), and the
    entry's status (an :class:`EntryStatus`, or None when there is no entry) in ``attrs["archived"]``.
    Rows are matched by (where, quantity, occurrence)."""
    import pandas as pd

    archive = Path(archive) if archive is not None else archive_root(root)
    df = rows.copy()
    df["ours_archived"] = ""
    df["verdict_archived"] = ""
    df.attrs["archived"] = None
    d = entry_dir(archive, profile, chapter)
    if not (d / PROVENANCE).is_file():
        return df
    try:
        status = next(s for s in check(root, archive=archive) if s.profile == profile and s.chapter == chapter)
    except (StopIteration, FileNotFoundError):
        return df
    df.attrs["archived"] = status
    if status.state == "invalid":
        return df
    arch = pd.read_csv(d / FILENAME, dtype=str, keep_default_na=False)
    if arch.empty or df.empty:
        return df
    amap = dict(zip(_keyed(arch), zip(arch["ours"], arch["verdict"])))
    keys = _keyed(df)
    df["ours_archived"] = [amap.get(k, ("", ""))[0] for k in keys]
    df["verdict_archived"] = [amap.get(k, ("", ""))[1] for k in keys]
    return df


def main_check(root: Path | None = None, *, strict: bool = False, log=print) -> int:
    """``archive-check``: every entry's schema and stamp, and the archive's size; exit status 1 on an
    invalid entry or an archive over :data:`MAX_BYTES` (and, with ``strict``, on a stale entry)."""
    from . import runner

    root = runner.find_root(root)
    arch = archive_root(root)
    statuses = check(root, archive=arch)
    size = size_bytes(arch)
    bad = 0
    for s in statuses:
        line = f"{s.state:8s} {s.profile}/{s.chapter}"
        if s.changes or s.problems:
            line += ": " + "; ".join(s.changes or s.problems)
        log(line)
        bad += s.state == "invalid" or (strict and s.state == "stale")
    log(f"{len(statuses)} entries ({sum(s.current for s in statuses)} current, "
        f"{sum(s.state == 'stale' for s in statuses)} stale, {sum(s.state == 'invalid' for s in statuses)} invalid); "
        f"{size / 1e6:.2f} MB of {MAX_BYTES / 1e6:.0f} MB")
    if size > MAX_BYTES:
        log(f"error: the archive is {size / 1e6:.2f} MB, over {MAX_BYTES / 1e6:.0f} MB")
        bad += 1
    return 1 if bad else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main_check())
