"""Operations the closed-form models need besides Python's operators, on numpy arrays or on
Python scalars alike: a model's formula is written once and evaluates many sizes at once (a
sweep, on numpy) or a command line's few sizes one Python int or float at a time, before numpy
is loaded (issue 15 item 4: light commands start in under 120 ms). Each operation gives the
same IEEE-754 values either way, so a scalar result equals its array element bit for bit.
Results keep what they compute once (`once`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    import numpy as np
else:
    from pcieperf._numpy import np

Value = Any
"""A numpy array (or numpy scalar), or a Python int, float or bool."""
_PYTHON = (int, float, bool)
T = TypeVar("T")


def is_python(value: Value) -> bool:
    """Whether `value` is a Python scalar (the scalar path), not a numpy value."""
    return type(value) in _PYTHON


def zeros_like(like: Value) -> Value:
    """Zeros shaped like `like` (0 for one int)."""
    return 0 if type(like) is int else np.zeros_like(like)


def ones_like(like: Value) -> Value:
    """Float ones shaped like `like` (1.0 for one number)."""
    return 1.0 if is_python(like) else np.ones(np.shape(like))


def as_int(flags: Value) -> Value:
    """Booleans as 0 and 1 that add up (numpy adds boolean arrays as a logical or)."""
    return int(flags) if type(flags) is bool else flags.astype(np.int64)


def as_whole(values: Value) -> Value:
    """Whole-valued floats as int64 (a Python int for one float)."""
    return int(values) if type(values) is float else values.astype(np.int64)


def as_uint8(flags: Value) -> Value:
    """Booleans or small ints as uint8 bit fields (a Python int for one)."""
    return int(flags) if is_python(flags) else np.asarray(flags).view(np.uint8)


def broadcast(value: Value, like: Value) -> Value:
    """`value` with `like`'s shape, as a read-only view where it is an array."""
    return value if type(like) is int else np.broadcast_to(np.asarray(value, np.int64), like.shape)


def maximum(a: Value, b: Value) -> Value:
    """The larger of `a` and `b`, element by element."""
    return max(a, b) if is_python(a) and is_python(b) else np.maximum(a, b)


def minimum(a: Value, b: Value) -> Value:
    """The smaller of `a` and `b`, element by element (no NaN here: the models' rates)."""
    return min(a, b) if is_python(a) and is_python(b) else np.minimum(a, b)


def as_float(values: Value) -> Value:
    """`values` as float64 (Python and numpy round a large int to the same double)."""
    return float(values) if is_python(values) else values.astype(np.float64)


def is_whole(values: Value) -> Value:
    """Whether each value is a whole number (inf and NaN are not; numpy's inf == round(inf)
    holds, so callers bound the values too)."""
    if is_python(values):
        return math.isfinite(values) and values == round(values)
    return values == np.round(values)


def reciprocal(values: Value) -> Value:
    """1 / `values`, infinite where a value is 0 (no bound), as numpy's division gives."""
    if is_python(values):
        return 1 / values if values else math.inf
    with np.errstate(divide="ignore"):
        return 1 / values


def ndim(value: Value) -> int:
    """Dimensions of `value`: 0 for a scalar, numpy's or Python's."""
    return getattr(value, "ndim", 0)


def frozen(values: Value) -> Value:
    """`values`, made read-only where it is an array: it is shared by every result that
    reuses it (a Python scalar is immutable already)."""
    if not is_python(values):
        values.flags.writeable = False
    return values


def pairwise_sum(values: list[float]) -> float:
    """`np.sum` of a float64 vector, added in the order numpy adds (its pairwise summation:
    eight running sums per block of up to 128 values, halves of larger ones added
    recursively; numpy/_core/src/umath/loops_utils.h.src, `pairwise_sum`), so that a sum
    computed here equals numpy's bit for bit (tests/test_values.py)."""
    n = len(values)
    if n < 8:
        total = -0.0
        for value in values:
            total += value
        return total
    if n > 128:
        half = n // 2
        half -= half % 8
        return pairwise_sum(values[:half]) + pairwise_sum(values[half:])
    runs = values[:8]
    whole = n - n % 8
    for start in range(8, whole, 8):
        for k in range(8):
            runs[k] += values[start + k]
    pairs = [runs[k] + runs[k + 1] for k in (0, 2, 4, 6)]
    total = (pairs[0] + pairs[1]) + (pairs[2] + pairs[3])
    for value in values[whole:]:
        total += value
    return total


class once(Generic[T]):  # noqa: N801 (named as the decorator it is used as)
    """A property computed on first use and kept: `functools.cached_property` without its lock
    (Python 3.11 takes one per first use, which costs more than a result's arrays)."""

    def __init__(self, func: Callable[[Any], T]) -> None:
        self.func, self.__doc__ = func, func.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: object, owner: type | None = None) -> T:
        if obj is None:  # looked up on the class
            return self  # type: ignore[return-value] # the descriptor itself, as properties do
        value = obj.__dict__[self.name] = self.func(obj)  # found there from now on
        return value
