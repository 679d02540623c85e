"""qlib.repro.eden.figures: every figure function draws a small frame with its study's columns (from the
study's driver at a tiny size, or built by hand with the driver's columns) into the panels the paper's
figure has, plotting exactly the frame's values (read back with the archive's figure capture: each line's
x and y equal the frame's columns for its method, law or budget), and refuses a frame without them."""

from __future__ import annotations

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from figure_helpers import close_figures, n_axes, panels, same, same_xy  # noqa: F401 (the fixture is autouse)

from qlib import eden_theory, fedavg  # noqa: E402
from qlib.plotting import style  # noqa: E402
from qlib.repro.eden import estimator, figures, rotation, subbit, sweeps  # noqa: E402
from qlib.repro.eden.subbit import SUBBIT  # noqa: E402

METHODS = ("EDEN", "Hadamard+SQ", "Kashin+SQ", "QSGD")


def _by(frame: pd.DataFrame, **where) -> pd.DataFrame:
    """The rows of ``frame`` whose columns equal ``where``, in the frame's order."""
    keep = np.ones(len(frame), dtype=bool)
    for col, value in where.items():
        keep &= (frame[col] == value).to_numpy()
    return frame[keep]


# -- chapters eden/01 to eden/03: the drivers at tiny sizes ------------------------------------------------
@pytest.fixture(scope="module")
def fig2():
    return estimator.figure2([1, 2, 4], [4, 5], 2, methods=METHODS)


def test_figures_2_and_7_one_column_per_budget_present(fig2):
    ps = panels(figures.figure2(fig2))                   # b = 2 and 4 of (2, 4, 6); vNMSE row, then time row
    assert len(ps) == 2 * 2 and [p.title for p in ps[:2]] == ["b = 2", "b = 4"]
    for j, b in enumerate((2, 4)):
        top, bottom = ps[j], ps[2 + j]
        assert top.labels() == [*sorted(METHODS), "EDEN theory"]
        for m in METHODS:
            g = _by(fig2, bits=b, method=m)
            same_xy(top.line(m), g["d"], g["vnmse"])
            same_xy(bottom.line(m), g["d"], g["encode_ms"])
            assert top.line(m).drawn_in(style.METHOD_COLORS[m])
        same(top.line("EDEN theory").y, [eden_theory.limit_vnmse(b)] * 2)
    ps7 = panels(figures.figure7(fig2))                  # b = 1 of (1, 3, 5, 7)
    assert len(ps7) == 2 and ps7[0].title == "b = 1"
    same_xy(ps7[0].line("QSGD"), _by(fig2, bits=1, method="QSGD")["d"], _by(fig2, bits=1, method="QSGD")["vnmse"])
    only4 = panels(figures.figure7(fig2[fig2["bits"] == 4]))  # none present: the frame's first budget
    assert len(only4) == 2 and only4[0].title == "b = 4"
    with pytest.raises(ValueError, match="panels"):
        figures.figure2(fig2, panels=())


def test_figure4_and_figure5():
    f4 = estimator.figure4(step=1.0, b_max=4.0)
    (p4,) = panels(figures.figure4(f4))
    assert p4.meta["yscale"] == "log"
    for col in ("EDEN, no EE", "Lloyd–Max + EE", "EDEN I_Δb + EE", "rate–distortion bound"):
        same_xy(p4.line(col), f4["b"], f4[col])
    f5 = sweeps.variable_length_sweep([1, 2], 64, laws=("normal", "lognormal"), trials=2)
    ps = panels(figures.figure5(f5))                     # one panel per law, in the frame's order
    assert [p.title for p in ps] == ["normal", "lognormal"]
    for p in ps:
        for m in pd.unique(f5["method"]):
            g = _by(f5, law=p.title, method=m)
            same_xy(p.line(m), g["bits_per_coord"], g["vnmse"])


