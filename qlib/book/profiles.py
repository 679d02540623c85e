"""Parameter profiles: ``profiles/<name>.yml`` maps each notebook (path below ``chapters/``) to its
parameters for that profile. ``smoke`` is CI (whole book ≤ 5 min on 2 cores), ``default`` the book a
reader builds on a laptop CPU (≤ 30 min), ``paper`` the papers' own scale (hours, or a GPU)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

PROFILES = ("smoke", "default", "paper")
# Parameters the runner injects into every notebook (each notebook's parameters cell defines them).
COMMON = ("profile", "device", "data_dir", "out_dir", "results_dir", "chapter_id")


def profile_path(root: Path, name: str) -> Path:
    if name not in PROFILES:
        raise ValueError(f"profile must be one of {PROFILES}, got {name!r}")
    return Path(root) / "profiles" / f"{name}.yml"


def load(root: Path, name: str) -> dict[str, dict[str, Any]]:
    """The profile ``name`` as {notebook path below chapters/: {parameter: value}}."""
    path = profile_path(root, name)
    if not path.is_file():
        raise FileNotFoundError(f"profile file {path} is missing")
    data = yaml.safe_load(path.read_text()) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping of notebook path -> parameters")
    for nb, params in data.items():
        if params is None:
            data[nb] = {}
        elif not isinstance(params, dict):
            raise ValueError(f"{path}: entry {nb!r} must be a mapping of parameters, got {type(params).__name__}")
        clash = set(data[nb]) & set(COMMON)
        if clash:
            raise ValueError(f"{path}: entry {nb!r} sets {sorted(clash)}, which the runner injects itself")
    return data
