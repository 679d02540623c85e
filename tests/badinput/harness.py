"""The common bad-input harness: discover every public callable of ``qlib`` (outside ``qlib.book``),
call it once with valid arguments (its *baseline*), then once per bad value of each numeric, array or
tensor argument, and classify what happened.

Outcomes of a bad call
----------------------
``clear``    a ``ValueError`` or ``TypeError`` whose message names the argument (as a whole word);
``obscure``  any other exception, or one whose message does not name the argument;
``silent``   the call returned a result;
``hang``     the call ran past ``TIMEOUT_S`` seconds;
``allowed``  the input is legitimate for this callable, declared in ``allowlist.ALLOW`` with a reason.

Bad values (``mutations``) are derived from the baseline value's type, so a new function is covered
as soon as it has a baseline (``baselines/*.py``); a public callable with neither a baseline nor an
entry in ``allowlist.NOT_CALLED`` fails the common test.

* float scalar: NaN, +inf, -inf, a string, a complex number, ``None``; ``-1.0`` when the baseline is
  > 0; ``1.5`` and ``-0.5`` when the name reads as a probability;
* int scalar: NaN, inf, ``1.5``, a string, a complex number, ``None``; ``0`` and ``-1`` when the
  baseline is >= 1 (``-1`` when it is 0); ``10**6`` when the name reads as a bit width;
* float array/tensor: one NaN, one inf, empty, one dimension more (and flattened when 2-D or more),
  complex, strings, ``None``;
* integer array/tensor: empty, one dimension more, non-integral floats, strings, ``None``; labels in
  {0, 1} get a ``2`` and a ``-1``; non-negative indices get a ``-1``;
* list/tuple of numbers: empty, ``None``, a NaN (floats) or a ``0``/``-1`` (counts >= 1), a string.

A ``None`` mutation is not tried where the parameter's own default is ``None`` (it then means
"the default"). Bools, strings, callables and objects are not mutated.
"""

from __future__ import annotations

import contextvars
import copy
import dataclasses
import enum
import importlib
import inspect
import math
import numbers
import pkgutil
import re
import signal
import typing
import warnings
from collections import Counter
from typing import Any, Callable

import numpy as np
import torch

import qlib

TIMEOUT_S = 10.0
#: a baseline (valid) call must finish within this
BASELINE_TIMEOUT_S = 10.0

#: names that read as probabilities / fractions in [0, 1]
PROB_RE = re.compile(r"^(p|q|delta|alpha|prob.*|.*_prob|.*_p|p_.*|frac.*|.*_frac|.*fraction|confidence|level|"
                     r"coverage|quantile|rate_.*|gamma_?p?)$")
#: names that read as bit widths
BITS_RE = re.compile(r"^(b|bits?|n_bits|bit_width|.*_bits?|bits_.*)$")

CATEGORIES = ("nan", "inf", "range", "empty", "ndim", "dtype", "none")


@dataclasses.dataclass(frozen=True)
class Mutation:
    param: str
    label: str  # e.g. "nan", "-1", "empty"
    category: str  # one of CATEGORIES
    value: Any


@dataclasses.dataclass
class Outcome:
    callable: str
    param: str
    label: str
    category: str
    outcome: str  # clear | obscure | silent | hang | allowed
    detail: str = ""


# --------------------------------------------------------------------------------------------------
# discovery


def public_modules() -> list[str]:
    names = []
    for m in pkgutil.walk_packages(qlib.__path__, "qlib."):
        parts = m.name.split(".")
        if parts[1] == "book" or any(p.startswith("_") for p in parts):
            continue
        names.append(m.name)
    return sorted(names)


def _is_protocol(cls) -> bool:
    return bool(getattr(cls, "_is_protocol", False))


def public_callables() -> dict[str, Callable]:
    """Every public function and class defined in a public module of ``qlib`` (not ``qlib.book``),
    by qualified name. Exceptions, enums and ``typing.Protocol`` classes are not callables one
    feeds data to, and are left out."""
    out: dict[str, Callable] = {}
    for name in public_modules():
        mod = importlib.import_module(name)
        exported = getattr(mod, "__all__", None)
        for k, v in vars(mod).items():
            if k.startswith("_") or (exported is not None and k not in exported):
                continue
            if getattr(v, "__module__", None) != name:
                continue
            if inspect.isclass(v):
                if issubclass(v, (BaseException, enum.Enum)) or _is_protocol(v):
                    continue
            elif not inspect.isfunction(v):
                continue
            out[f"{name}.{k}"] = v
    return out


