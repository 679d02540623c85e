"""Speed of the federated engine (qlib.fedavg) in Figure 14's setting — side by side, interleaved, in one run:

* rounds/s with EDEN (b = 0.05) vs uncompressed (Float32) updates;
* the batched-client engine (one vmap over the clients of a round) vs a per-client loop
  (goal, issue 13: ≥ 5× at 10 clients per round);
* the share of a round spent compressing + decompressing the updates (the paper, §5.2: EDEN's
  encoding is < 1 % of the gradient computation);
* ``--routes``: one local step of the 10 clients by the per-client loop, the engine's vmap and the clients
  folded into the batch by hand (grouped convolutions, batched GEMMs), in CPU time (issue 24 §4);
* the wire format (qlib.wire): EDEN compress + to_bytes + from_bytes + decompress against one
  forward + inverse FWHT pair at d = 2^20 (goal, issue 13: ≤ 3×).

Figure 14's setting: LeNet-5 on MNIST, 50 one-class clients, 10 per round, 5 local steps of batch
128 (``--batch`` to shrink it on a slow machine). Needs the MNIST files in the data directory.

    .venv/bin/python benchmarks/bench_fl.py [--device cpu|cuda|auto] [--rounds 3] [--batch 128] [--wire-only]
        [--allocator keep|default] [--routes]
"""

from __future__ import annotations

import argparse
import ctypes
import resource
import statistics
import time

import torch

from qlib import eden, fedavg, fl_models, wire
from qlib import hadamard as H
from qlib.devices import resolve
from qlib.repro.eden import learning as L
from qlib.repro.eden.paper import FIG14


def keep_freed_memory() -> bool:
    """Ask glibc to keep freed memory in the process (no trimming; blocks < 32 MiB from the heap, not mmap).

    Otherwise a multi-megabyte array freed at the top of the heap goes back to the OS, and the next call's
    fresh array pays a page fault per 4 KiB page: ~1000 faults, about 4 µs each on the 2-core VM (more
    than a FWHT at 2^20), charged to whichever call comes after a trim. Which one that is depends on the
    order of the calls: a FWHT pair read 1.6 ms in one order and 4.7 ms in another. With this, neither
    side pays them and the ratios compare the work. False where glibc's mallopt is unavailable."""
    try:
        libc = ctypes.CDLL(None)
        return bool(libc.mallopt(-1, 2**62 - 1) and libc.mallopt(-3, 32 * 2**20))  # M_TRIM_, M_MMAP_THRESHOLD
    except (OSError, AttributeError, TypeError):
        return False


def wire_speed(dev, logd=20, repeat=9):
    """Median seconds of one FWHT pair and of EDEN compress+decompress with and without the bytes,
    interleaved (a busy machine slows each alike; the first call of each is a warm-up), and the page
    faults per call of each (see :func:`keep_freed_memory`)."""
    x = torch.randn(2**logd, device=dev)
    faults = {}

    def timed(f, key=None):
        a = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        t0 = time.perf_counter()
        f()
        if dev.type == "cuda":
            torch.cuda.synchronize()
        t = time.perf_counter() - t0
        if key is not None:
            faults.setdefault(key, []).append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - a)
        return t

    fns = {"pair": lambda: H.fwht(H.fwht(x))}
    for b in (1, 2, 4):
        fns[("plain", b)] = lambda b=b: eden.decompress(eden.compress(x, b, 1))
        fns[("wire", b)] = lambda b=b: eden.decompress(wire.from_bytes(wire.to_bytes(eden.compress(x, b, 1)), device=dev))
    times = {k: [] for k in fns}
    for f in fns.values():
        timed(f)
    for _ in range(repeat):
        for k, f in fns.items():
            times[k].append(timed(f, k))
    med = {k: statistics.median(v) for k, v in times.items()}
    flt = {k: statistics.median(v) for k, v in faults.items()}
    t_fwht = med["pair"]
    print(f"wire format at d = 2^{logd}: one FWHT pair {1e3 * t_fwht:.2f} ms, {flt['pair']:.0f} page faults "
          f"(medians of {repeat} interleaved runs)")
    for b in (1, 2, 4):
        t_plain, t_wire = med[("plain", b)], med[("wire", b)]
        print(f"  b={b}: EDEN compress+decompress {1e3 * t_plain:.2f} ms ({t_plain / t_fwht:.2f}× FWHT pair); "
              f"with to_bytes/from_bytes {1e3 * t_wire:.2f} ms ({t_wire / t_fwht:.2f}×, goal ≤ 3×); "
              f"page faults {flt[('plain', b)]:.0f} / {flt[('wire', b)]:.0f}")


