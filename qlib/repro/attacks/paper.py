"""The settings this part takes from the papers it sets the attacks against, typed once.

No printed *value* of papers 001 or 003 is reproduced by this part: its rows compare practical attacks
with the exact limits those papers prove (``theory-check``). What it takes from the literature is a
setting: the number of shadow models of the LiRA paper's experiments ({cite:p}`carlini2022lira`), which
the ``paper`` profile uses; and the settings of paper 001's synthetic study that chapter ``attacks/02``
keeps (the training set size, the learning rate, the epochs and runs of §5.1.1). The quantized-MIS wing holds the
same settings for its own chapters; a wing never imports another, so this part states the four it uses.
"""

from __future__ import annotations

__all__ = ["LIRA_SHADOWS", "SYNTHETIC_SETTINGS"]

#: the largest shadow-model count of the LiRA paper's experiments (256 shadow models on CIFAR-10)
LIRA_SHADOWS = 256

#: paper 001 §5.1.1: n = 128 training points per model, full-batch Adam at learning rate 1e-4 for 3000 epochs,
#: 300 runs (models) per law
SYNTHETIC_SETTINGS = dict(n=128, lr=1e-4, epochs=3000, runs=300)
