"""Baselines for the core area (see baselines/__init__.py)."""

from __future__ import annotations

BASELINES: dict = {}
