"""Findings of paper 004 (RQP-SGD, Feng & Venkitasubramaniam): its claims, the ledger rows that test
them, and the cause of every kind of differing row (:mod:`qlib.repro.findings`)."""

from __future__ import annotations

from ..findings import Cause, Claim, Select

__all__ = ["CLAIMS", "ROW_CAUSES", "SUMMARY"]

_TH = "rqp-sgd/01-*"
_T1 = "rqp-sgd/02-*"
_F2 = "rqp-sgd/03-*"
_ATT = "attacks/04-*"

#: Table 1's gap probe: the experiment the Table 1 rows' causes point to
_GAP = "rqp-sgd/02, 'What moves the gap: the split and the baselines' noise' (archived at the paper's scale)"

#: Theorem 1's erratum: the evidence the privacy rows' cause points to
_ERRATUM = ("rqp-sgd/01, 'Theorem 1's per-step bound fails inside Algorithm 1's range': erratum rows (smallest "
            "counterexample b = 4, q = 0.1, σ = 0.1: printed ε_t = 0.4925, one coordinate loses 0.5108 replace-one, "
            "0.4982 add-remove) and the certified corrected bound")


def _c(id_, quote, where, rows=(), **kw) -> Claim:
    return Claim("004", id_, quote, where, tuple(rows), **kw)


CLAIMS = (
    _c("004-C1", "RQP-SGD can achieve better utility performance than implementing DP-SGD in machine learning with "
       "quantized parameters", "abstract / contributions",
       [Select(_T1, r"^Table 1$", r"RQP-SGD better than Proj-DP-SGD")], weight=6),
    _c("004-C2", "RQP-SGD achieves a 35% higher accuracy on the Diagnostic dataset", "abstract / contributions",
       [Select(_T1, r"^Table 1 / §4$", r"SVM: RQP-SGD median gain")], weight=9,
       headline="RQP-SGD's large accuracy gain over deterministic projection on the Diagnostic SVM is the paper's "
                "headline result."),
    _c("004-C3", "while maintaining a (1.0,0)", "abstract / contributions; §4 (Table 1 at (1, 0)-DP)",
       [Select(_TH, r"^Figure 2\(c\)$", r"ε actually spent"), Select(_TH, r"^Table 1 \(MNIST\)$", r"ε actually spent")],
       weight=8, headline="The pure differential-privacy guarantee at which the accuracy is reported is what makes "
                          "the comparison with the approximate-DP baselines meaningful."),
    _c("004-C4", "The differential privacy guarantee of RQP-SGD is rigorously established in Theorem 1",
       "§3, Theorem 1 (per-step ε_t, composed to T·(m/n)·ε_t)",
       [Select(_TH, r"^Theorem 1$", r"loss|counterexample"), Select(_TH, r"^Figure 2\(c\)$", r"operating point")],
       erratum_refutes=True, weight=10,
       headline="The per-step privacy loss of the privacy theorem is the foundation of every privacy claim of the paper."),
    _c("004-C5", "there exists mini-batch sampling rate", "§3, Theorem 1 (existence for every ε > 0)",
       [Select(_TH, r"^Theorem 1$", r"every ε > 0 met")], weight=3),
    _c("004-C6", "we provide the utility guarantee of Algorithm 2", "§3, Theorem 2",
       [Select(_TH, r"^Theorem 2, proof step 1$")], weight=5),
    _c("004-C7", "highlighting the influence of the coefficient", "§3, order of E_Q after Theorem 2",
       [Select(_TH, r"^Theorem 2 \(order claim\)$")], weight=2),
    _c("004-C8", "RQP-SGD has lower utility bounds than Proj-DP-SGD at equivalent privacy levels", "§3, Figure 1(b)",
       [Select(_TH, r"^Figure 1\(b\)")], weight=5),
    _c("004-C9", "can result in a higher utility bound", "§3, Figure 1(a)", [Select(_TH, r"^Figure 1\(a\)$")], weight=3),
    _c("004-C10", "It clearly demonstrates that RQP-SGD achieves better utility performance than Proj-DP-SGD",
       "§4 Results, Table 1", [Select(_T1, r"^Table 1$", r"RQP-SGD better than Proj-DP-SGD|Non-Private ≥ DP-SGD")],
       weight=6),
    _c("004-C11", "the SVM classifier using RQP-SGD leads to 35.84% median test accuracy gain", "§4 Results, Table 1",
       [Select(_T1, r"^Table 1 / §4$"), Select(_T1, r"^Table 1$", r"spread larger")], weight=7),
    _c("004-C12", "We report median and standard deviation values over 10 runs", "Table 1 (caption and cells)",
       [Select(_T1, r"^Table 1$", r"median acc\.")], weight=5),
    _c("004-C13", "decreasing quantization probability can enhance privacy while allowing less noise",
       "§4, Figure 2 (blue curves)", [Select(_F2, r"^Figure 2\([a-d]\)$", r"q rises with σ")], weight=3),
    _c("004-C14", "leads to degraded test accuracy", "§4, Figure 2 (red curves)",
       [Select(_F2, r"^Figure 2\([a-d]\)$", r"largest q exceeds")], weight=4),
    _c("004-C15", "the test accuracy decreases to around 62.5%", "§4, Figure 2",
       [Select(_F2, r"^Figure 2$", r"^the text's example")], weight=3),
    _c("004-C16", "attributed more to the randomness from quantization than from noise addition", "§4, Figure 2",
       untested="no experiment separates the accuracy lost to quantization randomness from that lost to noise "
                "(Figure 2 moves q and σ together along Theorem 1's curve)", weight=2),
    _c("004-C17", "the standard deviation of test accuracy is higher when the projection randomness coefficient",
       "§4, Figure 2", [Select(_F2, r"^Figure 2\([a-d]\)$", r"std of accuracy")], weight=2),
    _c("004-C18", "the test accuracy does not increase as increasing the quantization bits", "§4, impact of bits",
       [Select(_F2, r"^§4 \(bits\)$")], weight=3),
    _c("004-C19", "enables the reduction of noise to improve utility", "§5 Conclusion",
       [Select(_TH, r"^Figure 1\(b\)"), Select(_T1, r"^Table 1$", r"RQP-SGD better than Proj-DP-SGD")], weight=4),
)

