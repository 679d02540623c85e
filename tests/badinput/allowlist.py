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
    **{(f"qlib.hadamard.{f}", p, m): r
       for f, p, ndim in (("fwht", "x", "ndim"), ("pad_to_power_of_two", "x", "ndim"),
                          ("compiled_fwht_applies", "x", "ndim"), ("rht", "x", "ndim+1"), ("irht", "y", "ndim+1"),
                          ("check_signs", "x", "ndim+1"))
       for m, r in (("nan", "a linear transform on the hot path of every message: NaN/inf propagate as in torch.fft; "
                            "a check would be one more pass (the compressors check their input once, at compress)"),
                    ("inf", "a linear transform on the hot path of every message: NaN/inf propagate as in torch.fft; "
                            "a check would be one more pass (the compressors check their input once, at compress)"),
                    (ndim, "batched over every leading dimension: (*batch, D) of any batch shape; a flattened "
                           "batch is one longer vector"))},
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
    ("qlib.eden.received_mask", "batch", "empty"): "batch=() is one vector's mask, shape (D,)",
    ("qlib.eden.received_mask", "batch", "entry-0"): "a batch of zero vectors has an empty mask (0, D)",
    **{(f"qlib.{f}", "x", "ndim"): "a vector or a batch (*batch, d) of any batch shape (each row its own rotation); "
                                   "a flattened batch is one longer vector"
       for f in ("eden.check_vectors", "eden.compress", "eden.roundtrip", "compressors.fit_to_budget")},
    ("qlib.eden.rd_bound", "bits", "ndim"): "elementwise over an array of any shape, as NumPy ufuncs",
    ("qlib.eden.rd_bound", "bits", "empty"): "elementwise: an empty array of budgets gives an empty array of bounds",
    ("qlib.compressors.elias_omega_length", "n", "ndim"): "elementwise over a tensor of any shape",
    ("qlib.compressors.elias_omega_length", "n", "empty"): "elementwise: no integers, no lengths (QSGD+Elias codes "
                                                           "an all-zero row as no gaps)",
    ("qlib.fl.rolling_mean", "values", "nan-entry"): "a diverged run's history is NaN from that round on (fl.run); "
                                                     "the mean of a window holding one is NaN",
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
    # (end mia)

    # ---- eden
    "qlib.eden.Payload": "the frozen record compress() and wire.from_bytes() return; decompress() and "
                         "wire.to_bytes() check its shapes and fields",
    "qlib.compressors.Message": "the record Compressor.compress() returns; Compressor.decompress() checks its type "
                                "and compressor name",
    "qlib.fl.FLResult": "the result record run() returns (history, final parameters, config)",
    "qlib.repro.eden.federated.figure_cifar10": "needs CIFAR-10 (not offline); its arguments are validated before "
                                                "any data is read (tests/test_repro_federated.py)",
    "qlib.repro.eden.federated.figure3_task": "needs the LEAF FEMNIST/Shakespeare files (not offline); its arguments "
                                              "are validated before any data is read",
    # (end eden)

    # ---- rqp
    # (end rqp)

    # ---- mol
    # (end mol)
}
