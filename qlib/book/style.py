"""One plotting style for the whole book."""

from __future__ import annotations

import matplotlib

PALETTE = "colorblind"


def apply(context: str = "notebook") -> None:
    """Set the seaborn/matplotlib style every chapter uses (call once at the top of a notebook)."""
    import seaborn as sns

    sns.set_theme(context=context, style="whitegrid", palette=PALETTE)
    matplotlib.rcParams.update(
        {
            "figure.dpi": 100,
            "savefig.dpi": 150,
            "figure.figsize": (6.4, 4.0),
            "axes.titlesize": "medium",
            "legend.frameon": False,
        }
    )
