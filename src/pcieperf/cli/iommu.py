"""The `iommu` group: a DPDK port's IOMMU/IOTLB and DDIO behaviour, ring-size gains and
advice (pcieperf.dpdk.iommu)."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from pcieperf import progress
from pcieperf.cli._common import _whole, counters, ethernet, iommu
from pcieperf.cli._output import _emit
from pcieperf.cli._parser import _GROUPS, _add_command, _add_group
from pcieperf.cli.platforms import _add_iommu_options, _iommu_inputs, cmd_iommu_fit
from pcieperf.results import format_table


def _iommu_text(r: dict) -> str:
    bounds = ", ".join(
        f"{k} {v:.1f}" for k, v in sorted(r["bounds_mpps"].items(), key=lambda kv: kv[1])
    )
    return "\n".join(
        [
            f"{r['mix']} B packets, {r['page']} pages, rxd/txd {r['rxd']}/{r['txd']}, pool "
            f"{r['pool']}, IOVA as {r['iova'].upper()}: {r['working_set_pages']} pages touched, "
            f"{r['iotlb_entries']}-entry IOTLB ({r['platform']})",
            f"  NIC                      {r['device']} ({r['profile']}, "
            f"{r['read_requests']} read requests)",
            f"  rings                    {_STATE_WORDS[r['state']]}",
            f"  IOTLB misses per packet  {r['iotlb_misses_per_pkt']:.3f} received, "
            f"{r['iotlb_misses_per_fwd_pkt']:.3f} forwarded",
            f"  line rate                {r['line_mpps']:.2f} Mpps",
            f"  nic model                {r['nic_mpps']:.2f} Mpps (`nic --profile {r['profile']}`: "
            "line and PCIe only)",
            f"  without IOMMU            {r['mpps_no_iommu']:.2f} Mpps, limited by "
            f"{' + '.join(r['limited_by_no_iommu']) or 'nothing reached'}",
            f"  with IOMMU               {r['mpps_iommu']:.2f} Mpps "
            f"(x{r['throughput_ratio']:.2f}, +{r['added_latency_ns']:.0f} ns per DMA, walkers "
            f"{100 * r['walker_utilization']:.0f} % busy)",
            f"  bottleneck               {r['bottleneck']}",
            f"  limited by               {' + '.join(r['limited_by']) or 'nothing reached'}",
            f"  bounds (Mpps)            {bounds}",
        ]
    )


_STATE_WORDS = {
    "light": "near empty",
    "rx-full": "Rx ring full: the lcores poll slower than the NIC receives",
    "tx-full": "Tx ring full: page walks hold the NIC's Tx DMA back; the lcores drop "
    "what tx_burst refuses",
    "both-full": "Rx and Tx rings full: the lcores poll slower than the NIC receives and "
    "still faster than it transmits",
}


def _iommu_sim_result(args: argparse.Namespace) -> iommu.IommuResult:
    """One setup of `iommu sim` evaluated (the command and its sweep)."""
    platform, setup = _iommu_inputs(args)
    traffic = iommu.Traffic(ethernet.parse_mix(args.pkt), ethernet.Ethernet(args.eth), args.pace)
    return iommu.Model(platform, traffic, args.packets).evaluate(setup)


def cmd_iommu_sim(args: argparse.Namespace) -> None:
    """IOTLB misses per packet and packet rate with and without the IOMMU for one setup."""
    result = _iommu_sim_result(args).as_dict()
    _emit(args, result, lambda: _iommu_text(result))


def cmd_iommu_gain(args: argparse.Namespace) -> None:
    """Packet-rate gain from shrinking rxd/txd, per packet size, with the IOMMU on."""
    platform, setup = _iommu_inputs(args)
    setup = replace(setup, rxd=args.from_rxd, txd=args.from_txd or args.from_rxd)
    mixes = [ethernet.parse_mix(token) for token in args.sizes.split(",")]
    rows = iommu.gain(
        platform,
        ethernet.Ethernet(args.eth),
        setup,
        args.to_rxd,
        args.to_txd or args.to_rxd,
        mixes,
        args.packets,
    )
    keys = (
        "size",
        "mpps_from",
        "mpps_to",
        "gain_pct",
        "misses_per_pkt_from",
        "misses_per_pkt_to",
        "state_from",
        "state_to",
    )
    _emit(args, rows, lambda: format_table(keys, [[r[k] for k in keys] for r in rows]))


def cmd_iommu_advise(args: argparse.Namespace) -> None:
    """Recommend the smallest change (rings, pool, pages, Rx pacing) that restores line rate."""
    from pcieperf.report.figures import plot_advice

    platform, setup = _iommu_inputs(args)
    traffic = iommu.Traffic(ethernet.parse_mix(args.pkt), ethernet.Ethernet(args.eth), args.pace)
    advice = iommu.advise(
        platform,
        traffic,
        setup,
        args.packets,
        progress=lambda items: progress.wrap(items, "sweeping", "change"),
    )
    payload = advice.as_dict()
    if args.plot:
        payload["plot"] = str(plot_advice(advice, Path(args.plot), force=args.force))

    def human() -> str:
        rows = [
            [o["change"], o["mpps_iommu"], o["iotlb_misses_per_pkt"]] for o in payload["options"]
        ]
        return "\n".join(
            [
                f"recommendation: {payload['recommendation']}",
                payload["reason"],
                format_table(("change", "Mpps", "misses/pkt"), rows),
            ]
        )

    _emit(args, payload, human)


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
    p.add_argument(
        "--counters-format", dest="format", default=None, choices=counters.SOURCES, help="its tool"
    )
    p.add_argument("--stack", default=None, help="the NIC's IIO stack (default: the busy one)")
    p.add_argument("--pps", required=True, help="forwarded packets per second while measured")
    p.add_argument("-o", "--out", default=None, help="write the fitted profile (.toml)")
    p.add_argument("--name", default="fitted", help="name of the fitted profile")
    p.add_argument("--force", action="store_true", help="overwrite an existing profile file")
