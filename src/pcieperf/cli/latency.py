"""`pcieperf latency`: one packet's loopback latency and the DMAs in flight a rate needs
(pcieperf.nic.latency)."""

from __future__ import annotations

import argparse
from pathlib import Path

from pcieperf.cli._common import _link, _real, _warn, _whole, ethernet, latency
from pcieperf.cli._output import _emit
from pcieperf.cli._parser import _add_command
from pcieperf.errors import UsageError
from pcieperf.net import wire
from pcieperf.results import format_table
from pcieperf.units import parse_int_list, parse_rate


def cmd_latency(args: argparse.Namespace) -> None:
    """Where one packet's loopback latency goes (PCIe, device, wire, host), and the DMAs in
    flight that its rate needs against the device's tags, per frame size (the paper's Figure
    2; docs/latency.md)."""
    sizes = parse_int_list(args.sizes, "frame size")
    result = latency.loopback(
        args.profile,
        sizes,
        _latency_host(args),
        _link(args),
        ethernet.Ethernet(args.eth),
        parse_rate(args.pps) if args.pps else None,
        _latency_params(args.set or []),
        tags=args.tags,
    )
    for note in result.host.notes:
        _warn(note)
    rows = latency.rows(result)

    def human() -> str:
        head = f"{result.profile}, {args.eth} GbE; host: {result.host.source}"
        table = format_table(
            ("size", "total ns", "PCIe ns", "PCIe %", "p99.9 ns", "in flight", "tags needed"),
            [
                (
                    r["size"],
                    r["total_ns"],
                    r["pcie_ns"],
                    100 * r["pcie_share"],
                    r["total_by_stat_ns"]["p99.9"],
                    r["inflight_needed"]["up"],
                    f"{r['tags_needed']:.1f} of {r['tags_available'] or 'unknown'}",
                )
                for r in rows
            ],
        )
        parts = [head, table]
        for r in rows if args.breakdown else []:
            parts.append(f"\nsize {r['size']}:")
            parts.append(
                format_table(
                    ("path", "term", "kind", "ns"),
                    [(t["path"], t["what"], t["kind"], t["ns"]) for t in r["terms"]],
                )
            )
        return "\n".join(parts)

    _emit(args, rows, human)


def _latency_host(args: argparse.Namespace) -> latency.HostLatency | None:
    """The host latency the options name: a pcie-bench directory, a calibration, given
    values, or None (the shipped calibration)."""
    if args.write_ns is not None and args.read_ns is None:
        raise UsageError("--write-ns goes with --read-ns; give both or neither")
    if args.cache != "HWarm" and not args.host:
        raise UsageError("--cache chooses a state of --host DIR's latency files; give --host")
    if args.host:
        return latency.host_from_dir(Path(args.host), args.cache)
    if args.calibration:
        return latency.host_from_calibration(Path(args.calibration))
    if args.read_ns is not None:
        return latency.host_from_values(args.read_ns, args.write_ns)
    return None


def _latency_params(items: list[str]) -> dict[str, float]:
    """--set NAME=NS items as a dict (names and values are checked by the model)."""
    params = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep:
            raise UsageError(f"--set {item!r}: write NAME=NS, e.g. poll_ns=100")
        try:
            params[name.strip()] = float(value)
        except ValueError:
            raise UsageError(f"--set {item!r}: {value!r} is not a number of ns") from None
    return params


def _add_latency_command(sub: argparse._SubParsersAction) -> None:
    """The `latency` command and its options."""
    p = _add_command(sub, "latency", cmd_latency, link=True)
    p.add_argument("--profile", default="bypass", help="built-in name or a .toml file")
    p.add_argument("--sizes", default="64,128,256,512,1024,1500", help="frame sizes incl. FCS")
    p.add_argument("--eth", type=_whole(), default=40, help=f"Ethernet Gb/s {wire.RATES_GBPS}")
    p.add_argument("--pps", default=None, help="rate for the concurrency (default: line rate)")
    p.add_argument("--tags", type=_whole(), default=None, help="outstanding read requests")
    host = p.add_mutually_exclusive_group()
    host.add_argument("--host", default=None, help="pcie-bench result directory (lat_* files)")
    host.add_argument("--calibration", default=None, help="a `bench calibrate` file")
    host.add_argument("--read-ns", type=_real(), default=None, help="64 B DMA read round trip")
    p.add_argument("--write-ns", type=_real(), default=None, help="posted write latency (ns)")
    p.add_argument("--cache", default="HWarm", help="--host cache state: HWarm or Cold")
    p.add_argument(
        "--set", action="append", metavar="NAME=NS", help="an assumed parameter, e.g. poll_ns=100"
    )
    p.add_argument("--breakdown", action="store_true", help="every term of every size")
