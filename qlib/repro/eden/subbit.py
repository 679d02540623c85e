"""Chapter eden/03: sub-bit budgets against packet loss (Figure 11, Appendix I.4, Corollary 4.2,
Lemma 4.3) and the mean of heterogeneous clients (Lemma 2.2)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import torch

from ... import eden, eden_theory
from ...validation import check_float, check_float_sequence, check_int, check_int_sequence, check_seed
from ..ledger import Item, Null, Row, check, close
from . import paper
from ._args import check_budgets
from .sweeps import MAX_LOGD, input_law

__all__ = ["SUBBIT", "TAIL", "figure11_rows", "heterogeneous", "heterogeneous_rows", "homogeneous",
           "homogeneous_rows", "figure11_scale_note"]

SUBBIT = "sub-bit (mask before rotation)"
TAIL = "tail drop (after rotation)"


def figure11_scale_note(d: int, trials: int) -> str:
    """The run's dimension and trials against Figure 11 (markdown sentence from the parameters)."""
    d = check_int("d", d, low=1)
    trials = check_int("trials", trials, low=1)
    dd = f"d = 2^{int(math.log2(d))}" if d & (d - 1) == 0 else f"d = {d}"
    return (f"This run: {dd}" + (f" (the paper: 2^{int(math.log2(paper.FIG11_D))})" if d != paper.FIG11_D else "")
            + f", {trials} vector{'s' if trials != 1 else ''} per point (the paper does not say how many).")


#: where the chapter's relative tolerance on a Monte-Carlo vNMSE comes from (the ``rtol`` of its rows)
_RTOL_BASIS = "ours: one relative tolerance for every Monte-Carlo vNMSE of the chapter, the functions' default"


def figure11_rows(fig11: pd.DataFrame, d: int, rtol: float = 0.05) -> list[Row]:
    """Appendix I.4 on Figure 11: loss after the rotation follows π/(2p) − 1 (Lemma 4.3); sub-bit
    compression equals the tail drop at every fraction ``p`` (Lemma 4.1: ``A + AB + B`` in either order),
    per ``p`` and as the paper's claim; §4.1's 14.707 at b = 0.1. The sub-bit messages carry
    ``round(p·d)`` codes (:func:`qlib.eden_theory.message_sizes`), the fraction the tail drop receives."""
    d = check_int("d", d, low=1)
    rtol = check_float("rtol", rtol, low=0.0, low_open=True)
    rows = []
    after = fig11[~fig11["scheme"].str.startswith("sub")]
    # null of every row below: the loss or the sparsification ignored — the vNMSE of b = 1 without loss
    one_bit = eden_theory.limit_vnmse(1)
    if len(after):
        dev = float((after["vnmse"] / after["theory"] - 1).abs().max())
        null_dev = float((one_bit / after["theory"] - 1).abs().max())
        rows.append(check(Item("App. I.4, Figure 11 (Lemma 4.3)", "tail drop and random loss follow π/(2p) − 1", "follows"), dev,
                          lambda v: bool(v < rtol),
                          null=Null(null_dev, shown=f"loss ignored (b = 1 limit at every p): max dev {100 * null_dev:.0f}%"),
                          shown=f"max dev {100 * dev:.1f}%", tolerance=f"< {100 * rtol:g}% ({_RTOL_BASIS})"))
    ps = sorted(p for p in set(fig11["p"]) if p < 1)
    pairs = {p: fig11[fig11["p"] == p].set_index("scheme")["vnmse"] for p in ps}
    pairs = {p: g for p, g in pairs.items() if SUBBIT in g and TAIL in g}
    for p, g in pairs.items():
        rows.append(close(Item("App. I.4, Figure 11 (Lemma 4.1)", f"sub-bit vs tail drop at p = {p:g}", g[TAIL]), g[SUBBIT],
                          kind="theory-check", rtol=rtol, note="reference = our tail-drop run at the same p"))
    if pairs:
        dev_o = max(abs(g[SUBBIT] / g[TAIL] - 1) for g in pairs.values())
        null_o = max(abs(one_bit / g[TAIL] - 1) for g in pairs.values())
        rows.append(check(Item("App. I.4, Figure 11", "sub-bit = tail drop at every p (identical vNMSE)", "identical"), dev_o,
                          lambda v: bool(v < rtol),
                          null=Null(null_o, shown=f"sparsification ignored (b = 1 limit): {100 * null_o:.0f}%"),
                          shown=f"max |sub-bit / tail drop − 1| = {100 * dev_o:.1f}% over {len(pairs)} fractions",
                          tolerance=f"< {100 * rtol:g}% ({_RTOL_BASIS})",
                          note="each sub-bit message carries round(p·d) codes, the fraction the tail drop receives"))
    sub01 = fig11[(fig11["scheme"] == SUBBIT) & (fig11["p"] == 0.1)]
    if len(sub01):
        rows.append(close(Item("§4.1 (Corollary 4.2)", "sub-bit vNMSE at b = 0.1", paper.SEC41["subbit_0.1"]), float(sub01["vnmse"].mean()),
                          rtol=rtol, basis=_RTOL_BASIS,
                          null=Null(1 / 0.1 - 1, label="the kept share unquantized, 1/p − 1")))
    return rows


