"""qlib.repro.eden.learning: Table 1, the data, the drivers at small sizes (chapters eden/04 and eden/05)."""

from __future__ import annotations

import pandas as pd
import pytest

from qlib.repro.eden import federated as F
from qlib.repro.eden import learning as L
from qlib.repro.eden import paper


def test_table1_verbatim():
    t = L.table1()
    assert t["Task"].tolist() == ["EMNIST", "Shakespeare"]
    assert t.iloc[0, 1:].tolist() == ["10", "1500", "20", "10^-1.5", "10^-2.5", "10^-4"]
    assert t.iloc[1, 1:].tolist() == ["10", "1200", "4", "1", "10^-2", "10^-3"]
    e, s = paper.PAPER_TABLE1["EMNIST"], paper.PAPER_TABLE1["Shakespeare"]
    assert (e["client_lr"], e["server_lr"], e["adam_eps"]) == pytest.approx((0.0316228, 0.00316228, 1e-4), rel=1e-5)
    assert (s["rounds"], s["batch_size"], s["client_lr"], s["server_lr"]) == (1200, 4, 1.0, 0.01)


def test_available_and_missing_data(shared_data_dir, tmp_path):
    assert L.available("MNIST", shared_data_dir) and L.available("a9a", shared_data_dir)
    assert not L.available("CIFAR-10", tmp_path) and not L.available("EMNIST", tmp_path)
    rows = L.missing_data(tmp_path)
    assert [r.kind for r in rows] == ["not-available-offline"] * 4
    assert len(L.missing_data(tmp_path, figures=("12",))) == 1
    with pytest.raises(ValueError, match="name must be one of"):
        L.available("ImageNet")


def test_finals_window():
    h = pd.DataFrame({"round": [1, 2, 3, 4], "train_acc": [0.1, 0.2, 0.3, 0.5], "test_acc": [None, 0.4, None, 0.6],
                      "bits_per_client": 100.0, "n_params": 50, "t_local": 1.0, "t_compress": 0.1,
                      "method": "EDEN", "bits": 1.0})
    f = L.finals(h, 2).iloc[0]
    assert f["final_train_acc"] == pytest.approx(0.4) and f["final_test_acc"] == pytest.approx(0.6)
    assert f["bits_per_coord"] == 2.0 and f["compress_share"] == pytest.approx(0.1)


def test_drivers_check_their_arguments_before_reading_data(tmp_path):
    """The drivers validate every argument first: with an empty data directory a bad argument is
    reported by name, not as a missing file (and no data is read for a bad call)."""
    cases = [(L.figure10, {"clients": 0}, "clients"), (L.figure10, {"seed": -1}, "seed"),
             (L.figure10, {"methods": ["EDEN", "Kashin"]}, r"methods\[1\]"),
             (L.figure12, {"clients": float("inf")}, "clients"), (L.figure12, {"rows": 1}, "rows"),
             (L.figure12, {"dataset": "SVHN"}, "dataset"), (L.figure14, {"eval_size": 0}, "eval_size"),
             (L.figure13, {"rounds": 1.5}, "rounds"), (L.figure3_standin, {"hidden": 0}, "hidden"),
             (L.figure3_standin, {"n_clients": 5}, "n_clients"), (L.figure_cifar10, {"figure": "13", "rounds": 0}, "rounds"),
             (L.figure3_task, {"task": "EMNIST", "bits": []}, "bits")]
    for fn, kw, name in cases:
        with pytest.raises((ValueError, TypeError), match=rf"\b{name}"):
            fn(**kw, data_dir=tmp_path)


def test_cifar10_driver_on_a_tiny_fake_archive(tmp_path):
    from fakedata import fake_cifar10

    fake_cifar10(tmp_path, per_batch=10, labels=list(range(10)))
    df = L.figure_cifar10("13",
                          L.FederatedFigureConfig(rounds=1, batch_size=2, methods=["Float32", "EDEN"], device="cpu"),
                          data_dir=tmp_path)
    fin = L.finals(df, 1)
    assert fin["method"].tolist() == ["Float32", "EDEN"] and fin["final_test_acc"].between(0, 1).all()
    assert F.cifar10_rows(fin, "13")[0].kind == "paper-claim"
    assert L.available("CIFAR-10", tmp_path) and [r.kind for r in F.figure13_rows(fin, tmp_path)][1:] == [
        "not-available-offline"]