def public_methods(callables: dict[str, Callable]) -> dict[str, Callable]:
    """Every public method of the public classes among ``callables`` (plain, static and class methods that
    ``qlib`` defines, inherited ones included; not properties), by ``<class qualified name>.<method>``: the
    function as the class resolves it (an override where there is one). A plain method's baseline passes
    the instance as ``self``."""
    out: dict[str, Callable] = {}
    for q, cls in callables.items():
        if not inspect.isclass(cls):
            continue
        for name in dir(cls):
            if name.startswith("_"):
                continue
            raw = inspect.getattr_static(cls, name)
            f = raw.__func__ if isinstance(raw, (staticmethod, classmethod)) else raw
            if not inspect.isfunction(f) or not (f.__module__ or "").startswith("qlib."):
                continue
            if f.__module__.startswith("qlib.book"):
                continue
            out[f"{q}.{name}"] = getattr(cls, name)
    return out


def is_method(qualname: str, callables: dict[str, Callable]) -> bool:
    return qualname.rsplit(".", 1)[0] in callables and inspect.isclass(callables[qualname.rsplit(".", 1)[0]])


def signature_of(fn: Callable) -> inspect.Signature:
    return inspect.signature(fn)


# --------------------------------------------------------------------------------------------------
# mutations


def _is_int(v) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_))


def _is_float(v) -> bool:
    return isinstance(v, numbers.Real) and not _is_int(v) and not isinstance(v, (bool, np.bool_))


def _array_kind(v) -> str | None:
    if isinstance(v, torch.Tensor):
        if v.is_floating_point():
            return "float"
        if v.dtype == torch.bool or v.is_complex():
            return None
        return "int"
    if isinstance(v, np.ndarray):
        if v.dtype.kind == "f":
            return "float"
        if v.dtype.kind in "iu":
            return "int"
    return None


def _seq_kind(v) -> str | None:
    if isinstance(v, (list, tuple)) and v and all(isinstance(e, numbers.Real) and not isinstance(e, bool) for e in v):
        return "int" if all(_is_int(e) for e in v) else "float"
    return None


def _with_flat(v, idx, value):
    v = v.clone() if isinstance(v, torch.Tensor) else v.copy()
    v.reshape(-1)[idx] = value
    return v


def _astype(v, kind):
    if isinstance(v, torch.Tensor):
        return v.to(torch.complex64) if kind == "complex" else v.to(torch.float64) + 0.5
    return v.astype(np.complex128) if kind == "complex" else v.astype(np.float64) + 0.5


def _strings_like(v):
    return np.full(tuple(v.shape), "a", dtype=object).tolist() if tuple(v.shape) else "a"


