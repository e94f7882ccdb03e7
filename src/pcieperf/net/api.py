"""The public functions of captures (`pp.read_capture`, `pp.capture_stats`,
`pp.merge_captures`, `pp.synth_capture`, `pp.convert_capture`): keyword arguments named as the
`trace` commands' options, results that print as the CLI prints them (pcieperf.results).
Captures are named by paths or globs (`trace stats 'day1/*.pcap'`); `scheduler` runs the work on
Dask (docs/scale.md)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from pcieperf import engine
from pcieperf.errors import UsageError, param, warn
from pcieperf.net import archive_merge, stats_text
from pcieperf.net.archive import archive_stats, demand, expand, file_stats
from pcieperf.net.trace.epoch import epoch_warning, parse_shift_ns
from pcieperf.net.trace.files import NS_PER_S, read
from pcieperf.net.trace.rewrite import convert, merge
from pcieperf.net.trace.statistics import WINDOWS_NS, StatsOptions, stats_config, stats_files
from pcieperf.net.trace.synthesis import synth
from pcieperf.results import Report, Table
from pcieperf.text import plural
from pcieperf.units import duration_text, duration_token, parse_duration_ns, parse_rate, scaled

if TYPE_CHECKING:
    import pandas

    from pcieperf.engine import Client


Paths = str | os.PathLike[str] | Sequence[str | os.PathLike[str]]
"""One capture, or several: paths or glob patterns (`-` is standard input)."""
T = TypeVar("T")


def _expand(files: Paths) -> list[str]:
    """The files that paths and globs name, in order."""
    given = [files] if isinstance(files, str | os.PathLike) else files
    return expand([os.fspath(f) for f in given])


def _on_dask(scheduler: str | None, debug: bool, work: Callable[[Client], T]) -> T:
    """`work(client)` on the Dask scheduler named as --scheduler names one (None: in this
    process); `debug` lets dask's own log lines through."""
    with engine.connect(engine.parse_scheduler(scheduler), quiet_logs=not debug) as client:
        return work(client)


def read_capture(
    path: str | os.PathLike[str], *, skip_bad: bool = False, strict: bool = False
) -> pandas.DataFrame:
    """Every packet of a pcap or pcapng file (gzip/zstd too), one row each: `ts_ns` (capture
    time, ns since the epoch; after 2262 modulo 2^64, docs/trace.md), `caplen` (bytes
    captured), `len` (the packet's length on the wire, without FCS, as the capture records it)
    and `interface` (index into `frame.attrs["interfaces"]`). The Rust reader decodes it;
    `attrs` also hold `path`, `format`, `skipped` (damaged records passed over with `skip_bad`)
    and `cut_short`."""
    import pandas

    captured = read(path, skip_bad=skip_bad, strict=strict)
    frame = pandas.DataFrame(
        {
            "ts_ns": captured.ts_ns,
            "caplen": captured.caplen,
            "len": captured.wirelen,
            "interface": captured.iface,
        }
    )
    frame.attrs = {
        "path": captured.path,
        "format": captured.format,
        "skipped": captured.skipped,
        "cut_short": captured.cut_short,
        "interfaces": [
            {"id": k, "linktype": i.linktype, "name": i.name, "snaplen": i.snaplen}
            for k, i in enumerate(captured.interfaces)
        ],
    }
    return frame


def capture_stats(
    files: Paths,
    *,
    eth: int = 40,
    windows: str | Iterable[str | int] | None = None,
    skip_bad: bool = False,
    strict: bool = False,
    archive: bool = False,
    brief: bool = False,
    scheduler: str | None = None,
    debug: bool = False,
) -> Report | Table:
    """Packets, bytes, first and last time, peak rates per window (1 ms and 1 s unless
    `windows`: "1ms,100us" or ns), frame sizes and bursts at `eth` GbE line rate of each
    capture (`pcieperf trace stats`), or of each port of an archive (`archive`: its files as
    if concatenated in time order, on Dask); `brief`: one flat row each, as `capinfos -T`. A
    capture cut short, with records over their snaplen, with times past 2262 or dated a
    century away (DPDK 22.11's dumpcap offset: how to shift it back) gives a warning; packets
    per timestamp, steps back and directions say how far times and order can be trusted
    (docs/trace.md)."""
    options: StatsOptions = {
        "eth_gbps": eth,
        "windows_ns": _windows_ns(windows),
        "skip_bad": skip_bad,
        "strict": strict,
    }
    paths = _expand(files)
    if archive or scheduler:
        stats_config(eth, options["windows_ns"])  # checked before a cluster starts
        run = archive_stats if archive else file_stats
        found: Iterable[dict[str, Any]] = _on_dask(
            scheduler, debug, lambda c: run(c, paths, **options)
        )
    else:
        found = stats_files(paths, **options)
    results = []
    for result in found:  # warned as each file is read: a later file may fail
        _warn_capture_quirks(stats_text.archive_label(result))
        results.append(result)
    if brief:
        return stats_text.brief_table(results)
    return Report(results, "\n\n".join(stats_text.stats_text(r) for r in results))


