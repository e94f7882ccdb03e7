"""Imported uncore counter measurements (pcm-iio, perf iostat, perf stat, VTune), normalised to
one table of samples: time, source, socket, stack/root port, part, metric, value per second, unit.

Metric names follow the DPDK model's (`dpdk.METRICS`): `inbound_read` is the device reading host
memory, `inbound_write` the device writing it, `outbound_read`/`outbound_write` the CPU reading /
writing device space; all in bytes per second. The free-running IIO counters only see a
direction: `device_to_host` (bw_in: inbound writes plus outbound read completions) and
`host_to_device` (bw_out: inbound read completions plus outbound writes). IOMMU counters keep
their tool's name in snake_case (`iotlb_lookup`, `iotlb_miss`, ...) in events per second.
Where each format detail comes from is cited at the parser; docs/counters.md has the unit
semantics per source.
"""

from __future__ import annotations

import csv
import datetime as dt
import re
from dataclasses import dataclass, field
from pathlib import Path

from pcieperf.errors import CounterFileError, require_choice, require_positive
from pcieperf.errors import UsageError as UsageError  # re-exported: `counters.UsageError`

SOURCES = ("pcm-iio", "perf-iostat", "perf-stat", "vtune")
BYTES_PER_S = "B/s"
EVENTS_PER_S = "1/s"
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
# `-human-readable` prints unit_format(): "%4d K" etc. with decimal divisors (src/utils.h).
HUMAN_SUFFIX = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9}
_HUMAN = re.compile(r"^\s*(-?[0-9]+(?:\.[0-9]+)?(?:e[+-]?[0-9]+)?)\s*([KMG]?)\s*$")
# A counter read of 2^64-1 is pcm's "not available" sentinel (intel/pcm#306); after the x4 byte
# scaling no real per-second PCIe value comes near 1e18.
IMPLAUSIBLE = 1e18
# perf iostat prints count / (256 * 1024): 4-byte transfers in MiB (tools/perf/arch/x86/util/
# iostat.c); its metric names map to ours one to one.
PERF_IOSTAT_METRICS = {
    "Inbound Read(MB)": "inbound_read",
    "Inbound Write(MB)": "inbound_write",
    "Outbound Read(MB)": "outbound_read",
    "Outbound Write(MB)": "outbound_write",
}
MIB = 2**20


def snake(name: str) -> str:
    """`IOTLB Miss` -> `iotlb_miss`."""
    return re.sub(r"[^0-9a-z]+", "_", name.lower()).strip("_")


@dataclass
class Samples:
    """Parsed samples of one file, column by column (all the same length)."""

    source: str
    file: str
    t_s: list[float] = field(default_factory=list)
    wall: list[dt.datetime | None] = field(default_factory=list)
    socket: list[int | None] = field(default_factory=list)
    stack: list[str] = field(default_factory=list)
    part: list[str] = field(default_factory=list)
    metric: list[str] = field(default_factory=list)
    value: list[float] = field(default_factory=list)
    unit: list[str] = field(default_factory=list)
    skipped_columns: list[str] = field(default_factory=list)

    def add(
        self,
        t_s: float,
        wall: dt.datetime | None,
        socket: int | None,
        stack: str,
        part: str,
        metric: str,
        value: float,
        unit: str,
    ) -> None:
        """Append one sample."""
        self.t_s.append(t_s)
        self.wall.append(wall)
        self.socket.append(socket)
        self.stack.append(stack)
        self.part.append(part)
        self.metric.append(metric)
        self.value.append(value)
        self.unit.append(unit)

    def __len__(self) -> int:
        return len(self.value)


def _fail(file: str, line: int, problem: str) -> CounterFileError:
    return CounterFileError(f"{file}: line {line}: {problem}")


def _number(text: str, file: str, line: int, column: str) -> float:
    try:
        value = float(text)  # the common case, without the regex
    except ValueError:
        match = _HUMAN.match(text)
        if not match:
            raise _fail(file, line, f"{column} value {text.strip()!r} is not a number") from None
        value = float(match.group(1)) * HUMAN_SUFFIX[match.group(2)]
    if not 0 <= value < IMPLAUSIBLE:
        raise _fail(
            file,
            line,
            f"{column} value {text.strip()!r} is not a counter reading: negative, not finite, "
            "or 2^64-1, which pcm prints when a counter is unavailable (intel/pcm#306)",
        )
    return value


