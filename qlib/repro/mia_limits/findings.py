"""Findings of paper 003 (fundamental limits of membership inference): its claims, the ledger rows that
test them, and the causes of the rows that differ (:mod:`qlib.repro.findings`).

Rows come from ``chapters/mia-limits/01..03`` (claims modules :mod:`.theory`, :mod:`.overfitting`,
:mod:`.mnist`) and, for Theorem 3.1 and Corollary 5.4.1, from the practical attacks of
``chapters/attacks/01`` (their ``paper`` is 003; the rows of that chapter on paper 001 are written
``Theorem 3.1 of paper 001 …`` and are excluded by the patterns below).

Errata (:data:`.theory.ERRATA`) and the claims they touch: 003-E1 (Eq. 21–23 swap the densities) is in
the proof of Theorem 3.1, whose statement holds (:data:`CLAIMS` 003-C2); 003-E2/E3 are in the proof and
the index range of Corollary 5.4.1, whose constant holds on the grid (003-C11); 003-E4 is in the proof of
Remark 5.1, whose sample size is sufficient (003-C8); 003-E5 is a step of the proof of Proposition B.1
(unproven, not refuted: 003-C24 is left untested); 003-E6/E7 are the §6.2 text against Table 1, and E7
makes the text's "2% for the other discretizations" wrong by the paper's own numbers (003-C21, the only
``erratum_refutes``).
"""

from __future__ import annotations

from qlib.repro.findings import Cause, Claim, Select

__all__ = ["CLAIMS", "ROW_CAUSES", "STAND_INS", "SUMMARY"]

_TH = "mia-limits/01-*"
_OV = "mia-limits/02-*"
_MN = "mia-limits/03-*"
_AT = "attacks/01-*"

#: Theorem 3.1 rows of chapter 01 (the inequality, the corrected Eq. 23, the games, the printed Eq. 23)
_THM31 = Select(_TH, where=r"^(?:Theorem 3\.1(?: \(|$)|Eq\. 23)")
#: Theorem 3.1 tested by practical attacks: the Bayes attack attains ½ + Δ_n/2, no attack exceeds it
_THM31_ATTACKS = Select(_AT, where=r"^Theorem 3\.1 \((?:the Bayes attack's accuracy|every attack)\)")
_COR541 = Select(_TH, where=r"^Corollary 5\.4\.1 \((?:upper|lower|limit|condition)\)|^Corollary 5\.4\.1, ")
_COR541_ATTACKS = Select(_AT, where=r"Corollary 5\.4\.1")
_EX45 = Select(_TH, where=r"^Example 4\.5 / Theorem 4\.3\(ii\)")
_FIG1_END = Select(_OV, where=r"^Figure 1", quantity=r"at the last iteration")
_FIG1_TIME = Select(_OV, where=r"^Figure 1", quantity=r"iteration 500|first iteration")
_FIG1_EQ6 = Select(_OV, where=r"^Figure 1", quantity=r"^Eq\. 6")

