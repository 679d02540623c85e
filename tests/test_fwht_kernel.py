"""Tests of the two paths of qlib.hadamard.fwht: the compiled CPU kernel (qlib/_kernels/fwht.py) and the
torch path, each against scipy.linalg.hadamard and against each other; the automatic choice; bad input."""

import math

import numpy as np
import pytest
import scipy.linalg
import torch

from qlib import _kernels
from qlib import hadamard as H

pytest.importorskip("numba")  # without numba only the torch path exists (tested in test_hadamard.py)

DTYPES = [(torch.float32, 2e-6), (torch.float64, 1e-13)]


def _x(shape, dtype, seed):
    return torch.randn(*shape, dtype=torch.float64, generator=torch.Generator().manual_seed(seed)).to(dtype)


@pytest.mark.parametrize("dtype,tol", DTYPES)
@pytest.mark.parametrize("k", range(0, 13))
def test_both_paths_equal_scipy_sylvester(k, dtype, tol):
    D = 2**k
    x = _x((3, D), dtype, k)
    ref = x.double().numpy() @ scipy.linalg.hadamard(D) / math.sqrt(D)
    scale = np.abs(ref).max()
    for backend in ("compiled", "torch"):
        y = H.fwht(x, backend=backend)
        assert y.dtype == dtype and y.shape == x.shape
        assert np.abs(y.double().numpy() - ref).max() <= tol * scale * max(k, 1), backend


@pytest.mark.parametrize("dtype,tol", DTYPES)
@pytest.mark.parametrize("k", [15, 16, 18, 22])  # 2^15..: the L2 block, the outer passes, the L3 block
def test_large_compiled_equals_torch(k, dtype, tol):
    x = _x((2**k,), dtype, k)
    a = H.fwht(x, backend="compiled")
    b = H.fwht(x, backend="torch")
    assert (a.double() - b.double()).abs().max() <= tol * k * b.abs().max()
    # orthonormal and an involution, through the compiled path alone
    assert math.isclose(a.double().norm().item(), x.double().norm().item(), rel_tol=10 * tol)
    assert (H.fwht(a, backend="compiled").double() - x.double()).abs().max() <= tol * k * x.abs().max()


def _butterfly_int(x: np.ndarray) -> np.ndarray:
    """Textbook radix-2 butterflies in int64 (exact), unnormalized."""
    y = x.astype(np.int64).copy()
    h = 1
    while h < y.size:
        v = y.reshape(-1, 2, h)
        v[:, 0], v[:, 1] = v[:, 0] + v[:, 1], v[:, 0] - v[:, 1]
        h *= 2
    return y


@pytest.mark.parametrize("k", [10, 14, 16])  # one tile, the L2 block, beyond it
def test_compiled_exact_on_integers(k):
    # integer input: every partial sum is an integer below 2^24, so float32 is exact on the compiled path
    D = 2**k
    x = torch.randint(-8, 9, (D,), generator=torch.Generator().manual_seed(k)).to(torch.float32)
    y = H.fwht(x, backend="compiled").double() * math.sqrt(D)
    np.testing.assert_array_equal(y.numpy(), _butterfly_int(x.numpy()))  # exact (sqrt(D) a power of two)
    if k == 10:
        np.testing.assert_array_equal(_butterfly_int(x.numpy()), scipy.linalg.hadamard(D) @ x.numpy().astype(np.int64))


def test_batched_rows_and_leading_dims():
    x = _x((2, 3, 5, 1024), torch.float32, 1)
    y = H.fwht(x, backend="compiled")
    for i in range(2):
        for j in range(3):
            assert torch.equal(y[i, j], H.fwht(x[i, j], backend="compiled"))  # rows independent, same bits
    assert (y - H.fwht(x, backend="torch")).abs().max() < 1e-5


def test_non_contiguous_and_empty_input():
    base = _x((4, 512), torch.float64, 2)
    for x in (base[:, ::2], base.t().contiguous().t(), base[::2], base.expand(3, 4, 512)):
        assert not x.is_contiguous()
        np.testing.assert_allclose(H.fwht(x, backend="compiled").numpy(), H.fwht(x, backend="torch").numpy(), atol=1e-12)
    np.testing.assert_array_equal(base, _x((4, 512), torch.float64, 2))  # input untouched
    e = torch.empty(0, 16)
    assert H.fwht(e, backend="compiled").shape == (0, 16)


