"""Issue 54, item 2 ("Reliability 4"): the non-finite policy completed in the attack protocol, paths
checked at the door (qlib.atomic, qlib.resume), and the last inputs that were summarised or computed
although they could not be (rqp_sgd.experiments.summarise, mia.gaussian.remark51_n_exact). Each refusal
names its argument; each valid input next to it still gives its checked result."""

from __future__ import annotations

import errno
import math
import os
import tempfile

import numpy as np
import pandas as pd
import pytest

from qlib import atomic, resume
from qlib.atomic import PathNotWritableError
from qlib.mia import gaussian
from qlib.repro.attacks import protocol
from qlib.repro.rqp_sgd import experiments as E

# --------------------------------------------------------------------------------------------------
# attacks.protocol: pooled_permutation_test and resampled_r


def _cells():
    r = np.array([[0.1, 0.2, 0.3, 0.4, np.nan], [0.2, 0.1, 0.4, 0.3, 0.5], [0.3, 0.1, 0.2, 0.4, 0.6]])
    adv = 1.0 - r
    adv[0, 4] = 0.25
    return r, adv


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_pooled_permutation_test_refuses_a_non_finite_advantage_as_permutation_test_does(bad):
    cfg = protocol.AnalysisConfig(draws=200, seed=1)
    r, adv = _cells()
    adv[1, 2] = bad
    with pytest.raises(ValueError, match=r"advantage must be finite .* at \(cell, quantizer\) \(1, 2\)"):
        protocol.pooled_permutation_test(0.4, r, adv, cfg)
    with pytest.raises(ValueError, match=r"advantage must be finite"):
        protocol.permutation_test(0.4, r[:, :4], adv[:, :4], draws=200)
    # a non-finite advantage in a column that is left out (r undefined there) is refused as well
    r, adv = _cells()
    adv[0, 4] = bad
    with pytest.raises(ValueError, match=r"\badvantage\b"):
        protocol.pooled_permutation_test(0.4, r, adv, cfg)


def test_pooled_permutation_test_on_valid_input_and_with_no_rho():
    cfg = protocol.AnalysisConfig(draws=300, seed=2)
    r, adv = _cells()
    p, crit, ranked = protocol.pooled_permutation_test(0.9, r, adv, cfg)
    assert ranked == 4
    assert (p, crit) == protocol.permutation_test(0.9, r[:, :4], adv[:, :4], draws=300, alpha=cfg.alpha, seed=2)
    assert p < 0.05 and crit < 0.9   # every cell ranks as r_Q^n does (ρ = 1): the test sees it
    # rho NaN (no cell has a ρ, e.g. no discriminator was run): nothing is tested, advantage is not read
    out = protocol.pooled_permutation_test(float("nan"), r, np.full_like(adv, np.nan), cfg)
    assert np.isnan(out[:2]).all() and out[2] == 4


def test_pooled_permutation_test_reads_r_as_rates():
    cfg = protocol.AnalysisConfig(draws=300, seed=2)
    r, adv = _cells()
    r_inf, r_nan = r.copy(), r.copy()
    r_inf[1, 3], r_nan[1, 3] = np.inf, np.nan  # an unbounded r_Q^n: not finite in every cell, left out as NaN is
    p, crit, ranked = protocol.pooled_permutation_test(0.9, r_inf, adv, cfg)
    assert ranked == 3 and (p, crit, ranked) == protocol.pooled_permutation_test(0.9, r_nan, adv, cfg)
    assert (p, crit) == protocol.permutation_test(0.9, r[:, :3], adv[:, :3], draws=300, alpha=cfg.alpha, seed=2)
    for bad in (-np.inf, -0.5):
        r_bad = r.copy()
        r_bad[2, 1] = bad
        with pytest.raises(ValueError, match=r"r must hold r_Q\^n values: >= 0.* at index \(2, 1\)"):
            protocol.pooled_permutation_test(0.9, r_bad, adv, cfg)


def test_resampled_r_takes_inf_as_unbounded_and_refuses_what_is_no_rate():
    r = np.array([[1.0, 2.0, np.inf, 4.0], [np.nan, 3.0, np.nan, 5.0]])   # (Q, K)
    w = np.array([[1.0, 1, 1, 1], [1, 1, 0, 2], [0, 0, 4, 0]])
    out = protocol.resampled_r(r, w)                                      # (B, Q)
    assert out[0, 0] == np.inf            # the unbounded model drawn: the mean is unbounded
    assert out[1, 0] == pytest.approx((1 + 2 + 2 * 4) / 4)                # not drawn: the others' mean
    assert out[2, 0] == np.inf
    assert out[0, 1] == pytest.approx((3 + 5) / 2) and out[1, 1] == pytest.approx((3 + 10) / 3)
    assert np.isnan(out[2, 1])                                            # only an undefined model drawn
    for bad in (-np.inf, -1.0):
        r_bad = r.copy()
        r_bad[1, 3] = bad
        with pytest.raises(ValueError, match=r"r must hold r_Q\^n values: >= 0, NaN \(undefined\) or \+inf "
                                             r"\(unbounded\); got .* at index \(1, 3\)"):
            protocol.resampled_r(r_bad, w)


