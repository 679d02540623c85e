"""Resumable long computations: each finished *unit* of work (a task, a law, a (law, repetition), a
federated run) saved on its own, so that a run stopped at minute 50 of 53 restarts at minute 50.

:class:`Units` keeps the results of a driver's units in a folder (a notebook's results folder's
``.units/``), one file per unit, written atomically (:func:`qlib.atomic.atomic_file`): a run killed
while writing leaves no partial unit. A unit is found again by the hash of

* its ``inputs`` (everything its result depends on: the driver's parameters for that unit, the
  device, fingerprints of the data it reads — :func:`fingerprint`),
* the *stamp* of the run (:mod:`qlib.stamp`, the one definition of "the inputs of this run changed"):
  in a notebook the batch runner executes, the notebook's inputs stamp, which the runner hands the
  kernel in ``$QLIB_STAMP`` (:data:`qlib.stamp.STAMP_VARIABLE`) — its code, parameters, data and every ``qlib``
  module it reaches, the same stamp by which the runner skips it and the archive marks its entry
  stale; elsewhere, :func:`qlib.stamp.library_stamp` (every module of ``qlib`` but the book), and
* the versions of torch, numpy and Python (a unit is a pickle of this interpreter's objects).

So a unit is never reused after its code, its notebook's parameters or its data change: it simply has
another key, and the old file is left for :meth:`Units.clear` (the runner's ``--force``). What resuming
is for is a rerun of the same run after a kill; the stamp is deliberately coarse because a unit whose
code silently changed is worse than a recomputed one.

Resuming gives the same numbers as an uninterrupted run, bit for bit, because each unit's result
depends on its inputs only (the drivers seed every unit from its own inputs, never from a random
state carried over from the previous unit); ``tests/test_resume.py`` interrupts runs of three
drivers and compares. Measured times recorded inside a unit (seconds per round and the like) are the
first run's.

Results are stored with :mod:`pickle` (tensors, arrays, frames): a units folder is a cache written by
this machine's runs, not a format to read from elsewhere.

The environment sets the defaults a notebook's :class:`Units` takes (the runner sets them):
``QLIB_RESUME=0`` computes every unit again (and overwrites), ``QLIB_UNITS_STOP_AFTER=k`` stops the
run with :class:`UnitsInterrupted` after ``k`` computed units (the tests' and the bench script's
"kill at a chosen point"), ``QLIB_STAMP`` is the run's stamp.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import pickle
import platform
import shutil
from pathlib import Path
from typing import Any, Callable, TypeVar

import numpy as np
import pandas as pd
import torch

from .atomic import atomic_file, check_folder_target, write_text
from .devices import MEMORY_POLICIES, cpu_pool
from .stamp import STAMP_VARIABLE, library_stamp
from .validation import check_callable, check_choice, check_int

__all__ = ["Units", "UnitsInterrupted", "check_units", "fingerprint", "run_units", "SUMMARY_FILE", "units_from_env"]

T = TypeVar("T")
SUMMARY_FILE = "summary.json"
#: the interpreter a unit's pickle belongs to
_ENVIRONMENT = f"torch {torch.__version__} numpy {np.__version__} python {platform.python_version()}"


class UnitsInterrupted(RuntimeError):
    """Raised by :meth:`Units.run` after the ``stop_after``-th computed unit (a deliberate stop)."""


def fingerprint(*objs: Any) -> str:
    """A short hash of arrays, tensors, frames and plain values (their dtype, shape and bytes), for a
    unit's ``inputs`` where the data itself decides the result."""
    h = hashlib.sha256()

    def put(o):
        if isinstance(o, torch.Tensor):
            t = o.detach().cpu().contiguous()
            h.update(f"tensor {t.dtype} {tuple(t.shape)}".encode())
            h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
        elif isinstance(o, np.ndarray):
            a = np.ascontiguousarray(o)
            h.update(f"array {a.dtype} {a.shape}".encode())
            h.update(a.tobytes() if a.dtype != object else repr(a.tolist()).encode())
        elif isinstance(o, pd.DataFrame):
            h.update(b"frame")
            put(o.columns.to_numpy().astype(str))
            for c in o.columns:
                put(o[c].to_numpy())
        elif isinstance(o, (list, tuple)):
            h.update(f"seq {len(o)}".encode())
            for x in o:
                put(x)
        elif isinstance(o, dict):
            h.update(f"dict {len(o)}".encode())
            for k in sorted(o, key=str):
                h.update(str(k).encode())
                put(o[k])
        else:
            h.update(f"{type(o).__name__} {o!r}".encode())

    for o in objs:
        put(o)
    return h.hexdigest()[:16]


