"""The papers' texts for the findings tests: every typed claim's quote must occur in its paper.

The texts live beside the checkout (``../shared/papers``, as CI has them) or in ``$QLIB_PAPERS_DIR``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAPERS = Path(os.environ.get("QLIB_PAPERS_DIR") or ROOT.parent / "shared" / "papers")


def collapse(s: str) -> str:
    """Whitespace collapsed (the papers' texts break lines anywhere)."""
    return re.sub(r"\s+", " ", s).strip()


def missing_quotes(claims, paper: str) -> list[str]:
    """The ids of ``claims`` whose quote does not occur verbatim (whitespace collapsed) in paper
    ``paper``'s text; skips the test when the text is not there."""
    files = sorted(PAPERS.glob(f"{paper}_*.txt")) if PAPERS.is_dir() else []
    if not files:
        pytest.skip(f"paper {paper}'s text not found under {PAPERS}")
    text = collapse(files[-1].read_text(encoding="utf-8"))
    return [c.id for c in claims if collapse(c.quote) not in text]


def chapter_ids() -> list[str]:
    """Every chapter id of the book (``<part>/<NN-topic>``)."""
    return sorted(f"{p.parent.name}/{p.stem}" for p in (ROOT / "chapters").glob("*/*.ipynb"))