def heterogeneous(bits, loss, logd: int, trials: int, seed: int = 0) -> dict:
    """Clients with their own budget ``bits[c]`` and loss rate ``loss[c]``, LogNormal vectors with
    norms spread over a factor 10. Returns ``table`` (per client), ``measured`` (NMSE per trial),
    ``theory`` (Lemma 2.2) and ``xs``."""
    bits = check_budgets("bits", bits)
    loss = list(loss) if isinstance(loss, (tuple, np.ndarray)) else loss
    check_float_sequence("loss", loss, low=0.0, high=1.0)
    if any(lo >= 1 for lo in loss):
        raise ValueError("loss must have entries in [0, 1) (the fraction of coordinates lost)")
    n = len(bits)
    if len(loss) != n:
        raise ValueError(f"loss has {len(loss)} entries for {n} clients (len(bits))")
    logd = check_int("logd", logd, low=1, high=MAX_LOGD)
    trials = check_int("trials", trials, low=1)
    seed = check_seed("seed", seed)
    d = 2**logd
    scales = torch.logspace(0, 1, n, dtype=torch.float64).unsqueeze(-1)
    xs = input_law("lognormal", (n, d), seed, torch.float64) * scales
    table = pd.DataFrame({"client": range(n), "bits": list(bits), "loss": list(loss), "‖x_c‖²": (xs**2).sum(-1).numpy(),
                          "vNMSE theory": [eden_theory.expected_vnmse(d, b, lo) for b, lo in zip(bits, loss)]})
    measured = [eden_theory.nmse(xs, eden.mean_estimate(xs, bits, seed=seed + t, loss=loss)[0]) for t in range(trials)]
    return {"table": table, "measured": np.array(measured), "theory": eden_theory.nmse_theory(xs, bits, loss), "xs": xs}


def heterogeneous_rows(het: dict, rtol: float = 0.05) -> list[Row]:
    """Lemma 2.2 for heterogeneous clients: the measured NMSE against the lemma's formula."""
    rtol = check_float("rtol", rtol, low=0.0, low_open=True)
    if not isinstance(het, dict) or not {"theory", "measured"} <= set(het):
        raise TypeError("het must be the dict heterogeneous() returns")
    return [close(Item("Lemma 2.2", "heterogeneous clients: NMSE vs Σ vNMSE(c)‖x_c‖²/(nΣ‖x_c‖²)", het["theory"]),
                  float(np.mean(het["measured"])), kind="theory-check", rtol=rtol,
                  note="reference = the lemma's formula evaluated on our clients with our vNMSE closed forms")]


def homogeneous(xs: torch.Tensor, n_list, trials: int, seed: int = 0, bits: float = 2) -> pd.DataFrame:
    """NMSE of the first n rows of ``xs`` with a common budget, for n in ``n_list``, against vNMSE/n."""
    xs = eden_theory.check_vectors(xs, "xs")
    if xs.dim() != 2:
        raise ValueError(f"xs must be (n_clients, d), got shape {tuple(xs.shape)}")
    n_list = [k for k in check_int_sequence("n_list", n_list, low=1) if k <= xs.shape[0]]
    trials = check_int("trials", trials, low=1)
    seed = check_seed("seed", seed)
    bits = eden_theory.check_bits(bits)
    return pd.DataFrame([{"n": k, "NMSE": float(np.mean([eden_theory.nmse(xs[:k], eden.mean_estimate(xs[:k], bits, seed=seed + t)[0])
                                                         for t in range(trials)])),
                          "vNMSE/n": eden_theory.limit_vnmse(bits) / k} for k in n_list])


def homogeneous_rows(homog: pd.DataFrame, rtol: float = 0.05) -> list[Row]:
    """Lemma 2.2 with a common quantizer: NMSE = vNMSE/n."""
    rtol = check_float("rtol", rtol, low=0.0, low_open=True)
    dev = float((homog["NMSE"] / homog["vNMSE/n"] - 1).abs().max())
    null_dev = float((homog["n"] - 1).abs().max())  # no averaging gain: NMSE = vNMSE, off by a factor n
    return [check(Item("Lemma 2.2", "common quantizer: NMSE = vNMSE/n", "= vNMSE/n"), dev, lambda v: bool(v < rtol),
                  null=Null(null_dev, shown=f"no averaging gain (NMSE = vNMSE): max dev {100 * null_dev:.0f}%"),
                  shown=f"max dev {100 * dev:.1f}%", tolerance=f"< {100 * rtol:g}% ({_RTOL_BASIS})")]
