"""Experiment drivers of the EDEN part (paper 002): synthetic input laws and the sweeps behind
Figures 2, 5, 6, 7, 8 and 11. Each returns a DataFrame; the claims on it live in the topic modules
(:mod:`.estimator`, :mod:`.rotation`, :mod:`.subbit`)."""

from __future__ import annotations

import dataclasses
import math
import pickle
import time

import numpy as np
import pandas as pd
import torch

from ... import eden, eden_theory, hadamard
from ...compressors import (
    EDEN,
    QSGD,
    CountSketch,
    HadamardSQ,
    KashinSQ,
    QSGDElias,
    SQHuffman,
    fit_to_budget,
    squared_errors,
)
from ...devices import resolve
from ...resume import check_units, run_units
from ...validation import (
    check_alloc,
    check_bool,
    check_choice,
    check_float_sequence,
    check_int,
    check_int_sequence,
    check_seed,
    resolve_config,
)
from ._args import LAWS, check_budgets, check_device, check_dtype, check_law, check_laws, check_methods

__all__ = ["LAWS", "FIXED_LENGTH", "TIMING_TRIALS", "input_law", "VnmseSweepConfig", "vnmse_sweep", "NmseSweepConfig",
           "nmse_sweep", "variable_length_sweep", "loss_subbit_sweep"]

#: the largest dimension a sweep takes (2^26 coordinates: 256 MiB per float32 vector)
MAX_LOGD = 26
#: vectors whose ``compress`` calls :func:`vnmse_sweep` times, by default (the encode time is their median;
#: a timed vector costs one compress per (b, method) on top of its errors, several times what its errors cost)
TIMING_TRIALS = 3


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


@dataclasses.dataclass(frozen=True)
class VnmseSweepConfig:
    """The settings of :func:`vnmse_sweep`, checked once when built; frozen.

    ``law``: the input law (:data:`LAWS`); ``trials`` vectors per (b, d), vector ``t`` drawn and rotated
    from ``seed`` and ``t`` alone; ``device`` and ``dtype`` of the vectors; ``batched``: the ``trials``
    vectors compressed as one batch; ``domain``: ``"rotated"`` or ``"original"`` (how the error is
    measured); ``timing_trials``: the vectors whose ``compress`` is timed (None: all; 0: none)."""

    law: str = "lognormal"
    trials: int = 10
    seed: int = 0
    device: str | torch.device = "cpu"
    dtype: torch.dtype = torch.float32
    batched: bool = False
    domain: str = "rotated"
    timing_trials: int | None = TIMING_TRIALS

    def __post_init__(self):
        def put(name, value):
            object.__setattr__(self, name, value)

        put("law", check_law("law", self.law))
        put("trials", check_int("trials", self.trials, low=1))
        put("seed", check_seed("seed", self.seed))
        check_device("device", self.device)
        check_dtype("dtype", self.dtype)
        put("batched", check_bool("batched", self.batched))
        put("domain", check_choice("domain", self.domain, ("rotated", "original")))
        if self.timing_trials is not None:
            put("timing_trials", check_int("timing_trials", self.timing_trials, low=0))


