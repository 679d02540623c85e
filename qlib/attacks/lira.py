"""LiRA, the likelihood-ratio attack of {cite:p}`carlini2022lira`, scored as its reference code scores it.

**The statistic.** For a model and an example (x, y), the *logit-scaled confidence*
φ = log p_y − log(1 − p_y) = log p_y − log Σ_{j≠y} p_j (reference code ``score.py``), which makes the
shadow models' values close to Gaussian. :func:`scaled_logit` computes it from a model's logits
(stably: z_y − logsumexp_{j≠y} z_j, the same number as the reference's softmax form, without its
1e-45 guard, which only matters where float64 underflows); :func:`scaled_logit_binary` from the one
logit of a binary model ((2y − 1)·f(x)); :func:`scaled_logit_from_confidence` from a probability p_y
(the reference's ``log(p + 1e-45) − log(1 − p + 1e-45)``).

**The shadow models.** M shadow models are trained on random subsets of a data pool; ``keep`` (M, N)
says which of the N pool examples each one trained on (the reference trains each example into half of
the shadows; :func:`qlib.attacks.shadow.paired_keep` does so with every shadow on half the pool). For
each example the *in* statistics come from the shadows that kept it, the *out* statistics from the
others: the **median** as the mean and the population standard deviation (``np.std``) as the scale,
as in the reference's ``plot.py`` — per example, or with ``fix_variance=True`` one global scale (the
reference takes the standard deviation of all *in* values for both Gaussians of the online test, and of
all *out* values for the offline one). Where examples have unequal in/out counts the reference truncates
every example to the smallest count (to build a rectangular array); here each example uses all of its
own shadows — the same numbers when the counts are equal, as with :func:`~qlib.attacks.shadow.paired_keep`.

**The variants** (member score: higher = more likely a member; ``scipy.stats.norm.logpdf`` throughout,
standard deviations + 1e-30 as in the reference):

* :func:`lira_online` — log N(φ; μ_in, σ_in) − log N(φ; μ_out, σ_out): the reference's
  ``generate_ours`` (it returns the negated value and sweeps its negation). Needs *in* shadows for every
  example: M shadows give about M/2 in and M/2 out fits per example.
* :func:`lira_offline` — with ``tail="two-sided"`` (the reference code's ``generate_ours_offline``):
  −log N(φ; μ_out, σ_out), an example far from the out-Gaussian on *either* side is called a member;
  with ``tail="one-sided"`` (the paper's offline test): log P(Z ≤ φ), Z ~ N(μ_out, σ_out),
  only a *higher* confidence than the out models is evidence. Offline shadows need not hold the target
  examples: every shadow may be "out".
* With several augmentations (a trailing axis A of the scores), the per-augmentation log-densities are
  averaged, as the reference does (``score.mean(1)``).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from scipy import stats
from scipy.special import logsumexp

from qlib.validation import check_array, check_bool, check_choice, check_tensor, skip_nested

__all__ = ["scaled_logit", "scaled_logit_binary", "scaled_logit_from_confidence", "GaussianFits", "fit_gaussians",
           "lira_online", "lira_offline", "TAILS", "STD_FLOOR"]

#: added to every standard deviation before scoring (the reference code's ``std + 1e-30``)
STD_FLOOR = 1e-30
#: the offline test's tails: the reference code's two-sided log-density, the paper's one-sided tail
TAILS = ("two-sided", "one-sided")
#: the reference code's guard inside the logarithms of :func:`scaled_logit_from_confidence`
_GUARD = 1e-45


def scaled_logit(logits, labels) -> np.ndarray:
    """φ = log p_y − log Σ_{j≠y} p_j from ``logits`` (..., C) (C ≥ 2 classes, softmax) and integer
    ``labels`` (...) in [0, C): ``logits[..., y] − logsumexp(logits[..., j ≠ y])``, float64."""
    z = check_array("logits", logits)
    if z.ndim < 1 or z.shape[-1] < 2:
        raise ValueError(f"logits must have a last axis of C >= 2 classes, got shape {z.shape}")
    y = check_array("labels", labels, dtype="int", low=0, high=z.shape[-1] - 1)
    if y.shape != z.shape[:-1]:
        raise ValueError(f"labels must have the shape of logits without its class axis {z.shape[:-1]}, got {y.shape}")
    zy = np.take_along_axis(z, y[..., None], axis=-1)[..., 0]
    others = z.copy()
    np.put_along_axis(others, y[..., None], -np.inf, axis=-1)
    return zy - logsumexp(others, axis=-1)


def scaled_logit_binary(out, y) -> np.ndarray:
    """φ of a binary model with one logit f(x) (``out``, any shape, as :mod:`qlib.engine` models give)
    and labels ``y`` ∈ {0, 1} of the same shape: p_1 = σ(f), so φ = (2y − 1)·f exactly."""
    f = check_array("out", out) if not hasattr(out, "detach") else check_tensor("out", out).detach().cpu().double().numpy()
    lab = check_array("y", y.detach().cpu().numpy() if hasattr(y, "detach") else y, dtype="int", low=0, high=1)
    if lab.shape != f.shape:
        raise ValueError(f"y must have the shape of out {f.shape}, got {lab.shape}")
    return (2.0 * lab - 1.0) * f


def scaled_logit_from_confidence(p) -> np.ndarray:
    """φ = log(p + 1e-45) − log(1 − p + 1e-45) of confidences ``p`` ∈ [0, 1] (any shape), the reference
    code's guarded form."""
    p = check_array("p", p, low=0.0, high=1.0)
    return np.log(p + _GUARD) - np.log(1.0 - p + _GUARD)


