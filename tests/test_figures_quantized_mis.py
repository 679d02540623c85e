"""The figures and table displays of the quantized-MIS chapters (``qlib.repro.quantized_mis.figures``):
each figure function draws a small input with the study's columns (a real tiny study, or a frame built by
hand) into the expected panels, plotting exactly the input's values (read back with the archive's figure
capture; pies and heatmaps, which it does not keep, from their patches), and each rejects a wrong input
by name."""

from __future__ import annotations

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from figure_helpers import close_figures, n_axes, panels, same, same_xy  # noqa: F401 (the fixture is autouse)

import qlib.mia as mia  # noqa: E402
from qlib import quantizers  # noqa: E402
from qlib.repro.ledger import Item, claim, close, not_comparable  # noqa: E402
from qlib.repro.quantized_mis import figures, molecular_claims, ranking_claims, study, synthetic_claims, theory  # noqa: E402
from qlib.repro.quantized_mis.paper import PAPER_QUANTIZERS  # noqa: E402


@pytest.fixture
def tiny(qmis_tiny_study):
    return qmis_tiny_study


@pytest.fixture
def stab(tiny):
    return ranking_claims.stability(tiny, [2, 3, 5], 4, 2, seed=0)


# ------------------------------------------------------------------------------------ chapter 01
def test_figure5_one_panel_per_quantizer():
    fig = figures.figure5(torch.linspace(-1, 1, 101, dtype=torch.float64))
    assert n_axes(fig) == 8
    assert [ax.get_title() for ax in fig.axes][:2] == ["Sign", "1.58b 33%"]
    grid = torch.linspace(-1, 1, 101, dtype=torch.float64)
    for p, name in zip(panels(fig), [n for n in quantizers.names() if n != "identity"]):
        same_xy(p.line("identity"), grid, grid)
        same_xy(p.line("printed formula (default)"), grid, quantizers.get(name)(grid))
        if name.startswith("bits"):
            same_xy(p.line("capped variant"), grid, quantizers.get(name, variant="capped")(grid))
    with pytest.raises(ValueError, match=r"\bgrid\b"):
        figures.figure5(torch.zeros(2, 3, dtype=torch.float64))


