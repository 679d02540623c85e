"""Argument checks shared by every ``qlib`` module (the idea of scikit-learn's ``utils/validation``).

One vocabulary, one message style: every check names the argument and the allowed range, and raises
``TypeError`` for a value of the wrong kind and ``ValueError`` for a value of the right kind outside
its range (NaN, ±inf, empty, wrong shape, out of bounds). A check returns the value converted to the
canonical type (``int``, ``float``, ``np.ndarray``, ``torch.Tensor``), so callers write::

    n = check_int("n", n, low=1)
    p = check_float("p", p, low=0.0, high=1.0)
    x = check_tensor("x", x, ndim=(1, 2))

Messages read ``"<name> must be <what>, got <value>"``; a test enforces that every public callable of
``qlib`` raises them on bad input (``tests/test_common_bad_input.py``).

**Validate at the door, once** (the idea of scikit-learn's ``prefer_skip_nested_validation``). A public
function checks its arguments, then runs its body inside :func:`skip_nested`; the public functions it
calls there (another module's, or its own module's) see *trusted* arguments, and their checks pass a
value that already has the canonical type (``int``, ``float``, ``str``, ``bool``, a tensor, a NumPy
array of the wanted dtype) through untested: no range, shape or finiteness test, no reduction over a
tensor. A value of another type is checked and converted as usual, so a nested call never sees a
value it cannot use. There is one public function per idea and no unchecked private twin::

    def compress(x, bits, seed):
        x = check_tensor("x", x)
        bits = check_int("bits", bits, low=1, high=8)
        with skip_nested():             # everything below was checked at the door
            r = hadamard.seeded_rht(x, seed)   # its checks pass x and seed through
            ...

Only a function that has checked *every* value it passes on may enter :func:`skip_nested` (a function
that forwards unchecked arguments, such as ``roundtrip(x, bits, seed, n_rotations=k)`` passing ``n_rotations`` on to
``compress``, must not).
The switch is a :class:`contextvars.ContextVar`: per thread and per asyncio task, restored on exit
(also on an exception). :func:`nested` says whether it is on; a function whose checks are not ``check_*``
calls (an idea's own, e.g. a ±1 sign test) asks it.

**Non-finite values: refused at the door, one decision per family**. A NaN or ±inf where a
number is meant raises a ``ValueError`` naming the argument (``check_*(..., finite=True)``, the default).
Where a NaN or inf carries a meaning for some callers, the entry point takes ``allow_nonfinite=False``
and says what the switch does; inside :func:`skip_nested` nothing is checked (the caller checked at its
door). The families:

* **Transforms and rotations** (:mod:`qlib.hadamard`: ``fwht``, ``rht``, ``irht``, ``seeded_rht``,
  ``seeded_irht``, ``pad_to_power_of_two``): refused. The check reads the first output coordinate of
  each row, which sums every input of the row, so it costs no pass over the data (``benchmarks/
  bench_finite_check.py``); ``allow_nonfinite=True`` propagates, as ``torch.fft`` does.
* **Rankings** (:mod:`qlib.ranking`: ``ranks``, ``spearman``, ``average_runs``, ``rq_rank_stability``;
  ``rank_confusion`` takes ranks, always finite): refused; ``allow_nonfinite=True`` is the r_Q^n reading
  (NaN an undefined r_Q^n, ranked last and ignored by averages; +inf an unbounded one, ranked first).
* **Forward passes** (``qlib.engine_models.Linear.forward``, ``MLP.forward``): NaN/inf parameters or inputs
  refused; ``allow_nonfinite=True`` scores a model that may have diverged (its outputs NaN). ``apply``,
  the training loop's call, checks kind and shape only (``train`` checks its data and θ₀ once).
* **Metrics** (``qlib.repro.quantized_mis.molecular.auroc``, ``r2``, ``spearman_to_labels``): non-finite
  scores refused; ``allow_nonfinite=True`` gives their row NaN (a diverged model recorded as a failed
  model, not a stopped batch) — what the molecular study passes.
* **Attack statistics** (``qlib.repro.attacks.protocol``): ``percentile_interval`` refuses non-finite
  resamples unless ``allow_nonfinite=True`` (an undefined resampled ρ, ignored); ``finite_scores`` is the
  one function whose purpose is non-finite input (0/0 and x/0 scores of a zero per-example variance,
  mapped to stated finite values).
* **Labels, rates, sizes and every other scalar or array argument**: refused, no switch.

A ledger row whose ``ours`` is NaN (a comparison that failed) is a result, not an input: it is recorded.

**No allocation before a size check**. A size an argument sets (``n``, ``D``, ``levels``, a
shape) is checked against the memory it would take before anything of that size is made:
:func:`check_alloc` raises a ``ValueError`` naming the argument, the bytes the call would need and the
limit. The limit is one module setting, :func:`memory_limit`: ``$QLIB_MEMORY_LIMIT`` (bytes, or with a
suffix ``K``/``M``/``G``/``T``, binary) where set, else :data:`MEMORY_FRACTION` of the machine's physical
memory; :func:`set_memory_limit` overrides it for the process. It bounds one allocation (the largest a
call makes), not a process's total, and is checked whatever :func:`nested` says (two multiplications).
"""