@dataclass(frozen=True)
class GaussianFits:
    """Per example (and augmentation): median and standard deviation of the shadows' φ when the example
    was in (``mu_in``, ``sd_in``) and out (``mu_out``, ``sd_out``) of their training sets, and the counts
    ``n_in``, ``n_out`` (per example). ``sd_*`` already hold the global value under ``fix_variance``;
    the in fits are NaN for an example no shadow kept."""

    mu_in: np.ndarray
    sd_in: np.ndarray
    mu_out: np.ndarray
    sd_out: np.ndarray
    n_in: np.ndarray
    n_out: np.ndarray


def _check_shadows(shadow_scores, shadow_keep):
    s = check_array("shadow_scores", shadow_scores, ndim=(2, 3))
    k = np.asarray(shadow_keep) if shadow_keep is not None and not isinstance(shadow_keep, (str, bytes)) else None
    if k is None or k.dtype.kind != "b":
        raise TypeError(f"shadow_keep must be a boolean (M, N) array (True: the shadow trained on the example), "
                        f"got {type(shadow_keep).__name__}" + ("" if k is None else f" of dtype {k.dtype}"))
    if k.shape != s.shape[:2]:
        raise ValueError(f"shadow_keep must have shape (M, N) = {s.shape[:2]} (shadows × examples of shadow_scores), "
                         f"got {k.shape}")
    return s, k


def _stats(vals: np.ndarray, mask: np.ndarray):
    """Median and population std over axis 0 of ``vals`` (M, N, A) restricted to ``mask`` (M, N)."""
    v = np.where(mask[..., None], vals, np.nan)
    n = mask.sum(0)
    with np.errstate(all="ignore"), _quiet():
        mu = np.nanmedian(v, axis=0)
        sd = np.nanstd(v, axis=0)
    return mu, sd, n


class _quiet:
    """Silences numpy's "All-NaN slice" warnings (an example with no in-shadow gets NaN fits)."""

    def __enter__(self):
        self._w = warnings.catch_warnings()
        self._w.__enter__()
        warnings.simplefilter("ignore", RuntimeWarning)

    def __exit__(self, *exc):
        self._w.__exit__(*exc)


