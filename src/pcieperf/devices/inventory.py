"""The devices of one input, this machine's sysfs or a saved lspci text, with the host facts
that go with it (hugepages and CPU nodes: this machine's only), and a device found by its
address together with the port above it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pcieperf.devices.device import Device, normal_bdf
from pcieperf.devices.lspci import parse_lspci, read_lspci_text
from pcieperf.devices.pci_ids import load_ids
from pcieperf.devices.sysfs import cpu_nodes, devices_folder, hugepages, read_devices
from pcieperf.dpdk.port import DEFAULT_PORT
from pcieperf.errors import UsageError, param


@dataclass(frozen=True)
class Host:
    """What the findings know of the machine: hugepages reserved per size and each CPU's NUMA
    node (None: not this machine's input, an lspci text), the lcores named, the Rx ring."""

    hugepages: dict[str, int] | None = None
    cpu_nodes: dict[int, int] | None = None
    lcores: tuple[int, ...] = ()
    rxd: int = DEFAULT_PORT.rxd


@dataclass(frozen=True)
class Inventory:
    """The devices of one input, where they come from and what is known of its host."""

    devices: list[Device]
    source: str  # `sysfs (/sys/bus/pci/devices)` or `lspci text FILE`
    host: Host

    def find(self, address: str) -> tuple[Device, Device | None]:
        """The device at `address` (`03:00.0` or `0000:03:00.0`) and the port above it."""
        bdf = normal_bdf(address)
        if bdf is None:
            raise UsageError(
                f"{param('device')} {address!r} is no PCI address; write it as lspci does: "
                "03:00.0 or 0000:03:00.0"
            )
        by_bdf = {d.bdf: d for d in self.devices}
        if bdf not in by_bdf:
            listed = ", ".join(d.bdf for d in self.devices[:8])
            more = f" and {len(self.devices) - 8} more" if len(self.devices) > 8 else ""
            raise UsageError(f"no device {bdf} in {self.source}; it has {listed}{more}")
        device = by_bdf[bdf]
        return device, by_bdf.get(device.parent or "")


def load_inventory(
    *,
    lspci: str | Path | None = None,
    sysfs: str | Path = "/sys",
    pci_ids: str | Path | None = None,
) -> Inventory:
    """The machine's devices from `sysfs` (with its hugepages and CPU nodes), or the devices
    of a saved `lspci -vv` text (`-`: standard input)."""
    if lspci is not None:
        shown = "standard input" if str(lspci) == "-" else str(lspci)
        text = read_lspci_text(lspci)
        return Inventory(parse_lspci(text, shown), f"lspci text {shown}", Host())
    root = Path(sysfs)
    folder = devices_folder(root)
    if not folder.is_dir():
        raise UsageError(
            f"{folder} is absent: this is no Linux machine with sysfs (or {param('sysfs')} is "
            f"wrong); give a saved `lspci -vv` with {param('lspci')}"
        )
    found = read_devices(root, load_ids(pci_ids))
    host = Host(hugepages=hugepages(root), cpu_nodes=cpu_nodes(root))
    return Inventory(found, f"sysfs ({folder})", host)
