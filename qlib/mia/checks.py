"""The theorem checks TC-01…TC-17 of paper 003 and the proof-fact checks of paper 001 §3.

Each function runs one check of the spec (``/work/shared/specs/mia-limits.md`` §5) and returns a
list of :class:`Check` rows (where, quantity, expected, ours, passed, tolerance), which a chapter
records with ``Comparisons.check`` and a test asserts. Sizes (Monte-Carlo trials, grid sizes) are
arguments so that the smoke profile can shrink them; the defaults are the spec's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import bounds, erm, exact, gaussian, game, overfit


@dataclass(frozen=True)
class Check:
    id: str
    where: str
    quantity: str
    expected: str
    ours: str
    passed: bool
    tolerance: str = ""
    note: str = ""
    erratum: bool = False  # the row tests a printed statement the spec flags as wrong: passed = "printed claim holds"


def _f(x, d=6):
    return f"{x:.{d}g}" if isinstance(x, (float, np.floating)) else str(x)


# ---- TC-01 -----------------------------------------------------------------------------------
def tc01(nus=(0.1, 0.2, 0.3, 0.5, 0.7, 0.9), ns=(2, 3), p1: float = 0.3) -> list[Check]:
    """Brute force over all attacks on Bernoulli(p1), θ̂ = mean: corrected Eq. 23, Theorem 3.1."""
    out = []
    for n in ns:
        q, pn = exact.joint_tables([1 - p1, p1], n, lambda c: c[:, 1])
        delta = exact.tv_discrete(q, pn)
        for nu in nus:
            acc = exact.brute_force_accuracies(q, pn, nu)
            mx, mn = acc.max(), acc.min()
            corr = exact.bayes_accuracy(q, pn, nu)
            printed = exact.printed_eq23_accuracy(q, pn, nu)
            lo, hi = exact.accuracy_bounds(delta, nu)
            sec = exact.sec_from_acc(mx, nu)
            ok = (abs(mx - corr) < 1e-12 and abs(mn - (1 - mx)) < 1e-12 and lo - 1e-12 <= mn <= mx <= hi + 1e-12
                  and sec >= 1 - delta - 1e-12 and (abs(sec - (1 - delta)) < 1e-12 if nu == 0.5 else True))
            out.append(Check("TC-01", "Theorem 3.1 / Eq. 23", f"max Acc, n={n}, ν={nu} (2^{q.size} attacks)",
                             f"corrected Eq.23 = {corr:.6f}; bounds [{lo:.4f}, {hi:.4f}]; Sec ≥ 1−Δ = {1 - delta:.4f}",
                             f"brute force max {mx:.6f}, min {mn:.6f}, Sec {sec:.4f}", bool(ok), "1e-12"))
            if nu != 0.5:
                out.append(Check("TC-01", "Eq. 23 as printed (erratum)", f"best accuracy at n={n}, ν={nu}",
                                 f"printed Eq. 23: {printed:.6f}", f"brute force {mx:.6f}",
                                 bool(abs(printed - mx) < 1e-12), "1e-12",
                                 "erratum confirmed: printed Eq. 23 swaps member/non-member densities", True))
    return out


# ---- TC-02 -----------------------------------------------------------------------------------
TC02_CASES = (((0.2, 0.3, 0.5), 10, 0.5), ((0.1,) * 10, 20, 0.5), ((0.2, 0.3, 0.5), 10, 0.3), ((0.05, 0.95), 30, 0.6))


def tc02(trials: int = 200_000, seed: int = 0, cases=TC02_CASES) -> list[Check]:
    """MIA game with the Bayes attack against the injective algorithm vs the exact accuracy."""
    out = []
    for i, (p, n, nu) in enumerate(cases):
        ex = exact.max_acc_discrete(p, n, nu)
        r = game.simulate_mia_game(game.discrete_sampler(p), game.count_algorithm(len(p)),
                                   game.discrete_bayes_attack(p, n, nu), n, nu, trials, seed=seed + i)
        z = r.z_score(ex)
        out.append(Check("TC-02", "§3.1 / Theorem 3.1", f"game accuracy, K={len(p)}, n={n}, ν={nu}, M={trials}",
                         f"{ex:.5f}", f"{r.accuracy:.5f} (z={z:+.2f})", bool(abs(z) <= 4), "|z| ≤ 4"))
    return out


# ---- TC-03 -----------------------------------------------------------------------------------
TC03_REF = (((0.5, 0.5), 10, 0.123046875000), ((0.2, 0.3, 0.5), 7, 0.209107910000),
            ((0.2, 0.3, 0.5), 100, 0.054009955314), ((0.1,) * 10, 50, 0.166432140806),
            ((0.25,) * 4, 6, 0.296630859375), ((0.3, 0.7), 1, 0.42), ((0.1, 0.9), 12, 0.069038331140))


def tc03(max_states: int = 200_000) -> list[Check]:
    """Theorem 5.4: enumeration = binomial sums = De Moivre = reference values."""
    out = []
    for p, n, ref in TC03_REF:
        b = bounds.max_delta_discrete(p, n, "binomial")
        dm = bounds.max_delta_discrete(p, n, "demoivre")
        vals = [b, dm]
        if exact.n_count_vectors(n, len(p)) <= max_states:
            vals.append(bounds.max_delta_discrete(p, n, "enumerate"))
        ok = max(vals) - min(vals) < 1e-12 and abs(b - ref) < 1e-11
        out.append(Check("TC-03", "Theorem 5.4 / Eq. 37", f"max Δ_n, K={len(p)}, n={n}", f"{ref:.12f}",
                         " = ".join(f"{v:.12f}" for v in vals), bool(ok), "1e-12 (ref to 1e-11)",
                         "binomial = De Moivre" + (" = enumeration" if len(vals) == 3 else "")))
    return out


# ---- TC-04 -----------------------------------------------------------------------------------
def tc04(p=(0.2, 0.3, 0.5), n: int = 8, draws: int = 20, Ls=(2, 3, 5), seed: int = 0) -> list[Check]:
    """Maximality and Lemma C.2 on random deterministic algorithms F: counts → {1..L}."""
    rng = np.random.default_rng(seed)
    mx = bounds.max_delta_discrete(p, n)
    S = exact.n_count_vectors(n, len(p))
    worst_gap, worst_c2 = -math.inf, 0.0
    for L in Ls:
        for _ in range(draws):
            lab = rng.integers(0, L, size=S)
            F = lambda c, lab=lab: lab  # noqa: E731
            d1 = exact.delta_discrete_algorithm(p, n, F)
            d2 = exact.delta_finite_theta(p, n, F)
            worst_c2 = max(worst_c2, abs(d1 - d2))
            worst_gap = max(worst_gap, d1 - mx)
    named = {"max of data (atom index)": lambda c: np.max(np.where(c > 0, np.arange(c.shape[1]), -1), 1),
             "1{mean ≥ 1.2}": lambda c: (c @ np.arange(c.shape[1]) / n >= 1.2).astype(int),
             "rounded mean": lambda c: np.round(c @ np.arange(c.shape[1]) / n, 1)}
    nd = {k: exact.delta_discrete_algorithm(p, n, F) for k, F in named.items()}
    inj = exact.delta_discrete_algorithm(p, n, None)
    out = [Check("TC-04", "Lemma C.2", f"|Δ direct − Lemma C.2| over {draws * len(Ls)} random F (L ∈ {list(Ls)})",
                 "0", f"{worst_c2:.2e}", bool(worst_c2 < 1e-12), "1e-12"),
           Check("TC-04", "Theorem 5.4 (maximality)", "max over random F of Δ_F − max_A Δ_n", "≤ 0",
                 f"{worst_gap:.4g}", bool(worst_gap <= 1e-12), "1e-12"),
           Check("TC-04", "Theorem 5.4 (attained)", "injective F", f"{mx:.12f}", f"{inj:.12f}",
                 bool(abs(inj - mx) < 1e-12), "1e-12")]
    for k, v in nd.items():
        out.append(Check("TC-04", "Theorem 5.4 (maximality)", f"Δ of θ̂ = {k}", f"≤ {mx:.6f}", f"{v:.6f}",
                         bool(v <= mx + 1e-12), "1e-12"))
    return out


# ---- TC-05 -----------------------------------------------------------------------------------
def tc05(p: float = 0.3, rate_ns=(10, 51, 101, 401, 1001)) -> list[Check]:
    """Lemma C.3 (2p(1−p)^n) and the threshold algorithm, by enumeration, and the KL rate."""
    out = []
    worst = 0.0
    for pp, n in ((0.5, 10), (0.3, 5), (0.1, 50), (0.3, 12)):
        d = exact.delta_discrete_algorithm([1 - pp, pp], n, lambda c: (c[:, 1] > 0).astype(int))
        worst = max(worst, abs(d - bounds.bernoulli_max_delta(pp, n)))
    out.append(Check("TC-05", "Lemma C.3", "|Δ(θ̂ = max z_j) − 2p(1−p)^n| (4 cases, enumeration)", "0",
                     f"{worst:.2e}", bool(worst < 1e-12), "1e-12"))
    worst = 0.0
    for n, m in ((10, 5), (11, 6), (7, 2), (20, 13)):
        d = exact.delta_discrete_algorithm([1 - p, p], n, lambda c, m=m: (c[:, 1] >= m).astype(int))
        worst = max(worst, abs(d - bounds.bernoulli_threshold_delta(p, n, m)))
    out.append(Check("TC-05", "spec §3.2 (threshold)", "|Δ(1{Σz ≥ m}) − 2p(1−p) b(m−1; n−1, p)| (4 cases)", "0",
                     f"{worst:.2e}", bool(worst < 1e-12), "1e-12"))
    kl = bounds.kl_bernoulli(0.5, p)
    rates = [-bounds.log_bernoulli_threshold_delta(p, n, math.ceil(n / 2)) / n for n in rate_ns]
    mono = all(a > b for a, b in zip(rates, rates[1:])) and rates[-1] > kl
    out.append(Check("TC-05", "spec §3.2 (rate)", f"−(1/n) log Δ_n at n = {list(rate_ns)} ↓ KL(1/2‖{p})",
                     f"decreasing to {kl:.6f} (0.0916 at n=1001)", ", ".join(f"{r:.4f}" for r in rates), bool(mono),
                     "monotone, above KL"))
    return out


# ---- TC-06 -----------------------------------------------------------------------------------
def tc06(ns=tuple(range(2, 61)) + (100, 200, 500, 1000, 5000), n_dirichlet: int = 20, seed: int = 0) -> list[Check]:
    """Corollary 5.4.1: R = max Δ_n √n / C(P) ∈ [0.29 (0.366), 1/2], → 1/√(2π)."""
    rng = np.random.default_rng(seed)
    laws = [np.array([q, 1 - q]) for q in np.linspace(0.01, 0.5, 50)]
    laws += [np.full(K, 1 / K) for K in (3, 5, 10, 20)]
    laws += [d for d in rng.dirichlet(np.full(6, 0.5), size=n_dirichlet) if d.min() > 1e-6]
    rmax, rmin_cond, limit_gap = 0.0, math.inf, 0.0
    for p in laws:
        for n in ns:
            R = bounds.cor541_ratio(p, n)
            rmax = max(rmax, R)
            if bounds.cor541_condition(p, n):
                rmin_cond = min(rmin_cond, R)
            if n * np.minimum(p, 1 - p).min() >= 20:
                limit_gap = max(limit_gap, abs(R - bounds.COR541_LIMIT))
    out = [Check("TC-06", "Corollary 5.4.1 (upper)", f"max R over {len(laws)} laws × {len(ns)} n", "≤ 1/2",
                 f"{rmax:.6f}", bool(rmax <= 0.5 + 1e-12), "1e-12"),
           Check("TC-06", "Corollary 5.4.1 (lower)", "min R where n ≥ 5 and n > 1/min p",
                 f"≥ c = {bounds.COR541_C:.4f} (observed infimum 0.366)", f"{rmin_cond:.6f}",
                 bool(rmin_cond >= bounds.COR541_C - 1e-12), "1e-12",
                 "constant holds although the printed proof's last step is false (erratum)"),
           Check("TC-06", "Corollary 5.4.1 (limit)", "max |R − 1/√(2π)| where n·min(p,1−p) ≥ 20",
                 "< 2e-3 (spec)", f"{limit_gap:.2e}", bool(limit_gap < 2e-3), "2e-3",
                 "spec tolerance, not the paper's: at P = (1/2, 1/2) the lattice gap is 2.49e-3 at n = 40 (np = 20)")]
    big = max(abs(bounds.cor541_ratio(p, 5000) - bounds.COR541_LIMIT) for p in laws[:50])
    out.append(Check("TC-06", "Corollary 5.4.1 (limit)", "max |R − 1/√(2π)| over the 50 Bernoulli laws at n = 5000",
                     "→ 0 (< 1e-3)", f"{big:.2e}", bool(big < 1e-3), "1e-3"))
    r_small = bounds.cor541_ratio([0.01, 0.99], 2)
    out.append(Check("TC-06", "Corollary 5.4.1 (condition)", "R at n = 2, P = (0.01, 0.99) (condition violated)",
                     "< 0.29: lower bound needs the condition", f"{r_small:.4f}", bool(r_small < 0.29), "",
                     "upper bound still holds without the condition"))
    # erratum: the proof's last step claims −(3/2) ln 2 + 1 > 0
    v = -1.5 * math.log(2) + 1
    out.append(Check("TC-06", "Corollary 5.4.1 proof (erratum)", "−(3/2) ln 2 + 1 (claimed > 0)", "> 0",
                     f"{v:.4f}", bool(v > 0), "", "erratum confirmed: the claimed positive number is negative; "
                     "the constant itself holds (rows above)", True))
    return out


# ---- TC-07 -----------------------------------------------------------------------------------
def tc07(laws=((0.5, 0.5), (0.2, 0.3, 0.5), (0.1,) * 10), epss=(0.01, 0.05, 0.1)) -> list[Check]:
    out = []
    for p in laws:
        for e in epss:
            n = bounds.sample_size_discrete(bounds.C_P(p), e)
            v = bounds.max_delta_discrete(p, n, "demoivre")
            out.append(Check("TC-07", "Corollary 5.4.1 (sample size)", f"max Δ_n at n = ⌈(C/2ε)²⌉ = {n}, K={len(p)}, ε={e}",
                             f"≤ {e}", f"{v:.5f}", bool(v <= e), "exact"))
    return out


# ---- TC-08 -----------------------------------------------------------------------------------
def tc08(draws: int = 2000, Ks=(2, 3, 5, 10, 50), seed: int = 0) -> list[Check]:
    """C(P) facts: Lemma C.4, Lemma C.5, Eq. 17–19 on Dirichlet draws (natural log)."""
    rng = np.random.default_rng(seed)
    fails = {k: 0 for k in ("C.4", "C.5", "17", "18", "19")}
    total = 0
    for K in Ks:
        for p in rng.dirichlet(np.ones(K), size=draws):
            if p.max() > 1 - 1e-9 or p.min() <= 0:
                continue
            p = p / p.sum()
            total += 1
            c = bounds.entropy_bound_chain(p)
            t = 1e-12
            fails["C.4"] += not (c["C"] <= c["sqrt(K-1)"] + t)
            lo, hi = bounds.C_P_range(max(p.max(), 1 / K), K)
            fails["C.5"] += not (lo - t <= c["C"] <= hi + t)
            fails["17"] += not (c["C"] / 2 >= c["GS"] - t)
            fails["18"] += not (c["C"] / K <= c["sqrt(GS/K)"] + t)
            fails["19"] += not (c["H"] <= c["C"] + t and c["C"] <= c["sqrt(K(1-e^-H))"] + t
                                and c["sqrt(K(1-e^-H))"] <= c["sqrt(KH)"] + t)
    uni = [abs(bounds.C_P(np.full(K, 1 / K)) - math.sqrt(K - 1)) for K in Ks]
    out = [Check("TC-08", f"{'Lemma ' if k.startswith('C') else 'Eq. '}{k}", f"violations over {total} Dirichlet laws",
                 "0", str(v), v == 0, "1e-12") for k, v in fails.items()]
    out.append(Check("TC-08", "Lemma C.4 (equality)", "|C(uniform) − √(K−1)|", "0", f"{max(uni):.1e}",
                     bool(max(uni) < 1e-12), "1e-12"))
    v = -0.3 * math.log2(0.3)
    out.append(Check("TC-08", "Eq. 19 (log base)", "−p log2 p vs √(p(1−p)) at p = 0.3 (base-2 log breaks H ≤ C)",
                     f"> {math.sqrt(0.21):.3f}", f"{v:.3f}", bool(v > math.sqrt(0.21)), "",
                     "the natural log is required"))
    return out


# ---- TC-09 -----------------------------------------------------------------------------------
def tc09(ns=(100, 1_000, 10_000, 100_000), J: int = 200_000) -> list[Check]:
    """Lemma C.1: C(P) = ∞ (power law), max Δ_n ↓ 0 at a slower rate than n^{-1/2}."""
    out = []
    for a in (1.5, 2.0):
        vals = [bounds.power_law_max_delta(a, n, J) for n in ns]
        v = np.array([x[0] for x in vals])
        width = max(x[2] - x[1] for x in vals)
        sq = v * np.sqrt(ns)
        ok = bool(np.all(np.diff(v) < 0) and np.all(np.diff(sq) > 0) and width < 1e-6)
        out.append(Check("TC-09", "Lemma C.1", f"max Δ_n, p_j ∝ j^-{a}, n = {list(ns)}",
                         "↓ 0, √n·maxΔ ↑, tail width < 1e-6",
                         ", ".join(f"{x:.5f}" for x in v) + f"; width {width:.1e}", ok, "monotone"))
        if a == 1.5:
            slope = math.log10(v[-1] / v[-2]) / math.log10(ns[-1] / ns[-2])
            out.append(Check("TC-09", "Lemma C.1 (rate)", "log-log slope between the last two n (a = 1.5)",
                             "−1/3 ± 0.03", f"{slope:.4f}", bool(abs(slope + 1 / 3) <= 0.03), "±0.03"))
    return out


# ---- TC-10 -----------------------------------------------------------------------------------
def tc10(trials: int = 200_000, seed: int = 0, mixture_cases=((10, 1), (5, 2), (10, 3)),
         mc_cases=((2, 1), (10, 1), (10, 3), (50, 2))) -> list[Check]:
    """Gaussian empirical mean: exact forms agree, MC game, explicit bound, asymptotics."""
    out = []
    for n, d in mixture_cases:
        a, b = gaussian.gaussian_mean_delta(n, d), gaussian.gaussian_mean_delta_mixture(n, d)
        out.append(Check("TC-10", "Theorem 5.1 (exact, spec §3.3)", f"χ² form vs mixture form, n={n}, d={d}",
                         f"{a:.8f}", f"{b:.8f}", bool(abs(a - b) < 1e-6), "1e-6"))
    for n in (2, 5, 100):
        a, b = gaussian.gaussian_mean_delta(n, 2), gaussian.gaussian_mean_delta_d2(n)
        out.append(Check("TC-10", "Theorem 5.1 (exact, d = 2)", f"χ² form vs closed form, n={n}",
                         f"{b:.8f}", f"{a:.8f}", bool(abs(a - b) < 1e-6), "1e-6"))
    for i, (n, d) in enumerate(mc_cases):
        ex = 0.5 + 0.5 * gaussian.gaussian_mean_delta(n, d)
        r = game.simulate_mia_game(game.gaussian_sampler(d), game.mean_algorithm, game.gaussian_bayes_attack(n, 0.5),
                                   n, 0.5, trials, seed=seed + i)
        z = r.z_score(ex)
        out.append(Check("TC-10", "Theorem 3.1 (Gaussian mean)", f"Bayes-attack game, n={n}, d={d}, M={trials}",
                         f"{ex:.5f}", f"{r.accuracy:.5f} (z={z:+.2f})", bool(abs(z) <= 4), "|z| ≤ 4"))
    worst = -math.inf
    for d in (1, 2, 3, 10):
        for n in (2, 5, 10, 100, 1000):
            worst = max(worst, gaussian.gaussian_mean_delta(n, d) - gaussian.gaussian_mean_bound(n, d))
    out.append(Check("TC-10", "Theorem 5.1 (Eq. 9, explicit)", "max of Δ_n − (√d/(2n) + m_1/(2√n)), 20 cases",
                     "≤ 0", f"{worst:.4g}", bool(worst <= 0), "exact"))
    for n, tol in ((1000, 2e-3), (100_000, 1e-4)):
        v = math.sqrt(n) * gaussian.gaussian_mean_delta(n, 1)
        lim = gaussian.gaussian_mean_limit(1)
        out.append(Check("TC-10", "Theorem 5.1 (rate)", f"√n Δ_n at n={n}, d=1", f"→ 1/π = {lim:.6f}",
                         f"{v:.6f}", bool(abs(v / lim - 1) < tol), f"relative {tol}"))
    return out


# ---- TC-11 / TC-12 ---------------------------------------------------------------------------
def tc11(ds=(1, 2, 3, 5, 10), ns=(2, 3, 5, 10, 50, 1000), betas=(0, 0.1, 0.5, 1, 2, 4, 8)) -> list[Check]:
    ratios = [gaussian.prop_g1_tv(b, n, d) / gaussian.prop_g1_bound(b, n, d) for d in ds for n in ns for b in betas]
    r = max(ratios)
    return [Check("TC-11", "Proposition G.1", f"max TV/bound over {len(ratios)} cases", "≤ 1 (spec: 0.793)",
                  f"{r:.4f}", bool(r <= 1 + 1e-9), "1e-9")]


def tc12(cs=tuple(np.logspace(-4, 2, 25)), ds=(1, 2, 5, 10, 100, 1000, 10_000),
         epss=(0.001, 0.01, 0.05, 0.1, 0.3, 0.5, 0.9, 0.999)) -> list[Check]:
    bad_suff, bad_exact, total = 0, 0, 0
    for c in cs:
        for d in ds:
            for e in epss:
                n = gaussian.remark51_n(c, d, e)
                total += 1
                bad_suff += gaussian.remark51_lhs(c, d, n) > e * (1 + 1e-12)
                bad_exact += gaussian.remark51_n_exact(c, d, e) > n * (1 + 1e-12)
    return [Check("TC-12", "Remark 5.1", f"cases where c/√n + √d/(2n) > ε at the printed n ({total} cases)", "0",
                  str(bad_suff), bad_suff == 0, "exact",
                  "the proof drops a factor 2 (erratum) but the printed condition is still sufficient"),
            Check("TC-12", "Remark 5.1", "cases where the exact threshold n* exceeds the printed n", "0",
                  str(bad_exact), bad_exact == 0, "exact")]


# ---- TC-13 / TC-14 / TC-16 -------------------------------------------------------------------
def tc13(draws: int = 2000, seed: int = 0) -> list[Check]:
    rng = np.random.default_rng(seed)
    bad = 0
    for _ in range(draws):
        n = int(rng.integers(1, 200))
        eps, alpha = float(rng.uniform(0.01, 5)), float(rng.uniform(0.01, 0.99))
        l = rng.exponential(size=n) ** rng.uniform(0.2, 3)
        l = l / l.mean() * eps * alpha
        bad += float(np.mean(l <= eps)) < 1 - alpha - 1e-12
    return [Check("TC-13", "Proposition 4.2", f"loss vectors with mean εα and fraction ≤ ε below 1 − α ({draws} draws)",
                  "0", str(bad), bad == 0, "exact")]


def tc14(trials: int = 2000, seed: int = 0) -> list[Check]:
    out = []
    for d, n in ((50, 20), (50, 50)):
        tr, fr = overfit.ols_losses(d, n, trials, seed=seed)
        acc = overfit.loss_threshold_accuracy(tr, fr, 1e-8)
        out.append(Check("TC-14", "Example 4.5 / Theorem 4.3(ii)", f"OLS d={d}, n={n}: accuracy of 1{{loss ≤ 1e-8}}",
                         "≥ 0.995 (Δ_n = 1)", f"{acc:.4f}", bool(acc >= 0.995), "fixed threshold"))
    lbs = [overfit.ols_threshold_game(d, n, trials, seed=seed) for d, n in ((20, 50), (10, 100), (10, 1000))]
    out.append(Check("TC-14b", "§5.1 (least squares, d < n)", "held-out lower bound on Δ_n at n/d = 2.5, 10, 100",
                     "decreasing in n/d (spec: 0.26, 0.05, 0.01 in-sample)", ", ".join(f"{v:.3f}" for v in lbs),
                     bool(lbs[0] > lbs[1] > lbs[2]), "monotone only"))
    return out


def tc16(reps: int = 2000, seed: int = 0) -> list[Check]:
    s = 10**6
    n = overfit.propB1_n_printed(s)
    pe = overfit.prob_event_E(s, n, reps, seed=seed)
    bd = overfit.propB1_bound(s)
    out = [Check("TC-16", "Proposition B.1 as printed (erratum)", f"P(E) at s=1e6, n={n} (printed condition)",
                 f"≥ 1 − s^(3 − ln s/4) = {bd:.3f}", f"{pe:.3f} (spec ≈ 0.51)", bool(pe >= bd), "",
                 "erratum confirmed: the explicit bound is violated under the printed condition on n", True),
           Check("TC-16", "Proposition B.1 (spec value)", f"P(E) at s=1e6, n={n}", "≈ 0.51 (spec MC)", f"{pe:.3f}",
                 bool(abs(pe - 0.51) <= 0.05), "±0.05")]
    for s in (2 * 10**5, 10**6):
        n = overfit.propB1_n_corrected(s)
        pe = overfit.prob_event_E(s, n, reps, seed=seed + 1)
        out.append(Check("TC-16", "Proposition B.1 (corrected)", f"P(E) at s={s:.0e}, n={n} (n ≤ (s+1)/(3(√s ln s+1)))",
                         f"≥ 0.99 and ≥ {overfit.propB1_bound(s):.3f}", f"{pe:.3f}",
                         bool(pe >= 0.99 and pe >= overfit.propB1_bound(s) - 0.05), "±0.05"))
    return out


# ---- paper 001 §3 proof facts ----------------------------------------------------------------
def lemma_b1_random(draws: int = 1000, seed: int = 0) -> Check:
    rng = np.random.default_rng(seed)
    bad = 0
    for _ in range(draws):
        K = int(rng.integers(2, 8))
        P, Q = rng.dirichlet(np.ones(K)), rng.dirichlet(np.ones(K))
        lo, tv, hi = erm.lemma_b1_bounds(P, Q)
        bad += not (lo - 1e-12 <= tv <= hi + 1e-12)
    return Check("B.1", "Lemma B.1", f"violations of |a−b| ≤ TV ≤ (|a−b|+a+b)/2 ({draws} random pairs)", "0",
                 str(bad), bad == 0, "1e-12")


def lemma_b2_random(draws: int = 200, seed: int = 0) -> Check:
    rng = np.random.default_rng(seed)
    worst = 0.0
    for _ in range(draws):
        J = int(rng.integers(2, 7))
        A = rng.standard_normal((J, J))
        M = A @ A.T + 0.1 * np.eye(J)
        j = int(rng.integers(0, J))
        worst = max(worst, abs(erm.schur_inverse_diag(M, j) / np.linalg.inv(M)[j, j] - 1))
    return Check("B.2", "Lemma B.2", f"max relative |Schur formula − (M⁻¹)_jj| ({draws} random SPD M)", "0",
                 f"{worst:.1e}", bool(worst < 1e-9), "1e-9")


def random_erm_problem(rng: np.random.Generator, K: int, m: int):
    """A random finite-Θ̄ problem: uniform losses in [0, 1], Dirichlet(1) atom law."""
    return rng.random((K, m)), rng.dirichlet(np.ones(m))


def erm_bound_random(draws: int = 30, seed: int = 0) -> Check:
    """Δ_n ≤ 2(1 − P(θ̂ = θ̄_1)) (proof of Prop. C.3) on random problems, exact."""
    rng = np.random.default_rng(seed)
    bad = 0
    for _ in range(draws):
        L, p = random_erm_problem(rng, int(rng.integers(2, 5)), int(rng.integers(2, 4)))
        e = erm.erm_exact(L, p, int(rng.integers(1, 40)))
        bad += e.log_delta > math.log(2) + e.log_not_best + 1e-12
    return Check("C.3", "Proof of Prop. C.3", f"violations of Δ_n ≤ 2(1 − p_1) ({draws} random problems)", "0",
                 str(bad), bad == 0, "1e-12 (logs)")


def prop_c4_random(draws: int = 200, seed: int = 0) -> list[Check]:
    rng = np.random.default_rng(seed)
    worst_full, worst_sing, zero_unres = 0.0, 0.0, 0
    n_sing = 0
    for i in range(draws):
        J = int(rng.integers(1, 6))
        r = J if i % 2 == 0 else int(rng.integers(1, J + 1))
        A = rng.standard_normal((J, r))
        Lam = A @ A.T
        cf = erm.prop_c4_closed_form(Lam)
        v = erm.prop_c4_inf(Lam, restrict_to_range=True)
        if r == J:
            worst_full = max(worst_full, abs(v / cf - 1))
        else:
            n_sing += 1
            worst_sing = max(worst_sing, abs(v / cf - 1))
            zero_unres += erm.prop_c4_inf(Lam, restrict_to_range=False) == 0.0
    return [Check("C.4", "Proposition C.4", "max relative gap, inf over Ω^c of xᵀΛ⁺x/2 vs 1/(2 max Λ_kk), Λ invertible",
                  "0", f"{worst_full:.1e}", bool(worst_full < 1e-9), "1e-9"),
            Check("C.4", "Proposition C.4 (restricted to range Λ)", f"same, singular Λ ({n_sing} draws)", "0",
                  f"{worst_sing:.1e}", bool(worst_sing < 1e-9), "1e-9"),
            Check("C.4", "Proposition C.4 as printed (erratum)", f"singular Λ ({n_sing} draws): x over all of Ω^c",
                  "inf = 1/(2 max Λ_kk)", f"inf = 0 in {zero_unres}/{n_sing} draws", bool(zero_unres == 0),
                  "", "erratum confirmed: a null vector of Λ scaled into Ω^c has cost 0; restricting x to range(Λ) "
                  "(as the proof of Prop. C.3 requires) gives the claimed value", True)]


__all__ = ["Check", "tc01", "tc02", "tc03", "tc04", "tc05", "tc06", "tc07", "tc08", "tc09", "tc10", "tc11", "tc12",
           "tc13", "tc14", "tc16", "lemma_b1_random", "lemma_b2_random", "random_erm_problem", "erm_bound_random",
           "prop_c4_random"]