ROW_CAUSES = (
    # chapter 01: the printed ε_t below the exact one-step loss (inside Algorithm 1's range)
    (Select(_TH, r"^Theorem 1$", r"ε_t ≥ loss"),
     Cause("paper", "Theorem 1's proof bounds the numerator by a finite cell centred on f_sgd and the denominator at "
                    "distance M + C with C = M − ηρ, while eq. (9)'s end cells are semi-infinite and f_sgd ranges to "
                    "M + ηρ, so the printed ε_t is below the exact loss of one coordinate", _ERRATUM)),
    (Select(_TH, r"^Figure 2\(c\)$", r"operating point"),
     Cause("paper", "q is solved from Theorem 1's ε_t, which is below the exact one-step loss (the erratum), so at "
                    "these operating points one coordinate already leaks more than ε_t", _ERRATUM)),
    (Select(_TH, r"^(?:Figure 2\([a-d]\)|Table 1 \(MNIST\))$", r"ε actually spent"),
     Cause("paper", "the runs calibrate q with Theorem 1's ε_t, which is below the exact one-step loss, so composed "
                   "as the paper composes they spend more than the stated budget", _ERRATUM)),
    (Select(_TH, r"^Figure 1\(b\), m = "),
     Cause("method", "Figure 1 does not state m; with our m = 1 RQP-SGD's bound is below Proj-DP-SGD's, with "
                     "m = 10 σ must grow by m and E_N = ησ²d (no η/m scaling) puts it above",
           "rqp-sgd/01, Figure 1: the m-sensitivity table (bound 32.35 vs 7.24 at ε = 1, q = 0.95, m = 10)")),
    # the attack of attacks/04 against RQP-SGD's stated budget
    (Select(_ATT, r"RQP", verdicts=("disagrees",)),
     Cause("paper", "the budget RQP-SGD states comes from Theorem 1's ε_t, which the exact one-step loss exceeds, "
                   "so an attack can prove more than the stated ε", _ERRATUM)),
    # chapter 02: Table 1 at the paper's scale (10 runs; MNIST with every example, m = 64, η = 1, T = 938)
    (Select(_T1, r"^Table 1$", r"^Diagnostic \((?:LogReg\): (?:Non-Private|DP-SGD|Proj-DP-SGD)|SVM\): (?:Non-Private|"
                               r"DP-SGD)), median acc"),
     Cause("method", "The paper does not state its Diagnostic split; ours is one fixed 80/20 split. With a new split per "
                     "run (the gap probe, the same 10 runs) this cell comes within 2 pp of the paper: LogReg "
                     "Non-Private 96.49 (paper 97.37), DP-SGD 95.61 (96.92), Proj-DP-SGD 93.42 (94.30); SVM "
                     "Non-Private 97.37 (98.68), DP-SGD 94.74 (96.49).",
           _GAP)),
    (Select(_T1, r"^Table 1$", r"^MNIST \(LogReg\): RQP-SGD, median acc"),
     Cause("finding", "With the paper's §4 settings (m = 64, η = 1, M = 0.3, b = 4, clip 0.45, T = 938) and at its scale, "
                      "Theorem 1 at ε = 1 allows q = 1 only from σ ≥ 6.75, a per-step noise of 0.1055 per weight "
                      "against a level spacing of 0.040, and every σ of the sweep leaves RQP-SGD near chance (best "
                      "14.11 % at σ = 7): the printed 84.81 % is out of reach under the paper's own theorem and settings.",
           "rqp-sgd/02-table1, the MNIST paragraph and the σ sweep (archived at the paper's scale)")),
    (Select(_T1, r"^Table 1"),
     Cause("finding", "With the paper's method and at its scale neither unstated choice the chapter tests explains these "
                      "rows (10 runs, RQP σ as tuned): a new split per run lifts the cells by 1-3 pp (5/8 within 2 pp, "
                      "ours 0/8) but the SVM gain stays negative (-3.07 pp; paper +25.00); the baselines' σ from the "
                      "paper's Gaussian formula per step (z = 5.72 vs the accountant's 1.47) drops SVM Proj-DP-SGD to "
                      "75.88 % (std 21.75; paper 69.74, 18.37) and gives a +11.84 pp gain, but also drops DP-SGD to "
                      "84.21 % (paper 96.49) and LogReg Proj-DP-SGD to 80.26 % (paper 94.30): 0/8 cells within 2 pp.",
           _GAP)),
)

SUMMARY = {
    "paper": "004",
    "title": "Randomized Quantization for Privacy in Resource Constrained Machine Learning at-the-Edge and "
             "Federated Learning (RQP-SGD)",
    "scope": "All of the paper's theory is recomputed: Algorithm 1's law, Theorem 1's per-step ε_t against the exact "
             "one-step loss, Theorem 2's bound and Figure 1. Table 1 and Figure 2 are rerun on Diagnostic "
             "(scikit-learn's copy of UCI WDBC) with logistic regression and a linear SVM, and on MNIST where its "
             "files are present (a reduced MNIST otherwise, not judged).",
    "hard": "Theorem 1's printed ε_t is below the exact privacy loss of a single coordinate for q inside "
            "Algorithm 1's range, under either adjacency, so the privacy the paper states is not what its runs "
            "spend. Table 1's σ for RQP-SGD is unstated, so we tune it on the test set as the paper appears to.",
    "stand_ins": ("Diagnostic is scikit-learn's bundled Breast Cancer Wisconsin data, split 80/20 with one fixed seed.",
                  "Figure 1's unstated m, η and d are taken as 1, 1 and 30.",
                  "Figure 2's dataset and model are taken as Diagnostic with logistic regression."),
}
