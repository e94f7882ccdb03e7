"""Captures as libpcap and Wireshark take them: quirks read and counted, agreement with capinfos
and tshark on every shared capture and on captures written here byte by byte, stdin and
compressed input, captures cut short, rate windows whose peak is never below the mean, streamed
synthesis, file modes, and no packet lost by merge, convert or --skip-bad on damaged captures."""

import contextlib
import gzip
import json
import os
import shutil
import struct
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pcieperf import progress
from pcieperf.cli import main
from pcieperf.net.ethernet import Ethernet, parse_mix
from pcieperf.net.trace import synthesis
from pcieperf.net.trace.files import Interface, Trace, linktype_name, read
from pcieperf.net.trace.rewrite import convert, merge
from pcieperf.net.trace.statistics import stats
from pcieperf.net.trace.synthesis import synth
from pcieperf.net.trace.timeline import timeline
from tests.helpers import CAPTURES
from tests.helpers.captures import CUT_PCAP, QUIRKS, epb, epoch_ns, idb, pcap, shb, tshark_fields

SHARED = sorted(CAPTURES.glob("**/*.pcap*")) if CAPTURES.is_dir() else []
needs_shared = pytest.mark.skipif(not SHARED, reason="../shared/data/captures is absent")
needs_capinfos = pytest.mark.skipif(
    shutil.which("capinfos") is None or shutil.which("tshark") is None,
    reason="capinfos/tshark (Debian package tshark) is not installed",
)


def capinfos(path: Path) -> dict[str, str]:
    """capinfos' table output (-T): packets, data size (-M: exact), strict time order."""
    out = subprocess.run(
        ["capinfos", "-T", "-M", "-c", "-d", "-o", str(path)], capture_output=True, text=True
    ).stdout.splitlines()
    return dict(zip(out[0].split("\t"), out[1].split("\t"), strict=True))


def tshark_rows(path: Path) -> list[tuple[int, int, int]]:
    """(epoch ns, wire length, captured length) of every packet, as tshark reads it."""
    fields = ("frame.time_epoch", "frame.len", "frame.cap_len")
    return [(epoch_ns(e), int(w), int(c)) for e, w, c in tshark_fields(path, fields)]


def assert_agrees_with_capinfos(path: Path, t: Trace) -> None:
    theirs = capinfos(path)
    s = stats(t, Ethernet(40))
    # capinfos' "Data size" is the sum of the packets' original (wire) lengths.
    assert (s["packets"], s["bytes_wire"]) == (
        int(theirs["Number of packets"]),
        int(theirs["Data size (bytes)"]),
    )
    order = {"True": True, "False": False, "Unknown": None}[theirs["Strict time order"]]
    if order is None and not t.untimed:
        # capinfos also counts custom blocks as records without a time (pcapng-test-generator
        # test017); they hold no packet, and the packets are in order.
        order = True
    assert s["strict_time_order"] == order