def vnmse_sweep(methods, bits, dims, config: VnmseSweepConfig | None = None, *, units=None) -> pd.DataFrame:
    """vNMSE (mean, sd over ``trials`` vectors) and encode time per (method, b, d): a DataFrame.

    ``methods``: names from :data:`FIXED_LENGTH` or a dict name → factory(b); ``bits`` the budgets;
    ``dims`` the dimensions. The settings are ``config`` (a :class:`VnmseSweepConfig`; None: its
    defaults).
    Each trial is one fresh vector of the ``law``, compressed by every (b, method) with the seed
    ``seed + t``; the vNMSE is ``‖x − x̂‖²/‖x‖²``. ``domain``: how the error is measured
    (:func:`qlib.compressors.squared_errors`): ``"rotated"`` (default) shares the rotation, Kashin's
    coefficients and the uniform draws across the budgets and measures the error of the rotation-based
    methods in the rotated domain (no inverse transform); ``"original"`` compresses, decompresses and
    compares every (b, method) — the same values up to float rounding. The encode time is the median of
    one ``compress`` call on one vector over the first ``timing_trials`` trials (None: all; 0: not timed,
    NaN) (Figures 2 and 7). ``batched=True`` compresses the ``trials`` vectors as one batch (each row its
    own rotation) and reports the time of one batch ``compress`` per vector (``timing_trials=0``: not
    timed). ``units`` (a :class:`qlib.resume.Units`): each d is a unit (its vectors and seeds depend on
    the trial alone), saved when done and reused by a rerun; a reused d keeps the encode times it measured.
    """
    cfg = resolve_config(VnmseSweepConfig, config)
    check_methods(methods, FIXED_LENGTH)
    bits = check_budgets("bits", bits)
    dims = check_int_sequence("dims", dims, low=1, high=2**MAX_LOGD)
    law, trials, seed, dtype, batched, domain = cfg.law, cfg.trials, cfg.seed, cfg.dtype, cfg.batched, cfg.domain
    timed = trials if cfg.timing_trials is None else min(trials, cfg.timing_trials)
    dev = resolve(cfg.device)
    if not isinstance(methods, dict):
        methods = {m: FIXED_LENGTH[m] for m in methods}
    check_units("units", units)
    keys = [(b, name) for b in bits for name in methods]
    rows = []
    for d in dims:
        if units is None:
            rows += _vnmse_at(d, methods, keys, law, trials, seed, dev, dtype, batched, domain, timed)
        else:
            inputs = {"methods": {k: getattr(f, "__qualname__", repr(f)) for k, f in methods.items()},
                      "bits": [float(b) for b in bits], "d": d, "law": law, "trials": trials, "seed": seed,
                      "device": dev.type, "dtype": str(dtype), "batched": batched, "domain": domain, "timed": timed}
            rows += units.run("vnmse_sweep", inputs, lambda d=d: _vnmse_at(d, methods, keys, law, trials, seed, dev,
                                                                           dtype, batched, domain, timed))
    return pd.DataFrame(rows)


def _vnmse_at(d, methods, keys, law, trials, seed, dev, dtype, batched, domain, timed) -> list[dict]:
    """:func:`vnmse_sweep`'s rows of one dimension ``d``."""
    rows = []
    comps = {(b, name): methods[name](b) for b, name in keys}
    if batched:
        xb = torch.stack([input_law(law, d, seed * 100003 + t, dtype, dev) for t in range(trials)])
        err, nb = squared_errors([comps[k] for k in keys], xb, seed, domain=domain)
        norm2 = (xb.double() ** 2).sum(-1).cpu()  # as eden_theory.vnmse
        for j, (b, name) in enumerate(keys):
            dt = _timed(comps[(b, name)].compress, dev, xb, seed)[1] if timed else math.nan
            v = (err[j] / norm2).numpy()
            rows.append({"method": name, "bits": b, "d": d, "vnmse": float(v.mean()), "sd": float(v.std()),
                         "encode_ms": 1e3 * dt / trials, "bits_per_coord": float(nb[j].double().mean()) / d})
        return rows
    # one vector at a time (the `paper` profile's 100 vectors of 2^26 coordinates would need 25.6 GB
    # at once): trial t's vector is drawn once and goes through every (b, method); each result is
    # the same as drawing all vectors first, since vector t and its rotation seed depend on t only
    acc = {k: ([], [], []) for k in keys}
    for t in range(trials):
        x = input_law(law, d, seed * 100003 + t, dtype, dev)
        if domain == "original":  # compress (timed), decompress, compare: every (b, method) in turn
            for k in keys:
                if t == 0:  # warm-up: JIT compilation and cached codebooks are not encode time
                    comps[k].compress(x, seed)
                m, dt = _timed(comps[k].compress, dev, x, seed + t)
                v, ts, nbs = acc[k]
                v.append(float(eden_theory.vnmse(x, comps[k].decompress(m))))
                if t < timed:
                    ts.append(dt)
                nbs.append(m.total_bits / d)
            continue
        err, nb = squared_errors([comps[k] for k in keys], x, seed + t)
        norm2 = float((x.double() ** 2).sum())  # as eden_theory.vnmse
        if not norm2 > 0:
            raise ValueError(f"trial {t} drew a zero vector: the vNMSE is undefined")
        for j, k in enumerate(keys):
            v, ts, nbs = acc[k]
            v.append(float(err[j]) / norm2)
            nbs.append(int(nb[j]) / d)
            if t < timed:  # the encode time, on its own (after the shared stages: kernels loaded)
                ts.append(_timed(comps[k].compress, dev, x, seed + t)[1])
        del x
    for b, name in keys:
        v, ts, nbs = acc[(b, name)]
        rows.append({"method": name, "bits": b, "d": d, "vnmse": np.mean(v), "sd": np.std(v),
                     "encode_ms": 1e3 * float(np.median(ts)) if ts else math.nan,
                     "bits_per_coord": float(np.mean(nbs))})
    return rows


