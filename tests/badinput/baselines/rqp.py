"""Baselines for the rqp area (see baselines/__init__.py)."""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd
import torch

from badinput.harness import data_dir

BASELINES: dict = {}
"""Valid calls, one per public callable: ``BASELINES[qualified name]`` is a zero-argument function
returning the keyword arguments of a small, fast, valid call (parameters left out take their
defaults). One file per area of ``qlib``; each call should take well under a second."""

B = BASELINES


# ------------------------------------------------------------------------------------- helpers
def _xy(model="logreg", n=40, D=4, K=3, seed=0):
    """Features (n, D+1) with the bias column and labels in the model's coding."""
    rng = np.random.default_rng(seed)
    X = np.hstack([rng.normal(size=(n, D)), np.ones((n, 1))])
    if model == "softmax":
        y = rng.integers(0, K, n).astype(np.int64)
    else:
        y = (X[:, 0] > 0).astype(np.int64)
        if model == "svm":
            y = 2 * y - 1
    return X, y


def _task(model="logreg", n=100, n_classes=2):
    from qlib.dpsgd import Task

    X, y = _xy(model, n, K=n_classes)
    Xt, yt = _xy(model, 20, K=n_classes, seed=1)
    return Task(f"toy-{model}", model, X, y, Xt, yt, n_classes)


def _setting(**kw):
    from qlib.repro.rqp_sgd.settings import Setting

    # m/n = 2/100 and T = 10 with δ = 1e-5: one noise calibration (cached) serves every baseline
    return Setting(**{**dict(m=2, T=10, eta=1.0, clip=0.45, M=0.3, b=4, delta=1e-5), **kw})


def _wXy(model="logreg", R=2, m=3, D=4, K=3):
    g = torch.Generator().manual_seed(0)
    X = torch.randn(R, m, D, generator=g, dtype=torch.float64)
    if model == "softmax":
        return torch.randn(R, K * D, generator=g, dtype=torch.float64), X, torch.randint(0, K, (R, m), generator=g)
    y = torch.randint(0, 2, (R, m), generator=g).to(torch.float64)
    return torch.randn(R, D, generator=g, dtype=torch.float64), X, y


def _summ():
    meds = {"Non-Private": 98.68, "DP-SGD": 96.49, "Proj-DP-SGD": 69.74, "RQP-SGD": 94.74}
    return {"Diagnostic (SVM)": pd.DataFrame({"median": meds, "std": {k: 1.0 for k in meds}, "runs": 10}),
            "Diagnostic (LogReg)": pd.DataFrame({"median": {k: 95.0 for k in meds}, "std": {k: 0.5 for k in meds},
                                                 "runs": 10})}


def _sweep():
    return pd.DataFrame({"eps": 1.0, "b": 4, "sigma": [0.5, 0.5, 1.0, 1.0], "q": [0.4, 0.4, 0.9, 0.9],
                         "run": [0, 1, 0, 1], "acc": [60.0, 62.0, 90.0, 91.0]})


# ------------------------------------------------------------------------------------- qlib.rqp
B["qlib.rqp.spacing"] = lambda: dict(b=4, M=0.3)
B["qlib.rqp.levels"] = lambda: dict(b=4, M=0.3)
B["qlib.rqp.nearest_index"] = lambda: dict(x=torch.linspace(-0.5, 0.5, 7, dtype=torch.float64), b=4, M=0.3)
B["qlib.rqp.proj_det"] = lambda: dict(x=torch.linspace(-0.5, 0.5, 7, dtype=torch.float64), b=4, M=0.3)
B["qlib.rqp.randomized_projection"] = lambda: dict(x=torch.linspace(-0.5, 0.5, 7, dtype=torch.float64), b=4, M=0.3,
                                                   q=0.9, generator=torch.Generator().manual_seed(0))
