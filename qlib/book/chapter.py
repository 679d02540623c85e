"""One setup call for every chapter notebook: threads, device, plotting style and the recorder.

A chapter's first code cell after the parameters is::

    from qlib.book import chapter
    ch = chapter(chapter_id, out_dir=out_dir, device=device, threads=threads)
    dev = ch.device

``chapter_id`` is injected by the batch runner (the notebook's path below ``chapters/`` without
``.ipynb``). In an interactive session (JupyterLab) it is ``None`` in the parameters cell and is found
from the notebook's own path (``JPY_SESSION_NAME`` / ``__session__``, else the working directory),
so a notebook never retypes its name, its part or its paper.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from qlib.devices import resolve

from . import style, tables
from .compare import PART_PAPER, Comparisons

__all__ = ["chapter", "Chapter", "infer_chapter_id"]


def infer_chapter_id(start: str | os.PathLike | None = None) -> str:
    """The chapter id (``<part>/<NN-topic>``) of the running notebook, from its path."""
    cands = []
    if start is not None:
        cands.append(str(start))
    for key in ("JPY_SESSION_NAME", "__session__"):
        v = os.environ.get(key)
        if v:
            cands.append(v)
    try:  # IPython puts the notebook path in the user namespace as __session__ (ipykernel >= 6.22)
        from IPython import get_ipython

        ip = get_ipython()
        if ip is not None and ip.user_ns.get("__session__"):
            cands.append(str(ip.user_ns["__session__"]))
    except ImportError:  # pragma: no cover
        pass
    for c in cands:
        parts = Path(c).with_suffix("").parts
        if "chapters" in parts:
            i = len(parts) - 1 - parts[::-1].index("chapters")
            rest = parts[i + 1:]
            if len(rest) == 2:
                return "/".join(rest)
    cwd = Path.cwd()
    if cwd.parent.name == "chapters":
        return f"{cwd.name}/interactive"
    raise ValueError("chapter_id is None and the notebook's path could not be found; pass chapter_id='<part>/<NN-topic>'")


@dataclass
class Chapter:
    """What a chapter's setup gives the notebook."""

    id: str
    part: str
    paper: str | None
    device: torch.device
    out_dir: Path
    cmp: Comparisons
    threads: int | None
    _limits: Any = field(default=None, repr=False)

    def record(self, rows) -> None:
        """Record comparison rows (``qlib.repro`` results) in this chapter's ledger. Returns nothing,
        so that a recording cell shows no stray output (``ch.cmp.record`` returns the verdicts)."""
        self.cmp.record(rows)

    def paper_vs_ours(self) -> None:
        """Display the chapter's ``Paper vs ours`` section body (the notebook's markdown cell above it
        carries the heading and its label, :func:`qlib.book.compare.section_label`): the counts, shared
        notes once, the rows that need attention, and the settled rows folded away."""
        from IPython.display import Markdown, display

        display(Markdown(self.cmp.markdown()))


def chapter(
    chapter_id: str | None = None,
    *,
    out_dir: str | os.PathLike | None = None,
    device: str = "auto",
    threads: int | None = 1,
    plot_style: bool = True,
) -> Chapter:
    """Set up a chapter: resolve ``device``; on CPU limit torch and BLAS to ``threads`` threads
    (``None`` leaves them alone — on a shared 2-core machine one thread ran these small batched ops
    several times faster than two); apply the book's plotting style; open the comparison recorder
    writing to ``out_dir`` (default ``_results/<chapter_id>`` below the working directory)."""
    cid = chapter_id if chapter_id is not None else infer_chapter_id()
    if not isinstance(cid, str) or cid.count("/") != 1:
        raise ValueError(f"chapter_id must look like '<part>/<NN-topic>', got {cid!r}")
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
        raise ValueError(f"threads must be an integer >= 1 or None, got {threads!r}")
    dev = resolve(device)
    limits = None
    if threads is not None and dev.type == "cpu":
        torch.set_num_threads(threads)
        try:
            from threadpoolctl import threadpool_limits

            limits = threadpool_limits(threads)
        except ImportError:  # pragma: no cover - threadpoolctl is in the book extra
            pass
    part = cid.split("/")[0]
    out = Path(out_dir) if out_dir is not None else Path("_results") / cid
    if plot_style:
        style.apply(checks_to=out)
        tables.install_formatter()
    return Chapter(cid, part, PART_PAPER.get(part), dev, out, Comparisons(cid, out), threads, limits)
