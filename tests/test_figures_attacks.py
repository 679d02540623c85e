"""The figures of the attacks chapters (``qlib.repro.attacks.figures``): each figure function draws a small
input with its driver's columns — the toys' driver at a tiny size (a fraction of a second), the other
studies' results built by hand with the exact columns their analyses return — into the expected panels,
plotting exactly the input's values (read back with the archive's figure capture: each curve's points
are the frame's, or the ROC curve of the scores it was given), and each rejects a wrong input by name."""

from __future__ import annotations

from types import SimpleNamespace  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from figure_helpers import close_figures, n_axes, panels, same, same_xy  # noqa: F401 (the fixture is autouse)

from qlib import quantizers  # noqa: E402
from qlib.attacks import dp_bound, metrics  # noqa: E402
from qlib.repro.attacks import figures, molecular, protocol, synthetic, toys  # noqa: E402

QUANTS = ["sign", "ternary50", "bits4"]  # three quantizers of qlib.quantizers
MARKS = "osD"  # the scatter figures' markers of the first three quantizers


def _data_lines(panel, markers):
    """An errorbar's data line: its marker is one of ``markers`` (its caps are ``|`` and ``_``), no label."""
    return [a for a in panel.of("line") if a.info["marker"] in markers and not a.label]


@pytest.fixture(scope="module")
def studies():
    kw = dict(shadows=4, pairs=200, min_targets=4, reps=3, seed=0)
    return {"empirical": toys.attack_study(toys.empirical_toy(toys.zipf_law(4)), [10, 20, 40],
                                           toys.AttackStudyConfig(**kw)),
            "erm": toys.attack_study(toys.erm_toy(), [5, 10], toys.AttackStudyConfig(**kw))}


# ------------------------------------------------------------------------------------ chapter 01
def test_advantage_two_panels(studies):
    fig = figures.advantage(studies)
    assert n_axes(fig) == 2
    assert [ax.get_title() for ax in fig.axes] == [studies["empirical"].toy.name, studies["erm"].toy.name]
    for p, key in zip(panels(fig), ("empirical", "erm")):
        t = studies[key].table
        o = t[t["attack"] == toys.ORACLE]
        same_xy(p.line(r"exact $\Delta_n$ (the limit)"), o["n"], o["delta"])
        same_xy(p.line("theory's bound"), o["n"], o["bound"])
        lines = _data_lines(p, "os")
        assert len(lines) == len(toys.ATTACKS)
        for i, (a, line) in enumerate(zip(toys.ATTACKS, lines)):
            d = t[t["attack"] == a]
            adv = 2 * d["accuracy"].to_numpy() - 1
            same(line.y, np.where(adv > 0, adv, np.nan))   # an advantage <= 0 is not drawn on the log axis
            shift = d["n"].to_numpy() * (1 + 0.03 * (i - 3)) if key == "empirical" else d["n"].to_numpy() + 0.6 * (i - 3)
            same(line.x, shift)                            # the attacks side by side at each n
    with pytest.raises(TypeError, match=r"\bstudies\b"):
        figures.advantage({"empirical": studies["empirical"]})
    bad = SimpleNamespace(table=studies["erm"].table.drop(columns="delta"), toy=studies["erm"].toy)
    with pytest.raises(ValueError, match=r"studies\['erm'\]\.table.*delta"):
        figures.advantage({**studies, "erm": bad})


def test_toy_roc_one_axes_and_its_fallback_size(studies):
    fig = figures.toy_roc(studies["empirical"], 20)
    assert n_axes(fig) == 1 and fig.axes[0].get_title() == "empirical law, n = 20"
    (p,) = panels(fig)
    for a in toys.ATTACKS:
        s, m, _ = studies["empirical"].scores[(20, a)]
        fpr, tpr, _ = metrics.roc_curve(s, m)
        same_xy(p.line(a), fpr, tpr)
    assert figures.toy_roc(studies["empirical"], 7).axes[0].get_title() == "empirical law, n = 20"  # the middle size
    with pytest.raises(ValueError, match=r"\bn\b"):
        figures.toy_roc(studies["empirical"], 0)


# ------------------------------------------------------------------------------------ chapter 02
def _synthetic_analysis(laws=9) -> synthetic.SyntheticAnalysis:
    rng = np.random.default_rng(0)
    law_names = [f"law {i}" for i in range(laws)]
    rows = []
    for law in law_names:
        for q in [synthetic.REFERENCE, *QUANTS]:
            adv = float(rng.uniform(0, 0.2))
            r = np.nan if q == synthetic.REFERENCE else float(rng.uniform(1e-4, 1e-3))
            rows.append({"law": law, "quantizer": q, "r": r, "r_lo": r * 0.8, "r_hi": r * 1.2, "theory": np.exp(-128 * r),
                         **{a: adv for a in protocol.ATTACKS}, "strongest": protocol.ATTACKS[0], "advantage": adv,
                         "advantage_lo": adv - 0.05, "advantage_hi": adv + 0.05, "auc": 0.5 + adv / 2,
                         "tpr@0.01": 0.01, "disc": adv / 2, "disc_lo": 0.0, "disc_hi": adv,
                         "gap": 0.0, "gap_lo": 0.0, "gap_hi": 0.0})
    per_law = pd.DataFrame({"law": law_names, "rho": 0.5, "rho_lo": 0.2, "rho_hi": 0.8,
                            "rho_seeds": [[0.4, 0.6]] * laws, "rho_seed_sd": 0.1, "rho_disc": 0.3})
    pooled = {"rho": 0.5, "rho_lo": 0.3, "rho_hi": 0.7, "p": 0.01, "crit": 0.25}
    return synthetic.SyntheticAnalysis(per_quantizer=pd.DataFrame(rows), per_law=per_law, pooled=pooled,
                                       settings={"reps": 5, "level": 0.95, "draws": 20, "alpha": 0.05, "seed": 0})