def mutations(param: str, value: Any, default: Any = inspect.Parameter.empty) -> list[Mutation]:
    """The bad values tried for one parameter whose valid value is ``value``."""
    out: list[Mutation] = []

    def add(label, category, v):
        out.append(Mutation(param, label, category, v))

    none_ok = default is None
    if _is_float(value) and not isinstance(value, (torch.Tensor, np.ndarray)):
        add("nan", "nan", float("nan"))
        add("+inf", "inf", float("inf"))
        add("-inf", "inf", float("-inf"))
        add("str", "dtype", "1.0")
        add("complex", "dtype", complex(1.0, 1.0))
        if value > 0:
            add("-1.0", "range", -1.0)
        if PROB_RE.match(param) and 0 <= value <= 1:
            add("1.5", "range", 1.5)
            if value > 0:
                out[:] = [m for m in out if m.label != "-1.0"]
            add("-0.5", "range", -0.5)
    elif _is_int(value) and not isinstance(value, (torch.Tensor, np.ndarray)):
        add("nan", "nan", float("nan"))
        add("+inf", "inf", float("inf"))
        add("1.5", "dtype", 1.5)
        add("str", "dtype", "1")
        add("complex", "dtype", complex(1.0, 1.0))
        if value >= 1:
            add("0", "range", 0)
            add("-1", "range", -1)
        elif value == 0:
            add("-1", "range", -1)
        if BITS_RE.match(param) and value >= 1:
            add("10**6", "range", 10**6)
    elif _array_kind(value) is not None and value.ndim >= 1 and value.shape[0] >= 1:
        kind = _array_kind(value)
        if kind == "float":
            add("nan-entry", "nan", _with_flat(value, 0, float("nan")))
            add("inf-entry", "inf", _with_flat(value, -1, float("inf")))
            add("complex", "dtype", _astype(value, "complex"))
        else:
            add("non-integral", "dtype", _astype(value, "float"))
            flat = value.reshape(-1)
            vals = set(np.unique(flat.cpu().numpy() if isinstance(flat, torch.Tensor) else flat).tolist())
            if vals <= {0, 1}:
                add("label-2", "range", _with_flat(value, 0, 2))
                add("label--1", "range", _with_flat(value, -1, -1))
            elif min(vals) >= 0:
                add("entry--1", "range", _with_flat(value, 0, -1))
        add("empty", "empty", value[:0])
        add("ndim+1", "ndim", value[None])
        if value.ndim >= 2:
            add("flattened", "ndim", value.reshape(-1))
        add("strings", "dtype", _strings_like(value))
    elif _seq_kind(value) is not None:
        kind = _seq_kind(value)
        typ = type(value)
        add("empty", "empty", typ())
        if kind == "float":
            add("nan-entry", "nan", typ([float("nan"), *value[1:]]))
            add("inf-entry", "inf", typ([*value[:-1], float("inf")]))
        elif min(value) >= 1:
            add("entry-0", "range", typ([0, *value[1:]]))
            add("entry--1", "range", typ([-1, *value[1:]]))
        add("str-entry", "dtype", typ(["a", *value[1:]]))
    else:
        return out
    if not none_ok:
        add("None", "none", None)
    return out


def _dtype_max(v) -> int | None:
    if isinstance(v, torch.Tensor) and not v.is_floating_point() and v.dtype != torch.bool and not v.is_complex():
        return int(torch.iinfo(v.dtype).max)
    return None


def field_mutations(param: str, value: Any) -> list[Mutation]:
    """The bad values tried for one field of a result object (see :func:`run_result`): those of an
    argument (:func:`mutations`, ``None`` always tried), and the lies an object can tell — a negative
    entry of a float field whose entries are all ``>= 0`` (a norm, a scale), an entry at its integer
    dtype's largest value (a code outside every codebook), the last entry of a shape plus one, an
    integer field plus one; for a boolean tensor: empty, one dimension more and ``None``."""
    out = mutations(param, value)
    if isinstance(value, torch.Tensor) and value.dtype == torch.bool and value.ndim >= 1 and value.shape[0] >= 1:
        out += [Mutation(param, "empty", "empty", value[:0]), Mutation(param, "ndim+1", "ndim", value[None]),
                Mutation(param, "None", "none", None)]
    if _array_kind(value) == "float" and value.numel() and bool((value >= 0).all()):
        out.append(Mutation(param, "neg-entry", "range", _with_flat(value, 0, -1.0)))
    top = _dtype_max(value)
    if top is not None and value.numel():
        out.append(Mutation(param, "max-entry", "range", _with_flat(value, 0, top)))
    if _seq_kind(value) == "int":
        out.append(Mutation(param, "last+1", "range", type(value)([*value[:-1], value[-1] + 1])))
    if _is_int(value) and not isinstance(value, (torch.Tensor, np.ndarray)):
        out.append(Mutation(param, "+1", "range", value + 1))
    return out


def object_fields(obj) -> dict[str, tuple[str, Any]]:
    """The fields of a result object that can be mutated: ``field`` for a dataclass field, ``field[key]``
    for an entry of a dict field; each with the name an error must give (the field's or the key's)."""
    out = {}
    for f in dataclasses.fields(obj):
        v = getattr(obj, f.name)
        if isinstance(v, dict):
            for k, e in v.items():
                out[f"{f.name}[{k!r}]"] = (str(k), e)
        else:
            out[f.name] = (f.name, v)
    return out


def _mutated(obj, path: str, value):
    new = copy.copy(obj)
    if "[" in path:
        field, key = path.split("[", 1)
        d = dict(getattr(obj, field))
        d[eval(key[:-1])] = value  # noqa: S307 - our own repr of a key
        object.__setattr__(new, field, d)
    else:
        object.__setattr__(new, path, value)
    return new


