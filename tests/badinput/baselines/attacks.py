"""Baselines for the attacks area (see baselines/__init__.py): qlib.attacks.* and qlib.repro.attacks.*.

Small valid calls: a few dozen scores, 8 shadows on a pool of 12 examples, models trained 2 epochs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from qlib.discriminator import DiscriminatorConfig
from qlib.repro.attacks.protocol import AnalysisConfig

BASELINES: dict = {}
A = "qlib.attacks."


def _s(n=40, seed=0):
    rng = np.random.default_rng(seed)
    m = np.arange(n) % 2 == 0
    return rng.normal(size=n) + m, m


def _sm():
    s, m = _s()
    return {"scores": s, "members": m}


def _keep():
    from qlib.attacks import shadow

    return shadow.paired_keep(8, 12, seed=0)


def _shadow_scores():
    return np.random.default_rng(1).normal(size=(8, 12)) + _keep()


def _pool():
    g = torch.Generator().manual_seed(0)
    return torch.randn(12, 3, generator=g), (torch.arange(12) % 2).double()


def _lin():
    from qlib import engine_models

    return engine_models.Linear(3)


def _theta():
    from qlib import engine_models

    return engine_models.init_params(_lin(), 4, 0, dtype=torch.float64)


BASELINES.update({
    A + "metrics.check_members": lambda: {"name": "members", "members": _s()[1], "n": 40},
    A + "metrics.check_scores": lambda: _sm(),
    A + "metrics.roc_curve": lambda: _sm(),
    A + "metrics.auc": lambda: _sm(),
    A + "metrics.tpr_at_fpr": lambda: dict(_sm(), max_fpr=0.1),
    A + "metrics.best_threshold": lambda: _sm(),
    A + "metrics.best_balanced_accuracy": lambda: _sm(),
    A + "metrics.advantage": lambda: _sm(),
    A + "metrics.balanced_accuracy": lambda: {"predictions": _s()[0] > 0.5, "members": _s()[1]},
    A + "metrics.bootstrap": lambda: dict(_sm(), metric=lambda s, m: float(s[m].mean()), reps=5, seed=0),
    A + "metrics.evaluate": lambda: dict(_sm(), predictions=_s()[0] > 0.5, reps=3, seed=0,
                                         groups=np.arange(40) // 10),
    A + "threshold.loss_scores": lambda: {"loss": np.abs(_s()[0])},
    A + "threshold.calibrated_scores": lambda: {"target_loss": np.abs(_s(12)[0]),
                                                "reference_loss": np.abs(_shadow_scores())},
    A + "threshold.fit_threshold": lambda: _sm(),
    A + "threshold.threshold_attack": lambda: {"cal_scores": _s()[0], "cal_members": _s()[1], "scores": _s(10, 2)[0]},
    A + "lira.scaled_logit": lambda: {"logits": np.random.default_rng(0).normal(size=(5, 3)),
                                      "labels": np.array([0, 1, 2, 1, 0])},
    A + "lira.scaled_logit_binary": lambda: {"out": np.random.default_rng(0).normal(size=6),
                                             "y": np.array([0, 1, 1, 0, 1, 0])},
    A + "lira.scaled_logit_from_confidence": lambda: {"p": np.array([0.1, 0.5, 0.9])},
    A + "lira.fit_gaussians": lambda: {"shadow_scores": _shadow_scores(), "shadow_keep": _keep()},
    A + "lira.lira_online": lambda: {"target_scores": _s(24)[0].reshape(2, 12), "shadow_scores": _shadow_scores(),
                                     "shadow_keep": _keep()},
    A + "lira.lira_offline": lambda: {"target_scores": _s(24)[0].reshape(2, 12), "shadow_scores": _shadow_scores(),
                                      "shadow_keep": _keep()},
    A + "shadow.paired_keep": lambda: {"n_models": 4, "n_examples": 6, "seed": 0},
    A + "shadow.train_shadows": lambda: dict(zip(("X", "y"), _pool()), model=_lin(), keep=_keep()[:4],
                                             config=__import__("qlib.engine", fromlist=["x"]).TrainConfig(
                                                 epochs=2, device="cpu", backend="torch"), seed=0),
    A + "shadow.binary_scores": lambda: dict(zip(("X", "y"), _pool()), model=_lin(), theta=_theta()),
    A + "shadow.binary_losses": lambda: dict(zip(("X", "y"), _pool()), model=_lin(), theta=_theta()),
})

# ---- qlib.repro.attacks -----------------------------------------------------------------------
R = "qlib.repro.attacks."


def _analysis_config():
    from qlib.repro.attacks import protocol

    return protocol.AnalysisConfig(reps=3, level=0.9, draws=20, alpha=0.05, seed=0)


def _toys():
    from qlib.repro.attacks import toys

    return toys


def _toy():
    toys = _toys()
    return toys.empirical_toy(toys.zipf_law(4))


_STUDY = {}


def _study():
    from qlib.repro.attacks import toys

    if "s" not in _STUDY:
        _STUDY["s"] = toys.attack_study(_toy(), [10, 20, 40],
                                        toys.AttackStudyConfig(shadows=4, pairs=400, min_targets=4, reps=5, seed=0))
    return _STUDY["s"]


BASELINES.update({
    R + "toys.zipf_law": lambda: {"m": 4, "exponent": 1.0},
    R + "toys.empirical_toy": lambda: {"p": np.array([0.5, 0.3, 0.2]), "alpha": 0.5},
    R + "toys.erm_toy": lambda: {"beta": 1.0, "weights": (0.0, 1.0, 2.0)},
    R + "toys.attack_study": lambda: {"toy": _toy(), "ns": [10, 20], "config": _toys().AttackStudyConfig(
        shadows=4, pairs=200, min_targets=4, reps=3, seed=0)},
    **{R + f"claims.{f}": (lambda: {"study": _study()}) for f in (
        "oracle_rows", "theorem31_rows", "gap_rows", "rate_rows", "bound_rows", "gap_table", "gap_text",
        "metrics_table", "best_attack")},
    R + "claims.reductions_text": lambda: {"shadows": 16, "pairs": 100, "ns_empirical": [10, 100], "ns_erm": [5, 20]},
})


# ------------------------------------------------------------------------------- methods (issue 30)


def _erm_toy():
    from qlib.repro.attacks import toys

    return toys.erm_toy()


def _toy_counts(toy, n=6):
    from qlib.mia import exact

    return exact.count_vectors(n, toy.m)[:5]


BASELINES[f"{A}metrics.AttackMetrics.row"] = lambda: {"self": __import__("qlib.attacks.metrics", fromlist=["x"]).evaluate(**_sm()),
                                                    "prefix": "a_"}
BASELINES["qlib.repro.attacks.toys.Toy.fit"] = lambda: {"self": _toy(), "counts": _toy_counts(_toy())}
BASELINES["qlib.repro.attacks.toys.Toy.confidence"] = lambda: {"self": _erm_toy(), "counts": _toy_counts(_erm_toy())}
BASELINES["qlib.repro.attacks.toys.Toy.oracle_ratio"] = lambda: {"self": _erm_toy(), "counts": _toy_counts(_erm_toy())}
BASELINES["qlib.repro.attacks.toys.Toy.delta"] = lambda: {"self": _toy(), "n": 5}
BASELINES["qlib.repro.attacks.toys.Toy.bound"] = lambda: {"self": _erm_toy(), "n": 5}
BASELINES["qlib.repro.attacks.toys.Toy.chernoff_rate"] = lambda: {"self": _erm_toy()}


# ------------------------------------------------------------------- the DP region and audit (chapter 04)
BASELINES.update({
    A + "dp_bound.tpr_bound": lambda: {"fpr": np.array([0.0, 0.1, 0.5]), "eps": 1.0, "delta": 1e-5},
    A + "dp_bound.implied_epsilon": lambda: {"fpr": np.array([0.1, 0.2]), "tpr": np.array([0.5, 0.6]), "delta": 1e-5},
    A + "dp_bound.epsilon_lower_bound": lambda: dict(_sm(), delta=1e-5, level=0.95, correction="bonferroni"),
    A + "dp_bound.region_excess": lambda: dict(_sm(), eps=1.0, delta=1e-5, level=0.95, correction="bonferroni"),
})

_DP = {}


def _dp_task():
    from qlib.repro.attacks import dp_audit

    if "task" not in _DP:
        _DP["task"] = dp_audit.diagnostic_task()
    return _DP["task"]


def _dp_audit():
    from qlib.repro.attacks import dp_audit

    if "audit" not in _DP:
        _DP["audit"] = dp_audit.audit(_dp_task(),
                                      dp_audit.AuditConfig(eps_values=[1.0], runs=6, rqp_sigma=1.0, seed=0),
                                      device="cpu")
    return _DP["audit"]


BASELINES.update({
    R + "dp_audit.diagnostic_task": lambda: {"split_seed": 0, "test_size": 0.2},
    R + "dp_audit.canary": lambda: {"task": _dp_task(), "kind": "worst", "scale": 2.0},
    R + "dp_audit.noise": lambda: {"method": "rqp", "eps": 1.0, "n": 455, "rqp_sigma": 1.0},
    R + "dp_audit.audit": lambda: {"task": _dp_task(), "config": __import__(
        "qlib.repro.attacks.dp_audit", fromlist=["x"]).AuditConfig(eps_values=[1.0], runs=3, rqp_sigma=1.0,
                                                                    methods=("dpsgd",), canaries=("worst",), seed=0,
                                                                    level=0.95), "device": "cpu"},
    **{R + f"dp_claims.{f}": (lambda: {"audit": _dp_audit()}) for f in (
        "bound_rows", "gap_rows", "audit_table", "audit_text", "setup_text")},
})


# ---- qlib.repro.attacks.synthetic and synthetic_claims (chapter attacks/02) -------------------------
SY = "qlib.repro.attacks.synthetic."
SC = "qlib.repro.attacks.synthetic_claims."
#: a tiny synthetic study: two laws, three quantizers, 8 models of 3 epochs on 8 points
_SYN_TINY = dict(n=8, n_val=4, models=8, epochs=3, seeds=(0,), names=("sign", "bits2", "bits3"),
                 grid=((1.5, 6), (2.0, 8)), discriminator=DiscriminatorConfig(epochs=1))
_SYN = {}


def _syn_config():
    from qlib.repro.attacks import synthetic

    return synthetic.SyntheticConfig(**_SYN_TINY)


def _syn_analysis():
    from qlib.repro.attacks import synthetic

    if "a" not in _SYN:
        st = synthetic.synthetic_attacks(_syn_config(), device="cpu")
        _SYN["a"] = synthetic.analyse(st, AnalysisConfig(reps=5, draws=50, seed=0))
    return _SYN["a"]


def _syn_study():
    from qlib.repro.attacks import synthetic

    if "s" not in _SYN:
        _SYN["s"] = synthetic.synthetic_attacks(_syn_config(), device="cpu")
    return _SYN["s"]


BASELINES.update({
    SY + "SyntheticConfig": lambda: dict(_SYN_TINY),
    SY + "SyntheticConfig.as_dict": lambda: {"self": _syn_config()},
    SY + "SyntheticConfig.describe": lambda: {"self": _syn_config()},
    SY + "synthetic_attacks": lambda: {"config": _syn_config(), "device": "cpu"},
    SY + "analyse": lambda: {"study": _syn_study(), "config": _analysis_config()},
    **{SC + f: (lambda: {"analysis": _syn_analysis()}) for f in (
        "rank_agreement_rows", "law_rank_rows", "discriminator_rows", "quantization_rows", "summary_table",
        "law_table", "answer_text")},
    SC + "critical_rho": lambda: {"analysis": _syn_analysis(), "which": "attack"},
})


# ---- qlib.repro.attacks.protocol, molecular and molecular_claims (chapter attacks/03) ---------------------
PR = "qlib.repro.attacks.protocol."
MO = "qlib.repro.attacks.molecular."
MC = "qlib.repro.attacks.molecular_claims."
#: a tiny molecular study: the smallest task file, 8 models of 2 epochs, two quantizers
_MOL_TINY = dict(tasks=("Carcinogens_Lagunin",), models=8, epochs=2, hidden=4, names=("sign", "bits2"))
_MOL = {}


def _mol_tmp() -> str:
    import atexit
    import shutil
    import tempfile

    if "tmp" not in _MOL:
        _MOL["tmp"] = tempfile.mkdtemp(prefix="qlib-badinput-attacks-mol-")
        atexit.register(shutil.rmtree, _MOL["tmp"], ignore_errors=True)
    return _MOL["tmp"]


def _mol_config():
    from qlib.repro.attacks import molecular

    return molecular.MolecularAttackConfig(**_MOL_TINY)


def _mol_study():
    from badinput.harness import data_dir
    from qlib.repro.attacks import molecular

    if "s" not in _MOL:
        _MOL["s"] = molecular.molecular_attacks(_mol_config(), data_dir=data_dir(), cache_dir=_mol_tmp(), device="cpu")
    return _MOL["s"]


def _mol_analysis():
    from qlib.repro.attacks import molecular

    if "a" not in _MOL:
        _MOL["a"] = molecular.analyse(_mol_study(), AnalysisConfig(reps=5, draws=50, seed=0))
    return _MOL["a"]


def _phi_keep():
    from qlib.attacks import shadow

    keep = shadow.paired_keep(8, 6, seed=0)
    return np.random.default_rng(0).normal(size=(8, 6)) + keep, keep


BASELINES.update({
    PR + "halves": lambda: {"K": 8},
    PR + "reductions_text": lambda: {"config": _syn_config(), "reps": 10, "draws": 100},
    PR + "finite_scores": lambda: {"s": np.array([0.5, -1.0, 2.0])},
    PR + "attack_scores": lambda: dict(zip(("phi", "keep"), _phi_keep())),
    PR + "held_out_correct": lambda: dict(zip(("scores", "keep"), _phi_keep())),
    PR + "bootstrap_weights": lambda: {"rng": np.random.default_rng(0), "K": 4, "reps": 3, "shape": (2,)},
    PR + "resampled_advantage": lambda: {"correct": np.arange(24).reshape(2, 3, 4) % 7,
                                         "weights": np.array([[1.0, 1, 1, 1], [2, 0, 1, 1]]), "pairs": 6},
    PR + "resampled_r": lambda: {"r": np.array([[0.1, 0.2, 0.3, 0.4], [0.2, 0.1, 0.4, 0.3]]),
                                 "weights": np.array([[1.0, 1, 1, 1], [2, 0, 1, 1]])},
    PR + "rank_rho": lambda: {"r": np.array([[0.1, 0.2, 0.3, 0.4]]), "advantage": np.array([[0.3, 0.1, 0.2, 0.0]])},
    PR + "rank_rho_over": lambda: {"r": np.array([[0.1, 0.2, 0.3, 0.4]]), "advantage": np.array([[0.3, 0.1, 0.2, 0.0]]),
                                   "defined": np.array([True, True, True, False])},
    PR + "permutation_test": lambda: {"rho": 0.5, "r": np.array([[0.1, 0.2, 0.3, 0.4], [0.2, 0.1, 0.4, 0.3]]),
                                      "advantage": np.array([[0.3, 0.1, 0.2, 0.0], [0.1, 0.2, 0.0, 0.3]]),
                                      "draws": 20, "alpha": 0.05, "seed": 0},
    PR + "pooled_permutation_test": lambda: {
        "rho": 0.5, "r": np.array([[0.1, 0.2, 0.3, 0.4], [0.2, 0.1, 0.4, 0.3]]),
        "advantage": np.array([[0.3, 0.1, 0.2, 0.0], [0.1, 0.2, 0.0, 0.3]]),
        "config": __import__("qlib.repro.attacks.protocol", fromlist=["x"]).AnalysisConfig(draws=20)},
    PR + "theory_gap": lambda: {"frame": pd.DataFrame({"theory": [0.5, 0.4], "advantage": [0.2, 0.1],
                                                       "advantage_lo": [0.1, 0.0], "advantage_hi": [0.3, 0.2]})},
    MO + "MolecularAttackConfig": lambda: dict(_MOL_TINY, lr=1e-3, val_frac=0.4, max_molecules=40, seed=0),
    MO + "MolecularAttackConfig.as_dict": lambda: {"self": _mol_config()},
    MO + "MolecularAttackConfig.describe": lambda: {"self": _mol_config()},
    MO + "molecular_attacks": lambda: {"config": _mol_config(), "cache_dir": _mol_tmp(), "device": "cpu"},
    MO + "weighted_tpr": lambda: {"scores": _phi_keep()[0], "members": _phi_keep()[1],
                                  "weights": np.ones((2, 8)), "levels": (0.01, 0.1)},
    MO + "exposure": lambda: {"scores": _phi_keep()[0], "members": _phi_keep()[1], "level": 0.01},
    MO + "analyse": lambda: {"study": _mol_study(), "config": _analysis_config()},
    **{MC + f: (lambda: {"analysis": _mol_analysis()}) for f in (
        "chance_rows", "quantization_rows", "rank_rows", "summary_table", "task_table")},
    MC + "exposure_rows": lambda: {"analysis": _mol_analysis(), "study": _mol_study()},
    MC + "answer_text": lambda: {"analysis": _mol_analysis(), "study": _mol_study()},
    MC + "most_private": lambda: {"analysis": _mol_analysis(), "task": "Carcinogens_Lagunin"},
    MC + "exposure_rho": lambda: {"analysis": _mol_analysis(), "study": _mol_study(), "task": "Carcinogens_Lagunin",
                                  "quantizer": "sign"},
    MC + "exposed_molecules": lambda: {"analysis": _mol_analysis(), "study": _mol_study(), "task": "Carcinogens_Lagunin",
                                       "top": 3, "width": 20},
})
BASELINES[PR + "percentile_interval"] = lambda: {"x": np.random.default_rng(0).normal(size=(20, 3)), "level": 0.9,
                                                 "axis": 0}
