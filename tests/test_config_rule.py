"""The settings rule (CONTRIBUTING, "The settings rule"), checked on every callable that takes a settings record.

A *driver* here is a public function or method of a public module of ``qlib`` with a parameter ``config``
annotated with one record class (``Cfg`` or ``Cfg | None``, the class a dataclass): they are found in the
source with :mod:`ast` and the annotation resolved in the module, so a new driver cannot be missed. For each:

(a) the record is a frozen dataclass; the driver takes no ``**kwargs`` (no keyword overrides beside the
    record: every name a caller may pass is in the signature or the record's fields, which ``help()`` and
    editors show) and no ``*args``; ``config`` may default to None (the record's defaults) only where the
    record builds from its own defaults (else it is required). Every call of :func:`qlib.validation.resolve_config` in ``qlib`` is in a
    driver, on that driver's record and its ``config``.
(b) on its bad-input baseline (``tests/badinput/baselines``; a driver the harness does not call says why in
    ``allowlist.NOT_CALLED``), a mapping in place of the record is a ``TypeError`` naming ``config``, and a
    field of the record given as a keyword beside it is a ``TypeError`` naming that field — before anything
    runs; the record pickles and copies to an equal record (records go to worker processes).
(c) for the drivers of :data:`CASES`, on tiny data: equal records give the same result bit for bit, whether
    built with a field or given it by ``dataclasses.replace`` (the driver reads nothing but its arguments).
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import importlib
import pickle
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn as nn

from qlib import data, discriminator, distributed, dpsgd, engine, engine_models, fedavg, recorder, synthetic
from qlib.mia import game, overfit
from qlib.repro.mia_limits import mnist
from qlib.repro.quantized_mis import molecular, ranking_probe, study, synthetic_claims, table3_probe

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "qlib"
#: result fields that are not results: measured times, and whether an embedding came from the cache
TIMES = {"seconds", "t_local", "t_compress", "train_s", "cache_hit"}
SMALL_TASK = "Carcinogens_Lagunin"   # the smallest TDC task file (280 rows)


# ---------------------------------------------------------------------------------------------- finding the drivers
def public_modules(pkg: Path = PKG) -> dict[str, ast.Module]:
    """Dotted name → parsed source of every public module of the package at ``pkg``."""
    out = {}
    for path in sorted(pkg.rglob("*.py")):
        parts = path.relative_to(pkg.parent).with_suffix("").parts
        if any(p.startswith("_") and p != "__init__" for p in parts):
            continue
        out[".".join(p for p in parts if p != "__init__")] = ast.parse(path.read_text(encoding="utf-8"), str(path))
    return out


def _record_name(annotation: ast.expr | None) -> str | None:
    """``Cfg``/``mod.Cfg`` from ``Cfg``, ``Cfg | None`` or ``"Cfg | None"``; None for anything else (a union
    of two types, ``dict``, no annotation)."""
    if annotation is None:
        return None
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        annotation = ast.parse(annotation.value, mode="eval").body
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        sides = [annotation.left, annotation.right]
        if not any(isinstance(s, ast.Constant) and s.value is None for s in sides):
            return None
        annotation = next(s for s in sides if not (isinstance(s, ast.Constant) and s.value is None))
    if isinstance(annotation, (ast.Name, ast.Attribute)):
        return ast.unparse(annotation)
    return None


@dataclass
class Driver:
    qualname: str                 # module.function or module.Class.method
    node: ast.FunctionDef
    record_name: str              # as annotated (resolved in the module by resolve_record)
    method: bool


def find_drivers(modules: dict[str, ast.Module], is_record: Callable[[str, str], bool]) -> list[Driver]:
    """Every public function or method (``__init__`` included) with a ``config`` parameter annotated with one
    record; ``is_record(module, name)`` says whether ``name`` names a dataclass in that module."""
    out = []

    def walk(node, module, prefix, method):
        for n in ast.iter_child_nodes(node):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and (not n.name.startswith("_")
                                                                          or n.name == "__init__"):
                a = n.args
                cfg = next((x for x in a.posonlyargs + a.args + a.kwonlyargs if x.arg == "config"), None)
                name = _record_name(cfg.annotation) if cfg is not None else None
                if name is not None and is_record(module, name):
                    out.append(Driver(f"{prefix}.{n.name}", n, name, method))
            elif isinstance(n, ast.ClassDef) and not n.name.startswith("_"):
                walk(n, module, f"{prefix}.{n.name}", True)

    for module, tree in modules.items():
        walk(tree, module, module, False)
    return out


def static_violations(driver: Driver, record: type) -> list[str]:
    """Why ``driver`` (its record class ``record``) breaks part (a) of the rule (empty when it does not)."""
    out, a, q = [], driver.node.args, driver.qualname
    params = a.posonlyargs + a.args + a.kwonlyargs
    if a.kwarg is not None:
        out.append(f"{q} takes **{a.kwarg.arg}: keyword overrides beside the record hide the names (the rule: "
                   "explicit keyword parameters or the record)")
    if a.vararg is not None:
        out.append(f"{q} takes *{a.vararg.arg}: settings by position hide their names")
    if not (dataclasses.is_dataclass(record) and record.__dataclass_params__.frozen):
        out.append(f"{q}: its record {record.__name__} is not a frozen dataclass")
        return out
    defaults = dict(zip([x.arg for x in a.posonlyargs + a.args][::-1], a.defaults[::-1]))
    defaults.update({x.arg: d for x, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None})
    default = defaults.get("config")
    try:
        record()
        builds = True
    except TypeError:
        builds = False
    if not builds and default is not None:
        out.append(f"{q}: config must be required ({record.__name__} has fields without defaults)")
    if not any(p.arg == "config" for p in params):
        out.append(f"{q} has no config parameter")
    return out


def resolve_config_calls(modules: dict[str, ast.Module]) -> list[tuple[str, int, str]]:
    """(module, line, enclosing public callable or '') of every call of ``resolve_config`` in the modules."""
    out = []

    def walk(node, module, owner):
        for n in ast.iter_child_nodes(node):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                walk(n, module, f"{owner}.{n.name}" if owner else f"{module}.{n.name}")
            elif isinstance(n, ast.ClassDef):
                walk(n, module, f"{owner}.{n.name}" if owner else f"{module}.{n.name}")
            else:
                if isinstance(n, ast.Call) and isinstance(n.func, (ast.Name, ast.Attribute)) and \
                        (getattr(n.func, "id", None) or getattr(n.func, "attr", None)) == "resolve_config":
                    out.append((module, n.lineno, owner))
                walk(n, module, owner)

    for module, tree in modules.items():
        if module != "qlib.validation":
            walk(tree, module, "")
    return out


def _resolve(module: str, name: str) -> Any:
    obj = importlib.import_module(module)
    for part in name.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _is_record(module: str, name: str) -> bool:
    obj = _resolve(module, name)
    return isinstance(obj, type) and dataclasses.is_dataclass(obj)


MODULES = public_modules()
DRIVERS = {d.qualname: d for d in find_drivers(MODULES, _is_record)}


def _record_of(d: Driver) -> type:
    return _resolve(d.qualname.rsplit(".", 2 if d.method else 1)[0], d.record_name)


def _callable(q: str):
    """The function or method a driver's qualified name names (a class for its ``__init__``)."""
    q = q[: -len(".__init__")] if q.endswith(".__init__") else q
    parts = q.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for p in parts[i:]:
            obj = getattr(obj, p)
        return q, obj
    raise LookupError(q)


