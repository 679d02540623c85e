"""qlib.repro.attacks.dp_audit and dp_claims (chapter attacks/04): the paper-004 settings agree with the
RQP-SGD part's record, the task and the canaries are what the docstring says, the noise meets its
budget, and the audit and its rows at tiny sizes (structure, determinism, the region/ε_lo equivalence)."""

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest

from qlib import dpsgd, rqp_privacy
from qlib.repro.attacks import dp_audit, dp_claims, paper
from qlib.repro.ledger import Row


def test_paper_settings_agree_with_the_rqp_sgd_part():
    from qlib.repro.rqp_sgd import paper as rqp_paper

    d = rqp_paper.DIAGNOSTIC
    assert dict(paper.RQP_DIAGNOSTIC) == dict(m=d.m, T=d.T, eta=d.eta, clip=d.clip, M=d.M, b=d.b, delta=d.delta)
    assert paper.RQP_TEST_SIZE == rqp_paper.DIAGNOSTIC_TEST_SIZE
    assert set(paper.RQP_EPS) == {rqp_paper.EPS} | {e for _, _, e in rqp_paper.FIGURE2_PANELS}
    with pytest.raises(TypeError):
        paper.RQP_DIAGNOSTIC["m"] = 1  # read-only


def test_task_is_the_rqp_sgd_parts_diagnostic():
    from qlib.repro.rqp_sgd import experiments

    a, b = dp_audit.diagnostic_task(), experiments.diagnostic_task("logreg")
    for k in ("X_train", "y_train", "X_test", "y_test"):
        np.testing.assert_array_equal(getattr(a, k), getattr(b, k))
    assert (a.n, a.d, a.model) == (455, 31, "logreg")


@pytest.fixture(scope="module")
def task():
    return dp_audit.diagnostic_task()


def test_typical_canary_is_a_majority_row_nearest_its_class_mean(task):
    x, y, i = dp_audit.canary(task, "typical")
    np.testing.assert_array_equal(x, task.X_train[i])
    vals, counts = np.unique(task.y_train, return_counts=True)
    assert y == task.y_train[i] == vals[np.argmax(counts)]
    F = task.X_train[task.y_train == y, :-1]
    d = np.linalg.norm(F - F.mean(0), axis=1)
    assert np.linalg.norm(x[:-1] - F.mean(0)) == pytest.approx(d.min())


def test_worst_canary_is_far_out_along_the_least_variance_direction(task):
    x, y, i = dp_audit.canary(task, "worst")
    assert i is None and x[-1] == 1.0
    F = task.X_train[:, :-1]
    vals, counts = np.unique(task.y_train, return_counts=True)
    assert y == vals[np.argmin(counts)]
    norm = np.linalg.norm(x[:-1])
    assert norm == pytest.approx(dp_audit.WORST_SCALE * np.linalg.norm(F, axis=1).max())
    lam = np.linalg.eigvalsh(np.cov(F, rowvar=False))
    assert np.var(F @ (x[:-1] / norm), ddof=1) == pytest.approx(lam[0], rel=1e-6)
    # its logistic gradient at w = 0, |σ(0) − y|·‖x‖ = ‖x‖/2, is far above the clip ρ: always clipped
    assert 0.5 * np.linalg.norm(x) > 10 * paper.RQP_DIAGNOSTIC["clip"]


def test_noise_meets_each_budget(task):
    s = paper.RQP_DIAGNOSTIC
    for eps in paper.RQP_EPS:
        sigma, q = dp_audit.noise("dpsgd", eps, task.n)
        assert q == 1.0
        assert rqp_privacy.dpsgd_epsilon(sigma / s["clip"], s["delta"], s["m"] / task.n, s["T"]) == \
            pytest.approx(eps, abs=1e-3)
        sigma, q = dp_audit.noise("rqp", eps, task.n, rqp_sigma=1.0)
        assert sigma == 1.0
        assert rqp_privacy.eps_total(q, sigma, b=s["b"], M=s["M"], rho=s["clip"], eta=s["eta"], m=s["m"],
                                     T=s["T"], n=task.n) == pytest.approx(eps, rel=1e-8)