def run_result(name: str, make: Callable[[], tuple[Any, Callable]], allow: dict) -> list[Outcome]:
    """A result object passed to its consumer (a decoder, a serializer): ``make()`` gives ``(object,
    consume)``; ``consume(object)`` must succeed, then every field is mutated in turn (a copy with that
    field replaced, :func:`field_mutations`) and ``consume`` must raise a ``ValueError``/``TypeError``
    naming the field. ``allow[(record, field, label or category)]`` declares a legitimate value (``record``
    the record's qualified name, or ``name`` itself for one consumer)."""
    record = name.split(" -> ")[0]
    obj, consume = make()
    call(consume, {"obj": obj}, timeout=BASELINE_TIMEOUT_S)
    outcomes = []
    for path, (leaf, value) in object_fields(obj).items():
        for m in field_mutations(leaf, value):
            reason = next((allow[k] for q in (name, record) for k in ((q, path, m.label), (q, path, m.category),
                                                                       (q, path, "*")) if k in allow), None)
            if reason:
                outcomes.append(Outcome(name, path, m.label, m.category, "allowed", reason))
                continue
            obj, consume = make()
            bad = _mutated(obj, path, m.value)
            try:
                call(consume, {"obj": bad})
                res, detail = "silent", "returned a result"
            except Hang:
                res, detail = "hang", f"ran past {TIMEOUT_S:g} s"
            except (ValueError, TypeError) as exc:
                msg = str(exc)
                res = "clear" if names_param(msg, leaf) else "obscure"
                detail = f"{type(exc).__name__}{'' if res == 'clear' else f' not naming {leaf!r}'}: {msg[:200]}"
            except Exception as exc:  # noqa: BLE001 - we classify every failure
                res, detail = "obscure", f"{type(exc).__name__}: {str(exc)[:200]}"
            outcomes.append(Outcome(name, path, m.label, m.category, res, detail))
    return outcomes


# --------------------------------------------------------------------------------------------------
# calling


class Hang(BaseException):
    """Raised by the alarm when a call runs past TIMEOUT_S (BaseException so no ``except
    Exception`` in the callee swallows it)."""


def _alarm(signum, frame):
    raise Hang()


def call(fn: Callable, kwargs: dict[str, Any], timeout: float = TIMEOUT_S):
    """Call ``fn`` with keyword arguments (positional-only ones by position) under an alarm."""
    sig = signature_of(fn)
    args, kw = [], {}
    for name, p in sig.parameters.items():
        if name not in kwargs:
            continue
        if p.kind is p.POSITIONAL_ONLY:
            args.append(kwargs[name])
        else:
            kw[name] = kwargs[name]
    extra = set(kwargs) - set(sig.parameters)
    if extra and not any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
        raise KeyError(f"baseline names parameters {sorted(extra)} that {fn.__qualname__} does not take")
    for name in extra:
        kw[name] = kwargs[name]
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # in a copy of the context: a call stopped by the alarm cannot leave skip_nested on for the next
            return contextvars.copy_context().run(fn, *args, **kw)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def names_param(message: str, param: str) -> bool:
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(param)}(?![A-Za-z0-9_])", message) is not None


def classify(fn: Callable, kwargs: dict[str, Any], m: Mutation) -> tuple[str, str]:
    bad = dict(kwargs)
    bad[m.param] = m.value
    try:
        call(fn, bad)
    except Hang:
        return "hang", f"ran past {TIMEOUT_S:g} s"
    except (ValueError, TypeError) as exc:
        msg = str(exc)
        if names_param(msg, m.param):
            return "clear", f"{type(exc).__name__}: {msg[:200]}"
        return "obscure", f"{type(exc).__name__} not naming {m.param!r}: {msg[:200]}"
    except Exception as exc:  # noqa: BLE001 - we classify every failure
        return "obscure", f"{type(exc).__name__}: {str(exc)[:200]}"
    return "silent", "returned a result"


