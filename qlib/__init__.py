"""qlib — executable reproduction of four papers on quantization, privacy and compression.

Two kinds of code (see the README's Architecture section and CONTRIBUTING.md):

**The library, one module per idea** — what a user imports:

* ``quantizers`` (post-training quantizers, Table 1 of paper 001 as printed, batched), ``rqn``
  (r_Q^n, Algorithm 1), ``recorder`` (the streaming recorder for training), ``mis`` (MIS from an
  accuracy, binomial intervals), ``ranking`` (rank statistics), ``discriminator`` (MIS baselines),
  ``engine`` (K small models trained at once), ``engine_models`` (their model families), ``losses``
  (their per-sample losses), ``synthetic`` (the nine Gaussian-mixture laws),
  ``molecules`` (PyTDC tasks, offline embedders, the embedding cache);
* ``mia`` (exact MIS / Δ_n, bounds and C(P), the MIA game, ERM rates, overfitting, discretisation);
* ``hadamard`` (FWHT, randomized rotation), ``eden`` (the EDEN codec), ``eden_quantizer`` (its scalar
  quantizer), ``eden_theory`` (its closed forms and bounds), ``compressors`` (EDEN and its baselines, any method at any budget), ``wire``
  (the bytes on the wire), ``distributed`` (compressed mean estimation, distributed GD and power
  iteration), ``fedavg`` (the FedAvg engine and its ``FedAvgConfig``), ``fl_models`` (its models);
* ``rqp`` (randomized projection, E_Q, the Theorem 2 bound), ``rqp_privacy`` (Theorem 1's ε,
  DP-SGD noise), ``dpsgd`` (RQP-SGD, DP-SGD and baselines, many runs at once);
* ``data`` (the data directory, loaders), ``devices`` (``device="auto"``), ``validation`` (the
  argument checks every module uses).

**The reproduction**, ``qlib.repro.<part>`` — one package per part of the book (``quantized_mis``,
``mia_limits``, ``eden``, ``rqp_sgd``): the experiment drivers, the papers' printed values and their
claims as functions returning ledger rows (``qlib.repro.ledger``).

``qlib.book`` is the book machinery (chapter setup, papermill/Dask runner, profiles, the ledger page).
"""

__version__ = "0.1.0"
