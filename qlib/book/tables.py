"""Tables rendered as MyST Markdown (so that maths in cells is typeset by the book)."""

from __future__ import annotations

import math

import pandas as pd

MISSING = "—"


def _is_number(v) -> bool:
    import numbers

    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def _cell(v, math_col: bool, digits: int = 4) -> str:
    if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
        return MISSING
    if isinstance(v, float):
        s = f"{v:.{digits}g}"
    else:
        s = str(v)
    s = s.replace("|", r"\|").replace("\n", " ")
    return f"${s}$" if math_col and s else s


def markdown(df: pd.DataFrame, *, math_columns: list[str] | tuple[str, ...] = (), index: bool = False,
             digits: int = 4) -> str:
    """``df`` as a Markdown pipe table — the one table helper of the book: numbers right-aligned
    with ``digits`` significant digits, "—" for a missing value, no index column (unless ``index``),
    no cell ever truncated; cells of ``math_columns`` are wrapped in ``$…$``."""
    if index:
        df = df.reset_index()
    unknown = set(math_columns) - set(df.columns)
    if unknown:
        raise ValueError(f"math_columns not in the frame: {sorted(unknown)}")
    cols = [str(c) for c in df.columns]
    numeric = [len(df) > 0 and all(_is_number(v) or v is None or v is pd.NA for v in df[c]) for c in df.columns]
    lines = ["| " + " | ".join(c.replace("|", r"\|") for c in cols) + " |",
             "|" + "".join("---:|" if n else "---|" for n in numeric)]
    for row in df.itertuples(index=False):
        lines.append("| " + " | ".join(_cell(v, c in math_columns, digits) for v, c in zip(row, df.columns)) + " |")
    return "\n".join(lines)


def _fmt_number(v, digits: int) -> str:
    if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
        return MISSING
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, float):
        return f"{v:.{digits}g}"
    return str(v)


def html(obj, *, digits: int = 4) -> str:
    """``obj`` (a DataFrame, or a pandas Styler a chapter formatted itself) as the book's one HTML
    table: class ``qlib-table`` (padding and alignment in ``_static/qlib.css``), numbers right-aligned
    with ``digits`` significant digits unless the Styler set its own format, "—" for a missing value,
    no default 0..n-1 index column, and no cell truncated (pandas' 50-character cut does not apply)."""
    from pandas.io.formats.style import Styler

    if isinstance(obj, Styler):
        sty, df = obj, obj.data
        own_format = bool(getattr(obj, "_display_funcs", None))
    else:
        df, own_format = obj, False
        sty = df.style
    if not own_format:
        sty = sty.format(lambda v: _fmt_number(v, digits))
    if isinstance(df.index, pd.RangeIndex) and df.index.start == 0 and df.index.step == 1:
        sty = sty.hide(axis="index")
    numeric = [c for c in df.columns if pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c])]
    if numeric:
        sty = sty.set_properties(subset=numeric, **{"text-align": "right", "font-variant-numeric": "tabular-nums"})
    return sty.set_table_attributes('class="qlib-table"').to_html()


def install_formatter(ip=None) -> bool:
    """Render every DataFrame and Styler a notebook displays through :func:`html` (called by
    :func:`qlib.book.chapter`). Returns False outside IPython."""
    if ip is None:
        try:
            from IPython import get_ipython
        except ImportError:  # pragma: no cover
            return False
        ip = get_ipython()
    if ip is None:
        return False
    from pandas.io.formats.style import Styler

    pd.set_option("styler.format.na_rep", MISSING)  # a chapter's own .style.format(...) shows "—" too
    pd.set_option("display.max_colwidth", None)
    fmt = ip.display_formatter.formatters["text/html"]
    fmt.for_type(pd.DataFrame, html)
    fmt.for_type(Styler, html)
    return True
