"""`trace stats` as capinfos users read it (issue 27, items 8 and 9): first and last packet time
in ISO 8601 UTC (checked against capinfos where it is installed), human durations, rates with
scaled units, bytes named by what they count (frames incl. FCS, as docs/units.md defines a
frame), and one line per file (`--brief`, as `capinfos -T`) in table, JSON and CSV."""

import json
import os
import shutil
import subprocess

import pytest

from pcieperf.net import stats_text
from pcieperf.net.trace.statistics import stats_files
from tests.helpers import CAPTURES, TESTS_DATA
from tests.helpers.captures import epb, idb, pcap, shb
from tests.helpers.cli import run_cli

INPUTS = TESTS_DATA / "trace_stats" / "inputs"
# tests/data/trace_stats/make.py: `trace synth --sizes 64 --pps 1M --duration 5ms`, 5000 frames
# of 64 B incl. FCS (60 B recorded), 1 µs apart from 2026-01-01T00:00:00Z (SYNTH_START_NS).
CONSTANT = INPUTS / "constant_64.pcap.gz"
needs_capinfos = pytest.mark.skipif(not shutil.which("capinfos"), reason="capinfos not installed")
needs_shared = pytest.mark.skipif(not CAPTURES.is_dir(), reason="../shared/data is absent")


def test_text_says_times_bytes_and_scaled_rates(capsys):
    code, out, _ = run_cli(capsys, "trace", "stats", str(CONSTANT))
    assert code == 0
    lines = out.splitlines()
    assert lines[0].endswith(": 5000 packets over 4.999 ms")  # 4999 gaps of 1 µs
    assert lines[1:9] == [
        "  first packet: 2026-01-01T00:00:00.000000000Z",
        "  last packet:  2026-01-01T00:00:00.004999000Z",
        # 5000 x 64 B frames, 5000 x 60 B recorded and captured.
        "  bytes: 320000 in frames incl. FCS, 300000 as recorded (no FCS), 300000 captured",
        # 5000 packets / 4.999 ms = 1.0002 Mpps; 320000 x 8 bits / 4.999 ms = 512.1 Mb/s.
        "  mean: 1.00 Mpps, 512 Mb/s in frames incl. FCS",
        # 1000 frames of 64 B in each whole 1 ms window: 512 Mb/s; the last 0.999 ms is no peak.
        "  peak per 1 ms: 1.00 Mpps, 512 Mb/s (4 whole windows)",
        "  peak per 1 s: no whole window (the capture is shorter)",
        "  strict time order: yes (0 packets earlier than the one before)",
        "  timestamps: 1.00 packets per distinct time, at most 1 at one",
    ]
    assert "  frame sizes (incl. FCS): 64: 5000" in lines


def test_the_rates_count_the_frames_the_histogram_counts(capsys):
    # The same bytes in both (docs/units.md): 64-byte frames, incl. FCS, in the histogram's
    # "64" bucket (RFC 2819 etherStatsPkts64Octets) and in bytes_frame and the bit rates.
    code, out, _ = run_cli(capsys, "trace", "stats", "--json", str(CONSTANT))
    assert code == 0
    (r,) = json.loads(out)
    assert r["bytes_frame"] == 64 * r["size_histogram"]["64"] == 320_000
    span_ns = r["last_ts_ns"] - r["first_ts_ns"]
    assert r["mean_frame_gbps"] == r["bytes_frame"] * 8 / span_ns
    assert r["mean_gbps"] == r["bytes_wire"] * 8 / span_ns  # unchanged: recorded lengths
    assert r["rates"][0]["peak_frame_gbps"] == 1000 * 64 * 8 / 1e6


def test_a_fourteen_day_capture_reads_in_days_and_small_units(tmp_path, capsys):
    # Packets at 0, 1 s and 14 d 2 h (1 216 800 s): 60 B recorded, 64 B frames.
    start = 1_700_000_000
    records = [(start + s, 0, b"\0" * 60, 60) for s in (0, 1, 1_216_800)]
    path = tmp_path / "long.pcap"
    path.write_bytes(pcap(records))
    code, out, _ = run_cli(capsys, "trace", "stats", str(path))
    assert code == 0
    assert ": 3 packets over 14 d 2 h" in out
    # 3 packets / 1 216 800 s = 2.47e-6 pps; 3 x 512 bits / 1 216 800 s = 0.00126 b/s.
    assert "  mean: 2.47e-06 pps, 0.00126 b/s in frames incl. FCS" in out
    # One packet in each of the first two 1 s windows: 1 pps, 512 b/s; the last packet lies
    # on a window start, so it belongs to the window before and all 1 216 800 are whole.
    assert "  peak per 1 s: 1.00 pps, 512 b/s (1216800 whole windows)" in out
    assert "  last packet:  2023-11-29T00:13:20.000000Z" in out  # `date -u -d @1701216800`


def test_a_capture_without_ethernet_frames_counts_its_recorded_lengths(tmp_path, capsys):
    # LINKTYPE_PPP (9) has no Ethernet equivalent: frames are the recorded lengths, no FCS.
    path = tmp_path / "ppp.pcap"
    path.write_bytes(pcap([(1000, 0, b"\0" * 40, 40), (1000, 10, b"\0" * 40, 40)], linktype=9))
    code, out, _ = run_cli(capsys, "trace", "stats", str(path))
    assert code == 0
    assert "  bytes: 80 as recorded (no FCS), 80 captured; not all Ethernet" in out
    assert "in the recorded lengths" in out
    assert "  frame sizes: <64: 2" in out
    code, out, _ = run_cli(capsys, "trace", "stats", "--json", str(path))
    assert code == 0
    (r,) = json.loads(out)
    assert r["bytes_frame"] == r["bytes_wire"] == 80


