"""Capture files for the tests: pcap and pcapng written byte by byte, the quirky captures the
capture tests and tests/data/trace_stats/make.py share, and tshark's reading of a capture (the
independent reader the tests compare with)."""

import struct
import subprocess
from pathlib import Path

import numpy as np

from pcieperf._native import core
from pcieperf.net.trace.files import Trace

# --- captures written byte by byte (draft-ietf-opsawg-pcap §4-5, draft-ietf-opsawg-pcapng §3-4)


def pcap(records, snaplen=0, nanos=False, big_endian=False, linktype=1) -> bytes:
    """A pcap file: header, then (sec, frac, data, wire length) records."""
    e = ">" if big_endian else "<"
    magic = 0xA1B23C4D if nanos else 0xA1B2C3D4
    out = [struct.pack(e + "IHHiIII", magic, 2, 4, 0, 0, snaplen, linktype)]
    for sec, frac, data, wirelen in records:
        out += [struct.pack(e + "IIII", sec, frac, len(data), wirelen), data]
    return b"".join(out)  # one join: linear in the file's size (40 000 records in one test)


def block(block_type: int, body: bytes, e: str) -> bytes:
    n = 12 + len(body)
    return struct.pack(e + "II", block_type, n) + body + struct.pack(e + "I", n)


def shb(e: str) -> bytes:
    return block(0x0A0D0D0A, struct.pack(e + "IHHq", 0x1A2B3C4D, 1, 0, -1), e)


def idb(e: str, snaplen: int, tsresol: int | None = None, linktype: int = 1) -> bytes:
    body = struct.pack(e + "HHI", linktype, 0, snaplen)
    if tsresol is not None:
        body += struct.pack(e + "HHB3x", 9, 1, tsresol)
    return block(1, body + struct.pack(e + "HH", 0, 0), e)


def epb(e: str, iface: int, ts: int, data: bytes, wirelen: int, flags: int | None = None) -> bytes:
    """An Enhanced Packet Block; with `flags`, an epb_flags option (code 2, §4.3.1) and the
    end of options."""
    head = struct.pack(e + "IIIII", iface, ts >> 32, ts & 0xFFFFFFFF, len(data), wirelen)
    options = b"" if flags is None else struct.pack(e + "HHIHH", 2, 4, flags, 0, 0)
    return block(6, head + data + b"\0" * (-len(data) % 4) + options, e)


# Each: the bytes, then (snaplen_exceeded, wirelen_below_caplen, strict time order), counted by
# hand from the records.
QUIRKS = {
    # Snaplen 64 and a 100-byte record: libpcap's sf-pcap.c and Wireshark read it whole.
    "over_snaplen.pcap": (
        pcap([(1000, 1, b"\x11" * 100, 100), (1000, 2, b"\x22" * 64, 64)], snaplen=64),
        (1, 0, True),
    ),
    "wire_below_caplen.pcap": (
        pcap([(1000, 1, b"\x11" * 60, 20), (1001, 0, b"\x12" * 10, 9)]),
        (0, 2, True),
    ),
    "zero_length.pcap": (
        pcap([(1000, 0, b"", 0), (1000, 5, b"", 60), (1000, 6, b"\x01", 1)]),
        (0, 0, True),
    ),
    # ns magic, seconds at the top of the unsigned 32-bit range (2106-02-07).
    "huge_ts_ns.pcap": (
        pcap(
            [(0xFFFFFFFF, 999_999_998, b"\x01" * 10, 10), (0xFFFFFFFF, 999_999_999, b"\x02", 1)],
            nanos=True,
        ),
        (0, 0, True),
    ),
    "huge_ts_big_endian.pcap": (
        pcap(
            [(0xFFFFFFFE, 999_999, b"\x01" * 10, 10), (0xFFFFFFFF, 999_999, b"\x02" * 12, 12)],
            big_endian=True,
        ),
        (0, 0, True),
    ),
    "out_of_order.pcap": (
        pcap([(1002, 0, b"\x01" * 10, 10), (1001, 0, b"\x02" * 10, 10), (1001, 0, b"\x03", 1)]),
        (0, 0, False),
    ),
    # Three sections (little-, big-, little-endian), ns and ms resolutions, a packet above its
    # interfaces' snaplens (40 > 32, 17 > 16), a zero-length packet at 2^62 ns, time going
    # backwards.
    "sections.pcapng": (
        shb("<")
        + idb("<", 32)
        + epb("<", 0, 5_000_000, b"\x01" * 40, 40)
        + shb(">")
        + idb(">", 0, 9)
        + idb(">", 16, 3)
        + epb(">", 1, 7, b"\x02" * 17, 100)
        + epb(">", 0, 2**62, b"", 0)
        + shb("<")
        + idb("<", 0)
        + epb("<", 0, 1, b"\x03" * 5, 5),
        (2, 0, False),
    ),
}


# A pcap whose last record is cut short: 7 bytes of its 30-byte packet missing.
CUT_PCAP = pcap([(1000, 1, b"\x11" * 30, 30), (1000, 2, b"\x22" * 30, 30)])[:-7]


def tshark_fields(path, fields):
    """Every packet record of a capture as tshark reads it: one list of `fields` per record."""
    out = subprocess.run(
        ["tshark", "-r", str(path), "-T", "fields", *(a for f in fields for a in ("-e", f))],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [line.split("\t") for line in out.splitlines()]


def epoch_ns(text):
    """tshark's frame.time_epoch ("seconds.fraction") as whole nanoseconds."""
    seconds, _, frac = text.partition(".")
    return int(seconds) * 1_000_000_000 + int(frac.ljust(9, "0")[:9])


def pcap_of_times(ts_ns, wirelen) -> bytes:
    """A ns pcap of records with no captured bytes, built with numpy (millions in a second):
    times and wire lengths as arrays, in file order."""
    import numpy as np

    records = np.zeros(
        len(ts_ns), dtype=[("sec", "<u4"), ("ns", "<u4"), ("cap", "<u4"), ("wire", "<u4")]
    )
    records["sec"], records["ns"] = np.divmod(np.asarray(ts_ns, dtype=np.int64), 1_000_000_000)
    records["wire"] = wirelen
    return pcap([], nanos=True) + records.tobytes()


# --- captures read and written through pcieperf's own trace module


def payloads(t: Trace) -> list[bytes]:
    data = Path(t.path).read_bytes()
    return [data[o : o + c] for o, c in zip(t.offset.tolist(), t.caplen.tolist(), strict=True)]


def content(t: Trace) -> list[tuple]:
    return sorted(
        zip(t.ts_ns.tolist(), t.wirelen.tolist(), payloads(t), strict=True),
    )


def write_capture(path: Path, ts: list[int], fill: int) -> None:
    """A capture of 60-byte frames at the given times, every byte `fill`."""
    writer = core().TraceWriter(str(path), path.suffix[1:], 1, 0)
    n = len(ts)
    data = np.full(60 * max(n, 1), fill, dtype=np.uint8)
    writer.write_batch(
        np.array(ts, dtype=np.int64),
        np.zeros(n, dtype=np.uint32),
        np.full(n, 60, dtype=np.uint32),
        np.full(n, 60, dtype=np.uint32),
        data,
        np.arange(n, dtype=np.uint64) * 60,
    )
    writer.close()
