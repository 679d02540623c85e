"""Resumable long runs (qlib.resume): a unit is saved once, reused only under the same inputs and code,
and a run stopped part-way and resumed equals an uninterrupted one, bit for bit, for the heavy drivers
of eden/01 (a Figure 2 dimension), eden/02 (Figure 8's (law, repetition)), eden/05 (a federated run),
quantized-mis/03 (a stage of the synthetic study), quantized-mis/05 (a molecular task and embedder),
attacks/01 (a sample size of a toy), attacks/02 (a (seed, law) of the synthetic attacks), attacks/03 (a
molecular task), attacks/04 (a (method, canary)'s trainings), mia-limits/02 (100 iterations of the
overfitting networks) and mia-limits/03 (a Table 1 network)."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pandas as pd
import pytest
import torch

from qlib import fedavg, fl_models
from qlib.resume import SUMMARY_FILE, Units, UnitsInterrupted, fingerprint, units_from_env
from qlib.stamp import STAMP_VARIABLE, library_stamp


def test_a_unit_is_saved_once_and_reused_only_under_the_same_inputs_and_code(tmp_path):
    calls = []

    def work(x):
        calls.append(x)
        return {"x": x, "t": torch.arange(3) * x}

    u = Units(tmp_path)
    a = u.run("w", {"x": 2}, lambda: work(2))
    assert calls == [2] and u.computed == 1 and u.reused == 0
    v = Units(tmp_path)                                   # a later run (a new process, the same folder)
    b = v.run("w", {"x": 2}, lambda: work(2))
    assert calls == [2] and v.reused == 1 and torch.equal(a["t"], b["t"])
    v.run("w", {"x": 3}, lambda: work(3))                 # other inputs: another unit
    assert calls == [2, 3]
    Units(tmp_path, stamp="other code").run("w", {"x": 2}, lambda: work(2))  # other code: computed again
    assert calls == [2, 3, 2]
    Units(tmp_path, reuse=False).run("w", {"x": 2}, lambda: work(2))        # --no-resume
    assert calls == [2, 3, 2, 2]
    summary = json.loads((tmp_path / SUMMARY_FILE).read_text())
    assert {"reused", "computed"} <= set(summary)
    # a damaged file (a foreign or truncated write) is computed again, not trusted
    p = Units(tmp_path).path("w", {"x": 2})
    p.write_bytes(b"not a pickle")
    w = Units(tmp_path)
    w.run("w", {"x": 2}, lambda: work(2))
    assert calls[-1] == 2 and w.computed == 1 and pickle.loads(p.read_bytes())["x"] == 2
    assert not list(tmp_path.rglob("*.tmp"))             # atomic writes leave no temporary file


def test_stop_after_interrupts_and_bad_input_is_named(tmp_path, monkeypatch):
    u = Units(tmp_path, stop_after=2)
    u.run("w", {"i": 0}, lambda: 0)
    with pytest.raises(UnitsInterrupted, match="stopped after 2 computed units"):
        u.run("w", {"i": 1}, lambda: 1)
    assert len(list((tmp_path / "w").glob("*.pkl"))) == 2  # the unit that triggered the stop is saved
    monkeypatch.setenv("QLIB_RESUME", "0")
    monkeypatch.setenv("QLIB_UNITS_STOP_AFTER", "3")
    e = units_from_env(tmp_path)
    assert e.reuse is False and e.stop_after == 3
    monkeypatch.setenv("QLIB_UNITS_STOP_AFTER", "soon")
    with pytest.raises(ValueError, match="QLIB_UNITS_STOP_AFTER"):
        units_from_env(tmp_path)
    with pytest.raises(TypeError, match="folder"):
        Units(3)
    with pytest.raises(TypeError, match="reuse"):
        Units(tmp_path, reuse="yes")
    with pytest.raises(ValueError, match="stop_after"):
        Units(tmp_path, stop_after=-1)
    with pytest.raises(ValueError, match="name"):
        Units(tmp_path).run("../up", {}, lambda: 0)
    with pytest.raises(TypeError, match="inputs"):
        Units(tmp_path).run("w", [1], lambda: 0)
    with pytest.raises(TypeError, match="fn"):
        Units(tmp_path).run("w", {}, 3)


def test_fingerprint_and_the_stamp_a_unit_is_keyed_by(tmp_path, monkeypatch):
    x = torch.arange(6.0).reshape(2, 3)
    assert fingerprint(x) == fingerprint(x.clone()) != fingerprint(x.double()) != fingerprint(x.reshape(3, 2))
    assert fingerprint(np.arange(3)) != fingerprint(np.arange(4))
    assert fingerprint(pd.DataFrame({"a": [1, 2]})) != fingerprint(pd.DataFrame({"a": [1, 3]}))
    assert fingerprint(None) == fingerprint(None) and fingerprint((x, None)) != fingerprint((x, 1))
    # outside the runner: the stamp of the whole library; in a kernel the runner started: the notebook's
    monkeypatch.delenv(STAMP_VARIABLE, raising=False)
    assert units_from_env(tmp_path).stamp == library_stamp() == Units(tmp_path).stamp and len(library_stamp()) == 64
    monkeypatch.setenv(STAMP_VARIABLE, "abc123")
    assert units_from_env(tmp_path).stamp == "abc123"
    assert units_from_env(tmp_path).path("w", {"x": 1}) != Units(tmp_path).path("w", {"x": 1})


def _interrupted_then_resumed(tmp_path, run, stop_after):
    """``run(units)`` stopped after ``stop_after`` computed units, then resumed: (result, units of the
    resumed run)."""
    with pytest.raises(UnitsInterrupted):
        run(Units(tmp_path, stop_after=stop_after))
    resumed = Units(tmp_path)
    return run(resumed), resumed


def test_figure8_sweep_resumed_equals_uninterrupted(tmp_path):
    from qlib.repro.eden import sweeps

    def run(units=None):
        return sweeps.nmse_sweep(["EDEN", "Hadamard+SQ"], [1, 4], 2**10,
                                 sweeps.NmseSweepConfig(n_clients=3, laws=("lognormal", "normal"), reps=3, seed=5),
                                 units=units)

    whole = run()
    again, units = _interrupted_then_resumed(tmp_path, run, stop_after=4)
    assert units.reused == 4 and units.computed == 2   # 2 laws × 3 repetitions, 4 saved before the stop
    pd.testing.assert_frame_equal(again, whole, check_exact=True)
    with pytest.raises(TypeError, match="units"):
        sweeps.nmse_sweep(["EDEN"], [1], 2**4, units="yes")


def test_federated_runs_resumed_equal_uninterrupted(tmp_path):
    from qlib.repro.eden import learning

    g = torch.Generator().manual_seed(0)
    X = torch.rand(120, 1, 28, 28, generator=g)
    y = torch.randint(0, 10, (120,), generator=g)
    data = fedavg.client_data(X, y, [np.arange(i * 20, i * 20 + 20) for i in range(6)])
    test = (X[:30], y[:30])

    def run(units=None):
        return learning.federated_runs(lambda: fl_models.MLP(hidden=8), data,
                                       [("Float32", 1.0), ("EDEN", 1.0), ("EDEN", 0.5)],
                                       fedavg.FedAvgConfig(rounds=3, clients_per_round=3, local_steps=2, batch_size=5,
                                                           eval_every=1, seed=2, device="cpu"),
                                       test=test, units=units)

    whole = run()
    again, units = _interrupted_then_resumed(tmp_path, run, stop_after=2)
    assert units.reused == 2 and units.computed == 1
    timed = ["t_local", "t_compress"]  # measured seconds: the first run's, by design
    pd.testing.assert_frame_equal(again.drop(columns=timed), whole.drop(columns=timed), check_exact=True)
    # other data is another unit: nothing is reused for it
    other = Units(tmp_path)
    learning.federated_runs(lambda: fl_models.MLP(hidden=8), fedavg.client_data(X.flip(0), y, [np.arange(120)]),
                            [("Float32", 1.0)],
                            fedavg.FedAvgConfig(rounds=1, clients_per_round=1, local_steps=1, batch_size=5,
                                                eval_every=0, seed=2, device="cpu"),
                            units=other)
    assert other.reused == 0 and other.computed == 1


def test_molecular_study_resumed_equals_uninterrupted(tmp_path, shared_data_dir):
    from qlib.repro.quantized_mis import molecular

    cfg = molecular.MolecularConfig(tasks=["HIA_Hou"], embedders=["maccs", "morgan"], runs=2, epochs=4,
                                    max_molecules=80)

    def run(units=None):
        return molecular.run_study(cfg, data_dir=shared_data_dir, cache_dir=tmp_path / "emb", units=units)

    whole = run()
    again, units = _interrupted_then_resumed(tmp_path / "units", run, stop_after=1)
    assert units.reused == 1 and units.computed == 1
    pd.testing.assert_frame_equal(again.frame, whole.frame, check_exact=True)
    cols = [c for c in whole.inputs.columns if c != "train_s" and c != "cache_hit"]
    pd.testing.assert_frame_equal(again.inputs[cols], whole.inputs[cols], check_exact=True)


def test_synthetic_attacks_resumed_equal_uninterrupted(tmp_path):
    from qlib.discriminator import DiscriminatorConfig
    from qlib.repro.attacks import synthetic

    cfg = synthetic.SyntheticConfig(n=8, n_val=4, models=8, epochs=3, seeds=(0, 1), names=("sign", "bits2"),
                                    grid=((1.5, 6), (2.0, 8)), discriminator=DiscriminatorConfig(epochs=1))

    def run(units=None):
        return synthetic.synthetic_attacks(cfg, device="cpu", units=units)

    whole = run()
    again, units = _interrupted_then_resumed(tmp_path, run, stop_after=3)
    assert units.reused == 3 and units.computed == 1   # 2 seeds × 2 laws
    pd.testing.assert_frame_equal(again.table, whole.table, check_exact=True)
    for name in ("r", "correct", "disc_acc", "disc_lo", "disc_hi"):
        np.testing.assert_array_equal(getattr(again, name), getattr(whole, name))


def test_mnist_table1_networks_resumed_equal_uninterrupted(tmp_path):
    from qlib.repro.mia_limits import mnist

    g = np.random.default_rng(0)
    X = g.random((160, 16)).astype(np.float32)
    y = g.integers(0, 10, 160)
    Xt, yt = g.random((30, 16)).astype(np.float32), g.integers(0, 10, 30)
    disc = mnist.fit_discretisations(X, y, [3, 5], n_fit=40, n_freq=None, seed=1)

    def run(units=None):
        return mnist.table1_accuracies(X, y, Xt, yt, disc,
                                       mnist.Table1Config(n_list=[10, 20], raw_n_list=[10], reps=2, iters=5, lr=0.05,
                                                          hidden=8, seed=3),
                                       device="cpu", units=units)

    whole = run()
    again, units = _interrupted_then_resumed(tmp_path, run, stop_after=5)
    assert units.reused == 5 and units.computed == 5   # n = 10: 2 reps × (raw, 3, 5); n = 20: 2 reps × (3, 5)
    pd.testing.assert_frame_equal(again, whole, check_exact=True)


def test_figure2_vnmse_sweep_resumed_equals_uninterrupted(tmp_path):
    from qlib.repro.eden import sweeps

    def run(units=None):
        return sweeps.vnmse_sweep(["EDEN", "QSGD"], [1, 2], [2**6, 2**8, 2**10],
                                  sweeps.VnmseSweepConfig(trials=3, seed=4, timing_trials=0), units=units)

    whole = run()
    again, units = _interrupted_then_resumed(tmp_path, run, stop_after=2)
    assert units.reused == 2 and units.computed == 1   # one unit per d
    pd.testing.assert_frame_equal(again, whole, check_exact=True)


def test_molecular_attacks_resumed_equal_uninterrupted(tmp_path, shared_data_dir):
    from qlib.repro.attacks import molecular

    cfg = molecular.MolecularAttackConfig(tasks=("Carcinogens_Lagunin", "DILI"), models=8, epochs=6,
                                          names=("sign", "bits2"), max_molecules=60)

    def run(units=None):
        return molecular.molecular_attacks(cfg, data_dir=shared_data_dir, cache_dir=tmp_path / "emb", device="cpu",
                                           units=units)

    whole = run()
    again, units = _interrupted_then_resumed(tmp_path / "units", run, stop_after=1)
    assert units.reused == 1 and units.computed == 1   # one unit per task
    pd.testing.assert_frame_equal(again.table, whole.table, check_exact=True)
    for a, b in zip(again.tasks, whole.tasks):
        for name in ("keep", "r", "scores", "correct"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name))


def test_toy_attack_study_resumed_equals_uninterrupted(tmp_path):
    from qlib.repro.attacks import toys

    toy = toys.empirical_toy(toys.zipf_law(6, 1.0))

    def run(units=None):
        return toys.attack_study(toy, [4, 8, 16],
                                 toys.AttackStudyConfig(shadows=8, pairs=400, min_targets=4, reps=5, seed=2),
                                 units=units)

    whole = run()
    again, units = _interrupted_then_resumed(tmp_path, run, stop_after=2)
    assert units.reused == 2 and units.computed == 1   # one unit per sample size
    pd.testing.assert_frame_equal(again.table, whole.table, check_exact=True)
    assert again.scores.keys() == whole.scores.keys()
    for k in whole.scores:
        for a, b in zip(again.scores[k], whole.scores[k]):
            np.testing.assert_array_equal(a, b)


def test_overfit_mlp_resumed_equals_uninterrupted(tmp_path, monkeypatch):
    from qlib.mia import overfit

    monkeypatch.setattr(overfit, "UNIT_ITERATIONS", 4)
    cfg = overfit.OverfitConfig(n=20, d=3, width=16, iters=10, lr=0.05, n_val=30, seeds=(0, 1), eval_every=3)

    def run(units=None):
        return overfit.train_overfit_mlp(cfg, device="cpu", units=units)

    whole = run()
    again, units = _interrupted_then_resumed(tmp_path, run, stop_after=2)
    assert units.reused == 2 and units.computed == 1   # iterations 0-3, 4-7, 8-10
    for f in ("iterations", "thresholds", "train_frac", "val_frac", "train_mse", "val_mse"):
        np.testing.assert_array_equal(getattr(again, f), getattr(whole, f))


def test_synthetic_study_resumed_equals_uninterrupted(tmp_path):
    from qlib.discriminator import DiscriminatorConfig
    from qlib.repro.quantized_mis import study

    cfg = study.StudyConfig(runs=6, epochs=8, n=10, n_val=10, grid=((1.5, 6), (2.0, 8)), names=("sign", "bits2"),
                            discriminator=DiscriminatorConfig(epochs=2))

    def run(units=None):
        return study.run_study(cfg, device="cpu", units=units)

    whole = run()
    again, units = _interrupted_then_resumed(tmp_path, run, stop_after=1)
    assert units.reused == 1 and units.computed == 1   # the training stage, then the discriminator
    for f in ("r", "n_distinct", "acc_val", "acc_train", "loss_in", "loss_out", "thr_mis", "thr_lo", "thr_hi",
              "disc_mis", "disc_lo", "disc_hi"):
        np.testing.assert_array_equal(getattr(again, f), getattr(whole, f), err_msg=f)


def test_dp_audit_resumed_equals_uninterrupted(tmp_path):
    from qlib.repro.attacks import dp_audit

    task = dp_audit.diagnostic_task()

    def run(units=None):
        return dp_audit.audit(task,
                              dp_audit.AuditConfig(eps_values=[1.0, 4.0], runs=6, rqp_sigma=1.0, seed=3,
                                                   setting={"T": 3, "m": 8, "eta": 0.1, "clip": 1.0, "b": 4, "M": 1.0, "delta": 1e-5}),
                              units=units)

    whole = run()
    again, units = _interrupted_then_resumed(tmp_path, run, stop_after=2)
    assert units.reused == 2 and units.computed == 2   # 2 methods × 2 canaries
    pd.testing.assert_frame_equal(again.table, whole.table, check_exact=True)


def test_a_large_array_in_a_units_inputs_is_keyed_by_its_values(tmp_path):
    """numpy elides the middle of a large array's repr: the key must not (two arrays, one repr)."""
    a, b = np.zeros(5000), np.zeros(5000)
    b[2500] = 1.0
    assert repr(a) == repr(b)
    u = Units(tmp_path, stamp="s")
    assert u.path("w", {"x": a}) != u.path("w", {"x": b})
    assert u.path("w", {"x": a}) == u.path("w", {"x": a.copy()})


