"""Comparison rows: what a reproduction function returns and a chapter records.

A :class:`Row` says which item of which paper it concerns, its **kind**, the paper's value, ours,
the tolerance and whether it passed. The kind says what the comparison is worth:

* ``paper-number`` — a value printed in the paper, against ours;
* ``paper-claim`` — a qualitative claim stated in the paper, tested on our numbers;
* ``theory-check`` — our computation against an independent computation of the same quantity
  (Monte Carlo, brute force, a second method); the "paper" column holds that reference;
* ``arithmetic`` — the paper's own numbers recomputed from its own inputs;
* ``erratum`` — a printed statement shown to be wrong (``passed`` = the erratum is confirmed);
* ``not-implemented`` / ``not-available-offline`` — an item of the paper the book does not reproduce,
  with the reason;
* ``probe`` — one of *our* variants or ablations (another reading, another setting, a sensitivity run):
  shown and recorded, and the evidence a cause names (:mod:`qlib.repro.findings`), but never a difference
  from the paper, never a reproduction, never in a claim's verdict. Its verdict is ``probe passes`` /
  ``probe fails`` (the probe's own stated test: "within the row's tolerance of the paper's value", "the
  spread across embedders is at least the gap", …).

Only ``paper-number`` and ``paper-claim`` rows can count as reproductions, and only when they could
have failed: every such row names its **null** (:class:`Null`) — what a trivial or broken implementation
would give (no effect of quantization, the unquantized model, chance level, the majority class, the
paper's own formula re-evaluated) — and ``null_fails`` says whether that null fails the *same* test. A
passing row reads *reproduced* only when ``null_fails`` is True; a passing row whose null passes too, or
that states no null, reads *consistent* (not counted as a reproduction). :func:`close` computes
``null_fails`` with the row's own tolerance; :func:`check` does so for any test (a callable) applied to
``ours`` and to the null's value; :func:`claim` takes it from ``Null.fails``, computed by the caller. The
verdict word is derived from the kind and the outcomes (:func:`verdict`), never typed.

A builder takes the paper's side as one record, :class:`Item` (where, quantity, the paper's value, which
paper), then ours, then how they are compared::

    close(Item("Table 2", "accuracy, 2 bits", 0.91), ours, atol=0.03, basis="printed precision",
          null=Null(acc_unquantized, label="unquantized"))

Values: ``Item.paper_value`` and ``ours`` are whatever the row shows (numbers, ±inf — the paper prints
R² < −1 as −inf —, text, ``None`` where a row is not judged). A NaN never passes: :func:`close`
records a NaN (or infinite) ``ours`` as a failed comparison (verdict "differs", the value shown), and
a row built with ``passed=True`` whose ``paper_value`` or ``ours`` is NaN or ``None`` is refused
(``ValueError`` naming the field), so a computation that produced NaN can never read "reproduced".
Complex values are refused (``TypeError``).

**Ledger frames** (the rows a chapter records, as a pandas DataFrame: ``comparisons.csv``, the book's
``ledger.csv``) enter the findings through one door, :func:`check_ledger`: every function of
:mod:`qlib.repro.findings` and :mod:`qlib.book.findings` that takes such a frame calls it first, so a frame
that is not a DataFrame, lacks a column the function reads, or holds a ``verdict`` outside
:data:`VERDICTS` (NaN, ``None``, "mostly") or a ``kind`` outside :data:`KINDS` is refused with a
``TypeError``/``ValueError`` naming the argument, the column, the row and the allowed words — never
counted as a difference.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Iterable

import numpy as np

KINDS = (
    "paper-number",
    "paper-claim",
    "theory-check",
    "arithmetic",
    "erratum",
    "not-implemented",
    "not-available-offline",
    "probe",
)
REPRODUCING_KINDS = ("paper-number", "paper-claim")
MISSING_KINDS = ("not-implemented", "not-available-offline")
PAPERS = ("001", "002", "003", "004")

#: the verdict of a passing paper-number / paper-claim row whose null passes too (or is not stated)
CONSISTENT = "consistent"
#: verdict words, by kind and outcome (passed True / False / None = cannot be judged)
_WORDS = {
    "paper-number": ("reproduced", "differs", "not comparable"),
    "paper-claim": ("reproduced", "differs", "not comparable"),
    "theory-check": ("agrees", "disagrees", "not comparable"),
    "arithmetic": ("agrees", "disagrees", "not comparable"),
    "erratum": ("erratum confirmed", "erratum not confirmed", "not comparable"),
    "not-implemented": (None, None, "not implemented"),
    "not-available-offline": (None, None, "not available offline"),
    "probe": ("probe passes", "probe fails", "not comparable"),
}
#: the verdicts of our own probes (kind ``probe``): neither passing nor differing from the paper
PROBE_VERDICTS = _WORDS["probe"][:2]
VERDICTS = tuple(dict.fromkeys([*(w for ws in _WORDS.values() for w in ws if w), CONSISTENT]))
#: the verdicts by outcome: a row that passes (``consistent`` too: it passes, its null as well), a row that
#: differs from the paper (each carries a cause), a row that cannot be judged
PASSING = tuple(dict.fromkeys([*(ws[0] for k, ws in _WORDS.items() if ws[0] and k != "probe"), CONSISTENT]))
DIFFERING = tuple(dict.fromkeys(ws[1] for k, ws in _WORDS.items() if ws[1] and k != "probe"))
UNJUDGED = tuple(dict.fromkeys(ws[2] for ws in _WORDS.values() if ws[2]))


#: the columns of a ledger frame that every findings function reads (a :class:`~qlib.repro.findings.Select`'s
#: chapter glob and patterns, and the verdict)
LEDGER_COLUMNS = ("chapter", "where", "quantity", "verdict")


def _shown_value(v: Any) -> str:
    return "NaN" if isinstance(v, (float, np.floating)) and math.isnan(v) else repr(v)


def _vocabulary(name: str, words: Any) -> frozenset:
    if isinstance(words, str) or not isinstance(words, (tuple, list, frozenset, set)) or not words \
            or not all(isinstance(w, str) for w in words):
        raise TypeError(f"{name} must be a non-empty tuple of words, got {words!r}")
    return frozenset(words)


def check_ledger(df: Any, name: str = "df", columns: Iterable[str] = LEDGER_COLUMNS, *,
                 verdicts: tuple[str, ...] = VERDICTS, what: str = "ledger rows"):
    """``df``, checked at the door of every function that reads a ledger frame: a pandas DataFrame (else a
    ``TypeError`` naming ``name`` and the type: ``None``, a list, a dict…) holding ``columns`` (else a
    ``ValueError`` naming ``name`` and the columns it lacks; an empty frame needs them too), whose ``verdict``
    column, where it has one, holds only words of ``verdicts`` (the ledger's :data:`VERDICTS`; the findings
    frame of :mod:`qlib.book.findings` passes the claim verdicts) and whose ``kind`` column, where it has one,
    only :data:`KINDS` (``what`` says what the rows are, for the message). A bad value (NaN, ``None``, a
    number, a word such as "mostly") raises a ``ValueError`` naming ``name``, the column, the first bad row
    (its position and index label), its value, how many rows are bad and the allowed words."""
    import pandas as pd  # deferred: pandas (~0.2 s); the claim registries import the ledger without it

    if not isinstance(name, str) or not name.strip():
        raise TypeError(f"name must be the argument's name (a non-empty string), got {name!r}")
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"{name} must be a pandas DataFrame of {what}, got {type(df).__name__}")
    if isinstance(columns, str) or not isinstance(columns, Iterable):
        raise TypeError(f"columns must be a tuple of column names, got {columns!r}")
    columns = tuple(columns)
    if not all(isinstance(c, str) for c in columns):
        raise TypeError(f"columns must be a tuple of column names, got {columns!r}")
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"{name} lacks the column{'s' if len(missing) > 1 else ''} {', '.join(map(repr, missing))} "
                         f"(it has {', '.join(map(repr, map(str, df.columns))) or 'no columns'})")
    for col, words in (("verdict", _vocabulary("verdicts", verdicts)), ("kind", frozenset(KINDS))):
        if col not in df.columns:
            continue
        values = df[col]
        if isinstance(values, pd.DataFrame):
            raise ValueError(f"{name} has {values.shape[1]} columns named {col!r}; a ledger frame has one")
        try:
            ok = values.isin(words).to_numpy(dtype=bool)
        except TypeError:  # unhashable entries (a list…): not words either
            ok = np.array([isinstance(v, str) and v in words for v in values], dtype=bool)
        if not ok.all():
            bad = np.flatnonzero(~ok)
            i = int(bad[0])
            more = f" ({len(bad)} rows are bad)" if len(bad) > 1 else ""
            allowed = verdicts if col == "verdict" else KINDS
            v, label = (x.item() if isinstance(x, np.generic) else x for x in (values.iloc[i], df.index[i]))
            raise ValueError(f"{name}[{col!r}] holds {_shown_value(v)} at row {i} (index {label!r}){more}: "
                             f"a {col} must be one of {', '.join(allowed)}")
    return df


def verdict(kind: str, passed: bool | None, null_fails: bool | None = None) -> str:
    """The verdict word of a row of ``kind`` with outcome ``passed`` (None: not judged) and, for a
    paper-number / paper-claim row, whether its null fails the same test (``null_fails``; None: no
    null stated). A passing reproducing row reads "reproduced" only if ``null_fails`` is True, else
    "consistent"."""
    if kind not in _WORDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}; got {kind!r}")
    for name, v in (("passed", passed), ("null_fails", null_fails)):
        if v is not None and not isinstance(v, (bool, np.bool_)):
            raise TypeError(f"{name} must be True, False or None, got {v!r}")
    words = _WORDS[kind]
    w = words[2] if passed is None else words[0 if passed else 1]
    if w is None:
        raise ValueError(f"a {kind!r} row cannot have passed={passed!r}; use missing()")
    if kind in REPRODUCING_KINDS and passed and null_fails is not True:
        return CONSISTENT
    return w


def fmt(x: Any) -> str:
    """A value as the ledger prints it (6 significant digits for floats)."""
    if x is None:
        return ""
    if isinstance(x, (bool, np.bool_)):
        return str(bool(x))
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    if isinstance(x, (float, np.floating)):
        return f"{float(x):.6g}"
    return str(x)


@dataclass(frozen=True)
class Row:
    """One comparison. ``paper`` may be left ``None`` and is then filled in by the chapter."""

    kind: str
    where: str
    quantity: str
    paper_value: Any
    ours: Any
    passed: bool | None
    tolerance: str = ""
    note: str = ""
    paper: str | None = None
    null: Any = None
    null_fails: bool | None = None

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}; got {self.kind!r}")
        for name in ("where", "quantity"):
            v = getattr(self, name)
            if not isinstance(v, str) or not v.strip():
                raise ValueError(f"{name} must be a non-empty string, got {v!r}")
        if self.paper is not None and self.paper not in PAPERS:
            raise ValueError(f"paper must be one of {', '.join(PAPERS)} or None; got {self.paper!r}")
        if self.passed is not None and not isinstance(self.passed, (bool, np.bool_)):
            raise TypeError(f"passed must be True, False or None, got {type(self.passed).__name__}")
        if self.passed is not None:
            object.__setattr__(self, "passed", bool(self.passed))
        if self.null_fails is not None:
            if not isinstance(self.null_fails, (bool, np.bool_)):
                raise TypeError(f"null_fails must be True, False or None, got {type(self.null_fails).__name__}")
            object.__setattr__(self, "null_fails", bool(self.null_fails))
            if self.null is None or (isinstance(self.null, str) and not self.null.strip()):
                raise ValueError("a row with null_fails set must state its null (null=…)")
            if self.kind not in REPRODUCING_KINDS:
                raise ValueError(f"only paper-number / paper-claim rows carry a null; this row is {self.kind!r}")
        if isinstance(self.null, (complex, np.complexfloating)):
            raise TypeError(f"null must be a real number, text or None, got the complex number {self.null!r}")
        if self.kind in MISSING_KINDS and self.passed is not None:
            raise ValueError(f"a {self.kind!r} row has no outcome (passed=None)")
        if self.kind == "probe" and not str(self.note).strip():
            raise ValueError("a probe row needs a note saying which variant of ours it runs")
        if self.passed is None and not str(self.note).strip():
            raise ValueError("a row that is not judged needs a note saying why")
        for name in ("paper_value", "ours"):
            v = getattr(self, name)
            if isinstance(v, (complex, np.complexfloating)):
                raise TypeError(f"{name} must be a real number, text or None, got the complex number {v!r}")
            if self.passed is not None and v is None:
                raise ValueError(f"{name} must hold the value a judged row (passed={self.passed}) compares, got None; "
                                 "use not_comparable() or missing() for a row without one")
            if self.passed and _is_nan(v):
                raise ValueError(f"{name} is NaN, so the row cannot pass (passed=True): compute passed from the "
                                 "value (NaN compares False), or use not_comparable() with the reason")

    @property
    def verdict(self) -> str:
        return verdict(self.kind, self.passed, self.null_fails)

    @property
    def counts_as_reproduction(self) -> bool:
        return self.kind in REPRODUCING_KINDS and self.passed is True and self.null_fails is True

    def with_paper(self, paper: str) -> "Row":
        return self if self.paper is not None else replace(self, paper=paper)


def _nonempty(name: str, v: Any) -> None:
    if not isinstance(v, str) or not v.strip():
        raise ValueError(f"{name} must be a non-empty string, got {v!r}")


@dataclass(frozen=True)
class Item:
    """The item of a paper a row concerns: ``where`` (the section, table, figure or theorem),
    ``quantity`` (what is compared) and ``paper_value`` (the paper's value; for a ``theory-check`` row the
    independent reference; text where the paper states a claim; "" where there is none), and ``paper``
    (001 … 004, or None: the chapter fills it in). A row builder takes the item first and our side after."""

    where: str
    quantity: str
    paper_value: Any = ""
    paper: str | None = None

    def __post_init__(self):
        _nonempty("where", self.where)
        _nonempty("quantity", self.quantity)
        if self.paper is not None and self.paper not in PAPERS:
            raise ValueError(f"paper must be one of {', '.join(PAPERS)} or None; got {self.paper!r}")
        if isinstance(self.paper_value, (complex, np.complexfloating)):
            raise TypeError(f"paper_value must be a real number, text or None, got the complex number "
                            f"{self.paper_value!r}")


@dataclass(frozen=True)
class Null:
    """A row's null: ``value``, what a trivial or broken implementation would give (no effect of
    quantization, the unquantized model, chance level, the majority class…), and how the row shows it —
    ``shown`` (the display, e.g. "3/9 laws"), else ``"<label> = <value>"`` when ``label`` names it
    ("chance", "unquantized"), else the value. ``fails``: whether the null fails the row's test, given
    only to :func:`claim` (whose test the caller computed); :func:`close` and :func:`check` compute it."""

    value: Any
    label: str = ""
    shown: Any = None
    fails: bool | None = None

    def __post_init__(self):
        if self.value is None:
            raise ValueError("null.value must be the null's value; pass null=None for a row without a null")
        if isinstance(self.value, (complex, np.complexfloating)):
            raise TypeError(f"null.value must be a real number or text, got the complex number {self.value!r}")
        if not isinstance(self.label, str):
            raise TypeError(f"null.label must be a string, got {type(self.label).__name__}")
        if self.fails is not None and not isinstance(self.fails, (bool, np.bool_)):
            raise TypeError(f"null.fails must be True, False or None, got {type(self.fails).__name__}")

    def displayed(self, value: Any) -> Any:
        """What the row's null column holds: ``shown``, else ``"<label> = <value>"``, else ``value``."""
        if self.shown is not None:
            return self.shown
        return f"{self.label} = {fmt(value)}" if self.label else value


