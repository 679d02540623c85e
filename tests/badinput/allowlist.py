"""The one visible allow-list of the common bad-input test.

``ALLOW[(qualified name, parameter, mutation)] = reason`` declares that a callable legitimately
accepts a bad-looking value (``mutation`` is a label such as ``"nan"``/``"-1"``/``"None"``, a
category such as ``"range"``, or ``"*"`` for every mutation of that parameter).
``NOT_CALLED[qualified name] = reason`` declares a public callable the harness does not call.
Every entry carries its reason; a stale entry (no such callable or parameter) fails the test.
"""

ALLOW: dict[tuple[str, str, str], str] = {
    # ---- core: quantizers, rqn, recorder, mis, ranking, discriminator, engine, synthetic, data, devices, validation
    ("qlib.data.partition_by_class", "labels", "entry--1"):
        "class labels are arbitrary integers (a9a labels are -1/+1); only equality is used",
    ("qlib.data.partition_dirichlet", "labels", "entry--1"):
        "class labels are arbitrary integers (a9a labels are -1/+1); only equality is used",
    ("qlib.data.partition_dirichlet", "alpha", "1.5"):
        "alpha is a Dirichlet concentration (any value > 0), not a probability",
    ("qlib.repro.eden.federated.figure3_text", "alpha", "1.5"):
        "alpha is the Dirichlet concentration of the Figure 3 stand-in (any value > 0), not a probability",
    ("qlib.repro.eden.federated.figure3_standin_text", "alpha", "1.5"):
        "alpha is the Dirichlet concentration of the Figure 3 stand-in (any value > 0), not a probability",
    ("qlib.data.partition_dirichlet", "min_size", "0"):
        "min_size=0 asks for no minimum client size (documented lower bound 0)",
    ("qlib.mis.mis_from_accuracy", "acc", "ndim"):
        "elementwise: an array of accuracies of any shape",
    ("qlib.quantizers.quantize", "theta", "ndim"):
        "a parameter tensor of any shape is quantized as one vector over all its entries",
    ("qlib.quantizers.distinct_per_row", "x", "inf"):
        "±inf are ordinary values to count (NaN is rejected)",
    ("qlib.rqn.trajectory_stats", "ddof", "0"):
        "ddof=0 (biased variance) is one of the two documented choices (0 or 1)",
    ("qlib.rqn.r_q", "ddof", "0"):
        "ddof=0 (biased variance) is one of the two documented choices (0 or 1)",
    ("qlib.rqn.batched_rates", "ddof", "0"):
        "ddof=0 (biased variance) is one of the two documented choices (0 or 1)",
    ("qlib.recorder.RecorderConfig", "ddof", "0"):
        "ddof=0 (biased variance) is one of the two documented choices (0 or 1)",
    ("qlib.ranking.ranks", "values", "ndim"):
        "vectorised: ranks along axis, any number of other axes",
    ("qlib.ranking.spearman", "a", "ndim"):
        "a and b broadcast ((S, L, Q) against (1, L, Q) in rq_rank_stability)",
    ("qlib.ranking.spearman", "b", "ndim"):
        "a and b broadcast ((S, L, Q) against (1, L, Q) in rq_rank_stability)",
    ("qlib.ranking.average_runs", "x", "ndim"):
        "any shape: the average is over axis",
    ("qlib.ranking.rank_confusion", "pred_ranks", "ndim+1"):
        "documented: pooled over every leading axis of (..., L, Q)",
    ("qlib.losses.per_sample_loss", "out", "ndim+1"):
        "y broadcasts over leading dims of out ((Q, K, n) outputs of Q quantizers)",
    ("qlib.engine.TrainConfig", "epochs", "0"):
        "zero epochs is a no-op returning theta0 (an untrained reference)",
    **{(f"qlib.engine_models.{c}.{m}", p, k): "a model's method on the hot path of every epoch: NaN/inf propagate as in "
       "torch (train checks X, y and theta0 once, at its door; the kind and shape are checked here)"
       for c, ms in (("Linear", ("apply", "prepare", "unflatten", "vjp")),
                     ("MLP", ("apply", "prepare", "unflatten", "shared_loss_grad")))
       for m in ms for p in ("theta", "X", "data", "grad_out", "y", "weights") for k in ("nan", "inf")
       if p in __import__("inspect").signature(getattr(getattr(__import__("qlib.engine_models").engine_models, c), m)).parameters},
    ("qlib.engine_models.Linear.unflatten", "theta", "ndim"): "any leading shape (..., p): the views of the parameters keep it",
    ("qlib.engine_models.MLP.unflatten", "theta", "ndim"): "any leading shape (..., p): the views of the parameters keep it",
    **{("qlib.recorder.RQRecorder." + m, "theta", k): "the chunk's parameters as train hands them every epoch (no pass "
       "over them): a diverged model's non-finite validation losses stop on_chunk_end with a named error"
       for m in ("on_epoch_end", "on_chunk_end") for k in ("nan", "inf")},
    **{(f"qlib.engine_models.{c}.{m}", "theta", "ndim+1"): "documented: theta (Q, K, p), Q quantized copies of the K models "
                                                   "evaluated at once (the recorder's path)"
       for c in ("Linear", "MLP") for m in ("apply", "forward")},
    ("qlib.discriminator.AttackResult.from_counts", "successes", "ndim+1"):
        "elementwise over groups of any shape (binomial_ci and mis_from_accuracy are elementwise)",
    ("qlib.synthetic.MixtureLaw.sample", "shape", "empty"): "shape=() draws one point (as size=() in numpy)",
    ("qlib.synthetic.sample", "shape", "empty"):
        "shape=() draws one point per law (as size=() in numpy)",
    ("qlib.synthetic.features", "x", "ndim"):
        "any leading dimensions; the last is the feature axis",
    # (end core)

    # ---- mia: qlib.mia.*, qlib.repro.mia_limits.*
    ("qlib.mia.gaussian.tv_gauss_shift_scale", "a", "range"):
        "a is a signed shift along e_1; the distance is symmetric in its sign",
    ("qlib.mia.overfit.fraction_below", "losses", "ndim"):
        "documented: fractions are taken over the last axis, any leading shape is kept",
    ("qlib.repro.mia_limits.mnist.fit_discretisations", "n_freq", "None"):
        "documented: None uses every remaining image for the cluster frequencies (the default profile)",
    ("qlib.repro.mia_limits.mnist.table1_reductions", "n_freq", "None"):
        "documented: None means every remaining image was used for the frequencies",
    ("qlib.repro.mia_limits.mnist.Table1Config", "raw_n_list", "empty"):
        "documented: an empty list trains no network on raw images",
    ("qlib.repro.mia_limits.mnist.table1_reductions", "raw_n_list", "empty"):
        "an empty list (no network on raw images) is said so in the prose",
    ("qlib.repro.mia_limits.theory.cor541_laws", "n_dirichlet", "0"):
        "documented: 0 leaves the 50 Bernoulli and 4 uniform laws of the grid",
    ("qlib.repro.mia_limits.theory.corollary541_rows", "n_dirichlet", "0"):
        "0 Dirichlet laws leaves the Bernoulli and uniform laws of the grid (see cor541_laws)",
    # (end mia)

    # ---- eden: hadamard, eden, eden_theory, compressors, wire, distributed, fedavg, fl_models, qlib.repro.eden.*
    **{(f"qlib.hadamard.{f}", p, m): r
       for f, p, ndim in (("fwht", "x", "ndim"), ("pad_to_power_of_two", "x", "ndim"),
                          ("compiled_fwht_applies", "x", "ndim"), ("rht", "x", "ndim+1"), ("irht", "y", "ndim+1"),
                          ("check_signs", "x", "ndim+1"), ("seeded_rht", "x", "ndim"), ("seeded_irht", "y", "ndim"),
                          ("compiled_rotation_applies", "x", "ndim"))
       for m, r in ((ndim, "batched over every leading dimension: (*batch, D) of any batch shape; a flattened "
                           "batch is one longer vector"),)},
    **{(f"qlib.hadamard.{f}", p, m): "a question about the tensor (its dtype, device, autograd, shape) or about "
                                     "the signs: the values of x are not read (the transforms refuse NaN/inf)"
       for f, p in (("compiled_fwht_applies", "x"), ("check_signs", "x"), ("compiled_rotation_applies", "x"))
       for m in ("nan", "inf")},
    **{(f"qlib.hadamard.{f}", "signs", "ndim+1"): "signs (..., k, D) with leading dimensions that broadcast with "
                                                  "the vectors' (one rotation per vector or one for all)"
       for f in ("rht", "irht", "check_signs")},
    ("qlib.hadamard.fwht", "x", "empty"): "an empty batch (0, D) transforms to an empty batch, as torch ops do",
    ("qlib.hadamard.pad_to_power_of_two", "x", "empty"): "an empty batch (0, d) pads to an empty batch (0, D)",
    ("qlib.hadamard.compiled_fwht_applies", "x", "empty"): "a question about the tensor's dtype, device and autograd "
                                                           "(whether fwht takes the compiled path): its size does not enter",
    ("qlib.hadamard.is_power_of_two", "n", "range"): "a predicate: 0 and negative integers are not powers of two, "
                                                     "False is the answer",
    ("qlib.hadamard.rademacher", "shape", "empty"): "shape () is a 0-d tensor (one sign), as torch.empty(())",
    ("qlib.hadamard.rademacher", "shape", "entry-0"): "a zero-size dimension gives an empty tensor, as torch.empty",
    ("qlib.hadamard.rotation_signs", "batch", "empty"): "batch=() is one vector's signs, shape (k, D)",
    ("qlib.hadamard.rotation_signs", "batch", "entry-0"): "a batch of zero vectors has zero rows of signs",
    ("qlib.hadamard.rotation_sign_bits", "batch", "empty"): "batch=() is one vector's sign bits, (k·D + 7) // 8 bytes",
    ("qlib.hadamard.rotation_sign_bits", "batch", "entry-0"): "a batch of zero vectors has no sign bits",
    ("qlib.hadamard.seeded_rht", "x", "empty"): "an empty batch (0, D) rotates to an empty batch, as fwht",
    ("qlib.hadamard.seeded_irht", "y", "empty"): "an empty batch (0, D) rotates to an empty batch, as fwht",
    ("qlib.hadamard.compiled_rotation_applies", "x", "empty"): "a question about the tensor's dtype, device and "
                                                               "autograd (as compiled_fwht_applies): its size does not enter",
    ("qlib.eden.received_mask", "batch", "empty"): "batch=() is one vector's mask, shape (D,)",
    ("qlib.eden.received_mask", "batch", "entry-0"): "a batch of zero vectors has an empty mask (0, D)",
    **{(f"qlib.{f}", "x", "ndim"): "a vector or a batch (*batch, d) of any batch shape (each row its own rotation); "
                                   "a flattened batch is one longer vector"
       for f in ("eden_theory.check_vectors", "eden.compress", "eden.roundtrip", "compressors.fit_to_budget",
                 "compressors.squared_errors")},
    ("qlib.repro.eden.sweeps.VnmseSweepConfig", "timing_trials", "0"): "0 vectors timed: the errors only, encode_ms NaN",
    ("qlib.repro.eden.sweeps.VnmseSweepConfig", "timing_trials", "None"): "None: every vector's compress is timed",
    ("qlib.eden.compress_rotated", "r", "ndim"): "a rotated vector or a batch (*batch, D) of any batch shape, as "
                                                 "compress's x",
    ("qlib.eden_theory.rd_bound", "bits", "ndim"): "elementwise over an array of any shape, as NumPy ufuncs",
    ("qlib.eden_theory.rd_bound", "bits", "empty"): "elementwise: an empty array of budgets gives an empty array of bounds",
    ("qlib.compressors.elias_omega_length", "n", "ndim"): "elementwise over a tensor of any shape",
    ("qlib.compressors.elias_omega_length", "n", "empty"): "elementwise: no integers, no lengths (QSGD+Elias codes "
                                                           "an all-zero row as no gaps)",
    **{(f"qlib.compressors.{c}.{m}", "x", "ndim"): "a vector or a batch (*batch, d) of any batch shape (each row its "
                                                  "own randomness); a flattened batch is one longer vector"
       for c in ("EDEN", "DRIVE", "HadamardSQ", "KashinSQ", "QSGD", "QSGDElias", "SQHuffman", "CountSketch",
                 "TernGrad", "Float32", "RandomMask") for m in ("compress", "roundtrip")},
    ("qlib.compressors.KashinSQ.coefficients", "x", "ndim"): "a vector or a batch (*batch, d) of any batch shape",
    ("qlib.compressors.KashinSQ.analysis", "v", "ndim"): "a vector or a batch (*batch, d) of any batch shape",
    ("qlib.compressors.KashinSQ.synthesis", "c", "ndim"): "a vector or a batch (*batch, D_K) of any batch shape",
    **{(f"qlib.fl_models.{c}.forward", "x", k): "the forward pass of every local step, under torch.func.vmap in the "
       "batched FedAvg (no pass over the values can run there): NaN/inf propagate as in torch.nn; the data are "
       "checked once, by fedavg.client_data"
       for c in ("LeNet5", "MLP", "CNN2", "ResNet9") for k in ("nan", "inf")},
    ("qlib.fl_models.CharLSTM.forward", "x", "entry--1"): "token ids are checked against the vocabulary once, when "
        "the data are loaded (data.load_shakespeare); forward runs under torch.func.vmap in the batched FedAvg, where "
        "a check of the values cannot run (torch.nn.Embedding raises an IndexError)",
    ("qlib.fedavg.rolling_mean", "values", "nan-entry"): "a diverged run's history is NaN from that round on (fedavg.run); "
                                                     "the mean of a window holding one is NaN",
    # (end eden)

    # ---- rqp: rqp, rqp_privacy, dpsgd, qlib.repro.rqp_sgd.*
    ("qlib.rqp.nearest_index", "x", "ndim"): "per coordinate: a tensor of any shape (the output has x's shape)",
    ("qlib.rqp.proj_det", "x", "ndim"): "per coordinate: a tensor of any shape (the output has x's shape)",
    ("qlib.rqp.randomized_projection", "x", "ndim"): "per coordinate: a tensor of any shape (the output has x's shape)",
    ("qlib.rqp.exact_mse", "x", "ndim"): "per coordinate: an array of any shape (the output has x's shape)",
    ("qlib.rqp.pmf", "mu", "ndim"): "mu broadcasts with sigma_l and q, any shape; the output adds a last axis of levels",
    ("qlib.rqp.log_pmf", "mu", "ndim"): "mu broadcasts with sigma_l and q, any shape; the output adds a last axis of levels",
    ("qlib.rqp_privacy.check_sigma", "sigma", "ndim"): "a noise std may be a scalar or an array of any shape",
    ("qlib.rqp_privacy.log_phi_diff", "lo", "ndim"): "elementwise with numpy broadcasting: any shapes that broadcast",
    ("qlib.rqp_privacy.log_phi_diff", "hi", "ndim"): "elementwise with numpy broadcasting: any shapes that broadcast",
    ("qlib.rqp_privacy.log_phi_diff", "hi", "inf"): "hi = +inf is the upper edge of the last, semi-infinite cell (Phi = 1)",
    ("qlib.rqp_privacy.log_mix", "log_p", "ndim"): "elementwise with numpy broadcasting: any shapes that broadcast",
    ("qlib.dpsgd.clip_rows", "g", "ndim"): "clips rows along the last axis, any leading shape (one row when 1-D)",
    ("qlib.repro.rqp_sgd.experiments.rqp_q", "sigma", "ndim"): "array in, array out: one q per noise std, any shape",
    ("qlib.repro.rqp_sgd.theory.algorithm1_law", "x0", "-1.0"): "any real input is valid: outside [-M, M] it is clipped",
    ("qlib.repro.rqp_sgd.theory.theorem2_rows", "x_out", "-1.0"): "an input outside [-M, M] of either sign (|-1| > M)",
    ("qlib.repro.rqp_sgd.figure2.runs_text", "bits_runs", "10**6"): "a run count, not a bit width: 10**6 runs is valid",
    ("qlib.repro.rqp_sgd.table1.reduction_text", "mnist_n_train", "None"): "None means the paper's full size (documented)",
    ("qlib.repro.rqp_sgd.table1.reduction_text", "mnist_n_test", "None"): "None means the paper's full size (documented)",
    ("qlib.repro.rqp_sgd.table1.reduction_text", "mnist_T", "None"): "None means the paper's T = 938 (documented)",
    # (end rqp)

    # ---- mol: molecules, qlib.repro.quantized_mis.*, qlib.repro.ledger, qlib.repro.inventory
    ("qlib.repro.ledger.fmt", "x", "*"): "fmt prints any value a row holds, NaN/inf/None/text included (a NaN "
                                         "result must show as 'nan', never vanish)",
    **{("qlib.repro.ledger.Row", f, m): why for f in ("paper_value", "ours") for m, why in (
        ("inf", "±inf is a printable value (Table 4 prints R² < −1 as −inf); an inf can still only pass when "
                "the caller's test says so"),
        ("str", "row values may be text ('≈ 1 h', '3/9 laws')"),
        ("range", "a value may be negative (R², ρ, log Δ_n)"))},
    **{("qlib.repro.ledger.Item", "paper_value", m): why for m, why in (
        ("nan", "an item's value is whatever the paper prints or the reference gives; a NaN can never pass (Row "
                "refuses passed=True with a NaN, close reads it as not finite)"),
        ("inf", "±inf is printable (Table 4 prints R² < −1 as −inf); close refuses it as a number to compare"),
        ("str", "a claim's value is often text ('< -1', 'better')"),
        ("None", "an item may have no value (a missing item)"),
        ("range", "a value may be negative (R², ρ, log Δ_n)"))},
    **{("qlib.repro.ledger.Null", "value", m): why for m, why in (
        ("nan", "a null is shown as given; close refuses a non-finite null (ValueError naming null.value) and "
                "check's test decides (a NaN compares False)"),
        ("inf", "a null is shown as given; close refuses a non-finite null and check's test decides"),
        ("str", "a claim's null is often text ('random ranks: 1/4')"),
        ("range", "a null may be negative (R² of an untrained net)"))},
    ("qlib.repro.ledger.Null.displayed", "value", "*"): "displayed shows whatever value the row holds",
    **{("qlib.repro.ledger.claim", "ours", m): why for m, why in (
        ("inf", "±inf is a legitimate claim value (e.g. R² = −inf checked as 'R² < −1')"),
        ("str", "claim values are often text ('< -1', '3/9 laws')"),
        ("range", "a value may be negative (R², ρ, log Δ_n)"))},
    ("qlib.repro.ledger.check", "ours", "*"): "check hands ours and the null to the caller's test, which decides "
       "(a NaN compares False, so a NaN result fails and a NaN null fails); values may be text, ±inf or negative",
    ("qlib.repro.ledger.close", "ours", "range"): "our value may be negative (R², ρ, log Δ_n)",
    ("qlib.repro.ledger.close", "ours", "nan"): "documented and tested: a NaN result is recorded as a failed "
                                                "comparison (verdict 'differs'), never 'reproduced'",
    ("qlib.repro.ledger.close", "ours", "inf"): "documented: an infinite result is a failed comparison (verdict "
                                                "'differs'), the value shown",
    **{("qlib.repro.ledger.not_comparable", "ours", m): "a row that is not judged records whatever values exist "
       "(NaN where ρ is undefined, ±inf, text, negative numbers, None); it never counts as a reproduction"
       for m in ("nan", "inf", "str", "range", "None")},
    **{(f"qlib.repro.quantized_mis.molecular.{fn}", arg, m): why
       for fn, arg in (("auroc", "scores"), ("r2", "pred"), ("spearman_to_labels", "pred"))
       for m, why in (("ndim+1", "documented (..., n): leading axes are batch axes (one model per row)"),)},
    ("qlib.repro.quantized_mis.synthetic_claims.section512_claims", "values", "nan"): "documented: r_Q^n / MIS are NaN where "
        "undefined (all runs of a law undefined); a NaN never wins a comparison, so a claim is False there",
    # (end mol)

    # ---- attacks
    ("qlib.attacks.lira.scaled_logit_from_confidence", "p", "ndim"): "elementwise: confidences of any shape",
    ("qlib.attacks.metrics.evaluate", "reps", "0"): "reps=0 is the documented default: no bootstrap intervals",
    ("qlib.attacks.metrics.evaluate", "groups", "entry--1"):
        "group labels are arbitrary integers; only equality is used",
    ("qlib.attacks.threshold.loss_scores", "loss", "ndim"): "elementwise: losses of any shape",
    ("qlib.attacks.dp_bound.tpr_bound", "fpr", "ndim"): "elementwise: false-positive rates of any shape",
    ("qlib.attacks.dp_bound.implied_epsilon", "fpr", "ndim"): "elementwise: rates of any shape (fpr and tpr broadcast)",
    ("qlib.attacks.dp_bound.implied_epsilon", "tpr", "ndim"): "elementwise: rates of any shape (fpr and tpr broadcast)",
    ("qlib.attacks.threshold.threshold_attack", "scores", "ndim"): "elementwise: scores of any shape",
    ("qlib.attacks.threshold.calibrated_scores", "target_loss", "ndim"):
        "documented (..., N): leading axes are target models",
    **{("qlib.repro.attacks.protocol.rank_rho", a, "ndim"): "documented: ρ over the last axis, vectorised over "
                                                            "any leading axes (broadcast)" for a in ("r", "advantage")},
    **{("qlib.repro.attacks.protocol.finite_scores", "s", lab): "its purpose: NaN and ±inf scores (0/0 or x/0 of a zero "
                                                                "per-example variance) are mapped to finite ones"
       for lab in ("nan-entry", "inf-entry")},
    ("qlib.repro.attacks.protocol.finite_scores", "s", "ndim+1"): "documented: elementwise, any shape (the scores of "
                                                                  "one attack on (K, N) pairs, or flattened)",
    **{("qlib.repro.attacks.protocol.percentile_interval", "x", lab): "documented: quantiles along axis, any shape"
       for lab in ("ndim+1", "flattened")},
    ("qlib.repro.attacks.protocol.percentile_interval", "axis", "-1"): "numpy's axis convention: -1 is the last axis",
    ("qlib.repro.attacks.protocol.permutation_test", "rho", "-1.0"): "a mean Spearman correlation: −1 (reversed "
                                                                      "rankings) is valid",
    ("qlib.repro.attacks.protocol.pooled_permutation_test", "rho", "-1.0"): "a mean Spearman correlation: −1 "
                                                                             "(reversed rankings) is valid",
    ("qlib.repro.attacks.protocol.pooled_permutation_test", "rho", "nan"): "documented: no cell has a ρ (every cell's "
                                                                           "ρ undefined); p and the critical value are NaN",
    **{("qlib.repro.attacks.protocol.pooled_permutation_test", "r", lab): "documented: a quantizer whose r_Q^n is not "
       "finite in some cell (NaN: undefined; +inf: unbounded) is left out of the test, as the cells' ρ leave it out"
       for lab in ("nan-entry", "inf-entry")},
    ("qlib.repro.attacks.protocol.resampled_r", "r", "nan-entry"): "its purpose: a model's r_Q^n is NaN where "
                                                                   "undefined, and left out of the mean",
    ("qlib.repro.attacks.protocol.resampled_r", "r", "inf-entry"): "documented: +inf is an unbounded r_Q^n "
                                                                   "(qlib.rqn.r_q); a resample drawing it has mean +inf",
    **{("qlib.repro.attacks.protocol.rank_rho_over", "r", lab): "documented: a resample may leave a defined quantizer "
                                                                "without a model (its r_Q^n NaN there); ranked, not refused"
       for lab in ("nan-entry", "inf-entry")},
    ("qlib.repro.attacks.protocol.rank_rho_over", "r", "ndim"): "documented (…, Q): ρ over the last axis, vectorised "
                                                                 "over any leading axes",
    ("qlib.repro.attacks.protocol.rank_rho_over", "advantage", "ndim"): "documented (…, Q): ρ over the last axis, "
                                                                         "vectorised over any leading axes",
    ("qlib.repro.attacks.protocol.bootstrap_weights", "shape", "empty"): "documented: () is one set of weights (no "
                                                                          "leading axes)",
    ("qlib.repro.attacks.toys.empirical_toy", "alpha", "1.5"):
        "alpha is a smoothing pseudo-count (any value > 0), not a probability",
    ("qlib.repro.attacks.toys.erm_toy", "beta", "-1.0"):
        "beta < 0 is a legitimate law (P(y = 1 | x) = σ(βx) decreasing in x)",
    # (end attacks)
}