# ---------------------------------------------------------------------------------------------- (a) every driver
def test_drivers_are_found():
    assert len(DRIVERS) >= 30, sorted(DRIVERS)      # today 36: the test must not go blind (a renamed parameter)
    assert "qlib.engine.train" in DRIVERS and "qlib.recorder.RQRecorder.__init__" in DRIVERS


@pytest.mark.parametrize("q", sorted(DRIVERS))
def test_a_driver_takes_one_frozen_record_and_no_keyword_overrides(q):
    bad = static_violations(DRIVERS[q], _record_of(DRIVERS[q]))
    assert not bad, "\n".join(bad)


def test_every_resolve_config_call_is_in_a_driver_on_its_record():
    bad = []
    for module, line, owner in resolve_config_calls(MODULES):
        d = DRIVERS.get(owner)
        if d is None:
            bad.append(f"{module}:{line}: resolve_config in {owner or 'module code'}, which is no driver (a public "
                       "callable with `config: Record | None`)")
            continue
        call = next(n for n in ast.walk(d.node) if isinstance(n, ast.Call) and n.lineno == line
                    and ast.unparse(n.func).endswith("resolve_config"))
        rec = _resolve(module, ast.unparse(call.args[0])) if call.args else None
        if rec is not _record_of(d) or len(call.args) < 2 or ast.unparse(call.args[1]) != "config":
            bad.append(f"{module}:{line}: {owner} resolves {ast.unparse(call)}, not resolve_config("
                       f"{d.record_name}, config)")
    assert not bad, "\n".join(bad)


