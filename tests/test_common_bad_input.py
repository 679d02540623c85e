"""The common bad-input test (scikit-learn's ``check_estimator`` idea, for every public callable of
``qlib`` outside ``qlib.book``): each numeric, array or tensor argument is given NaN, ±inf, empty,
wrong-shape, wrong-dtype, out-of-range and ``None`` values in turn, and the call must raise a
``ValueError``/``TypeError`` that names the argument — or the allow-list says why the value is
legitimate. New public functions are covered automatically: one without a baseline fails here.

Three kinds of callable are called: module-level functions and classes; the **methods** of the public
classes (a method's baseline passes the instance as ``self``; a method whose only argument is ``self``
runs on an instance built from its class's baseline); and **result objects** handed to their
consumers (``RESULTS``: a :class:`qlib.eden.Payload` to ``eden.decompress`` and ``wire.to_bytes``, a
:class:`qlib.compressors.Message` to its compressor's ``decompress``), each field mutated in turn —
a decoder trusts no object. How the bad values are chosen: ``tests/badinput/harness.py``. The figures
over the whole package: ``python benchmarks/bad_input_audit.py``."""

from __future__ import annotations

import dataclasses
import inspect

import pytest
from badinput import allowlist, harness, load_baselines

CALLABLES = harness.public_callables()
METHODS = harness.public_methods(CALLABLES)
BASELINES = load_baselines()
RESULTS = load_baselines("RESULTS")
#: the record classes covered through their consumers (RESULTS), not called as plain constructors
RECORDS = {name.split(" -> ")[0] for name in RESULTS}


def _auto_baseline():
    return {}


def _method_auto(q: str):
    """The baseline of a method that takes nothing but ``self`` (or nothing: a static or class method
    whose arguments all have defaults): an instance from its class's baseline. None where none applies."""
    cls_q, name = q.rsplit(".", 1)
    cls = CALLABLES[cls_q]
    raw = inspect.getattr_static(cls, name)
    fn = METHODS[q]
    params = [p for p in harness.signature_of(fn).parameters.values()
              if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.default is p.empty]
    if isinstance(raw, (staticmethod, classmethod)):
        return None if params else _auto_baseline
    if [p.name for p in params] != ["self"]:
        return None
    make_cls = BASELINES.get(cls_q) or (None if harness.needs_baseline(cls) else _auto_baseline)
    if make_cls is None:
        return None
    return lambda: {"self": harness.call(cls, make_cls())}


def _plan():
    plan = {}
    for q, fn in {**CALLABLES, **METHODS}.items():
        if harness.not_called_reason(q, allowlist.NOT_CALLED) or q in RECORDS:
            continue
        if q in BASELINES:
            plan[q] = BASELINES[q]
        elif q in METHODS:
            auto = _method_auto(q)
            if auto is not None:
                plan[q] = auto
        elif not harness.needs_baseline(fn):
            plan[q] = _auto_baseline
    return plan


PLAN = _plan()


def test_every_public_callable_has_a_baseline_or_a_reason():
    missing = [q for q in {**CALLABLES, **METHODS} if q not in PLAN and q not in RECORDS
               and not harness.not_called_reason(q, allowlist.NOT_CALLED)]
    assert not missing, (
        f"{len(missing)} public callables or methods have no baseline call (tests/badinput/baselines/<area>.py) "
        f"and no NOT_CALLED reason: " + ", ".join(missing))


def test_no_stale_entries():
    every = {**CALLABLES, **METHODS}
    stale = [q for q in BASELINES if q not in every]
    stale += [q for q in RESULTS if q.split(" -> ")[0] not in CALLABLES or " -> " not in q]
    stale += [q for q in allowlist.NOT_CALLED if q not in every
              and not (q.endswith(".*") and any(c.startswith(q[:-1]) for c in every))]
    stale += [q for q in RECORDS if harness.not_called_reason(q, allowlist.NOT_CALLED)]  # both covered and not
    for (q, param, _label), reason in allowlist.ALLOW.items():
        if q not in every or param not in inspect.signature(every[q]).parameters:
            stale.append(f"ALLOW[{q}, {param}]")
        if not reason or len(reason) < 10:
            stale.append(f"ALLOW[{q}, {param}] has no reason")
    for (q, path, _label), reason in allowlist.ALLOW_FIELDS.items():
        record = q.split(" -> ")[0]
        if (q not in RECORDS and q not in RESULTS) or \
                path.split("[")[0] not in {f.name for f in dataclasses.fields(CALLABLES[record])}:
            stale.append(f"ALLOW_FIELDS[{q}, {path}]")
        if not reason or len(reason) < 10:
            stale.append(f"ALLOW_FIELDS[{q}, {path}] has no reason")
    assert not stale, "stale or unexplained entries: " + ", ".join(stale)


def test_every_module_has_an_area():
    for q in CALLABLES:
        harness.area_of(q)


def _report(name, outcomes):
    bad = [o for o in outcomes if o.outcome not in ("clear", "allowed")]
    assert not bad, f"{name}: {len(bad)} of {len(outcomes)} bad calls not rejected by name:\n" + "\n".join(
        f"  {o.param}={o.label} [{o.category}]: {o.outcome} — {o.detail}" for o in bad)


@pytest.mark.parametrize("qualname", sorted(PLAN))
def test_bad_input_is_rejected_by_name(qualname):
    fn = METHODS.get(qualname) or CALLABLES[qualname]
    _report(qualname, harness.run_callable(qualname, fn, PLAN[qualname], allowlist.ALLOW))


@pytest.mark.parametrize("name", sorted(RESULTS))
def test_mutated_result_object_is_rejected_by_its_consumer(name):
    _report(name, harness.run_result(name, RESULTS[name], allowlist.ALLOW_FIELDS))
