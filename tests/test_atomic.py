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


def test_move_and_replace_folder_place_whole_and_refuse_what_they_cannot_place(tmp_path):
    src = atomic.write_text(tmp_path / "a.txt", "a")
    assert atomic.move(src, tmp_path / "sub" / "b.txt").read_text() == "a" and not src.exists()
    with pytest.raises(ValueError, match=r"\bsrc\b"):  # nothing to move: refused before dest's folder is made
        atomic.move(tmp_path / "gone.txt", tmp_path / "new" / "b.txt")
    assert not (tmp_path / "new").exists()
    with pytest.raises(TypeError, match=r"\bdest\b"):
        atomic.move(tmp_path / "sub" / "b.txt", None)
    old, staged = tmp_path / "site", tmp_path / "staged"
    atomic.write_text(old / "old.txt", "old")
    atomic.write_text(staged / "new.txt", "new")
    assert sorted(p.name for p in atomic.replace_folder(staged, old).iterdir()) == ["new.txt"]
    assert not staged.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["site", "sub"]
    # a file in a folder's place (or a folder in a file's) would remove what dest held: refused, dest intact
    with pytest.raises(ValueError, match=r"\bstaged\b"):
        atomic.replace_folder(tmp_path / "sub" / "b.txt", old)
    with pytest.raises(ValueError, match=r"\bstaged\b"):
        atomic.replace_folder(tmp_path / "nothing", old)
    with pytest.raises(ValueError, match=r"\bdest\b"):
        atomic.replace_folder(old, tmp_path / "sub" / "b.txt")
    with pytest.raises(ValueError, match=r"\bstaged\b"):
        atomic.replace_folder(old, old)
    assert (old / "new.txt").read_text() == "new" and (tmp_path / "sub" / "b.txt").read_text() == "a"
    with pytest.raises(ValueError, match=r"\bpath\b"):
        atomic.write_text("", "x")
