"""The `trace` group and `trace stats`: capture statistics, one file or an archive on Dask
(pcieperf.net)."""

from __future__ import annotations

import argparse

from pcieperf.cli._common import (
    _add_link_options,
    _add_scheduler_option,
    _warn,
    _whole,
    archiving,
    engine,
    trace,
)
from pcieperf.cli._output import _emit
from pcieperf.cli._parser import _GROUPS, _add_command, _add_group
from pcieperf.cli.trace_files import (
    _archive_label,
    cmd_trace_convert,
    cmd_trace_demand,
    cmd_trace_merge,
    cmd_trace_synth,
)
from pcieperf.net import wire
from pcieperf.units import parse_duration_ns


def cmd_trace_stats(args: argparse.Namespace) -> None:
    """Packets, bytes, peak rates per window (1 ms and 1 s unless --windows), frame sizes and
    bursts of capture files, each summarised while it is read."""
    windows = (
        [parse_duration_ns(w, "rate window") for w in args.windows.split(",")]
        if args.windows
        else trace.WINDOWS_NS
    )
    options = {
        "eth_gbps": args.eth,
        "windows_ns": windows,
        "skip_bad": args.skip_bad,
        "strict": args.strict,
    }
    if args.archive or args.scheduler:
        found = _trace_stats_on_dask(args, options)
    else:
        found = trace.stats_files(archiving.expand(args.files), **options)
    results = []
    for result in found:
        _warn_capture_quirks(_archive_label(result))
        results.append(result)

    def human() -> str:
        return "\n\n".join(_trace_stats_text(_archive_label(r)) for r in results)

    _emit(args, results, human)


def _trace_stats_on_dask(args: argparse.Namespace, options: dict) -> list[dict]:
    """`trace stats` through the engine: per file, or per port with --archive."""
    scheduler = engine.parse_scheduler(args.scheduler)
    files = archiving.expand(args.files)
    trace.stats_config(options["eth_gbps"], options["windows_ns"])  # checked before a cluster
    run = archiving.archive_stats if args.archive else archiving.file_stats
    with engine.connect(scheduler, quiet_logs=not args.debug) as client:
        return run(client, files, **options)


def _warn_capture_quirks(result: dict) -> None:
    """One warning per file for what libpcap and Wireshark read but the user should know."""
    if result["snaplen_exceeded"]:
        _warn(
            f"{result['file']}: {result['snaplen_exceeded']} records are longer than their "
            "snaplen; read in full, as Wireshark does"
        )
    if result["cut_short"]:
        _warn(
            f"{result['cut_short']}: the capture was cut short; the {result['packets']} packets "
            "before it are reported (--strict makes this an error)"
        )


_STRICT_ORDER = {True: "yes", False: "no", None: "unknown (packets without timestamps)"}


def _trace_stats_text(r: dict) -> str:
    """One file's statistics as a short text block."""
    rates = ", ".join(
        f"peak {x['peak_pps'] / 1e6:.3f} Mpps / {x['peak_gbps']:.3f} Gb/s per "
        f"{x['window_ns'] / 1e6:g} ms"
        for x in r["rates"]
        if x["peak_pps"] is not None
    )
    mean = (
        f"mean {r['mean_pps'] / 1e6:.3f} Mpps, {r['mean_gbps']:.3f} Gb/s; {rates}"
        if r["mean_pps"]
        else "no duration"
    )
    b = r["bursts"]
    stored = "" if r["compression"] == "none" else f", {r['compression']}"
    lines = [
        f"{r['file']} ({r['format']}{stored}): {r['packets']} packets, {r['bytes_wire']} wire "
        f"bytes ({r['bytes_captured']} captured), {r['duration_s']:.6f} s",
        f"  {mean}",
        f"  strict time order: {_STRICT_ORDER[r['strict_time_order']]} "
        f"({r['out_of_order']} packets earlier than the one before)",
        f"  bursts at {b['eth_gbps']} GbE: {b['bursts']} ({b['packets_in_bursts']} packets, "
        f"longest {b['max_burst']})",
        "  frame sizes: " + ", ".join(f"{k}: {v}" for k, v in r["size_histogram"].items() if v),
    ]
    lines += [
        f"  interface {i['id']} ({i['name'] or 'unnamed'}, {i['linktype_name']}): "
        f"{i['packets']} packets"
        for i in r["interfaces"]
    ]
    notes = {
        "skipped": "damaged records skipped",
        "snaplen_exceeded": "records longer than their snaplen",
        "wirelen_below_caplen": "records with a wire length below their caplen",
    }
    lines += [f"  {r[key]} {text}" for key, text in notes.items() if r[key]]
    if r["truncated"]:
        lines.append(f"  cut short: {r['cut_short']}")
    return "\n".join(lines)


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
    p.add_argument("--eth", type=_whole(), default=40, help="line rate (Gb/s) that defines bursts")
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
    _add_scheduler_option(p)
    p = _add_command(trace_sub, "demand", cmd_trace_demand)
    p.add_argument("files", nargs="+", help="pcap or pcapng files or globs")
    p.add_argument("--profile", default="dpdk", help="NIC profile: built-in name or a .toml file")
    p.add_argument("--paths", default="rx,tx", help="rx, tx or rx,tx (default both)")
    p.add_argument("--window", default="1ms", help="time window of the bandwidth")
    p.add_argument("--archive", action="store_true", help="one result per port, as trace stats")
    _add_capture_read_options(p)
    _add_link_options(p)
    _add_scheduler_option(p)
    p = _add_command(trace_sub, "merge", cmd_trace_merge)
    p.add_argument("files", nargs="+", help="pcap or pcapng inputs, each in time order")
    p.add_argument("-o", "--output", required=True, help="OUT.pcapng or OUT.pcap")
    _add_scheduler_option(p)
    _add_capture_read_options(p)
    p.add_argument("--force", action="store_true", help="overwrite an existing output")
    p = _add_command(trace_sub, "synth", cmd_trace_synth)
    p.add_argument("--eth", type=_whole(), default=40, help=f"Ethernet Gb/s {wire.RATES_GBPS}")
    p.add_argument("--sizes", default="64", help="frame size incl. FCS, imix, or 64:7,594:4,...")
    p.add_argument("--pps", default="1M", help="mean packet rate: 10e6, 10M, 500k")
    p.add_argument("--duration", default="10ms", help="capture length: 1s, 10ms, ...")
    p.add_argument("--arrival", choices=trace.ARRIVALS, default="constant")
    p.add_argument(
        "--burst", type=_whole(), default=32, help="onoff: frames per back-to-back burst"
    )
    p.add_argument("--flows", type=_whole(), default=1024, help="UDP flows the packets cycle over")
    p.add_argument("--seed", type=_whole(), default=1, help="random seed (sizes, Poisson, on/off)")
    p.add_argument("-o", "--output", required=True, help="OUT.pcap or OUT.pcapng")
    p.add_argument("--force", action="store_true", help="overwrite an existing output")
    p = _add_command(trace_sub, "convert", cmd_trace_convert)
    p.add_argument("file", help="pcap or pcapng input (.gz/.zst too; - is stdin)")
    p.add_argument("-o", "--output", required=True, help="OUT.pcap (ns) or OUT.pcapng")
    _add_capture_read_options(p)
    p.add_argument("--force", action="store_true", help="overwrite an existing output")
