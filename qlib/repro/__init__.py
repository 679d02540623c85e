"""The reproduction: one module (or subpackage) per part of the book, mirroring ``chapters/<part>/``.

Each holds that part's experiment drivers and sweeps, the paper's printed values (typed once, with
the section/table they come from) and its claims as functions returning :class:`ledger.Row` objects
that a chapter only records (``ch.record(rows)``) and a test asserts. The library (``qlib.<idea>``)
knows nothing of this package, and this package nothing of the book (``qlib.book``): a wing's
``figures`` module draws the figures a chapter shows, as tested functions of the study's data, in the
library's plotting style (``qlib.plotting.style``).
"""

from .ledger import KINDS, REPRODUCING_KINDS, Row, claim, close, missing, not_comparable

__all__ = ["KINDS", "REPRODUCING_KINDS", "Row", "claim", "close", "missing", "not_comparable"]
