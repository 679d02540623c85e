"""The MIA game simulated literally vs the exact accuracies (paper 003 §2, Theorem 3.1)."""

import numpy as np
import pytest

from qlib.mia import exact, game, gaussian


def test_discrete_game_matches_exact_both_conventions():
    p, n = (0.2, 0.3, 0.5), 10
    for nu, conv in ((0.5, "003"), (0.3, "003"), (0.5, "001")):
        ex = exact.max_acc_discrete(p, n, nu)
        r = game.simulate_mia_game(game.discrete_sampler(p), game.count_algorithm(3),
                                   game.discrete_bayes_attack(p, n, nu),
                                   game.GameConfig(n, nu, 100_000, seed=5, convention=conv))
        assert abs(r.z_score(ex)) <= 4


def test_gaussian_game_matches_exact():
    n, d = 10, 3
    ex = 0.5 + 0.5 * gaussian.gaussian_mean_delta(n, d)
    r = game.simulate_mia_game(game.gaussian_sampler(d), game.mean_algorithm, game.gaussian_bayes_attack(n, 0.5),
                               game.GameConfig(n, 0.5, 100_000, seed=1))
    assert abs(r.z_score(ex)) <= 4


def test_constant_attacks_and_seed_reproducibility():
    p, n = (0.4, 0.6), 5
    args = (game.discrete_sampler(p), game.count_algorithm(2))
    always = game.simulate_mia_game(*args, lambda t, z: np.ones(len(z), bool), game.GameConfig(n, 0.2, 50_000, seed=0))
    assert abs(always.z_score(0.8)) <= 4  # φ ≡ 1 has accuracy 1 − ν
    a = game.simulate_mia_game(*args, game.discrete_bayes_attack(p, n, 0.5), game.GameConfig(n, 0.5, 10_000, seed=7))
    b = game.simulate_mia_game(*args, game.discrete_bayes_attack(p, n, 0.5), game.GameConfig(n, 0.5, 10_000, seed=7))
    assert a.accuracy == b.accuracy


def test_bad_input():
    args = (game.discrete_sampler([0.5, 0.5]), game.count_algorithm(2), lambda t, z: z == 0)
    with pytest.raises(ValueError, match="nu"):
        game.simulate_mia_game(*args, game.GameConfig(3, 0.0, 10))
    with pytest.raises(ValueError, match="convention"):
        game.simulate_mia_game(*args, game.GameConfig(3, 0.5, 10, convention="x"))
    with pytest.raises(ValueError, match="1/2"):
        game.simulate_mia_game(*args, game.GameConfig(3, 0.3, 10, convention="001"))


def test_chunk_and_seed_are_checked():
    """Regression: chunk=0 looped forever (the batch never advanced); now a ValueError naming chunk."""
    args = (game.discrete_sampler([0.5, 0.5]), game.count_algorithm(2), lambda t, z: z == 0)
    for bad in (0, -1):
        with pytest.raises(ValueError, match=r"\bchunk\b"):
            game.simulate_mia_game(*args, game.GameConfig(3, 0.5, 10, chunk=bad))
    with pytest.raises(TypeError, match=r"\bchunk\b"):
        game.simulate_mia_game(*args, game.GameConfig(3, 0.5, 10, chunk=1.5))
    with pytest.raises(ValueError, match=r"\bseed\b"):
        game.simulate_mia_game(*args, game.GameConfig(3, 0.5, 10, seed=-1))
    rng = np.random.default_rng(0)
    r = game.simulate_mia_game(*args, game.GameConfig(3, 0.5, 10, seed=rng, chunk=3))  # a Generator is used as is
    assert r.trials == 10