B["qlib.rqp.mean_factor"] = lambda: dict(q=0.9, b=4)
B["qlib.rqp.pmf"] = lambda: dict(mu=np.array([-0.2, 0.0, 0.25]), sigma_l=0.1, b=3, M=0.3, q=0.9)
B["qlib.rqp.log_pmf"] = lambda: dict(mu=np.array([-0.2, 0.0, 0.25]), sigma_l=0.1, b=3, M=0.3, q=0.9)
B["qlib.rqp.exact_mse"] = lambda: dict(x=np.array([-0.4, 0.0, 0.1, 0.35]), b=3, M=0.3, q=0.9)
B["qlib.rqp.kappa"] = lambda: dict(b=4)
B["qlib.rqp.quantization_error"] = lambda: dict(q=0.9, b=4, M=0.3, d=30)
B["qlib.rqp.utility_bound"] = lambda: dict(q=0.9, sigma=0.5, b=4, M=0.3, rho=0.45, eta=1.0, T=46, d=30,
                                           variant="corrected", m=10)
B["qlib.rqp.adjacent_shift"] = lambda: dict(eta=1.0, rho=0.45, m=10, adjacency="replace-one")
B["qlib.rqp.coordinate_privacy_loss"] = lambda: dict(q=0.9, sigma=1.0, b=4, M=0.3, rho=0.45, eta=1.0, m=10,
                                                     adjacency="replace-one", n_mu=21, n_shift=3)

# ------------------------------------------------------------------------------------- qlib.rqp_privacy
_PK = dict(b=4, M=0.3, rho=0.45, eta=1.0, m=10)
B["qlib.rqp_privacy.check_bits"] = lambda: dict(b=4)
B["qlib.rqp_privacy.check_sigma"] = lambda: dict(sigma=np.array([0.5, 1.0]))
B["qlib.rqp_privacy.q_min"] = lambda: dict(b=4)
B["qlib.rqp_privacy.check_q"] = lambda: dict(q=0.9, b=4)
B["qlib.rqp_privacy.log_phi_diff"] = lambda: dict(lo=np.array([-1.0, 0.5, -3.0]), hi=np.array([0.0, 2.0, -2.0]))
B["qlib.rqp_privacy.log_mix"] = lambda: dict(log_p=np.array([-0.1, -2.0, -30.0]), A=0.8, B=0.01)
B["qlib.rqp_privacy.rr_limit"] = lambda: dict(q=0.9, b=4)
B["qlib.rqp_privacy.eps_step"] = lambda: dict(q=0.9, sigma=1.0, **_PK)
B["qlib.rqp_privacy.composition_factor"] = lambda: dict(T=46, m=10, n=455)
B["qlib.rqp_privacy.eps_total"] = lambda: dict(q=0.9, sigma=1.0, **_PK, T=46, n=455)
B["qlib.rqp_privacy.per_step_target"] = lambda: dict(eps=1.0, m=10, T=46, n=455)
B["qlib.rqp_privacy.solve_q"] = lambda: dict(eps=1.0, sigma=0.8, **_PK, T=46, n=455, q_floor=1 / 15)
B["qlib.rqp_privacy.solve_sigma"] = lambda: dict(eps=1.0, q=0.9, **_PK, T=46, n=455, sigma_max=1e4)
B["qlib.rqp_privacy.gaussian_sigma"] = lambda: dict(eps=1.0, delta=1e-5, sens=0.45)
B["qlib.rqp_privacy.dpsgd_epsilon"] = lambda: dict(z=1.0, delta=1e-5, sample_rate=0.02, steps=10)
B["qlib.rqp_privacy.dpsgd_noise_multiplier"] = lambda: dict(eps=1.0, delta=1e-5, sample_rate=0.02, steps=10)

# ------------------------------------------------------------------------------------- qlib.dpsgd
B["qlib.dpsgd.Task"] = lambda: dict(name="toy", model="logreg", X_train=_xy()[0], y_train=_xy()[1],
                                    X_test=_xy(n=20, seed=1)[0], y_test=_xy(n=20, seed=1)[1], n_classes=2)
