"""Findings: the papers' claims, each judged by the ledger rows that test it, and the cause of every
difference.

A :class:`Claim` is a statement a paper makes about its results (abstract, contributions, a theorem,
a figure's caption, the conclusion): an id, a short quote, where it is made, and the ledger rows that
test it, chosen by :class:`Select` (a chapter glob and regular expressions on a row's ``where`` and
``quantity``). A claim no row tests says why (``untested``). Every function here that takes a ledger
frame checks it first (:func:`qlib.repro.ledger.check_ledger`: a DataFrame with the columns it reads, every
verdict a word of the ledger), so a NaN or unknown verdict is refused, never counted as a difference.

Its **verdict is derived, never typed** (:func:`claim_verdict`), from its judged rows at the largest
scale the book has for them:

* *refuted* — one of its rows is an ``erratum`` the book confirms (the paper's own statement is shown
  wrong) and ``Claim.erratum_refutes`` is set;
* *holds* — every judged row passes (``reproduced``, ``consistent``, ``agrees``, ``erratum confirmed``
  of an erratum that does not refute the claim) and at least one of them could have failed (a row whose
  null fails, or a theory check, arithmetic or erratum row);
* *consistent* — every judged row passes, but each is a ``consistent`` row, whose null passes too;
* *holds in part* — some judged rows pass, some do not;
* *not reproduced* — none passes;
* *untested* — no row of it can be judged (none selected, or all ``not comparable`` / not implemented).

``probe`` rows (our own variants and ablations) never test a claim: they are evidence for causes.

A :class:`Cause` says why a row differs (or a claim does not hold), from one vocabulary
(:data:`CAUSES`): ``scale``, ``stand-in``, ``paper``, ``method``, ``test``, ``finding``, ``unexplained``.
A cause is a claim about evidence: it names its evidence rows (:class:`Select` objects over the build's rows
and the current archived runs') and the predicate its kind must meet on them (:func:`cause_check`); its
text is its reasoning followed by the evidence rows' own numbers (:func:`render_why`), never a typed
number. Each wing's ``findings`` module types its claims (``CLAIMS``), the causes of its differing rows
(``ROW_CAUSES``: (Select, Cause) pairs, the first match wins) and the stand-ins its chapters' inputs
include (``STAND_INS``: chapter glob → names); :func:`assign_causes` keeps a row's cause only while its
predicate holds, and gives the row ``unexplained`` with the reason otherwise — or where no pair matches.

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

from .ledger import CONSISTENT, DIFFERING, LEDGER_COLUMNS, PAPERS, PASSING, UNJUDGED, VERDICTS, check_ledger

CAUSES = ("scale", "stand-in", "paper", "method", "test", "finding", "unexplained")
CLAIM_VERDICTS = ("holds", "consistent", "holds in part", "not reproduced", "refuted", "untested")

__all__ = ["CAUSES", "CLAIM_VERDICTS", "Select", "Cause", "Claim", "claim_verdict", "assign_causes", "claim_rows",
           "check_registry", "row_ids", "gap", "evidence_rows", "cause_check", "render_why"]


#: the columns a claim's verdict reads (a claim's rows are chosen by their kind too) and those of an evidence pool
CLAIM_COLUMNS = (*LEDGER_COLUMNS, "kind")
POOL_COLUMNS = (*CLAIM_COLUMNS, "id")


def _text(name: str, v) -> str:
    if not isinstance(v, str) or not v.strip():
        raise ValueError(f"{name} must be a non-empty string, got {v!r}")
    return v


@dataclass(frozen=True)
class Select:
    """Ledger rows: ``chapter`` a glob on the chapter id (``quantized-mis/05-*``), ``where`` and
    ``quantity`` regular expressions searched in the row's fields, ``verdicts`` (optional) the row
    verdicts it keeps. The filters are checked when the selection is made: ``chapter`` a non-empty string,
    ``where`` / ``quantity`` strings that compile as regular expressions, ``verdicts`` a tuple of words of
    the ledger (:data:`qlib.repro.ledger.VERDICTS`; another word would select nothing)."""

    chapter: str
    where: str = ""
    quantity: str = ""
    verdicts: tuple[str, ...] = ()

    def __post_init__(self):
        if not isinstance(self.chapter, str):
            raise TypeError(f"chapter must be a glob on chapter ids (str), got {type(self.chapter).__name__}")
        _text("chapter", self.chapter)
        if not isinstance(self.verdicts, tuple) or not all(isinstance(v, str) for v in self.verdicts):
            raise TypeError(f"verdicts must be a tuple of verdict words, got {self.verdicts!r}")
        bad = [v for v in self.verdicts if v not in VERDICTS]
        if bad:
            raise ValueError(f"verdicts holds {', '.join(map(repr, bad))}, not a verdict of the ledger (it would "
                             f"select no row): a verdict must be one of {', '.join(VERDICTS)}")
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
        import pandas as pd  # deferred: pandas (~0.2 s); the claim registries import this module without it

        check_ledger(df, "df")
        if df.empty:
            return pd.Series([], dtype=bool, index=df.index)
        m = df["chapter"].astype(str).map(lambda c: fnmatch.fnmatchcase(c, self.chapter))
        for field in ("where", "quantity"):  # named groups (a cause's placeholders) match like plain ones
            rx = getattr(self, field)
            if rx:
                pat = re.compile(rx)
                m &= df[field].astype(str).map(lambda t, pat=pat: pat.search(t) is not None)
        if self.verdicts:
            m &= df["verdict"].isin(self.verdicts)
        return m


#: typed numbers a cause's prose may not hold (its numbers are rendered from its evidence rows): decimals
#: (``0.765``; the label ``1.58b`` aside), percentages (``35 %``; ``1.58b 90 %`` aside) and counts ("7 of 9")
_TYPED_NUMBER = re.compile(r"(?<![\w.])\d+\.\d+(?!\d*\s?b\b)|(?<!1\.58b )(?<![\w.])\d+(?:\.\d+)?\s?%"
                           r"|\b\d+\s+of\s+(?:the\s+)?\d+\b")


#: words after which a number names a place in a paper (§4.1, Theorem 2.3, Table 3), not a result
_PLACE = re.compile(r"(?:§|\b(?:Theorem|Corollary|Lemma|Proposition|Prop\.|Remark|Example|Definition|Algorithm|"
                    r"Figure|Fig\.|Table|Tables|Eq\.|Equation|Section|Sec\.|App\.|Appendix|Step))\s*$")


def _typed_result(text: str) -> str:
    """The first typed result in ``text`` (see :data:`_TYPED_NUMBER`) that is not a place in a paper; ""."""
    for m in _TYPED_NUMBER.finditer(text):
        if not _PLACE.search(text[:m.start()]):
            return m.group(0)
    return ""


@dataclass(frozen=True)
class Cause:
    """Why rows differ — a claim about evidence, checked by :func:`cause_check` at every build.

    ``kind`` in :data:`CAUSES`; ``why`` the reasoning in words, with no typed result (a decimal, a
    percentage, a count "k of n": the numbers are rendered from the evidence rows); ``evidence`` the
    rows that show it (:class:`Select` objects over the build's rows and the current archived runs; their
    ``where`` / ``quantity`` may hold ``{name}`` placeholders, filled with ``re.escape`` of the named
    groups that the row's own selection captured, and ``{where}`` / ``{quantity}``, the row's own
    fields); ``stand_in`` the declared stand-in a ``stand-in`` cause names (a key of the wing's
    ``STAND_INS``); ``scale_free`` a ``finding`` of an exact computation (no scale changes it).

    The predicate each kind must meet on its evidence rows (:func:`cause_check`):

    * ``scale`` — the row is not at the paper's scale, and every evidence row passes at a larger one;
    * ``method`` — every evidence row is a ``probe`` (a named variant of ours) and at least one passes
      (brings our value within the row's tolerance of the paper's, or passes the row's pre-registered
      test: the probe's own test);
    * ``paper`` — an evidence row is an ``erratum`` the book confirms;
    * ``stand-in`` — the row's chapter declares the stand-in ``stand_in``, and an evidence row (a probe:
      the spread of the quantity across stand-ins) is at least the row's gap ``|ours − paper|``;
    * ``test`` — every evidence row is a probe that passes (a computed standard error, power or null
      showing that the test cannot discriminate);
    * ``finding`` — the row is at the paper's scale (or the cause is ``scale_free``), its chapter declares
      no stand-in, and each alternative tried is an evidence probe row, none of which passes.

    A cause whose predicate fails leaves its row ``unexplained``, saying why: a cause cannot outlive
    its evidence.
    """

    kind: str
    why: str
    evidence: tuple = ()
    stand_in: str = ""
    #: a ``finding`` of an exact computation, which holds at any scale (see the module's note)
    scale_free: bool = False

    def __post_init__(self):
        if self.kind not in CAUSES:
            raise ValueError(f"kind must be one of {', '.join(CAUSES)}; got {self.kind!r}")
        _text("why", self.why)
        typed = _typed_result(self.why)
        if typed:
            raise ValueError(f"why must not type a result ({typed!r} in {self.why[:80]!r}…): render "
                             "numbers from the evidence rows")
        if isinstance(self.evidence, Select):
            object.__setattr__(self, "evidence", (self.evidence,))
        if not isinstance(self.evidence, tuple) or not all(isinstance(s, Select) for s in self.evidence):
            raise TypeError(f"evidence must be a tuple of Select (the evidence rows), got {self.evidence!r}")
        if self.kind != "unexplained" and not self.evidence:
            raise ValueError(f"a {self.kind!r} cause must name its evidence rows (evidence=(Select(...),))")
        if not isinstance(self.stand_in, str):
            raise TypeError(f"stand_in must be a string, got {type(self.stand_in).__name__}")
        if (self.kind == "stand-in") != bool(self.stand_in.strip()):
            raise ValueError("stand_in names the declared stand-in of a 'stand-in' cause, and only of one; "
                             f"got kind {self.kind!r}, stand_in {self.stand_in!r}")
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
    #: the claim in our words, one line (≤ 90 characters): what a chapter's glance shows beside the verdict
    short: str = ""

    def __post_init__(self):
        if self.paper not in PAPERS:
            raise ValueError(f"paper must be one of {', '.join(PAPERS)}; got {self.paper!r}")
        for name in ("id", "quote", "where"):
            _text(name, getattr(self, name))
        if not isinstance(self.rows, tuple) or not all(isinstance(s, Select) for s in self.rows):
            raise TypeError("rows must be a tuple of Select")
        if not self.rows and not self.untested.strip():
            raise ValueError(f"claim {self.id}: a claim no row tests must say why (untested=…)")
        if not isinstance(self.short, str) or len(self.short) > 90 or "\n" in self.short:
            raise ValueError(f"claim {self.id}: short must be one line of at most 90 characters, got {self.short!r}")
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
    """The rows of ``df`` that test ``claim`` (any of its selections); ``probe`` rows (our own variants)
    never test a claim."""
    if not isinstance(claim, Claim):
        raise TypeError(f"claim must be a Claim, got {type(claim).__name__}")
    check_ledger(df, "df")
    if df.empty or not claim.rows:
        return df.iloc[0:0]
    m = np.zeros(len(df), dtype=bool)
    for s in claim.rows:
        m |= s.mask(df).to_numpy()
    if "kind" in df.columns:
        m &= (df["kind"].astype(str) != "probe").to_numpy()
    return df[m]


def claim_verdict(claim: Claim, df) -> tuple[str, dict]:
    """The derived verdict of ``claim`` from ``df`` (the ledger rows at the scale chosen for them) and
    its tally ``{"rows": n selected, "judged": n, "pass": n, "differ": n, "erratum": n, "reproduced": n}``
    (``reproduced``: passing rows that could have failed — every passing row but a ``consistent`` one).

    *holds* needs every judged row to pass and at least one of them to be a row whose null fails (or a
    theory check, arithmetic or erratum row, which has no null); when every passing row's null passes
    too the claim is only *consistent* with the paper."""
    if not isinstance(claim, Claim):
        raise TypeError(f"claim must be a Claim, got {type(claim).__name__}")
    rows = claim_rows(claim, check_ledger(df, "df", CLAIM_COLUMNS))
    verdicts = rows["verdict"].astype(str) if len(rows) else []
    judged = [v for v in verdicts if v not in UNJUDGED]
    n_pass = sum(v in PASSING for v in judged)
    n_real = sum(v in PASSING and v != CONSISTENT for v in judged)
    errata = int(((rows["kind"] == "erratum") & (rows["verdict"] == "erratum confirmed")).sum()) if len(rows) else 0
    tally = {"rows": len(rows), "judged": len(judged), "pass": n_pass, "differ": len(judged) - n_pass,
             "erratum": errata, "reproduced": n_real}
    if not judged:
        return "untested", tally
    if claim.erratum_refutes and errata:
        return "refuted", tally
    if n_pass == len(judged):
        return ("holds" if n_real else "consistent"), tally
    return ("holds in part" if n_pass else "not reproduced"), tally


# ---------------------------------------------------------------------------------------------
# Causes, checked against their evidence
# ---------------------------------------------------------------------------------------------
def row_ids(df, tag: str = ""):
    """Stable ids of ledger rows: ``<chapter>#<k>`` (``k`` the row's place among its chapter's rows,
    from 1), with ``@<tag>`` for rows of an archived run (``@paper``)."""
    check_ledger(df, "df", ("chapter",))
    if not isinstance(tag, str):
        raise TypeError(f"tag must be a string (\"\" for this build's rows), got {type(tag).__name__}")
    k = df.groupby("chapter", sort=False).cumcount().to_numpy() + 1
    suffix = f"@{tag}" if tag else ""
    return [f"{c}#{n}{suffix}" for c, n in zip(df["chapter"].astype(str), k)]


def _num(x) -> float:
    try:
        v = float(str(x).strip())
    except (TypeError, ValueError):
        return float("nan")
    return v


def gap(row) -> float:
    """``|ours − paper|`` of a ledger row (NaN where either is not a finite number)."""
    if not hasattr(row, "keys") or not hasattr(row, "__getitem__"):
        raise TypeError(f"row must be a ledger row (a pandas Series or a mapping), got {type(row).__name__}")
    lacks = [c for c in ("ours", "paper_value") if c not in row.keys()]
    if lacks:
        raise ValueError(f"row lacks {', '.join(map(repr, lacks))}: gap compares ours with paper_value")
    o, p = _num(row["ours"]), _num(row["paper_value"])
    return abs(o - p) if np.isfinite(o) and np.isfinite(p) else float("nan")


def _at_paper_scale(row) -> bool:
    return str(row.get("scale", "paper")).startswith("paper")


def _declared(chapter: str, stand_ins: dict) -> tuple[str, ...]:
    out = []
    for glob, names in stand_ins.items():
        if fnmatch.fnmatchcase(chapter, glob):
            out += [names] if isinstance(names, str) else list(names)
    return tuple(out)


def _fill(sel: Select, fields: dict) -> Select:
    if not fields or ("{" not in sel.where and "{" not in sel.quantity):
        return sel
    esc = {k: re.escape(str(v)) for k, v in fields.items() if v is not None}
    try:
        return Select(sel.chapter, sel.where.format(**esc) if "{" in sel.where else sel.where,
                      sel.quantity.format(**esc) if "{" in sel.quantity else sel.quantity, sel.verdicts)
    except (KeyError, IndexError) as exc:
        raise ValueError(f"evidence {sel!r} names the placeholder {exc}, which the row's selection does not "
                         "capture") from None


def evidence_rows(cause: Cause, pool, fields: dict | None = None):
    """The rows of ``pool`` (the build's rows and the current archived runs', with an ``id`` column)
    that ``cause`` names as its evidence, its placeholders filled from ``fields``; of a chapter whose rows
    the pool holds at the paper's scale and a smaller one, those at the paper's scale."""
    if not isinstance(cause, Cause):
        raise TypeError(f"cause must be a Cause, got {type(cause).__name__}")
    check_ledger(pool, "pool", POOL_COLUMNS)
    if fields is not None and not isinstance(fields, dict):
        raise TypeError(f"fields must be a dict of placeholder → text or None, got {type(fields).__name__}")
    if pool.empty or not cause.evidence:
        return pool.iloc[0:0]
    m = np.zeros(len(pool), dtype=bool)
    for sel in cause.evidence:
        m |= _fill(sel, fields or {}).mask(pool).to_numpy()
    ev = pool[m]
    if "scale" in ev.columns and len(ev):  # a chapter's rows at the paper's scale, where the pool has them
        at_paper = ev["scale"].astype(str).str.startswith("paper")
        larger = set(ev.loc[at_paper, "chapter"])
        ev = ev[at_paper | ~ev["chapter"].isin(larger)]
    return ev


def _shown(ev, n: int = 4) -> str:
    parts = [f"{r['id']} {r['quantity']}: ours {r['ours'] or '—'}"
             + (f", paper {r['paper_value']}" if str(r["paper_value"]).strip() else "") + f" ({r['verdict']}"
             + (f", {str(r['scale']).split(' (')[0]} scale" if str(r.get("scale", "")).strip() else "") + ")"
             for _, r in ev.head(n).iterrows()]
    more = f"; {len(ev) - n} more" if len(ev) > n else ""
    return "; ".join(parts) + more


def _check_row(row) -> None:
    """``row``: None or one ledger row (a pandas Series) holding its chapter."""
    import pandas as pd  # deferred: pandas (~0.2 s); the claim registries import this module without it

    if row is None:
        return
    if not isinstance(row, pd.Series):
        raise TypeError(f"row must be one ledger row (a pandas Series) or None, got {type(row).__name__}")
    if "chapter" not in row.index:
        raise ValueError("row lacks 'chapter': a cause is checked against the chapter's declared stand-ins")


def cause_check(cause: Cause, row, ev, stand_ins: dict | None = None) -> tuple[bool, str]:
    """Whether ``cause``'s predicate (see :class:`Cause`) holds for ``row`` (a ledger row, or None for
    a claim's own cause) on its evidence rows ``ev``; and, when it does not, why."""
    if not isinstance(cause, Cause):
        raise TypeError(f"cause must be a Cause, got {type(cause).__name__}")
    _check_row(row)
    if ev is not None:
        check_ledger(ev, "ev", ("kind", "verdict"))
    if stand_ins is not None and not isinstance(stand_ins, dict):
        raise TypeError(f"stand_ins must be a dict of chapter glob → stand-in names, got {type(stand_ins).__name__}")
    k = cause.kind
    if k == "unexplained":
        return True, ""
    if ev is None or len(ev) == 0:
        return False, "none of its evidence rows is in this build or a current archived run"
    kinds = ev["kind"].astype(str)
    verdicts = ev["verdict"].astype(str)
    probes = kinds == "probe"
    declared = _declared(str(row["chapter"]), stand_ins or {}) if row is not None else ()
    if k in ("scale", "stand-in", "finding") and row is None:
        return False, f"a {k} cause explains a row, not a claim"
    if (k in ("method", "stand-in", "test", "finding") and row is not None and not cause.scale_free
            and "scale" in ev.columns and _at_paper_scale(row) and "scale" in row.index
            and not ev["scale"].astype(str).str.startswith("paper").all()):
        return False, "the row is at the paper's scale and not every evidence row is (a smaller run cannot explain it)"
    if k == "scale":
        if _at_paper_scale(row):
            return False, "the row is itself at the paper's scale"
        if "scale" in ev.columns and not ev["scale"].astype(str).str.contains("paper|archived").all():
            return False, "not every evidence row is at a larger, archived scale"
        if not verdicts.isin(PASSING).all():
            return False, "not every evidence row passes at the larger scale"
        return True, ""
    if k == "paper":
        if not ((kinds == "erratum") & (verdicts == "erratum confirmed")).any():
            return False, "no evidence row is a confirmed erratum"
        return True, ""
    if k == "method":
        if not probes.all():
            return False, "its evidence rows are not all probes (variants of ours)"
        if not (verdicts == "probe passes").any():
            return False, "no variant of ours (probe row) passes"
        return True, ""
    if k == "test":
        if not probes.all() or not (verdicts == "probe passes").all():
            return False, "not every computed quantity (probe row) shows that the test cannot discriminate"
        return True, ""
    if k == "stand-in":
        if cause.stand_in not in declared:
            return False, f"the row's chapter declares no stand-in {cause.stand_in!r}"
        g = gap(row)
        spreads = [v for v in (_num(x) for x in check_ledger(ev, "ev", ("ours",))["ours"]) if np.isfinite(v)]
        spread = max(spreads) if spreads else float("nan")
        if not np.isfinite(g) or not np.isfinite(spread):
            return False, "the gap or the spread across stand-ins is not a number"
        if spread < g:
            return False, f"the spread across stand-ins ({spread:.3g}) is less than the gap ({g:.3g})"
        return True, ""
    # finding
    if not cause.scale_free and not _at_paper_scale(row):
        return False, f"a finding at the paper's scale, and this row is at the {row.get('scale')} scale"
    if declared:
        return False, f"the row's inputs include a declared stand-in ({', '.join(declared)})"
    if not probes.all():
        return False, "its alternatives are not all probe rows"
    if (verdicts == "probe passes").any():
        return False, "an alternative tried (probe row) closes the gap: a method cause, not a finding"
    return True, ""


