"""The stack choice of explain (measure/stacks.py) and the rate factor's median: what the store
path asks only where it must gives the same answer as asking always (issue 29 part 3)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pcieperf.errors import UsageError
from pcieperf.measure import explain
from pcieperf.measure.stacks import needs_traffic, pick_stack

NAMES = st.lists(st.sampled_from(["a", "ab", "b", "socket 0: c", "socket 1: c"]), unique=True)


def _pick(known: list[str], busy: list[str], wanted: str | None) -> str:
    """pick_stack's stack, or its one-line error."""
    try:
        return pick_stack(known, busy, wanted, "f.csv")
    except UsageError as exc:
        return f"error: {exc}"


@given(NAMES.filter(bool), st.data(), st.sampled_from([None, "a", "b", "c", "socket 1", "z"]))
def test_without_a_need_for_traffic_the_busy_stacks_change_no_choice(known, data, wanted):
    # `explain --import` sums up which stacks carry traffic only where needs_traffic says the
    # choice depends on it; elsewhere any busy list (the store's true one among them) must
    # give the same stack or the same error as none.
    known = sorted(known)
    busy = sorted(data.draw(st.lists(st.sampled_from(known), unique=True)))
    if not needs_traffic(known, wanted):
        assert _pick(known, busy, wanted) == _pick(known, [], wanted)


@given(st.lists(st.floats(1e-6, 1e6), min_size=1, max_size=7))
def test_the_rate_factor_is_the_median_ratio_in_logs(ratios):
    # explain._factor takes the median as numpy.median defines it (the middle value of the
    # sorted logs, or the mean of the middle two; numpy/lib/_function_base_impl.py _median),
    # bit for bit, without its NaN check: the voters' ratios are positive and finite.
    implied = {f"m{i}": r for i, r in enumerate(ratios)}
    assert explain._factor(implied) == float(np.exp(np.median(np.log(ratios))))


def test_a_stack_named_by_several_needs_the_traffic():
    # "c" is in both sockets' names: the busy one decides (pick_stack), so it must be known.
    known = ["socket 0: c", "socket 1: c"]
    assert needs_traffic(known, "c")
    assert needs_traffic(known, None)
    assert not needs_traffic(known, "socket 1")
    assert not needs_traffic(known, "z")
    assert pick_stack(known, ["socket 1: c"], "c", "f.csv") == "socket 1: c"
    with pytest.raises(UsageError, match="has traffic on 0 stacks"):
        pick_stack(known, [], None, "f.csv")
