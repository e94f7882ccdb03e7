"""Real DPDK runs: testpmd's output parsed exactly (a recorded run), the burst histogram rebuilt
from its lossy summary, and end-to-end runs of dpdk-testpmd on a synthesised capture, stopped
cleanly at the end, on Ctrl-C and when pcieperf is killed."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pcieperf import dpdk, testpmd
from pcieperf.cli import main
from pcieperf.errors import UsageError
from pcieperf.link import Link

DATA = Path(__file__).parent / "data" / "testpmd"
HAVE_TESTPMD = shutil.which("dpdk-testpmd") is not None and len(os.sched_getaffinity(0)) >= 2
needs_testpmd = pytest.mark.skipif(
    not HAVE_TESTPMD,
    reason="dpdk-testpmd (Debian dpdk-dev; .ci/run installs it) or a second CPU is missing",
)


def test_recorded_two_port_run_is_parsed_exactly():
    # tests/data/testpmd/README.md: two net_pcap ports replaying a 20 000-packet file once.
    version, ports = testpmd.parse_output((DATA / "pcap-2ports-finite.txt").read_text())
    assert version == "unknown"  # that run was started without -v
    assert [p.port for p in ports] == [0, 1]
    port = ports[0]
    # The final forward statistics, not the "Accumulated ... all ports" block after port 1.
    assert (port.rx_packets, port.tx_packets) == (20000, 20000)
    assert ports[1].rx_packets == 20000
    assert port.rx_bursts == testpmd.BurstLine(81749901, ((0, 99), (32, 1)))
    # 60-byte frames: RX-bytes 1200000 over 20000 packets in the last NIC block.
    assert (port.nic_rx_packets, port.nic_rx_bytes) == (20000, 1200000)
    # Six periodic blocks; the file went through in the second (Rx-pps 19996), then nothing.
    # The first block has no rate, so the mean is over the other five: 19996 / 5.
    assert port.rx_pps_samples == [0.0, 19996.0, 0.0, 0.0, 0.0, 0.0]
    assert port.rx_pps == pytest.approx(19996 / 5)


def test_burst_histogram_uses_the_exact_packet_count():
    # "81749901 [99% of 0 pkts + 1% of 32 pkts]" with 20000 packets: 20000/32 = 625 full
    # bursts, the rest empty polls (the printed 1% would claim 817 499).
    line = testpmd.BurstLine(81749901, ((0, 99), (32, 1)))
    assert testpmd.burst_histogram(line, 20000) == {0: 81749901 - 625, 32: 625.0}
    # Two sizes: 60% of calls carry 8, 40% carry 4 -> 1000 packets = c8*8 + c4*4 with
    # c8/c4 = 60/40 -> c8 = 1000*60/640 = 93.75, c4 = 62.5.
    two = testpmd.BurstLine(200, ((0, 0), (8, 60), (4, 40)))
    assert testpmd.burst_histogram(two, 1000) == {0: 200 - 156.25, 4: 62.5, 8: 93.75}
    # "other" sits at the named sizes' call-weighted mean: (8*50 + 4*30)/80 = 6.5 -> 6 (round
    # half to even); 1000 packets over 8*50 + 4*30 + 6*20 = 640 -> 1.5625 calls per percent.
    other = testpmd.BurstLine(100, ((0, 0), (8, 50), (4, 30), (None, 20)))
    assert testpmd.burst_histogram(other, 1000) == pytest.approx(
        {0: 0.0, 4: 46.875, 6: 31.25, 8: 78.125}
    )
    # testpmd truncates percentages: with idle polls dominating, the named sizes print 0 % and
    # "other" goes to their plain mean, (32 + 31)/2 = 31.5 -> 32; 6.4 M packets -> 200 000.
    idle = testpmd.BurstLine(10**6, ((0, 98), (32, 0), (31, 0), (None, 2)))
    assert testpmd.burst_histogram(idle, 6_400_000) == {0: 800_000.0, 31: 0.0, 32: 200_000.0}


def test_burst_line_that_cannot_be_read_is_an_error():
    with pytest.raises(testpmd.PcieperfError, match="cannot read 'lots of 32'"):
        testpmd.parse_burst_line("5", "lots of 32")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"seconds": 1}, "--seconds 1 is too short; use at least 2"),
        ({"mode": "ring"}, "testpmd mode"),
        ({"mode": "pcap"}, "the pcap mode needs a capture file"),
    ],
)
def test_bad_run_configs(kwargs, message):
    with pytest.raises(UsageError, match=message):
        testpmd.RunConfig(**kwargs)


def test_missing_testpmd_is_a_usage_error(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv(testpmd.TESTPMD_ENV, raising=False)
    assert main(["dpdk", "run", "--db", str(tmp_path / "s.duckdb")]) == 2
    assert "dpdk-testpmd not found; install Debian's dpdk-dev" in capsys.readouterr().err


def test_listing_an_empty_store(tmp_path, capsys):
    assert main(["dpdk", "runs", "--db", str(tmp_path / "s.duckdb")]) == 0
    header = capsys.readouterr().out.split()  # the table's header and no rows
    assert header[:3] == ["id", "started", "mode"]
    assert len(header) == 10


@needs_testpmd
def test_bad_testpmd_arguments_are_a_usage_error(tmp_path, capsys):
    assert main(["dpdk", "run", "--seconds", "2", "--db", str(tmp_path / "s.duckdb"), "--",
                 "--no-such-option"]) == 2  # fmt: skip
    assert "testpmd failed" in capsys.readouterr().err


def _testpmd_alive(prefix: str) -> bool:
    found = subprocess.run(["pgrep", "-f", prefix], capture_output=True, text=True)
    return bool(found.stdout.strip())


@needs_testpmd
def test_end_to_end_run_and_prediction_from_it(tmp_path, capsys):
    pcap, db = tmp_path / "in.pcap", str(tmp_path / "s.duckdb")
    # 128-byte frames incl. FCS -> 124 bytes per packet in the capture.
    assert main(["trace", "synth", "--sizes", "128", "--pps", "1M", "--duration", "5ms",
                 "-o", str(pcap)]) == 0  # fmt: skip
    capsys.readouterr()
    assert main(["dpdk", "run", "--pcap", str(pcap), "--seconds", "2", "--db", db, "--json",
                 "--", "--burst=16"]) == 0  # fmt: skip
    run = json.loads(capsys.readouterr().out)
    assert run["version"].startswith("DPDK ")
    assert run["pkt_bytes"] == 124.0
    assert run["rx_pps"] > 1e5  # a real forwarding rate (tens of Mpps on a 2-vCPU VM)
    # infinite_rx always has packets: every rx_burst returns the full --burst of 16.
    assert run["mean_batch"] == 16.0
    assert set(run["batch_hist"]) == {"0", "16"}
    # No testpmd left, and its EAL runtime directory is gone.
    prefix = next(a for a in run["command"] if a.startswith("--file-prefix=")).split("=", 1)[1]
    assert not _testpmd_alive(prefix)
    assert not testpmd._runtime_dir(prefix).exists()
    assert main(["dpdk", "runs", "--db", db, "--json"]) == 0
    (listed,) = json.loads(capsys.readouterr().out)
    assert (listed["run_id"], listed["mode"]) == (run["run_id"], "pcap")
    assert listed["started"][:2] == "20"  # an ISO time stamp

    assert main(["dpdk-fwd", "--from-run", str(run["run_id"]), "--db", db, "--json"]) == 0
    fwd = json.loads(capsys.readouterr().out)
    assert (fwd["pps"], fwd["pkt"], fwd["mean_batch"]) == (run["rx_pps"], 124, 16.0)
    # VTune recipe: outbound writes per packet = tail/batch + tail/max(rx_free_thresh, batch)
    # = 4/16 + 4/32 = 0.375 B.
    assert fwd["outbound_write_gbps"] == pytest.approx(run["rx_pps"] * 0.375 * 8 / 1e9)
    cfg = dpdk.ForwardingConfig(pkt_bytes=124, batch=16.0)
    est = dpdk.estimate(cfg, Link(), run["rx_pps"])
    assert fwd["inbound_write_gbps"] == pytest.approx(float(est.metric_gbps("inbound_write")))


@needs_testpmd
def test_sigterm_ends_the_run_like_ctrl_c(tmp_path):
    proc = _start_cli(tmp_path, 60)
    prefix = _wait_for_testpmd(proc)
    proc.terminate()
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "(stopped early)" in out
    assert not _testpmd_alive(prefix)
    assert not list(testpmd._runtime_dir(prefix).parent.glob(prefix + "*"))


def _start_cli(tmp_path: Path, seconds: int) -> subprocess.Popen:
    code = "import sys; from pcieperf.cli import main; sys.exit(main(sys.argv[1:]))"
    args = ["dpdk", "run", "--seconds", str(seconds), "--db", str(tmp_path / "s.duckdb")]
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for_testpmd(proc: subprocess.Popen) -> str:
    prefix = f"pcieperf-{proc.pid}-"
    deadline = time.monotonic() + 20
    while not _testpmd_alive(prefix):
        assert time.monotonic() < deadline, "testpmd did not start"
        time.sleep(0.1)
    time.sleep(2.5)  # past the first statistics block
    return prefix


@needs_testpmd
def test_ctrl_c_stops_testpmd_and_keeps_the_run(tmp_path):
    proc = _start_cli(tmp_path, 60)
    prefix = _wait_for_testpmd(proc)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "(stopped early)" in out
    assert not _testpmd_alive(prefix)
    assert not list(testpmd._runtime_dir(prefix).parent.glob(prefix + "*"))


@needs_testpmd
def test_killing_pcieperf_takes_testpmd_down(tmp_path):
    proc = _start_cli(tmp_path, 60)
    prefix = _wait_for_testpmd(proc)
    proc.kill()
    proc.communicate()
    deadline = time.monotonic() + 20
    while _testpmd_alive(prefix):  # PR_SET_PDEATHSIG sent it SIGINT
        assert time.monotonic() < deadline, "testpmd outlived pcieperf"
        time.sleep(0.1)
    # Only its EAL runtime directory is left: pcieperf was gone before it could remove it.
    for leftover in testpmd._runtime_dir(prefix).parent.glob(prefix + "*"):
        shutil.rmtree(leftover, ignore_errors=True)