CLAIMS: tuple[Claim, ...] = (
    Claim("003", "003-C1",
          quote="we first derive the statistical quantity that governs the effectiveness and success of such attacks",
          where="Abstract; §1.1 (Identification of Crucial Statistical Quantity)",
          rows=(_THM31_ATTACKS, Select(_TH, where=r"^Theorem 3\.1 \((?:game|Gaussian mean, game)\)")),
          headline="The total-variation distance Δ_n between a model with a training point and a model with a fresh "
                   "point fixes the best membership-inference accuracy, and practical attacks on toys with a known "
                   "Δ_n stay at or below it.",
          weight=10,
          short="The total-variation quantity Δ_n governs how well any membership attack can do"),
    Claim("003", "003-C2",
          quote="Theorem 3.1 (Key bound on accuracy). Suppose P is any distribution and A is any algorithm.",
          where="§3, Theorem 3.1 (proof: Appendix E, Eq. 20–23)",
          rows=(_THM31,), erratum_refutes=False, weight=8,
          short="Every attack's accuracy is bounded through Δ_n, so security is at least 1 − Δ_n"),
    Claim("003", "003-C3",
          quote="loss-based MIAs can achieve almost perfect inference, as illustrated in Section 6 by numerical experiments",
          where="§1.1 (Lower Bounds for Overfitting Algorithms); §7 (\"overfitting indeed induces the possibility "
                "of highly successful attacks\")",
          rows=(_EX45, _FIG1_END),
          headline="Overfitting makes membership inference nearly perfect: an interpolating regressor gives "
                   "a loss-threshold attack close to certainty.",
          weight=8,
          short="When an algorithm overfits, loss-based attacks infer membership almost perfectly"),
    Claim("003", "003-C4",
          quote="Proposition 4.2. For some fixed $\\varepsilon \\in \\mathbb{R}^+$ and $\\alpha \\in (0, 1)$, "
                "let $\\eta \\coloneqq \\varepsilon \\alpha$",
          where="§4, Proposition 4.2",
          rows=(Select(_TH, where=r"^Proposition 4\.2"),), weight=3,
          short="Stopping once the training loss is below εα makes an algorithm (ε, 1 − α)-overfitting"),
    Claim("003", "003-C5",
          quote="Theorem 4.3 (Overfitting induces lack of security).",
          where="§4, Theorem 4.3 (i) Eq. 6 and (ii) Eq. 7",
          rows=(_EX45, _FIG1_EQ6), weight=7,
          short="Overfitting bounds Δ_n from below, and Δ_n tends to 1 as the training loss vanishes"),
    Claim("003", "003-C6",
          quote="the security of least squares linear regression estimator is constant 0 up to n = d",
          where="§5.1, after Example 5.3 (with Example 4.5)",
          rows=(_EX45, Select(_TH, where=r"^Example 5\.3 \(least squares")), weight=4,
          short="Least-squares regression has zero security up to n = d, then rises towards 1"),
    Claim("003", "003-C7",
          quote="Suppose that the distribution of $L(z_1)$ has a non zero absolutely continuous part with respect to "
                "the Lebesgue measure, and a third finite moment.",
          where="§5.1, Theorem 5.1 (Eq. 9; proof with Proposition G.1, Appendix G)",
          rows=(Select(_TH, where=r"^Theorem 5\.1|^Proposition G\.1"),), weight=6,
          short="Under density and moment conditions, Δ_n ≤ c/√n + √d/(2n) for empirical means"),
    Claim("003", "003-C8",
          quote="a sufficient condition to ensure $Sec_n(P, A)$ to be made larger than $1 - \\varepsilon$, is to have "
                "$\\Delta_n(P, A) \\leq \\varepsilon$ which holds as soons as $n \\geq \\Omega(\\varepsilon^{-2})$",
          where="§5.1, Remark 5.1 (proof: Appendix G)",
          rows=(Select(_TH, where=r"^Remark 5\.1"),), weight=4,
          short="For empirical means, order 1/ε² samples make security exceed 1 − ε"),
    Claim("003", "003-C9",
          quote="We prove that Δ_n(P, A) is bounded from above by a constant, determined by (P, A), multiplied by n^{-1/2}.",
          where="§1.1 (Precise Upper Bounds for Empirical Mean-Based Algorithms)",
          rows=(Select(_TH, where=r"^Theorem 5\.1 \((?:Eq\. 9, explicit|rate)\)"),), weight=5,
          short="For empirical-mean algorithms, Δ_n is at most a constant fixed by (P, A) over √n"),
    Claim("003", "003-C10",
          quote="where the max is taken over all algorithms and is reached on algorithms of the form",
          where="§5.2, Theorem 5.4 (Eq. 11; Lemma G.2)",
          rows=(Select(_TH, where=r"^Theorem 5\.4"),), weight=7,
          short="The worst-case Δ_n on discrete data is a binomial sum, reached by injective maps"),
    Claim("003", "003-C11",
          quote="Then there exists a universal constant $c \\ge 0.29$ such that",
          where="§5.2, Corollary 5.4.1 (proof: Appendix G)",
          rows=(_COR541, _COR541_ATTACKS), erratum_refutes=False,
          headline="On discrete data no algorithm leaks more than the data's diversity constant C(P) allows, "
                   "shrinking as the inverse square root of the sample size, and the worst algorithm leaks that "
                   "much up to a universal constant.",
          weight=9,
          short="On discrete data the worst-case Δ_n lies between c·C(P)/√n, c ≥ 0.29, and C(P)/(2√n)"),
    Claim("003", "003-C12",
          quote="a sufficient condition to ensure security larger than $1 - \\varepsilon$ is to have at "
                "$n \\ge (C(P)/2\\varepsilon)^2$",
          where="§5.2, after Corollary 5.4.1",
          rows=(Select(_TH, where=r"^Corollary 5\.4\.1 \(sample size\)"),), weight=5,
          short="On discrete data, n ≥ (C(P)/2ε)² samples make security exceed 1 − ε"),
    Claim("003", "003-C13",
          quote="We show in Appendix C that it is comparable both to the Gini-Simpson and the Shannon Entropy.",
          where="§5.2; Appendix C (Lemmas C.4, C.5, Eq. 17–19)",
          rows=(Select(_TH, where=r"^(?:Lemma C\.[45]|Eq\. 1[789])"),), weight=3,
          short="The diversity C(P) is comparable to the Gini–Simpson index and the Shannon entropy"),
    Claim("003", "003-C14",
          quote="we still have convergence to 0 of $\\Delta_n(P, \\mathcal{A})$ but at an arbitrarily slow rate",
          where="Appendix C, Lemma C.1",
          rows=(Select(_TH, where=r"^Lemma C\.1"),), weight=2,
          short="With infinite C(P), Δ_n still tends to 0, but arbitrarily slowly"),
    Claim("003", "003-C15",
          quote="This could informally mean that discretizing/quantizing an algorithm improves its security.",
          where="Appendix C, after Lemma C.2 (with Lemma C.3)",
          rows=(Select(_TH, where=r"^(?:Lemma C\.[23]|Theorem 5\.4 \(maximality\))"),), weight=4,
          short="Quantizing an algorithm keeps its Δ_n below the worst case, so it may improve security"),
    Claim("003", "003-C16",
          quote="we still reach 100% training accuracy after 2500 iterations whereas the validation accuracy "
                "(for $\\varepsilon = 10^{-6}$) stabilizes at near 0%",
          where="§6.1, Figure 1",
          rows=(_FIG1_END,), weight=6,
          short="After 2500 iterations all training losses are ≤ 1e-6, almost no validation loss is"),
    Claim("003", "003-C17",
          quote="it would occur only if at least 2000 iterations have been done during the training procedure",
          where="§6.1, Figure 1",
          rows=(_FIG1_TIME,), weight=3,
          short="A near-perfect loss-threshold attack needs at least 2000 training iterations"),
    Claim("003", "003-C18",
          quote="We then numerically computed the quantity C(P) for each discretization.",
          where="§6.2, Table 1 (C(P) and the Δ_n ≤ C(P)/(2√n) column)",
          rows=(Select(_MN, where=r"^Table 1", quantity=r"^(?:C\(P\)|Δ_n bound)"),), weight=5,
          short="Table 1 gives C(P) and the bound C(P)/(2√n) on Δ_n for each MNIST discretization"),
    Claim("003", "003-C19",
          quote="Table 1: Shows the accuracy of classifiers on MNIST dataset.",
          where="§6.2, Table 1 (accuracies)",
          rows=(Select(_MN, where=r"^Table 1$", quantity=r"^accuracy"),),
          untested="the paper does not say how a discretised image is formed, which test set is used nor how many "
                   "repetitions give its ± values, so its accuracies are shown beside ours as not comparable",
          weight=3,
          short="Table 1 reports classifier accuracy on raw and discretized MNIST"),
    Claim("003", "003-C20",
          quote="smaller discretization (smaller C(P)) will lower simultaneously the accuracy and the quantity",
          where="§6.2, text after Table 1",
          rows=(Select(_MN, where=r"^§6\.2 / Table 1"),), weight=5,
          short="A coarser discretization (smaller C(P)) lowers both accuracy and Δ_n"),
    Claim("003", "003-C21",
          quote="a loss of almost 2.5% of accuracy for the discretization having C(P) = 4.30, and a loss of 2% for "
                "the other discretizations",
          where="§6.2, text after Table 1 (against Table 1)",
          rows=(Select(_MN, where=r"^§6\.2 text vs Table 1"),), erratum_refutes=True,
          cause=Cause("paper", "The text's raw accuracy minus Table 1's accuracy at the largest C(P) is a loss far below "
                               "the text's stated loss for that discretisation (erratum 003-E7), and the text's raw "
                               "accuracy is itself not Table 1's (erratum 003-E6).",
                      (Select(_MN, where=r"^§6\.2 text vs Table 1 \(erratum 003-E[67]\)$",
                              ),)),
          weight=2,
          short="Discretizing MNIST loses almost 2.5 % accuracy at C(P) = 4.30 and 2 % otherwise"),
    Claim("003", "003-C22",
          quote="We established that the rates of convergence consistently follow an order of $n^{-1/2}$.",
          where="§7 (Summary and Discussion)",
          rows=(Select(_TH, where=r"^(?:Theorem 5\.1 \(rate\)|Corollary 5\.4\.1 \(limit\))"),
                Select(_AT, where=r"^Theorem 5\.4 / Corollary 5\.4\.1 \(rate\)")), weight=5,
          short="The rates of convergence of Δ_n follow the order 1/√n throughout"),
    Claim("003", "003-C23",
          quote="Interestingly, our findings indicate that discretizing the data might enhance the algorithm's security.",
          where="Abstract; §7 (\"highlights the use of data quantization to ensure privacy by design\")",
          rows=(Select(_TH, where=r"^Corollary 5\.4\.1 \(upper\)|^Theorem 5\.4 \(maximality\)"),
                Select(_AT, where=r"^Corollary 5\.4\.1 \(upper bound\)"),
                Select(_MN, where=r"^Table 1", quantity=r"^(?:C\(P\)|Δ_n bound)")), weight=7,
          short="Discretizing the data may enhance an algorithm's security"),
    Claim("003", "003-C24",
          quote="we prove that $\\Delta_n(P, \\mathcal{A})$ is lower bounded by the probability of the data to be not "
                "far from orthogonality",
          where="§7; Appendix B, Proposition B.1",
          untested="no 2-ReLU classifier is trained, so Δ_n ≥ P(E) is not checked; the book only estimates P(E) "
                   "by Monte Carlo, finding the proof's explicit P(E) ≥ 1 − s^(3 − ln(s)/4) false under the printed "
                   "condition on n (erratum 003-E5: the explicit bound is unproven there, not refuted) and true "
                   "under a corrected one",
          weight=2,
          short="For 2-ReLU classifiers, Δ_n is at least the chance that the data are near-orthogonal"),
)

