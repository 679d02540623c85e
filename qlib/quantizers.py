"""Post-training quantizers of Table 1 / Figure 5 (App. D) of paper 001 {Aubinais et al.}.

Every quantizer maps a parameter vector θ to a finite set Θ̄. Names and the paper's labels:

============  ============  ==========================================================
name          label         Q(θ)_j
============  ============  ==========================================================
identity      original      θ_j (reference column)
sign          Sign          sign(θ_j), with sign(0) = +1
ternary33     1.58b 33%     0 for the 33 % of coordinates of smallest |θ_j|, else sign(θ_j)
ternary50     1.58b 50%     same with 50 %
ternary90     1.58b 90%     same with 90 %
bits2..bits5  b bits        sign(θ_j)·(α/s)·int(1 + clip(s|θ_j|/α, 0, s)), s = 2^(b−1),
                            α = 2^round(log2 max|θ|)   (Table 1 as printed; the default)
============  ============  ==========================================================

The **Table 1 reading** of 1.58b x% is a named variant beside the text reading (not in :func:`names`,
which lists the paper's columns as the book runs them; see :data:`TERNARY_TABLE`):

===================  ======================  ================================================
name                 label                   Q(θ)_j
===================  ======================  ================================================
ternary33_table      1.58b 33% (Table 1)     sign(θ_j) for the 33 % of smallest |θ_j|, else 0
ternary50_table      1.58b 50% (Table 1)     same with 50 %
ternary90_table      1.58b 90% (Table 1)     same with 90 %
===================  ======================  ================================================

Decisions where the paper is silent or self-contradictory (see the quantizers chapter):

* **Ternary direction: two readings.** Table 1 as typeset maps θ_j to sign(θ_j) if
  |θ_j| < q(|θ|, x) and to 0 otherwise — it *keeps* the x % of smallest magnitude and zeroes the rest;
  §5.1's text ("x% of the weights with the smallest magnitude are set to zero") says the opposite.
  The text reading is the default (``ternary33`` …); the Table 1 reading is implemented as printed
  under its own names (``ternary33_table`` …, :data:`TERNARY_TABLE`), with the same tie rule: the
  k = ⌊x·d + ½⌋ smallest |θ_j| (ties by position) keep their sign, the others become 0. The
  synthetic-study chapter runs both and says which matches which of the paper's columns.
* **Exact sparsity.** Exactly k = ⌊x·d + ½⌋ coordinates are zeroed: the k smallest |θ_j|, ties broken
  by position (lower index first), rather than a quantile threshold that over- or under-shoots on
  ties. Exact zeros of the input that are not among the k stay 0 (0 is a level of this quantizer).
* **b bits: the printed formula is the default.** Table 1 prints
  ``(α/s)·int(1 + clip(s|θ|/α, 0, s))`` (``int`` = truncation). Taken literally it uses s + 1
  magnitudes — 2^b + 2 levels whenever max|θ| ≥ α — and is not idempotent (a value on the grid moves
  one level up). We implement it as printed (``variant="printed"``, the default), because that is
  what the paper says it ran.
* **b bits, capped variant** (``variant="capped"``): the same grid, scale and rounding direction
  (magnitudes rounded *up* to the next multiple of α/s) capped at s magnitudes,
  ``(α/s)·clip(⌈s|θ|/α⌉, 1, s)``. Rationale: it is a true b-bit code (2^b levels) and a projection
  (Q∘Q = Q), which the name "b bits" suggests. It agrees with the printed formula everywhere except
  on grid points (measure zero) and for |θ_j| ≥ α, which the printed formula maps to (s+1)α/s. The
  quantizers and synthetic-study chapters show how much the choice moves r_Q^n, Table 2 and the
  ranking.
* sign(0) = +1 for Sign and b bits (neither has a zero level); an all-zero θ is returned unchanged by
  b bits (α would be 0).
* Scope: ``"tensor"`` (default) quantizes each weight matrix and bias with its own α / quantile;
  ``"model"`` quantizes the flattened concatenation of all floating-point tensors at once.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Callable, Mapping

import torch
from torch import nn

from .validation import (
    check_callable,
    check_choice,
    check_int,
    check_int_sequence,
    check_probability,
    check_str,
    check_tensor,
)

__all__ = [
    "Quantizer",
    "get",
    "names",
    "labels",
    "quantize",
    "quantize_batch",
    "quantize_many",
    "check_names",
    "apply",
    "VARIANTS",
    "TERNARY_TABLE",
    "SCOPES",
    "n_zeros",
    "distinct_per_row",
    "level_stats",
]

SCOPES = ("tensor", "model")
#: b-bit variants: "printed" = Table 1 literally (the default), "capped" = 2^b levels (module docstring)
VARIANTS = ("printed", "capped")
#: the Table 1 reading of 1.58b x% (keep the x % smallest as signs, zero the rest), by its text-reading name
TERNARY_TABLE = {"ternary33": "ternary33_table", "ternary50": "ternary50_table", "ternary90": "ternary90_table"}


def _check_tensor(x: object, arg: str = "theta", ndim=None) -> torch.Tensor:
    return check_tensor(arg, x, ndim=ndim, convert=False)


def _sign_pos0(x: torch.Tensor) -> torch.Tensor:
    """sign with sign(0) = +1."""
    return torch.where(x >= 0, torch.ones_like(x), -torch.ones_like(x))


# ---------------------------------------------------------------------------------------------
# Row-wise kernels: x is (K, d); every row is one parameter vector.
# ---------------------------------------------------------------------------------------------
def _rows_identity(x: torch.Tensor) -> torch.Tensor:
    return x.clone()


def _rows_sign(x: torch.Tensor) -> torch.Tensor:
    return _sign_pos0(x)


def n_zeros(fraction: float, d: int) -> int:
    """Number of coordinates a ternary quantizer zeroes in a vector of size d: ⌊fraction·d + ½⌋.

    ``fraction`` in [0, 1], ``d`` an integer >= 1 (a non-integral size is a ``TypeError``)."""
    fraction = check_probability("fraction", fraction)
    d = check_int("d", d, low=1)
    return int(math.floor(fraction * d + 0.5))


def _rows_ternary(x: torch.Tensor, fraction: float) -> torch.Tensor:
    k = n_zeros(fraction, x.shape[1])
    out = torch.sign(x)
    if k > 0:
        order = torch.argsort(x.abs(), dim=1, stable=True)[:, :k]
        out.scatter_(1, order, 0.0)
    return out


def _rows_ternary_table(x: torch.Tensor, fraction: float) -> torch.Tensor:
    """Table 1 as typeset: sign(θ_j) for the k = ⌊fraction·d + ½⌋ smallest |θ_j|, 0 for the rest."""
    k = n_zeros(fraction, x.shape[1])
    out = torch.sign(x)
    order = torch.argsort(x.abs(), dim=1, stable=True)[:, k:]
    out.scatter_(1, order, 0.0)
    return out


def _alpha(x: torch.Tensor) -> torch.Tensor:
    """α = 2^round(log2 max|θ|) per row, shape (K, 1); rows that are all zero get α = 0."""
    m = x.abs().amax(dim=1, keepdim=True)
    safe = torch.where(m > 0, m, torch.ones_like(m))
    alpha = torch.exp2(torch.round(torch.log2(safe)))
    return torch.where(m > 0, alpha, torch.zeros_like(m))


def _rows_bits(x: torch.Tensor, bits: int) -> torch.Tensor:
    s = float(2 ** (bits - 1))
    alpha = _alpha(x)
    safe_alpha = torch.where(alpha > 0, alpha, torch.ones_like(alpha))
    m = torch.clamp(torch.ceil(s * x.abs() / safe_alpha), 1.0, s)
    out = _sign_pos0(x) * (safe_alpha * m) / s
    return torch.where(alpha > 0, out, torch.zeros_like(out))


def _rows_bits_printed(x: torch.Tensor, bits: int) -> torch.Tensor:
    s = float(2 ** (bits - 1))
    alpha = _alpha(x)
    safe_alpha = torch.where(alpha > 0, alpha, torch.ones_like(alpha))
    m = torch.trunc(1.0 + torch.clamp(s * x.abs() / safe_alpha, 0.0, s))
    out = _sign_pos0(x) * (safe_alpha * m) / s
    return torch.where(alpha > 0, out, torch.zeros_like(out))


# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Quantizer:
    """A post-training quantizer: call it on a tensor of any shape, or ``batched`` on (K, d)."""

    name: str
    label: str
    formula: str
    _rows: Callable[[torch.Tensor], torch.Tensor]
    levels: int | None = None  # number of distinct values it can produce (None: unbounded)
    zero_fraction: float | None = None  # requested sparsity of the ternary quantizers (text reading)
    keep_fraction: float | None = None  # Table 1 reading: the share of smallest |θ_j| kept as sign(θ_j)

    def __post_init__(self):
        check_str("name", self.name)
        check_str("label", self.label)
        check_str("formula", self.formula)
        check_callable("_rows", self._rows)
        check_int("levels", self.levels, low=1, allow_none=True)
        check_probability("zero_fraction", self.zero_fraction, allow_none=True)
        check_probability("keep_fraction", self.keep_fraction, allow_none=True)

    def __call__(self, theta: torch.Tensor) -> torch.Tensor:
        """Quantize ``theta`` as one parameter vector (scale and quantile over all its entries)."""
        _check_tensor(theta)
        return self._rows(theta.reshape(1, -1)).reshape(theta.shape)

    def batched(self, thetas: torch.Tensor) -> torch.Tensor:
        """Quantize each row of ``thetas`` (K, d) as its own parameter vector, in one call."""
        _check_tensor(thetas, "thetas", ndim=2)
        return self._rows(thetas)

    def __repr__(self) -> str:
        return f"Quantizer({self.name!r}, label={self.label!r})"


def _build(variant: str) -> dict[str, Quantizer]:
    reg: dict[str, Quantizer] = {
        "identity": Quantizer("identity", "original", r"\theta_j", _rows_identity, None),
        "sign": Quantizer("sign", "Sign", r"\operatorname{sign}(\theta_j)", _rows_sign, 2),
    }
    for pct in (33, 50, 90):
        frac = pct / 100
        reg[f"ternary{pct}"] = Quantizer(
            f"ternary{pct}",
            f"1.58b {pct}%",
            rf"0 \text{{ if }} |\theta_j| \text{{ is among the smallest }} {pct}\% \text{{, else }} \operatorname{{sign}}(\theta_j)",
            lambda x, f=frac: _rows_ternary(x, f),
            3,
            frac,
        )
    for pct in (33, 50, 90):
        frac = pct / 100
        nm = TERNARY_TABLE[f"ternary{pct}"]
        # zero_fraction stays None: the recorder's compiled kernels know only the text reading, so a
        # compiled run of this quantizer fails loudly instead of computing the other reading
        reg[nm] = Quantizer(
            nm,
            f"1.58b {pct}% (Table 1)",
            rf"\operatorname{{sign}}(\theta_j) \text{{ if }} |\theta_j| < q(|\theta|, {pct}\%) \text{{, else }} 0",
            lambda x, f=frac: _rows_ternary_table(x, f),
            3,
            None,
            frac,
        )
    for b in (2, 3, 4, 5):
        s = 2 ** (b - 1)
        if variant == "printed":
            rows = lambda x, b=b: _rows_bits_printed(x, b)  # noqa: E731
            formula = (
                rf"\operatorname{{sign}}(\theta_j)\frac{{\alpha}}{{{s}}}\,"
                rf"\operatorname{{int}}\!\left(1+\operatorname{{clip}}\!\left(\tfrac{{{s}|\theta_j|}}{{\alpha}},0,{s}\right)\right)"
            )
            levels = 2 * (s + 1)
        else:
            rows = lambda x, b=b: _rows_bits(x, b)  # noqa: E731
            formula = (
                rf"\operatorname{{sign}}(\theta_j)\frac{{\alpha}}{{{s}}}\,"
                rf"\operatorname{{clip}}\!\left(\left\lceil\tfrac{{{s}|\theta_j|}}{{\alpha}}\right\rceil,1,{s}\right)"
            )
            levels = 2 * s
        reg[f"bits{b}"] = Quantizer(f"bits{b}", f"{b} bits", formula, rows, levels)
    return reg


_REGISTRY = {v: _build(v) for v in VARIANTS}


def names() -> list[str]:
    """The quantizer names, in the paper's column order (identity first); the Table 1 reading of
    1.58b x% (:data:`TERNARY_TABLE`) is not listed: name it explicitly."""
    table = set(TERNARY_TABLE.values())
    return [k for k in _REGISTRY["printed"] if k not in table]


def labels() -> dict[str, str]:
    """name → the paper's label ("1.58b 33%", "2 bits", …), the Table 1 reading included."""
    return {k: q.label for k, q in _REGISTRY["printed"].items()}


