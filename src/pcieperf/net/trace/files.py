"""Reading capture files: pcap/pcapng into numpy columns (the Rust core parses them), the
interfaces they name, and the frame each record carries."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pcieperf._native import core
from pcieperf.errors import UsageError
from pcieperf.net.wire import FCS_BYTES, MIN_FRAME_BYTES

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray
else:  # numpy on first use: merge, convert and the statistics of files do not need it
    from pcieperf._numpy import np

NS_PER_S = 1_000_000_000
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1  # timestamps are int64 ns
# Link-layer header bytes to remove to reach the Ethernet frame (minus its 14-byte header):
# LINKTYPE_ETHERNET 1, LINUX_SLL 113 (16-byte header), LINUX_SLL2 276 (20 bytes), and raw IP
# (RAW 101, IPV4 228, IPV6 229) that has no link header (draft-ietf-opsawg-pcaplinktype).
ETHERNET_HEADER_BYTES = 14
LINK_HEADER_BYTES = {1: ETHERNET_HEADER_BYTES, 113: 16, 276: 20, 101: 0, 228: 0, 229: 0}
# Names of the link types in the LINKTYPE registry (draft-ietf-opsawg-pcaplinktype, the
# descriptions shortened as capinfos prints them); others are shown as "linktype N".
LINKTYPE_NAMES = {
    0: "BSD loopback",
    1: "Ethernet",
    6: "Token Ring",
    8: "SLIP",
    9: "PPP",
    10: "FDDI",
    50: "PPP in HDLC-like framing",
    51: "PPPoE",
    101: "Raw IP",
    104: "Cisco HDLC",
    105: "IEEE 802.11",
    107: "Frame Relay",
    108: "OpenBSD loopback",
    113: "Linux cooked",
    117: "OpenBSD pflog",
    127: "IEEE 802.11 radiotap",
    143: "DOCSIS",
    187: "Bluetooth HCI H4",
    189: "USB Linux",
    195: "IEEE 802.15.4",
    220: "USB Linux mmapped",
    227: "SocketCAN",
    228: "Raw IPv4",
    229: "Raw IPv6",
    231: "D-Bus",
    249: "USBPcap",
    252: "Wireshark Upper PDU",
    253: "Netlink",
    276: "Linux cooked v2",
    279: "EBHSCR",
} | {147 + k: f"User {k}" for k in range(16)}


@dataclass(frozen=True)
class Interface:
    """One capture interface (pcapng IDB, or the single interface of a pcap file)."""

    linktype: int
    snaplen: int
    tsresol: int
    tsoffset_s: int
    name: str | None
    section: int

    @property
    def time_digits(self) -> int:
        """Decimal digits of a second its times are shown with: the largest d with 10^d ticks
        per second or more (n for if_tsresol 10^-n s, floor(n log10 2) for 2^-n s, pcapng
        §4.2), as Wireshark's wiretap sizes a precision; at most 9 (times are kept in ns)."""
        n = self.tsresol & 0x7F
        return min(math.floor(n * math.log10(2)) if self.tsresol & 0x80 else n, 9)


@dataclass(frozen=True)
class Trace:
    """Every packet of a capture as columns; `iface` indexes `interfaces` (numbered across
    pcapng sections in file order)."""

    path: str
    format: str
    ts_ns: NDArray[np.int64]
    caplen: NDArray[np.uint32]
    wirelen: NDArray[np.uint32]
    iface: NDArray[np.uint32]
    interfaces: tuple[Interface, ...]
    skipped: int = 0
    untimed: int = 0
    offset: NDArray[np.uint64] | None = None
    snaplen_exceeded: int = 0
    wirelen_below_caplen: int = 0
    cut_short: str | None = None
    compression: str = "none"
    ts_wrapped: int = 0

    @property
    def truncated(self) -> bool:
        """Whether the capture ends inside a record (what came before was read)."""
        return self.cut_short is not None

    @property
    def packets(self) -> int:
        """Number of packet records."""
        return int(self.ts_ns.size)

    def frame_bytes(self) -> NDArray[np.int64]:
        """Ethernet frame size of each packet incl. FCS, padded to the 64-byte minimum: what
        the NIC moves. Captures hold frames without the FCS; other link layers are converted."""
        linktypes = np.array([i.linktype for i in self.interfaces], dtype=np.int64)
        unknown = sorted(set(linktypes[np.unique(self.iface)].tolist()) - set(LINK_HEADER_BYTES))
        if unknown:
            raise UsageError(
                f"{self.path}: link type {unknown[0]} has no Ethernet equivalent; traces for "
                f"the models need link types {', '.join(map(str, LINK_HEADER_BYTES))}"
            )
        header = np.array([LINK_HEADER_BYTES.get(int(t), 0) for t in linktypes], dtype=np.int64)
        frame = self.wirelen.astype(np.int64) - header[self.iface] + ETHERNET_HEADER_BYTES
        return np.maximum(frame + FCS_BYTES, MIN_FRAME_BYTES)


def linktype_name(linktype: int) -> str:
    """The registry name of a link type ("Ethernet", "Raw IP", ...), or "linktype N"."""
    return LINKTYPE_NAMES.get(linktype, f"linktype {linktype}")


def read(
    path: str | os.PathLike,
    *,
    skip_bad: bool = False,
    offsets: bool = False,
    strict: bool = False,
) -> Trace:
    """Read a pcap or pcapng file (`-` is standard input; gzip and zstd are unpacked, told by
    their magic). `skip_bad` passes over damaged records (counted in `skipped`); a capture cut
    short inside a record keeps what came before (`cut_short` says where) unless `strict`,
    which makes it an error; `offsets` also returns where each packet's bytes start in the
    (decompressed) capture."""
    raw = core().trace_read(os.fspath(path), skip_bad=skip_bad, offsets=offsets, strict=strict)
    return Trace(
        path=os.fspath(path),
        format=raw["format"],
        ts_ns=raw["ts_ns"],
        caplen=raw["caplen"],
        wirelen=raw["wirelen"],
        iface=raw["iface"],
        interfaces=tuple(Interface(**i) for i in raw["interfaces"]),
        skipped=raw["skipped"],
        untimed=raw["untimed"],
        offset=raw.get("offset"),
        snaplen_exceeded=raw["snaplen_exceeded"],
        wirelen_below_caplen=raw["wirelen_below_caplen"],
        ts_wrapped=raw["ts_wrapped"],
        cut_short=raw["cut_short"],
        compression=raw["compression"],
    )
