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
    ("qlib.mia.gaussian.tv_gauss_shift_scale", "a", "range"):
        "a is a signed shift along e_1; the distance is symmetric in its sign",
    ("qlib.mia.overfit.fraction_below", "losses", "ndim"):
        "documented: fractions are taken over the last axis, any leading shape is kept",
    ("qlib.repro.mia_limits.simulations.fit_discretisations", "n_freq", "None"):
        "documented: None uses every remaining image for the cluster frequencies (the default profile)",
    ("qlib.repro.mia_limits.simulations.table1_reductions", "n_freq", "None"):
        "documented: None means every remaining image was used for the frequencies",
    ("qlib.repro.mia_limits.simulations.table1_accuracies", "raw_n_list", "empty"):
        "documented: an empty list trains no network on raw images",
    ("qlib.repro.mia_limits.simulations.table1_reductions", "raw_n_list", "empty"):
        "an empty list (no network on raw images) is said so in the prose",
    ("qlib.repro.mia_limits.theory.cor541_laws", "n_dirichlet", "0"):
        "documented: 0 leaves the 50 Bernoulli and 4 uniform laws of the grid",
    ("qlib.repro.mia_limits.theory.corollary541", "n_dirichlet", "0"):
        "0 Dirichlet laws leaves the Bernoulli and uniform laws of the grid (see cor541_laws)",
    # (end mia)

    # ---- eden: hadamard, eden, compressors, wire, fl, qlib.repro.eden.*
    # (end eden)

    # ---- rqp: rqp, rqp_privacy, dpsgd, qlib.repro.rqp_sgd.*
    # (end rqp)

    # ---- mol: molecules, qlib.repro.quantized_mis.*, qlib.repro.ledger, qlib.repro.inventory
    # (end mol)
}

NOT_CALLED: dict[str, str] = {
    # ---- core
    # (end core)

    # ---- mia
    "qlib.mia.erm.ERMExact": "frozen result record returned by erm_exact (log-probabilities it computed)",
    "qlib.mia.erm.GapStatistics": "frozen result record returned by gap_statistics",
    "qlib.mia.game.GameResult": "frozen result record returned by simulate_mia_game (accuracy, se, trials)",
    "qlib.mia.overfit.OverfitRun": "frozen result record returned by train_overfit_mlp (recorded fractions)",
    # (end mia)

    # ---- eden
    # (end eden)

    # ---- rqp
    # (end rqp)

    # ---- mol
    # (end mol)
}
