"""Argument checks shared by the RQP-SGD part's modules (:mod:`.experiments`, :mod:`.figure2`): private to
the package ``qlib.repro.rqp_sgd`` (its modules import these names; nothing else does), built on
:mod:`qlib.validation`."""

from __future__ import annotations

import numpy as np

from ...validation import check_array

__all__ = ["check_sigmas"]


def check_sigmas(name: str, sigmas) -> np.ndarray:
    """A non-empty 1-D grid of noise stds, each finite and > 0."""
    sig = check_array(name, sigmas, ndim=1)
    if np.any(sig <= 0):
        raise ValueError(f"{name} must have entries > 0, got min {sig.min()}")
    return sig
