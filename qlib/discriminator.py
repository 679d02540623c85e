"""Baseline MIS estimates of paper 001 §4.2: a trained discriminator and a loss-threshold attack.

Both are membership-inference attacks φ on pairs (θ̂, z): positives are (θ̂_i, a training point of
θ̂_i), negatives are (θ̂_i, a fresh point never used by any model). By Theorem A.2 of
{cite:p}`aubinais2025quantized`, MIS_n = 2(1 − sup_φ Acc(φ)), so every attack's held-out balanced
accuracy gives an estimate **from above**, MIS ≤ 2(1 − acc) (clipped to [0, 1]).

* :func:`threshold_attack` — "member iff ℓ(θ̂, z) < τ", τ fitted on training runs (maximising
  accuracy), accuracy measured on held-out runs. Vectorised over groups (law × quantizer).
* :func:`train_discriminators` — g_ψ(θ̂, x, ℓ(θ̂; x, y)) ∈ [0, 1]: a one-hidden-layer ReLU network
  on the concatenation of the flattened θ̂, x and the loss, trained with binary cross-entropy and
  Adam on the models of the training runs, early-stopped on held-out runs, evaluated on a third set
  of runs. G discriminators (one per law × quantizer) are trained at once: the first layer is
  split into its θ̂, x and loss blocks so that θ̂ is projected once per run, not once per sample.
  Inputs are standardised with the training runs' mean and standard deviation; the loss enters as
  log(1 + ℓ) (a monotone map: the same information, tamer tails). Width, learning rate, epochs
  and patience are settings (:class:`DiscriminatorConfig`), fixed across quantizers (paper: unspecified).

Runs are split by :func:`split_runs` (seeded) into train / early-stopping / test runs.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import torch

from . import devices
from .mis import binomial_ci, mis_from_accuracy
from .validation import (
    check_alloc,
    check_array,
    check_float,
    check_int,
    check_probability,
    check_seed,
    check_tensor,
    resolve_config,
)

__all__ = ["split_runs", "fit_thresholds", "threshold_attack", "train_discriminators", "DiscriminatorConfig",
           "AttackResult"]


@dataclass(frozen=True)
class AttackResult:
    """Per group: held-out accuracy, its successes / trials, the MIS estimate 2(1−acc) (clipped
    to [0, 1]) and its Clopper–Pearson interval (the trials share models, so the interval is
    optimistic: it ignores the correlation within a run)."""

    acc: np.ndarray
    successes: np.ndarray
    trials: np.ndarray
    mis: np.ndarray
    mis_lo: np.ndarray
    mis_hi: np.ndarray

    @classmethod
    def from_counts(cls, successes, trials, level: float = 0.95) -> "AttackResult":
        """The record of per-group ``successes`` out of ``trials`` (integer arrays ``>= 0`` / ``>= 1``, trials
        broadcast to the successes' shape) with a Clopper–Pearson interval at ``level``."""
        successes = check_array("successes", successes, dtype="int", low=0)
        trials = check_array("trials", trials, dtype="int", low=1)
        level = check_probability("level", level, open_low=True, open_high=True)
        try:
            trials = np.broadcast_to(trials, successes.shape).copy()
        except ValueError:
            raise ValueError(f"trials (shape {trials.shape}) must broadcast to the successes' shape "
                             f"{successes.shape}") from None
        if (successes > trials).any():
            raise ValueError("successes must be <= trials")
        acc = successes / trials
        lo, hi = binomial_ci(successes, trials, level)
        clip = lambda a: np.clip(a, 0.0, 1.0)  # noqa: E731
        return cls(acc, successes, trials, clip(mis_from_accuracy(acc)),
                   clip(mis_from_accuracy(hi)), clip(mis_from_accuracy(lo)))


def split_runs(n_runs: int, fractions=(0.5, 0.25, 0.25), seed: int = 0):
    """Random split of run indices into (train, early-stopping, test) index arrays."""
    n_runs = check_int("n_runs (train, early-stopping and test runs)", n_runs, low=3)
    seed = check_seed("seed", seed)
    f = check_array("fractions", fractions, ndim=1)
    if f.shape != (3,) or np.any(f <= 0) or not math.isclose(f.sum(), 1.0):
        raise ValueError(f"fractions must be three positive numbers summing to 1, got {fractions!r}")
    check_alloc("n_runs", n_runs, 8 * 2, value=n_runs, what="a permutation of the runs")
    perm = np.random.default_rng(seed).permutation(n_runs)
    n_tr = max(1, int(round(f[0] * n_runs)))
    n_es = max(1, int(round(f[1] * n_runs)))
    n_tr = min(n_tr, n_runs - 2)
    n_es = min(n_es, n_runs - n_tr - 1)
    return np.sort(perm[:n_tr]), np.sort(perm[n_tr:n_tr + n_es]), np.sort(perm[n_tr + n_es:])


def _loss_pair(loss_in, loss_out):
    li = torch.from_numpy(check_array("loss_in", loss_in, ndim=3))
    lo = torch.from_numpy(check_array("loss_out", loss_out, ndim=3))
    if li.shape[:2] != lo.shape[:2]:
        raise ValueError(
            f"loss_in and loss_out must be (groups, runs, samples) with equal groups and runs, got "
            f"{tuple(li.shape)} and {tuple(lo.shape)}")
    return li, lo


def _run_index(name, idx, R):
    return torch.from_numpy(check_array(name, idx, ndim=1, dtype="int", low=0, high=R - 1))


def fit_thresholds(loss_in: torch.Tensor, loss_out: torch.Tensor) -> torch.Tensor:
    """Per group, the τ maximising the accuracy of "member iff loss < τ" on the given samples.

    ``loss_in`` (G, M_in), ``loss_out`` (G, M_out). Candidate thresholds are midpoints between
    consecutive sorted losses (plus ±inf); ties in accuracy go to the smallest τ. Losses must be
    finite (a NaN would sort last and give a finite, meaningless τ): ``ValueError`` naming the argument.
    """
    check_tensor("loss_in", loss_in, ndim=2, convert=False)
    check_tensor("loss_out", loss_out, ndim=2, convert=False)
    if loss_in.shape[0] != loss_out.shape[0]:
        raise ValueError(f"loss_in and loss_out must be (groups, samples) with equal groups, got "
                         f"{tuple(loss_in.shape)} and {tuple(loss_out.shape)}")
    if loss_in.dtype != loss_out.dtype:
        raise TypeError(f"loss_in and loss_out must have one dtype, got {loss_in.dtype} and {loss_out.dtype}")
    G = loss_in.shape[0]
    vals = torch.cat([loss_in, loss_out], dim=1)
    lab = torch.cat([torch.ones_like(loss_in), torch.zeros_like(loss_out)], dim=1)
    v, order = torch.sort(vals, dim=1)
    lab = torch.gather(lab, 1, order)
    w_in = 1.0 / loss_in.shape[1]
    w_out = 1.0 / loss_out.shape[1]
    # τ below the j-th sorted value: members caught = in among the first j, non-members rejected
    cin = torch.cat([torch.zeros(G, 1, dtype=v.dtype), torch.cumsum(lab, 1)], dim=1)
    cout = torch.cat([torch.zeros(G, 1, dtype=v.dtype), torch.cumsum(1 - lab, 1)], dim=1)
    acc = 0.5 * (cin * w_in + (loss_out.shape[1] - cout) * w_out)
    # a threshold between equal values is not realisable: only positions where the value changes
    ok = torch.ones_like(acc, dtype=torch.bool)
    ok[:, 1:-1] = v[:, 1:] > v[:, :-1]
    acc = torch.where(ok, acc, torch.full_like(acc, -1.0))
    j = torch.argmax(acc, dim=1)
    lo = torch.cat([torch.full((G, 1), -math.inf, dtype=v.dtype), v], dim=1)
    hi = torch.cat([v, torch.full((G, 1), math.inf, dtype=v.dtype)], dim=1)
    a = torch.gather(lo, 1, j[:, None])[:, 0]
    b = torch.gather(hi, 1, j[:, None])[:, 0]
    tau = torch.where(torch.isinf(a), b - 1.0, torch.where(torch.isinf(b), a + 1.0, (a + b) / 2))
    return tau


def threshold_attack(loss_in, loss_out, train_runs, test_runs, level: float = 0.95) -> AttackResult:
    """Loss-threshold MIA: τ fitted on ``train_runs``, balanced accuracy on ``test_runs``.

    ``loss_in`` (G, R, n_in): losses of each run's model on its own training points;
    ``loss_out`` (G, R, n_out): on fresh points. Returns an :class:`AttackResult` per group.
    """
    li, lo = _loss_pair(loss_in, loss_out)
    G, R = li.shape[:2]
    tr = _run_index("train_runs", train_runs, R)
    te = _run_index("test_runs", test_runs, R)
    if li.shape[2] != lo.shape[2]:
        raise ValueError("loss_in and loss_out need the same number of samples per run (balanced attack)")
    tau = fit_thresholds(li[:, tr].reshape(G, -1), lo[:, tr].reshape(G, -1))
    hit_in = (li[:, te] < tau[:, None, None]).sum(dim=(1, 2))
    hit_out = (lo[:, te] >= tau[:, None, None]).sum(dim=(1, 2))
    trials = 2 * te.numel() * li.shape[2]
    return AttackResult.from_counts((hit_in + hit_out).numpy(), trials, level)


def _standardise(t: torch.Tensor, dims, ref: torch.Tensor):
    mu = ref.mean(dim=dims, keepdim=True)
    if math.prod(ref.shape[d] for d in ((dims,) if isinstance(dims, int) else dims)) < 2:
        return t - mu                      # one reference value (a single training run): no spread to scale by
    sd = ref.std(dim=dims, keepdim=True).clamp_min(1e-6)
    return (t - mu) / sd


#: the per-law product of the first layer (tests switch it off to compare with the per-group one)
_PER_LAW_PRODUCT = True


@dataclass(frozen=True)
class DiscriminatorConfig:
    """The settings of :func:`train_discriminators`, checked once when built; frozen. Paper 001 §4.2
    specifies none of them; they are fixed across quantizers.

    ``hidden``: width of the hidden layer (>= 1); Adam's ``lr`` (> 0); at most ``epochs`` epochs (>= 1),
    stopped when no group improved its early-stopping accuracy for ``patience`` epochs (>= 1);
    mini-batches of ``runs_per_batch`` runs (>= 1); ``seed`` of the initialisation and the batch order;
    ``device``; ``level`` of the Clopper–Pearson interval (in (0, 1))."""

    hidden: int = 16
    lr: float = 1e-2
    epochs: int = 30
    patience: int = 8
    runs_per_batch: int = 2
    seed: int = 0
    device: str | torch.device = "auto"
    level: float = 0.95

    def __post_init__(self):
        def put(name, value):
            object.__setattr__(self, name, value)

        for nm in ("hidden", "epochs", "patience", "runs_per_batch"):
            put(nm, check_int(nm, getattr(self, nm), low=1))
        put("lr", check_float("lr", self.lr, low=0.0, low_open=True))
        put("level", check_probability("level", self.level, open_low=True, open_high=True))
        put("seed", check_seed("seed", self.seed))
        if not (self.device is None or isinstance(self.device, (str, torch.device))):
            raise TypeError(f"device must be 'auto' (or None), 'cpu', 'cuda', 'cuda:N' or a torch.device, got {self.device!r}")

    def as_dict(self) -> dict:
        """The fields as plain JSON types (``device`` by its name)."""
        d = asdict(self)
        d["device"] = None if self.device is None else str(self.device)
        return d

    def summary(self) -> str:
        """The training settings in one line (not the seed, device or level), for a settings table."""
        return (f"{self.hidden} hidden units, Adam lr {self.lr:g}, ≤ {self.epochs} epochs (patience {self.patience}), "
                f"{self.runs_per_batch} runs per batch")


def train_discriminators(theta, x_in, loss_in, x_out, loss_out, runs, *, group_law=None,
                         config: DiscriminatorConfig | None = None) -> AttackResult:
    """Train G discriminators g_ψ(θ̂, x, ℓ) at once and return their held-out accuracy.

    ``theta`` (G, R, p): the quantized model of each run; ``x_in``/``x_out`` (L, R, n, d): the
    points (shared by the groups of one law: ``group_law`` (G,) maps group → law, default
    identity); ``loss_in``/``loss_out`` (G, R, n). ``runs``: the three arrays of run indices
    ``(train_runs, es_runs, test_runs)`` that :func:`split_runs` returns. ``config``: the settings
    (:class:`DiscriminatorConfig`; None: its defaults). Mini-batches of ``runs_per_batch`` runs (all
    their positives and negatives). Early stopping: the epoch of best accuracy on ``es_runs`` (per
    group); the reported accuracy is that epoch's on ``test_runs``; training stops when no group
    improved for ``patience`` epochs.
    """
    cfg = resolve_config(DiscriminatorConfig, config)
    if not isinstance(runs, (tuple, list)) or len(runs) != 3:
        raise TypeError("runs must be three arrays of run indices (train_runs, es_runs, test_runs, as split_runs "
                        f"returns them), got {type(runs).__name__}"
                        + (f" of {len(runs)}" if isinstance(runs, (tuple, list)) else ""))
    train_runs, es_runs, test_runs = runs
    hidden, lr, epochs, patience, runs_per_batch = cfg.hidden, cfg.lr, cfg.epochs, cfg.patience, cfg.runs_per_batch
    seed, level = cfg.seed, cfg.level
    dev = devices.resolve(cfg.device)
    li, lo = _loss_pair(loss_in, loss_out)
    G, R, n = li.shape
    check_tensor("theta", theta, ndim=3, convert=False)
    if theta.shape[:2] != (G, R):
        raise ValueError(f"theta must be a (G={G}, R={R}, p) tensor, got {tuple(theta.shape)}")
    check_tensor("x_in", x_in, ndim=4, convert=False)
    check_tensor("x_out", x_out, ndim=4, convert=False)
    if x_in.shape[1:3] != (R, n):
        raise ValueError(f"x_in must be a (laws, R={R}, n={n}, d) tensor, got {tuple(x_in.shape)}")
    if x_out.shape != x_in.shape:
        raise ValueError(f"x_out must have the shape of x_in {tuple(x_in.shape)}, got {tuple(x_out.shape)}")
    if group_law is None:
        gl = torch.arange(G)
    else:
        gl = torch.from_numpy(check_array("group_law", group_law, ndim=1, dtype="int"))
    if gl.shape != (G,) or gl.min() < 0 or gl.max() >= x_in.shape[0]:
        raise ValueError(f"group_law must map each of the {G} groups to a law in [0, {x_in.shape[0]})")
    tr = _run_index("train_runs", train_runs, R)
    es = _run_index("es_runs", es_runs, R)
    te = _run_index("test_runs", test_runs, R)
    g = torch.Generator().manual_seed(seed)
    p, d = theta.shape[2], x_in.shape[3]
    check_alloc("hidden", theta.shape[0] * (min(runs_per_batch, R) * 2 * x_in.shape[2] * 3 + p + d + 3) * hidden, 4,
                value=hidden, what="the discriminators' hidden activations and weights")
    # features, standardised on the training runs (per group for θ and loss, per law for x)
    th = _standardise(theta.float(), (1,), theta[:, tr].float()).to(dev)                  # (G,R,p)
    xs = torch.stack([x_in, x_out], dim=2).float()                                          # (L,R,2,n,d)
    xs = _standardise(xs, (1, 2, 3), xs[:, tr]).to(dev)
    ls = torch.log1p(torch.stack([li, lo], dim=2).float().clamp_min(0))                     # (G,R,2,n)
    ls = _standardise(ls, (1, 2, 3), ls[:, tr]).to(dev)
    target = torch.tensor([1.0, 0.0], device=dev).view(1, 1, 2, 1)
    # parameters: first layer split into θ / x / loss blocks, then a linear read-out
    def U(*shape, fan):
        return ((torch.rand(*shape, generator=g) * 2 - 1) / math.sqrt(fan)).to(dev)
    fan = p + d + 1
    params = [U(G, p, hidden, fan=fan), U(G, d, hidden, fan=fan), U(G, 1, hidden, fan=fan),
              U(G, 1, hidden, fan=fan), U(G, hidden, 1, fan=hidden), U(G, 1, 1, fan=hidden)]
    for t in params:
        t.requires_grad_(True)
    opt = torch.optim.Adam(params, lr=lr)
    glx = gl.to(dev)
    # groups in equal contiguous blocks per law (the study's layout): one product per law, its points
    # against the first layers of all its groups side by side, instead of copying the points per group
    L = x_in.shape[0]
    counts = torch.bincount(gl, minlength=L)
    per_law = (_PER_LAW_PRODUCT and bool((counts == counts[0]).all()) and int(counts[0]) > 0
               and bool((gl == torch.arange(L).repeat_interleave(counts)).all()))
    Qg = G // L

    def logits(runs: torch.Tensor) -> torch.Tensor:                                        # (G,r,2,n)
        Wt, Wx, Wl, b1, W2, b2 = params
        r = runs.numel()
        ht = torch.bmm(th[:, runs], Wt)                                                     # (G,r,h)
        if per_law:
            xr = xs[:, runs].reshape(L, r * 2 * n, d)
            W = Wx.reshape(L, Qg, d, hidden).permute(0, 2, 1, 3).reshape(L, d, Qg * hidden)
            hx = torch.bmm(xr, W).reshape(L, r, 2, n, Qg, hidden).permute(0, 4, 1, 2, 3, 5)
            hx = hx.reshape(G, r, 2, n, hidden)
        else:
            xr = xs[:, runs][glx].reshape(G, r * 2 * n, d)
            hx = torch.bmm(xr, Wx).reshape(G, r, 2, n, hidden)
        h = hx + ht[:, :, None, None, :] + ls[:, runs, :, :, None] * Wl[:, None, None] + b1[:, None, None]
        out = torch.bmm(h.relu().reshape(G, -1, hidden), W2).reshape(G, r, 2, n) + b2.view(G, 1, 1, 1)
        return out

    def correct(runs: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            tot = torch.zeros(G, device=dev)
            for i in range(0, runs.numel(), runs_per_batch):
                out = logits(runs[i:i + runs_per_batch])
                tot += ((out > 0).float() == target).float().sum(dim=(1, 2, 3))
            return tot

    best_es = torch.full((G,), -1.0, device=dev)
    best_te = torch.zeros(G, device=dev)
    since = torch.zeros(G, dtype=torch.long)
    for ep in range(epochs):
        perm = tr[torch.randperm(tr.numel(), generator=g)]
        finite = torch.ones((), dtype=torch.bool, device=dev)
        for i in range(0, perm.numel(), runs_per_batch):
            out = logits(perm[i:i + runs_per_batch].to(dev))
            loss = torch.nn.functional.binary_cross_entropy_with_logits(
                out, target.expand_as(out), reduction="none").mean(dim=(1, 2, 3)).sum()
            finite &= torch.isfinite(loss)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            try:
                opt.step()
            except RuntimeError as exc:  # Adam's step size lr/(1-β1^t) overflows the float dtype
                if "overflow" not in str(exc):
                    raise
                raise ValueError(f"training diverged at epoch {ep + 1}: the Adam step with lr={lr:g} "
                                 f"overflows ({exc}); lower lr") from None
        # one check per epoch (no sync per step): a diverging discriminator outputs NaN logits, which
        # score as chance accuracy and would report MIS = 1 ("perfectly private")
        if not bool(torch.stack([finite, *(torch.isfinite(t).all() for t in params)]).all()):
            raise ValueError(f"training diverged at epoch {ep + 1}: non-finite discriminator loss or weights "
                             f"with lr={lr:g}; lower lr")
        c_es = correct(es.to(dev))
        c_te = correct(te.to(dev))
        improved = c_es > best_es
        best_es = torch.where(improved, c_es, best_es)
        best_te = torch.where(improved, c_te, best_te)
        since = torch.where(improved.cpu(), torch.zeros_like(since), since + 1)
        if bool((since >= patience).all()):
            break
    trials = 2 * n * te.numel()
    return AttackResult.from_counts(best_te.round().long().cpu().numpy(), trials, level)
