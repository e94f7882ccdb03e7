"""The `iommu` group and `pcieperf platforms`: a DPDK port's IOMMU/IOTLB and DDIO behaviour,
ring-size gains and advice, and the platform IOMMU profiles, shipped or fitted to a user's
counters (pcieperf.iommu, pcieperf.measure.iommu_fit)."""

from __future__ import annotations

import argparse
from pathlib import Path

from pcieperf import progress
from pcieperf.cli._common import ETH, GEN, LANES, _real, _warn, _whole
from pcieperf.cli._output import emit
from pcieperf.cli._parser import _GROUPS, _add_command, _add_group
from pcieperf.cli.devices import add_device_options, apply_device, with_device
from pcieperf.dpdk.port import IOVA_MODES, LAYOUTS, POLL_DELAY_MAX_US, PortSetup
from pcieperf.errors import UsageError
from pcieperf.iommu.api import advise, gain, platforms, sim
from pcieperf.iommu.platform import OVERLOADS, REPLACEMENTS
from pcieperf.iommu.profiles import DEFAULT_PLATFORM, builtin_platforms
from pcieperf.iommu.setups import builtin_setups
from pcieperf.iommu.stream import PACKETS
from pcieperf.measure.api import iommu_fit
from pcieperf.measure.counters.formats import names as counter_formats
from pcieperf.net import wire
from pcieperf.nic.profile import DEFAULT_PROFILE
from pcieperf.pciebench.calibration_file import DEFAULT_CALIBRATION
from pcieperf.results import Report

IOMMU_OPTIONS = (
    *("page", "rxd", "txd", "pool", "cache", "queues", "ports", "cross_port", "rx_desc"),
    *("tx_desc", "rx_free_thresh", "tx_free_thresh", "rs_thresh", "burst", "layout", "iova"),
    *("poll_delay", "platform", "eth", "pace", "gen", "lanes", "iotlb", "iotlb_ways"),
    *("replacement", "pwc", "profile", "calibration", "packets", "setup", "offered"),
    "overload",
)
"""The options every `iommu` subcommand has besides the frame: `pp.iommu.inputs`'s keywords."""


def iommu_options(args: argparse.Namespace) -> dict:
    """The port, traffic, link and IOMMU options given, as the API's keyword arguments."""
    return {name: getattr(args, name) for name in IOMMU_OPTIONS} | {"frame": _frame(args)}


def _frame(args: argparse.Namespace) -> str:
    """--frame, or the deprecated --pkt, which here always meant the same frame (incl. FCS)."""
    if args.pkt is None:
        return args.frame
    _warn(f"--pkt is --frame in the iommu commands (a frame incl. FCS); use --frame {args.pkt}")
    return args.pkt


def cmd_platforms(args: argparse.Namespace) -> None:
    """List the platform IOMMU profiles with their sources, or show one parameter by parameter
    (value, the range the evidence leaves open, kind of evidence, source)."""
    emit(args, platforms(args.name, calibration=args.calibration))


def cmd_iommu_fit(args: argparse.Namespace) -> None:
    """Fit the host's IOTLB reach and walk throughput from its measured IOTLB counters
    (pcm-iio), the forwarding rate and the port setup, and write a platform profile of the
    host for --platform FILE."""
    result = iommu_fit(
        counters=args.counters,
        pps=args.pps,
        counters_format=args.counters_format,
        stack=args.stack,
        out=args.out,
        name=args.name,
        force=args.force,
        **iommu_options(args),
    )
    emit(args, result)


