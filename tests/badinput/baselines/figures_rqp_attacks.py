"""Baselines for the figure and table displays of the rqp-sgd and attacks parts (see baselines/__init__.py):
``qlib.repro.rqp_sgd.figures``, the table and text displays of ``qlib.repro.rqp_sgd.table1`` and
``.figure2``, and ``qlib.repro.attacks.figures``. Each draws from a few rows with the columns its driver
returns (the toys' driver at a tiny size; the other studies' results built by hand)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd

BASELINES: dict = {}
RS = "qlib.repro.rqp_sgd."
RA = "qlib.repro.attacks."


# ------------------------------------------------------------------------------------- rqp-sgd
def _task():
    from qlib.repro.rqp_sgd.experiments import diagnostic_task

    return diagnostic_task("logreg")


def _setting():
    from qlib.repro.rqp_sgd.paper import DIAGNOSTIC

    return DIAGNOSTIC


def _mse():
    return pd.DataFrame({"q": [0.5, 0.5, 1.0, 1.0], "x": [-0.4, 0.1, -0.4, 0.1], "mse": [0.05, 0.03, 0.01, 0.0004],
                         "bound": [0.04, 0.04, 0.0004, 0.0004]})


def _fig1():
    return pd.DataFrame({"ε": [0.5, 1.0], "RQP q=0.90": [1.1, 0.8], "RQP q=0.95": [1.0, 0.6],
                         "Proj-DP (RDP)": [13.2, 7.2], "Proj-DP (Gaussian)": [794.0, 199.0]})


def _sweep():
    return pd.DataFrame({"sigma": [0.3, 1.1], "q": [0.23, 1.0], "run": [0, 0], "acc": [60.0, 95.0]})


def _curve():
    return pd.DataFrame([{"panel": p, "b": b, "eps": e, "sigma": s, "q": min(1.0, 0.2 + 0.6 * s), "median": 60 + 30 * s,
                          "std": 5.0} for p, b, e in (("a", 4, 0.5), ("b", 3, 0.5)) for s in (0.1, 1.0)])


def _claims():
    return pd.DataFrame([{"panel": "a", "b": 4, "ε": 0.5, "σ at q≈0.3": 0.8, "q": 0.3, "acc at q≈0.3": 62.0,
                          "acc at max q": 90.0, "max q": 1.0, "std at min q": 20.0, "std at max q": 3.0,
                          "q non-decreasing": True}])


def _rows():
    from qlib.repro.rqp_sgd.table1 import table1_rows

    meds = {"Non-Private": 98.68, "DP-SGD": 96.49, "Proj-DP-SGD": 69.74, "RQP-SGD": 94.74}
    return table1_rows({"Diagnostic (SVM)": pd.DataFrame({"median": meds, "std": 1.0, "runs": 3})},
                       reduced_mnist=False, runs=3)


BASELINES.update({
    RS + "figures.mse_figure": lambda: {"mse": _mse(), "b": 4, "M": 0.3},
    RS + "figures.figure1": lambda: {"fig1": _fig1(), "qs": (0.90, 0.95)},
    RS + "figures.tuning_figure": lambda: {"sweeps": {"Diagnostic (LogReg)": _sweep()}},
    RS + "figures.figure2": lambda: {"curve": _curve(), "panels": (("a", 4, 0.5), ("b", 3, 0.5))},
    RS + "figures.bits_figure": lambda: {"best": pd.DataFrame({"eps": [1.0, 1.0], "b": [3, 4],
                                                               "best_median": [93.0, 92.5]})},
    RS + "figure2.majority_text": lambda: {"claims": _claims(), "majority": 58.8},
    RS + "table1.tasks_table": lambda: {"tasks": {"Diagnostic (LogReg)": (_task(), _setting())}},
    RS + "table1.chosen_table": lambda: {"chosen": {"Diagnostic (SVM)": (1.1, 1.0, 94.7)}},
    RS + "table1.reference_table": lambda: {"ref_splits": 1},
    RS + "table1.within_text": lambda: {"rows": _rows()},
})


# ------------------------------------------------------------------------------------- attacks
_CACHE: dict = {}
_QUANTS = ["sign", "bits4", "ternary50"]


def _toy_studies():
    from qlib.repro.attacks import toys

    if "toys" not in _CACHE:
        kw = dict(shadows=4, pairs=200, min_targets=4, reps=3, seed=0)
        _CACHE["toys"] = {"empirical": toys.attack_study(toys.empirical_toy(toys.zipf_law(4)), [10, 20],
                                                         toys.AttackStudyConfig(**kw)),
                          "erm": toys.attack_study(toys.erm_toy(), [5, 10], toys.AttackStudyConfig(**kw))}
    return _CACHE["toys"]


def _synthetic_analysis():
    from qlib.repro.attacks import protocol, synthetic

    laws = [f"law {i}" for i in range(9)]
    rows = [{"law": law, "quantizer": q, "r": np.nan if q == synthetic.REFERENCE else 1e-3 * (i + 1), "r_lo": 0.0,
             "r_hi": 5e-3, **{a: 0.1 for a in protocol.ATTACKS}, "strongest": protocol.ATTACKS[0], "advantage": 0.1,
             "advantage_lo": 0.05, "advantage_hi": 0.15, "disc": 0.05}
            for law in laws for i, q in enumerate([synthetic.REFERENCE, *_QUANTS])]
    per_law = pd.DataFrame({"law": laws, "rho": 0.5, "rho_lo": 0.2, "rho_hi": 0.8, "rho_seeds": [[0.4, 0.6]] * 9,
                            "rho_seed_sd": 0.1, "rho_disc": 0.3})
    return synthetic.SyntheticAnalysis(per_quantizer=pd.DataFrame(rows), per_law=per_law,
                                       pooled={"rho": 0.5, "rho_lo": 0.3, "rho_hi": 0.7, "crit": 0.25},
                                       settings={"alpha": 0.05})


def _molecular():
    from qlib.repro.attacks import molecular, protocol

    rng = np.random.default_rng(0)
    attacked = ["identity", *_QUANTS]
    A, P, K, N = len(attacked), len(protocol.ATTACKS), 4, 8
    keep = np.zeros((K, N), dtype=bool)
    keep[0::2, : N // 2] = keep[1::2, N // 2:] = True
    study = SimpleNamespace(tasks=[SimpleNamespace(task="Task_A", keep=keep, scores=rng.normal(size=(A, P, K, N)))],
                            names=list(_QUANTS), attacked=attacked)
    rows = [{"task": "Task_A", "quantizer": q, "r": np.nan if i == 0 else 1e-3 * i, "r_lo": 0.0, "r_hi": 5e-3,
             "strongest": protocol.ATTACKS[i % P], "tpr@0.01": 0.05 / (i + 1), "tpr@0.01_lo": 0.0, "tpr@0.01_hi": 0.1}
            for i, q in enumerate(attacked)]
    analysis = molecular.MolecularAnalysis(per_quantizer=pd.DataFrame(rows), per_task=pd.DataFrame({"task": ["Task_A"]}),
                                           pooled={}, exposure={"Task_A": rng.uniform(size=(A, N))}, settings={})
    return {"analysis": analysis, "study": study}


def _dp_result():
    rng = np.random.default_rng(0)
    rows, scores = [], {}
    for key, delta in (("dpsgd", 1e-7), ("rqp", 0.0)):
        rows.append({"key": key, "eps": 1.0, "delta": delta, "canary": "typical"})
        scores[(key, 1.0, "typical")] = (rng.normal(size=20), np.arange(20) < 10)
    return SimpleNamespace(table=pd.DataFrame(rows), scores=scores)


BASELINES.update({
    RA + "figures.advantage": lambda: {"studies": _toy_studies()},
    RA + "figures.toy_roc": lambda: {"study": _toy_studies()["empirical"], "n": 20},
    RA + "figures.synthetic_scatter": lambda: {"analysis": _synthetic_analysis(), "n": 128},
    RA + "figures.synthetic_rho": lambda: {"analysis": _synthetic_analysis()},
    RA + "figures.molecular_roc": _molecular,
    RA + "figures.molecular_rq": _molecular,
    RA + "figures.molecular_exposure": _molecular,
    RA + "figures.dp_roc": lambda: {"result": _dp_result(), "runs": 10},
})
