"""qlib.repro.eden.federated: Table 1, the drivers at small sizes, and the claim rows."""

from __future__ import annotations

import pandas as pd
import pytest

from qlib import wire
from qlib.repro.eden import federated as F
from qlib.repro.eden import paper


def test_table1_verbatim():
    t = F.table1()
    assert t["Task"].tolist() == ["EMNIST", "Shakespeare"]
    assert t.iloc[0, 1:].tolist() == ["10", "1500", "20", "10^-1.5", "10^-2.5", "10^-4"]
    assert t.iloc[1, 1:].tolist() == ["10", "1200", "4", "1", "10^-2", "10^-3"]
    e, s = paper.PAPER_TABLE1["EMNIST"], paper.PAPER_TABLE1["Shakespeare"]
    assert (e["client_lr"], e["server_lr"], e["adam_eps"]) == pytest.approx((0.0316228, 0.00316228, 1e-4), rel=1e-5)
    assert (s["rounds"], s["batch_size"], s["client_lr"], s["server_lr"]) == (1200, 4, 1.0, 0.01)


def test_available_and_not_offline_rows(shared_data_dir, tmp_path):
    assert F.available("MNIST", shared_data_dir) and F.available("a9a", shared_data_dir)
    assert not F.available("CIFAR-10", tmp_path) and not F.available("EMNIST", tmp_path)
    rows = F.not_offline_rows(tmp_path)
    assert [r.kind for r in rows] == ["not-available-offline"] * 4
    assert len(F.not_offline_rows(tmp_path, figures=("12",))) == 1
    with pytest.raises(ValueError, match="name must be one of"):
        F.available("ImageNet")