def test_automatic_choice():
    x = _x((64,), torch.float32, 3)
    assert H.compiled_fwht_applies(x)
    assert H.compiled_fwht_applies(x.double())
    assert not H.compiled_fwht_applies(x.half())
    g = x.double().requires_grad_()
    assert not H.compiled_fwht_applies(g)  # autograd needs the torch path
    y = H.fwht(g)
    assert y.requires_grad and y.grad_fn is not None
    with torch.no_grad():
        assert H.compiled_fwht_applies(g)
        assert not H.fwht(g).requires_grad
    # float16 goes through torch and still transforms
    np.testing.assert_allclose(H.fwht(x.half()).float().numpy(), H.fwht(x).numpy(), atol=2e-2)


def test_bad_input_raises_named_errors():
    with pytest.raises(ValueError, match="backend"):
        H.fwht(torch.ones(8), backend="numba")
    with pytest.raises(ValueError, match="compiled"):
        H.fwht(torch.ones(8, requires_grad=True), backend="compiled")
    with pytest.raises(ValueError, match="compiled"):
        H.fwht(torch.ones(8, dtype=torch.float16), backend="compiled")
    with pytest.raises(TypeError, match="x"):
        H.fwht(torch.ones(8, dtype=torch.int64), backend="compiled")
    with pytest.raises(TypeError, match="x"):
        H.fwht(np.ones(8), backend="compiled")
    with pytest.raises(ValueError, match="power of two"):
        H.fwht(torch.ones(12), backend="compiled")
    with pytest.raises(ValueError, match="x"):
        H.fwht(torch.tensor(1.0), backend="compiled")


@pytest.mark.parametrize("h", [1, 2, 4, 8, 64])  # 1, 2, 4: the fallback passes used for strides above 8^7
def test_radix8_pass_equals_three_radix2_levels(h):
    from qlib._kernels import fwht as K

    n = 64 * h
    y = np.random.default_rng(h).standard_normal(n)
    ref = y.copy()
    for stride in (h, 2 * h, 4 * h):
        v = ref.reshape(-1, 2, stride)
        v[:, 0], v[:, 1] = v[:, 0] + v[:, 1], v[:, 0] - v[:, 1]
    K._r8(y, 0, n, h, 0.5)
    np.testing.assert_allclose(y, 0.5 * ref, rtol=0, atol=1e-12)