def test_cpu_pool_refuses_a_bad_process_count():
    from qlib.devices import cpu_pool

    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="processes must be an integer >= 1"):
            cpu_pool(bad)
    with pytest.raises(ValueError, match="memory must be one of"):
        cpu_pool(2, memory="yes")


def _worker_environ(key):
    import os

    return os.environ.get(key)


def test_a_huge_pages_pool_starts_its_workers_with_the_tunable_and_leaves_ours_alone(monkeypatch):
    """``memory="huge-pages"``: the workers' environment holds glibc's hugetlb tunable (beside the other
    tunables already set, an old hugetlb value replaced); this process's environment is as it was."""
    import os

    from qlib.devices import HUGE_PAGES_TUNABLE, cpu_pool

    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.check=0:glibc.malloc.hugetlb=0")
    with cpu_pool(1, memory="huge-pages") as pool:
        got = pool.submit(_worker_environ, "GLIBC_TUNABLES").result()
    assert got == f"glibc.malloc.check=0:{HUGE_PAGES_TUNABLE}"
    assert os.environ["GLIBC_TUNABLES"] == "glibc.malloc.check=0:glibc.malloc.hugetlb=0"
    monkeypatch.delenv("GLIBC_TUNABLES")
    with cpu_pool(1) as pool:
        assert pool.submit(_worker_environ, "GLIBC_TUNABLES").result() is None
    with cpu_pool(1, memory="huge-pages") as pool:
        assert pool.submit(_worker_environ, "GLIBC_TUNABLES").result() == HUGE_PAGES_TUNABLE
    assert "GLIBC_TUNABLES" not in os.environ


