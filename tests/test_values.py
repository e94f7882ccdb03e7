"""pcieperf._values: the operations the closed-form models evaluate on numpy arrays or on
Python scalars give the same doubles either way."""

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pcieperf import _values

finite = st.floats(min_value=0, max_value=1e300, allow_nan=False, allow_infinity=False)


@settings(max_examples=500)
@given(st.lists(finite | st.floats(min_value=-1e6, max_value=1e6), min_size=1, max_size=400))
def test_pairwise_sum_adds_in_numpys_order(values):
    # Bit for bit, past the 8 running sums (n >= 8) and the halving of blocks (n > 128).
    assert _values.pairwise_sum(values) == np.array(values).sum()


def test_pairwise_sum_is_not_a_left_to_right_sum():
    # Hand-built: 1 then fifteen 2**-53. Left to right each 2**-53 is lost against 1.0 (round
    # half to even), so the sum stays 1.0; numpy's eight running sums add the small ones to
    # each other first (2**-52 each), and 1 + 2**-52 is a double: the order matters.
    values = [1.0] + [2.0**-53] * 15
    assert sum(values) == 1.0
    assert _values.pairwise_sum(values) == np.array(values).sum() > 1.0


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_scalar_operations_equal_numpys(x):
    array = np.array([x])
    assert _values.is_whole(x) == bool(_values.is_whole(array)[0] and math.isfinite(x))
    assert _values.as_float(x) == array.astype(np.float64)[0] or math.isnan(x)
    if x == x:  # not NaN: the models' values never are
        assert _values.minimum(x, 1.0) == np.minimum(array, 1.0)[0]
        assert _values.maximum(x, 1.0) == np.maximum(array, 1.0)[0]
        if x == 0 or abs(x) >= 1e-300:  # byte counts: 0 or whole bytes, never subnormal
            assert _values.reciprocal(x) == _values.reciprocal(array)[0]


def test_reciprocal_of_zero_is_no_bound():
    # 1 / 0 bytes: no byte goes that way, so no bound (inf), as numpy's division gives.
    assert _values.reciprocal(0.0) == math.inf
    assert _values.reciprocal(np.zeros(1)).tolist() == [math.inf]


def test_python_scalars_stay_python():
    # The scalar path must not make numpy values (numpy may not be loaded).
    for value in (_values.as_uint8(True), _values.zeros_like(3), _values.as_whole(64.0)):
        assert type(value) is int
    assert _values.frozen(2.5) == 2.5
    assert _values.ndim(2.5) == 0
