"""`trace stats` of captures out of time order, of standard input, and of archive files that
overlap in time, in bounded memory (issue 28): packets are sorted by time in runs of 1 Mi,
spilled to temporary files under TMPDIR and merged, and summarised as the same packets in time
order are. `nic --trace` and `dpdk-fwd --trace` stream their capture the same way (issue 46)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.helpers.captures import pcap_of_times
from tests.helpers.limits import run_limited

# Packets per sorted run (RUN_PACKETS in rust/core/src/trace/spill.rs): more are spilled.
RUN_PACKETS = 1 << 20
START_NS = 1_700_000_000 * 10**9
# What only the file order of the packets decides.
ORDER_FIELDS = ("file", "out_of_order", "strict_time_order", "max_step_back_ns")


def shuffled(n: int, seed: int = 28) -> tuple[np.ndarray, np.ndarray]:
    """Times and wire lengths of `n` packets in a shuffled file order: three packets a time,
    100 ns apart, wire lengths 60..1514 (whether a 100 ns gap is back to back depends on the
    frame before it, the last of its time in file order, so bursts show if ties kept it)."""
    k = np.arange(n, dtype=np.int64)
    ts, wire = START_NS + k // 3 * 100, (60 + k * 7919 % 1455).astype(np.uint32)
    order = np.random.default_rng(seed).permutation(n)
    return ts[order], wire[order]


def stats(argv: list[str], tmpdir: Path, stdin: bytes | None = None) -> dict:
    """`trace stats --json` in a fresh interpreter with TMPDIR set: the one file's result."""
    done = subprocess.run(
        [sys.executable, "-m", "pcieperf.cli", "trace", "stats", "--json", *argv],
        input=stdin,
        capture_output=True,
        env=os.environ | {"TMPDIR": str(tmpdir)},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)[0]


def test_spilled_sorts_of_a_file_and_of_stdin_give_the_sorted_files_statistics(tmp_path):
    # 1.6 M packets: a run and a half, so both a file out of order and standard input are
    # sorted through two run files and merged.
    ts, wire = shuffled(RUN_PACKETS * 3 // 2)
    order = np.argsort(ts, kind="stable")
    data = pcap_of_times(ts, wire)
    shuffled_path, sorted_path = tmp_path / "shuffled.pcap", tmp_path / "sorted.pcap"
    shuffled_path.write_bytes(data)
    sorted_path.write_bytes(pcap_of_times(ts[order], wire[order]))
    spill = tmp_path / "spill"
    spill.mkdir()
    from_file = stats([str(shuffled_path)], spill)
    from_stdin = stats(["-"], spill, stdin=data)
    in_order = stats([str(sorted_path)], spill)
    assert from_stdin == from_file | {"file": "-"}
    assert from_file["out_of_order"] > RUN_PACKETS // 4
    assert (in_order["out_of_order"], in_order["strict_time_order"]) == (0, True)
    assert in_order["bursts"]["bursts"] > 0  # ties decide some bursts
    unordered = {k: v for k, v in from_file.items() if k not in ORDER_FIELDS}
    assert unordered == {k: v for k, v in in_order.items() if k not in ORDER_FIELDS}
    assert list(spill.iterdir()) == []  # every run file removed


# Runs the CLI, then reports its peak resident memory (VmHWM, KiB), as test_trace_footprint.
PEAK = """
import sys
from pcieperf.cli import main
code = main(sys.argv[1:])
peak = int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0])
print(code, peak, file=sys.stderr)
"""


@pytest.mark.skipif(
    not Path("/proc/self/status").exists(), reason="peak memory is read from Linux /proc"
)
def test_stdin_out_of_order_is_summarised_in_bounded_memory(tmp_path):
    # 8 M packets (128 MB on standard input). Held whole, as before the sort spilled, they
    # peaked at ~24 B a packet over the interpreter's ~20 MiB: 10 M packets took 253 MB. The
    # sort holds one run of 1 Mi (16 MiB and 8 MiB of sort scratch): 10 M or 80 M packets
    # peak at 44 MB, interpreter included.
    n = 8_000_000
    ts, wire = shuffled(n)
    spill = tmp_path / "spill"
    spill.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", PEAK, "trace", "stats", "--json", "-"],
        input=pcap_of_times(ts, wire),
        capture_output=True,
        env=os.environ | {"TMPDIR": str(spill)},
        check=False,
    )
    code, peak_kib = map(int, done.stderr.split()[-2:])
    assert code == 0, done.stderr
    got = json.loads(done.stdout)[0]
    assert (got["packets"], got["max_equal_timestamps"]) == (n, 3)
    assert peak_kib < 100 * 1024
    assert list(spill.iterdir()) == []


