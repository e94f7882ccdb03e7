"""Capture files: the reader against an independent one (tshark) on every shared capture, lossless
round trips, merging, statistics, synthesis, bad input, and trace-driven PCIe demand."""

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pcieperf._native import core
from pcieperf.cli import main
from pcieperf.dpdk import forwarding
from pcieperf.errors import UsageError
from pcieperf.net.ethernet import Ethernet, parse_mix
from pcieperf.net.trace import statistics
from pcieperf.net.trace.files import Trace, read
from pcieperf.net.trace.rewrite import convert, merge
from pcieperf.net.trace.synthesis import synth
from pcieperf.net.trace.timeline import Timeline, timeline
from pcieperf.nic import nic
from pcieperf.nic.profile import load_profile
from pcieperf.nic.rows import fixed_rows
from pcieperf.pcie.link import Link
from tests.helpers import CAPTURES
from tests.helpers.captures import content, epoch_ns, payloads, tshark_fields, write_capture
from tests.helpers.cli import refused

SHARED = sorted(CAPTURES.glob("**/*.pcap*")) if CAPTURES.is_dir() else []
needs_shared = pytest.mark.skipif(not SHARED, reason="../shared/data/captures is absent")
needs_tshark = pytest.mark.skipif(
    shutil.which("tshark") is None, reason="tshark (Debian package tshark) is not installed"
)
# pim-packet-assortment.pcap (tcpdump's tests) holds two records whose caplen (65549) exceeds
# the file's snaplen of 65535: tshark shows them whole, and so does our reader (counted).
OVER_SNAPLEN = {"pim-packet-assortment.pcap": 2}


def tshark_packets(path: Path) -> list[list[str]]:
    """(time_epoch, len, cap_len, section-local interface id) of every packet record."""
    fields = ["frame.time_epoch", "frame.len", "frame.cap_len", "frame.interface_id"]
    rows = tshark_fields(path, fields)
    if path.suffix == ".pcapng":
        # tshark also lists custom and decryption-secrets blocks; they have no interface.
        rows = [r for r in rows if r[3] != ""]
    return rows


def local_iface(t: Trace) -> np.ndarray:
    """tshark prints interface ids local to their pcapng section; ours count across sections."""
    sections = np.array([i.section for i in t.interfaces])
    first_of_section = np.array([np.flatnonzero(sections == s)[0] for s in sections])
    return t.iface - first_of_section[t.iface] if t.interfaces else t.iface


