"""What each paper contains, so the ledger cannot silently forget an item.

:func:`paper_items` lists the figures and tables a paper's text names ("Figure 3", "Fig. 3",
"Table 1") and its numbered results (theorems, lemmas, propositions, corollaries, "Theorem 3.1",
"Lemma D.4"); :func:`items_in` reads the items a ledger row's ``where`` names, expanding lists and
ranges ("Figures 3/9", "Tables 3–5", "Lemmas D.1–D.7"); :func:`uncovered` is the difference.
"""

from __future__ import annotations

import re
from typing import Iterable

from ..validation import check_str

_KIND = {"figure": "Figure", "fig.": "Figure", "fig": "Figure", "table": "Table", "tab.": "Table",
         "theorem": "Theorem", "thm.": "Theorem", "lemma": "Lemma", "proposition": "Proposition",
         "prop.": "Proposition", "corollary": "Corollary", "cor.": "Corollary"}
_NUM = r"[A-Z]?\.?\d+(?:\.\d+)*"
_WORD = r"(Figures?|Figs?\.?|Tables?|Tab\.|Theorems?|Thm\.|Lemmas?|Propositions?|Prop\.|Corollar(?:y|ies)|Cor\.)"
_LIST = re.compile(_WORD + r"\s+(" + _NUM + r"(?:\s*(?:,|/|&|and|–|—|-|to)\s*" + _NUM + r")*)", re.I)
FIGURES_AND_TABLES = ("Figure", "Table")
RESULTS = ("Theorem", "Lemma", "Proposition", "Corollary")


def _kind(word: str) -> str:
    w = word.lower().rstrip(".")
    if w.endswith("ies"):
        w = w[:-3] + "y"
    elif w.endswith("s"):
        w = w[:-1]
    return _KIND.get(w, _KIND.get(w + ".", word.title()))


def _expand(a: str, b: str) -> list[str]:
    """``D.1``–``D.7`` → D.1 … D.7; ``3``–``5`` → 3, 4, 5 (only when the prefixes agree)."""
    pa, _, na = a.rpartition(".") if "." in a else ("", "", a)
    pb, _, nb = b.rpartition(".") if "." in b else ("", "", b)
    ma, mb = re.fullmatch(r"([A-Z]?)(\d+)", na), re.fullmatch(r"([A-Z]?)(\d+)", nb)
    if pa != pb or not ma or not mb or ma.group(1) != mb.group(1) or int(mb.group(2)) - int(ma.group(2)) > 50:
        return [a, b]
    pre = (pa + ".") if pa else ""
    return [f"{pre}{ma.group(1)}{i}" for i in range(int(ma.group(2)), int(mb.group(2)) + 1)]


def items_in(text: str) -> set[str]:
    """The items a piece of text names, as ``"Figure 3"``, ``"Lemma D.4"``…"""
    check_str("text", text, allow_empty=True)
    out: set[str] = set()
    for m in _LIST.finditer(text):
        kind = _kind(m.group(1))
        tokens = re.split(r"\s*(,|/|&|\band\b|–|—|-|\bto\b)\s*", m.group(2))
        nums, seps = tokens[0::2], tokens[1::2]
        i = 0
        while i < len(nums):
            if i < len(seps) and seps[i] in ("–", "—", "-", "to"):
                out.update(f"{kind} {n}" for n in _expand(nums[i], nums[i + 1]))
                i += 2
            else:
                out.add(f"{kind} {nums[i]}")
                i += 1
    return {re.sub(r" ([A-Z])\.(\d)", r" \1.\2", s).replace(" .", " ") for s in out}


def paper_items(text: str, kinds: Iterable[str] = FIGURES_AND_TABLES + RESULTS) -> set[str]:
    """Figures and tables the paper names anywhere, and the numbered results it states or cites
    with an appendix-style or section-style number (Theorem 3.1, Lemma D.4, Theorem 1)."""
    check_str("text", text, allow_empty=True)
    kinds = set(kinds)
    found = {i for i in items_in(text) if i.split()[0] in kinds}
    return {i for i in found if i.split()[0] in FIGURES_AND_TABLES or re.search(r"\d", i)}


def uncovered(paper_text: str, wheres: Iterable[str], kinds: Iterable[str] = FIGURES_AND_TABLES) -> list[str]:
    """Items of ``kinds`` the paper names that no ledger row's ``where`` names, in a stable order."""
    check_str("paper_text", paper_text, allow_empty=True)
    have: set[str] = set()
    for w in wheres:
        have |= items_in(str(w))
    missing = paper_items(paper_text, kinds) - have

    def key(s: str):
        kind, num = s.split(" ", 1)
        return kind, [int(p) if p.isdigit() else p for p in re.split(r"[.]", num)]

    return sorted(missing, key=key)


_STATED = re.compile(r"^\s*(Theorem|Lemma|Proposition|Corollary) ([A-Z]?\.?\d+(?:\.\d+)*)(?: \(([^)]*)\))?[.:]", re.M)


def stated_results(text: str) -> set[str]:
    """The numbered results the paper itself states (a line opening with "Lemma D.1." …), not the
    ones it cites from other work. A number cut by a line break ("Theorem 5.") is dropped when the
    full number is also stated, and so is an appendix restatement ("Theorem C.1 (Theorem 3.1).")."""
    check_str("text", text, allow_empty=True)
    found = {f"{m.group(1)} {m.group(2).rstrip('.')}" for m in _STATED.finditer(text)
             if not (m.group(3) and items_in(m.group(3)))}  # "Theorem C.1 (Theorem 3.1)" restates 3.1
    return {f for f in found if not any(g != f and g.startswith(f + ".") for g in found)}
