"""qlib.repro.attacks: the toys' exact quantities against independent enumerations, the driver's table at
small sizes, and the rows (kinds, verdicts, the oracle agreeing with the limit)."""

import dataclasses
import functools

import numpy as np
import pandas as pd
import pytest

from qlib.mia import exact, max_acc_discrete
from qlib.repro.attacks import claims, toys
from qlib.repro.ledger import Row


def test_zipf_law():
    p = toys.zipf_law(4)
    np.testing.assert_allclose(p, np.array([1, 1 / 2, 1 / 3, 1 / 4]) / (25 / 12))


def test_erm_toy_delta_and_oracle_against_enumeration():
    """Δ_n of the finite-Θ toy (qlib.mia.erm, Lemma C.2) = the TV of the two joint laws enumerated with the
    toy's own ERM as the algorithm (Eq. 31/32); the oracle's ratio is q/p of those tables."""
    toy = toys.erm_toy(1.0, (0.0, 1.0, 2.0))
    for n in (3, 7):
        q, pn = exact.joint_tables(toy.p, n, toy.fit)
        assert toy.delta(n) == pytest.approx(exact.tv_discrete(q, pn), abs=1e-12)
        N = exact.count_vectors(n, toy.m)
        ratio = toy.oracle_ratio(N)
        # the Bayes rule on those ratios attains 1/2 + Δ_n/2 (Theorem 3.1, ν = 1/2)
        P = np.exp(exact.log_multinomial_pmf(N, toy.p))
        acc = 0.5 * (P[:, None] * N / n * (ratio >= 1)).sum() + 0.5 * (P[:, None] * toy.p * (ratio < 1)).sum()
        assert acc == pytest.approx(0.5 + toy.delta(n) / 2, abs=1e-12)
    assert toy.delta(50) <= toy.bound(50)
    assert toy.chernoff_rate() > 0


def test_empirical_toy_oracle_attains_the_maximum():
    p = toys.zipf_law(4)
    toy = toys.empirical_toy(p)
    n = 6
    N = exact.count_vectors(n, 4)
    P = np.exp(exact.log_multinomial_pmf(N, p))
    r = toy.oracle_ratio(N)
    acc = 0.5 * (P[:, None] * N / n * (r >= 1)).sum() + 0.5 * (P[:, None] * p * (r < 1)).sum()
    assert acc == pytest.approx(max_acc_discrete(p, n, 0.5), abs=1e-12)
    assert toy.delta(n) == pytest.approx(2 * acc - 1, abs=1e-12)
    # the smoothed law is injective in the counts (so Δ_n is Theorem 5.4's maximum)
    assert np.unique(toy.fit(N), axis=0).shape[0] == N.shape[0]
    assert toy.delta(100) <= toy.bound(100)


@functools.lru_cache(maxsize=None)
def _study(kind):
    toy = toys.empirical_toy(toys.zipf_law(6)) if kind == "empirical" else toys.erm_toy()
    ns = [10, 40, 160] if kind == "empirical" else [5, 10, 20]
    return toys.attack_study(toy, ns, toys.AttackStudyConfig(shadows=8, pairs=4000, min_targets=20, reps=40, seed=1))


@pytest.mark.parametrize("kind", ["empirical", "erm"])
def test_attack_study_table(kind):
    st = _study(kind)
    t = st.table
    assert len(t) == 3 * len(toys.ATTACKS) and set(t["attack"]) == set(toys.ATTACKS)
    assert (t["accuracy_lo"] <= t["accuracy"] + 1e-12).all() and (t["accuracy"] <= t["accuracy_hi"] + 1e-12).all()
    assert ((t["limit"] - 0.5 - t["delta"] / 2).abs() < 1e-15).all()
    s, m, g = st.scores[(int(t["n"].iloc[0]), toys.ORACLE)]
    assert s.shape == m.shape == g.shape and m.mean() == 0.5
    # every practical attack's held-out accuracy stays below the exact limit (up to noise)
    p = t[t["attack"].isin(toys.PRACTICAL)]
    se = (p["accuracy_hi"] - p["accuracy_lo"]) / 3.92
    assert ((p["accuracy"] - p["limit"]) <= 4 * se + 1e-9).all()


@pytest.mark.parametrize("kind", ["empirical", "erm"])
def test_rows(kind):
    st = _study(kind)
    rows = (claims.oracle_rows(st) + claims.theorem31_rows(st) + claims.gap_rows(st) + claims.rate_rows(st)
            + claims.bound_rows(st))
    assert all(isinstance(r, Row) and r.kind == "theory-check" and r.paper in ("001", "003") for r in rows)
    verdicts = {r.where.split(" (")[0] + r.quantity[:30]: r.verdict for r in rows}
    assert rows[0].verdict == "agrees", verdicts          # the oracle agrees with 1/2 + Δ_n/2
    assert rows[1].verdict == "agrees", verdicts          # no attack beats the limit
    assert rows[-1].verdict == "agrees", verdicts         # Δ_n below the theory's bound
    best, means = claims.best_attack(st)
    assert best in toys.PRACTICAL and means[best] == max(means.values())
    text = claims.gap_text(st)
    assert best in text and text.count("\n|") >= 3
    assert len(claims.metrics_table(st)) == len(st.table)


def test_reductions_text():
    assert "256" in claims.reductions_text(16, 8000, [10, 100], [5, 20])
    assert "256 shadow" not in claims.reductions_text(256, 8000, [10], [5])


def test_attack_study_follows_the_settings_rule():
    """attack_study(toy, ns, config=None): the record's fields are checked by it; equal records give the same
    table; a keyword that is no parameter is a TypeError naming it."""
    toy = toys.empirical_toy(toys.zipf_law(4))
    cfg = toys.AttackStudyConfig(shadows=4, pairs=200, min_targets=4, reps=3, seed=2)
    by_record = toys.attack_study(toy, [10], cfg)
    replaced = toys.attack_study(toy, [10], dataclasses.replace(cfg, seed=7))
    again = toys.attack_study(toy, [10], dataclasses.replace(cfg, seed=2))
    pd.testing.assert_frame_equal(by_record.table, again.table)
    assert not by_record.table.equals(replaced.table)
    assert toys.AttackStudyConfig() == toys.AttackStudyConfig(shadows=64, pairs=40_000, min_targets=50, per_target=50,
                                                               reps=200, seed=0)
    with pytest.raises(TypeError, match=r"\bshadowz\b"):
        toys.attack_study(toy, [10], shadowz=4)
    with pytest.raises(ValueError, match="per_target"):
        toys.attack_study(toy, [10], dataclasses.replace(cfg, per_target=0))
    with pytest.raises(TypeError, match="config must be a AttackStudyConfig"):
        toys.attack_study(toy, [10], {"shadows": 4})


def test_bad_toys():
    with pytest.raises(ValueError, match="weights"):
        toys.erm_toy(1.0, (1.0, 1.0))
    with pytest.raises(TypeError, match="toy"):
        toys.attack_study("toy", [10])