@needs_shared
@needs_tshark
@pytest.mark.parametrize("path", SHARED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_reader_agrees_with_tshark_on_every_shared_capture(path):
    expected = tshark_packets(path)
    t = read(path)
    assert t.snaplen_exceeded == OVER_SNAPLEN.get(path.name, 0)
    assert (t.skipped, t.truncated) == (0, False)
    assert t.packets == len(expected)
    assert t.wirelen.tolist() == [int(r[1]) for r in expected]
    assert t.caplen.tolist() == [int(r[2]) for r in expected]
    if path.suffix == ".pcapng":
        assert local_iface(t).tolist() == [int(r[3]) for r in expected]
    timed = [i for i, r in enumerate(expected) if r[0]]  # Simple Packet Blocks carry no time
    assert t.ts_ns[timed].tolist() == [epoch_ns(expected[i][0]) for i in timed]
    assert t.untimed == len(expected) - len(timed)


@needs_shared
def test_caplen_beyond_snaplen_is_read_counted_and_warned_once(capsys):
    path = CAPTURES / "tcpdump" / "pim-packet-assortment.pcap"
    assert main(["trace", "stats", "--json", str(path)]) == 0
    captured = capsys.readouterr()
    got = json.loads(captured.out)[0]
    # capinfos -c -d on this file: 245 packets, 271876 bytes of data (sum of caplen).
    assert (got["packets"], got["bytes_captured"], got["snaplen_exceeded"]) == (245, 271876, 2)
    assert captured.err == (
        f"pcieperf: warning: {path}: 2 records are longer than their snaplen; read in full, "
        "as Wireshark does\n"
    )


@needs_shared
@pytest.mark.parametrize("path", SHARED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_round_trip_is_lossless(path, tmp_path):
    source = read(path, offsets=True)
    if not source.interfaces:
        pytest.skip("no interface defined: nothing to rewrite")
    for suffix in (".pcapng", ".pcap"):
        out = tmp_path / f"copy{suffix}"
        if suffix == ".pcap" and len({i.linktype for i in source.interfaces}) > 1:
            with pytest.raises(UsageError, match="pcap holds one link type"):
                convert(path, out)
            continue
        convert(path, out)
        copy = read(out, offsets=True)
        assert copy.ts_ns.tolist() == source.ts_ns.tolist()
        assert copy.wirelen.tolist() == source.wirelen.tolist()
        assert copy.caplen.tolist() == source.caplen.tolist()
        assert payloads(copy) == payloads(source)
        if suffix == ".pcapng":
            assert copy.iface.tolist() == source.iface.tolist()
            assert [i.linktype for i in copy.interfaces] == [i.linktype for i in source.interfaces]


@needs_shared
def test_merge_is_sorted_complete_and_equal_in_content(tmp_path):
    names = ["tcpdump/afs.pcap", "tcpdump/AoE_Linux.pcap", "tcpdump/nhrp.pcapng"]
    names += ["pcapng-test-generator/output_be/basic/test004.pcapng"]
    inputs = [CAPTURES / n for n in names]
    out = tmp_path / "merged.pcapng"
    result = merge(inputs, out)
    merged = read(out, offsets=True)
    sources = [read(p, offsets=True) for p in inputs]
    assert result["packets"] == merged.packets == sum(s.packets for s in sources)
    assert np.all(np.diff(merged.ts_ns) >= 0)
    assert len(merged.interfaces) == sum(len(s.interfaces) for s in sources)
    assert content(merged) == sorted(row for s in sources for row in content(s))
    if shutil.which("mergecap"):
        theirs = tmp_path / "mergecap.pcapng"
        subprocess.run(["mergecap", "-w", str(theirs), *map(str, inputs)], check=True)
        assert read(theirs).ts_ns.tolist() == merged.ts_ns.tolist()


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.lists(st.integers(0, 10**12), max_size=30).map(sorted), min_size=1, max_size=5),
    st.sampled_from([".pcap", ".pcapng"]),
)
def test_merge_conserves_packets_and_is_stable(tmp_path_factory, times, suffix):
    folder = tmp_path_factory.mktemp("merge")
    inputs = []
    for k, ts in enumerate(times):
        inputs.append(folder / f"in{k}{suffix}")
        write_capture(inputs[-1], ts, fill=k)
    out = folder / f"out{suffix}"
    merge(inputs, out)
    merged = read(out, offsets=True)
    raw = out.read_bytes()
    origin = [raw[o] for o in merged.offset.tolist()]
    expected = sorted((t, k) for k, ts in enumerate(times) for t in ts)  # stable: input order
    assert list(zip(merged.ts_ns.tolist(), origin, strict=True)) == expected


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 2**62), st.binary(min_size=0, max_size=200)), max_size=40),
    st.sampled_from(["pcap", "pcapng"]),
)
def test_write_then_read_round_trips_any_packets(tmp_path_factory, packets, fmt):
    path = tmp_path_factory.mktemp("rt") / f"x.{fmt}"
    ts = np.array([p[0] for p in packets], dtype=np.int64)
    if fmt == "pcap":
        ts %= 2**32 * 10**9  # pcap seconds are 32-bit
    blob = b"".join(p[1] for p in packets) or b"\0"
    lengths = np.array([len(p[1]) for p in packets], dtype=np.uint32)
    offsets = (np.cumsum(lengths) - lengths).astype(np.uint64)
    w = core().TraceWriter(str(path), fmt, 1, 0, buffer_bytes=64)
    n = len(packets)
    w.write_batch(
        ts, np.zeros(n, np.uint32), lengths + 4, lengths, np.frombuffer(blob, np.uint8), offsets
    )
    stats = w.close()
    assert stats["bytes"] == path.stat().st_size
    back = read(path, offsets=True)
    assert back.ts_ns.tolist() == ts.tolist()
    assert back.wirelen.tolist() == (lengths + 4).tolist()
    assert payloads(back) == [p[1] for p in packets]


