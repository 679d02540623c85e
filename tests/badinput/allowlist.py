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
