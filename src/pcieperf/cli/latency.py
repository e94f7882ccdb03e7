"""`pcieperf latency`: one packet's loopback latency and the DMAs in flight a rate needs
(pcieperf.nic.api: `pp.latency`)."""

from __future__ import annotations

import argparse

from pcieperf.cli._common import ETH, _real, add_tag_options, link_options
from pcieperf.cli._output import emit
from pcieperf.cli._parser import _add_command
from pcieperf.cli.devices import add_device_options, apply_device, with_device
from pcieperf.net import wire
from pcieperf.nic import api
from pcieperf.nic.profile import DEFAULT_PROFILE


def cmd_latency(args: argparse.Namespace) -> None:
    """Where one packet's loopback latency goes (PCIe, device, wire, host), and the DMAs in
    flight that its rate needs against the device's tags, per frame size (the paper's Figure
    2; docs/latency.md)."""
    found = apply_device(args)
    options: tuple[str, ...] = ("profile", "sizes", "eth", "pps", "tags", "host")
    options += ("calibration", "read_ns", "write_ns", "cache", "set", "breakdown")
    result = api.latency(**{o: getattr(args, o) for o in options}, **link_options(args))
    emit(args, with_device(result, found))


def _add_latency_command(sub: argparse._SubParsersAction) -> None:
    """The `latency` command and its options."""
    p = _add_command(sub, "latency", cmd_latency, link=True)
    p.add_argument("--profile", default=DEFAULT_PROFILE, help="built-in name or a .toml file")
    p.add_argument("--sizes", default="64,128,256,512,1024,1500", help="frame sizes incl. FCS")
    p.add_argument("--eth", type=ETH, default=40, help=f"Ethernet Gb/s {wire.RATES_GBPS}")
    p.add_argument("--pps", default=None, help="rate for the concurrency (default: line rate)")
    add_tag_options(p)
    p.add_argument("--write-ns", type=_real(), default=None, help="posted write latency (ns)")
    p.add_argument(
        "--set", action="append", metavar="NAME=NS", help="an assumed parameter, e.g. poll_ns=100"
    )
    p.add_argument("--breakdown", action="store_true", help="every term of every size")
    add_device_options(p, "latency")
