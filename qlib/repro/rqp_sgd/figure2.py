"""Figure 2 of paper 004 (q and accuracy against σ at a fixed (ε, 0)) and the bits claim of §4.

The paper does not say which dataset and model Figure 2 uses, nor whether σ is the absolute noise std
or a multiplier of the clip norm. We use Diagnostic with logistic regression and the Table 1 settings,
σ as the absolute std of G_t (Algorithm 2). Its "around 62.5 %" at q = 0.3 is close to the share of
the majority class in the data (357/569 = 62.7 %): a classifier that always predicts it scores about
that much. The row therefore also requires our model to beat the majority-class classifier on our
test split (:func:`.experiments.majority_rate`), with a band of ±4 pp instead of ±7.5 pp.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from ...dpsgd import Task
from ...validation import (
    check_float,
    check_float_sequence,
    check_frame,
    check_int,
    check_int_sequence,
    check_positive,
    check_seed,
    resolve_config,
)
from ..ledger import Item, Null, Row, claim, missing, not_comparable
from ._args import check_sigmas
from .experiments import RunConfig, rqp_q, rqp_sweep
from .paper import FIG2_Q, FIGURE2_PANELS, PAPER_FIG2_ACC_AT_Q03, PAPER_RUNS
from .settings import Setting

__all__ = ["FIG2_BAND_PP", "FIG2_Q_BAND", "figure2_sweep", "figure2_claims", "figure2_rows", "majority_text",
           "bits_sweep", "bits_rows", "runs_text", "not_reproduced_rows"]

FIG2_BAND_PP = 4.0  # "around 62.5 %": ±4 pp (was ±7.5 pp, which admitted the majority rate and more)
FIG2_Q_BAND = 0.1  # the grid point nearest q = 0.3 must lie within ±0.1 of it


def figure2_sweep(task: Task, setting: Setting, sigmas, *, runs: int, seed: int, c_mode: str = "paper",
                  device="auto", panels=FIGURE2_PANELS) -> pd.DataFrame:
    """All panels × σ × runs of Figure 2; per (panel, σ): q, median and std of the test accuracy (%).

    ``panels``: (label, bits, ε) triples."""
    sigmas = check_sigmas("sigmas", sigmas)
    runs = check_int("runs", runs, low=1)
    seed = check_seed("seed", seed)
    _check_panels(panels)
    sw = pd.concat([rqp_sweep(task, setting, eps=e, sigmas=sigmas, b=b,
                              config=RunConfig(runs=runs, seed=seed + 10 * i, c_mode=c_mode,
                                               device=device)).assign(panel=p) for i, (p, b, e) in enumerate(panels)], ignore_index=True)
    return sw.groupby(["panel", "b", "eps", "sigma"]).agg(q=("q", "first"), median=("acc", "median"),
                                                          std=("acc", "std")).reset_index()


def _check_panels(panels) -> None:
    if isinstance(panels, (str, bytes)) or not isinstance(panels, (list, tuple)) or not panels:
        raise TypeError(f"panels must be a non-empty sequence of (label, bits, eps) triples, got {panels!r}")
    for i, p in enumerate(panels):
        if not isinstance(p, (list, tuple)) or len(p) != 3:
            raise TypeError(f"panels[{i}] must be a (label, bits, eps) triple, got {p!r}")
        check_int(f"panels[{i}] bits", p[1], low=1, high=30)
        check_positive(f"panels[{i}] eps", p[2])


def figure2_claims(curve: pd.DataFrame) -> pd.DataFrame:
    """Per panel: the point nearest q = 0.3, the largest-q point, the spreads and whether q rises with σ."""
    rows = []
    for (p, b, e), c in curve.groupby(["panel", "b", "eps"], sort=False):
        c = c.sort_values("sigma").reset_index(drop=True)
        at03 = c.iloc[(c["q"] - FIG2_Q).abs().idxmin()]
        lo, hi = c.iloc[c["q"].idxmin()], c.iloc[c["q"].idxmax()]
        rows.append({"panel": p, "b": b, "ε": e, "σ at q≈0.3": at03["sigma"], "q": at03["q"], "acc at q≈0.3": at03["median"],
                     "acc at max q": hi["median"], "max q": hi["q"], "std at min q": lo["std"], "std at max q": hi["std"],
                     "q non-decreasing": bool(np.all(np.diff(c["q"]) >= -1e-12))})
    return pd.DataFrame(rows)


def _near_example(acc: float, q: float, majority: float) -> bool:
    """Whether one panel shows the text's example (§4): its median accuracy at the grid point nearest
    q = 0.3 within ±:data:`FIG2_BAND_PP` of 62.5 % and above the majority rate, that point's q within
    ±:data:`FIG2_Q_BAND` of 0.3."""
    return bool(abs(acc - PAPER_FIG2_ACC_AT_Q03) <= FIG2_BAND_PP and acc > majority and abs(q - FIG2_Q) <= FIG2_Q_BAND)


def figure2_rows(claims: pd.DataFrame, majority: float, *, runs: int) -> list[Row]:
    """The claims of §4: per panel, q rises with σ, the largest q beats q ≈ 0.3 by ≥ 20 pp, the spread
    is larger at low q; and once for the figure, the text's example "when q is 0.3, the test accuracy
    decreases to around 62.5 %" (≈ 62.5 % at q ≈ 0.3, above the majority rate, in some panel).

    The example names no panel and is given "for instance", so it is judged once, passing when one of
    our panels shows it; each panel's accuracy at q ≈ 0.3 is shown beside it, not judged. (Until
    2026-11-28 every panel was held to 62.5 % — a test the sentence does not ask for, corrected with
    the tolerance unchanged.)"""
    majority = check_float("majority", majority, low=0.0, high=100.0)
    runs = check_int("runs", runs, low=1)
    note_runs = "" if runs >= PAPER_RUNS else f"; {runs} runs per σ (paper: {PAPER_RUNS})"
    out = []
    hits: list[tuple[str, float, bool]] = []
    n_panels = claims["panel"].nunique()
    for _, r in claims.iterrows():
        w = f"Figure 2({r['panel']})"
        acc, q = float(r["acc at q≈0.3"]), float(r["q"])
        out += [
            claim(Item(w, "q rises with σ at fixed ε", "rises"), str(r["q non-decreasing"]), bool(r["q non-decreasing"]),
                  kind="theory-check", tolerance="non-decreasing",
                  note="q comes from Theorem 1's formula at each σ: a property of the paper's own formula"),
            not_comparable(Item(w, "median acc. (%) where q ≈ 0.3", PAPER_FIG2_ACC_AT_Q03), round(acc, 2),
                           reason=f"the text's 'around 62.5 %' names no panel: judged once for the figure (row "
                                  f"'Figure 2'), this panel's value shown; σ = {r['σ at q≈0.3']}, q = {q:.3f}"
                                  f"{note_runs}"),
        ]
        hits.append((str(r["panel"]), acc, _near_example(acc, q, majority)))
        gap = float(r["acc at max q"] - acc)
        out.append(claim(Item(w, "accuracy at the largest q exceeds accuracy at q ≈ 0.3", "higher"), f"{gap:+.1f} pp", gap >= 20,
                         tolerance="≥ 20 pp (ours; the paper prints no number)",
                         null=Null("no effect of q: +0 pp", fails=not 0 >= 20), note=note_runs.lstrip("; ")))
        out.append(claim(Item(w, "std of accuracy larger at low q", "larger"), f"{r['std at min q']:.1f} vs {r['std at max q']:.1f}",
                         bool(r["std at min q"] > r["std at max q"]), tolerance="std(min q) > std(max q)",
                         null=Null("equal spreads", fails=True), note=note_runs.lstrip("; ")))
    if hits:
        best = min(hits, key=lambda h: (not h[2], abs(h[1] - PAPER_FIG2_ACC_AT_Q03)))
        out.append(claim(Item("Figure 2", "the text's example: median acc. (%) around 62.5 where q ≈ 0.3, in some panel", PAPER_FIG2_ACC_AT_Q03),
                         f"panel ({best[0]}): {best[1]:.2f}", any(h[2] for h in hits), kind="paper-number",
                         tolerance=f"±{FIG2_BAND_PP:g} pp and > majority rate {majority:.1f} % and |q − 0.3| ≤ "
                                   f"{FIG2_Q_BAND:g}, in at least one of our {n_panels} panels (ours: the text prints "
                                   "'around 62.5 %' with no precision and no panel; ±4 pp, narrowed from ±7.5 pp so "
                                   "that the majority rate fails)",
                         null=Null(f"majority class {majority:.1f} % in every panel", fails=True),
                         note="panels within the band: " + (", ".join(f"({p}) {a:.2f}" for p, a, ok in hits if ok)
                                                            or "none") + note_runs))
    return out


def majority_text(claims: pd.DataFrame, majority: float) -> str:
    """Markdown on the text's example "around 62.5 %" at q ≈ 0.3: the majority-class rate on our test
    split and the panels of ``claims`` (:func:`figure2_claims`) whose accuracy there is within the
    band and above that rate — the panels the figure-wide row of :func:`figure2_rows` counts."""
    majority = check_float("majority", majority, low=0.0, high=100.0)
    claims = check_frame("claims", claims, {"panel", "q", "acc at q≈0.3"}, "figure2_claims")
    hit = [f"({r['panel']})" for _, r in claims.iterrows()
           if _near_example(float(r["acc at q≈0.3"]), float(r["q"]), majority)]
    return (f"Majority-class classifier on our test split: **{majority:.1f} %**. The accuracy near $q = 0.3$ "
            f"is within the band and above it in **{len(hit)} of {len(claims)}** panels"
            + (f": {', '.join(hit)}." if hit else "."))


def bits_sweep(task: Task, setting: Setting, sigmas, bits, *, eps=(0.5, 1.0), sigma_q: float = 0.5,
               config: RunConfig | None = None) -> pd.DataFrame:
    """Per (ε, b): the best median accuracy over the σ grid and the q Theorem 1 gives at σ = ``sigma_q``.

    ``config`` (a :class:`.experiments.RunConfig`; None: its defaults; e.g. ``RunConfig(runs=3,
    seed=500)``) says how the runs are made; case i of the (ε, b) grid (ε outer)
    runs from seed ``config.seed + 7 i``."""
    cfg = resolve_config(RunConfig, config)
    sigmas = check_sigmas("sigmas", sigmas)
    bits = check_int_sequence("bits", bits, low=1, high=30)
    check_float_sequence("eps", eps, low=0.0, low_open=True)
    check_positive("sigma_q", sigma_q)  # the value itself names a column: kept as given
    cases = [(b, e) for e in eps for b in bits]
    bs = pd.concat([rqp_sweep(task, setting, eps=e, sigmas=sigmas, b=b,
                              config=dataclasses.replace(cfg, seed=cfg.seed + 7 * i))
                    for i, (b, e) in enumerate(cases)], ignore_index=True)
    med = bs.groupby(["eps", "b", "sigma"])["acc"].median().reset_index()
    best = med.groupby(["eps", "b"]).agg(best_median=("acc", "max")).reset_index()
    best[f"q at σ = {sigma_q}"] = [float(rqp_q(e, sigma_q, setting, task.n, b=b, c_mode=cfg.c_mode))
                                   for e, b in zip(best["eps"], best["b"])]
    return best


def bits_rows(best: pd.DataFrame, *, sigma_q: float = 0.5) -> list[Row]:
    """"The test accuracy does not increase as increasing the quantization bits" (§4), and its reason:
    q at fixed (ε, σ) falls with b."""
    check_positive("sigma_q", sigma_q)
    col = f"q at σ = {sigma_q}"
    if col not in best.columns:
        raise ValueError(f"sigma_q={sigma_q} does not match best (no column {col!r}; bits_sweep's sigma_q gives it)")
    out = []
    for e, g in best.groupby("eps"):
        g = g.set_index("b").sort_index()
        if 3 in g.index and 4 in g.index:
            d43 = g.loc[4, "best_median"] - g.loc[3, "best_median"]
            out.append(claim(Item("§4 (bits)", f"ε = {e}: 4 bits not better than 3 bits", "not higher"), f"{d43:+.2f} pp", bool(d43 <= 2.0),
                             tolerance="≤ +2 pp (ours: the 2 pp band of Table 1, about two Diagnostic test examples)",
                             null=Null("no effect of b: +0 pp", fails=not 0.0 <= 2.0)))
        qs = g[f"q at σ = {sigma_q}"].to_numpy()
        out.append(claim(Item("§4 (bits)", f"ε = {e}: q at σ = {sigma_q} decreases with b", "lower q"), ", ".join(f"{x:.3f}" for x in qs),
                         bool(np.all(np.diff(qs) < 0)), kind="theory-check", tolerance="strictly decreasing",
                         note="Theorem 1's formula evaluated: a formula property"))
    return out


def runs_text(runs: int, bits_runs: int, n_sigmas: int) -> str:
    """Markdown saying how the run counts compare with the paper's 10."""
    runs = check_int("runs", runs, low=1)
    bits_runs = check_int("bits_runs", bits_runs, low=1)
    n_sigmas = check_int("n_sigmas", n_sigmas, low=1)
    parts = []
    for what, r in (("Figure 2", runs), ("the bits sweep", bits_runs)):
        if r < PAPER_RUNS:
            parts.append(f"{what} uses **{r} runs** per σ, fewer than the paper's {PAPER_RUNS}")
        else:
            parts.append(f"{what} uses {r} runs per σ (the paper: {PAPER_RUNS})")
    return "; ".join(parts) + f", on a grid of {n_sigmas} values of σ."


def not_reproduced_rows() -> list[Row]:
    """What chapter 03 cannot compare: Figure 2's plotted curves (``not-available-offline``)."""
    return [missing(Item("Figure 2", "plotted q and accuracy curves (a)–(d)"), offline=True,
                    reason="the paper prints Figure 2 as an image and names neither its dataset nor its σ "
                           "scale; only the values and claims stated in the text are checked")]