# --- pcm-iio ----------------------------------------------------------------------------------


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


# --- perf iostat --------------------------------------------------------------------------------


def parse_perf_iostat(
    text: str, file: str, *, interval_s: float | None = None, lenient: bool = False
) -> Samples:
    """Parse `perf iostat -x,` output: header `port,<metric>(MB)...`, rows `<domain:bus>,...`,
    each prefixed `<seconds>,` with `-I` (tools/perf/arch/x86/util/iostat.c). Values are MiB per
    interval (count x 4 B / 2^20); the interval is each port's time step, or `interval_s` for a
    run without `-I`, which prints totals."""
    lines = [(i, ln) for i, ln in enumerate(text.splitlines(), start=1) if ln.strip()]
    if not lines:
        raise _fail(file, 1, "empty file")
    number, head = lines[0]
    header = [c.strip() for c in head.split(",")]
    if header[0] != "port":
        raise _fail(
            file, number, "not a perf iostat CSV header (expected port,Inbound Read(MB),...)"
        )
    out = Samples("perf-iostat", file)
    metrics = [_perf_metric(name, file, number, lenient, out) for name in header[1:]]
    previous: dict[str, float] = {}
    for number, raw in lines[1:]:
        cells = [c.strip() for c in raw.split(",")]
        if len(cells) == len(header) + 1:
            t = _number(cells[0], file, number, "time")
            span = t - previous.get(cells[1], 0.0)
            cells = cells[1:]
        elif len(cells) == len(header) and interval_s:
            t = span = float(interval_s)
        elif len(cells) == len(header):
            raise _fail(
                file, number, "perf iostat without -I reports totals; pass --interval SECONDS"
            )
        else:
            raise _fail(file, number, f"{len(cells)} fields but the header has {len(header)}")
        if span <= 0:
            raise _fail(file, number, f"time {t} does not advance for port {cells[0]}")
        previous[cells[0]] = t
        for metric, cell in zip(metrics, cells[1:], strict=True):
            if metric:
                mib = _number(cell, file, number, metric)
                out.add(t, None, None, cells[0], "", metric, mib * MIB / span, BYTES_PER_S)
    if not len(out):
        raise _fail(file, lines[-1][0], "no samples after the header")
    return out


def _perf_metric(name: str, file: str, line: int, lenient: bool, out: Samples) -> str | None:
    if name in PERF_IOSTAT_METRICS:
        return PERF_IOSTAT_METRICS[name]
    if lenient:
        out.skipped_columns.append(name)
        return None
    raise _fail(
        file,
        line,
        f"unknown perf iostat column {name!r}; known: "
        f"{', '.join(PERF_IOSTAT_METRICS)} (pass --lenient to skip it)",
    )


# --- perf stat --------------------------------------------------------------------------------

# Programmable IIO data events (tools/perf/pmu-events/arch/x86/skylakex/uncore-io.json, and
# pcm's opCode-6-85 table): event 0x83 counts requests OF the CPU by the device (inbound), 0xc0
# requests BY the CPU of the device (outbound); umask 0x4 reads, 0x1 writes; 4 bytes per count.
PERF_IIO_RAW = {
    (0x83, 0x4): "inbound_read",
    (0x83, 0x1): "inbound_write",
    (0xC0, 0x4): "outbound_read",
    (0xC0, 0x1): "outbound_write",
}
PERF_IIO_ALIAS = re.compile(r"UNC_IIO_DATA_REQ_(OF|BY)_CPU\.MEM_(READ|WRITE)\.PART([0-9]+)")
# Free-running bandwidth counters (arch/x86/events/intel/uncore_snbep.c): bw_in_portN is data
# from the device into the IIO, bw_out_portN data from the IIO to the device; perf scales them
# to MiB (.scale 3.814697266e-6 = 4 B / 2^20).
PERF_FREE_RUNNING = re.compile(r"(bw_in|bw_out)_port([0-9]+)")
FREE_RUNNING_METRIC = {"bw_in": "device_to_host", "bw_out": "host_to_device"}
IIO_COUNT_BYTES = 4  # an unscaled IIO data event counts 4-byte transfers
# perf prints the unit the event's ScaleUnit names after scaling ("4Bytes" -> Bytes), or none.
PERF_UNITS = {"MiB": MIB, "KiB": 2**10, "Bytes": 1, "B": 1, "": IIO_COUNT_BYTES}
# The optional aggregation field: S0-D0 (--per-die), S0 (--per-socket), N0 (--per-node), CPU3.
_PERF_AGGR = re.compile(r"(?:S([0-9]+)(?:-D[0-9]+)?|N[0-9]+|CPU[0-9]+)")
# A value field may also be nan/inf (perf prints them for broken scaling); _number rejects them.
_PERF_VALUE = re.compile(r"-?(?:[0-9]+(?:\.[0-9]+)?(?:e[+-]?[0-9]+)?|nan|inf)", re.IGNORECASE)
PERF_NOT_COUNTED = ("<not counted>", "<not supported>")


