"""Cut the DPDK 22.11 dpdk-dumpcap captures of issue 26 to a few hundred packets, bytes kept
as dumpcap wrote them (block by block).

The sources were made on the issue's machine kind (Debian 12, dpdk-dev 22.11): dpdk-testpmd
with a net_null port, io forwarding, 60-byte packets (64-byte frames), captured by
dpdk-dumpcap: one-lcore.pcapng and one-lcore.pcap (-P) with one forwarding lcore (their first
640 packets; the pcapng keeps its closing Interface Statistics Block), two-long.pcapng (4.4 M
packets, 477 MB) with two, Rx and Tx captured (its packets 42 784 to 43 039, around its first
time-order inversion). Run: python make.py ONE_LCORE.pcapng ONE_LCORE.pcap TWO_LONG.pcapng
"""

import struct
import sys
from pathlib import Path

PACKETS = 640
TWO_LCORES = range(42_784, 43_040)
HERE = Path(__file__).parent


def cut_pcapng(data: bytes, keep: range) -> bytes:
    """The whole blocks of a little-endian pcapng file (or of its head) that are not packets,
    and the Enhanced Packet Blocks whose index is in `keep`."""
    out, packets, pos = [], 0, 0
    while pos + 8 <= len(data):
        block_type, length = struct.unpack_from("<II", data, pos)
        if pos + length > len(data):
            break  # the head ends inside this block
        if block_type != 6 or packets in keep:
            out.append(data[pos : pos + length])
        packets += block_type == 6
        pos += length
    return b"".join(out)


def cut_pcap(data: bytes) -> bytes:
    """The file header and the first PACKETS records of a little-endian pcap file."""
    pos = 24
    for _ in range(PACKETS):
        pos += 16 + struct.unpack_from("<I", data, pos + 8)[0]
    return data[:pos]


if __name__ == "__main__":
    pcapng, pcap, two = map(Path, sys.argv[1:4])
    (HERE / "one-lcore-640.pcapng").write_bytes(cut_pcapng(pcapng.read_bytes(), range(PACKETS)))
    (HERE / "one-lcore-640.pcap").write_bytes(cut_pcap(pcap.read_bytes()))
    with two.open("rb") as f:
        head = f.read(8 << 20)  # the packets kept lie in its first 5 MB
    (HERE / "two-lcores-256.pcapng").write_bytes(cut_pcapng(head, TWO_LCORES))
