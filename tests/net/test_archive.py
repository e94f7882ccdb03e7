"""Archive statistics (issue 17 item 2): per-file partial statistics merged exactly, per port,
into the statistics of the files concatenated in time order; the same on local workers."""

import itertools
import json
import os
import pickle
import signal
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pcieperf._native import core
from pcieperf.net.trace import synthesis
from pcieperf.net.trace.files import read
from pcieperf.net.trace.rewrite import merge
from pcieperf.net.trace.statistics import WINDOWS_NS, stats_config
from pcieperf.nic.profile import load_profile
from tests.helpers import CAPTURES, TESTS_DATA
from tests.helpers.cli import run_cli

INPUTS = TESTS_DATA / "trace_stats" / "inputs"
PORT_KEYS = ("port", "files", "first_file", "last_file")
PCAP_HEADER = 24  # bytes of a pcap file header (draft-ietf-opsawg-pcap §4)
PCAP_RECORD_HEADER = 16  # bytes before each record's data (same, §5)
CONFIG = stats_config(40, WINDOWS_NS)


def synth(tmp_path: Path, capsys, *extra: str) -> Path:
    """A 100 000-packet on/off IMIX capture: bursts of 32 frames at 40 GbE line rate."""
    out = tmp_path / "one.pcap"
    argv = ["trace", "synth", "--eth", "40", "--sizes", "imix", "--pps", "2M"]
    code, _, _ = run_cli(capsys, *argv, "--duration", "50ms", "--arrival", "onoff", "-o", str(out))
    assert code == 0
    return out


def split(capture: Path, folder: Path, cuts: list[int]) -> list[Path]:
    """The capture's records cut before each packet index in `cuts`, one pcap file each."""
    t = read(capture, offsets=True)
    data = capture.read_bytes()
    starts = [int(o) - PCAP_RECORD_HEADER for o in t.offset] + [len(data)]
    bounds = [0, *cuts, t.packets]
    folder.mkdir()
    paths = []
    for k, (a, b) in enumerate(itertools.pairwise(bounds)):
        paths.append(folder / f"part-{k:03d}.pcap")
        paths[-1].write_bytes(data[:PCAP_HEADER] + data[starts[a] : starts[b]])
    return paths


def without(result: dict, keys: tuple[str, ...]) -> str:
    return json.dumps({k: v for k, v in result.items() if k not in keys}, indent=2)


def test_a_partial_alone_is_the_file_statistics():
    # Every shared capture and every purpose-written one (quirks, out of order, several
    # interfaces, gzip): the partial of a file, pickled and summarised, is what `trace stats`
    # computes (both in Rust; the stats side is pinned by test_trace_stats_golden.py).
    files = sorted(INPUTS.iterdir()) + sorted(CAPTURES.glob("**/*.pcap*"))
    checked = 0
    for path in files:
        (raw,) = core().trace_stats([str(path)], CONFIG)
        if isinstance(raw, str):
            continue  # a capture refused by both (damaged on purpose)
        origin = raw["first_ts_ns"] if raw["packets"] else 0
        partial = pickle.loads(pickle.dumps(core().trace_partial(str(path), CONFIG, origin)))
        assert partial.summary(CONFIG) == raw, path
        # Read on one thread (as a Dask worker thread reads it) the partial is the same bytes.
        inline = core().trace_partial(str(path), CONFIG, origin, read_ahead=False)
        assert inline.to_bytes() == partial.to_bytes(), path
        checked += 1
    assert checked >= 16  # the 16 written by tests/data/trace_stats/make.py at least


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(cuts=st.lists(st.integers(1, 1999), max_size=12, unique=True).map(sorted))
def test_partials_of_any_split_merge_to_the_whole(tmp_path_factory, cuts):
    # Invariant: wherever a time-ordered capture is cut (inside bursts, inside windows), the
    # partials appended in order summarise to the statistics of the whole file.
    folder = tmp_path_factory.mktemp("split")
    whole = folder / "whole.pcap"
    synthesis.synth(
        whole,
        eth=trace_eth(),
        mix=imix(),
        pps=2e6,
        duration_s=0.001,
        arrival="onoff",
    )
    (raw,) = core().trace_stats([str(whole)], CONFIG)
    parts = split(whole, folder / "parts", cuts)
    partials = [core().trace_partial(str(p), CONFIG, raw["first_ts_ns"]) for p in parts]
    total = partials[0]
    for p in partials[1:]:
        total.append(p, CONFIG)
    got = total.summary(CONFIG)
    assert got.pop("reads") == len(parts)  # one read of each file
    assert got == {k: v for k, v in raw.items() if k != "reads"}