@dataclass(frozen=True)
class PerfEvent:
    """What one perf stat event name measures: metric, stack (PMU) and part/port."""

    metric: str
    stack: str
    part: str


def perf_event(name: str) -> PerfEvent | None:
    """Recognise an IIO event as perf stat names it (tools/perf/util/stat-display.c,
    uniquify_event_name): `pmu/bw_in_port0/`, `pmu/event=0x83,umask=0x4,.../`, an alias
    `UNC_IIO_DATA_REQ_...` as `NAME [pmu]` or `pmu/NAME/`, or bare when perf merged the PMUs.
    None if it is none of these."""
    bracket = re.fullmatch(r"(\S+) \[(\S+)\]", name)
    if bracket:
        inner, pmu = bracket.groups()
    elif "/" in name:
        pmu, _, inner = name.strip("/").partition("/")
    else:
        inner, pmu = name, ""
    stack = pmu or "uncore_iio (all)"
    alias = PERF_IIO_ALIAS.fullmatch(inner)
    if alias:
        who, op, part = alias.groups()
        direction = "inbound" if who == "OF" else "outbound"
        return PerfEvent(f"{direction}_{op.lower()}", stack, f"part{part}")
    free = PERF_FREE_RUNNING.fullmatch(inner)
    if free:
        return PerfEvent(FREE_RUNNING_METRIC[free.group(1)], stack, f"port{free.group(2)}")
    terms = dict(t.partition("=")[::2] for t in inner.split(","))
    raw = PERF_IIO_RAW.get((_int(terms.get("event", "")), _int(terms.get("umask", ""))))
    if raw:
        return PerfEvent(raw, stack, _ch_mask_part(terms.get("ch_mask", "")))
    return None


def _int(text: str) -> int | None:
    """`0x04` -> 4; None if it is not a number."""
    try:
        return int(text, 0)
    except ValueError:
        return None


def _ch_mask_part(mask: str) -> str:
    """`ch_mask=0x4` selects part 2 (one bit per x4 part, uncore-io.json PART0..3 = 0x1..0x8)."""
    try:
        bits = int(mask, 0)
    except ValueError:
        return f"ch_mask={mask}" if mask else ""
    return f"part{bits.bit_length() - 1}" if bits and bits & (bits - 1) == 0 else f"ch_mask={mask}"


def _perf_event_index(cells: list[str]) -> int | None:
    """Index of the event-name field: the first field after a value and a unit."""
    for i in range(2, len(cells)):
        value, unit, name = cells[i - 2], cells[i - 1], cells[i]
        is_value = value in PERF_NOT_COUNTED or _PERF_VALUE.fullmatch(value)
        if is_value and not _PERF_VALUE.fullmatch(unit) and name and not name[0].isdigit():
            return i
    return None


def _perf_prefix(prefix: list[str], file: str, line: int) -> tuple[float | None, int | None, str]:
    """(time, socket, aggregation) from the fields before the value: [time] [aggregation
    [#cpus]]; the aggregation (S0, S0-D1, N1, CPU36) is "" without one."""
    time = None
    if prefix and not _PERF_AGGR.fullmatch(prefix[0]):
        time = _number(prefix[0], file, line, "time")
        prefix = prefix[1:]
    if len(prefix) > 2 or (prefix and not _PERF_AGGR.fullmatch(prefix[0])):
        raise _fail(file, line, f"unexpected fields {';'.join(prefix)!r} before the value")
    if not prefix:
        return time, None, ""
    socket = _PERF_AGGR.fullmatch(prefix[0]).group(1)
    return time, None if socket is None else int(socket), prefix[0]


