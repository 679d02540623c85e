"""What the figure tests share (``tests/test_figures_*.py``): the Agg backend, figures closed after each
test, and the data a figure plots, read back as the archive stores it (:func:`qlib.plotting.capture.figure_data`,
the one place these tests import the capture from): per axes its lines, points, bars, bands and images as
arrays, which a test compares with the frame the figure function was given."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import to_rgba  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from qlib.plotting.capture import figure_data  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    """Every figure a test drew, closed after it (a module imports this name to use it)."""
    yield
    plt.close("all")


def n_axes(fig) -> int:
    """The axes of ``fig``, which must be a matplotlib Figure."""
    assert isinstance(fig, Figure)
    return len(fig.axes)


@dataclass
class Artist:
    """One captured artist: ``kind`` (line, points, segment, band, bar, image), its ``data`` (x, y columns
    for a line or points; ``[x, y, width, height]`` for a bar) and the rest of what the capture keeps
    (``label``, ``color``, ``marker``, …)."""

    kind: str
    data: np.ndarray
    info: dict = field(default_factory=dict)

    @property
    def label(self) -> str:
        return self.info.get("label", "")

    @property
    def x(self) -> np.ndarray:
        return self.data[:, 0]

    @property
    def y(self) -> np.ndarray:
        return self.data[:, 1]

    def drawn_in(self, color) -> bool:
        return tuple(self.info.get("color", ())) == tuple(float(c) for c in to_rgba(color))


@dataclass
class Panel:
    """One visible axes as captured: its titles, scales and artists in drawing order."""

    meta: dict
    artists: list[Artist]

    @property
    def title(self) -> str:
        return self.meta["title"]

    def of(self, kind: str, **match) -> list[Artist]:
        """The artists of ``kind`` whose captured fields equal ``match`` (``label="EDEN"``, ``marker="o"``)."""
        return [a for a in self.artists if a.kind == kind and all(a.info.get(k) == v for k, v in match.items())]

    def line(self, label: str) -> Artist:
        """The one line labelled ``label``."""
        found = self.of("line", label=label)
        assert len(found) == 1, f"{len(found)} lines labelled {label!r} in panel {self.title!r}: " \
                                f"{[a.label for a in self.of('line')]}"
        return found[0]

    def labels(self, kind: str = "line") -> list[str]:
        return [a.label for a in self.of(kind) if a.label]

    def bars(self) -> np.ndarray:
        """The bars as rows ``[x, y, width, height]``, in drawing order."""
        return np.array([a.data for a in self.of("bar")]).reshape(-1, 4)


def panels(fig) -> list[Panel]:
    """The visible axes of ``fig`` with the data they plot, as :func:`figure_data` captures it."""
    assert isinstance(fig, Figure)
    arrays = figure_data(fig)
    meta = json.loads(arrays["meta"].tobytes())
    return [Panel(am, [Artist(a["kind"], arrays[a["key"]], {k: v for k, v in a.items() if k not in ("kind", "key")})
                       for a in am["artists"]]) for am in meta["axes"]]


def same(got, want) -> None:
    """``got`` equals ``want`` exactly, element by element (NaN where both are NaN), as float64."""
    np.testing.assert_array_equal(np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64))


def same_xy(artist: Artist, x, y) -> None:
    """The artist plots exactly the points ``(x, y)``, in that order."""
    same(artist.x, x)
    same(artist.y, y)