def parameter_values(fn: Callable, baseline: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """(value used, declared default) for every parameter that has a value in the baseline call:
    the baseline's own values, else the signature's defaults."""
    out = {}
    for name, p in signature_of(fn).parameters.items():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if name in baseline:
            out[name] = (baseline[name], p.default)
        elif p.default is not p.empty:
            out[name] = (p.default, p.default)
    return out


def run_callable(qualname: str, fn: Callable, make_baseline: Callable[[], dict], allow: dict) -> list[Outcome]:
    """Baseline once (it must succeed), then every mutation of every parameter."""
    base = make_baseline()
    try:
        call(fn, copy.deepcopy(base), timeout=BASELINE_TIMEOUT_S)
    except Hang:
        raise RuntimeError(f"the baseline call of {qualname} ran past {BASELINE_TIMEOUT_S:g} s: give it a "
                           "smaller baseline in tests/badinput/baselines/") from None
    outcomes = []
    for name, (value, default) in parameter_values(fn, base).items():
        for m in mutations(name, value, default):
            reason = allow.get((qualname, name, m.label)) or allow.get((qualname, name, m.category)) \
                or allow.get((qualname, name, "*"))
            if reason:
                outcomes.append(Outcome(qualname, name, m.label, m.category, "allowed", reason))
                continue
            kwargs = make_baseline()
            res, detail = classify(fn, kwargs, m)
            outcomes.append(Outcome(qualname, name, m.label, m.category, res, detail))
    return outcomes


def figures(outcomes: list[Outcome]) -> dict[str, Any]:
    """Shares of outcomes over the bad calls actually made (allowed ones are counted apart)."""
    made = [o for o in outcomes if o.outcome != "allowed"]
    c = Counter(o.outcome for o in made)
    n = len(made)
    silent_core = sum(1 for o in made if o.outcome == "silent" and o.category in ("nan", "inf", "range"))
    return {
        "callables": len({o.callable for o in outcomes}),
        "bad_calls": n,
        "allowed": len(outcomes) - n,
        **{k: c.get(k, 0) for k in ("clear", "obscure", "silent", "hang")},
        "clear_pct": 100.0 * c.get("clear", 0) / n if n else math.nan,
        "silent_on_nan_inf_range": silent_core,
    }


def typing_hints(fn) -> dict:  # pragma: no cover - debugging aid
    try:
        return typing.get_type_hints(fn)
    except Exception:  # noqa: BLE001
        return {}


#: which baseline file / allow-list section owns a module
AREAS = {
    "core": ("qlib.quantizers", "qlib.rqn", "qlib.recorder", "qlib.mis", "qlib.ranking", "qlib.discriminator",
             "qlib.engine", "qlib.engine_models", "qlib.losses", "qlib.synthetic", "qlib.data", "qlib.devices",
             "qlib.validation", "qlib.resume", "qlib.atomic", "qlib.stamp", "qlib.plotting."),
    "mia": ("qlib.mia.", "qlib.repro.mia_limits."),
    "eden": ("qlib.hadamard", "qlib.eden", "qlib.eden_quantizer", "qlib.eden_theory", "qlib.eden_layout", "qlib.compressors", "qlib.wire",
             "qlib.distributed", "qlib.fedavg", "qlib.fl_models", "qlib.shakespeare", "qlib.repro.eden."),
    "rqp": ("qlib.rqp", "qlib.rqp_privacy", "qlib.dpsgd", "qlib.repro.rqp_sgd."),
    "mol": ("qlib.molecules", "qlib.repro.quantized_mis.", "qlib.repro.ledger", "qlib.repro.inventory",
            "qlib.repro.findings"),
    "attacks": ("qlib.attacks.", "qlib.repro.attacks."),
}


def area_of(qualname: str) -> str:
    module = qualname.rsplit(".", 1)[0]
    best = ("", "")
    for area, prefixes in AREAS.items():
        for p in prefixes:
            if (module == p or (p.endswith(".") and module.startswith(p))) and len(p) > len(best[1]):
                best = (area, p)
    if not best[0]:
        raise KeyError(f"{qualname}: no area in harness.AREAS owns module {module}")
    return best[0]


def not_called_reason(qualname: str, not_called: dict) -> str | None:
    if qualname in not_called:
        return not_called[qualname]
    module = qualname.rsplit(".", 1)[0]
    return not_called.get(module + ".*")


def needs_baseline(fn) -> bool:
    """False when every parameter has a default (the defaults are the baseline)."""
    return any(p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
               for p in signature_of(fn).parameters.values())


def data_dir():
    """The offline datasets for baselines that read data: $QLIB_DATA_DIR, else ../shared/data."""
    import os
    from pathlib import Path

    cand = os.environ.get("QLIB_DATA_DIR") or str(Path(__file__).resolve().parents[3] / "shared" / "data")
    return Path(cand).resolve()
