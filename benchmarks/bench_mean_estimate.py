"""Speed of ``qlib.eden.mean_estimate`` against its own compress/decompress loop, before and after issue 54.

Before, every client got a random loss mask even at loss 0 (an argsort of D float keys) and every group
was decoded through the masked torch path; now a group of which nothing is lost is decoded as
``decompress`` decodes a payload (the compiled path on CPU), a lossy client's mask is drawn by a radix
selection (O(D)) and the masked dequantization is compiled. ``before`` below is the previous code, kept
here for the comparison (its masked dequantization sent back to torch).

Columns (seconds, medians of interleaved repeats, one process):

* ``loop``: ``decompress(compress(xs, b, seed)).sum(0)`` — the ``n`` clients as one batch, the floor;
* ``per-client``: ``decompress(compress(xs[c], b, seed + c))`` for each client, summed;
* ``before``: the pre-issue-54 ``mean_estimate``; ``after``: ``qlib.eden.mean_estimate``;
* ``after/loop``: the issue's target is ≤ 1.2 at loss 0, d = 2^20, 10 clients.

``--subbit`` also times the chapter's drivers that call ``mean_estimate`` on every trial
(``qlib.repro.eden.subbit.heterogeneous`` and ``homogeneous`` with the chapter's clients) at the
``smoke`` and ``default`` profiles' sizes, before (``mean_estimate`` replaced by ``before``) and after.

Run: ``.venv/bin/python benchmarks/bench_mean_estimate.py [--logd 20] [--clients 10] [--threads 1 0] [--subbit]``
(``--threads 0``: torch's default thread count). Results: ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from contextlib import contextmanager

import numpy as np
import torch

from qlib import eden, eden_quantizer, eden_theory, hadamard


def _received_mask_before(D, loss, mode, seed, device="cpu"):
    """``qlib.eden.received_mask`` before issue 54 (one vector): an argsort of D keys, even at loss 0."""
    lost = int(round(loss * D))
    if mode == "tail":
        return torch.arange(D, device=device) < D - lost
    keys = torch.rand((D,), generator=hadamard.generator(seed, "loss", device), device=device)
    return torch.ones(D, dtype=torch.bool, device=device).scatter(-1, keys.argsort(-1)[:lost], False)


@contextmanager
def _torch_masked_dequantization():
    """The masked dequantization as before issue 54: in torch (the compiled pass only without a mask)."""
    real = eden_quantizer._scaled_compiled
    eden_quantizer._scaled_compiled = lambda *a, **k: None if (len(a) > 5 and a[5] is not None) else real(*a, **k)
    try:
        yield
    finally:
        eden_quantizer._scaled_compiled = real


def before(xs, bits, seed, *, loss=0.0, loss_mode="random"):
    """``qlib.eden.mean_estimate`` before issue 54."""
    with _torch_masked_dequantization():
        return _before(xs, bits, seed, loss=loss, loss_mode=loss_mode)


def _before(xs, bits, seed, *, loss=0.0, loss_mode="random"):
    n = xs.shape[0]
    bs, ls = eden_theory.client_budgets(bits, loss, n)
    total = torch.zeros(xs.shape[1], dtype=xs.dtype, device=xs.device)
    nbits = 0
    for gi, b in enumerate(sorted(set(bs))):
        rows = [c for c in range(n) if bs[c] == b]
        gseed = int(np.random.SeedSequence([seed, gi]).generate_state(1)[0])
        pl = eden.compress(xs[rows], b, gseed)
        masks = torch.stack([_received_mask_before(pl.D, ls[c], loss_mode, gseed + 1 + c, xs.device) for c in rows])
        total = total + eden.decompress(pl, masks).sum(0)
        nbits += pl.total_bits
    return total / n, nbits


def _median_times(fns: dict, repeat: int) -> dict:
    times = {k: [] for k in fns}
    for _ in range(repeat):  # interleaved: the machine's load moves every column alike
        for k, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in times.items()}


def mean_estimate_table(logd: int, clients: int, bits: float, losses, repeat: int, dtype=torch.float32):
    d = 2**logd
    xs = torch.randn(clients, d, generator=torch.Generator().manual_seed(0), dtype=torch.float64).exp().to(dtype)
    out = []
    for loss in losses:
        new, old = eden.mean_estimate(xs, bits, 7, loss=loss), before(xs, bits, 7, loss=loss)
        same = torch.equal(new[0], old[0]) and new[1] == old[1]
        fns = {
            "loop": lambda: eden.decompress(eden.compress(xs, bits, 7)).sum(0),
            "per-client": lambda: sum(eden.decompress(eden.compress(xs[c], bits, 7 + c)) for c in range(clients)),
            "before": lambda loss=loss: before(xs, bits, 7, loss=loss),
            "after": lambda loss=loss: eden.mean_estimate(xs, bits, 7, loss=loss),
        }
        t = _median_times(fns, repeat)
        out.append((loss, t, same))
    return out


def subbit_table(repeat: int):
    from qlib.repro.eden import subbit  # deferred: only for --subbit

    het_bits = [0.5, 1, 1, 1.5, 2, 2, 3, 4, 6, 8]
    het_loss = [0.0, 0.0, 0.2, 0.1, 0.0, 0.5, 0.0, 0.3, 0.0, 0.1]
    n_list = [1, 2, 5, 10, 20]
    out = []
    for profile, logd, trials in (("smoke", 10, 4), ("default", 16, 20)):
        def run(logd=logd, trials=trials):
            het = subbit.heterogeneous(het_bits, het_loss, logd, trials, seed=0)
            subbit.homogeneous(het["xs"], n_list, max(3, trials // 4), seed=0)
            return het

        after_fn = eden.mean_estimate
        res = {}
        for name, fn in (("before", before), ("after", after_fn)):
            eden.mean_estimate = fn
            try:
                res[name] = run()["measured"]
                res[name + " s"] = min(_timed(run) for _ in range(repeat))
            finally:
                eden.mean_estimate = after_fn
        out.append((profile, logd, trials, res["before s"], res["after s"], bool(np.array_equal(res["before"], res["after"]))))
    return out


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--logd", type=int, default=20)
    ap.add_argument("--clients", type=int, default=10)
    ap.add_argument("--bits", type=float, default=2.0)
    ap.add_argument("--loss", type=float, nargs="+", default=[0.0, 0.1])
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 0], help="torch threads (0: torch's default)")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--float64", action="store_true", help="float64 vectors (default float32)")
    ap.add_argument("--subbit", action="store_true", help="also time the chapter's subbit drivers")
    a = ap.parse_args(argv)
    default_threads = torch.get_num_threads()
    dtype = torch.float64 if a.float64 else torch.float32
    for th in a.threads:
        torch.set_num_threads(th or default_threads)
        print(f"d = 2^{a.logd}, {a.clients} clients, b = {a.bits:g}, {dtype}, {torch.get_num_threads()} torch thread(s), "
              f"medians of {a.repeat} (seconds)")
        print(f"{'loss':>5} {'loop':>8} {'per-client':>10} {'before':>8} {'after':>8} {'before/loop':>11} "
              f"{'after/loop':>10}  same bits as before")
        for loss, t, same in mean_estimate_table(a.logd, a.clients, a.bits, a.loss, a.repeat, dtype):
            print(f"{loss:>5g} {t['loop']:>8.4f} {t['per-client']:>10.4f} {t['before']:>8.4f} {t['after']:>8.4f} "
                  f"{t['before'] / t['loop']:>10.2f}x {t['after'] / t['loop']:>9.2f}x  {same}")
        if a.subbit:
            print("subbit.heterogeneous + homogeneous (the chapter's clients), best of", a.repeat)
            for profile, logd, trials, tb, ta, same in subbit_table(a.repeat):
                print(f"  {profile:>8} (het_logd {logd}, het_trials {trials}): before {tb:.3f} s, after {ta:.3f} s, "
                      f"{tb / ta:.1f}x; same NMSE per trial: {same}")
    torch.set_num_threads(default_threads)


if __name__ == "__main__":
    main()
