"""What the command modules share: the link options and their parsing, the size, scheduler,
trace-replay and counter-file options, and warnings in the CLI's voice. The models these
options name are imported where an option is added or parsed, so that `--help` and the light
commands start without them (tests/test_startup_footprint.py)."""

from __future__ import annotations

import argparse
import math
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING

from pcieperf.errors import PcieperfWarning, UsageError
from pcieperf.net.wire import DEFAULT_FRAME_BYTES, FCS_BYTES
from pcieperf.units import whole_number

if TYPE_CHECKING:
    from pcieperf.pcie.link import Link


# ---------------------------------------------------------------------------------------------
# Shared options


def _add_link_options(p: argparse.ArgumentParser) -> None:
    from pcieperf.pcie.link import GENERATIONS, LANE_WIDTHS

    g = p.add_argument_group("PCIe link")
    g.add_argument("--gen", type=GEN, default=3, help=f"generation {sorted(GENERATIONS)}")
    g.add_argument("--lanes", type=LANES, default=8, help=f"lane width {LANE_WIDTHS}")
    g.add_argument("--mps", type=_whole(), default=256, help="Max_Payload_Size, bytes (128..4096)")
    g.add_argument("--mrrs", type=_whole(), default=512, help="Max_Read_Request_Size (128..4096)")
    g.add_argument("--rcb", type=_whole(), default=64, help="Read Completion Boundary (64 or 128)")
    g.add_argument(
        "--completion",
        choices=("rcb", "mps"),
        default="rcb",
        help="completer splits read data at every RCB (default) or at MPS",
    )
    g.add_argument("--addr32", action="store_true", help="32-bit DMA addresses (3 DW headers)")
    g.add_argument("--ecrc", action="store_true", help="add a 4-byte ECRC to every TLP")
    g.add_argument(
        "--flit",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="Flit mode (always on for gen 6, off by default below)",
    )
    g.add_argument(
        "--ack-interval",
        type=_real(),
        default=None,
        metavar="SYMBOLS",
        help="symbol times between ACK DLLPs (default: spec table)",
    )
    g.add_argument(
        "--fc-interval",
        type=_real(),
        default=None,
        metavar="SYMBOLS",
        help="symbol times between UpdateFC DLLPs (default: spec table)",
    )


def _whole(
    low: int = -(2**62), high: int = 2**62, *, prefix: str = "", units: tuple[str, ...] = ()
) -> Callable[[str], int]:
    """An argparse type: a whole number from `low` to `high` (huge values are typos, and would
    overflow the 64-bit arithmetic of the models), as people write it: 3.0, x16 (`prefix`),
    25G (`units`)."""

    def parse(text: str) -> int:
        value = whole_number(text, prefix, units)
        if value is None:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number")
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{text} is not allowed; use {low} to {high}")
        return value

    return parse


ETH = _whole(units=("gbe", "gb/s", "gbps", "g"))  # --eth: 25, 25G, 25GbE or 25Gb/s
GEN = _whole(prefix="gen")  # --gen: 3, 3.0 or gen3
LANES = _whole(prefix="x")  # --lanes: 16 or x16


def _real(high: float = math.inf) -> Callable[[str], float]:
    """An argparse type: a finite number up to `high` (NaN and infinity are refused here, by
    name)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{text} is not allowed; give a finite number")
        if value > high:
            raise argparse.ArgumentTypeError(f"{text} is not allowed; the most is {high:g}")
        return value

    return parse


LINK_OPTIONS = (
    "gen",
    "lanes",
    "mps",
    "mrrs",
    "rcb",
    "completion",
    "addr32",
    "ecrc",
    "flit",
    "ack_interval",
    "fc_interval",
)
"""The link options every command with `link=True` has: `pcie.api.make_link`'s keywords."""


def link_options(args: argparse.Namespace) -> dict:
    """The link options given, as the API's keyword arguments."""
    return {name: getattr(args, name) for name in LINK_OPTIONS}


def _link(args: argparse.Namespace) -> Link:
    """The link the options describe."""
    from pcieperf.pcie.api import make_link

    return make_link(**link_options(args))