def render_why(cause: Cause, ev) -> str:
    """A cause's text: its reasoning, then its evidence rows' own numbers."""
    if not isinstance(cause, Cause):
        raise TypeError(f"cause must be a Cause, got {type(cause).__name__}")
    if ev is not None:
        check_ledger(ev, "ev", ("id", "quantity", "ours", "paper_value", "verdict"))
    return f"{cause.why} Evidence: {_shown(ev)}." if ev is not None and len(ev) else cause.why


def assign_causes(df, row_causes: Iterable[tuple[Select, Cause]], *, pool=None, stand_ins: dict | None = None):
    """``df`` with ``cause`` / ``cause_why`` / ``cause_evidence`` (the evidence rows' ids) filled for every
    differing row and empty elsewhere: the first pair of ``row_causes`` whose selection matches the row and
    whose predicate holds on its evidence rows in ``pool`` (default: ``df``); where the row's pairs all
    fail (or one typed ``unexplained`` comes first), ``unexplained`` with each tried cause's reason;
    ``unexplained`` too where no pair matches. ``df`` and ``pool`` get an
    ``id`` column (:func:`row_ids`) where they lack one; ``stand_ins`` maps chapter globs to the stand-ins
    their rows' inputs include."""
    check_ledger(df, "df", CLAIM_COLUMNS)
    if isinstance(row_causes, (str, bytes)) or not hasattr(row_causes, "__iter__"):
        raise TypeError(f"row_causes must be an iterable of (Select, Cause) pairs, got {type(row_causes).__name__}")
    pairs = list(row_causes)
    for i, pair in enumerate(pairs):
        if not (isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[0], Select)
                and isinstance(pair[1], Cause)):
            raise TypeError(f"row_causes[{i}] must be a (Select, Cause) pair, got {pair!r}")
    if stand_ins is not None and not isinstance(stand_ins, dict):
        raise TypeError(f"stand_ins must be a dict of chapter glob → stand-in names, got {type(stand_ins).__name__}")
    out = df.copy()
    if "id" not in out.columns:
        out["id"] = row_ids(out) if len(out) else []
    if pool is None:
        pool = out
    else:
        check_ledger(pool, "pool", CLAIM_COLUMNS)
        if "id" not in pool.columns:
            pool = pool.assign(id=row_ids(pool) if len(pool) else [])
    for c in ("cause", "cause_why", "cause_evidence"):
        out[c] = ""
    if out.empty:
        return out
    differing = out["verdict"].isin(DIFFERING).to_numpy()
    masks = [sel.mask(out).to_numpy() & differing for sel, _ in pairs]
    compiled = [(re.compile(sel.where), re.compile(sel.quantity)) for sel, _ in pairs]
    todo = differing.copy()
    for i in np.flatnonzero(differing):
        row = out.iloc[i]
        tried = []
        for k, (_sel, cause) in enumerate(pairs):
            if not masks[k][i]:
                continue
            fields = {"where": row["where"], "quantity": row["quantity"]}
            for rx, text in zip(compiled[k], (row["where"], row["quantity"])):
                hit = rx.search(str(text))
                if hit:
                    fields.update({n: v for n, v in hit.groupdict().items() if v is not None})
            ev = evidence_rows(cause, pool, fields)
            ok, reason = cause_check(cause, row, ev, stand_ins)
            tried.append((cause, ev, reason))
            if ok:
                break
        if not tried:
            continue
        todo[i] = False
        j = out.index[i]
        cause, ev, _ = tried[-1]
        out.at[j, "cause_evidence"] = "; ".join(dict.fromkeys(e for _, v, _ in tried for e in v["id"].astype(str)))
        if cause.kind != "unexplained" and not tried[-1][2]:
            out.at[j, "cause"] = cause.kind
            out.at[j, "cause_why"] = render_why(cause, ev)
            out.at[j, "cause_evidence"] = "; ".join(ev["id"].astype(str))
        else:
            out.at[j, "cause"] = "unexplained"
            out.at[j, "cause_why"] = " ".join(
                render_why(c, v) if c.kind == "unexplained" else
                f"The {c.kind} cause typed for this row does not hold: {r} (it read: {c.why})" for c, v, r in tried)
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
