"""No allocation before a size check (issue 30, item 6): every call below asked for terabytes (or looped for
minutes) before it looked at its sizes; each must now refuse at once with a ValueError naming the argument,
the bytes it would need and the limit (:func:`qlib.validation.check_alloc`). The sizes are far beyond any
machine, so a call that lost its guard fails here fast (an allocation error, not an allocation); the whole
sweep over every public callable is ``python benchmarks/alloc_probe.py``."""

from __future__ import annotations

import time

import numpy as np
import pytest
import torch

from qlib import compressors, data, dpsgd, eden, engine_models, fl_models, hadamard, synthetic
from qlib.mia import bounds, exact, game

HUGE = 10**12


def _x():
    return torch.randn(2, 16, generator=torch.Generator().manual_seed(0))


def _task():
    g = np.random.default_rng(0)
    X, y = g.normal(size=(20, 3)), (g.random(20) < 0.5).astype(np.float64)
    return dpsgd.Task(name="toy", model="logreg", X_train=X, y_train=y, X_test=X, y_test=y, n_classes=2)


CASES = {
    "hadamard.rotation_signs(D=2**40)": (lambda: hadamard.rotation_signs(0, (), 1, 2**40), "D"),
    "hadamard.rotation_signs(batch)": (lambda: hadamard.rotation_signs(0, (HUGE,), 1, 16), "batch"),
    "hadamard.rotation_sign_bits(k)": (lambda: hadamard.rotation_sign_bits(0, (), HUGE, 16), "k"),
    "hadamard.rademacher(shape)": (lambda: hadamard.rademacher((HUGE, 4), torch.Generator()), "shape"),
    "hadamard.hadamard_matrix(m)": (lambda: hadamard.hadamard_matrix(2**30), "m"),
    "hadamard.seeded_rht(k)": (lambda: hadamard.seeded_rht(torch.ones(2, 16), 0, HUGE), "k"),
    "eden.received_mask(D)": (lambda: eden.received_mask(HUGE, 0.1), "D"),
    "eden.received_mask(batch, random)": (lambda: eden.received_mask(16, 0.1, "random", batch=(HUGE,)), "batch"),
    "SQHuffman(levels=1e9)": (lambda: compressors.SQHuffman(10**9 * 2), "levels"),
    "CountSketch(rows).compress": (lambda: compressors.CountSketch(2.0, rows=HUGE).compress(_x(), 0), "rows"),
    "engine_models.MLP(hidden).init": (lambda: engine_models.MLP(3, HUGE).init(2, torch.Generator()), "K"),
    "engine_models.Linear.init(K)": (lambda: engine_models.Linear(3).init(HUGE, torch.Generator()), "K"),
    "engine_models.init_params(K)": (lambda: engine_models.init_params(engine_models.Linear(3), HUGE, 0), "K"),
    "fl_models.ResNet9(n_classes)": (lambda: fl_models.ResNet9(n_classes=HUGE), "n_classes"),
    "fl_models.MLP(hidden)": (lambda: fl_models.MLP(hidden=HUGE), "hidden"),
    "fl_models.CharLSTM(vocab)": (lambda: fl_models.CharLSTM(vocab=HUGE), "vocab"),
    "data.partition_iid(n=1e12)": (lambda: data.partition_iid(HUGE, 4), "n"),
    "synthetic.sample(shape)": (lambda: synthetic.sample([synthetic.make_law(2, 1.5, dim=3)], (HUGE,),
                                                         torch.Generator()), "shape"),
    "mia.bounds.max_delta_discrete(n=1e12)": (lambda: bounds.max_delta_discrete(np.array([0.5, 0.5]), HUGE), "n"),
    "simulate_mia_game(n=1e9)": (lambda: game.simulate_mia_game(game.discrete_sampler([0.5, 0.5]),
                                                                game.count_algorithm(2), lambda t, z: z == 0,
                                                                game.GameConfig(10**9)),
                                 "n"),
    "dpsgd.train(T=1e12)": (lambda: dpsgd.train(_task(), "dpsgd",
                                                dpsgd.DPSGDConfig(runs=1, T=HUGE, m=4, eta=0.1, clip=1.0,
                                                                  device="cpu")), "T"),
    "mia.exact.count_vectors(10**6, 10**6)": (lambda: exact.count_vectors(10**6, 10**6), "max_states"),
    "mia.exact.n_count_vectors(10**6, 10**6)": (lambda: exact.n_count_vectors(10**6, 10**6), "K"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_huge_size_is_refused_at_once_naming_the_argument(case):
    call, name = CASES[case]
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match=rf"(?<![A-Za-z0-9_]){name}(?![A-Za-z0-9_])") as exc:
        call()
    assert time.perf_counter() - t0 < 1.0, f"{case} took {time.perf_counter() - t0:.1f} s to refuse"
    assert "memory limit" in str(exc.value) or "max_states" in str(exc.value) or "MAX_COUNT_BITS" in str(exc.value)


def test_the_limit_is_a_setting(monkeypatch):
    from qlib import validation

    monkeypatch.setenv(validation.MEMORY_ENV_VAR, "1M")
    with pytest.raises(ValueError, match=r"\bn\b=1000000 would need 15\.3 MiB .* memory limit of 1 MiB"):
        data.partition_iid(10**6, 4)
    monkeypatch.setenv(validation.MEMORY_ENV_VAR, "1G")
    assert len(data.partition_iid(10**6, 4)) == 4
