"""The common bad-input test's harness, baselines and allow-list (see ``harness``)."""

from __future__ import annotations

import importlib
import pkgutil

from . import allowlist, baselines  # noqa: F401  (allowlist: re-exported)


def load_baselines(table: str = "BASELINES") -> dict:
    """Every area's ``BASELINES`` merged (a qualified name declared twice is an error); ``table="RESULTS"``:
    the result objects and their consumers (``"<record> -> <consumer>"``: a zero-argument function
    returning ``(object, consume)``, see ``harness.run_result``)."""
    merged: dict = {}
    for m in pkgutil.iter_modules(baselines.__path__):
        mod = importlib.import_module(f"{baselines.__name__}.{m.name}")
        for k, v in getattr(mod, table, {}).items():
            if k in merged:
                raise ValueError(f"{table} entry for {k} declared twice (second in baselines/{m.name}.py)")
            merged[k] = v
    return merged
