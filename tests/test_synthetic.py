"""The nine Gaussian-mixture laws of paper 001 §5.1 and the study's driver."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from qlib import synthetic as S


def test_grid_is_the_papers():
    assert len(S.GRID) == 9
    assert {k for _, k in S.GRID} == {6, 8, 16} and {s for s, _ in S.GRID} == {1.5, 2.0, 3.0}
    laws = S.make_laws(0)
    assert [(l.sigma, l.k_modes) for l in laws] == list(S.GRID)
    assert all(l.dim == 128 for l in laws)


def test_labels_balanced_and_centres_seeded():
    a, b = S.make_law(8, 2.0, seed=5), S.make_law(8, 2.0, seed=5)
    assert torch.equal(a.centres, b.centres) and torch.equal(a.labels, b.labels)
    assert int(a.labels.sum()) == 4
    assert not torch.equal(a.centres, S.make_law(8, 2.0, seed=6).centres)
    laws = S.make_laws(0)
    assert not torch.equal(laws[0].centres[:6], laws[3].centres[:6])      # laws differ
    allc = torch.cat([l.centres for l in laws])
    assert allc.std().item() == pytest.approx(S.CENTRE_SCALE, rel=0.05)


def test_samples_follow_the_mixture():
    law = S.make_law(6, 0.3, dim=16, seed=1)
    x, y = law.sample(20_000, torch.Generator().manual_seed(0), dtype=torch.float64)
    d = torch.cdist(x, law.centres)
    c = d.argmin(dim=1)                                   # well separated: nearest centre = cluster
    assert torch.equal(y.long(), law.labels[c])
    freq = torch.bincount(c, minlength=6).double() / len(c)
    assert torch.allclose(freq, torch.full((6,), 1 / 6, dtype=torch.float64), atol=0.015)
    resid = x - law.centres[c]
    assert resid.std().item() == pytest.approx(0.3, rel=0.02)
    for j in range(6):
        assert torch.allclose(x[c == j].mean(0), law.centres[j], atol=0.15)


def test_batched_sampling_shapes_and_seed():
    laws = S.make_laws(0)
    x, y = S.sample(laws, (3, 5), torch.Generator().manual_seed(2))
    assert x.shape == (9, 3, 5, 128) and y.shape == (9, 3, 5) and x.dtype == torch.float32
    x2, _ = S.sample(laws, (3, 5), torch.Generator().manual_seed(2))
    assert torch.equal(x, x2)
    assert set(y.unique().tolist()) <= {0.0, 1.0}


def test_features():
    x = torch.tensor([[1.0, -2.0]])
    assert torch.equal(S.features(x), torch.tensor([[1.0, -2.0, 1.0, 4.0]]))
    with pytest.raises(ValueError, match="non-finite"):
        S.features(torch.tensor([float("nan")]))


@pytest.mark.parametrize("kwargs, match", [
    (dict(k_modes=7, sigma=1.0), "even"),
    (dict(k_modes=1, sigma=1.0), "k_modes"),
    (dict(k_modes=6, sigma=0.0), "sigma"),
    (dict(k_modes=6, sigma=float("nan")), "sigma"),
    (dict(k_modes=6, sigma=1.0, dim=0), "dim"),
])
def test_bad_law(kwargs, match):
    with pytest.raises(ValueError, match=match):
        S.make_law(**kwargs)


def test_bad_sampling():
    laws = S.make_laws(0)
    with pytest.raises(TypeError, match="generator"):
        S.sample(laws, 3, generator=0)
    with pytest.raises(ValueError, match="shape"):
        S.sample(laws, (0,), torch.Generator())
    with pytest.raises(ValueError, match="dimension"):
        S.sample([laws[0], S.make_law(6, 1.0, dim=4)], 3, torch.Generator())


def test_paper_table2_values():
    # spot checks against the paper's text (App. E, Table 2; the first row's identity cell from 000)
    assert S.PAPER_TABLE2[(1.5, 6)][-1] == 0.996
    assert S.PAPER_TABLE2[(3.0, 16)] == (0.555, 0.575, 0.585, 0.581, 0.635, 0.604, 0.616, 0.622, 0.628)
    assert S.PAPER_TABLE2_COLUMNS[4] == "ternary90"
    for row in S.PAPER_TABLE2.values():                  # b bits accuracy increases with b
        c = S.PAPER_TABLE2_COLUMNS
        assert row[c.index("bits3")] <= row[c.index("bits4")] <= row[c.index("bits5")] <= row[-1] + 1e-9


def test_claims():
    names = list(S.PAPER_QUANTIZERS)
    good = np.array([[3, 4, 5, 9, 2.5, 2, 1, 0.5]])         # sign < t33, t90 max, b4/b5 least
    out = S.claims(good, names)
    assert all(v.all() for v in out.values())
    bad = good.copy()
    bad[0, names.index("sign")] = 10
    out = S.claims(bad, names)
    assert not out["1.58b 90% is the most private"][0] and not out["Sign is less private than 1.58b 33%"][0]


def test_tiny_study_runs_reproducibly_and_caches(tmp_path):
    kw = dict(runs=4, epochs=12, n=16, n_val=12, lr=1e-2, grid=[(1.5, 6), (3.0, 8)],
              names=["sign", "ternary90", "bits4"], discriminator=True, disc_epochs=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = S.run_study(**kw, cache_dir=tmp_path)
        b = S.run_study(**kw)
    assert a.r.shape == (2, 3, 4) and a.acc_val.shape == (2, 4, 4) and a.loss_in.shape == (2, 4, 4, 12)
    assert a.loss_out.shape == (2, 4, 4, 12)
    np.testing.assert_array_equal(a.r, b.r)
    np.testing.assert_array_equal(a.disc_mis, b.disc_mis)
    assert ((a.thr_mis >= 0) & (a.thr_mis <= 1)).all()
    assert len(list(tmp_path.glob("study-*.npz"))) == 1
    c = S.run_study(**kw, cache_dir=tmp_path)                   # reloaded, not recomputed
    np.testing.assert_array_equal(a.r, c.r)
    assert c.seconds == a.seconds
    t2 = S.table2(a)
    assert len(t2) == 2 * 4 and np.allclose(t2[t2.quantizer == "identity"].ours_ratio, 1.0)


def test_study_bad_input():
    with pytest.raises(ValueError, match="runs"):
        S.run_study(runs=2, epochs=1)
    with pytest.raises(ValueError, match="unknown quantizer"):
        S.run_study(runs=3, epochs=1, names=["bits9"])
    with pytest.raises(ValueError, match="identity"):
        S.run_study(runs=3, epochs=1, names=["identity", "sign"])