#: (Select, Cause) for the differing rows of the mia-limits chapters, first match wins.
#:
#: Every judged row of chapters 01 and 03 passes at the smoke profile and in the archived paper-profile
#: runs; chapter 02 at the paper's size passes every row but the final-iteration and timing rows below. A
#: differing row elsewhere reads ``unexplained`` until an experiment explains it.
ROW_CAUSES: tuple[tuple[Select, Cause], ...] = (
    (Select(_OV, where=r"^Figure 1", quantity=r"^(?:train fraction with loss ≤ 1e-6 at the last iteration|Eq\. 6 lower "
                                              r"bound on Δ_n \(ε = 1e-6\) at the last iteration)$"),
     Cause("method",
           "The paper shows one run from an initialisation it does not state (width, optimiser and iterations as "
           "printed); the row takes the worst of our runs. Run by run, an initialisation that lets every training "
           "point reach the threshold meets the paper's reading, so the row's failure comes from the initialisation "
           "drawn, not from the setting.",
           (Select(_OV, where=r"^Figure 1", quantity=r"^{quantity}, (?:seed|run) \d+$"),))),
    (Select(_OV, where=r"^Figure 1", quantity=r"^first iteration"),
     Cause("unexplained",
           "At the paper's size the runs that reach the threshold on the training points do so well before the "
           "iterations the paper reads off its Figure 1, and a run that never reaches it is outside the window too; "
           "no experiment yet varies the unstated initialisation scheme or the batching, which could move it.")),
)

