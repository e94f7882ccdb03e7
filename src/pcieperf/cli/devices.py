"""`pcieperf devices`: every PCI device of this machine (or of a saved lspci text), its link
and settings, each NIC priced with findings (pcieperf.devices.api: `pp.devices`); and
`--device BDF` for `nic`, `latency`, `dpdk-fwd` and `iommu sim`, which take the link, MPS, MRRS,
tags, NIC profile and line rate from a device, flags given standing over them."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from pcieperf.cli._common import _whole
from pcieperf.cli._output import emit
from pcieperf.cli._parser import _add_command
from pcieperf.devices.options import COMMAND_OPTIONS
from pcieperf.errors import UsageError

if TYPE_CHECKING:
    from pcieperf.devices.api import DeviceOptions
    from pcieperf.results import Report, Table


def cmd_devices(args: argparse.Namespace) -> None:
    """Every PCI device of this machine (sysfs) or of a saved `lspci -vv` text, and what its
    link costs each NIC. Per device: its link now and at most, MPS, MRRS, tags, NUMA node,
    IOMMU group; per network controller: the 64 B ceiling on its link and retrained, and
    findings with the numbers behind them."""
    from pcieperf.devices.api import devices

    found = devices(
        lspci=args.lspci, sysfs=args.sysfs, pci_ids=args.pci_ids, lcores=args.lcores, rxd=args.rxd
    )
    emit(args, found)


def _add_devices_command(sub: argparse._SubParsersAction) -> None:
    """The `devices` command and its options."""
    from pcieperf.dpdk.port import DEFAULT_PORT

    p = _add_command(sub, "devices", cmd_devices)
    p.add_argument(
        "--lspci", metavar="FILE", help="a saved `lspci -vv` text (- reads standard input)"
    )
    p.add_argument("--lcores", metavar="CPUS", help="the lcores DPDK runs on (0-3,8): NUMA check")
    p.add_argument(
        "--rxd", type=_whole(), default=DEFAULT_PORT.rxd, help="Rx ring size for the IOMMU cost"
    )
    p.add_argument("--sysfs", default="/sys", metavar="DIR", help="sysfs root (default /sys)")
    p.add_argument("--pci-ids", metavar="FILE", help="the PCI ID database (default: lspci's)")


def add_device_options(p: argparse.ArgumentParser, command: str) -> None:
    """`--device BDF` and `--lspci FILE` for `command`; the options a device gives get None as
    their default here, so that `apply_device` tells a flag given from one left out."""
    group = p.add_argument_group("device (its link, MPS, MRRS, tags, profile and line rate)")
    group.add_argument(
        "--device", metavar="BDF", help="take them from this PCI device (03:00.0); flags win"
    )
    group.add_argument("--lspci", metavar="FILE", help="the --device of a saved `lspci -vv` text")
    names = COMMAND_OPTIONS[command]
    defaults = {a.dest: a.default for a in p._actions if a.dest in names}
    for action in p._actions:  # their help still shows the default, which None now hides
        if action.dest in names and action.default is not None and action.help:
            action.help += f" (default: {action.default}, or --device's)"
    p.set_defaults(**dict.fromkeys(names), device_command=command, device_defaults=defaults)


def apply_device(args: argparse.Namespace) -> DeviceOptions | None:
    """Fill the options a device gives: from `--device` where a flag left one out, else from
    their defaults; returns where each came from (None without `--device`)."""
    names = COMMAND_OPTIONS[args.device_command]
    if args.device is None:
        if args.lspci is not None:
            raise UsageError("--lspci FILE is where --device BDF is read; give --device too")
        for name in names:
            if getattr(args, name) is None:
                setattr(args, name, args.device_defaults[name])
        return None
    from pcieperf.devices.api import device_options

    given = {name: getattr(args, name) for name in names if getattr(args, name) is not None}
    found = device_options(args.device, command=args.device_command, given=given, lspci=args.lspci)
    for name in names:
        setattr(args, name, found.options.get(name, args.device_defaults[name]))
    return found


def with_device(result: Table | Report, found: DeviceOptions | None) -> Table | Report:
    """The result with its device provenance, where `--device` was given."""
    if found is None:
        return result
    from pcieperf.devices.api import with_provenance

    return with_provenance(result, found)
