"""The nine Gaussian-mixture laws of paper 001 §5.1."""

from __future__ import annotations

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
    with pytest.raises(ValueError, match="x must be finite"):
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


# ----------------------------------------------------------------------------- broken input (issue 11)
def test_mixture_law_validates_its_fields():
    c = torch.zeros(2, 3, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"\blabels\b.*\{0, 1\}"):
        S.MixtureLaw(2, 1.5, c, torch.tensor([0, 2]))
    with pytest.raises(ValueError, match=r"\bsigma\b"):
        S.MixtureLaw(2, float("nan"), c, torch.tensor([0, 1]))
    bad = c.clone()
    bad[0, 0] = float("inf")
    with pytest.raises(ValueError, match=r"\bcentres\b"):
        S.MixtureLaw(2, 1.5, bad, torch.tensor([0, 1]))
    with pytest.raises(ValueError, match=r"\bcentres\b"):
        S.MixtureLaw(3, 1.5, c, torch.tensor([0, 1, 1]))
    law = S.make_law(2, 1.5, dim=3)
    assert law.labels.tolist() in ([0, 1], [1, 0])


def test_make_laws_sample_and_labels_name_their_arguments():
    with pytest.raises(TypeError, match=r"\bseed\b"):
        S.make_laws("1", grid=[(1.5, 6)], dim=2)
    with pytest.raises(ValueError, match=r"\bgrid\b"):
        S.make_laws(0, grid=[(1.5,)], dim=2)
    with pytest.raises(ValueError, match=r"\bgrid\b"):
        S.law_labels([(float("nan"), 6)])
    assert S.law_labels([[1.5, 6.0]]) == ["σ=1.5, 6 modes"]
    law = S.make_law(2, 1.5, dim=3)
    with pytest.raises(TypeError, match=r"\bshape\b"):
        S.sample([law], None, torch.Generator().manual_seed(0))
    x, y = S.sample([law], (), torch.Generator().manual_seed(0))     # one draw per law
    assert x.shape == (1, 3) and y.shape == (1,)