def test_an_unusable_temporary_folder_is_an_error_naming_the_file(tmp_path):
    ts, wire = shuffled(RUN_PACKETS + 1)
    done = subprocess.run(
        [sys.executable, "-m", "pcieperf.cli", "trace", "stats", "-"],
        input=pcap_of_times(ts, wire),
        capture_output=True,
        env=os.environ | {"TMPDIR": str(tmp_path / "missing")},
        check=False,
    )
    assert done.returncode == 2
    err = done.stderr.decode()
    assert f"{tmp_path / 'missing'}/pcieperf-sort-" in err, err
    assert "cannot create a temporary file of the sort by time" in err, err
    assert "No such file or directory" in err, err


def interleaved(folder: Path, n: int) -> list[bytes]:
    """Two pcap files of one port in `folder`, `n` packets each, whose times interleave (100 ns
    apart in turn): their contents."""
    folder.mkdir()
    k = np.arange(n, dtype=np.int64)
    found = []
    for j in range(2):
        data = pcap_of_times(START_NS + k * 200 + j * 100, (60 + (k * 7919 + j) % 1455))
        (folder / f"part-{j}.pcap").write_bytes(data)
        found.append(data)
    return found


@pytest.mark.skipif(
    not Path("/proc/self/status").exists(), reason="peak memory is read from Linux /proc"
)
def test_archive_files_that_overlap_are_sorted_in_bounded_memory(tmp_path):
    # 6 M packets in two overlapping files of one port, summarised together
    # (rust/core/src/trace/archive.rs files_partial). Held whole, as before, they peaked 141 MB
    # resident and 147 MB of address space over two 1000-packet files' run (and gave the same
    # statistics); sorted through runs of 1 Mi, 19 MB and under 2 MB over it.
    spill = tmp_path / "spill"
    spill.mkdir()
    tmpdir = {"TMPDIR": str(spill)}
    interleaved(tmp_path / "small", 1000)
    small = run_limited(["trace", "stats", "--archive", str(tmp_path / "small" / "*.pcap")])
    assert small.code == 0, small.stderr
    first, second = interleaved(tmp_path / "parts", 3_000_000)
    argv = ["trace", "stats", "--json", "--archive", str(tmp_path / "parts" / "*.pcap")]
    large = run_limited(argv, small.address_kib + 64 * 1024, tmpdir)  # the hard limit
    assert large.code == 0, large.stderr
    assert large.rss_kib < small.rss_kib + 48 * 1024
    # The in-memory answer: one file of the first file's packets, then the second's.
    both = tmp_path / "both.pcap"
    both.write_bytes(first + second[24:])  # less the second's pcap header
    (port,) = json.loads(large.stdout)
    whole = stats([str(both)], spill)
    assert (port["files"], port["packets"], whole["out_of_order"]) == (2, 6_000_000, 1)
    port_keys = ("port", "files", "first_file", "last_file")
    assert {k: v for k, v in port.items() if k not in port_keys} == {
        k: v for k, v in whole.items() if k != "file"
    }
    assert list(spill.glob("pcieperf-*")) == []  # every run file removed (Dask keeps a folder)


@pytest.mark.slow
@pytest.mark.skipif(
    not Path("/proc/self/status").exists(), reason="peak memory is read from Linux /proc"
)
@pytest.mark.parametrize("command", ["nic", "dpdk-fwd"])
def test_trace_replays_stream_their_capture_in_bounded_memory(tmp_path, command):
    # Issue 46 F9: `nic --trace` and `dpdk-fwd --trace` held the capture as numpy columns and
    # per-packet costs (~70 B a packet: 691 and 776 MB at 10 M packets). They stream it
    # (rust/core/src/trace/timeline.rs): 3 M packets out of time order (sorted in runs spilled
    # to TMPDIR) stay within a 1000-packet run's peaks, and give what the same packets in
    # time order give (read twice, not sorted).
    spill = tmp_path / "spill"
    spill.mkdir()
    small_path, large_path = tmp_path / "small.pcap", tmp_path / "large.pcap"
    small_path.write_bytes(pcap_of_times(*shuffled(1000)))
    small = run_limited([command, "--trace", str(small_path), "--json"])
    assert small.code == 0, small.stderr
    ts, wire = shuffled(3_000_000)
    large_path.write_bytes(pcap_of_times(ts, wire))
    argv = [command, "--trace", str(large_path), "--json"]
    large = run_limited(argv, small.address_kib + 128 * 1024, {"TMPDIR": str(spill)})
    assert large.code == 0, large.stderr
    assert large.rss_kib < small.rss_kib + 64 * 1024
    order = np.argsort(ts, kind="stable")
    large_path.write_bytes(pcap_of_times(ts[order], wire[order]))
    in_order = run_limited(argv)
    assert json.loads(in_order.stdout) == json.loads(large.stdout)
    assert list(spill.glob("pcieperf-*")) == []  # every run file removed
