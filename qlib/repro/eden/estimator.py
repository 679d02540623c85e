"""Chapter eden/01: the estimator's constants (§3, §4.1, §4.3), Figures 2/7 (vNMSE and encode time
against d), Figure 4 (entropy coding and the rate–distortion bound, Appendix G.1), Figure 5
(variable-length schemes) and the numeric lemmas of Appendix D.2."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats

from qlib.repro.eden.sweeps import VnmseSweepConfig

from ... import eden_theory
from ...validation import check_float, check_float_sequence, check_int, check_int_sequence, check_seed
from ..ledger import Item, Null, Row, check, claim, close, missing, not_comparable
from . import paper
from ._args import check_budgets, check_methods
from .sweeps import MAX_LOGD, TIMING_TRIALS, vnmse_sweep

__all__ = ["outcome_text", "constants_table", "worked_example_rows", "figure2", "figure2_rows", "figure2_scale_note",
           "figure4", "figure4_text", "figure4_rows", "figure5_rows", "lemma_rows"]


def _positive_floats(name, values):
    """A non-empty sequence of finite numbers > 0 (entropy budgets may exceed 8 bits)."""
    return check_float_sequence(name, values, low=0.0, low_open=True)


def outcome_text(rows: list[Row]) -> str:
    """One sentence on the paper-claim rows among ``rows``: all held, or which did not."""
    if isinstance(rows, (str, bytes)) or not isinstance(rows, (list, tuple)) or not all(isinstance(r, Row) for r in rows):
        raise TypeError("rows must be a list of qlib.repro.ledger.Row")
    judged = [r for r in rows if r.kind == "paper-claim" and r.passed is not None]
    held = [r for r in judged if not r.passed]
    if not held:
        return f"All {len(judged)} statements tested here hold in this run."
    return (f"{len(judged) - len(held)} of {len(judged)} statements hold in this run; not held: "
            + "; ".join(r.quantity for r in held) + ".")


def constants_table(bits=range(1, 9)) -> pd.DataFrame:
    """Per integer b: largest centroid, E[Q²], vNMSE limit, entropy and the rate–distortion bound."""
    rows = []
    for b in check_int_sequence("bits", bits, low=1, high=eden_theory.MAX_BITS):
        c, t = eden_theory.codebook(b)
        s = eden_theory.quantizer_stats(t)
        rows.append({"b": b, "largest centroid": c[-1], "E[Q²]": s["E_Q2"], "vNMSE limit": s["vnmse_limit"],
                     "entropy (bits)": s["entropy"], "RD bound": float(eden_theory.rd_bound(b))})
    return pd.DataFrame(rows)


#: the basis of a tolerance of half a unit of the paper's last printed digit
PRINTED = "printed precision: half a unit of the last digit"


def worked_example_rows() -> list[Row]:
    """§3 Examples 1–2, §4.1 (b = 1.5 and b = 0.1) and §4.3 (entropy coding at b = 3), recomputed
    from our Newton-solved codebooks against the printed values."""
    e1, e2, s41, s43 = paper.EXAMPLE1, paper.EXAMPLE2, paper.SEC41, paper.SEC43
    c1 = eden_theory.codebook(1)[0]
    c2, t2 = eden_theory.codebook(2)
    s2 = eden_theory.quantizer_stats(t2)
    s9 = eden_theory.quantizer_stats(eden_theory.lloyd_max(9)[1])
    d3 = eden_theory.ee_delta(3)
    v_ee3 = eden_theory.ee_stats(d3)["vnmse_limit"]
    v1, v2, v3 = eden_theory.limit_vnmse(1), eden_theory.limit_vnmse(2), eden_theory.limit_vnmse(3)
    # the paper's own inputs of Example 2, recomputed (its printed E[Q²] does not follow from them)
    own = 2 * e2["prob_inner"] * e2["inner"] ** 2 + 2 * e2["outer_prob"] * e2["outer"] ** 2
    nb = "the same quantity at the neighbouring bit width"
    c9 = eden_theory.quantizer_stats(eden_theory.codebook(1)[1])["E_Q2"]
    return [
        close(Item("§3 Example 1", "Lloyd–Max 1-bit centroid √(2/π)", e1["centroid"]), c1[-1], atol=5e-6, basis=PRINTED,
              null=Null(c2[-1], label="b = 2 largest centroid"), note=f"tolerance: printed precision; null: {nb}"),
        close(Item("§3 Example 1", "vNMSE limit b = 1 (= DRIVE)", e1["vnmse"]), v1, atol=5e-4, basis=PRINTED,
              null=Null(v2, label="b = 2")),
        close(Item("§3 Example 2", "𝓘_2 threshold", e2["threshold"]), t2[2], atol=5e-5, basis=PRINTED,
              null=Null(0.0, label="b = 1 threshold")),
        close(Item("§3 Example 2", "𝓘_2 inner centroid", e2["inner"]), c2[2], atol=5e-6, basis=PRINTED,
              null=Null(c1[-1], label="b = 1 centroid")),
        close(Item("§3 Example 2", "𝓘_2 outer centroid", e2["outer"]), c2[3], atol=5e-6, basis=PRINTED,
              null=Null(c1[-1], label="b = 1 centroid")),
        close(Item("§3 Example 2", "Pr[0 ≤ z ≤ 0.9816]", e2["prob_inner"]), s2["probs"][2], atol=5e-6, basis=PRINTED,
              null=Null(0.5, label="b = 1 cell")),
        close(Item("§3 Example 2", "E[Q_𝓘2(z)²]", e2["E_Q2"]), s2["E_Q2"], atol=5e-6, basis=PRINTED,
              null=Null(c9, label="b = 1 (2/π)"), note=f"the paper's own numbers give {own:.5f}; see the erratum row"),
        claim(Item("§3 Example 2", "printed E[Q²] = 2·0.33685·0.45278² + 2·0.16315·1.51042²", e2["E_Q2"]), round(own, 5),
              abs(own - e2["E_Q2"]) > 5e-6, kind="erratum", tolerance="rounding ±5e-6",
              note="the printed 0.88228 is not the sum of its own printed terms"),
        close(Item("§3 Example 2", "vNMSE limit b = 2", e2["vnmse"]), v2, atol=5e-4, basis=PRINTED,
              null=Null(v1, label="b = 1"), note=f"{v2:.4f} exactly; the printed value inherits the E[Q²] slip"),
        check(Item("§3 Example 2", "b = 2 more than 4× better than b = 1", f"> {e2['gain_over_b1']:g}"), v1 / v2,
              lambda g: bool(g > e2["gain_over_b1"]), null=Null(1.0, shown="no gain: ×1")),
        close(Item("§4.1", "vNMSE limit b = 1.5, shared-coin mixture", s41["mixture_1.5"]), eden_theory.limit_vnmse(1.5),
              atol=5e-4, basis=PRINTED, null=Null((v1 + v2) / 2, label="half 𝓘_1 / half 𝓘_2")),
        close(Item("§4.1", "vNMSE b = 1.5, half 𝓘_1 / half 𝓘_2", s41["halves_1.5"]), (v1 + v2) / 2, atol=5e-4, basis=PRINTED,
              null=Null(eden_theory.limit_vnmse(1.5), label="shared-coin mixture")),
        _corollary42_row(s41["subbit_0.1"], eden_theory.limit_vnmse(0.1), p=0.1),
        close(Item("§4.3", "entropy of 𝓘_2 (bits)", s43["entropy_I2"]), s2["entropy"], atol=5e-3, basis=PRINTED,
              null=Null(2.0, label="no entropy gain: b")),
        close(Item("§4.3", "entropy of 9-value Lloyd–Max (bits)", s43["entropy_lm9"]), s9["entropy"], atol=5e-3, basis=PRINTED,
              null=Null(float(np.log2(9)), label="uniform over 9 values")),
        close(Item("§4.3", "9 values vs 𝓘_3: vNMSE reduction (%)", s43["lm9_vs_I3_pct"]), 100 * (1 - s9["vnmse_limit"] / v3),
              atol=1, basis="±1 pp on a percentage the text rounds to an integer", note="paper: 'nearly 20%'",
              null=Null(0.0, label="no reduction")),
        close(Item("§4.3", "vNMSE of 𝓘_3 without entropy coding", s43["vnmse_I3"]), v3, rtol=1e-3,
              basis="ours: 0.1 %, finer than any effect compared", note=f"exact Lloyd–Max: {v3:.6f}",
              null=Null(v2, label="b = 2")),
        close(Item("§4.3", "Δ_3", s43["delta3"]), d3, atol=5e-5, basis=PRINTED, null=Null(eden_theory.ee_delta(2), label="Δ_2")),
        close(Item("§4.3", "vNMSE of 𝓘_Δ3", s43["vnmse_ee3"]), v_ee3, rtol=1e-3,
              basis="ours: 0.1 %, finer than any effect compared", null=Null(v3, label="no entropy coding (𝓘_3)")),
        close(Item("§4.3", "𝓘_Δ3 vs 9-value LM + EE: improvement (%)", s43["ee3_vs_lm9_pct"]),
              100 * (1 - v_ee3 / s9["vnmse_limit"]), atol=1,
              basis="±1 pp on a percentage the text rounds to an integer", null=Null(0.0, label="no improvement")),
        close(Item("§4.3", "𝓘_Δ3 vs 8-value LM: improvement (%)", s43["ee3_vs_I3_pct"]), 100 * (1 - v_ee3 / v3), atol=1,
              basis="±1 pp on a percentage the text rounds to an integer", null=Null(0.0, label="no improvement")),
        not_comparable(Item("§4.3", "ECVQ best vNMSE at b = 3", s43["ecvq_b3"]),
                       reason="the paper does not give the ECVQ parameters it scanned; not re-run"),
    ]


def _printed_matches(printed: str, x: float) -> bool:
    """Whether ``x`` shown at the precision of ``printed`` (its number of decimals) gives ``printed``,
    by rounding or by truncation (a paper may do either)."""
    dec = len(printed.split(".")[1]) if "." in printed else 0
    f = 10.0 ** dec
    return bool(f"{round(x, dec):.{dec}f}" == printed or f"{math.trunc(x * f) / f:.{dec}f}" == printed)


def _corollary42_row(printed: float, ours: float, *, p: float) -> Row:
    """Corollary 4.2 at b = ``p`` < 1: the printed vNMSE against ours at the paper's printed precision,
    rounding and truncation both accepted. Null: the ``p`` share of coordinates sent unquantized,
    1/p − 1 (the sub-bit scheme without its 1-bit quantizer)."""
    text = f"{printed:g}"
    null = 1 / p - 1
    return check(Item("§4.1 (Corollary 4.2)", f"vNMSE limit b = {p:g}", text), ours, lambda v: _printed_matches(text, float(v)),
                 null=Null(null, shown=f"unquantized share: 1/p − 1 = {null:g}"), kind="paper-number",
                 tolerance=f"the printed digits of {text} (printed precision: rounding or truncation)",
                 note=f"π/(2p) − 1 = {ours:.5f}; the paper truncates")


def _lemma_d6_moment(thresholds, centroids) -> float:
    """E[(z·Q(z))²] = Σ_I q_I² ∫_I z² φ(z) dz, with ∫_a^b z²φ = Φ(b) − Φ(a) + aφ(a) − bφ(b)."""
    t = np.concatenate([[-np.inf], np.asarray(thresholds, float), [np.inf]])
    lo, hi = t[:-1], t[1:]
    edge = lambda a: np.where(np.isfinite(a), np.nan_to_num(a, posinf=0, neginf=0) * stats.norm.pdf(a), 0.0)  # noqa: E731
    z2 = stats.norm.cdf(hi) - stats.norm.cdf(lo) + edge(lo) - edge(hi)
    return float(np.sum(np.asarray(centroids, float) ** 2 * z2))


def lemma_rows(bits=range(1, 9), ee_bits=(1.0, 2.0, 3.0, 4.0)) -> list[Row]:
    """Appendix D.2: the numeric Lemmas D.6 (E[(zQ(z))²] ≤ 3) and D.7 (E[Q(z)²] ≥ 0.1) over the
    Lloyd–Max codebooks 𝓘_b and the entropy-coded cells 𝓘_Δb; Lemmas D.1–D.5 as not implemented."""
    bits = check_int_sequence("bits", bits, low=1, high=eden_theory.MAX_BITS)
    ee_bits = _positive_floats("ee_bits", ee_bits)
    qs = {f"𝓘_{b}": (eden_theory.codebook(b)[1], eden_theory.codebook(b)[0]) for b in bits}
    for b in ee_bits:
        n, t = eden_theory.ee_cells(eden_theory.ee_delta(b))
        qs[f"𝓘_Δ{b:g}"] = (t, eden_theory.quantizer_stats(t)["centroids"])
    d6 = {k: _lemma_d6_moment(t, c) for k, (t, c) in qs.items()}
    d7 = {k: eden_theory.quantizer_stats(t)["E_Q2"] for k, (t, _) in qs.items()}
    k6, k7 = max(d6, key=d6.get), min(d7, key=d7.get)
    why = ("a step of the proof of Theorem 2.3 whose constants (α, β, M_1, M_2) the paper leaves symbolic; "
           "the book checks the theorem's conclusion (Corollary 2.4, Figures 2 and 6) instead")
    rows = [missing(Item(f"App. D.2, Lemma D.{i}", what), reason=why) for i, what in (
        (1, "sup_Z d‖Q(Z̃)‖²/⟨Z̃, Q(Z̃)⟩² ≤ d²"), (2, "P(A^c) ≤ 2e^{−α²d/8}"), (3, "P(A ∩ B^c) ≤ e^{−α²M(𝓘)d}"),
        (4, "lower bounds on E⟨Z/√(1+α), Q(·)⟩ and E‖Q(Z/√(1+α))‖²"), (5, "upper bound on E‖Q(Z/√(1−α))‖²"))]
    rows.append(check(Item("App. D.2, Lemma D.6", f"max E[(z·Q(z))²] over {len(qs)} quantizers ({k6})", f"≤ {paper.LEMMA_D6_BOUND:g}"),
                      d6[k6], lambda v: bool(v <= paper.LEMMA_D6_BOUND),
                      null=Null(3.0, shown="no quantization, Q(z) = z: E[z⁴] = 3"),
                      note="the unquantized identity meets the bound with equality: the bound cannot fail for it"))
    rows.append(check(Item("App. D.2, Lemma D.7", f"min E[Q(z)²] over {len(qs)} quantizers ({k7})", f"≥ {paper.LEMMA_D7_BOUND:g}"),
                      d7[k7], lambda v: bool(v >= paper.LEMMA_D7_BOUND),
                      null=Null(2 / math.pi, shown="𝓘_1 (sign·√(2/π)): 2/π = 0.637"),
                      note="every Lloyd–Max codebook has E[Q²] ≥ 2/π (its minimum, at b = 1): the bound "
                           "0.1 cannot fail for them"))
    return rows


# -- Figures 2 and 7 ------------------------------------------------------------------------------
def figure2(bits, logd, trials: int, seed: int = 0, device="cpu", methods=paper.FIG2_METHODS,
            units=None) -> pd.DataFrame:
    """The sweep of Figures 2 and 7 on LogNormal(0, 1) vectors of dimension 2^k, k in ``logd``, with
    EDEN's Corollary 2.4 limit as a column. ``units`` (a :class:`qlib.resume.Units`): each d is a
    resumable unit (:func:`.sweeps.vnmse_sweep`)."""
    check_methods(methods, paper.FIG2_METHODS)
    bits = check_budgets("bits", bits)
    logd = check_int_sequence("logd", logd, low=1, high=MAX_LOGD)
    trials = check_int("trials", trials, low=1)
    seed = check_seed("seed", seed)
    df = vnmse_sweep(list(methods), bits, [2**k for k in logd],
                     VnmseSweepConfig(law="lognormal", trials=trials, seed=seed, device=device), units=units)
    df["theory (EDEN)"] = [eden_theory.limit_vnmse(b) for b in df["bits"]]
    return df


def figure2_scale_note(trials: int, logd) -> str:
    """What the run does against the paper (markdown sentence generated from the parameters)."""
    trials = check_int("trials", trials, low=1)
    logd = check_int_sequence("logd", logd, low=1, high=MAX_LOGD)
    dims = ", ".join(f"2^{k}" for k in logd)
    fewer = (f"{trials} vector{'s' if trials != 1 else ''} per point (the paper averages {paper.FIG2_TRIALS})"
             if trials < paper.FIG2_TRIALS else f"{trials} vectors per point, as many as the paper")
    timed = (f"; the encode times are the median over the first {TIMING_TRIALS} vectors"
             if trials > TIMING_TRIALS else "")
    return f"This run: {fewer}, at d = {dims} (the paper does not list its dimensions){timed}."


def figure2_rows(fig2: pd.DataFrame, vnmse_rtol: float = 0.05) -> list[Row]:
    """§5.2 / Appendix I.1 statements on Figures 2 and 7, and Corollary 2.4 against the measured vNMSE."""
    vnmse_rtol = check_float("vnmse_rtol", vnmse_rtol, low=0.0, low_open=True)
    piv = fig2.pivot_table(index=["bits", "d"], columns="method", values="vnmse")
    bits = sorted(set(fig2["bits"]))
    dmax, dmin = fig2["d"].max(), fig2["d"].min()
    others = piv.drop(columns="EDEN").min(axis=1)
    best = piv["EDEN"] < others
    rows = [claim(Item("§5.2, Figures 2, 7", "EDEN lowest vNMSE at every (b, d)", "all"), f"{int(best.sum())}/{len(best)}",
                  bool(best.all()), tolerance="strictly lowest",
                  null=Null("EDEN = the best other method (a tie)", fails=True))]
    for name in ("Hadamard+SQ", "QSGD"):
        if name in piv:
            grows = [piv.loc[(b, dmax), name] > piv.loc[(b, dmin), name] for b in bits]
            rows.append(claim(Item("§5.2, Figures 2, 7", f"{name} vNMSE grows with d", "grows"), f"{sum(grows)}/{len(grows)} budgets",
                              all(grows), tolerance="strictly larger at the largest d",
                              null=Null("no dependence on d", fails=True)))
    over = max(piv.loc[(b, d), "EDEN"] / eden_theory.limit_vnmse(b) for b, d in piv.index)
    rows.append(claim(Item("App. I.1, Figures 2, 7", "EDEN vNMSE bounded independently of d (max over d of vNMSE / limit)", "bounded"),
                      over, over < 1.05,
                      tolerance="< 1.05 (our reading of 'bounded': at most 5 % above the d → ∞ limit at every d run)",
                      null=Null("the limit itself: ratio 1", fails=False)))
    if "Kashin+SQ" in piv:
        kg = [piv.loc[(b, dmax), "Kashin+SQ"] / piv.loc[(b, dmin), "Kashin+SQ"] for b in bits]
        rows.append(claim(Item("App. I.1, Figures 2, 7", f"Kashin+SQ vNMSE bounded in d (ratio d = {dmax} vs {dmin})", "bounded"),
                          f"×{min(kg):.2f} … ×{max(kg):.2f}", max(kg) < 1.2,
                          tolerance="growth < 20% (our reading of 'bounded': at most 20 % from the smallest to the largest d)",
                          null=Null("no dependence on d: ×1", fails=False),
                          note="TF-MOT defaults (3 iterations, last unclipped); more iterations flatten it at more compute"))
    for b in bits:
        rows.append(close(Item(f"Theorem 2.3 / Corollary 2.4 (Fig. {'2' if b % 2 == 0 else '7'})", f"EDEN vNMSE at b = {b}, d = {dmax}",
                               eden_theory.limit_vnmse(b)), piv.loc[(b, dmax), "EDEN"], kind="theory-check",
                          rtol=vnmse_rtol,
                          note="reference = our Corollary 2.4 limit (the curve the paper plots as theory)"))
    if "Kashin+SQ" in set(fig2["method"]):
        at = fig2[fig2["d"] == dmax].groupby("method")["encode_ms"].median()
        rows.append(claim(Item("§5.2, Figures 2, 7", f"EDEN encodes faster than Kashin+SQ (d = {dmax}, ms)", "faster"),
                          f"{at['EDEN']:.2f} vs {at['Kashin+SQ']:.2f}", bool(at["EDEN"] < at["Kashin+SQ"]),
                          tolerance="strictly faster", null=Null("equal times", fails=True)))
    sp = paper.INTRO_SPEED
    rows.append(not_comparable(Item("§1", "EDEN encode time, 67M coordinates (ms)", sp["ms"]),
                               reason=f"measured on an {sp['device']} GPU; this book's timings run elsewhere"))
    return rows


# -- Figure 4 --------------------------------------------------------------------------------------
FIG4_CURVES = ("EDEN, no EE", "Lloyd–Max + EE", "EDEN I_Δb + EE")


def figure4(step: float = 0.1, b_max: float = 8.0) -> pd.DataFrame:
    """Analytic curves of Figure 4 on the grid b = step, 2·step, …, b_max, with the bits each curve
    spends above the rate–distortion bound at equal distortion (``gap …`` columns)."""
    b_max = eden_theory.check_bits(b_max, "b_max")
    step = check_float("step", step, low=0.0, high=b_max, low_open=True)
    grid = np.round(np.arange(1, int(round(b_max / step)) + 1) * step, 10)
    df = pd.DataFrame({"b": grid,
                       "EDEN, no EE": [eden_theory.limit_vnmse(b) for b in grid],
                       "Lloyd–Max + EE": [eden_theory.lm_entropy_coded_vnmse(b)[1] for b in grid],
                       "EDEN I_Δb + EE": [eden_theory.ee_stats(eden_theory.ee_delta(b))["vnmse_limit"] for b in grid],
                       "rate–distortion bound": eden_theory.rd_bound(grid)})
    for col, name in (("EDEN I_Δb + EE", "gap EE (bits)"), ("EDEN, no EE", "gap no EE (bits)")):
        df[name] = df["b"] - np.log2(1 + 1 / df[col]) / 2
    return df


def figure4_text(fig4: pd.DataFrame) -> str:
    """Markdown: the largest number of bits EDEN without entropy coding and 𝓘_Δb spend above the
    rate–distortion bound over the grid of ``fig4`` (:func:`figure4`), against Appendix G.1's "at most
    0.25 bits" (and the high-rate gap of a uniform quantizer, ½·log2(πe/6))."""
    if not isinstance(fig4, pd.DataFrame) or not {"b", "gap EE (bits)", "gap no EE (bits)"} <= set(fig4.columns) \
            or fig4.empty:
        raise ValueError("fig4 must be the non-empty frame figure4() returns (columns b, gap EE (bits), gap no EE (bits))")
    gap = fig4.loc[fig4["gap EE (bits)"].idxmax()]
    return (f"Without entropy coding EDEN is at most {fig4['gap no EE (bits)'].max():.3f} bit above the bound; "
            f"$\\mathcal I_{{\\Delta_b}}$ is at most {gap['gap EE (bits)']:.4f} bit above it (at $b = {gap['b']:g}$), "
            + ("within" if gap["gap EE (bits)"] <= paper.APP_G1["ee_gap_bits"] else "just above")
            + f" the paper's \"at most {paper.APP_G1['ee_gap_bits']:g} bits\" (the high-rate gap of a uniform quantizer is "
            "$\\tfrac12\\log_2(\\pi e/6) \\approx 0.2546$).")