def test_return_freed_memory_gives_back_freed_heap_pages():
    """``return_freed_memory`` (glibc's ``malloc_trim(0)``): 256 MiB of 64 KiB heap blocks, freed but for the
    last (which pins the heap's top, so glibc's automatic trimming cannot return them), stay resident until
    it runs, and are returned by it. Run in a fresh process."""
    import subprocess
    import sys

    code = r"""
import ctypes, ctypes.util
from qlib.devices import return_freed_memory
libc = ctypes.CDLL(ctypes.util.find_library("c"))
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, (ctypes.c_size_t,)
libc.free.argtypes = (ctypes.c_void_p,)
libc.mallopt(-1, 2**30)   # M_TRIM_THRESHOLD: no automatic trimming meanwhile
def rss():
    return int(open("/proc/self/statm").read().split()[1]) * 4096
ps = [libc.malloc(2**16) for _ in range(4097)]   # under the mmap threshold: on the heap
for p in ps:
    ctypes.memset(p, 1, 2**16)
for p in ps[:-1]:
    libc.free(p)
before = rss()
applied = return_freed_memory()
print(applied, before - rss())
"""
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    applied, freed = res.stdout.split()
    if applied != "True":
        pytest.skip("not glibc: return_freed_memory does not apply")
    assert int(freed) > 200 * 2**20  # most of the 256 MiB went back


