"""`pcieperf dpdk-fwd` (also `dpdk fwd`): the DPDK forwarding estimate (pcieperf.dpdk.api:
`pp.dpdk_forwarding`)."""

from __future__ import annotations

import argparse

from pcieperf.cli._common import (
    ETH,
    _add_trace_replay_options,
    _real,
    _whole,
    add_size_options,
    link_options,
    packet_bytes,
    require_trace_for_companions,
    size_option,
)
from pcieperf.cli._output import emit, with_demand_plot
from pcieperf.cli._parser import _add_command
from pcieperf.cli.devices import add_device_options, apply_device, with_device
from pcieperf.dpdk.api import dpdk_forwarding, dpdk_fwd_trace
from pcieperf.dpdk.port import PortSetup
from pcieperf.errors import UsageError
from pcieperf.measure.api import stored_run
from pcieperf.net import wire
from pcieperf.nic.profile import DEFAULT_PROFILE

FORWARDING_OPTIONS = (
    "rx_desc",
    "tx_desc",
    "rs_thresh",
    "rx_free_thresh",
    "batch",
    "batch_hist",
    "doorbell_bytes",
    "tx_wb_full_line",
)
"""The forwarding setup's options: `pcieperf.dpdk.api.forwarding_config`'s keywords."""


def forwarding_options(args: argparse.Namespace) -> dict:
    """The forwarding setup and link options given, as the API's keyword arguments."""
    return {o: getattr(args, o) for o in FORWARDING_OPTIONS} | link_options(args)


def cmd_dpdk_fwd(args: argparse.Namespace) -> None:
    """The VTune-recipe estimate of DPDK forwarding traffic, term by term."""
    found = apply_device(args)
    run = "--from-run" if args.from_run is not None else None
    if args.mix is not None and (mixed := _given(args, size_option(args), run)):
        raise UsageError(f"--mix sets the frame sizes; drop {', '.join(mixed)}")
    pps, pkt, options = args.pps, packet_bytes(args), forwarding_options(args)
    if args.from_run is not None:
        given = _given(args, "--pps" if pps is not None else None, size_option(args))
        stored = stored_run(args.from_run, args.db, given)
        pps, pkt, options["batch_hist"] = stored.rx_pps, stored.pkt, stored.batch_hist
    require_trace_for_companions(args)
    if args.trace:
        fwd = dpdk_fwd_trace(
            args.trace,
            window=args.window,
            poll=args.poll,
            profile=args.profile,
            skip_bad=args.skip_bad,
            pkt=pkt,
            **options,
        )
        emit(args, with_device(with_demand_plot(args, fwd), found))
        return
    result = dpdk_forwarding(
        pps=wire.DEFAULT_PPS if pps is None else pps,
        pkt=pkt,
        mix=args.mix,
        eth=args.eth,
        profile=args.profile,
        from_run=args.from_run,
        **options,
    )
    emit(args, with_device(result, found))


def _given(args: argparse.Namespace, *names: str | None) -> tuple[str, ...]:
    """The options named (None: not given), and --trace if it was given."""
    given = tuple(name for name in names if name)
    return given + (("--trace",) if getattr(args, "trace", None) else ())


def add_forwarding_setup(
    p: argparse.ArgumentParser | argparse._ArgumentGroup,
) -> argparse._MutuallyExclusiveGroup:
    """The forwarding setup's options (FORWARDING_OPTIONS: descriptors, thresholds, batches,
    doorbells), as dpdk-fwd, explain and capture model take them; the group of the batch
    options, for another way to give the batch."""
    d = PortSetup()  # the one port setup's defaults, as the iommu commands have them
    p.add_argument("--rx-desc", type=_whole(), default=d.rx_desc_bytes, help="Rx descriptor bytes")
    p.add_argument("--tx-desc", type=_whole(), default=d.tx_desc_bytes, help="Tx descriptor bytes")
    p.add_argument("--rs-thresh", type=_whole(), default=d.rs_thresh, help="Tx RS-bit threshold")
    p.add_argument(
        "--rx-free-thresh", type=_whole(), default=d.rx_free_thresh, help="Rx free threshold"
    )
    p.add_argument("--doorbell-bytes", type=_whole(), default=4, help="bytes per tail write")
    p.add_argument(
        "--tx-wb-full-line",
        action="store_true",
        help="count each Tx write-back as a full 64 B line (partial-line write)",
    )
    group = p.add_mutually_exclusive_group()
    group.add_argument("--batch", type=_real(), default=None, help="mean burst size (default 32)")
    group.add_argument(
        "--batch-hist",
        default=None,
        metavar="BATCH:CALLS,...",
        help="Rx batch histogram, e.g. 0:1000,4:5000,8:200",
    )
    return group


def _add_forwarding_options(
    p: argparse.ArgumentParser | argparse._ArgumentGroup, defaults: bool = True
) -> None:
    """The forwarding setup of dpdk-fwd and explain: rate, frame, descriptors, thresholds,
    batches (fixed, a histogram, or a stored `dpdk run`); `defaults`: whether a rate and frame
    not given have defaults (explain needs the ones the counters were measured at)."""
    pps = f"{wire.DEFAULT_PPS / 1e6:g}M"
    default = f" (default {pps})" if defaults else " (required, or --from-run)"
    p.add_argument("--pps", default=None, help=f"packet rate: 10e6, 10M, 14.88Mpps{default}")
    add_size_options(p, wire.DEFAULT_FRAME_BYTES if defaults else None)
    group = add_forwarding_setup(p)
    group.add_argument(
        "--from-run",
        type=_whole(),
        default=None,
        metavar="RUN",
        help="rate, packet size and batch histogram of a stored `dpdk run`",
    )
    p.add_argument("--db", default=None, help="store file for --from-run (default: user data dir)")
    p.add_argument(
        "--profile",
        default=DEFAULT_PROFILE,
        help="forwarding NIC profile whose parameters these options set",
    )


def _add_dpdk_fwd_command(sub: argparse._SubParsersAction, name: str = "dpdk-fwd") -> None:
    """The `dpdk-fwd` command and its options (also `dpdk fwd`: `name` in the dpdk group)."""
    p = _add_command(sub, name, cmd_dpdk_fwd, link=True)
    _add_forwarding_options(p)
    p.add_argument(
        "--mix",
        default=None,
        help="frame sizes incl. FCS instead of --frame: imix, a size, or size:count,...",
    )
    p.add_argument("--eth", type=ETH, default=40, help=f"Ethernet Gb/s {wire.RATES_GBPS}")
    _add_trace_replay_options(p)
    p.add_argument("--poll", default="1us", help="with --trace: the PMD's poll period")
    add_device_options(p, "dpdk-fwd")
