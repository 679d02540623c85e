"""The archive's honesty (qlib.book.archive, .check, .spot, .stamps): an entry records every parameter as
the value that ran (a sentinel or an object's repr is refused, naming the parameter), nothing is archived
from a working tree with uncommitted changes and an entry that was is not current, and a stale entry is
carried forward only when its smoke rows *and* its paper-sized spot unit give the archived rows."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from qlib.book import archive, check, layout, profiles, provenance, scale, spot
from qlib.book.jobs import RunReport
from qlib.book.schema import COLUMNS, FILENAME
from qlib.book.stamps import current_params, notebook_stamp, plain_params, resolved_parameters

ROOT = Path(__file__).resolve().parents[1]
NB = "rqp-sgd/03-figure2-and-bits.ipynb"
CID = NB.removesuffix(".ipynb")
GRID = [round(0.05 * k, 2) for k in range(1, 33)]  # the cell's σ grid, as the kernel computes it


def _recorded() -> dict:
    """The parameters ``store`` records for :data:`NB` at ``paper``: the cell's values, the profile's over them."""
    return plain_params({**resolved_parameters(ROOT / "chapters" / NB), **profiles.load(ROOT, "paper")[NB]})


def _rows(*specs) -> pd.DataFrame:
    """Ledger rows from (where, quantity, ours, verdict) tuples."""
    base = {c: "" for c in COLUMNS}
    return pd.DataFrame([{**base, "chapter": CID, "paper": "004", "kind": "paper-number", "where": w,
                          "quantity": q, "ours": o, "verdict": v, "tolerance": "±2"} for w, q, o, v in specs])


ARCHIVED = _rows(("Figure 2(a)", "accuracy at σ = 0.5 (%)", "81.25", "reproduced"),
                 ("Figure 2(a)", "std of accuracy larger at low q", "18.8 vs 4.6", "reproduced"),
                 ("Bits", "accuracy at 2 bits (%)", "77.5", "differs"))
SMOKE = _rows(("Figure 2(a)", "accuracy at σ = 0.5 (%)", "70.1", "differs"))


def _entry(arch: Path, *, params: dict | None = None, dirty: bool = False, stale: bool = True,
           smoke: pd.DataFrame = SMOKE) -> Path:
    """An entry of :data:`NB` at ``paper``; ``stale``: its stamp names another ``runs`` than today's."""
    d = layout.entry_dir(arch, "paper", CID)
    d.mkdir(parents=True)
    p = current_params(ROOT, NB, "paper")
    st = notebook_stamp(ROOT, NB, p)
    if stale:
        st["params"]["runs"] = 7
    prov = {"schema": layout.SCHEMA, "chapter": CID, "notebook": NB, "profile": "paper",
            "params": params if params is not None else _recorded(), "commit": "c" * 40, "dirty": dirty,
            "device": {"resolved": "cpu", "cpu": "x"}, "started": "2026-11-28T00:00:00+00:00",
            "finished": "2026-11-28T00:01:00+00:00", "wall_s": 60.0, "packages": {}, "data": st["data"],
            "stamp": st, "archived": "2026-11-28T00:01:00+00:00", "smoke_rows": True, "revalidated": []}
    (d / layout.PROVENANCE).write_text(json.dumps(prov))
    ARCHIVED.to_csv(d / FILENAME, index=False)
    smoke.to_csv(d / layout.SMOKE_ROWS, index=False)
    return d


# -- 1. parameters are recorded as values --------------------------------------------------------------------

def test_a_sentinel_or_an_objects_repr_is_refused_naming_the_parameter():
    assert plain_params({"sigmas": (0.1, 0.2), "tasks": "all", "n": None}) == \
        {"sigmas": [0.1, 0.2], "tasks": "all", "n": None}
    with pytest.raises(ValueError, match="parameter 'sigmas'.*not a value JSON can record"):
        plain_params({"runs": 10, "sigmas": object()})
    with pytest.raises(ValueError, match="parameter 'diag_sigmas'.*an object's repr"):
        plain_params({"diag_sigmas": "<object object at 0x7f5c26ec09d0>"})
    with pytest.raises(ValueError, match="parameter 'grid'"):
        plain_params({"grid": [1.0, "<Foo at 0xdeadbeef>"]})
    with pytest.raises(ValueError, match="parameter 'laws'"):
        plain_params({"laws": {"a", "b"}})
    with pytest.raises(TypeError, match="params must be a dict"):
        plain_params([("sigmas", 1)])