def trace_eth():
    from pcieperf.net.ethernet import Ethernet

    return Ethernet(40)


def imix():
    from pcieperf.net.ethernet import parse_mix

    return parse_mix("imix")


pytest.importorskip("distributed", reason="the dask extra (pip install 'pcieperf[dask]')")

from pcieperf import engine  # noqa: E402
from pcieperf.net import archive, archive_merge  # noqa: E402


def test_100_files_with_bursts_across_them_equal_one_file(tmp_path, capsys, monkeypatch):
    # The acceptance: 100 files cut from one synthetic capture, every cut inside a
    # 32-frame burst (bursts start at multiples of 32; cut k is at packet 1000k + 7, and
    # 1000k + 7 = 8 (125k) + 7 is odd); the archive's statistics are the one file's, byte for
    # byte.
    monkeypatch.chdir(tmp_path)
    one = synth(tmp_path, capsys)
    cuts = [1000 * k + 7 for k in range(1, 100)]
    assert all(c % 32 for c in cuts)
    split(one, tmp_path / "parts", cuts)
    code, out, _ = run_cli(capsys, "trace", "stats", "--json", "--archive", "parts/*.pcap")
    assert code == 0
    (port,) = json.loads(out)
    assert (port["files"], port["first_file"]) == (100, "parts/part-000.pcap")
    code, single, _ = run_cli(capsys, "trace", "stats", "--json", str(one))
    (whole,) = json.loads(single)
    assert whole["bursts"]["max_burst"] == 32  # the bursts the cuts go through
    assert without(port, PORT_KEYS) == without(whole, ("file",))


def test_files_that_overlap_in_time_are_summarised_together(tmp_path, capsys, monkeypatch):
    # Two files of one port whose times interleave: the result is that of one file holding
    # both files' records, the first's then the second's (out of order, so sorted by time).
    monkeypatch.chdir(tmp_path)
    one = synth(tmp_path, capsys)
    a, b = split(one, tmp_path / "parts", [50_000])
    data_b = b.read_bytes()
    a.write_bytes(data_b)  # both files hold b's records: they overlap entirely
    both = tmp_path / "both.pcap"
    both.write_bytes(data_b + data_b[PCAP_HEADER:])
    code, out, _ = run_cli(capsys, "trace", "stats", "--json", "--archive", "parts/*.pcap")
    assert code == 0
    (port,) = json.loads(out)
    code, single, _ = run_cli(capsys, "trace", "stats", "--json", str(both))
    (whole,) = json.loads(single)
    assert whole["out_of_order"] == 1  # the second copy's first packet
    assert without(port, PORT_KEYS) == without(whole, ("file",))


@pytest.mark.skipif(not CAPTURES.is_dir(), reason="../shared/data/captures is absent")
@pytest.mark.parametrize("mode", [(), ("--archive",)], ids=["per-file", "archive"])
def test_local2_gives_the_in_process_result_on_the_shared_captures(capsys, mode):
    # The acceptance: --scheduler local:2 prints what the in-process run prints.
    files = [str(p) for p in sorted(CAPTURES.glob("**/*.pcap*"))]
    readable = [f for f in files if not isinstance(core().trace_stats([f], CONFIG)[0], str)]
    argv = ["trace", "stats", "--json", *mode, *readable]
    code, in_process, _ = run_cli(capsys, *argv)
    assert code == 0
    code, local2, _ = run_cli(capsys, *argv, "--scheduler", "local:2")
    assert code == 0
    assert local2 == in_process
    if not mode:  # the per-file result through Dask is the plain command's
        code, plain, _ = run_cli(capsys, "trace", "stats", "--json", *readable)
        assert plain == in_process


def test_a_glob_that_matches_nothing_is_one_line(tmp_path, capsys):
    code, _, err = run_cli(capsys, "trace", "stats", "--archive", str(tmp_path / "*.pcap"))
    assert code == 2
    assert err.count("\n") == 1
    assert "matches no file" in err


