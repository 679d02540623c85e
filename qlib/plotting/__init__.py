"""Plotting below the reproduction: the one style every figure is drawn in (:mod:`.style`) and the
capture of a figure's data, which draws it again (:mod:`.capture`). Both are library: they import
nothing of the reproduction (``qlib.repro``) or of the book (``qlib.book``), which use them."""
