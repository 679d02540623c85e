"""The one chapter setup: id, paper, device, threads, recorder."""

from __future__ import annotations

import pytest
import torch

from qlib.book import chapter
from qlib.book.chapter import infer_chapter_id


def test_chapter_setup(tmp_path):
    n = torch.get_num_threads()
    try:
        ch = chapter("eden/01-estimator-vnmse", out_dir=tmp_path, device="cpu", threads=1, plot_style=False)
        assert (ch.id, ch.part, ch.paper, ch.device.type) == ("eden/01-estimator-vnmse", "eden", "002", "cpu")
        assert torch.get_num_threads() == 1
        assert ch.cmp.chapter == ch.id and ch.cmp.paper == "002" and (tmp_path / "comparisons.csv").is_file()
    finally:
        torch.set_num_threads(n)


def test_default_out_dir_and_bad_arguments(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ch = chapter("rqp-sgd/02-table1", threads=None, plot_style=False)
    assert ch.out_dir == tmp_path.joinpath("_results", "rqp-sgd", "02-table1").relative_to(tmp_path)
    with pytest.raises(ValueError, match="chapter_id must look like"):
        chapter("no-slash", plot_style=False)
    with pytest.raises(ValueError, match="threads must be an integer >= 1"):
        chapter("eden/01", threads=0, plot_style=False)


def test_infer_chapter_id(tmp_path, monkeypatch):
    monkeypatch.setenv("JPY_SESSION_NAME", str(tmp_path / "book" / "chapters" / "mia-limits" / "02-overfitting.ipynb"))
    assert infer_chapter_id() == "mia-limits/02-overfitting"
    monkeypatch.delenv("JPY_SESSION_NAME")
    (tmp_path / "chapters" / "eden").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "chapters" / "eden")
    assert infer_chapter_id() == "eden/interactive"
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="could not be found"):
        infer_chapter_id()
