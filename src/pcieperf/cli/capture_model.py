"""`pcieperf capture model`, `capture calibrate` and `capture probe`: the capture path as a
model, its calibration from stored runs and the machine's primitives that carry it to another
kind of machine (pcieperf.capture.model, pcieperf.capture.calibrate, pcieperf.capture.probe:
`pp.capture_model`, `pp.capture_calibrate`, `pp.capture_probe`)."""

from __future__ import annotations

import argparse

from pcieperf.capture import path
from pcieperf.capture.calibrate import capture_calibrate
from pcieperf.capture.here import AGAIN, MAX_AGAIN, SECONDS, TOOLS, capture_calibrate_here
from pcieperf.capture.lock import WAIT_S
from pcieperf.capture.model import capture_model
from pcieperf.capture.probe import REPEATS, capture_probe
from pcieperf.cli._common import ETH, _real, _whole
from pcieperf.cli._output import emit
from pcieperf.cli._parser import _add_command
from pcieperf.cli.dpdk import SECONDS_PER_DAY
from pcieperf.cli.dpdk_fwd import add_forwarding_setup, forwarding_options
from pcieperf.errors import UsageError
from pcieperf.net import wire

MODEL_OPTIONS = (
    "sizes",
    "design",
    "file_format",
    "sink",
    "sink_gbps",
    "direction",
    "capture_ports",
    "ports",
    "eth",
    "pps",
    "fwd_lcores",
    "capture_cores",
    "snaplen",
    "ring_size",
    "buffer_share",
    "pool_mbufs",
    "cache_mib",
    "profile",
    "fwd_ns",
    "from_run",
)
"""`pp.capture_model`'s keywords, each the option of the same name."""


def cmd_capture_model(args: argparse.Namespace) -> None:
    """Will a capture keep up, and what does it cost the forwarding? Capture and forwarding
    rates per frame size or mix, for the per-packet, batched or contiguous design, with bounds
    from the calibration's spread and what limits each (docs/capture.md)."""
    chosen = {name: getattr(args, name) for name in MODEL_OPTIONS}
    calibrated = {"calibration": args.calibration} if args.calibration else {}
    emit(args, capture_model(**chosen, **calibrated, db=args.db, **forwarding_options(args)))


def cmd_capture_calibrate(args: argparse.Namespace) -> None:
    """Fit the capture path's costs (CPU ns per packet of each thread) to stored capture runs,
    judge them by leaving one frame size out, and write the calibration file; with --here,
    first make the runs on this machine (a designed set, a few minutes; root and DPDK)."""
    if args.here:
        given = [flag for flag, value in (("RUNS", args.runs), ("--csv", args.csv)) if value]
        if given:
            raise UsageError(f"--here makes its own runs: leave out {given[0]}")
        result = capture_calibrate_here(
            output=args.output,
            force=args.force,
            seconds=args.seconds,
            tools=tuple(args.tools.split(",")),
            again=args.again,
            busy=args.busy,
            keep_starved=args.keep_starved,
            wait=args.wait,
            db=args.db,
        )
        emit(args, result)
        return
    if args.output is None:
        raise UsageError("give -o/--output, the calibration file to write (or --here)")
    result = capture_calibrate(
        args.runs,
        output=args.output,
        force=args.force,
        db=args.db,
        csv=args.csv,
        measured_on=args.measured_on,
        keep_starved=args.keep_starved,
    )
    emit(args, result)


def cmd_capture_probe(args: argparse.Namespace) -> None:
    """Time the primitives a capture path's costs are made of on this machine in about a
    second, without DPDK (cache line round trip, ring, copies warm and cold, a write into each
    sink), keep them per kind of machine, and let `capture model` carry a calibration made on
    another kind here (docs/capture.md#costs-that-travel)."""
    emit(args, capture_probe(fresh=args.fresh, repeats=args.repeats, db=args.db))


