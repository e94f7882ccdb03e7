"""A capture run's forwarding intervals, from testpmd's statistics blocks: rate, CPU ns per
packet, CPU share, the spread over its periods and the host's steal agree with each other."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pcieperf.capture.intervals import Interval, Sample


@given(
    packets=st.integers(1, 10**12),
    cpu_ns=st.integers(1, 10**15),
    seconds=st.floats(1e-3, 1e5),
)
def test_an_intervals_rate_cost_and_share_agree(packets, cpu_ns, seconds):
    # CPU ns per packet x packets per second = CPU ns per second (the share, in ns).
    interval = Interval((Sample(0.0, 0, 0), Sample(seconds, packets, cpu_ns)))
    assert interval.pps * interval.cpu_ns_per_packet == pytest.approx(interval.cpu_share * 1e9)


@given(
    periods=st.lists(st.tuples(st.integers(1, 10**9), st.integers(1, 10**12)), min_size=2),
    scale=st.floats(1.0, 10.0),
)
def test_an_intervals_spread_is_its_periods_cost_range(periods, scale):
    # Periods of (packets, ns per packet): the spread is the costliest over the cheapest, 1 when
    # every period costs the same, and never below 1.
    samples, packets, cpu = [Sample(0.0, 0, 0)], 0, 0
    for count, ns in periods:
        packets, cpu = packets + count, cpu + count * ns
        samples.append(Sample(float(len(samples)), packets, cpu))
    spread = Interval(tuple(samples)).cpu_ns_spread
    costs = [ns for _, ns in periods]
    assert spread == pytest.approx(max(costs) / min(costs))
    steady = [Sample(float(i), i * 100, round(i * 100 * scale)) for i in range(4)]
    assert Interval(tuple(steady)).cpu_ns_spread == pytest.approx(1.0, rel=1e-2)


def test_one_period_has_no_spread_and_steal_is_per_wall_second():
    first, last = Sample(0.0, 0, 0, 0), Sample(2.0, 1000, 5000, 10**9)
    interval = Interval((first, last))
    assert math.isnan(interval.cpu_ns_spread)
    assert interval.steal_share == pytest.approx(0.5)  # 1 s of the host's in 2 wall seconds
