"""qlib.validation: the checks name the caller's argument (their ``name``) and reject NaN, ±inf,
None and out-of-range values. The common bad-input test cannot see these (NOT_CALLED: the name is
the caller's), so they are checked here directly."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from qlib import validation as V

NAME = "my_arg"


@pytest.mark.parametrize("check, value, exc", [
    (lambda v: V.check_float(NAME, v), float("nan"), ValueError),
    (lambda v: V.check_float(NAME, v), float("inf"), ValueError),
    (lambda v: V.check_float(NAME, v), None, TypeError),
    (lambda v: V.check_float(NAME, v), 1 + 1j, TypeError),
    (lambda v: V.check_float(NAME, v, low=0.0), -1.0, ValueError),
    (lambda v: V.check_probability(NAME, v), 1.5, ValueError),
    (lambda v: V.check_probability(NAME, v), float("nan"), ValueError),
    (lambda v: V.check_positive(NAME, v), 0.0, ValueError),
    (lambda v: V.check_int(NAME, v), float("nan"), TypeError),
    (lambda v: V.check_int(NAME, v), 1.5, TypeError),
    (lambda v: V.check_int(NAME, v), True, TypeError),
    (lambda v: V.check_int(NAME, v), None, TypeError),
    (lambda v: V.check_int(NAME, v, low=1), 0, ValueError),
    (lambda v: V.check_seed(NAME, v), None, TypeError),
    (lambda v: V.check_seed(NAME, v), -1, ValueError),
    (lambda v: V.check_choice(NAME, v, ("a", "b")), "c", ValueError),
    (lambda v: V.check_array(NAME, v), [1.0, np.nan], ValueError),
    (lambda v: V.check_array(NAME, v), [1.0, np.inf], ValueError),
    (lambda v: V.check_array(NAME, v), None, TypeError),
    (lambda v: V.check_array(NAME, v), [], ValueError),
    (lambda v: V.check_array(NAME, v, high=1.0), [0.5, 2.0], ValueError),
    (lambda v: V.check_array(NAME, v, dtype="int"), [1.0, 1.5], TypeError),
    (lambda v: V.check_tensor(NAME, v), torch.tensor([1.0, float("nan")]), ValueError),
    (lambda v: V.check_tensor(NAME, v), torch.tensor([1.0, float("-inf")]), ValueError),
    (lambda v: V.check_tensor(NAME, v, ndim=2), torch.zeros(3), ValueError),
    (lambda v: V.check_tensor(NAME, v), None, TypeError),
    (lambda v: V.check_int_sequence(NAME, v, low=1), [1, 0], ValueError),
    (lambda v: V.check_float_sequence(NAME, v), [1.0, float("nan")], ValueError),
    (lambda v: V.check_float_sequence(NAME, v), None, TypeError),
])
def test_checks_reject_bad_values_naming_the_argument(check, value, exc):
    with pytest.raises(exc, match=rf"\b{NAME}\b"):
        check(value)


def test_checks_return_canonical_values():
    assert V.check_int(NAME, np.int64(3)) == 3 and type(V.check_int(NAME, np.int64(3))) is int
    assert V.check_float(NAME, np.float32(0.5)) == 0.5
    assert V.check_float(NAME, float("inf"), allow_inf=True) == float("inf")
    assert V.check_seed(NAME, None, allow_none=True) is None
    assert V.check_array(NAME, [1.0, 2.0], dtype="int").dtype == np.int64
    assert V.check_tensor(NAME, np.zeros(2)).dtype == torch.float64


def test_skip_nested_trusts_canonical_values_and_still_converts_others():
    """Inside ``skip_nested`` a value of the canonical type passes every check untested; another type is
    checked and converted as outside; the switch is restored on exit, also after an exception."""
    import threading

    import numpy as np
    import pytest
    import torch

    from qlib.validation import check_array, check_float, check_int, check_seed, check_tensor, nested, skip_nested

    assert not nested()
    with skip_nested():
        assert nested()
        assert check_int("n", -5, low=1) == -5  # trusted: not range-tested
        assert check_float("p", 7.0, high=1.0) == 7.0
        t = torch.tensor([float("nan")])
        assert check_tensor("x", t) is t  # no finiteness reduction
        assert check_int("n", np.int64(3), low=1) == 3 and type(check_int("n", np.int64(3))) is int  # converted
        with pytest.raises(TypeError, match="seed"):
            check_seed("seed", "zero")  # not an int: checked as outside
        assert check_array("a", [1, 2]).dtype == np.float64  # a list is converted
        seen = []
        th = threading.Thread(target=lambda: seen.append(nested()))  # per thread
        th.start()
        th.join()
        assert seen == [False]
    assert not nested()
    with pytest.raises(ValueError, match="n must be"):
        check_int("n", -5, low=1)
    with pytest.raises(RuntimeError), skip_nested():
        raise RuntimeError
    assert not nested()


def test_check_alloc_refuses_above_the_memory_limit_naming_the_argument(monkeypatch):
    monkeypatch.delenv(V.MEMORY_ENV_VAR, raising=False)
    prev = V.set_memory_limit(None)
    try:
        ram = V._physical_memory()
        assert V.memory_limit() == int(ram * V.MEMORY_FRACTION)  # the default: a fraction of the machine's memory
        assert V.check_alloc("n", 1000, 8) == 8000
        with pytest.raises(ValueError, match=r"^D=1099511627776 would need 4 TiB for the signs, above the memory "
                                             r"limit of .* \(set QLIB_MEMORY_LIMIT"):
            V.check_alloc("D", 2**40, 4, value=2**40, what="the signs")
        monkeypatch.setenv(V.MEMORY_ENV_VAR, "1G")
        assert V.memory_limit() == 2**30
        with pytest.raises(ValueError, match=r"\bn\b would need 1\.5 GiB, above the memory limit of 1 GiB"):
            V.check_alloc("n", 3 * 2**27, 4)
        assert V.set_memory_limit("2MiB") is None and V.memory_limit() == 2**21  # the function wins over the variable
        assert V.set_memory_limit(4096) == 2**21 and V.memory_limit() == 4096
        monkeypatch.setenv(V.MEMORY_ENV_VAR, "lots")
        V.set_memory_limit(None)
        with pytest.raises(ValueError, match="QLIB_MEMORY_LIMIT must be a number of bytes"):
            V.memory_limit()
        with pytest.raises(ValueError, match=r"\blimit\b"):
            V.set_memory_limit(0)
    finally:
        V.set_memory_limit(prev)


# ------------------------------------------------------------------------------------------------
# resolve_config: the one rule for a driver's settings (one frozen record, no keyword overrides)
# ------------------------------------------------------------------------------------------------
def _record():
    import dataclasses

    @dataclasses.dataclass(frozen=True)
    class Rec:
        epochs: int = 3
        lr: float = 0.1

        def __post_init__(self):
            if self.epochs < 1:
                raise ValueError(f"epochs must be >= 1, got {self.epochs}")

    return Rec


def test_resolve_config_gives_the_record_or_its_defaults():
    from qlib.validation import resolve_config

    Rec = _record()
    assert resolve_config(Rec) == Rec() and resolve_config(Rec, None) == Rec()
    base = Rec(epochs=7)
    assert resolve_config(Rec, base) is base
    with pytest.raises(TypeError):                               # no overrides beside the record
        resolve_config(Rec, base, {"lr": 0.5})


def test_resolve_config_refuses_what_is_not_the_record():
    from qlib.validation import resolve_config

    Rec = _record()
    with pytest.raises(TypeError, match="settings must be a Rec or None, got dict"):
        resolve_config(Rec, {"epochs": 2}, name="settings")
    with pytest.raises(TypeError, match="config must be a Rec or None, got Rec"):
        resolve_config(Rec, _record()())                         # another class of the same name
    with pytest.raises(TypeError, match="cls must be a dataclass type"):
        resolve_config(dict, None)
