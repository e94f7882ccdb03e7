"""Real DPDK runs: testpmd's output parsed exactly (a recorded run), the burst histogram rebuilt
from its lossy summary, when a run ends (a stand-in testpmd whose blocks come on the test's
word), and end-to-end runs of dpdk-testpmd on a synthesised capture, stopped cleanly at the end,
on Ctrl-C, on SIGTERM and when pcieperf is killed. Nothing waits a fixed time: every wait is
for a condition (a file, a block in testpmd's output, a process gone), with a generous deadline
so that a machine with both CPUs busy passes too (scripts/stress_tests.sh)."""

import json
import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import pcieperf as pp
from pcieperf.cli import main
from pcieperf.dpdk import forwarding, testpmd
from pcieperf.errors import PcieperfError, UsageError
from pcieperf.pcie.link import Link
from tests.helpers import TESTS_DATA
from tests.helpers.dpdk import needs_testpmd

DATA = TESTS_DATA / "testpmd"
needs_two_cpus = pytest.mark.skipif(
    len(os.sched_getaffinity(0)) < 2, reason="a run needs two CPUs (a main and a forwarding lcore)"
)
# How long a test waits for something that takes about a second idle: long enough for a
# machine with both CPUs busy (stress-ng --cpu 2 makes testpmd start twice as slowly).
WAIT_S = 120
POLL_S = 0.05


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
    with pytest.raises(PcieperfError, match="cannot read 'lots of 32'"):
        testpmd.parse_burst_line("5", "lots of 32")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"seconds": 0}, "`seconds` 0 is not allowed; it must be a positive number"),
        ({"seconds": math.nan}, "`seconds` nan is not allowed"),
        ({"mode": "ring"}, "testpmd mode"),
        ({"mode": "pcap"}, "the pcap mode needs a capture file"),
    ],
)
def test_bad_run_configs(kwargs, message):
    with pytest.raises(UsageError, match=message):
        testpmd.RunConfig(**kwargs)


def test_deadline_for_a_rate():
    # max(4 N, N + 60), hand-computed: a 2 s run waits up to 62 s for its rate, a 30 s run 120 s;
    # at 20 s both terms are 80.
    assert [testpmd.deadline_s(n) for n in (2, 20, 30)] == [62, 80, 120]


@given(st.floats(min_value=1e-3, max_value=1e7))
def test_deadline_leaves_at_least_a_minute_and_four_times_the_run(seconds):
    deadline = testpmd.deadline_s(seconds)
    assert deadline >= seconds + 60
    assert deadline >= 4 * seconds
    assert deadline in (seconds + 60, 4 * seconds)


def test_blocks_are_counted_as_the_lines_arrive():
    # The recorded run's lines one by one: a block counts once every port known so far has
    # printed its Rx-pps line. Line numbers from the file (pcap-2ports-finite.txt): port 0's
    # first Rx-pps is line 53, port 1's second (Rx-bps 9598528) line 87, then one every 23 lines.
    reader = testpmd.OutputReader()
    changes = {}
    for number, line in enumerate((DATA / "pcap-2ports-finite.txt").read_text().splitlines(), 1):
        before = reader.blocks
        reader.feed(line)
        if reader.blocks != before:
            changes[number] = reader.blocks
    assert changes == {53: 1, 87: 2, 110: 3, 133: 4, 156: 5, 179: 6}


