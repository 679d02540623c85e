"""The common bad-input test (scikit-learn's ``check_estimator`` idea, for every public callable of
``qlib`` outside ``qlib.book``): each numeric, array or tensor argument is given NaN, ±inf, empty,
wrong-shape, wrong-dtype, out-of-range and ``None`` values in turn, and the call must raise a
``ValueError``/``TypeError`` that names the argument — or the allow-list says why the value is
legitimate. New public functions are covered automatically: one without a baseline fails here.
How the bad values are chosen: ``tests/badinput/harness.py``. The figures over the whole package:
``python benchmarks/bad_input_audit.py``."""

from __future__ import annotations

import inspect

import pytest
from badinput import allowlist, harness, load_baselines

CALLABLES = harness.public_callables()
BASELINES = load_baselines()


def _auto_baseline():
    return {}


def _plan():
    plan = {}
    for q, fn in CALLABLES.items():
        if harness.not_called_reason(q, allowlist.NOT_CALLED):
            continue
        if q in BASELINES:
            plan[q] = BASELINES[q]
        elif not harness.needs_baseline(fn):
            plan[q] = _auto_baseline
    return plan


PLAN = _plan()


def test_every_public_callable_has_a_baseline_or_a_reason():
    missing = [q for q in CALLABLES if q not in PLAN and not harness.not_called_reason(q, allowlist.NOT_CALLED)]
    assert not missing, (
        f"{len(missing)} public callables have no baseline call (tests/badinput/baselines/<area>.py) "
        f"and no NOT_CALLED reason: " + ", ".join(missing))


def test_no_stale_entries():
    stale = [q for q in BASELINES if q not in CALLABLES]
    stale += [q for q in allowlist.NOT_CALLED if q not in CALLABLES
              and not (q.endswith(".*") and any(c.startswith(q[:-1]) for c in CALLABLES))]
    for (q, param, _label), reason in allowlist.ALLOW.items():
        if q not in CALLABLES or param not in inspect.signature(CALLABLES[q]).parameters:
            stale.append(f"ALLOW[{q}, {param}]")
        if not reason or len(reason) < 10:
            stale.append(f"ALLOW[{q}, {param}] has no reason")
    assert not stale, "stale or unexplained entries: " + ", ".join(stale)


def test_every_module_has_an_area():
    for q in CALLABLES:
        harness.area_of(q)


@pytest.mark.parametrize("qualname", sorted(PLAN))
def test_bad_input_is_rejected_by_name(qualname):
    outcomes = harness.run_callable(qualname, CALLABLES[qualname], PLAN[qualname], allowlist.ALLOW)
    bad = [o for o in outcomes if o.outcome not in ("clear", "allowed")]
    assert not bad, f"{qualname}: {len(bad)} of {len(outcomes)} bad calls not rejected by name:\n" + "\n".join(
        f"  {o.param}={o.label} [{o.category}]: {o.outcome} — {o.detail}" for o in bad)
