"""Baselines for the mia area (see baselines/__init__.py): qlib.mia.* and qlib.repro.mia_limits.*.

Every call is small (a few atoms, n of a few units, a handful of Monte-Carlo trials or draws, a
network of width 8 trained for 2–3 iterations on CPU) so that each bad call re-runs in milliseconds.
Objects that are not mutated (fitted k-means, a clustering dict, a fake ``OverfitRun``, ledger
rows) are built once and cached.
"""

from __future__ import annotations

import functools

import numpy as np

BASELINES: dict = {}

P3 = (0.2, 0.3, 0.5)


def _p():
    return np.array(P3)


def _losses():
    return np.array([[0.0, 1.0, 0.5], [1.0, 0.0, 0.2], [0.8, 0.9, 0.1]])


def _q_p():
    """Member and non-member tables (2 parameters × 2 atoms), Bernoulli(0.3) data, n = 2."""
    from qlib.mia import exact

    return exact.joint_tables([0.7, 0.3], 2, lambda c: c[:, 1] > 0)


def _X(n=40, dim=4, seed=0):
    return np.random.default_rng(seed).normal(size=(n, dim))


def _labels(n=40, seed=0):
    return np.random.default_rng(seed + 1).integers(0, 10, size=n)


@functools.lru_cache(maxsize=None)
def _km():
    from qlib.mia import discretise as D

    return D.fit_kmeans(_X(), 3, seed=0)


@functools.lru_cache(maxsize=None)
def _disc():
    from qlib.repro.mia_limits import mnist

    return mnist.fit_discretisations(_X(60), _labels(60), [2], 10, None, 0)


def _fake_run():
    from qlib.mia.overfit import OverfitRun

    its = np.arange(0, 101, 25)
    thr = np.array([1e-2, 1e-6])
    tf = np.stack([np.clip(its / 50, 0, 1)] * 2, -1)[None]
    vf = np.zeros_like(tf)
    return OverfitRun(its, thr, tf, vf, np.zeros((1, len(its))), np.zeros((1, len(its))))


@functools.lru_cache(maxsize=None)
def _b1_rows():
    from qlib.repro.mia_limits import theory as T

    return tuple(T.prop_b1_rows(reps=10))


@functools.lru_cache(maxsize=None)
def _acc_frame():
    from qlib.repro.mia_limits import mnist

    return mnist.table1_accuracies(_X(60), _labels(60), _X(20, seed=2), _labels(20, seed=2), _disc(),
                                   mnist.Table1Config(n_list=[10], raw_n_list=[10], reps=1, iters=1, lr=0.01, hidden=4,
                                                      seed=0), device="cpu")


def _game_args():
    from qlib.mia import game

    return dict(sample=game.discrete_sampler(P3), algorithm=game.count_algorithm(3),
                attack=game.discrete_bayes_attack(P3, 5, 0.5))


M = "qlib.mia."
R = "qlib.repro.mia_limits."

# ---- qlib.mia.bounds ------------------------------------------------------------------------
BASELINES.update({
    M + "bounds.max_delta_discrete": lambda: {"p": _p(), "n": 5},
    M + "bounds.C_P": lambda: {"p": _p()},
    M + "bounds.gini_simpson": lambda: {"p": _p()},
    M + "bounds.shannon": lambda: {"p": _p()},
    M + "bounds.C_P_range": lambda: {"delta": 0.5, "K": 3},
    M + "bounds.cor541_ratio": lambda: {"p": _p(), "n": 10},
    M + "bounds.cor541_condition": lambda: {"p": _p(), "n": 10},
    M + "bounds.sample_size_discrete": lambda: {"C": 1.0, "eps": 0.1},
    M + "bounds.bernoulli_max_delta": lambda: {"p": 0.3, "n": 5},
    M + "bounds.bernoulli_threshold_delta": lambda: {"p": 0.3, "n": 5, "m": 2},
    M + "bounds.log_bernoulli_threshold_delta": lambda: {"p": 0.3, "n": 5, "m": 2},
    M + "bounds.kl_bernoulli": lambda: {"t": 0.3, "p": 0.5},
    M + "bounds.power_law_max_delta": lambda: {"a": 1.5, "n": 10, "J": 1000},
    M + "bounds.entropy_bound_chain": lambda: {"p": _p()},
})