def test_synthetic_scatter_one_panel_per_law():
    a = _synthetic_analysis()
    fig = figures.synthetic_scatter(a, 128)
    assert n_axes(fig) == 9
    assert [ax.get_title() for ax in fig.axes] == [f"law {i}" for i in range(9)]
    pq = a.per_quantizer
    for p in panels(fig):
        d = pq[pq["law"] == p.title]
        ident = d[d["quantizer"] == synthetic.REFERENCE].iloc[0]
        same(p.line("unquantized (strongest attack)").y, [ident["advantage"]] * 2)
        for i, q in enumerate(QUANTS):
            r = d[d["quantizer"] == q].iloc[0]
            point, hollow = _data_lines(p, MARKS[i])       # the strongest attack (filled), the discriminator (hollow)
            same_xy(point, [1e3 * r["r"]], [r["advantage"]])
            same_xy(hollow, [1e3 * r["r"]], [r["disc"]])
        grid = np.linspace(0, d["r"].max() * 1.1, 200)
        same_xy(p.line(r"theory's order $e^{-n r_Q^n}$"), 1e3 * grid, np.exp(-128 * grid))
    with pytest.raises(ValueError, match=r"analysis\.per_quantizer.*disc"):
        figures.synthetic_scatter(SimpleNamespace(per_quantizer=a.per_quantizer.drop(columns="disc")), 128)
    with pytest.raises(ValueError, match=r"\bn\b"):
        figures.synthetic_scatter(a, -1)


def test_synthetic_rho_one_axes():
    a = _synthetic_analysis()
    fig = figures.synthetic_rho(a)
    assert n_axes(fig) == 1
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == [f"law {i}" for i in range(9)]
    (p,) = panels(fig)
    pl, y = a.per_law, np.arange(9)
    (per_law,) = _data_lines(p, "o")
    same_xy(per_law, pl["rho"], y)
    seeds = [line for line in p.of("line") if line.info["marker"] == "."]
    for j, line in enumerate(seeds):
        same_xy(line, pl["rho_seeds"].iloc[j], [j + 0.22] * 2)
    assert len(seeds) == 9
    same_xy(p.line("ρ of the discriminator estimate"), pl["rho_disc"], y - 0.22)
    same(p.bars()[0], [a.pooled["rho_lo"], 0, a.pooled["rho_hi"] - a.pooled["rho_lo"], 1])  # the pooled interval
    with pytest.raises(TypeError, match=r"\banalysis\b"):
        figures.synthetic_rho(pd.DataFrame())


