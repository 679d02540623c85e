"""Chapter eden/01: what padding to a power of two costs against slicing, in bits and in error (our
measurement: the paper pads and is silent on it; the authors' package ``srrcomp`` slices).

:func:`pad_vs_slice` compresses LogNormal(0, 1) vectors of several lengths ``d`` at several budgets in both
layouts of :func:`qlib.eden.compress` (:mod:`qlib.eden_layout`) and tabulates the bits per coordinate the
messages carry and the vNMSE of the decoded vectors. A table, not ledger rows: no claim of the paper is
at stake.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from ... import eden, eden_layout
from ...hadamard import next_power_of_two
from ...validation import check_int, check_int_sequence, check_seed
from ._args import check_budgets
from .sweeps import MAX_LOGD, input_law

__all__ = ["LAYOUT_DIMS", "pad_vs_slice"]

#: d = 2^16 + 1,310 (d/D = 0.51, the issue's example), then d/D = 0.6, 0.75, 0.9 of D = 2^17, and 2^16
LAYOUT_DIMS = (2**16 + 1310, 78643, 98304, 117965, 2**16)


def pad_vs_slice(dims, bits=(1, 2, 4), trials: int = 20, seed: int = 0) -> pd.DataFrame:
    """One row per (d, bits, layout) for the lengths ``dims`` (the chapter's: :data:`LAYOUT_DIMS`): ``d``, ``d/D`` (``D`` the power of two above ``d``), ``bits``,
    ``layout``, ``pieces`` (the lengths the vector is compressed in), ``rotated`` (the rotated coordinates
    the message codes: the pieces' padded lengths summed), ``bits/coord`` (the messages' ``nbits``
    over ``d``, 64-bit scales included: measured), ``bits/coord formula``
    (:func:`qlib.eden_layout.bits_per_coordinate`), ``vNMSE`` (the mean over ``trials`` vectors of
    ``‖x̂ − x‖²/‖x‖²``) and its standard error ``s.e.``. Every (d, bits) draws the same ``trials``
    LogNormal(0, 1) vectors (``input_law``, float64, seed ``seed + d``) and encodes them in both layouts with
    the seed ``seed``: each row its own rotation."""
    dims = check_int_sequence("dims", dims, low=1, high=2**MAX_LOGD)
    bits = check_budgets("bits", bits)
    trials = check_int("trials", trials, low=2)
    seed = check_seed("seed", seed)
    rows = []
    for d in dims:
        x = input_law("lognormal", (trials, d), seed + d, torch.float64)
        norm2 = (x**2).sum(-1)
        for b in bits:
            for layout in eden_layout.LAYOUTS:
                pl = eden.compress(x, b, seed, layout=layout)
                err = (((eden.decompress(pl) - x) ** 2).sum(-1) / norm2).numpy()
                rows.append({"d": d, "d/D": d / next_power_of_two(d), "bits": b, "layout": layout,
                             "pieces": " + ".join(map(str, eden_layout.piece_lengths(d, layout))),
                             "rotated": sum(p.D for p in getattr(pl, "pieces", (pl,))),
                             "bits/coord": float(pl.nbits.double().mean()) / d,
                             "bits/coord formula": eden_layout.bits_per_coordinate(d, b, layout),
                             "vNMSE": float(err.mean()), "s.e.": float(err.std(ddof=1) / np.sqrt(trials))})
    return pd.DataFrame(rows)
