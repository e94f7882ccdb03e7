"""The perf importers: `perf iostat` and `perf stat` on IIO events (Linux tools/perf) as
samples."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from pcieperf.measure.counters.samples import (
    BYTES_PER_S,
    Samples,
    Sink,
    _fail,
    _number,
)

# iostat.c); its metric names map to ours one to one.
PERF_IOSTAT_METRICS = {
    "Inbound Read(MB)": "inbound_read",
    "Inbound Write(MB)": "inbound_write",
    "Outbound Read(MB)": "outbound_read",
    "Outbound Write(MB)": "outbound_write",
}
MIB = 2**20


# --- perf iostat --------------------------------------------------------------------------------


def _numbered(lines: Iterable[str], comments: bool = False) -> Iterator[tuple[int, str]]:
    """(line number, line) of the lines with text, less `#` comments where `comments`."""
    for number, line in enumerate(lines, start=1):
        if line.strip() and not (comments and line.startswith("#")):
            yield number, line


def parse_perf_iostat(
    lines: Iterable[str],
    file: str,
    *,
    interval_s: float | None = None,
    lenient: bool = False,
    sink: Sink | None = None,
) -> Samples:
    """Parse `perf iostat -x,` output: header `port,<metric>(MB)...`, rows `<domain:bus>,...`,
    each prefixed `<seconds>,` with `-I` (tools/perf/arch/x86/util/iostat.c). Values are MiB per
    interval (count x 4 B / 2^20); the interval is each port's time step, or `interval_s` for a
    run without `-I`, which prints totals. The lines are read once; `sink` as `Samples`'."""
    rows = _numbered(lines)
    number, head = next(rows, (1, ""))
    if not head:
        raise _fail(file, 1, "empty file")
    header = [c.strip() for c in head.split(",")]
    if header[0] != "port":
        raise _fail(
            file, number, "not a perf iostat CSV header (expected port,Inbound Read(MB),...)"
        )
    out = Samples("perf-iostat", file, sink=sink)
    metrics = [_perf_metric(name, file, number, lenient, out) for name in header[1:]]
    previous: dict[str, float] = {}
    for number, raw in rows:
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
        raise _fail(file, number, "no samples after the header")
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
PERF_IIO_RAW: dict[tuple[int | None, int | None], str] = {  # looked up with unparsed ones
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
    aggr = _PERF_AGGR.fullmatch(prefix[0])
    assert aggr is not None  # matched above
    socket = aggr.group(1)
    return time, None if socket is None else int(socket), prefix[0]


def parse_perf_stat(
    lines: Iterable[str],
    file: str,
    *,
    delimiter: str | None = None,
    interval_s: float | None = None,
    lenient: bool = False,
    sink: Sink | None = None,
) -> Samples:
    """Parse `perf stat -x<sep>` output on IIO events (tools/perf/Documentation/perf-stat.txt,
    CSV FORMAT: [time] [aggregation [#cpus]] value, unit, event, run time, percent, [metric]).
    With `-I` values are per interval (divided by each event's time step), without it totals
    (`interval_s` is the run's length). `#` comment lines (perf -o) are skipped. The lines are
    read once; `sink` as `Samples`'."""
    rows = _numbered(lines, comments=True)
    first = next(rows, None)
    if first is None:
        raise _fail(file, 1, "empty file")
    sep = delimiter or max(";,\t", key=first[1].count)
    out = Samples("perf-stat", file, sink=sink)
    previous: dict[tuple, float] = {}
    # The samples of the interval being read: perf prints an interval's events together, so
    # a sample counted twice is within one (and the set stays as small as an interval).
    seen: set[tuple] = set()
    interval: float | None = None
    for number, raw in itertools.chain([first], rows):
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
        if t != interval:
            seen.clear()
            interval = t
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
        raise _fail(file, number, "no IIO samples (every event was skipped)")
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