def test_huge_pages_fault_once_per_two_mib():
    """The tunable that ``memory="huge-pages"`` gives the workers: a fresh 128 MiB block written once faults
    about once per 2 MiB huge page instead of once per 4 KiB page (glibc >= 2.35 with transparent huge
    pages in ``madvise`` or ``always`` mode; skipped elsewhere). Run in fresh processes, as a worker."""
    import os
    import platform
    import subprocess
    import sys
    from pathlib import Path

    from qlib.devices import HUGE_PAGES_TUNABLE

    thp = Path("/sys/kernel/mm/transparent_hugepage/enabled")
    lib, ver = platform.libc_ver()
    if lib != "glibc" or tuple(int(v) for v in ver.split(".")[:2]) < (2, 35) or not thp.exists() \
            or "[never]" in thp.read_text():
        pytest.skip("needs glibc >= 2.35 and transparent huge pages")
    code = r"""
import ctypes, ctypes.util, resource
libc = ctypes.CDLL(ctypes.util.find_library("c"))
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, (ctypes.c_size_t,)
n = 2**27
f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
p = libc.malloc(n)
ctypes.memset(p, 1, n)
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
"""
    faults = {}
    for tun in ("", HUGE_PAGES_TUNABLE):
        env = {k: v for k, v in os.environ.items() if k != "GLIBC_TUNABLES"}
        if tun:
            env["GLIBC_TUNABLES"] = tun
        faults[tun] = int(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                         env=env).stdout)
    pages = 2**27 // 4096
    assert faults[""] > pages // 2  # a fault per 4 KiB page
    assert faults[HUGE_PAGES_TUNABLE] < pages // 50  # about one per 2 MiB (64) and the block's edges