def test_figure10_small(shared_data_dir):
    df = F.figure10(bits=[1, 8], methods=["EDEN", "QSGD"], rounds=5, data_dir=shared_data_dir)
    assert len(df) == 4 and (df["distance"] > 0).all()
    g = df.set_index(["method", "bits"])["distance"]
    assert g["EDEN", 8] < g["EDEN", 1] and g["QSGD", 8] < g["QSGD", 1]
    row, fair = F.figure10_rows(df)
    assert row.kind == "paper-claim" and row.null_fails and row.passed == bool(g["EDEN", 1] < g["QSGD", 1] and g["EDEN", 8] < g["QSGD", 8])
    sent = df.set_index(["method", "bits"])["bits_sent_per_coord"]
    assert sent["EDEN", 1] == pytest.approx(8 * (wire.HEADER.size + 8 + 128 // 8) / 123)  # the bytes sent
    assert sent["QSGD", 8] > (9 * 123 + 32) / 123  # the accounted bits plus the frame
    assert fair.kind == "theory-check" and "other runs" in fair.ours and "ablation" in fair.where


def test_figure10_ablation_keeps_the_runs_eden_lost():
    # issue 28: a run that sent more bits than any EDEN run used to be dropped; it now counts as not beaten
    df = pd.DataFrame({"method": ["EDEN", "QSGD", "EDEN", "QSGD"], "bits": [1, 1, 2, 2],
                       "distance": [0.1, 0.2, 0.05, 0.01], "bits_sent_per_coord": [4.4, 4.0, 5.4, 9.0]})
    main, fair = F.figure10_rows(df)
    assert not main.passed and main.null_fails  # QSGD closer at b = 2
    assert fair.kind == "theory-check" and not fair.passed and "QSGD b=2" in fair.ours and "QSGD b=1" in fair.ours
    hb = F.header_bits_per_coord(df)
    assert hb["overhead per coord"].tolist() == pytest.approx([3.4, 3.0, 3.4, 7.0])


def test_standin_rows_are_not_comparable_and_share_row():
    fin = pd.DataFrame({"method": ["Float32", "EDEN", "Hadamard+SQ", "EDEN", "Hadamard+SQ"],
                        "bits": [32, 0.1, 0.1, 4, 4], "final_train_acc": [0.9, 0.8, 0.7, 0.895, 0.85]})
    rows = F.figure3_rows(fin, standin="MNIST in place of EMNIST")
    assert [r.verdict for r in rows] == ["not comparable"] * 2 and all("stand-in" in r.note for r in rows)
    assert "would read reproduced" in rows[0].ours
    (fig9,) = F.figure9_rows("MNIST")
    assert fig9.verdict == "not comparable"
    (slow,) = F.compress_share_rows(0.091, device="cpu")
    assert slow.verdict == "differs"
    assert F.compress_share_rows(0.005, device="cuda")[0].verdict == "consistent"  # a free encoder passes too
    assert F.compress_share_text(0.091, "cpu", [slow]) == (
        "Compressing and decompressing the EDEN updates took 9.1% of the local training time in the Figure 14 runs "
        "on cpu (the paper: below 1% of the gradient computation, on a GPU): **differs**.")
    fin14 = pd.DataFrame({"method": ["Float32", "EDEN"], "compress_share": [0.0, 0.25]})
    assert F.compress_share(fin14) == 0.25
    with pytest.raises(ValueError, match="no run of method 'QSGD'"):
        F.compress_share(fin14, "QSGD")


def test_claims_on_made_up_results():
    fin = pd.DataFrame({"method": ["Float32", "EDEN", "Hadamard+SQ", "EDEN", "Hadamard+SQ"],
                        "bits": [32, 0.1, 0.1, 4, 4], "final_train_acc": [0.9, 0.8, 0.7, 0.895, 0.85]})
    low, close = F.figure3_rows(fin)
    assert low.passed and not close.passed and "0.05" in close.ours
    fin14 = pd.DataFrame({"method": ["Float32", "EDEN", "QSGD"], "final_test_acc": [0.9, 0.88, 0.88]})
    best, near = F.figure14_rows(fin14)
    assert not best.passed  # a tie is not "highest"
    assert near.passed
    rows = F.figure14_rows(fin14.assign(final_test_acc=[0.2, 0.1, 0.3]))
    assert [r.verdict for r in rows] == ["not comparable"] * 2 and "too few rounds" in rows[0].note
    df12 = pd.DataFrame({"dataset": "MNIST", "method": ["EDEN", "QSGD"] * 2, "bits": [1, 1, 2, 2],
                         "error": [0.1, 0.2, 0.05, 0.04]})
    r = F.figure12_rows(df12)[0]
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
    assert F.cifar10_rows(fin, "13")[0].kind == "paper-claim"
    assert F.available("CIFAR-10", tmp_path) and [r.kind for r in F.figure13_rows(fin, tmp_path)][1:] == [
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
        F.figure3_rows(fin, close_bits=10**6)
    with pytest.raises(ValueError, match=r"low_bits\[0\] must be"):
        F.figure3_rows(fin, low_bits=(float("nan"),))
    with pytest.raises(ValueError, match=r"min_baseline must be"):
        F.figure14_rows(fin, min_baseline=-1.0)


def test_prose_is_generated_from_the_parameters_and_the_paper():
    assert F.figure14_text(40, 32, 10, 2000, 5) == (
        "40 rounds with local batches of 32 (the paper: batch 128 and a rolling window of 30 rounds, here 10); "
        "test accuracy on 2000 test images every 5 rounds.")
    assert F.figure3_text(40, [0.1, 0.5, 4], 5, 100, 0.3, 10) == (
        "40 rounds (Table 1: 1500 on EMNIST), budgets [0.1, 0.5, 4] (the paper: [0.1, 0.5, 1, 2, 4]), 5 local "
        "batches of 20 per client per round, 100 clients with Dirichlet(0.3) label skew, rolling window 10 rounds "
        "(the paper: 200).")
    assert F.figure13_text(40, 32, 10) == "Stand-in: MNIST, 40 rounds, batch 32 (the paper: 128), rolling window 10 (the paper: 60)."
    assert F.figure3_standin_text(0.3) == "federated MNIST (MLP) with Dirichlet(0.3) label skew in place of EMNIST/Shakespeare"
    fin = pd.DataFrame({"method": ["Float32", "EDEN", "QSGD"], "final_test_acc": [0.2, 0.1, 0.3]})
    rows = F.figure14_rows(fin)  # not comparable: the notes are shown only on request
    line = F.outcome_line(rows)
    assert line.startswith("Outcome: EDEN highest") and line.endswith("(not comparable).") and "too few" not in line
    assert "too few rounds" in F.outcome_line(rows, notes=True)
    with pytest.raises(TypeError, match="rows"):
        F.outcome_line([])


def test_figure3_task_rows_run_only_the_offline_tasks(tmp_path):
    assert F.figure3_task_rows(5, [0.1], 2, data_dir=tmp_path) == []  # neither LEAF task in the directory
    with pytest.raises(TypeError, match="paper_rounds"):
        F.figure3_task_rows(5, [0.1], 2, paper_rounds="yes", data_dir=tmp_path)
    with pytest.raises(ValueError, match="window"):
        F.figure3_task_rows(5, [0.1], 0, data_dir=tmp_path)
