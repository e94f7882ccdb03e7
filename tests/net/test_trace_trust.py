"""Can this capture be trusted? (issue 26, item 4): packets per distinct timestamp, steps back in
time, directions and implausible dates in `trace stats`, on real DPDK 22.11 dpdk-dumpcap files
(tests/data/dpdk2211, see make.py there), on captures written byte by byte with a known answer,
and against the numpy reference (tests/helpers/stats_oracle.py) on random ones; times past
2^63 ns read as Wireshark reads them; `trace convert --shift-time`."""

import json
import shutil
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pcieperf as pp
from pcieperf._native import core
from pcieperf.net.trace import epoch
from pcieperf.net.trace.files import Interface
from pcieperf.net.trace.statistics import WINDOWS_NS, _report, stats_config
from tests.helpers import TESTS_DATA, stats_oracle
from tests.helpers.captures import epb, epoch_ns, idb, shb, tshark_fields
from tests.helpers.cli import run_cli

DPDK = TESTS_DATA / "dpdk2211"
PCAPNG = DPDK / "one-lcore-640.pcapng"
PCAP = DPDK / "one-lcore-640.pcap"
TWO_LCORES_REAL = DPDK / "two-lcores-256.pcapng"
TRUST_KEYS = tuple(stats_oracle.trust(np.zeros(0, np.int64), np.zeros(0, np.uint8)))
# The shift `trace stats` suggests for a 2.6 GHz TSC: -2^64 / 2.6e9 s, to the ns.
SHIFT_2_6_GHZ = "-7094901566.811366006"
needs_tshark = pytest.mark.skipif(not shutil.which("tshark"), reason="tshark is not installed")
needs_capinfos = pytest.mark.skipif(not shutil.which("capinfos"), reason="capinfos not installed")


def stats_json(capsys, *paths) -> tuple[list[dict], str]:
    """`trace stats --json` of the files, and what it warned."""
    code, out, err = run_cli(capsys, "trace", "stats", "--json", *map(str, paths))
    assert code == 0, err
    return json.loads(out), err


def ns_pcapng(packets) -> bytes:
    """A little-endian ns pcapng of (ticks, epb_flags) packets of 60 bytes on one interface."""
    body = [shb("<"), idb("<", 0, tsresol=9)]
    body += [epb("<", 0, ticks, b"\0" * 60, 60, flags) for ticks, flags in packets]
    return b"".join(body)


# When the fixtures were captured: 2026-11-27 17:42 UTC. The TSC rate that explains a date is
# judged from the present ("captured lately"), so the tests that check it pin the present.
CAPTURED_NS = 1_795_801_320 * 10**9


@pytest.fixture
def captured_now(monkeypatch):
    monkeypatch.setattr(epoch, "time_ns", lambda: CAPTURED_NS)


def test_a_dpdk_22_11_dumpcap_file_has_32_packets_a_timestamp_and_an_implausible_date(
    capsys, captured_now
):
    # 640 packets of one forwarding lcore: 20 bursts of 32 sharing one TSC reading each
    # (tshark: 20 distinct frame.time_epoch values, 32 packets each), 320 Rx and 320 Tx
    # (frame.packet_flags_direction 0x1 and 0x2), dated 2251-09-26 15:41:00.389673534.
    (r,), err = stats_json(capsys, PCAPNG)
    assert (r["packets"], r["distinct_timestamps"], r["max_equal_timestamps"]) == (640, 20, 32)
    assert r["packets_per_timestamp"] == 32.0
    assert (r["out_of_order"], r["max_step_back_ns"], r["ts_wrapped"]) == (0, 0, 0)
    assert (r["packets_inbound"], r["packets_outbound"], r["packets_direction_unknown"]) == (
        320,
        320,
        0,
    )
    assert r["interfaces"][0]["packets_inbound"] == 320
    assert r["first_ts_ns"] == 8_890_702_860_389_673_534
    assert r["implausible_epoch"] is True
    assert r["dpdk_tsc_hz"] == 2_600_000_000  # 2^64 s / (2251-09-26 - 2026-11-27), to 10 MHz
    assert r["shift_time_s"] == float(SHIFT_2_6_GHZ)
    assert "DPDK 22.11's dumpcap" in err
    assert "relative times are right" in err
    assert f"--shift-time={SHIFT_2_6_GHZ}" in err
    _, text, _ = run_cli(capsys, "trace", "stats", str(PCAPNG))
    assert "timestamps: 32.00 packets per distinct time, at most 32 at one" in text
    assert "320 inbound, 320 outbound, 0 unknown" in text


def test_its_pcap_twin_has_the_ties_but_neither_directions_nor_the_offset(capsys):
    # dumpcap -P: pcap records carry no direction, and their dates are right (2026-11-27).
    (r,), err = stats_json(capsys, PCAP)
    assert (r["distinct_timestamps"], r["max_equal_timestamps"]) == (20, 32)
    assert r["packets_direction_unknown"] == 640
    assert r["implausible_epoch"] is False
    assert err == ""


