"""Chapter attacks/03: LiRA and the loss threshold on paper 001's molecular MLPs (qlib.repro.attacks.molecular,
molecular_claims) and the protocol shared with chapter 02 (qlib.repro.attacks.protocol). Tiny sizes on the real
offline TDC files; every number a real check."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from qlib.attacks import lira, metrics
from qlib.repro.attacks import molecular, molecular_claims, protocol, synthetic

TINY = dict(tasks=("Carcinogens_Lagunin",), models=8, epochs=20, names=("sign", "ternary90", "bits2", "bits4"))


# ---- the shared protocol --------------------------------------------------------------------------------
def test_halves_are_whole_complementary_pairs():
    h = protocol.halves(12)
    assert h.tolist() == [0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1]
    with pytest.raises(ValueError, match="K must be a multiple of 4"):
        protocol.halves(10)


def test_finite_scores_keeps_order_and_ranks_undefined_lowest():
    s = np.array([0.5, np.nan, np.inf, -np.inf, -1.0])
    f = protocol.finite_scores(s)
    assert np.isfinite(f).all()
    assert f[2] > f[0] > f[4] > f[3] > f[1]                  # +inf above, NaN below everything, -inf above NaN
    same = np.array([1.0, 2.0])
    assert protocol.finite_scores(same) is not None and np.array_equal(protocol.finite_scores(same), same)


def test_attack_scores_are_the_lira_functions_with_the_other_half_as_shadows():
    rng = np.random.default_rng(0)
    K, N = 8, 6
    from qlib.attacks import shadow
    keep = shadow.paired_keep(K, N, seed=1)
    phi = rng.normal(size=(K, N)) + keep
    sc = protocol.attack_scores(phi, keep)
    h = protocol.halves(K)
    tgt, sh = h == 0, h == 1
    np.testing.assert_allclose(sc[0], -np.logaddexp(0.0, -phi))                    # minus the loss
    np.testing.assert_allclose(sc[2, tgt], lira.lira_online(phi[tgt], phi[sh], keep[sh], fix_variance=True))
    np.testing.assert_allclose(sc[1, sh], lira.lira_offline(phi[sh], phi[tgt], keep[tgt], fix_variance=True,
                                                            tail="one-sided"))
    with pytest.raises(ValueError, match="keep must be a boolean array"):
        protocol.attack_scores(phi, keep.astype(int))
    with pytest.raises(ValueError, match="half must be"):
        protocol.attack_scores(phi, keep, np.zeros(K))


def test_held_out_correct_is_perfect_on_separable_scores_and_checks_input():
    keep = np.tile([True, False], (4, 3))
    scores = keep.astype(float) + 0.01 * np.arange(6)
    assert protocol.held_out_correct(scores, keep).tolist() == [6] * 4
    with pytest.raises(ValueError, match="at least 2 targets"):
        protocol.held_out_correct(scores[:1], keep[:1])


# ---- weighted TPR and exposure ---------------------------------------------------------------------------
def test_weighted_tpr_equals_the_roc_of_repeated_pairs():
    rng = np.random.default_rng(5)
    K, N = 6, 40
    scores = np.round(rng.normal(size=(K, N)), 1)              # ties on purpose
    keep = rng.random((K, N)) < 0.5
    keep[:, 0], keep[:, 1] = True, False
    w = np.vstack([np.ones(K), rng.integers(0, 3, size=K)])
    w[1, 0] = max(w[1, 0], 1)
    got = molecular.weighted_tpr(scores, keep, w, levels=(0.01, 0.1, 0.3))
    for b in range(2):
        rep = np.repeat(np.arange(K), w[b].astype(int))
        s, m = scores[rep].ravel(), keep[rep].ravel()
        want = [metrics.tpr_at_fpr(s, m, lv) for lv in (0.01, 0.1, 0.3)]
        np.testing.assert_allclose(got[b], want, atol=1e-12)


def test_weighted_tpr_checks_its_input():
    s, m = np.zeros((3, 4)), np.ones((3, 4), dtype=bool)
    with pytest.raises(ValueError, match="weights must be non-negative"):
        molecular.weighted_tpr(s, m, -np.ones((1, 3)))
    with pytest.raises(ValueError, match="weights must have one column per target"):
        molecular.weighted_tpr(s, m, np.ones((1, 4)))
    with pytest.raises(ValueError, match="no member or no non-member"):
        molecular.weighted_tpr(s, m, np.ones((1, 3)))
    with pytest.raises(ValueError, match="members must be a boolean array"):
        molecular.weighted_tpr(s, m.astype(int), np.ones((1, 3)))


def test_exposure_by_hand():
    # 4 targets × 3 examples; members score 10, non-members 0, except example 2's second member (score 0)
    keep = np.array([[1, 0, 1], [0, 1, 1], [1, 0, 0], [0, 1, 0]], dtype=bool)
    s = np.where(keep, 10.0, 0.0)
    s[1, 2] = 0.0
    e = molecular.exposure(s, keep, level=0.0)                 # threshold 10: no false positive
    np.testing.assert_allclose(e, [1.0, 1.0, 0.5])
    no_member = keep.copy()
    no_member[:, 0] = False
    with pytest.raises(ValueError, match="every example"):
        molecular.exposure(s, no_member)


# ---- the statistics both analyses share --------------------------------------------------------------------
def test_analysis_config_checks_its_fields():
    cfg = protocol.AnalysisConfig(reps=5, seed=3)
    assert cfg.as_dict() == {"reps": 5, "level": 0.95, "draws": 10_000, "alpha": protocol.ALPHA, "seed": 3}
    for bad, name in (({"reps": 0}, "reps"), ({"level": 1.0}, "level"), ({"draws": 0}, "draws"),
                      ({"alpha": 0.0}, "alpha"), ({"seed": -1}, "seed")):
        with pytest.raises(ValueError, match=name):
            protocol.AnalysisConfig(**bad)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.reps = 6


def test_bootstrap_weights_data_first_then_multinomial_resamples():
    w = protocol.bootstrap_weights(np.random.default_rng(4), 6, 50, shape=(2, 3))
    assert w.shape == (2, 3, 51, 6) and w.dtype == np.float64
    assert (w[..., 0, :] == 1).all() and (w.sum(axis=-1) == 6).all()
    draws = np.random.default_rng(4).multinomial(6, np.full(6, 1 / 6), size=(2, 3, 50))
    np.testing.assert_array_equal(w[..., 1:, :], draws)                 # the generator's draws, in order
    assert protocol.bootstrap_weights(np.random.default_rng(4), 6, 5).shape == (6, 6)
    with pytest.raises(TypeError, match="rng"):
        protocol.bootstrap_weights(4, 6, 5)


def test_resampled_advantage_and_r_are_the_weighted_means():
    K, A, P, pairs = 4, 2, 3, 10
    correct = np.arange(A * P * K).reshape(A, P, K) % (pairs + 1)
    w = np.array([[1.0, 1, 1, 1], [2, 0, 1, 1], [0, 0, 0, 4]])
    adv = protocol.resampled_advantage(correct, w, pairs)                # (B, A, P)
    want = 2 * np.einsum("bk,apk->bap", w, correct) / (pairs * K) - 1
    np.testing.assert_allclose(adv, want)
    assert adv[2, 0, 0] == pytest.approx(2 * correct[0, 0, 3] / pairs - 1)   # one target drawn K times
    r = np.array([[1.0, 2.0, np.nan, 4.0], [np.nan] * 4])                     # (Q, K); NaN: undefined
    rbar = protocol.resampled_r(r, w)                                        # (B, Q)
    assert rbar[0, 0] == pytest.approx(7 / 3) and rbar[1, 0] == pytest.approx((2 + 4) / 3)
    assert rbar[2, 0] == pytest.approx(4.0) and np.isnan(rbar[:, 1]).all()
    assert np.isnan(protocol.resampled_r(r, np.array([[0.0, 0, 4, 0]]))[0, 0])   # only an undefined model drawn
    with pytest.raises(ValueError, match="weights must have shape"):
        protocol.resampled_r(r, w[:, :3])
    with pytest.raises(ValueError, match="weights must have shape"):
        protocol.resampled_advantage(correct, w[None], pairs)


def test_rank_rho_over_needs_three_defined_quantizers():
    r = np.array([[0.1, 0.2, 0.3, np.nan], [0.3, 0.2, 0.1, np.nan]])
    adv = np.array([[0.3, 0.2, 0.1, 0.0], [0.3, 0.2, 0.1, 0.0]])
    np.testing.assert_allclose(protocol.rank_rho_over(r, adv, np.array([True, True, True, False])), [1.0, -1.0])
    assert np.isnan(protocol.rank_rho_over(r, adv, np.array([True, True, False, False]))).all()
    with pytest.raises(ValueError, match="defined must be a boolean array"):
        protocol.rank_rho_over(r, adv, np.ones(3, bool))


def test_pooled_permutation_test_on_the_quantizers_defined_in_every_cell():
    cfg = protocol.AnalysisConfig(draws=400, seed=5)
    r = np.array([[0.1, 0.2, 0.3, 0.4, np.nan], [0.2, 0.1, 0.4, 0.3, 0.5]])
    adv = -r + 1.0
    adv[0, 4] = 0.0
    p, crit, ranked = protocol.pooled_permutation_test(0.8, r, adv, cfg)
    assert ranked == 4
    assert (p, crit) == protocol.permutation_test(0.8, r[:, :4], adv[:, :4], draws=400, alpha=cfg.alpha, seed=5)
    assert np.isnan(protocol.pooled_permutation_test(float("nan"), r, adv, cfg)[:2]).all()     # no cell has a ρ
    assert np.isnan(protocol.pooled_permutation_test(0.8, r[:, 2:], adv[:, 2:], cfg)[:2]).all()  # 2 defined
    with pytest.raises(TypeError, match="config must be an AnalysisConfig"):
        protocol.pooled_permutation_test(0.8, r, adv, {"draws": 400})


def test_theory_gap_appends_the_gap_and_its_interval():
    frame = pd.DataFrame({"theory": [0.5, np.nan], "advantage": [0.2, 0.1], "advantage_lo": [0.1, 0.0],
                          "advantage_hi": [0.3, 0.2]})
    out = protocol.theory_gap(frame)
    assert list(out.columns) == [*frame.columns, "gap", "gap_lo", "gap_hi"]
    np.testing.assert_allclose(out.iloc[0][["gap", "gap_lo", "gap_hi"]].to_numpy(float), [0.3, 0.2, 0.4])
    assert out.iloc[1][["gap", "gap_lo", "gap_hi"]].isna().all()          # the identity: no r_Q^n, no gap
    assert "gap" not in frame.columns                                      # a new frame
    with pytest.raises(ValueError, match="missing advantage_lo"):
        protocol.theory_gap(frame.drop(columns="advantage_lo"))


def test_both_studies_take_their_statistics_from_the_protocol():
    """Chapter 03's module imports nothing from chapter 02's: what the two share is in .protocol."""
    import ast
    import inspect
    tree = ast.parse(inspect.getsource(molecular))
    sources = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert "synthetic" not in sources and "protocol" in sources
    for name in ("rank_rho", "permutation_test", "default_quantizers", "ALPHA"):
        assert not hasattr(synthetic, name) and hasattr(protocol, name)


# ---- the settings record ----------------------------------------------------------------------------------
def test_config_checks_its_fields():
    with pytest.raises(ValueError, match="tasks must be binary TDC tasks"):
        molecular.MolecularAttackConfig(tasks=("Caco2_Wang",))
    with pytest.raises(ValueError, match="models must be a multiple of 4"):
        molecular.MolecularAttackConfig(models=10)
    with pytest.raises(ValueError, match="embedder must be a registered embedder"):
        molecular.MolecularAttackConfig(embedder="chemberta-not-registered")
    with pytest.raises(ValueError, match="identity"):
        molecular.MolecularAttackConfig(names=("identity", "sign"))
    with pytest.raises(TypeError, match="tasks must be a list"):
        molecular.MolecularAttackConfig(tasks="DILI")
    with pytest.raises(TypeError, match="config must be a MolecularAttackConfig"):
        molecular.molecular_attacks(TINY)
    cfg = molecular.MolecularAttackConfig(**TINY)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.models = 12
    assert cfg.as_dict()["tasks"] == ["Carcinogens_Lagunin"]
    assert "| `epochs` | 20 | 500 |" in cfg.describe()


def test_the_driver_and_the_analysis_follow_the_settings_rule(tmp_path):
    """The record checks its fields when built; a keyword that is no parameter is a TypeError naming it.
    Refused before any data is read."""
    with pytest.raises(TypeError, match=r"\bepochz\b"):
        molecular.molecular_attacks(molecular.MolecularAttackConfig(**TINY), data_dir=tmp_path, epochz=3)
    with pytest.raises(ValueError, match="models must be a multiple of 4"):
        molecular.MolecularAttackConfig(**{**TINY, "models": 10})
    (tmp_path / "tdc").mkdir()
    st = molecular.molecular_attacks(molecular.MolecularAttackConfig(**TINY), data_dir=tmp_path,
                                     cache_dir=tmp_path / "c", device="cpu")
    assert st.config == molecular.MolecularAttackConfig(**TINY).as_dict()
    study = _planted(1.0)
    by_record = molecular.analyse(study, protocol.AnalysisConfig(reps=20, draws=100, seed=1))
    assert by_record.settings == {"reps": 20, "level": 0.95, "draws": 100, "alpha": protocol.ALPHA, "seed": 1}
    with pytest.raises(TypeError, match=r"\bdrawz\b"):
        molecular.analyse(study, drawz=3)


# ---- a real tiny study ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny(shared_data_dir, tmp_path_factory):
    cfg = molecular.MolecularAttackConfig(**TINY)
    cache = tmp_path_factory.mktemp("emb")
    st = molecular.molecular_attacks(cfg, data_dir=shared_data_dir, cache_dir=cache, device="cpu")
    return st, molecular.analyse(st, protocol.AnalysisConfig(reps=30, draws=300)), cfg, cache


def test_study_shapes_and_pool(tiny):
    st, _, cfg, _ = tiny
    (ta,) = st.tasks
    A, P = 1 + len(cfg.names), len(protocol.ATTACKS)
    N = ta.keep.shape[1]
    assert ta.scores.shape == (A, P, cfg.models, N) and np.isfinite(ta.scores).all()
    assert ta.r.shape == (len(cfg.names), cfg.models)
    assert N % 2 == 0 and (ta.keep.sum(0) == cfg.models // 2).all() and (ta.keep.sum(1) == N // 2).all()
    # 280 molecules of Carcinogens_Lagunin: 40 % validation (112), a pool of 168
    assert ta.n_val == 112 and N == 168 and len(ta.smiles) == N and set(np.unique(ta.y)) <= {0.0, 1.0}
    assert len(st.table) == A * P and st.missing == {}
    # the table's held-out advantage is the correct counts' balanced accuracy
    row = st.table.iloc[0]
    assert row["advantage"] == pytest.approx(2 * ta.correct[0, 0].sum() / ta.keep.size - 1)


def test_same_seed_same_numbers(tiny, shared_data_dir):
    st, _, cfg, cache = tiny
    again = molecular.molecular_attacks(cfg, data_dir=shared_data_dir, cache_dir=cache, device="cpu")
    np.testing.assert_array_equal(again.tasks[0].scores, st.tasks[0].scores)
    np.testing.assert_array_equal(again.tasks[0].r, st.tasks[0].r)


def test_missing_task_file_is_listed_not_raised(tmp_path):
    (tmp_path / "tdc").mkdir()
    st = molecular.molecular_attacks(molecular.MolecularAttackConfig(**TINY), data_dir=tmp_path,
                                     cache_dir=tmp_path / "c", device="cpu")
    assert st.tasks == [] and "Carcinogens_Lagunin" in st.missing
    with pytest.raises(ValueError, match="holds no task"):
        molecular.analyse(st)


def test_analysis_point_estimates_are_the_direct_ones(tiny):
    st, an, cfg, _ = tiny
    (ta,) = st.tasks
    pq = an.per_quantizer
    for a, q in enumerate(st.attacked):
        row = pq[pq["quantizer"] == q].iloc[0]
        direct = [metrics.tpr_at_fpr(ta.scores[a, p].ravel(), ta.keep.ravel(), 0.01) for p in range(len(protocol.ATTACKS))]
        assert row["tpr@0.01"] == pytest.approx(max(direct))
        assert row["strongest"] == protocol.ATTACKS[int(np.argmax(direct))]
        adv = 2 * ta.correct[a].sum(axis=1) / ta.keep.size - 1
        assert row["advantage"] == pytest.approx(adv.max())
        if q != "identity":
            assert row["r"] == pytest.approx(np.nanmean(ta.r[cfg.names.index(q)]))
            assert row["drop"] == pytest.approx(pq.iloc[0]["tpr@0.01"] - row["tpr@0.01"])
            assert row["theory"] == pytest.approx(np.exp(-ta.n * row["r"]))
    q = pq[pq["quantizer"] != "identity"]
    ok = np.isfinite(q["r"].to_numpy())
    want = stats.spearmanr(q["r"].to_numpy()[ok], -q["tpr@0.01"].to_numpy()[ok]).statistic
    assert an.per_task["rho"].iloc[0] == pytest.approx(want)
    assert an.per_task["mean_drop"].iloc[0] == pytest.approx(q["drop"].mean())
    assert an.exposure["Carcinogens_Lagunin"].shape == (len(st.attacked), ta.keep.shape[1])


def _planted(identity_gap: float, seed: int = 0) -> molecular.MolecularAttackStudy:
    """A study whose unquantized model's member scores are shifted up by ``identity_gap`` over the
    quantized ones' (their scores: members N(1, 1), non-members N(0, 1)); r_Q^n rising with the quantizer."""
    rng = np.random.default_rng(seed)
    K, N, names = 16, 60, ["sign", "bits2", "bits4"]
    from qlib.attacks import shadow
    keep = shadow.paired_keep(K, N, seed=seed)
    A, P = 1 + len(names), len(protocol.ATTACKS)
    scores = rng.normal(size=(A, P, K, N)) + keep
    scores[0] += identity_gap * keep
    correct = np.stack([[protocol.held_out_correct(scores[a, p], keep) for p in range(P)] for a in range(A)])
    r = np.array([[3e-3] * K, [2e-3] * K, [1e-3] * K])
    ta = molecular.TaskAttacks("Carcinogens_Lagunin", ["C"] * N, np.zeros(N), keep, r, scores, correct, 10, 4, 0,
                               {"train_and_r_q": 0.0, "attacks": 0.0})
    rows = [{"task": ta.task, "quantizer": q, "attack": at, "accuracy": 0.5, "advantage": 0.0, "auc": 0.5,
             "tpr@0.001": 0.0, "tpr@0.01": 0.0} for q in ["identity", *names] for at in protocol.ATTACKS]
    return molecular.MolecularAttackStudy({"models": K}, names, [ta], {}, pd.DataFrame(rows))


