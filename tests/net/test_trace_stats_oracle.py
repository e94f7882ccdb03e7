"""The Rust statistics against the numpy implementation they replace
(tests/helpers/stats_oracle.py), value for value, on random traces: unsorted times, equal times,
gaps of every size, several interfaces of any link type and timestamp resolution, any Ethernet rate
and rate windows. Files go through the one-read path (and its second read, for unsorted captures
and for gaps beyond a tiny distinct-gap limit); traces in memory through the columns path."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pcieperf._native import core
from pcieperf.net.ethernet import Ethernet
from pcieperf.net.trace.files import Interface, Trace, read
from pcieperf.net.trace.statistics import WINDOWS_NS, _report, _stats_config, stats
from pcieperf.net.wire import RATES_GBPS
from tests.helpers import stats_oracle

# Link types with an Ethernet equivalent (trace.LINK_HEADER_BYTES) and without (PPP 9, User 0
# 147); resolutions 10^-6, 10^-9, 10^-3, 1 s, 10^-12 s, 2^-10, 2^-20 and 2^-40 s.
LINKTYPES = [1, 113, 276, 101, 228, 229, 9, 147]
RESOLUTIONS = [6, 9, 3, 0, 12, 0x80 | 10, 0x80 | 20, 0x80 | 40]
# Gaps: equal times, back to back at any rate, dense (< 65 536 ns) and sparse ones, leaps.
GAPS = st.one_of(
    st.just(0),
    st.integers(1, 300),
    st.integers(0, 65_535),
    st.integers(65_536, 3_000_000),
    st.integers(0, 10**12),
)


@st.composite
def traces(draw, max_packets=80):
    interfaces = tuple(
        Interface(draw(st.sampled_from(LINKTYPES)), 0, draw(st.sampled_from(RESOLUTIONS)),
                        0, None, 0)
        for _ in range(draw(st.integers(1, 3)))
    )  # fmt: skip
    n = draw(st.integers(0, max_packets))
    ts = np.cumsum([draw(st.integers(0, 10**15))] + [draw(GAPS) for _ in range(n - 1)])[:n]
    if draw(st.booleans()):  # some captures are out of order
        ts = np.array(draw(st.permutations(ts.tolist())))
    wire = np.array([draw(st.integers(0, 70_000)) for _ in range(n)], dtype=np.uint32)
    return Trace(
        path="random",
        format="pcapng",
        ts_ns=np.asarray(ts, dtype=np.int64),
        caplen=np.minimum(wire, 100).astype(np.uint32),
        wirelen=wire,
        iface=np.array([draw(st.integers(0, len(interfaces) - 1)) for _ in range(n)], np.uint32),
        interfaces=interfaces,
    )


ETHERNETS = st.builds(Ethernet, st.sampled_from(RATES_GBPS), st.booleans())
WINDOWS = st.lists(st.integers(1, 2 * 10**9), min_size=1, max_size=3).map(tuple)


@settings(max_examples=300, deadline=None)
@given(traces(), ETHERNETS, WINDOWS)
def test_stats_of_a_trace_in_memory_equal_the_numpy_ones(t, eth, windows):
    assert stats(t, eth, windows) == stats_oracle.stats(t, eth, windows)


def write(path, t: Trace) -> None:
    """`t` as a pcapng file: one interface per interface of `t` (ns resolution), its packets
    in its order."""
    first, *rest = t.interfaces
    writer = core().TraceWriter(str(path), "pcapng", first.linktype, 0)
    for i in rest:
        writer.add_interface(i.linktype, 0)
    payload = np.zeros(max(int(t.caplen.max(initial=0)), 1), dtype=np.uint8)
    offsets = np.zeros(t.packets, dtype=np.uint64)
    writer.write_batch(t.ts_ns, t.iface, t.wirelen, t.caplen, payload, offsets)
    writer.close()


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(traces(), ETHERNETS, st.sampled_from([2, 5, 1 << 18]))  # 1 << 18: the default limit
def test_stats_of_a_file_read_once_or_twice_equal_the_numpy_ones(tmp_path, t, eth, limit):
    path = tmp_path / "random.pcapng"
    write(path, t)
    config = _stats_config(eth.rate_gbps, eth.overhead_bytes, WINDOWS_NS)
    config["distinct_gap_limit"] = limit  # tiny: the percentiles need the second read
    (raw,) = core().trace_stats([str(path)], config)
    interfaces = [Interface(**i) for i in raw["interfaces"]]
    got = _report(str(path), raw, interfaces, eth.rate_gbps)
    assert got == stats_oracle.stats(read(path), eth, WINDOWS_NS)
    # Read again when out of order, and maybe when more distinct gaps of 65 536 ns or more
    # than the limit were found (only if a percentile falls among them).
    gaps = np.diff(np.sort(t.ts_ns))
    if np.any(np.diff(t.ts_ns) < 0):
        assert raw["reads"] == 2
    elif np.unique(gaps[gaps >= 65_536]).size <= limit:
        assert raw["reads"] == 1


@pytest.mark.parametrize("tsresol", range(256))
def test_every_timestamp_resolution_is_rounded_as_numpy_rounded_it(tsresol):
    # 64-byte frames take (64 + 20) * 8 / 40 = 16.8 ns at 40 GbE: with the oracle's resolution
    # r, a gap of r + 16 ns is back to back and one of r + 17 ns is not, so any difference in
    # r changes the bursts.
    interfaces = (Interface(1, 0, tsresol, 0, None, 0),)
    r = stats_oracle._resolution_ns(Trace("r", "pcapng", *[np.zeros(0)] * 4, interfaces))
    t = Trace(
        path="resolution",
        format="pcapng",
        ts_ns=np.array([0, r + 16, 2 * r + 33], dtype=np.int64),
        caplen=np.full(3, 60, dtype=np.uint32),
        wirelen=np.full(3, 60, dtype=np.uint32),
        iface=np.zeros(3, dtype=np.uint32),
        interfaces=interfaces,
    )
    got = stats(t, Ethernet(40))
    assert (got["bursts"]["bursts"], got["bursts"]["max_burst"]) == (1, 2)
    assert got == stats_oracle.stats(t, Ethernet(40), WINDOWS_NS)