@needs_tshark
@pytest.mark.parametrize("path", [PCAPNG, PCAP, TWO_LCORES_REAL], ids=lambda p: p.name)
def test_ties_and_directions_are_tsharks(capsys, path):
    rows = tshark_fields(path, ["frame.time_epoch", "frame.packet_flags_direction"])
    times = np.array([epoch_ns(t) for t, _ in rows], dtype=np.int64)
    direction = np.array([int(d, 16) if d else 0 for _, d in rows], dtype=np.uint8)
    (r,), _ = stats_json(capsys, path)
    assert {k: r[k] for k in TRUST_KEYS} == stats_oracle.trust(times, direction)


def test_the_suggested_shift_dates_it_when_it_was_taken(tmp_path, capsys):
    out = tmp_path / "shifted.pcapng"
    code, _, err = run_cli(
        capsys, "trace", "convert", str(PCAPNG), "-o", str(out), f"--shift-time={SHIFT_2_6_GHZ}"
    )
    assert code == 0, err
    (r,), err = stats_json(capsys, out)
    # 2026-11-27 17:41:33.578307528 UTC, a minute before the fixture files were written.
    assert r["first_ts_ns"] == 1_795_801_293_578_307_528
    assert (r["packets_inbound"], r["packets_outbound"]) == (320, 320)  # epb_flags kept
    assert r["implausible_epoch"] is False
    assert err == ""
    before, after = pp.read_capture(PCAPNG).ts_ns, pp.read_capture(out).ts_ns
    assert ((after - before) == -7_094_901_566_811_366_006).all()


@pytest.mark.parametrize("shift", ["abc", "1e300", "nan", ""])
def test_a_shift_that_is_not_seconds_is_one_line(tmp_path, capsys, shift):
    out = tmp_path / "x.pcapng"
    code, _, err = run_cli(
        capsys, "trace", "convert", str(PCAPNG), "-o", str(out), "--shift-time", shift
    )
    assert code == 2
    assert err.count("\n") == 1
    assert "shift" in err
    assert not out.exists()


# DPDK 22.11 times past 2^63 ns: the first packet of two-long.pcapng (477 MB, refused before
# at byte 34404560), the largest tick, a wrap to 0 and a time in 1981 (capinfos dates the
# file 2476-07-24 .. 1981-12-10).
BEYOND_2262 = [15_985_604_461_518_558_038, 2**64 - 1, 0, 376_000_000_000_000_000]


def test_times_past_2_63_ns_are_read_as_unsigned_ticks_and_flagged(tmp_path, capsys):
    path = tmp_path / "beyond.pcapng"
    path.write_bytes(ns_pcapng([(t, 1) for t in BEYOND_2262]))
    frame = pp.read_capture(path)
    assert frame.ts_ns.to_numpy().view(np.uint64).tolist() == BEYOND_2262
    (r,), err = stats_json(capsys, path)
    assert r["ts_wrapped"] == 2
    assert r["implausible_epoch"] is True
    assert "2 records are dated after 2262" in err
    # In i64 the times read -2461139612190993578, -1, 0, 376e15: in order.
    assert (r["out_of_order"], r["max_step_back_ns"]) == (0, 0)
    out = tmp_path / "same.pcapng"
    assert run_cli(capsys, "trace", "convert", str(path), "-o", str(out))[0] == 0
    assert pp.read_capture(out).ts_ns.to_numpy().view(np.uint64).tolist() == BEYOND_2262


def test_times_that_jump_by_the_offset_cannot_be_shifted_whole(tmp_path, capsys, captured_now):
    # two-long.pcapng's times go from 2251 to 2476: one DPDK 22.11 offset (2^64 / 2.6 GHz s)
    # later, past 2^63 ns.
    start = 8_890_702_894_516_364_472
    path = tmp_path / "jumps.pcapng"
    path.write_bytes(ns_pcapng([(start, 1), (start + 7_094_901_566_811_366_006, 2)]))
    (r,), err = stats_json(capsys, path)
    assert r["ts_wrapped"] == 1
    assert r["dpdk_tsc_hz"] == 2_600_000_000
    assert "no one shift makes them whole" in err


@needs_tshark
def test_times_past_2_63_ns_are_tsharks(tmp_path):
    path = tmp_path / "beyond.pcapng"
    path.write_bytes(ns_pcapng([(t, 1) for t in BEYOND_2262]))
    shown = [row[0] for row in tshark_fields(path, ["frame.time_epoch"])]
    # tshark prints ticks / 10^9 "seconds.nanoseconds": the unsigned tick count.
    assert [epoch_ns(s) for s in shown] == BEYOND_2262