def _add_model_options(p: argparse.ArgumentParser) -> None:
    """What runs, what is copied and written, and where the costs come from."""
    p.add_argument("--sizes", default=path.CAPTURE_SIZES, help="frame sizes incl. FCS, or imix")
    p.add_argument("--design", choices=path.DESIGNS, default="batched", help="capture design")
    p.add_argument(
        "--file-format",
        choices=path.FORMATS,
        default=None,
        help="format written (default: pcap for per-packet, else pcapng)",
    )
    p.add_argument(
        "--sink",
        choices=path.MODEL_SINKS,
        default="null",
        help="where records go (a disk file: tmpfs with --sink-gbps the disk's)",
    )
    p.add_argument("--sink-gbps", type=_real(), default=None, help="the sink's bandwidth cap")
    p.add_argument("--direction", choices=tuple(path.DIRECTIONS), default="both", help="copied")
    p.add_argument("--capture-ports", type=_whole(1, 64), default=1, help="ports captured")
    p.add_argument("--ports", type=_whole(1, 64), default=2, help="ports forwarding")
    p.add_argument("--eth", type=ETH, default=10, help=f"Gb/s per port {wire.RATES_GBPS}")
    p.add_argument("--pps", default=None, help="packets offered over all ports (default: line)")
    p.add_argument("--fwd-lcores", type=_real(), default=2, help="forwarding lcores (CPUs)")
    p.add_argument(
        "--capture-cores",
        type=_real(),
        default=1,
        help="CPU share of the capture thread, at most the tool's capture threads (1)",
    )
    p.add_argument("--snaplen", type=_whole(0, 2**18), default=0, help="bytes kept (0: all)")
    p.add_argument("--ring-size", type=_whole(1, 2**20), default=2048, help="capture ring")
    p.add_argument(
        "--pool-mbufs",
        type=_whole(1, 2**32),
        default=None,
        help="capture pool (default: the tool's: dumpcap 2 x ring, pdump 65535)",
    )
    p.add_argument(
        "--cache-mib",
        type=_real(),
        default=None,
        help="cache the pool's lines keep (default: the calibration runs' probe)",
    )
    p.add_argument(
        "--buffer-share",
        type=_real(1),
        default=path.BUFFER_SHARE,
        help="contiguous: share of fixed costs paid per buffer, 0-1 (bounds take 0 and 1)",
    )
    p.add_argument("--profile", default="testpmd-fwd", help="the NIC's forwarding profile")
    add_forwarding_setup(p.add_argument_group("forwarding setup (as dpdk-fwd's)"))
    p.add_argument(
        "--fwd-ns", type=_real(), default=None, help="forwarding CPU ns per packet (default: cal.)"
    )
    p.add_argument(
        "--from-run",
        type=_whole(1),
        default=None,
        help="take the forwarding cost from stored capture run N (its CPU ns/packet alone)",
    )
    p.add_argument(
        "--calibration", default=None, help="`capture calibrate` file (default: shipped)"
    )


def _add_capture_model_commands(capture_sub: argparse._SubParsersAction) -> None:
    """`capture model` and `capture calibrate`, on the `capture` group's subparsers."""
    p = _add_command(capture_sub, "model", cmd_capture_model, link=True, store=True)
    _add_model_options(p)
    p = _add_command(capture_sub, "calibrate", cmd_capture_calibrate, store=True)
    p.add_argument("runs", nargs="*", type=_whole(0), help="stored run ids (default: all)")
    p.add_argument(
        "-o",
        "--output",
        default=None,
        help="calibration file to write (.toml; --here: default this machine's, for capture model)",
    )
    p.add_argument("--csv", default=None, help="read the runs from this export, not the store")
    p.add_argument("--measured-on", default=None, help="the machine in words (default: this one)")
    p.add_argument("--force", action="store_true", help="overwrite an existing file")
    p.add_argument(
        "--keep-starved",
        action="store_true",
        help="fit the runs a busy machine starved too (default: left out, each named)",
    )
    here = p.add_argument_group("--here: the runs made on this machine first")
    here.add_argument(
        "--here",
        action="store_true",
        help="run the designed set of capture runs here (root, DPDK; minutes), then fit them",
    )
    here.add_argument(
        "--seconds", type=_real(high=60), default=SECONDS, help="each run's windows (%(default)g)"
    )
    here.add_argument(
        "--tools",
        default=",".join(TOOLS),
        metavar="TOOL,...",
        help="the capture tools whose settings it runs (%(default)s)",
    )
    here.add_argument(
        "--again",
        type=_whole(0, MAX_AGAIN),
        default=AGAIN,
        metavar="ROUNDS",
        help="rounds of runs made again in the fitted placement (%(default)s; 0: none)",
    )
    here.add_argument("--busy", action="store_true", help="measure even if the machine is busy")
    here.add_argument(
        "--wait",
        type=_real(high=SECONDS_PER_DAY),
        default=WAIT_S,
        metavar="SECONDS",
        help="wait this long for another capture run on this machine (%(default)g)",
    )
    p = _add_command(capture_sub, "probe", cmd_capture_probe, store=True)
    p.add_argument("--fresh", action="store_true", help="measure again, not the kept probe")
    p.add_argument(
        "--repeats", type=_whole(1, 1000), default=REPEATS, help="each primitive's repeats"
    )
