"""Why Kashin+SQ's vNMSE grows with d in our Figure 2 while the paper's stays flat: a probe of the
Kashin representation, outside the library (the library's defaults are not changed).

What it shows (:func:`kashin_probe`, LogNormal(0, 1) vectors as in Figure 2, d a power of two):

* With ``D = 2d`` the frame ``F(v) = H̃_{2d}·pad(s∘v)`` is degenerate: the first half of the Sylvester
  ``H̃_{2d}`` is ``[H̃_d; H̃_d]/√2``, so every frame vector has two equal halves, clipping keeps that
  property, and the Kashin iterations change nothing — the coefficients are ``F(x)`` (the rotated
  vector, duplicated) whatever ``n_iters`` and ``eta`` (checked: :func:`iterations_change_nothing`).
  With the last iteration unclipped (TF-MOT's ``KashinHadamardEncodingStage``, the library's
  default), Kashin+SQ is Hadamard+SQ with two SQ draws per rotated coordinate: the range of the
  coefficients grows like √(2 ln d) and so does the vNMSE.
* The DRIVE / EDEN authors' PyTorch baseline (``KashinSender`` of DRIVE's repository) clips in **every**
  iteration with ``M = ‖x‖/√(δ·D)`` and drops the final residual: the coefficients are bounded by
  ``M(1 + η + η²)``, so SQ's error does not grow with d (a small representation error, flat in d,
  is added). :func:`drive_kashin_sq` is that variant, here only.

Seconds at d ≤ 2^16.
"""

from __future__ import annotations

import math

import pandas as pd
import torch

from ... import hadamard as _h
from ...compressors import KashinSQ
from ...validation import check_float, check_int, check_int_sequence, check_seed, check_tensor
from ..ledger import Item, Row, claim
from .sweeps import input_law

__all__ = ["SETTINGS", "drive_kashin_sq", "iterations_change_nothing", "kashin_probe", "growth", "growth_rows"]

#: the settings probed: the library's KashinSQ at its default (TF-MOT: 3 iterations, the last
#: unclipped, eta 0.9, delta 1), the same with 30 iterations, and the DRIVE authors' variant
SETTINGS = ("library default (TF-MOT, 3 iterations)", "library, 30 iterations", "DRIVE variant (all clipped)")


def _sq(c: torch.Tensor, bits: int, gen: torch.Generator) -> torch.Tensor:
    """Stochastic quantization of each row of ``c`` to 2^bits levels on [min, max], decoded."""
    lo, hi = c.amin(-1, keepdim=True), c.amax(-1, keepdim=True)
    L = 2**bits - 1
    t = (c - lo) / (hi - lo) * L
    k = torch.floor(t + torch.rand(c.shape, generator=gen, dtype=c.dtype))
    return k.clamp(0, L) / L * (hi - lo) + lo


def drive_kashin_sq(x: torch.Tensor, bits: int, seed: int = 0, n_iters: int = 3, eta: float = 0.9,
                    delta: float = 1.0) -> torch.Tensor:
    """The DRIVE authors' Kashin+SQ (clip at ``M = ‖x‖/√(δ·D)`` in every iteration, ``M ← ηM``, the last
    residual dropped; then ``bits``-bit SQ of the ``D`` coefficients), decoded: rows of ``x`` (n, d)."""
    x = check_tensor("x", x, ndim=2)
    if x.shape[1] < 2:
        raise ValueError(f"x must have at least 2 columns (d >= 2), got shape {tuple(x.shape)}")
    bits = check_int("bits", bits, low=1, high=8)
    seed = check_seed("seed", seed)
    n_iters = check_int("n_iters", n_iters, low=1, high=100)
    eta = check_float("eta", eta, low=0.0, high=1.0, low_open=True)
    delta = check_float("delta", delta, low=0.0, low_open=True)
    n, d = x.shape
    k = KashinSQ(1, n_iters=n_iters, eta=eta, delta=delta)
    D = k.frame_size(d)
    M = x.norm(dim=-1, keepdim=True) / math.sqrt(delta * D)
    coeffs, r = torch.zeros((n, D), dtype=x.dtype), x
    for i in range(n_iters):
        c = torch.clamp(k.analysis(r, seed), -M, M)
        coeffs = coeffs + c
        if i < n_iters - 1:
            r, M = r - k.synthesis(c, seed, d), M * eta
    return k.synthesis(_sq(coeffs, bits, _h.generator(seed, "probe-sq", "cpu")), seed, d)