@pytest.fixture(scope="module")
def small(task):
    return dp_audit.audit(task, dp_audit.AuditConfig(eps_values=[1.0, 4.0], runs=40, rqp_sigma=1.0, seed=3))


def test_audit_table_structure_and_determinism(task, small):
    t = small.table
    assert len(t) == 2 * 2 * 2  # methods × budgets × canaries
    assert set(t["key"]) == {"dpsgd", "rqp"} and set(t["canary"]) == set(dp_audit.CANARIES)
    assert (t.loc[t["key"] == "rqp", "delta"] == 0).all()
    assert (t.loc[t["key"] == "dpsgd", "delta"] == paper.RQP_DIAGNOSTIC["delta"]).all()
    num = t.select_dtypes("number")
    assert np.isfinite(num.drop(columns=["eps_hat"]).to_numpy()).all()
    assert (t["eps_lo"] >= 0).all() and ((t["test_acc"] > 0.5) & (t["test_acc"] <= 1)).all()
    for _, mem in small.scores.values():
        assert mem.sum() == (~mem).sum() == 40
    # the region test and the ε bound agree: the box is above the region exactly when ε_lo > ε
    assert ((t["excess"] > 0) == (t["eps_lo"] > t["eps"])).all()
    again = dp_audit.audit(task, dp_audit.AuditConfig(eps_values=[1.0, 4.0], runs=40, rqp_sigma=1.0, seed=3))
    np.testing.assert_array_equal(t["auc"], again.table["auc"])
    other = dp_audit.audit(task, dp_audit.AuditConfig(eps_values=[1.0, 4.0], runs=40, rqp_sigma=1.0, seed=4))
    assert not np.array_equal(t["auc"], other.table["auc"])


def test_the_canary_moves_the_margin_when_there_is_no_noise(task):
    # non-private SGD, worst-case canary: the runs that drew it are shifted by about η/m·ρ·‖x‖ per draw —
    # the score the audit uses does see the canary when nothing hides it
    s = paper.RQP_DIAGNOSTIC
    x, y, _ = dp_audit.canary(task, "worst")
    kw = dict(runs=200, T=s["T"], m=s["m"], eta=s["eta"], clip=s["clip"], b=s["b"], M=s["M"], seed=0)
    t_in = dpsgd.Task("in", "logreg", np.vstack([task.X_train, x]), np.r_[task.y_train, y], task.X_test,
                      task.y_test)
    z_in = (2 * y - 1) * (dpsgd.train(t_in, "sgd", dpsgd.DPSGDConfig(**kw)).w.double().numpy() @ x)
    z_out = (2 * y - 1) * (dpsgd.train(task, "sgd", dpsgd.DPSGDConfig(**kw)).w.double().numpy() @ x)
    shift = s["eta"] / s["m"] * s["clip"] * np.linalg.norm(x)
    seen = 1 - (1 - 1 / (task.n + 1)) ** (s["m"] * s["T"])
    frac = (z_in > z_out.max() + 0.5 * shift).mean()   # runs clearly above every run without the canary
    assert abs(frac - seen) < 4 * math.sqrt(seen * (1 - seen) / 200)


def test_rows(small):
    rows = dp_claims.bound_rows(small) + dp_claims.gap_rows(small)
    assert all(isinstance(r, Row) and r.kind == "theory-check" and r.paper == "004" for r in rows)
    assert len(dp_claims.bound_rows(small)) == len(small.table) and len(dp_claims.gap_rows(small)) == 2
    for r, (_, t) in zip(dp_claims.bound_rows(small), small.table.iterrows()):
        assert r.passed == (t["excess"] <= 0)
    for r in dp_claims.gap_rows(small):
        assert r.passed == (r.ours < dp_claims.GAP_FRACTION)
    assert "DP-SGD" in dp_claims.audit_text(small) and "RQP-SGD" in dp_claims.audit_text(small)
    assert "40 models" in dp_claims.setup_text(small)
    assert list(dp_claims.audit_table(small)["method"]) == list(small.table["method"])


