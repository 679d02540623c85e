"""One plotting style for every figure of the reproduction, and the figure checks.

Figures are drawn at the width of the book's content column (:data:`COLUMN_IN` inches at
``figure.dpi`` 100, i.e. the column's ~784 px), so that text is printed at the size it was set in and
is never shrunk by the browser. A figure a notebook makes wider is scaled down to the column before
it is shown (aspect kept, its layout engine re-run), and every figure shown is checked (:func:`overlaps`):
any two of its text boxes that collide (every axes' titles, labels, major and minor tick labels,
annotations and legends, and the figure's own texts and legends), a legend on plotted data, text
below :data:`MIN_FONT_PT`. :func:`apply` with ``checks_to`` writes the checks of a notebook to
``<checks_to>/figure-checks.json`` (the book's build and its tests fail on a collision) and, with
``figures_to``, the data behind each figure shown (:func:`qlib.plotting.capture.save_figure_data`):
the caller names the folders, this module knows no book.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import matplotlib
import numpy as np
from matplotlib import ticker
from matplotlib.collections import PathCollection
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.layout_engine import ConstrainedLayoutEngine
from matplotlib.patches import Rectangle
from matplotlib.text import Text

from ..atomic import write_text
from . import capture

__all__ = ["PALETTE", "COLUMN_IN", "METHOD_COLORS", "MIN_FONT_PT", "unchecked", "apply", "legend_outside", "tidy_log_axis", "fit_to_column", "overlaps", "check_figure"]

PALETTE = "colorblind"
COLUMN_IN = 7.7  # the content column of the book's HTML theme, in inches at 100 dpi
_STATE: dict = {"log": None, "figures": None, "records": [], "paused": False}


class unchecked:
    """A block whose figures are neither checked nor recorded (the archived runs' figures a chapter
    draws again from their data: they are not this run's figures)."""

    def __enter__(self):
        self._was = _STATE.get("paused", False)
        _STATE["paused"] = True
        return self

    def __exit__(self, *exc):
        _STATE["paused"] = self._was
        return False


def apply(context: str = "notebook", *, checks_to: str | Path | None = None,
          figures_to: str | Path | None = None) -> None:
    """Set the seaborn/matplotlib style every chapter uses; with ``checks_to`` (a folder), also fit
    every figure shown to the column and record its overlap checks there, and with ``figures_to`` (a
    folder) save the data behind each figure shown there as ``fig-<k>.npz``."""
    import seaborn as sns  # deferred: seaborn loads SciPy and pandas (seconds); only a notebook sets a style

    sns.set_theme(context=context, style="whitegrid", palette=PALETTE)
    matplotlib.rcParams.update(
        {
            "figure.dpi": 100,
            "savefig.dpi": 150,
            "figure.figsize": (COLUMN_IN, 4.0),
            "axes.titlesize": "medium",
            "legend.frameon": False,
        }
    )
    if checks_to is not None:
        _STATE["log"] = Path(checks_to) / "figure-checks.json"
        _STATE["figures"] = Path(figures_to) if figures_to is not None else None
        _STATE["records"] = []
        _install_hook()


#: One colour per compression method, the same in every EDEN chapter (a method never changes colour
#: within the part): the book's colour-blind palette, EDEN's entropy-coded variant a lighter blue
#: beside EDEN, Float32 (no compression) black.
METHOD_COLORS = {
    "EDEN": "#0173b2",
    "EDEN+EE": "#56b4e9",
    "Hadamard+SQ": "#de8f05",
    "Kashin+SQ": "#029e73",
    "QSGD": "#d55e00",
    "QSGD+Elias": "#ca9161",
    "SQ+Huffman": "#949494",
    "Count-Sketch": "#cc78bc",
    "Float32": "#000000",
}


def legend_outside(fig, axes=None, *, loc: str | None = None, ncol: int | None = None, title: str | None = None,
                   fontsize: str | float | None = None):
    """One legend for ``fig`` outside its axes, so that it covers neither data nor text: the entries of
    ``axes`` (default: every axes of the figure; each label once, their own legends removed) in the
    figure's margin at ``loc`` — ``"lower center"`` (below everything; the default), ``"upper
    center"`` (the default when the figure has a ``supxlabel``, which the layout also puts at the
    bottom edge) or ``"center right"`` — in as many balanced columns as fit the figure's width
    (``ncol`` to choose), with the legend's ``title`` and ``fontsize`` (matplotlib's defaults when None).
    The figure's layout becomes constrained, so that its axes make room; the legend is returned. Call
    it last (after ``supxlabel``), and not ``tight_layout`` after it."""
    if ncol is not None and (isinstance(ncol, bool) or not isinstance(ncol, int)):
        raise TypeError(f"ncol must be an integer >= 1 or None, got {ncol!r} ({type(ncol).__name__})")
    if ncol is not None and ncol < 1:
        raise ValueError(f"ncol must be an integer >= 1 or None, got {ncol}")
    _check_fontsize(fontsize)
    axs = list(fig.axes) if axes is None else list(np.ravel(np.asarray(axes, dtype=object)))
    handles, labels = [], []
    for ax in axs:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
        if ax.get_legend() is not None:
            ax.get_legend().remove()
    if not isinstance(fig.get_layout_engine(), ConstrainedLayoutEngine):
        fig.set_layout_engine("constrained")
    if loc is None:
        loc = "upper center" if getattr(fig, "_supxlabel", None) is not None else "lower center"
    if loc not in ("lower center", "upper center", "center right"):
        raise ValueError(f"loc must be 'lower center', 'upper center' or 'center right', got {loc!r}")
    n = max(1, len(labels))
    if loc == "center right":
        return fig.legend(handles, labels, loc=f"outside {loc}", ncol=ncol or 1, title=title, fontsize=fontsize)
    renderer = fig.canvas.get_renderer()
    width = fig.bbox.width
    fits = ncol or n
    while True:
        cols = ncol or math.ceil(n / math.ceil(n / fits))  # balanced: as few rows, then columns as even
        leg = fig.legend(handles, labels, loc=f"outside {loc}", ncol=cols, title=title, fontsize=fontsize)
        if ncol or cols == 1 or leg.get_window_extent(renderer).width <= 0.98 * width:
            return leg
        leg.remove()
        fits = cols - 1


def _check_fontsize(fontsize) -> None:
    """A legend's ``fontsize``: None, one of matplotlib's named sizes, or a finite size > 0 in points."""
    if fontsize is None:
        return
    if isinstance(fontsize, str):
        names = [k for k in matplotlib.font_manager.font_scalings if k]
        if fontsize not in names:
            raise ValueError(f"fontsize must be a size in points or one of {', '.join(map(repr, names))}, got "
                             f"{fontsize!r}")
        return
    if isinstance(fontsize, bool) or not isinstance(fontsize, (int, float)):
        raise TypeError(f"fontsize must be a size in points or a named size, got {fontsize!r} ({type(fontsize).__name__})")
    if not (math.isfinite(fontsize) and fontsize > 0):
        raise ValueError(f"fontsize must be a finite size > 0 in points, got {fontsize}")


def tidy_log_axis(ax, axis: str = "x") -> None:
    """Label a base-10 log ``axis`` of ``ax`` (and of the axes sharing it) so that its labels never
    crowd: plain numbers (``0.5``, ``2``, ``0.0002``) at 1, 2 and 5 × 10^k where they fit the axis'
    length, else at the powers of ten only, else at 1 and 3 × 10^k (the view holds fewer than two powers), else at a power alone,
    and no minor tick labels (matplotlib labels minor ticks such as ``3×10^0`` on short log axes,
    where they run into each other). Call it after plotting, once the figure has its size."""
    if axis not in ("x", "y"):
        raise ValueError(f"axis must be 'x' or 'y', got {axis!r}")
    a = ax.xaxis if axis == "x" else ax.yaxis
    lo, hi = sorted(a.get_view_interval())
    if not (lo > 0 and hi > lo):
        return
    fig = ax.get_figure()
    box = ax.get_position()  # figure fraction: the axes' length before the layout engine runs
    length = 0.9 * (box.width * fig.bbox.width if axis == "x" else box.height * fig.bbox.height)
    labels = a.get_ticklabels()
    font = FontProperties(size=labels[0].get_fontsize() if labels else matplotlib.rcParams["font.size"])
    renderer = fig.canvas.get_renderer()
    pad = 0.4 * font.get_size_in_points() * fig.dpi / 72  # pixels kept clear between two labels

    def fmt(v, _pos=None):
        return f"{v:g}"

    def extent(v):  # a label's width (x) or height (y) in pixels
        w, h, _ = renderer.get_text_width_height_descent(fmt(v), font, ismath=False)
        return w if axis == "x" else h

    def ticks(subs):
        return [m * 10.0**k for k in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
                for m in subs if lo * (1 - 1e-9) <= m * 10.0**k <= hi * (1 + 1e-9)]

    def fits(subs):
        t = ticks(subs)
        px = [length * math.log10(v / lo) / math.log10(hi / lo) for v in t]
        return len(t) >= 2 and all(q - p >= (extent(u) + extent(v)) / 2 + pad for p, q, u, v in zip(px, px[1:], t, t[1:]))

    subs = next((c for c in ((1.0, 2.0, 5.0), (1.0,), (1.0, 3.0)) if fits(c)),
                (1.0,) if ticks((1.0,)) else (1.0, 2.0, 5.0))  # too short for two labels: the power alone
    a.set_major_locator(ticker.LogLocator(base=10, subs=subs))
    a.set_major_formatter(ticker.FuncFormatter(fmt))
    a.set_minor_formatter(ticker.NullFormatter())


def fit_to_column(fig) -> bool:
    """Scale ``fig`` down to the column width (aspect kept); True when it was wider."""
    w, h = fig.get_size_inches()
    if w <= COLUMN_IN + 1e-6:
        return False
    fig.set_size_inches(COLUMN_IN, h * COLUMN_IN / w, forward=True)
    engine = fig.get_layout_engine()
    if engine is not None:
        engine.execute(fig)
    return True


def _bbox(artist, renderer):
    try:
        if not artist.get_visible() or (hasattr(artist, "get_text") and not artist.get_text()):
            return None
        return artist.get_window_extent(renderer)
    except (RuntimeError, ValueError, AttributeError):
        return None


#: the smallest text a figure may print, in points (the book's body text is about 16 px)
MIN_FONT_PT = 8.0
#: pixels two boxes may share before they count as overlapping (anti-aliased edges touch)
_SLACK_PX = 1.0


def _inter(a, b) -> bool:
    """True when boxes ``a`` and ``b`` share more than a sliver (:data:`_SLACK_PX` each way)."""
    return (min(a.x1, b.x1) - max(a.x0, b.x0) > _SLACK_PX) and (min(a.y1, b.y1) - max(a.y0, b.y0) > _SLACK_PX)


def _texts(fig, renderer) -> list[tuple[str, str, object, object]]:
    """Every visible text of ``fig`` as (owner, name, artist, box): per axes its title(s), axis labels,
    major and minor tick labels, annotations and legend (one box); the figure's suptitle, supxlabel,
    supylabel, texts and legends."""
    out = []

    def add(owner, name, artist):
        b = _bbox(artist, renderer)
        if b is not None and b.width > 0 and b.height > 0:
            out.append((owner, name, artist, b))

    for i, ax in enumerate(fig.axes):
        if not ax.get_visible():
            continue
        own = f"axes {i}"
        for t in (ax.title, getattr(ax, "_left_title", None), getattr(ax, "_right_title", None)):
            if t is not None:
                add(own, f"title {t.get_text()!r}", t)
        # an axes turned off (``set_axis_off``, ``axis("off")``) draws neither its axis labels nor its ticks
        if ax.xaxis.get_visible() and ax.axison:
            add(own, f"x label {ax.xaxis.label.get_text()!r}", ax.xaxis.label)
        if ax.yaxis.get_visible() and ax.axison:
            add(own, f"y label {ax.yaxis.label.get_text()!r}", ax.yaxis.label)
        for axis_name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            if not axis.get_visible() or not ax.axison:  # a twin's shared axis is hidden
                continue
            lo, hi = sorted(axis.get_view_interval())
            eps = 1e-9 * max(1.0, abs(lo), abs(hi))
            for minor in (False, True):
                locs = axis.get_minorticklocs() if minor else axis.get_majorticklocs()
                for loc, t in zip(locs, axis.get_ticklabels(minor=minor)):
                    if lo - eps <= loc <= hi + eps:  # only the ticks drawn (in the view)
                        add(own, f"{axis_name} {'minor ' if minor else ''}tick label {t.get_text()!r}", t)
        for t in ax.texts:
            add(own, f"text {t.get_text()[:30]!r}", t)
        leg = ax.get_legend()
        if leg is not None:
            add(own, "legend", leg)
    sup = []
    for name in ("_suptitle", "_supxlabel", "_supylabel"):
        t = getattr(fig, name, None)
        if t is not None:
            sup.append(t)
            add("figure", f"{name.strip('_')} {t.get_text()!r}", t)
    for t in fig.texts:
        if not any(t is u for u in sup):
            add("figure", f"text {t.get_text()[:30]!r}", t)
    for k, leg in enumerate(fig.legends):
        add("figure", f"legend {k}", leg)
    return out


def _font_sizes(fig) -> list[tuple[str, float]]:
    """(text, size in points) of every visible text artist of ``fig`` (legend entries included)."""
    seen = []
    for t in fig.findobj(Text):
        try:
            if t.get_visible() and t.get_text().strip() and t.get_figure() is fig:
                seen.append((t.get_text()[:30], float(t.get_fontsize())))
        except (AttributeError, ValueError):
            continue
    return seen


def _data_under(box, ax, renderer) -> bool:
    """True when plotted data of ``ax`` (line segments, markers, scatter points, bars) falls inside
    ``box`` (display coordinates), shrunk by :data:`_SLACK_PX`."""
    # only what is drawn: the part of the box over the axes' own area (lines are clipped to it)
    ab = ax.get_window_extent(renderer)
    x0, y0 = max(box.x0, ab.x0) + _SLACK_PX, max(box.y0, ab.y0) + _SLACK_PX
    x1, y1 = min(box.x1, ab.x1) - _SLACK_PX, min(box.y1, ab.y1) - _SLACK_PX
    if x1 <= x0 or y1 <= y0:
        return False

    def inside(p):
        return (p[:, 0] > x0) & (p[:, 0] < x1) & (p[:, 1] > y0) & (p[:, 1] < y1)

    for line in ax.get_lines():
        if not line.get_visible():
            continue
        xy = np.asarray(line.get_xydata(), dtype=float)
        if xy.ndim != 2 or len(xy) == 0:
            continue
        p = line.get_transform().transform(xy)
        p = p[np.isfinite(p).all(axis=1)]
        if len(p) == 0:
            continue
        if inside(p).any():
            return True
        if line.get_linestyle() not in ("None", "none", "", " ") and len(p) > 1:
            # segments crossing the box without a vertex in it: sample each segment
            t = np.linspace(0.0, 1.0, 17)[1:-1, None, None]
            pts = (p[:-1][None] * (1 - t) + p[1:][None] * t).reshape(-1, 2)
            if inside(pts).any():
                return True
    for coll in ax.collections:
        if isinstance(coll, PathCollection) and coll.get_visible():
            offs = np.asarray(coll.get_offsets(), dtype=float)
            if offs.ndim == 2 and len(offs):
                p = coll.get_offset_transform().transform(offs)
                if inside(p[np.isfinite(p).all(axis=1)]).any():
                    return True
    for patch in ax.patches:
        if isinstance(patch, Rectangle) and patch.get_visible():
            b = patch.get_window_extent(renderer)
            if b.width > 0 and b.height > 0 and min(b.x1, x1) > max(b.x0, x0) and min(b.y1, y1) > max(b.y0, y0):
                return True
    return False


def overlaps(fig) -> list[str]:
    """Every collision of ``fig``'s text, and text too small to read: any two text boxes of the figure
    that overlap — titles, axis labels, major and minor tick labels, annotations and legends of every
    axes (twin axes included), and the figure's own suptitle/supxlabel/supylabel, texts and legends
    (a legend's own entries excepted); a legend lying on the plotted data (lines, markers, scatter
    points, bars) of any axes it covers; and any text set below :data:`MIN_FONT_PT` points."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    found: list[str] = []
    boxes = _texts(fig, renderer)
    for k, (own_a, name_a, art_a, a) in enumerate(boxes):
        for own_b, name_b, art_b, b in boxes[k + 1:]:
            if not _inter(a, b):
                continue
            if "legend" in name_a and art_b in _legend_texts(art_a) or "legend" in name_b and art_a in _legend_texts(art_b):
                continue
            same_axis = own_a == own_b and name_a.split(" ")[0] == name_b.split(" ")[0] and "tick label" in name_a \
                and "tick label" in name_b
            if same_axis:
                found.append(f"{own_a}: {name_a.split(' ')[0]} tick labels overlap")
            else:
                (own_a, name_a), (own_b, name_b) = sorted(((own_a, _group(name_a)), (own_b, _group(name_b))),
                                                          key=lambda x: "legend" not in x[1])
                where = own_a if own_a == own_b else f"{own_a} / {own_b}"
                found.append(f"{where}: {name_a} collides with {name_b}")
    for own, name, _art, box in boxes:
        if "legend" not in name:
            continue
        for i, ax in enumerate(fig.axes):
            if ax.get_visible() and _data_under(box, ax, renderer):
                found.append(f"{own}: {name} lies on the data of axes {i}")
    small = sorted({(t, s) for t, s in _font_sizes(fig) if s < MIN_FONT_PT - 1e-9}, key=lambda x: x[1])
    if small:
        found.append(f"{len(small)} text(s) below {MIN_FONT_PT:g} pt, e.g. {small[0][0]!r} at {small[0][1]:.1f} pt")
    return list(dict.fromkeys(found))


def _group(name: str) -> str:
    """A tick label's name as its axis' ("x tick label '0.5'" → "x tick labels"): one message per axis."""
    return name.split(" tick label ")[0] + " tick labels" if " tick label " in name else name


def _legend_texts(leg) -> list:
    try:
        return list(leg.get_texts()) + [leg.get_title()]
    except AttributeError:
        return []


def check_figure(fig) -> dict:
    """Fit ``fig`` to the column and record its overlap checks (see the module docstring)."""
    w0 = float(fig.get_size_inches()[0])
    scaled = fit_to_column(fig)
    rec = {"figure": len(_STATE["records"]) + 1, "width_in": round(w0, 2), "scaled_to_column": scaled,
           "overlaps": overlaps(fig)}
    _STATE["records"].append(rec)
    if _STATE["log"] is not None:
        _STATE["log"].parent.mkdir(parents=True, exist_ok=True)
        write_text(_STATE["log"], json.dumps(_STATE["records"], indent=1))
    if _STATE["figures"] is not None:  # the data behind the figure (capture.redraw draws it again)
        capture.save_figure_data(fig, _STATE["figures"] / f"fig-{rec['figure']}.npz")
    return rec


def _install_hook() -> None:
    """Check every figure as IPython turns it into the PNG the page shows (``plt.show()``, the end of
    a cell, or ``display(fig)`` alike): wrap the inline backend's PNG formatter."""
    try:
        from IPython import get_ipython  # deferred: IPython is there only in a kernel
    except ImportError:  # pragma: no cover
        return
    ip = get_ipython()
    if ip is None:
        return
    import matplotlib.pyplot as plt  # deferred: importing pyplot picks a backend, which only a kernel should

    # load the (lazily imported) inline backend now: it registers its figure formatters when first
    # imported, which would otherwise replace the wrapper below at the first figure
    plt.switch_backend(matplotlib.get_backend())

    for mime in ("image/png", "image/svg+xml"):
        fmt = ip.display_formatter.formatters.get(mime)
        if fmt is None:
            continue
        try:
            orig = fmt.lookup_by_type(Figure)
        except KeyError:
            continue
        if getattr(orig, "_qlib_checked", False):
            continue

        def wrapped(fig, *args, _orig=orig, **kwargs):
            if not _STATE.get("paused"):
                check_figure(fig)
            return _orig(fig, *args, **kwargs)

        wrapped._qlib_checked = True
        fmt.for_type(Figure, wrapped)
