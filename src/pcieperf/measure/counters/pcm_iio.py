"""The pcm-iio importer: `pcm-iio -csv` output (intel/pcm) as samples."""

from __future__ import annotations

import datetime as dt
import re

from pcieperf.measure.counters.samples import (
    BYTES_PER_S,
    EVENTS_PER_S,
    Samples,
    _fail,
    _number,
    snake,
)

# pcm-iio column names (hname) per CPU generation, from the opCode-<family>-<model>.txt tables
# of intel/pcm: 6-85 (Skylake-SP / Cascade Lake) name the byte events "... (bytes)"; 6-106
# (Ice Lake), 6-143 (Sapphire Rapids) and 6-173 (Granite Rapids) drop the suffix.
PCM_BYTE_METRICS = {
    "IB write (bytes)": "inbound_write",
    "IB read (bytes)": "inbound_read",
    "OB read (bytes)": "outbound_read",
    "OB write (bytes)": "outbound_write",
    "IB write": "inbound_write",
    "IB read": "inbound_read",
    "OB read": "outbound_read",
    "OB write": "outbound_write",
}
PCM_EVENT_METRICS = (
    "IOTLB Hit",
    "IOTLB Miss",
    "IOTLB Lookup",
    "VT-d CTXT Miss",
    "VT-d L1 Miss",
    "VT-d L2 Miss",
    "VT-d L3 Miss",
    "VT-d Mem Read",
    "Ctxt Cache Hit",
    "256T Cache Hit",
    "512G Cache Hit",
    "1G Cache Hit",
    "2M Cache Hit",
    "4K Cache Hit",
    "IOMMU Mem Access",
)
PCM_KEYS = ("Date", "Time", "Socket", "Root Port", "Name", "Part")


def _pcm_columns(
    header: list[str], file: str, line: int, lenient: bool, skipped: list[str]
) -> dict[int, tuple[str, str]]:
    """Column index -> (metric, unit) for a pcm-iio header; unknown names fail unless lenient."""
    if header[:3] != ["Date", "Time", "Socket"] or "Name" not in header or "Part" not in header:
        raise _fail(
            file,
            line,
            "not a pcm-iio CSV header (expected Date, Time, Socket, ..., "
            "Name, Part, then counters)",
        )
    metrics = {}
    for i, name in enumerate(header):
        if name in PCM_KEYS:
            continue
        if name in PCM_BYTE_METRICS:
            metrics[i] = (PCM_BYTE_METRICS[name], BYTES_PER_S)
        elif name in PCM_EVENT_METRICS:
            metrics[i] = (snake(name), EVENTS_PER_S)
        elif lenient:
            if name not in skipped:
                skipped.append(name)
        else:
            known = ", ".join([*PCM_BYTE_METRICS, *PCM_EVENT_METRICS])
            raise _fail(
                file,
                line,
                f"unknown pcm-iio column {name!r}; known: {known} "
                "(pass --lenient to skip unknown columns)",
            )
    if not metrics:
        raise _fail(file, line, "the header names no counter column")
    return metrics


def parse_pcm_iio(
    text: str, file: str, *, delimiter: str | None = None, lenient: bool = False
) -> Samples:
    """Parse `pcm-iio -csv` output: a header before every sample block (src/pcm-iio-pmu.cpp,
    PcmIioCsvBuilder), per-second values already scaled to bytes, ragged rows (IOTLB/VT-d
    columns only in each stack's Part0 row), optional `Root Port`, any delimiter."""
    lines = text.splitlines()
    first = next((i for i, ln in enumerate(lines) if ln.strip()), None)
    if first is None:
        raise _fail(file, 1, "empty file")
    head = lines[first]
    sep = delimiter or (head[4] if head.startswith("Date") and len(head) > 4 else ",")
    out = Samples("pcm-iio", file)
    header: list[str] | None = None
    columns: dict[int, tuple[str, str]] = {}
    index: dict[str, int] = {}
    t0: dt.datetime | None = None
    stamp: tuple[str, str] | None = None
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        cells = [c.strip() for c in raw.split(sep)]
        if cells[0] == "Date":
            header, columns = cells, _pcm_columns(cells, file, number, lenient, out.skipped_columns)
            index = {name: i for i, name in enumerate(header)}
            continue
        if header is None:
            raise _fail(
                file, number, "not a pcm-iio CSV: it must start with a Date,Time,Socket header line"
            )
        if len(cells) > len(header):
            raise _fail(file, number, f"{len(cells)} fields but the header has {len(header)}")
        keys = max(index[k] for k in PCM_KEYS if k in index)  # Name, Part may come late
        if len(cells) <= keys or not any(i < len(cells) for i in columns):
            raise _fail(file, number, "truncated row: no counter values")
        if (cells[0], cells[1]) != stamp:  # a block's rows share one time stamp
            stamp, wall = (cells[0], cells[1]), _pcm_time(cells[0], cells[1], file, number)
            t0 = t0 or wall
            t_s = (wall - t0).total_seconds()
        socket = _socket(cells[index["Socket"]], file, number)
        stack = cells[index["Name"]]
        if "Root Port" in index:
            stack = f"{stack} [{cells[index['Root Port']]}]"
        for i, (metric, unit) in columns.items():
            if i < len(cells) and cells[i] != "":
                value = _number(cells[i], file, number, header[i])
                out.add(
                    t_s,
                    wall,
                    socket,
                    stack,
                    cells[index["Part"]],
                    metric,
                    value,
                    unit,
                )
    if not len(out):
        raise _fail(file, len(lines), "no samples after the header")
    return out


def _pcm_time(date: str, time: str, file: str, line: int) -> dt.datetime:
    """Date `YYYY-MM-DD` and Time `HH:MM:SS.mmm` (src/utils.h printDateForCSV, local time)."""
    try:
        return dt.datetime.strptime(f"{date} {time}", "%Y-%m-%d %H:%M:%S.%f")
    except ValueError:
        raise _fail(
            file, line, f"date/time {date!r} {time!r} is not YYYY-MM-DD HH:MM:SS.mmm"
        ) from None


def _socket(text: str, file: str, line: int) -> int:
    match = re.fullmatch(r"(?:Socket|SKT)\s*([0-9]+)", text)
    if not match:
        raise _fail(file, line, f"socket {text!r} is not like Socket0")
    return int(match.group(1))
