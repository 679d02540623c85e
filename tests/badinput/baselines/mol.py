"""Baselines for the mol area (see baselines/__init__.py): qlib.molecules, qlib.repro.quantized_mis.*,
qlib.repro.ledger, qlib.repro.inventory.

Data: the smallest TDC task (Carcinogens_Lagunin, 280 molecules) from the offline data directory,
20 molecules of it, RDKit's MACCS keys; the embedding cache lives in one temporary directory
(``tempfile.mkdtemp``, removed at exit), never in the repository."""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile

import numpy as np
import pandas as pd
import torch

from badinput.harness import data_dir

BASELINES: dict = {}

SMALL_TASK = "Carcinogens_Lagunin"        # the smallest task file (280 rows)
SMILES = ["CCO", "c1ccccc1", "CC(=O)O", "CCN(CC)CC", "C1CCCCC1", "OC(=O)c1ccccc1"]


@functools.lru_cache(maxsize=None)
def _tmp() -> str:
    """One temporary folder for every cache a baseline writes (embeddings, saved studies)."""
    d = tempfile.mkdtemp(prefix="qlib-badinput-mol-")
    atexit.register(shutil.rmtree, d, ignore_errors=True)
    return d


def _rng(seed=0):
    return np.random.default_rng(seed)


# ------------------------------------------------------------------------------------- molecules
M = "qlib.molecules"
BASELINES[f"{M}.TaskInfo"] = lambda: {"name": "AMES", "group": "Tox", "kind": "classification"}
BASELINES[f"{M}.task_info"] = lambda: {"name": SMALL_TASK}
BASELINES[f"{M}.task_file"] = lambda: {"name": SMALL_TASK, "data_dir": data_dir()}
BASELINES[f"{M}.Task"] = lambda: {"name": "toy", "kind": "classification", "smiles": SMILES[:4],
                                  "y": np.array([0.0, 1.0, 1.0, 0.0]), "n_nan_labels": 0,
                                  "path": data_dir() / "tdc" / "toy.tab"}
BASELINES[f"{M}.load_task"] = lambda: {"name": SMALL_TASK, "data_dir": data_dir()}
BASELINES[f"{M}.Embedder"] = lambda: {"name": "toy", "fn": lambda s: np.ones((len(s), 2)), "version": "1"}
BASELINES[f"{M}.embedder"] = lambda: {"name": "maccs"}
BASELINES[f"{M}.Embedding"] = lambda: {"X": _rng().normal(size=(3, 4)).astype(np.float32),
                                       "valid": np.array([True, False, True, True]),
                                       "embedder": "maccs", "version": "1"}
BASELINES[f"{M}.parse_smiles"] = lambda: {"smiles": SMILES + ["not a smiles"]}
BASELINES[f"{M}.embed"] = lambda: {"smiles": SMILES, "embedder_": "maccs"}
BASELINES[f"{M}.cache_file"] = lambda: {"task": SMALL_TASK, "embedder_": "morgan", "cache_dir_": _tmp()}
BASELINES[f"{M}.embed_cached"] = lambda: {"task": "toy", "smiles": SMILES, "embedder_": "maccs",
                                          "cache_dir": _tmp()}

# ------------------------------------------------------------------------------- ledger, inventory
L = "qlib.repro.ledger"
BASELINES[f"{L}.verdict"] = lambda: {"kind": "paper-number", "passed": True}
BASELINES[f"{L}.fmt"] = lambda: {"x": 0.5}
BASELINES[f"{L}.Row"] = lambda: {"kind": "paper-number", "where": "Table 1", "quantity": "q", "paper_value": 0.5,
                                 "ours": 0.5, "passed": True}
BASELINES[f"{L}.tolerance_text"] = lambda: {"rtol": 0.01, "atol": 0.1}
BASELINES[f"{L}.Item"] = lambda: {"where": "Table 1", "quantity": "q", "paper_value": 0.5, "paper": "001"}
BASELINES[f"{L}.Null"] = lambda: {"value": 0.0, "label": "chance"}
BASELINES[f"{L}.Null.displayed"] = lambda: {"self": _null(), "value": 0.0}
BASELINES[f"{L}.close"] = lambda: {"item": _item(0.5), "ours": 0.52, "atol": 0.05, "rtol": 0.01, "null": _null()}
BASELINES[f"{L}.claim"] = lambda: {"item": _item(0.9), "ours": 0.95, "passed": True, "null": _null(fails=True)}
BASELINES[f"{L}.check"] = lambda: {"item": _item("> 0"), "ours": 0.5, "test": lambda v: bool(v > 0),
                                   "null": _null()}