def _is_nan(x: Any) -> bool:
    return isinstance(x, (float, np.floating)) and math.isnan(x)


def _finite(name: str, x: Any) -> float:
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number, got {type(x).__name__}")
    x = float(x)
    if not math.isfinite(x):
        raise ValueError(f"{name} must be finite, got {x}")
    return x


def tolerance_text(rtol: float, atol: float) -> str:
    """'±atol + ±rtol%' as the ledger prints a tolerance ('exact' when both are 0)."""
    for name, v in (("rtol", rtol), ("atol", atol)):
        v = _finite(name, v)
        if v < 0:
            raise ValueError(f"{name} must be >= 0, got {v}")
    parts = []
    if atol:
        parts.append(f"±{atol:.3g}")
    if rtol:
        parts.append(f"±{100 * rtol:.3g}%")
    return " + ".join(parts) if parts else "exact"


def _item(item: Any) -> Item:
    if not isinstance(item, Item):
        raise TypeError(f"item must be an Item(where, quantity, paper_value), got {type(item).__name__}")
    return item


def _null(null: Any, builder: str, computes_fails: bool) -> Null | None:
    if null is None:
        return None
    if not isinstance(null, Null):
        raise TypeError(f"null must be a Null(value, …) or None, got {type(null).__name__}")
    if computes_fails and null.fails is not None:
        raise ValueError(f"{builder} computes whether the null fails its test; leave null.fails unset")
    return null


