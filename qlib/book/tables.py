"""Tables rendered as MyST Markdown (so that maths in cells is typeset by the book)."""

from __future__ import annotations

import math
import numbers
import re

import pandas as pd

__all__ = ["MISSING", "MATH_TOKEN", "md_math", "html_math", "markdown", "html", "header_text", "install_formatter"]

MISSING = "—"

#: plain-text maths in the texts of rows and tables: r_Q^n, C_P^1, Δ_n, δ_2², 2^10, 10^-1.5 (one letter
#: before the underscore, at most three after it, so snake_case words such as n_draws never match)
MATH_TOKEN = re.compile(r"(?<![\w$\\])(?:[A-Za-zΔδεθλμσΘ]_[A-Za-z0-9]{1,3}(?:\^[-A-Za-z0-9.]{1,4})?[²³]?"
                        r"|\d+\^-?[0-9.]*[0-9])(?![\w$])")


def md_math(text: str) -> str:
    """``text`` with its plain-text maths (``r_Q^n``, ``2^10``, ``10^-1.5``, ``Δ_n``) wrapped in ``$…$`` so
    that the book typesets it; snake_case words (``n_draws``) are left alone (they never match: one
    letter before the underscore, at most three after it)."""
    def sub(m: re.Match) -> str:
        t = m.group(0)
        t = re.sub(r"\^(-?[0-9.]+|[A-Za-z0-9]+)", lambda g: "^{" + g.group(1) + "}", t)
        t = re.sub(r"_([A-Za-z0-9]+)", lambda g: "_{" + g.group(1) + "}", t)
        t = t.replace("²", "^2").replace("³", "^3").replace("Δ", r"\Delta ").replace("δ", r"\delta ")
        t = t.replace("ε", r"\varepsilon ").replace("θ", r"\theta ").replace("Θ", r"\Theta ")
        t = t.replace("λ", r"\lambda ").replace("μ", r"\mu ").replace("σ", r"\sigma ")
        return "$" + t + "$"

    parts = str(text).split("`")  # code spans (odd parts) stay as they are
    return "`".join(p if i % 2 else MATH_TOKEN.sub(sub, p) for i, p in enumerate(parts))


def html_math(text: str) -> str:
    """Plain-text maths (:data:`MATH_TOKEN`) as HTML sub- and superscripts, for the HTML tables that
    the book's MathJax does not typeset: ``r_Q^n`` → r<sub>Q</sub><sup>n</sup>, ``2^10`` → 2<sup>10</sup>."""
    def sub(m: re.Match) -> str:
        t = m.group(0)
        t = re.sub(r"\^(-?[0-9.]+|[A-Za-z0-9]+)", lambda g: "<sup>" + g.group(1) + "</sup>", t)
        return re.sub(r"_([A-Za-z0-9]+)", lambda g: "<sub>" + g.group(1) + "</sub>", t)

    # a bracketed or braced exponent (e^(−n r_Q^n), n^{-1/2}) and one after a bracket ((1−p)^n), then the tokens
    text = _EXPONENT.sub(lambda g: "<sup>" + (g.group(1) or g.group(2) or g.group(3)) + "</sup>", str(text))
    return MATH_TOKEN.sub(sub, text)


#: an exponent MATH_TOKEN leaves: bracketed (one level of nesting), braced, or after a closing bracket
_EXPONENT = re.compile(r"(?<=[A-Za-z0-9)])\^(\((?:[^()]|\([^()]*\))*\))|(?<=[A-Za-z0-9)])\^\{([^{}]*)\}"
                       r"|(?<=\))\^([A-Za-z0-9]+)")


def _is_number(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def _cell(v, math_col: bool, digits: int = 4) -> str:
    if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
        return MISSING
    if isinstance(v, float):
        s = f"{v:.{digits}g}"
    else:
        s = str(v) if math_col else md_math(str(v))
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
    numeric = [len(df) > 0 and all(_is_number(v) or v is None or v is pd.NA for v in df[c]) for c in df.columns]
    lines = ["| " + " | ".join(md_math(header_text(c)).replace("|", r"\|") for c in df.columns) + " |",
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
    from pandas.io.formats.style import Styler  # deferred: pandas' Styler needs jinja2, of the book extra

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
    sty = sty.format_index(header_text, axis=1).format_index(header_text, axis=0)
    out = sty.set_table_attributes('class="qlib-table"').to_html()
    # a chapter's own format (f"{v:.3f}") prints a missing value as "nan": the book's "—" instead
    out = _NAN_CELL.sub(lambda m: m.group(1) + MISSING + m.group(2), out)
    return _CELL_TEXT.sub(lambda m: m.group(1) + html_math(m.group(2)) + m.group(3), out)


_NAN_CELL = re.compile(r"(<t[dh][^>]*>)\s*(?:nan|NaN|<NA>|None)\s*(</t[dh]>)")
_CELL_TEXT = re.compile(r"(<t[dh][^>]*>)([^<]*)(</t[dh]>)")
_SNAKE = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)+$")


def header_text(v) -> str:
    """A column or index label as a reader sees it: ``final_train_acc`` → "final train acc", a float
    label printed short (0.1, not 0.100000), a missing one as "—"; anything else unchanged."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return MISSING
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, str) and _SNAKE.match(v):
        return v.replace("_", " ")
    return str(v)


def install_formatter(ip=None) -> bool:
    """Render every DataFrame and Styler a notebook displays through :func:`html` (called by
    :func:`qlib.book.chapter`). Returns False outside IPython."""
    if ip is None:
        try:
            from IPython import get_ipython  # deferred: IPython is there only in a kernel
        except ImportError:  # pragma: no cover
            return False
        ip = get_ipython()
    if ip is None:
        return False
    from pandas.io.formats.style import Styler  # deferred: pandas' Styler needs jinja2, of the book extra

    pd.set_option("styler.format.na_rep", MISSING)  # a chapter's own .style.format(...) shows "—" too
    pd.set_option("display.max_colwidth", None)
    fmt = ip.display_formatter.formatters["text/html"]
    fmt.for_type(pd.DataFrame, html)
    fmt.for_type(Styler, html)
    return True