from __future__ import annotations

import contextvars
import dataclasses
import math
import numbers
import os
from typing import Any, Iterable, Sequence

import numpy as np
import torch

__all__ = [
    "check_int",
    "check_float",
    "check_probability",
    "check_positive",
    "check_bool",
    "check_choice",
    "check_seed",
    "check_str",
    "check_array",
    "check_tensor",
    "check_same_length",
    "check_int_sequence",
    "check_float_sequence",
    "check_callable",
    "check_alloc",
    "resolve_config",
    "check_frame",
    "memory_limit",
    "set_memory_limit",
    "MEMORY_FRACTION",
    "MEMORY_ENV_VAR",
    "skip_nested",
    "nested",
]

_NESTED = contextvars.ContextVar("qlib.validation.nested", default=False)
_nested = _NESTED.get  # one C call: the cost of the switch on every check (~40 ns)


class skip_nested:
    """``with skip_nested():`` — within this block the ``check_*`` functions trust values of the canonical
    type (see the module docstring): for the body of a public function whose arguments have all been
    checked. Entered inside another such block it changes nothing (and costs two attribute reads)."""

    __slots__ = ("_token",)

    def __enter__(self) -> None:
        self._token = None if _nested() else _NESTED.set(True)

    def __exit__(self, *exc) -> None:
        if self._token is not None:
            _NESTED.reset(self._token)


def nested() -> bool:
    """Whether the caller runs inside :func:`skip_nested` (its arguments were checked at the door)."""
    return _NESTED.get()


def _short(v: Any) -> str:
    s = repr(v)
    return s if len(s) <= 80 else s[:77] + "..."


def _is_bool(v: Any) -> bool:
    return isinstance(v, (bool, np.bool_)) or (isinstance(v, torch.Tensor) and v.dtype == torch.bool)


def _range_text(low, high, low_open, high_open, kind="") -> str:
    if low is not None and high is not None:
        return f"{kind}in {'(' if low_open else '['}{low}, {high}{')' if high_open else ']'}"
    if low is not None:
        return f"{kind}{'>' if low_open else '>='} {low}"
    if high is not None:
        return f"{kind}{'<' if high_open else '<='} {high}"
    return kind.strip() or "a number"


def check_int(
    name: str,
    value: Any,
    *,
    low: int | None = None,
    high: int | None = None,
    allow_none: bool = False,
    integral_float: bool = False,
) -> int | None:
    """An integer in ``[low, high]`` (``bool`` rejected). ``integral_float`` accepts ``3.0``."""
    if value is None and allow_none:
        return None
    if type(value) is int and _nested():
        return value

    def want():  # the allowed range, spelled out only for an error
        return _range_text(low, high, False, False, "an integer ")

    if type(value) is int and (low is None or value >= low) and (high is None or value <= high):
        return value  # the common case, without the conversions below

    if isinstance(value, torch.Tensor) and value.ndim == 0 and not value.is_floating_point() and not _is_bool(value):
        value = int(value.item())
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if _is_bool(value) or not isinstance(value, numbers.Integral):
        if integral_float and isinstance(value, (float, np.floating)) and math.isfinite(value) and float(value).is_integer():
            value = int(value)
        else:
            raise TypeError(f"{name} must be {want()}, got {_short(value)} ({type(value).__name__})")
    value = int(value)
    if (low is not None and value < low) or (high is not None and value > high):
        raise ValueError(f"{name} must be {want()}, got {value}")
    return value


def check_float(
    name: str,
    value: Any,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    allow_none: bool = False,
    allow_inf: bool = False,
) -> float | None:
    """A finite real number in the given interval (``bool`` and complex rejected)."""
    if value is None and allow_none:
        return None
    if type(value) is float and _nested():
        return value

    def want():  # the allowed range, spelled out only for an error
        return _range_text(low, high, low_open, high_open, "a finite number ")

    if isinstance(value, (torch.Tensor, np.ndarray)) and value.ndim == 0 and not _is_bool(value):
        if isinstance(value, torch.Tensor) and value.is_complex():
            raise TypeError(f"{name} must be {want()}, got a complex tensor")
        value = value.item()
    if _is_bool(value) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be {want()}, got {_short(value)} ({type(value).__name__})")
    value = float(value)
    if math.isnan(value) or (math.isinf(value) and not allow_inf):
        raise ValueError(f"{name} must be {want()}, got {value}")
    if low is not None and (value < low or (low_open and value == low)):
        raise ValueError(f"{name} must be {want()}, got {value}")
    if high is not None and (value > high or (high_open and value == high)):
        raise ValueError(f"{name} must be {want()}, got {value}")
    return value