def check_names(names, arg: str = "quantizers") -> list[str]:
    """A non-empty list of known quantizer names (one str is a list of one); ValueError naming the
    unknown one."""
    if isinstance(names, str):
        names = [names]
    names = list(names)
    if not names:
        raise ValueError(f"{arg} must name at least one quantizer")
    known = _REGISTRY["printed"]
    for nm in names:
        check_str(f"{arg} entry", nm)
        if nm not in known:
            raise ValueError(f"unknown quantizer {nm!r} in {arg}; known: {', '.join(known)}")
    return names


def get(name: str, *, variant: str = "printed") -> Quantizer:
    """The quantizer called ``name`` (see :func:`names`).

    ``variant``: the b-bit formula — ``"printed"`` (Table 1 literally, the default) or ``"capped"``
    (2^b levels, idempotent; see the module docstring). Other quantizers are the same in both.
    """
    check_str("quantizer name", name)
    check_choice("variant", variant, VARIANTS)
    try:
        return _REGISTRY[variant][name]
    except KeyError:
        raise ValueError(f"unknown quantizer {name!r}; known: {', '.join(names())}") from None


def quantize(name: str, theta: torch.Tensor, *, variant: str = "printed") -> torch.Tensor:
    """``get(name, variant=variant)(theta)``."""
    return get(name, variant=variant)(theta)


