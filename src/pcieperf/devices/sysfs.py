"""The machine's PCI devices as Linux shows them in sysfs (`/sys/bus/pci/devices/*`: class,
ids, driver, NUMA node, link speed and width, IOMMU group and its type, configuration space),
and the host facts a NIC's findings need: hugepages reserved, which NUMA node each CPU is on.
Configuration space is read whole only by root (Linux pci-sysfs.c gives others 64 bytes):
what that leaves unread is said per device, never guessed."""

from __future__ import annotations

import os
import re
from dataclasses import replace
from pathlib import Path

from pcieperf.devices.config_space import HEADER_BYTES, ConfigSpace, decode_config
from pcieperf.devices.device import Device, normal_bdf
from pcieperf.devices.express import Express
from pcieperf.devices.pci_ids import PciIds

SYSFS = Path("/sys")
# Configuration space is read unbuffered, only the bytes the header, the capability list and the
# PCI Express capability take: the kernel reads each dword from the device (a VM traps every
# one), and a buffered read of 4 bytes fetched 4096 (7 ms per device on the test VM).
SPEED = re.compile(r"^(\d+(?:\.\d+)?) GT/s")  # `8.0 GT/s PCIe` (older kernels: `8 GT/s`)


def devices_folder(sysfs: Path) -> Path:
    """Where sysfs lists PCI devices."""
    return sysfs / "bus" / "pci" / "devices"


def read_devices(sysfs: Path, ids: PciIds) -> list[Device]:
    """Every PCI device sysfs lists, in address order."""
    folder = devices_folder(sysfs)
    entries = sorted(p for p in folder.iterdir() if normal_bdf(p.name)) if folder.is_dir() else []
    return [_device(path, sysfs, ids) for path in entries]


def _read(path: Path) -> str | None:
    """A sysfs attribute's text, None where the device has none (or it cannot be read)."""
    try:
        return path.read_text().strip()
    except OSError:  # absent, or an attribute the driver refuses (a link that is down: EINVAL)
        return None


def _number(path: Path, base: int = 10) -> int | None:
    """A sysfs attribute as a whole number, None where absent or no number."""
    text = _read(path)
    try:
        return None if text is None else int(text, base)
    except ValueError:
        return None


def _link_name(path: Path) -> str | None:
    """The name a sysfs symlink points to (a driver, an IOMMU group), None where absent."""
    try:
        return os.path.basename(os.readlink(path))
    except OSError:
        return None


def _device(path: Path, sysfs: Path, ids: PciIds) -> Device:
    """One device folder as a Device."""
    bdf = normal_bdf(path.name) or path.name
    class_code = _number(path / "class", 16)
    vendor_id, device_id = _number(path / "vendor", 16), _number(path / "device", 16)
    group = _link_name(path / "iommu_group")
    numa = _number(path / "numa_node")
    device = Device(
        bdf,
        class_code=None if class_code is None else class_code >> 8,
        vendor_id=vendor_id,
        device_id=device_id,
        class_name=None if class_code is None else ids.class_name(class_code >> 8),
        name=None if vendor_id is None or device_id is None else ids.name(vendor_id, device_id),
        driver=_link_name(path / "driver"),
        numa_node=numa if numa is not None and numa >= 0 else None,
        iommu_group=int(group) if group and group.isdigit() else None,
        iommu_mode=_read(sysfs / "kernel" / "iommu_groups" / group / "type") if group else None,
        parent=normal_bdf(Path(os.path.realpath(path)).parent.name),
        net_speed_mbps=_net_speed(path),
    )
    return _with_config(device, path)


def _net_speed(path: Path) -> int | None:
    """The negotiated speed (Mb/s) of the device's network interface, where a kernel driver
    has one up (ethtool's `Speed`; -1 or unreadable while the link is down)."""
    net = path / "net"
    for interface in sorted(net.iterdir()) if net.is_dir() else []:
        speed = _number(interface / "speed")
        if speed is not None and speed > 0:
            return speed
    return None


