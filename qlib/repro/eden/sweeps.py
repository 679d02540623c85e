"""Experiment drivers of the EDEN part (paper 002): synthetic input laws and the sweeps behind
Figures 2, 5, 6, 7, 8 and 11. Each returns a DataFrame; the claims on it live in the topic modules
(:mod:`.estimator`, :mod:`.rotation`, :mod:`.subbit`)."""

from __future__ import annotations

import math
import time

import numpy as np
import pandas as pd
import torch

from ... import eden, eden_theory, hadamard
from ...compressors import EDEN, QSGD, CountSketch, HadamardSQ, KashinSQ, QSGDElias, SQHuffman, fit_to_budget
from ...devices import resolve
from ...validation import check_alloc, check_bool, check_float_sequence, check_int, check_int_sequence, check_seed
from ._args import LAWS, check_budgets, check_law, check_laws, check_methods

__all__ = ["LAWS", "FIXED_LENGTH", "input_law", "vnmse_sweep", "nmse_sweep", "variable_length_sweep",
           "loss_subbit_sweep"]

#: the largest dimension a sweep takes (2^26 coordinates: 256 MiB per float32 vector)
MAX_LOGD = 26


def input_law(name: str, shape, seed: int, dtype=torch.float32, device="cpu") -> torch.Tensor:
    """I.i.d. coordinates from a synthetic law of the paper's figures (the paper does not give their parameters; ours): LogNormal(0,1),
    Normal(0,1), Exponential(1), χ²(1), HalfNormal(1), Beta(2,2), Uniform(0,1). ``shape``: an integer or a
    sequence of integers ``>= 1``."""
    name = check_law("name", name)
    seed = check_seed("seed", seed)
    if isinstance(shape, (tuple, list, torch.Size)):
        shape = tuple(check_int_sequence("shape", shape, low=1))
    else:
        shape = (check_int("shape", shape, low=1),)
    check_alloc("shape", math.prod(shape) * 4, 8, value=shape, what="the draws")
    g = hadamard.generator(seed, "law-" + name, device)
    z = lambda: torch.randn(shape, generator=g, dtype=torch.float64, device=device)  # noqa: E731
    if name == "lognormal":
        x = z().exp()
    elif name == "normal":
        x = z()
    elif name == "exponential":
        x = -torch.log1p(-torch.rand(shape, generator=g, dtype=torch.float64, device=device))
    elif name == "chi2":
        x = z() ** 2
    elif name == "halfnormal":
        x = z().abs()
    elif name == "beta":  # Beta(2,2) = median of three uniforms
        x = torch.rand((*shape, 3), generator=g, dtype=torch.float64, device=device).median(-1).values
    else:
        x = torch.rand(shape, generator=g, dtype=torch.float64, device=device)
    return x.to(dtype)


FIXED_LENGTH = {
    "EDEN": lambda b: EDEN(b),
    "Hadamard+SQ": lambda b: HadamardSQ(int(b)),
    "Kashin+SQ": lambda b: KashinSQ(int(b)),
    "QSGD": lambda b: QSGD(int(b)),
    "Count-Sketch": lambda b: CountSketch(b),
}


def _timed(fn, device, *args):
    if device.type == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    out = fn(*args)
    if device.type == "cuda":
        torch.cuda.synchronize()
    return out, time.perf_counter() - t0