B["qlib.dpsgd.label_set"] = lambda: dict(model="softmax", n_classes=3)
B["qlib.dpsgd.loss_fn"] = lambda: dict(model="logreg")
B["qlib.dpsgd.per_example_grads"] = lambda: dict(zip(("w", "X", "y"), _wXy()), model="logreg")
B["qlib.dpsgd.clip_rows"] = lambda: dict(g=torch.randn(4, 3, generator=torch.Generator().manual_seed(0)), clip=0.45)
B["qlib.dpsgd.clipped_grad_sum"] = lambda: dict(zip(("w", "X", "y"), _wXy()), model="logreg", clip=0.45,
                                                weights=torch.tensor([1.0, 1.0, 0.0], dtype=torch.float64))
B["qlib.dpsgd.predict"] = lambda: dict(model="logreg", w=torch.randn(2, 5, generator=torch.Generator().manual_seed(0)),
                                       X=torch.as_tensor(_xy(n=6)[0], dtype=torch.float32))
B["qlib.dpsgd.accuracy"] = lambda: dict(model="logreg", w=torch.randn(2, 5, generator=torch.Generator().manual_seed(0)),
                                        X=torch.as_tensor(_xy(n=6)[0], dtype=torch.float32),
                                        y=torch.as_tensor(_xy(n=6)[1]))
B["qlib.dpsgd.train"] = lambda: dict(task=_task(), method="rqp", config=__import__("qlib.dpsgd", fromlist=["x"]).DPSGDConfig(
    runs=2, T=3, m=5, eta=1.0, clip=0.45, sigma=0.5, q=0.9, b=4, M=0.3, seed=0, device="cpu"))
B["qlib.dpsgd.DPSGDConfig"] = lambda: dict(runs=2, T=3, m=5, eta=1.0, clip=0.45, sigma=0.5, q=0.9, b=4, M=0.3, seed=0,
                                           device="cpu")

# ------------------------------------------------------------------------------------- qlib.repro.rqp_sgd
_RS = "qlib.repro.rqp_sgd."


def _run_config(**fields):
    from qlib.repro.rqp_sgd.experiments import RunConfig

    return RunConfig(**fields)

B[_RS + "settings.Setting"] = lambda: dict(m=10, T=46, eta=1.0, clip=0.45, M=0.3, b=4, delta=1e-7)

B[_RS + "experiments.mnist_task"] = lambda: dict(data_dir=data_dir(), n_train=100, n_test=50, subset_seed=0)
B[_RS + "experiments.baseline_sigma"] = lambda: dict(eps=1.0, setting=_setting(), n=100)
B[_RS + "experiments.rqp_q"] = lambda: dict(eps=1.0, sigma=np.array([0.5, 1.0]), setting=_setting(), n=100, b=4)
B[_RS + "experiments.rqp_sweep"] = lambda: dict(task=_task(), setting=_setting(), eps=1.0, sigmas=[0.5, 1.0], b=4,
                                                config=_run_config(runs=2, seed=0, device="cpu"))
B[_RS + "experiments.run_methods"] = lambda: dict(task=_task(), setting=_setting(), eps=1.0, rqp_sigma=0.5,
                                                  config=_run_config(runs=2, seed=0, device="cpu"))
B[_RS + "experiments.summarise"] = lambda: dict(df=_sweep(), by="sigma")
B[_RS + "experiments.best_sigma"] = lambda: dict(sweep=_sweep())
B[_RS + "experiments.sigma_at_q"] = lambda: dict(sweep=_sweep(), q_target=0.3)
B[_RS + "experiments.majority_rate"] = lambda: dict(task=_task())

B[_RS + "figure2.figure2_sweep"] = lambda: dict(task=_task(), setting=_setting(), sigmas=[0.5, 1.0], runs=2, seed=0,
                                                device="cpu", panels=(("a", 4, 1.0),))
B[_RS + "figure2.figure2_claims"] = lambda: dict(curve=pd.DataFrame(
    {"panel": "a", "b": 4, "eps": 1.0, "sigma": [0.5, 1.0, 2.0], "q": [0.3, 0.6, 1.0], "median": [62.0, 80.0, 92.0],
     "std": [10.0, 5.0, 2.0]}))