def interleave(capture: Path, folder: Path, inputs: int) -> list[Path]:
    """The capture's records dealt round-robin into `inputs` pcap files (each in time order,
    all spanning the whole capture), as a capture of several queues or ports would be."""
    t = read(capture, offsets=True)
    data = capture.read_bytes()
    starts = [int(o) - PCAP_RECORD_HEADER for o in t.offset] + [len(data)]
    folder.mkdir()
    paths = []
    for k in range(inputs):
        records = b"".join(data[starts[i] : starts[i + 1]] for i in range(k, t.packets, inputs))
        paths.append(folder / f"q{k}.pcap")
        paths[-1].write_bytes(data[:PCAP_HEADER] + records)
    return paths


@pytest.mark.parametrize("fmt", ["pcapng", "pcap"])
def test_merge_by_time_ranges_is_byte_identical(tmp_path, capsys, monkeypatch, local2, fmt):
    # The acceptance for `trace merge`: time ranges merged by two workers and
    # concatenated give the single-process merge's bytes, for 100 consecutive files and for 8
    # inputs interleaved over the whole time (every range reads all 8).
    monkeypatch.chdir(tmp_path)
    one = synth(tmp_path, capsys)
    split(one, tmp_path / "parts", [1000 * k + 7 for k in range(1, 100)])
    interleave(one, tmp_path / "queues", 8)
    for inputs in ("parts/*.pcap", "queues/*.pcap"):
        files = archive.expand([inputs])
        single = merge(files, tmp_path / f"single.{fmt}", force=True)
        ranged = archive_merge.merge(local2, files, str(tmp_path / f"ranged.{fmt}"), force=True)
        assert ranged["ranges"] > 1  # it was cut: 4 ranges per worker (fewer if times repeat)
        assert ranged["packets"] == single["packets"] == 100_000
        assert (tmp_path / f"ranged.{fmt}").read_bytes() == (
            tmp_path / f"single.{fmt}"
        ).read_bytes()


def test_merge_of_inputs_out_of_order_is_one_range(tmp_path, capsys, monkeypatch, local2):
    # An input out of time order cannot be cut by time: the merge is one range, still the
    # single merge's bytes (records out of order come out where their input put them).
    monkeypatch.chdir(tmp_path)
    one = synth(tmp_path, capsys)
    a, b = split(one, tmp_path / "parts", [50_000])
    backwards = tmp_path / "backwards.pcap"
    backwards.write_bytes(b.read_bytes() + a.read_bytes()[PCAP_HEADER:])
    files = [str(backwards), str(one)]
    single = merge(files, tmp_path / "single.pcapng")
    ranged = archive_merge.merge(local2, files, str(tmp_path / "ranged.pcapng"))
    assert (ranged["ranges"], ranged["out_of_order"]) == (1, single["out_of_order"])
    assert single["out_of_order"] == 1  # the first record of a after the last of b
    assert (tmp_path / "ranged.pcapng").read_bytes() == (tmp_path / "single.pcapng").read_bytes()


def heads(sizes: list[int | None]) -> list:
    return [archive.Head(f"f{k}", k, (), size) for k, size in enumerate(sizes)]


def test_small_files_are_read_several_to_a_task():
    # 32 files of 10 bytes split evenly: one task per worker thread (hand-computed: 320 bytes
    # over 2 threads is 16 files a task; 1 thread, all 32; 3 threads, 11 + 11 + 10 files, the
    # largest 110 bytes <= 1.1 x 106.7).
    assert archive.batches(heads([10] * 32), threads=2) == [range(0, 16), range(16, 32)]
    assert archive.batches(heads([10] * 32), threads=1) == [range(0, 32)]
    assert archive.batches(heads([10] * 32), threads=3) == [
        range(0, 11),
        range(11, 22),
        range(22, 32),
    ]
    # 3 files on 2 threads cannot split evenly (one per thread: 20 and 10 bytes, 20 > 1.1 x
    # 15), so 4 tasks a thread are aimed at (target 30 / 8 bytes): one file a task.
    assert archive.batches(heads([10] * 3), threads=2) == [range(0, 1), range(1, 2), range(2, 3)]
    # Files of 1 GiB are each a task of their own (the target: MIN_TASK_BYTES, 1 GiB, below a
    # thread's 3 GiB share).
    assert archive.batches(heads([1 << 30] * 3), threads=1) == [
        range(0, 1),
        range(1, 2),
        range(2, 3),
    ]
    # A file of unknown size (a URL) makes the split uneven and counts as a whole task: it ends
    # the task it joins (target 42 / 4 = 10.5 bytes; the two 1-byte files before it are too
    # few alone).
    assert archive.batches(heads([1, 1, None, 40]), threads=1) == [range(0, 3), range(3, 4)]


