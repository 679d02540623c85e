"""Quantizers of Table 1 (paper 001, App. D): exact values, properties (hypothesis), bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from qlib import quantizers as Q

ALL = Q.names()
NON_ID = [n for n in ALL if n != "identity"]
BITS = [n for n in ALL if n.startswith("bits")]
TERNARY = [n for n in ALL if n.startswith("ternary")]

finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False, width=64)
vectors = arrays(np.float64, st.integers(1, 64), elements=finite)
# vectors with many ties (few distinct magnitudes, both signs, zeros)
tied = arrays(np.float64, st.integers(1, 64), elements=st.sampled_from([-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0]))


def t(a) -> torch.Tensor:
    return torch.as_tensor(np.asarray(a, dtype=np.float64))


# --------------------------------------------------------------------------------------------
# Names, labels
# --------------------------------------------------------------------------------------------
def test_names_and_labels_match_the_paper():
    assert ALL == ["identity", "sign", "ternary33", "ternary50", "ternary90", "bits2", "bits3", "bits4", "bits5"]
    assert Q.labels() == {
        "identity": "original",
        "sign": "Sign",
        "ternary33": "1.58b 33%",
        "ternary50": "1.58b 50%",
        "ternary90": "1.58b 90%",
        "bits2": "2 bits",
        "bits3": "3 bits",
        "bits4": "4 bits",
        "bits5": "5 bits",
        "ternary33_table": "1.58b 33% (Table 1)",  # the Table 1 reading, named explicitly (issue 28)
        "ternary50_table": "1.58b 50% (Table 1)",
        "ternary90_table": "1.58b 90% (Table 1)",
    }


# --------------------------------------------------------------------------------------------
# Exact values on hand-computed inputs
# --------------------------------------------------------------------------------------------
def test_sign_exact_with_sign_of_zero_positive():
    x = t([-3.0, -0.0, 0.0, 1e-300, 2.5])
    assert Q.get("sign")(x).tolist() == [-1.0, 1.0, 1.0, 1.0, 1.0]


def test_ternary_zeroes_the_smallest_magnitudes_as_the_text_says():
    # |x| order: 0.1 (idx 3) < 0.2 (idx 0) < 0.5 (idx 4) < 0.9 (idx 2) < 3 (idx 1); 50% of 5 -> k = 3 (2.5 rounds up)
    x = t([0.2, -3.0, 0.9, -0.1, -0.5])
    assert Q.get("ternary50")(x).tolist() == [0.0, -1.0, 1.0, 0.0, 0.0]
    # 33% of 5 -> k = 2 (1.65 rounds to 2); 90% of 5 -> k = 5 (4.5 rounds up)
    assert Q.get("ternary33")(x).tolist() == [0.0, -1.0, 1.0, 0.0, -1.0]
    assert Q.get("ternary90")(x).tolist() == [0.0, 0.0, 0.0, 0.0, 0.0]


def test_ternary_ties_broken_by_position():
    x = t([1.0, -1.0, 1.0, -1.0])  # all tied; 50% -> zero the first two
    assert Q.get("ternary50")(x).tolist() == [0.0, 0.0, 1.0, -1.0]


def test_bits_exact_values_hand_computed():
    # max|x| = 1.3 -> log2 = 0.378 -> round 0 -> alpha = 1; 2 bits: s = 2, grid {0.5, 1}
    x = t([0.1, -0.5, 0.51, -0.99, 1.3])
    assert Q.get("bits2", variant="capped")(x).tolist() == [0.5, -0.5, 1.0, -1.0, 1.0]
    # printed formula: int(1 + clip(2|x|, 0, 2)) -> [1, 2, 2, 2, 3] * 0.5
    assert Q.get("bits2", variant="printed")(x).tolist() == [0.5, -1.0, 1.0, -1.0, 1.5]
    # 3 bits, s = 4: ceil(4|x|) clipped to [1, 4] -> [1, 2, 3, 4, 4] / 4
    assert Q.get("bits3", variant="capped")(x).tolist() == [0.25, -0.5, 0.75, -1.0, 1.0]


def test_bits_alpha_is_a_rounded_power_of_two():
    # max|x| = 5 -> log2 5 = 2.32 -> alpha = 4; max|x| = 6 -> log2 6 = 2.58 -> alpha = 8
    y5 = Q.get("bits4", variant="capped")(t([5.0, 0.3]))
    y6 = Q.get("bits4", variant="capped")(t([6.0, 0.3]))
    assert y5.tolist() == [4.0, 0.5]  # s = 8: 0.3*8/4 = 0.6 -> 1 -> 4/8
    assert y6.tolist() == [6.0, 1.0]  # 6*8/8 = 6 -> 6; 0.3 -> 1 -> 8/8
    # the default (printed) formula: int(1 + clip(s|x|/alpha, 0, s)) -> 5: int(1 + 8) = 9 -> 4.5;
    # 0.3: int(1.6) = 1 -> 0.5; with alpha = 8: 6 -> int(7) = 7 -> 7.0; 0.3 -> int(1.3) = 1 -> 1.0
    assert Q.get("bits4")(t([5.0, 0.3])).tolist() == [4.5, 0.5]
    assert Q.get("bits4")(t([6.0, 0.3])).tolist() == [7.0, 1.0]


def test_all_zero_vector():
    z = torch.zeros(7, dtype=torch.float64)
    for name in BITS + ["identity"]:
        assert torch.equal(Q.get(name)(z), z)
    assert torch.equal(Q.get("sign")(z), torch.ones(7, dtype=torch.float64))
    assert torch.equal(Q.get("ternary50")(z), z)


def test_any_shape_and_dtype_preserved():
    x = torch.randn(3, 4, 5, generator=torch.Generator().manual_seed(0))
    for name in ALL:
        for dtype in (torch.float32, torch.float64):
            y = Q.get(name)(x.to(dtype))
            assert y.shape == x.shape and y.dtype == dtype
    # whole tensor is one vector: same as flattening
    for name in NON_ID:
        assert torch.equal(Q.get(name)(x), Q.get(name)(x.reshape(-1)).reshape(x.shape))


def test_figure5_grid_levels():
    grid = torch.linspace(-1, 1, 2001, dtype=torch.float64)
    for b in (2, 3, 4, 5):
        y = Q.get(f"bits{b}", variant="capped")(grid)
        s = 2 ** (b - 1)
        expected = sorted({sgn * k / s for sgn in (-1, 1) for k in range(1, s + 1)})
        assert sorted(set(y.tolist())) == expected
        yp = Q.get(f"bits{b}", variant="printed")(grid)
        assert sorted(set(yp.tolist())) == sorted(expected + [-(s + 1) / s, (s + 1) / s])  # the extra top level


# --------------------------------------------------------------------------------------------
# Properties
# --------------------------------------------------------------------------------------------
@settings(max_examples=150, deadline=None)
@given(vectors)
def test_idempotent(a):
    x = t(a)
    for name in ALL:
        q = Q.get(name, variant="capped")
        y = q(x)
        assert torch.equal(q(y), y), name


@settings(max_examples=150, deadline=None)
@given(vectors)
def test_sign_preservation(a):
    x = t(a)
    for name in NON_ID:
        y = Q.get(name)(x)
        nz = x != 0
        assert bool(((torch.sign(y[nz]) == torch.sign(x[nz])) | (y[nz] == 0)).all()), name
        if not name.startswith("ternary"):  # no zero level
            assert bool((y[nz] != 0).all()), name


@settings(max_examples=200, deadline=None)
@given(st.one_of(vectors, tied))
def test_ternary_exact_sparsity_with_ties(a):
    x = t(a)
    d = x.numel()
    n_exact_zero = int((x == 0).sum())
    for name in TERNARY:
        q = Q.get(name)
        y = q(x)
        k = math.floor(q.zero_fraction * d + 0.5)
        assert int((y == 0).sum()) == max(k, n_exact_zero), name
        assert set(y.unique().tolist()) <= {-1.0, 0.0, 1.0}
        # the zeroed coordinates are the smallest magnitudes: every kept |x| >= every zeroed |x|
        kept, zeroed = x[y != 0].abs(), x[y == 0].abs()
        if kept.numel() and zeroed.numel():
            assert float(kept.min()) >= float(zeroed.max())


@settings(max_examples=150, deadline=None)
# max|a| a normal float: at subnormal scale α/s underflows and the strict bound |y| < |x| + α/s
# cannot be represented (hypothesis found a = [5e-324])
@given(vectors.filter(lambda a: np.abs(a).max() >= np.finfo(np.float64).tiny))
def test_bits_level_set(a):
    x = t(a)
    alpha = 2.0 ** round(math.log2(float(np.abs(a).max())))
    for b in (2, 3, 4, 5):
        s = 2 ** (b - 1)
        y = Q.get(f"bits{b}", variant="capped")(x)
        levels = {sgn * alpha * k / s for sgn in (-1, 1) for k in range(1, s + 1)}
        assert set(y.tolist()) <= levels
        assert len(set(y.tolist())) <= 2**b
        # rounding is up to the next grid point: |x| <= |y| < |x| + alpha/s, unless clipped at alpha
        ax, ay = x.abs(), y.abs()
        unclipped = ax <= alpha
        assert bool((ay[unclipped] >= ax[unclipped] - 1e-12 * alpha).all())
        assert bool((ay[unclipped] < ax[unclipped] + alpha / s + 1e-12 * alpha).all())
        assert bool((ay[~unclipped] == alpha).all())


def _printed_reference(a: np.ndarray, b: int) -> np.ndarray:
    """Table 1's printed formula, written independently in numpy."""
    s = 2 ** (b - 1)
    alpha = 2.0 ** np.round(np.log2(np.abs(a).max()))
    m = np.trunc(1 + np.clip(s * np.abs(a) / alpha, 0, s))
    return np.where(a >= 0, 1.0, -1.0) * (alpha * m) / s