def vnmse_sweep(methods, bits, dims, law="lognormal", trials=10, seed=0, device="cpu", dtype=torch.float32,
                batched=False) -> pd.DataFrame:
    """vNMSE (mean, sd over ``trials`` vectors) and encode time per (method, b, d): a DataFrame.

    ``methods``: names from :data:`FIXED_LENGTH` or a dict name → factory(b). Each trial is one
    fresh vector of the ``law``; the encode time is the median over trials of one ``compress`` call
    on one vector (Figures 2 and 7), after one untimed warm-up call per (d, b, method). ``batched=True`` compresses the ``trials`` vectors as one
    batch (each row its own rotation) and reports the batch time per vector.
    """
    check_methods(methods, FIXED_LENGTH)
    bits = check_budgets("bits", bits)
    dims = check_int_sequence("dims", dims, low=1, high=2**MAX_LOGD)
    law = check_law("law", law)
    trials = check_int("trials", trials, low=1)
    seed = check_seed("seed", seed)
    batched = check_bool("batched", batched)
    dev = resolve(device)
    if not isinstance(methods, dict):
        methods = {m: FIXED_LENGTH[m] for m in methods}
    rows = []
    for d in dims:
        if batched:
            xb = torch.stack([input_law(law, d, seed * 100003 + t, dtype, dev) for t in range(trials)])
            for b in bits:
                for name, make in methods.items():
                    comp = make(b)
                    comp.compress(xb, seed)  # warm-up: JIT compilation and cached codebooks are not encode time
                    m, dt = _timed(comp.compress, dev, xb, seed)
                    v = eden_theory.vnmse(xb, comp.decompress(m)).cpu().numpy()
                    rows.append({"method": name, "bits": b, "d": d, "vnmse": float(v.mean()), "sd": float(v.std()),
                                 "encode_ms": 1e3 * dt / trials, "bits_per_coord": float(m.nbits.double().mean()) / d})
            continue
        # one vector at a time (the `paper` profile's 100 vectors of 2^26 coordinates would need 25.6 GB
        # at once): trial t's vector is drawn once and goes through every (b, method); each result is
        # the same as drawing all vectors first, since vector t and its rotation seed depend on t only
        acc = {(b, name): ([], [], []) for b in bits for name in methods}
        comps = {(b, name): make(b) for b in bits for name, make in methods.items()}
        for t in range(trials):
            x = input_law(law, d, seed * 100003 + t, dtype, dev)
            for b in bits:
                for name in methods:
                    comp = comps[(b, name)]
                    if t == 0:  # warm-up: JIT compilation and cached codebooks are not encode time
                        comp.compress(x, seed)
                    m, dt = _timed(comp.compress, dev, x, seed + t)
                    v, ts, nb = acc[(b, name)]
                    v.append(float(eden_theory.vnmse(x, comp.decompress(m))))
                    ts.append(dt)
                    nb.append(m.total_bits / d)
            del x
        for b in bits:
            for name in methods:
                v, ts, nb = acc[(b, name)]
                rows.append({"method": name, "bits": b, "d": d, "vnmse": np.mean(v), "sd": np.std(v),
                             "encode_ms": 1e3 * float(np.median(ts)), "bits_per_coord": float(np.mean(nb))})
    return pd.DataFrame(rows)


def nmse_sweep(methods, bits, d, n_clients=10, laws=("lognormal",), reps=3, seed=0, device="cpu", dtype=torch.float32):
    """NMSE of the mean of ``n_clients`` vectors (each client an i.i.d. draw of the law) per
    (law, method, b), mean and sd over ``reps`` repetitions (Figure 8)."""
    check_methods(methods, FIXED_LENGTH)
    bits = check_budgets("bits", bits)
    d = check_int("d", d, low=1, high=2**MAX_LOGD)
    n_clients = check_int("n_clients", n_clients, low=1)
    laws = check_laws("laws", laws)
    reps = check_int("reps", reps, low=1)
    seed = check_seed("seed", seed)
    check_alloc("n_clients and d", n_clients * d, 8 * 8, value=(n_clients, d),
                what="the clients' vectors, rotations and messages")
    dev = resolve(device)
    if not isinstance(methods, dict):
        methods = {m: FIXED_LENGTH[m] for m in methods}
    rows = []
    for law in laws:
        for r in range(reps):
            xs = input_law(law, (n_clients, d), seed * 1009 + r, dtype, dev)
            for b in bits:
                for name, make in methods.items():
                    est, nb = make(b).mean(xs, seed + r)
                    rows.append({"law": law, "method": name, "bits": b, "rep": r,
                                 "nmse": eden_theory.nmse(xs, est), "bits_per_coord": nb / (n_clients * d)})
    df = pd.DataFrame(rows)
    return (df.groupby(["law", "method", "bits"], as_index=False)
              .agg(nmse=("nmse", "mean"), sd=("nmse", "std"), bits_per_coord=("bits_per_coord", "mean")))