BASELINES[f"{L}.not_comparable"] = lambda: {"item": _item(0.5), "ours": 0.7, "reason": "different data"}
BASELINES[f"{L}.missing"] = lambda: {"item": _item(), "reason": "not offline"}
BASELINES[f"{L}.check_ledger"] = lambda: {"df": _ledger_frame(), "name": "rows"}


def _item(paper_value=""):
    from qlib.repro.ledger import Item

    return Item("Table 1", "q", paper_value)


def _null(fails=None):
    from qlib.repro.ledger import Null

    return Null(0.0, fails=fails)


FD = "qlib.repro.findings"


def _ledger_frame():
    import pandas as pd

    return pd.DataFrame({"chapter": ["quantized-mis/05-molecular"], "paper": ["001"], "kind": ["paper-number"],
                         "where": ["Table 3"], "quantity": ["q"], "verdict": ["differs"]})


def _select():
    from qlib.repro.findings import Select

    return Select("quantized-mis/05-*", "Table 3")


def _claim():
    from qlib.repro.findings import Claim

    return Claim("001", "001-C1", "a claim", "§5", rows=(_select(),))


def _cause():
    from qlib.repro.findings import Cause

    return Cause("stand-in", "MACCS for the paper's embedders", (_select(),), stand_in="embedder")


def _pool():
    return _ledger_frame().assign(id=["quantized-mis/05-molecular#1"], ours=["0.5"], paper_value=["0.9"])


BASELINES[f"{FD}.Select"] = lambda: {"chapter": "quantized-mis/05-*", "where": "Table 3", "quantity": "q"}
BASELINES[f"{FD}.Select.mask"] = lambda: {"self": _select(), "df": _ledger_frame()}
BASELINES[f"{FD}.Cause"] = lambda: {"kind": "stand-in", "why": "MACCS for the paper's embedders",
                                    "evidence": (_select(),), "stand_in": "embedder"}
BASELINES[f"{FD}.Claim"] = lambda: {"paper": "001", "id": "001-C1", "quote": "a claim", "where": "§5",
                                    "rows": (_select(),)}
BASELINES[f"{FD}.claim_rows"] = lambda: {"claim": _claim(), "df": _ledger_frame()}
BASELINES[f"{FD}.claim_verdict"] = lambda: {"claim": _claim(), "df": _ledger_frame()}
BASELINES[f"{FD}.assign_causes"] = lambda: {"df": _ledger_frame(), "row_causes": [(_select(), _cause())]}
BASELINES[f"{FD}.check_registry"] = lambda: {"claims": [_claim()]}
BASELINES[f"{FD}.row_ids"] = lambda: {"df": _ledger_frame(), "tag": "paper"}
BASELINES[f"{FD}.gap"] = lambda: {"row": _pool().iloc[0]}
BASELINES[f"{FD}.evidence_rows"] = lambda: {"cause": _cause(), "pool": _pool(), "fields": {"where": "Table 3"}}
BASELINES[f"{FD}.cause_check"] = lambda: {"cause": _cause(), "row": _pool().iloc[0], "ev": _pool(),
                                          "stand_ins": {"quantized-mis/05-*": ("embedder",)}}
BASELINES[f"{FD}.render_why"] = lambda: {"cause": _cause(), "ev": _pool()}

INV = "qlib.repro.inventory"
_PAPER_TEXT = "As Figure 1 shows (see Fig. 2) and Table 1 lists.\nLemma D.1. Let x.\nTheorem 3.1 (Key). Then.\n"
BASELINES[f"{INV}.items_in"] = lambda: {"text": "Figures 3/9 and Tables 3–5"}
BASELINES[f"{INV}.paper_items"] = lambda: {"text": _PAPER_TEXT}
BASELINES[f"{INV}.uncovered"] = lambda: {"paper_text": _PAPER_TEXT, "wheres": ["Figure 1", "Table 1"]}
BASELINES[f"{INV}.stated_results"] = lambda: {"text": _PAPER_TEXT}