def test_table1_and_scope_table():
    thetas = torch.randn(4, 33, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    t = figures.table1(thetas)
    assert {"quantizer", "Q(θ)_j", "levels (max)", "levels (capped variant, max)", "zeros requested"} <= set(t.columns)
    assert "name" not in t.columns and len(t) == 9
    torch.manual_seed(0)
    s = figures.scope_table(torch.nn.Linear(8, 1).double())
    assert list(s.columns) == ["quantizer", "weights that differ", "bias (per tensor)", "bias (whole model)"]
    assert len(s) == 8
    with pytest.raises(TypeError, match=r"\bmodel\b"):
        figures.scope_table("linear")
    with pytest.raises(ValueError, match=r"\bmodel\b"):
        figures.scope_table(torch.nn.Linear(8, 2))


def test_variant_text_names_the_paper_scale():
    text = figures.variant_text({"laws": 3, "runs": 10, "epochs": 300, "rho": 0.912, "max_acc_change": 0.004})
    assert text.startswith("3 laws × 10 runs × 300 epochs (the paper: 9 × 300 × 3000)") and "0.912" in text
    with pytest.raises(TypeError, match=r"\bsummary\b"):
        figures.variant_text({"laws": 3})


# ------------------------------------------------------------------------------------ chapter 02
P3 = np.array([0.5, 0.3, 0.2])
TOY_A = np.array([[0.0, 1.0, 0.3], [0.8, 0.1, 0.0], [0.5, 0.5, 0.9]])
W = np.array([[0.4, -1.0, 0.5], [-0.4, 0.2, 0.7]])


def test_theorem_figures():
    fixed = {"toy": (theory.rate_table(TOY_A, P3, [10, 20, 40]), mia.chernoff_rate(TOY_A, P3))}
    (p,) = panels(figures.theorem31_figure(fixed))
    t, c = fixed["toy"]
    same_xy(p.line("toy: exact"), t["n"], t["−log Δ_n / n"])
    same_xy(p.line("toy: + (½ log n)/n"), t["n"], t["corrected"])
    same(p.of("line", ls=":")[0].y, [c, c])                                  # the constant C_P^1

    def adaptive(n):
        return np.vstack([np.zeros(3), W[0] + n ** -0.25, W[1] + 2 * n ** -0.25])

    ad, g = theory.adaptive_table(adaptive, P3, [16, 32, 64], 0.25)
    (p,) = panels(figures.theorem33_figure(ad, g.rate))
    for col in ("ratio", "corrected", "C_P^1(n)/δ_2²"):
        same_xy(p.line(col), ad["n"], ad[col])
    same(p.line(r"$1/(2\sigma^2)$").y, [g.rate, g.rate])
    with pytest.raises(TypeError, match=r"\bfixed\b"):
        figures.theorem31_figure({})
    with pytest.raises(ValueError, match=r"\bad\b"):
        figures.theorem33_figure(ad.drop(columns="corrected"), g.rate)
    with pytest.raises(ValueError, match=r"\btarget\b"):
        figures.theorem33_figure(ad, -1.0)


# ------------------------------------------------------------------------------------ chapter 03
def test_study_figures_from_a_tiny_study(tiny):
    laws = len(tiny.config["grid"])                                        # 2 laws: one row of three panels
    assert "laws × 8 quantizers" in figures.study_text(tiny, "cpu") and "noisier" in figures.study_text(tiny, "cpu")
    assert n_axes(figures.figure8(tiny.config, seed=0, n_points=50)) == 3
    rho = synthetic_claims.spearman_table(tiny)
    assert n_axes(figures.figure2(tiny, rho)) == 3
    Q = len(tiny.names)
    for statistic, base in (("mean", tiny.disc_mis), ("median", tiny.thr_mis)):
        ps = panels(figures.figure2(tiny, rho, statistic=statistic))
        assert len(ps) == 3 and not ps[2].artists                          # one row of three, the third empty
        r = tiny.r_summary(statistic)
        for li, p in enumerate(ps[:laws]):
            points = [a for a in p.of("line", marker="o") if not a.label]  # each quantizer's errorbar point
            assert len(points) == Q
            for qi, point in enumerate(points):
                same_xy(point, [base[li, 1 + qi]], [r[li, qi]])
    (p6,) = panels(figures.figure6(tiny))
    rel = tiny.acc_val[:, 1:].mean(axis=2) / tiny.acc_val[:, :1].mean(axis=2)
    r_mean = tiny.r_summary("mean")
    for qi, q in enumerate(tiny.names):
        (points,) = p6.of("points", label=quantizers.labels()[q])
        same_xy(points, rel[:, qi], r_mean[:, qi])
    t2 = figures.table2(study.table2(tiny))
    assert len(t2) == laws and list(t2.columns[:2]) == ["σ", "modes"] and "Sign" in t2.columns
    assert "paper" in t2["Sign"].iloc[0]
    _rows, t2s = synthetic_claims.table2_rows(tiny)
    assert "quantized cells within" in figures.table2_text(t2s, tiny)
    assert "µs per model-epoch" in figures.cost_text(tiny)
    with pytest.raises(ValueError, match=r"\bstatistic\b"):
        figures.figure2(tiny, rho, statistic="mode")
    with pytest.raises(TypeError, match=r"\bres\b"):
        figures.figure6(rho)
    with pytest.raises(ValueError, match=r"\bn_points\b"):
        figures.figure8(tiny.config, n_points=0)


def test_figure8_draws_the_nine_laws_in_three_rows():
    from qlib import synthetic

    config = {"grid": [list(g) for g in synthetic.GRID], "law_seed": 0, "centre_scale": synthetic.CENTRE_SCALE}
    fig = figures.figure8(config, n_points=20)
    assert n_axes(fig) == 9 and tuple(fig.get_size_inches()) == (10, 9)
    from sklearn.decomposition import PCA

    laws = synthetic.make_laws(0, grid=[tuple(g) for g in synthetic.GRID], centre_scale=synthetic.CENTRE_SCALE)
    xs, ys = synthetic.sample(laws, 20, torch.Generator().manual_seed(7))
    for p, x, label in zip(panels(fig), xs, synthetic.law_labels(synthetic.GRID)):
        (points,) = p.of("points")
        assert p.title == label
        same(points.data, PCA(2, random_state=0).fit_transform(x.numpy()))  # each law's points, projected


def test_figure2_readings_from_a_frame_with_its_columns():
    cols = {f"ρ(r mean, {b}), {r} reading": [0.8, 0.6, 0.7] for b in ("discriminator", "threshold")
            for r in ("text", "Table 1")}
    cols["ρ(r mean, threshold), Table 1 reading"] = [0.5, 0.4, 0.45]
    f2r = pd.DataFrame({"law": ["σ=1.5, 6 modes", "σ=3, 16 modes", "mean"], **cols})
    ps = panels(figures.figure2_readings(f2r))
    assert [p.title for p in ps] == ["vs discriminator MIS", "vs threshold MIS"]
    for p, base in zip(ps, ("discriminator", "threshold")):                # per law: the text bar, the Table 1 bar
        widths = [f2r[f"ρ(r mean, {base}), {r} reading"].iloc[:2] for r in ("text", "Table 1")]
        same(p.bars()[:, 2], np.concatenate(widths))
    with pytest.raises(ValueError, match=r"\bf2r\b"):
        figures.figure2_readings(f2r.drop(columns="law"))
    rows = [close(Item("Figure 2", "mean ρ", 0.86), 0.8, atol=0.1, kind="theory-check"),
            not_comparable(Item("Figure 2", "ρ", 0.86), reason="no discriminator", kind="theory-check")]
    text = figures.figure2_readings_text(rows)
    assert "0.800 against 0.860" in text and "not comparable (no discriminator)" in text


# ------------------------------------------------------------------------------------ chapter 04
def test_ranking_figures(tiny, stab):
    runs = tiny.config["runs"]
    (p,) = panels(figures.figure7(stab, runs))
    for col, st in stab["st"].items():
        s = st["spearman"].reshape(len(stab["k_runs"]), -1)
        same_xy(p.line(col), stab["k_runs"], np.nanmean(s, axis=1))
    pies = figures.figure1_pies(stab, tiny, law=1, k_runs=[2, 5, 50])
    assert n_axes(pies) == 8 * 2                                            # k_run 50 not tried
    ranks = stab["st"]["r_Q^n mean"]["ranks"][:, :, 1]
    for j, k in enumerate((2, 5)):                                          # a pie's wedges: its counts
        ki = stab["k_runs"].index(k)
        for rk in range(1, 9):
            counts = np.array([(np.rint(ranks[ki, :, q]) == rk).sum() for q in range(8)])
            wedges = pies.axes[(rk - 1) * 2 + j].patches
            spans = np.array([w.theta2 - w.theta1 for w in wedges])
            np.testing.assert_allclose(spans, 360 * counts / counts.sum(), rtol=1e-12)
    conf = {k: ranking_claims.confusion(stab, k) for k in (2, 20)}
    assert conf[20] is None
    fig = figures.figure1_confusion(conf, runs)
    assert n_axes(fig) == 2 and not fig.axes[1].axison
    same(fig.axes[0].collections[0].get_array(), conf[2])                  # the heatmap's cells
    with pytest.raises(ValueError, match=r"\blaw\b"):
        figures.figure1_pies(stab, tiny, law=2)
    with pytest.raises(ValueError, match=r"\bk_runs\b"):
        figures.figure1_pies(stab, tiny, law=0, k_runs=[50])
    with pytest.raises(TypeError, match=r"\bstab\b"):
        figures.figure7({}, runs)
    with pytest.raises(ValueError, match=r"\bruns\b"):
        figures.figure1_confusion(conf, 0)


# ------------------------------------------------------------------------------------ chapter 05
def _tradeoff(groups, key="task"):
    rng = np.random.default_rng(0)
    return pd.DataFrame([{key: g, "quantizer": q, "r_q": 10 ** rng.uniform(-4, -1), "relative": rng.uniform(0.5, 1),
                          "value": 0.7} for g in groups for q in PAPER_QUANTIZERS])


@pytest.mark.parametrize("n_groups, axes", [(1, 1), (2, 2), (3, 3), (4, 4), (5, 6)])
def test_tradeoff_figures(n_groups, axes):
    frame = _tradeoff([f"Task_With_A_Long_Name_{i}" for i in range(n_groups)])
    frame.loc[::3, "relative"] = -2.5                                      # below figure 4's clip
    assert n_axes(figures.figure3(frame)) == axes
    assert n_axes(figures.figure4(frame)) == axes
    labels = quantizers.labels()
    for draw, clip in ((figures.figure3, None), (figures.figure4, (-1, 1.1))):
        ps = panels(draw(frame))
        assert len(ps) == axes and not any(p.artists for p in ps[n_groups:])  # the spare panels are empty
        for p, task in zip(ps, pd.unique(frame["task"])):
            for q in PAPER_QUANTIZERS:
                s = frame[(frame["task"] == task) & (frame["quantizer"] == q)]
                (points,) = p.of("points", label=labels[q])
                same_xy(points, s["r_q"], s["relative"].clip(*clip) if clip else s["relative"])
    emb = _tradeoff(["maccs", "morgan"][:min(n_groups, 2)], "embedder")
    ps = panels(figures.figure9(emb))
    assert [p.title for p in ps] == [f"embedder {e}" for e in pd.unique(emb["embedder"])]
    s = emb[(emb["embedder"] == "maccs") & (emb["quantizer"] == "sign")]
    same_xy(ps[0].of("points", label=labels["sign"])[0], s["r_q"], s["relative"])


def test_tradeoff_figure_rejects_a_frame_without_its_columns():
    with pytest.raises(ValueError, match=r"\bframe\b"):
        figures.figure3(pd.DataFrame({"task": ["a"], "quantizer": ["sign"]}))
    with pytest.raises(ValueError, match=r"\bframe\b"):
        figures.figure4(_tradeoff([]))


def test_figure10_two_rows_per_task():
    g = torch.Generator().manual_seed(0)
    prof = molecular_claims.lambda_profiles(torch.rand(6, 8, 2, 5, generator=g, dtype=torch.float64))
    fig = figures.figure10({"AMES": prof, "DILI": prof})
    assert n_axes(fig) == 4
    ps = panels(fig)                                                       # top row Λ_kk, bottom row argmax
    labels = quantizers.labels()
    am = prof.drop_duplicates(["quantizer", "run"])
    counts, _ = np.histogram(am.argmax_k[am.argmax_k > 0], bins=30)
    for j in (0, 1):
        for q in PAPER_QUANTIZERS:
            s = prof[(prof.quantizer == q) & (prof.run == 0)]
            same_xy(ps[j].line(labels[q]), s.k, s.lam)
        same(ps[2 + j].bars()[:, 3], counts)
    with pytest.raises(TypeError, match=r"\bprofiles\b"):
        figures.figure10({})


# ------------------------------------------------------------------------------------ chapter 06
def test_table3_probe_displays():
    df = pd.DataFrame([{"variant": v, "task": "DILI", "quantizer": q, "relative": 0.9}
                       for v in ("default", "deep") for q in ("bits2", "sign", "identity")])
    wide = figures.relative_table(df)
    assert list(wide.columns) == ["variant", "task", "sign", "bits2"] and len(wide) == 2
    ok = claim(Item("Table 3 pattern, variant deep", "pattern", "holds"), "holds", True)
    no = claim(Item("Table 3 pattern, variant default", "pattern", "holds"), "no", False)
    assert figures.passing_text([ok, no]).endswith("`deep`.")
    assert figures.passing_text([no]).endswith("none.")
    with pytest.raises(ValueError, match=r"\bdf\b"):
        figures.relative_table(df.drop(columns="relative"))