def _plain(o: Any) -> str:
    """A value JSON cannot hold, as text for a unit's key: an array or a tensor by :func:`fingerprint`
    (its repr elides the middle of a large array), anything else by its repr."""
    if isinstance(o, np.ndarray) or type(o).__name__ == "Tensor":
        return "fingerprint " + fingerprint(o)
    return repr(o)


def _key(name: str, inputs: dict, stamp: str) -> str:
    try:
        text = json.dumps({"unit": name, "inputs": inputs, "code": stamp, "environment": _ENVIRONMENT},
                          sort_keys=True, default=_plain)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"inputs must be JSON-serialisable values (use fingerprint() for data): {exc}") from None
    return hashlib.sha256(text.encode()).hexdigest()[:24]


class Units:
    """Finished units of a computation in ``folder``: :meth:`run` returns a unit's saved result when
    its inputs and the run's stamp match, else computes, saves and returns it.

    ``reuse=False`` computes every unit again (the saved files are overwritten); ``stop_after=k``
    raises :class:`UnitsInterrupted` after the ``k``-th computed unit (a deliberate stop, to test
    and measure resuming); ``stamp``: the run's stamp (None: :func:`qlib.stamp.library_stamp`).
    ``reused`` and ``computed`` count this object's units; each
    :meth:`run` also updates ``folder/summary.json`` (``{"reused": …, "computed": …}``), which the
    runner reads to report what a notebook reused.

    ``folder`` is checked when built, not at the first save: a path (``TypeError`` naming ``folder``
    otherwise), not empty, not an existing file, whose nearest existing ancestor is a folder (``ValueError``)
    in which this process may write (:class:`qlib.atomic.PathNotWritableError`). It is created at the
    first save."""

    def __init__(self, folder: str | os.PathLike, *, reuse: bool = True, stop_after: int | None = None,
                 stamp: str | None = None):
        folder = check_folder_target("folder", folder)
        if not isinstance(reuse, bool):
            raise TypeError(f"reuse must be a bool, got {type(reuse).__name__}")
        self.folder = Path(folder)
        self.reuse = reuse
        self.stop_after = None if stop_after is None else check_int("stop_after", stop_after, low=1)
        if stamp is not None and (not isinstance(stamp, str) or not stamp):
            raise ValueError(f"stamp must be a non-empty string or None, got {stamp!r}")
        self.stamp = stamp or library_stamp()
        self.reused = 0
        self.computed = 0

    def __repr__(self) -> str:
        return f"Units({str(self.folder)!r}, reused={self.reused}, computed={self.computed})"

    def path(self, name: str, inputs: dict) -> Path:
        """The file of unit ``name`` with ``inputs`` (it may not exist)."""
        if not isinstance(name, str) or not name or "/" in name or name.startswith("."):
            raise ValueError(f"name must be a non-empty file-name-safe string, got {name!r}")
        if not isinstance(inputs, dict):
            raise TypeError(f"inputs must be a dict, got {type(inputs).__name__}")
        return self.folder / name / f"{_key(name, inputs, self.stamp)}.pkl"

    def run(self, name: str, inputs: dict, fn: Callable[[], T]) -> T:
        """The result of unit ``name`` with ``inputs``: loaded when saved under the run's stamp
        (and ``reuse``), else ``fn()`` computed and saved atomically."""
        check_callable("fn", fn)
        p = self.path(name, inputs)
        if self.reuse and p.is_file():
            try:
                with open(p, "rb") as fh:
                    value = pickle.load(fh)
            except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError):
                value = _MISSING  # unreadable (a foreign or damaged file): computed again below
            if value is not _MISSING:
                self.reused += 1
                self._summary()
                return value
        value = fn()
        with atomic_file(p) as fh:
            pickle.dump(value, fh, protocol=pickle.HIGHEST_PROTOCOL)
        self.computed += 1
        self._summary()
        if self.stop_after is not None and self.computed >= self.stop_after:
            raise UnitsInterrupted(f"stopped after {self.computed} computed units (stop_after={self.stop_after}); "
                                   f"{self.reused} reused; rerun to resume")
        return value

    def _summary(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        f = self.folder / SUMMARY_FILE
        try:
            old = json.loads(f.read_text()) if f.is_file() else {}
        except (OSError, ValueError):
            old = {}
        # several drivers of one notebook share the folder: counts of this process add up per pid
        mine = {"reused": self.reused, "computed": self.computed}
        per = old.get("processes", {}) if isinstance(old.get("processes"), dict) else {}
        per[f"{os.getpid()}-{id(self)}"] = mine
        tot = {"reused": sum(v.get("reused", 0) for v in per.values()),
               "computed": sum(v.get("computed", 0) for v in per.values()), "processes": per}
        write_text(f, json.dumps(tot))

    def clear(self) -> None:
        """Remove every saved unit (and the summary)."""
        shutil.rmtree(self.folder, ignore_errors=True)


_MISSING = object()


def check_units(name: str, units) -> Units | None:
    """``units`` itself if it is a :class:`Units` or None (a driver's ``units=`` argument), else a
    ``TypeError`` naming ``name``."""
    if units is not None and not isinstance(units, Units):
        raise TypeError(f"{name} must be a qlib.resume.Units or None, got {type(units).__name__}")
    return units


def units_from_env(folder: str | os.PathLike) -> Units:
    """A :class:`Units` in ``folder`` with the environment's settings (``QLIB_RESUME``,
    ``QLIB_UNITS_STOP_AFTER``, ``QLIB_STAMP``; see the module docstring); ``folder`` checked as
    :class:`Units` checks it (an error naming ``folder``)."""
    reuse = os.environ.get("QLIB_RESUME", "1").strip() not in ("0", "false", "no")
    stop = os.environ.get("QLIB_UNITS_STOP_AFTER", "").strip()
    if stop and not stop.isdigit():
        raise ValueError(f"QLIB_UNITS_STOP_AFTER must be a positive integer, got {stop!r}")
    return Units(folder, reuse=reuse, stop_after=int(stop) if stop else None,
                 stamp=os.environ.get(STAMP_VARIABLE, "").strip() or None)


def run_units(name: str, jobs: list, *, units: Units | None = None, processes: int = 1,
              memory: str = "default") -> list:
    """The results of ``jobs`` in their order: each job ``(inputs, fn, args)`` is ``fn(*args)``, saved as
    unit ``name`` with ``inputs`` when ``units`` is given (a saved one is read, not computed). With
    ``processes > 1`` the jobs not saved run in that many spawned CPU workers
    (:func:`qlib.devices.cpu_pool`, with its ``memory`` policy; ``fn`` and ``args`` must pickle) while this
    process saves the results in order: the same values as one process, for jobs seeded by their own inputs.
    ``memory`` must be one of :data:`qlib.devices.MEMORY_POLICIES` whatever ``processes`` is."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a non-empty string (the units' folder), got {name!r}")
    if not isinstance(jobs, (list, tuple)) or not all(
            isinstance(j, (list, tuple)) and len(j) == 3 and callable(j[1]) and isinstance(j[2], (list, tuple))
            for j in jobs):
        raise TypeError(f"jobs must be a list of (inputs, fn, args) with fn callable and args a tuple, got {jobs!r}"[:300])
    check_units("units", units)
    processes = check_int("processes", processes, low=1)
    check_choice("memory", memory, MEMORY_POLICIES)  # also where one process runs: a typo is never ignored
    pool = cpu_pool(min(processes, len(jobs)), memory) if processes > 1 and jobs else None
    try:
        work = {}  # job index -> a worker's future (the jobs not saved)
        if pool is not None:
            for i, (inputs, fn, args) in enumerate(jobs):
                if units is None or not (units.reuse and units.path(name, inputs).is_file()):
                    work[i] = pool.submit(fn, *args)
        out = []
        for i, (inputs, fn, args) in enumerate(jobs):
            call = work[i].result if i in work else functools.partial(fn, *args)
            out.append(call() if units is None else units.run(name, inputs, call))
        return out
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
