"""Tests of qlib.hadamard: the transform equals the Sylvester matrix, is orthonormal and an
involution, the RHT is inverted exactly, padding, bad input."""

import math

import numpy as np
import pytest
import scipy.linalg
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from qlib import _kernels
from qlib import hadamard as H


@pytest.mark.parametrize("k", range(0, 7))
def test_fwht_equals_scipy_sylvester(k):
    D = 2**k
    x = torch.randn(3, D, dtype=torch.float64, generator=torch.Generator().manual_seed(k))
    ref = x.numpy() @ scipy.linalg.hadamard(D) / math.sqrt(D)
    np.testing.assert_allclose(H.fwht(x).numpy(), ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("k", [9, 12, 21])  # 21 exercises the cache-blocked path (>= 2^21)
def test_fwht_matches_radix2_butterfly(k):
    D = 2**k
    x = torch.randn(D, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    y = x.clone().reshape(1, D)  # textbook in-place radix-2 butterfly
    h = 2
    while h <= D:
        v = y.view(-1, h)
        a, b = v[:, : h // 2].clone(), v[:, h // 2 :].clone()
        v[:, : h // 2], v[:, h // 2 :] = a + b, a - b
        h *= 2
    np.testing.assert_allclose(H.fwht(x).numpy(), (y / math.sqrt(D)).reshape(D).numpy(), rtol=0, atol=1e-9)


@settings(max_examples=25, deadline=None)
@given(k=st.integers(0, 14), seed=st.integers(0, 2**31 - 1))
def test_fwht_orthonormal_and_involution(k, seed):
    x = torch.randn(2, 2**k, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
    y = H.fwht(x)
    np.testing.assert_allclose(y.norm(dim=-1).numpy(), x.norm(dim=-1).numpy(), rtol=1e-12)
    np.testing.assert_allclose(H.fwht(y).numpy(), x.numpy(), rtol=1e-12, atol=1e-12)


def test_fwht_float32_and_batched_shapes():
    x = torch.randn(2, 3, 256)
    y = H.fwht(x)
    assert y.dtype == torch.float32 and y.shape == x.shape
    ref = H.fwht(x.double())
    assert (y.double() - ref).abs().max() < 1e-5
    assert torch.equal(H.fwht(x[1, 2]), y[1, 2])


def test_fwht_autograd():
    x = torch.randn(2, 64, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(H.fwht, (x,))
    w = torch.randn(64, dtype=torch.float64)
    (H.fwht(x) * w).sum().backward()  # d/dx <Hx, w> = H w (H symmetric)
    np.testing.assert_allclose(x.grad[0].numpy(), H.fwht(w).numpy(), rtol=1e-12)


def test_rht_inverse_norm_and_seeded_signs():
    D = 1024
    g = H.generator(7, "rotation")
    s = H.rademacher((2, D), g, torch.float64)
    assert set(s.unique().tolist()) == {-1.0, 1.0}
    s2 = H.rademacher((2, D), H.generator(7, "rotation"), torch.float64)
    assert torch.equal(s, s2)  # same seed, same signs
    s3 = H.rademacher((2, D), H.generator(8, "rotation"), torch.float64)
    assert not torch.equal(s, s3)
    x = torch.randn(5, D, dtype=torch.float64)
    r = H.rht(x, s)
    np.testing.assert_allclose(r.norm(dim=-1).numpy(), x.norm(dim=-1).numpy(), rtol=1e-12)
    np.testing.assert_allclose(H.irht(r, s).numpy(), x.numpy(), atol=1e-12)
    # k = 1: RHT(v) = H diag(s) v / sqrt(D)
    ref = (x * s[0]).numpy() @ scipy.linalg.hadamard(D) / math.sqrt(D)
    np.testing.assert_allclose(H.rht(x, s[:1]).numpy(), ref, atol=1e-12)


def test_rademacher_is_balanced():
    for dt in (torch.float64, torch.float32):  # one draw (32-bit words), two expansions (float32 bits / cast)
        s = H.rademacher((2, 100_001), H.generator(0), dt)
        assert s.dtype == dt and s.shape == (2, 100_001) and set(s.unique().tolist()) == {-1.0, 1.0}
        # mean of 200k fair ±1: sd = 1/sqrt(2e5) = 0.0022; 5 sd
        assert abs(float(s.double().mean())) < 5 / math.sqrt(200_002)
        # neighbouring signs are independent: lag-1 correlation within 5 sd
        assert abs(float((s[0, 1:] * s[0, :-1]).double().mean())) < 5 / math.sqrt(100_000)


def test_padding():
    x = torch.randn(3, 1000)
    p = H.pad_to_power_of_two(x)
    assert p.shape == (3, 1024) and torch.equal(p[:, :1000], x) and (p[:, 1000:] == 0).all()
    assert H.pad_to_power_of_two(torch.randn(512)).shape == (512,)
    assert H.next_power_of_two(1) == 1 and H.next_power_of_two(1025) == 2048
    assert H.is_power_of_two(1) and not H.is_power_of_two(12) and not H.is_power_of_two(0)


def test_bad_input():
    with pytest.raises(ValueError, match="power of two"):
        H.fwht(torch.randn(1000))
    with pytest.raises(TypeError, match="floating"):
        H.fwht(torch.arange(8))
    with pytest.raises(TypeError):
        H.fwht(np.ones(8))
    with pytest.raises(ValueError):
        H.next_power_of_two(0)
    with pytest.raises(ValueError, match="signs"):
        H.rht(torch.randn(8), torch.ones(1, 16))
    with pytest.raises(ValueError, match="seed"):
        H.generator(-1)


def test_rotation_signs_public_stream():
    s = H.rotation_signs(7, (3,), 2, 64, torch.float64)
    assert s.shape == (3, 2, 64) and set(s.unique().tolist()) == {-1.0, 1.0}
    assert torch.equal(s, H.rotation_signs(7, (3,), 2, 64, torch.float64))  # the receiver rebuilds it
    assert not torch.equal(s, H.rotation_signs(8, (3,), 2, 64, torch.float64))
    # the "rotation" stream of generator(): exactly the Rademacher draw of that stream
    ref = H.rademacher((3, 2, 64), H.generator(7, "rotation"), torch.float64)
    assert torch.equal(s, ref)
    x = torch.randn(3, 64, dtype=torch.float64)
    assert torch.allclose(H.irht(H.rht(x, s), s), x, atol=1e-12)
    with pytest.raises(ValueError, match="k must be"):
        H.rotation_signs(0, (), 0, 8)
    with pytest.raises(ValueError, match="seed"):
        H.rotation_signs(-1, (), 1, 8)
    with pytest.raises(ValueError, match="signs must have shape"):
        H.check_signs(x, torch.ones(64))
    with pytest.raises(ValueError, match="length"):
        H.check_signs(x, torch.ones(1, 32))


def test_irht_messages_name_y():
    """irht(y, signs) reported its first argument as "x"."""
    s = H.rotation_signs(0, (), 1, 8)
    for bad, exc in ((None, TypeError), (torch.ones(8, dtype=torch.complex64), TypeError), ("a", TypeError),
                     (torch.tensor(1.0), ValueError), (torch.ones(16), ValueError)):
        with pytest.raises(exc, match=r"\by\b") as e:
            H.irht(bad, s)
        assert not str(e.value).startswith("x ")
    with pytest.raises(ValueError, match=r"\by\b has last dimension 16"):
        H.irht(torch.ones(3, 16), s)
    with pytest.raises(ValueError, match=r"\bsigns\b must have entries ±1"):
        H.irht(torch.ones(8), s * 2)
    with pytest.raises(ValueError, match=r"batch shape .* of y"):
        H.irht(torch.ones(3, 8), H.rotation_signs(0, (2,), 1, 8))
    with pytest.raises(ValueError, match=r"\bx\b has last dimension"):
        H.rht(torch.ones(16), s)
    x = torch.randn(2, 8, dtype=torch.float64)
    s2 = H.rotation_signs(1, (2,), 2, 8, torch.float64)
    assert torch.allclose(H.irht(H.rht(x, s2), s2), x, atol=1e-12)


def test_shape_and_power_of_two_arguments_are_checked():
    with pytest.raises(TypeError, match=r"\bn\b must be an integer"):
        H.is_power_of_two(8.0)
    with pytest.raises(ValueError, match=r"\bm\b must be an integer >= 1"):
        H.hadamard_matrix(0)
    with pytest.raises(ValueError, match=r"shape\[1\] must be"):
        H.rademacher((2, -1), H.generator(0))
    with pytest.raises(TypeError, match=r"\bgen\b must be a torch.Generator"):
        H.rademacher((2,), 0)
    with pytest.raises(TypeError, match=r"\bbatch\b must be a tuple"):
        H.rotation_signs(0, None, 1, 8)
    assert H.rademacher((0, 3), H.generator(0)).shape == (0, 3)


def test_scratch_arrays_are_per_thread_and_reused():
    """``qlib._kernels.scratch``: the same name in the same thread gives the same memory (no fresh pages to fault in);
    another thread gets its own; a larger request or another dtype gets a new array; too large: not kept."""
    import threading

    import numpy as np

    a = _kernels.scratch("test.a", (3, 4), np.float32)
    b = _kernels.scratch("test.a", (2, 4), np.float32)
    assert a.shape == (3, 4) and b.shape == (2, 4) and np.shares_memory(a, b)
    assert not np.shares_memory(a, _kernels.scratch("test.b", (3, 4), np.float32))
    assert _kernels.scratch("test.a", (3, 4), np.float64).dtype == np.float64
    big = _kernels.scratch("test.c", (_kernels.SCRATCH_MAX // 4 + 1,), np.float32)
    assert not np.shares_memory(big, _kernels.scratch("test.c", (_kernels.SCRATCH_MAX // 4 + 1,), np.float32))
    other = []
    t = threading.Thread(target=lambda: other.append(_kernels.scratch("test.a", (3, 4), np.float32)))
    t.start()
    t.join()
    assert not np.shares_memory(other[0], _kernels.scratch("test.a", (3, 4), np.float32))


def test_payloads_do_not_share_the_senders_scratch():
    """EDEN's rotation and centroids go to per-thread scratch arrays; what a payload and its bytes hold
    must not: a second compress leaves the first payload, its bytes and its decoded vector unchanged."""
    from qlib import eden, wire

    x1, x2 = torch.randn(2, 4096, generator=torch.Generator().manual_seed(0))
    p1 = eden.compress(x1, 4, 1)
    b1 = wire.to_bytes(p1)
    idx1, s1, y1 = p1.indices.clone(), p1.scale.clone(), eden.decompress(p1)
    p2 = eden.compress(x2, 4, 2)
    b2 = wire.to_bytes(p2)
    assert torch.equal(p1.indices, idx1) and torch.equal(p1.scale, s1) and torch.equal(eden.decompress(p1), y1)
    assert b1 != b2 and torch.equal(eden.decompress(wire.from_bytes(b1)).reshape(y1.shape), y1)
    assert not torch.equal(p2.indices, p1.indices)


_TRANSFORMS = {
    "fwht": (lambda x, **k: H.fwht(x, **k), "x"),
    "fwht torch": (lambda x, **k: H.fwht(x, backend="torch", **k), "x"),
    "fwht float64": (lambda x, **k: H.fwht(x.double(), **k), "x"),
    "rht": (lambda x, **k: H.rht(x, H.rotation_signs(1, x.shape[:-1], 2, x.shape[-1]), **k), "x"),
    "irht": (lambda y, **k: H.irht(y, H.rotation_signs(1, y.shape[:-1], 1, y.shape[-1]), **k), "y"),
    "seeded_rht": (lambda x, **k: H.seeded_rht(x, 3, 2, **k), "x"),
    "seeded_irht": (lambda y, **k: H.seeded_irht(y, 3, **k), "y"),
    "seeded_irht overwrite": (lambda y, **k: H.seeded_irht(y.clone(), 3, overwrite=True, **k), "y"),
    "pad_to_power_of_two": (lambda x, **k: H.pad_to_power_of_two(x[..., :-1], **k), "x"),
}


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
@pytest.mark.parametrize("d", [4, 8, 1024])
@pytest.mark.parametrize("which", list(_TRANSFORMS))
def test_transforms_refuse_nonfinite_input_unless_allowed(which, d, bad):
    """The non-finite policy (qlib.validation): a NaN/inf anywhere in one row of a batch raises a
    ValueError naming the argument (read from the first output coordinate of each row, which sums every
    input); allow_nonfinite=True propagates it to that row only, as a linear transform does."""
    f, name = _TRANSFORMS[which]
    x = torch.randn(3, d, generator=torch.Generator().manual_seed(d))
    x[1, d // 2 - 1] = bad
    with pytest.raises(ValueError, match=rf"^{name} must be finite"):
        f(x)
    y = f(x, allow_nonfinite=True)
    assert torch.isfinite(y[[0, 2]]).all()
    assert not torch.isfinite(y[1]).all()
    clean = x.clone()
    clean[1, d // 2 - 1] = 0.0
    assert torch.equal(f(clean), f(clean, allow_nonfinite=True))  # finite input: the check changes nothing


def test_transform_overflow_is_told_apart_from_nonfinite_input():
    x = torch.full((4,), 3e38)  # finite, but the first output coordinate, 2 * 3e38 * 2 / 2, overflows float32
    with pytest.raises(ValueError, match=r"^x is finite but its transform overflows torch.float32"):
        H.fwht(x)
    assert torch.isinf(H.fwht(x, allow_nonfinite=True)[0])


def test_nonfinite_check_is_off_behind_the_door():
    """Inside a checked caller (skip_nested) the transforms check nothing, as the compressors need."""
    from qlib.validation import skip_nested

    x = torch.tensor([1.0, float("nan"), 2.0, 3.0])
    with skip_nested():
        assert torch.isnan(H.fwht(x)).all()
        assert torch.isnan(H.seeded_rht(x, 1)).all()


def test_fwht_overwrite_transforms_in_place_with_the_same_bits():
    x = torch.randn(3, 2048, generator=torch.Generator().manual_seed(4))
    want = H.fwht(x)
    y = x.clone()
    got = H.fwht(y, overwrite=True)
    assert torch.equal(got, want)
    if H.compiled_fwht_applies(y):
        assert got.data_ptr() == y.data_ptr()  # in place: the caller's temporary
    z = x.clone()[:, ::2]  # not contiguous: a new tensor, z untouched
    assert torch.equal(H.fwht(z, overwrite=True), H.fwht(x[:, ::2])) and torch.equal(z, x[:, ::2])
    with pytest.raises(TypeError, match="overwrite"):
        H.fwht(x, "torch", overwrite="yes")


def test_scratch_limit_keeps_large_temporaries_within_its_block_only():
    big = (_kernels.SCRATCH_MAX // 4) + 1024  # float32 entries: over the usual bound
    assert _kernels.scratch("test.big", (big,), np.float32).base is None  # allocated afresh
    with _kernels.scratch_limit(8 * big):
        a = _kernels.scratch("test.big", (big,), np.float32)
        b = _kernels.scratch("test.big", (big,), np.float32)
        assert np.shares_memory(a, b)  # kept between calls inside the block
    c = _kernels.scratch("test.big", (big,), np.float32)
    assert not np.shares_memory(a, c)  # dropped at exit: the usual bound again
    small = _kernels.scratch("test.small", (16,), np.float32)
    with _kernels.scratch_limit(0):  # a lower limit never lowers the bound in force
        assert np.shares_memory(small, _kernels.scratch("test.small", (16,), np.float32))


@pytest.mark.parametrize("dtype,k", [(torch.float32, 1), (torch.float32, 2), (torch.float64, 1)])
def test_seeded_irht_of_a_2_24_row_flips_its_signs_in_the_top_pass(dtype, k):
    """At D = 2^24 (Figure 8's padded d) the compiled inverse flips the signs of rotation 0 inside its
    last radix-8 pass, chunk by chunk, instead of a pass of its own: the bits of ``fwht`` then the sign
    multiplication (:func:`qlib.hadamard.irht` with the seed's signs), for 1 and 2 rotations; the same
    at 2^12, where the flip is its own pass."""
    for D in (2**12, 2**24):
        y = torch.randn(2, D, generator=torch.Generator().manual_seed(D % 97), dtype=dtype)
        want = H.irht(y, H.rotation_signs(5, (2,), k, D, dtype))
        assert torch.equal(H.seeded_irht(y, 5, k), want), D


def test_rotation_sign_bits_are_kept_and_read_only():
    """A sweep decodes every budget with one rotation: the bits of a (seed, batch, k, D) are drawn once and
    handed out read-only (no caller can change what the next one reads); another seed draws others."""
    a = H.rotation_sign_bits(3, (2,), 1, 64)
    assert H.rotation_sign_bits(3, (2,), 1, 64) is a and not a.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        a[0] = 1
    signs = H.rotation_signs(3, (2,), 1, 64)
    assert np.array_equal(np.unpackbits(a, bitorder="little")[: 2 * 64], (signs.reshape(-1) < 0).numpy())
    assert not np.array_equal(H.rotation_sign_bits(4, (2,), 1, 64), a)