@given(
    sizes=st.lists(st.one_of(st.none(), st.integers(0, 1 << 31)), max_size=60),
    threads=st.integers(1, 64),
)
def test_tasks_cover_every_file_once_in_order(sizes, threads):
    # Invariant: the tasks are consecutive runs of files that cover each file once, in order,
    # and each but the last holds at least the smaller target bytes (a quarter of a thread's
    # share, or MIN_TASK_BYTES) or a file of unknown size.
    found = archive.batches(heads(sizes), threads)
    assert [k for r in found for k in r] == list(range(len(sizes)))
    total = sum(s or 0 for s in sizes)
    target = min(archive.MIN_TASK_BYTES, total / (archive.TASKS_PER_THREAD * threads))
    for r in found[:-1]:
        chunk = sizes[r.start : r.stop]
        assert None in chunk or sum(chunk) >= target


def test_archive_stats_do_not_depend_on_read_ahead(tmp_path, capsys, local2):
    # The engine turns read-ahead off where workers share cores; the result must not change.
    one = synth(tmp_path, capsys)
    files = [str(p) for p in split(one, tmp_path / "parts", [5000 * k + 7 for k in range(1, 20)])]
    ahead, inline = (archive.archive_stats(local2, files, read_ahead=a) for a in (True, False))
    assert json.dumps(inline) == json.dumps(ahead)
    assert (inline[0]["files"], inline[0]["packets"]) == (20, 100_000)  # 2 Mpps for 50 ms


def test_read_ahead_is_chosen_from_the_cores_per_worker_thread(local2):
    # engine.cores_per_thread: a host's usable cores over its worker threads, here one thread
    # in this process, or two worker processes of one thread each.
    cores = len(os.sched_getaffinity(0))
    with engine.connect(engine.Scheduler()) as in_process:
        assert engine.cores_per_thread(in_process) == cores
    assert engine.cores_per_thread(local2) == cores / 2


def test_cores_per_thread_survives_a_worker_that_just_died(local2):
    # A worker killed just before the question (CI saw it: the broadcast to the dead worker
    # raised CommClosedError and failed a run that dask's retries would have finished). The
    # answer comes from the workers that reply: cores over 2 threads, or over 1 once the
    # scheduler has dropped the dead worker.
    cores = len(os.sched_getaffinity(0))
    pids = local2.run(os.getpid)
    os.kill(pids[min(pids)], signal.SIGKILL)
    assert engine.cores_per_thread(local2) in (cores / 2, cores)
    local2.wait_for_workers(2, timeout=300)  # the nanny starts a new one for the next tests


def test_a_worker_killed_mid_run_changes_nothing(tmp_path, capsys, monkeypatch, local2):
    # The acceptance: a worker process dies while it summarises files; the scheduler
    # reruns its tasks elsewhere (the nanny starts a new worker) and the result is unchanged.
    monkeypatch.chdir(tmp_path)
    one = synth(tmp_path, capsys)
    files = [str(p) for p in split(one, tmp_path / "parts", [1000 * k for k in range(1, 100)])]
    expected = archive.archive_stats(local2, files)
    pids = local2.run(os.getpid)
    with ThreadPoolExecutor(1) as pool:
        run = pool.submit(archive.archive_stats, local2, files)
        busy = None
        while busy is None and not run.done():  # the first worker seen running a task
            busy = next((w for w, tasks in local2.processing().items() if tasks), None)
        if busy is not None:
            os.kill(pids[busy], signal.SIGKILL)  # as the kernel's OOM killer does
        assert run.result() == expected
    assert busy is not None  # a worker was killed while it held a task


