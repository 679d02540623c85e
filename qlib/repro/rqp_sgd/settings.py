"""The record of one experiment's hyperparameters in the reproduction of paper 004 (RQP-SGD):
:class:`Setting`, frozen and checked field by field. The paper's own settings (Diagnostic, MNIST,
Figure 1) are instances of it typed once in :mod:`.paper`, beside the paper's printed values.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...rqp_privacy import check_bits
from ...validation import check_float, check_int, check_positive

__all__ = ["Setting"]


@dataclass(frozen=True)
class Setting:
    """One experiment's hyperparameters: mini-batch m, iterations T, step η, clip norm ρ, range M,
    bits b and the δ of the (ε, δ) baselines. Every field is checked (a bad value raises a
    ValueError/TypeError naming the field)."""

    m: int
    T: int
    eta: float
    clip: float
    M: float
    b: int
    delta: float

    def __post_init__(self):
        object.__setattr__(self, "m", check_int("m (mini-batch size)", self.m, low=1))
        object.__setattr__(self, "T", check_int("T (iterations)", self.T, low=1))
        object.__setattr__(self, "eta", check_positive("eta (step size)", self.eta))
        object.__setattr__(self, "clip", check_positive("clip (per-example clip norm ρ)", self.clip))
        object.__setattr__(self, "M", check_positive("M (quantization range)", self.M))
        object.__setattr__(self, "b", check_bits(self.b))
        object.__setattr__(self, "delta", check_float("delta", self.delta, low=0.0, high=1.0, low_open=True,
                                                       high_open=True))

    @property
    def privacy_kw(self) -> dict:
        """The keywords of :func:`qlib.rqp_privacy.eps_step` that this setting fixes (b excluded)."""
        return dict(M=self.M, rho=self.clip, eta=self.eta, m=self.m)
