"""Argument handling shared by the quantized-MIS part's drivers (:mod:`.study`, :mod:`.molecular`):
private to the package ``qlib.repro.quantized_mis`` (its modules import these names; nothing else
does), built on :mod:`qlib.validation`."""

from __future__ import annotations

from qlib.validation import resolve_config

__all__ = ["config_record"]


def config_record(cls: type, config, settings: dict):
    """The settings record of a driver's ``run_study(config=None, ..., **settings)``, by the one rule of
    :func:`qlib.validation.resolve_config`: ``config`` (an instance of the frozen record ``cls``; None:
    its defaults) with the fields given by keyword in ``settings`` replaced (``dataclasses.replace``),
    the record's checks run on the result. A ``TypeError`` names ``config`` when it is not a ``cls``,
    and the keywords that are not fields of ``cls``."""
    return resolve_config(cls, config, settings)