# ------------------------------------- quantized_mis.study and the claims of chapters 01-04
S = "qlib.repro.quantized_mis.study"
QC = "qlib.repro.quantized_mis.quantizer_claims"
TH = "qlib.repro.quantized_mis.theory"
SC = "qlib.repro.quantized_mis.synthetic_claims"
RC = "qlib.repro.quantized_mis.ranking_claims"
_TINY = dict(runs=4, epochs=3, n=4, n_val=4, lr=1e-2, grid=[(1.5, 6)], discriminator=None, device="cpu")


@functools.lru_cache(maxsize=None)
def _tiny_study():
    """A real synthetic study at the smallest size (8 quantizers, one law, 4 runs, 3 epochs)."""
    import warnings

    from qlib.repro.quantized_mis import study

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return study.run_study(study.StudyConfig(**{k: v for k, v in _TINY.items() if k != "device"}),
                               device=_TINY["device"])


@functools.lru_cache(maxsize=None)
def _saved_study_dir() -> str:
    d = tempfile.mkdtemp(dir=_tmp())
    _tiny_study().save(f"{d}/quantized-mis/03-synthetic-study/study.npz")
    return d


def _stab():
    from qlib.repro.quantized_mis import ranking_claims

    return ranking_claims.stability(_tiny_study(), [2, 3], 2, 2, seed=0)


BASELINES[f"{S}.study_key"] = lambda: {"config": {"runs": 3, "epochs": 2}}
BASELINES[f"{S}.run_study"] = lambda: {"config": _tiny_config(names=["sign", "bits2"]), "device": _TINY["device"]}
BASELINES[f"{S}.StudyConfig"] = lambda: {k: v for k, v in _TINY.items() if k != "device"}
BASELINES[f"{S}.load_study"] = lambda: {"results_dir": _saved_study_dir()}
BASELINES[f"{S}.table2"] = lambda: {"res": _tiny_study()}
BASELINES[f"{SC}.section512_claims"] = lambda: {
    "values": np.array([[3, 4, 5, 9, 2.5, 2, 1, 0.5], [3, 4, 5, 9, 2.5, 2, 1.5, 0.5]]),
    "names": ["sign", "ternary33", "ternary50", "ternary90", "bits2", "bits3", "bits4", "bits5"]}

# -------------------------------------------------------------------------- quantized_mis.erm_facts
EF = "qlib.repro.quantized_mis.erm_facts"
BASELINES[f"{EF}.lemma_b1_rows"] = lambda: {"draws": 5, "seed": 0}
BASELINES[f"{EF}.lemma_b2_rows"] = lambda: {"draws": 5, "seed": 0}
BASELINES[f"{EF}.random_erm_problem"] = lambda: {"rng": np.random.default_rng(0), "K": 2, "m": 3}
BASELINES[f"{EF}.erm_bound_rows"] = lambda: {"draws": 3, "seed": 0}
BASELINES[f"{EF}.prop_c4_rows"] = lambda: {"draws": 4, "seed": 0}

_P3 = np.array([0.5, 0.3, 0.2])
_TOY_A = np.array([[0.0, 1.0, 0.3], [0.8, 0.1, 0.0], [0.5, 0.5, 0.9]])
_W = np.array([[0.4, -1.0, 0.5], [-0.4, 0.2, 0.7]])


def _adaptive(n, g=0.25):
    return np.vstack([np.zeros(3), _W[0] + n ** -g, _W[1] + 2 * n ** -g])


def _rate_table():
    from qlib.repro.quantized_mis import theory

    return theory.rate_table(_TOY_A, _P3, [10, 20, 40])


def _figure2_pair():
    from qlib.repro.ledger import Item, close

    return [close(Item("Figure 2", "q", 0.86), 0.8, atol=0.1),
            close(Item("Figure 2 (ablation)", "q", 0.8), 0.5, atol=0.1, kind="theory-check")]


def _rho():
    from qlib.repro.quantized_mis import synthetic_claims

    return synthetic_claims.spearman_table(_tiny_study())


BASELINES[f"{QC}.quantizer_rows"] = lambda: {
    "thetas": torch.randn(4, 32, generator=torch.Generator().manual_seed(0), dtype=torch.float64), "n_grid": 101}
