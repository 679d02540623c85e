"""Findings: the papers' claims, each judged by the ledger rows that test it, and the cause of every
difference.

A :class:`Claim` is a statement a paper makes about its results (abstract, contributions, a theorem,
a figure's caption, the conclusion): an id, a short quote, where it is made, and the ledger rows that
test it, chosen by :class:`Select` (a chapter glob and regular expressions on a row's ``where`` and
``quantity``). A claim no row tests says why (``untested``).

Its **verdict is derived, never typed** (:func:`claim_verdict`), from its judged rows at the largest
scale the book has for them:

* *refuted* — one of its rows is an ``erratum`` the book confirms (the paper's own statement is shown
  wrong) and ``Claim.erratum_refutes`` is set;
* *holds* — every judged row passes (``reproduced``, ``consistent``, ``agrees``, ``erratum confirmed``
  of an erratum that does not refute the claim);
* *holds in part* — some judged rows pass, some do not;
* *not reproduced* — none passes;
* *untested* — no row of it can be judged (none selected, or all ``not comparable`` / not implemented).

A :class:`Cause` says why a row differs (or a claim does not hold), from one vocabulary
(:data:`CAUSES`): ``scale`` (the row at a larger scale is the evidence), ``stand-in`` (which data or
model), ``paper`` (the paper's own inconsistency: which two statements), ``method`` (our method
differs: which choice), ``test`` (our test was ill-posed), ``finding`` (same method, same scale, still
different), ``unexplained``. Each wing's ``findings`` module types its claims (``CLAIMS``) and the
causes of its differing rows (``ROW_CAUSES``: (Select, Cause) pairs, the first match wins); a
differing row no pair matches reads ``unexplained`` — allowed, shown and counted.

``finding`` says the difference survives the paper's own scale, so it is given only to rows *at* that
scale: where the rows carry a ``scale`` column (the book's), a ``finding`` whose ``Cause.scale_free`` is
not set applies to rows whose scale starts with ``paper``; a row at a smaller scale that it selects reads
``unexplained``, saying that the finding was established at the paper's scale and this row is not.
``scale_free`` marks findings of exact computations (a closed form, a solved codebook), which no scale
changes.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from typing import Iterable

import numpy as np

from .ledger import DIFFERING, PAPERS, PASSING, UNJUDGED

CAUSES = ("scale", "stand-in", "paper", "method", "test", "finding", "unexplained")
CLAIM_VERDICTS = ("holds", "holds in part", "not reproduced", "refuted", "untested")

__all__ = ["CAUSES", "CLAIM_VERDICTS", "Select", "Cause", "Claim",
           "claim_verdict", "assign_causes", "claim_rows", "check_registry"]


def _frame(name: str, df, cols=("chapter", "where", "quantity", "verdict")):
    """``df`` checked: a pandas DataFrame holding the ledger columns ``cols``."""
    import pandas as pd  # deferred: pandas (~0.2 s); the claim registries import this module without it

    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"{name} must be a pandas DataFrame of ledger rows, got {type(df).__name__}")
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise ValueError(f"{name} lacks the ledger columns {missing}")
    return df


def _text(name: str, v) -> str:
    if not isinstance(v, str) or not v.strip():
        raise ValueError(f"{name} must be a non-empty string, got {v!r}")
    return v


@dataclass(frozen=True)
class Select:
    """Ledger rows: ``chapter`` a glob on the chapter id (``quantized-mis/05-*``), ``where`` and
    ``quantity`` regular expressions searched in the row's fields, ``verdicts`` (optional) the row
    verdicts it keeps."""

    chapter: str
    where: str = ""
    quantity: str = ""
    verdicts: tuple[str, ...] = ()

    def __post_init__(self):
        _text("chapter", self.chapter)
        if not isinstance(self.verdicts, tuple) or not all(isinstance(v, str) for v in self.verdicts):
            raise TypeError(f"verdicts must be a tuple of verdict words, got {self.verdicts!r}")
        for name in ("where", "quantity"):
            v = getattr(self, name)
            if not isinstance(v, str):
                raise TypeError(f"{name} must be a regular expression (str), got {type(v).__name__}")
            try:
                re.compile(v)
            except re.error as exc:
                raise ValueError(f"{name} is not a valid regular expression: {v!r} ({exc})") from None

    def mask(self, df):
        """Boolean mask of the rows of ``df`` (a ledger frame) this selects."""
        import pandas as pd  # deferred: pandas (~0.2 s), as in _frame

        _frame("df", df)
        if df.empty:
            return pd.Series([], dtype=bool, index=df.index)
        m = df["chapter"].astype(str).map(lambda c: fnmatch.fnmatchcase(c, self.chapter))
        if self.where:
            m &= df["where"].astype(str).str.contains(self.where, regex=True)
        if self.quantity:
            m &= df["quantity"].astype(str).str.contains(self.quantity, regex=True)
        if self.verdicts:
            m &= df["verdict"].isin(self.verdicts)
        return m


@dataclass(frozen=True)
class Cause:
    """Why rows differ: ``kind`` in :data:`CAUSES`, ``why`` one sentence saying what shows it (the
    experiment and its numbers, the two statements of the paper, the stand-in), ``evidence`` where the
    reader sees it (a chapter and section, or the rows at a larger scale)."""

    kind: str
    why: str
    evidence: str = ""
    #: a ``finding`` of an exact computation, which holds at any scale (see the module's note)
    scale_free: bool = False

    def __post_init__(self):
        if self.kind not in CAUSES:
            raise ValueError(f"kind must be one of {', '.join(CAUSES)}; got {self.kind!r}")
        _text("why", self.why)
        if not isinstance(self.evidence, str):
            raise TypeError(f"evidence must be a string, got {type(self.evidence).__name__}")
        if not isinstance(self.scale_free, bool):
            raise TypeError(f"scale_free must be a bool, got {type(self.scale_free).__name__}")
        if self.scale_free and self.kind != "finding":
            raise ValueError(f"scale_free applies to a 'finding' only, got kind {self.kind!r}")


@dataclass(frozen=True)
class Claim:
    """A claim of a paper about its results, and the rows that test it."""

    paper: str
    id: str
    quote: str
    where: str
    rows: tuple[Select, ...] = ()
    untested: str = ""
    cause: Cause | None = None
    erratum_refutes: bool = False
    headline: str = ""
    weight: int = 0

    def __post_init__(self):
        if self.paper not in PAPERS:
            raise ValueError(f"paper must be one of {', '.join(PAPERS)}; got {self.paper!r}")
        for name in ("id", "quote", "where"):
            _text(name, getattr(self, name))
        if not isinstance(self.rows, tuple) or not all(isinstance(s, Select) for s in self.rows):
            raise TypeError("rows must be a tuple of Select")
        if not self.rows and not self.untested.strip():
            raise ValueError(f"claim {self.id}: a claim no row tests must say why (untested=…)")
        for name in ("untested", "headline"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"{name} must be a string, got {type(getattr(self, name)).__name__}")
        if isinstance(self.weight, bool) or not isinstance(self.weight, int) or not 0 <= self.weight <= 10:
            raise ValueError(f"weight must be an integer in [0, 10], got {self.weight!r}")
        if not isinstance(self.erratum_refutes, bool):
            raise TypeError(f"erratum_refutes must be True or False, got {self.erratum_refutes!r}")
        if self.cause is not None and not isinstance(self.cause, Cause):
            raise TypeError(f"cause must be a Cause or None, got {type(self.cause).__name__}")


def claim_rows(claim: Claim, df):
    """The rows of ``df`` that test ``claim`` (any of its selections)."""
    if not isinstance(claim, Claim):
        raise TypeError(f"claim must be a Claim, got {type(claim).__name__}")
    _frame("df", df)
    if df.empty or not claim.rows:
        return df.iloc[0:0]
    m = np.zeros(len(df), dtype=bool)
    for s in claim.rows:
        m |= s.mask(df).to_numpy()
    return df[m]


def claim_verdict(claim: Claim, df) -> tuple[str, dict]:
    """The derived verdict of ``claim`` from ``df`` (the ledger rows at the scale chosen for them) and
    its tally ``{"rows": n selected, "judged": n, "pass": n, "differ": n, "erratum": n}``."""
    rows = claim_rows(claim, _frame("df", df, ("chapter", "where", "quantity", "verdict", "kind")))
    verdicts = rows["verdict"].astype(str) if len(rows) else []
    judged = [v for v in verdicts if v not in UNJUDGED]
    n_pass = sum(v in PASSING for v in judged)
    errata = int(((rows["kind"] == "erratum") & (rows["verdict"] == "erratum confirmed")).sum()) if len(rows) else 0
    tally = {"rows": len(rows), "judged": len(judged), "pass": n_pass, "differ": len(judged) - n_pass,
             "erratum": errata}
    if not judged:
        return "untested", tally
    if claim.erratum_refutes and errata:
        return "refuted", tally
    if n_pass == len(judged):
        return "holds", tally
    return ("holds in part" if n_pass else "not reproduced"), tally


def assign_causes(df, row_causes: Iterable[tuple[Select, Cause]]):
    """``df`` with ``cause`` / ``cause_why`` / ``cause_evidence`` filled for every differing row (the
    first matching pair of ``row_causes``; ``unexplained`` when none matches) and empty elsewhere."""
    _frame("df", df)
    if isinstance(row_causes, (str, bytes)) or not hasattr(row_causes, "__iter__"):
        raise TypeError(f"row_causes must be an iterable of (Select, Cause) pairs, got {type(row_causes).__name__}")
    pairs = list(row_causes)
    for i, pair in enumerate(pairs):
        if not (isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[0], Select)
                and isinstance(pair[1], Cause)):
            raise TypeError(f"row_causes[{i}] must be a (Select, Cause) pair, got {pair!r}")
    out = df.copy()
    for c in ("cause", "cause_why", "cause_evidence"):
        out[c] = ""
    if out.empty:
        return out
    differing = out["verdict"].isin(DIFFERING).to_numpy()
    todo = differing.copy()
    scale = out["scale"].astype(str) if "scale" in out.columns else None
    for sel, cause in pairs:
        m = sel.mask(out).to_numpy() & todo
        if not m.any():
            continue
        if cause.kind == "finding" and not cause.scale_free and scale is not None:
            small = m & ~scale.str.startswith("paper").to_numpy(dtype=bool)
            if small.any():  # a finding of the paper's scale does not explain a smaller run's row
                out.loc[small, "cause"] = "unexplained"
                out.loc[small, "cause_why"] = [
                    f"a finding at the paper's scale (\"{cause.why}\"), but this row is at the {s} profile and the "
                    f"chapter has no current archived run at the paper's scale" for s in scale[small]]
                out.loc[small, "cause_evidence"] = cause.evidence
                todo &= ~small
                m &= ~small
        out.loc[m, "cause"] = cause.kind
        out.loc[m, "cause_why"] = cause.why
        out.loc[m, "cause_evidence"] = cause.evidence
        todo &= ~m
    out.loc[todo, "cause"] = "unexplained"
    out.loc[todo, "cause_why"] = "no experiment has explained this difference yet"
    return out


def check_registry(claims: Iterable[Claim]) -> list[str]:
    """Problems of a list of claims: duplicate ids (per paper)."""
    if isinstance(claims, (str, bytes)) or not hasattr(claims, "__iter__"):
        raise TypeError(f"claims must be an iterable of Claim, got {type(claims).__name__}")
    seen: set[tuple[str, str]] = set()
    probs = []
    for c in claims:
        if not isinstance(c, Claim):
            raise TypeError(f"claims must hold Claim objects, got {type(c).__name__}")
        if (c.paper, c.id) in seen:
            probs.append(f"duplicate claim id {c.paper}/{c.id}")
        seen.add((c.paper, c.id))
    return probs
