"""`trace convert` to pcap against an oracle written here from the format (draft-ietf-opsawg-pcap
§4-5): the output is the ns pcap header (snaplen 262144, libpcap's MAXIMUM_SNAPLEN) and every
record with its time in ns, split into seconds and a fraction below 10^9. Little-endian ns
input passes through as it was read (shared windows); the other layouts are rewritten; both
must match."""

import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pcieperf.net.trace.rewrite import convert
from tests.helpers.captures import pcap

NS = 1_000_000_000


def capture(records: list[tuple[int, int, bytes]], nanos: bool, big_endian: bool) -> bytes:
    """A pcap file of (seconds, fraction, data) records, wire length = caplen + 4."""
    with_wire = [(sec, frac, data, len(data) + 4) for sec, frac, data in records]
    return pcap(with_wire, snaplen=65535, nanos=nanos, big_endian=big_endian)


def oracle(records: list[tuple[int, int, bytes]], nanos: bool) -> bytes:
    """What convert writes: the ns pcap header, little-endian, and each record with its time
    normalised (a fraction of 10^9 or more carries into the seconds, as libpcap reads it)."""
    out = [struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 262144, 1)]
    for sec, frac, data in records:
        ns = sec * NS + (frac if nanos else frac * 1000)
        out.append(struct.pack("<IIII", ns // NS, ns % NS, len(data), len(data) + 4))
        out.append(data)
    return b"".join(out)


def converted(tmp_path: Path, data: bytes) -> tuple[bytes, dict]:
    source, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    source.write_bytes(data)
    result = convert(source, out, force=True)
    return out.read_bytes(), result


records_strategy = st.lists(
    st.tuples(
        st.integers(0, 2**32 - 5),  # seconds: room for a carried fraction
        st.integers(0, 2**32 - 1),  # fraction: also 10^9 and above
        st.binary(max_size=300),
    ),
    max_size=40,
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(records=records_strategy, nanos=st.booleans(), big_endian=st.booleans())
def test_convert_to_pcap_writes_the_oracle(tmp_path, records, nanos, big_endian):
    if not nanos:  # a µs fraction above 4.29e6 would carry past 2^32 seconds
        records = [(sec, frac % 4_000_000, data) for sec, frac, data in records]
    got, result = converted(tmp_path, capture(records, nanos, big_endian))
    assert got == oracle(records, nanos)
    assert result["packets"] == len(records)


def test_convert_of_a_capture_larger_than_its_windows_is_the_oracle(tmp_path):
    # 40 000 records of 60 to 1499 bytes (~31 MB): many 512 KiB windows, records cut by window
    # ends, runs longer than 64 KiB written from their window, and every 997th record with a
    # fraction above 10^9 that breaks a run and is rewritten.
    records = [
        (1_700_000_000 + k // 1000, NS + k if k % 997 == 3 else k * 997, bytes([k % 251]) * n)
        for k, n in enumerate(60 + (k * 7919) % 1440 for k in range(40_000))
    ]
    got, result = converted(tmp_path, capture(records, nanos=True, big_endian=False))
    assert got == oracle(records, nanos=True)
    # 40 000 records; out of order: each carried fraction puts a record 1 s ahead of the next.
    assert (result["packets"], result["out_of_order"]) == (40_000, 41)


@pytest.mark.parametrize("cut", [1, 17, 215])
def test_a_capture_cut_short_converts_what_came_before(tmp_path, cut):
    records = [(1_700_000_000, k, bytes([k]) * 200) for k in range(50)]
    data = capture(records, nanos=True, big_endian=False)
    got, result = converted(tmp_path, data[:-cut])
    # The last record (216 bytes) loses its end: 49 records and the cut are reported.
    assert got == oracle(records[:49], nanos=True)
    assert (result["packets"], result["truncated"]) == (49, 1)
