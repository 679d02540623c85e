"""Argument handling shared by the quantized-MIS part's drivers (:mod:`.study`, :mod:`.molecular`):
private to the package ``qlib.repro.quantized_mis`` (its modules import these names; nothing else
does), built on :mod:`qlib.validation`."""

from __future__ import annotations

__all__ = ["config_record"]


def config_record(cls: type, config, settings: dict):
    """The settings record of a driver's ``run_study(config=None, ..., **settings)``: ``config`` (an
    instance of the frozen record ``cls``, checked when it was built) or, when it is None, the record its
    fields given by keyword build (``cls(**settings)``, which checks them). A ``TypeError`` names
    ``config`` when it is not a ``cls``, and the fields when both are given."""
    if config is None:
        return cls(**settings)
    if not isinstance(config, cls):
        raise TypeError(f"config must be a {cls.__name__}, got {type(config).__name__}")
    if settings:
        raise TypeError(f"pass either config or its fields by keyword, not both: {', '.join(settings)} given "
                        "beside config (use dataclasses.replace(config, ...))")
    return config
