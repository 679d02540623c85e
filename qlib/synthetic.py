"""The nine Gaussian-mixture laws of the synthetic study (paper 001, §5.1.1 and App. E).

Each law is a mixture in R^128 (``dim``) of ``k_modes ∈ {6, 8, 16}`` isotropic Gaussians of
standard deviation ``sigma ∈ {1.5, 2, 3}``, each cluster carrying a label in {0, 1}. The paper does
not say how the centres and labels are drawn; this module's documented scheme is:

* **centres** μ_1, …, μ_k i.i.d. ~ N(0, s² I_dim) with ``centre_scale`` s = 1.4 (one value for all
  nine laws, chosen once so that the held-out accuracy of the *unquantized* model is of the order
  of the paper's Table 2 identity column — so Table 2's identity cells are not an independent
  check, and the synthetic-study chapter leaves them out of its comparison);
* **labels** balanced: a random permutation of k/2 zeros and k/2 ones over the clusters;
* **weights** uniform: a sample picks its cluster uniformly, then x = μ_c + sigma·ε, y = label_c.

The law itself (centres, labels) is drawn from ``law_seed`` and the law's position in the grid, so
that every run of an experiment sees the same nine laws; samples are drawn from a separate
``torch.Generator`` so that each run gets fresh i.i.d. sets. Classifier inputs are the features
[x, x²] (element-wise square) of §5.1.1: :func:`features`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import torch

from .validation import check_alloc, check_int, check_positive, check_seed, check_tensor

__all__ = [
    "K_MODES",
    "SIGMAS",
    "GRID",
    "CENTRE_SCALE",
    "MixtureLaw",
    "make_law",
    "make_laws",
    "sample",
    "features",
    "law_labels",
    "check_grid",
]

K_MODES = (6, 8, 16)
SIGMAS = (1.5, 2.0, 3.0)
#: the 9 laws in the order of the paper's Table 2: sigma outer, k_modes inner
GRID = tuple((s, k) for s in SIGMAS for k in K_MODES)
CENTRE_SCALE = 1.4
DIM = 128


@dataclass(frozen=True)
class MixtureLaw:
    """One Gaussian mixture: ``centres`` (k_modes, dim) float64, ``labels`` (k_modes,) int64."""

    k_modes: int
    sigma: float
    centres: torch.Tensor
    labels: torch.Tensor

    def __post_init__(self):
        k = check_int("k_modes", self.k_modes, low=1)
        check_positive("sigma", self.sigma)
        check_tensor("centres", self.centres, ndim=2, convert=False)
        if self.centres.shape[0] != k:
            raise ValueError(f"centres must have shape (k_modes={k}, dim), got {tuple(self.centres.shape)}")
        check_tensor("labels", self.labels, ndim=1, floating=False, convert=False)
        if self.labels.shape != (k,):
            raise ValueError(f"labels must have shape (k_modes={k},), got {tuple(self.labels.shape)}")
        if not bool(((self.labels == 0) | (self.labels == 1)).all()):
            raise ValueError(f"labels must be in {{0, 1}}, got {self.labels.tolist()}")

    @property
    def dim(self) -> int:
        return int(self.centres.shape[1])

    @property
    def name(self) -> str:
        return f"σ={self.sigma:g}, {self.k_modes} modes"

    def sample(self, shape: int | Sequence[int], generator: torch.Generator,
               dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
        """Draw i.i.d. points: returns x (*shape, dim) and y (*shape,) float labels in {0, 1}."""
        x, y = sample([self], shape, generator, dtype=dtype)
        return x[0], y[0]


def make_law(k_modes: int, sigma: float, *, dim: int = DIM, centre_scale: float = CENTRE_SCALE,
             seed: int = 0) -> MixtureLaw:
    """Draw one law (centres ~ N(0, centre_scale² I), balanced labels) from ``seed``."""
    check_int("k_modes", k_modes, low=2)
    if k_modes % 2:
        raise ValueError(f"k_modes must be even (balanced labels), got {k_modes}")
    check_int("dim", dim, low=1)
    check_alloc("k_modes and dim", k_modes * (dim + 3), 8, value=(k_modes, dim), what="the centres and labels")
    sigma = check_positive("sigma", sigma)
    centre_scale = check_positive("centre_scale", centre_scale)
    seed = check_seed("seed", seed)
    g = torch.Generator().manual_seed(seed)
    centres = centre_scale * torch.randn(k_modes, dim, generator=g, dtype=torch.float64)
    labels = torch.cat([torch.zeros(k_modes // 2), torch.ones(k_modes // 2)]).long()
    labels = labels[torch.randperm(k_modes, generator=g)]
    return MixtureLaw(int(k_modes), float(sigma), centres, labels)


def make_laws(seed: int = 0, *, grid: Sequence[tuple[float, int]] = GRID, dim: int = DIM,
              centre_scale: float = CENTRE_SCALE) -> list[MixtureLaw]:
    """The laws of ``grid`` ((sigma, k_modes) pairs; default: the paper's 9, Table 2 order).

    Law i is drawn from seed ``1000 * seed + i`` so that the laws differ from one another.
    """
    seed = check_seed("seed", seed)
    grid = check_grid(grid)
    return [make_law(k, s, dim=dim, centre_scale=centre_scale, seed=1000 * seed + i)
            for i, (s, k) in enumerate(grid)]


def check_grid(grid) -> list[tuple[float, int]]:
    """``grid`` checked as a non-empty sequence of (sigma, k_modes) pairs, sigma > 0 and k_modes >= 2 an
    integer: the pairs as (float, int), or a ``ValueError``/``TypeError`` naming ``grid`` or the pair."""
    if isinstance(grid, (str, bytes)) or not isinstance(grid, Sequence) or len(grid) == 0:
        raise ValueError(f"grid must be a non-empty sequence of (sigma, k_modes) pairs, got {grid!r}")
    out = []
    for i, pair in enumerate(grid):
        if isinstance(pair, (str, bytes)) or not isinstance(pair, Sequence) or len(pair) != 2:
            raise ValueError(f"grid[{i}] must be a (sigma, k_modes) pair, got {pair!r}")
        out.append((check_positive(f"grid[{i}] sigma", pair[0]),
                    check_int(f"grid[{i}] k_modes", pair[1], integral_float=True, low=2)))
    return out


def sample(laws: Sequence[MixtureLaw], shape: int | Sequence[int], generator: torch.Generator,
           dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    """Fresh i.i.d. samples from every law at once.

    Returns x of shape (len(laws), *shape, dim) and y of shape (len(laws), *shape) (float 0/1).
    """
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    if len(laws) == 0:
        raise ValueError("laws must hold at least one MixtureLaw")
    if isinstance(shape, (str, bytes)) or not isinstance(shape, (int, Sequence, torch.Size)):
        raise TypeError(f"shape must be an int or a sequence of ints, got {shape!r}")
    shape = (check_int("shape", shape, low=1),) if isinstance(shape, int) else tuple(shape)
    for s in shape:
        check_int("shape entries", s, low=1)
    dims = {law.dim for law in laws}
    if len(dims) != 1:
        raise ValueError(f"all laws must share one dimension, got {sorted(dims)}")
    dim = dims.pop()
    kmax = max(law.k_modes for law in laws)
    L = len(laws)
    check_alloc("shape", L * math.prod(shape) * (dim + 2), 8, value=shape,
                what=f"{L} laws' points of dimension {dim}, their labels and modes")
    centres = torch.zeros(L, kmax, dim, dtype=torch.float64)
    labels = torch.zeros(L, kmax)
    for i, law in enumerate(laws):
        centres[i, : law.k_modes] = law.centres
        labels[i, : law.k_modes] = law.labels.to(labels.dtype)
    k = torch.tensor([law.k_modes for law in laws], dtype=torch.float64)
    sig = torch.tensor([law.sigma for law in laws], dtype=torch.float64)
    u = torch.rand((L, *shape), generator=generator, dtype=torch.float64)
    kshape = (L,) + (1,) * len(shape)
    c = torch.clamp((u * k.view(kshape)).long(), max=kmax - 1)           # cluster index
    flat_c = c.reshape(L, -1)
    mu = torch.gather(centres, 1, flat_c.unsqueeze(-1).expand(-1, -1, dim)).reshape(L, *shape, dim)
    eps = torch.randn((L, *shape, dim), generator=generator, dtype=torch.float64)
    x = mu + sig.view(*kshape, 1) * eps
    y = torch.gather(labels, 1, flat_c).reshape(L, *shape)
    return x.to(dtype), y.to(dtype)


def features(x: torch.Tensor) -> torch.Tensor:
    """The classifier's inputs [x, x²] (element-wise square), last dimension doubled (§5.1.1)."""
    check_tensor("x", x, convert=False)
    if x.ndim < 1:
        raise ValueError("x must have at least one dimension")
    return torch.cat([x, x * x], dim=-1)


def law_labels(grid) -> list[str]:
    """'σ=1.5, 6 modes', … for a grid of (sigma, k_modes) pairs (as :attr:`MixtureLaw.name`)."""
    return [f"σ={s:g}, {k} modes" for s, k in check_grid(grid)]
