"""The one line that sets up a chapter notebook, just below its parameters::

    from qlib.book.setup import ch, dev

Importing ``ch`` runs :func:`qlib.book.chapter` with the parameters the notebook holds at that moment
(``chapter_id``, ``out_dir``, ``device``, ``threads`` of its parameters cell, as papermill or the runner
overrode them): threads, device, plotting style, table display and the comparison recorder. ``dev`` is
that chapter's device (a notebook that never names the device imports ``ch`` alone).

Decisions:

* **The names are computed when imported, not when the module loads** (the module's ``__getattr__``,
  PEP 562). A module runs once per kernel, but a reader re-runs a cell after changing a parameter: each
  ``from qlib.book.setup import ch`` sets the chapter up again, with a fresh recorder, as calling
  :func:`~qlib.book.chapter` did. ``dev`` reuses the chapter just made from the same parameters.
* **The parameters are read from the importing namespace** (the frame that executes the import: the
  notebook's globals, in a kernel or in a script exported from it), so the line takes no arguments and
  the same line serves every notebook; a name the namespace lacks takes :func:`~qlib.book.chapter`'s
  default.
* **Colab**: an import cannot install the package it imports (Python finds the module before running
  any of it), and Colab opens the notebook alone, without the repository. So the notebook carries one
  more line for Colab, hidden in the book, which ``python -m qlib.book.launch`` writes
  (:mod:`qlib.book.launch`); it installs ``qlib`` only where :data:`COLAB_ENV` is set. Here, where that
  variable is set, the loaders may download the data (``QLIB_DOWNLOAD=1``): nothing is local there.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import torch

from qlib.data import DOWNLOAD_ENV_VAR

from .chapter import Chapter, chapter

__all__ = ["COLAB_ENV", "PARAMETERS"]

#: the environment variable every Colab runtime sets (and no other): the launch line installs ``qlib``
#: where it is set, and the setup lets the loaders download the data there
COLAB_ENV = "COLAB_RELEASE_TAG"

#: the parameters-cell names the setup reads, with :func:`qlib.book.chapter`'s keyword for each
PARAMETERS = {"chapter_id": "chapter_id", "out_dir": "out_dir", "device": "device", "threads": "threads"}

ch: Chapter  # computed on import (``__getattr__``): declared for editors and type checkers
dev: torch.device

_last: tuple[tuple, Chapter] | None = None  # (the parameters it was made from, the chapter)


def __getattr__(name: str) -> Any:
    if name not in ("ch", "dev"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return _setup(name, sys._getframe(1).f_globals)


def _setup(name: str, namespace: dict) -> Chapter | torch.device:
    """``ch`` (a new chapter) or ``dev`` (the device of the chapter last made from the same parameters,
    else of a new one) for the parameters found in ``namespace``."""
    global _last
    given = {kw: namespace[n] for n, kw in PARAMETERS.items() if n in namespace}
    key = (id(namespace), tuple(sorted((k, repr(v)) for k, v in given.items())))
    if name == "dev" and _last is not None and _last[0] == key:
        return _last[1].device
    if COLAB_ENV in os.environ:
        os.environ.setdefault(DOWNLOAD_ENV_VAR, "1")
    made = chapter(given.pop("chapter_id", None), **given)
    _last = (key, made)
    return made if name == "ch" else made.device