#: the stand-ins each chapter's inputs include: none (the simulations draw the paper's own laws; MNIST is
#: MNIST; the unstated choices — initialisation, the discretised-image protocol — are named in SUMMARY)
STAND_INS: dict = {}

SUMMARY = {
    "paper": "003",
    "title": "Fundamental limits of membership inference attacks on machine learning models",
    "scope": ("The book checks every result of the paper that can be computed exactly — Theorem 3.1's bounds by "
              "brute force over all attacks and by playing the attack game, Theorem 5.4 and Corollary 5.4.1 by "
              "enumeration and binomial sums, Theorem 5.1 by exact Gaussian integrals, the Appendix C lemmas on "
              "random laws — and tests Theorem 3.1 and Corollary 5.4.1 again with practical attacks on toys whose "
              "Δ_n is known. It reruns both simulations of §6: the overfitting regression of Figure 1 and the "
              "discretised MNIST of Table 1, reproducing the diversity constants C(P) and the Δ_n column. "
              "Nine errata of the printed statements, proofs and text are listed, five of them confirmed by computation."),
    "hard": ("Δ_n of a trained neural network cannot be computed, so the simulations only give lower bounds "
             "through a concrete attack; Table 1's accuracies cannot be compared because the paper does not say "
             "how a discretised image is formed, which test set is used, nor how many repetitions give its ± "
             "values."),
    "stand_ins": (
        "Table 1's accuracies are measured under our reading of the protocol: each image replaced by its "
        "cluster centroid with its label kept, tested on the 10 000 MNIST test images.",
        "Figure 1's network uses Xavier-normal weights, PyTorch-default biases and full-batch Adam, which the "
        "paper does not state.",
        "Theorem 5.1 is checked on the Gaussian empirical mean only, with the explicit constant m_1/2 of our "
        "own in place of the paper's unspecified c_{L,P}.",
    ),
}
