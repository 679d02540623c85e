"""The book machinery: the chapter setup, the papermill batch runner, parameter profiles, the
paper-vs-ours comparisons, the archive of long runs, the findings and the tables shared by every
chapter (the plotting style is the library's, :mod:`qlib.plotting`).

Notebook-facing API::

    from qlib.book import chapter
    from qlib.repro import ledger
    from qlib.repro.eden import estimator

    ch = chapter(chapter_id, out_dir=out_dir, device=device, threads=threads)
    ch.record(estimator.worked_example_rows())                            # rows computed by the reproduction
    ch.record(ledger.close(ledger.Item("Table 1", "levels of 2 bits", 8), 8))  # a row built in the chapter
    ch.paper_vs_ours()                                                    # the chapter's Paper vs ours section

A chapter notebook makes its ``ch`` with one line below its parameters cell, ``from qlib.book.setup
import ch, dev`` (:mod:`qlib.book.setup`), which calls :func:`chapter` with those parameters.
"""

from .chapter import Chapter, chapter
from .compare import Comparisons
from .gathering import gather

__all__ = ["Chapter", "chapter", "Comparisons", "gather"]