def _nmse_one(methods: dict, keys, law, r, n_clients, d, seed, dtype, dev, domain) -> list[dict]:
    """One (law, repetition) of :func:`nmse_sweep` (seeded by ``r`` alone)."""
    xs = input_law(law, (n_clients, d), seed * 1009 + r, dtype, dev)
    err, nb = squared_errors([methods[name](b) for b, name in keys], xs, seed + r, of="mean", domain=domain)
    denom = (xs.double() ** 2).sum(-1).mean().cpu()  # as eden_theory.nmse
    if not bool(denom > 0):
        raise ValueError("xs is all zeros: the NMSE is undefined")
    return [{"law": law, "method": name, "bits": b, "rep": r,
             "nmse": float(err[j] / denom), "bits_per_coord": int(nb[j]) / (n_clients * d)}
            for j, (b, name) in enumerate(keys)]


def _nmse_worker(kw: dict) -> list[dict]:
    """:func:`_nmse_one` in a worker process (the methods named by FIXED_LENGTH are rebuilt there)."""
    kw = dict(kw)
    kw["methods"] = {n: FIXED_LENGTH[f] if isinstance(f, str) else f for n, f in kw["methods"].items()}
    return _nmse_one(**kw)


def _picklable_methods(methods: dict) -> dict:
    """``methods`` for a worker process: FIXED_LENGTH's own factories by name, the others as they are
    (they must pickle: a module-level function or class)."""
    out = {}
    for n, f in methods.items():
        if FIXED_LENGTH.get(n) is f:
            out[n] = n
            continue
        try:
            pickle.dumps(f)
        except Exception as exc:  # noqa: BLE001 - whatever pickle raises for this object
            raise ValueError(f"methods[{n!r}] cannot go to a worker process with processes > 1 ({exc}); "
                             "use a module-level function or class, or processes=1") from None
        out[n] = f
    return out


@dataclasses.dataclass(frozen=True)
class NmseSweepConfig:
    """The settings of :func:`nmse_sweep`, checked once when built; frozen.

    ``n_clients`` vectors per mean, each an i.i.d. draw of the law; ``laws`` the input laws
    (:data:`LAWS`); ``reps`` repetitions per (law, method, b), repetition ``r`` drawn and rotated from
    ``seed`` and ``r`` alone; ``device`` and ``dtype`` of the vectors; ``domain``: ``"rotated"`` or
    ``"original"`` (how the error is measured); ``processes``: CPU worker processes for the (law,
    repetition) units (the same table whatever their number)."""

    n_clients: int = 10
    laws: tuple[str, ...] = ("lognormal",)
    reps: int = 3
    seed: int = 0
    device: str | torch.device = "cpu"
    dtype: torch.dtype = torch.float32
    domain: str = "rotated"
    processes: int = 1

    def __post_init__(self):
        def put(name, value):
            object.__setattr__(self, name, value)

        put("n_clients", check_int("n_clients", self.n_clients, low=1))
        put("laws", tuple(check_laws("laws", self.laws)))
        put("reps", check_int("reps", self.reps, low=1))
        put("seed", check_seed("seed", self.seed))
        check_device("device", self.device)
        check_dtype("dtype", self.dtype)
        put("domain", check_choice("domain", self.domain, ("rotated", "original")))
        put("processes", check_int("processes", self.processes, low=1))