def check_probability(name: str, value: Any, *, open_low: bool = False, open_high: bool = False,
                      allow_none: bool = False) -> float | None:
    """A probability in [0, 1] (ends optionally open)."""
    return check_float(name, value, low=0.0, high=1.0, low_open=open_low, high_open=open_high,
                       allow_none=allow_none)


def check_positive(name: str, value: Any, *, strict: bool = True, allow_none: bool = False) -> float | None:
    """A finite number > 0 (or >= 0 with ``strict=False``)."""
    return check_float(name, value, low=0.0, low_open=strict, allow_none=allow_none)


def check_bool(name: str, value: Any) -> bool:
    if type(value) is bool:
        return value
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {_short(value)}")
    return bool(value)


def check_str(name: str, value: Any, *, allow_empty: bool = False) -> str:
    if type(value) is str and _nested():
        return value
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, got {_short(value)} ({type(value).__name__})")
    if not allow_empty and not value.strip():
        raise ValueError(f"{name} must be a non-empty string")
    return value


def check_choice(name: str, value: Any, allowed: Iterable[Any]) -> Any:
    """One of ``allowed`` (strings compared exactly)."""
    if _nested():
        return value
    allowed = tuple(allowed)
    try:
        ok = value in allowed
    except TypeError:  # unhashable / incomparable
        ok = False
    if not ok:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, allowed))}; got {_short(value)}")
    return value


def check_seed(name: str, seed: Any, *, allow_none: bool = False) -> int | None:
    """A seed: an integer in [0, 2**63). ``None`` only where a caller documents non-determinism."""
    if type(seed) is int and _nested():
        return seed
    if seed is None:
        if allow_none:
            return None
        raise TypeError(f"{name} must be an integer >= 0 (runs are seeded; pass one explicitly), got None")
    return check_int(name, seed, low=0, high=2**63 - 1)


def check_callable(name: str, value: Any) -> Any:
    if _nested():
        return value
    if not callable(value):
        raise TypeError(f"{name} must be callable, got {_short(value)}")
    return value


def _ndim_ok(ndim, actual: int) -> bool:
    if ndim is None:
        return True
    if isinstance(ndim, int):
        return actual == ndim
    return actual in tuple(ndim)


_ARRAY_DTYPES = {"float": np.dtype(np.float64), "int": np.dtype(np.int64), "bool": np.dtype(np.bool_)}


def check_array(
    name: str,
    value: Any,
    *,
    ndim: int | Sequence[int] | None = None,
    dtype: str = "float",
    finite: bool = True,
    nonempty: bool = True,
    low: float | None = None,
    high: float | None = None,
) -> np.ndarray:
    """A NumPy array of ``dtype`` ("float" → float64, "int" → int64, "bool"), checked for shape,
    emptiness, finiteness and bounds. Lists and tensors are converted; strings and complex are not."""
    if type(value) is np.ndarray and _nested() and value.dtype == _ARRAY_DTYPES.get(dtype):
        return value
    if value is None or isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be an array of {dtype}s, got {_short(value)}")
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError) as exc:  # ragged lists
        raise ValueError(f"{name} must be a rectangular array of {dtype}s: {exc}") from None
    if arr.dtype.kind in "OUSV" or np.iscomplexobj(arr):
        raise TypeError(f"{name} must be an array of {dtype}s, got dtype {arr.dtype}")
    if dtype == "float":
        arr = arr.astype(np.float64, copy=False)
    elif dtype == "int":
        if arr.dtype.kind == "f":
            if arr.size and not (np.all(np.isfinite(arr)) and np.all(arr == np.round(arr))):
                raise TypeError(f"{name} must be an array of integers, got non-integral floats")
        elif arr.dtype.kind not in "iub":
            raise TypeError(f"{name} must be an array of integers, got dtype {arr.dtype}")
        arr = arr.astype(np.int64, copy=False)
    elif dtype == "bool":
        if arr.dtype.kind != "b":
            raise TypeError(f"{name} must be a boolean array, got dtype {arr.dtype}")
    else:  # pragma: no cover - programming error
        raise ValueError(f"dtype must be 'float', 'int' or 'bool', got {dtype!r}")
    if not _ndim_ok(ndim, arr.ndim):
        raise ValueError(f"{name} must have ndim {ndim}, got shape {tuple(arr.shape)}")
    if nonempty and arr.size == 0:
        raise ValueError(f"{name} must be non-empty, got shape {tuple(arr.shape)}")
    if finite and dtype == "float" and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    if low is not None and arr.size and np.nanmin(arr) < low:
        raise ValueError(f"{name} must have entries >= {low}, got min {np.nanmin(arr)}")
    if high is not None and arr.size and np.nanmax(arr) > high:
        raise ValueError(f"{name} must have entries <= {high}, got max {np.nanmax(arr)}")
    return arr