def test_stats_of_a_constant_rate_trace(tmp_path):
    # 1 Mpps of 64-byte frames for 10 ms: 10 000 packets of 60 captured bytes (no FCS), 1 us
    # apart, so every 1 ms window holds 1000 packets and no packets are back to back at 40 GbE
    # (a 64-byte frame occupies (64 + 20) * 8 / 40 = 16.8 ns of wire time).
    out = tmp_path / "c.pcap"
    synth(out, eth=Ethernet(40), mix=parse_mix("64"), pps=1e6, duration_s=0.01)
    s = statistics.stats(read(out), Ethernet(40))
    assert (s["packets"], s["bytes_wire"], s["bytes_captured"]) == (10_000, 600_000, 600_000)
    assert s["last_ts_ns"] - s["first_ts_ns"] == 9_999_000
    # The capture spans 9.999 ms: nine whole 1 ms windows of 1000 packets (the peak, 1 Mpps:
    # the offered rate), and a last one covering 0.999 ms with 1000 packets, the tail, apart
    # (1.001001 Mpps); the mean is 10 000 / 9.999 ms.
    rate = s["rates"][0]
    assert (rate["windows"], rate["full_windows"], rate["tail_ns"]) == (10, 9, 999_000)
    assert rate["peak_pps"] == 1e6
    assert rate["tail_pps"] == pytest.approx(1000 / 0.999e-3, rel=1e-12)
    assert s["mean_pps"] == pytest.approx(10_000 / 9.999e-3, rel=1e-12)
    # 1000 frames of 60 B = 480 kbit per whole window, in 0.999 ms in the tail.
    assert rate["peak_gbps"] == 0.48
    assert rate["tail_gbps"] == pytest.approx(480e3 / 0.999e-3 / 1e9, rel=1e-12)
    assert s["size_histogram"]["64"] == 10_000
    assert s["bursts"]["bursts"] == 0


def test_onoff_bursts_are_back_to_back_at_line_rate(tmp_path):
    out = tmp_path / "b.pcapng"
    synth(
        out,
        eth=Ethernet(40),
        mix=parse_mix("64"),
        pps=5e6,
        duration_s=0.01,
        arrival="onoff",
        burst=32,
    )
    t = read(out)
    s = statistics.stats(t, Ethernet(40))
    # 50 000 packets in bursts of 32 back to back: 1562 full bursts and a last one of 16
    # (no idle gap of this seed falls below one frame time, so no two bursts touch).
    assert s["packets"] == 50_000
    assert s["bursts"]["packets_in_bursts"] == 50_000
    assert (s["bursts"]["bursts"], s["bursts"]["max_burst"]) == (1563, 32)
    # Inside a burst, consecutive 64-byte frames start 16.8 ns apart (truncated to 16 ns).
    assert s["bursts"]["gap_ns_min"] in (16, 17)
    assert s["mean_pps"] == pytest.approx(5e6, rel=0.05)


def _synthetic(folder: Path, mix: str = "64", eth: int = 40, **plan: object) -> Path:
    """A synthetic capture of frames of `mix` at `eth` GbE (`synth`'s plan) in `folder`."""
    path = folder / "synthetic.pcap"
    synth(path, eth=Ethernet(eth), mix=parse_mix(mix), **plan)
    return path


def _timeline(folder: Path, **plan: object) -> Timeline:
    """A synthetic capture of 64-byte frames at 40 GbE read for passes in time order."""
    return timeline(_synthetic(folder, **plan))