BASELINES[f"{TH}.eq11_rows"] = lambda: {"toys": {"toy": (_TOY_A.copy(), _P3.copy())}}
BASELINES[f"{TH}.rate_table"] = lambda: {"L": _TOY_A.copy(), "p": _P3.copy(), "ns": [10, 20, 40]}
BASELINES[f"{TH}.theorem31_rows"] = lambda: {"tables": {"toy": (_rate_table(), 0.01)}}
BASELINES[f"{TH}.adaptive_table"] = lambda: {"adaptive": _adaptive, "p": _P3.copy(), "ns": [16, 32, 64],
                                             "gap_exponent": 0.25}
BASELINES[f"{TH}.theorem33_rows"] = lambda: {"ad": pd.DataFrame({"n": [16, 32], "ratio": [0.9, 0.8]}), "target": 0.5}
BASELINES[f"{TH}.proof_fact_rows"] = lambda: {"b1_draws": 5, "bound_draws": 2, "c4_draws": 5, "seed": 0}
BASELINES[f"{TH}.algorithm1_rows"] = lambda: {"toys": {"toy": _TOY_A.copy()}, "p": _P3.copy(),
                                              "val_copies": np.array([5, 3, 2]), "seed": 0}
BASELINES[f"{S}.scale_note"] = lambda: {"res": _tiny_study()}
BASELINES[f"{SC}.table2_rows"] = lambda: {"res": _tiny_study(), "atol": 0.03}
BASELINES[f"{SC}.spearman_table"] = lambda: {"res": _tiny_study()}
BASELINES[f"{SC}.figure2_rows"] = lambda: {"rho": _rho(), "res": _tiny_study(), "atol": 0.1}
BASELINES[f"{SC}.figure2_text"] = lambda: {"f2": _figure2_pair()}
BASELINES[f"{SC}.section512_rows"] = lambda: {"res": _tiny_study()}
BASELINES[f"{SC}.cost_rows"] = lambda: {"res": _tiny_study()}
BASELINES[f"{SC}.figure6_rows"] = lambda: {"res": _tiny_study()}
BASELINES[f"{SC}.figure8_rows"] = lambda: {}
def _tiny_config(**kw):
    from qlib.repro.quantized_mis import study

    return study.StudyConfig(**{**{k: v for k, v in _TINY.items() if k != "device"}, **kw})


BASELINES[f"{S}.variant_effect"] = lambda: {"config": _tiny_config(runs=3, epochs=2, names=["sign", "bits2", "bits4"]),
                                            "device": "cpu"}
@functools.lru_cache(maxsize=None)
def _tiny_readings():
    from qlib.repro.quantized_mis import synthetic_claims

    return synthetic_claims.reading_effect(_tiny_config(runs=3, epochs=2), device="cpu")


BASELINES[f"{SC}.reading_effect"] = lambda: {"config": _tiny_config(runs=3, epochs=2), "device": "cpu"}
BASELINES[f"{SC}.reading_tables"] = lambda: {"res": _tiny_readings()["res"]}
BASELINES[f"{SC}.reading_rows"] = lambda: {"rt": _tiny_readings(), "res": _tiny_readings()["res"]}
BASELINES[f"{SC}.reading_text"] = lambda: {"rt": _tiny_readings()}
BASELINES[f"{SC}.figure2_readings"] = lambda: {"res": _tiny_readings()["res"]}
BASELINES[f"{SC}.figure2_reading_rows"] = lambda: {"f2r": _figure2_readings_frame(), "res": _tiny_readings()["res"],
                                                   "atol": 0.1}


def _figure2_readings_frame():
    from qlib.repro.quantized_mis import synthetic_claims

    return synthetic_claims.figure2_readings(_tiny_readings()["res"])


BASELINES[f"{RC}.stability"] = lambda: {"res": _tiny_study(), "k_runs": [2, 3], "n_subsets": 2,
                                        "n_subsets_baseline": 2, "seed": 0}
BASELINES[f"{RC}.first_k"] = lambda: {"curve": pd.DataFrame({"k_run": [2, 3, 5], "x": [0.5, 0.96, 0.99]}),
                                      "col": "x", "level": 0.95}