def check_tensor(
    name: str,
    value: Any,
    *,
    ndim: int | Sequence[int] | None = None,
    floating: bool = True,
    finite: bool = True,
    nonempty: bool = True,
    convert: bool = True,
) -> torch.Tensor:
    """A torch tensor (NumPy arrays and lists converted when ``convert``): floating (real) by
    default, checked for shape, emptiness and finiteness. Integer tensors are accepted only with
    ``floating=False``; complex and bool never."""
    if _nested() and isinstance(value, torch.Tensor):
        return value
    if not isinstance(value, torch.Tensor):
        if not convert or value is None or isinstance(value, (str, bytes, numbers.Number)):
            raise TypeError(f"{name} must be a tensor, got {_short(value)} ({type(value).__name__})")
        arr = check_array(name, value, dtype="float" if floating else "int", finite=False, nonempty=False)
        value = torch.from_numpy(np.ascontiguousarray(arr))
    if value.is_complex() or value.dtype == torch.bool:
        raise TypeError(f"{name} must be a real {'floating' if floating else 'numeric'} tensor, got dtype {value.dtype}")
    if floating and not value.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got dtype {value.dtype}")
    if not _ndim_ok(ndim, value.ndim):
        raise ValueError(f"{name} must have ndim {ndim}, got shape {tuple(value.shape)}")
    if nonempty and value.numel() == 0:
        raise ValueError(f"{name} must be non-empty, got shape {tuple(value.shape)}")
    if finite and value.is_floating_point() and value.numel() and not bool(torch.isfinite(value).all()):
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    return value


def check_same_length(**arrays: Any) -> int:
    """All keyword arguments have the same first dimension; returns it."""
    if _nested() and arrays:
        return len(next(iter(arrays.values())))
    lens = {k: len(v) for k, v in arrays.items()}
    if len(set(lens.values())) > 1:
        raise ValueError("must have the same length: " + ", ".join(f"{k}={n}" for k, n in lens.items()))
    return next(iter(lens.values())) if lens else 0


def check_int_sequence(name: str, values: Any, *, low: int | None = None, high: int | None = None,
                       nonempty: bool = True) -> list[int]:
    """A non-empty sequence of integers, each in ``[low, high]``."""
    if _nested() and type(values) in (list, tuple, torch.Size) and all(type(v) is int for v in values):
        return list(values)
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise TypeError(f"{name} must be a sequence of integers, got {_short(values)}")
    out = [check_int(f"{name}[{i}]", v, low=low, high=high) for i, v in enumerate(values)]
    if nonempty and not out:
        raise ValueError(f"{name} must be a non-empty sequence of integers")
    return out


def check_float_sequence(name: str, values: Any, *, low: float | None = None, high: float | None = None,
                         low_open: bool = False, nonempty: bool = True) -> list[float]:
    """A non-empty sequence of finite numbers, each in the interval."""
    if _nested() and type(values) is list and all(type(v) is float for v in values):
        return values
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise TypeError(f"{name} must be a sequence of numbers, got {_short(values)}")
    out = [check_float(f"{name}[{i}]", v, low=low, high=high, low_open=low_open) for i, v in enumerate(values)]
    if nonempty and not out:
        raise ValueError(f"{name} must be a non-empty sequence of numbers")
    return out


