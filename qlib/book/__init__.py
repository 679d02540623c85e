"""The book machinery: the chapter setup, papermill batch runner, parameter profiles, paper-vs-ours
comparisons, and the plotting style and tables shared by every chapter.

Notebook-facing API::

    from qlib.book import chapter
    ch = chapter(chapter_id, out_dir=out_dir, device=device, threads=threads)
    ch.record(qlib.repro.eden.lloyd_max_examples())          # rows computed by the reproduction
    ch.record(qlib.repro.ledger.close(qlib.repro.ledger.Item("Table 1", "levels of 2 bits", 8), 8))
    ch.cmp.show()
"""

from .chapter import Chapter, chapter
from .compare import Comparisons
from .gathering import gather

__all__ = ["Chapter", "chapter", "Comparisons", "gather"]