def _add_iommu_options(p: argparse.ArgumentParser) -> None:
    """The port, traffic, link and IOMMU options every `iommu` subcommand takes."""
    d = PortSetup()
    p.add_argument("--page", default=d.page, help="page size of mbufs and rings: 4k, 2m or 1g")
    p.add_argument("--rxd", type=_whole(), default=d.rxd, help="Rx descriptors per queue")
    p.add_argument(
        "--txd", type=_whole(), default=None, help="Tx descriptors per queue (default rxd)"
    )
    p.add_argument("--pool", type=_whole(), default=d.pool, help="mbufs in the pool")
    p.add_argument("--cache", type=_whole(), default=d.cache, help="per-lcore mempool cache")
    p.add_argument("--queues", type=_whole(), default=d.queues, help="queues per port")
    p.add_argument("--ports", type=_whole(), default=d.ports, help="ports")
    p.add_argument("--cross-port", action="store_true", help="forward to the next port")
    p.add_argument("--rx-desc", type=_whole(), default=d.rx_desc_bytes, help="Rx descriptor bytes")
    p.add_argument("--tx-desc", type=_whole(), default=d.tx_desc_bytes, help="Tx descriptor bytes")
    p.add_argument("--rx-free-thresh", type=_whole(), default=d.rx_free_thresh)
    p.add_argument("--tx-free-thresh", type=_whole(), default=d.tx_free_thresh)
    p.add_argument("--rs-thresh", type=_whole(), default=d.rs_thresh, help="Tx RS-bit threshold")
    p.add_argument("--burst", type=_whole(), default=d.burst, help="packets per rx/tx burst")
    p.add_argument(
        "--layout",
        choices=LAYOUTS,
        default=d.layout,
        help="dpdk: no mbuf crosses a page (DPDK's populate rule); packed: back to back",
    )
    p.add_argument("--iova", choices=IOVA_MODES, default=d.iova, help="EAL IOVA mode (VA or PA)")
    p.add_argument(
        "--poll-delay",
        type=_real(POLL_DELAY_MAX_US),
        default=d.poll_delay_us,
        help="us the lcore waits after each poll (Rx pacing)",
    )
    p.add_argument(
        "--platform",
        default=DEFAULT_PLATFORM,
        help=f"IOMMU/LLC profile: {', '.join(builtin_platforms())}, or a .toml file",
    )
    sizes = p.add_mutually_exclusive_group()
    sizes.add_argument(
        "--frame", default="64", help="Ethernet frame bytes incl. FCS, imix, or size:count,..."
    )
    sizes.add_argument("--pkt", default=None, help="deprecated: the same as --frame here")
    p.add_argument("--eth", type=ETH, default=40, help=f"Ethernet Gb/s per port {wire.RATES_GBPS}")
    p.add_argument("--pace", type=_real(), default=None, help="Rx pacing: cap the Rx rate (Mpps)")
    p.add_argument("--gen", type=GEN, default=3, help="PCIe generation")
    p.add_argument("--lanes", type=LANES, default=8, help="PCIe lanes")
    p.add_argument(
        "--iotlb", type=_whole(), default=None, help="IOTLB entries (default: calibrated)"
    )
    p.add_argument("--iotlb-ways", type=_whole(), default=None, help="ways (default: fully assoc.)")
    p.add_argument("--replacement", choices=REPLACEMENTS, default=None, help="IOTLB policy")
    p.add_argument(
        "--pwc", type=_whole(), default=None, help="page-walk cache entries (default off)"
    )
    p.add_argument(
        "--profile",
        default=DEFAULT_PROFILE,
        help="forwarding NIC profile: the NIC's operations and [device] facts",
    )
    p.add_argument(
        "--calibration", default=str(DEFAULT_CALIBRATION), help="calibration file (.toml)"
    )
    p.add_argument(
        "--packets",
        type=_whole(1, 10**9),
        default=None,
        help=f"simulated per timed run (default: until the rate is steady, at most {PACKETS})",
    )
    p.add_argument(
        "--setup",
        default=None,
        help=f"testbed: {', '.join(builtin_setups())} or a setup .toml (sets ports, pool, "
        "cache, pages, IOVA, link and --eth as its testpmd command line and NICs do)",
    )
    p.add_argument(
        "--overload",
        choices=OVERLOADS,
        default="tx-full",
        help="where walks beyond the walkers queue: the Tx ring fills, or NIC drops at the wire",
    )
    p.add_argument(
        "--offered",
        default="line",
        help="load the generator offers: line, a share of line rate (70%%) or Mpps (all ports)",
    )


