"""One setup call for every chapter notebook: threads, device, plotting style and the recorder.

A chapter notebook calls it through its one setup line, ``from qlib.book.setup import ch, dev``
(:mod:`qlib.book.setup`), which passes the parameters cell's ``chapter_id``, ``out_dir``, ``device`` and
``threads``.

``chapter_id`` is injected by the batch runner (the notebook's path below ``chapters/`` without
``.ipynb``). In an interactive session (JupyterLab) it is ``None`` in the parameters cell and is found
from the notebook's own path (``JPY_SESSION_NAME`` / ``__session__``); under plain papermill (which
tells the kernel neither), from ``PAPERMILL_INPUT_PATH`` (``--inject-paths``) or the input path on the
papermill command line that started the kernel; else from the working directory. So a notebook never
retypes its name, its part or its paper.

Under plain papermill a misspelled ``-p`` name only makes papermill log a warning and run the
default; :func:`chapter` finds such names in papermill's injected cell and says so on the page.
"""

from __future__ import annotations

import ast
import difflib
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from qlib.devices import resolve
from qlib.plotting import capture, style
from qlib.repro.ledger import DIFFERING, PASSING
from qlib.resume import Units, units_from_env

from . import tables
from .compare import Comparisons
from .layout import FIGURES, archive_root, entry_dir
from .render import paper_vs_ours_markdown
from .scale import paper_scale_rows, shown_profile
from .schema import PART_PAPER

__all__ = ["chapter", "Chapter", "infer_chapter_id", "unknown_parameters"]


def infer_chapter_id(start: str | os.PathLike | None = None) -> str:
    """The chapter id (``<part>/<NN-topic>``) of the running notebook, from its path."""
    cands = []
    if start is not None:
        cands.append(str(start))
    for key in ("JPY_SESSION_NAME", "__session__"):
        v = os.environ.get(key)
        if v:
            cands.append(v)
    ns = _user_ns()
    for key in ("__session__", "PAPERMILL_INPUT_PATH"):  # ipykernel >= 6.22; papermill --inject-paths
        if ns.get(key):
            cands.append(str(ns[key]))
    cands += _launcher_notebooks()
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


def _user_ns() -> dict:
    try:
        from IPython import get_ipython  # deferred: IPython is there only in a kernel
    except ImportError:  # pragma: no cover
        return {}
    ip = get_ipython()
    return ip.user_ns if ip is not None else {}


def _launcher_notebooks() -> list[str]:
    """The ``.ipynb`` arguments of the processes above this kernel (papermill's command line names
    its input notebook; its kernel is that process's child). Empty where psutil cannot tell."""
    try:
        import psutil  # deferred: psutil comes with ipykernel, and only a kernel looks for its launcher
    except ImportError:  # pragma: no cover - psutil comes with ipykernel
        return []
    found = []
    try:
        for proc in psutil.Process().parents()[:3]:
            cwd = proc.cwd()
            for arg in proc.cmdline():
                if arg.endswith(".ipynb"):
                    found.append(str(Path(cwd, arg)))
    except (psutil.Error, OSError):  # pragma: no cover - a vanished or foreign process
        pass
    return found


_PAPERMILL_CELL = "# Parameters"


def unknown_parameters(history: list[str] | None = None) -> dict[str, str | None]:
    """Names papermill injected that the notebook's parameters cell does not declare, each with the
    closest declared name (or None). ``history``: the sources of the executed cells in order (default:
    IPython's ``In``); papermill's injected cell starts with ``# Parameters`` and follows the
    parameters cell. Empty when no injected cell ran (the batch runner rejects unknown names itself)."""
    if history is None:
        history = [c for c in _user_ns().get("In", []) if isinstance(c, str)]
    for i, src in enumerate(history):
        if src.lstrip().startswith(_PAPERMILL_CELL) and i > 0:
            declared, injected = _assigned(history[i - 1]), _assigned(src)
            if not declared:
                return {}
            return {n: (difflib.get_close_matches(n, sorted(declared), n=1) or [None])[0]
                    for n in injected if n not in declared}
    return {}


def _assigned(src: str) -> list[str]:
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return []
    names = []
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        names += [t.id for t in targets if isinstance(t, ast.Name)]
    return names


def _say_unknown(unknown: dict[str, str | None]) -> None:
    said = "; ".join(f"{n!r}" + (f" (did you mean {m!r}?)" if m else "") for n, m in unknown.items())
    msg = f"unknown parameter(s) ignored, the defaults ran instead: {said}"
    warnings.warn(msg, UserWarning, stacklevel=3)
    try:
        from IPython.display import Markdown, display  # deferred: IPython is there only in a kernel

        display(Markdown(f"**Warning: {msg}.**"))
    except ImportError:  # pragma: no cover
        pass


