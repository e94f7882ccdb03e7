"""Cut the DPDK 22.11 dpdk-dumpcap captures of issue 26 to their first 640 packets, bytes kept
as dumpcap wrote them (block by block; pcapng keeps its closing Interface Statistics Block).

The sources were made on the issue's machine kind (Debian 12, dpdk-dev 22.11): dpdk-testpmd
with a net_null port, io forwarding on one lcore, 60-byte packets (64-byte frames), captured
by dpdk-dumpcap as pcapng and as pcap (-P). Run: python make.py ONE_LCORE.pcapng ONE_LCORE.pcap
"""

import struct
import sys
from pathlib import Path

PACKETS = 640
HERE = Path(__file__).parent


def cut_pcapng(data: bytes) -> bytes:
    """The Section Header, the Interface Description, the first PACKETS Enhanced Packet Blocks
    and the Interface Statistics Block of a little-endian pcapng file."""
    out, packets, pos = [], 0, 0
    while pos < len(data):
        block_type, length = struct.unpack_from("<II", data, pos)
        if block_type != 6 or packets < PACKETS:
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
    pcapng, pcap = map(Path, sys.argv[1:3])
    (HERE / "one-lcore-640.pcapng").write_bytes(cut_pcapng(pcapng.read_bytes()))
    (HERE / "one-lcore-640.pcap").write_bytes(cut_pcap(pcap.read_bytes()))