# ------------------------------------------------------------------------------------ chapter 03
def _molecular(tasks=("Task_A", "Task_B")):
    """A study (the attributes the figures read) and a real MolecularAnalysis with analyse's columns."""
    rng = np.random.default_rng(1)
    attacked = [synthetic.REFERENCE, *QUANTS]
    A, P, K, N = len(attacked), len(protocol.ATTACKS), 4, 12
    keep = np.zeros((K, N), dtype=bool)
    keep[0::2, : N // 2] = keep[1::2, N // 2:] = True  # complementary halves
    runs = [SimpleNamespace(task=t, keep=keep, scores=rng.normal(size=(A, P, K, N))) for t in tasks]
    study = SimpleNamespace(tasks=runs, names=list(QUANTS), attacked=attacked)
    rows = []
    for t in tasks:
        for i, q in enumerate(attacked):
            r = np.nan if i == 0 else 1e-3 * i
            tpr = 0.05 / (i + 1)
            rows.append({"task": t, "quantizer": q, "r": r, "r_lo": r * 0.9, "r_hi": r * 1.1, "theory": np.exp(-6 * r),
                         "strongest": protocol.ATTACKS[i % P], "tpr@0.01": tpr, "tpr@0.01_lo": tpr / 2,
                         "tpr@0.01_hi": tpr * 2, "tpr@0.001": tpr / 10, "auc": 0.55, "advantage": 0.05,
                         "advantage_lo": 0.0, "advantage_hi": 0.1, "drop": 0.0, "drop_lo": 0.0, "drop_hi": 0.0,
                         "gap": 0.0, "gap_lo": 0.0, "gap_hi": 0.0})
    analysis = molecular.MolecularAnalysis(
        per_quantizer=pd.DataFrame(rows), per_task=pd.DataFrame({"task": list(tasks)}), pooled={},
        exposure={t: rng.uniform(size=(A, N)) for t in tasks}, settings={})
    return analysis, study


def test_molecular_roc_draws_each_models_strongest_attack():
    analysis, study = _molecular()
    pq, labels = analysis.per_quantizer, quantizers.labels()
    for p, ta in zip(panels(figures.molecular_roc(analysis, study)), study.tasks):
        lo = 0.5 / int((~ta.keep).sum())
        for a, q in enumerate(study.attacked):
            best = pq[(pq["task"] == ta.task) & (pq["quantizer"] == q)]["strongest"].iloc[0]
            fpr, tpr, _ = metrics.roc_curve(ta.scores[a, protocol.ATTACKS.index(best)].ravel(), ta.keep.ravel())
            same_xy(p.line("unquantized" if a == 0 else labels[q]), np.maximum(fpr, lo), np.maximum(tpr, lo))


def test_molecular_rq_draws_each_quantizers_tpr_against_its_rate():
    analysis, study = _molecular()
    pq = analysis.per_quantizer
    for p, ta in zip(panels(figures.molecular_rq(analysis, study)), study.tasks):
        d = pq[pq["task"] == ta.task].set_index("quantizer")
        same(p.line("unquantized").y, [d.loc["identity", "tpr@0.01"]] * 2)
        for i, q in enumerate(study.names):
            (point,) = _data_lines(p, MARKS[i])
            same_xy(point, [1e3 * d.loc[q, "r"]], [d.loc[q, "tpr@0.01"]])


def test_molecular_exposure_draws_the_exposure_histograms():
    # a step histogram is a Polygon, which the archive's capture does not keep: read the patches themselves
    analysis, study = _molecular()
    fig = figures.molecular_exposure(analysis, study)
    for ax, ta in zip(fig.axes, study.tasks):
        e = analysis.exposure[ta.task]
        (unquantized,) = [h for h in ax.patches if h.get_label() == "unquantized"]
        counts, _ = np.histogram(e[0], bins=np.linspace(0, 1, 17), weights=np.full(e.shape[1], 1 / e.shape[1]))
        steps = unquantized.get_xy()[1:-1:2, 1]          # the top of each bin, left to right
        same(steps, counts)


@pytest.mark.parametrize("draw", [figures.molecular_roc, figures.molecular_rq, figures.molecular_exposure])
def test_molecular_figures_one_panel_per_task(draw):
    analysis, study = _molecular()
    fig = draw(analysis, study)
    assert n_axes(fig) == 2
    assert [ax.get_title() for ax in fig.axes] == ["Task A", "Task B"]
    one_a, one_s = _molecular(("Only_Task",))
    assert n_axes(draw(one_a, one_s)) == 1
    with pytest.raises(ValueError, match=r"\bstudy\b"):
        draw(analysis, SimpleNamespace(tasks=[], names=study.names, attacked=study.attacked))
    with pytest.raises(TypeError, match=r"\bstudy\b"):
        draw(analysis, {"tasks": study.tasks})


# ------------------------------------------------------------------------------------ chapter 04
def test_dp_roc_one_panel_per_canary_and_method():
    rng = np.random.default_rng(2)
    runs = 50
    rows, scores = [], {}
    for key, delta in (("dpsgd", 1e-7), ("rqp", 0.0)):
        for eps in (0.5, 1.0):
            for kind in ("typical", "worst"):
                rows.append({"method": key.upper(), "key": key, "eps": eps, "delta": delta, "canary": kind})
                scores[(key, eps, kind)] = (rng.normal(size=2 * runs), np.r_[np.ones(runs, bool), np.zeros(runs, bool)])
    result = SimpleNamespace(table=pd.DataFrame(rows), scores=scores)
    fig = figures.dp_roc(result, runs)
    assert n_axes(fig) == 4
    assert fig.axes[0].get_title() == "DP-SGD, typical canary" and fig.axes[3].get_title() == "RQP-SGD, worst canary"
    alpha = np.logspace(np.log10(0.5 / runs), 0, 400)
    for p, (kind, key) in zip(panels(fig), [("typical", "dpsgd"), ("typical", "rqp"), ("worst", "dpsgd"), ("worst", "rqp")]):
        for eps in (0.5, 1.0):
            fpr, tpr, _ = metrics.roc_curve(*scores[(key, eps, kind)])
            same_xy(p.line(f"attack, ε = {eps:g}"), fpr, tpr)
            delta = 1e-7 if key == "dpsgd" else 0.0
            same_xy(p.line(f"region boundary, ε = {eps:g}"), alpha, dp_bound.tpr_bound(alpha, eps, delta))
    with pytest.raises(ValueError, match=r"\bruns\b"):
        figures.dp_roc(result, 0)
    with pytest.raises(ValueError, match=r"result\.table.*delta"):
        figures.dp_roc(SimpleNamespace(table=result.table.drop(columns="delta"), scores=scores), runs)
