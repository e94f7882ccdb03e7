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
WRITERS = ("pcapng", "pcap", "pdump")
"""The capture paths, each with its own copy on the forwarding core and its own writes:
dumpcap's pcapng (rte_pcapng_copy builds the block on the forwarding core; writev of the blocks
as copied), dumpcap -P (rte_pktmbuf_copy; libpcap's pcap_dump through stdio), dpdk-pdump
(rte_pktmbuf_copy into its own pool of 65535 mbufs; a net_pcap port's pcap_dump per packet)."""
SLEEPING_WRITERS = ("pcapng", "pcap")
"""dpdk-dumpcap's writers: it sleeps when its ring stays empty (app/dumpcap/main.c
process_ring); dpdk-pdump polls its ring without sleeping (app/pdump/main.c dump_packets)."""
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
