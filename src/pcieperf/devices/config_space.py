"""A device's configuration space decoded as lspci decodes it: the header's ids, class and bus
numbers, the capability list walked to the PCI Express capability (ID 10h), and that
capability's device and link registers (`Express`). Offsets and fields are the PCI Express
Base Specification, Revision 6.0, §7.5.1 (header) and §7.5.3 (the PCI Express capability)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from pcieperf.devices.express import (
    LINK_WIDTHS,
    NO_LINK,
    PORT_TYPES,
    SIZES_BYTES,
    SPEED_GTS,
    Express,
)

HEADER_BYTES = 64
"""What a user without CAP_SYS_ADMIN reads of a device's sysfs `config` (Linux
drivers/pci/pci-sysfs.c, pci_read_config: 64 bytes, 128 for a CardBus bridge); the capability
list lies beyond it on nearly every device."""
CAP_LIST_BIT = 0x10  # §7.5.1.1.4 Status register bit 4: Capabilities List
CAP_POINTER = {0: 0x34, 1: 0x34, 2: 0x14}  # §7.5.1.1.11 by header type (2: CardBus)
EXPRESS_ID = 0x10  # §7.5.3: PCI Express Capability ID
MAX_CAPABILITIES = 48  # (256 - 64) / 4: a longer list loops (pciutils stops the same way)
EXPRESS_V2_BYTES = 0x2C  # §7.5.3: the capability up to DevCtl2 and DevSta2 (+28h..+2Bh)


@dataclass(frozen=True)
class ConfigHeader:
    """The header's facts (§7.5.1): ids, class code, header type, a bridge's bus numbers."""

    vendor_id: int
    device_id: int
    class_code: int  # base class and subclass: 0x0200
    header_type: int  # 0 endpoint, 1 PCI-PCI bridge, 2 CardBus bridge
    secondary_bus: int | None = None
    subordinate_bus: int | None = None


@dataclass(frozen=True)
class ConfigSpace:
    """What the bytes gave: the header (None under 64 bytes), the PCI Express capability (None:
    the device has none, or it could not be read: `express_read` says which) and notes on
    anything unreadable or out of range."""

    header: ConfigHeader | None
    express: Express | None
    express_read: bool  # False: the capability list could not be walked to its end
    notes: list[str] = field(default_factory=list)


Fetch = Callable[[int, int], bytes]
"""Reads `n` bytes of configuration space at an offset (fewer, or none, past what can be
read): a slice of a dump, or `os.pread` on a sysfs `config` file, which reads only those."""


def parse_config(data: bytes) -> ConfigSpace:
    """Decode configuration space bytes (an lspci hex dump, a file)."""
    return decode_config(lambda at, n: data[at : at + n])


def decode_config(fetch: Fetch) -> ConfigSpace:
    """Decode configuration space read through `fetch`: the header, then only the bytes the
    capability list and the PCI Express capability take (a VM traps every access)."""
    data = fetch(0, HEADER_BYTES)
    if len(data) < HEADER_BYTES:
        return ConfigSpace(None, None, False, [f"configuration space holds {len(data)} bytes"])
    header = _header(data)
    notes: list[str] = []
    if not data[0x06] & CAP_LIST_BIT:
        return ConfigSpace(header, None, True, notes)
    pointer_at = CAP_POINTER.get(header.header_type)
    if pointer_at is None:
        return ConfigSpace(header, None, False, [f"header type {header.header_type} is unknown"])
    where = _find_express(fetch, data[pointer_at] & 0xFC, notes)
    if where is None:
        return ConfigSpace(header, None, not notes, notes)
    return ConfigSpace(header, _express(fetch(where, EXPRESS_V2_BYTES), where, notes), True, notes)


def _u16(data: bytes, at: int) -> int:
    return int.from_bytes(data[at : at + 2], "little")


def _u32(data: bytes, at: int) -> int:
    return int.from_bytes(data[at : at + 4], "little")


def _header(data: bytes) -> ConfigHeader:
    """§7.5.1: ids at 00h/02h, class code at 0Ah (subclass) and 0Bh (base class), header type
    at 0Eh (bit 7: multi-function), a type-1 header's secondary and subordinate buses at 19h/1Ah."""
    kind = data[0x0E] & 0x7F
    bridge = kind == 1
    return ConfigHeader(
        vendor_id=_u16(data, 0x00),
        device_id=_u16(data, 0x02),
        class_code=_u16(data, 0x0A),
        header_type=kind,
        secondary_bus=data[0x19] if bridge else None,
        subordinate_bus=data[0x1A] if bridge else None,
    )