def test_poisson_arrivals_have_the_mean_rate_and_exponential_gaps(tmp_path):
    t = read(_synthetic(tmp_path, "imix", 100, pps=2e6, duration_s=0.05, arrival="poisson"))
    gaps = np.diff(t.ts_ns)
    assert gaps.mean() == pytest.approx(500, rel=0.02)  # 1 / 2 Mpps = 500 ns
    # An exponential distribution's standard deviation equals its mean.
    assert gaps.std() == pytest.approx(500, rel=0.05)


def test_synth_refuses_rates_beyond_line_rate(tmp_path):
    # 64-byte frames at 40 GbE: 40e9 / (84 * 8) = 59.52 Mpps at most.
    with pytest.raises(UsageError, match="exceeds 40 GbE line rate"):
        synth(
            tmp_path / "x.pcap", eth=Ethernet(40), mix=parse_mix("64"), pps=60e6, duration_s=0.001
        )


def test_nic_trace_demand_conserves_bytes(tmp_path):
    # A constant 64-byte trace at 2 Mpps for 5 ms: every 1 ms window carries 2000 packets, so
    # the demand equals 2 Mpps times the per-packet cost of `nic` at 64 bytes.
    link = Link()
    profile = load_profile("dpdk")
    t = _timeline(tmp_path, pps=2e6, duration_s=0.005)
    found = nic.trace_demand(profile, link, t, 1_000_000)
    fixed = nic.evaluate(profile, link, Ethernet(40), fixed_rows([64]))
    # The trace spans 4.9995 ms: the last window covers 0.9995 ms with its 2000 packets.
    covered = np.array([1, 1, 1, 1, 0.9995])
    up, down = fixed.up_bytes_per_pkt[0], fixed.down_bytes_per_pkt[0]
    assert found.up_gbps == pytest.approx(2e6 * up * 8 / 1e9 / covered)
    assert found.down_gbps == pytest.approx(2e6 * down * 8 / 1e9 / covered)
    assert found.capacity_gbps == pytest.approx(link.tlp_gbps)
    assert found.frame_bytes == 10_000 * 64


def test_dpdk_trace_batches_come_from_arrivals(tmp_path):
    # 10 Mpps evenly spaced (100 ns apart) with a 1 us poll: every poll finds 10 packets, so the
    # batch histogram is {10: calls} and the traffic equals the fixed estimate at batch 10.
    link = Link()
    t = _timeline(tmp_path, pps=10e6, duration_s=0.002)
    fwd = forwarding.trace_forwarding(forwarding.ForwardingConfig(), link, t, 1_000_000, 1000)
    assert fwd.batch_hist == {10: 2000.0}
    est = forwarding.estimate(forwarding.ForwardingConfig(pkt_bytes=60, batch=10), link, 10e6)
    # The trace spans 1.9999 ms: the second window covers 0.9999 ms with 10 000 packets.
    covered = np.array([1, 0.9999])
    for metric in forwarding.METRICS:
        assert fwd.metric_rates[metric].gbps == pytest.approx(est.metric_gbps(metric) / covered)
    assert fwd.demand.up_gbps == pytest.approx(est.wire_up_gbps / covered)