def add_size_options(
    p: argparse.ArgumentParser | argparse._ArgumentGroup,
    default_frame: int | None = DEFAULT_FRAME_BYTES,
) -> None:
    """--frame N, the packet size as every command counts it (an Ethernet frame incl. FCS,
    docs/units.md), and --pkt N, its older spelling in bytes the NIC DMAs (frame - FCS), kept
    for one release with a deprecation line; one or the other (`packet_bytes` reads them)."""
    default = "" if default_frame is None else f" (default {default_frame})"
    group = p.add_mutually_exclusive_group()
    group.add_argument(
        "--frame", type=_whole(), default=None, help=f"Ethernet frame bytes incl. FCS{default}"
    )
    group.add_argument(
        "--pkt",
        type=_whole(),
        default=None,
        help=f"deprecated: bytes DMA'd, the frame less its {FCS_BYTES} B FCS; use --frame",
    )


def packet_bytes(args: argparse.Namespace) -> int | None:
    """The bytes the NIC DMAs per packet that --frame or --pkt gives (None: neither): a frame
    less its FCS; --pkt as it is, with a line on stderr saying which frame it means."""
    if args.pkt is not None:
        frame = args.pkt + FCS_BYTES
        _warn(f"--pkt {args.pkt} is a {frame}-byte frame; use --frame {frame}")
    from pcieperf.dpdk.api import packet_size

    return packet_size(args.frame, args.pkt)


def size_option(args: argparse.Namespace) -> str | None:
    """The size option given (`--frame` or `--pkt`; None: neither), for errors that name it."""
    return "--frame" if args.frame is not None else "--pkt" if args.pkt is not None else None


def _add_scheduler_option(p: argparse.ArgumentParser) -> None:
    """--scheduler: where Dask runs the work (shared by the commands that run on Dask)."""
    from pcieperf.engine import INSTALL

    p.add_argument(
        "--scheduler",
        default=None,
        metavar="local[:N]|tcp://HOST:PORT",
        help="run on Dask: N local worker processes (default one per CPU) or an existing "
        f"scheduler; default: in this process. Needs {INSTALL}",
    )


def _warn(text: str) -> None:
    """A result is printed, but the user should know something about it."""
    warnings.warn(text, PcieperfWarning, stacklevel=2)


TRACE_COMPANIONS = ("window", "skip_bad", "plot", "force", "poll")
"""The options that only a replayed capture reads (`--trace`'s companions)."""


def require_trace_for_companions(args: argparse.Namespace) -> None:
    """Refuse a companion of --trace given without it: it would be ignored in silence."""
    if args.trace:
        return
    given = [
        a.option_strings[-1]
        for a in args.command_parser._actions
        if a.dest in TRACE_COMPANIONS and getattr(args, a.dest) != a.default
    ]
    if given:
        raise UsageError(
            f"{', '.join(given)} only {'go' if len(given) > 1 else 'goes'} with --trace: "
            "give --trace FILE, or leave it out"
        )


def _add_trace_replay_options(p: argparse.ArgumentParser) -> None:
    """--trace and its companions, shared by nic and dpdk-fwd."""
    p.add_argument("--trace", default=None, help="a pcap/pcapng capture to replay instead of sizes")
    p.add_argument("--window", default="1ms", help="time window of the bandwidth series")
    p.add_argument("--skip-bad", action="store_true", help="skip damaged capture records")
    p.add_argument("--plot", default=None, help="PNG/SVG of bandwidth over time vs capacity")
    p.add_argument("--force", action="store_true", help="overwrite an existing plot file")


def add_tag_options(p: argparse.ArgumentParser) -> None:
    """The device's read tags and the host whose read latency they are held for (latency and
    nic: `latency` prices the tags' rate, `nic` applies it as a bound)."""
    p.add_argument("--tags", type=_whole(), default=None, help="outstanding read requests")
    host = p.add_mutually_exclusive_group()
    host.add_argument("--host", default=None, help="pcie-bench result directory (lat_* files)")
    host.add_argument("--calibration", default=None, help="a `bench calibrate` file")
    host.add_argument("--read-ns", type=_real(), default=None, help="64 B DMA read round trip")
    p.add_argument("--cache", default="HWarm", help="--host cache state: HWarm or Cold")


def add_counter_file_options(p: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """How a counter file is read (counters import, explain, report): its tool, separator, run
    length where it has no interval, and whether unknown columns are skipped."""
    from pcieperf.measure.counters.formats import names

    p.add_argument(
        "--counters-format",
        dest="format",
        default=None,
        choices=names(),
        help="its tool (default: detected); pcm-iio: its -csv output or its table",
    )
    p.add_argument("--delimiter", default=None, help="field separator (default: detected)")
    p.add_argument(
        "--interval",
        type=_real(),
        default=None,
        help="perf iostat/stat without -I: run seconds; pcm-iio's table: its interval (default 3)",
    )
    p.add_argument("--lenient", action="store_true", help="skip unknown columns instead of failing")
