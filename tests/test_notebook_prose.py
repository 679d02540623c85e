"""Every chapter notebook reads like a paper: its prose is at least its code.

Counted as issue 40 states it: the non-blank source lines of a notebook's markdown cells against those of
its code cells, the setup and parameters cells included. The plotting and the experiment drivers live in
``qlib`` (each wing's ``figures`` module and its reproduction), so a chapter's code cells are calls."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "chapters").rglob("*.ipynb"))


def prose_and_code(nb: dict) -> tuple[int, int]:
    """(markdown lines, code lines) of a notebook: its cells' non-blank source lines."""
    count = {"markdown": 0, "code": 0}
    for cell in nb["cells"]:
        if cell["cell_type"] in count:
            src = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
            count[cell["cell_type"]] += sum(1 for line in src.splitlines() if line.strip())
    return count["markdown"], count["code"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT / "chapters")))
def test_a_notebooks_prose_is_at_least_its_code(path):
    prose, code = prose_and_code(json.loads(path.read_text()))
    assert prose >= code, f"{path.name}: {prose} lines of prose against {code} of code"


def test_the_count_takes_non_blank_lines_of_each_kind():
    nb = {"cells": [{"cell_type": "markdown", "source": ["# T\n", "\n", "text\n"]},
                    {"cell_type": "code", "source": "x = 1\n\n\ny = 2\nz = 3"},
                    {"cell_type": "raw", "source": "ignored"}]}
    assert prose_and_code(nb) == (2, 3)
    assert NOTEBOOKS, "no chapter notebooks found"
