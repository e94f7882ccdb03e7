"""Imported uncore counter measurements (pcm-iio, perf iostat), normalised to one table of
samples: time, source, socket, stack/root port, part, metric, value per second, unit.

Metric names follow the DPDK model's (`dpdk.METRICS`): `inbound_read` is the device reading host
memory, `inbound_write` the device writing it, `outbound_read`/`outbound_write` the CPU reading /
writing device space; all in bytes per second. IOMMU counters keep their tool's name in
snake_case (`iotlb_lookup`, `iotlb_miss`, ...) in events per second. Where each format detail
comes from is cited at the parser; docs/counters.md has the unit semantics per source.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from pathlib import Path

from pcieperf.errors import UsageError, require_choice

SOURCES = ("pcm-iio", "perf-iostat")
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
        for column, item in zip(
            (
                self.t_s,
                self.wall,
                self.socket,
                self.stack,
                self.part,
                self.metric,
                self.value,
                self.unit,
            ),
            (t_s, wall, socket, stack, part, metric, value, unit),
            strict=True,
        ):
            column.append(item)

    def __len__(self) -> int:
        return len(self.value)


class CounterFileError(UsageError):
    """A counter file is truncated, foreign or has columns we do not know."""


def _fail(file: str, line: int, problem: str) -> CounterFileError:
    return CounterFileError(f"{file}: line {line}: {problem}")


def _number(text: str, file: str, line: int, column: str) -> float:
    match = _HUMAN.match(text)
    if not match:
        raise _fail(file, line, f"{column} value {text.strip()!r} is not a number")
    value = float(match.group(1)) * HUMAN_SUFFIX[match.group(2)]
    if not 0 <= value < IMPLAUSIBLE:
        raise _fail(
            file,
            line,
            f"{column} value {text.strip()!r} is not a counter rate (pcm prints "
            "2^64-1 when a counter is unavailable, intel/pcm#306)",
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
    t0: dt.datetime | None = None
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        cells = [c.strip() for c in raw.split(sep)]
        if cells[0] == "Date":
            header, columns = cells, _pcm_columns(cells, file, number, lenient, out.skipped_columns)
            continue
        if header is None:
            raise _fail(
                file, number, "not a pcm-iio CSV: it must start with a Date,Time,Socket header line"
            )
        if len(cells) > len(header):
            raise _fail(file, number, f"{len(cells)} fields but the header has {len(header)}")
        index = {name: i for i, name in enumerate(header)}
        if len(cells) <= index["Part"] or not any(i < len(cells) for i in columns):
            raise _fail(file, number, "truncated row: no counter values")
        wall = _pcm_time(cells[0], cells[1], file, number)
        t0 = t0 or wall
        socket = _socket(cells[index["Socket"]], file, number)
        stack = cells[index["Name"]]
        if "Root Port" in index:
            stack = f"{stack} [{cells[index['Root Port']]}]"
        for i, (metric, unit) in columns.items():
            if i < len(cells) and cells[i] != "":
                value = _number(cells[i], file, number, header[i])
                out.add(
                    (wall - t0).total_seconds(),
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


def parse(
    path: Path,
    source: str,
    *,
    lenient: bool = False,
    delimiter: str | None = None,
    interval_s: float | None = None,
) -> Samples:
    """Parse a counter file of the given source format."""
    require_choice("counter format", source, SOURCES)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CounterFileError(f"{path}: cannot read: {exc}") from None
    if source == "pcm-iio":
        return parse_pcm_iio(text, str(path), delimiter=delimiter, lenient=lenient)
    return parse_perf_iostat(text, str(path), interval_s=interval_s, lenient=lenient)