# ---- qlib.mia.discretise --------------------------------------------------------------------
BASELINES.update({
    M + "discretise.flatten_images": lambda: {
        "images": np.random.default_rng(0).integers(0, 256, size=(3, 4, 4))},
    M + "discretise.split_for_clustering": lambda: {"n_total": 100, "n_fit": 10, "n_clusterings": 3, "seed": 0},
    M + "discretise.fit_kmeans": lambda: {"X": _X(), "K": 3, "seed": 0},
    M + "discretise.cluster_law": lambda: {"km": _km(), "X": _X(seed=1)},
    M + "discretise.cluster_label_law": lambda: {"km": _km(), "X": _X(seed=1), "y": _labels()},
    M + "discretise.delta_bound_column": lambda: {"C": 4.3, "n": 1000},
    M + "discretise.check_features": lambda: {"X": _X()},
    M + "discretise.check_labels": lambda: {"y": _labels(), "n": 40},
    M + "discretise.discretise": lambda: {"km": _km(), "X": _X(seed=1)},
    M + "discretise.distinct_pairs": lambda: {"X": np.repeat(_X(5), 2, axis=0), "y": np.repeat(_labels(5), 2)},
    M + "discretise.train_mlp_classifier": lambda: {
        "X": _X(10), "y": _labels(10), "weights": np.ones(10), "hidden": 4, "iters": 2, "lr": 0.01, "seed": 0,
        "device": "cpu"},
    M + "discretise.accuracy": lambda: {"predict": lambda X: np.zeros(len(X), dtype=np.int64), "X": _X(10),
                                        "y": _labels(10)},
})

# ---- qlib.mia.erm ---------------------------------------------------------------------------
BASELINES.update({
    M + "erm.check_loss_matrix": lambda: {"name": "losses", "losses": _losses(), "m": 3},
    M + "erm.erm_exact": lambda: {"losses": _losses(), "p": _p(), "n": 3},
    M + "erm.erm_log_delta": lambda: {"losses": _losses(), "p": _p(), "n": 3},
    M + "erm.erm_delta": lambda: {"losses": _losses(), "p": _p(), "n": 3},
    M + "erm.loss_gaps": lambda: {"losses": _losses(), "p": _p()},
    M + "erm.chernoff_exponent": lambda: {"gap": np.array([1.0, -1.0, 0.5]), "p": _p()},
    M + "erm.chernoff_exponents": lambda: {"losses": _losses(), "p": _p()},
    M + "erm.chernoff_rate": lambda: {"losses": _losses(), "p": _p()},
    M + "erm.cramer_transform": lambda: {"Y": np.array([[1.0], [-1.0], [0.5]]), "p": _p(), "x": np.array([0.2])},
    M + "erm.cramer_rate_eq11": lambda: {"losses": _losses()[:2], "p": _p()},
    M + "erm.gap_statistics": lambda: {"losses": _losses(), "p": _p()},
    M + "erm.prop_c4_closed_form": lambda: {"Lam": np.array([[2.0, 0.5], [0.5, 1.0]])},
    M + "erm.prop_c4_inf": lambda: {"Lam": np.array([[2.0, 0.5], [0.5, 1.0]])},
    M + "erm.lemma_b1_bounds": lambda: {"P": _p(), "Q": np.array([0.5, 0.25, 0.25])},
    M + "erm.schur_inverse_diag": lambda: {"M": np.array([[2.0, 0.5], [0.5, 1.0]]), "j": 0},
})