def _rademacher_torch(shape, gen, dtype):
    """The torch formula of qlib.hadamard.rademacher (the stream any device draws): the float32 signs of 32-bit
    words, cast to ``dtype`` (one stream for every dtype since issue 30)."""
    n = int(np.prod(shape)) if shape else 1
    words = torch.randint(-(2**31), 2**31, ((n + 31) // 32,), generator=gen, dtype=torch.int32)
    bits = ((words.unsqueeze(-1) >> torch.arange(32, dtype=torch.int32)) & 1).reshape(-1)[:n]
    return ((bits << 31) | 0x3F800000).view(torch.float32).reshape(shape).to(dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
@pytest.mark.parametrize("shape", [(), (1,), (7,), (33,), (3, 5), (2, 1, 1000)])
def test_compiled_rademacher_is_the_torch_stream(shape, dtype):
    a = H.rademacher(shape, H.generator(5, "rotation"), dtype)
    b = _rademacher_torch(shape, H.generator(5, "rotation"), dtype)
    assert a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)


def test_compiled_fwht_applies_bad_input():
    with pytest.raises(TypeError, match="x"):
        H.compiled_fwht_applies(np.ones(4))
    with pytest.raises(TypeError, match="x"):
        H.compiled_fwht_applies(None)
    assert not H.compiled_fwht_applies(torch.ones(4, dtype=torch.int64))  # integer tensors: never compiled


def test_without_the_kernel_fwht_stays_on_torch(monkeypatch):
    monkeypatch.setitem(_kernels._LOADED, "fwht", None)  # as when numba cannot be imported
    monkeypatch.setitem(_kernels._LOADED, "rotation", None)
    x = _x((2, 256), torch.float64, 4)
    assert not H.compiled_fwht_applies(x)
    ref = x.numpy() @ scipy.linalg.hadamard(256) / 16
    np.testing.assert_allclose(H.fwht(x).numpy(), ref, atol=1e-12)
    with pytest.raises(ValueError, match="numba cannot be imported"):
        H.fwht(x, backend="compiled")
    s = H.rademacher((3, 100), H.generator(1, "rotation"))  # the torch formula: the same stream
    monkeypatch.undo()
    assert torch.equal(s, H.rademacher((3, 100), H.generator(1, "rotation")))


def test_without_the_rotation_kernel_the_seeded_rotation_stays_on_torch(monkeypatch):
    """The seeded rotation has its own kernel module (``rotation``): where it cannot be loaded the transform
    stays compiled and the rotation, its inverse and the Rademacher signs take the torch path, the same bits."""
    x = _x((2, 64), torch.float32, 5)
    want = H.seeded_rht(x, 3, 2), H.seeded_irht(x, 3, 2), H.rademacher((3, 100), H.generator(1, "rotation"))
    monkeypatch.setitem(_kernels._LOADED, "rotation", None)
    assert H.compiled_fwht_applies(x) and not H.compiled_rotation_applies(x)
    got = H.seeded_rht(x, 3, 2), H.seeded_irht(x, 3, 2), H.rademacher((3, 100), H.generator(1, "rotation"))
    assert all(torch.equal(a, b) for a, b in zip(got, want))


@pytest.mark.parametrize("n0", [2, 3, 4, 5, 8, 16, 17])
@pytest.mark.parametrize("n", [3, 8, 61, 4096])
@pytest.mark.parametrize("cdt, fdt", [(np.uint8, np.float32), (np.uint8, np.float64), (np.int32, np.float32)])
def test_table_lookup_row_reads_the_table_and_flags_codes_outside_it(n0, n, cdt, fdt):
    """``lookup_row`` (the receiver's ``tab[code]·S`` inside the inverse rotation), every path: the 2- and
    4-entry selects, eight codes at a time from a table of <= 16 entries (AVX2 lane permutations where the
    host has them), the general loop; against NumPy indexing, and a code outside the table flagged."""
    from qlib._kernels import lookup as F

    rng = np.random.default_rng(n0 * 1000 + n)
    tab = rng.standard_normal(n0).astype(fdt)
    sc = fdt(0.37)
    ii = rng.integers(0, n0, n).astype(cdt)
    oo = np.empty(n, dtype=fdt)
    assert not F.lookup_row(ii, 0, tab, sc, oo)
    ts = (tab * sc).astype(fdt)  # one product per entry, in the table's dtype
    assert np.array_equal(oo.view(f"u{oo.itemsize}"), ts[ii.astype(np.int64)].view(f"u{oo.itemsize}"))
    for bad in ([n0], [255] if cdt == np.uint8 else [-1]):
        jj = ii.copy()
        jj[rng.integers(n)] = bad[0]
        assert F.lookup_row(jj, 0, tab, sc, oo)


def test_table_lookup_without_avx2_reads_the_same_values(tmp_path):
    """Hosts without AVX2 (ARM, older x86) compile ``_lut16`` to eight scalar reads instead of the lane
    permutations, and quantize float32 four-bit codes by selects instead of the vector loop: that code,
    compiled here in a fresh process with the flag off (and a fresh numba cache, so that nothing compiled
    for this host is reused), gives NumPy's indexing and flags codes outside the table, for every table
    size and code dtype of the AVX2 test above, and the torch path's codes and centroids at every
    four-bit threshold and one float step either side."""
    import os
    import subprocess
    import sys

    code = """
import numpy as np
from qlib._kernels import lookup as F
F.AVX2 = False
rng = np.random.default_rng(1)
for n0 in (2, 3, 5, 8, 16):
    for cdt, fdt in ((np.uint8, np.float32), (np.uint8, np.float64), (np.int32, np.float32)):
        tab = rng.standard_normal(n0).astype(fdt)
        ii = rng.integers(0, n0, 4099).astype(cdt)
        oo = np.empty(4099, dtype=fdt)
        assert not F.lookup_row(ii, 0, tab, fdt(0.37), oo)
        ts = (tab * fdt(0.37)).astype(fdt)
        assert np.array_equal(oo, ts[ii.astype(np.int64)]), (n0, cdt, fdt)
        ii[17] = n0
        assert F.lookup_row(ii, 0, tab, fdt(0.37), oo)
import torch
from qlib import _kernels, eden_quantizer
from qlib import eden_theory
from qlib._kernels import eden as E
E.AVX2 = False  # float32 four-bit codes: the selects of _row_4bit, not the vector loop
_kernels.load("eden")
t = torch.tensor(eden_theory.codebook(4)[1], dtype=torch.float32)
t = t[t > 0]
inf = torch.tensor(float("inf"))
edge = torch.cat([t, torch.nextafter(t, inf), torch.nextafter(t, -inf), torch.randn(3001)])
r = torch.stack([edge, -edge])
idx, q = eden_quantizer.lm_quantize_compiled(r, torch.ones(2), 4, None)
ref = eden_quantizer.lm_quantize(r, 4)
assert torch.equal(idx, ref)
assert torch.equal(q.view(torch.int32), eden_quantizer.dequantize(ref, 4.0, "lm", None, torch.float32, "cpu").view(torch.int32))
print("ok")
"""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]
