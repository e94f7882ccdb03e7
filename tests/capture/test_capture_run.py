"""`capture run` with the real dpdk-testpmd and dpdk-dumpcap (issue 26): conservation of the
packets it counts, a file capinfos accepts, the API and the CLI giving one answer, and nothing
left behind (processes, hugetlbfs mounts, hugepages, EAL runtime folders, temporary files),
also after SIGTERM. The runs assert relations, never speeds: the machine may be loaded."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import warnings
from ctypes.util import find_library
from pathlib import Path

import pytest

import pcieperf as pp
from pcieperf.capture import hugepages, leftovers, run, tools
from pcieperf.dpdk import testpmd
from pcieperf.errors import PcieperfWarning
from pcieperf.results import json_default
from tests.helpers.cli import run_cli
from tests.helpers.dpdk import NOTHING_LEFT, leftovers_of, needs_dpdk

WAIT_S = 300.0  # a generous deadline for conditions on a loaded 2-core machine
POLL_S = 0.1


@pytest.fixture
def nothing_left():
    """The capture runs this test process makes must leave nothing behind (other runs, of other
    tests or users, may go on beside it: only this process's are looked at)."""
    yield
    assert leftovers_of(os.getpid()) == NOTHING_LEFT


@needs_dpdk
@pytest.mark.parametrize("frame", [64, 1500])
def test_a_capture_conserves_packets_and_leaves_nothing(frame, tmp_path, capsys, nothing_left):
    out, db = tmp_path / f"cap{frame}.pcapng", tmp_path / "s.duckdb"
    code, text, err = run_cli(
        capsys, "capture", "run", "--frame", str(frame), "--seconds", "2", "--out", str(out),
        "--db", str(db), "--json",
    )  # fmt: skip
    assert code == 0, err
    got = json.loads(text)
    # dumpcap counts every copy the primary made, ring-full drops included (app/dumpcap/main.c:
    # received = accepted + ringfull): the records written are the rest.
    assert got["written"] == got["copies"] - got["dropped"] > 0
    # The file holds what dumpcap wrote, give or take the ring's content at the stop.
    assert abs(got["file_packets"] - got["written"]) <= got["ring_size"]
    assert (got["frame_bytes"], got["sink"]) == (frame, "file")
    # Each record is a pcapng Enhanced Packet Block: 32 bytes around the packet (its header and
    # trailing length, pcapng draft §4.3) plus options; the packet is the frame less its FCS.
    assert got["bytes_per_record"] >= frame - 4 + 32
    # Copying every packet twice (Rx and Tx) on the forwarding lcore costs it CPU time per
    # packet (lib/pdump/rte_pdump.c: pdump_copy runs in the Rx and Tx callbacks).
    assert got["fwd_cpu_ns"] > got["fwd_cpu_ns_no_capture"] > 0
    # One TSC read per burst of at most testpmd's 32 (--burst default) in 22.11's pdump copy.
    assert 1 <= got["packets_per_timestamp"] <= 32
    assert [e["essential"] for e in got["essentials"]] == [
        "timestamps", "ordering", "merging", "zero_loss",
    ]  # fmt: skip
    assert not list(tmp_path.glob(".*.part"))
    if shutil.which("capinfos"):  # Wireshark's reader agrees on the record count
        info = subprocess.run(["capinfos", "-M", "-c", str(out)], capture_output=True, text=True)
        assert info.returncode == 0, info.stderr
        assert f"Number of packets:   {got['file_packets']}" in info.stdout
    # One answer, asked both ways: the API and the CLI.
    assert _as_printed(pp.capture_show(got["run_id"], db=db)) == got
    code, text, _ = run_cli(capsys, "capture", "runs", "--db", str(db), "--json")
    (row,) = json.loads(text)
    assert [row] == _as_printed(pp.capture_runs(db=db))


def _real_time_allowed() -> bool:
    """Whether this process may run a thread at SCHED_FIFO (asked of a child of its own)."""
    code = "import os; os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))"
    return subprocess.run([sys.executable, "-c", code], capture_output=True).returncode == 0


def _as_printed(result):
    """A result's JSON as the CLI prints it (timestamps as ISO text)."""
    return json.loads(json.dumps(result.to_json(), default=json_default))


def _start_cli(tmp_path: Path, *args: str) -> subprocess.Popen:
    tmp_path.mkdir(exist_ok=True)  # a store's folder is never made for it (issue 28)
    code = "import sys; from pcieperf.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.Popen(
        [sys.executable, "-c", code, "capture", "run", "--db", str(tmp_path / "s.duckdb"), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # A shell without job control starts background jobs (`.ci/run &`) with SIGINT
        # ignored: restore the default, as a terminal's Ctrl-C finds it.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def _until(condition, proc: subprocess.Popen, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert proc.poll() is None, f"pcieperf ended before {what}: {proc.communicate()}"
        assert time.monotonic() < deadline, f"no {what} after {WAIT_S} s"
        time.sleep(POLL_S)


@needs_dpdk
def test_a_capture_to_dev_null_measures_the_tool_but_not_the_file(tmp_path, nothing_left):
    got = pp.capture_run(frame=128, seconds=1, db=tmp_path / "s.duckdb").to_json()
    assert got["written"] == got["copies"] - got["dropped"] > 0
    assert got["capture_cpu_ns"] > 0
    # dumpcap writes one pcapng record per packet, 128 - 4 B of data and its block around it
    assert got["bytes_per_record"] > 124
    assert got["file_packets"] is None
    assert [e["met"] for e in got["essentials"][:2]] == [False, None]
    # A line moving between two CPUs takes tens of ns (46-465 here); the probe answers while
    # both CPUs are busy because its threads run at SCHED_FIFO, and has no answer (null)
    # where real-time priority is refused (a container without CAP_SYS_NICE).
    trips = [got["round_trip_ns_no_capture"], got["round_trip_ns"]]
    if _real_time_allowed():
        assert all(ns > 1 for ns in trips), trips
    else:
        assert trips == [None, None]
    assert 0 <= got["steal_cpu_share"] <= os.cpu_count()  # /proc/stat's cpu line: all CPUs


@needs_dpdk
def test_pdump_writes_every_record_it_dequeues(tmp_path, nothing_left):
    # dpdk-pdump hands each copy to a net_pcap port (libpcap pcap_dump per record); what it
    # says it transmitted is what the file holds, give or take its two rings (one for Rx
    # copies, one for Tx: app/pdump/main.c), drained into the file after it counts.
    got = pp.capture_run(
        tool="pdump", format="pcap", sink="tmpfs", seconds=1, db=tmp_path / "s.duckdb"
    ).to_json()
    assert got["copies_counted"] is False
    assert abs(got["file_packets"] - got["written"]) <= 2 * got["ring_size"]
    assert got["written"] <= got["copies"]
    # net_pcap stamps each record in ns as it writes it (drivers/net/pcap calculate_timestamp),
    # not a burst at once as dumpcap does: 1.0 per timestamp measured here (DPDK 22.11).
    assert 1 <= got["packets_per_timestamp"] < 2


@needs_dpdk
@pytest.mark.slow
def test_pdump_writes_a_whole_file_whatever_its_path(tmp_path, nothing_left):
    # Issue 43: app/pdump/main.c keeps rx-dev/tx-dev in 64 bytes and cut a longer path short,
    # so the capture went to another file and an empty one was published. The path now goes
    # through a short link; a 200-character --out is written whole.
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    out = deep / ("f" * (200 - len(str(deep)) - 6) + ".pcap")
    assert len(str(out)) == 200
    got = pp.capture_run(
        tool="pdump", format="pcap", out=out, seconds=1, db=tmp_path / "s.duckdb"
    ).to_json()
    assert got["file_packets"] > 0
    assert abs(got["file_packets"] - got["written"]) <= 2 * got["ring_size"]
    assert not list(deep.glob(".*.part"))


@needs_dpdk
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_stopping_a_capture_cleans_up_and_stores_nothing(stop, tmp_path):
    # Each window lasts 15 s: the signal comes while dumpcap writes, well before the end.
    proc = _start_cli(tmp_path, "--seconds", "15", "--sink", "tmpfs")
    try:
        _until(lambda: _writing(proc.pid), proc, "a capture writing")  # dumpcap has started
        proc.send_signal(stop)
        _, err = proc.communicate(timeout=WAIT_S)
    finally:
        if proc.poll() is None:  # the test failed: still clean up before looking
            proc.send_signal(signal.SIGINT)
            proc.communicate(timeout=WAIT_S)
    # 128 + the signal, as a shell reports a process it stopped (130 for Ctrl-C, 143 SIGTERM)
    assert proc.returncode == 128 + stop, err
    said = {signal.SIGINT: "", signal.SIGTERM: " by SIGTERM"}[stop]
    assert err.strip().splitlines()[-1] == f"pcieperf: interrupted{said}"
    assert pp.capture_runs(db=tmp_path / "s.duckdb").to_json() == []
    assert leftovers_of(proc.pid) == NOTHING_LEFT


def _writing(pid: int) -> bool:
    """Whether the capture run of process `pid` has a tmpfs file with a record in it."""
    return any(
        f.stat().st_size > 0
        for folder in run.TMPFS.glob(f".{leftovers.RUN_PREFIX}{pid}-*")
        for f in folder.glob("capture.*")
    )


@needs_dpdk
@pytest.mark.slow
def test_the_next_run_undoes_what_a_killed_one_left(tmp_path, nothing_left, cpu_hog):
    # SIGKILL leaves no time to clean up: testpmd and dumpcap die with pcieperf (their parent
    # death signal is SIGKILL), but the mount, the page count, the private folders, EAL's
    # folder and the record stay, for the next run to undo.
    proc = _start_cli(tmp_path, "--seconds", "15", "--sink", "tmpfs")
    try:
        _until(lambda: _writing(proc.pid), proc, "a capture writing")
    finally:
        proc.kill()
        proc.communicate(timeout=WAIT_S)
    deadline = time.monotonic() + WAIT_S
    while leftovers_of(proc.pid)["processes"]:
        assert time.monotonic() < deadline, "testpmd or dumpcap outlived pcieperf"
        time.sleep(POLL_S)
    # What it left is for the next run to undo: this test's, or another capture run's (another
    # test's, a user's) that took the machine's lock first (in CI, beside a CPU hog, one had
    # undone all of it before this test looked); tests/capture/test_leftovers.py checks what
    # undoing does. The next run says what it undid, if anything was still left.
    left = leftovers_of(proc.pid)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always", PcieperfWarning)
        pp.capture_run(seconds=1, db=tmp_path / "s.duckdb")
    ours = f"an earlier capture run was killed; undone: for process {proc.pid}: "
    if any(ours in str(w.message) for w in said):
        assert all(left[kind] for kind in ("mounts", "records", "tmpfs")), left
    assert leftovers_of(proc.pid) == NOTHING_LEFT


@needs_dpdk
@pytest.mark.slow
def test_two_runs_at_once_take_turns(tmp_path):
    # Each reserves the hugepages it finds missing and puts back the count it found: at once,
    # one would take the other's pages and the count would not come back (seen: 512 -> 640).
    # The second waits for the machine's capture lock and says for whom.
    procs = [_start_cli(tmp_path / str(k), "--seconds", "1") for k in range(2)]  # own stores
    outputs = [proc.communicate(timeout=WAIT_S) for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0], outputs
    for proc in procs:
        assert leftovers_of(proc.pid) == NOTHING_LEFT


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--frame", "63"], "frame 63 is not allowed; give 64 to 2052 bytes"),
        (["--lcores", "3"], "--lcores 3 is not allowed; give 1 or 2"),
        (["--ring-size", "1000"], "--ring-size 1000 is not allowed; use a power of two"),
        (["--sink", "file"], "--out names the capture file of --sink file"),
        (["--snaplen", "0"], "--snaplen 0 is not allowed"),
        (
            ["--tool", "pdump", "--capture-format", "pcap", "--snaplen", "96"],
            "--tool pdump has no snap length",
        ),
        (["--wait", "-1"], "--wait -1.0 is not allowed; give seconds from 0 on"),
        # a replay's frames and a port's are their own: --frame was ignored without a word
        (
            ["--frame", "128", "--pcap", "a.pcap"],
            "--frame sizes net_null's frames; with --pcap the frames are what it forwards: "
            "leave out --frame",
        ),
        (["--frame", "1500", "--port", "eth0"], "with --port the frames are what it forwards"),
        # libpcap's own words, before the baseline window (dumpcap said it only after it)
        pytest.param(
            ["--filter", "udp dst port banana", "--sink", "tmpfs"],
            "--filter 'udp dst port banana' is not a filter libpcap can compile: ",
            marks=pytest.mark.skipif(not find_library("pcap"), reason="libpcap is not installed"),
        ),
    ],
)
def test_bad_values_are_refused_before_anything_starts(args, message, tmp_path, capsys):
    code, _, err = run_cli(capsys, "capture", "run", "--db", str(tmp_path / "s.duckdb"), *args)
    assert code == 2
    assert err.strip().splitlines() == [f"pcieperf: error: {message}"] or message in err
    assert not (tmp_path / "s.duckdb").exists()


