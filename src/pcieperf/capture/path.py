"""The capture path's vocabulary, without numpy (the CLI builds its options from it): the
designs the study compares, what the producer copies and the consumer writes, where to.

In DPDK 22.11 (lib/pdump/rte_pdump.c) the forwarding lcore's Rx/Tx callbacks copy each packet
into the capture pool and enqueue the copies on a ring; the capture process (dpdk-dumpcap or
dpdk-pdump) dequeues them and writes records.
"""

from __future__ import annotations

DESIGNS = ("per-packet", "batched", "contiguous")
"""The study's three designs: libpcap's pcap_dump per packet (dpdk-pdump out of the box),
buffered writes of whole bursts (today's dpdk-dumpcap), and contiguous batching of small packets
into one buffer (the study's what-if)."""
FORMATS = ("pcapng", "pcap")
DIRECTIONS = {"rx": 1, "tx": 1, "both": 2}  # copies per packet on each port captured
SINKS = ("null", "tmpfs", "file")  # /dev/null, a file in a tmpfs, a file the user names
COPY_KINDS = ("pcapng", "pcap")
"""How the producer copies a packet: `pcapng` through rte_pcapng_copy (dumpcap's default: the
pcapng block is built on the forwarding core), `pcap` through rte_pktmbuf_copy (dumpcap -P,
dpdk-pdump)."""
WRITERS = ("pcapng", "pcap", "pdump")
"""How the consumer writes a record: dumpcap's pcapng writev of the blocks as copied, dumpcap
-P's libpcap pcap_dump through stdio, dpdk-pdump's net_pcap port (pcap_dump per packet)."""
STDIO_WRITERS = ("pcap", "pdump")  # libpcap's pcap_dump: fwrite copies each record's bytes


def touches_bytes(writer: str, sink: str) -> bool:
    """Whether the consumer reads every byte of its records, so that each costs it (and each
    cache line comes over from the forwarding core that wrote the copy): libpcap's pcap_dump
    copies them into a stdio buffer, and a file's write(2) copies them into the page cache;
    dumpcap's pcapng writev to /dev/null touches none (write_null returns the length unread,
    drivers/char/mem.c)."""
    return writer in STDIO_WRITERS or sink != "null"


CAPTURE_SIZES = "64,128,256,320,384,512,1024,1518"  # the study's sizes, and two larger
BUFFER_SHARE = 0.5
"""Of the fixed per-copy costs (producer copy, hand-off, consumer record), the share that is
per buffer rather than per packet. Runs of one packet per buffer cannot tell them apart: the
contiguous design's central value takes the midpoint, its bounds 0 (nothing saved) and 1
(everything saved)."""
