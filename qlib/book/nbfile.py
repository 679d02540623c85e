"""The chapters' notebooks stored as JupyterLab saves them, so that opening one in Lab and saving it unedited
changes nothing (issue 57, item 6) and Jupyter Book 2's upgrader (``jupyter book init``) reads every cell.

JupyterLab saves through ``nbformat.write``: keys sorted, one-space indent, every multi-line string as a list of
lines (a cell's ``source`` included: nbformat allows a string, which Jupyter Book 2's upgrader does not), a
final newline; and it writes the running kernel's spec and language info into the metadata. :func:`lab_form`
is that text for a notebook; :func:`normalise` rewrites (or, with ``check``, lists) the chapters that differ
from it. ``python -m qlib.book lab-form [--check]`` is the command line.

The kernel is ipykernel's ``python3`` (:data:`KERNELSPEC`) and its language info is what ipykernel reports
(:func:`language_info`), but for the Python version, which Lab writes from the kernel that runs: a kernel of
another Python than the committed one changes that one field.
"""

from __future__ import annotations

from pathlib import Path

import nbformat

from .toc import find_root

__all__ = ["KERNELSPEC", "LANGUAGE_INFO", "language_info", "lab_form", "normalise"]

#: the kernel every chapter names: ipykernel's, as its kernel spec names itself
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
#: ipykernel's language info without the version (ipykernel.ipkernel.IPythonKernel.language_info)
LANGUAGE_INFO = {"codemirror_mode": {"name": "ipython", "version": 3}, "file_extension": ".py",
                 "mimetype": "text/x-python", "name": "python", "nbconvert_exporter": "python",
                 "pygments_lexer": "ipython3"}
#: the Python version the committed notebooks name (the project's: environment.yml, .ci/run)
PYTHON_VERSION = "3.11.7"


def language_info(version: str = PYTHON_VERSION) -> dict:
    """The language info a kernel of Python ``version`` writes."""
    if not isinstance(version, str) or not version[:1].isdigit():
        raise ValueError(f"version must be a Python version such as '3.11.7', got {version!r}")
    return {**LANGUAGE_INFO, "version": version}


def lab_form(text: str) -> str:
    """The notebook ``text`` as JupyterLab saves it after opening it with the chapters' kernel."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a notebook's JSON text (str), got {type(text).__name__}")
    nb = nbformat.reads(text, as_version=nbformat.NO_CONVERT)
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nb.metadata["language_info"] = language_info()
    out = nbformat.writes(nb, version=nbformat.NO_CONVERT)
    return out if out.endswith("\n") else out + "\n"


def normalise(root: str | Path | None = None, *, check: bool = False) -> list[Path]:
    """The notebooks under ``chapters/`` whose text is not :func:`lab_form`'s, rewritten in that form (or,
    with ``check``, only listed)."""
    root = find_root(root)
    changed = []
    for p in sorted((root / "chapters").rglob("*.ipynb")):
        if ".ipynb_checkpoints" in p.parts:
            continue
        text = p.read_text(encoding="utf-8")
        form = lab_form(text)
        if form != text:
            changed.append(p)
            if not check:
                p.write_text(form, encoding="utf-8")
    return changed