def capinfos_times(path) -> tuple[str | None, str | None]:
    """capinfos' first and last packet time (-a -e, table form), in UTC, as ISO 8601."""
    env = {**os.environ, "TZ": "UTC"}
    done = subprocess.run(
        ["capinfos", "-T", "-r", "-a", "-e", str(path)], capture_output=True, text=True, env=env
    )
    if done.returncode:
        pytest.skip(f"capinfos cannot read {path}: {done.stderr.strip()}")
    _, first, last = done.stdout.rstrip("\n").split("\t")
    return tuple(None if t == "n/a" else t.replace(" ", "T") + "Z" for t in (first, last))


TEST_INPUTS = sorted(p for p in INPUTS.iterdir() if p.name != "cut.pcap")  # capinfos refuses it
SHARED = sorted(CAPTURES.glob("**/*.pcap*"))


@needs_capinfos
@pytest.mark.parametrize("path", TEST_INPUTS + SHARED, ids=lambda p: p.name)
def test_first_and_last_time_are_capinfos(path):
    # Each time with its packet's precision; n/a where some packets carry no time (Simple
    # Packet Blocks); pcap µs files with 6 digits, ns ones with 9.
    (r,) = stats_files([path])
    assert (r["first_time"], r["last_time"]) == capinfos_times(path)


@needs_capinfos
@pytest.mark.parametrize(
    "tsresol",
    # The precisions capinfos 4.0 shows: 10^-n s for n in 0, 1, 2, 3, 6, 9, and 2^-n s shown
    # with the digits of 10^d <= 2^n (2^-10 s: 3 digits, 2^-20: 6, 2^-30: 9).
    [0, 1, 2, 3, 6, 9, 0x80 | 1, 0x80 | 4, 0x80 | 7, 0x80 | 10, 0x80 | 20, 0x80 | 30],
)
def test_every_resolution_is_shown_as_capinfos_shows_it(tmp_path, tsresol):
    ticks = 2 ** (tsresol & 0x7F) if tsresol & 0x80 else 10 ** (tsresol & 0x7F)
    first = 1000 * ticks + ticks // 3  # 1000.333 s, then 1/7 s later: digits to cut
    packets = [epb("<", 0, t, b"\0" * 60, 60) for t in (first, first + ticks // 7 + 1)]
    path = tmp_path / "resolution.pcapng"
    path.write_bytes(shb("<") + idb("<", 0, tsresol) + b"".join(packets))
    (r,) = stats_files([path])
    assert (r["first_time"], r["last_time"]) == capinfos_times(path)


# --- --brief --------------------------------------------------------------------------------

BRIEF_INPUTS = [INPUTS / n for n in ("constant_64.pcap.gz", "interfaces.pcapng.gz", "cut.pcap")]


def test_brief_rows_are_the_full_results_keys(capsys):
    code, out, _ = run_cli(capsys, "trace", "stats", "--json", *map(str, BRIEF_INPUTS))
    assert code == 0
    full = json.loads(out)
    code, out, _ = run_cli(capsys, "trace", "stats", "--brief", "--json", *map(str, BRIEF_INPUTS))
    assert code == 0
    rows = json.loads(out)
    for row, r in zip(rows, full, strict=True):
        assert (row["first_time"], row["packets"]) == (r["first_time"], r["packets"])
        assert {k: v for k, v in row.items() if k in r} == {k: r[k] for k in row if k in r}
        assert row["peak_pps_1ms"] == r["rates"][0]["peak_pps"]
        assert row["peak_frame_gbps_1s"] == r["rates"][1]["peak_frame_gbps"]
    code, out, _ = run_cli(capsys, "trace", "stats", "--brief", "--format", "csv", str(CONSTANT))
    header, line = out.splitlines()
    assert header.split(",") == list(rows[0])
    assert line.split(",")[:4] == [str(CONSTANT), "pcap", "gzip", "5000"]


def test_brief_text_is_one_line_per_file_that_fits(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "200")
    code, out, _ = run_cli(capsys, "trace", "stats", "--brief", *map(str, BRIEF_INPUTS))
    title, header, *rows, footer = out.splitlines()
    assert title == f"in {INPUTS}{os.sep}"  # the folder once, the files by name
    assert header.split()[:3] == ["file", "format", "packets"]
    assert [row.split()[0] for row in rows] == [p.name for p in BRIEF_INPUTS]
    # Text left-aligned, numbers right-aligned: the packet counts end under "packets".
    end = header.index("packets") + len("packets")
    assert [row[:end].split()[-1] for row in rows] == ["5000", "3000", "1"]
    assert " 4.999 ms " in rows[0]
    assert " 1.00 Mpps " in rows[0]
    assert footer.startswith("bit/s: frames incl. FCS")
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = run_cli(capsys, "trace", "stats", "--brief", *map(str, BRIEF_INPUTS))
    assert code == 0
    assert max(len(line) for line in out.splitlines()) <= 80
    # Rows stay whole: the least wanted columns go (the later windows' first), named below.
    assert "not shown: format, first packet (UTC), last packet (UTC)," in out
    assert len(out.splitlines()) == len(BRIEF_INPUTS) + 4  # folder, header, rows, note, footer


def test_a_brief_row_of_an_archive_port_names_the_port():
    (r,) = stats_files([CONSTANT])
    port = {"port": 0, "files": 2, "first_file": "a.pcap", "last_file": "b.pcap"}
    result = port | {k: v for k, v in r.items() if k != "file"}
    row = stats_text.brief_row(result)
    assert list(row)[:5] == ["port", "files", "first_file", "last_file", "format"]
    text = stats_text.brief_table([result]).to_text()
    assert "port 0 (2 files, a.pcap .. b.pcap)" in text.replace("\n", " ")