def test_figure3_task_on_a_tiny_leaf_shakespeare(tmp_path):
    """The Shakespeare column's driver end to end on ten fake LEAF clients: the paper's LSTM, one round, one step."""
    import json

    text = "Now is the winter of our discontent made glorious summer by this sun of York; and all the clouds that"
    users = [f"P_{c}" for c in "ABCDEFGHIJ"]
    blob = {"users": users, "user_data": {u: {"x": [text[i : i + 80] for i in range(3)], "y": [text[80 + i] for i in range(3)]}
                                          for u in users}}
    for split in ("train", "test"):
        (tmp_path / "shakespeare" / split).mkdir(parents=True)
        (tmp_path / "shakespeare" / split / "all.json").write_text(json.dumps(blob))
    assert L.shakespeare_source(tmp_path) == "LEAF"
    df = L.figure3_task("Shakespeare",
                        L.Figure3TaskConfig(rounds=1, bits=[0.1], methods=["EDEN"], local_steps=1, device="cpu"),
                        data_dir=tmp_path)
    assert df["method"].unique().tolist() == ["Float32", "EDEN"] and (df["source"] == "LEAF").all()
    assert (df["n_params"] == 822_040).all() and df["train_acc"].between(0, 1).all()


def test_learning_settings_are_frozen_records(shared_data_dir):
    """The settings rule: each driver's record, checked when built, before any data is read."""
    import dataclasses

    cfg = L.Figure12Config(bits=[1, 4], methods=["EDEN"], rounds=1, rows=20)
    assert cfg.bits == (1.0, 4.0) and cfg.methods == ("EDEN",)  # checked and stored as tuples
    a = L.figure12("MNIST", cfg, data_dir=shared_data_dir)
    assert a.equals(L.figure12("MNIST", L.Figure12Config(bits=[1, 4], methods=["EDEN"], rounds=1, rows=20),
                               data_dir=shared_data_dir))
    assert a["bits"].tolist() == [1.0, 4.0]
    with pytest.raises(ValueError, match="rows"):
        dataclasses.replace(cfg, clients=30)  # rows must hold at least one row per client
    with pytest.raises(TypeError, match="config must be a Figure12Config"):
        L.figure12("MNIST", L.FederatedFigureConfig(), data_dir=shared_data_dir)
    with pytest.raises(TypeError, match=r"\blr2\b"):
        L.figure12("MNIST", lr2=0.1, data_dir=shared_data_dir)
    assert L.FederatedFigureConfig().batch_size == paper.FIG13["batch_size"] == paper.FIG14["batch_size"]
    assert L.Figure3StandinConfig().bits == tuple(float(b) for b in paper.FIG3["bits"])
    assert L.Figure3TaskConfig().rounds == paper.PAPER_TABLE1["EMNIST"]["rounds"]
    for record, bad in ((L.FederatedFigureConfig, {"eval_every": -1}), (L.Figure3StandinConfig, {"alpha": 0.0}),
                        (L.Figure3TaskConfig, {"local_steps": 0})):
        with pytest.raises(ValueError, match=next(iter(bad))):
            record(**bad)


def test_learning_drivers_refuse_an_unknown_setting_before_reading_data(tmp_path):
    for fn, args in ((L.figure12, ("MNIST",)), (L.figure14, ()), (L.figure13, ()), (L.figure_cifar10, ("13",)),
                     (L.figure3_standin, ()), (L.figure3_task, ("EMNIST",))):
        with pytest.raises(TypeError, match=r"\bnot_a_setting\b"):
            fn(*args, data_dir=tmp_path, not_a_setting=1)
        with pytest.raises(TypeError, match=r"\bconfig\b"):
            fn(*args, {"rounds": 1}, data_dir=tmp_path)
