"""qlib.repro.eden.figures: every figure function draws a small frame with its study's columns (from the
study's driver at a tiny size, or built by hand with the driver's columns) into a Figure with the expected
number of axes, and refuses a frame without them."""

from __future__ import annotations

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from figure_helpers import close_figures, n_axes  # noqa: F401 (the fixture is autouse)

from qlib.repro.eden import estimator, figures, rotation, subbit, sweeps  # noqa: E402


# -- chapters eden/01 to eden/03: the drivers at tiny sizes ------------------------------------------------
@pytest.fixture(scope="module")
def fig2():
    return estimator.figure2([1, 2, 4], [4, 5], 2, methods=("EDEN", "Hadamard+SQ", "Kashin+SQ", "QSGD"))


def test_figures_2_and_7_one_column_per_budget_present(fig2):
    assert n_axes(figures.figure2(fig2)) == 2 * 2       # b = 2 and 4 of (2, 4, 6); vNMSE and time rows
    assert n_axes(figures.figure7(fig2)) == 2 * 1       # b = 1 of (1, 3, 5, 7)
    assert n_axes(figures.figure7(fig2[fig2["bits"] == 4])) == 2  # none present: the frame's first budget
    with pytest.raises(ValueError, match="panels"):
        figures.figure2(fig2, panels=())


def test_figure4_and_figure5():
    assert n_axes(figures.figure4(estimator.figure4(step=1.0, b_max=4.0))) == 1
    fig5 = sweeps.variable_length_sweep([1, 2], 64, laws=("normal", "lognormal"), trials=2)
    assert n_axes(figures.figure5(fig5)) == 2           # one panel per law


def test_figure6_and_figure8():
    fig6 = rotation.figure6([1, 2], [4, 5], ["normal", "uniform"], 2)
    assert n_axes(figures.figure6(fig6)) == 2           # one panel per d
    fig8 = rotation.figure8([1, 2], 16, 2, ["normal", "lognormal"], 1)
    assert n_axes(figures.figure8(fig8, 16, 2)) == 2    # one panel per law
    assert n_axes(figures.figure8(fig8, 16, 2, laws=["normal"])) == 1
    with pytest.raises(ValueError, match="laws"):
        figures.figure8(fig8, 16, 2, laws=["cauchy"])
    with pytest.raises(ValueError, match="clients"):
        figures.figure8(fig8, 16, 0)


def test_figure11_and_lemma22():
    fig11 = sweeps.loss_subbit_sweep(64, [0.25, 0.5, 1.0], trials=2)
    assert n_axes(figures.figure11(fig11)) == 1
    het = subbit.heterogeneous([1.0, 2.0, 0.5], [0.0, 0.1, 0.0], 5, 2)
    homog = subbit.homogeneous(het["xs"], [1, 2, 3], 1)
    assert n_axes(figures.lemma22(homog, het)) == 1
    with pytest.raises(TypeError, match="het"):
        figures.lemma22(homog, {"theory": 0.1})


# -- chapters eden/04 and eden/05: frames with the drivers' columns -----------------------------------------
def test_figure10_and_figure12():
    methods = ["EDEN", "Hadamard+SQ", "Kashin+SQ", "QSGD"]
    f10 = pd.DataFrame([{"method": m, "bits": b, "bits_sent_per_coord": b + 1.0, "distance": 0.1 / b, "ref_norm": 2.0}
                        for m in methods for b in (1.0, 4.0)])
    f12 = pd.DataFrame([{"dataset": "MNIST", "method": m, "bits": b, "error": 0.2 / b} for m in methods for b in (1.0, 4.0)])
    assert n_axes(figures.figure10(f10)) == 1
    assert n_axes(figures.figure12(f12)) == 1
    with pytest.raises(ValueError, match="frame"):
        figures.figure10(f10.drop(columns="distance"))
    with pytest.raises(TypeError, match="frame"):
        figures.figure12(f12.to_dict())


def _history(methods_bits, rounds=6, eval_every=2):
    """Histories as :func:`qlib.repro.eden.learning.federated_runs` stacks them (the columns the figures read)."""
    rows = []
    for m, b in methods_bits:
        for r in range(1, rounds + 1):
            evaluated = r % eval_every == 0
            rows.append({"round": r, "train_acc": 0.1 * r / rounds + 0.5, "method": m, "bits": b,
                         "test_acc": 0.6 + 0.01 * r if evaluated else np.nan,
                         "global_train_acc": 0.55 + 0.01 * r if evaluated else np.nan})
    return pd.DataFrame(rows)


def test_figure14_and_figure13():
    runs = _history([("Float32", 0.05), ("EDEN", 0.05), ("QSGD", 0.05)])
    assert n_axes(figures.figure14(runs, 2)) == 2       # training images, test images
    assert n_axes(figures.figure13(runs)) == 1
    with pytest.raises(ValueError, match="window"):
        figures.figure14(runs, 0)


def test_figures_3_and_9_one_row_per_budget_one_column_per_task():
    runs = _history([("Float32", 32.0), ("EDEN", 0.1), ("Kashin+SQ", 0.1), ("EDEN", 4.0), ("Kashin+SQ", 4.0)])
    assert n_axes(figures.figure3(runs, 2)) == 2        # b = 0.1, 4; the MNIST stand-in only
    assert n_axes(figures.figure9(runs, 2, shakespeare=runs)) == 2 * 2
    assert n_axes(figures.figure3(runs, 2, bits=[4.0])) == 1
    with pytest.raises(ValueError, match="bits"):
        figures.figure9(runs, 2, bits=[])
    with pytest.raises(ValueError, match="frame"):
        figures.figure3(runs[runs["method"] == "Float32"], 2)
