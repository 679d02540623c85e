"""Threshold attacks: the global loss threshold and the per-example calibrated threshold.

* :func:`loss_scores` — the global loss-threshold attack of {cite:p}`yeom2018privacy`: "member iff
  ℓ(θ̂, z) ≤ τ", one τ for every example; its member score is −ℓ. (Paper 003 §4 calls its advantage at a
  fixed ε the lower bound of Theorem 4.3(i) on Δ_n, {cite:p}`aubinais2024fundamental`.)
* :func:`calibrated_scores` — the per-example calibrated threshold ("difficulty calibration",
  {cite:p}`watson2022difficulty`): the target's loss on z is compared with the mean loss on z of R
  *reference models* trained on data drawn without z, so an example that every model finds easy is not
  mistaken for a member. Member score = mean_r ℓ(θ_r, z) − ℓ(θ̂, z); a global threshold on it is a
  per-example threshold on the loss. (The reference models are the attacker's: trained on fresh data
  of the same law, never on the target's training set — the *offline* setting.)
* :func:`fit_threshold` / :func:`threshold_attack` — the threshold of best balanced accuracy fitted on
  calibration pairs whose membership the attacker knows (its own shadow games), then applied to the
  evaluated pairs: 0/1 predictions whose balanced accuracy is an unbiased estimate (no selection on
  the evaluated pairs).

The scores of any attack of :mod:`qlib.attacks` can go through :func:`threshold_attack`.
"""

from __future__ import annotations

import numpy as np

from qlib.validation import check_array, skip_nested

from .metrics import check_scores, roc_curve

__all__ = ["loss_scores", "calibrated_scores", "fit_threshold", "threshold_attack"]


def loss_scores(loss) -> np.ndarray:
    """Member scores of the global loss-threshold attack: −ℓ(θ̂, z) (any shape, finite losses)."""
    return -check_array("loss", loss)


def calibrated_scores(target_loss, reference_loss) -> np.ndarray:
    """Member scores of the calibrated attack: mean over the R reference models of their loss on each
    example minus the target model's loss. ``target_loss`` (..., N): the target model(s)' losses on N
    examples; ``reference_loss`` (R, N): R reference models' losses on the same N examples (models
    trained without them). Returns an array of ``target_loss``'s shape."""
    t = check_array("target_loss", target_loss)
    r = check_array("reference_loss", reference_loss, ndim=2)
    if t.shape[-1] != r.shape[1]:
        raise ValueError(f"reference_loss must have one column per example of target_loss ({t.shape[-1]}), "
                         f"got shape {r.shape}")
    return r.mean(axis=0) - t


def fit_threshold(scores, members) -> float:
    """The threshold τ ("member" iff score ≥ τ) of highest balanced accuracy on calibration pairs;
    where several tie, the midpoint between the chosen score and the next lower distinct score (so a
    score never seen in calibration is not decided by the tie order). +inf: predict no member."""
    s, m = check_scores(scores, members)
    with skip_nested():
        fpr, tpr, thr = roc_curve(s, m)
    i = int(np.argmax(tpr - fpr))
    if i == 0 or i == thr.size - 1:
        return float(thr[i]) if i == 0 else float(-np.inf)
    return float(0.5 * (thr[i] + thr[i + 1]))


def threshold_attack(cal_scores, cal_members, scores) -> tuple[float, np.ndarray]:
    """``(τ, predictions)``: τ fitted on the calibration pairs (:func:`fit_threshold`) and the 0/1
    predictions ``scores >= τ`` on the evaluated pairs (any shape)."""
    cs, cm = check_scores(cal_scores, cal_members, "cal_scores", "cal_members")
    s = check_array("scores", scores)
    with skip_nested():
        tau = fit_threshold(cs, cm)
    return tau, s >= tau