def _with_config(device: Device, path: Path) -> Device:
    """The device with its PCI Express capability from configuration space, or, where that is
    not readable whole, the link sysfs shows (the kernel reads it for everyone)."""
    try:
        with open(path / "config", "rb", buffering=0) as file:
            fd, size = file.fileno(), os.fstat(file.fileno()).st_size
            decoded = decode_config(lambda at, n: os.pread(fd, n, at))
            cut = size > HEADER_BYTES and not os.pread(fd, 1, HEADER_BYTES)
    except OSError as exc:
        decoded, cut = ConfigSpace(None, None, False), False
        notes = [f"configuration space unreadable: {os.strerror(exc.errno or 0)}"]
    else:
        notes = []
    notes += decoded.notes
    if cut:
        notes.append(
            f"only {HEADER_BYTES} of {size} bytes of configuration space are readable without "
            "root: MPS, MRRS and tags not read (run as root for them)"
        )
    link = _sysfs_link(path)
    header = decoded.header
    if header is not None:
        device = replace(
            device, secondary_bus=header.secondary_bus, subordinate_bus=header.subordinate_bus
        )
    if decoded.express is not None:
        return replace(device, express=decoded.express, has_express=True, notes=tuple(notes))
    if link is not None:  # Linux shows link attributes for PCI Express devices only
        return replace(device, express=link, has_express=True, notes=tuple(notes))
    known = decoded.express_read and header is not None
    return replace(device, has_express=False if known else None, notes=tuple(notes))


def _sysfs_link(path: Path) -> Express | None:
    """The link's speeds and widths from sysfs (`current_link_speed`, ...), None where the
    device has none (Linux shows them for PCI Express devices only)."""
    values = {
        name: _read(path / name)
        for name in ("current_link_speed", "current_link_width", "max_link_speed", "max_link_width")
    }
    if all(v is None for v in values.values()):
        return None
    return Express(
        speed_gts=_speed(values["current_link_speed"]),
        lanes=_whole(values["current_link_width"]),
        speed_cap_gts=_speed(values["max_link_speed"]),
        lanes_cap=_whole(values["max_link_width"]),
    )


def _speed(text: str | None) -> float | None:
    """`8.0 GT/s PCIe` as 8.0; `Unknown` or absent as None."""
    found = SPEED.match(text or "")
    return float(found[1]) if found else None


def _whole(text: str | None) -> int | None:
    """A width as a number, None where absent."""
    return int(text) if text is not None and text.isdigit() else None


def pcie_network_devices(sysfs: Path) -> list[str]:
    """The network controllers (class 02h) that sysfs shows a PCI Express link for, read from
    their class and link attributes alone."""
    folder = devices_folder(sysfs)
    found = []
    for path in sorted(folder.iterdir()) if folder.is_dir() else []:
        code = _number(path / "class", 16)
        if code is not None and code >> 16 == 0x02 and (path / "current_link_speed").exists():
            found.append(path.name)
    return found


def hugepages(sysfs: Path) -> dict[str, int]:
    """Hugepages reserved per size (`2048kB` -> pages), from /sys/kernel/mm/hugepages."""
    folder = sysfs / "kernel" / "mm" / "hugepages"
    sizes = sorted(folder.glob("hugepages-*")) if folder.is_dir() else []
    counts = {p.name.removeprefix("hugepages-"): _number(p / "nr_hugepages") for p in sizes}
    return {size: count for size, count in counts.items() if count is not None}


def cpu_nodes(sysfs: Path) -> dict[int, int]:
    """The NUMA node of each CPU (/sys/devices/system/node/node*/cpulist); empty where sysfs
    shows no nodes."""
    from pcieperf.units import parse_cpu_list

    nodes: dict[int, int] = {}
    for folder in sorted((sysfs / "devices" / "system" / "node").glob("node[0-9]*")):
        text = _read(folder / "cpulist")
        for cpu in parse_cpu_list(text) if text else []:
            nodes[cpu] = int(folder.name.removeprefix("node"))
    return nodes