BASELINES[f"{RC}.stability_rows"] = lambda: {"res": _tiny_study(), "stab": _stab()}
BASELINES[f"{RC}.confusion"] = lambda: {"stab": _stab(), "k": 2}

# ---------------------------------------------------- quantized_mis.molecular and .molecular_claims
MM = "qlib.repro.quantized_mis.molecular"


def _mm():
    from qlib.repro.quantized_mis import molecular

    return molecular

MC = "qlib.repro.quantized_mis.molecular_claims"
_QUANTIZERS = ("sign", "ternary33", "ternary50", "ternary90", "bits2", "bits3", "bits4", "bits5")


def _labels01(n=20, seed=0):
    y = _rng(seed).integers(0, 2, n)
    y[:2] = (0, 1)                                   # both classes
    return y


def _fake_mol_study(embedders=("a", "b")):
    """A Study frame: one classification task (AUROC) and one regression task (R², Spearman)."""
    from qlib.repro.quantized_mis import molecular

    recs = []
    rng = _rng(1)
    for task, kind, metrics in (("AMES", "classification", ("auroc",)),
                                ("Caco2_Wang", "regression", ("r2", "spearman"))):
        for e in embedders:
            for qi, q in enumerate(_QUANTIZERS + ("identity",)):
                for run in range(2):
                    for metric in metrics:
                        rel = 1.0 if q == "identity" else 0.8 + 0.02 * qi + 0.01 * rng.random()
                        recs.append({"task": task, "kind": kind, "embedder": e, "quantizer": q, "run": run,
                                     "metric": metric, "r_q": np.nan if q == "identity" else 8.0 - qi,
                                     "value": 0.8 * rel, "original": 0.8, "relative": rel})
    return molecular.Study(pd.DataFrame(recs), {"PAMPA_NCATS": "not offline"}, pd.DataFrame())


def _profiles():
    from qlib.repro.quantized_mis import molecular_claims

    g = torch.Generator().manual_seed(0)
    return molecular_claims.lambda_profiles(torch.rand(6, 2, 2, 5, generator=g, dtype=torch.float64), ("sign", "bits2"))


BASELINES[f"{MM}.auroc"] = lambda: {"scores": _rng(2).normal(size=(3, 20)), "y": _labels01()}
BASELINES[f"{MM}.r2"] = lambda: {"pred": _rng(2).normal(size=(3, 20)), "y": _rng(3).normal(size=20)}
BASELINES[f"{MM}.spearman_to_labels"] = lambda: {"pred": _rng(2).normal(size=(3, 20)), "y": _rng(3).normal(size=20)}
BASELINES[f"{MM}.split_indices"] = lambda: {"n": 20, "runs": 2, "val_frac": 0.4, "subsample": 0.9, "seed": 0}
BASELINES[f"{MM}.train_task"] = lambda: {"X": _rng(4).normal(size=(20, 4)), "y": _labels01(), "kind": "classification",
                                         "config": _mm().TaskConfig(runs=2, epochs=2, hidden=4, lr=1e-2, val_frac=0.4,
                                                                    subsample=0.9, seed=0,
                                                                    quantizers=("sign", "bits2"))}
BASELINES[f"{MM}.TaskConfig"] = lambda: {"runs": 2, "epochs": 2, "hidden": 4, "lr": 1e-2, "val_frac": 0.4,
                                         "subsample": 0.9, "seed": 0, "quantizers": ("sign", "bits2")}
BASELINES[f"{MM}.flops_per_task"] = lambda: {"n": 100, "d": 10, "runs": 2, "epochs": 3, "hidden": 4,
                                             "val_frac": 0.4, "subsample": 0.9, "n_quantizers": 8}
BASELINES[f"{MM}.Study"] = lambda: {"frame": _fake_mol_study().frame, "missing": {}, "inputs": pd.DataFrame()}
BASELINES[f"{MM}.run_study"] = lambda: {"config": _mm().MolecularConfig(tasks=[SMALL_TASK], embedders=["maccs"], runs=2,
                                                                        epochs=2, lr=1e-2, max_molecules=20, seed=0),
                                        "data_dir": data_dir(), "cache_dir": _tmp()}