def test_the_static_checker_sees_each_breach():
    @dataclasses.dataclass(frozen=True)
    class Rec:
        seed: int = 0

    @dataclasses.dataclass(frozen=True)
    class Needs:
        n: int

    @dataclasses.dataclass
    class Loose:
        seed: int = 0

    src = ("def ok(x, config: Rec | None = None, *, device='cpu'): pass\n"
           "def over(x, config: Rec | None = None, **overrides): pass\n"
           "def pos(x, *settings, config: Rec | None = None): pass\n"
           "def loose(x, config: Loose | None = None): pass\n"
           "def required(x, config: Rec): pass\n"
           "def optional(x, config: Needs | None = None): pass\n"
           "def needs(x, config: Needs): pass\n"
           "def other(x, config: dict | None = None): pass\n"
           "def both(x, config: 'Rec | dict'): pass\n"
           "class C:\n    def __init__(self, config: 'Rec | None' = None, **kw): pass\n"
           "def driver(config: Rec | None = None):\n    return resolve_config(Rec, config)\n"
           "def helper(cfg):\n    return resolve_config(Rec, cfg)\n")
    ns = {"Rec": Rec, "Needs": Needs, "Loose": Loose}
    mods = {"m": ast.parse(src)}
    found = {d.qualname: d for d in find_drivers(mods, lambda m, n: dataclasses.is_dataclass(ns.get(n)))}
    assert set(found) == {"m.ok", "m.over", "m.pos", "m.loose", "m.required", "m.optional", "m.needs",
                          "m.C.__init__", "m.driver"}
    count = {q: len(static_violations(d, ns[d.record_name])) for q, d in found.items()}
    assert count == {"m.ok": 0, "m.over": 1, "m.pos": 1, "m.loose": 1, "m.required": 0, "m.optional": 1,
                     "m.needs": 0, "m.C.__init__": 1, "m.driver": 0}
    calls = resolve_config_calls(mods)
    assert [(line, owner) for _, line, owner in calls] == [(13, "m.driver"), (15, "m.helper")]


# ---------------------------------------------------------------------------------------------- (b) on the baselines
@pytest.fixture(scope="module")
def baselines():
    from badinput import allowlist, harness, load_baselines

    return load_baselines(), allowlist.NOT_CALLED, harness


@pytest.mark.parametrize("q", sorted(DRIVERS))
def test_a_driver_refuses_what_is_not_its_record_before_it_runs(q, baselines):
    table, not_called, harness = baselines
    name, fn = _callable(q)
    if harness.not_called_reason(name, not_called):
        pytest.skip(f"not called by the bad-input harness: {harness.not_called_reason(name, not_called)}")
    assert name in table, f"{name} has no bad-input baseline (tests/badinput/baselines)"
    record = _record_of(DRIVERS[q])
    base = table[name]()
    cfg = base.get("config")
    if cfg is None:
        cfg = record()
    assert pickle.loads(pickle.dumps(cfg)) == cfg == copy.deepcopy(cfg)   # to a worker process, as it is
    with pytest.raises(TypeError, match=r"\bconfig\b"):
        harness.call(fn, {**base, "config": {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)}})
    field = next(f.name for f in dataclasses.fields(record) if f.name not in harness.signature_of(fn).parameters)
    with pytest.raises(TypeError, match=rf"\b{field}\b"):
        fn(**{**base, field: getattr(cfg, field)})


# ---------------------------------------------------------------------------------------------- (c) on tiny data
def _same(a, b, where="result"):
    """``a`` and ``b`` equal bit for bit (NaN equal to NaN), measured times left out."""
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        assert type(a) is type(b), where
        for f in dataclasses.fields(a):
            if f.name not in TIMES:
                _same(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")
    elif isinstance(a, dict):
        assert set(a) == set(b), where
        for k in a:
            if k not in TIMES:
                _same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, pd.DataFrame):
        keep = [c for c in a.columns if not (isinstance(c, str) and c in TIMES)]
        pd.testing.assert_frame_equal(a[keep], b[keep], check_exact=True, obj=where)
    elif isinstance(a, torch.Tensor):
        assert torch.equal(a, b) or (a.shape == b.shape and torch.equal(a.isnan(), b.isnan())
                                     and torch.equal(a.nan_to_num(), b.nan_to_num())), where
    elif isinstance(a, (np.ndarray, np.generic)):
        np.testing.assert_array_equal(a, b, err_msg=where)
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{where}[{i}]")
    elif isinstance(a, float) and np.isnan(a):
        assert isinstance(b, float) and np.isnan(b), where
    else:
        assert a == b, where


