"""One PCI function as pcieperf knows it, from sysfs or from lspci's text: its ids, class,
driver, NUMA node, IOMMU group, its PCI Express capability (`express.Express`) and where the
link above it leads (`parent`, the port whose Link Capabilities are the slot's)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pcieperf.devices.express import Express

BDF = re.compile(
    r"(?:(?P<domain>[0-9a-fA-F]{4,8}):)?(?P<bus>[0-9a-fA-F]{2}):(?P<dev>[0-9a-fA-F]{2})"
    r"\.(?P<fn>[0-7])"
)
"""A PCI address as lspci and sysfs write it: [domain:]bus:device.function, in hex."""
NETWORK_CLASS = 0x02  # PCI Code and ID Assignment Specification §1.3: base class 02h
PRICED_SUBCLASSES = (0x00, 0x07)  # 00h Ethernet, 07h InfiniBand: ports pcieperf prices
NETWORK_CLASS_NAMES = {
    "Ethernet controller": 0x00,
    "Infiniband controller": 0x07,
    "Fabric controller": 0x08,
    "Network controller": 0x80,
}
"""lspci's names of class 02h's subclasses (pci.ids `C 02`), for a text that prints no codes."""


def normal_bdf(text: str) -> str | None:
    """`text` as a full address, `0000:03:00.0` (lspci leaves out domain 0000), or None where
    it is no address."""
    found = BDF.fullmatch(text.strip())
    if found is None:
        return None
    domain = int(found["domain"] or "0", 16)
    return f"{domain:04x}:{found['bus'].lower()}:{found['dev'].lower()}.{found['fn']}"


@dataclass(frozen=True)
class Device:
    """A PCI function: None where the source does not say (lspci prints no ids without -n, no
    NUMA node on one-node machines; sysfs has no name). `has_express` is None where the
    capabilities could not be read; `express` holds the capability's fields where it has one.
    `notes` say what could not be read or was out of range, per device."""

    bdf: str
    class_name: str | None = None
    class_code: int | None = None  # base class and subclass: 0x0200
    name: str | None = None
    vendor_id: int | None = None
    device_id: int | None = None
    driver: str | None = None
    numa_node: int | None = None
    iommu_group: int | None = None
    iommu_mode: str | None = None
    has_express: bool | None = None
    express: Express | None = None
    parent: str | None = None  # the bridge or port above it
    secondary_bus: int | None = None  # a bridge's: the buses behind it
    subordinate_bus: int | None = None
    net_speed_mbps: int | None = None  # the port's negotiated Ethernet speed (sysfs net/*/speed)
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def domain_bus(self) -> tuple[str, int]:
        """Its domain and bus number, to find the bridge above it."""
        domain, bus, _ = self.bdf.split(":")
        return domain, int(bus, 16)

    @property
    def network_subclass(self) -> int | None:
        """Its subclass where it is a network controller (class 02h), else None."""
        if self.class_code is not None:
            return self.class_code & 0xFF if self.class_code >> 8 == NETWORK_CLASS else None
        return NETWORK_CLASS_NAMES.get(self.class_name or "")

    @property
    def is_network(self) -> bool:
        """Whether it is a network controller (class 02h)."""
        return self.network_subclass is not None

    @property
    def ids(self) -> str | None:
        """`vvvv:dddd`, or None where the source gives no ids."""
        if self.vendor_id is None or self.device_id is None:
            return None
        return f"{self.vendor_id:04x}:{self.device_id:04x}"
