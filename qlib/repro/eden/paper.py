"""The values and settings printed in paper 002 ({cite}`vargaftik2022eden`), typed once.

Every constant names the section, figure or appendix it is printed in. Nothing here is computed.
"""

from __future__ import annotations

#: §3, Example 1: the 1-bit Lloyd–Max centroid √(2/π) and the vNMSE limit (= DRIVE)
EXAMPLE1 = {"centroid": 0.79788, "vnmse": 0.571}

#: §3, Example 2: 𝓘_2's threshold, centroids, cell probability, E[Q²], vNMSE limit
EXAMPLE2 = {"threshold": 0.9816, "inner": 0.45278, "outer": 1.51042, "prob_inner": 0.33685,
            "outer_prob": 0.16315, "E_Q2": 0.88228, "vnmse": 0.134, "gain_over_b1": 4.0}

#: §4.1: b = 1.5 with shared coins, b = 1.5 as two halves, and b = 0.1 (Corollary 4.2)
SEC41 = {"mixture_1.5": 0.317, "halves_1.5": 0.352, "subbit_0.1": 14.707}

#: §4.3: entropies, the 9-value Lloyd–Max quantizer, Δ_3, 𝓘_Δ3 and the ECVQ result at b = 3
SEC43 = {"entropy_I2": 1.91, "entropy_lm9": 2.98, "lm9_vs_I3_pct": 20.0, "vnmse_I3": 0.03572, "delta3": 0.5224,
         "vnmse_ee3": 0.022741, "ee3_vs_lm9_pct": 20.0, "ee3_vs_I3_pct": 36.0, "ecvq_b3": 0.02274}

#: Appendix G.1 (Figure 4): 𝓘_Δb needs "at most 0.25 bits more" than the rate–distortion bound;
#: without entropy coding EDEN needs "less than one bit more"
APP_G1 = {"ee_gap_bits": 0.25, "no_ee_gap_bits": 1.0}

#: §1: "more than 67 million coordinates within 61 ms" (RTX 3090, Appendix I.1)
INTRO_SPEED = {"coordinates": 67_000_000, "ms": 61.0, "device": "NVIDIA GeForce RTX 3090"}

#: §5.2: vectors per point of Figure 2 (and Figure 7, Appendix I.1)
FIG2_TRIALS = 100
#: Appendix I.1, Figure 8: ResNet-18 size, clients, repetitions per point
FIG8 = {"d": 11_511_784, "clients": 10, "reps": 100}
#: Appendix I.4, Figure 11: the dimension
FIG11_D = 2**19
#: Appendix H: the small dimension where one RHT is "slightly higher" than the theory
APP_H_SMALL_D = 16

#: Appendix D.2: the lemmas' numeric constants (Lemma D.6: E[(zQ(z))²] ≤ 3; Lemma D.7: E[Q(z)²] ≥ 0.1)
LEMMA_D6_BOUND = 3.0
LEMMA_D7_BOUND = 0.1
