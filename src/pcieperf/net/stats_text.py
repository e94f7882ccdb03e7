"""`trace stats` for people: one block per file (or archive port), as capinfos prints one, or
one row per file (`--brief`, as `capinfos -T`), with times in ISO 8601 UTC, durations in
human units and rates with scaled units (pcieperf.units). Rates of bits count frames incl.
FCS (docs/units.md); the JSON keeps the recorded lengths' keys beside them (docs/trace.md)."""

from __future__ import annotations

import os
from collections.abc import Sequence

from pcieperf.net.trace.files import LINK_HEADER_BYTES
from pcieperf.results import Column, Table
from pcieperf.text import plural
from pcieperf.units import duration_text, duration_token, scaled


def archive_label(result: dict) -> dict:
    """An archive port's result with a `file` line for the text output."""
    if "port" not in result:
        return result
    files = f"{plural(result['files'], 'file')}, {result['first_file']} .. {result['last_file']}"
    return result | {"file": f"port {result['port']} ({files})"}


def _pps(pps: float | None) -> str:
    """A packet rate, scaled ("1.00 Mpps"), or "-"."""
    return "-" if pps is None else scaled(pps, "pps")


def _bits(gbps: float | None) -> str:
    """A bit rate given in Gb/s, scaled ("544 Mb/s"), or "-"."""
    return "-" if gbps is None else scaled(gbps * 1e9, "b/s")


def _rate(pps: float | None, gbps: float | None) -> str:
    """A packet rate and a bit rate, scaled: "1.00 Mpps, 544 Mb/s"."""
    return f"{_pps(pps)}, {_bits(gbps)}"


def _duration(r: dict) -> str:
    """The capture's duration for people, from its exact first and last time."""
    return duration_text(r["last_ts_ns"] - r["first_ts_ns"]) if r["packets"] else "-"


def _is_ethernet(r: dict) -> bool:
    """Whether every interface's packets can be sized as Ethernet frames (else frames are
    counted by their recorded length: no FCS to add)."""
    return all(i["linktype"] in LINK_HEADER_BYTES for i in r["interfaces"])


_STRICT_ORDER = {True: "yes", False: "no", None: "unknown (packets without timestamps)"}
_NOTES = {
    "skipped": "damaged records skipped",
    "snaplen_exceeded": "records longer than their snaplen",
    "wirelen_below_caplen": "records with a wire length below their caplen",
}


def stats_text(r: dict) -> str:
    """One file's (or port's) statistics as a short text block."""
    r = archive_label(r)
    b = r["bursts"]
    stored = "" if r["compression"] == "none" else f", {r['compression']}"
    lines = [
        f"{r['file']} ({r['format']}{stored}): {plural(r['packets'], 'packet')} over "
        f"{_duration(r)}",
        *_times_lines(r),
        _bytes_line(r),
        _mean_line(r),
        *(_window_line(w) for w in r["rates"] if r["mean_pps"]),
        f"  strict time order: {_STRICT_ORDER[r['strict_time_order']]} "
        f"({plural(r['out_of_order'], 'packet')} earlier than the one before{_step_back_text(r)})",
        _ties_text(r),
        f"  bursts at {b['eth_gbps']} GbE: {b['bursts']} "
        f"({plural(b['packets_in_bursts'], 'packet')}, longest {b['max_burst']})",
        f"  frame sizes{' (incl. FCS)' if _is_ethernet(r) else ''}: "
        + ", ".join(f"{k}: {v}" for k, v in r["size_histogram"].items() if v),
    ]
    lines += [
        f"  interface {i['id']} ({i['name'] or 'unnamed'}, {i['linktype_name']}): "
        f"{plural(i['packets'], 'packet')}{_directions_text(i)}"
        for i in r["interfaces"]
    ]
    if r["implausible_epoch"]:
        lines.append("  dates: more than a century from now (see the warning)")
    lines += [f"  {r[key]} {text}" for key, text in _NOTES.items() if r[key]]
    if r["truncated"]:
        lines.append(f"  cut short: {r['cut_short']}")
    return "\n".join(lines)


def _times_lines(r: dict) -> list[str]:
    """First and last packet time (UTC, each to its packet's resolution), where known."""
    if not r["packets"]:
        return []
    if r["first_time"] is None:
        untimed = plural(r["untimed"], "packet")
        return [f"  first and last packet: unknown ({untimed} without a time)"]
    return [f"  first packet: {r['first_time']}", f"  last packet:  {r['last_time']}"]


def _bytes_line(r: dict) -> str:
    """The bytes counted three ways, named (docs/trace.md): in frames incl. FCS, as recorded
    (pcap's original length, no FCS) and captured."""
    recorded = f"{r['bytes_wire']} as recorded (no FCS), {r['bytes_captured']} captured"
    if not _is_ethernet(r):
        return f"  bytes: {recorded}; not all Ethernet: frames are the recorded lengths"
    return f"  bytes: {r['bytes_frame']} in frames incl. FCS, {recorded}"


def _mean_line(r: dict) -> str:
    """The mean packet rate and bit rate, saying which bytes the bits are."""
    if not r["mean_pps"]:
        return "  mean: none (no duration)"
    counted = "frames incl. FCS" if _is_ethernet(r) else "the recorded lengths"
    return f"  mean: {_rate(r['mean_pps'], r['mean_frame_gbps'])} in {counted}"


