"""The schema of a chapter's ledger rows, ``comparisons.csv``: its columns, the file's name, and the
paper each part of the book reproduces (the default ``paper`` of its rows).

Written by :mod:`qlib.book.compare`, read back by :mod:`qlib.book.gathering`, stored in the archive
(:mod:`qlib.book.archive`) and published (:mod:`qlib.book.publish`).
"""

from __future__ import annotations

__all__ = ["COLUMNS", "OPTIONAL_COLUMNS", "FILENAME", "PART_PAPER"]

COLUMNS = ["chapter", "paper", "kind", "where", "quantity", "paper_value", "ours", "tolerance", "verdict", "note",
           "null", "null_fails", "cause", "evidence"]
#: columns a comparisons file may lack (read as empty)
OPTIONAL_COLUMNS = ("null", "null_fails", "cause", "evidence")
#: the file of a chapter's rows, in its results folder
FILENAME = "comparisons.csv"
#: the paper of each part of the book (the default ``paper`` of its rows)
PART_PAPER = {"quantized-mis": "001", "mia-limits": "003", "eden": "002", "rqp-sgd": "004"}