@needs_shared
@needs_capinfos
@pytest.mark.parametrize("path", SHARED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_shared_capture_agrees_with_capinfos(path):
    assert_agrees_with_capinfos(path, read(path))


@needs_capinfos
@pytest.mark.parametrize("name", sorted(QUIRKS))
def test_quirky_captures_agree_with_capinfos_and_tshark(tmp_path, name):
    data, (exceeded, below, _) = QUIRKS[name]
    path = tmp_path / name
    path.write_bytes(data)
    t = read(path)
    assert (t.snaplen_exceeded, t.wirelen_below_caplen, t.truncated) == (exceeded, below, False)
    assert_agrees_with_capinfos(path, t)
    ours = list(zip(t.ts_ns.tolist(), t.wirelen.tolist(), t.caplen.tolist(), strict=True))
    assert ours == tshark_rows(path)


@pytest.mark.parametrize("name", sorted(QUIRKS))
def test_quirks_are_counted_in_stats_json(tmp_path, capsys, name):
    data, (exceeded, below, ordered) = QUIRKS[name]
    path = tmp_path / name
    path.write_bytes(data)
    assert main(["trace", "stats", "--json", str(path)]) == 0
    got = json.loads(capsys.readouterr().out)[0]
    assert (got["snaplen_exceeded"], got["wirelen_below_caplen"]) == (exceeded, below)
    assert (got["strict_time_order"], got["truncated"]) == (ordered, False)


def test_snaplen_warning_is_one_line_per_file(tmp_path, capsys):
    path = tmp_path / "over.pcap"
    path.write_bytes(QUIRKS["over_snaplen.pcap"][0])
    assert main(["trace", "stats", str(path)]) == 0
    err = capsys.readouterr().err
    assert err == (
        f"pcieperf: warning: {path}: 1 records are longer than their snaplen; read in full, "
        "as Wireshark does\n"
    )


def test_files_are_reported_in_order_up_to_the_first_that_fails(tmp_path, capsys):
    # Files are read in parallel, but warnings and the error come in the order of the files:
    # the first file's warning, then the second's error (exit 2), as when they were read one
    # after the other; the third, readable, is not reported.
    over, missing = tmp_path / "over.pcap", tmp_path / "missing.pcap"
    over.write_bytes(QUIRKS["over_snaplen.pcap"][0])
    assert main(["trace", "stats", str(over), str(missing), str(over)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"pcieperf: warning: {over}: 1 records are longer than their snaplen; read in full, "
        "as Wireshark does\n"
        f"pcieperf: error: {missing}: No such file or directory (os error 2)\n"
    )


def test_caplen_above_the_link_types_maximum_is_refused(tmp_path, capsys):
    # libpcap's max_snaplen_for_dlt: 262144 for Ethernet (1), 128 MiB for D-Bus (231).
    record = [(1000, 0, b"\x01" * 262_145, 262_145)]
    eth, dbus = tmp_path / "eth.pcap", tmp_path / "dbus.pcap"
    eth.write_bytes(pcap(record))
    dbus.write_bytes(pcap(record, linktype=231))
    assert main(["trace", "stats", str(eth)]) == 2
    assert capsys.readouterr().err == (
        f"pcieperf: error: {eth}: byte 24: caplen 262145 exceeds the 262144-byte maximum\n"
    )
    assert read(dbus).caplen.tolist() == [262_145]


# --- cut short, stdin, compressed ----------------------------------------------------------------


@needs_capinfos
def test_a_capture_cut_short_reports_what_was_read_like_capinfos(tmp_path, capsys):
    path = tmp_path / "cut.pcap"
    path.write_bytes(CUT_PCAP)
    assert_agrees_with_capinfos(path, read(path))  # capinfos: 1 packet, 30 bytes
    assert main(["trace", "stats", "--json", str(path)]) == 0
    out = capsys.readouterr()
    got = json.loads(out.out)[0]
    # Header 24 + record 16 + 30 = 70: the second record starts there with 23 of 30 bytes.
    why = f"{path}: byte 70: truncated record: caplen 30, 23 bytes left"
    assert (got["packets"], got["truncated"], got["cut_short"]) == (1, True, why)
    assert out.err == (
        f"pcieperf: warning: {why}: the capture was cut short; the 1 packets before it are "
        "reported (--strict makes this an error)\n"
    )
    assert main(["trace", "stats", "--strict", str(path)]) == 2
    assert capsys.readouterr().err == f"pcieperf: error: {why}\n"


def compressed(data: bytes, kind: str, tmp_path: Path) -> bytes:
    """`data` gzip- or zstd-compressed (zstd by Debian's zstd program)."""
    if kind == "gz":
        return gzip.compress(data)
    if shutil.which("zstd") is None:
        pytest.skip("zstd (Debian package zstd) is not installed")
    plain = tmp_path / "plain"
    plain.write_bytes(data)
    subprocess.run(["zstd", "-q", "-f", str(plain), "-o", str(plain) + ".zst"], check=True)
    return Path(str(plain) + ".zst").read_bytes()


@pytest.mark.parametrize("kind", ["gz", "zst"])
def test_compressed_captures_are_told_by_magic_not_name(tmp_path, kind):
    data = QUIRKS["sections.pcapng"][0]
    path = tmp_path / "named-like-plain.pcapng"  # the name says nothing of the compression
    path.write_bytes(compressed(data, kind, tmp_path))
    plain = tmp_path / "plain.pcapng"
    plain.write_bytes(data)
    got, expected = read(path), read(plain)
    assert got.compression == {"gz": "gzip", "zst": "zstd"}[kind]
    assert got.ts_ns.tolist() == expected.ts_ns.tolist()
    assert got.caplen.tolist() == [40, 17, 0, 5]  # the EPBs' lengths, as written above
    out = tmp_path / "copy.pcapng"
    convert(path, out)
    assert read(out).ts_ns.tolist() == expected.ts_ns.tolist()


def run_cli(args: list[str], stdin: bytes) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pcieperf.cli", *args], input=stdin, capture_output=True
    )


def test_standard_input_is_read_for_a_dash(tmp_path):
    data = gzip.compress(QUIRKS["out_of_order.pcap"][0])
    done = run_cli(["trace", "stats", "--json", "-"], data)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)[0]
    assert (got["file"], got["packets"], got["compression"]) == ("-", 3, "gzip")
    out = tmp_path / "from-stdin.pcapng"
    done = run_cli(["trace", "merge", "-", "-o", str(out), "--json"], data)
    assert done.returncode == 0, done.stderr
    assert read(out).packets == 3
    done = run_cli(["trace", "stats", "-", "-"], data)
    assert (done.returncode, done.stderr) == (
        2,
        b"pcieperf: error: standard input (-) can be given once only\n",
    )


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes (POSIX)")
def test_a_pipe_is_read_once_even_out_of_order(tmp_path, capsys):
    # A pipe (as from `<(zcat x.pcap.gz)`) cannot be read a second time, as an out-of-order
    # regular file is: it is sorted as it is read, like standard input, with the same statistics.
    data = QUIRKS["out_of_order.pcap"][0]
    plain, fifo = tmp_path / "plain.pcap", tmp_path / "pipe.pcap"
    plain.write_bytes(data)
    os.mkfifo(fifo)
    writer = threading.Thread(target=fifo.write_bytes, args=(data,))
    writer.start()
    assert main(["trace", "stats", "--json", str(fifo)]) == 0
    writer.join()
    got = json.loads(capsys.readouterr().out)[0]
    assert main(["trace", "stats", "--json", str(plain)]) == 0
    expected = json.loads(capsys.readouterr().out)[0]
    assert got == expected | {"file": str(fifo)}
    assert (got["packets"], got["out_of_order"]) == (3, 1)  # 1001 s after 1002 s