def test_figure6_and_figure8():
    f6 = rotation.figure6([1, 2], [4, 5], ["normal", "uniform"], 2)
    ps = panels(figures.figure6(f6))                     # one panel per d
    assert [p.title for p in ps] == ["$d = 2^{4}$", "$d = 2^{5}$"]
    for p, d in zip(ps, (16, 32)):
        for law in ("normal", "uniform"):
            g = _by(f6, d=d, law=law)
            same_xy(p.line(law), g["bits"], g["vnmse"])
        th = _by(f6, d=d).drop_duplicates("bits")
        same_xy(p.line("theory"), th["bits"], th["theory"])
    f8 = rotation.figure8([1, 2], 16, 2, ["normal", "lognormal"], 1)
    ps = panels(figures.figure8(f8, 16, 2))              # one panel per law, in the frame's order
    assert [p.title for p in ps] == list(pd.unique(f8["law"])) and len(ps) == 2
    for p in ps:
        for m in pd.unique(f8["method"]):
            g = _by(f8, law=p.title, method=m)
            (points,) = [a for a in p.of("line", marker="o") if a.drawn_in(style.METHOD_COLORS[m])]
            same_xy(points, g["bits"], g["nmse"])       # the errorbar's data line (its bars are segments)
        same_xy(p.line("EDEN theory"), [1, 2], [eden_theory.expected_vnmse(16, b) / 2 for b in (1, 2)])
    assert [p.title for p in panels(figures.figure8(f8, 16, 2, laws=["lognormal"]))] == ["lognormal"]
    with pytest.raises(ValueError, match="laws"):
        figures.figure8(f8, 16, 2, laws=["cauchy"])
    with pytest.raises(ValueError, match="clients"):
        figures.figure8(f8, 16, 0)


def test_figure11_and_lemma22():
    f11 = sweeps.loss_subbit_sweep(64, [0.25, 0.5, 1.0], trials=2)
    (p,) = panels(figures.figure11(f11))
    for scheme in pd.unique(f11["scheme"]):
        g = _by(f11, scheme=scheme)
        same_xy(p.line(scheme), g["p"], g["vnmse"])
    th = f11.drop_duplicates("p")
    same_xy(p.line("theory π/(2p) − 1"), th["p"], th["theory"])
    sb = _by(f11, scheme=SUBBIT)
    same_xy(p.line("sub-bit, exact at this d"), sb["p"], sb["expected_padded"])
    het = subbit.heterogeneous([1.0, 2.0, 0.5], [0.0, 0.1, 0.0], 5, 2)
    homog = subbit.homogeneous(het["xs"], [1, 2, 3], 1)
    (p,) = panels(figures.lemma22(homog, het))
    same_xy(p.line("measured, b = 2"), homog["n"], homog["NMSE"])
    same_xy(p.line("vNMSE/n (Lemma 2.2)"), homog["n"], homog["vNMSE/n"])
    same(p.line("heterogeneous clients: Lemma 2.2").y, [het["theory"]] * 2)
    same(p.line("heterogeneous clients: measured").y, [het["measured"].mean()] * 2)
    with pytest.raises(TypeError, match="het"):
        figures.lemma22(homog, {"theory": 0.1})


# -- chapters eden/04 and eden/05: frames with the drivers' columns -----------------------------------------
def test_figure10_and_figure12():
    f10 = pd.DataFrame([{"method": m, "bits": b, "bits_sent_per_coord": b + 1.0, "distance": 0.1 / b + i, "ref_norm": 2.0}
                        for i, m in enumerate(METHODS) for b in (1.0, 4.0)])
    f12 = pd.DataFrame([{"dataset": "MNIST", "method": m, "bits": b, "error": 0.2 / b + i}
                        for i, m in enumerate(METHODS) for b in (1.0, 4.0)])
    (p10,) = panels(figures.figure10(f10))
    (p12,) = panels(figures.figure12(f12))
    for m in METHODS:
        same_xy(p10.line(m), _by(f10, method=m)["bits"], _by(f10, method=m)["distance"])
        same_xy(p12.line(m), _by(f12, method=m)["bits"], _by(f12, method=m)["error"])
        assert p10.line(m).drawn_in(style.METHOD_COLORS[m])
    with pytest.raises(ValueError, match="frame"):
        figures.figure10(f10.drop(columns="distance"))
    with pytest.raises(TypeError, match="frame"):
        figures.figure12(f12.to_dict())


