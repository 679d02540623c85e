"""Citable releases: CITATION.cff states the release of pyproject.toml and the repository of
_config.yml; the landing page shows the release; the verdict changelog lists exactly the ledger rows
whose verdict flipped (or that were added or removed) between two gatherings."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pandas as pd
import yaml

from qlib.book import launch, publish, release, schema, sphinx_ext

ROOT = Path(__file__).resolve().parents[1]


def test_citation_cff_states_the_release_and_the_repository():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert cff["cff-version"] == "1.2.0" and cff["type"] == "software"
    assert cff["version"] == version == publish.version(ROOT) == sphinx_ext.release_version()
    assert cff["repository-code"] == launch.repository(ROOT)[0]
    assert cff["title"] and cff["authors"] and cff["message"] and cff["license"] == "MIT"
    bib = (ROOT / "references.bib").read_text()
    for ref in cff["references"]:  # the four papers, titled as in references.bib
        assert ref["title"].replace("EDEN", "{EDEN}").split(":")[0].replace("{", "") in bib.replace("{", "")


def test_landing_page_shows_the_release():
    assert "{{ qlib_version }}" in (ROOT / "chapters/intro/index.md").read_text()


def _rows(*specs) -> pd.DataFrame:
    return pd.DataFrame([dict(zip(schema.COLUMNS, ["eden/01-x", "002", "paper-number", w, q, "1", ours, "", v, "",
                                                     "0", "True"])) for w, q, ours, v in specs], columns=schema.COLUMNS)


def test_verdict_changes_lists_flips_additions_and_removals():
    old = _rows(("Table 1", "a", "1.0", "reproduced"), ("Table 1", "b", "2.0", "differs"),
                ("Fig 2", "c", "3.0", "reproduced"), ("Fig 2", "c", "3.1", "reproduced"),
                ("Fig 3", "gone", "4", "consistent"))
    new = _rows(("Table 1", "a", "1.5", "differs"), ("Table 1", "b", "2.1", "differs"),
                ("Fig 2", "c", "3.0", "reproduced"), ("Fig 2", "c", "9.9", "differs"),
                ("Fig 4", "new", "5", "reproduced"))
    ch = release.verdict_changes(old, new)
    got = {(r["where"], r["quantity"], r["old verdict"], r["new verdict"], r["change"]) for _, r in ch.iterrows()}
    assert got == {("Table 1", "a", "reproduced", "differs", "flipped"),
                   ("Fig 2", "c", "reproduced", "differs", "flipped"),  # the second of two rows with one name
                   ("Fig 3", "gone", "consistent", "", "removed"), ("Fig 4", "new", "", "reproduced", "added")}
    flips = release.verdict_changes(old, new, added_and_removed=False)
    assert list(flips["change"]) == ["flipped", "flipped"]
    assert release.verdict_changes(old, old).empty
    md = release.changelog_markdown(ch, "v0.1.0", "v0.2.0")
    assert md.startswith("Ledger rows that changed between v0.1.0 and v0.2.0: 2 flipped, 1 added, 1 removed.")
    assert "| eden/01-x | Table 1 | a | paper-number | reproduced | differs | 1.0 → 1.5 |" in md


def test_verdict_changes_reads_sites_ledger_files_and_results_folders(tmp_path, capsys):
    old = _rows(("Table 1", "a", "1.0", "reproduced"))
    site = tmp_path / "site"
    site.mkdir()
    old.to_csv(site / "ledger.csv", index=False)
    res = tmp_path / "book/_results/eden/01-x"
    res.mkdir(parents=True)
    _rows(("Table 1", "a", "0.2", "differs")).to_csv(res / "comparisons.csv", index=False)
    appendix = tmp_path / "book/_results/appendix/01-comparisons"
    appendix.mkdir(parents=True)
    _rows(("Table 9", "z", "1", "differs")).assign(chapter="appendix/01-comparisons").to_csv(
        appendix / "comparisons.csv", index=False)
    assert release.main([str(site), str(tmp_path / "book")]) == 0
    out = capsys.readouterr().out
    assert "1 flipped." in out and "Table 9" not in out
    assert release.main([str(site / "ledger.csv"), str(tmp_path / "nowhere")]) == 2
