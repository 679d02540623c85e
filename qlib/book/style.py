"""One plotting style for the whole book, and the figure checks.

Figures are drawn at the width of the book's content column (:data:`COLUMN_IN` inches at
``figure.dpi`` 100, i.e. the column's ~784 px), so that text is printed at the size it was set in and
is never shrunk by the browser. A figure a notebook makes wider is scaled down to the column before
it is shown (aspect kept, its layout engine re-run), and every figure shown is checked for
text that overlaps: a legend over an axis label or title, or tick labels that run into each other. The
checks of a notebook are written to ``<out_dir>/figure-checks.json``, which the book's tests read.
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

PALETTE = "colorblind"
COLUMN_IN = 7.7  # the content column of the book's HTML theme, in inches at 100 dpi
_STATE: dict = {"log": None, "records": []}


def apply(context: str = "notebook", *, checks_to: str | Path | None = None) -> None:
    """Set the seaborn/matplotlib style every chapter uses; with ``checks_to`` (a folder), also fit
    every figure shown to the column and record its overlap checks there."""
    import seaborn as sns

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
        _STATE["records"] = []
        _install_hook()


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


def overlaps(fig) -> list[str]:
    """Text of ``fig`` that overlaps: a legend over an axis label, title or tick labels of its own
    axes, and neighbouring tick labels that run into each other."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    found = []
    for i, ax in enumerate(fig.axes):
        leg = ax.get_legend()
        lb = _bbox(leg, renderer) if leg is not None else None
        texts = {"x label": ax.xaxis.label, "y label": ax.yaxis.label, "title": ax.title}
        if lb is not None:
            for name, t in texts.items():
                tb = _bbox(t, renderer)
                if tb is not None and lb.overlaps(tb):
                    found.append(f"axes {i}: legend overlaps the {name} {t.get_text()!r}")
        for axis_name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            boxes = [b for b in (_bbox(t, renderer) for t in axis.get_ticklabels()) if b is not None]
            boxes.sort(key=lambda b: (b.x0, b.y0))
            for a, b in zip(boxes, boxes[1:]):
                if a.overlaps(b) and a.width > 0 and b.width > 0:
                    found.append(f"axes {i}: {axis_name} tick labels overlap")
                    break
    return found


def check_figure(fig) -> dict:
    """Fit ``fig`` to the column and record its overlap checks (see the module docstring)."""
    w0 = float(fig.get_size_inches()[0])
    scaled = fit_to_column(fig)
    rec = {"figure": len(_STATE["records"]) + 1, "width_in": round(w0, 2), "scaled_to_column": scaled,
           "overlaps": overlaps(fig)}
    _STATE["records"].append(rec)
    if _STATE["log"] is not None:
        _STATE["log"].parent.mkdir(parents=True, exist_ok=True)
        _STATE["log"].write_text(json.dumps(_STATE["records"], indent=1))
    return rec


def _install_hook() -> None:
    """Check every figure as IPython turns it into the PNG the page shows (``plt.show()``, the end of
    a cell, or ``display(fig)`` alike): wrap the inline backend's PNG formatter."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover
        return
    ip = get_ipython()
    if ip is None:
        return
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

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
            check_figure(fig)
            return _orig(fig, *args, **kwargs)

        wrapped._qlib_checked = True
        fmt.for_type(Figure, wrapped)