@dataclass
class Case:
    """A driver on tiny data: ``call(config)``, its record ``cls``, a base record's fields and a change of some
    of them (values other than the base's)."""

    cls: type
    call: Callable[[Any], Any]
    base: dict
    change: dict


def _engine():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(3, 10, 2, generator=g)
    y = (X[..., 0] > 0).float()
    model = engine_models.Linear(2)
    th0 = engine_models.init_params(model, 3, 0)
    return Case(engine.TrainConfig, lambda c: engine.train(model, th0, X, y, c),
                dict(epochs=3, lr=1e-2, device="cpu"), dict(epochs=5, record_loss=True))


def _dpsgd():
    rng = np.random.default_rng(0)
    X = np.c_[rng.normal(size=(30, 3)), np.ones(30)]
    y = (X[:, 0] > 0).astype(np.int64)
    task = dpsgd.Task("toy", "logreg", X, y, X[:10], y[:10])
    return Case(dpsgd.DPSGDConfig, lambda c: dpsgd.train(task, "rqp", c),
                dict(runs=2, T=4, m=5, eta=1.0, clip=0.5, sigma=0.5, q=0.9, b=4, M=0.3, device="cpu"),
                dict(sigma=(0.1, 0.2), seed=3))


class _Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 3)

    def forward(self, x):
        return self.lin(x)


def _fedavg():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(40, 4, generator=g)
    y = X[:, :3].argmax(1)
    cd = fedavg.client_data(X, y, data.partition_iid(40, 4, seed=0))
    torch.manual_seed(0)
    model = _Tiny()
    return Case(fedavg.FedAvgConfig, lambda c: fedavg.run(model, cd, c),
                dict(method="EDEN", bits=2.0, rounds=2, clients_per_round=2, batch_size=4, device="cpu"),
                dict(rounds=3, seed=5))


def _recorder():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(2, 12, 2, generator=g)
    y = (X[..., 0] > 0).float()
    Xv = torch.randn(2, 6, 2, generator=g)
    yv = (Xv[..., 0] > 0).float()
    model = engine_models.Linear(4)
    th0 = engine_models.init_params(model, 2, 0)

    def call(c):
        rec = recorder.RQRecorder(model, ["sign", "bits2"], Xv, yv, c)
        engine.train(model, th0, X, y, engine.TrainConfig(epochs=rec.epochs, lr=1e-1, device="cpu"), callbacks=[rec],
                     transform=synthetic.features)
        return {"r": rec.r, "delta2": rec.delta2, "best": rec.best_epoch, "n_distinct": rec.n_distinct,
                "losses": rec.losses}
    return Case(recorder.RecorderConfig, call, dict(epochs=6, transform=synthetic.features, device="cpu"),
                dict(keep_losses=True, block=2, backend="torch"))


def _discriminator():
    g = torch.Generator().manual_seed(0)
    G, R, n, p, d = 2, 8, 3, 3, 2
    args = (torch.randn(G, R, p, generator=g), torch.randn(1, R, n, d, generator=g), torch.rand(G, R, n, generator=g),
            torch.randn(1, R, n, d, generator=g), torch.rand(G, R, n, generator=g) + 0.3)
    runs = discriminator.split_runs(R, seed=0)
    return Case(discriminator.DiscriminatorConfig,
                lambda c: discriminator.train_discriminators(*args, runs, group_law=[0, 0], config=c),
                dict(hidden=4, epochs=2, device="cpu"), dict(hidden=5, seed=2))


def _logistic_regression():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(12, 3, generator=g, dtype=torch.float64)
    y = torch.where(X[:, 0] > 0, 1.0, -1.0).double()
    parts = [np.arange(0, 6), np.arange(6, 12)]
    return Case(distributed.LogisticRegressionConfig, lambda c: distributed.logistic_regression(X, y, parts, c),
                dict(method="EDEN", bits=1.0, rounds=2), dict(rounds=3, l2=0.1))


def _overfit():
    return Case(overfit.OverfitConfig, lambda c: overfit.train_overfit_mlp(c, device="cpu"),
                dict(n=6, d=3, width=8, iters=3, n_val=8, eval_every=1), dict(iters=4, seeds=(0, 1)))


