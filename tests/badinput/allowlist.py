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
    "qlib.validation.*": "the checks themselves: their messages name the caller's argument (their name parameter), "
                         "which the harness cannot see; tests/test_validation.py checks them directly",
    "qlib.discriminator.AttackResult": "frozen record of an attack's outputs, built by from_counts/threshold_attack",
    "qlib.engine.TrainResult": "frozen record of train's outputs (final parameters, loss history)",
    "qlib.rqn.TrajectoryStats": "frozen record of trajectory_stats' outputs",
    "qlib.data.load_cifar10": "CIFAR-10 is not in the offline data directory; takes no numeric input (split, path)",
    "qlib.data.load_cifar100": "CIFAR-100 is not in the offline data directory; takes no numeric input (split, path)",
    "qlib.data.load_femnist": "LEAF FEMNIST is not in the offline data directory; takes no numeric input (split, path)",
    # (end core)

    # ---- mia
    # (end mia)

    # ---- eden
    # (end eden)

    # ---- rqp
    # (end rqp)

    # ---- mol
    # (end mol)
}
