"""qlib — executable reproduction of four papers on quantization, privacy and compression.

Modules (one idea each): ``quantizers`` (post-training quantizers, paper 001), ``data``
(data directory and loaders), ``devices`` (device resolution), ``book`` (papermill batch
runner, profiles, paper-vs-ours comparisons, plotting style). Later chapters add
``mia``, ``estimators``, ``engine``, ``hadamard``, ``eden``, ``compressors``, ``rqp``.
"""

__version__ = "0.1.0"