def folded_routes(batch: int, k: int = 10, repeat: int = 9):
    """Issue 24 §4: one local step of ``k`` LeNet-5 clients (batch ``batch``) by three routes, in CPU seconds
    (``time.process_time``: a busy shared machine inflates wall time, not the work) — the per-client loop,
    the engine's ``vmap(grad)``, and the clients folded into the batch by hand (grouped convolutions whose
    groups are the clients, batched GEMMs for the dense layers, one backward) — and the largest difference of
    the folded gradients from the loop's."""
    import torch.nn.functional as F
    from torch.func import functional_call, grad, vmap

    net = fl_models.LeNet5()
    P = {n: p.detach() for n, p in net.named_parameters()}
    Pk = {n: v.unsqueeze(0).expand(k, *v.shape).clone() for n, v in P.items()}
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(k, batch, 1, 28, 28, generator=g), torch.randint(0, 10, (k, batch), generator=g)

    def loss(p, xb, yb):
        return F.cross_entropy(functional_call(net, p, (xb,)), yb)

    one, many = grad(loss), vmap(grad(loss))

    def folded():
        p = {n: v.clone().requires_grad_(True) for n, v in Pk.items()}
        h = x.transpose(0, 1).reshape(batch, k, 28, 28)  # clients as channels: group c is client c
        h = F.conv2d(h, p["c1.weight"].reshape(k * 6, 1, 5, 5), p["c1.bias"].reshape(-1), padding=2, groups=k)
        h = F.max_pool2d(F.relu(h), 2)
        h = F.conv2d(h, p["c2.weight"].reshape(k * 16, 6, 5, 5), p["c2.bias"].reshape(-1), groups=k)
        h = F.max_pool2d(F.relu(h), 2).reshape(batch, k, 400).transpose(0, 1)
        for name, act in (("f1", True), ("f2", True), ("f3", False)):
            h = torch.baddbmm(p[f"{name}.bias"].unsqueeze(1), h, p[f"{name}.weight"].transpose(1, 2))
            h = F.relu(h) if act else h
        total = F.cross_entropy(h.reshape(k * batch, 10), y.reshape(-1), reduction="sum") / batch
        return dict(zip(p, torch.autograd.grad(total, list(p.values()))))

    routes = {"client loop": lambda: [one(P, x[c], y[c]) for c in range(k)], "vmap (engine)": lambda: many(Pk, x, y),
              "folded by hand": folded}
    times = {r: [] for r in routes}
    for f in routes.values():
        f()
    for _ in range(repeat):  # interleaved
        for r, f in routes.items():
            t0 = time.process_time()
            f()
            times[r].append(time.process_time() - t0)
    ref, got = routes["client loop"](), folded()
    diff = max(float((torch.stack([ref[c][n] for c in range(k)]) - got[n]).abs().max()) for n in P)
    loop = statistics.median(times["client loop"])
    print(f"one local step of {k} LeNet-5 clients, batch {batch} (CPU ms, medians of {repeat} interleaved runs; "
          f"folded vs loop max |Δgrad| {diff:.1e}):")
    for r, v in times.items():
        print(f"  {r:16s} {1e3 * statistics.median(v):8.1f} ms   {loop / statistics.median(v):.2f}× the loop")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="auto")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--batch", type=int, default=FIG14["batch_size"])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--allocator", choices=("keep", "default"), default="keep",
                    help="keep: freed memory stays in the process, no page faults on either side (the default); "
                         "default: glibc as configured")
    ap.add_argument("--wire-only", action="store_true", help="only the wire-format timings (no MNIST needed)")
    ap.add_argument("--wire-repeat", type=int, default=31)
    ap.add_argument("--routes", action="store_true", help="only the three routes of one local step (issue 24 §4)")
    a = ap.parse_args(argv)
    if a.allocator == "keep":
        print("allocator: freed memory kept in the process" if keep_freed_memory()
              else "allocator: could not set (no glibc mallopt): as configured")
    dev = resolve(a.device)
    if dev.type == "cpu":
        torch.set_num_threads(a.threads)
    if a.routes:
        folded_routes(a.batch)
        return
    wire_speed(dev, repeat=a.wire_repeat)
    if a.wire_only:
        return
    cd, _, _ = L._mnist_clients("one class", FIG14["clients"], a.data_dir, 0)
    kw = dict(rounds=a.rounds, clients_per_round=FIG14["clients_per_round"], local_steps=FIG14["local_steps"],
              batch_size=a.batch, client_lr=FIG14["MNIST"]["client_lr"], seed=0, device=dev)
    cases = {
        "EDEN b=0.05, batched": dict(method="EDEN", bits=FIG14["bits"], batched=True),
        "Float32, batched": dict(method="Float32", batched=True),
        "EDEN b=0.05, client loop": dict(method="EDEN", bits=FIG14["bits"], batched=False),
    }
    res = {k: [] for k in cases}
    torch.manual_seed(0)
    model = fl_models.LeNet5()
    fedavg.run(model, cd, fedavg.FedAvgConfig(**{**kw, "rounds": 1}, method="EDEN", bits=0.05))  # warm-up
    cpu = {k: [] for k in cases}
    for _ in range(a.repeat):  # interleaved: a busy machine slows every case alike
        for k, c in cases.items():
            t0, c0 = time.perf_counter(), time.process_time()
            r = fedavg.run(model, cd, fedavg.FedAvgConfig(**kw, **c))
            res[k].append((time.perf_counter() - t0, r.history["t_local"].sum(), r.history["t_compress"].sum()))
            cpu[k].append(time.process_time() - c0)
    print(f"device {dev}, {a.rounds} rounds × {a.repeat} repeats, 10 clients/round, 5 local steps, batch {a.batch}, "
          f"LeNet-5 ({sum(p.numel() for p in model.parameters())} parameters)")
    print(f"{'case':28s} {'rounds/s':>9s} {'local s/round':>14s} {'compress s/round':>17s} {'compress share':>15s}")
    med = {}
    for k, v in res.items():
        wall = statistics.median(t for t, _, _ in v)
        loc = statistics.median(lo for _, lo, _ in v) / a.rounds
        comp = statistics.median(c for _, _, c in v) / a.rounds
        med[k] = (wall, loc, comp)
        print(f"{k:28s} {a.rounds / wall:9.3f} {loc:14.4f} {comp:17.4f} {100 * comp / loc:14.2f}%")
    c_b, c_loop = statistics.median(cpu["EDEN b=0.05, batched"]), statistics.median(cpu["EDEN b=0.05, client loop"])
    print(f"CPU seconds per run (process time, all threads): batched {c_b:.2f}, client loop {c_loop:.2f} "
          f"({c_loop / c_b:.2f}×)")
    eden_b, f32, loop = med["EDEN b=0.05, batched"], med["Float32, batched"], med["EDEN b=0.05, client loop"]
    print(f"EDEN vs uncompressed rounds/s: {f32[0] / eden_b[0]:.3f}×;  batched engine vs client loop "
          f"(local training): {loop[1] / eden_b[1]:.2f}× (goal ≥ 5×)")


if __name__ == "__main__":
    main()