def figure4_rows(fig4: pd.DataFrame) -> list[Row]:
    """Appendix G.1's statements on Figure 4."""
    g1 = paper.APP_G1
    no_ee, ee = fig4["gap no EE (bits)"].max(), fig4["gap EE (bits)"].max()
    above = bool(fig4[list(FIG4_CURVES)].ge(fig4["rate–distortion bound"], axis=0).all().all())
    return [
        claim(Item("App. G.1, Figure 4", "no-EE EDEN: bits above the RD bound (max over b)", f"< {g1['no_ee_gap_bits']:g}"),
              no_ee, no_ee < g1["no_ee_gap_bits"]),
        claim(Item("App. G.1, Figure 4", "𝓘_Δb: bits above the RD bound (max over b)", f"≤ {g1['ee_gap_bits']:g}"), ee,
              ee <= g1["ee_gap_bits"],
              note="the uniform-quantizer gap tends to ½·log2(πe/6) = 0.2546 bit at large b, just above the "
                   "paper's 'at most 0.25'"),
        claim(Item("App. G.1, Figure 4", "every EDEN curve ≥ RD bound", "≥ bound"), "all" if above else "not all", above,
              kind="theory-check", note="reference = the rate–distortion bound 4^-b/(1 − 4^-b) (Cover 1999)"),
        _ee_gap_erratum(fig4),
    ]