@settings(max_examples=100, deadline=None)
@given(vectors.filter(lambda a: np.abs(a).max() > 0))
def test_printed_variant_matches_numpy_reference_and_default_off_grid(a):
    x = t(a)
    for b in (2, 3, 4, 5):
        yp = Q.get(f"bits{b}", variant="printed")(x).numpy()
        np.testing.assert_array_equal(yp, _printed_reference(a, b))
        # the default differs from the printed formula only on grid points and where |x| >= alpha
        s = 2 ** (b - 1)
        alpha = 2.0 ** np.round(np.log2(np.abs(a).max()))
        u = s * np.abs(a) / alpha
        off = (u < s) & (u != np.floor(u))
        np.testing.assert_array_equal(Q.get(f"bits{b}", variant="capped")(x).numpy()[off], yp[off])


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6), st.integers(1, 40), st.integers(0, 2**31 - 1), st.booleans())
def test_batched_equals_row_by_row(k, d, seed, with_ties):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(k, d, generator=g, dtype=torch.float64)
    if with_ties:
        x = torch.round(x * 2) / 2
    for name in ALL:
        q = Q.get(name)
        yb = q.batched(x)
        for i in range(k):
            assert torch.equal(yb[i], q(x[i])), name
        assert torch.equal(Q.quantize_batch(name, x), yb)


