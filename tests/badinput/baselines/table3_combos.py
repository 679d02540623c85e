"""Baselines for chapter 06's combinations (mol area, see baselines/__init__.py):
qlib.repro.quantized_mis.table3_combos and qlib.repro.quantized_mis.table3_answer.

Data: constructed frames for the rules, rows and the first screen; the smallest TDC task
(Carcinogens_Lagunin) with its MACCS keys, 2 runs × 1 epoch of a 4-wide head, for the drivers (the
embedding cache in one temporary directory, removed at exit)."""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile

import numpy as np
import pandas as pd

from badinput.harness import data_dir

BASELINES: dict = {}

SMALL_TASK = "Carcinogens_Lagunin"
_Q = ("sign", "ternary33", "ternary50", "ternary90", "bits2", "bits3", "bits4", "bits5")
TC = "qlib.repro.quantized_mis.table3_combos"
TA = "qlib.repro.quantized_mis.table3_answer"


def _c():
    from qlib.repro.quantized_mis import table3_combos

    return table3_combos


@functools.lru_cache(maxsize=None)
def _tmp() -> str:
    d = tempfile.mkdtemp(prefix="qlib-badinput-t3c-")
    atexit.register(shutil.rmtree, d, ignore_errors=True)
    return d


@functools.lru_cache(maxsize=None)
def _warm() -> str:
    """The small task's MACCS keys in the temporary cache, and the drivers warmed up, outside the timed call."""
    from qlib import molecules

    task = molecules.load_task(SMALL_TASK, data_dir=data_dir())
    molecules.embed_cached(SMALL_TASK, task.smiles, "maccs", cache_dir=_tmp())
    _c().run([SMALL_TASK], ["default", "deep"], _cfg(), data_dir=data_dir(), cache_dir=_tmp())
    return _tmp()


def _cfg(**kw):
    return _c().RunConfig(**{"embedders": ["maccs"], "runs": 2, "epochs": 1, "seed": 0, "hidden": 4, **kw})


def _frame(variants, embedders=("maccs",), tasks=("DILI", "hERG"), runs=2):
    rng = np.random.default_rng(7)
    return pd.DataFrame([{"variant": v, "embedder": e, "task": t, "quantizer": q, "run": r,
                          "relative": 0.85 + 0.15 * rng.random(), "auroc": 0.7, "original": 0.8, "r_q": rng.random()}
                         for v in variants for e in embedders for t in tasks for q in _Q for r in range(runs)])


def _combos():
    C = _c()
    return C.RunResult(_frame(C.SINGLES + C.PAIRS), pd.DataFrame(), {}, _cfg())


def _best():
    C = _c()
    return C.RunResult(_frame(["probability+scope_model"], embedders=("maccs", "morgan")), pd.DataFrame(), {},
                       _cfg(embedders=["maccs", "morgan"]))


def _means():
    return _c().means(_frame(_c().SINGLES + ("probability+deep",)))


BASELINES[f"{TC}.procedure_changes"] = lambda: {"name": "probability+scope_model"}
BASELINES[f"{TC}.procedure_name"] = lambda: {"changes": ["scope_model", "probability"]}
BASELINES[f"{TC}.describe"] = lambda: {"name": "probability+deep"}
BASELINES[f"{TC}.scale_text"] = lambda: {"result": _best()}
BASELINES[f"{TC}.RunConfig"] = lambda: {"embedders": ["maccs"], "runs": 2, "epochs": 1, "seed": 0, "hidden": 4,
                                        "record": False, "seeding": "probe"}
BASELINES[f"{TC}.RunResult"] = lambda: {"frame": _frame(["default"]), "trainings": pd.DataFrame(), "missing": {}}
BASELINES[f"{TC}.run"] = lambda: {"tasks": [SMALL_TASK], "procedures": ["default", "probability+deep"],
                                  "config": _cfg(), "data_dir": data_dir(), "cache_dir": _warm()}
BASELINES[f"{TC}.combine"] = lambda: {"tasks": [SMALL_TASK], "config": _cfg(), "data_dir": data_dir(),
                                      "cache_dir": _warm()}
BASELINES[f"{TC}.means"] = lambda: {"result": _combos(), "by": ["variant", "task"]}
BASELINES[f"{TC}.helpers"] = lambda: {"df": _means()}
BASELINES[f"{TC}.triple"] = lambda: {"table": _c().helpers(_means())}
BASELINES[f"{TC}.combination_table"] = lambda: {"df": _means()}
BASELINES[f"{TC}.best"] = lambda: {"table": _c().combination_table(_means())}
BASELINES[f"{TC}.likely"] = lambda: {"result": _best()}
BASELINES[f"{TC}.combo_rows"] = lambda: {"df": _means()}
BASELINES[f"{TC}.best_rows"] = lambda: {"result": _best()}
BASELINES[f"{TC}.c19_rows"] = lambda: {"result": _best()}
BASELINES[f"{TC}.c22_rows"] = lambda: {"result": _best()}
BASELINES[f"{TA}.conclusion"] = lambda: {"combos": _combos(), "best_run": _best()}
BASELINES[f"{TA}.figure"] = lambda: {"combos": _combos()}
BASELINES[f"{TA}.verdict_first"] = lambda: {"df": pd.DataFrame({"variant": ["a"], "passes": [True], "bits2": [1.0]}), "labels": None}