# --------------------------------------------------------------------------------------------------
# qlib.atomic


def test_atomic_refuses_unusable_paths_by_name_before_writing(tmp_path):
    (tmp_path / "f.txt").write_text("file")
    before = sorted(p.name for p in tmp_path.iterdir())
    cases = [
        ("", ValueError, r"path must be a path, got the empty string"),
        ("a\x00b.txt", ValueError, r"path must be a path without a NUL byte"),
        (tmp_path, ValueError, r"path must be the path of a file, got the folder"),
        (tmp_path / "f.txt" / "g.txt", ValueError, r"path=.* cannot be in a folder: .*f\.txt' is a file"),
        (tmp_path / "f.txt" / "deeper" / "g.txt", ValueError, r"path=.*: .*f\.txt' is a file"),
        (b"bytes.txt", TypeError, r"path must be a path \(a string or an os\.PathLike\), got bytes"),
    ]
    for path, exc, msg in cases:
        for write in (lambda p: atomic.write_text(p, "x"), lambda p: atomic.write_bytes(p, b"x"), atomic.atomic_file):
            with pytest.raises(exc, match=msg):
                write(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == before and (tmp_path / "f.txt").read_text() == "file"


def test_atomic_checks_the_data_and_the_open_arguments_when_called(tmp_path):
    p = tmp_path / "sub" / "t.txt"
    with pytest.raises(TypeError, match=r"text must be a string, got bytes"):
        atomic.write_text(p, b"x")
    with pytest.raises(TypeError, match=r"data must be bytes .*, got str"):
        atomic.write_bytes(p, "x")
    with pytest.raises(ValueError, match=r"encoding must be None in binary mode"):
        atomic.atomic_file(p, "wb", encoding="utf-8")
    with pytest.raises(ValueError, match=r"encoding must be a codec's name"):
        atomic.atomic_file(p, "w", encoding="no-such-codec")
    with pytest.raises(ValueError, match=r"newline must be None"):
        atomic.atomic_file(p, "w", newline="\t")
    assert not (tmp_path / "sub").exists()   # refused before the folder was made
    # valid input still writes: a bytearray, a memoryview, text with an explicit newline
    assert atomic.write_bytes(p, bytearray(b"ab")).read_bytes() == b"ab"
    assert atomic.write_bytes(p, memoryview(b"cd")).read_bytes() == b"cd"
    with atomic.atomic_file(p, "w", encoding="latin-1", newline="\r\n") as fh:
        fh.write("é\n")
    assert p.read_bytes() == "é\r\n".encode("latin-1")


def test_atomic_a_relative_path_and_a_new_folder_are_fine(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert atomic.write_text("r.txt", "rel").resolve() == (tmp_path / "r.txt").resolve()
    assert atomic.write_text(os.path.join("new", "deep", "r.txt"), "deep").read_text() == "deep"
    assert (tmp_path / "r.txt").read_text() == "rel"


def test_atomic_a_folder_it_may_not_write_in_is_named(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "access", lambda *a, **k: False)
    with pytest.raises(PathNotWritableError, match=r"path=.*may not write in the folder") as info:
        atomic.write_text(tmp_path / "x.txt", "x")
    assert isinstance(info.value, PermissionError) and isinstance(info.value, ValueError)
    with pytest.raises(PathNotWritableError, match=r"path=.*may not create folders in the folder"):
        atomic.write_text(tmp_path / "new" / "x.txt", "x")
    with pytest.raises(PathNotWritableError, match=r"\bsrc=.*may not write"):
        atomic.move(tmp_path, tmp_path.parent / "elsewhere")
    assert not (tmp_path / "x.txt").exists() and not (tmp_path / "new").exists()


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root may write in any folder")
def test_atomic_a_read_only_folder_is_named(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        with pytest.raises(PathNotWritableError, match=r"\bpath=.*ro'.*permission denied"):
            atomic.write_text(ro / "x.txt", "x")
    finally:
        ro.chmod(0o700)


def test_atomic_a_file_system_failure_keeps_its_type_and_names_path(tmp_path, monkeypatch):
    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(tempfile, "mkstemp", full)
    with pytest.raises(OSError, match=r"path=.*x\.txt'.*No space left on device") as info:
        atomic.write_text(tmp_path / "x.txt", "x")
    assert info.value.errno == errno.ENOSPC and not isinstance(info.value, ValueError)

    def denied(*a, **k):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(tempfile, "mkstemp", denied)
    with pytest.raises(PathNotWritableError, match=r"path=.*Permission denied"):
        atomic.write_bytes(tmp_path / "x.bin", b"x")


def test_move_refuses_what_one_rename_cannot_place(tmp_path):
    f = atomic.write_text(tmp_path / "f.txt", "f")
    d = tmp_path / "d"
    atomic.write_text(d / "inner.txt", "inner")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match=r"dest must be the path of a file when src is a file, got the folder"):
        atomic.move(f, empty)
    with pytest.raises(ValueError, match=r"dest must be absent or an empty folder .* got the file"):
        atomic.move(d, f)
    with pytest.raises(ValueError, match=r"dest must be absent .* full folder .*replace_folder"):
        atomic.move(empty, d)
    with pytest.raises(ValueError, match=r"dest must not lie inside src"):
        atomic.move(d, d / "sub")
    with pytest.raises(ValueError, match=r"src must be a path without a NUL byte"):
        atomic.move("a\x00", tmp_path / "z")
    with pytest.raises(ValueError, match=r"dest must be a path, got the empty string"):
        atomic.move(f, "")
    with pytest.raises(ValueError, match=r"dest=.*cannot be in a folder"):
        atomic.move(d, f / "under")
    assert f.read_text() == "f" and (d / "inner.txt").read_text() == "inner" and empty.is_dir()
    # what one rename can place: a folder onto an empty one, a file onto itself (nothing changes)
    assert (atomic.move(d, empty) / "inner.txt").read_text() == "inner" and not d.exists()
    assert atomic.move(f, f).read_text() == "f"


def test_replace_folder_refuses_folders_one_inside_the_other(tmp_path):
    outer = tmp_path / "outer"
    atomic.write_text(outer / "inner" / "x.txt", "x")
    for staged, dest in ((outer, outer / "inner"), (outer / "inner", outer)):
        with pytest.raises(ValueError, match=r"staged and dest must not lie one inside the other"):
            atomic.replace_folder(staged, dest)
    with pytest.raises(ValueError, match=r"staged must be a path without a NUL byte"):
        atomic.replace_folder("s\x00", outer)
    assert (outer / "inner" / "x.txt").read_text() == "x"
    staged = tmp_path / "staged"
    atomic.write_text(staged / "y.txt", "y")
    assert sorted(p.name for p in atomic.replace_folder(staged, outer).iterdir()) == ["y.txt"]


# --------------------------------------------------------------------------------------------------
# qlib.resume


def test_units_check_their_folder_when_built(tmp_path, monkeypatch):
    f = tmp_path / "f.txt"
    f.write_text("file")
    for build in (resume.Units, resume.units_from_env):
        with pytest.raises(ValueError, match=r"folder must be a path, got the empty string"):
            build("")
        with pytest.raises(ValueError, match=r"folder must be a folder or absent, got the file"):
            build(f)
        with pytest.raises(ValueError, match=r"folder=.*cannot be in a folder: .*f\.txt' is a file"):
            build(f / "units")
        with pytest.raises(ValueError, match=r"folder must be a path without a NUL byte"):
            build(str(tmp_path / "u\x00"))
        with pytest.raises(TypeError, match=r"folder must be a path"):
            build(None)
    # valid: a folder not made yet is made at the first save, not when built
    u = resume.Units(tmp_path / "new" / "units")
    assert not (tmp_path / "new").exists()
    assert u.run("w", {"x": 1}, lambda: 41 + 1) == 42 and u.path("w", {"x": 1}).is_file()
    monkeypatch.setattr(os, "access", lambda *a, **k: False)
    with pytest.raises(PathNotWritableError, match=r"folder=.*may not"):
        resume.Units(tmp_path / "other")
    with pytest.raises(PathNotWritableError, match=r"folder=.*may not"):
        resume.units_from_env(tmp_path / "other")


def test_run_units_checks_memory_with_one_process(tmp_path):
    with pytest.raises(ValueError, match=r"memory must be one of 'default', 'keep', 'huge-pages'; got 'kep'"):
        resume.run_units("u", [(None, abs, (-3,))], memory="kep")
    with pytest.raises(ValueError, match=r"\bmemory\b"):
        resume.run_units("u", [], memory=None)
    assert resume.run_units("u", [(None, abs, (-3,)), (None, pow, (2, 5))], memory="keep") == [3, 32]
    u = resume.Units(tmp_path)
    assert resume.run_units("u", [({"i": 0}, abs, (-7,))], units=u, memory="huge-pages") == [7] and u.computed == 1


# --------------------------------------------------------------------------------------------------
# rqp_sgd.experiments.summarise


def _runs():
    return pd.DataFrame({"method": ["A", "A", "A", "B", "B"], "sigma": [0.5, 0.5, 1.0, 1.0, 1.0],
                         "run": [0, 1, 2, 0, 1], "acc": [60.0, 70.0, 65.0, 90.0, 80.0]})


def test_summarise_refuses_what_it_cannot_summarise():
    df = _runs()
    with pytest.raises(TypeError, match=r"df must be a pandas DataFrame, got list"):
        E.summarise([1, 2], "method")
    with pytest.raises(ValueError, match=r"df has no rows"):
        E.summarise(df.iloc[:0], "method")
    with pytest.raises(ValueError, match=r"df lacks the columns \['acc'\]"):
        E.summarise(df.drop(columns="acc"), "method")
    with pytest.raises(ValueError, match=r"df's column 'acc' holds no finite accuracy \(all 5 rows"):
        E.summarise(df.assign(acc=np.nan), "method")
    with pytest.raises(ValueError, match=r"df's column 'acc' must hold finite accuracies .* inf at row 3"):
        E.summarise(df.assign(acc=[60.0, 70.0, 65.0, np.inf, 80.0]), "method")
    with pytest.raises(TypeError, match=r"df's column 'acc' must hold test accuracies"):
        E.summarise(df.assign(acc=list("abcde")), "method")
    with pytest.raises(ValueError, match=r"by must name columns of df .* got 'methd'"):
        E.summarise(df, "methd")
    with pytest.raises(ValueError, match=r"by must name columns of df .* got 'q'"):
        E.summarise(df, ["method", "q"])
    with pytest.raises(ValueError, match=r"by must be a column of df or a non-empty list"):
        E.summarise(df, [])
    with pytest.raises(ValueError, match=r"by's column 'method' of df .* NaN at row 4"):
        E.summarise(df.assign(method=["A", "A", "A", "B", None]), "method")


def test_summarise_on_valid_input():
    s = E.summarise(_runs(), "method")
    assert list(s.index) == ["A", "B"]
    assert s.loc["A", "median"] == 65.0 and s.loc["B", "median"] == 85.0
    assert s.loc["A", "std"] == pytest.approx(5.0) and s.loc["B", "std"] == pytest.approx(math.sqrt(50))
    assert list(s["runs"]) == [3, 2]
    two = E.summarise(_runs(), ["method", "sigma"])
    assert two.loc[("A", 0.5), "median"] == 65.0 and two.loc[("B", 1.0), "runs"] == 2 and len(two) == 3


# --------------------------------------------------------------------------------------------------
# mia.gaussian.remark51_n_exact


@pytest.mark.parametrize("eps", [1.0, 1.5, 0.0, -0.1, float("nan"), float("inf")])
def test_remark51_n_exact_refuses_eps_outside_0_1(eps):
    with pytest.raises(ValueError, match=r"eps must be a finite number in \(0\.0, 1\.0\)"):
        gaussian.remark51_n_exact(1.0, 4, eps)


def test_remark51_n_exact_solves_the_bound_also_where_the_root_cancels():
    for c, d, eps in ((1.0, 1, 0.5), (0.3, 100, 0.01), (2.0, 7, 0.999), (1e6, 4, 1e-9), (1e-6, 1, 0.9)):
        n = gaussian.remark51_n_exact(c, d, eps)
        assert math.isclose(gaussian.remark51_lhs(c, d, n), eps, rel_tol=1e-12)
        assert n <= gaussian.remark51_n(c, d, eps)
    # (1e6, 4, 1e-9): c² = 1e12 swamps 2ε√d = 4e-9, so the textbook root (−c + √(c² + 2ε√d))/√d is 0
    assert gaussian.remark51_n_exact(1e6, 4, 1e-9) == pytest.approx(1e30, rel=1e-12)
    assert gaussian.remark51_n_exact(1e200, 1, 1e-200) == math.inf   # beyond the float range
    with pytest.raises(ValueError, match=r"\bc\b"):
        gaussian.remark51_n_exact(0.0, 1, 0.5)