def quantize_batch(name: str, thetas: torch.Tensor, *, variant: str = "printed") -> torch.Tensor:
    """``get(name).batched(thetas)``: quantize each row of a (K, d) stack of parameter vectors."""
    return get(name, variant=variant).batched(thetas)


def quantize_many(names, thetas: torch.Tensor, *, split=None, variant: str = "printed") -> torch.Tensor:
    """Several quantizers on the rows of ``thetas`` (K, d) in one pass: a (len(names), K, d) tensor.

    Equal, value for value, to stacking ``quantize_batch(name, thetas)`` over ``names`` (tests
    check it exactly), but the ternary quantizers share one stable argsort of |θ| and the b-bit
    quantizers one scale α — what makes recording every quantizer at every epoch affordable.

    ``split``: sizes of consecutive column blocks quantized each on its own (per-tensor scope: a
    model's weight and bias, e.g. ``[t.shape[-1] ... ]`` of its layers); ``None`` = the whole row.
    """
    names = check_names(names, "names")
    check_choice("variant", variant, VARIANTS)
    _check_tensor(thetas, "thetas", ndim=2)
    if split is not None:
        sizes = check_int_sequence("split", split, low=1)
        if sum(sizes) != thetas.shape[1]:
            raise ValueError(f"split must be positive block sizes summing to {thetas.shape[1]}, got {sizes}")
        if len(sizes) > 1:
            return torch.cat([_quantize_many_rows(names, blk, variant)
                              for blk in torch.split(thetas, sizes, dim=1)], dim=2)
    return _quantize_many_rows(names, thetas, variant)