# ---- qlib.mia.exact -------------------------------------------------------------------------
BASELINES.update({
    M + "exact.check_prob_vector": lambda: {"name": "p", "p": _p()},
    M + "exact.check_max_states": lambda: {"max_states": 10},
    M + "exact.tv_discrete": lambda: {"p": _p(), "q": np.array([0.5, 0.25, 0.25])},
    M + "exact.bayes_accuracy": lambda: dict(zip(("q_member", "p_nonmember"), _q_p()), nu=0.5),
    M + "exact.printed_eq23_accuracy": lambda: dict(zip(("q_member", "p_nonmember"), _q_p()), nu=0.3),
    M + "exact.bayes_attack_table": lambda: dict(zip(("q_member", "p_nonmember"), _q_p()), nu=0.5),
    M + "exact.attack_accuracy": lambda: dict(zip(("q_member", "p_nonmember"), _q_p()), nu=0.5,
                                              attack=np.array([[False, True], [True, False]])),
    M + "exact.brute_force_accuracies": lambda: dict(zip(("q_member", "p_nonmember"), _q_p()), nu=0.5),
    M + "exact.sec_from_acc": lambda: {"acc": 0.8, "nu": 0.5},
    M + "exact.mis_from_acc": lambda: {"acc": 0.8},
    M + "exact.accuracy_bounds": lambda: {"delta": 0.3, "nu": 0.5},
    M + "exact.delta_lower_bound_from_acc": lambda: {"acc": 0.8},
    M + "exact.n_count_vectors": lambda: {"n": 3, "K": 2},
    M + "exact.count_vectors": lambda: {"n": 3, "K": 3},
    M + "exact.log_multinomial_pmf": lambda: {"counts": np.array([[3, 0, 0], [1, 1, 1], [0, 2, 1]]), "p": _p()},
    M + "exact.joint_tables": lambda: {"p": _p(), "n": 3},
    M + "exact.delta_discrete_algorithm": lambda: {"p": _p(), "n": 3},
    M + "exact.delta_finite_theta": lambda: {"p": _p(), "n": 3, "F": lambda c: c[:, 0] > 0},
    M + "exact.max_acc_discrete": lambda: {"p": _p(), "n": 3, "nu": 0.5},
    M + "exact.sec_discrete": lambda: {"p": _p(), "n": 3, "nu": 0.5},
})

# ---- qlib.mia.game --------------------------------------------------------------------------
BASELINES.update({
    M + "game.simulate_mia_game": lambda: dict(_game_args(), config=__import__("qlib.mia.game", fromlist=["x"]).GameConfig(
        n=5, nu=0.5, trials=100, seed=0, chunk=50)),
    M + "game.GameConfig": lambda: dict(n=5, nu=0.5, trials=100, seed=0, chunk=50),
    M + "game.discrete_sampler": lambda: {"p": _p()},
    M + "game.count_algorithm": lambda: {"K": 3},
    M + "game.discrete_bayes_attack": lambda: {"p": _p(), "n": 5, "nu": 0.5},
    M + "game.gaussian_sampler": lambda: {"d": 2},
    M + "game.mean_algorithm": lambda: {"data": np.random.default_rng(0).normal(size=(4, 5, 2))},
    M + "game.gaussian_bayes_attack": lambda: {"n": 5, "nu": 0.5},
})

# ---- qlib.mia.gaussian ----------------------------------------------------------------------
BASELINES.update({
    M + "gaussian.gaussian_mean_delta": lambda: {"n": 10, "d": 1},
    M + "gaussian.gaussian_mean_delta_d2": lambda: {"n": 10},
    M + "gaussian.tv_gauss_shift_scale": lambda: {"a": 0.3, "s2": 0.9, "d": 2},
    M + "gaussian.gaussian_mean_delta_mixture": lambda: {"n": 5, "d": 1},
    M + "gaussian.m1": lambda: {"d": 3},
    M + "gaussian.gaussian_mean_bound": lambda: {"n": 10, "d": 2},
    M + "gaussian.gaussian_mean_limit": lambda: {"d": 2},
    M + "gaussian.prop_g1_tv": lambda: {"beta_norm": 1.0, "n": 10, "d": 2},
    M + "gaussian.prop_g1_bound": lambda: {"beta_norm": 1.0, "n": 10, "d": 2},
    M + "gaussian.remark51_n": lambda: {"c": 1.0, "d": 2, "eps": 0.1},
    M + "gaussian.remark51_n_exact": lambda: {"c": 1.0, "d": 2, "eps": 0.1},
    M + "gaussian.remark51_lhs": lambda: {"c": 1.0, "d": 2, "n": 100.0},
    M + "gaussian.gaussian_bayes_log_ratio": lambda: {
        "u": np.random.default_rng(0).normal(size=(4, 2)), "w": np.random.default_rng(1).normal(size=(4, 2)), "n": 5},
})

