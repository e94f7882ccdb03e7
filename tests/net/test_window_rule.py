"""One rule for rate windows in every command (issue 27): windows from the first packet, peaks
over whole windows only, a last window that covers less (up to the last packet) reported apart
as the tail, means over the capture's duration. `trace stats` (Rust stats), `trace demand`
(Rust archive partials) and `nic --trace`/`dpdk-fwd --trace` (Rust timeline passes over the
capture) must agree."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers.captures import pcap_of_times
from tests.helpers.cli import run_cli

EDGE_TAIL_NS = 4 * 20 + 10  # the last of 5 packets 20 ns apart, from 10 ns after 2 ms


def edge_capture(tmp_path):
    """The issue's capture: 2 ms at 1 Mpps (packets 1 us apart, 64 B frames), then 5 packets
    20 ns apart just after 2 ms."""
    ts = np.concatenate([np.arange(2000) * 1000, 2_000_010 + np.arange(5) * 20])
    path = tmp_path / "edge.pcap"
    path.write_bytes(pcap_of_times(ts + 1_700_000_000 * 10**9, np.full(ts.size, 60)))
    return path


def run_json(capsys, *argv):
    code, out, err = run_cli(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def test_a_few_packets_after_the_last_whole_window_are_its_tail_not_the_peak(capsys, tmp_path):
    path = edge_capture(tmp_path)
    (stats,) = run_json(capsys, "trace", "stats", str(path), "--windows", "1ms")
    (rate,) = stats["rates"]
    # Two whole windows of 1000 packets: 1 Mpps (once 50 Mpps: 5 packets in their 90 ns).
    assert (rate["windows"], rate["full_windows"]) == (3, 2)
    assert rate["peak_pps"] == 1e6
    assert (rate["tail_ns"], rate["tail_pps"]) == (EDGE_TAIL_NS, 5e9 / EDGE_TAIL_NS)
    demand, replayed = _both(capsys, path, "1ms")
    assert (demand["full_windows"], demand["tail_ns"]) == (2, EDGE_TAIL_NS)
    for key in ("full_windows", "windows_over_capacity", "tail_ns"):
        assert demand[key] == replayed[key], key
    for key in ("mean_up_gbps", "mean_down_gbps", "peak_up_gbps", "peak_down_gbps"):
        assert demand[key] == pytest.approx(replayed[key], rel=1e-9), key
    fwd = run_json(capsys, "dpdk-fwd", "--trace", str(path), "--window", "1ms")
    assert (fwd["full_windows"], fwd["tail_ns"]) == (2, EDGE_TAIL_NS)


def _both(capsys, path, window):
    """`trace demand` (archive partials) and `nic --trace` (columns) of one capture, on the same
    profile."""
    (demand,) = run_json(capsys, "trace", "demand", str(path), "--window", window)
    replayed = run_json(capsys, "nic", "--trace", str(path), "--window", window)
    return demand, replayed


# capsys is read (and so emptied) by every run_cli: no output leaks between examples.
@settings(
    max_examples=30,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    gaps=st.lists(st.integers(0, 400_000), min_size=2, max_size=200),
    frames=st.lists(st.sampled_from([64, 128, 256, 512, 1024, 1518]), min_size=200, max_size=200),
    window_us=st.sampled_from([10, 100, 1000]),
)
def test_trace_demand_and_nic_trace_agree_on_every_capture(
    capsys, tmp_path_factory, gaps, frames, window_us
):
    ts = 1_700_000_000 * 10**9 + np.cumsum(gaps)
    path = tmp_path_factory.mktemp("w") / "c.pcap"
    path.write_bytes(pcap_of_times(ts, np.array(frames[: len(gaps)]) - 4))
    demand, replayed = _both(capsys, path, f"{window_us}us")
    for key in ("windows", "full_windows", "windows_over_capacity", "tail_ns", "fits"):
        assert demand[key] == replayed[key], key
    for key in ("mean_up_gbps", "mean_down_gbps", "peak_up_gbps", "peak_down_gbps"):
        assert (demand[key] is None) == (replayed[key] is None), key
        if demand[key] is not None:
            assert demand[key] == pytest.approx(replayed[key], rel=1e-9), key
    for key in ("tail_up_gbps", "tail_down_gbps"):
        if demand["tail_ns"]:
            assert demand[key] == pytest.approx(replayed[key], rel=1e-9), key