def test_an_existing_out_or_a_missing_folder_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(testpmd.TESTPMD_ENV, sys.executable)  # found: the sink check comes next
    monkeypatch.setenv(tools.tool("dumpcap").env, sys.executable)
    monkeypatch.setattr(hugepages, "check", lambda huge_dir: None)
    kept = tmp_path / "kept.pcapng"
    kept.write_bytes(b"mine")
    code, _, err = run_cli(capsys, "capture", "run", "--out", str(kept))
    assert (code, kept.read_bytes()) == (2, b"mine")
    assert "exists; pass --force" in err
    code, _, err = run_cli(capsys, "capture", "run", "--out", str(tmp_path / "no" / "x.pcapng"))
    assert (code, "does not exist" in err) == (2, True)


def test_missing_dumpcap_names_the_package(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(testpmd.TESTPMD_ENV, sys.executable)
    monkeypatch.setenv(tools.tool("dumpcap").env, str(tmp_path / "no-dumpcap"))
    monkeypatch.setattr(testpmd.shutil, "which", lambda name: None)  # testpmd.find_binary
    code, _, err = run_cli(capsys, "capture", "run", "--db", str(tmp_path / "s.duckdb"))
    assert code == 2
    assert "dpdk-dumpcap not found; install Debian's dpdk-dev" in err


def test_without_root_or_huge_dir_the_run_is_refused(tmp_path, capsys, monkeypatch):
    # A user who is not root cannot reserve hugepages: one line, exit 2, nothing started.
    monkeypatch.setenv(testpmd.TESTPMD_ENV, sys.executable)
    monkeypatch.setenv(tools.tool("dumpcap").env, sys.executable)
    monkeypatch.setattr(hugepages.os, "geteuid", lambda: 65534)  # nobody
    code, _, err = run_cli(capsys, "capture", "run", "--db", str(tmp_path / "s.duckdb"))
    assert code == 2
    assert err.startswith("pcieperf: error: a capture run needs hugepages: run as root")
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "s.duckdb").exists()