NOT_CALLED: dict[str, str] = {
    # ---- core
    "qlib.devices.keep_freed_memory": "takes no argument, and changes the calling process's allocator for good (no "
                                      "trimming): tests/test_resume.py runs it in fresh processes",
    "qlib.validation.*": "the checks themselves: their messages name the caller's argument (their name parameter), "
                         "which the harness cannot see; tests/test_validation.py checks them directly",
    "qlib.discriminator.AttackResult": "frozen record of an attack's outputs, built by from_counts/threshold_attack",
    "qlib.discriminator.train_discriminators": "its run indices are one tuple of three arrays (runs), which the harness "
                                               "mutates as a whole; tests/test_discriminator.py runs the harness on each "
                                               "array through a keyword wrapper, and its settings are "
                                               "DiscriminatorConfig's baseline",
    "qlib.engine.TrainResult": "frozen record of train's outputs (final parameters, loss history)",
    "qlib.engine.Callback.*": "the no-op hooks of the callback base class (each body is `pass`); engine.train calls "
                              "them with its own checked values, RQRecorder's overrides are called here",
    "qlib.rqn.TrajectoryStats": "frozen record of trajectory_stats' outputs",
    "qlib.shakespeare.FederatedText": "frozen record of qlib.shakespeare.build's and load's outputs",
    "qlib.data.load_cifar10": "CIFAR-10 is not in the offline data directory; takes no numeric input (split, path)",
    "qlib.data.load_cifar100": "CIFAR-100 is not in the offline data directory; takes no numeric input (split, path)",
    "qlib.data.load_femnist": "LEAF FEMNIST is not in the offline data directory; takes no numeric input (split, path)",
    # (end core)

    # ---- mia
    "qlib.mia.erm.ERMExact": "frozen result record returned by erm_exact (log-probabilities it computed)",
    "qlib.mia.erm.GapStatistics": "frozen result record returned by gap_statistics",
    "qlib.mia.game.GameResult": "frozen result record returned by simulate_mia_game (accuracy, se, trials)",
    "qlib.mia.overfit.OverfitRun": "frozen result record returned by train_overfit_mlp (recorded fractions)",
    # (end mia)

    # ---- eden
    "qlib.fedavg.FLResult": "the result record run() returns (history, final parameters, config)",
    "qlib.repro.eden.learning.figure_cifar10": "needs CIFAR-10 (not offline); its arguments are validated before "
                                                "any data is read (tests/test_repro_eden_learning.py)",
    "qlib.repro.eden.learning.figure3_task": "needs the LEAF FEMNIST/Shakespeare files (not offline); its arguments "
                                              "are validated before any data is read",
    "qlib.compressors.Compressor.*": "the abstract base class: its methods call the _compress/_decompress/_fields "
                                     "hooks a subclass implements; every subclass's methods are called here",
    # (end eden)

    # ---- rqp
    "qlib.dpsgd.TrainResult": "plain result record returned by dpsgd.train (final weights and accuracies)",
    # (end rqp)

    # ---- mol
    "qlib.molecules.register_embedder": "no numeric or array argument (a name, a callable, version strings); "
                                        "registering from the harness would leave an entry in the global registry",
    "qlib.molecules.unregister_embedder": "no numeric or array argument (an embedder name); changes the global "
                                          "registry",
    "qlib.repro.quantized_mis.molecular.TaskRun": "plain result record of train_task (its outputs), not an input",
    "qlib.repro.quantized_mis.study.StudyResult": "plain result record of run_study / StudyResult.load (its "
                                                  "outputs), not an input",
    # (end mol)

    # ---- attacks
    "qlib.attacks.metrics.AttackMetrics": "frozen result record returned by evaluate (the metrics it computed)",
    "qlib.attacks.lira.GaussianFits": "frozen result record returned by fit_gaussians (the fits it computed)",
    "qlib.repro.attacks.toys.Toy": "the record empirical_toy / erm_toy build after checking their arguments",
    "qlib.repro.attacks.toys.AttackStudy": "plain result record returned by attack_study (its outputs), not an input",
    "qlib.attacks.dp_bound.EpsilonAudit": "frozen result record returned by epsilon_lower_bound (the bound it computed)",
    "qlib.repro.attacks.dp_audit.DPAudit": "plain result record returned by dp_audit.audit (its outputs), not an input",
    "qlib.repro.attacks.synthetic.SyntheticStudy": "plain result record returned by synthetic_attacks (its outputs), "
                                                   "not an input",
    "qlib.repro.attacks.synthetic.SyntheticAnalysis": "plain result record returned by analyse (its outputs), not an "
                                                      "input",
    "qlib.repro.attacks.molecular.TaskAttacks": "plain result record of one task of molecular_attacks (its outputs), "
                                                "not an input",
    "qlib.repro.attacks.molecular.MolecularAttackStudy": "plain result record returned by molecular_attacks (its "
                                                         "outputs), not an input",
    "qlib.repro.attacks.molecular.MolecularAnalysis": "plain result record returned by analyse (its outputs), not an "
                                                      "input",
    # (end attacks)
}

