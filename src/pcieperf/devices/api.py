"""The public functions of the devices package: `pp.devices` (every PCI device of this machine
or of a saved lspci text, its link and settings, each NIC priced with findings) and
`pp.device_options` (the options `nic`, `latency`, `dpdk-fwd` and `iommu sim` take from one
device, with where each came from). Keyword arguments are named as the CLI's options."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pcieperf.devices.device import Device
from pcieperf.devices.inventory import Host, Inventory, load_inventory
from pcieperf.devices.options import COMMAND_OPTIONS
from pcieperf.devices.text import devices_table
from pcieperf.dpdk.port import DEFAULT_PORT
from pcieperf.errors import UsageError, param
from pcieperf.results import Columnar, Report, Table
from pcieperf.units import parse_cpu_list


def devices(
    *,
    lspci: str | Path | None = None,
    sysfs: str | Path = "/sys",
    pci_ids: str | Path | None = None,
    lcores: str | None = None,
    rxd: int = DEFAULT_PORT.rxd,
) -> Table:
    """Every PCI device of this machine (`sysfs`) or of a saved `lspci -vv` text (`lspci`, `-`
    for standard input): class, ids, driver, NUMA node, link now and at most, MPS, MRRS, tags,
    IOMMU group; each network controller priced on its link with findings (`advice`) at the
    Rx ring `rxd` and, with `lcores` (`0-3,8`), their NUMA node (`pcieperf devices`)."""
    from pcieperf.dpdk.port import PortSetup

    PortSetup(rxd=rxd, txd=rxd)  # the ring is checked as the IOMMU model checks it
    inventory = load_inventory(lspci=lspci, sysfs=sysfs, pci_ids=pci_ids)
    host = replace(inventory.host, lcores=_lcores(lcores, inventory), rxd=rxd)
    by_bdf = {d.bdf: d for d in inventory.devices}
    rows = [_row(d, by_bdf.get(d.parent or ""), host) for d in inventory.devices]
    return devices_table(rows, inventory)


def _lcores(text: str | None, inventory: Inventory) -> tuple[int, ...]:
    """The lcores named, each checked to be a CPU of this machine."""
    if text is None:
        return ()
    if inventory.host.cpu_nodes is None:
        raise UsageError(
            f"{param('lcores')} are this machine's CPUs: they do not go with {param('lspci')}"
        )
    cpus = parse_cpu_list(text, "lcores")
    known = inventory.host.cpu_nodes
    missing = [c for c in cpus if known and c not in known]
    if missing:
        raise UsageError(
            f"{param('lcores')} {text}: CPU {missing[0]} is none of this machine's "
            f"({len(known)} CPUs on {len(set(known.values()))} NUMA node(s))"
        )
    return tuple(cpus)


def _hex(value: int | None, digits: int = 4) -> str | None:
    """An id as lspci writes it (`8086`), None stays None."""
    return None if value is None else f"{value:0{digits}x}"


def _row(device: Device, port: Device | None, host: Host) -> dict[str, Any]:
    """One device's JSON row; a network controller's has its price and findings too."""
    e = device.express
    row: dict[str, Any] = {
        "bdf": device.bdf,
        "class": device.class_name,
        "class_code": _hex(device.class_code),
        "name": device.name,
        "vendor_id": _hex(device.vendor_id),
        "device_id": _hex(device.device_id),
        "driver": device.driver,
        "numa_node": device.numa_node,
        "express": device.has_express,
        "port_type": e.port_type if e else None,
        "gen": e.gen if e else None,
        "lanes": e.lanes if e else None,
        "gen_cap": e.gen_cap if e else None,
        "lanes_cap": e.lanes_cap if e else None,
        "speed_gts": e.speed_gts if e else None,
        "speed_cap_gts": e.speed_cap_gts if e else None,
        "downgraded": e.downgraded if e else None,
        "mps": e.mps if e else None,
        "mps_cap": e.mps_cap if e else None,
        "mrrs": e.mrrs if e else None,
        "ext_tag": e.ext_tag if e else None,
        "ext_tag_cap": e.ext_tag_cap if e else None,
        "ten_bit_tag": e.ten_bit_tag if e else None,
        "ten_bit_tag_cap": e.ten_bit_tag_cap if e else None,
        "relaxed_ordering": e.relaxed_ordering if e else None,
        "no_snoop": e.no_snoop if e else None,
        "tags": e.tags if e else None,
        "iommu_group": device.iommu_group,
        "iommu_mode": device.iommu_mode,
        "parent": device.parent,
        "notes": list(device.notes),
    }
    return row | _nic_row(device, port, host) if device.is_network else row


def _nic_row(device: Device, port: Device | None, host: Host) -> dict[str, Any]:
    """A network controller's price on its link and its findings (the models are imported for
    one with a link only: a machine without one, a VM, starts light)."""
    if device.has_express is False:
        return dict.fromkeys(NIC_KEYS) | {
            "limited_by": [],
            "limited_by_capable": [],
            "advice": ["no PCI Express link to price: it has no PCI Express capability"],
        }
    from pcieperf.devices.findings import findings
    from pcieperf.devices.pricing import price_nic
    from pcieperf.devices.settings import settings_of

    settings = settings_of(device, port)
    price = price_nic(settings)
    match = settings.match
    return {
        "nic": match.row.name if match.row else None,
        "nic_match": match.how,
        "profile": settings.value("profile"),
        "eth_gbps": price.options.get("eth") if price else settings.value("eth"),
        "pcie_gbps_up": price.pcie_gbps if price else None,
        "pcie_gbps_down": price.pcie_gbps if price else None,
        "ceiling_mpps_64": price.mpps_64 if price else None,
        "ceiling_mpps_64_capable": price.mpps_64_capable if price else None,
        "gen_capable": price.capable["gen"] if price else None,
        "lanes_capable": price.capable["lanes"] if price else None,
        "limited_by": price.limited_by if price else [],
        "limited_by_capable": price.limited_by_capable if price else [],
        "advice": findings(device, settings, price, port, host),
    }


def pcie_nics_present(sysfs: str | Path = "/sys") -> bool:
    """Whether this machine has a network controller with a PCI Express link (the report's
    devices section is on by default then)."""
    from pcieperf.devices.sysfs import pcie_network_devices

    return bool(pcie_network_devices(Path(sysfs)))


NIC_KEYS: tuple[str, ...] = (
    "nic",
    "nic_match",
    "profile",
    "eth_gbps",
    "pcie_gbps_up",
    "pcie_gbps_down",
)
NIC_KEYS += ("ceiling_mpps_64", "ceiling_mpps_64_capable", "gen_capable", "lanes_capable")
NIC_KEYS += ("limited_by", "limited_by_capable", "advice")
"""The keys a network controller's row adds, in order."""


