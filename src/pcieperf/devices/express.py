"""The PCI Express capability as pcieperf reads it, from configuration space or from lspci's
text alike: the device and link fields that price DMA (`Express`), and what they mean: a link
speed's generation, the read tags the control bits allow, a link trained below its capability.
Section numbers are the PCI Express Base Specification, Revision 6.0, unless stated."""

from __future__ import annotations

from dataclasses import dataclass

# §7.5.3.6/§7.5.3.8 Max/Current Link Speed: an index into the Supported Link Speeds Vector
# (§7.5.3.18), 1 = 2.5 GT/s ... 6 = 64.0 GT/s; each is one generation's data rate (§4.2).
SPEED_GTS = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}
GEN_OF_GTS = {gts: gen for gen, gts in SPEED_GTS.items()}
# §7.5.3.6 Maximum Link Width: x1 .. x32 (x0 in Link Status: the link is not up, §7.5.3.8).
LINK_WIDTHS = (1, 2, 4, 8, 12, 16, 32)
# §7.5.3.3/§7.5.3.4: Max_Payload_Size and Max_Read_Request_Size encode 128 << n bytes, n = 0..5
# (128 B .. 4096 B); 110b and 111b are reserved.
SIZES_BYTES = tuple(128 << n for n in range(6))
MRRS_RESET_BYTES = 512  # §7.5.3.4: Max_Read_Request_Size's default value, 010b = 512 bytes
# §2.2.6.2: outstanding non-posted requests per function by Tag field width: 5-bit tags (the
# default) 32, 8-bit (Extended Tag Field Enable) 256, 10-bit tags 768 (tags 256..1023).
TAGS_5BIT, TAGS_8BIT, TAGS_10BIT = 32, 256, 768
# §7.5.3.2 Device/Port Type, as lspci names them (pciutils ls-caps.c).
PORT_TYPES = {
    0: "Endpoint",
    1: "Legacy Endpoint",
    4: "Root Port",
    5: "Upstream Port",
    6: "Downstream Port",
    7: "PCI-Express to PCI/PCI-X Bridge",
    8: "PCI/PCI-X to PCI-Express Bridge",
    9: "Root Complex Integrated Endpoint",
    10: "Root Complex Event Collector",
}
NO_LINK = ("Root Complex Integrated Endpoint", "Root Complex Event Collector")
"""Functions whose capability has no link registers (§7.5.3)."""
DOWNSTREAM_PORTS = ("Root Port", "Downstream Port", "PCI/PCI-X to PCI-Express Bridge")
"""Ports whose link leads away from the CPU: their Link Capabilities are the slot's side."""


@dataclass(frozen=True)
class Express:
    """The PCI Express capability's fields, None where the source does not give one (an older
    lspci prints no 10-bit tag bits; a register lies beyond what could be read). Speeds in
    GT/s; `*_cap` fields are the capability registers, the others the control/status ones."""

    port_type: str | None = None
    mps_cap: int | None = None  # DevCap Max_Payload_Size Supported
    ext_tag_cap: bool | None = None  # DevCap Extended Tag Field Supported
    mps: int | None = None  # DevCtl Max_Payload_Size
    mrrs: int | None = None  # DevCtl Max_Read_Request_Size
    ext_tag: bool | None = None  # DevCtl Extended Tag Field Enable
    relaxed_ordering: bool | None = None  # DevCtl Enable Relaxed Ordering
    no_snoop: bool | None = None  # DevCtl Enable No Snoop
    speed_cap_gts: float | None = None  # LnkCap Max Link Speed
    lanes_cap: int | None = None  # LnkCap Maximum Link Width
    speed_gts: float | None = None  # LnkSta Current Link Speed
    lanes: int | None = None  # LnkSta Negotiated Link Width
    ten_bit_tag_cap: bool | None = None  # DevCap2 10-Bit Tag Requester Supported
    ten_bit_tag: bool | None = None  # DevCtl2 10-Bit Tag Requester Enable

    @property
    def gen(self) -> int | None:
        """The generation the link runs at (None: unknown speed)."""
        return gen_of(self.speed_gts)

    @property
    def gen_cap(self) -> int | None:
        """The generation the device supports at most."""
        return gen_of(self.speed_cap_gts)

    @property
    def downgraded(self) -> bool | None:
        """Whether the link runs below the capability in speed or width (None: either side of
        both is unknown), as lspci compares the two registers."""
        pairs = ((self.speed_gts, self.speed_cap_gts), (self.lanes, self.lanes_cap))
        known = [(now, cap) for now, cap in pairs if now is not None and cap is not None]
        if any(now < cap for now, cap in known):
            return True
        return False if len(known) == 2 else None

    @property
    def tags(self) -> int | None:
        """Outstanding read requests the Tag field allows (§2.2.6.2), None where unknown."""
        if self.ten_bit_tag:
            return TAGS_10BIT
        if self.ext_tag is None:
            return None
        return TAGS_8BIT if self.ext_tag else TAGS_5BIT

    @property
    def tags_source(self) -> str:
        """Which control bit gives `tags`."""
        if self.ten_bit_tag:
            return "10-bit tags enabled (DevCtl2)"
        return f"ExtTag{'+' if self.ext_tag else '-'} (DevCtl)"

    @property
    def has_link(self) -> bool:
        """Whether the capability has link registers (Root Complex integrated devices have
        none, §7.5.3)."""
        return self.speed_cap_gts is not None or self.lanes_cap is not None


def gen_of(speed_gts: float | None) -> int | None:
    """The generation of a data rate in GT/s (None: unknown)."""
    return None if speed_gts is None else GEN_OF_GTS.get(speed_gts)


def link_text(gen: int | None, lanes: int | None) -> str:
    """A link as `Gen3 x8` (`?` for an unknown part)."""
    return f"Gen{gen if gen is not None else '?'} x{lanes if lanes is not None else '?'}"