B[_RS + "figure2.figure2_rows"] = lambda: dict(claims=pd.DataFrame([{
    "panel": "a", "b": 4, "ε": 0.5, "σ at q≈0.3": 0.8, "q": 0.3, "acc at q≈0.3": 62.0, "acc at max q": 90.0,
    "max q": 1.0, "std at min q": 20.0, "std at max q": 3.0, "q non-decreasing": True}]), majority=58.8, runs=3)
B[_RS + "figure2.bits_sweep"] = lambda: dict(task=_task(), setting=_setting(), sigmas=[0.5], bits=[3], eps=(1.0,),
                                             config=_run_config(runs=1, seed=0, device="cpu"), sigma_q=0.5)
B[_RS + "figure2.bits_rows"] = lambda: dict(best=pd.DataFrame({"eps": [1.0] * 3, "b": [2, 3, 4],
                                                               "best_median": [90.0, 91.0, 92.5],
                                                               "q at σ = 0.5": [0.5, 0.4, 0.3]}), sigma_q=0.5)
B[_RS + "figure2.runs_text"] = lambda: dict(runs=3, bits_runs=10, n_sigmas=6)

B[_RS + "table1.table1_tasks"] = lambda: dict(data_dir=data_dir(), mnist_n_train=100, mnist_n_test=50, mnist_T=5)
B[_RS + "table1.tune_sigmas"] = lambda: dict(tasks={"c": (_task(), _setting())}, grids={"c": [0.5, 1.0]},
                                             runs={"c": 1}, seed=0, c_mode="paper", sampling="with_replacement",
                                             device="cpu")
B[_RS + "table1.run_table1"] = lambda: dict(tasks={"c": (_task(), _setting())}, chosen={"c": (0.5, 0.4, 90.0)},
                                            runs=2, seed=0, sampling="with_replacement", device="cpu", c_mode="paper")
B[_RS + "table1.side_by_side"] = lambda: dict(summ=_summ())
B[_RS + "table1.table1_rows"] = lambda: dict(summ=_summ(), reduced_mnist=False, runs=3)
B[_RS + "table1.claims_table"] = lambda: dict(summ=_summ())


def _claims_frame():
    from qlib.repro.rqp_sgd.table1 import claims_table

    return claims_table(_summ())


def _mnist_text_args():
    from qlib.repro.rqp_sgd.paper import MNIST

    task = _task("softmax", n=200, n_classes=10)
    col = "MNIST (LogReg)"
    import dataclasses

    return dict(tasks={col: (task, dataclasses.replace(MNIST, T=10))},
                sweeps={col: pd.DataFrame({"sigma": [5.0, 7.0], "q": [0.5, 0.9], "acc": [60.0, 80.0]})},
                summ={col: _summ()["Diagnostic (SVM)"]})


def _privacy_table_args():
    s = _setting()
    return dict(tasks={"c": (_task(), s)}, results={"c": pd.DataFrame({"method": ["DP-SGD"], "sigma": [0.66]})},
                chosen={"c": (0.5, 0.4, 90.0)})


B[_RS + "table1.table1_claims_rows"] = lambda: dict(claims=_claims_frame())
B[_RS + "table1.privacy_table"] = _privacy_table_args
B[_RS + "table1.mnist_text"] = _mnist_text_args
B[_RS + "table1.reduction_text"] = lambda: dict(runs=3, sweep_runs=2, mnist_sweep_runs=1, mnist_n_train=2000,
                                                mnist_n_test=1000, mnist_T=30)


@functools.lru_cache(maxsize=None)
def _law_cached():
    from qlib.repro.rqp_sgd.theory import algorithm1_law

    return algorithm1_law(200, M=0.3, seed=0)


@functools.lru_cache(maxsize=None)
def _loss_table_cached():
    from qlib.repro.rqp_sgd.theory import privacy_loss_table

    return privacy_loss_table(_setting(m=10), cases=((0.5, 0.5, 4), (1.0, 1.1, 4)))


