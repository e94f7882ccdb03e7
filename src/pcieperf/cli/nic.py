"""`pcieperf nic`: NIC/driver profiles priced per packet, for sizes, mixes or a capture
(pcieperf.nic.api: `pp.nic`)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from pcieperf.cli._common import (
    ETH,
    _add_trace_replay_options,
    add_tag_options,
    link_options,
    require_trace_for_companions,
)
from pcieperf.cli._output import emit, with_demand_plot
from pcieperf.cli._parser import _add_command
from pcieperf.cli.devices import add_device_options, apply_device, with_device
from pcieperf.net import wire
from pcieperf.nic import api
from pcieperf.nic.captures import nic_trace
from pcieperf.nic.profile import DEFAULT_PROFILE

if TYPE_CHECKING:
    from pcieperf.results import Report, Table


_NIC_OPTIONS: tuple[str, ...] = ("profile", "eth", "vlan", "sizes", "mix", "paths", "breakdown")
_NIC_OPTIONS += ("pps", "tags", "host", "calibration", "read_ns", "cache")


def nic_result(args: argparse.Namespace) -> Table:
    """`pp.nic` called with the `nic` options."""
    return api.nic(**{o: getattr(args, o) for o in _NIC_OPTIONS}, **link_options(args))


def cmd_nic(args: argparse.Namespace) -> None:
    """What a NIC/driver profile achieves per frame size or mix, or what a trace needs."""
    require_trace_for_companions(args)
    found = apply_device(args)
    if args.trace:
        emit(args, with_device(_nic_trace(args), found))
        return
    emit(args, with_device(nic_result(args), found))


def _nic_trace(args: argparse.Namespace) -> Report:
    """Nic --trace: the PCIe bandwidth a capture needs per window (`pp.nic_trace`)."""
    found = nic_trace(
        args.trace,
        profile=args.profile,
        paths=args.paths,
        window=args.window,
        skip_bad=args.skip_bad,
        **link_options(args),
    )
    return with_demand_plot(args, found)


def _add_nic_command(sub: argparse._SubParsersAction) -> None:
    """The `nic` command and its options."""
    p = _add_command(sub, "nic", cmd_nic, link=True)
    p.add_argument("--profile", default=DEFAULT_PROFILE, help="built-in name or a .toml file")
    p.add_argument("--eth", type=ETH, default=40, help=f"Ethernet Gb/s {wire.RATES_GBPS}")
    p.add_argument("--vlan", action="store_true", help="frames carry a VLAN tag on the wire")
    p.add_argument(
        "--sizes", default=None, help="frame sizes incl. FCS and named mixes, e.g. 64,256,1518,imix"
    )
    p.add_argument(
        "--mix",
        action="append",
        metavar="SIZE:COUNT,...",
        help="a frame-size histogram, e.g. 64:7,594:4,1518:1 (repeatable)",
    )
    p.add_argument("--paths", default="rx,tx", help="rx, tx or rx,tx (default both)")
    p.add_argument("--breakdown", action="store_true", help="per-operation cost per packet")
    p.add_argument("--pps", default=None, help="also report the PCIe bandwidth this rate needs")
    add_tag_options(p)
    _add_trace_replay_options(p)
    add_device_options(p, "nic")
