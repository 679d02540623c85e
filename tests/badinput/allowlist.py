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
    # (end rqp)

    # ---- mol: molecules, qlib.repro.quantized_mis.*, qlib.repro.ledger, qlib.repro.inventory
    ("qlib.repro.ledger.fmt", "x", "*"): "fmt prints any value a row holds, NaN/inf/None/text included (a NaN "
                                         "result must show as 'nan', never vanish)",
    **{("qlib.repro.ledger.Row", f, m): why for f in ("paper_value", "ours") for m, why in (
        ("inf", "±inf is a printable value (Table 4 prints R² < −1 as −inf); an inf can still only pass when "
                "the caller's test says so"),
        ("str", "row values may be text ('≈ 1 h', '3/9 laws')"),
        ("range", "a value may be negative (R², ρ, log Δ_n)"))},
    **{("qlib.repro.ledger.claim", f, m): why for f in ("paper_value", "ours") for m, why in (
        ("inf", "±inf is a legitimate claim value (e.g. R² = −inf checked as 'R² < −1')"),
        ("str", "claim values are often text ('< -1', '3/9 laws')"),
        ("range", "a value may be negative (R², ρ, log Δ_n)"))},
    ("qlib.repro.ledger.close", "paper_value", "range"): "a paper value may be negative (R², ρ, log Δ_n)",
    ("qlib.repro.ledger.close", "ours", "range"): "our value may be negative (R², ρ, log Δ_n)",
    ("qlib.repro.ledger.close", "ours", "nan"): "documented and tested: a NaN result is recorded as a failed "
                                                "comparison (verdict 'differs'), never 'reproduced'",
    ("qlib.repro.ledger.close", "ours", "inf"): "documented: an infinite result is a failed comparison (verdict "
                                                "'differs'), the value shown",
    **{("qlib.repro.ledger.not_comparable", f, m): "a row that is not judged records whatever values exist "
       "(NaN where ρ is undefined, ±inf, text, negative numbers, None); it never counts as a reproduction"
       for f in ("paper_value", "ours") for m in ("nan", "inf", "str", "range", "None")},
    **{(f"qlib.repro.quantized_mis.molecular.{fn}", arg, m): why
       for fn, arg in (("auroc", "scores"), ("r2", "pred"), ("spearman_to_labels", "pred"))
       for m, why in (("nan", "documented: a non-finite score row (a diverged model in a batch) gives NaN for "
                              "that row, so one model does not stop the batched scoring of train_task"),
                      ("inf", "documented: a non-finite score row (a diverged model in a batch) gives NaN for "
                              "that row, so one model does not stop the batched scoring of train_task"),
                      ("ndim+1", "documented (..., n): leading axes are batch axes (one model per row)"))},
    ("qlib.repro.quantized_mis.study.claim_table", "values", "nan"): "documented: r_Q^n / MIS are NaN where "
        "undefined (all runs of a law undefined); a NaN never wins a comparison, so a claim is False there",
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
}
