"""The `capture` group: DPDK packet capture measured with real dpdk-testpmd and dpdk-dumpcap
(`pp.capture_run`, `pp.capture_runs`, `pp.capture_show`), and the capture path's model and its
calibration (cli/capture_model.py)."""

from __future__ import annotations

import argparse

from pcieperf.capture import lock, records, tools
from pcieperf.capture.path import FORMATS, SINKS
from pcieperf.cli._common import _real, _whole
from pcieperf.cli._output import emit
from pcieperf.cli._parser import _GROUPS, _add_command, _add_group
from pcieperf.cli.capture_model import _add_capture_model_commands
from pcieperf.cli.dpdk import SECONDS_PER_DAY


def cmd_capture_run(args: argparse.Namespace) -> None:
    """Measure a real DPDK capture: dpdk-testpmd forwards alone, then with dpdk-dumpcap.
    Stores the forwarding rate and CPU ns per packet with and without capture, copies, drops,
    records written and what the capture tool spent per record, and judges the study's four
    essentials (timestamps, ordering, merging, zero loss). Needs root (it reserves hugepages
    and mounts hugetlbfs, and undoes both) or --huge-dir."""
    result = records.capture_run(
        frame=args.frame,
        pcap=args.pcap,
        seconds=args.seconds,
        lcores=args.lcores,
        tool=args.tool,
        format=args.capture_format,
        snaplen=args.snaplen,
        ring_size=args.ring_size,
        sink=args.sink,
        out=args.out,
        force=args.force,
        huge_dir=args.huge_dir,
        wait=args.wait,
        port=args.port,
        direction="rx" if args.rx_only else "tx" if args.tx_only else "both",
        queue=args.queue,
        filter=args.filter,
        db=args.db,
    )
    emit(args, result)


def cmd_capture_runs(args: argparse.Namespace) -> None:
    """List stored capture runs."""
    emit(args, records.capture_runs(db=args.db))


def cmd_capture_show(args: argparse.Namespace) -> None:
    """Show one stored capture run and the study's four essentials as it showed them."""
    emit(args, records.capture_show(args.run_id, db=args.db))


def _add_capture_commands(sub: argparse._SubParsersAction) -> None:
    """The `capture` group."""
    capture_sub = _add_group(sub, "capture", _GROUPS["capture"])
    p = _add_command(capture_sub, "run", cmd_capture_run, store=True)
    p.add_argument(
        "--frame",
        type=_whole(),
        default=None,
        help="net_null frame bytes, FCS included (64; not with --pcap or --port)",
    )
    p.add_argument("--pcap", default=None, help="replay this capture instead (net_pcap)")
    p.add_argument(
        "--port",
        default=None,
        help="forward a real port's traffic instead: a PCI address bound to vfio-pci (or an "
        "mlx5), or a network interface (net_af_packet); docs/capture.md, 'A real port'",
    )
    direction = p.add_mutually_exclusive_group()
    by = {field: "--tool " + " or ".join(tools.able(field)) for field in tools.CHOOSABLE}
    direction.add_argument(
        "--rx-only", action="store_true", help=f"copy received packets only ({by['directions']})"
    )
    direction.add_argument(
        "--tx-only", action="store_true", help=f"copy sent packets only ({by['directions']})"
    )
    p.add_argument(
        "--queue", type=_whole(0), default=None, help=f"copy this queue only ({by['queues']})"
    )
    p.add_argument(
        "--filter",
        default=None,
        metavar="EXPR",
        help=f"copy what this libpcap filter lets through ({by['filters']})",
    )
    p.add_argument(
        "--seconds",
        type=_real(high=SECONDS_PER_DAY),
        default=3.0,
        help="each window (alone, capturing) lasts at least this long and two statistics periods",
    )
    p.add_argument("--lcores", type=_whole(), default=1, help="forwarding lcores, 1 or 2")
    names = tools.names()
    p.add_argument("--tool", choices=names, default=names[0], help="the capture tool")
    p.add_argument(
        "--capture-format",
        choices=FORMATS,
        default=None,
        help="what the tool writes (default: its own, the first it writes; pcap: dumpcap -P)",
    )
    p.add_argument("--snaplen", type=_whole(), default=None, help="bytes kept per packet")
    p.add_argument(
        "--ring-size", type=_whole(), default=2048, help="the tool's ring of copies (dumpcap -N)"
    )
    p.add_argument(
        "--sink",
        choices=SINKS,
        default="null",
        help="where the tool writes: /dev/null, a tmpfs file (read back, then removed), or --out",
    )
    p.add_argument("--out", default=None, help="keep the capture in this file (--sink file)")
    p.add_argument("--force", action="store_true", help="overwrite --out")
    p.add_argument("--huge-dir", default=None, help="a hugetlbfs mount to use (not root)")
    waiting = p.add_mutually_exclusive_group()
    waiting.add_argument(
        "--wait",
        type=_real(high=SECONDS_PER_DAY),
        default=lock.WAIT_S,
        metavar="SECONDS",
        help="wait this long for another capture run on this machine to finish (%(default)g)",
    )
    waiting.add_argument(
        "--no-wait",
        dest="wait",
        action="store_const",
        const=0.0,
        help="refuse at once if another capture run is going on",
    )
    _add_command(capture_sub, "runs", cmd_capture_runs, store=True)
    p = _add_command(capture_sub, "show", cmd_capture_show, store=True)
    p.add_argument("run_id", type=_whole(1), metavar="N", help="the run's id (capture runs)")
    _add_capture_model_commands(capture_sub)
