"""The reproduction: one module (or subpackage) per part of the book, mirroring ``chapters/<part>/``.

Each holds that part's experiment drivers and sweeps, the paper's printed values (typed once, with
the section/table they come from) and its claims as functions returning :class:`ledger.Row` objects
that a chapter only records (``ch.record(rows)``) and a test asserts. The library (``qlib.<idea>``)
knows nothing of this package. Of the book machinery a wing uses only the house plotting style
(``qlib.book.style``), in its ``figures`` module: the figures a chapter shows, as tested functions of the
study's data.
"""

from .ledger import KINDS, REPRODUCING_KINDS, Row, claim, close, missing, not_comparable

__all__ = ["KINDS", "REPRODUCING_KINDS", "Row", "claim", "close", "missing", "not_comparable"]