# ---- qlib.mia.overfit -----------------------------------------------------------------------
BASELINES.update({
    M + "overfit.fraction_below": lambda: {"losses": np.array([0.0, 0.1, 0.2, 5.0]), "eps": [0.15, 1.0]},
    M + "overfit.eq6_lower_bound": lambda: {"train_losses": np.array([0.0, 0.1, 0.2, 5.0]),
                                            "val_losses": np.array([0.05, 1.0, 2.0, 3.0]), "eps": [0.15, 1.0]},
    M + "overfit.ols_losses": lambda: {"d": 3, "n": 5, "trials": 10, "noise_sd": 1.0, "seed": 0},
    M + "overfit.loss_threshold_accuracy": lambda: {"train_loss": np.array([0.0, 0.1, 0.2, 5.0]),
                                                    "fresh_loss": np.array([0.05, 1.0, 2.0, 3.0]), "eps": 0.15},
    M + "overfit.ols_threshold_game": lambda: {"d": 3, "n": 5, "trials": 10, "seed": 0},
    M + "overfit.train_overfit_mlp": lambda: {"config": __import__("qlib.mia.overfit", fromlist=["x"]).OverfitConfig(
        n=8, d=3, width=8, iters=3, lr=0.1, n_val=16, noise_sd=0.1, thresholds=(0.5, 1e-2), seeds=(0,), eval_every=1),
        "device": "cpu"},
    M + "overfit.OverfitConfig": lambda: {
        "n": 8, "d": 3, "width": 8, "iters": 3, "lr": 0.1, "n_val": 16, "noise_sd": 0.1,
        "thresholds": (0.5, 1e-2), "seeds": (0,), "eval_every": 1},
    M + "overfit.wishart_gram_bartlett": lambda: {"s": 10, "n": 3, "reps": 2, "rng": np.random.default_rng(0)},
    M + "overfit.prob_event_E": lambda: {"s": 50, "n": 3, "reps": 20, "seed": 0},
    M + "overfit.propB1_n_printed": lambda: {"s": 10**6},
    M + "overfit.propB1_n_corrected": lambda: {"s": 10**6},
    M + "overfit.propB1_bound": lambda: {"s": 10**6},
})

# ---- qlib.repro.mia_limits.overfitting and .mnist ----------------------------------------------
BASELINES.update({
    R + "overfitting.figure1_table": lambda: {"run": _fake_run(), "marks": (0, 50, 100)},
    R + "overfitting.figure1_summary": lambda: {"run": _fake_run()},
    R + "overfitting.figure1_rows": lambda: {"run": _fake_run(), "seeds": [0]},
    R + "overfitting.figure1_reductions": lambda: {"iters": 100, "eval_every": 10, "seeds": [0]},
    R + "mnist.table1_c_tolerance": lambda: {"K": 20},
    R + "mnist.fit_discretisations": lambda: {"X": _X(60), "y": _labels(60), "K_list": [2], "n_fit": 10,
                                              "n_freq": 20, "seed": 0},
    R + "mnist.balanced_clustering_c": lambda: {"K": 20, "n_images": 1000, "seed": 0},
    R + "mnist.table1_c_rows": lambda: {"cp": {20: 4.31, 50: 6.75}, "cp_pair": {20: 10.0, 50: 15.0}},
    R + "mnist.table1_balanced_rows": lambda: {"K_list": [20], "n_images": 1000, "seed": 0},
    R + "mnist.table1_law_text": lambda: {"cp": {20: 4.31, 50: 6.75}, "cp_pair": {20: 10.0, 50: 15.0}},
    R + "mnist.table1_delta_rows": lambda: {"cp": {20: 4.31}},
    R + "mnist.table1_accuracies": lambda: {
        "X": _X(60), "y": _labels(60), "Xt": _X(20, seed=2), "yt": _labels(20, seed=2), "disc": _disc(),
        "config": __import__("qlib.repro.mia_limits.mnist", fromlist=["x"]).Table1Config(
            n_list=[10], raw_n_list=[10], reps=1, iters=1, lr=0.01, hidden=4, seed=0), "device": "cpu"},
    R + "mnist.Table1Config": lambda: {"n_list": [10], "raw_n_list": [10], "reps": 1, "iters": 1, "lr": 0.01,
                                       "hidden": 4, "seed": 0},
    R + "mnist.table1_acc_rows": lambda: {"acc": _acc_frame()},
    R + "mnist.table1_cp_accuracy_rows": lambda: {"acc": _acc_frame(), "cp": _disc()["cp"]},
    R + "mnist.table1_reductions": lambda: {"n_list": [1000], "raw_n_list": [1000], "reps": 1, "n_freq": 5000,
                                            "n_rest": 57_000},
})