def _windows_ns(windows: str | Iterable[str | int] | None) -> list[int] | tuple[int, ...]:
    """Rate windows in ns from "1ms,1s" or a list of durations (None: 1 ms and 1 s; an empty
    text or list is refused, not taken for the default)."""
    if windows is None:
        return WINDOWS_NS
    if isinstance(windows, str) and not windows.strip():
        raise UsageError("rate windows '' are not allowed; give durations such as 1ms,1s")
    given = windows.split(",") if isinstance(windows, str) else windows
    return [parse_duration_ns(str(w), "rate window") for w in given]


def _warn_capture_quirks(result: dict[str, Any]) -> None:
    """One warning per file for what libpcap and Wireshark read but the user should know."""
    if result["snaplen_exceeded"]:
        warn(
            f"{result['file']}: {result['snaplen_exceeded']} records are longer than their "
            "snaplen; read in full, as Wireshark does"
        )
    if result["cut_short"]:
        warn(
            f"{result['cut_short']}: the capture was cut short; the {result['packets']} packets "
            f"before it are reported ({param('strict')} makes this an error)"
        )
    if result["ts_wrapped"]:
        warn(
            f"{result['file']}: {result['ts_wrapped']} records are dated after 2262 (ns past "
            "2^63), kept modulo 2^64 (docs/trace.md); --shift-time of `trace convert` moves them"
        )
    epoch = epoch_warning(result["file"], result)
    if epoch:
        warn(epoch)


def priced_demand(
    files: Paths,
    *,
    cost: object,
    profile: str,
    capacity_gbps: float,
    window_ns: int,
    archive: bool = False,
    skip_bad: bool = False,
    strict: bool = False,
    scheduler: str | None = None,
    debug: bool = False,
) -> Report:
    """The PCIe bandwidth captures need per window, every packet priced by `cost` (a NIC
    profile's `nic.demand_cost`), per file or per port of an archive, on Dask: what
    `pp.capture_demand` returns once the NIC model has priced the frame sizes."""
    paths = _expand(files)
    results = _on_dask(
        scheduler,
        debug,
        lambda client: demand(
            client,
            paths,
            cost=cost,
            profile=profile,
            capacity_gbps=capacity_gbps,
            window_ns=window_ns,
            per_file=not archive,
            skip_bad=skip_bad,
            strict=strict,
        ),
    )
    return Report(results, "\n".join(_demand_line(r) for r in results))


def _demand_line(r: dict[str, Any]) -> str:
    """One file's (or port's) demand as a line of text, rates and times scaled."""
    mean = (
        f"mean {_up_down(r['mean_up_gbps'], r['mean_down_gbps'])}, "
        if r["mean_up_gbps"] is not None
        else ""
    )
    window = duration_token(r["window_ns"], " ")
    peak = (
        f"peak {_up_down(r['peak_up_gbps'], r['peak_down_gbps'])} per {window}"
        if r["peak_up_gbps"] is not None
        else ("no duration, no rate" if not r["duration_s"] else f"no whole {window} window")
    )
    tail = (
        f" (the last {duration_text(r['tail_ns'])}: "
        f"{_up_down(r['tail_up_gbps'], r['tail_down_gbps'])})"
        if r["tail_ns"]
        else ""
    )
    return (
        f"{stats_text.archive_label(r)['file']}: {plural(r['packets'], 'packet')}; "
        f"{mean}{peak}{tail}; "
        f"{r['windows_over_capacity']} of {r['full_windows']} whole windows exceed the link's "
        f"{r['capacity_gbps']:.2f} Gb/s"
    )