def _window_line(w: dict) -> str:
    """The peak over whole windows of one length (the last, shorter one is not a peak)."""
    per = duration_token(w["window_ns"], " ")
    if w["peak_pps"] is None:
        return f"  peak per {per}: no whole window (the capture is shorter)"
    whole = w["full_windows"]
    return (
        f"  peak per {per}: {_rate(w['peak_pps'], w['peak_frame_gbps'])} "
        f"({whole} whole window{'' if whole == 1 else 's'})"
    )


def _step_back_text(r: dict) -> str:
    """The largest step back in time, where there is one."""
    return f", by at most {duration_text(r['max_step_back_ns'])}" if r["out_of_order"] else ""


def _ties_text(r: dict) -> str:
    """Packets per distinct timestamp: 1 where every packet has a time of its own."""
    if not r["distinct_timestamps"]:
        return "  timestamps: none"
    return (
        f"  timestamps: {r['packets_per_timestamp']:.2f} packets per distinct time, at most "
        f"{r['max_equal_timestamps']} at one"
    )


def _directions_text(i: dict) -> str:
    """An interface's packets per pcapng direction, where any is known."""
    if i["packets_inbound"] == i["packets_outbound"] == 0:
        return ""
    return (
        f" ({i['packets_inbound']} inbound, {i['packets_outbound']} outbound, "
        f"{i['packets_direction_unknown']} unknown)"
    )


# --- one row per file (--brief) -----------------------------------------------------------------

_WHERE = ("file", "port", "files", "first_file", "last_file")  # what names a file or a port
_BRIEF_KEYS = (
    "format",
    "compression",
    "packets",
    "bytes_captured",
    "bytes_wire",
    "bytes_frame",
    "first_time",
    "last_time",
    "first_ts_ns",
    "last_ts_ns",
    "duration_s",
    "mean_pps",
    "mean_frame_gbps",
    "strict_time_order",
)


def brief_row(r: dict) -> dict:
    """A file's (or port's) statistics as one flat row: the keys of the full JSON that
    `capinfos -T` has a column for, with the peaks of each window as `peak_pps_1ms` and
    `peak_frame_gbps_1ms` (the window as --windows writes it)."""
    row = {k: r[k] for k in (*_WHERE, *_BRIEF_KEYS) if k in r}
    for w in r["rates"]:
        token = duration_token(w["window_ns"])
        row[f"peak_pps_{token}"] = w["peak_pps"]
        row[f"peak_frame_gbps_{token}"] = w["peak_frame_gbps"]
    return row


def brief_table(results: Sequence[dict]) -> Table:
    """One row per file (or port): its JSON and CSV are the rows, its text a table that fits
    the terminal, the columns that do not fit left out (the later windows' first)."""
    windows = [duration_token(w["window_ns"]) for w in results[0]["rates"]] if results else []
    peaks = [
        [Column(f"peak_pps_{t}", f"peak pkt/s {t}"), Column(f"peak_frame_gbps_{t}", f"bit/s {t}")]
        for t in windows
    ]
    columns = [
        Column("file", "file"),
        Column("format", "format"),
        Column("packets", "packets"),
        Column("first_time", "first packet (UTC)"),
        Column("last_time", "last packet (UTC)"),
        Column("duration", "duration"),
        Column("mean_pps", "mean pkt/s"),
        Column("mean_frame_gbps", "bit/s"),
        *(c for pair in peaks for c in pair),
    ]
    # Left out first where the table would not fit: the later windows' peaks, the last time,
    # the format, the first time, then the first window's peaks; the file, packets, duration
    # and mean stay.
    later = [c.key for pair in reversed(peaks[1:]) for c in reversed(pair)]
    first = [c.key for pair in peaks[:1] for c in reversed(pair)]
    shown = [_brief_text_row(r) for r in results]
    folder = _common_folder([row["file"] for row in shown])
    return Table(
        [brief_row(r) for r in results],
        columns,
        title=f"in {folder}" if folder else "",
        footer="bit/s: frames incl. FCS; peaks: the largest whole window (docs/trace.md)",
        text_rows=[row | {"file": row["file"].removeprefix(folder)} for row in shown],
        optional=[*later, "last_time", "format", "first_time", *first],
    )


def _common_folder(names: Sequence[str]) -> str:
    """The folder, ending in a separator, that every name lies in ("" if none): the text names
    it once above the table and the files by what follows."""
    paths = [n for n in names if os.sep in n]
    if len(paths) < len(names) or not paths:
        return ""
    folder = os.path.commonpath(paths)
    return "" if folder in ("", os.sep) else folder + os.sep


def _brief_text_row(r: dict) -> dict:
    """A row as the table shows it: times as recorded, the duration and rates scaled."""
    stored = "" if r["compression"] == "none" else f"/{r['compression']}"
    text = {
        "file": archive_label(r)["file"],
        "format": r["format"] + stored,
        "packets": r["packets"],
        "first_time": r["first_time"] or "-",
        "last_time": r["last_time"] or "-",
        "duration": _duration(r),
        "mean_pps": _pps(r["mean_pps"]),
        "mean_frame_gbps": _bits(r["mean_frame_gbps"]),
    }
    for w in r["rates"]:
        token = duration_token(w["window_ns"])
        text[f"peak_pps_{token}"] = _pps(w["peak_pps"])
        text[f"peak_frame_gbps_{token}"] = _bits(w["peak_frame_gbps"])
    return text