def _game():
    p = np.array([0.2, 0.3, 0.5])
    args = (game.discrete_sampler(p), game.count_algorithm(3), game.discrete_bayes_attack(p, 4, 0.5))
    return Case(game.GameConfig, lambda c: game.simulate_mia_game(*args, c), dict(n=4, trials=200, chunk=64),
                dict(trials=300, seed=3))


def _table1():
    rng = np.random.default_rng(0)
    X = rng.random((60, 6)).astype(np.float32)
    y = rng.integers(0, 10, 60)
    Xt, yt = X[:20], y[:20]
    disc = mnist.fit_discretisations(X, y, [2], n_fit=10, n_freq=20, seed=0)
    return Case(mnist.Table1Config, lambda c: mnist.table1_accuracies(X, y, Xt, yt, disc, c, device="cpu"),
                dict(n_list=[10], raw_n_list=[], reps=1, iters=2, lr=0.05, hidden=4), dict(raw_n_list=(10,), seed=2))


def _train_task():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(20, 4))
    y = (X[:, 0] > 0).astype(float)
    return Case(molecular.TaskConfig, lambda c: molecular.train_task(X, y, "classification", c),
                dict(runs=2, epochs=2, hidden=4, quantizers=("sign", "bits2"), also=()), dict(epochs=3, scope="model"))


_STUDY = dict(runs=3, epochs=3, n=8, n_val=8, lr=1e-2, grid=[(1.5, 6)], names=["sign", "bits2"], discriminator=None)


def _quiet(fn):
    def call(c):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(c)
    return call


def _study():
    return Case(study.StudyConfig, _quiet(lambda c: study.run_study(c, device="cpu")), _STUDY, dict(epochs=4, seed=1))


def _copies():
    return Case(study.StudyConfig, lambda c: ranking_probe.copies_study(c, device="cpu"), _STUDY,
                dict(epochs=4, seed=1))


def _reading():
    return Case(study.StudyConfig, _quiet(lambda c: synthetic_claims.reading_effect(c, device="cpu")["res"]),
                {k: v for k, v in _STUDY.items() if k != "names"}, dict(seed=1))


def _molecular(data_dir, tmp):
    return Case(molecular.MolecularConfig, lambda c: molecular.run_study(c, data_dir=data_dir, cache_dir=tmp),
                dict(tasks=[SMALL_TASK], embedders=["maccs"], runs=2, epochs=2, max_molecules=30), dict(epochs=3, seed=1))


def _probe(data_dir, tmp):
    return Case(table3_probe.ProbeConfig,
                lambda c: table3_probe.probe([SMALL_TASK], c, data_dir=data_dir, cache_dir=tmp),
                dict(runs=2, epochs=1, variants=("default",), hidden=4), dict(hidden=3, seed=1))


CASES = {"qlib.engine.train": _engine, "qlib.dpsgd.train": _dpsgd, "qlib.fedavg.run": _fedavg,
         "qlib.recorder.RQRecorder.__init__": _recorder, "qlib.discriminator.train_discriminators": _discriminator,
         "qlib.distributed.logistic_regression": _logistic_regression,
         "qlib.mia.overfit.train_overfit_mlp": _overfit, "qlib.mia.game.simulate_mia_game": _game,
         "qlib.repro.mia_limits.mnist.table1_accuracies": _table1,
         "qlib.repro.quantized_mis.molecular.train_task": _train_task,
         "qlib.repro.quantized_mis.study.run_study": _study,
         "qlib.repro.quantized_mis.ranking_probe.copies_study": _copies,
         "qlib.repro.quantized_mis.synthetic_claims.reading_effect": _reading,
         "qlib.repro.quantized_mis.molecular.run_study": _molecular,
         "qlib.repro.quantized_mis.table3_probe.probe": _probe}


def test_the_cases_are_drivers():
    assert set(CASES) <= set(DRIVERS), set(CASES) - set(DRIVERS)


@pytest.fixture
def case(request, tmp_path):
    make = CASES[request.param]
    if make in (_molecular, _probe):
        return make(request.getfixturevalue("shared_data_dir"), tmp_path)
    return make()


@pytest.mark.parametrize("case", sorted(CASES), indirect=True)
def test_equal_records_give_the_same_result_bit_for_bit(case):
    built = case.call(case.cls(**{**case.base, **case.change}))
    replaced = case.call(dataclasses.replace(case.cls(**case.base), **case.change))
    _same(built, replaced)
