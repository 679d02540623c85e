"""Argument checks shared by the ``qlib.mia`` modules (clear errors instead of silent NaNs)."""

from __future__ import annotations

import numbers

import numpy as np

PROB_ATOL = 1e-9


def prob_vector(p, name: str = "p", *, allow_zero: bool = False) -> np.ndarray:
    """A 1-D float64 probability vector: finite, entries > 0 (or >= 0), summing to one."""
    arr = np.asarray(p, dtype=np.float64)
    if arr.ndim != 1 or arr.size < 1:
        raise ValueError(f"{name} must be a non-empty 1-D probability vector, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got {arr}")
    if allow_zero:
        if np.any(arr < 0):
            raise ValueError(f"{name} must have entries >= 0, got min {arr.min()}")
    elif np.any(arr <= 0):
        raise ValueError(f"{name} must have entries in (0, 1] (drop atoms of mass 0), got min {arr.min()}")
    s = float(arr.sum())
    if abs(s - 1.0) > PROB_ATOL:
        raise ValueError(f"{name} must sum to 1 (within {PROB_ATOL}), got sum {s!r}")
    return arr


def sample_size(n, name: str = "n") -> int:
    """An integer n >= 1."""
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, numbers.Integral):
        if isinstance(n, (float, np.floating)) and float(n).is_integer():
            n = int(n)
        else:
            raise TypeError(f"{name} must be an integer >= 1, got {n!r}")
    n = int(n)
    if n < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {n}")
    return n


def prior(nu, name: str = "nu") -> float:
    """The prior of the test point, strictly inside (0, 1)."""
    if isinstance(nu, (bool, np.bool_)) or not isinstance(nu, numbers.Real):
        raise TypeError(f"{name} must be a real number in (0, 1), got {nu!r}")
    nu = float(nu)
    if not (0.0 < nu < 1.0):
        raise ValueError(f"{name} must lie in the open interval (0, 1), got {nu}")
    return nu


def positive(x, name: str) -> float:
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Real):
        raise TypeError(f"{name} must be a real number > 0, got {x!r}")
    x = float(x)
    if not (np.isfinite(x) and x > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {x}")
    return x


def loss_matrix(losses, m: int | None = None, name: str = "losses") -> np.ndarray:
    """A K x m finite float64 matrix with K >= 2 candidates (rows) and m atoms (columns)."""
    arr = np.asarray(losses, dtype=np.float64)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (K candidates x m atoms), got shape {arr.shape}")
    if arr.shape[0] < 2:
        raise ValueError(f"{name} must have K >= 2 candidate rows, got K = {arr.shape[0]}")
    if m is not None and arr.shape[1] != m:
        raise ValueError(f"{name} must have one column per atom of p ({m}), got {arr.shape[1]}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite (no NaN/inf losses)")
    return arr
