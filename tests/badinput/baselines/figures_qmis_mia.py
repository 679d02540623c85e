"""Baselines for the figure and table displays of the quantized-MIS and mia-limits parts (see
baselines/__init__.py): ``qlib.repro.quantized_mis.figures`` and ``qlib.repro.mia_limits.figures``. Each
draws from a small input with the columns its driver returns: the synthetic study, its rank stability and
the molecular profiles are the mol area's tiny ones (``baselines/mol.py``); the other frames are built by
hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

BASELINES: dict = {}
QF = "qlib.repro.quantized_mis.figures."
MF = "qlib.repro.mia_limits.figures."
_QUANTIZERS = ("sign", "ternary33", "ternary50", "ternary90", "bits2", "bits3", "bits4", "bits5")


def _mol():
    from badinput.baselines import mol

    return mol


def _tiny():
    return _mol()._tiny_study()


def _adaptive_frame():
    return pd.DataFrame({"n": [16, 32, 64], "ratio": [0.9, 0.8, 0.7], "corrected": [0.6, 0.55, 0.52],
                         "C_P^1(n)/δ_2²": [0.5, 0.5, 0.5]})


def _figure2_readings_frame():
    cols = {f"ρ(r mean, {b}), {r} reading": [0.8, 0.6, 0.7] for b in ("discriminator", "threshold")
            for r in ("text", "Table 1")}
    return pd.DataFrame({"law": ["σ=1.5, 6 modes", "σ=3, 16 modes", "mean"], **cols})


def _tradeoff(key="task"):
    rng = np.random.default_rng(0)
    return pd.DataFrame([{key: g, "quantizer": q, "r_q": 10 ** rng.uniform(-4, -1), "relative": rng.uniform(0.5, 1),
                          "value": 0.7} for g in ("AMES", "DILI") for q in _QUANTIZERS])


def _probe_frame():
    return pd.DataFrame([{"variant": v, "task": "DILI", "quantizer": q, "relative": 0.9}
                         for v in ("default", "deep") for q in ("sign", "bits2")])


def _confusions():
    from qlib.repro.quantized_mis import ranking_claims

    stab = _mol()._stab()
    return {2: ranking_claims.confusion(stab, 2), 20: None}


def _table2_summary():
    from qlib.repro.quantized_mis import synthetic_claims

    return synthetic_claims.table2_rows(_tiny())[1]


def _passing_rows():
    from qlib.repro.ledger import Item, claim

    return [claim(Item("Table 3 pattern, variant deep", "pattern", "holds"), "holds", True),
            claim(Item("Table 3 pattern, variant default", "pattern", "holds"), "no", False)]


def _study_table2():
    from qlib.repro.quantized_mis import study

    return study.table2(_tiny())


def _rho():
    return _mol()._rho()


BASELINES.update({
    QF + "figure5": lambda: {"grid": torch.linspace(-1, 1, 21, dtype=torch.float64)},
    QF + "table1": lambda: {"thetas": torch.randn(3, 16, generator=torch.Generator().manual_seed(0),
                                                  dtype=torch.float64)},
    QF + "scope_table": lambda: {"model": torch.nn.Linear(4, 1).double()},
    QF + "variant_text": lambda: {"summary": {"laws": 3, "runs": 10, "epochs": 300, "rho": 0.9,
                                              "max_acc_change": 0.01}},
    QF + "theorem31_figure": lambda: {"fixed": {"toy": (_mol()._rate_table(), 0.01)}},
    QF + "theorem33_figure": lambda: {"ad": _adaptive_frame(), "target": 0.5},
    QF + "study_text": lambda: {"res": _tiny(), "device": "cpu"},
    QF + "figure8": lambda: {"config": _tiny().config, "seed": 0, "n_points": 20},
    QF + "table2": lambda: {"t2": _study_table2()},
    QF + "table2_text": lambda: {"summary": _table2_summary(), "res": _tiny()},
    QF + "figure2": lambda: {"res": _tiny(), "rho": _rho(), "statistic": "mean"},
    QF + "figure6": lambda: {"res": _tiny()},
    QF + "figure2_readings": lambda: {"f2r": _figure2_readings_frame()},
    QF + "figure2_readings_text": lambda: {"rows": _mol()._figure2_pair()},
    QF + "cost_text": lambda: {"res": _tiny()},
    QF + "figure7": lambda: {"stab": _mol()._stab(), "runs": 4},
    QF + "figure1_pies": lambda: {"stab": _mol()._stab(), "res": _tiny(), "law": 0, "k_runs": [2, 3]},
    QF + "figure1_confusion": lambda: {"matrices": _confusions(), "runs": 4},
    QF + "figure3": lambda: {"frame": _tradeoff()},
    QF + "figure4": lambda: {"frame": _tradeoff()},
    QF + "figure9": lambda: {"frame": _tradeoff("embedder")},
    QF + "figure10": lambda: {"profiles": {"toy": _mol()._profiles()}},
    QF + "relative_table": lambda: {"df": _probe_frame()},
    QF + "passing_text": lambda: {"rows": _passing_rows()},
})


# ------------------------------------------------------------------------------------- mia-limits
def _run():
    from qlib.mia.overfit import OverfitRun

    its = np.arange(0, 101, 25)
    tf = np.stack([np.clip(its / 100, 0, 1)] * 2, -1)[None]
    return OverfitRun(its, np.array([1e-2, 1e-6]), tf, np.full_like(tf, 0.01), np.full((1, len(its)), 1e-7),
                      np.full((1, len(its)), 0.02))


def _disc():
    return {"cp": {20: 4.0, 50: 6.5, 100: 9.0}, "cp_pair": {20: 4.4, 50: 6.9, 100: 9.5}}


BASELINES.update({
    MF + "corollary541_figure": lambda: {"rmin": 0.31},
    MF + "gaussian_mean_figure": lambda: {"n_points": 4},
    MF + "figure1": lambda: {"run": _run()},
    MF + "figure1_text": lambda: {"run": _run()},
    MF + "table1_c": lambda: {"disc": _disc(), "K_list": [20, 50, 100]},
})
