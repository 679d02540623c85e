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
