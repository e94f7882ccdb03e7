"""`pcieperf dpdk-fwd`: the DPDK forwarding estimate (pcieperf.dpdk.forwarding)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from pcieperf.cli._common import (
    DEFAULT_PKT,
    DEFAULT_PPS,
    _add_trace_replay_options,
    _link,
    _real,
    _store,
    _warn,
    _whole,
    dpdk,
    dpdk_port,
    ethernet,
    nic,
    testpmd,
    trace,
)
from pcieperf.cli._output import _emit, _emit_trace_demand
from pcieperf.cli._parser import _add_command
from pcieperf.errors import UsageError
from pcieperf.net import wire
from pcieperf.results import format_table
from pcieperf.units import parse_batch_histogram, parse_duration_ns, parse_rate

if TYPE_CHECKING:
    from pcieperf.net.ethernet import PacketMix
    from pcieperf.pcie.link import Link


def cmd_dpdk_fwd(args: argparse.Namespace) -> None:
    """The VTune-recipe estimate of DPDK forwarding traffic, term by term."""
    link = _link(args)
    cfg, pps = _forwarding(args)
    mix = _forwarding_mix(args)
    if args.trace:
        _dpdk_fwd_trace(args, cfg, link)
        return
    profile = nic.load_profile(args.profile)
    est = dpdk.estimate(cfg, link, pps, profile, mix)
    rate = dpdk.forwarding_rate(cfg, link, ethernet.Ethernet(args.eth), profile, mix)
    if pps > est.max_pps:
        _warn(
            f"{pps / 1e6:.6g} Mpps needs {float(est.wire_up_gbps):.1f} Gb/s up and "
            f"{float(est.wire_down_gbps):.1f} Gb/s down, but Gen{link.gen} x{link.lanes} carries "
            f"{link.tlp_gbps:.1f} Gb/s per direction: at most {est.max_pps / 1e6:.2f} Mpps"
        )
    to_gbps = pps * 8 / 1e9
    out = {
        **({"from_run": args.from_run} if args.from_run else {}),
        "pps": pps,
        "pkt": None if mix else cfg.pkt_bytes,
        "frames": rate.label[0],
        "mean_frame_bytes": float(rate.mean_frame_bytes[0]),
        "mean_batch": cfg.batch,
        **{f"{m}_gbps": float(est.metric_gbps(m)) for m in dpdk.METRICS},
        "pcie_up_gbps": float(est.wire_up_gbps),
        "pcie_down_gbps": float(est.wire_down_gbps),
        "link_tlp_gbps": link.tlp_gbps,
        "pcie_max_pps": est.max_pps,
        "line_pps": float(rate.line_pps[0]),
        "max_pps": float(rate.max_pps[0]),
        "bottleneck": str(rate.bottleneck[0]),
        "limited_by": rate.limited_by[0],
        "profile": profile.name,
        "terms": [
            {
                "term": t.name,
                "metric": t.metric,
                "initiator": t.initiator,
                "data_bytes_per_pkt": t.data_bytes,
                "data_gbps": t.data_bytes * to_gbps,
                "wire_up_bytes_per_pkt": t.wire_up_bytes,
                "wire_down_bytes_per_pkt": t.wire_down_bytes,
                "wire_up_gbps": t.wire_up_bytes * to_gbps,
                "wire_down_gbps": t.wire_down_bytes * to_gbps,
            }
            for t in est.terms
        ],
    }

    def human() -> str:
        frames = (
            f"{mix.name} frames" if mix else f"{cfg.pkt_bytes} B packets ({out['frames']} B frames)"
        )
        head = (
            f"DPDK forwarding ({profile.name}) at {pps / 1e6:.3f} Mpps, {frames}, mean batch "
            f"{cfg.batch:.2f}, Gen{link.gen} x{link.lanes}"
        )
        metrics = format_table(
            ("metric", "Gb/s", "GB/s"),
            [(m, out[f"{m}_gbps"], out[f"{m}_gbps"] / 8) for m in dpdk.METRICS],
        )
        terms = format_table(
            ("term", "metric", "data B/pkt", "data Gb/s", "wire up Gb/s", "wire down Gb/s"),
            [
                (
                    t["term"],
                    t["metric"],
                    t["data_bytes_per_pkt"],
                    t["data_gbps"],
                    t["wire_up_gbps"],
                    t["wire_down_gbps"],
                )
                for t in out["terms"]
            ],
        )
        wire = (
            f"PCIe wire: up {out['pcie_up_gbps']:.2f} Gb/s, down {out['pcie_down_gbps']:.2f} "
            f"Gb/s of {link.tlp_gbps:.2f}; the link carries at most {est.max_pps / 1e6:.2f} Mpps"
        )
        limit = (
            f"on {args.eth:g} GbE at most {out['max_pps'] / 1e6:.2f} Mpps, limited by "
            f"{' + '.join(out['limited_by'])} (bottleneck {out['bottleneck']})"
        )
        return "\n".join([head, metrics, "", terms, wire, limit])

    _emit(args, out, human)


def _forwarding_mix(args: argparse.Namespace) -> PacketMix | None:
    """The frame-size mix of --mix (None without it); it replaces --pkt, and a stored run or a
    trace brings its own sizes."""
    if getattr(args, "mix", None) is None:
        return None
    given = [o for o, v in (("--pkt", args.pkt), ("--from-run", args.from_run)) if v is not None]
    given += ["--trace"] if getattr(args, "trace", None) else []
    if given:
        raise UsageError(f"--mix sets the frame sizes; drop {', '.join(given)}")
    return ethernet.parse_mix(args.mix)


def _forwarding(args: argparse.Namespace) -> tuple[dpdk.ForwardingConfig, float]:
    """The forwarding setup and packet rate the options describe; with --from-run RUN the
    rate, packet size and burst histogram are the run's."""
    run = _stored_run(args)
    if run is not None:
        pps, pkt, hist = run.rx_pps, run.pkt, run.batch_hist
    else:
        pps = parse_rate(DEFAULT_PPS if args.pps is None else args.pps)
        pkt = DEFAULT_PKT if args.pkt is None else args.pkt
        hist = parse_batch_histogram(args.batch_hist) if args.batch_hist else None
    cfg = dpdk.ForwardingConfig(
        pkt_bytes=pkt,
        rx_desc_bytes=args.rx_desc,
        tx_desc_bytes=args.tx_desc,
        rs_thresh=args.rs_thresh,
        rx_free_thresh=args.rx_free_thresh,
        batch=dpdk.batch_from_args(args.batch, hist),
        doorbell_bytes=args.doorbell_bytes,
        full_line_tx_writeback=args.tx_wb_full_line,
    )
    return cfg, pps