def _history(methods_bits, rounds=6, eval_every=2):
    """Histories as :func:`qlib.repro.eden.learning.federated_runs` stacks them (the columns the figures read),
    each run's curves its own (an offset per run)."""
    rows = []
    for i, (m, b) in enumerate(methods_bits):
        for r in range(1, rounds + 1):
            evaluated = r % eval_every == 0
            rows.append({"round": r, "train_acc": 0.1 * r / rounds + 0.5 + 0.01 * i, "method": m, "bits": b,
                         "test_acc": 0.6 + 0.01 * r + 0.001 * i if evaluated else np.nan,
                         "global_train_acc": 0.55 + 0.01 * r - 0.001 * i if evaluated else np.nan})
    return pd.DataFrame(rows)


def test_figure14_and_figure13():
    runs = _history([("Float32", 0.05), ("EDEN", 0.05), ("QSGD", 0.05)])
    ps = panels(figures.figure14(runs, 2))               # training images, test images
    assert [p.title for p in ps] == ["global model, training images", "global model, test images"]
    (p13,) = panels(figures.figure13(runs))
    for m in ("Float32", "EDEN", "QSGD"):
        g = _by(runs, method=m)
        same_xy(ps[0].line(m), g["round"], fedavg.rolling_mean(g["global_train_acc"].interpolate(), 2))
        t = g.dropna(subset=["test_acc"])
        same_xy(ps[1].line(m), t["round"], t["test_acc"])
        same_xy(p13.line(m), t["round"], t["test_acc"])
    with pytest.raises(ValueError, match="window"):
        figures.figure14(runs, 0)


def test_figures_3_and_9_one_row_per_budget_one_column_per_task():
    runs = _history([("Float32", 32.0), ("EDEN", 0.1), ("Kashin+SQ", 0.1), ("EDEN", 4.0), ("Kashin+SQ", 4.0)])
    shk = runs.assign(train_acc=runs["train_acc"] / 2)
    base = _by(runs, method="Float32")
    for draw in (figures.figure3, figures.figure9):
        ps = panels(draw(runs, 2))                       # b = 0.1, 4; the MNIST stand-in only
        assert [p.meta["ylabel"] for p in ps] == ["b = 0.1", "b = 4"]
        for p, b in zip(ps, (0.1, 4.0)):
            same_xy(p.line("Float32"), base["round"], fedavg.rolling_mean(base["train_acc"], 2))
            for m in ("EDEN", "Kashin+SQ"):
                g = _by(runs, method=m, bits=b)
                same_xy(p.line(m), g["round"], fedavg.rolling_mean(g["train_acc"], 2))
    ps = panels(figures.figure9(runs, 2, shakespeare=shk))
    assert len(ps) == 2 * 2 and [ps[0].title, ps[1].title] == ["MNIST stand-in", "Shakespeare"]
    g = _by(shk, method="EDEN", bits=4.0)                # row b = 4, Shakespeare column
    same_xy(ps[3].line("EDEN"), g["round"], fedavg.rolling_mean(g["train_acc"], 2))
    zoom = panels(figures.figure3(runs, 2, bits=[4.0]))
    assert len(zoom) == 1 and zoom[0].meta["xlim"] == [3.0, 6.0]  # the last half of the rounds
    with pytest.raises(ValueError, match="bits"):
        figures.figure9(runs, 2, bits=[])
    with pytest.raises(ValueError, match="frame"):
        figures.figure3(runs[runs["method"] == "Float32"], 2)
    assert n_axes(figures.figure13(runs)) == 1