def _find_express(fetch: Fetch, pointer: int, notes: list[str]) -> int | None:
    """The offset of the PCI Express capability, walking the list from `pointer` (§7.5.1.1.11:
    each entry is an ID byte and the next pointer, whose two low bits are reserved); None where
    the list ends without one, with a note where it ran past the bytes readable or looped."""
    seen: set[int] = set()
    while pointer:
        entry = fetch(pointer, 2)
        if len(entry) < 2:
            notes.append(
                f"the capability list goes on at {pointer:#x}, past the bytes readable: "
                "PCI Express registers not read"
            )
            return None
        if pointer in seen or len(seen) >= MAX_CAPABILITIES:
            notes.append(f"the capability list loops at {pointer:#x}")
            return None
        seen.add(pointer)
        if entry[0] == EXPRESS_ID:
            return pointer
        pointer = entry[1] & 0xFC
    return None


def _express(cap: bytes, at: int, notes: list[str]) -> Express | None:
    """The capability's bytes `cap`, read at `at` (§7.5.3): PCI Express Capabilities (+02h),
    DevCap (+04h), DevCtl (+08h), LnkCap (+0Ch), LnkSta (+12h), and from version 2 on DevCap2
    (+24h), DevCtl2 (+28h)."""
    if len(cap) < 0x14:
        notes.append(f"the PCI Express capability at {at:#x} is cut short by the bytes read")
        return None
    flags = _u16(cap, 0x02)
    kind = PORT_TYPES.get((flags >> 4) & 0xF)
    devcap, devctl = _u32(cap, 0x04), _u16(cap, 0x08)
    found = Express(
        port_type=kind,
        mps_cap=_size(devcap & 0x7, "DevCap Max_Payload_Size Supported", notes),
        ext_tag_cap=bool(devcap & (1 << 5)),
        mps=_size((devctl >> 5) & 0x7, "DevCtl Max_Payload_Size", notes),
        mrrs=_size((devctl >> 12) & 0x7, "DevCtl Max_Read_Request_Size", notes),
        ext_tag=bool(devctl & (1 << 8)),
        relaxed_ordering=bool(devctl & (1 << 4)),
        no_snoop=bool(devctl & (1 << 11)),
    )
    if kind not in NO_LINK:
        lnkcap, lnksta = _u32(cap, 0x0C), _u16(cap, 0x12)
        found = replace(
            found,
            speed_cap_gts=_speed(lnkcap & 0xF, "LnkCap", notes),
            lanes_cap=_width((lnkcap >> 4) & 0x3F, "LnkCap", notes),
            speed_gts=_speed(lnksta & 0xF, "LnkSta", notes),
            lanes=_width((lnksta >> 4) & 0x3F, "LnkSta", notes),
        )
    if flags & 0xF >= 2 and len(cap) >= EXPRESS_V2_BYTES:
        devcap2, devctl2 = _u32(cap, 0x24), _u16(cap, 0x28)
        found = replace(
            found,
            ten_bit_tag_cap=bool(devcap2 & (1 << 17)),
            ten_bit_tag=bool(devctl2 & (1 << 12)),
        )
    return found


def _size(code: int, what: str, notes: list[str]) -> int | None:
    """128 << code bytes (§7.5.3.3/4); a reserved code (110b, 111b) is noted and unknown."""
    if code < len(SIZES_BYTES):
        return SIZES_BYTES[code]
    notes.append(f"{what} encoding {code:03b}b is reserved (PCIe §7.5.3.4): left unknown")
    return None


def _speed(code: int, register: str, notes: list[str]) -> float | None:
    """A link speed code as GT/s; an unknown code is noted (lspci prints `unknown`)."""
    if code not in SPEED_GTS:
        notes.append(f"{register} link speed code {code} is none PCIe defines: left unknown")
    return SPEED_GTS.get(code)


def _width(width: int, register: str, notes: list[str]) -> int | None:
    """A link width; 0 (a link that is not up) stays 0, one PCIe does not define is noted."""
    if width == 0 or width in LINK_WIDTHS:
        return width
    notes.append(f"{register} link width x{width} is none PCIe defines: left unknown")
    return None
