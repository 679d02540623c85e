"""Argument checks shared by the EDEN part's modules (:mod:`.sweeps`, :mod:`.estimator`, :mod:`.rotation`,
:mod:`.subbit`, :mod:`.learning`): private to the package ``qlib.repro.eden`` (its modules import these names; nothing else
does), built on :mod:`qlib.validation`."""

from __future__ import annotations

import numpy as np
import torch

from ... import eden_theory
from ...validation import check_callable, check_choice, check_float_sequence

__all__ = ["LAWS", "check_law", "check_laws", "as_list", "check_budgets", "check_methods", "check_device", "check_dtype"]

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


def check_device(name: str, value):
    """A device as the drivers take it: a name (``"auto"``, ``"cpu"``, ``"cuda"``, ``"cuda:N"``, resolved by
    :func:`qlib.devices.resolve` when the driver runs) or a :class:`torch.device`."""
    if not isinstance(value, (str, torch.device)):
        raise TypeError(f"{name} must be 'auto', 'cpu', 'cuda', 'cuda:N' or a torch.device, got {value!r}")
    return value


def check_dtype(name: str, value) -> torch.dtype:
    """A floating torch dtype (the vectors' dtype of a sweep)."""
    if not isinstance(value, torch.dtype) or not value.is_floating_point:
        raise TypeError(f"{name} must be a floating torch.dtype (torch.float32, torch.float64), got {value!r}")
    return value