@dataclass(frozen=True)
class DeviceOptions:
    """The options one command takes from a device: `options` to hand its API function (the
    given ones over the device's), and where each came from: `from_device` with its
    `evidence`, `given` (they override the device), `defaults` (the device gives none: why)."""

    bdf: str
    source: str
    options: dict[str, Any]
    from_device: dict[str, Any]
    evidence: dict[str, str]
    given: dict[str, Any]
    defaults: dict[str, str]

    def to_json(self) -> dict[str, Any]:
        """The provenance, as the commands' JSON holds it under `provenance`."""
        return {
            "bdf": self.bdf,
            "source": self.source,
            "from_device": self.from_device,
            "evidence": self.evidence,
            "given": self.given,
            "defaults": self.defaults,
        }

    def to_text(self) -> str:
        """The provenance in a few lines."""
        taken = ", ".join(f"{k} {v}" for k, v in self.from_device.items())
        lines = [f"device {self.bdf} ({self.source}): {taken or 'nothing'}"]
        lines += [f"  given, over the device's: {k} {v}" for k, v in self.given.items()]
        lines += [f"  {k}: the default ({why})" for k, why in self.defaults.items()]
        return "\n".join(lines)


def device_options(
    device: str,
    *,
    command: str = "nic",
    given: Mapping[str, Any] | None = None,
    lspci: str | Path | None = None,
    sysfs: str | Path = "/sys",
    pci_ids: str | Path | None = None,
) -> DeviceOptions:
    """The options `command` (`nic`, `latency`, `dpdk-fwd`, `iommu sim`) takes from `device`
    (`03:00.0`; this machine's, or `lspci`'s): its link, MPS, MRRS, tags, NIC profile and line
    rate; `given` options stand over the device's (`pcieperf nic --device 03:00.0 --gen 4`)."""
    from pcieperf.devices.settings import iommu_profile, settings_of

    if command not in COMMAND_OPTIONS:
        raise UsageError(f"command {command!r}: choose one of {', '.join(COMMAND_OPTIONS)}")
    inventory = load_inventory(lspci=lspci, sysfs=sysfs, pci_ids=pci_ids)
    found, port = inventory.find(device)
    settings = settings_of(found, port)
    names = COMMAND_OPTIONS[command]
    chosen = {k: v for k, v in (given or {}).items() if k in names and v is not None}
    from_device, evidence, defaults = {}, {}, {}
    for name in names:
        value = settings.value(name)
        unfit = iommu_profile(str(value))[1] if name == "profile" and command == "iommu sim" else ""
        if name in chosen:
            continue
        if value is not None and not unfit:
            from_device[name], evidence[name] = value, settings.found[name].source
        else:
            defaults[name] = unfit or settings.unknown.get(name, "")
    missing = [n for n in ("gen", "lanes") if n not in chosen and n not in from_device]
    if missing:
        why = settings.unknown.get(missing[0], "")
        raise UsageError(
            f"device {found.bdf} ({found.name or found.class_name}) gives no link: {why}; "
            f"give {' and '.join(param(n) for n in missing)}"
        )
    return DeviceOptions(
        found.bdf,
        inventory.source,
        from_device | chosen,
        from_device,
        evidence,
        chosen,
        defaults,
    )


def with_provenance(result: Table | Report, options: DeviceOptions) -> Table | Report:
    """`result` with where its device options came from: a `provenance` key in its JSON (in
    each row of a list) and a line of text."""
    block = options.to_json()
    if isinstance(result, Report):
        given = result.data
        data = {**given, "provenance": block} if isinstance(given, dict) else given
        return replace(result, data=data, text=f"{options.to_text()}\n{result.text}")
    data = result.data
    if isinstance(data, Columnar):
        count = len(next(iter(data.values.values()), []))
        data = Columnar({**data.values, "provenance": [block] * count})
    elif isinstance(data, list):
        data = [{**row, "provenance": block} for row in data]
    elif isinstance(data, dict):
        data = {**data, "provenance": block}
    return replace(result, data=data, title=f"{options.to_text()}\n{result.title}")