def test_keep_freed_memory_reuses_a_freed_large_block():
    """``keep_freed_memory`` (glibc): a 128 MiB block freed and allocated again comes from the kept heap, so
    writing it again faults no page; without it each allocation is a fresh ``mmap`` whose every 4 KiB page
    faults (the 12 s of system time per Figure 8 unit). Run in fresh processes, as a worker would."""
    import subprocess
    import sys

    code = r"""
import ctypes, ctypes.util, resource, sys
from qlib.devices import keep_freed_memory
applied = keep_freed_memory() if sys.argv[1] == "1" else False
libc = ctypes.CDLL(ctypes.util.find_library("c"))
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, (ctypes.c_size_t,)
libc.free.argtypes = (ctypes.c_void_p,)
n, faults = 2**27, []
for _ in range(3):
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    p = libc.malloc(n)
    ctypes.memset(p, 1, n)
    libc.free(p)
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
print(applied, *faults)
"""
    out = {}
    for flag in ("0", "1"):
        res = subprocess.run([sys.executable, "-c", code, flag], capture_output=True, text=True, check=True)
        applied, *faults = res.stdout.split()
        out[flag] = (applied == "True", [int(f) for f in faults])
    if not out["1"][0]:
        pytest.skip("not glibc: keep_freed_memory does not apply")
    pages = 2**27 // 4096
    assert min(out["0"][1]) > pages // 2  # every allocation a fresh mapping
    assert max(out["1"][1][1:]) < pages // 100  # the kept block reused: (almost) no page faults


