"""Every claim of the book in our words (issue 53): each chapter's *Result at a glance* lists its claims one
line each, the claim in our words beside its verdict, so every claim the wings' ``findings`` modules declare
carries a ``short`` text — one plain line (no TeX or Markdown markup) that no other claim of the same paper
shares, and that names no verdict (the verdict is derived from the rows, never written into the words)."""

from __future__ import annotations

import re
from collections import defaultdict

import pytest

from qlib.book.findings import registry
from qlib.repro.findings import CLAIM_VERDICTS, Claim
from qlib.repro.ledger import VERDICTS

CLAIMS, _, _ = registry()
#: characters that would render as markup (TeX, Markdown emphasis or code, a table cell) on a glance line
MARKUP = set("\\^$`*|")
#: the verdict vocabulary (claims' and rows'), as words: the short text states the paper's claim, not ours
_VERDICT_WORDS = sorted({w for v in (*CLAIM_VERDICTS, *VERDICTS) for w in v.split()}
                        - {"not", "in", "part", "comparable", "available", "offline", "implemented", "probe"})
VERDICT = re.compile(r"\b(?:%s)\w*\b" % "|".join(map(re.escape, _VERDICT_WORDS)), re.IGNORECASE)


def test_the_registry_has_the_papers_claims():
    by_paper = defaultdict(int)
    for c in CLAIMS:
        by_paper[c.paper] += 1
    assert set(by_paper) == {"001", "002", "003", "004"}, dict(by_paper)
    assert len(CLAIMS) >= 90, len(CLAIMS)


@pytest.mark.parametrize("claim", CLAIMS, ids=[c.id for c in CLAIMS])
def test_every_claim_has_one_plain_line_of_our_words(claim):
    s = claim.short
    assert s.strip(), f"{claim.id} has no short text"
    assert len(s) <= 90, f"{claim.id}: {len(s)} characters"
    assert s == s.strip() and "\n" not in s, repr(s)
    assert not MARKUP & set(s), f"{claim.id}: markup {sorted(MARKUP & set(s))} in {s!r}"
    assert not s.endswith("."), f"{claim.id}: a glance line has no full stop: {s!r}"
    assert s != claim.quote.strip(), f"{claim.id}: the short text repeats the quote"
    m = VERDICT.search(s)
    assert m is None, f"{claim.id}: verdict word {m.group(0)!r} in {s!r}"


def test_no_two_claims_of_a_paper_share_their_words():
    seen: dict[tuple[str, str], str] = {}
    dup = []
    for c in CLAIMS:
        key = (c.paper, c.short.strip().casefold())
        if key in seen:
            dup.append((seen[key], c.id, c.short))
        seen.setdefault(key, c.id)
    assert not dup, dup


def test_the_verdict_check_catches_verdict_words():
    assert VERDICT.search("The bound holds at every n")
    assert VERDICT.search("Ranks agree consistently with the baseline")
    assert not VERDICT.search("The diversity C(P) is comparable to the Shannon entropy")


def test_a_claim_refuses_a_short_text_longer_than_one_line():
    Claim("001", "001-X", "q", "§1", untested="why", short="x" * 90)
    with pytest.raises(ValueError, match="short"):
        Claim("001", "001-X", "q", "§1", untested="why", short="x" * 91)
    with pytest.raises(ValueError, match="short"):
        Claim("001", "001-X", "q", "§1", untested="why", short="one\ntwo")