def parse_perf_stat(
    text: str,
    file: str,
    *,
    delimiter: str | None = None,
    interval_s: float | None = None,
    lenient: bool = False,
) -> Samples:
    """Parse `perf stat -x<sep>` output on IIO events (tools/perf/Documentation/perf-stat.txt,
    CSV FORMAT: [time] [aggregation [#cpus]] value, unit, event, run time, percent, [metric]).
    With `-I` values are per interval (divided by each event's time step), without it totals
    (`interval_s` is the run's length). `#` comment lines (perf -o) are skipped."""
    lines = [
        (i, ln)
        for i, ln in enumerate(text.splitlines(), start=1)
        if ln.strip() and not ln.startswith("#")
    ]
    if not lines:
        raise _fail(file, 1, "empty file")
    sep = delimiter or max(";,\t", key=lines[0][1].count)
    out = Samples("perf-stat", file)
    previous: dict[tuple, float] = {}
    seen: set[tuple] = set()
    for number, raw in lines:
        cells = [c.strip() for c in raw.split(sep)]
        at = _perf_event_index(cells)
        if at is None:
            raise _fail(
                file, number, "not a perf stat -x line ([time;][S0;1;]value;unit;event;...)"
            )
        t, socket, aggregation = _perf_prefix(cells[: at - 2], file, number)
        value, unit, name = cells[at - 2 : at + 1]
        event = perf_event(name)
        per_part = aggregation and (not aggregation.startswith("S") or "-D" in aggregation)
        if event and per_part:
            # Per die, node or CPU: keep which one in the stack (a socket is its own column).
            event = PerfEvent(event.metric, f"{event.stack} [{aggregation}]", event.part)
        if event is None or value in PERF_NOT_COUNTED:
            problem = f"event {name!r} is {value}" if event else f"unknown perf stat event {name!r}"
            if not lenient:
                raise _fail(file, number, f"{problem} (pass --lenient to skip it)")
            if name not in out.skipped_columns:
                out.skipped_columns.append(name)
            continue
        key = (aggregation, name)
        t, span = _perf_span(t, previous.get(key, 0.0), interval_s, file, number)
        previous[key] = t
        sample = (t, socket, event.stack, event.part, event.metric)
        if sample in seen:
            raise _fail(
                file,
                number,
                f"{name} counts {event.metric} of {event.stack} {event.part} a second time "
                f"at {t} s (the same event under two names?)",
            )
        seen.add(sample)
        if unit not in PERF_UNITS:
            raise _fail(
                file, number, f"unit {unit!r} of {name} is not one of {', '.join(PERF_UNITS)}"
            )
        data_bytes = _number(value, file, number, name) * PERF_UNITS[unit]
        out.add(
            t, None, socket, event.stack, event.part, event.metric, data_bytes / span, BYTES_PER_S
        )
    if not len(out):
        raise _fail(file, lines[-1][0], "no IIO samples (every event was skipped)")
    return out


def _perf_span(
    t: float | None, previous: float, interval_s: float | None, file: str, line: int
) -> tuple[float, float]:
    """(time, length) of the interval a perf value covers."""
    if t is None:
        if not interval_s:
            raise _fail(file, line, "perf without -I reports totals; pass --interval SECONDS")
        return float(interval_s), float(interval_s)
    if t <= previous:
        raise _fail(file, line, f"time {t} does not advance")
    return t, t - previous


# --- VTune ---------------------------------------------------------------------------------------

VTUNE_HEADER = ["Hierarchy Level", "Metric Name", "Metric Value"]
# `vtune -report summary` of an `-collect io` result (labels as the VTune user guide's Input
# and Output analysis and public report parsers spell them): the name carries the unit.
VTUNE_METRICS = {
    "Inbound PCIe Read": "inbound_read",
    "Inbound PCIe Write": "inbound_write",
    "Outbound PCIe Read": "outbound_read",
    "Outbound PCIe Write": "outbound_write",
}
# VTune's bandwidth units; taken as decimal (an assumption: its documentation does not say).
VTUNE_UNITS = {"B/sec": 1.0, "KB/sec": 1e3, "MB/sec": 1e6, "GB/sec": 1e9}
VTUNE_TABLE = "Bandwidth Domain"
VTUNE_ELAPSED = "Elapsed Time"  # seconds; the averages cover it, so it is each sample's time


