"""The real port a capture run forwards on (`capture run --port`): a PCI device that a DPDK
driver can drive (bound to vfio-pci or another userspace I/O driver, or a bifurcated mlx5 that
stays with its kernel driver), or a kernel network interface through DPDK's net_af_packet.
Each is checked in sysfs before anything starts, and refused in one line saying how to fix it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from pcieperf.errors import UsageError, param

SYSFS = Path("/sys")
# Drivers DPDK drives a device through (doc/guides/linux_gsg/linux_drivers.rst): the
# userspace I/O ones, and the kernel drivers of the bifurcated NICs (mlx5: its PMD works beside
# mlx5_core, doc/guides/platform/mlx5.rst).
USERSPACE_DRIVERS = ("vfio-pci", "uio_pci_generic", "igb_uio")
BIFURCATED_DRIVERS = ("mlx5_core",)
_PCI = re.compile(r"(?:([0-9a-fA-F]{4}):)?([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])")
SEPARATORS = ",=[];"  # rte_kvargs splits a device argument at , and =, and reads [..] as a list


@dataclass(frozen=True)
class Port:
    """A real port: its `kind` (`pci` or `af_packet`) and `device` (the PCI address, domain
    included, or the interface's name)."""

    kind: str
    device: str

    def eal_args(self, queues: int) -> list[str]:
        """EAL's options that make testpmd drive the port with `queues` Rx and Tx queues: the PCI
        device allowed (every other one left alone), or the interface as a net_af_packet
        virtual device with a queue pair per queue."""
        if self.kind == "pci":
            return [f"--allow={self.device}"]
        return ["--no-pci", f"--vdev={self.name},iface={self.device},qpairs={queues}"]

    @property
    def name(self) -> str:
        """The port's name in DPDK (what dpdk-dumpcap's -i takes): a PCI device's address, a
        virtual device's driver and index."""
        return self.device if self.kind == "pci" else "net_af_packet0"


def port(given: str, sysfs: Path = SYSFS) -> Port:
    """The port named `given`: a PCI address (`0000:01:00.0` or `01:00.0`) of a device DPDK can
    drive, or an existing network interface; anything else one line saying what to do."""
    if match := _PCI.fullmatch(given):
        domain, bus, slot, function = match.groups()
        address = f"{domain or '0000'}:{bus}:{slot}.{function}".lower()
        return Port("pci", _checked_pci(address, sysfs))
    if (sysfs / "class" / "net" / given).exists() and given not in (".", ".."):
        if any(c in SEPARATORS for c in given):
            raise UsageError(
                f"{param('port')} {given}: DPDK cannot name an interface with one of "
                f"{SEPARATORS!r} in a device argument; rename it (`ip link set NAME name NEW`)"
            )
        return Port("af_packet", given)
    raise UsageError(
        f"{param('port')} {given} is neither a PCI address (like 0000:01:00.0; "
        "`dpdk-devbind.py --status` lists them) nor a network interface here (`ip link`)"
    )


def _checked_pci(address: str, sysfs: Path) -> str:
    """The address of a PCI device that exists and is bound to a driver DPDK drives it with."""
    device = sysfs / "bus" / "pci" / "devices" / address
    bind = f"bind it with `dpdk-devbind.py --bind=vfio-pci {address}` (after `modprobe vfio-pci`)"
    if not device.exists():
        raise UsageError(
            f"{param('port')} {address}: no such PCI device here ({device} is missing); "
            "`dpdk-devbind.py --status` lists the network devices"
        )
    driver = device / "driver"
    if not driver.exists():
        raise UsageError(f"{param('port')} {address} is bound to no driver: {bind}")
    bound = driver.resolve().name
    if bound not in USERSPACE_DRIVERS + BIFURCATED_DRIVERS:
        # its interfaces: under the device, or a virtio device's under its virtioN child
        names = sorted({p.name for p in [*device.glob("net/*"), *device.glob("*/net/*")]})
        interface = f"its interface {' or '.join(names)}" if names else "its interface"
        raise UsageError(
            f"{param('port')} {address} is bound to {bound}, a kernel driver DPDK cannot "
            f"share: {bind}, or give {interface} to capture through net_af_packet"
        )
    return address
