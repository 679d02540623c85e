"""A figure's data, and the figure drawn again from it.

:func:`figure_data` reads what a matplotlib figure shows — per axes its position, title, labels,
scales, limits and tick labels, and its lines, points, segments, bands, bars and images — into plain
arrays (one JSON string ``meta`` describes the axes and names the arrays). :func:`save_figure_data`
writes them to a compressed NPZ file, thinned for storage (:func:`compact`), and :func:`redraw` draws
a figure from such a file again: the same axes and data, in today's style rather than the original's
every detail. The book's archive keeps these files beside a long run's rows, and the figure tests
read the plotted data from them.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.collections import LineCollection, PathCollection, PolyCollection
from matplotlib.colors import to_rgba
from matplotlib.image import AxesImage
from matplotlib.patches import Rectangle

from ..atomic import atomic_file

__all__ = ["MAX_POINTS", "figure_data", "compact", "save_figure_data", "compact_file", "redraw"]


def _rgba(c) -> list[float]:
    try:
        return [float(x) for x in to_rgba(c)]
    except (ValueError, TypeError):
        return [0.0, 0.0, 0.0, 1.0]


def figure_data(fig) -> dict[str, np.ndarray]:
    """The data behind ``fig`` as arrays (``meta``: one JSON string describing axes and artists, the
    arrays named ``a<i>_<artist>_<j>``): enough for :func:`redraw`."""
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
    import matplotlib.pyplot as plt  # deferred: importing pyplot picks a backend, wanted only where one draws

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