def parse_vtune(
    text: str, file: str, *, delimiter: str | None = None, lenient: bool = False
) -> Samples:
    """Parse `vtune -report summary -format csv` of an Input and Output analysis: rows
    `level,name,value`, names quoted where they hold the delimiter (or not: the extra cells are
    joined back), the Bandwidth Utilization table embedded as wider rows (skipped)."""
    lines = text.splitlines()
    first = next((i for i, ln in enumerate(lines) if ln.strip()), None)
    if first is None:
        raise _fail(file, 1, "empty file")
    sep = delimiter or max(",;\t|", key=lines[first].count)
    rows = list(csv.reader(lines, delimiter=sep))
    header = [c.strip() for c in rows[first]]
    if header[:3] != VTUNE_HEADER:
        raise _fail(file, first + 1, f"not a VTune CSV report (expected {','.join(VTUNE_HEADER)})")
    if len(header) > 3 and not lenient:
        raise _fail(
            file, first + 1, f"unknown VTune column {header[3]!r} (pass --lenient to skip it)"
        )
    out = Samples("vtune", file)
    out.skipped_columns.extend(header[3:])
    table_width, elapsed = 0, 0.0
    for number, cells in enumerate(rows[first + 1 :], start=first + 2):
        if not any(c.strip() for c in cells):
            continue
        if not cells[0].strip().isdigit():
            raise _fail(file, number, f"hierarchy level {cells[0]!r} is not a number")
        if len(cells) > 2 and cells[1] == VTUNE_TABLE:
            table_width = len(cells)
            continue
        if table_width and len(cells) == table_width:
            continue
        table_width = 0
        if len(cells) < 3:
            raise _fail(file, number, f"truncated row: {len(cells)} fields, expected 3")
        name, value = sep.join(cells[1:-1]).strip(), cells[-1].strip()
        if name == VTUNE_ELAPSED:
            elapsed = _number(value, file, number, name)
        metric = next((m for k, m in VTUNE_METRICS.items() if name.startswith(k)), None)
        if metric is None or metric in out.metric:
            continue
        unit = name.rpartition(",")[2].strip()
        if unit not in VTUNE_UNITS:
            raise _fail(
                file, number, f"unit {unit!r} of {name!r} is not one of {', '.join(VTUNE_UNITS)}"
            )
        rate = _number(value, file, number, name) * VTUNE_UNITS[unit]
        out.add(elapsed, None, None, "", "", metric, rate, BYTES_PER_S)
    if not len(out):
        raise _fail(
            file,
            len(lines),
            "no PCIe bandwidth metric (Inbound/Outbound PCIe Read/Write); was the result "
            "collected with -collect io and collect-pcie-bandwidth=true?",
        )
    return out


def detect(text: str, file: str) -> str:
    """Which tool wrote a counter file, from its first line (or perf's event names)."""
    first = next((ln for ln in text.splitlines() if ln.strip() and not ln.startswith("#")), "")
    if first.startswith("Date") and "Socket" in first:
        return "pcm-iio"
    if first.startswith("port,"):
        return "perf-iostat"
    if first.startswith("Hierarchy Level"):
        return "vtune"
    if "uncore_iio" in text[:65536] or "UNC_IIO_" in text[:65536]:
        return "perf-stat"
    raise CounterFileError(
        f"{file}: cannot tell which tool wrote it; pass --format ({', '.join(SOURCES)})"
    )


def parse(
    path: Path,
    source: str | None,
    *,
    lenient: bool = False,
    delimiter: str | None = None,
    interval_s: float | None = None,
) -> Samples:
    """Parse a counter file of the given source format (None: detect it)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CounterFileError(f"{path}: cannot read: {exc}") from None
    if interval_s is not None:
        require_positive("--interval", interval_s)
    file = str(path)
    source = source or detect(text, file)
    require_choice("counter format", source, SOURCES)
    if source == "pcm-iio":
        return parse_pcm_iio(text, file, delimiter=delimiter, lenient=lenient)
    if source == "perf-stat":
        return parse_perf_stat(
            text, file, delimiter=delimiter, interval_s=interval_s, lenient=lenient
        )
    if source == "vtune":
        return parse_vtune(text, file, delimiter=delimiter, lenient=lenient)
    return parse_perf_iostat(text, file, interval_s=interval_s, lenient=lenient)