def test_quantization_row_fails_under_its_null_and_passes_on_a_planted_effect():
    null = molecular.analyse(_planted(0.0), protocol.AnalysisConfig(reps=100, draws=200))
    effect = molecular.analyse(_planted(3.0), protocol.AnalysisConfig(reps=100, draws=200))
    (r0,) = molecular_claims.quantization_rows(null)
    (r1,) = molecular_claims.quantization_rows(effect)
    assert r0.passed is False and r1.passed is True and r1.kind == "theory-check"
    (c1,) = molecular_claims.chance_rows(effect)
    assert c1.passed is True


def test_claims_rows_tables_and_text(tiny):
    st, an, cfg, _ = tiny
    rows = (molecular_claims.chance_rows(an) + molecular_claims.quantization_rows(an) + molecular_claims.rank_rows(an)
            + molecular_claims.exposure_rows(an, st))
    assert len(rows) == 1 + 1 + 2 + 1 and {r.kind for r in rows} == {"theory-check"}
    assert all(r.paper == "001" for r in rows)
    priv = molecular_claims.most_private(an, "Carcinogens_Lagunin")
    q = an.per_quantizer[an.per_quantizer["quantizer"] != "identity"]
    assert priv == q.loc[q["r"].idxmax(), "quantizer"]
    rho, p = molecular_claims.exposure_rho(an, st, "Carcinogens_Lagunin", priv)
    e = an.exposure["Carcinogens_Lagunin"]
    assert rho == pytest.approx(stats.spearmanr(e[0], e[st.attacked.index(priv)]).statistic)
    top = molecular_claims.exposed_molecules(an, st, "Carcinogens_Lagunin", top=3)
    assert len(top) == 3 and (np.diff(top["unquantized"].to_numpy()) <= 0).all()
    assert len(molecular_claims.summary_table(an)) == 1 + len(cfg.names)
    text = molecular_claims.answer_text(an, st)
    assert f"{an.pooled['rho']:+.3f}" in text
    assert "Paper 001 trains 500 epochs" in protocol.reductions_text(cfg, 30, 300)
    with pytest.raises(TypeError, match="analysis must be the MolecularAnalysis"):
        molecular_claims.chance_rows(st)
    with pytest.raises(ValueError, match="task must be one of"):
        molecular_claims.exposed_molecules(an, st, "DILI")


def test_synthetic_still_uses_the_shared_protocol():
    assert synthetic.SYNTHETIC_ATTACKS is protocol.ATTACKS


def test_percentile_interval_refuses_non_finite_resamples_unless_allowed():
    """The attack statistics' non-finite policy (qlib.validation): NaN/inf resamples raise naming x; with
    allow_nonfinite=True (what both attacks chapters pass: a resampled rho can be undefined) NaN resamples
    are ignored."""
    x = np.arange(1.0, 101.0)
    bad = np.r_[x, np.nan]
    with pytest.raises(ValueError, match=r"^x must be finite.*allow_nonfinite=True"):
        protocol.percentile_interval(bad, 0.9)
    with pytest.raises(ValueError, match=r"^x must be finite"):
        protocol.percentile_interval(np.r_[x, np.inf], 0.9)
    assert protocol.percentile_interval(bad, 0.9, allow_nonfinite=True) == protocol.percentile_interval(x, 0.9)
