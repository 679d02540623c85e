"""Baseline MIS estimates: loss-threshold attack and batched discriminators (paper 001 §4.2)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from qlib import discriminator as D


def test_split_runs_partition_and_seed():
    tr, es, te = D.split_runs(40, seed=1)
    allr = np.concatenate([tr, es, te])
    assert sorted(allr.tolist()) == list(range(40))
    assert (len(tr), len(es), len(te)) == (20, 10, 10)
    for a, b in zip(D.split_runs(40, seed=1), (tr, es, te)):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="n_runs"):
        D.split_runs(2)
    with pytest.raises(ValueError, match="fractions"):
        D.split_runs(10, fractions=(0.5, 0.5, 0.5))


def test_fit_thresholds_exact_on_small_example():
    li = torch.tensor([[0.1, 0.2, 0.3]], dtype=torch.float64)
    lo = torch.tensor([[0.25, 0.4, 0.5]], dtype=torch.float64)
    # best: τ in (0.2, 0.25) → 2/3 of members and all non-members, or τ in (0.3, 0.4) → 3/3 and 2/3
    tau = D.fit_thresholds(li, lo)
    acc = 0.5 * ((li < tau).double().mean() + (lo >= tau).double().mean())
    assert acc.item() == pytest.approx(5 / 6)
    assert 0.2 < tau.item() < 0.25                               # ties in accuracy: smallest τ


def test_threshold_attack_separable_and_indistinguishable():
    rng = np.random.default_rng(0)
    G, R, n = 2, 30, 50
    li = rng.exponential(size=(G, R, n))
    lo = li + 100.0                                              # separable: MIS estimate 0
    res = D.threshold_attack(li, lo, np.arange(20), np.arange(20, 30))
    np.testing.assert_allclose(res.acc, 1.0)
    np.testing.assert_allclose(res.mis, 0.0)
    lo2 = rng.exponential(size=(G, R, n))                        # same law: accuracy ≈ 1/2
    res2 = D.threshold_attack(li, lo2, np.arange(20), np.arange(20, 30))
    assert np.all(res2.mis_lo <= 1.0) and np.all(np.abs(res2.acc - 0.5) < 0.06)
    assert np.all(res2.mis_lo <= res2.mis) and np.all(res2.mis <= res2.mis_hi)
    assert np.all(res2.trials == 2 * 10 * n)


def test_threshold_attack_bad_input():
    li = np.zeros((2, 5, 3))
    with pytest.raises(ValueError, match="groups, runs"):
        D.threshold_attack(li, np.zeros((2, 4, 3)), [0], [1])
    with pytest.raises(ValueError, match="loss_in must be finite"):
        D.threshold_attack(li + np.nan, li, [0], [1])
    with pytest.raises(ValueError, match="test_runs"):
        D.threshold_attack(li, li, [0], [7])


def _toy(G=2, R=24, n=20, p=4, d=3, gap=(3.0, 0.0), seed=0):
    g = torch.Generator().manual_seed(seed)
    theta = torch.randn(G, R, p, generator=g)
    x_in = torch.randn(1, R, n, d, generator=g)
    x_out = torch.randn(1, R, n, d, generator=g)
    li = torch.rand(G, R, n, generator=g)
    lo = torch.rand(G, R, n, generator=g) + torch.tensor(gap).view(G, 1, 1)
    return theta, x_in, li, x_out, lo


def test_discriminators_learn_a_leak_and_not_a_non_leak():
    theta, x_in, li, x_out, lo = _toy()
    tr, es, te = np.arange(12), np.arange(12, 18), np.arange(18, 24)
    res = D.train_discriminators(theta, x_in, li, x_out, lo, (tr, es, te), group_law=[0, 0],
                                 config=D.DiscriminatorConfig(hidden=8, lr=3e-2, epochs=12, patience=12,
                                                              runs_per_batch=12, seed=0))
    assert res.acc[0] > 0.97                          # group 0: non-members have larger losses
    assert abs(res.acc[1] - 0.5) < 0.12               # group 1: no signal
    assert res.mis[0] < 0.06 and res.mis[1] > 0.76


def test_discriminators_seeded():
    args = _toy()
    split = (np.arange(12), np.arange(12, 18), np.arange(18, 24))
    a = D.train_discriminators(*args, split, group_law=[0, 0], config=D.DiscriminatorConfig(epochs=3, seed=4))
    b = D.train_discriminators(*args, split, group_law=[0, 0], config=D.DiscriminatorConfig(epochs=3, seed=4))
    np.testing.assert_array_equal(a.successes, b.successes)


@pytest.mark.parametrize("group_law", [[0, 0, 1, 1, 2, 2], [0, 1, 2, 0, 1, 2]])
def test_per_law_product_equals_per_group_product(group_law, monkeypatch):
    """Groups in equal contiguous blocks per law take one product per law: the same discriminators."""
    g = torch.Generator().manual_seed(3)
    G, R, n, p, d = 6, 16, 10, 5, 4
    theta = torch.randn(G, R, p, generator=g)
    x_in, x_out = torch.randn(3, R, n, d, generator=g), torch.randn(3, R, n, d, generator=g)
    li = torch.rand(G, R, n, generator=g)
    lo = torch.rand(G, R, n, generator=g) + torch.linspace(0, 1, G).view(G, 1, 1)
    split = (np.arange(8), np.arange(8, 12), np.arange(12, 16))
    kw = dict(group_law=group_law,
              config=D.DiscriminatorConfig(hidden=6, lr=3e-2, epochs=6, patience=6, runs_per_batch=4, seed=1))
    a = D.train_discriminators(theta, x_in, li, x_out, lo, split, **kw)
    monkeypatch.setattr(D, "_PER_LAW_PRODUCT", False)
    b = D.train_discriminators(theta, x_in, li, x_out, lo, split, **kw)
    np.testing.assert_array_equal(a.successes, b.successes)


def test_discriminators_bad_input():
    theta, x_in, li, x_out, lo = _toy()
    split = (np.arange(12), np.arange(12, 18), np.arange(18, 24))
    with pytest.raises(ValueError, match="theta"):
        D.train_discriminators(theta[:, :5], x_in, li, x_out, lo, split, group_law=[0, 0])
    with pytest.raises(ValueError, match="group_law"):
        D.train_discriminators(theta, x_in, li, x_out, lo, split, group_law=[0, 3])
    with pytest.raises(ValueError, match="hidden"):
        D.train_discriminators(theta, x_in, li, x_out, lo, split, group_law=[0, 0],
                               config=D.DiscriminatorConfig(hidden=0))


# ----------------------------------------------------------------------------- broken input (issue 11)
# A privacy estimator must never report maximal privacy (accuracy 1/2, MIS = 1) because its input
# was broken: NaN features make every logit NaN, which scores as chance accuracy.
@pytest.mark.parametrize("arg", ["theta", "x_in", "x_out"])
@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_discriminators_reject_one_non_finite_entry_by_name(arg, value):
    args = dict(zip(["theta", "x_in", "loss_in", "x_out", "loss_out"], _toy()))
    args[arg] = args[arg].clone()
    args[arg].reshape(-1)[3] = value
    split = (np.arange(12), np.arange(12, 18), np.arange(18, 24))
    with pytest.raises(ValueError, match=rf"\b{arg}\b"):
        D.train_discriminators(*args.values(), split, group_law=[0, 0], config=D.DiscriminatorConfig(epochs=2))


@pytest.mark.parametrize("lr", [0.0, -1e-2, float("nan"), float("inf")])
def test_discriminators_reject_bad_lr(lr):
    split = (np.arange(12), np.arange(12, 18), np.arange(18, 24))
    with pytest.raises(ValueError, match=r"\blr\b"):
        D.train_discriminators(*_toy(), split, group_law=[0, 0], config=D.DiscriminatorConfig(lr=lr, epochs=2))


@pytest.mark.parametrize("lr", [1e30, 1e38])
def test_discriminators_diverging_training_raises_naming_lr(lr):
    split = (np.arange(12), np.arange(12, 18), np.arange(18, 24))
    with pytest.raises(ValueError, match=r"diverged.*\blr\b"):
        D.train_discriminators(*_toy(), split, group_law=[0, 0], config=D.DiscriminatorConfig(lr=lr, epochs=3))


def test_discriminators_reject_non_integral_group_law():
    split = (np.arange(12), np.arange(12, 18), np.arange(18, 24))
    with pytest.raises(TypeError, match=r"\bgroup_law\b"):
        D.train_discriminators(*_toy(), split, group_law=[0.0, 0.5], config=D.DiscriminatorConfig(epochs=2))


@pytest.mark.parametrize("arg", ["loss_in", "loss_out"])
@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_fit_thresholds_rejects_non_finite_losses(arg, value):
    t = {"loss_in": torch.rand(2, 6), "loss_out": torch.rand(2, 5) + 0.5}
    t[arg][1, 2] = value
    with pytest.raises(ValueError, match=rf"\b{arg}\b"):
        D.fit_thresholds(**t)
    with pytest.raises(ValueError, match=rf"\b{arg}\b"):
        D.fit_thresholds(**{**t, arg: t[arg][0]})           # 1-D: one group needs a (1, M) tensor


def test_attack_result_is_a_frozen_record():
    res = D.AttackResult.from_counts([3, 5], 10)
    with pytest.raises(AttributeError):
        res.acc = np.zeros(2)


def test_discriminators_bad_input_is_rejected_by_name_through_the_common_harness():
    """The common bad-input harness (tests/badinput, tests/test_common_bad_input.py) passes arguments by
    keyword, one argument at a time: here it runs on a keyword wrapper that names each of the three arrays
    of ``runs``, every array argument mutated in turn (the settings are
    DiscriminatorConfig's own baseline there)."""
    from badinput import allowlist, harness

    cfg = D.DiscriminatorConfig(hidden=4, epochs=2, patience=2, device="cpu")

    def wrapper(theta, x_in, loss_in, x_out, loss_out, train_runs, es_runs, test_runs, group_law=None):
        return D.train_discriminators(theta, x_in, loss_in, x_out, loss_out, (train_runs, es_runs, test_runs),
                                      group_law=group_law, config=cfg)

    def baseline():
        g = torch.Generator().manual_seed(0)
        G, R, n, p, d = 2, 6, 3, 3, 2
        return {"theta": torch.randn(G, R, p, generator=g), "x_in": torch.randn(1, R, n, d, generator=g),
                "loss_in": torch.rand(G, R, n, generator=g), "x_out": torch.randn(1, R, n, d, generator=g),
                "loss_out": torch.rand(G, R, n, generator=g) + 0.5, "train_runs": np.arange(3),
                "es_runs": np.array([3, 4]), "test_runs": np.array([5]), "group_law": np.array([0, 0])}

    outcomes = harness.run_callable("qlib.discriminator.train_discriminators", wrapper, baseline, allowlist.ALLOW)
    bad = [f"{o.param}={o.label}: {o.outcome} — {o.detail}" for o in outcomes if o.outcome not in ("clear", "allowed")]
    assert len(outcomes) > 40 and not bad, "\n".join(bad)


def test_discriminators_need_three_run_index_arrays():
    theta, x_in, li, x_out, lo = _toy()
    with pytest.raises(TypeError, match=r"\bruns\b"):
        D.train_discriminators(theta, x_in, li, x_out, lo, (np.arange(12), np.arange(12, 18)), group_law=[0, 0])
    with pytest.raises(TypeError, match=r"\bruns\b"):
        D.train_discriminators(theta, x_in, li, x_out, lo, np.arange(12), group_law=[0, 0])