def fit_gaussians(shadow_scores, shadow_keep, *, fix_variance: bool = False) -> GaussianFits:
    """The in/out Gaussians of every example from M shadows: ``shadow_scores`` (M, N) or (M, N, A) of φ,
    ``shadow_keep`` (M, N) boolean. ``fix_variance``: one global scale per Gaussian (module docstring).
    Every example needs at least one out-shadow; an example with no in-shadow gets NaN in fits (only the
    online test needs them)."""
    s, k = _check_shadows(shadow_scores, shadow_keep)
    fix_variance = check_bool("fix_variance", fix_variance)
    s3 = s if s.ndim == 3 else s[..., None]
    if (~k).sum(0).min() < 1:
        raise ValueError("shadow_keep must leave every example out of at least one shadow (its out-Gaussian)")
    mu_in, sd_in, n_in = _stats(s3, k)
    mu_out, sd_out, n_out = _stats(s3, ~k)
    if fix_variance:
        sd_in = np.full_like(sd_in, np.std(s3[k]) if k.any() else np.nan)
        sd_out = np.full_like(sd_out, np.std(s3[~k]))
    if s.ndim == 2:
        mu_in, sd_in, mu_out, sd_out = (a[..., 0] for a in (mu_in, sd_in, mu_out, sd_out))
    return GaussianFits(mu_in, sd_in, mu_out, sd_out, n_in, n_out)


def _check_target(target_scores, s: np.ndarray) -> np.ndarray:
    t = check_array("target_scores", target_scores, ndim=(1, 2, 3))
    want = s.shape[1:]
    if t.shape[-len(want):] != want or t.ndim > len(want) + 1:
        raise ValueError(f"target_scores must have shape (N{', A' if s.ndim == 3 else ''}) = {want} or (T, *{want}) "
                         f"like the shadows' examples, got {t.shape}")
    return t


def _mean_aug(x: np.ndarray, aug: bool) -> np.ndarray:
    return x.mean(-1) if aug else x


def lira_online(target_scores, shadow_scores, shadow_keep, *, fix_variance: bool = False) -> np.ndarray:
    """Online LiRA member scores log N(φ; μ_in, σ_in) − log N(φ; μ_out, σ_out) (module docstring) of the
    target model(s)' φ on the N pool examples: ``target_scores`` (N[, A]) or (T, N[, A]); the shadows as
    for :func:`fit_gaussians` (each example needs in- and out-shadows). Returns (N,) or (T, N)."""
    s, k = _check_shadows(shadow_scores, shadow_keep)
    t = _check_target(target_scores, s)
    fix_variance = check_bool("fix_variance", fix_variance)
    if k.sum(0).min() < 1:
        raise ValueError("shadow_keep must put every example in at least one shadow (online LiRA needs its "
                         "in-Gaussian); use lira_offline otherwise")
    with skip_nested():
        g = fit_gaussians(s, k, fix_variance=fix_variance)
    sd_out = g.sd_in if fix_variance else g.sd_out  # the reference's fixed variance: the in-values' std for both
    lin = stats.norm.logpdf(t, g.mu_in, g.sd_in + STD_FLOOR)
    lout = stats.norm.logpdf(t, g.mu_out, sd_out + STD_FLOOR)
    return _mean_aug(lin - lout, s.ndim == 3)


def lira_offline(target_scores, shadow_scores, shadow_keep=None, *, fix_variance: bool = False,
                 tail: str = "two-sided") -> np.ndarray:
    """Offline LiRA member scores from the out-Gaussians only (module docstring): ``tail="two-sided"``
    (reference code) −log N(φ; μ_out, σ_out); ``"one-sided"`` (the paper) log Φ((φ − μ_out)/σ_out).
    ``shadow_keep`` None: every shadow is out for every example. Shapes as for :func:`lira_online`."""
    s = check_array("shadow_scores", shadow_scores, ndim=(2, 3))
    if shadow_keep is None:
        shadow_keep = np.zeros(s.shape[:2], dtype=bool)
    s, k = _check_shadows(s, shadow_keep)
    t = _check_target(target_scores, s)
    fix_variance = check_bool("fix_variance", fix_variance)
    check_choice("tail", tail, TAILS)
    with skip_nested():
        g = fit_gaussians(s, k, fix_variance=fix_variance)
    sd = g.sd_out + STD_FLOOR
    if tail == "two-sided":
        out = -stats.norm.logpdf(t, g.mu_out, sd)
    else:
        out = stats.norm.logcdf(t, g.mu_out, sd)
    return _mean_aug(out, s.ndim == 3)
