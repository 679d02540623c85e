"""Reproduction of paper 004 (Feng & Venkitasubramaniam, RQP-SGD): the paper's settings and printed
values (:mod:`.paper`), the record of one experiment's hyperparameters (:mod:`.settings`), the
experiment drivers (:mod:`.experiments`), and the claims as ``<item>_rows`` functions returning ledger
rows — :mod:`.theory` (Algorithm 1, Theorems 1–2, Figure 1), :mod:`.table1`
(Table 1 and the §4 claims), :mod:`.figure2` (Figure 2 and the bits claim); each claims module also
returns the rows of what its chapter does not reproduce (``not_reproduced_rows``). The chapters' figures
are drawn by :mod:`.figures` (one function per figure, in the book's style of :mod:`qlib.plotting.style`)."""

#: chapter (notebook of ``chapters/rqp-sgd/``) → its claims modules
CLAIMS = {"01-theory": ("theory",), "02-table1": ("table1",), "03-figure2-and-bits": ("figure2",)}
