"""Every chapter notebook reads like a paper: its prose is at least its code.

Prose is what a reader reads: the non-blank lines of the markdown cells that are not headings, labels
(``(label)=``), fences (``:::``, ````` ``` `````) or a directive's options (``:label: …`` just below its
fence). A line counts once in its notebook, and a line found in more than two notebooks (stock text)
counts once in the book: in the first notebook that has it. Code is every non-blank line of the code
cells, the launch line, the setup line and the parameters included. The plotting and the experiment
drivers live in ``qlib`` (each wing's ``figures`` module and its reproduction), so a chapter's code cells
are calls."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "chapters").rglob("*.ipynb"))

FENCE = re.compile(r"(:::|```)")
LABEL = re.compile(r"\(.+\)=")
OPTION = re.compile(r":[\w-]+:")
STOCK = 2  # a line in more notebooks than this is stock text


def _source(cell: dict) -> str:
    return cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])


def prose_lines(nb: dict) -> list[str]:
    """The prose lines of a notebook (stripped), in order, repeats included."""
    out = []
    for cell in nb["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        options = False  # just below a fence: the directive's options
        for line in _source(cell).splitlines():
            s = line.strip()
            if FENCE.match(s):
                options = True
                continue
            if options and OPTION.match(s):
                continue
            options = False
            if s and not s.startswith("#") and not LABEL.fullmatch(s):
                out.append(s)
    return out


def code_lines(nb: dict) -> int:
    return sum(1 for cell in nb["cells"] if cell["cell_type"] == "code"
               for line in _source(cell).splitlines() if line.strip())


def prose_and_code(books: dict[str, dict]) -> dict[str, tuple[int, int]]:
    """``{name: (prose lines, code lines)}`` of notebooks ``books`` (name → notebook JSON), each
    prose line counted once in its notebook and stock lines once in the first notebook by name."""
    where = defaultdict(list)
    for name in sorted(books):
        for line in dict.fromkeys(prose_lines(books[name])):
            where[line].append(name)
    return {name: (sum(1 for line in dict.fromkeys(prose_lines(nb))
                       if len(where[line]) <= STOCK or where[line][0] == name), code_lines(nb))
            for name, nb in books.items()}


COUNTS = prose_and_code({str(p.relative_to(ROOT / "chapters")): json.loads(p.read_text()) for p in NOTEBOOKS})


@pytest.mark.parametrize("name", sorted(COUNTS))
def test_a_notebooks_prose_is_at_least_its_code(name):
    prose, code = COUNTS[name]
    assert prose >= code, f"{name}: {prose} lines of prose against {code} of code"


def _md(*lines: str) -> dict:
    return {"cell_type": "markdown", "source": "\n".join(lines)}


def test_the_count_skips_headings_labels_fences_and_options():
    nb = {"cells": [_md("(sec-x)=", "# T", "", "text", "## Sub"),
                    _md(":::{prf:theorem} A theorem", ":label: thm-x", "It holds.", ":::"),
                    _md("```{note}", "A note.", "```"),
                    {"cell_type": "code", "source": "x = 1\n\n\ny = 2\nz = 3"},
                    {"cell_type": "raw", "source": "ignored"}]}
    assert prose_lines(nb) == ["text", "It holds.", "A note."]
    assert prose_and_code({"a": nb}) == {"a": (3, 3)}
    assert NOTEBOOKS, "no chapter notebooks found"


def test_a_repeated_line_counts_once_and_stock_lines_once_in_the_book():
    said = _md("Said once here.", "Said once here.", "Shared by two.", "Stock text.")
    books = {"a": {"cells": [said]}, "b": {"cells": [_md("Shared by two.", "Stock text.")]},
             "c": {"cells": [_md("Stock text.", "Own line.")]}}
    assert prose_and_code(books) == {"a": (3, 0), "b": (1, 0), "c": (1, 0)}