#: the high-rate gap of an entropy-coded uniform scalar quantizer to the rate–distortion bound (Gish & Pierce
#: 1968): ½·log2(πe/6) bit
HIGH_RATE_GAP = 0.5 * math.log2(math.pi * math.e / 6)


def _ee_gap_erratum(fig4: pd.DataFrame) -> Row:
    """Appendix G.1's "at most 0.25 bits" for 𝓘_Δb against the closed form its curve tends to: the gap of an
    entropy-coded uniform quantizer, ½·log2(πe/6) bit at high rate (confirmed when that exceeds the printed
    bound); the note names the first b of ``fig4``'s grid whose exact gap is above the bound."""
    bound = paper.APP_G1["ee_gap_bits"]
    above = fig4.loc[fig4["gap EE (bits)"] > bound, "b"]
    return claim(Item("App. G.1, Figure 4", f"printed 'at most {bound:g} bits' for 𝓘_Δb vs the high-rate gap "
                                            "½·log2(πe/6) of entropy-coded uniform quantization", f"≤ {bound:g}"),
                 HIGH_RATE_GAP, HIGH_RATE_GAP > bound, kind="erratum",
                 tolerance="the printed bound against the closed form (confirmed when the closed form exceeds it)",
                 note="𝓘_Δb is a uniform quantizer with entropy coding, whose gap tends to ½·log2(πe/6) bit as b grows "
                      "(Gish & Pierce 1968); our exact curve is above the printed bound "
                      + (f"from b = {float(above.min()):g} on this grid" if len(above) else "nowhere on this grid"))