def test_cli_trace_json_contract(tmp_path, capsys):
    out = tmp_path / "s.pcap"
    assert (
        main(
            [
                "trace",
                "synth",
                "--sizes",
                "imix",
                "--pps",
                "1M",
                "--duration",
                "2ms",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["trace", "stats", "--json", str(out), str(out)]) == 0
    results = json.loads(capsys.readouterr().out)
    assert len(results) == 2
    for key in (
        "packets",
        "bytes_captured",
        "bytes_wire",
        "first_ts_ns",
        "last_ts_ns",
        "interfaces",
        "size_histogram",
    ):
        assert key in results[0]
    assert results[0]["packets"] == 2000
    assert results[0]["interfaces"][0]["linktype"] == 1
    assert results[0]["interfaces"][0]["packets"] == 2000
    for cmd in (["nic", "--profile", "dpdk"], ["dpdk-fwd"]):
        assert main([*cmd, "--trace", str(out), "--json"]) == 0
        got = json.loads(capsys.readouterr().out)
        assert got["packets"] == 2000
        assert got["windows"] == 2
        assert 0 < got["mean_up_gbps"] <= got["peak_up_gbps"]


def test_cli_merge_and_force(tmp_path, capsys):
    a, b = tmp_path / "a.pcap", tmp_path / "b.pcap"
    write_capture(a, [1, 3], 1)
    write_capture(b, [2], 2)
    out = tmp_path / "m.pcapng"
    assert main(["trace", "merge", str(a), str(b), "-o", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["packets"] == 3
    assert main(["trace", "merge", str(a), str(b), "-o", str(out)]) == 2
    assert "exists; pass --force" in capsys.readouterr().err
    assert main(["trace", "stats", str(tmp_path)]) == 2
    assert "is a directory, not a capture file" in capsys.readouterr().err
    assert main(["trace", "merge", str(a), "-o", str(tmp_path / "m.txt")]) == 2
    assert "must end in .pcap or .pcapng" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda b: b[:30], "byte 24: truncated record header: 6 of 16 bytes"),
        (lambda b: b[:90], "byte 24: truncated record: caplen 60, 50 bytes left"),
        (
            lambda b: b"\x00\x01\x02\x03" + b[4:],
            "byte 0: not a pcap or pcapng file: magic 0x03020100",
        ),
        # Record 1's caplen (bytes 32..36, after the 24-byte header and ts) above libpcap's
        # MAXIMUM_SNAPLEN; the link type (bytes 20..24), draft-ietf-opsawg-pcap §4.
        (
            lambda b: b[:32] + (262_145).to_bytes(4, "little") + b[36:],
            "byte 24: caplen 262145 exceeds the 262144-byte maximum",
        ),
        (lambda b: b[:20] + (30).to_bytes(4, "little") + b[24:], "byte 20: unknown link type 30"),
    ],
)
def test_cli_bad_captures_give_one_line_and_exit_2(tmp_path, capsys, damage, message):
    good = tmp_path / "good.pcap"
    write_capture(good, [1, 2], 0)
    bad = tmp_path / "bad.pcap"
    bad.write_bytes(damage(good.read_bytes()))
    assert main(["trace", "stats", "--strict", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err == f"pcieperf: error: {bad}: {message}\n"


def test_skip_bad_reports_the_count(tmp_path, capsys):
    good = tmp_path / "good.pcap"
    write_capture(good, [1, 2, 3], 0)
    raw = bytearray(good.read_bytes())
    # Records are 16 + 60 bytes after the 24-byte header; record 2's caplen (at 100 + 8) now
    # claims 1000 bytes, more than the 136 left: the reader resynchronises on record 3.
    raw[24 + 76 + 8 : 24 + 76 + 12] = (1000).to_bytes(4, "little")
    bad = tmp_path / "bad.pcap"
    bad.write_bytes(bytes(raw))
    assert main(["trace", "stats", "--strict", str(bad)]) == 2
    assert "byte 100: truncated record: caplen 1000, 136 bytes left" in capsys.readouterr().err
    assert main(["trace", "stats", "--skip-bad", "--json", str(bad)]) == 0
    got = json.loads(capsys.readouterr().out)[0]
    assert (got["skipped"], got["packets"]) == (1, 2)
    assert (got["first_ts_ns"], got["last_ts_ns"]) == (1, 3)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        # the one check of a packet rate in every command (issue 44)
        (["--pps", "0"], "packet rate '0' is not allowed; give a rate above 0, e.g. 10M"),
        (["--burst", "0"], "--burst 0 is not allowed; it must be a positive number"),
    ],
)
def test_trace_synth_checks_name_the_flags(capsys, tmp_path, argv, message):
    # the synthetic-traffic plan's checks, in the CLI's words, before anything is written
    out = tmp_path / "s.pcap"
    err = refused(capsys, "trace", "synth", "-o", str(out), *argv)
    assert err == f"pcieperf: error: {message}\n"
    assert not out.exists()