def close(item: Item, ours: float, *, kind: str = "paper-number", rtol: float = 0.0, atol: float = 0.0,
          basis: str = "", note: str = "", null: Null | None = None) -> Row:
    """Numeric comparison: passed iff ``|ours − item.paper_value| ≤ atol + rtol·|item.paper_value|``.

    ``null`` (:class:`Null`): the value a trivial or broken implementation would give (no quantization
    effect, chance level, the unquantized model…); whether it fails is computed with the same test, so the
    row can read *reproduced* only if the null would have failed it. ``basis`` says where the tolerance
    comes from ("printed precision", "2 SE over runs", …); it is appended to the tolerance text.
    A non-finite ``ours`` (a run that produced NaN) is a failed comparison with the value shown,
    never an exception that hides the row.
    """
    item = _item(item)
    p = _finite("item.paper_value", item.paper_value)
    rtol = _finite("rtol", rtol)
    atol = _finite("atol", atol)
    if rtol < 0 or atol < 0:
        raise ValueError(f"rtol and atol must be >= 0, got rtol={rtol}, atol={atol}")
    if isinstance(ours, (bool, np.bool_)) or not isinstance(ours, (int, float, np.integer, np.floating)):
        raise TypeError(f"ours must be a real number, got {type(ours).__name__}")
    o = float(ours)
    ok = math.isfinite(o) and abs(o - p) <= atol + rtol * abs(p)
    nv, nf = None, None
    null = _null(null, "close", computes_fails=True)
    if null is not None:
        n = _finite("null.value", null.value)
        nf = not abs(n - p) <= atol + rtol * abs(p)
        nv = null.displayed(n)
    tol = tolerance_text(rtol, atol) + (f" ({basis})" if str(basis).strip() else "")
    return Row(kind, item.where, item.quantity, p, o, ok, tol, note, item.paper, nv, nf)