def _quantize_many_rows(names, x: torch.Tensor, variant: str) -> torch.Tensor:
    qs = [get(n) for n in names]
    K, d = x.shape
    a = x.abs()
    pos0 = _sign_pos0(x)
    order = alpha = safe = u = None
    out = torch.empty((len(qs), K, d), dtype=x.dtype, device=x.device)
    for i, q in enumerate(qs):
        if q.name == "identity":
            out[i] = x
        elif q.name == "sign":
            out[i] = pos0
        elif q.zero_fraction is not None:
            k = n_zeros(q.zero_fraction, d)
            out[i] = torch.sign(x)
            if k > 0:
                if order is None:
                    order = torch.argsort(a, dim=1, stable=True)
                out[i].scatter_(1, order[:, :k], 0.0)
        elif q.keep_fraction is not None:  # Table 1 reading: keep the k smallest, zero the rest
            k = n_zeros(q.keep_fraction, d)
            out[i] = torch.sign(x)
            if order is None:
                order = torch.argsort(a, dim=1, stable=True)
            out[i].scatter_(1, order[:, k:], 0.0)
        else:  # b bits
            if alpha is None:
                alpha = _alpha(x)
                safe = torch.where(alpha > 0, alpha, torch.ones_like(alpha))
                u = a / safe
            s = float(2 ** (int(q.name[4:]) - 1))
            o = out[i]
            torch.mul(u, s, out=o)
            if variant == "printed":
                o.clamp_(0.0, s).add_(1.0).trunc_()
            else:
                o.ceil_().clamp_(1.0, s)
            o.mul_(safe).div_(s).mul_(pos0)
            o.masked_fill_(~(alpha > 0).expand_as(o), 0.0)
    return out


