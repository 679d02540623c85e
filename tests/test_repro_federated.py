"""qlib.repro.eden.federated: Table 1, the drivers at small sizes, and the claim rows."""

from __future__ import annotations

import pandas as pd
import pytest

from qlib import wire
from qlib.repro.eden import federated as F


def test_table1_verbatim():
    t = F.table1()
    assert t["Task"].tolist() == ["EMNIST", "Shakespeare"]
    assert t.iloc[0, 1:].tolist() == ["10", "1500", "20", "10^-1.5", "10^-2.5", "10^-4"]
    assert t.iloc[1, 1:].tolist() == ["10", "1200", "4", "1", "10^-2", "10^-3"]
    e, s = F.PAPER_TABLE1["EMNIST"], F.PAPER_TABLE1["Shakespeare"]
    assert (e["client_lr"], e["server_lr"], e["adam_eps"]) == pytest.approx((0.0316228, 0.00316228, 1e-4), rel=1e-5)
    assert (s["rounds"], s["batch_size"], s["client_lr"], s["server_lr"]) == (1200, 4, 1.0, 0.01)


def test_available_and_not_offline_rows(shared_data_dir, tmp_path):
    assert F.available("MNIST", shared_data_dir) and F.available("a9a", shared_data_dir)
    assert not F.available("CIFAR-10", tmp_path) and not F.available("EMNIST", tmp_path)
    rows = F.rows_not_offline(tmp_path)
    assert [r.kind for r in rows] == ["not-available-offline"] * 4
    assert len(F.rows_not_offline(tmp_path, figures=("12",))) == 1
    with pytest.raises(ValueError, match="name must be one of"):
        F.available("ImageNet")