#: ``ALLOW_FIELDS[(record, field path, mutation)] = reason``: a field of a result object (``RESULTS`` in the
#: baselines: the object handed to its consumer, ``harness.run_result``) that may legitimately hold the value
ALLOW_FIELDS: dict[tuple[str, str, str], str] = {
    # ---- eden
    **{(r, "seed", "+1"): "another valid seed: the object alone cannot tell which seed the sender drew its rotation "
                          "from (decoded with another, a code may fall outside its codebook: an error naming the "
                          "codes); a receiver that knows it binds it (wire.from_bytes(seed=...))"
       for r in ("qlib.eden.Payload", "qlib.compressors.Message")},
    ("qlib.eden.Payload", "n_rotations", "+1"): "another valid rotation count (1 to 8): the object alone cannot tell; a "
                                                "receiver that knows it binds it (wire.from_bytes(n_rotations=...))",
    **{(r, "nbits", "max-entry"): "nbits is the sender's count of the message's bits: any count >= 0 of the batch "
                                  "shape is one the object may claim (the decoders do not read it)"
       for r in ("qlib.eden.Payload", "qlib.compressors.Message")},
    ("qlib.eden.Payload -> qlib.eden.decompress (sub-bit)", "d", "+1"):
        "at a sub-bit budget d + 1 can keep m = round(b·d) and D (16 → 17 at b = 0.5 keeps m = 8): the object alone "
        "cannot tell; a receiver that knows d binds it (wire.from_bytes(d=...))",
    **{(f"qlib.compressors.Message -> {c}.decompress", "shape", "last+1"):
       f"d + 1 gives {c}'s fields the same dimensions ({why}): the object alone cannot tell; a receiver that knows "
       "the shape binds it (wire.message_from_bytes(shape=...))"
       for c, why in (("KashinSQ", "frame size 32 for d = 16 and 17"), ("CountSketch", "⌊b·d/32⌋ = 1 column for d = 16 "
                      "and 17"), ("RandomMask", "m = round(p·d) = 8 for d = 16 and 17"))},
    ("qlib.compressors.Message -> qlib.wire.message_to_bytes (KashinSQ)", "shape", "last+1"):
        "d + 1 gives the Kashin coefficients the same frame size (32 for d = 16 and 17): the object alone cannot "
        "tell; a receiver that knows the shape binds it (wire.message_from_bytes(shape=...))",
    ("qlib.compressors.Message -> qlib.wire.message_to_bytes (CountSketch)", "shape", "last+1"):
        "d + 1 gives the sketch the same columns (⌊b·d/32⌋ = 1 for d = 16 and 17): the object alone cannot tell; "
        "a receiver that knows the shape binds it (wire.message_from_bytes(shape=...))",
    ("qlib.compressors.Message", "data['hi']", "neg-entry"): "hi is the upper end of a quantization range: any "
                                                             "finite value >= lo (here lo < -1)",
    ("qlib.compressors.Message", "data['lev']", "label-2"): "a QSGD level in [0, s] (s = 3 at 2 bits): 2 is a level",
    # (end eden)
}