# ---- qlib.repro.mia_limits.theory -----------------------------------------------------------
BASELINES.update({
    R + "theory.erratum_where": lambda: {"where": "Eq. 23", "eid": "003-E1"},
    R + "theory.theorem31_rows": lambda: {"nus": (0.3, 0.5), "ns": (2,), "p1": 0.3},
    R + "theory.game_vs_exact_rows": lambda: {"trials": 200, "seed": 0, "cases": (((0.2, 0.3, 0.5), 5, 0.5),)},
    R + "theory.theorem54_three_ways_rows": lambda: {"cases": (((0.2, 0.3, 0.5), 5),), "max_states": 1000},
    R + "theory.theorem54_maximality_rows": lambda: {"p": (0.2, 0.3, 0.5), "n": 4, "draws": 2, "Ls": (2,), "seed": 0},
    R + "theory.lemma_c3_rows": lambda: {"p": 0.3, "rate_ns": (10, 51)},
    R + "theory.cor541_laws": lambda: {"n_dirichlet": 2, "seed": 0},
    R + "theory.cor541_min_ratio": lambda: {"laws": [np.array([0.5, 0.5]), np.full(4, 0.25)], "ns": (5, 10, 100)},
    R + "theory.corollary541_rows": lambda: {"ns": (5, 10, 100), "n_dirichlet": 2, "seed": 0, "limit_tol": 3e-3},
    R + "theory.sample_size_rule_rows": lambda: {"laws": ((0.5, 0.5),), "epss": (0.1,)},
    R + "theory.diversity_constant_rows": lambda: {"draws": 10, "Ks": (2, 3), "seed": 0},
    R + "theory.lemma_c1_rows": lambda: {"ns": (100, 1000), "J": 2000},
    R + "theory.theorem51_rows": lambda: {"trials": 200, "seed": 0, "mixture_cases": (), "mc_cases": ((10, 1),),
                                              "rate_cases": ((1000, 2e-3),)},
    R + "theory.prop_g1_rows": lambda: {"ds": (1,), "ns": (2, 10), "betas": (0.5, 1.0)},
    R + "theory.remark51_rows": lambda: {"cs": (0.1, 1.0), "ds": (1, 2), "epss": (0.1, 0.5)},
    R + "theory.prop42_rows": lambda: {"draws": 20, "seed": 0},
    R + "theory.example45_rows": lambda: {"trials": 10, "seed": 0, "interp_min": 0.995},
    R + "theory.prop_b1_rows": lambda: {"reps": 10, "seed": 0, "s_printed": 10**6, "s_corrected": (2 * 10**5,)},
    R + "theory.corollary541_text": lambda: {"rmin": 0.37, "n_laws": 5, "n_ns": 6},
    R + "theory.prop_b1_text": lambda: {"rows": list(_b1_rows())},
})

# ---------------------------------------------------------------------------------------------- methods (issue 30)
BASELINES["qlib.mia.game.GameResult.z_score"] = lambda: {"self": __import__("qlib.mia.game").mia.game.GameResult(
    0.6, 0.01, 1000), "exact": 0.55}