# --------------------------------------------------------------------------------------------------
# memory: no allocation before a size check
# --------------------------------------------------------------------------------------------------
#: the default limit of one allocation: this fraction of the machine's physical memory
MEMORY_FRACTION = 0.5
#: the environment variable that sets the limit (bytes, or a number with a K/M/G/T suffix, binary)
MEMORY_ENV_VAR = "QLIB_MEMORY_LIMIT"
_FALLBACK_RAM = 8 * 2**30  # where the physical memory cannot be read
_limit_override: int | None = None
_UNITS = {"": 1, "B": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def _physical_memory() -> int:
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        return _FALLBACK_RAM


def _parse_bytes(name: str, text: str) -> int:
    t = text.strip().upper().removesuffix("IB").removesuffix("B")
    unit = t[-1:] if t[-1:] in _UNITS else ""
    try:
        value = float(t[: len(t) - len(unit)]) * _UNITS[unit]
    except ValueError:
        raise ValueError(f"{name} must be a number of bytes (e.g. 4000000000 or 4G), got {text!r}") from None
    if not (math.isfinite(value) and value >= 1):
        raise ValueError(f"{name} must be a number of bytes >= 1, got {text!r}")
    return int(value)


def memory_limit() -> int:
    """The largest allocation (bytes) a ``qlib`` call makes on a size its arguments set: the value of
    :func:`set_memory_limit`, else ``$QLIB_MEMORY_LIMIT``, else :data:`MEMORY_FRACTION` of the physical memory."""
    if _limit_override is not None:
        return _limit_override
    env = os.environ.get(MEMORY_ENV_VAR)
    if env:
        return _parse_bytes(MEMORY_ENV_VAR, env)
    return int(_physical_memory() * MEMORY_FRACTION)


def set_memory_limit(limit: int | str | None) -> int | None:
    """Set the limit of :func:`memory_limit` for this process (bytes, or a string such as ``"4G"``);
    ``None`` goes back to ``$QLIB_MEMORY_LIMIT`` / the default. Returns the previous override (None if none)."""
    global _limit_override
    prev = _limit_override
    if limit is None:
        _limit_override = None
    elif isinstance(limit, str):
        _limit_override = _parse_bytes("limit", limit)
    else:
        _limit_override = check_int("limit", limit, low=1)
    return prev


def _bytes_text(n: int) -> str:
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n} bytes"


def check_alloc(name: str, n_elements: int, itemsize: int = 8, *, value: Any = None, what: str = "") -> int:
    """Refuse, before it is made, an allocation of ``n_elements`` items of ``itemsize`` bytes that a size
    argument ``name`` (its value ``value``) sets: a ``ValueError`` naming the argument, the bytes the call would
    need and the limit (:func:`memory_limit`) when they exceed it. ``what`` says what would be allocated.
    Returns the bytes. Plain integer arithmetic (no overflow), so it can be called with the product of
    unchecked sizes."""
    nbytes = int(n_elements) * int(itemsize)
    limit = memory_limit()
    if nbytes > limit:
        shown = "" if value is None else f"={_short(value)}"
        raise ValueError(f"{name}{shown} would need {_bytes_text(nbytes)}{f' for {what}' if what else ''}, above the "
                         f"memory limit of {_bytes_text(limit)} (set {MEMORY_ENV_VAR} or "
                         "qlib.validation.set_memory_limit to change it)")
    return nbytes


def resolve_config(cls: type, config: Any = None, *, name: str = "config") -> Any:
    """The one rule of ``qlib`` for a driver's settings (CONTRIBUTING, "The settings rule"): a driver that
    takes more settings than fit its signature takes them as one frozen record ``cls``, its ``config``
    argument. Returns ``config`` when it is a ``cls``, ``cls()`` (the record's defaults, checked by its
    ``__post_init__``) when it is None. A caller changes one setting by building the record
    (``driver(data, Cfg(seed=1))``) or replacing a field of one (``dataclasses.replace(cfg, seed=1)``); there
    are no keyword overrides beside the record, so every name a caller may pass is in the driver's
    signature or the record's. A ``TypeError`` names ``name`` when ``config`` is neither."""
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
        raise TypeError(f"cls must be a dataclass type, got {cls!r}")
    if config is None:
        return cls()
    if not isinstance(config, cls):
        raise TypeError(f"{name} must be a {cls.__name__} or None, got {type(config).__name__}")
    return config


def check_frame(name: str, frame: Any, columns: Iterable[str], source: str | None = None, *,
                nonempty: bool = True):
    """``frame`` when it is a pandas DataFrame holding ``columns`` (and, ``nonempty``, at least one row): a
    study's table handed to a figure, a table or a claims function. A ``TypeError``/``ValueError`` names
    ``name``, the columns it lacks and ``source``, the function whose result it should be."""
    import pandas as pd  # deferred: pandas (~0.3 s); the numeric library's checks do not need it

    whose = f" ({source}'s)" if source else ""
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"{name} must be a pandas DataFrame{whose}, got {type(frame).__name__}")
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{name} lacks the columns {missing}" + (f" ({source} gives them)" if source else ""))
    if nonempty and frame.empty:
        raise ValueError(f"{name} has no rows")
    return frame