def nmse_sweep(methods, bits, d, config: NmseSweepConfig | None = None, *, units=None) -> pd.DataFrame:
    """NMSE of the mean of ``n_clients`` vectors of dimension ``d`` (each client an i.i.d. draw of the
    law) per (law, method, b), mean and sd over ``reps`` repetitions (Figure 8). ``methods``: names from
    :data:`FIXED_LENGTH` or a dict name → factory(b); ``bits`` the budgets. The settings are ``config``
    (a :class:`NmseSweepConfig`; None: its defaults). ``domain``: ``"rotated"`` (default: the
    budget-independent stages shared across the budgets, :func:`qlib.compressors.squared_errors`) or
    ``"original"`` (each method's ``mean`` in turn); the same values up to float rounding. ``units`` (a
    :class:`qlib.resume.Units`): each (law, repetition) is a unit, saved when done and reused by a rerun
    (its vectors and rotations are seeded by the repetition alone, so a resumed sweep equals an
    uninterrupted one bit for bit). ``processes``: on the CPU, the (law, repetition) units run in that
    many spawned worker processes (each with this process's torch thread count, on transparent huge pages;
    :func:`qlib.devices.cpu_pool`): the same rows, bit for bit, in the same order. On CUDA one process
    runs them."""
    cfg = resolve_config(NmseSweepConfig, config)
    check_methods(methods, FIXED_LENGTH)
    bits = check_budgets("bits", bits)
    d = check_int("d", d, low=1, high=2**MAX_LOGD)
    n_clients, laws, reps, seed, dtype, domain = cfg.n_clients, list(cfg.laws), cfg.reps, cfg.seed, cfg.dtype, cfg.domain
    check_alloc("n_clients and d", n_clients * d, 8 * 8, value=(n_clients, d),
                what="the clients' vectors, rotations and messages")
    dev = resolve(cfg.device)
    if not isinstance(methods, dict):
        methods = {m: FIXED_LENGTH[m] for m in methods}
    check_units("units", units)
    keys = [(b, name) for b in bits for name in methods]
    processes = cfg.processes
    if dev.type != "cpu":
        processes = 1
    common = dict(keys=keys, n_clients=n_clients, d=d, seed=seed, dtype=dtype, dev=dev, domain=domain)

    def inputs(law, r):
        return {"methods": {k: getattr(f, "__qualname__", repr(f)) for k, f in methods.items()},
                "bits": [float(b) for b in bits], "d": d, "n_clients": n_clients, "law": law, "rep": r,
                "seed": seed, "device": dev.type, "dtype": str(dtype), "domain": domain}

    wire = _picklable_methods(methods) if processes > 1 else methods
    jobs = [(None if units is None else inputs(law, r), _nmse_worker, (dict(common, methods=wire, law=law, r=r),))
            for law in laws for r in range(reps)]
    # the workers' large temporaries on transparent huge pages (qlib.devices.cpu_pool's "huge-pages"): at the
    # paper's d a unit's 10 × D arrays fault once per 2 MiB, and each worker holds its live peak
    rows = [row for unit in run_units("nmse_sweep", jobs, units=units, processes=processes, memory="huge-pages")
            for row in unit]
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
