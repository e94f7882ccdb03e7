"""The capture path's vocabulary, without numpy (the CLI builds its options from it): the
designs the study compares, what the producer copies and the consumer writes, where to.

In DPDK 22.11 (lib/pdump/rte_pdump.c) the forwarding lcore's Rx/Tx callbacks copy each packet
into the capture pool and enqueue the copies on a ring; the capture process (a tool of
`capture.tools`) dequeues them and writes records.
"""

from __future__ import annotations

from dataclasses import dataclass

from pcieperf.capture import tools


@dataclass(frozen=True)
class Design:
    """One of the study's designs: the tool whose copies and writes it is, the format it
    writes unless told, whether it packs records into shared buffers (the study's what-if) and,
    where its tool was not calibrated, the capture path that stands in for it with the write
    calls per record the study counted (None: none stands in)."""

    name: str
    tool: str
    format: str
    contiguous: bool = False
    stand_in: str | None = None
    stand_in_writes: float = 0.0


DESIGN_TABLE = (
    # the study's out-of-the-box dpdk-pdump: libpcap's pcap_dump per packet, "a fwrite(pcap
    # header of 16Bytes) followed by a fwrite(packet payload) and these two fwrite(s) cause two
    # kernel traps"; dumpcap -P's pcap_dump stands in where no dpdk-pdump run was calibrated
    Design("per-packet", "pdump", "pcap", stand_in="pcap", stand_in_writes=2.0),
    Design("batched", "dumpcap", "pcapng"),  # today's dpdk-dumpcap: a writev per burst
    # contiguous batching of small packets into one buffer: dumpcap's writes, fewer buffers
    Design("contiguous", "dumpcap", "pcapng", contiguous=True),
)
DESIGNS = tuple(d.name for d in DESIGN_TABLE)
FORMATS = ("pcapng", "pcap")  # what pcieperf's reader reads back: a tool writes one of them
DIRECTIONS = {"rx": 1, "tx": 1, "both": 2}  # copies per packet on each port captured
SINKS = ("null", "tmpfs", "file")  # /dev/null, a file in a tmpfs, a file the user names
MODEL_SINKS = ("null", "tmpfs")
"""The sinks the model prices: the null device and a tmpfs file (a file on a disk is a tmpfs
file at the disk's bandwidth: `sink_gbps`). A run's `file` sink is wherever the user's file is,
so its consumer costs are not fitted."""


def design(name: str) -> Design:
    """The design of that name."""
    return next(d for d in DESIGN_TABLE if d.name == name)


def touches_bytes(writer: str, sink: str) -> bool:
    """Whether the consumer reads every byte of its records, so that each costs it (and each
    cache line comes over from the forwarding core that wrote the copy): libpcap's pcap_dump
    copies them into a stdio buffer, and a file's write(2) copies them into the page cache;
    dumpcap's pcapng writev to /dev/null touches none (write_null returns the length unread,
    drivers/char/mem.c)."""
    return tools.writers()[writer].stdio or sink != "null"


CAPTURE_SIZES = "64,128,256,320,384,512,1024,1518"  # the study's sizes, and two larger
BUFFER_SHARE = 0.5
"""Of the fixed per-copy costs (producer copy, hand-off, consumer record), the share that is
per buffer rather than per packet. Runs of one packet per buffer cannot tell them apart: the
contiguous design's central value takes the midpoint, its bounds 0 (nothing saved) and 1
(everything saved)."""
