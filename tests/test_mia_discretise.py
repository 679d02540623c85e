"""Simulation 2 helpers (paper 003, Table 1): cluster laws, the Δ column, weighted training."""

import math

import numpy as np

from qlib.mia import C_P
from qlib.mia import discretise as D
from qlib.repro.mia_limits.paper import PAPER_TABLE1_C as PAPER_C
from qlib.repro.mia_limits.paper import PAPER_TABLE1_DELTA as PAPER_DELTA


def test_table1_delta_column_is_the_corollary_bound():
    for (n, K), v in PAPER_DELTA.items():
        assert round(D.delta_bound_column(PAPER_C[K], n), 2) == v


def blobs(rng, n=600, K=4, dim=6):
    centres = rng.normal(0, 5, (K, dim))
    lab = rng.integers(0, K, n)
    return (centres[lab] + rng.normal(0, 0.5, (n, dim))).astype(np.float32), lab


def test_cluster_laws_and_discretisation():
    rng = np.random.default_rng(0)
    X, lab = blobs(rng)
    km = D.fit_kmeans(X[:200], 4, seed=0)
    p = D.cluster_law(km, X[200:])
    assert math.isclose(p.sum(), 1.0) and C_P(p) <= math.sqrt(len(p) - 1) + 1e-12
    y = lab % 2
    assert C_P(D.cluster_label_law(km, X[200:], y[200:])) >= C_P(p) - 1e-12  # a finer partition
    Xd = D.discretise(km, X)
    assert len(np.unique(Xd, axis=0)) <= 4
    u, yu, w = D.distinct_pairs(Xd, y)
    assert w.sum() == len(X) and len(u) <= 8


def test_weighted_distinct_pairs_equal_full_batch_on_duplicates():
    rng = np.random.default_rng(1)
    X, lab = blobs(rng, n=300)
    Xd = np.repeat(X[:30], 10, axis=0)
    yd = np.repeat(lab[:30], 10)
    u, yu, w = D.distinct_pairs(Xd, yd)
    kw = dict(hidden=16, iters=15, lr=0.01, seed=3, device="cpu")
    a = D.train_mlp_classifier(u, yu, w, **kw)
    b = D.train_mlp_classifier(Xd, yd, **kw)
    assert np.mean(a(X) == b(X)) >= 0.99
