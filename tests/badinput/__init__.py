"""The common bad-input test's harness, baselines and allow-list (see ``harness``)."""

from __future__ import annotations

import importlib
import pkgutil

from . import allowlist, baselines  # noqa: F401  (allowlist: re-exported)


def load_baselines() -> dict:
    """Every area's ``BASELINES`` merged (a qualified name declared twice is an error)."""
    merged: dict = {}
    for m in pkgutil.iter_modules(baselines.__path__):
        mod = importlib.import_module(f"{baselines.__name__}.{m.name}")
        for k, v in getattr(mod, "BASELINES", {}).items():
            if k in merged:
                raise ValueError(f"baseline for {k} declared twice (second in baselines/{m.name}.py)")
            merged[k] = v
    return merged
