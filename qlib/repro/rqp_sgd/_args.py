"""Argument checks shared by the RQP-SGD part's modules (:mod:`.experiments`, :mod:`.figure2`,
:mod:`.table1`, :mod:`.figures`): private to
the package ``qlib.repro.rqp_sgd`` (its modules import these names; nothing else does), built on
:mod:`qlib.validation`."""

from __future__ import annotations

import numpy as np

from ...validation import check_array, check_frame

__all__ = ["check_sigmas", "check_frames"]


def check_sigmas(name: str, sigmas) -> np.ndarray:
    """A non-empty 1-D grid of noise stds, each finite and > 0."""
    sig = check_array(name, sigmas, ndim=1)
    if np.any(sig <= 0):
        raise ValueError(f"{name} must have entries > 0, got min {sig.min()}")
    return sig


def check_frames(name: str, frames, need, source: str) -> dict:
    """``frames`` checked: a non-empty dict {column of the table: DataFrame}, each as :func:`check_frame`."""
    if not isinstance(frames, dict):
        raise TypeError(f"{name} must be a dict {{column: DataFrame}} ({source}'s), got {type(frames).__name__}")
    if not frames:
        raise ValueError(f"{name} must hold at least one column")
    return {k: check_frame(f"{name}[{k!r}]", v, need, source) for k, v in frames.items()}