BASELINES[f"{MM}.MolecularConfig"] = lambda: {"tasks": [SMALL_TASK], "embedders": ["maccs"], "runs": 2, "epochs": 2,
                                              "lr": 1e-2, "hidden": 4, "val_frac": 0.4, "subsample": 0.9,
                                              "max_molecules": 20, "keep_losses_for": [SMALL_TASK], "seed": 0}
BASELINES[f"{MC}.tradeoff"] = lambda: {"study": _fake_mol_study(), "metric": "auroc"}
BASELINES[f"{MC}.table"] = lambda: {"study": _fake_mol_study(), "metric": "auroc"}
BASELINES[f"{MC}.paper_table"] = lambda: {"metric": "r2"}
BASELINES[f"{MC}.table_rows"] = lambda: {"study": _fake_mol_study()}
BASELINES[f"{MC}.section522_rows"] = lambda: {"study": _fake_mol_study()}
BASELINES[f"{MC}.lambda_profiles"] = lambda: {
    "losses": torch.rand(6, 2, 2, 5, generator=torch.Generator().manual_seed(0), dtype=torch.float64),
    "quantizers": ("sign", "bits2")}
BASELINES[f"{MC}.describe"] = lambda: {"study": _fake_mol_study(), "elapsed": 1.0, "profile": "default", "lr": 1e-3}
BASELINES[f"{MC}.readings_table"] = lambda: {"study": _fake_mol_study()}
BASELINES[f"{MC}.reading_rows"] = lambda: {"study": _fake_mol_study()}
BASELINES[f"{MC}.figure34_readings"] = lambda: {"study": _fake_mol_study()}
BASELINES[f"{MC}.figure34_reading_rows"] = lambda: {"study": _fake_mol_study()}
BASELINES[f"{MC}.figure34_readings_text"] = lambda: {"study": _fake_mol_study()}
BASELINES[f"{MC}.scale_note"] = lambda: {"study": _fake_mol_study()}
BASELINES[f"{MC}.lambda_rows"] = lambda: {"profiles": {"toy": _profiles()}, "low": 0.1}
BASELINES[f"{MC}.inputs_table"] = lambda: {"study": _fake_mol_study()}
BASELINES[f"{MC}.dropped_text"] = lambda: {"study": _fake_mol_study()}
BASELINES[f"{MC}.tables_note"] = lambda: {}
BASELINES[f"{MC}.table_with_paper"] = lambda: {"study": _fake_mol_study(), "metric": "auroc"}
BASELINES[f"{MC}.readings_text"] = lambda: {"study": _fake_mol_study()}
BASELINES[f"{MC}.aggregation_table"] = lambda: {"study": _fake_mol_study(), "metric": "auroc"}
BASELINES[f"{MC}.aggregation_text"] = lambda: {"study": _fake_mol_study()}


def _mol_claims():
    from qlib.repro.quantized_mis import molecular_claims

    return molecular_claims.section522_rows(_fake_mol_study())


BASELINES[f"{MC}.claims_text"] = lambda: {"rows": _mol_claims()}
BASELINES[f"{MC}.cell_means"] = lambda: {"frame": _fake_mol_study().frame, "metric": "auroc"}
MP = "qlib.repro.quantized_mis.molecular_probes"
BASELINES[f"{MP}.embedder_spread"] = lambda: {"study": _fake_mol_study(), "metric": "auroc"}
for _name in ("spread_rows", "conditioning_rows", "reading_cell_rows", "section522_more_rows", "probe_rows"):
    BASELINES[f"{MP}.{_name}"] = lambda: {"study": _fake_mol_study()}


def _mp_rows():
    from qlib.repro.quantized_mis import molecular_probes

    return molecular_probes.spread_rows(_fake_mol_study())


BASELINES[f"{MP}.rows_table"] = lambda: {"rows": _mp_rows()}
BASELINES[f"{MP}.probes_text"] = lambda: {"rows": _mp_rows()}
BASELINES[f"{RC}.verdict_table"] = lambda: {"rows": _figure2_pair()}

# ------------------------------------------------------------------------------- methods (issue 30)


def _row():
    from qlib.repro import ledger

    return ledger.Row(**BASELINES[f"{L}.Row"]())


