"""Argument checks shared by the EDEN part's modules (:mod:`.sweeps`, :mod:`.estimator`, :mod:`.rotation`,
:mod:`.subbit`): private to the package ``qlib.repro.eden`` (its modules import these names; nothing else
does), built on :mod:`qlib.validation`."""

from __future__ import annotations

import numpy as np

from ... import eden_theory
from ...validation import check_callable, check_choice, check_float_sequence

__all__ = ["LAWS", "check_law", "check_laws", "as_list", "check_budgets", "check_methods"]

LAWS = ("lognormal", "normal", "exponential", "chi2", "halfnormal", "beta", "uniform")


def check_law(name: str, value) -> str:
    if not isinstance(value, str) or value not in LAWS:
        raise ValueError(f"{name} must be one of the input laws {', '.join(LAWS)}; got {value!r}")
    return value


def check_laws(name: str, values) -> list[str]:
    if isinstance(values, str) or not isinstance(values, (list, tuple)) or not values:
        raise TypeError(f"{name} must be a non-empty list of input laws ({', '.join(LAWS)}), got {values!r}")
    return [check_law(f"{name}[{i}]", v) for i, v in enumerate(values)]


def as_list(values):
    return list(values) if isinstance(values, (tuple, range, np.ndarray)) else values


def check_budgets(name: str, values) -> list:
    """A non-empty sequence of budgets in (0, 8] bits per coordinate, returned as given (a list)."""
    values = as_list(values)
    check_float_sequence(name, values, low=0.0, high=float(eden_theory.MAX_BITS), low_open=True)
    return list(values)


def check_methods(methods, known) -> list:
    if isinstance(methods, dict):  # name -> factory(b)
        if not methods:
            raise ValueError("methods must name at least one method")
        for k, v in methods.items():
            check_callable(f"methods[{k!r}]", v)
        return list(methods)
    if isinstance(methods, str) or not isinstance(methods, (list, tuple)) or not methods:
        raise TypeError(f"methods must be a non-empty list of method names, got {methods!r}")
    return [check_choice(f"methods[{i}]", m, tuple(known)) for i, m in enumerate(methods)]