@functools.lru_cache(maxsize=None)
def _theorem2_cached():
    from qlib.repro.rqp_sgd.theory import theorem2_rows

    return theorem2_rows(0.3, n_grid=11, bits=(2,))


@functools.lru_cache(maxsize=None)
def _solved_cached():
    from qlib.repro.rqp_sgd.theory import theorem1_solve_table

    return theorem1_solve_table(_setting(m=10, T=46), 455, budgets=(1.0,), sigmas=(0.8,))


@functools.lru_cache(maxsize=None)
def _fig1_curves_cached():
    from qlib.repro.rqp_sgd.theory import fig1_curves

    return fig1_curves((0.5,), qs=(0.9, 0.95))


@functools.lru_cache(maxsize=None)
def _fig1_m_cached():
    from qlib.repro.rqp_sgd.theory import fig1_m_sensitivity

    return fig1_m_sensitivity(10, eps=(0.5,))



def _law():
    return _law_cached().copy()


def _loss_table():
    return _loss_table_cached().copy()


def _theorem2():
    return list(_theorem2_cached())


def _solved():
    return _solved_cached().copy()


def _fig1_curves():
    return _fig1_curves_cached().copy()


def _fig1_m():
    return _fig1_m_cached().copy()

B[_RS + "theory.algorithm1_law"] = lambda: dict(n_draws=200, M=0.3, seed=0, x0=0.123, bits=(3, 4), qs=(0.3, 0.9))
B[_RS + "theory.algorithm1_rows"] = lambda: dict(law=_law())
B[_RS + "theory.eps_table"] = lambda: dict(setting=_setting(m=10))
B[_RS + "theory.theorem1_solve_table"] = lambda: dict(setting=_setting(m=10, T=46), n=455, budgets=(0.5, 1.0),
                                                      sigmas=(0.8,))
B[_RS + "theory.theorem1_rows"] = lambda: dict(solved=_solved(), b=4)
B[_RS + "theory.privacy_loss_table"] = lambda: dict(setting=_setting(m=10), cases=((0.5, 0.5, 4),))
B[_RS + "theory.reference_coordinate_loss"] = lambda: dict(q=1.0, sigma=1.1, b=2, M=0.3, rho=0.45, eta=1.0, m=10,
                                                           adjacency="replace-one", n_mu=3, dps=15)
B[_RS + "theory.privacy_loss_rows"] = lambda: dict(table=_loss_table())
B[_RS + "theory.privacy_loss_reference_rows"] = lambda: dict(setting=_setting(m=10), cases=((1.0, 1.1, 2),))
B[_RS + "theory.privacy_loss_text"] = lambda: dict(table=_loss_table())
B[_RS + "theory.mse_curves"] = lambda: dict(xs=np.array([-0.4, 0.0, 0.2]), b=3, M=0.3, qs=(0.5, 1.0))
B[_RS + "theory.theorem2_rows"] = lambda: dict(M=0.3, n_grid=11, bits=(2, 4), b_out=4, x_out=1.0)
B[_RS + "theory.theorem2_text"] = lambda: dict(rows=_theorem2())
B[_RS + "theory.fig1_bounds"] = lambda: dict(eps=0.5, q=0.95, setting=_setting(m=1, T=445, delta=1e-7), n=445, d=30)
B[_RS + "theory.fig1_curves"] = lambda: dict(eps_grid=(0.5,), d=30, qs=(0.95,))
B[_RS + "theory.fig1_rows"] = lambda: dict(curves=_fig1_curves(), m=1, d=30, eps_from=0.2)
B[_RS + "theory.fig1_m_sensitivity"] = lambda: dict(m=10, d=30, eps=(0.5,), q=0.95)
B[_RS + "theory.fig1_m_sensitivity_rows"] = lambda: dict(table=_fig1_m(), m=10, q=0.95)