def claim(item: Item, ours: Any, passed: bool, *, kind: str = "paper-claim", tolerance: str = "",
          note: str = "", null: Null | None = None) -> Row:
    """A claim or inequality whose test was computed (``passed``); ``tolerance`` states the test.
    ``null`` (:class:`Null`): the trivial implementation's value and, in ``null.fails``, whether it
    fails the same test (computed by the caller with the test that gave ``passed``; :func:`check` does
    both from one callable)."""
    item = _item(item)
    if not isinstance(passed, (bool, np.bool_)):
        raise TypeError(f"passed must be a bool, got {type(passed).__name__}")
    null = _null(null, "claim", computes_fails=False)
    nv = None if null is None else null.displayed(null.value)
    nf = None if null is None or null.fails is None else bool(null.fails)
    return Row(kind, item.where, item.quantity, item.paper_value, ours, bool(passed), tolerance, note, item.paper,
               nv, nf)


def check(item: Item, ours: Any, test, *, null: Null, shown: Any = None, kind: str = "paper-claim",
          tolerance: str = "", note: str = "") -> Row:
    """A claim tested by one callable: ``passed = test(ours)`` and the null fails iff
    ``not test(null.value)``, so the null meets exactly the test our value meets. ``shown``: what the
    row displays instead of ``ours`` (e.g. "7/9 laws"; the null's display is ``null.shown``);
    ``tolerance`` states the test. A test that raises or returns a non-bool is an error; a NaN compares
    False (fails)."""
    item = _item(item)
    if not callable(test):
        raise TypeError(f"test must be callable, got {type(test).__name__}")
    null = _null(null, "check", computes_fails=True)
    if null is None:
        raise TypeError("check needs null=Null(value, …): the value a trivial implementation gives")
    ok, nok = test(ours), test(null.value)
    for name, v in (("test(ours)", ok), ("test(null.value)", nok)):
        if not isinstance(v, (bool, np.bool_)):
            raise TypeError(f"{name} must return a bool, got {type(v).__name__}")
    return Row(kind, item.where, item.quantity, item.paper_value, ours if shown is None else shown, bool(ok),
               tolerance, note, item.paper, null.displayed(null.value), not bool(nok))


def not_comparable(item: Item, ours: Any = None, *, reason: str, kind: str = "paper-number") -> Row:
    """A row of ``kind`` that cannot be judged (different data, a case the claim does not cover…)."""
    item = _item(item)
    return Row(kind, item.where, item.quantity, item.paper_value, ours, None, "", reason, item.paper)


def missing(item: Item, *, reason: str, offline: bool = False) -> Row:
    """An item of the paper the book does not reproduce: ``not-implemented`` or, with
    ``offline=True``, ``not-available-offline``; ``reason`` is one sentence."""
    item = _item(item)
    kind = "not-available-offline" if offline else "not-implemented"
    return Row(kind, item.where, item.quantity, item.paper_value, None, None, "", reason, item.paper)
