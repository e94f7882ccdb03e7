"""The `trace` group and `trace stats`: capture statistics, one file or an archive on Dask
(pcieperf.net)."""

from __future__ import annotations

import argparse

from pcieperf.cli._common import ETH, _add_link_options, _add_scheduler_option, _whole
from pcieperf.cli._output import emit
from pcieperf.cli._parser import _GROUPS, _add_command, _add_group
from pcieperf.cli.trace_files import (
    cmd_trace_convert,
    cmd_trace_demand,
    cmd_trace_merge,
    cmd_trace_synth,
)
from pcieperf.net import api, wire
from pcieperf.net.trace.synthesis import ARRIVALS
from pcieperf.nic.profile import DEFAULT_PROFILE


def cmd_trace_stats(args: argparse.Namespace) -> None:
    """Packets, bytes, first and last packet time, peak rates per window (1 ms and 1 s unless
    --windows), frame sizes and bursts of capture files, each summarised while it is read;
    --brief: one line per file, as capinfos -T. Bit rates count frames incl. FCS (docs/units.md);
    the JSON also has them for the recorded lengths (docs/trace.md)."""
    result = api.capture_stats(
        args.files,
        eth=args.eth,
        windows=args.windows,
        skip_bad=args.skip_bad,
        strict=args.strict,
        archive=args.archive,
        brief=args.brief,
        scheduler=args.scheduler,
        debug=args.debug,
    )
    emit(args, result)


def _add_capture_read_options(p: argparse.ArgumentParser) -> None:
    """--skip-bad and --strict, shared by the trace commands that read captures."""
    p.add_argument("--skip-bad", action="store_true", help="skip damaged records, count them")
    p.add_argument(
        "--strict", action="store_true", help="a capture cut short is an error, not a warning"
    )


def _add_trace_commands(sub: argparse._SubParsersAction) -> None:
    """The `trace` group: capture statistics, merge, synthesis and conversion."""
    trace_sub = _add_group(sub, "trace", _GROUPS["trace"])
    p = _add_command(trace_sub, "stats", cmd_trace_stats)
    p.add_argument("files", nargs="+", help="pcap or pcapng files (.gz/.zst too; - is stdin)")
    p.add_argument("--eth", type=ETH, default=40, help="line rate (Gb/s) that defines bursts")
    p.add_argument(
        "--windows", default=None, help="peak-rate windows, comma-separated (default 1ms,1s)"
    )
    _add_capture_read_options(p)
    p.add_argument(
        "--archive",
        action="store_true",
        help="one result per port (files with the same interfaces): its files as if "
        "concatenated in time order, summarised on Dask (docs/scale.md)",
    )
    p.add_argument(
        "--brief",
        action="store_true",
        help="one line per file (or port), as capinfos -T: file, format, packets, first and "
        "last time, duration, mean and peak rates; --json and --format csv give the same rows "
        "(a flag, not a --format: the table, JSON and CSV are its three forms)",
    )
    _add_scheduler_option(p)
    p = _add_command(trace_sub, "demand", cmd_trace_demand)
    p.add_argument("files", nargs="+", help="pcap or pcapng files or globs")
    p.add_argument(
        "--profile", default=DEFAULT_PROFILE, help="NIC profile: built-in name or a .toml file"
    )
    p.add_argument("--paths", default="rx,tx", help="rx, tx or rx,tx (default both)")
    p.add_argument("--window", default="1ms", help="time window of the bandwidth")
    p.add_argument("--archive", action="store_true", help="one result per port, as trace stats")
    _add_capture_read_options(p)
    _add_link_options(p)
    _add_scheduler_option(p)
    p = _add_command(trace_sub, "merge", cmd_trace_merge)
    p.add_argument("files", nargs="+", help="pcap or pcapng inputs, each in time order")
    p.add_argument("-o", "--output", required=True, help="OUT.pcapng or OUT.pcap")
    p.add_argument(
        "--append",
        action="store_true",
        help="concatenate: each input whole, in the order given, not merged by time "
        "(mergecap -a); interfaces as a merge keeps them; not with --scheduler",
    )
    _add_scheduler_option(p)
    _add_capture_read_options(p)
    p.add_argument("--force", action="store_true", help="overwrite an existing output")
    p = _add_command(trace_sub, "synth", cmd_trace_synth)
    p.add_argument("--eth", type=ETH, default=40, help=f"Ethernet Gb/s {wire.RATES_GBPS}")
    p.add_argument("--sizes", default="64", help="frame size incl. FCS, imix, or 64:7,594:4,...")
    p.add_argument("--pps", default="1M", help="mean packet rate: 10e6, 10M, 500k")
    p.add_argument("--duration", default="10ms", help="capture length: 1s, 10ms, ...")
    p.add_argument("--arrival", choices=ARRIVALS, default="constant")
    p.add_argument(
        "--burst", type=_whole(), default=32, help="onoff: frames per back-to-back burst"
    )
    # flows: a u32 in the core's synthesizer; seeds: numpy's, >= 0
    flows = _whole(1, 2**32 - 1)
    p.add_argument("--flows", type=flows, default=1024, help="UDP flows the packets cycle over")
    p.add_argument("--seed", type=_whole(0), default=1, help="random seed (sizes, Poisson, on/off)")
    p.add_argument("-o", "--output", required=True, help="OUT.pcap or OUT.pcapng")
    p.add_argument("--force", action="store_true", help="overwrite an existing output")
    p = _add_command(trace_sub, "convert", cmd_trace_convert)
    p.add_argument("file", help="pcap or pcapng input (.gz/.zst too; - is stdin)")
    p.add_argument("out", nargs="?", default=None, help="OUT.pcap (ns) or OUT.pcapng (or -o)")
    p.add_argument("-o", "--output", default=None, help="the same as OUT")
    p.add_argument(
        "--shift-time",
        default="0",
        metavar="SECONDS",
        help="add SECONDS (ns precision, may be negative) to every time, e.g. the "
        "--shift-time=-2^64/tsc_hz that `trace stats` suggests for a DPDK 22.11 dumpcap file",
    )
    _add_capture_read_options(p)
    p.add_argument("--force", action="store_true", help="overwrite an existing output")
