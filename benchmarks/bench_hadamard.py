"""Speed of qlib.hadamard.fwht against its peers, and of EDEN compress+decompress against one
forward+inverse fwht pair — side by side, interleaved, in one run, float32, one thread, one vector.

Columns (milliseconds, medians of interleaved repeats):

* ``torch``: ``fwht(x, backend="torch")``, the pure-torch path (the only path before the compiled kernel:
  the *before* column);
* ``qlib``: ``fwht(x)``, the automatic choice (the compiled CPU kernel here: the *after* column);
* ``h-t``: the PyPI package ``hadamard-transform`` 0.2.0 (pure torch, radix-2);
* ``fht``: ``fht-cpu`` 1.0.1 (SIMD C) out of place like ours (``fht(a, inplace=False)``: a copy, then its
  in-place transform), and ``fht ip``: its in-place transform alone (no copy; the kernel's floor);
* ``EDEN/pair``: ``eden.decompress(eden.compress(x, b, 1))`` over ``fwht(fwht(x))`` (the rotation and its
  inverse are the floor of EDEN's cost).

Normalisations differ (``fht-cpu`` is unnormalized): every output is scaled to the orthonormal transform
and all are checked against ``fwht(x, backend="torch")`` in float64 before timing ("agree").

Targets (issue 15): ``qlib`` at least as fast as ``fht`` at 2^16, 2^20, 2^24 and never slower than ``torch``
at any size; ``EDEN/pair`` ≤ 3 at 2^20 and 2^24. The peers are dependencies of this benchmark only
(``pip install -e ".[bench]"``); a missing peer prints ``n/a``.

Measured on the 2-core development machine (AMD EPYC, AVX2, shared with other jobs: ±20 % between runs;
``--repeat 15``, one run, medians). ``torch`` is the code before the compiled path (unchanged), so the
*before* and *after* columns come from the same run::

        d   torch ms    qlib ms     h-t ms     fht ms  fht ip ms torch/qlib  qlib/fht qlib/fhtip  h-t/qlib
    2^10       0.179      0.054      0.457      0.023      0.007      3.31x     2.38x      7.76x     8.42x
    2^16       0.756      0.196      1.868      0.161      0.105      3.85x     1.22x      1.87x     9.52x
    2^20      13.093      2.801     44.238      2.835      1.965      4.67x     0.99x      1.43x    15.79x
    2^24     371.858     58.575   1956.437     56.499     39.843      6.35x     1.04x      1.47x    33.40x

    EDEN b=2 / pair: 4.70x at 2^20, 6.12x at 2^24 (b=1: 4.17x, 4.60x); pair = 5.35 ms, 117 ms.

So: 3.3–6.4× faster than before; level with ``fht-cpu`` out of place at 2^20 and 2^24, 1.2× behind at 2^16
(about 20 µs of the 2^16 time is Python and torch glue around the kernel), and 1.4–1.9× behind its
in-place transform. EDEN's ratio rose because the pair got 5× faster while the quantizer, the sign draws
and the codebook look-ups did not.

EDEN's compiled CPU path (issue 15 §2). Profile of one 2^20 round trip (b=2) before it, in units of the
pair (step timers, medians; the two transforms themselves were 0.8–1.1): the torch elementwise passes
around the transforms made up nearly all of the ratio — ``_dequantize`` (NumPy take on the codes, twice:
sender and receiver) 1.3–1.5 each, the Lloyd–Max quantizer (``u < 0``, ``|u|``, threshold comparisons,
uint8 adds and shifts) 0.3 (b=1) to 1.4 (b=2), the receiver's ``y * signs`` 1.0–1.2, the ±1 float signs
drawn and expanded twice 0.4 each, ``x * signs`` 0.2, ``u = r·η`` 0.15, ``q·S`` 0.15–0.2; at 2^24 each of
these passes also allocates a fresh 64 MiB tensor and costs 0.7–1.2 pair. Now (``qlib/_eden_cpu.py`` and the
signed passes of ``qlib/_fwht_cpu.py``): the rotation reads the seeded random words as sign bits inside the
FWHT's first pass (no ±1 floats); ``u = r·η``, the cell codes and the centroids are one pass; the receiver
looks the codes up inside the first pass of the inverse transform and flips the sign bits of the result
in one pass of 64-bit XORs; same seed, same payload and the same decoded bits as the torch path (which
CUDA and autograd still take). Before and after side by side, the pre-change tree (``git archive main``)
and this one alternated three times, ``--repeat 15 --logd 20 24``, same 2-core machine under load from
other jobs (no peers installed; ranges over the three runs)::

                 pair ms        EDEN2/pair     EDEN1/pair
    before 2^20  2.18–2.23      6.58–7.16x     5.95–6.66x
    after  2^20  2.02–2.63      2.45–2.79x     2.16–2.65x
    before 2^24  58.3–65.4      9.07–11.26x    6.79–7.96x
    after  2^24  55.5–73.2      1.79–1.92x     1.77–1.89x

(The ``qlib`` FWHT column did not change: same kernel, 1.0 ms and 29 ms at its fastest in both trees.)
What is left at 2^20, per round trip: the two transforms (1 pair), the two draws of the seeded random
words in torch (0.2–0.3: the stream is part of the wire format), the input's finiteness check, the two
dot products ``r·r`` and ``r·q`` (kept in torch so that the scale stays bit-identical), the quantizer and
sign-flip passes and about 0.45 ms of Python and torch glue; on this machine a fresh multi-MiB array costs
about 2 ms of page faults, so the ratio also moves with which of EDEN's temporaries glibc hands back to the
system (±0.3).

Levels 0–2 in vector registers, kernel called by address (2026-11-26). The first pass (the butterflies
within each group of eight, strides 1, 2, 4) stayed scalar in every form numba compiled: 29 µs of a
~60 µs kernel at 2^16. It is now LLVM vector code (``_h8_group``: a lane permutation and a multiply-add
by ±1 per level, the same bits), 12 µs; the rotation's signed first pass uses it too. Around the kernel,
``fwht`` now passes addresses instead of NumPy views (~6 µs less per call) and allocates its output
with NumPy, which asks for huge pages (a ``torch.empty`` output cost 2× at 2^24 in page faults).
Two runs of the default command, same machine::

        d   torch ms    qlib ms     h-t ms     fht ms  fht ip ms torch/qlib  qlib/fht qlib/fhtip  h-t/qlib
    2^10       0.207      0.032      0.455      0.022      0.007      6.48x     1.45x      4.89x    14.23x
    2^16       0.650      0.089      2.262      0.098      0.058      7.30x     0.91x      1.53x    25.40x
    2^20       6.432      1.055     24.626      1.176      0.920      6.10x     0.90x      1.15x    23.34x
    2^24     329.622     34.288   3084.823     67.738     22.684      9.61x     0.51x      1.51x    89.97x
    2^10       0.180      0.029      0.372      0.022      0.007      6.15x     1.35x      4.42x    12.67x
    2^16       0.518      0.079      1.783      0.083      0.061      6.54x     0.96x      1.31x    22.54x
    2^20       7.823      1.072     20.892      1.235      0.941      7.30x     0.87x      1.14x    19.48x
    2^24     341.700     33.558   2939.595     37.115     20.300     10.18x     0.90x      1.65x    87.60x

    EDEN b=2 / pair: 2.47x, 2.54x at 2^20 (b=1: 2.45x, 2.58x); at 2^24 below 1 (the pair pays page faults).

So ``qlib`` is now at least as fast as ``fht-cpu`` out of place at 2^16, 2^20 and 2^24 (0.87–0.96×; 2^24
0.51–0.90×), and still 1.1–1.7× behind its in-place transform, which makes no output. At 2^10 the
~6 µs of Python per call remain (1.35–1.45× behind, no target there; 0.054 ms before, 0.029–0.032 now).

    .venv/bin/python benchmarks/bench_hadamard.py [--repeat 9] [--logd 10 16 20 24]
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

import numpy as np
import torch

from qlib import eden
from qlib import hadamard as H

try:
    from hadamard_transform import hadamard_transform as ht
except ImportError:  # pragma: no cover
    ht = None
try:
    from fht_cpu import fht
except ImportError:  # pragma: no cover
    fht = None


COLS = ["torch", "qlib", "h-t", "fht", "fht ip"]


def interleaved(fns: dict, repeat: int) -> dict:
    """Median wall time (s) of each function, calls interleaved round-robin (a busy machine slows
    every side alike)."""
    for f in fns.values():  # warm-up (and the compiled kernel's first load)
        f()
    times = {k: [] for k in fns}
    for _ in range(repeat):
        for k, f in fns.items():
            t0 = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in times.items()}


def agree(x: torch.Tensor) -> str:
    """All implementations, scaled to the orthonormal transform, against the torch path in float64."""
    n = x.shape[-1]
    ref = H.fwht(x.double(), backend="torch").numpy()
    outs = {"qlib": H.fwht(x).numpy()}
    if ht is not None:
        outs["h-t"] = ht(x).numpy()
    if fht is not None:
        outs["fht"] = fht(x.numpy(), inplace=False, num_threads=1) / math.sqrt(n)
    tol = 1e-6 * math.log2(n) * np.abs(ref).max() + 1e-6
    bad = [k for k, v in outs.items() if np.abs(v - ref).max() > tol]
    return "yes" if not bad else "NO: " + ",".join(bad)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--logd", type=int, nargs="+", default=[10, 16, 20, 24])
    args = ap.parse_args()
    torch.set_num_threads(1)
    x0 = torch.ones(16)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread, float32, one vector, "
          f"compiled path {'on' if H.compiled_fwht_applies(x0) else 'OFF (numba missing)'}")
    print("(medians of interleaved repeats in one run; the machine may be shared with other jobs)\n")
    print(f"{'d':>5s} " + " ".join(f"{c + ' ms':>10s}" for c in COLS)
          + f" {'torch/qlib':>10s} {'qlib/fht':>9s} {'qlib/fhtip':>10s} {'h-t/qlib':>9s} {'agree':>6s}"
          + f" {'pair ms':>9s} {'EDEN2/pair':>10s} {'EDEN1/pair':>10s}")
    for k in args.logd:
        print(one_size(k, args.repeat), flush=True)


def one_size(k: int, repeat: int) -> str:
    """The table line for d = 2^k."""
    d = 2**k
    x = torch.randn(d, generator=torch.Generator().manual_seed(0))
    a = x.numpy()
    buf = a.copy()
    ok = agree(x)
    fns = {"torch": lambda: H.fwht(x, backend="torch"), "qlib": lambda: H.fwht(x)}
    if ht is not None:
        fns["h-t"] = lambda: ht(x)
    if fht is not None:
        fns["fht"] = lambda: fht(a, inplace=False, num_threads=1)
        fns["fht ip"] = lambda: fht(buf, num_threads=1)  # in place: values grow, the time does not
    if k >= 20:
        fns["pair"] = lambda: H.fwht(H.fwht(x))
        fns["eden2"] = lambda: eden.decompress(eden.compress(x, 2, 1))
        fns["eden1"] = lambda: eden.decompress(eden.compress(x, 1, 1))
    rep = {10: 300, 16: 60}.get(k, repeat if k < 24 else max(3, repeat // 2))
    ms = {n: 1e3 * v for n, v in interleaved(fns, rep).items()}

    def col(name, w=10):
        return f"{ms[name]:{w}.3f}" if name in ms else f"{'n/a':>{w}s}"

    def ratio(p, q, w):
        return f"{ms[p] / ms[q]:{w - 1}.2f}x" if p in ms and q in ms else f"{'n/a':>{w}s}"

    line = f"2^{k:<3d} " + " ".join(col(c) for c in COLS)
    line += f" {ratio('torch', 'qlib', 10)} {ratio('qlib', 'fht', 9)} {ratio('qlib', 'fht ip', 10)}"
    line += f" {ratio('h-t', 'qlib', 9)} {ok:>6s}"
    if "pair" in ms:
        line += f" {col('pair', 9)} {ratio('eden2', 'pair', 10)} {ratio('eden1', 'pair', 10)}"
    return line


if __name__ == "__main__":
    main()
