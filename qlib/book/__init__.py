"""The book machinery: papermill batch runner, parameter profiles, paper-vs-ours comparisons,
and the plotting style shared by every chapter.

Notebook-facing API::

    from qlib.book import Comparisons, style
    style.apply()
    cmp = Comparisons("quantizers", out_dir)
    cmp.close("001", "Table 1", "levels of 2 bits", paper=8, ours=8, atol=0)
    cmp.show()
"""

from .compare import Comparisons, gather, VERDICTS

__all__ = ["Comparisons", "gather", "VERDICTS"]