def test_a_real_two_lcore_capture_steps_back_by_4_ms(capsys):
    # 256 packets of two-long.pcapng (two forwarding lcores, Rx and Tx): tshark shows an Rx
    # burst at .535412362 s followed by a Tx burst stamped at .531425062 s, 3 987 300 ns earlier
    # (capinfos: Strict time order False).
    (r,), _ = stats_json(capsys, TWO_LCORES_REAL)
    assert (r["out_of_order"], r["max_step_back_ns"]) == (1, 3_987_300)
    assert (r["distinct_timestamps"], r["max_equal_timestamps"]) == (9, 32)
    assert (r["packets_inbound"], r["packets_outbound"]) == (96, 160)


# Two forwarding lcores enqueue their bursts into one ring: lcore B's burst stamped at 1 500 ns
# lands after lcore A's stamped at 2 000 ns (a step back of 500 ns), and B's at 2 600 after A's
# at 3 000 (400 ns); 4 bursts of 4 Rx + 4 Tx copies, all at the burst's time.
TWO_LCORES = [1_000, 2_000, 1_500, 3_000, 2_600]


def two_lcores() -> bytes:
    base = 1_795_801_293 * 10**9  # 2026-11-27: a plausible date
    return ns_pcapng([(base + t, d) for t in TWO_LCORES for d in (1,) * 4 + (2,) * 4])


def test_two_lcores_give_steps_back(tmp_path, capsys):
    path = tmp_path / "two.pcapng"
    path.write_bytes(two_lcores())
    (r,), err = stats_json(capsys, path)
    assert (r["out_of_order"], r["max_step_back_ns"]) == (2, 500)
    assert r["strict_time_order"] is False
    assert (r["distinct_timestamps"], r["max_equal_timestamps"]) == (5, 8)
    assert (r["packets_inbound"], r["packets_outbound"]) == (20, 20)
    assert r["implausible_epoch"] is False
    assert err == ""
    _, text, _ = run_cli(capsys, "trace", "stats", str(path))
    assert "2 packets earlier than the one before, by at most 500 ns" in text


@needs_capinfos
def test_capinfos_finds_the_same_disorder(tmp_path):
    import subprocess

    path = tmp_path / "two.pcapng"
    path.write_bytes(two_lcores())
    out = subprocess.run(["capinfos", "-o", str(path)], capture_output=True, text=True).stdout
    assert "Strict time order:   False" in out


def test_partials_of_a_dpdk_file_cut_in_two_merge_to_the_whole(tmp_path):
    # Archives agree: the file cut inside its 10th burst (packet 300), each half summarised on
    # its own, appended, is what the whole file gives.
    data = PCAPNG.read_bytes()
    head, blocks, pos = [], [], 0
    while pos < len(data):
        kind, n = struct.unpack_from("<II", data, pos)
        (blocks if kind == 6 else head).append(data[pos : pos + n])
        pos += n
    halves = [tmp_path / "a.pcapng", tmp_path / "b.pcapng"]
    halves[0].write_bytes(b"".join(head[:2] + blocks[:300]))
    halves[1].write_bytes(b"".join(head[:2] + blocks[300:]))
    config = stats_config(40, WINDOWS_NS)
    (whole,) = core().trace_stats([str(PCAPNG)], config)
    parts = [core().trace_partial(str(p), config, whole["first_ts_ns"]) for p in halves]
    parts[0].append(parts[1], config)
    got = parts[0].summary(config)
    assert got["max_equal_timestamps"] == 32
    assert got["distinct_timestamps"] == 20
    assert {k: v for k, v in got.items() if k != "reads"} == {
        k: v for k, v in whole.items() if k != "reads"
    }


# Random captures: bursts of equal times, steps back, times near 2251 and past 2^63 ns.
STARTS = st.sampled_from([0, 1_795_801_293 * 10**9, 8_890_702_860 * 10**9, 2**63 - 10**6])
STEPS = st.one_of(st.just(0), st.integers(1, 1_000), st.integers(-3_000, -1), st.integers(0, 10**9))


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(STARTS, st.lists(st.tuples(STEPS, st.integers(0, 3)), max_size=60))
def test_trust_of_random_captures_is_the_numpy_one(tmp_path, start, packets):
    ticks = (start + np.cumsum([0] + [s for s, _ in packets[1:]], dtype=object)) % 2**64
    flags = [f for _, f in packets]
    path = tmp_path / "random.pcapng"
    path.write_bytes(ns_pcapng(zip(ticks.tolist() if packets else [], flags, strict=True)))
    (raw,) = core().trace_stats([str(path)], stats_config(40, WINDOWS_NS))
    got = _report(str(path), raw, [Interface(**i) for i in raw["interfaces"]], 40)
    ts = np.array(ticks.tolist() if packets else [], dtype=np.uint64).view(np.int64)
    direction = np.array([f if f < 3 else 0 for f in flags], dtype=np.uint8)
    wrapped = sum(t >= 2**63 for t in ticks.tolist()) if packets else 0
    assert {k: got[k] for k in TRUST_KEYS} == stats_oracle.trust(ts, direction, wrapped)
