"""What the figure tests share (``tests/test_figures_*.py``): the Agg backend, figures closed after each
test, and the number of axes of a returned Figure."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    """Every figure a test drew, closed after it (a module imports this name to use it)."""
    yield
    plt.close("all")


def n_axes(fig) -> int:
    """The axes of ``fig``, which must be a matplotlib Figure."""
    assert isinstance(fig, Figure)
    return len(fig.axes)
