"""Compiled CPU kernels of the wire format's 2- and 4-bit code packing, loaded by :mod:`qlib.wire`
(``qlib._kernels.load("wire")``).

A byte's codes are read as one little-endian word (four uint8 codes: uint32; two: uint16) and moved into
place by shifts: the same bit stream as NumPy's several passes (:func:`qlib.wire.pack_bits`'s fallback
without numba), in one pass with the codes' word loads vectorized. Compiled at the first call (cached on
disk beside this file).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["pack2", "unpack2", "pack4", "unpack4"]


@njit(cache=True, nogil=True)
def pack2(w, out):
    """out[k] = the four 2-bit codes of the uint32 word w[k] (code j in bits 2j, 2j+1)."""
    for k in range(w.shape[0]):
        v = w[k]
        out[k] = np.uint8((v & np.uint32(0x03)) | ((v >> np.uint32(6)) & np.uint32(0x0C))
                          | ((v >> np.uint32(12)) & np.uint32(0x30)) | ((v >> np.uint32(18)) & np.uint32(0xC0)))


@njit(cache=True, nogil=True)
def unpack2(p, out):
    """out[k] = the uint32 word of the four 2-bit codes of byte p[k], one code per byte."""
    for k in range(p.shape[0]):
        v = np.uint32(p[k])
        out[k] = (v | (v << np.uint32(6)) | (v << np.uint32(12)) | (v << np.uint32(18))) & np.uint32(0x03030303)


@njit(cache=True, nogil=True)
def pack4(w, out):
    """out[k] = the two 4-bit codes of the uint16 word w[k]."""
    for k in range(w.shape[0]):
        v = w[k]
        out[k] = np.uint8((v & np.uint16(0x0F)) | ((v >> np.uint16(4)) & np.uint16(0xF0)))


@njit(cache=True, nogil=True)
def unpack4(p, out):
    """out[k] = the uint16 word of the two 4-bit codes of byte p[k], one code per byte."""
    for k in range(p.shape[0]):
        v = np.uint16(p[k])
        out[k] = (v | (v << np.uint16(4))) & np.uint16(0x0F0F)
