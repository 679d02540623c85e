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
  with the reason.

Only ``paper-number`` and ``paper-claim`` rows can count as reproductions, and only when they could
have failed: every such row names its **null** — what a trivial or broken implementation would give
(no effect of quantization, the unquantized model, chance level, the majority class, the paper's own
formula re-evaluated) — and ``null_fails`` says whether that null fails the *same* test. A passing row
reads *reproduced* only when ``null_fails`` is True; a passing row whose null passes too, or that
states no null, reads *consistent* (not counted as a reproduction). :func:`close` with ``null=``
computes ``null_fails`` with the row's own tolerance; :func:`check` does so for any test (a callable)
applied to ``ours`` and to the null; :func:`claim` takes a ``null_fails`` computed by the caller. The
verdict word is derived from the kind and the outcomes (:func:`verdict`), never typed.

Values: ``paper_value`` and ``ours`` are whatever the row shows (numbers, ±inf — the paper prints
R² < −1 as −inf —, text, ``None`` where a row is not judged). A NaN never passes: :func:`close`
records a NaN (or infinite) ``ours`` as a failed comparison (verdict "differs", the value shown), and
a row built with ``passed=True`` whose ``paper_value`` or ``ours`` is NaN or ``None`` is refused
(``ValueError`` naming the field), so a computation that produced NaN can never read "reproduced".
Complex values are refused (``TypeError``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

KINDS = (
    "paper-number",
    "paper-claim",
    "theory-check",
    "arithmetic",
    "erratum",
    "not-implemented",
    "not-available-offline",
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
}
VERDICTS = tuple(dict.fromkeys([*(w for ws in _WORDS.values() for w in ws if w), CONSISTENT]))


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


def close(where: str, quantity: str, paper_value: float, ours: float, *, kind: str = "paper-number",
          rtol: float = 0.0, atol: float = 0.0, note: str = "", paper: str | None = None,
          null: float | None = None, null_label: str = "", basis: str = "") -> Row:
    """Numeric comparison: passed iff ``|ours − paper_value| ≤ atol + rtol·|paper_value|``.

    ``null``: the value a trivial or broken implementation would give (no quantization effect, chance
    level, the unquantized model…); ``null_fails`` is then computed with the same test, so the row can
    read *reproduced* only if the null would have failed it. ``null_label`` (optional) names the null
    in the ledger ("chance", "unquantized"): the row shows ``"<label> = <value>"``. ``basis`` says where
    the tolerance comes from ("printed precision", "2 SE over runs", …); it is appended to the
    tolerance text.
    A non-finite ``ours`` (a run that produced NaN) is a failed comparison with the value shown,
    never an exception that hides the row.
    """
    p = _finite("paper_value", paper_value)
    rtol = _finite("rtol", rtol)
    atol = _finite("atol", atol)
    if rtol < 0 or atol < 0:
        raise ValueError(f"rtol and atol must be >= 0, got rtol={rtol}, atol={atol}")
    if isinstance(ours, (bool, np.bool_)) or not isinstance(ours, (int, float, np.integer, np.floating)):
        raise TypeError(f"ours must be a real number, got {type(ours).__name__}")
    o = float(ours)
    ok = math.isfinite(o) and abs(o - p) <= atol + rtol * abs(p)
    nv, nf = None, None
    if null is not None:
        n = _finite("null", null)
        nf = not abs(n - p) <= atol + rtol * abs(p)
        nv = f"{null_label} = {fmt(n)}" if null_label else n
    tol = tolerance_text(rtol, atol) + (f" ({basis})" if str(basis).strip() else "")
    return Row(kind, where, quantity, p, o, ok, tol, note, paper, nv, nf)


def claim(where: str, quantity: str, paper_value: Any, ours: Any, passed: bool, *,
          kind: str = "paper-claim", tolerance: str = "", note: str = "", paper: str | None = None,
          null: Any = None, null_fails: bool | None = None) -> Row:
    """A claim or inequality whose test was computed (``passed``). ``null`` / ``null_fails``: the
    trivial implementation's value and whether it fails the same test (computed by the caller with
    the test that gave ``passed``; :func:`check` does both from one callable)."""
    if not isinstance(passed, (bool, np.bool_)):
        raise TypeError(f"passed must be a bool, got {type(passed).__name__}")
    return Row(kind, where, quantity, paper_value, ours, bool(passed), tolerance, note, paper, null,
               None if null_fails is None else bool(null_fails))


def check(where: str, quantity: str, paper_value: Any, ours: Any, test, *, null: Any, shown: Any = None,
          null_shown: Any = None, kind: str = "paper-claim", tolerance: str = "", note: str = "",
          paper: str | None = None) -> Row:
    """A claim tested by one callable: ``passed = test(ours)`` and ``null_fails = not test(null)``,
    so the null meets exactly the test our value meets. ``shown`` / ``null_shown``: what the row
    displays instead of ``ours`` / ``null`` (e.g. "7/9 laws"); ``tolerance`` states the test.
    A test that raises or returns a non-bool is an error; a NaN compares False (fails)."""
    if not callable(test):
        raise TypeError(f"test must be callable, got {type(test).__name__}")
    ok, nok = test(ours), test(null)
    for name, v in (("test(ours)", ok), ("test(null)", nok)):
        if not isinstance(v, (bool, np.bool_)):
            raise TypeError(f"{name} must return a bool, got {type(v).__name__}")
    return Row(kind, where, quantity, paper_value, ours if shown is None else shown, bool(ok), tolerance, note,
               paper, null if null_shown is None else null_shown, not bool(nok))


def not_comparable(where: str, quantity: str, paper_value: Any, ours: Any = None, *, reason: str,
                   kind: str = "paper-number", paper: str | None = None) -> Row:
    """A row of ``kind`` that cannot be judged (different data, a case the claim does not cover…)."""
    return Row(kind, where, quantity, paper_value, ours, None, "", reason, paper)


def missing(where: str, quantity: str, *, reason: str, offline: bool = False, paper: str | None = None,
            paper_value: Any = "") -> Row:
    """An item of the paper the book does not reproduce: ``not-implemented`` or, with
    ``offline=True``, ``not-available-offline``; ``reason`` is one sentence."""
    kind = "not-available-offline" if offline else "not-implemented"
    return Row(kind, where, quantity, paper_value, None, None, "", reason, paper)