def test_audit_follows_the_settings_rule(task):
    """audit(task, config=None): the record's fields are checked by it (lists stored as tuples), equal records
    give the same audit; a keyword that is no parameter is a TypeError naming it."""
    cfg = dp_audit.AuditConfig(eps_values=(1.0,), runs=6, methods=("dpsgd",), canaries=("worst",), seed=2)
    by_record = dp_audit.audit(task, cfg)
    as_lists = dp_audit.audit(task,
                              dp_audit.AuditConfig(eps_values=[1.0], runs=6, methods=["dpsgd"], canaries=["worst"],
                                                   seed=2))
    replaced = dp_audit.audit(task, dataclasses.replace(dataclasses.replace(cfg, seed=7), seed=2))
    for other in (as_lists, replaced):
        pd.testing.assert_frame_equal(by_record.table, other.table)
    assert by_record.setting == dict(paper.RQP_DIAGNOSTIC) and by_record.runs == 6
    default = dp_audit.AuditConfig()
    assert default.eps_values == paper.RQP_EPS and dict(default.setting) == dict(paper.RQP_DIAGNOSTIC)
    with pytest.raises(TypeError):
        default.setting["m"] = 1                                   # the record is frozen, its mapping read-only
    with pytest.raises(TypeError, match=r"\brunz\b"):
        dp_audit.audit(task, runz=6)


@pytest.mark.parametrize("call,name", [
    (lambda t: dp_audit.audit(t, dp_audit.AuditConfig(eps_values=[1.0], runs=1, rqp_sigma=1.0)), "runs"),
    (lambda t: dp_audit.audit(t, dp_audit.AuditConfig(eps_values=[-1.0], runs=4, rqp_sigma=1.0)), "eps_values"),
    (lambda t: dp_audit.audit(t, dp_audit.AuditConfig(eps_values=[1.0], runs=4, rqp_sigma=0.0)), "rqp_sigma"),
    (lambda t: dp_audit.audit(t,
                              dp_audit.AuditConfig(eps_values=[1.0], runs=4, rqp_sigma=1.0,
                                                   methods=["adam"])), "methods"),
    (lambda t: dp_audit.audit(t,
                              dp_audit.AuditConfig(eps_values=[1.0], runs=4, rqp_sigma=1.0,
                                                   canaries=["odd"])), "canaries"),
    (lambda t: dp_audit.audit(t,
                              dp_audit.AuditConfig(eps_values=[1.0], runs=4, rqp_sigma=1.0,
                                                   setting={"m": 10})), "setting"),
    (lambda t: dp_audit.canary(t, "odd"), "kind"),
    (lambda t: dp_audit.noise("dpsgd", 1.0, 5), "n"),
    (lambda t: dp_audit.noise("rqp", 1.0, 455), "rqp_sigma"),
    (lambda t: dp_claims.bound_rows(t), "audit"),
])
def test_bad_input_names_the_argument(task, call, name):
    with pytest.raises((ValueError, TypeError), match=name):
        call(task)


def test_audit_memory_guard_counts_what_one_training_holds(monkeypatch):
    """The guard counts one side's indices and one step's batch (the sides train one after the other): the
    paper profile's 50,000 runs per side and ε pass a 12 GiB limit (half of this 24 GiB VM; the old guard
    asked for 18 GiB and stopped the paper profile), 10**7 runs do not."""
    from qlib import validation

    class Reached(Exception):
        pass

    def stop(*a, **k):
        raise Reached

    task = dp_audit.diagnostic_task()
    prev = validation.set_memory_limit("12G")
    try:
        monkeypatch.setattr(dp_audit.dpsgd, "train", stop)
        with pytest.raises(Reached):                      # past the guard, into the training
            dp_audit.audit(task, dp_audit.AuditConfig(eps_values=[0.5, 1.0, 4.0], runs=50_000, rqp_sigma=1.0),
                           device="cpu")
        with pytest.raises(ValueError, match="runs=10000000 would need"):
            dp_audit.audit(task, dp_audit.AuditConfig(eps_values=[0.5, 1.0, 4.0], runs=10**7, rqp_sigma=1.0),
                           device="cpu")
    finally:
        validation.set_memory_limit(prev)
