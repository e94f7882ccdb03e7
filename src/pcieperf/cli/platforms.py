"""`pcieperf platforms` and `iommu fit`: platform IOMMU profiles, shipped or fitted to a
user's counters (pcieperf.dpdk.platforms, pcieperf.measure.iommu_fit)."""

from __future__ import annotations

import argparse
from pathlib import Path

from pcieperf.cli._common import (
    _real,
    _whole,
    calibrate,
    counters,
    ethernet,
    iommu,
    iommu_fit,
    platforms,
)
from pcieperf.cli._output import _emit
from pcieperf.cli._parser import _add_command
from pcieperf.errors import require_new_file
from pcieperf.net import wire
from pcieperf.results import format_table
from pcieperf.units import parse_rate


def _iommu_inputs(args: argparse.Namespace) -> tuple[iommu.Platform, iommu.PortSetup]:
    """The platform (calibration, link, IOMMU overrides) and port setup the options describe."""
    platform = iommu.load_platform(
        Path(args.calibration),
        gen=args.gen,
        lanes=args.lanes,
        platform=args.platform,
        iotlb_entries=args.iotlb,
        iotlb_ways=args.iotlb_ways,
        replacement=args.replacement,
        pwc_entries=args.pwc,
        profile=args.profile,
    )
    setup = iommu.PortSetup(
        page=iommu.parse_page(args.page),
        rxd=args.rxd,
        txd=args.txd if args.txd is not None else args.rxd,
        pool=args.pool,
        cache=args.cache,
        queues=args.queues,
        ports=args.ports,
        cross_port=args.cross_port,
        rx_desc_bytes=args.rx_desc,
        tx_desc_bytes=args.tx_desc,
        rx_free_thresh=args.rx_free_thresh,
        tx_free_thresh=args.tx_free_thresh,
        rs_thresh=args.rs_thresh,
        burst=args.burst,
        layout=args.layout,
        iova=args.iova,
        poll_delay_us=args.poll_delay,
    )
    return platform, setup


def cmd_platforms(args: argparse.Namespace) -> None:
    """List the platform IOMMU profiles with their sources, or show one parameter by parameter
    (value, the range the evidence leaves open, kind of evidence, source)."""
    if args.name:
        profile = platforms.load_platform_profile(args.name, Path(args.calibration))
        out: object = profile.as_dict()

        def human() -> str:
            rows = [
                (k, f"{p.value:g}", f"{p.low:g}-{p.high:g}", p.kind, p.source)
                for k, p in profile.params.items()
            ]
            table = format_table(("parameter", "value", "range", "kind", "source"), rows)
            return f"{profile.name}: {profile.title}\n\n{table}"
    else:
        profiles = [
            platforms.load_platform_profile(n, Path(args.calibration))
            for n in platforms.builtin_platforms()
        ]
        out = [p.as_dict() for p in profiles]

        def human() -> str:
            rows = [
                (
                    p.name,
                    p.title,
                    f"{p.value('iommu.iotlb_entries')}",
                    f"{p.value('iommu.walkers')}",
                    ", ".join(sorted({q.kind for q in p.params.values()})),
                )
                for p in profiles
            ]
            return format_table(("platform", "title", "IOTLB", "walkers", "evidence"), rows)

    _emit(args, out, human)


def cmd_iommu_fit(args: argparse.Namespace) -> None:
    """Fit the host's IOTLB reach and walk throughput from its measured IOTLB counters
    (pcm-iio), the forwarding rate and the port setup, and write a platform profile of the
    host for --platform FILE."""
    if args.out:
        require_new_file(args.out, args.force)
    pps = parse_rate(args.pps)
    platform, setup = _iommu_inputs(args)
    samples = counters.parse(Path(args.counters), args.format)
    base = platforms.load_platform_profile(args.platform, Path(args.calibration))
    result = iommu_fit.fit(
        samples,
        stack=args.stack,
        pps=pps,
        setup=setup,
        traffic=iommu.Traffic(ethernet.parse_mix(args.pkt), ethernet.Ethernet(args.eth)),
        platform=platform,
        base=base,
        name=args.name,
        packets=args.packets,
    )
    payload = result.as_dict()
    if args.out:
        Path(args.out).write_text(platforms.platform_toml(result.profile), encoding="utf-8")
        payload["file"] = args.out

    _emit(args, payload, lambda: iommu_fit.fit_text(result, args.out))


def _add_iommu_options(p: argparse.ArgumentParser) -> None:
    """The port, traffic, link and IOMMU options every `iommu` subcommand takes."""
    d = iommu.PortSetup()
    p.add_argument("--page", default="4k", help="page size of mbufs and rings: 4k, 2m or 1g")
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
        choices=iommu.LAYOUTS,
        default=d.layout,
        help="dpdk: no mbuf crosses a page (DPDK's populate rule); packed: back to back",
    )
    p.add_argument(
        "--iova", choices=iommu.IOVA_MODES, default=d.iova, help="EAL IOVA mode (VA or PA)"
    )
    p.add_argument(
        "--poll-delay",
        type=_real(iommu.POLL_DELAY_MAX_US),
        default=d.poll_delay_us,
        help="us the lcore waits after each poll (Rx pacing)",
    )
    p.add_argument(
        "--platform",
        default=platforms.DEFAULT_PLATFORM,
        help=f"IOMMU/LLC profile: {', '.join(platforms.builtin_platforms())}, or a .toml file",
    )
    p.add_argument("--pkt", default="64", help="frame size incl. FCS, imix, or size:count,...")
    p.add_argument(
        "--eth", type=_whole(), default=40, help=f"Ethernet Gb/s per port {wire.RATES_GBPS}"
    )
    p.add_argument("--pace", type=_real(), default=None, help="Rx pacing: cap the Rx rate (Mpps)")
    p.add_argument("--gen", type=_whole(), default=3, help="PCIe generation")
    p.add_argument("--lanes", type=_whole(), default=8, help="PCIe lanes")
    p.add_argument(
        "--iotlb", type=_whole(), default=None, help="IOTLB entries (default: calibrated)"
    )
    p.add_argument("--iotlb-ways", type=_whole(), default=None, help="ways (default: fully assoc.)")
    p.add_argument("--replacement", choices=iommu.REPLACEMENTS, default=None, help="IOTLB policy")
    p.add_argument(
        "--pwc", type=_whole(), default=None, help="page-walk cache entries (default off)"
    )
    p.add_argument(
        "--profile",
        default=iommu.DEFAULT_PROFILE,
        help="forwarding NIC profile: the NIC's operations and [device] facts",
    )
    p.add_argument(
        "--calibration", default=str(calibrate.DEFAULT_CALIBRATION), help="calibration file (.toml)"
    )
    p.add_argument(
        "--packets", type=_whole(1, 10**9), default=iommu.PACKETS, help="simulated per run"
    )


def _add_platforms_command(sub: argparse._SubParsersAction) -> None:
    """The `platforms` command and its options."""
    p = _add_command(sub, "platforms", cmd_platforms)
    p.add_argument("name", nargs="?", help="show this platform (a name or a .toml file)")
    p.add_argument(
        "--calibration", default=str(calibrate.DEFAULT_CALIBRATION), help="calibration file (.toml)"
    )