def _cell_notebook(tmp_path: Path, source: str) -> Path:
    nb = {"cells": [{"cell_type": "code", "metadata": {"tags": ["parameters"]}, "source": source.splitlines(True),
                     "outputs": [], "execution_count": None}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps(nb))
    return path


def test_computed_parameters_are_resolved_to_the_values_the_kernel_computes(tmp_path):
    cell = resolved_parameters(ROOT / "chapters" / NB)
    assert cell["sigmas"] == GRID and cell["sigmas"][-1] == 1.6 and len(cell["sigmas"]) == 32
    assert resolved_parameters(ROOT / "chapters" / "eden/02-rotation-and-scale.ipynb")["fig8_d"] == 1_048_576
    p = _cell_notebook(tmp_path, "n = 3\ngrid = [n * k + 0.5 for k in range(n)]\nd = 2**10\nname = 'x'\n")
    assert resolved_parameters(p) == {"n": 3, "grid": [0.5, 3.5, 6.5], "d": 1024, "name": "x"}
    for bad in ("import os\nx = os.getcwd()\n", "x = open('f')\n", "x = undefined + 1\n", "x = 2**10**10\n"):
        with pytest.raises(ValueError, match="parameter 'x' is computed by"):
            resolved_parameters(_cell_notebook(tmp_path, bad))


def _runner_tree(out: Path, inputs: dict) -> None:
    """A runner's output tree holding an executed :data:`NB` (its stamp, the notebook, its rows)."""
    (out / ".stamps" / "rqp-sgd").mkdir(parents=True)
    (out / ".stamps" / f"{CID}.json").write_text(json.dumps(
        {"hash": "h", "profile": "paper", "device": "cpu", "seconds": 11.0, "when": 1.8e9, "inputs": inputs}))
    (out / "chapters" / "rqp-sgd").mkdir(parents=True)
    shutil.copy2(ROOT / "chapters" / NB, out / "chapters" / NB)
    (out / "_results" / CID).mkdir(parents=True)
    ARCHIVED.to_csv(out / "_results" / CID / FILENAME, index=False)


def test_store_records_the_sigma_grid_as_numbers_and_refuses_a_dirty_tree(tmp_path, monkeypatch):
    out, arch = tmp_path / "run", tmp_path / "archive"
    _runner_tree(out, notebook_stamp(ROOT, NB, current_params(ROOT, NB, "paper")))
    monkeypatch.setattr(archive, "uncommitted", lambda root: " M qlib/rqp.py")
    with pytest.raises(archive.DirtyTree, match="uncommitted changes.*M qlib/rqp.py"):
        archive.store(ROOT, out, NB, archive=arch)
    with pytest.raises(archive.DirtyTree, match="archive refused"):  # before anything runs
        archive.archive(ROOT, archive.RunOptions(profile="paper", only=[NB]), from_dir=out, smoke=False)
    assert not arch.exists()
    monkeypatch.setattr(archive, "uncommitted", lambda root: "")
    d = archive.store(ROOT, out, NB, archive=arch)
    prov = json.loads((d / layout.PROVENANCE).read_text())
    assert prov["params"]["sigmas"] == GRID and prov["params"]["runs"] == 10 and prov["dirty"] is False
    (s,) = check.check(ROOT, archive=arch)
    assert s.state == "current", s.changes  # the stamp still reads the computed grid as the cell's expression


# -- 2. an entry from a dirty tree is not current ------------------------------------------------------------

def test_an_entry_run_from_uncommitted_code_is_dirty_and_left_out_of_the_paper_scale(tmp_path):
    arch = tmp_path / "archive"
    _entry(arch, stale=False)
    assert [s.state for s in check.check(ROOT, archive=arch)] == ["current"]
    shutil.rmtree(arch)
    _entry(arch, dirty=True, stale=False)
    (s,) = check.check(ROOT, archive=arch)
    assert s.state == "dirty" and not s.current and "uncommitted changes" in s.changes[0]
    rows = scale.rows_at_largest_scale(pd.DataFrame(columns=COLUMNS), build_profile="smoke", archive=arch, root=ROOT)
    assert rows.empty and CID in rows.attrs["stale"]  # not read as the paper scale
    assert scale.archived_ledger(ROOT, archive=arch).empty
    lines = []
    assert check.main_check(ROOT, archive=arch, log=lines.append) == 0  # reported, not an error …
    assert lines[0].startswith("dirty    paper/" + CID) and "1 dirty" in lines[-1]
    assert check.main_check(ROOT, archive=arch, strict=True, log=lines.append) == 1  # … but under --strict
    page = provenance.status_markdown(ROOT, arch.parent / "build", check.status_frame(ROOT, archive=arch))
    assert "1 archived runs (0 current, 0 stale, 1 run from uncommitted code)" in page


def test_an_entry_that_recorded_a_parameter_as_an_object_is_not_current(tmp_path):
    arch = tmp_path / "archive"
    _entry(arch, params={**_recorded(), "sigmas": "<object object at 0x7fe103fa89f0>"}, stale=False)
    (s,) = check.check(ROOT, archive=arch)
    assert s.state == "stale" and s.changes == ["parameters `sigmas` recorded as an object's repr, not the value that ran"]


# -- 3. the spot check -----------------------------------------------------------------------------------------

def test_spot_rows_are_compared_bitwise_or_within_the_stated_tolerance():
    exact = spot.Spot("one σ", 30, rows=r"^Figure 2\(a\)")
    assert spot.compare(ARCHIVED, ARCHIVED, exact) == (2, [])
    moved = ARCHIVED.copy()
    moved.loc[0, "ours"] = "81.26"
    moved.loc[2, "ours"] = "12.0"  # not selected: another unit's row
    n, diffs = spot.compare(ARCHIVED, moved, exact)
    assert n == 2 and diffs == ["Figure 2(a) | accuracy at σ = 0.5 (%): ours '81.25' archived, '81.26' now"]
    assert spot.compare(ARCHIVED, moved, spot.Spot("one σ", 30, rows=r"^Figure 2\(a\)", tol=1e-3)) == (2, [])
    flipped = moved.copy()
    flipped.loc[0, "verdict"] = "differs"  # within the tolerance, but the verdict moved
    assert spot.compare(ARCHIVED, flipped, spot.Spot("one σ", 30, rows=r"^Figure 2\(a\)", tol=1e-3))[1] == \
        ["Figure 2(a) | accuracy at σ = 0.5 (%): verdict 'reproduced' archived, 'differs' now"]
    new = pd.concat([ARCHIVED, _rows(("Figure 2(a)", "a new row", "1", "agrees"))], ignore_index=True)
    assert "not in the archived entry" in spot.compare(ARCHIVED, new, exact)[1][0]
    assert spot.compare(ARCHIVED, ARCHIVED, spot.Spot("x", 1, rows="^Table 9"))[1] == \
        ["the spot run produced no row matching '^Table 9' (3 rows in all)"]
    timed = _rows(("§5.2", "EDEN encodes faster than Kashin+SQ (d = 1024, ms)", "12.9 vs 83.1", "reproduced"))
    later = timed.assign(ours="14.0 vs 80.2")
    assert spot.compare(timed, later, spot.Spot("x", 1)) == (1, [])  # a measured time: its verdict only
    roundoff = _rows(("Lemma B.2", "max relative error (200 random SPD M)", "7.10543e-15", "agrees"),
                     ("Theorem 3.1", "C_P^1", "0.00423157", "agrees"))
    noise = spot.Spot("x", 1, atol=1e-12)
    assert spot.compare(roundoff, roundoff.assign(ours=["4.21885e-15", "0.00423157"]), noise) == (2, [])
    assert spot.compare(roundoff, roundoff.assign(ours=["4.21885e-15", "0.00423158"]), noise)[1] == \
        ["Theorem 3.1 | C_P^1: ours '0.00423157' archived, '0.00423158' now"]
    with pytest.raises(ValueError, match="tol must be"):
        spot.Spot("x", 1, tol=5)
    with pytest.raises(ValueError, match="seconds must be"):
        spot.Spot("x", 0)


def test_every_archived_chapter_declares_a_spot_unit_or_why_it_has_none():
    """Each unit's parameters are the notebook's, its time at most 2 minutes; the module docstring's table
    states the same units and times (one line per chapter, '—' for one without a unit)."""
    chapters = {c for _, c in layout.entries(ROOT / layout.ARCHIVE)}
    assert chapters and chapters <= set(spot.SPOTS), sorted(chapters - set(spot.SPOTS))
    documented = {m.group(1): m.group(2) for m in re.finditer(r"^(\S+/\S+)\s.*\s(\d+ s|—)$", spot.__doc__, re.M)}
    assert set(documented) == set(spot.SPOTS)
    for c, sp in spot.SPOTS.items():
        assert (ROOT / "chapters" / f"{c}.ipynb").is_file(), c
        if isinstance(sp, spot.Spot):
            declared = resolved_parameters(ROOT / "chapters" / f"{c}.ipynb")
            assert set(sp.overrides) <= set(declared), (c, set(sp.overrides) - set(declared))
            assert sp.seconds <= 120 and documented[c] == f"{sp.seconds} s", c
        else:
            assert isinstance(sp, str) and len(sp) > 20 and documented[c] == "—", c


class _FakeRunner:
    """Stands in for :func:`qlib.book.runner.run`: writes the rows a run at each profile would give."""

    def __init__(self, smoke: pd.DataFrame, paper: pd.DataFrame):
        self.rows, self.calls = {"smoke": smoke, "paper": paper}, []

    def __call__(self, root, options, log=print):
        self.calls.append((options.profile, dict(options.overrides or {}), options.force))
        for nb in options.only:
            d = Path(options.output_dir) / "_results" / nb.removesuffix(".ipynb")
            d.mkdir(parents=True, exist_ok=True)
            self.rows[options.profile].to_csv(d / FILENAME, index=False)
        return RunReport()


@pytest.fixture()
def fake_book(tmp_path, monkeypatch):
    """A fake archive with a stale entry of :data:`NB`, a declared spot unit, a clean tree, and git's
    answers for the commit and the notebook at it."""
    monkeypatch.setattr(archive, "uncommitted", lambda root: "")
    monkeypatch.setattr(archive, "git", lambda root, *a: (ROOT / "chapters" / NB).read_text() if a[0] == "show"
                        else "f" * 40)
    monkeypatch.setitem(spot.SPOTS, CID, spot.Spot("σ = 0.5 at the paper's runs", 30, {"runs": 10},
                                                   rows=r"^Figure 2\(a\)"))
    return tmp_path / "archive"


def _revalidate(arch, fake, monkeypatch, **kw):
    monkeypatch.setattr(archive.runner, "run", fake)
    lines = []
    done = archive.revalidate(ROOT, archive=arch, log=lines.append, **kw)
    return done, lines


def test_a_spot_check_that_differs_blocks_the_carry_forward(fake_book, monkeypatch):
    d = _entry(fake_book)
    before = (d / layout.PROVENANCE).read_text()
    moved = ARCHIVED.copy()
    moved.loc[1, "ours"] = "18.9 vs 4.6"  # a paper-scale number moved; the smoke rows did not
    fake = _FakeRunner(SMOKE, moved)
    done, lines = _revalidate(fake_book, fake, monkeypatch)
    assert done == [] and (d / layout.PROVENANCE).read_text() == before
    assert [c[0] for c in fake.calls] == ["smoke", "paper"] and fake.calls[1][1:] == ({"runs": 10}, True)
    assert any("[stale] paper/" + CID in ln and "moved 1 row(s)" in ln for ln in lines)
    assert any("'18.8 vs 4.6' archived, '18.9 vs 4.6' now" in ln for ln in lines)
    assert check.check(ROOT, archive=fake_book)[0].state == "stale"


def test_smoke_and_spot_rows_identical_carry_the_entry_forward_and_resolve_its_parameters(fake_book, monkeypatch):
    d = _entry(fake_book, params={**_recorded(), "sigmas": "<object object at 0x7fe103fa89f0>"})
    done, lines = _revalidate(fake_book, _FakeRunner(SMOKE, ARCHIVED), monkeypatch, dry_run=True)
    assert done == [] and any(ln.startswith("[would carry]") for ln in lines)
    assert "<object object" in (d / layout.PROVENANCE).read_text()  # a dry run writes nothing
    done, lines = _revalidate(fake_book, _FakeRunner(SMOKE, ARCHIVED), monkeypatch)
    assert [s.chapter for s in done] == [CID]
    prov = json.loads((d / layout.PROVENANCE).read_text())
    assert prov["params"]["sigmas"] == GRID  # resolved from the notebook at the entry's commit
    rec = prov["revalidated"][-1]
    assert rec["smoke_rows"] == "identical" and rec["spot"]["rows"] == 2 and rec["params_resolved"] == ["sigmas"]
    assert rec["spot"]["unit"].startswith("σ = 0.5 at the paper's runs")
    assert check.check(ROOT, archive=fake_book)[0].state == "current"


def test_smoke_rows_that_moved_block_it_before_the_spot_runs_and_dirty_entries_are_never_revalidated(
        fake_book, monkeypatch):
    d = _entry(fake_book)
    fake = _FakeRunner(SMOKE.assign(ours="70.2"), ARCHIVED)
    done, lines = _revalidate(fake_book, fake, monkeypatch)
    assert done == [] and [c[0] for c in fake.calls] == ["smoke"]
    assert any("smoke rows changed" in ln for ln in lines)
    shutil.rmtree(d)
    _entry(fake_book, dirty=True)
    fake = _FakeRunner(SMOKE, ARCHIVED)
    done, lines = _revalidate(fake_book, fake, monkeypatch)
    assert done == [] and fake.calls == [] and lines[0].startswith("[dirty] paper/" + CID)


def test_revalidation_writes_only_from_a_clean_tree(fake_book, monkeypatch):
    _entry(fake_book)
    monkeypatch.setattr(archive, "uncommitted", lambda root: " M qlib/book/spot.py")
    with pytest.raises(archive.DirtyTree, match="--dry-run"):
        _revalidate(fake_book, _FakeRunner(SMOKE, ARCHIVED), monkeypatch)
    done, lines = _revalidate(fake_book, _FakeRunner(SMOKE, ARCHIVED), monkeypatch, dry_run=True)
    assert done == [] and any(ln.startswith("[would carry]") for ln in lines)


def test_a_chapter_without_a_spot_unit_is_not_carried_forward(fake_book, monkeypatch):
    _entry(fake_book)
    monkeypatch.setitem(spot.SPOTS, CID, "its only rows need the whole 70-minute study")
    fake = _FakeRunner(SMOKE, ARCHIVED)
    done, lines = _revalidate(fake_book, fake, monkeypatch)
    assert done == [] and fake.calls == []  # not even its smoke rows are run
    assert lines[0] == f"[stale] paper/{CID}: no spot unit (its only rows need the whole 70-minute study); run it again"


def test_smoke_rows_measuring_round_off_are_held_to_the_units_absolute_tolerance(fake_book, monkeypatch):
    """A smoke row whose value is a round-off error (4.2e-15 archived, 7.1e-15 now: quantized-mis/02's Table 1
    check between two runs on one machine) is the same row under a unit that states ``atol=1e-12``; under a
    unit without one it moved, and 0.1 against 0.2 moved under both."""
    smoke = _rows(("Table 1", "max |error| of the closed form", "4.2e-15", "agrees"))
    _entry(fake_book, smoke=smoke)
    now = smoke.assign(ours="7.1e-15")
    done, lines = _revalidate(fake_book, _FakeRunner(now, ARCHIVED), monkeypatch, dry_run=True)
    assert any("smoke rows changed" in ln and "'4.2e-15' → '7.1e-15'" in ln for ln in lines)
    monkeypatch.setitem(spot.SPOTS, CID, spot.Spot("σ = 0.5 at the paper's runs", 30, {"runs": 10},
                                                   rows=r"^Figure 2\(a\)", atol=1e-12))
    done, lines = _revalidate(fake_book, _FakeRunner(now, ARCHIVED), monkeypatch, dry_run=True)
    assert any(ln.startswith("[would carry]") for ln in lines), lines
    done, lines = _revalidate(fake_book, _FakeRunner(smoke.assign(ours="0.2"), ARCHIVED), monkeypatch, dry_run=True)
    assert any("smoke rows changed" in ln for ln in lines)
