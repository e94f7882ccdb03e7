"""Parameters cross into the Rust core as the core's own types (issue 16): SimParams,
PortConfig, CacheShape, ... derive their conversion from a dict (rust/core, feature `pyo3`),
the enumerations convert from their names. Whatever cannot be converted is one line naming the
struct's field and why (a UsageError through `pcieperf._native`), never a traceback."""

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pcieperf._native import core
from pcieperf.dpdk.port import PortSetup
from pcieperf.errors import UsageError
from pcieperf.iommu import stream
from pcieperf.iommu.platform import Traffic, load_platform
from pcieperf.net.ethernet import Ethernet, parse_mix
from pcieperf.net.trace.statistics import WINDOWS_NS, stats_config

# Every SimParams field (rust/core/src/sim/bench.rs) by name: 1000 sequential 64 B reads over
# an 8 KiB window, 32 tags, a Gen3 x8 link (~7.78 bytes/ns of TLPs), no IOMMU (0 IOTLB entries);
# the values `pciebench.sim.sim_params` gives for such a point, written out so that the test
# reads no other test module.
BENCH = {
    "transactions": 1000,
    "size": 64,
    "host_offset": 0,
    "window": 8192,
    "pattern": "seq",
    "ops": "read",
    "seed": 1,
    "tags": 32,
    "issue_read_ns": 0.0,
    "issue_write_ns": 20.0,
    "datapath_ns": 0.0,
    "fixed_latency_ns": 100.0,
    "read_up_bytes": 24.0,
    "read_down_bytes": 84.0,
    "write_up_bytes": 88.0,
    "up_bytes_per_ns": 7.78,
    "down_bytes_per_ns": 7.78,
    "warm_bytes": 8 << 20,
    "hit_latency_ns": 400.0,
    "miss_latency_ns": 480.0,
    "write_ns": 0.0,
    "posted_credits": 64,
    "iotlb_entries": 0,
    "page_bytes": 4096,
    "walk_ns": 200.0,
    "walk_busy_ns": 200.0,
    "walkers": 4,
    "record_latencies": False,
}


@pytest.fixture(scope="module")
def port_params():
    """A valid port-run dict (PortConfig, CacheShape, PortRun): the default setup, 64 B frames."""
    platform = load_platform()
    traffic = Traffic(parse_mix("64"), Ethernet(40))
    return stream.port_params(PortSetup(), traffic, platform.iommu, 1000)


def rejects(call, message):
    """`call` raises a UsageError whose whole message is `message` (one line)."""
    with pytest.raises(UsageError, match=f"^{re.escape(message)}$"):
        call()


def test_a_valid_dict_runs():
    # 1000 transactions asked, 1000 simulated (a read: one transaction per unit).
    assert core().simulate(BENCH)["transactions"] == 1000


def test_a_mistyped_field_is_named_with_its_struct():
    # The derive names Struct.field; CPython's int conversion says why.
    rejects(
        lambda: core().simulate(BENCH | {"size": "64"}),
        "failed to extract field SimParams.size: 'str' object cannot be interpreted as an integer",
    )
    rejects(
        lambda: core().simulate(BENCH | {"tags": -1}),
        # u32 goes through Rust's TryFrom<i64>, whose error this is.
        "failed to extract field SimParams.tags: out of range integral type conversion attempted",
    )


def test_an_enumeration_names_the_allowed_values(port_params):
    # The names of rust/core/src/py.rs, as the glue's hand-written choices had them.
    rejects(
        lambda: core().simulate(BENCH | {"ops": "copy"}),
        'failed to extract field SimParams.ops: ops "copy": use read, write, alternate or '
        "write_then_read",
    )
    rejects(
        lambda: core().port_misses(port_params | {"replacement": "fifo"}),
        'failed to extract field CacheShape.replacement: replacement "fifo": use lru or random',
    )
    rejects(
        lambda: core().port_misses(port_params | {"iova": "io"}),
        'failed to extract field PortConfig.iova: iova "io": use va or pa',
    )


@given(st.text(max_size=8).filter(lambda t: t not in ("seq", "rand")))
def test_any_other_pattern_is_refused_with_both_names(text):
    params = BENCH | {"transactions": 10}
    with pytest.raises(
        UsageError, match=r"^failed to extract field SimParams\.pattern: .*: use seq or rand$"
    ):
        core().simulate(params | {"pattern": text})


def test_a_missing_entry_is_named_nested_or_renamed(port_params):
    # CacheShape reads `iotlb_ways` for its field `ways`; the LLC is a nested LlcShape.
    without_ways = {k: v for k, v in port_params.items() if k != "iotlb_ways"}
    rejects(lambda: core().port_misses(without_ways), "missing parameter 'iotlb_ways'")
    llc = {"sets_per_slice": 2048, "ddio_ways": 2}
    rejects(
        lambda: core().port_misses(port_params | {"llc": llc}),
        "failed to extract field PortConfig.llc: missing parameter 'slices'",
    )


def test_a_transaction_class_list_is_converted_whole(port_params):
    # One class without its `hit_ns`: the whole list is refused, naming the entry.
    classes = [{"read": True, "queue": 0, "tags": 1}]
    rejects(
        lambda: core().port_simulate(port_params | {"iommu": True}, classes),
        "missing parameter 'issue_ns'",
    )


def test_a_timed_port_run_must_say_whether_it_translates(port_params):
    # `iommu` has no default: a timed run without it would silently drop the IOMMU.
    rejects(lambda: core().port_simulate(port_params, []), "missing parameter 'iommu'")


def test_the_stats_config_is_converted_then_checked():
    config = stats_config(40, WINDOWS_NS)
    rejects(
        lambda: core().trace_stats([], {k: v for k, v in config.items() if k != "percentiles"}),
        "missing parameter 'percentiles'",
    )
    # Converted fine, refused by StatsConfig::check (rust/core/src/trace/stats.rs).
    rejects(
        lambda: core().trace_stats([], config | {"percentiles": [50.0, 101.0]}),
        "percentiles must lie within 0..=100",
    )
    # distinct_gap_limit is optional (the core's default); an empty file list gives no results.
    assert list(core().trace_stats([], config)) == []
    assert list(core().trace_stats([], config | {"distinct_gap_limit": 8})) == []
