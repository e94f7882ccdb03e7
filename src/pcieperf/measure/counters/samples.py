"""The table every counter importer fills (`Samples`: one row per sample, column by column)
and the number parsing they share."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from pcieperf.errors import CounterFileError

BYTES_PER_S = "B/s"
EVENTS_PER_S = "1/s"
# pcm's unit_format() (src/utils.h), used by pcm-iio's table and `-csv -human-readable`: "%4d K"
# etc. with decimal divisors, T past 9999 G.
HUMAN_SUFFIX = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
_HUMAN = re.compile(r"^\s*(-?[0-9]+(?:\.[0-9]+)?(?:e[+-]?[0-9]+)?)\s*([KMGT]?)\s*$")
# A counter read of 2^64-1 is pcm's "not available" sentinel (intel/pcm#306); after the x4 byte
# scaling no real per-second PCIe value comes near 1e18.
IMPLAUSIBLE = 1e18
CHUNK_SAMPLES = 1 << 15
"""Samples held before they are handed to a `Samples.sink`: a few MiB of Python objects, and
one store commit each (larger chunks saved no time and peaked higher)."""


def snake(name: str) -> str:
    """`IOTLB Miss` -> `iotlb_miss`."""
    return re.sub(r"[^0-9a-z]+", "_", name.lower()).strip("_")


@dataclass
class Samples:
    """Parsed samples of one file, column by column (all the same length). With a `sink`, the
    columns are handed to it every CHUNK_SAMPLES samples and emptied (`flush`), so a file of
    any size holds one chunk: the columns then hold the samples not yet handed on."""

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
    sink: Sink | None = field(default=None, repr=False, compare=False)
    flushed: int = 0  # samples handed to the sink
    flushed_metrics: set[str] = field(default_factory=set)
    # Samples passed over as repeats (`add`), and what tells one: the latest time read and the
    # counters read at it (a file's rows come in time order: only these are kept).
    repeated: int = 0
    _latest: float | None = field(default=None, repr=False, compare=False)
    _at_latest: set[tuple[object, ...]] = field(default_factory=set, repr=False, compare=False)

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
        """Append one sample, unless it repeats one: the same counter (socket, stack, part,
        metric) at the same time again, or a time before the latest one read (the tools write
        in time order: rows written twice, or a file joined to itself); those are counted in
        `repeated` and passed over."""
        if t_s != self._latest:
            if self._latest is not None and t_s < self._latest:
                self.repeated += 1
                return
            self._latest, self._at_latest = t_s, set()
        counter = (socket, stack, part, metric)
        if counter in self._at_latest:
            self.repeated += 1
            return
        self._at_latest.add(counter)
        self.t_s.append(t_s)
        self.wall.append(wall)
        self.socket.append(socket)
        self.stack.append(stack)
        self.part.append(part)
        self.metric.append(metric)
        self.value.append(value)
        self.unit.append(unit)
        if self.sink is not None and len(self.value) >= CHUNK_SAMPLES:
            self.flush()

    def flush(self) -> None:
        """Hand the samples held to the sink and empty the columns (without a sink: nothing)."""
        if self.sink is None or not self.value:
            return
        self.sink(self)
        self.flushed += len(self.value)
        self.flushed_metrics.update(self.metric)
        columns = (self.t_s, self.wall, self.socket, self.stack, self.part, self.metric)
        for column in (*columns, self.value, self.unit):
            column.clear()

    def metrics(self) -> list[str]:
        """The metrics of every sample, handed on or held, sorted."""
        return sorted(self.flushed_metrics.union(self.metric))

    def note(self, text: str) -> None:
        """Record, once, something the values or times carry that the file does not say exactly."""
        if text not in self.notes:
            self.notes.append(text)

    def __len__(self) -> int:
        """Samples parsed: handed on and held."""
        return self.flushed + len(self.value)


Sink = Callable[[Samples], None]
"""Where a parser hands its samples chunk by chunk (the store's transaction, `import_counters`)."""


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
