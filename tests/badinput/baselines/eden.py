"""Baselines for the eden area (see baselines/__init__.py)."""

from __future__ import annotations

BASELINES: dict = {}