def iterations_change_nothing(d: int = 1024, seed: int = 0) -> float:
    """max |coefficients(n_iters = 30) − coefficients(n_iters = 1)| of the library's KashinSQ (d a power
    of two): 0 up to rounding, the iterations have no effect in the doubled Hadamard frame."""
    x = input_law("lognormal", (2, check_int("d", d, low=2)), check_seed("seed", seed), torch.float64)
    return float((KashinSQ(1, n_iters=30).coefficients(x, seed) - KashinSQ(1, n_iters=1).coefficients(x, seed)).abs().max())


def kashin_probe(bits=(2, 4), logd=(10, 12, 14, 16), trials: int = 3, seed: int = 0) -> pd.DataFrame:
    """vNMSE (mean over ``trials`` LogNormal(0, 1) vectors, float64) of each of :data:`SETTINGS` per b
    and d = 2^k."""
    bits = check_int_sequence("bits", bits, low=1, high=8)
    logd = check_int_sequence("logd", logd, low=2, high=20)
    trials = check_int("trials", trials, low=1)
    seed = check_seed("seed", seed)
    rows = []
    for k in logd:
        d = 2**k
        x = input_law("lognormal", (trials, d), seed + k, torch.float64)
        nx2 = (x * x).sum(-1)
        for b in bits:
            est = {SETTINGS[0]: KashinSQ(b).roundtrip(x, seed)[0],
                   SETTINGS[1]: KashinSQ(b, n_iters=30).roundtrip(x, seed)[0],
                   SETTINGS[2]: drive_kashin_sq(x, b, seed)}
            for name, xh in est.items():
                rows.append({"setting": name, "bits": b, "d": d,
                             "vnmse": float((((xh - x) ** 2).sum(-1) / nx2).mean())})
    return pd.DataFrame(rows)


def growth(df: pd.DataFrame) -> pd.DataFrame:
    """Per (setting, b): the vNMSE at the largest d over the vNMSE at the smallest (1 = flat in d)."""
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"df must be the DataFrame kashin_probe returns, got {type(df).__name__}")
    missing = [c for c in ("setting", "bits", "d", "vnmse") if c not in df.columns]
    if missing or df.empty:
        raise ValueError(f"df must be a non-empty kashin_probe table; it lacks columns {missing}" if missing
                         else "df must be a non-empty kashin_probe table")
    v = pd.to_numeric(df["vnmse"], errors="coerce")
    if not (v.notna().all() and (v > 0).all() and v.apply(math.isfinite).all()):
        raise ValueError("df's vnmse column must hold finite positive numbers")
    out = []
    for (s, b), g in df.groupby(["setting", "bits"], sort=False):
        g = g.sort_values("d")
        out.append({"setting": s, "bits": b, "d_min": int(g["d"].iloc[0]), "d_max": int(g["d"].iloc[-1]),
                    "ratio": float(g["vnmse"].iloc[-1] / g["vnmse"].iloc[0])})
    return pd.DataFrame(out)


def growth_rows(g: pd.DataFrame, tol: float = 0.2) -> list[Row]:
    """One ``probe`` row per (setting, b) of :func:`growth`'s frame: the growth of Kashin+SQ's vNMSE from the
    smallest to the largest d, under the test of chapter eden/01's row "Kashin+SQ vNMSE bounded in d"
    (growth below ``tol``); the probe passes where a setting keeps Kashin+SQ bounded."""
    if not isinstance(g, pd.DataFrame) or not {"setting", "bits", "d_min", "d_max", "ratio"} <= set(g.columns) or g.empty:
        raise ValueError("g must be the non-empty frame growth() returns (columns setting, bits, d_min, d_max, ratio)")
    tol = check_float("tol", tol, low=0.0, low_open=True)
    return [claim(Item("App. I.1, Figures 2, 7 (Kashin+SQ probe, ours)",
                       f"Kashin+SQ vNMSE growth d = {int(r.d_min)} → {int(r.d_max)}, b = {int(r.bits)}: {r.setting}",
                       "bounded"),
                  f"×{r.ratio:.3f}", bool(r.ratio < 1 + tol), kind="probe",
                  tolerance=f"growth < {100 * tol:g}% (the test of eden/01's row on Kashin+SQ)",
                  note="our variant of Kashin+SQ (LogNormal(0, 1) vectors, qlib.repro.eden.kashin_probe)")
            for r in g.itertuples(index=False)]