# -- Figure 5 --------------------------------------------------------------------------------------
def figure5_rows(fig5: pd.DataFrame) -> list[Row]:
    """Appendix G.1's statements on Figure 5 (EDEN against QSGD + Elias-ω and SQ + Huffman)."""
    piv = fig5.pivot_table(index=["bits", "method"], columns="law", values="vnmse").xs("EDEN", level="method")
    spread = float((piv.max(axis=1) / piv.min(axis=1)).max())
    sq = fig5[fig5["method"] == "SQ+Huffman"].pivot_table(index="bits", columns="law", values="vnmse")
    sq_spread = float((sq.max(axis=1) / sq.min(axis=1)).max()) if sq.shape[1] > 1 else float("nan")
    # null: the same encoder without the rotation (SQ + Huffman on the raw input), whose error follows the law
    rows = [check(Item("App. G.1, Figure 5", "EDEN's error is the same for every input law (max/min over laws)", "same"), spread,
                  lambda v: bool(v < 1.1), null=Null(sq_spread, shown=f"no rotation (SQ + Huffman): {sq_spread:.3g}"),
                  tolerance="< 1.1 (our reading of 'the same': within 10 % across the laws)")]
    worst = fig5.groupby(["bits", "method"])["vnmse"].max().unstack("method")
    if "QSGD+Elias" in worst:
        beats = (worst["EDEN"] <= worst["QSGD+Elias"])[worst["QSGD+Elias"].notna()]
        rows.append(claim(Item("App. G.1, Figure 5", "EDEN (no EE) worst-case vNMSE ≤ QSGD + Elias-ω", "all b"),
                          f"{int(beats.sum())}/{len(beats)}", bool(beats.all())))
    hub = fig5[fig5["method"] == "SQ+Huffman"].merge(fig5[fig5["method"] == "EDEN"], on=["law", "bits"],
                                                     suffixes=("_h", "_e"))
    wins = hub[hub["vnmse_h"] < hub["vnmse_e"]]
    rows.append(claim(Item("App. G.1, Figure 5", "SQ + Huffman lower than EDEN for some inputs", "some"),
                      f"{len(wins)}/{len(hub)} (b, law) points, laws: {sorted(set(wins['law']))}", len(wins) > 0,
                      null=Null("SQ + Huffman = EDEN everywhere (0 points lower)", fails=True)))
    return rows
