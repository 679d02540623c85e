"""The synthetic study of paper 001 §5.1 under practical attacks (chapter ``attacks/02``): for each law
and quantizer, the strongest attack's advantage against r_Q^n ({cite}`aubinais2025quantized`).

**Protocol** (:func:`synthetic_attacks`, per seed and law of ``qlib.synthetic``): a pool of 2n points of
the law; M models of the study's family (the linear model on [x, x²], full-batch Adam at the study's
learning rate) trained at once on complementary halves of the pool (``qlib.attacks.shadow``: every
model on n points, every point in M/2 models), with r_Q^n of every quantizer recorded along training on
``n_val`` fresh validation points (``qlib.recorder.RQRecorder``, Algorithm 1; the law's value is the mean
over the M models, NaN ones left out). After training each model is quantized by every quantizer
(post-training, per tensor, as in the study). Every model in turn is the **target** and the other M − 1
its shadows (LiRA's reference protocol, one target at a time, for every target): the member pairs are
its n training points, the non-member pairs the other n pool points. The attacks, on the quantized
target: the global loss threshold, LiRA offline (one-sided) and LiRA online with a fixed variance (the
reference code's choice for few shadows; with one global variance a quantizer that makes every
shadow agree on an example does not give a zero per-example variance). An attack's **advantage** is
max over thresholds of TPR − FPR on all pairs (optimistic: the threshold is chosen on the pairs it is
measured on, alike for every quantizer); its AUC and TPR at 1 % FPR are kept too.

**The question** (§5.1's claim, asked of the attacks): does r_Q^n rank the quantizers as the strongest
attack does? A larger r_Q^n means a smaller Δ_n (paper 001, Theorem 3.1: Δ_n ≈ e^{−n r_Q}), so a
smaller advantage: the Spearman correlation between r_Q^n and the strongest attack's advantage over the
quantizers of one law should be negative. It is computed per seed and law (:func:`rank_agreement`);
the spread over seeds is its uncertainty.

Decisions where the paper is silent or that are ours: the pool of 2n points (so that every model trains
on the study's n), M shadows, the three attacks, and the mean over models for a law's r_Q^n.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from qlib import engine, quantizers, recorder, synthetic
from qlib.attacks import lira, metrics, shadow
from qlib.ranking import spearman
from qlib.validation import check_float, check_int, check_int_sequence, check_seed, skip_nested

__all__ = ["SYNTHETIC_ATTACKS", "SyntheticStudy", "synthetic_attacks", "rank_agreement", "default_quantizers"]

#: the attacks of the synthetic study, in table order
SYNTHETIC_ATTACKS = ("global loss threshold", "LiRA offline (one-sided)", "LiRA online (fixed variance)")


def default_quantizers() -> list[str]:
    """Every quantizer of ``qlib.quantizers`` but the identity (whose r_Q^n is not defined: a continuous
    model is never repeated)."""
    return [q for q in quantizers.names() if q != "identity"]


@dataclass
class SyntheticStudy:
    """:func:`synthetic_attacks`'s output: ``table`` — one row per seed × law × quantizer × attack (r_Q^n,
    AUC, advantage, TPR at 0.1 % and 1 % FPR); ``laws`` — the law labels; ``names`` — the quantizers."""

    table: pd.DataFrame
    laws: list
    names: list


def _pool(law, n: int, n_val: int, g: torch.Generator):
    x, y = synthetic.sample([law], 2 * n + n_val, g)
    X = synthetic.features(x[0])
    return X[: 2 * n], y[0, : 2 * n], X[2 * n:], y[0, 2 * n:]


def synthetic_attacks(*, n: int = 128, n_val: int = 128, shadows: int = 32, epochs: int = 300, lr: float = 1e-4,
                      seeds=(0, 1, 2), names=None, law_seed: int = 0, device="auto") -> SyntheticStudy:
    """Every attack on every quantized model of every law (module docstring). ``shadows`` = M (even, ≥ 4)
    models per law and seed; ``epochs`` of Adam at ``lr``; ``names`` the quantizers (default
    :func:`default_quantizers`); the laws of ``qlib.synthetic.make_laws(law_seed)``."""
    n = check_int("n", n, low=2)
    n_val = check_int("n_val", n_val, low=2)
    shadows = check_int("shadows", shadows, low=4)
    epochs = check_int("epochs", epochs, low=1)
    lr = check_float("lr", lr, low=0.0, low_open=True)
    seeds = check_int_sequence("seeds", seeds, low=0)
    names = default_quantizers() if names is None else quantizers.check_names(names, "names")
    law_seed = check_seed("law_seed", law_seed)
    laws = synthetic.make_laws(law_seed)
    labels = synthetic.law_labels(synthetic.GRID)
    rows = []
    with skip_nested():
        for seed in seeds:
            g = torch.Generator().manual_seed(seed)
            for law, label in zip(laws, labels):
                X, y, Xv, yv = _pool(law, n, n_val, g)
                model = engine.Linear(X.shape[1])
                keep = shadow.paired_keep(shadows, 2 * n, seed=seed)
                rec = recorder.RQRecorder(model, names, Xv.expand(shadows, *Xv.shape).contiguous(),
                                          yv.expand(shadows, -1).contiguous(), epochs=epochs, device=device)
                import warnings

                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", category=RuntimeWarning)
                    theta = shadow.train_shadows(model, X, y, keep, engine.TrainConfig(epochs=epochs, lr=lr),
                                                 seed=seed, device=device, callbacks=[rec])
                    r = np.nanmean(rec.r, axis=1)
                thq = quantizers.quantize_many(names, theta, split=engine.param_sizes(model))
                for qi, q in enumerate(names):
                    phi = shadow.binary_scores(model, thq[qi], X, y)           # (M, 2n)
                    per = {a: [] for a in SYNTHETIC_ATTACKS}
                    for t in range(shadows):
                        others = np.arange(shadows) != t
                        per[SYNTHETIC_ATTACKS[0]].append(-np.logaddexp(0.0, -phi[t]))
                        per[SYNTHETIC_ATTACKS[1]].append(lira.lira_offline(phi[t], phi[others], keep[others],
                                                                           fix_variance=True, tail="one-sided"))
                        per[SYNTHETIC_ATTACKS[2]].append(lira.lira_online(phi[t], phi[others], keep[others],
                                                                          fix_variance=True))
                    members = keep.ravel()
                    for a, sc in per.items():
                        m = metrics.evaluate(np.concatenate(sc), members)
                        rows.append({"seed": seed, "law": label, "quantizer": q, "r_q": float(r[qi]), "attack": a,
                                     **m.values})
    return SyntheticStudy(pd.DataFrame(rows), labels, list(names))


def rank_agreement(study: SyntheticStudy) -> pd.DataFrame:
    """Per seed and law: the strongest attack's advantage per quantizer (max over the attacks) and the
    Spearman correlation over the quantizers between r_Q^n and that advantage (expected < 0), NaN where
    r_Q^n is undefined for a quantizer. Columns: seed, law, rho, strongest (the attack strongest most often)."""
    if not isinstance(study, SyntheticStudy):
        raise TypeError(f"study must be the SyntheticStudy synthetic_attacks returns, got {type(study).__name__}")
    t = study.table
    out = []
    for (seed, law), d in t.groupby(["seed", "law"], sort=False):
        piv = d.pivot_table(index="quantizer", columns="attack", values="advantage")
        strongest = piv.max(axis=1)
        r = d.groupby("quantizer")["r_q"].first().reindex(piv.index)
        ok = np.isfinite(r.to_numpy())
        rho = float(spearman(r.to_numpy()[ok], strongest.to_numpy()[ok])) if ok.sum() >= 3 else float("nan")
        out.append({"seed": seed, "law": law, "rho": rho, "strongest": piv.idxmax(axis=1).mode().iloc[0],
                    "quantizers": int(ok.sum())})
    return pd.DataFrame(out)
