"""The settings this part takes from the papers it sets the attacks against, typed once.

No printed *value* of papers 001 or 003 is reproduced by this part: its rows compare practical attacks
with the exact limits those papers prove (``theory-check``). What it takes from the literature is a
setting: the number of shadow models of the LiRA paper's experiments ({cite:p}`carlini2022lira`), which
the ``paper`` profile uses.
"""

from __future__ import annotations

__all__ = ["LIRA_SHADOWS"]

#: the largest shadow-model count of the LiRA paper's experiments (256 shadow models on CIFAR-10)
LIRA_SHADOWS = 256