def _add_platforms_command(sub: argparse._SubParsersAction) -> None:
    """The `platforms` command and its options."""
    p = _add_command(sub, "platforms", cmd_platforms)
    p.add_argument("name", nargs="?", help="show this platform (a name or a .toml file)")
    p.add_argument(
        "--calibration", default=str(DEFAULT_CALIBRATION), help="calibration file (.toml)"
    )


def iommu_sim_result(args: argparse.Namespace) -> Report:
    """`pp.iommu.sim` called with the `iommu sim` options."""
    return sim(**iommu_options(args))


def cmd_iommu_sim(args: argparse.Namespace) -> None:
    """IOTLB misses per packet and packet rate with and without the IOMMU for one setup."""
    if args.device is not None and args.setup is not None:
        raise UsageError("--setup and --device both give the link and the line rate; give one")
    found = apply_device(args)
    emit(args, with_device(iommu_sim_result(args), found))


def cmd_iommu_gain(args: argparse.Namespace) -> None:
    """Packet-rate gain from shrinking rxd/txd, per packet size, with the IOMMU on."""
    result = gain(
        from_rxd=args.from_rxd,
        from_txd=args.from_txd,
        to_rxd=args.to_rxd,
        to_txd=args.to_txd,
        sizes=args.sizes.split(","),
        **iommu_options(args),
    )
    emit(args, result)


def cmd_iommu_advise(args: argparse.Namespace) -> None:
    """Recommend the smallest change (rings, pool, pages, Rx pacing) that restores the rate
    forwarding reaches without an IOMMU (line rate or, below it, the link or device limit)."""
    result = advise(
        progress=lambda items: progress.wrap(items, "sweeping", "change"), **iommu_options(args)
    )
    if args.plot:
        from pcieperf.iommu.advice import Advice
        from pcieperf.report.plots import plot_advice

        advice = result.source_as(Advice)
        result = result.with_plot(plot_advice(advice, Path(args.plot), force=args.force))
    emit(args, result)


def _add_iommu_commands(sub: argparse._SubParsersAction) -> None:
    """The `iommu` group."""
    iommu_sub = _add_group(sub, "iommu", _GROUPS["iommu"])
    p = _add_command(iommu_sub, "sim", cmd_iommu_sim)
    _add_iommu_options(p)
    add_device_options(p, "iommu sim")
    p = _add_command(iommu_sub, "gain", cmd_iommu_gain)
    _add_iommu_options(p)
    p.add_argument("--from-rxd", type=_whole(), default=1024, help="ring size before")
    p.add_argument("--from-txd", type=_whole(), default=None, help="(default: --from-rxd)")
    p.add_argument("--to-rxd", type=_whole(), default=128, help="ring size after")
    p.add_argument("--to-txd", type=_whole(), default=None, help="(default: --to-rxd)")
    p.add_argument("--sizes", default="64,128,256,imix", help="frame sizes or mixes")
    p = _add_command(iommu_sub, "advise", cmd_iommu_advise)
    _add_iommu_options(p)
    p.add_argument("--plot", default=None, help="bar chart of the sweep (.png or .svg)")
    p.add_argument("--force", action="store_true", help="overwrite an existing plot file")
    p = _add_command(iommu_sub, "fit", cmd_iommu_fit)
    _add_iommu_options(p)
    p.add_argument("--counters", required=True, help="counter file with IOTLB misses (pcm-iio)")
    p.add_argument("--counters-format", default=None, choices=counter_formats(), help="its tool")
    p.add_argument("--stack", default=None, help="the NIC's IIO stack (default: the busy one)")
    p.add_argument("--pps", required=True, help="forwarded packets per second while measured")
    p.add_argument("-o", "--out", default=None, help="write the fitted profile (.toml)")
    p.add_argument("--name", default="fitted", help="name of the fitted profile")
    p.add_argument("--force", action="store_true", help="overwrite an existing profile file")