def test_figure10_small(shared_data_dir):
    df = F.figure10(bits=[1, 8], methods=["EDEN", "QSGD"], rounds=5, data_dir=shared_data_dir)
    assert len(df) == 4 and (df["distance"] > 0).all()
    g = df.set_index(["method", "bits"])["distance"]
    assert g["EDEN", 8] < g["EDEN", 1] and g["QSGD", 8] < g["QSGD", 1]
    row, fair = F.claims_figure10(df)
    assert row.kind == "paper-claim" and row.null_fails and row.passed == bool(g["EDEN", 1] < g["QSGD", 1] and g["EDEN", 8] < g["QSGD", 8])
    sent = df.set_index(["method", "bits"])["bits_sent_per_coord"]
    assert sent["EDEN", 1] == pytest.approx(8 * (wire.HEADER.size + 8 + 128 // 8) / 123)  # the bytes sent
    assert sent["QSGD", 8] > (9 * 123 + 32) / 123  # the accounted bits plus the frame
    assert fair.kind == "theory-check" and "other runs" in fair.ours and "ablation" in fair.where


def test_figure10_ablation_keeps_the_runs_eden_lost():
    # issue 28: a run that sent more bits than any EDEN run used to be dropped; it now counts as not beaten
    df = pd.DataFrame({"method": ["EDEN", "QSGD", "EDEN", "QSGD"], "bits": [1, 1, 2, 2],
                       "distance": [0.1, 0.2, 0.05, 0.01], "bits_sent_per_coord": [4.4, 4.0, 5.4, 9.0]})
    main, fair = F.claims_figure10(df)
    assert not main.passed and main.null_fails  # QSGD closer at b = 2
    assert fair.kind == "theory-check" and not fair.passed and "QSGD b=2" in fair.ours and "QSGD b=1" in fair.ours
    hb = F.header_bits_per_coord(df)
    assert hb["overhead per coord"].tolist() == pytest.approx([3.4, 3.0, 3.4, 7.0])


def test_standin_rows_are_not_comparable_and_share_row():
    fin = pd.DataFrame({"method": ["Float32", "EDEN", "Hadamard+SQ", "EDEN", "Hadamard+SQ"],
                        "bits": [32, 0.1, 0.1, 4, 4], "final_train_acc": [0.9, 0.8, 0.7, 0.895, 0.85]})
    rows = F.claims_figure3(fin, standin="MNIST in place of EMNIST")
    assert [r.verdict for r in rows] == ["not comparable"] * 2 and all("stand-in" in r.note for r in rows)
    assert "would read reproduced" in rows[0].ours
    assert F.figure9_row("MNIST").verdict == "not comparable"
    assert F.compress_share_row(0.091, device="cpu").verdict == "differs"
    assert F.compress_share_row(0.005, device="cuda").verdict == "consistent"  # a free encoder passes too


def test_claims_on_made_up_results():
    fin = pd.DataFrame({"method": ["Float32", "EDEN", "Hadamard+SQ", "EDEN", "Hadamard+SQ"],
                        "bits": [32, 0.1, 0.1, 4, 4], "final_train_acc": [0.9, 0.8, 0.7, 0.895, 0.85]})
    low, close = F.claims_figure3(fin)
    assert low.passed and not close.passed and "0.05" in close.ours
    fin14 = pd.DataFrame({"method": ["Float32", "EDEN", "QSGD"], "final_test_acc": [0.9, 0.88, 0.88]})
    best, near = F.claims_figure14(fin14)
    assert not best.passed  # a tie is not "highest"
    assert near.passed
    rows = F.claims_figure14(fin14.assign(final_test_acc=[0.2, 0.1, 0.3]))
    assert [r.verdict for r in rows] == ["not comparable"] * 2 and "too few rounds" in rows[0].note
    df12 = pd.DataFrame({"dataset": "MNIST", "method": ["EDEN", "QSGD"] * 2, "bits": [1, 1, 2, 2],
                         "error": [0.1, 0.2, 0.05, 0.04]})
    r = F.claims_figure12(df12)[0]
    assert not r.passed and "not at b = 2" in r.ours


def test_finals_window():
    h = pd.DataFrame({"round": [1, 2, 3, 4], "train_acc": [0.1, 0.2, 0.3, 0.5], "test_acc": [None, 0.4, None, 0.6],
                      "bits_per_client": 100.0, "n_params": 50, "t_local": 1.0, "t_compress": 0.1,
                      "method": "EDEN", "bits": 1.0})
    f = F.finals(h, 2).iloc[0]
    assert f["final_train_acc"] == pytest.approx(0.4) and f["final_test_acc"] == pytest.approx(0.6)
    assert f["bits_per_coord"] == 2.0 and f["compress_share"] == pytest.approx(0.1)


def test_cifar10_driver_on_a_tiny_fake_archive(tmp_path):
    from fakedata import fake_cifar10

    fake_cifar10(tmp_path, per_batch=10, labels=list(range(10)))
    df = F.figure_cifar10("13", rounds=1, batch_size=2, methods=["Float32", "EDEN"], data_dir=tmp_path, device="cpu")
    fin = F.finals(df, 1)
    assert fin["method"].tolist() == ["Float32", "EDEN"] and fin["final_test_acc"].between(0, 1).all()
    assert F.claims_cifar10(fin, "13")[0].kind == "paper-claim"
    assert F.available("CIFAR-10", tmp_path) and [r.kind for r in F.rows_figure13(fin, tmp_path)][1:] == [
        "not-available-offline"]


def test_table1_row_says_it_is_a_table_of_settings():
    from qlib.repro.eden import federated as F

    (row,) = F.table1_rows()
    assert "Table 1" in row.where and row.verdict == "not comparable" and "settings" in row.note


def test_drivers_check_their_arguments_before_reading_data(tmp_path):
    """The drivers validate every argument first: with an empty data directory a bad argument is
    reported by name, not as a missing file (and no data is read for a bad call)."""
    cases = [(F.figure10, {"clients": 0}, "clients"), (F.figure10, {"seed": -1}, "seed"),
             (F.figure10, {"methods": ["EDEN", "Kashin"]}, r"methods\[1\]"),
             (F.figure12, {"clients": float("inf")}, "clients"), (F.figure12, {"rows": 1}, "rows"),
             (F.figure12, {"dataset": "SVHN"}, "dataset"), (F.figure14, {"eval_size": 0}, "eval_size"),
             (F.figure13, {"rounds": 1.5}, "rounds"), (F.figure3_standin, {"hidden": 0}, "hidden"),
             (F.figure3_standin, {"n_clients": 5}, "n_clients"), (F.figure_cifar10, {"figure": "13", "rounds": 0}, "rounds"),
             (F.figure3_task, {"task": "EMNIST", "bits": []}, "bits")]
    for fn, kw, name in cases:
        with pytest.raises((ValueError, TypeError), match=rf"\b{name}"):
            fn(**kw, data_dir=tmp_path)


def test_claim_functions_check_their_tolerances():
    fin = pd.DataFrame({"method": ["Float32", "EDEN"], "bits": [32, 4], "final_train_acc": [0.9, 0.9],
                        "final_test_acc": [0.9, 0.9]})
    with pytest.raises(ValueError, match=r"close_bits must be"):
        F.claims_figure3(fin, close_bits=10**6)
    with pytest.raises(ValueError, match=r"low_bits\[0\] must be"):
        F.claims_figure3(fin, low_bits=(float("nan"),))
    with pytest.raises(ValueError, match=r"min_baseline must be"):
        F.claims_figure14(fin, min_baseline=-1.0)
