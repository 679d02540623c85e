"""The one visible allow-list of the common bad-input test.

``ALLOW[(qualified name, parameter, mutation)] = reason`` declares that a callable legitimately
accepts a bad-looking value (``mutation`` is a label such as ``"nan"``/``"-1"``/``"None"``, a
category such as ``"range"``, or ``"*"`` for every mutation of that parameter).
``NOT_CALLED[qualified name] = reason`` declares a public callable the harness does not call.
Every entry carries its reason; a stale entry (no such callable or parameter) fails the test.
"""

ALLOW: dict[tuple[str, str, str], str] = {
    # ---- core: quantizers, rqn, recorder, mis, ranking, discriminator, engine, synthetic, data, devices, validation
    # (end core)

    # ---- mia: qlib.mia.*, qlib.repro.mia_limits.*
    # (end mia)

    # ---- eden: hadamard, eden, compressors, wire, fl, qlib.repro.eden.*
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
    # (end mol)
}

NOT_CALLED: dict[str, str] = {
    # ---- core
    # (end core)

    # ---- mia
    # (end mia)

    # ---- eden
    # (end eden)

    # ---- rqp
    "qlib.dpsgd.TrainResult": "plain result record returned by dpsgd.train (final weights and accuracies)",
    # (end rqp)

    # ---- mol
    # (end mol)
}