def test_huge_dir_must_be_a_hugetlbfs_mount(tmp_path):
    with pytest.raises(pp.UsageError, match="not a hugetlbfs mount point"):
        hugepages.check(tmp_path)


def test_dumpcaps_closing_counts_are_read():
    # dpdk-dumpcap 22.11's last lines, as printed on this machine (-q, one port).
    out = (
        "File: /dev/null\n\n"
        "Packets received/dropped on interface 'net_null0': 22971936/12585752 (64.6)\n"
        "Capturing on 'net_null0'\n"
    )
    said = tools.parse_dumpcap(out)
    assert (said.received, said.written) == (22971936, 10386184)
    with pytest.raises(pp.PcieperfError, match="printed no packet counts: EAL: oops"):
        tools.parse_dumpcap("EAL: oops\n")


def test_the_primarys_mempool_drivers_are_preloaded(monkeypatch):
    # `ldd dpdk-testpmd` on Debian 12 (22.11): the one mempool driver it links, in order.
    ldd = (
        "\tlibrte_mempool.so.23 => /lib/x86_64-linux-gnu/librte_mempool.so.23 (0x7f60)\n"
        "\tlibrte_mempool_dpaa.so.23 => /usr/lib/x86_64-linux-gnu/dpdk/pmds-23.0/"
        "librte_mempool_dpaa.so.23 (0x7f61)\n"
        "\tlibrte_mempool_ring.so.23 => /usr/lib/x86_64-linux-gnu/dpdk/pmds-23.0/"
        "librte_mempool_ring.so.23 (0x7f62)\n"
    )
    done = subprocess.CompletedProcess([], 0, stdout=ldd, stderr="")
    monkeypatch.setattr(tools.subprocess, "run", lambda *a, **k: done)
    assert tools.mempool_preload("testpmd") == (
        "/usr/lib/x86_64-linux-gnu/dpdk/pmds-23.0/librte_mempool_dpaa.so.23:"
        "/usr/lib/x86_64-linux-gnu/dpdk/pmds-23.0/librte_mempool_ring.so.23"
    )


def test_mount_paths_with_spaces_are_unescaped():
    assert hugepages._unescape(r"/mnt/huge\040pages") == "/mnt/huge pages"
