"""The paper-vs-ours comparisons helper."""

from __future__ import annotations

import pandas as pd
import pytest

from qlib.book import Comparisons, gather
from qlib.book.compare import COLUMNS, counts_by


def test_close_verdicts_and_tolerance(tmp_path):
    c = Comparisons("part/01-x", tmp_path / "a")
    assert c.close("001", "Table 2", "acc", 0.996, 0.990, atol=0.01) == "reproduced"
    assert c.close("001", "Table 2", "acc", 0.996, 0.980, atol=0.01) == "differs"
    assert c.close("002", "Fig 2", "vNMSE", 0.5708, 0.5708 * 1.019, rtol=0.02) == "reproduced"
    assert c.close("002", "Fig 2", "vNMSE", 0.5708, 0.5708 * 1.021, rtol=0.02) == "differs"
    assert c.close("003", "TC-01", "levels", 8, 8) == "reproduced"
    assert c.check("001", "§5.1", "claim", "Sign < 33%", "no", passed=False) == "differs"
    assert c.not_comparable("001", "Table 3", "AUROC", 0.8, 0.7, reason="stand-in embedder") == "not comparable"
    df = pd.read_csv(tmp_path / "a" / "comparisons.csv", dtype=str, keep_default_na=False)
    assert list(df.columns) == COLUMNS and len(df) == 7
    assert df["verdict"].tolist() == ["reproduced", "differs", "reproduced", "differs", "reproduced", "differs", "not comparable"]
    assert df["tolerance"].iloc[0] == "±0.01" and df["tolerance"].iloc[2] == "±2%" and df["tolerance"].iloc[4] == "exact"
    assert c.summary() == {"reproduced": 3, "differs": 3, "not comparable": 1}


def test_gather_and_counts(tmp_path):
    a = Comparisons("p/01-a", tmp_path / "p" / "01-a")
    a.close("001", "T1", "q", 1.0, 1.0)
    b = Comparisons("p/02-b", tmp_path / "p" / "02-b")
    b.close("002", "F1", "q", 1.0, 2.0)
    b.not_comparable("002", "F2", "q", 1.0, reason="r")
    rows = gather(tmp_path)
    assert len(rows) == 3 and set(rows["chapter"]) == {"p/01-a", "p/02-b"}
    tab = counts_by(rows, ["chapter"]).set_index("chapter")
    assert tab.loc["p/02-b"].tolist() == [0, 1, 1]
    assert gather(tmp_path / "nothing").empty


def test_rerun_starts_empty(tmp_path):
    Comparisons("c", tmp_path).close("001", "T", "q", 1, 1)
    Comparisons("c", tmp_path)
    assert len(gather(tmp_path)) == 0


def test_bad_input(tmp_path):
    c = Comparisons("c", tmp_path)
    with pytest.raises(ValueError, match="ours must be finite"):
        c.close("001", "T", "q", 1.0, float("nan"))
    with pytest.raises(TypeError, match="paper_value must be a real number"):
        c.close("001", "T", "q", "1.0", 1.0)
    with pytest.raises(ValueError, match="rtol and atol must be >= 0"):
        c.close("001", "T", "q", 1.0, 1.0, atol=-1)
    with pytest.raises(ValueError, match="where must be a non-empty string"):
        c.close("001", "", "q", 1.0, 1.0)
    with pytest.raises(TypeError, match="passed must be a bool"):
        c.check("001", "T", "q", 1, 1, passed="yes")
    with pytest.raises(ValueError, match="non-empty reason"):
        c.not_comparable("001", "T", "q", 1, reason=" ")
    with pytest.raises(ValueError, match="chapter"):
        Comparisons("", tmp_path)