# --------------------------------------------------------------------------------------------
# Models and state dicts
# --------------------------------------------------------------------------------------------
def test_apply_module_scopes():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 1))
    before = {k: v.clone() for k, v in model.state_dict().items()}
    qm = Q.apply(model, "bits3", scope="tensor")
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())  # original untouched
    sd = qm.state_dict()
    for k, v in sd.items():
        if torch.is_floating_point(v):
            assert torch.equal(v, Q.get("bits3")(before[k]))
        else:
            assert torch.equal(v, before[k])  # num_batches_tracked kept
    whole = Q.apply(model.state_dict(), "bits3", scope="model")
    keys = [k for k, v in before.items() if torch.is_floating_point(v)]
    flat = Q.get("bits3")(torch.cat([before[k].reshape(-1) for k in keys]))
    assert torch.equal(torch.cat([whole[k].reshape(-1) for k in keys]), flat)


def test_level_stats_counts():
    x = torch.randn(16, 101, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    df = Q.level_stats(x).set_index("name")
    assert df.loc["sign", "levels_max"] == 2
    for name in TERNARY:
        assert df.loc[name, "levels_max"] == 3
        assert df.loc[name, "zero_fraction"] == Q.n_zeros(Q.get(name).zero_fraction, 101) / 101
    capped = Q.level_stats(x, variant="capped").set_index("name")
    for b in (2, 3, 4, 5):
        assert capped.loc[f"bits{b}", "levels_max"] <= 2**b
        assert df.loc[f"bits{b}", "levels_max"] <= 2**b + 2     # printed: s + 1 magnitudes
    assert df.loc["identity", "levels_max"] == 101
    assert Q.distinct_per_row(torch.tensor([[1.0, 1.0, 2.0], [0.0, 0.0, 0.0]])).tolist() == [2, 1]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA not available")
def test_cuda_matches_cpu():
    x = torch.randn(8, 300, generator=torch.Generator().manual_seed(2))
    for name in ALL:
        assert torch.equal(Q.get(name).batched(x.cuda()).cpu(), Q.get(name).batched(x))


# --------------------------------------------------------------------------------------------
# Bad input
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ALL)
def test_rejects_bad_tensors(name):
    q = Q.get(name)
    with pytest.raises(ValueError, match="theta must be finite"):
        q(torch.tensor([1.0, float("nan")]))
    with pytest.raises(ValueError, match="theta must be finite"):
        q(torch.tensor([1.0, float("inf")]))
    with pytest.raises(ValueError, match="non-empty"):
        q(torch.tensor([]))
    with pytest.raises(TypeError, match="floating-point"):
        q(torch.tensor([1, 2, 3]))
    with pytest.raises(TypeError, match="theta must be a tensor"):
        q([1.0, 2.0])
    with pytest.raises(ValueError, match="thetas must have ndim 2"):
        q.batched(torch.randn(2, 3, 4))


