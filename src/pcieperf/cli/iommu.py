"""The `iommu` group: a DPDK port's IOMMU/IOTLB and DDIO behaviour, ring-size gains and
advice (pcieperf.dpdk.iommu)."""

from __future__ import annotations

import argparse
from pathlib import Path

from pcieperf import progress
from pcieperf.cli._common import _whole
from pcieperf.cli._output import emit
from pcieperf.cli._parser import _GROUPS, _add_command, _add_group
from pcieperf.cli.platforms import _add_iommu_options, cmd_iommu_fit, iommu_options
from pcieperf.dpdk.api import advise, gain, sim
from pcieperf.measure.counters.formats import names as counter_formats
from pcieperf.results import Report


def iommu_sim_result(args: argparse.Namespace) -> Report:
    """`pp.iommu.sim` called with the `iommu sim` options (`sweep` evaluates its points so)."""
    return sim(**iommu_options(args))


def cmd_iommu_sim(args: argparse.Namespace) -> None:
    """IOTLB misses per packet and packet rate with and without the IOMMU for one setup."""
    emit(args, iommu_sim_result(args))


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
        from pcieperf.dpdk.iommu.advise import Advice
        from pcieperf.report.plots import plot_advice

        advice = result.source_as(Advice)
        result = result.with_plot(plot_advice(advice, Path(args.plot), force=args.force))
    emit(args, result)


def _add_iommu_commands(sub: argparse._SubParsersAction) -> None:
    """The `iommu` group."""
    iommu_sub = _add_group(sub, "iommu", _GROUPS["iommu"])
    p = _add_command(iommu_sub, "sim", cmd_iommu_sim)
    _add_iommu_options(p)
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