def _stored_run(args: argparse.Namespace) -> testpmd.StoredRun | None:
    """The run --from-run names (None without it); it measured what --pps, --pkt and --trace
    would set, so they may not be given as well."""
    if args.from_run is None:
        return None
    given = [o for o, v in (("--pps", args.pps), ("--pkt", args.pkt)) if v is not None]
    given += ["--trace"] if getattr(args, "trace", None) else []
    if given:
        raise UsageError(f"--from-run measures what {', '.join(given)} would set; give one")
    with _store(args) as store:
        return store.dpdk_run(args.from_run)


def _dpdk_fwd_trace(args: argparse.Namespace, cfg: dpdk.ForwardingConfig, link: Link) -> None:
    """dpdk-fwd --trace: batches from the trace's arrivals, each packet at its own size."""
    captured = trace.read(args.trace, skip_bad=args.skip_bad)
    window = parse_duration_ns(args.window, "window")
    poll = parse_duration_ns(args.poll, "poll period")
    fwd = dpdk.trace_forwarding(cfg, link, captured, window, poll, nic.load_profile(args.profile))
    extra = {
        "poll_ns": poll,
        "mean_batch": fwd.mean_batch,
        "batch_hist": {str(k): v for k, v in sorted(fwd.batch_hist.items())},
    }
    for metric, series in fwd.metric_gbps.items():
        extra[f"{metric}_gbps"] = float(series.mean())
        extra[f"peak_{metric}_gbps"] = float(series.max(initial=0))
    text = f"mean Tx batch {fwd.mean_batch:.2f} (PMD polling every {poll} ns)\n"
    _emit_trace_demand(args, captured, fwd.demand, extra, link, text)


def _add_forwarding_options(p: argparse.ArgumentParser) -> None:
    """The forwarding setup of dpdk-fwd and explain: rate, packet, descriptors, thresholds,
    batches (fixed, a histogram, or a stored `dpdk run`)."""
    p.add_argument("--pps", default=None, help="packet rate: 10e6, 10M, 14.88Mpps (default 10M)")
    p.add_argument(
        "--pkt", type=_whole(), default=None, help="packet bytes DMA'd, no FCS (default 64)"
    )
    d = dpdk_port.PortSetup()  # the one port setup's defaults, as the iommu commands have them
    p.add_argument("--rx-desc", type=_whole(), default=d.rx_desc_bytes, help="Rx descriptor bytes")
    p.add_argument("--tx-desc", type=_whole(), default=d.tx_desc_bytes, help="Tx descriptor bytes")
    p.add_argument("--rs-thresh", type=_whole(), default=d.rs_thresh, help="Tx RS-bit threshold")
    p.add_argument(
        "--rx-free-thresh", type=_whole(), default=d.rx_free_thresh, help="Rx free threshold"
    )
    group = p.add_mutually_exclusive_group()
    group.add_argument("--batch", type=_real(), default=None, help="mean burst size (default 32)")
    group.add_argument(
        "--batch-hist",
        default=None,
        metavar="BATCH:CALLS,...",
        help="Rx batch histogram, e.g. 0:1000,4:5000,8:200",
    )
    group.add_argument(
        "--from-run",
        type=_whole(),
        default=None,
        metavar="RUN",
        help="rate, packet size and batch histogram of a stored `dpdk run`",
    )
    p.add_argument("--db", default=None, help="store file for --from-run (default: user data dir)")
    p.add_argument("--doorbell-bytes", type=_whole(), default=4, help="bytes per tail write")
    p.add_argument(
        "--tx-wb-full-line",
        action="store_true",
        help="count each Tx write-back as a full 64 B line (partial-line write)",
    )
    p.add_argument(
        "--profile",
        default=dpdk.FORWARDING_PROFILE,
        help="forwarding NIC profile whose parameters these options set",
    )


def _add_dpdk_fwd_command(sub: argparse._SubParsersAction) -> None:
    """The `dpdk-fwd` command and its options."""
    p = _add_command(sub, "dpdk-fwd", cmd_dpdk_fwd, link=True)
    _add_forwarding_options(p)
    p.add_argument(
        "--mix",
        default=None,
        help="frame sizes incl. FCS instead of --pkt: imix, a size, or size:count,...",
    )
    p.add_argument("--eth", type=_whole(), default=40, help=f"Ethernet Gb/s {wire.RATES_GBPS}")
    _add_trace_replay_options(p)
    p.add_argument("--poll", default="1us", help="with --trace: the PMD's poll period")