def test_rejects_unknown_names_scopes_variants():
    with pytest.raises(ValueError, match="unknown quantizer 'bits8'.*known: identity"):
        Q.get("bits8")
    with pytest.raises(TypeError, match="quantizer name must be a string"):
        Q.get(4)
    with pytest.raises(ValueError, match="variant must be one of"):
        Q.get("bits2", variant="default")
    with pytest.raises(ValueError, match="scope must be one of"):
        Q.apply(torch.nn.Linear(2, 1), "sign", scope="layer")
    with pytest.raises(TypeError, match="nn.Module or a state dict"):
        Q.apply(torch.randn(3), "sign")


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 5), st.integers(1, 40), st.integers(0, 2**31 - 1), st.booleans())
def test_quantize_many_equals_each_quantizer(k, d, seed, zero_row):
    x = torch.randn(k, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    x = torch.round(x * 4) / 4  # ties and exact zeros
    if zero_row:
        x[0] = 0.0
    many = Q.quantize_many(ALL, x)
    assert many.shape == (len(ALL), k, d)
    for i, name in enumerate(ALL):
        assert torch.equal(many[i], Q.quantize_batch(name, x)), name
    with pytest.raises(ValueError, match="unknown quantizer"):
        Q.quantize_many(["sign", "bits9"], x)


# ----------------------------------------------------------------------------- broken input (issue 11)
@pytest.mark.parametrize("kwargs, exc, arg", [
    (dict(fraction=1.5, d=10), ValueError, "fraction"),          # used to return 15 zeros of 10
    (dict(fraction=-0.5, d=10), ValueError, "fraction"),
    (dict(fraction=float("nan"), d=10), ValueError, "fraction"),
    (dict(fraction=0.5, d=10.5), TypeError, "d"),                # non-integral size
    (dict(fraction=0.5, d=0), ValueError, "d"),
    (dict(fraction=0.5, d=True), TypeError, "d"),
])
def test_n_zeros_rejects_out_of_range_and_non_integral(kwargs, exc, arg):
    with pytest.raises(exc, match=rf"\b{arg}\b"):
        Q.n_zeros(**kwargs)
    assert Q.n_zeros(0.5, 10) == 5 and Q.n_zeros(0.0, 3) == 0 and Q.n_zeros(1.0, 3) == 3


def test_quantizer_record_split_and_distinct_per_row_validate():
    with pytest.raises(ValueError, match=r"\bzero_fraction\b"):
        Q.Quantizer("t", "t", "t", lambda x: x, 3, 1.5)
    with pytest.raises(ValueError, match=r"\blevels\b"):
        Q.Quantizer("t", "t", "t", lambda x: x, 0)
    with pytest.raises(TypeError, match=r"\bsplit\b"):
        Q.quantize_many(["sign"], torch.zeros(2, 4), split=[2, "a"])
    with pytest.raises(ValueError, match=r"\bx\b"):
        Q.distinct_per_row(torch.tensor([[1.0, float("nan")]]))
    assert Q.distinct_per_row(torch.tensor([[1.0, float("inf"), float("inf")]])).tolist() == [2]
