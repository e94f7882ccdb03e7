"""The pcm-iio importer: `pcm-iio -csv` output (intel/pcm) as samples, and the column names and
value rules its table form (`pcm_iio_table`) shares."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable

from pcieperf.measure.counters.samples import (
    BYTES_PER_S,
    EVENTS_PER_S,
    Samples,
    Sink,
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
# pcm-iio's interval when none is given (PCM_DELAY_DEFAULT, src/pcm-iio-pmu.h).
PCM_DELAY_DEFAULT_S = 3.0
_HEADER_START = re.compile(r"(?:Date|Socket)(.)")  # the header's first name, then the delimiter
PRINTED_SUFFIXES = frozenset("KMGT")
PRINTED_PRECISION = (
    "values printed with a K/M/G/T suffix (pcm's unit_format) are cut, not rounded, to that "
    "unit: '1495 M' is between 1495e6 and 1496e6 per second"
)


def pcm_metric(
    name: str, file: str, line: int, lenient: bool, skipped: list[str]
) -> tuple[str, str] | None:
    """(metric, unit) of one pcm-iio column name; an unknown one fails, or under `lenient` is
    named in `skipped` and gives None."""
    if name in PCM_BYTE_METRICS:
        return PCM_BYTE_METRICS[name], BYTES_PER_S
    if name in PCM_EVENT_METRICS:
        return snake(name), EVENTS_PER_S
    if not lenient:
        known = ", ".join([*PCM_BYTE_METRICS, *PCM_EVENT_METRICS])
        raise _fail(
            file,
            line,
            f"unknown pcm-iio column {name!r}; known: {known} "
            "(pass --lenient to skip unknown columns)",
        )
    if name not in skipped:
        skipped.append(name)
    return None


def pcm_value(text: str, file: str, line: int, column: str, out: Samples) -> float:
    """One pcm-iio value; a unit_format() one (K/M/G/T) is kept as printed and its precision
    noted: the divisions are integer ones, so `1495 M` is 1495e6 up to 1496e6 (src/utils.h)."""
    value = _number(text, file, line, column)
    if text.rstrip()[-1:] in PRINTED_SUFFIXES:
        out.note(PRINTED_PRECISION)
    return value


def _pcm_columns(
    header: list[str], file: str, line: int, lenient: bool, skipped: list[str]
) -> dict[int, tuple[str, str]]:
    """Column index -> (metric, unit) for a pcm-iio header; unknown names fail unless lenient."""
    dated = header[:3] == ["Date", "Time", "Socket"]
    if not (dated or header[0] == "Socket") or "Name" not in header or "Part" not in header:
        raise _fail(
            file,
            line,
            "not a pcm-iio CSV header (expected Date, Time, Socket, ..., "
            "Name, Part, then counters; before pcm 202509 without Date, Time)",
        )
    metrics = {}
    for i, name in enumerate(header):
        if name in PCM_KEYS:
            continue
        metric = pcm_metric(name, file, line, lenient, skipped)
        if metric is not None:
            metrics[i] = metric
    if not metrics:
        raise _fail(file, line, "the header names no counter column")
    return metrics


def parse_pcm_iio(
    lines: Iterable[str],
    file: str,
    *,
    delimiter: str | None = None,
    lenient: bool = False,
    interval_s: float | None = None,
    sink: Sink | None = None,
) -> Samples:
    """Parse `pcm-iio -csv` output: a header before every sample block (src/pcm-iio-pmu.cpp,
    PcmIioCsvBuilder), per-second values already scaled to bytes, ragged rows (IOTLB/VT-d
    columns only in each stack's Part0 row), optional `Root Port`, any delimiter. Before
    release 202509 the rows have no Date,Time (build_csv in src/pcm-iio.cpp): blocks are then
    `interval_s` apart (pcm-iio's default 3 s when not given); before 202207 the header lacks
    `Part` (`_with_part`). The lines are read once, in order (a stream); `sink` takes the
    samples chunk by chunk (`Samples`)."""
    out = Samples("pcm-iio", file, sink=sink)
    sep = delimiter
    header: list[str] | None = None
    columns: dict[int, tuple[str, str]] = {}
    index: dict[str, int] = {}
    t0: dt.datetime | None = None
    stamp: tuple[str, str] | None = None
    wall: dt.datetime | None = None
    blocks = number = 0
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        if sep is None:  # the header's first name, then the delimiter
            head = _HEADER_START.match(raw)
            sep = head.group(1) if head else ","
        cells = [c.strip() for c in raw.split(sep)]
        if cells[0] in ("Date", "Socket"):
            cells = _with_part(cells, out)
            header, columns = cells, _pcm_columns(cells, file, number, lenient, out.skipped_columns)
            index = {name: i for i, name in enumerate(header)}
            blocks += 1
            continue
        if header is None:
            raise _fail(
                file,
                number,
                "not a pcm-iio CSV: it must start with a Date,Time,Socket header line "
                "(or be pcm-iio's table: |IIO Stack ...|IB write|...)",
            )
        if len(cells) > len(header):
            raise _fail(file, number, f"{len(cells)} fields but the header has {len(header)}")
        keys = max(index[k] for k in PCM_KEYS if k in index)  # Name, Part may come late
        if len(cells) <= keys or not any(i < len(cells) for i in columns):
            raise _fail(file, number, "truncated row: no counter values")
        if "Date" not in index:
            t_s = (blocks - 1) * (interval_s or PCM_DELAY_DEFAULT_S)
        elif (cells[0], cells[1]) != stamp:  # a block's rows share one time stamp
            stamp, wall = (cells[0], cells[1]), _pcm_time(cells[0], cells[1], file, number)
            t0 = t0 or wall
            t_s = (wall - t0).total_seconds()
        socket = _socket(cells[index["Socket"]], file, number)
        stack = cells[index["Name"]]
        if "Root Port" in index:
            stack = f"{stack} [{cells[index['Root Port']]}]"
        for i, (metric, unit) in columns.items():
            if i < len(cells) and cells[i] != "":
                value = pcm_value(cells[i], file, number, header[i], out)
                out.add(t_s, wall, socket, stack, cells[index["Part"]], metric, value, unit)
    if header is None:  # any other line before a header was refused
        raise _fail(file, 1, "empty file")
    if not len(out):
        raise _fail(file, number, "no samples after the header")
    if "Date" not in index:
        note_untimed(out, blocks, interval_s)
    return out


def _with_part(header: list[str], out: Samples) -> list[str]:
    """The header with `Part` after `Name`: releases 202109..202205 did not print that name
    though their rows hold the part there (intel/pcm#414, fixed in 202207)."""
    if "Part" in header or "Name" not in header:
        return header
    out.note("the header names no Part column (pcm-iio before 202207): taken to follow Name")
    after = header.index("Name") + 1
    return [*header[:after], "Part", *header[after:]]


def note_untimed(out: Samples, intervals: int, interval_s: float | None) -> None:
    """Note that `intervals` blocks printed without a time were placed pcm-iio's default
    interval apart, where there is more than one and no `--interval` was given."""
    if intervals > 1 and interval_s is None:
        out.note(
            f"pcm-iio printed no time: its {intervals} intervals are taken as its default "
            f"{PCM_DELAY_DEFAULT_S:g} s apart (pass --interval SECONDS)"
        )


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