def test_federated_runs_in_worker_processes_are_the_same_histories(tmp_path):
    """``processes=2``: the runs in spawned workers give the per-run loop's histories bit for bit (measured
    times aside), saved units are reused, and a model_fn that cannot pickle is refused by name."""
    import functools

    from qlib.repro.eden import learning

    g = torch.Generator().manual_seed(0)
    X = torch.rand(120, 1, 28, 28, generator=g)
    y = torch.randint(0, 10, (120,), generator=g)
    data = fedavg.client_data(X, y, [np.arange(i * 20, i * 20 + 20) for i in range(6)])
    kw = dict(config=fedavg.FedAvgConfig(rounds=3, clients_per_round=3, local_steps=2, batch_size=5, eval_every=1,
                                         seed=2, device="cpu"), test=(X[:30], y[:30]))
    runs = [("Float32", 1.0), ("EDEN", 1.0), ("EDEN", 0.5)]
    model = functools.partial(fl_models.MLP, hidden=8)
    timed = ["t_local", "t_compress"]
    loop = learning.federated_runs(model, data, runs, **kw).drop(columns=timed)
    units = Units(tmp_path)
    pooled = learning.federated_runs(model, data, runs, units=units, processes=2, **kw).drop(columns=timed)
    pd.testing.assert_frame_equal(pooled, loop, check_exact=True)
    assert units.computed == 3
    again = Units(tmp_path)
    learning.federated_runs(model, data, runs, units=again, processes=2, **kw)
    assert again.reused == 3 and again.computed == 0
    with pytest.raises(ValueError, match="model_fn cannot go to a worker"):
        learning.federated_runs(lambda: fl_models.MLP(hidden=8), data, runs, processes=2, **kw)
