"""The `dpdk` group: real dpdk-testpmd runs and the runs stored (pcieperf.measure.records:
`pp.dpdk_run`, `pp.dpdk_runs`)."""

from __future__ import annotations

import argparse

from pcieperf.cli._common import _real, _whole
from pcieperf.cli._output import emit
from pcieperf.cli._parser import _GROUPS, _add_command, _add_group
from pcieperf.cli.dpdk_fwd import _add_dpdk_fwd_command
from pcieperf.measure import records

SECONDS_PER_DAY = 86_400  # the longest `dpdk run`: a longer one is a typo (it was found hanging)


def cmd_dpdk_run(args: argparse.Namespace) -> None:
    """Run dpdk-testpmd on a virtual port (net_null or a replayed pcap), store its rates and
    Rx burst histogram."""
    result = records.dpdk_run(
        pcap=args.pcap,
        seconds=args.seconds,
        null_size=args.null_size,
        testpmd_args=args.testpmd_args,
        db=args.db,
    )
    emit(args, result)


def cmd_dpdk_runs(args: argparse.Namespace) -> None:
    """List stored testpmd runs."""
    emit(args, records.dpdk_runs(db=args.db))


def _add_dpdk_commands(sub: argparse._SubParsersAction) -> None:
    """The `dpdk` group."""
    dpdk_sub = _add_group(sub, "dpdk", _GROUPS["dpdk"])
    p = _add_command(dpdk_sub, "run", cmd_dpdk_run, store=True)
    source = p.add_mutually_exclusive_group()
    source.add_argument("--pcap", default=None, help="replay this capture (net_pcap, infinite_rx)")
    source.add_argument("--null", action="store_true", help="net_null packets (the default)")
    p.add_argument(
        "--seconds",
        type=_real(high=SECONDS_PER_DAY),
        default=3.0,
        help="forward at least this long, and until testpmd has measured a rate",
    )
    p.add_argument("--null-size", type=_whole(), default=64, help="net_null packet bytes")
    p.add_argument(
        "testpmd_args", nargs="*", metavar="-- ARGS", help="extra testpmd args, e.g. -- --burst=8"
    )
    _add_command(dpdk_sub, "runs", cmd_dpdk_runs, store=True)
    _add_dpdk_fwd_command(dpdk_sub, "fwd")  # `dpdk-fwd` in the group it belongs to (issue 16)
