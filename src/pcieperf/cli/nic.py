"""`pcieperf nic`: NIC/driver profiles priced per packet, for sizes, mixes or a capture
(pcieperf.nic)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pcieperf.cli._common import (
    _add_trace_replay_options,
    _link,
    _warn,
    _whole,
    ethernet,
    nic,
    trace,
)
from pcieperf.cli._output import _emit, _emit_trace_demand
from pcieperf.cli._parser import _add_command
from pcieperf.errors import UsageError
from pcieperf.net import wire
from pcieperf.results import format_table
from pcieperf.units import parse_duration_ns, parse_rate

if TYPE_CHECKING:
    from pcieperf.net.ethernet import PacketMix
    from pcieperf.pcie.link import Link


def _mixes(args: argparse.Namespace) -> list[PacketMix]:
    mixes = (
        [ethernet.parse_mix(tok) for tok in args.sizes.split(",") if tok.strip()]
        if args.sizes
        else []
    )
    mixes += [ethernet.parse_mix(m) for m in args.mix or []]
    if not mixes:
        raise UsageError("give frame sizes with --sizes (e.g. 64,256,1518,imix) or --mix")
    return mixes


def _nic_paths(args: argparse.Namespace) -> tuple[str, ...]:
    """The --paths option, checked against the known DMA paths."""
    return nic.check_paths(tuple(p.strip() for p in args.paths.split(",")))


def _nic_result(
    args: argparse.Namespace, profile: nic.NicProfile, link: Link, paths: tuple[str, ...]
) -> nic.NicResult:
    """A NIC profile priced over the sizes and mixes asked for (the command and its sweep)."""
    eth = ethernet.Ethernet(args.eth, vlan=args.vlan)
    return nic.evaluate(profile, link, eth, _mixes(args), paths)


def cmd_nic(args: argparse.Namespace) -> None:
    """What a NIC/driver profile achieves per frame size or mix, or what a trace needs."""
    link = _link(args)
    profile = nic.load_profile(args.profile)
    paths = _nic_paths(args)  # checked before a trace is read
    if args.trace:
        captured = trace.read(args.trace, skip_bad=args.skip_bad)
        window = parse_duration_ns(args.window, "window")
        found = nic.trace_demand(profile, link, captured, window, paths)
        _emit_trace_demand(args, captured, found, {"profile": profile.name}, link)
        return
    result = _nic_result(args, profile, link, paths)
    pps = None if args.pps is None else parse_rate(args.pps)
    needed = result.needed_gbps(pps) if pps is not None else None
    if pps is not None:
        _warn_rate_over(pps, result.label, result.line_pps, "the line")
        _warn_rate_over(pps, result.label, result.pcie_max_pps, "the PCIe link")
    limits = result.limited_by
    rows = []
    for i, label in enumerate(result.label):
        row = {
            "size": int(label) if label.isdigit() else label,
            "mean_frame_bytes": result.mean_frame_bytes[i],
            "max_pps": result.max_pps[i],
            "pcie_max_pps": result.pcie_max_pps[i],
            "line_rate_pps": result.line_pps[i],
            "achievable_gbps": result.achievable_gbps[i],
            "line_rate_gbps": result.line_rate_gbps[i],
            "bottleneck": str(result.bottleneck[i]),
            "limited_by": limits[i],
            "pcie_up_gbps": result.pcie_up_gbps[i],
            "pcie_down_gbps": result.pcie_down_gbps[i],
            "up_bytes_per_pkt": result.up_bytes_per_pkt[i],
            "down_bytes_per_pkt": result.down_bytes_per_pkt[i],
            "up_tlps_per_pkt": result.up_tlps_per_pkt[i],
            "down_tlps_per_pkt": result.down_tlps_per_pkt[i],
        }
        if pps is not None:
            row |= {
                "pps": pps,
                "needed_up_gbps": needed[0][i],
                "needed_down_gbps": needed[1][i],
                "fits_pcie": bool(pps <= result.pcie_max_pps[i]),
                "fits_line": bool(pps <= result.line_pps[i]),
            }
        if args.breakdown:
            row["operations"] = [
                {
                    "path": s.path,
                    "what": s.op.what,
                    "initiator": s.op.initiator,
                    "up_bytes_per_pkt": float(result.per_packet(s.up_bytes)[i]),
                    "down_bytes_per_pkt": float(result.per_packet(s.down_bytes)[i]),
                }
                for s in result.shares
            ]
        rows.append(row)

    def human() -> str:
        device = f"\nNIC: {profile.device.name}" if profile.device else ""
        head = (
            f"{profile.name}: {profile.description}{device}\nGen{link.gen} x{link.lanes} "
            f"({link.tlp_gbps:.2f} Gb/s for TLPs per direction), {args.eth} GbE"
        )
        table = format_table(
            (
                "size",
                "Mpps",
                "Gb/s",
                "line Gb/s",
                "bottleneck",
                "limited by",
                "up Gb/s",
                "down Gb/s",
                "B up/pkt",
                "B down/pkt",
            ),
            [
                (
                    r["size"],
                    r["max_pps"] / 1e6,
                    r["achievable_gbps"],
                    r["line_rate_gbps"],
                    r["bottleneck"],
                    "+".join(r["limited_by"]),
                    r["pcie_up_gbps"],
                    r["pcie_down_gbps"],
                    r["up_bytes_per_pkt"],
                    r["down_bytes_per_pkt"],
                )
                for r in rows
            ],
        )
        parts = [head, table]
        if pps is not None:
            parts.append(f"\nat {pps / 1e6:.3f} Mpps:")
            parts.append(
                format_table(
                    ("size", "needs up Gb/s", "needs down Gb/s", "fits PCIe", "fits line"),
                    [
                        (
                            r["size"],
                            r["needed_up_gbps"],
                            r["needed_down_gbps"],
                            r["fits_pcie"],
                            r["fits_line"],
                        )
                        for r in rows
                    ],
                )
            )
        for r in rows if args.breakdown else []:
            parts.append(f"\nper packet at size {r['size']}:")
            parts.append(
                format_table(
                    ("path", "operation", "initiator", "B up", "B down"),
                    [
                        (
                            o["path"],
                            o["what"],
                            o["initiator"],
                            o["up_bytes_per_pkt"],
                            o["down_bytes_per_pkt"],
                        )
                        for o in r["operations"]
                    ],
                )
            )
        return "\n".join(parts)

    _emit(args, rows, human)


def _warn_rate_over(
    pps: float, labels: Sequence[str], capacity_pps: Sequence[float], what: str
) -> None:
    """Warn once when the rate asked for is above what `what` carries for some sizes."""
    over = [
        f"{label} (at most {cap / 1e6:.2f} Mpps)"
        for label, cap in zip(labels, capacity_pps, strict=True)
        if pps > cap
    ]
    if over:
        _warn(f"{pps / 1e6:.6g} Mpps is more than {what} carries for size {', '.join(over)}")


def _add_nic_command(sub: argparse._SubParsersAction) -> None:
    """The `nic` command and its options."""
    p = _add_command(sub, "nic", cmd_nic, link=True)
    p.add_argument("--profile", default="dpdk", help="built-in name or a .toml file")
    p.add_argument("--eth", type=_whole(), default=40, help=f"Ethernet Gb/s {wire.RATES_GBPS}")
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
    _add_trace_replay_options(p)