def test_missing_testpmd_is_a_usage_error(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv(testpmd.TESTPMD_ENV, raising=False)
    assert main(["dpdk", "run", "--db", str(tmp_path / "s.duckdb")]) == 2
    assert "dpdk-testpmd not found; install Debian's dpdk-dev" in capsys.readouterr().err


def test_listing_an_empty_store(tmp_path, capsys):
    assert main(["dpdk", "runs", "--db", str(tmp_path / "s.duckdb")]) == 0
    # No table without rows: a line that says what makes one (issue 44).
    assert capsys.readouterr().out == "no testpmd runs stored yet; `pcieperf dpdk run` makes one\n"


@needs_testpmd
def test_bad_testpmd_arguments_are_a_usage_error(tmp_path, capsys):
    assert main(["dpdk", "run", "--seconds", "2", "--db", str(tmp_path / "s.duckdb"), "--",
                 "--no-such-option"]) == 2  # fmt: skip
    assert "testpmd failed" in capsys.readouterr().err


# --- when the run ends: a stand-in testpmd whose blocks come when the test says -------------


@pytest.fixture
def fake_testpmd(tmp_path, monkeypatch) -> Path:
    """$PCIEPERF_TESTPMD set to fake_testpmd.py; returns the folder it takes orders in."""
    folder = tmp_path / "fake"
    folder.mkdir()
    script = tmp_path / "fake-testpmd"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{DATA / "fake_testpmd.py"}" "$@"\n')
    script.chmod(0o755)
    monkeypatch.setenv(testpmd.TESTPMD_ENV, str(script))
    monkeypatch.setenv("FAKE_TESTPMD_DIR", str(folder))
    return folder


@needs_two_cpus
def test_run_goes_on_past_its_seconds_until_a_rate(fake_testpmd):
    # One block at once, the second only once the run has passed its --seconds: the run must
    # still be going then (it waits for the rate), and end with the second block's rate.
    seconds, waited = 0.2, []

    def tick(elapsed: float, blocks: int) -> None:
        if elapsed >= seconds and blocks == 1 and not waited:
            waited.append(elapsed)
            (fake_testpmd / "go-2").touch()

    result = testpmd.run(testpmd.RunConfig(seconds=seconds), tick)
    assert waited  # a tick after --seconds still saw one block: the run went on
    assert result.wall_s >= seconds
    assert not result.interrupted
    # fake_testpmd.py: 1 000 000 packets per block, Rx-pps 1000000 from the second block on;
    # 2 blocks in bursts of 32 -> 62 500 full bursts, no empty polls.
    assert result.rx_pps == 1e6
    assert result.batch_hist == {0: 0.0, 32: 62500.0}
    assert result.pkt_bytes == 60.0  # RX-bytes = 60 x RX-packets in every block


@needs_two_cpus
def test_no_rate_by_the_deadline_is_an_error(fake_testpmd, monkeypatch):
    # A testpmd that prints no block at all: the deadline (here max(1 x 0.2 s, 0.2 s + 0.5 s)
    # = 0.7 s) ends the run with the count, and testpmd is stopped (it got SIGINT).
    monkeypatch.setenv("FAKE_TESTPMD_BLOCKS", "0")
    monkeypatch.setattr(testpmd, "DEADLINE_FACTOR", 1.0)
    monkeypatch.setattr(testpmd, "DEADLINE_SLACK_S", 0.5)
    message = r"^no rate after 0\.7 s: testpmd printed 0 statistics blocks and a rate needs 2 "
    with pytest.raises(PcieperfError, match=message):
        testpmd.run(testpmd.RunConfig(seconds=0.2))
    assert (fake_testpmd / "stopped").exists()


@needs_two_cpus
def test_testpmd_ending_before_a_rate_is_an_error(fake_testpmd, monkeypatch):
    monkeypatch.setenv("FAKE_TESTPMD_EXIT", "1")  # one block, then the final statistics
    message = "^testpmd exited after 1 statistics block; a rate needs 2, 1 s apart"
    with pytest.raises(PcieperfError, match=message):
        testpmd.run(testpmd.RunConfig(seconds=0.2))


@needs_two_cpus
def test_ctrl_c_before_a_rate_is_an_interruption_and_stores_nothing(fake_testpmd, tmp_path, capsys):
    # Issue 46: Ctrl-C stops every command with exit 130, wherever it lands (in the wait for
    # testpmd's blocks or before it); a run without a rate has nothing to keep.
    proc = _start_cli(tmp_path, 60)
    _until(lambda: (fake_testpmd / "printed-1").exists(), proc, "the first block")
    proc.send_signal(signal.SIGINT)
    out, err = _finish(proc)
    assert (proc.returncode, out, err) == (130, "", "pcieperf: interrupted\n")
    assert main(["dpdk", "runs", "--db", str(tmp_path / "s.duckdb"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []


@needs_two_cpus
def test_run_off_a_terminal_draws_no_progress(fake_testpmd, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("FAKE_TESTPMD_BLOCKS", "2")
    assert main(["dpdk", "run", "--seconds", "0.1", "--db", str(tmp_path / "s.duckdb")]) == 0
    out, err = capsys.readouterr()
    assert err == ""  # stderr is not a terminal: no bar, no carriage returns
    # fake_testpmd.py's version and rate (1 Mpps, 60-byte packets, bursts of 32).
    assert out.startswith("run 1: DPDK 22.11.0-fake, null, ")
    assert "Rx 1.000 Mpps of 64 B frames (60 B DMA'd), mean batch 32.00" in out


@needs_two_cpus
def test_the_api_runs_as_the_cli_does(fake_testpmd, tmp_path, capsys, monkeypatch):
    # pp.dpdk_run is `dpdk run` (issue 16): the same JSON but for what differs from run to run
    # (the wall time; the command, whose --file-prefix names the process).
    monkeypatch.setenv("FAKE_TESTPMD_BLOCKS", "2")
    argv = ["dpdk", "run", "--seconds", "0.1", "--null-size", "128", "--json"]
    assert main([*argv, "--db", str(tmp_path / "cli.duckdb")]) == 0
    cli = json.loads(capsys.readouterr().out)
    db = tmp_path / "api.duckdb"
    api = json.loads(json.dumps(pp.dpdk_run(seconds=0.1, null_size=128, db=db).to_json()))
    varying = ("wall_s", "command")
    assert {k: v for k, v in api.items() if k not in varying} == {
        k: v for k, v in cli.items() if k not in varying
    }
    # fake_testpmd.py: 1 Mpps of 60-byte packets in full bursts of 32, one port.
    runs = pp.dpdk_runs(db=db).to_frame()
    assert (runs.loc[0, "rx_pps"], runs.loc[0, "pkt_bytes"]) == (1e6, 60.0)
    assert api["mean_batch"] == 32.0
    assert pp.store.open(db).runs().loc[0, "source"] == "net_null size=128"


# --- the real dpdk-testpmd --------------------------------------------------------------------


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
    assert run["wall_s"] >= 2  # --seconds is a minimum: the run also waits for its rate
    assert run["version"].startswith("DPDK ")
    # Bytes over packets of one statistics block: testpmd reads the two counters while the
    # forwarding lcore updates them (rte_eth_stats_get, no snapshot), so a block can hold a few
    # bursts more of one than of the other (seen in CI: 124.0000157).
    assert run["pkt_bytes"] == pytest.approx(124.0, rel=1e-4)
    assert run["rx_pps"] > 1e5  # a real forwarding rate (tens of Mpps on a 2-vCPU VM)
    # infinite_rx always has packets: every rx_burst returns the full --burst of 16.
    assert run["mean_batch"] == 16.0
    assert set(run["batch_hist"]) == {"0", "16"}
    # No testpmd left, and its EAL runtime directory is gone.
    prefix = next(a for a in run["command"] if a.startswith("--file-prefix=")).split("=", 1)[1]
    assert not _testpmd_alive(prefix)
    assert not testpmd.runtime_dir(prefix).exists()
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
    cfg = forwarding.ForwardingConfig(pkt_bytes=124, batch=16.0)
    est = forwarding.estimate(cfg, Link(), run["rx_pps"])
    assert fwd["inbound_write_gbps"] == pytest.approx(float(est.metric_gbps("inbound_write")))


def _testpmd_alive(prefix: str) -> bool:
    found = subprocess.run(["pgrep", "-f", prefix], capture_output=True, text=True)
    return bool(found.stdout.strip())


def _until(condition: Callable[[], bool], proc: subprocess.Popen, what: str) -> None:
    """Wait for `condition` while the CLI in `proc` runs, up to WAIT_S."""
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert proc.poll() is None, f"pcieperf ended before {what}: {proc.communicate()}"
        assert time.monotonic() < deadline, f"no {what} after {WAIT_S} s"
        time.sleep(POLL_S)


def _start_cli(tmp_path: Path, seconds: int) -> subprocess.Popen:
    code = "import sys; from pcieperf.cli import main; sys.exit(main(sys.argv[1:]))"
    args = ["dpdk", "run", "--seconds", str(seconds), "--db", str(tmp_path / "s.duckdb")]
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_ctrl_c_as_in_a_terminal,
    )


def _ctrl_c_as_in_a_terminal() -> None:
    """A shell without job control starts background commands (`.ci/run &`) with SIGINT
    ignored, and the child inherits that: restore the default so the child's Python turns
    SIGINT into KeyboardInterrupt, as a terminal's Ctrl-C does."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _finish(proc: subprocess.Popen) -> tuple[str, str]:
    """The CLI's output once it has ended, waiting up to WAIT_S; a CLI still running then is
    killed (no process outlives its test) and the test fails."""
    try:
        return proc.communicate(timeout=WAIT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise


def _start_logged_cli(tmp_path: Path, monkeypatch) -> tuple[subprocess.Popen, Path]:
    """The CLI running the real testpmd for a minute, testpmd's output copied to a log the
    test can watch (bash replaces itself by testpmd, so signals and PR_SET_PDEATHSIG reach it
    as usual)."""
    log, script = tmp_path / "testpmd.log", tmp_path / "testpmd"
    script.write_text(f'#!/usr/bin/env bash\nexec > >(tee -a "{log}")\nexec dpdk-testpmd "$@"\n')
    script.chmod(0o755)
    monkeypatch.setenv(testpmd.TESTPMD_ENV, str(script))
    return _start_cli(tmp_path, 60), log


def _blocks_in(log: Path) -> int:
    reader = testpmd.OutputReader()
    for line in log.read_text(errors="replace").splitlines() if log.exists() else []:
        reader.feed(line)
    return reader.blocks


def _wait_for_blocks(proc: subprocess.Popen, log: Path, blocks: int) -> str:
    """Wait until testpmd has printed `blocks` statistics blocks; its file prefix."""
    _until(lambda: _blocks_in(log) >= blocks, proc, f"{blocks} statistics blocks")
    return f"pcieperf-{proc.pid}-"


@needs_testpmd
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_stopping_the_run_early_stops_testpmd_and_keeps_the_run(tmp_path, monkeypatch, stop):
    proc, log = _start_logged_cli(tmp_path, monkeypatch)
    prefix = _wait_for_blocks(proc, log, testpmd.RATE_BLOCKS)  # a rate: the run can be kept
    proc.send_signal(stop)
    out, err = _finish(proc)
    assert proc.returncode == 0, err
    assert "(stopped early)" in out
    assert not _testpmd_alive(prefix)
    assert not list(testpmd.runtime_dir(prefix).parent.glob(prefix + "*"))


@needs_testpmd
@pytest.mark.slow
def test_killing_pcieperf_takes_testpmd_down(tmp_path, monkeypatch, capsys, cpu_hog):
    proc, log = _start_logged_cli(tmp_path, monkeypatch)
    prefix = _wait_for_blocks(proc, log, 1)  # forwarding
    proc.kill()
    proc.communicate()
    deadline = time.monotonic() + WAIT_S
    while _testpmd_alive(prefix):  # PR_SET_PDEATHSIG sent it SIGKILL
        assert time.monotonic() < deadline, "testpmd outlived pcieperf"
        time.sleep(POLL_S)
    # Its EAL runtime folder is left (pcieperf was gone before it could remove it), for the
    # next run to remove.
    assert list(testpmd.runtime_dir(prefix).parent.glob(prefix + "*"))
    monkeypatch.delenv(testpmd.TESTPMD_ENV)
    assert main(["dpdk", "run", "--seconds", "1", "--db", str(tmp_path / "t.duckdb")]) == 0
    assert not list(testpmd.runtime_dir(prefix).parent.glob(prefix + "*"))


def test_no_path_of_the_users_reaches_a_device_argument(tmp_path):
    # Issue 46 F3: DPDK splits device arguments at , and = (lib/kvargs/rte_kvargs.c): a capture
    # named 'a.pcap,tx_pcap=/victim' would add a port writing /victim. The path goes through a
    # link in a private folder instead.
    pcap = tmp_path / "a.pcap,tx_pcap=" / "victim.pcap"
    pcap.parent.mkdir()
    pp.synth_capture(pcap, sizes="64", pps="1M", duration="1ms")
    links = tmp_path / "links"
    links.mkdir()
    cfg = testpmd.RunConfig(mode="pcap", pcap=pcap, seconds=1)
    (vdev,) = (a for a in testpmd.testpmd_command(cfg, "testpmd", "p", links) if "--vdev" in a)
    assert vdev == f"--vdev=net_pcap0,rx_pcap={links / 'in'},infinite_rx=1"
    assert (links / "in").readlink() == pcap


@needs_testpmd
@pytest.mark.slow
def test_a_capture_named_like_device_arguments_writes_nothing_else(tmp_path, capsys):
    victim = tmp_path / "victim.pcap"
    injected = Path(f"{tmp_path}/a.pcap,tx_pcap={victim}")  # a folder 'a.pcap,tx_pcap=' ...
    injected.parent.mkdir(parents=True)
    for pcap in (injected, tmp_path / "a.pcap"):  # ... and what DPDK would read as rx_pcap
        assert main(["trace", "synth", "--sizes", "64", "--pps", "1M", "--duration", "1ms",
                     "-o", str(pcap)]) == 0  # fmt: skip
    assert not victim.exists()  # a port writing the injected path's tail would create it
    capsys.readouterr()
    db = str(tmp_path / "s.duckdb")
    assert main(["dpdk", "run", "--pcap", str(injected), "--seconds", "1", "--db", db]) == 0
    assert not victim.exists()