def test_demand_of_100_files_equals_one_file_and_nic_trace(tmp_path, capsys, monkeypatch):
    # `trace demand --archive` of the 100 files is the one file's, byte for byte (windows that
    # span file boundaries add up); and it agrees with `nic --trace` on the same capture: same
    # windows and peaks (to rounding: nic sums bytes packet by packet, the archive size by
    # size), mean over the duration = all bytes / duration (nic averages the window rates).
    monkeypatch.chdir(tmp_path)
    one = synth(tmp_path, capsys)
    split(one, tmp_path / "parts", [1000 * k + 7 for k in range(1, 100)])
    options = ("--json", "--profile", "dpdk", "--window", "100us")
    code, out, _ = run_cli(capsys, "trace", "demand", *options, "--archive", "parts/*.pcap")
    assert code == 0
    (port,) = json.loads(out)
    code, out, _ = run_cli(capsys, "trace", "demand", *options, str(one))
    (whole,) = json.loads(out)
    assert without(port, PORT_KEYS) == without(whole, ("file",))
    code, out, _ = run_cli(
        capsys, "nic", "--json", "--profile", "dpdk", "--trace", str(one), "--window", "100us"
    )
    nic_trace = json.loads(out)
    for key in ("windows", "windows_over_capacity", "capacity_gbps", "mean_frame_bytes"):
        assert whole[key] == nic_trace[key], key
    for key in ("peak_up_gbps", "peak_down_gbps"):
        assert whole[key] == pytest.approx(nic_trace[key], rel=1e-12), key
    from pcieperf.nic import nic
    from pcieperf.pcie.link import Link

    captured = read(one)
    up, down = nic.per_packet_wire_bytes(
        *nic.price_packets(load_profile("dpdk"), Link(3, 8), captured.frame_bytes())
    )
    span = int(captured.ts_ns.max() - captured.ts_ns.min())
    assert whole["mean_up_gbps"] == pytest.approx(up.sum() * 8 / span, rel=1e-12)
    assert whole["mean_down_gbps"] == pytest.approx(down.sum() * 8 / span, rel=1e-12)
    assert whole["peak_up_gbps"] > whole["mean_up_gbps"]  # on/off bursts: peaks above the mean


def test_fsspec_urls_give_the_local_result(tmp_path, capsys, monkeypatch):
    # Files on any fsspec file system the workers can read (here memory://, which the
    # in-process default shares with this process; s3://, gs://, http:// alike) are copied to
    # the worker and read by the Rust reader: same statistics as the local files.
    fsspec = pytest.importorskip("fsspec")
    monkeypatch.chdir(tmp_path)
    one = synth(tmp_path, capsys)
    parts = split(one, tmp_path / "parts", [1000 * k + 7 for k in range(1, 10)])
    fs = fsspec.filesystem("memory")
    for p in parts:
        fs.pipe(f"/archive-test/{p.name}", p.read_bytes())
    try:
        code, remote, _ = run_cli(
            capsys, "trace", "stats", "--json", "--archive", "memory://archive-test/*.pcap"
        )
        assert code == 0
        code, local, _ = run_cli(capsys, "trace", "stats", "--json", "--archive", "parts/*.pcap")
        (r,), (loc,) = json.loads(remote), json.loads(local)
        first = fs.unstrip_protocol("/archive-test/part-000.pcap")  # as fsspec's glob names it
        assert (r["files"], r["first_file"]) == (10, first)
        assert without(r, PORT_KEYS) == without(loc, PORT_KEYS)
        code, _, err = run_cli(
            capsys, "trace", "stats", "--archive", "memory://archive-test/x.pcap"
        )
        assert code == 2
        assert err.count("\n") == 1
        assert "memory://archive-test/x.pcap" in err
    finally:
        fs.rm("/archive-test", recursive=True)


@pytest.fixture(scope="module")
def fold_case(tmp_path_factory):
    """8 files cut from a 1 ms on/off capture, their origin and the whole file's statistics."""
    folder = tmp_path_factory.mktemp("fold")
    whole = folder / "whole.pcap"
    synthesis.synth(whole, eth=trace_eth(), mix=imix(), pps=2e6, duration_s=0.001, arrival="onoff")
    (raw,) = core().trace_stats([str(whole)], CONFIG)
    parts = split(whole, folder / "parts", [250 * k + 3 for k in range(1, 8)])
    return parts, raw


@settings(max_examples=20, deadline=None)
@given(order=st.permutations(range(8)))
def test_partials_arriving_in_any_order_fold_in_port_order(fold_case, order):
    # Workers finish in any order; the driver appends each partial when its turn comes, so the
    # result is the in-order one (the whole file's) whatever the arrival order.
    parts, raw = fold_case
    heads = [archive.Head(str(p), 0, ()) for p in parts]
    partials = [core().trace_partial(str(p), CONFIG, raw["first_ts_ns"]) for p in parts]
    fold = archive._Fold([heads], CONFIG, None)
    for index in order:
        fold.add(index, partials[index])
    (merged,) = fold.result()
    assert merged.summary(CONFIG) == raw | {"reads": 8}
