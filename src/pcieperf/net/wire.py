"""Ethernet on the wire, without numpy: line rates and the bytes each frame carries besides
its payload. The capture commands (`trace stats`, `merge`, `convert`) start without numpy and
take these from here; `ethernet` builds the vectorised models on them. Section numbers refer
to IEEE Std 802.3-2022 unless stated.
"""

from __future__ import annotations

from pcieperf.errors import require_choice

RATES_GBPS = (1, 10, 25, 40, 50, 100, 200, 400, 800)
PREAMBLE_SFD_BYTES = 8  # §3.1.1: 7-byte preamble + 1-byte start frame delimiter
IFG_BYTES = 12  # §4.4.2: minimum interpacket gap of 96 bit times
FCS_BYTES = 4  # §3.2.9: frame check sequence, part of the frame, stripped by the NIC
VLAN_TAG_BYTES = 4  # IEEE 802.1Q §9.6: one C-tag
MIN_FRAME_BYTES = 64  # §4.4.2: minFrameSize 512 bits
DEFAULT_FRAME_BYTES = MIN_FRAME_BYTES  # every command's frame where none is given (docs/units.md)
DEFAULT_PPS = 10e6  # the packet rate of dpdk-fwd where none is given
MAX_FRAME_BYTES = 9216  # not in 802.3: the usual jumbo-frame maximum of switches and NICs
# The largest frame a capture's packets are priced at: a 64 KiB GSO/TSO packet (an IPv4 total
# length's maximum, RFC 791) with its 14-byte Ethernet header (§3.1.1) and FCS.
MAX_PRICED_FRAME_BYTES = 65_535 + 14 + FCS_BYTES


def check_rate(rate_gbps: float) -> None:
    """Refuse a line rate that is not a standard Ethernet rate."""
    require_choice("Ethernet rate (Gb/s)", rate_gbps, RATES_GBPS)


def overhead_bytes(vlan: bool = False) -> int:
    """Wire bytes per frame besides the frame: preamble, SFD, IFG and a VLAN tag if set."""
    return PREAMBLE_SFD_BYTES + IFG_BYTES + (VLAN_TAG_BYTES if vlan else 0)


def frames_text(dma_bytes: float) -> str:
    """A packet size as every output names it: the frame (FCS included, docs/units.md), then
    the bytes the NIC DMAs."""
    return f"{dma_bytes + FCS_BYTES:g} B frames ({dma_bytes:g} B DMA'd)"
