"""Atomic file writes (qlib.atomic): the target is replaced whole or not at all."""

from __future__ import annotations

import pytest

from qlib import atomic


def test_a_write_replaces_the_target_whole_and_leaves_no_temporary(tmp_path):
    p = tmp_path / "sub" / "f.txt"
    atomic.write_text(p, "old")
    atomic.write_text(p, "new")
    assert p.read_text() == "new"
    atomic.write_bytes(p, b"\x00\x01")
    assert p.read_bytes() == b"\x00\x01"
    assert sorted(x.name for x in p.parent.iterdir()) == ["f.txt"]


def test_an_exception_inside_the_block_leaves_the_old_target(tmp_path):
    p = tmp_path / "f.txt"
    atomic.write_text(p, "old")
    with pytest.raises(RuntimeError, match="midway"):
        with atomic.atomic_file(p, "w") as fh:
            fh.write("partial")
            raise RuntimeError("midway")
    assert p.read_text() == "old"
    assert sorted(x.name for x in tmp_path.iterdir()) == ["f.txt"]


def test_bad_arguments_are_named(tmp_path):
    with pytest.raises(TypeError, match=r"\bpath\b"):
        atomic.write_text(3, "x")
    with pytest.raises(ValueError, match=r"\bmode\b"):
        with atomic.atomic_file(tmp_path / "f", "a"):
            pass
