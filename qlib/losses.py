"""The per-sample losses of the batched models, and their derivatives.

``"logistic"`` (binary cross-entropy with logits, targets y ∈ {0, 1}) and ``"mse"``: each a pair
``(ℓ(out, y), ∂ℓ/∂out)`` in :data:`LOSSES`, elementwise, so that one definition serves the autograd and
the analytic gradients of :mod:`qlib.engine` and :mod:`qlib.engine_models` and the validation losses of
:mod:`qlib.recorder` alike. A leaf module: it knows tensors, not models.
"""

from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as F

from .validation import check_choice, check_tensor

__all__ = ["LOSSES", "loss_functions", "per_sample_loss"]


def _logistic(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    # softplus(±out): log(1 + e^{-out}) for y = 1, log(1 + e^{out}) for y = 0, accurate to float32
    # rounding for confident predictions too (binary_cross_entropy_with_logits computes
    # log(1 + e^{-|out|}) as log of a number near 1: a relative error of ~2.6e-4 at a loss of 5e-4)
    return F.softplus(out * (1 - 2 * y))


def _logistic_grad(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return torch.sigmoid(out) - y


def _mse(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return (out - y) ** 2


def _mse_grad(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return 2 * (out - y)


#: per-sample loss ℓ(out, y) and its derivative ∂ℓ/∂out
LOSSES: dict[str, tuple[Callable, Callable]] = {
    "logistic": (_logistic, _logistic_grad),
    "mse": (_mse, _mse_grad),
}


def loss_functions(loss: str) -> tuple[Callable, Callable]:
    """The per-sample loss ``ℓ(out, y)`` called ``loss`` and its derivative ``∂ℓ/∂out``."""
    check_choice("loss", loss, sorted(LOSSES))
    return LOSSES[loss]


def per_sample_loss(loss: str, out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Per-sample loss of outputs ``out`` against targets ``y`` (broadcast over leading dims:
    ``y.shape`` must be the trailing dimensions of ``out.shape``). Labels in {0, 1} for
    ``"logistic"``."""
    fn = loss_functions(loss)[0]
    check_tensor("out", out, convert=False, finite=False)
    check_tensor("y", y, convert=False, finite=False)
    if y.ndim > out.ndim or tuple(out.shape[out.ndim - y.ndim:]) != tuple(y.shape):
        raise ValueError(f"y {tuple(y.shape)} must be the trailing dimensions of out {tuple(out.shape)}")
    if not torch.isfinite(out).all():
        raise ValueError("out contains non-finite values (NaN or inf)")
    check_targets("y", y, loss)
    return fn(out, y)


def check_targets(y_name: str, y: torch.Tensor, loss: str | None) -> None:
    """Finite targets ``y`` (a tensor its caller has checked, named ``y_name`` in the errors); labels in
    {0, 1} under the logistic loss. One pass over ``y``. The check :func:`per_sample_loss` and
    :func:`qlib.engine.check_data` share, not exported: both check ``y``'s kind first."""
    if not torch.isfinite(y).all():
        raise ValueError(f"{y_name} contains non-finite values (NaN or inf)")
    if loss == "logistic" and not bool(((y == 0) | (y == 1)).all()):
        bad = y[(y != 0) & (y != 1)]
        raise ValueError(f"{y_name} must hold labels in {{0, 1}} for the logistic loss, got "
                         f"{bad.numel()} other value(s) such as {float(bad.reshape(-1)[0]):g}")