def _book_root(start: Path) -> Path | None:
    for d in (start, *start.parents):
        if (d / "_toc.yml").is_file():
            return d
    return None


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
    _units: Any = field(default=None, repr=False)

    @property
    def units(self) -> Units:
        """The chapter's finished units of work (:class:`qlib.resume.Units` in ``out_dir/.units``, keyed
        by the notebook's inputs stamp the runner hands its kernel): pass it to a heavy driver
        (``units=ch.units``) and a rerun after a kill resumes where it stopped. The runner's ``--force``
        and ``--no-resume`` set ``QLIB_RESUME=0`` (compute every unit again)."""
        if self._units is None:
            self._units = units_from_env(self.out_dir / ".units")
        return self._units

    def record(self, rows) -> None:
        """Record comparison rows (``qlib.repro`` results) in this chapter's ledger. Returns nothing,
        so that a recording cell shows no stray output (``ch.cmp.record`` returns the verdicts)."""
        self.cmp.record(rows)

    def paper_vs_ours(self) -> None:
        """Display the chapter's ``Paper vs ours`` section body (the notebook's markdown cell above it
        carries the heading and its label, :func:`qlib.book.render.section_label`): the counts, shared
        notes once, the rows that need attention, and the settled rows folded away."""
        from IPython.display import Markdown, display  # deferred: IPython is there only in a kernel

        profile = _profile_of_run()
        df = self.cmp.frame(scale=profile)
        # a build at another scale shows the archived run at the largest scale beside its own: `paper`, else
        # the chapter's own reduced profile (a chapter whose paper run does not fit a session), so labelled
        shown = shown_profile(self.id, exclude=profile) if profile != "paper" else None
        if shown is not None:
            df = paper_scale_rows(df, self.id, profile=shown)
            st = df.attrs.get("archived")
            if st is not None and st.current:  # a row that differs here and passes at the larger scale: cause scale
                hit = df["verdict"].isin(DIFFERING) & df["verdict_archived"].isin(PASSING)
                df.loc[hit, "cause"] = "scale"
        display(Markdown(paper_vs_ours_markdown(df)))
        st = df.attrs.get("archived")
        if st is not None and st.state != "invalid":
            self._archived_figures(st)

    def _archived_figures(self, status) -> None:
        """The figures of the archived ``paper`` run, drawn again from their data (below the table)."""
        import matplotlib.pyplot as plt  # deferred: importing pyplot picks a backend, which only a kernel should
        from IPython.display import Markdown, display  # deferred: IPython is there only in a kernel

        d = entry_dir(archive_root(), status.profile, self.id) / FIGURES
        figs = sorted(d.glob("fig-*.npz"), key=lambda p: int(p.stem.split("-")[1])) if d.is_dir() else []
        if not figs:
            return
        stale = "" if status.current else " (stale: shown for reference)"
        display(Markdown(f"**The figures of the archived `{status.profile}` run**{stale}, drawn again from their data "
                         f"(`archive/{status.profile}/{self.id}/figures/`), in the order this chapter shows them:"))
        with style.unchecked():
            for f in figs:
                fig = capture.redraw(f)
                display(Markdown(f"*Figure {f.stem.split('-')[1]} of this chapter, at `{status.profile}` scale.*"))
                display(fig)
                plt.close(fig)


def _profile_of_run() -> str:
    """The profile the running notebook was given (papermill's injected ``profile``), else "default"."""
    return str(_user_ns().get("profile", "default"))


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
    writing to ``out_dir`` (default ``_results/<chapter_id>`` below the book's root — the folder of
    ``_toc.yml`` above the working directory — else below the working directory). Parameters that
    plain papermill injected but the notebook does not declare are named on the page."""
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
            from threadpoolctl import threadpool_limits  # deferred: threadpoolctl is in the book extra

            limits = threadpool_limits(threads)
        except ImportError:  # pragma: no cover - threadpoolctl is in the book extra
            pass
    part = cid.split("/")[0]
    if out_dir is not None:
        out = Path(out_dir)
    else:
        root = _book_root(Path.cwd())
        out = (root if root is not None else Path()) / "_results" / cid
    unknown = unknown_parameters()
    if unknown:
        _say_unknown(unknown)
    if plot_style:
        style.apply(checks_to=out, figures_to=out / FIGURES)
        tables.install_formatter()
    return Chapter(cid, part, PART_PAPER.get(part), dev, out, Comparisons(cid, out), threads, limits)