def _quantize_state(state: Mapping[str, torch.Tensor], q: Quantizer, scope: str) -> dict[str, torch.Tensor]:
    check_choice("scope", scope, SCOPES)
    out = dict(state)
    keys = [k for k, v in state.items() if isinstance(v, torch.Tensor) and torch.is_floating_point(v) and v.numel() > 0]
    if not keys:
        raise ValueError("the model/state dict has no floating-point tensors to quantize")
    if scope == "tensor":
        for k in keys:
            out[k] = q(state[k].detach())
    else:
        flat = torch.cat([state[k].detach().reshape(-1) for k in keys])
        qflat = q(flat)
        i = 0
        for k in keys:
            n = state[k].numel()
            out[k] = qflat[i : i + n].reshape(state[k].shape).to(state[k].dtype)
            i += n
    return out


def apply(model, name: str, *, scope: str = "tensor"):
    """Quantize a model or a state dict with quantizer ``name``.

    * ``nn.Module`` → a quantized deep copy (the original is left untouched);
    * mapping of tensors (a state dict) → a new dict with every floating-point tensor quantized
      (integer buffers such as ``num_batches_tracked`` are kept as they are).

    ``scope="tensor"`` gives each tensor its own scale/quantile; ``scope="model"`` quantizes the
    concatenation of all floating-point tensors as one vector.
    """
    q = get(name)
    if isinstance(model, nn.Module):
        new = copy.deepcopy(model)
        state = _quantize_state(new.state_dict(), q, scope)
        new.load_state_dict(state)
        return new
    if isinstance(model, Mapping):
        return _quantize_state(model, q, scope)
    raise TypeError(f"model must be an nn.Module or a state dict (mapping of tensors), got {type(model).__name__}")


def distinct_per_row(x: torch.Tensor) -> torch.Tensor:
    """Number of distinct values in each row of a 2-D tensor (vectorised: sort, count changes).

    ±inf count as ordinary values; NaN is a ``ValueError`` (NaN != NaN would count every NaN as a
    level of its own)."""
    check_tensor("x", x, ndim=2, floating=False, finite=False, convert=False)
    if x.is_floating_point() and bool(torch.isnan(x).any()):
        raise ValueError("x must not contain NaN (distinct values are undefined)")
    srt = torch.sort(x, dim=1).values
    return 1 + (srt[:, 1:] != srt[:, :-1]).sum(dim=1)


def level_stats(thetas: torch.Tensor, *, variant: str = "printed"):
    """Per quantizer, on the rows of ``thetas`` (K, d): distinct levels (max and mean over rows),
    mean fraction of zeros, and the requested fraction — the numbers behind Table 1's chapter."""
    import pandas as pd  # deferred: pandas (~0.3 s) for this table only

    _check_tensor(thetas, "thetas")
    rows = []
    for name in names():
        q = get(name, variant=variant)
        y = q.batched(thetas)
        lv = distinct_per_row(y)
        rows.append(
            {
                "name": name,
                "label": q.label,
                "formula": q.formula,
                "levels_max": int(lv.max()),
                "levels_mean": float(lv.double().mean()),
                "zero_fraction": float((y == 0).double().mean()),
                "requested_zeros": q.zero_fraction,
            }
        )
    return pd.DataFrame(rows)
