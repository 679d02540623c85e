"""The values and settings printed in paper 002 ({cite:p}`vargaftik2022eden`), typed once.

Every constant names the section, figure, table or appendix it is printed in, with the page's own
precision; nothing here is computed, and nothing here is a choice of ours (our run sizes, tolerances and
stand-ins are in the driver and claims modules, where the chapter passes them). Each record is a module
constant (a tuple, a number, or a dict of them) and is never modified.
"""

from __future__ import annotations

__all__ = ["EXAMPLE1", "EXAMPLE2", "SEC41", "SEC43", "APP_G1", "INTRO_SPEED", "FIG2_TRIALS", "FIG2_METHODS",
           "FIG8", "FIG8_METHODS", "FIG11_D", "APP_H_SMALL_D", "LEMMA_D6_BOUND", "LEMMA_D7_BOUND", "PAPER_TABLE1",
           "TABLE1_TEXT", "APP_I2", "FIG3", "FIG10", "FIG12", "FIG13", "FIG14", "LEARNING_METHODS", "PAPER_ENCODE_SHARE"]

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
#: §5.2, Figure 2's legend: the compared fixed-length methods
FIG2_METHODS = ("EDEN", "Hadamard+SQ", "Kashin+SQ", "QSGD")
#: Appendix I.1, Figure 8: ResNet-18 size, clients, repetitions per point
FIG8 = {"d": 11_511_784, "clients": 10, "reps": 100}
#: Appendix I.1, Figure 8's legend: the compared methods
FIG8_METHODS = ("EDEN", "Hadamard+SQ", "Kashin+SQ", "QSGD", "Count-Sketch")
#: Appendix I.4, Figure 11: the dimension
FIG11_D = 2**19
#: Appendix H: the small dimension where one RHT is "slightly higher" than the theory
APP_H_SMALL_D = 16

#: Appendix D.2: the lemmas' numeric constants (Lemma D.6: E[(zQ(z))²] ≤ 3; Lemma D.7: E[Q(z)²] ≥ 0.1)
LEMMA_D6_BOUND = 3.0
LEMMA_D7_BOUND = 0.1

# ---- §5.3 and Appendix I.2–I.7: distributed and federated learning ------------------------------
#: Table 1 (App. I.2), verbatim: the Adam-server FedAvg hyperparameters of Reddi et al. 2021
PAPER_TABLE1 = {
    "EMNIST": {"clients_per_round": 10, "rounds": 1500, "batch_size": 20, "client_lr": 10**-1.5,
               "server_lr": 10**-2.5, "adam_eps": 1e-4},
    "Shakespeare": {"clients_per_round": 10, "rounds": 1200, "batch_size": 4, "client_lr": 1.0,
                    "server_lr": 1e-2, "adam_eps": 1e-3},
}
#: Table 1 (App. I.2) as printed (powers of ten), per task: clients per round, rounds, batch size,
#: client lr, server lr, Adam's ε
TABLE1_TEXT = {
    "EMNIST": ("10", "1500", "20", "10^-1.5", "10^-2.5", "10^-4"),
    "Shakespeare": ("10", "1200", "4", "1", "10^-2", "10^-3"),
}

#: Appendix I.2: the federated tasks — EMNIST "749,068 handwritten characters … among their 3400 writers",
#: a CNN "with ≈1.2M parameters"; Shakespeare "18,424 lines of text … among the respective 715 speakers",
#: "a standard LSTM … with ≈820K parameters"
APP_I2 = {"EMNIST": {"examples": 749_068, "clients": 3400, "params": 1_200_000},
          "Shakespeare": {"lines": 18_424, "clients": 715, "params": 820_000}}
#: Figures 3/9 (§5.3): budgets (rows of the figure), methods, rolling-mean window (rounds)
FIG3 = {"bits": (0.1, 0.5, 1, 2, 4), "methods": ("Float32", "Hadamard+SQ", "Kashin+SQ", "EDEN"), "window": 200}
#: Figure 10 (App. I.3): 20 clients, 100 rounds of distributed gradient descent
FIG10 = {"clients": 20, "rounds": 100, "bits": tuple(range(1, 9)),
         "methods": ("EDEN", "Hadamard+SQ", "Kashin+SQ", "QSGD")}
#: Figure 12 (App. I.5): 10 clients, server learning rate 0.1, b = 1..8
FIG12 = {"clients": 10, "lr": 0.1, "bits": tuple(range(1, 9)), "methods": ("EDEN", "Hadamard+SQ", "Kashin+SQ", "QSGD")}
#: Figure 13 (App. I.6): 10 i.i.d. clients, batch 128, one local step, SGD; window 60 rounds
FIG13 = {"clients": 10, "batch_size": 128, "local_steps": 1, "window": 60,
         "CIFAR-10": {"model": "ResNet-9", "client_lr": 0.1, "bits": 0.1},
         "CIFAR-100": {"model": "ResNet-18", "client_lr": 0.05, "bits": 0.5}}
#: Figure 14 (App. I.7): 50 clients, 10 per round, 5 local steps, batch 128, b = 0.05; window 30
FIG14 = {"clients": 50, "clients_per_round": 10, "local_steps": 5, "batch_size": 128, "bits": 0.05, "window": 30,
         "MNIST": {"model": "LeNet-5", "client_lr": 0.05, "partition": "one class per client"},
         "CIFAR-10": {"model": "ResNet-9", "client_lr": 0.1, "partition": "i.i.d."}}
#: Figures 13 and 14 (App. I.6–I.7): the compared methods of the learning figures (the paper's §5 baselines)
LEARNING_METHODS = ("Float32", "EDEN", "Hadamard+SQ", "Kashin+SQ", "QSGD")
#: §5.3 / App. I: "the encoding takes less than 1 % of the gradient computation" (GPU, the paper's runs)
PAPER_ENCODE_SHARE = 0.01
