"""Statistics of captures (`trace stats`): rates per window, frame sizes (RMON buckets) and
bursts at line rate, counted exactly by the Rust core and turned into rates here."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, TypedDict

from pcieperf._native import checked, core
from pcieperf._numpy import np
from pcieperf.errors import require_positive
from pcieperf.net import wire
from pcieperf.net.trace.epoch import epoch_check
from pcieperf.net.trace.files import (
    ETHERNET_HEADER_BYTES,
    LINK_HEADER_BYTES,
    NS_PER_S,
    Interface,
    Trace,
    linktype_name,
)
from pcieperf.net.trace.rewrite import _check_inputs
from pcieperf.net.wire import FCS_BYTES, MIN_FRAME_BYTES
from pcieperf.units import utc_text

if TYPE_CHECKING:
    from pcieperf.net.ethernet import Ethernet

WINDOWS_NS = (1_000_000, NS_PER_S)  # the 1 ms and 1 s rate windows
GAP_PERCENTILES = (50, 99)  # gap_ns_p50 and gap_ns_p99 of `trace stats`
# Frame-size buckets of RMON etherStatsPkts64Octets..Pkts1024to1518Octets (RFC 2819), frame
# bytes incl. FCS, with the runts below and the jumbo/GSO frames above them.
SIZE_BINS = (0, 64, 65, 128, 256, 512, 1024, 1519)
SIZE_LABELS = ("<64", "64", "65-127", "128-255", "256-511", "512-1023", "1024-1518", ">1518")


class StatsOptions(TypedDict):
    """The keywords of `stats_files` (and of the archive's `file_stats` and `archive_stats`)."""

    eth_gbps: float
    windows_ns: Sequence[int]
    skip_bad: bool
    strict: bool


def _per_s(events: int, ns: int) -> float:
    """Events in `ns` nanoseconds per second, rounded once (int / int is correctly rounded)."""
    return events * NS_PER_S / ns


def _gbps(bits: int, ns: int) -> float:
    """Bits in `ns` nanoseconds (bits per ns are Gb/s), rounded once."""
    return bits / ns


def _stats_config(eth_gbps: float, overhead_bytes: int, windows_ns: Sequence[int]) -> dict:
    """What the Rust statistics need: the rate windows, how a record becomes a frame and how
    long the frame is on the wire, the RMON buckets and the gap percentiles."""
    for window in windows_ns:
        require_positive("rate window", window)
    return {
        "windows_ns": [int(w) for w in windows_ns],
        "eth_gbps": float(eth_gbps),
        "overhead_bytes": int(overhead_bytes),
        "fcs_bytes": FCS_BYTES,
        "min_frame_bytes": MIN_FRAME_BYTES,
        "ethernet_header_bytes": ETHERNET_HEADER_BYTES,
        "link_header_bytes": list(LINK_HEADER_BYTES.items()),
        "size_bins": list(SIZE_BINS),
        "percentiles": [float(p) for p in GAP_PERCENTILES],
    }


def stats_config(eth_gbps: float, windows_ns: Sequence[int]) -> dict:
    """The checked configuration of the statistics of files at `eth_gbps` GbE."""
    wire.check_rate(eth_gbps)
    return _stats_config(eth_gbps, wire.overhead_bytes(), windows_ns)


def _summary(totals: dict, frame_bytes: int, time_digits: tuple[int, int] | None) -> dict:
    """Packets, bytes, first/last time (also as ISO 8601 UTC to `time_digits` decimals, each
    time its own; None: not shown, some packets carry no time), duration and mean rates of a
    set of packets. Bytes are counted three ways (docs/trace.md):
    captured, as recorded (`bytes_wire`: pcap's original length, without FCS, capinfos' data
    size; `mean_gbps` of it) and as frames incl. FCS (`bytes_frame`, `mean_frame_gbps`: the
    frames the size histogram counts, docs/units.md)."""
    n, wire_bytes = totals["packets"], totals["bytes_wire"]
    span_ns = totals["last_ts_ns"] - totals["first_ts_ns"] if n else 0
    first, last = (totals["first_ts_ns"], totals["last_ts_ns"]) if n else (None, None)
    shown = time_digits if n else None  # no packet: no time to show
    return {
        "packets": n,
        "bytes_captured": totals["bytes_captured"],
        "bytes_wire": wire_bytes,
        "bytes_frame": frame_bytes,
        "first_ts_ns": first,
        "last_ts_ns": last,
        "first_time": None if shown is None else utc_text(totals["first_ts_ns"], shown[0]),
        "last_time": None if shown is None else utc_text(totals["last_ts_ns"], shown[1]),
        "duration_s": span_ns / NS_PER_S,
        # Exact ratios rounded once, like the peaks they are compared with.
        "mean_pps": _per_s(n, span_ns) if span_ns else None,
        "mean_gbps": _gbps(wire_bytes * 8, span_ns) if span_ns else None,
        "mean_frame_gbps": _gbps(frame_bytes * 8, span_ns) if span_ns else None,
    }


def _rates(window: dict, totals: dict) -> dict:
    """Peak packet and bit rates over the whole windows of one length, and the rates of a
    shorter last window apart (the tail: trace/rate_windows.rs); bits of the recorded lengths
    (`*_gbps`) and of the frames incl. FCS (`*_frame_gbps`), each window's largest. A capture
    without duration has no rate (None), as it has no mean; one shorter than a window has no
    peak, only its tail."""
    n, w = totals["packets"], window["window_ns"]
    if n == 0 or totals["first_ts_ns"] == totals["last_ts_ns"]:
        return {
            "window_ns": w,
            "windows": int(n > 0),
            "full_windows": int(n > 0),
            "peak_pps": None,
            "peak_gbps": None,
            "peak_frame_gbps": None,
            "tail_ns": 0,
            "tail_pps": None,
            "tail_gbps": None,
            "tail_frame_gbps": None,
        }
    # (covered ns, largest packet count, largest bit sum, largest frame-bit sum)
    groups = window["groups"]
    whole = [g[1:] for g in groups if g[0] == w]
    tail = [g for g in groups if g[0] != w]
    windows = window["last_index"] + 1
    return {
        "window_ns": w,
        "windows": windows,
        "full_windows": windows - len(tail),
        "peak_pps": _per_s(whole[0][0], w) if whole else None,
        "peak_gbps": _gbps(whole[0][1], w) if whole else None,
        "peak_frame_gbps": _gbps(whole[0][2], w) if whole else None,
        "tail_ns": tail[0][0] if tail else 0,
        "tail_pps": _per_s(tail[0][1], tail[0][0]) if tail else None,
        "tail_gbps": _gbps(tail[0][2], tail[0][0]) if tail else None,
        "tail_frame_gbps": _gbps(tail[0][3], tail[0][0]) if tail else None,
    }


def _bursts(raw: dict | None, packets: int) -> dict:
    """Runs of back-to-back packets and gap percentiles (none below two packets)."""
    if raw is None:
        return {"bursts": 0, "packets_in_bursts": 0, "max_burst": packets}
    p50, p99 = raw["gap_percentiles"]
    return {
        "bursts": raw["bursts"],
        "packets_in_bursts": raw["packets_in_bursts"],
        "mean_burst": raw["packets_in_bursts"] / raw["bursts"] if raw["bursts"] else 0.0,
        "max_burst": raw["max_burst"],
        "gap_ns_p50": p50,
        "gap_ns_p99": p99,
        "gap_ns_min": raw["gap_min_ns"],
    }


DIRECTIONS = ("direction_unknown", "inbound", "outbound")  # epb_flags bits 0-1: 0, 1, 2


def _directions(counts: Sequence[int]) -> dict:
    """Packets per direction of pcapng's epb_flags (pcap records have none: unknown)."""
    return {f"packets_{d}": int(n) for d, n in zip(DIRECTIONS, counts, strict=True)}


def _trust(raw: dict) -> dict:
    """How far the capture's times can be trusted (docs/trace.md): packets per distinct
    timestamp and the most at one time, the largest step back in file order, times that wrap
    past 2262 and dates more than a century from now."""
    n, distinct = raw["packets"], raw["distinct_timestamps"]
    first, last = (raw["first_ts_ns"], raw["last_ts_ns"]) if n else (None, None)
    return {
        "distinct_timestamps": distinct,
        "packets_per_timestamp": n / distinct if distinct else None,
        "max_equal_timestamps": raw["max_equal_timestamps"],
        "max_step_back_ns": raw["max_step_back_ns"],
        "ts_wrapped": raw["ts_wrapped"],
        **epoch_check(first, last),
        **_directions([sum(d) for d in zip(*raw["directions"], strict=True)] or (0, 0, 0)),
    }


def _time_digits(raw: dict, interfaces: Sequence[Interface]) -> tuple[int, int] | None:
    """The digits the first and the last time are shown with: those of the interface that
    holds it, as capinfos shows each with its packet's precision (the finest where several
    interfaces share it; capinfos takes the first in file order). None where some packets
    carry no time (Simple Packet Blocks): capinfos then says n/a."""
    if raw["untimed"]:
        return None
    totals = zip(raw["per_interface"], interfaces, strict=True)
    held = [(t, i.time_digits) for t, i in totals if t["packets"]]

    def finest(key: str) -> int:
        return max((d for t, d in held if t[key] == raw[key]), default=9)

    return finest("first_ts_ns"), finest("last_ts_ns")


def _report(path: str, raw: dict, interfaces: Sequence[Interface], eth_gbps: float) -> dict:
    """The `trace stats` JSON of one file (see the README's contract) from the Rust counts."""
    untimed, out_of_order = raw["untimed"], raw["out_of_order"]
    return {
        "file": path,
        "format": raw["format"],
        "compression": raw["compression"],
        **_summary(raw, sum(raw["frame_bytes"]), _time_digits(raw, interfaces)),
        "out_of_order": out_of_order,
        # capinfos -o: no packet earlier than the one before it (equal times allowed); unknown
        # (None), as capinfos says, where none is but some carry no timestamp (Simple Packet
        # Blocks).
        "strict_time_order": False if out_of_order else (None if untimed else True),
        "skipped": raw["skipped"],
        "untimed": untimed,
        "snaplen_exceeded": raw["snaplen_exceeded"],
        "wirelen_below_caplen": raw["wirelen_below_caplen"],
        "truncated": raw["cut_short"] is not None,
        "cut_short": raw["cut_short"],
        **_trust(raw),
        "rates": [_rates(w, raw) for w in raw["rates"]],
        "size_histogram": dict(zip(SIZE_LABELS, raw["size_histogram"], strict=True)),
        "bursts": {"eth_gbps": eth_gbps, **_bursts(raw["bursts"], raw["packets"])},
        "interfaces": [
            {
                "id": k,
                "linktype": iface.linktype,
                "linktype_name": linktype_name(iface.linktype),
                "name": iface.name,
                "snaplen": iface.snaplen,
                "section": iface.section,
                **_summary(totals, frame_bytes, None if untimed else (iface.time_digits,) * 2),
                **_directions(directions),
            }
            for k, (iface, totals, directions, frame_bytes) in enumerate(
                zip(
                    interfaces,
                    raw["per_interface"],
                    raw["directions"],
                    raw["frame_bytes"],
                    strict=True,
                )
            )
        ],
    }


def stats(trace: Trace, eth: Ethernet, windows_ns: Sequence[int] = WINDOWS_NS) -> dict:
    """`trace stats` of a trace in memory (see `stats_files` for files, which need no columns):
    the same keys, computed by the same Rust code."""
    columns = (
        np.ascontiguousarray(trace.ts_ns, dtype=np.int64),
        *(np.ascontiguousarray(c, dtype=np.uint32) for c in (trace.caplen, trace.wirelen)),
        np.ascontiguousarray(trace.iface, dtype=np.uint32),
    )
    raw = core().trace_stats_columns(
        *columns,
        [(i.linktype, i.tsresol) for i in trace.interfaces],
        _stats_config(eth.rate_gbps, eth.overhead_bytes, windows_ns),
    )
    read = {
        "format": trace.format,
        "compression": trace.compression,
        "skipped": trace.skipped,
        "untimed": trace.untimed,
        "snaplen_exceeded": trace.snaplen_exceeded,
        "wirelen_below_caplen": trace.wirelen_below_caplen,
        "ts_wrapped": trace.ts_wrapped,
        "cut_short": trace.cut_short,
    }
    return _report(trace.path, raw | read, trace.interfaces, eth.rate_gbps)


def stats_files(
    paths: Sequence[str | os.PathLike],
    *,
    eth_gbps: float = 40,
    windows_ns: Sequence[int] = WINDOWS_NS,
    skip_bad: bool = False,
    strict: bool = False,
) -> Iterator[dict]:
    """`trace stats` of each file, in order: every file is summarised while it is decoded, in
    bounded memory (docs/trace.md), the files in parallel across cores. Arguments are checked
    before any file is read; a file that cannot be read raises when its turn comes, after the
    files before it were yielded."""
    config = stats_config(eth_gbps, windows_ns)
    files = _check_inputs(paths)
    found = core().trace_stats(files, config, skip_bad=skip_bad, strict=strict)
    for path, raw in zip(files, map(checked, found), strict=True):
        interfaces = [Interface(**i) for i in raw["interfaces"]]
        yield _report(path, raw, interfaces, eth_gbps)
