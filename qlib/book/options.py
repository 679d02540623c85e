"""The options of a batch run: one frozen record shared by the runner (:func:`qlib.book.runner.run`),
the archive (:func:`qlib.book.archive.archive`) and publishing (:func:`qlib.book.publish.publish`).

Each of them takes ``options``, one record (a :class:`RunOptions`, None for the driver's defaults):
``run(root, RunOptions(profile="smoke", jobs=2))``; ``dataclasses.replace(options, jobs=4)`` changes a
field of a record in hand. A driver that does not honour a field refuses it when set
(:func:`check_unused`).
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import Any, Iterable

__all__ = ["RunOptions", "options_record", "check_unused"]


@dataclass(frozen=True)
class RunOptions:
    """How the book's notebooks are executed.

    ``profile``: a profile name or a user profile file; ``only``: the notebooks to run (a part prefix
    such as ``eden/``, a path below ``chapters/``, or a glob; None: all); ``device``: ``auto``, ``cpu``,
    ``cuda`` or ``cuda:<k>``; ``data_dir``: the datasets (None: ``$QLIB_DATA_DIR``); ``output_dir``: the
    runner's output tree (None: ``<root>/_build/book``); ``overrides``: ``{parameter: value}`` over the
    profile's; ``jobs`` > 1: a local Dask cluster of that many worker processes; ``scheduler``: an
    existing Dask cluster (``tcp://host:8786``); ``replicates`` K: K − 1 further seeds (1 to 100);
    ``force``: re-run notebooks whose inputs are unchanged; ``resume``: reuse the finished units of an
    earlier run; ``timeout``: seconds per cell (None: none); ``progress``: a progress bar.
    """

    profile: str | os.PathLike = "default"
    only: Iterable[str] | None = None
    device: str = "auto"
    data_dir: str | os.PathLike | None = None
    output_dir: str | os.PathLike | None = None
    overrides: dict[str, Any] | None = None
    jobs: int = 1
    scheduler: str | None = None
    replicates: int = 1
    force: bool = False
    resume: bool = True
    timeout: int | None = None
    progress: bool = True

    def __post_init__(self):
        if self.device not in ("auto", "cpu", "cuda") and not str(self.device).startswith("cuda:"):
            raise ValueError(f"device must be 'auto', 'cpu' or 'cuda', got {self.device!r}")
        if isinstance(self.jobs, bool) or not isinstance(self.jobs, int) or self.jobs < 1:
            raise ValueError(f"jobs must be an integer >= 1, got {self.jobs!r}")
        if isinstance(self.replicates, bool) or not isinstance(self.replicates, int) or not 1 <= self.replicates <= 100:
            raise ValueError(f"replicates must be an integer in [1, 100], got {self.replicates!r}")
        if not isinstance(self.resume, bool):
            raise TypeError(f"resume must be a bool, got {type(self.resume).__name__}")


def options_record(options: RunOptions | None, default: RunOptions) -> RunOptions:
    """``options`` when it is a :class:`RunOptions`, ``default`` when it is None, else a ``TypeError``."""
    if options is None:
        return default
    if not isinstance(options, RunOptions):
        raise TypeError(f"options must be a RunOptions or None, got {type(options).__name__}")
    return options


def check_unused(options: RunOptions, used: Iterable[str], *, name: str) -> None:
    """A ``TypeError`` naming the fields of ``options`` outside ``used`` that are set away from their
    defaults: the driver ``name`` does not take them."""
    used = set(used)
    unknown = used - {f.name for f in dataclasses.fields(RunOptions)}
    if unknown:
        raise ValueError(f"used must name fields of RunOptions, got {sorted(unknown)}")
    defaults = RunOptions()
    set_ = [f.name for f in dataclasses.fields(RunOptions)
            if f.name not in used and getattr(options, f.name) != getattr(defaults, f.name)]
    if set_:
        raise TypeError(f"{name} does not take {', '.join(map(repr, set_))} (it takes {', '.join(sorted(used))})")