# Theorem 1 erratum: counterexample search, corrected bounds, operating points
B["qlib.rqp_privacy.eps_step_bound"] = lambda: dict(q=0.9, sigma=1.0, **_PK)
B["qlib.rqp.coordinate_privacy_loss_upper"] = lambda: dict(q=0.9, sigma=1.0, b=4, M=0.3, rho=0.45, eta=1.0, m=10,
                                                           adjacency="replace-one", per_shift=5)
_CEX = dict(bits=(4,), qs=(0.3,), sigmas=(0.1,), n_mu=21, per_shift=5)


@functools.lru_cache(maxsize=None)
def _search_cached():
    from qlib.repro.rqp_sgd.theory import counterexample_search

    return counterexample_search(_setting(m=10), **_CEX)


@functools.lru_cache(maxsize=None)
def _ops_cached():
    from qlib.repro.rqp_sgd.theory import operating_points

    return operating_points(_setting(m=10, T=46), 455, (0.2,), panels=(("Figure 2(c)", 4, 1.0),), n_mu=21, per_shift=5)


def _search():
    return _search_cached().copy()


def _ops():
    return _ops_cached().copy()


def _spent():
    from qlib.repro.rqp_sgd.theory import spent_table

    return spent_table(_ops())


B[_RS + "theory.admissible"] = lambda: dict(q=0.3, b=4)
B[_RS + "theory.counterexample_search"] = lambda: dict(setting=_setting(m=10), **_CEX)
B[_RS + "theory.smallest_counterexample"] = lambda: dict(search=_search(), adjacency="replace-one")
B[_RS + "theory.counterexample_rows"] = lambda: dict(search=_search())
B[_RS + "theory.corrected_bound_rows"] = lambda: dict(search=_search())
B[_RS + "theory.operating_points"] = lambda: dict(setting=_setting(m=10, T=46), n=455, sigmas=(0.2,),
                                                  panels=(("Figure 2(c)", 4, 1.0),), n_mu=21, per_shift=5)
B[_RS + "theory.operating_point_rows"] = lambda: dict(ops=_ops(), where="Figure 2(c)", sigmas=(0.2,))
B[_RS + "theory.spent_table"] = lambda: dict(ops=_ops())
B[_RS + "theory.spent_rows"] = lambda: dict(table=_spent())
B[_RS + "theory.erratum_text"] = lambda: dict(search=_search(), spent=_spent())

B[_RS + "table1.gap_probe"] = lambda: dict(chosen={"Diagnostic (SVM)": (1.1, 1.0, 90.0)}, runs=2, seed=0,
                                           sampling="with_replacement", device="cpu", c_mode="paper")
B[_RS + "theory.largest_violations"] = lambda: dict(search=_search(), k=2)


def _gap_table():
    meds = {"Non-Private": 97.0, "DP-SGD": 95.0, "Proj-DP-SGD": 80.0, "RQP-SGD": 90.0}
    return pd.DataFrame([{"variant": v, "column": "Diagnostic (SVM)", **meds, "std Proj-DP": 9.0, "std RQP": 2.0,
                          "RQP − Proj-DP (pp)": 10.0} for v in ("a new split per run",
                                                              "baselines' σ from the Gaussian formula")])


def _ablation_table():
    return pd.DataFrame([{"panel": "a", "b": 4, "ε": 0.5, "σ": 0.2, "q": 0.3, "lost to randomness (pp)": 12.0,
                          "lost to noise (pp)": 1.0, "runs": 2}])


B[_RS + "table1.gap_rows"] = lambda: dict(tab=_gap_table(), runs=2)
B[_RS + "table1.mnist_sweep_rows"] = lambda: dict(sweep=_sweep(), reduced=False)
B[_RS + "table1.randomness_ablation"] = lambda: dict(task=_task(), setting=_setting(), panels=(("a", 4, 0.5),), q=0.3,
                                                     config=_run_config(runs=1, seed=0, device="cpu"))
B[_RS + "table1.ablation_rows"] = lambda: dict(table=_ablation_table())
