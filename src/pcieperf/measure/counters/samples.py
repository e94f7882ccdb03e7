"""The table every counter importer fills (`Samples`: one row per sample, column by column)
and the number parsing they share."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field

from pcieperf.errors import CounterFileError

SOURCES = ("pcm-iio", "perf-iostat", "perf-stat", "vtune")
BYTES_PER_S = "B/s"
EVENTS_PER_S = "1/s"
# pcm's unit_format() (src/utils.h), used by pcm-iio's table and `-csv -human-readable`: "%4d K"
# etc. with decimal divisors, T past 9999 G.
HUMAN_SUFFIX = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
_HUMAN = re.compile(r"^\s*(-?[0-9]+(?:\.[0-9]+)?(?:e[+-]?[0-9]+)?)\s*([KMGT]?)\s*$")
# A counter read of 2^64-1 is pcm's "not available" sentinel (intel/pcm#306); after the x4 byte
# scaling no real per-second PCIe value comes near 1e18.
IMPLAUSIBLE = 1e18


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
    notes: list[str] = field(default_factory=list)  # what the file leaves unsaid: precision, time

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

    def note(self, text: str) -> None:
        """Record, once, something the values or times carry that the file does not say exactly."""
        if text not in self.notes:
            self.notes.append(text)

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
