"""EDEN and the baselines of paper 002 ({cite:p}`vargaftik2022eden`, §5 and Appendix I) behind one interface.

The interface (:class:`Compressor`):

* ``compress(x, seed) -> Message`` for a vector ``(d,)`` or a batch ``(*batch, d)`` of vectors
  (float32/float64 tensor, finite, non-empty; every row gets its own randomness from the shared
  ``seed``, an integer in [0, 2^63));
* ``decompress(message) -> x̂`` with the shape and dtype of ``x`` (the receiver regenerates all
  randomness from ``message.seed``);
* ``roundtrip(x, seed) -> (x̂, nbits)`` and ``mean(xs, seed) -> (estimate of the mean of the rows,
  total bits)`` (linear sketches sum before decoding and override it).

A :class:`Message` holds the compressor's ``name``, its fields in ``data`` (tensors, one leading
batch shape), ``nbits`` (a long tensor of shape ``batch``: the exact size of every row's message in
bits, fixed- or variable-length), the ``seed`` (shared randomness, not counted) and the input
``shape``. A subclass sets ``name`` and implements ``_compress(x, seed)`` (``x`` and ``seed``
already validated) and ``_decompress(message)``; the base class validates and routes. Bit sizes
use :data:`FLOAT_BITS` for a float32 side value and ``qlib.eden.SCALE_BITS`` for EDEN's and
DRIVE's float64 scale.

| class | what | bits per message |
|---|---|---|
| :class:`EDEN` | qlib.eden | ``b·D + 64`` |
| :class:`DRIVE` | ``x̂ = R^{-1}(‖x‖²/‖Rx‖₁ · sign(Rx))`` (Vargaftik et al. 2021) | ``D + 64`` |
| :class:`HadamardSQ` | RHT, then stochastic quantization (SQ) with ``2^b`` levels on [min, max] | ``b·D + 64`` |
| :class:`KashinSQ` | Kashin representation in a 2× tight frame (TF-MOT defaults), then SQ | ``b·D_K + 64`` (``D_K ≈ 2d``) |
| :class:`QSGD` | norm + sign + SQ of ``|x_i|/‖x‖`` with ``s = 2^b − 1`` levels (Alistarh et al. 2017) | ``(b + 1)·d + 32`` |
| :class:`QSGDElias` | QSGD with ``s`` levels, Elias-ω coded (Alistarh et al. §3.2) | exact code length + 32 |
| :class:`SQHuffman` | SQ with ``k`` levels on [min, max], Huffman-coded indices (Suresh et al. 2017) | exact code length + 64 |
| :class:`CountSketch` | ``rows × c`` 32-bit counters, ``c = ⌊b·d/(32·rows)⌋`` (Charikar et al. 2002) | ``32·rows·c`` |
| :class:`TernGrad` | ``max|g| · sign · Bernoulli(|g|/max|g|)`` (Wen et al. 2017) | ``2·d + 32`` |
| :class:`Float32` | no compression | ``32·d`` |

:func:`fit_to_budget` picks the largest level count of a variable-length scheme whose coded size
meets a bit budget (Figure 5). :func:`squared_errors` measures the error of several compressors on one
input with their budget-independent stages done once, and the error of the rotation-based ones in the
rotated domain (Figures 2, 6 and 8's sweeps). :func:`make_compressor` gives each method of the distributed and
federated experiments (:data:`METHODS`) at any budget: a sub-bit budget of a method without one of
its own wraps its 1-bit form in :class:`RandomMask`, the random mask of §4.1.

The package's modules, one idea each (private: this package is the one home of every name above):
``_base`` (the interface, its checks, the kernel gate), ``_sq`` (stochastic quantization),
``_rotated`` (EDEN, DRIVE, Hadamard+SQ, Kashin+SQ), ``_scalar`` (QSGD, QSGD+Elias, SQ+Huffman, TernGrad,
Float32, :func:`fit_to_budget`), ``_sketch`` (Count-Sketch), ``_registry`` (:func:`make_compressor`),
``_stages`` (the budget-independent stages of one input, shared by the codecs) and ``_fast_errors``
(:func:`squared_errors` and the interface of a codec that measures its own error from those stages: each
codec's shortcut is a method of its class, beside its encoder and decoder).
"""


from __future__ import annotations

from ._base import FLOAT_BITS, Compressor, Message
from ._fast_errors import squared_errors
from ._registry import METHODS, RandomMask, make_compressor
from ._rotated import DRIVE, EDEN, HadamardSQ, KashinSQ
from ._scalar import QSGD, Float32, QSGDElias, SQHuffman, TernGrad, elias_omega_length, fit_to_budget, huffman_length
from ._sketch import CountSketch

__all__ = [
    "FLOAT_BITS",
    "Message",
    "Compressor",
    "EDEN",
    "DRIVE",
    "HadamardSQ",
    "KashinSQ",
    "QSGD",
    "QSGDElias",
    "SQHuffman",
    "CountSketch",
    "TernGrad",
    "Float32",
    "fit_to_budget",
    "elias_omega_length",
    "huffman_length",
    "METHODS",
    "RandomMask",
    "make_compressor",
    "squared_errors",
]

# every public class and function is documented, pickled and named by this package, its one home
for _name in __all__:
    _obj = globals()[_name]
    if isinstance(_obj, type) or callable(_obj):
        _obj.__module__ = __name__
del _name, _obj