def test_link_types_are_named(tmp_path, capsys):
    path = tmp_path / "cooked.pcapng"
    path.write_bytes(shb("<") + idb("<", 0, linktype=113) + idb("<", 0, linktype=101))
    assert main(["trace", "stats", "--json", str(path)]) == 0
    got = json.loads(capsys.readouterr().out)[0]
    names = [(i["linktype"], i["linktype_name"]) for i in got["interfaces"]]
    assert names == [(113, "Linux cooked"), (101, "Raw IP")]  # LINKTYPE registry
    assert main(["trace", "stats", str(path)]) == 0
    text = capsys.readouterr().out
    assert "interface 0 (unnamed, Linux cooked)" in text
    assert "interface 1 (unnamed, Raw IP)" in text
    assert linktype_name(300) == "linktype 300"


# --- rate windows -----------------------------------------------------------------------------


def test_a_capture_shorter_than_a_window_has_no_peak_but_its_tail(tmp_path):
    # 10 ms at 1.5 Mpps (once "peak 0.015 Mpps per 1000 ms", then the partial window's own
    # rate as the peak): no 1 s window is whole, so there is no peak (issue 27: peaks over
    # whole windows only); the one window covers the capture, so its tail rate is the mean,
    # 15 000 packets in 9.999333 ms.
    out = tmp_path / "short.pcap"
    synth(out, eth=Ethernet(40), mix=parse_mix("64"), pps=1.5e6, duration_s=0.01)
    s = stats(read(out), Ethernet(40))
    per_second = s["rates"][1]
    span_ns = s["last_ts_ns"] - s["first_ts_ns"]
    assert span_ns == 9_999_333  # the 15 000th packet at 14 999 * (1e9 / 1.5e6) ns, truncated
    assert (per_second["full_windows"], per_second["peak_pps"]) == (0, None)
    assert per_second["tail_ns"] == span_ns
    assert per_second["tail_pps"] == s["mean_pps"] == 15_000 * 1e9 / span_ns
    assert per_second["tail_gbps"] == s["mean_gbps"]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 3 * 10**9), min_size=2, max_size=300),
    st.lists(st.integers(0, 9000), min_size=300, max_size=300),
)
def test_rates_are_the_reference_windows(times, lengths):
    # The rule (issue 27), computed here with numpy: windows from the first packet, a last
    # packet on a window start counted in the window before; the peak is the largest whole
    # window's count over its length, a shorter last window (the tail) apart.
    n = len(times)
    wire = np.array(lengths[:n], dtype=np.uint32)
    t = Trace(
        path="h",
        format="pcap",
        ts_ns=np.array(times, dtype=np.int64),
        caplen=wire,
        wirelen=wire,
        iface=np.zeros(n, dtype=np.uint32),
        interfaces=(Interface(1, 0, 9, 0, None, 0),),
    )
    s = stats(t, Ethernet(40))
    for rate in s["rates"]:
        if s["mean_pps"] is None:  # all at one instant: no duration, no rate
            assert rate["peak_pps"] is None
            continue
        w = rate["window_ns"]
        ts = np.array(times, dtype=np.int64)
        span = int(ts.max() - ts.min())
        last, covered = divmod(span, w)
        if covered == 0 and last > 0:
            last, covered = last - 1, w
        counts = np.bincount(np.minimum((ts - ts.min()) // w, last), minlength=last + 1)
        whole = counts if covered == w else counts[:-1]
        assert rate["full_windows"] == whole.size
        assert rate["peak_pps"] == (int(whole.max()) * 1e9 / w if whole.size else None)
        assert rate["tail_ns"] == (0 if covered == w else covered)
        if covered != w:
            assert rate["tail_pps"] == int(counts[-1]) * 1e9 / covered


def test_stats_windows_are_the_ones_asked_for(tmp_path, capsys):
    # 1 Mpps of 64-byte frames for 10 ms: packets 1 us apart, the last at 9.999 ms.
    out = tmp_path / "c.pcap"
    synth(out, eth=Ethernet(40), mix=parse_mix("64"), pps=1e6, duration_s=0.01)
    assert main(["trace", "stats", "--json", "--windows", "100us,2ms", str(out)]) == 0
    fine, coarse = json.loads(capsys.readouterr().out)[0]["rates"]
    # 100 us windows: 100 of them, the last covering 99 us with 100 packets (9900..9999): the
    # peak is a whole window's 100 packets in 100 us, the last one is the tail.
    assert (fine["window_ns"], fine["windows"], fine["full_windows"]) == (100_000, 100, 99)
    assert fine["peak_pps"] == 100 * 1e9 / 100_000
    assert (fine["tail_ns"], fine["tail_pps"]) == (99_000, 100 * 1e9 / 99_000)
    # 2 ms windows: 5, the last covering 1.999 ms with 2000 packets; a whole one has 2000 in
    # 2 ms, 2000 frames of 60 bytes (960 000 bits).
    assert (coarse["window_ns"], coarse["windows"], coarse["full_windows"]) == (2_000_000, 5, 4)
    assert coarse["peak_pps"] == 2000 * 1e9 / 2_000_000
    assert coarse["peak_gbps"] == 960_000 / 2_000_000
    assert coarse["tail_gbps"] == 960_000 / 1_999_000
    assert main(["trace", "stats", "--windows", "1ms,0s", str(out)]) == 2
    assert capsys.readouterr().err == (
        "pcieperf: error: rate window '0s' is not understood; write a positive time like 1s, "
        "100ms, 10us, 500ns\n"
    )


def test_demand_does_not_dip_in_a_part_filled_last_window(tmp_path):
    # 1 Mpps for 10.5 ms with 1 ms windows: the last window covers 0.499 ms (up to the last
    # packet at 10.499 ms) and holds 500 packets, so it shows 500 / 0.499 ms, not half a window.
    path = tmp_path / "t.pcap"
    synth(path, eth=Ethernet(40), mix=parse_mix("64"), pps=1e6, duration_s=0.0105)
    t = timeline(path)
    windows, _ = t.windows([np.ones(t.frame_sizes().size)], 1_000_000)
    gbps = windows.series[0].gbps
    assert gbps.size == 11
    assert gbps[:10] == pytest.approx(1000 * 8 / 1e6)  # 1000 bytes per 1 ms window
    assert gbps[10] == pytest.approx(500 * 8 / 499_000)


# --- streamed synthesis -----------------------------------------------------------------------


@pytest.mark.parametrize("arrival", ["constant", "poisson", "onoff"])
def test_synth_output_does_not_depend_on_the_chunk_size(tmp_path, monkeypatch, arrival):
    kw = dict(eth=Ethernet(40), mix=parse_mix("imix"), pps=2e6, duration_s=0.01, seed=7)
    whole = tmp_path / "whole.pcap"
    synth(whole, arrival=arrival, burst=5, **kw)
    monkeypatch.setattr(synthesis, "SYNTH_CHUNK", 1000)  # 20 chunks of 200 bursts of 5
    pieces = tmp_path / "pieces.pcap"
    synth(pieces, arrival=arrival, burst=5, **kw)
    assert pieces.read_bytes() == whole.read_bytes()


def test_synth_reports_progress_per_chunk(tmp_path, monkeypatch):
    seen = []

    class Recorder:
        def update(self, amount):
            seen.append(amount)

    def bar(total, desc, unit):
        seen.append((total, desc, unit))
        return contextlib.nullcontext(Recorder())

    monkeypatch.setattr(progress, "bar", bar)
    monkeypatch.setattr(synthesis, "SYNTH_CHUNK", 4096)
    out = tmp_path / "p.pcap"
    synth(out, eth=Ethernet(40), mix=parse_mix("64"), pps=1e6, duration_s=0.01)
    # 10 000 packets: two chunks of 4096 and one of 1808.
    assert seen == [(10_000, "synth p.pcap", "pkt"), 4096, 4096, 1808]


SYNTH_PEAK = """
import sys
import numpy  # synthesis uses it; loaded before the baseline, as the profile model no longer does
from pcieperf.net.trace.synthesis import synth
from pcieperf.net.ethernet import Ethernet, parse_mix
def rss(key):
    return int(open("/proc/self/status").read().split(key)[1].split()[0])
before = rss("VmRSS:")
synth(sys.argv[1], eth=Ethernet(100), mix=parse_mix("64"), pps=4e6, duration_s=0.5,
            arrival="poisson")
print(rss("VmHWM:") - before)
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")
def test_synth_memory_does_not_grow_with_the_packet_count(tmp_path):
    # 2 M packets: kept whole, their timestamps, sizes and draws took ~80 MiB (five or more
    # float or int64 arrays of 16 MB at once); streamed in 262 144-packet chunks, a few MiB.
    done = subprocess.run(
        [sys.executable, "-c", SYNTH_PEAK, str(tmp_path / "big.pcap")],
        capture_output=True,
        text=True,
        check=True,
    )
    assert int(done.stdout) < 40 * 1024  # KiB


@pytest.mark.parametrize(
    ("args", "message"),
    [
        # 100 Mpps of 64-byte frames is above 40 GbE line rate (40e9 / (84 * 8) = 59.52 Mpps).
        (["--eth", "40"], "100 Mpps of 64 exceeds 40 GbE line rate (59.52 Mpps)"),
        # At 100 GbE it fits, but 1e11 frames of 60 + 16 bytes make 7600 GB.
        (["--eth", "100"], "100000000000 packets make about 7600 GB, but "),
    ],
)
def test_synth_refuses_impossible_requests_before_any_work(tmp_path, capsys, args, message):
    out = tmp_path / "huge.pcap"
    argv = ["trace", "synth", "--pps", "100M", "--duration", "1000s", *args, "-o", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


# --- output files -----------------------------------------------------------------------------


def test_outputs_get_the_users_umask(tmp_path):
    old = os.umask(0o022)
    try:
        synthetic = tmp_path / "s.pcap"
        synth(synthetic, eth=Ethernet(40), mix=parse_mix("64"), pps=1e6, duration_s=1e-4)
        merge([synthetic], tmp_path / "m.pcapng")
        convert(synthetic, tmp_path / "c.pcapng")
    finally:
        os.umask(old)
    for name in ("s.pcap", "m.pcapng", "c.pcapng"):
        assert (tmp_path / name).stat().st_mode & 0o777 == 0o644  # 0666 & ~022


# --- no data lost -----------------------------------------------------------------------------


def good_records(count: int) -> list[tuple[int, int, bytes]]:
    """(sec, µs, data) of intact records in time order near 2023-11-14: fractions above 1024 µs
    and data bytes at or above 0x80, so that no header read from a damaged spot looks like a
    record (docs/trace.md, "Bad input")."""
    return [
        (
            1_700_000_000 + i // 3,
            1024 + (i % 3) * 300_000 + i * 7 % 1000,
            bytes([0x80 | i % 128]) * (1 + i % 97),
        )
        for i in range(count)
    ]


def encode(
    records: list, fmt: str, damage: dict[int, str], garbage: bytes
) -> tuple[bytes, list[int], int]:
    """The capture with `damage` (record index -> "garbage" before it, or "length": a length
    field made impossible), the indices of the records left intact and the size of the last."""
    out = pcap([]) if fmt == "pcap" else shb("<") + idb("<", 0)
    intact = []
    for i, (sec, usec, data) in enumerate(records):
        if fmt == "pcap":
            raw = struct.pack("<IIII", sec, usec, len(data), len(data) + 1000) + data
        else:
            raw = epb("<", 0, sec * 10**6 + usec, data, len(data) + 1000)
        kind = damage.get(i)
        if kind == "garbage":
            out += garbage
        if kind == "length":  # pcap: caplen 2^31 + ...; pcapng: a block length of 2^31 + ...
            at = 8 if fmt == "pcap" else 4
            raw = raw[:at] + struct.pack("<I", 0x8000_0000 | len(data)) + raw[at + 4 :]
        else:
            intact.append(i)
        out += raw
    return out, intact, len(raw)


@st.composite
def damaged_captures(draw):
    count = draw(st.integers(3, 40))
    fmt = draw(st.sampled_from(["pcap", "pcapng"]))
    # Damage three records apart: a resynchronised record is trusted when the next one looks
    # right too (pcap), so an intact record squeezed between two damages may be lost (garbage
    # "before record k" lies between records k-1 and k).
    # And after the first record: a pcap resync looks for times near the last good one, and
    # before any there is none (the Rust tests cover damage before the first record).
    spots = sorted(draw(st.sets(st.integers(1, count - 1), max_size=count // 3)))
    spots = [s for k, s in enumerate(spots) if k == 0 or s - spots[k - 1] >= 3]
    damage = {s: draw(st.sampled_from(["garbage", "length"])) for s in spots}
    garbage = bytes(0x80 | b for b in draw(st.binary(min_size=16, max_size=64)))
    cut = draw(st.one_of(st.none(), st.integers(1, 60)))
    return count, fmt, damage, garbage, cut


def packets_of(path: Path, **kw) -> list[tuple[int, bytes]]:
    t = read(path, offsets=True, **kw)
    raw = path.read_bytes()
    offsets, caplens = t.offset.tolist(), t.caplen.tolist()
    return [
        (ts, raw[o : o + c]) for ts, o, c in zip(t.ts_ns.tolist(), offsets, caplens, strict=True)
    ]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(damaged_captures())
def test_merge_convert_and_skip_bad_keep_every_readable_packet(tmp_path, case):
    count, fmt, damage, garbage, cut = case
    records = good_records(count)
    data, intact, last_size = encode(records, fmt, damage, garbage)
    if cut is not None:  # the last record loses its end: it is no longer readable
        data = data[: -(1 + cut % (last_size - 1))]
        intact = [k for k in intact if k != count - 1]
    expected = [
        ((sec * 10**6 + usec) * 1000, rec)
        for k, (sec, usec, rec) in enumerate(records)
        if k in intact
    ]
    path = tmp_path / f"damaged.{fmt}"
    path.write_bytes(data)
    assert packets_of(path, skip_bad=True) == expected
    copy = tmp_path / "copy.pcapng"
    convert(path, copy, force=True, skip_bad=True)
    assert packets_of(copy) == expected
    merged = tmp_path / "merged.pcapng"
    merge([path, path], merged, force=True, skip_bad=True)
    assert packets_of(merged) == sorted(expected + expected, key=lambda p: p[0])


def test_convert_takes_its_output_as_a_second_word(tmp_path):
    # Issue 27: `trace convert IN OUT` as cp and tshark's editcap take it; -o stays.
    source = tmp_path / "in.pcap"
    synth(source, eth=Ethernet(40), mix=parse_mix("64"), pps=1e6, duration_s=0.001)
    assert main(["trace", "convert", str(source), str(tmp_path / "a.pcapng"), "-q"]) == 0
    assert main(["trace", "convert", str(source), "-o", str(tmp_path / "b.pcapng"), "-q"]) == 0
    assert (tmp_path / "a.pcapng").read_bytes() == (tmp_path / "b.pcapng").read_bytes()
    assert main(["trace", "convert", str(source), str(tmp_path / "c.pcapng"), "-o", "d"]) == 2
    assert main(["trace", "convert", str(source)]) == 2
