"""qlib — executable reproduction of four papers on quantization, privacy and compression.

One idea per module (see the README's Architecture section):

* paper 001: ``quantizers``, ``estimators`` (r_Q^n, Algorithm 1), ``discriminator`` (MIS baselines),
  ``engine`` (K models trained at once), ``synthetic`` (the Gaussian-mixture study);
* paper 003: the ``mia`` package (exact MIS, bounds, ERM rates, the MIA game, overfitting,
  discretised MNIST);
* paper 002: ``hadamard``, ``eden``, ``compressors``;
* paper 004: ``rqp``, ``rqp_privacy``, ``dpsgd``, ``rqp_experiments``;
* shared: ``data`` (data directory, loaders), ``devices`` (``device="auto"``), ``book`` (papermill
  runner, profiles, comparisons, style).
"""

__version__ = "0.1.0"