def _up_down(up_gbps: float, down_gbps: float) -> str:
    """Two rates in Gb/s, scaled: "41.8 Gb/s up / 43.6 Gb/s down"."""
    return f"{scaled(up_gbps * 1e9, 'b/s')} up / {scaled(down_gbps * 1e9, 'b/s')} down"


def merge_captures(
    files: Paths,
    output: str | os.PathLike[str],
    *,
    force: bool = False,
    skip_bad: bool = False,
    strict: bool = False,
    append: bool = False,
    scheduler: str | None = None,
    debug: bool = False,
) -> Report:
    """Merge captures into `output` (.pcap or .pcapng) in time order, pcapng keeping every
    interface (`pcieperf trace merge`); cut into time ranges on Dask with `scheduler`. With
    `append`, the inputs are written one after another in the order given, as `mergecap -a`
    does (one pass, not on Dask)."""
    paths = _expand(files)
    options = {"force": force, "skip_bad": skip_bad, "strict": strict}
    out = os.fspath(output)
    if append and scheduler:
        raise UsageError(
            f"{param('append')} with {param('scheduler')} {scheduler} is not allowed: appending "
            f"is one pass in input order; leave out {param('scheduler')}"
        )
    if scheduler:
        result = _on_dask(scheduler, debug, lambda c: archive_merge.merge(c, paths, out, **options))
    else:
        result = merge(paths, out, append=append, **options)
    if result["truncated"]:
        warn(
            f"{result['truncated']} inputs were cut short inside a record; what came before "
            f"is merged ({param('strict')} makes this an error)"
        )
    data = {"output": out, "inputs": paths, "append": append, **result}
    notes = (f", {data['skipped']} damaged records skipped" if data["skipped"] else "") + (
        f", {data['out_of_order']} out of order in their input" if data["out_of_order"] else ""
    )
    how = "appended in the order given" if append else "merged in time order"
    return Report(
        data,
        f"{plural(data['packets'], 'packet')} from {plural(len(paths), 'file')}, {how}, "
        f"{plural(data['interfaces'], 'interface')} -> {out} ({data['writes']} writes{notes})",
        confirms=True,
    )


def synth_capture(
    output: str | os.PathLike[str],
    *,
    eth: int = 40,
    sizes: str = "64",
    pps: str | float = "1M",
    duration: str = "10ms",
    arrival: str = "constant",
    burst: int = 32,
    flows: int = 1024,
    seed: int = 1,
    force: bool = False,
) -> Report:
    """Write a synthetic capture (`pcieperf trace synth`): frames of `sizes` (bytes incl.
    FCS, "imix" or "64:7,594:4,1518:1") at a mean `pps` ("10M", 1e6) for `duration` ("1s"),
    arriving constant, Poisson or in on/off bursts of `burst` frames, over `flows` UDP flows."""
    from pcieperf.net.ethernet import Ethernet, parse_mix

    data = synth(
        output,
        eth=Ethernet(eth),
        mix=parse_mix(sizes),
        pps=parse_rate(str(pps)),
        duration_s=parse_duration_ns(duration) / NS_PER_S,
        arrival=arrival,
        burst=burst,
        flows=flows,
        seed=seed,
        force=force,
    )
    made = f"{plural(data['packets'], 'packet')} ({data['arrival']}) -> {data['file']}"
    return Report(data, made, confirms=True)


def convert_capture(
    file: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    shift_time: str | float = 0,
    force: bool = False,
    skip_bad: bool = False,
    strict: bool = False,
) -> Report:
    """Rewrite a capture as ns-resolution pcap or pcapng (by `output`'s suffix), packet for
    packet (`pcieperf trace convert`), every time moved by `shift_time` seconds (a decimal
    string keeps ns precision: "-7094901566.811366006" undoes DPDK 22.11's 2.6 GHz offset)."""
    source, out = os.fspath(file), os.fspath(output)
    shift_ns = parse_shift_ns(shift_time)
    result = convert(source, out, shift_ns=shift_ns, force=force, skip_bad=skip_bad, strict=strict)
    if result["truncated"]:
        warn(f"{source} was cut short inside a record; what came before is converted")
    shifted = f", times shifted by {shift_ns / 1e9:g} s" if shift_ns else ""
    return Report(
        {"input": source, "output": out, "shift_ns": shift_ns, **result},
        f"{plural(result['packets'], 'packet')} -> {out}{shifted}",
        confirms=True,
    )