def variable_length_sweep(bits, d, laws=("lognormal",), trials=5, seed=0, dtype=torch.float64):
    """Figure 5: vNMSE at budget b of EDEN (no EE), EDEN with 𝓘_Δb (ideal arithmetic code),
    QSGD + Elias-ω and SQ + Huffman with their level counts fitted to the budget on the first trial
    vector (:func:`fit_to_budget`); a scheme that cannot meet the budget is left out."""
    bits = check_budgets("bits", bits)
    d = check_int("d", d, low=1, high=2**MAX_LOGD)
    laws = check_laws("laws", laws)
    trials = check_int("trials", trials, low=1)
    seed = check_seed("seed", seed)
    check_alloc("trials and d", trials * d, 8 * 8, value=(trials, d), what="the trials' vectors and messages")
    rows = []
    for law in laws:
        xs = input_law(law, (trials, d), seed, dtype)
        for b in bits:
            cands = {"EDEN": EDEN(b), "EDEN+EE": EDEN(b, quantizer="ee")}
            k, c = fit_to_budget(QSGDElias, xs[:1], b, seed, 1)
            if c is not None:
                cands["QSGD+Elias"] = c
            k, c = fit_to_budget(SQHuffman, xs[:1], b, seed, 2)
            if c is not None:
                cands["SQ+Huffman"] = c
            for name, comp in cands.items():
                xh, nb = comp.roundtrip(xs, seed + 1)
                rows.append({"law": law, "bits": b, "method": name, "vnmse": float(eden_theory.vnmse(xs, xh).mean()),
                             "bits_per_coord": float(nb.double().mean()) / d})
    return pd.DataFrame(rows)


def loss_subbit_sweep(d: int, fractions, trials: int = 5, seed: int = 0, law: str = "lognormal",
                      dtype=torch.float64) -> pd.DataFrame:
    """Figure 11: vNMSE at each fraction ``p`` of coordinates kept/received, for 1-bit EDEN with
    sub-bit sparsification (``bits = p``, mask before the rotation), a tail drop of ``1 − p`` of the
    rotated coordinates, and a uniformly random loss; with the theory ``π/(2p) − 1`` and the
    padding-corrected expectation. One row per (p, scheme)."""
    d = check_int("d", d, low=1)
    fractions = check_float_sequence("fractions", fractions, low=0.0, high=1.0, low_open=True)
    trials = check_int("trials", trials, low=1)
    seed = check_seed("seed", seed)
    law = check_law("law", law)
    check_alloc("trials and d", trials * d, 8 * 8, value=(trials, d), what="the trials' vectors and messages")
    x = input_law(law, (trials, d), seed, dtype)
    rows = []
    for p in fractions:
        runs = {"sub-bit (mask before rotation)": dict(bits=p)}
        if p < 1:
            runs["tail drop (after rotation)"] = dict(bits=1, loss=1 - p, loss_mode="tail")
            runs["random loss (after rotation)"] = dict(bits=1, loss=1 - p, loss_mode="random")
        for name, kw in runs.items():
            b = kw.pop("bits")
            pl = eden.compress(x, b, seed)
            rec = None
            if kw:
                rec = eden.received_mask(pl.D, kw["loss"], kw["loss_mode"], seed=seed + 1, batch=pl.batch_shape)
            v = eden_theory.vnmse(x, eden.decompress(pl, rec))
            sent = pl.nbits.double().mean().item() if rec is None else float(rec.sum(-1).double().mean()) + eden.SCALE_BITS
            rows.append({"p": p, "scheme": name, "vnmse": float(v.mean()), "sd": float(v.std()),
                         "bits_per_coord": sent / d, "theory": eden_theory.limit_vnmse(p),
                         "expected_padded": eden_theory.expected_vnmse(d, p) if name.startswith("sub") else eden_theory.limit_vnmse(1, 1 - p)})
    return pd.DataFrame(rows)
