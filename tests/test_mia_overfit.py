"""Overfitting and insecurity (paper 003 §4, App. B): Prop. 4.2, Ex. 4.5, Simulation 1, Prop. B.1."""

import numpy as np
import pytest

from qlib.mia import overfit


def test_prop_4_2_counting():
    rng = np.random.default_rng(0)
    for _ in range(300):
        n = int(rng.integers(1, 100))
        eps, alpha = rng.uniform(0.01, 3), rng.uniform(0.01, 0.99)
        l = rng.exponential(size=n)
        l = l / l.mean() * eps * alpha
        assert overfit.fraction_below(l, [eps])[0] >= 1 - alpha - 1e-12


def test_eq6_bound_is_loss_threshold_advantage():
    tr, va = np.array([0.0, 0.1, 0.2, 5.0]), np.array([0.05, 1.0, 2.0, 3.0])
    assert np.allclose(overfit.eq6_lower_bound(tr, va, [0.15, 10.0]), [0.5 - 0.25, 0.0])


def test_ols_interpolation_gives_perfect_attack():
    tr, fr = overfit.ols_losses(30, 20, 300, seed=0)
    assert overfit.loss_threshold_accuracy(tr, fr, 1e-8) >= 0.995


def test_simulation1_tiny_run_learns_and_is_seeded():
    cfg = overfit.OverfitConfig(n=100, d=5, width=64, iters=40, lr=0.01, n_val=200, eval_every=20, seeds=(0, 1))
    a = overfit.train_overfit_mlp(cfg, device="cpu")
    b = overfit.train_overfit_mlp(cfg, device="cpu")
    assert a.train_frac.shape == (2, 3, 7) and np.array_equal(a.train_frac, b.train_frac)
    assert np.all(a.train_mse[:, -1] < a.train_mse[:, 0])


def test_prop_b1_printed_condition_fails():
    assert overfit.propB1_n_printed(10**6) == 89 and overfit.propB1_n_corrected(10**6) == 24
    assert overfit.prob_event_E(10**6, 89, 300, seed=0) < overfit.propB1_bound(10**6) - 0.3
    assert overfit.prob_event_E(2 * 10**5, overfit.propB1_n_corrected(2 * 10**5), 300, seed=0) >= 0.99


def test_bad_input():
    with pytest.raises(ValueError):
        overfit.ols_losses(0, 5, 10)
    with pytest.raises(ValueError, match="lr"):
        overfit.train_overfit_mlp(overfit.OverfitConfig(lr=-1.0, iters=1))


def test_bad_input_baseline_is_small():
    """Regression: the all-defaults call of train_overfit_mlp (the paper's size) takes minutes, so the
    common bad-input test needs its own small baseline, which must stay fast."""
    import time

    from badinput.baselines.mia import BASELINES

    kw = BASELINES["qlib.mia.overfit.train_overfit_mlp"]()
    cfg = kw["config"]
    assert cfg.iters <= 5 and cfg.width <= 16
    overfit.train_overfit_mlp(**kw)  # the first call pays torch's one-off start-up (seconds on a loaded machine)
    t0 = time.perf_counter()
    run = overfit.train_overfit_mlp(**kw)
    assert time.perf_counter() - t0 < 1.0 and run.train_frac.shape[0] == len(cfg.seeds)


def test_simulation1_arguments_are_checked():
    for kw, name in ((dict(thresholds=()), "thresholds"), (dict(thresholds=(0.1, float("nan"))), "thresholds"),
                     (dict(seeds=()), "seeds"), (dict(eval_every=0), "eval_every"), (dict(n_val=0), "n_val"),
                     (dict(noise_sd=-1.0), "noise_sd")):
        with pytest.raises((ValueError, TypeError), match=rf"\b{name}\b"):
            overfit.train_overfit_mlp(overfit.OverfitConfig(**{**dict(iters=1, width=2, n=4, n_val=4), **kw}),
                                      device="cpu")
