"""The archive of long runs (qlib.book.archive, .layout, .check, .scale; the stamp of qlib.stamp): input
stamps cover exactly the modules a notebook imports, a changed module marks exactly the dependent entries
stale, the committed archive's schema and size, figure data drawn again (qlib.plotting.capture), and the
"ours at paper scale" join."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import pytest

from qlib import stamp
from qlib.book import check, evidence, layout, render, scale
from qlib.book.schema import COLUMNS, FILENAME
from qlib.book.stamps import current_params, notebook_stamp
from qlib.plotting import capture

matplotlib.use("Agg")
ROOT = Path(__file__).resolve().parents[1]


def _entry(arch: Path, nb: str, pkg: Path, profile: str = "paper", rows: pd.DataFrame | None = None) -> Path:
    """An archive entry for ``nb`` whose stamp is computed on the package copy ``pkg``."""
    cid = nb.removesuffix(".ipynb")
    d = layout.entry_dir(arch, profile, cid)
    d.mkdir(parents=True)
    params = current_params(ROOT, nb, profile)
    st = notebook_stamp(ROOT, nb, params, pkg=pkg)
    prov = {"schema": layout.SCHEMA, "chapter": cid, "notebook": nb, "profile": profile, "params": params,
            "commit": "0" * 40, "device": {"resolved": "cpu"}, "started": "2026-11-28T00:00:00+00:00",
            "finished": "2026-11-28T00:01:00+00:00", "wall_s": 60.0, "packages": {}, "data": st["data"],
            "stamp": st, "archived": "2026-11-28T00:01:00+00:00", "smoke_rows": False}
    (d / layout.PROVENANCE).write_text(json.dumps(prov))
    (rows if rows is not None else pd.DataFrame(columns=COLUMNS)).to_csv(d / FILENAME, index=False)
    return d


@pytest.fixture()
def pkg_copy(tmp_path):
    dest = tmp_path / "pkg" / "qlib"
    shutil.copytree(ROOT / "qlib", dest, ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc"))
    return dest


def test_imported_modules_follow_imports_transitively(pkg_copy):
    mods = stamp.imported_modules(["from qlib.repro.eden import sweeps\nimport numpy"], pkg_copy)
    # the wing module, its parents, and the library modules it reaches
    assert {"qlib", "qlib.repro", "qlib.repro.eden", "qlib.repro.eden.sweeps", "qlib.hadamard"} <= set(mods)
    assert not any(m.startswith("qlib.repro.mia_limits") for m in mods)
    assert stamp.imported_modules(["x = 1", "%matplotlib inline\n!ls"], pkg_copy) == []


def test_an_edited_module_is_parsed_again(pkg_copy):
    """Imports are parsed once per file while it is unchanged (an archive check stamps every entry):
    an edit that adds an import is followed at once, and one that removes it drops the module."""
    src = "from qlib.repro.eden import sweeps"
    assert "qlib.repro.mia_limits" not in stamp.imported_modules([src], pkg_copy)
    f = pkg_copy / "repro" / "eden" / "sweeps.py"
    text = f.read_text()
    f.write_text(text + "\nfrom qlib.repro import mia_limits  # added\n")
    assert "qlib.repro.mia_limits" in stamp.imported_modules([src], pkg_copy)
    f.write_text(text)
    assert "qlib.repro.mia_limits" not in stamp.imported_modules([src], pkg_copy)


def test_changed_module_marks_exactly_the_dependent_entries_stale(tmp_path, pkg_copy):
    arch = tmp_path / "archive"
    eden = "eden/03-subbit-loss-heterogeneous.ipynb"
    mia = "mia-limits/01-theorem-checks.ipynb"
    for nb in (eden, mia):
        _entry(arch, nb, pkg_copy)
    state = {s.chapter: s for s in check.check(ROOT, archive=arch, pkg=pkg_copy)}
    assert {c: s.state for c, s in state.items()} == {"eden/03-subbit-loss-heterogeneous": "current",
                                                      "mia-limits/01-theorem-checks": "current"}
    assert "qlib.eden" in state["eden/03-subbit-loss-heterogeneous"].provenance["stamp"]["modules"]
    assert "qlib.eden" not in state["mia-limits/01-theorem-checks"].provenance["stamp"]["modules"]
    # a library module only the EDEN chapter reaches
    f = pkg_copy / "eden.py"
    f.write_text(f.read_text() + "\n# a refactor\n")
    state = {s.chapter: s for s in check.check(ROOT, archive=arch, pkg=pkg_copy)}
    assert state["eden/03-subbit-loss-heterogeneous"].state == "stale"
    assert state["eden/03-subbit-loss-heterogeneous"].changes == ["modules `qlib.eden`"]
    assert state["mia-limits/01-theorem-checks"].state == "current"
    # the book machinery (runner, recorder, rendering) changes no notebook's numbers: nothing more goes stale
    for f in ("runner.py", "compare.py", "chapter.py"):
        r = pkg_copy / "book" / f
        r.write_text(r.read_text() + "\n# machinery\n")
    assert check.check(ROOT, archive=arch, pkg=pkg_copy)[1].state == "current"
    assert not any(m.startswith("qlib.book") for m in state["mia-limits/01-theorem-checks"].provenance["stamp"]["modules"])
    # a module both reach (the ledger) marks both
    led = pkg_copy / "repro" / "ledger.py"
    led.write_text(led.read_text() + "\n# both\n")
    assert [s.state for s in check.check(ROOT, archive=arch, pkg=pkg_copy)] == ["stale", "stale"]


def test_changed_parameters_are_named(tmp_path, pkg_copy):
    arch = tmp_path / "archive"
    d = _entry(arch, "eden/03-subbit-loss-heterogeneous.ipynb", pkg_copy)
    prov = json.loads((d / layout.PROVENANCE).read_text())
    prov["stamp"]["params"]["het_trials"] = 7
    (d / layout.PROVENANCE).write_text(json.dumps(prov))
    (s,) = check.check(ROOT, archive=arch, pkg=pkg_copy)
    assert s.state == "stale" and len(s.changes) == 1 and s.changes[0].startswith("parameters `het_trials` (7 → ")


def test_schema_problems_make_an_entry_invalid(tmp_path, pkg_copy):
    arch = tmp_path / "archive"
    d = _entry(arch, "eden/03-subbit-loss-heterogeneous.ipynb", pkg_copy)
    prov = json.loads((d / layout.PROVENANCE).read_text())
    del prov["commit"]
    prov["wall_s"] = "sixty"
    (d / layout.PROVENANCE).write_text(json.dumps(prov))
    (s,) = check.check(ROOT, archive=arch, pkg=pkg_copy)
    assert s.state == "invalid"
    assert any("'commit'" in p for p in s.problems) and any("wall_s" in p for p in s.problems)
    pd.DataFrame({"chapter": []}).to_csv(d / FILENAME, index=False)
    prov["commit"], prov["wall_s"] = "0" * 40, 1.0
    (d / layout.PROVENANCE).write_text(json.dumps(prov))
    (s,) = check.check(ROOT, archive=arch, pkg=pkg_copy)
    assert s.state == "invalid" and "lacks columns" in s.problems[0]


def test_the_committed_archive_is_valid_and_small():
    arch = ROOT / layout.ARCHIVE
    statuses = check.check(ROOT, archive=arch)
    assert [f"{s.profile}/{s.chapter}: {s.problems}" for s in statuses if s.state == "invalid"] == []
    assert layout.size_bytes(arch) <= layout.MAX_BYTES
    for s in statuses:  # every entry says where and how it ran
        p = s.provenance
        assert p["profile"] == s.profile and p["chapter"] == s.chapter and p["wall_s"] > 0
        assert p["device"].get("cpu") or p["device"].get("gpu")
        assert len(p["commit"]) == 40 and p["packages"].get("torch")


def test_figure_data_is_drawn_again(tmp_path):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2)
    x = np.linspace(0, 1, 11)
    axes[0].plot(x, x ** 2, label="square")
    axes[0].set_xscale("log")
    axes[0].legend()
    axes[1].bar([0, 1], [3.0, 4.0])
    axes[1].set_title("bars")
    path = capture.save_figure_data(fig, tmp_path / "figures" / "fig-1.npz")
    plt.close(fig)
    g = capture.redraw(path)
    (line,) = g.axes[0].get_lines()
    np.testing.assert_array_equal(line.get_ydata(), (x ** 2).astype(np.float32))   # stored as float32
    assert g.axes[0].get_xscale() == "log" and g.axes[1].get_title() == "bars"
    assert sorted(p.get_height() for p in g.axes[1].patches) == [3.0, 4.0]
    plt.close(g)


def test_paper_scale_rows_join_by_where_quantity_and_occurrence(tmp_path, pkg_copy):
    # the entry's stamp is computed on an unchanged copy of the package: it is current against the real one
    arch = tmp_path / "archive"
    nb = "eden/03-subbit-loss-heterogeneous.ipynb"
    base = {c: "" for c in COLUMNS}
    mk = lambda **kw: {**base, "chapter": nb[:-6], "paper": "002", "kind": "paper-number", **kw}  # noqa: E731
    archived = pd.DataFrame([mk(where="Fig 3", quantity="s", ours="7.0", verdict="differs"),   # only at paper scale
                             mk(where="Fig 1", quantity="q", ours="2.0", verdict="reproduced"),
                             mk(where="Fig 1", quantity="q", ours="3.0", verdict="differs")])
    _entry(arch, nb, pkg_copy, rows=archived)
    now = pd.DataFrame([mk(where="Fig 1", quantity="q", ours="1.0", verdict="differs"),
                        mk(where="Fig 1", quantity="q", ours="1.5", verdict="differs"),
                        mk(where="Fig 2", quantity="r", ours="1.0", verdict="agrees")])
    out = scale.paper_scale_rows(now, nb[:-6], archive=arch, root=ROOT)
    assert out["ours_archived"].tolist() == ["2.0", "3.0", ""]
    assert out["verdict_archived"].tolist() == ["reproduced", "differs", ""]
    assert out["k_archived"].tolist() == [2, 3, 0]          # the archived rows' own places in their run
    assert out.attrs["archived_only"]["quantity"].tolist() == ["s"]
    assert out.attrs["archived"].state == "current"
    # issue 53: every id a claim judged on the archived run can cite lands on an anchor of the chapter's page
    judged = scale.rows_at_largest_scale(now.assign(chapter=nb[:-6]), build_profile="smoke", archive=arch, root=ROOT)
    assert judged["id"].tolist() == [f"{nb[:-6]}#{k}@paper" for k in (1, 2, 3)]
    md = render.paper_vs_ours_markdown(out)
    for i in judged["id"]:
        assert f'id="{evidence.anchor(i)[1]}"' in md, i
    assert all(f'id="row-{k}"' in md for k in (1, 2, 3))      # this build's rows keep theirs
    assert "1 row only in the archived `paper` run" in md and 'id="row-1-paper"></span>Fig 3: s' in md
    assert scale.paper_scale_rows(now, "eden/01-estimator-vnmse", archive=arch, root=ROOT).attrs["archived"] is None



def test_the_stamp_describes_the_code_that_ran(tmp_path, pkg_copy):
    """A module edited while a run goes on: the entry's stamp keeps the hash from the run's start."""
    nb = "eden/03-subbit-loss-heterogeneous.ipynb"
    snap = stamp.source_snapshot(pkg_copy)
    assert snap["qlib.eden"] == stamp.file_hash(pkg_copy / "eden.py") and "qlib.repro.eden.sweeps" in snap
    f = pkg_copy / "eden.py"
    f.write_text(f.read_text() + "\n# edited during the run\n")
    params = current_params(ROOT, nb, "paper")
    during = notebook_stamp(ROOT, nb, params, pkg=pkg_copy, snapshot=snap)
    after = notebook_stamp(ROOT, nb, params, pkg=pkg_copy)
    assert during["modules"]["qlib.eden"] == snap["qlib.eden"] != after["modules"]["qlib.eden"]
    assert stamp.stamp_changes(during, after) == ["modules `qlib.eden`"]


def test_long_lines_are_thinned_for_storage_and_computed_parameters_are_stable(tmp_path):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    x = np.linspace(1e-5, 1, 50_000)
    ax.plot(x, np.sqrt(x))
    path = capture.save_figure_data(fig, tmp_path / "fig-1.npz")
    plt.close(fig)
    (line,) = capture.redraw(path).axes[0].get_lines()
    xs = line.get_xdata()
    assert len(xs) <= capture.MAX_POINTS and xs[0] == np.float32(x[0]) and xs[-1] == np.float32(x[-1])
    np.testing.assert_allclose(line.get_ydata(), np.sqrt(xs), rtol=1e-6)
    # a parameter the cell computes (a comprehension) stamps the same way in every process
    nb = "rqp-sgd/02-table1.ipynb"
    s1 = notebook_stamp(ROOT, nb, current_params(ROOT, nb, "paper"))
    assert s1["params"]["diag_sigmas"] == "<expression>" and s1["parameters_cell"]


def test_revalidation_compares_a_measured_time_by_its_verdict(tmp_path):
    from qlib.book.archive import _same_rows

    def write(name, ours_time, verdict, vnmse):
        base = {c: "" for c in COLUMNS}
        rows = [{**base, "quantity": "EDEN encodes faster than Kashin+SQ (d = 1024, ms)", "ours": ours_time,
                 "verdict": verdict},
                {**base, "quantity": "vNMSE of 𝓘_3 without entropy coding", "ours": vnmse, "verdict": "differs"}]
        pd.DataFrame(rows).to_csv(tmp_path / name, index=False)
        return tmp_path / name

    a = write("a.csv", "0.17 vs 0.26", "reproduced", "0.035784")
    assert _same_rows(a, write("b.csv", "0.19 vs 0.31", "reproduced", "0.035784")) == []  # another run's times
    assert _same_rows(a, write("c.csv", "0.40 vs 0.26", "differs", "0.035784"))         # the verdict flipped
    assert _same_rows(a, write("d.csv", "0.17 vs 0.26", "reproduced", "0.035785"))       # a result changed


def test_a_chapter_without_a_paper_entry_shows_its_own_reduced_profile_so_labelled(tmp_path, pkg_copy):
    """eden/05's `paper` run does not fit a session: its page shows the archived run at its own reduced
    profile, labelled with that profile, and the published ledger carries those rows under their scale."""
    from qlib.book import render

    arch = tmp_path / "archive"
    nb = "eden/03-subbit-loss-heterogeneous.ipynb"
    cid = nb[:-6]
    base = {c: "" for c in COLUMNS}
    row = {**base, "chapter": cid, "paper": "002", "kind": "paper-number", "where": "Fig 1", "quantity": "q",
           "paper_value": "2", "ours": "2.0", "verdict": "reproduced"}
    assert scale.shown_profile(cid, archive=arch) is None
    _entry(arch, nb, pkg_copy, profile="eden03-half", rows=pd.DataFrame([row]))
    assert scale.shown_profile(cid, archive=arch) == "eden03-half"
    assert scale.shown_profile(cid, archive=arch, exclude="eden03-half") is None  # a build at that profile
    now = pd.DataFrame([{**row, "ours": "1.0", "verdict": "differs"}])
    out = scale.paper_scale_rows(now, cid, profile="eden03-half", archive=arch, root=ROOT)
    assert out["ours_archived"].tolist() == ["2.0"] and out.attrs["archived"].profile == "eden03-half"
    md = render.paper_vs_ours_markdown(out)
    assert "ours at `eden03-half` scale" in md and "not the paper's scale" in md and "ours at `paper`" not in md
    red = scale.reduced_scale_ledger(ROOT, archive=arch)
    assert red["scale"].str.startswith("eden03-half (archived 2026-11-28").all() and len(red) == 1
    assert scale.archived_ledger(ROOT, archive=arch).empty  # not counted as the paper's scale
    _entry(arch, nb, pkg_copy, profile="paper", rows=pd.DataFrame([row]))
    assert scale.shown_profile(cid, archive=arch) == "paper"  # the paper's own scale first


def test_the_archive_of_a_staged_build_tree_is_the_checkouts(tmp_path, monkeypatch):
    """The runner executes notebooks in its output tree, a book root (``_toc.yml``, ``chapters/``) without an
    archive: the archive found from there is the checkout's above it."""
    monkeypatch.delenv("QLIB_ARCHIVE_DIR", raising=False)
    book = tmp_path / "book"
    staged = book / "_build" / "book"
    for d in (book, staged):
        (d / "chapters" / "eden").mkdir(parents=True)
        (d / "_toc.yml").write_text("format: jb-book\n")
    assert layout.archive_root(staged / "chapters" / "eden") == staged / layout.ARCHIVE  # no archive anywhere yet
    (book / layout.ARCHIVE).mkdir()
    assert layout.archive_root(staged / "chapters" / "eden") == book / layout.ARCHIVE
    monkeypatch.setenv("QLIB_ARCHIVE_DIR", str(tmp_path / "elsewhere"))
    assert layout.archive_root(staged) == tmp_path / "elsewhere"