BASELINES[f"{L}.Row.with_paper"] = lambda: {"self": _row(), "paper": "001"}
BASELINES[f"{S}.StudyConfig.from_dict"] = lambda: {"config": {k: v for k, v in _TINY.items() if k != "device"}}
BASELINES[f"{S}.StudyResult.r_summary"] = lambda: {"self": _tiny_study(), "how": "mean"}
BASELINES[f"{S}.StudyResult.save"] = lambda: {"self": _tiny_study(), "path": f"{tempfile.mkdtemp(dir=_tmp())}/s.npz"}
BASELINES[f"{S}.StudyResult.load"] = lambda: {"path": f"{_saved_study_dir()}/quantized-mis/03-synthetic-study/study.npz"}

# ------------------------------------------------------------ quantized_mis.table3_probe (issue: Table 3)
TP = "qlib.repro.quantized_mis.table3_probe"


def _probe_frame(variants=("default", "probability", "plain")):
    """A probe frame: two Table 3 tasks, every column, a few variants."""
    rng = _rng(5)
    return pd.DataFrame([{"variant": v, "task": t, "quantizer": q, "relative": 0.85 + 0.15 * rng.random(),
                          "relative_sd": 0.01, "auroc": 0.7, "original": 0.8, "runs": 2, "seconds": 0.1}
                         for v in variants for t in ("DILI", "hERG") for q in _QUANTIZERS])


@functools.lru_cache(maxsize=None)
def _warm_maccs() -> str:
    """The small task's MACCS keys in the temporary cache, embedded (and the probe warmed up) once outside the timed call."""
    from qlib import molecules

    task = molecules.load_task(SMALL_TASK, data_dir=data_dir())
    molecules.embed_cached(SMALL_TASK, task.smiles, "maccs", cache_dir=_tmp())
    from qlib.repro.quantized_mis import table3_probe  # first call: one-time imports and warm-up

    table3_probe.probe([SMALL_TASK],
                       table3_probe.ProbeConfig("maccs", runs=2, epochs=1, variants=["default", "deep"], hidden=4),
                       data_dir=data_dir(), cache_dir=_tmp())
    return _tmp()


BASELINES[f"{TP}.probe"] = lambda: {"tasks": [SMALL_TASK], "config": __import__(
    "qlib.repro.quantized_mis.table3_probe", fromlist=["x"]).ProbeConfig(
        embedder="maccs", runs=2, epochs=1, variants=["default", "deep"], seed=0, hidden=4),
    "data_dir": data_dir(), "cache_dir": _warm_maccs()}
BASELINES[f"{TP}.ProbeConfig"] = lambda: {"embedder": "maccs", "runs": 2, "epochs": 1, "variants": ["default", "deep"],
                                          "seed": 0, "hidden": 4}
BASELINES[f"{TP}.pattern_test"] = lambda: {"df": _probe_frame()}
BASELINES[f"{TP}.pattern_table"] = lambda: {"df": _probe_frame()}
BASELINES[f"{TP}.probe_rows"] = lambda: {"df": _probe_frame(), "plain_atol": 0.02}
BASELINES[f"{TP}.paper_means"] = lambda: {"tasks": ["DILI", "hERG"]}

# ------------------------------------- quantized_mis.ranking_probe (chapter 04's probe: run average, de-duplication)
RP = "qlib.repro.quantized_mis.ranking_probe"


def _rp_r(Q=8, R=3):
    return np.abs(_rng(3).normal(size=(1, Q, R))) + 0.1


def _rp_config():
    from qlib.repro.quantized_mis.study import StudyConfig

    return StudyConfig(**{k: v for k, v in _TINY.items() if k != "device"})


BASELINES[f"{RP}.copies_study"] = lambda: dict(config=_rp_config(), laws=[0], device="cpu")
BASELINES[f"{RP}.variant_rows"] = lambda: dict(table=_rp_variant_table(), note="tiny runs")


def _rp_variant_table():
    from qlib.repro.quantized_mis import ranking_probe

    return ranking_probe.variant_table({"a": _rp_r()}, ["sign", "ternary33", "ternary50", "ternary90", "bits2", "bits3",
                                                        "bits4", "bits5"], k=2, n_subsets=2, seed=0)


BASELINES[f"{RP}.variant_table"] = lambda: dict(
    variants={"a": _rp_r()}, names=["sign", "ternary33", "ternary50", "ternary90", "bits2", "bits3", "bits4", "bits5"],
    k=2, n_subsets=2, seed=0)
