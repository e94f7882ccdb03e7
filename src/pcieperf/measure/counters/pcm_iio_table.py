"""The pcm-iio importer for its default output, the terminal table, as the same samples as its
`-csv` form (intel/pcm src/pcm-iio-pmu.cpp PcmIioDisplayBuilder::buildDisplayBuffer; before
release 202509, build_display in src/pcm-iio.cpp, the same layout).

Per interval, per socket, a `SocketN` line, then per IIO stack one table: a rule of `_`, a title
row `|<stack name>|<column>|...|` (each cell as wide as its name), a `|___|` rule, one row per
part `| <part name><pad>|<value>|...|` whose values are unit_format() text padded to the column's
width (a_data in src/utils.cpp; the IOTLB/VT-d columns only in Part0's row, as in the CSV), a
`|___|` rule, the stack's PCIe devices as indented `|bus:dev.fn|GenN xW|vid:did name` rows
(with the domain and `; Part: 0, 1` since release 202212, build_pci_header), and a closing rule.
The table prints no time: intervals are `--interval` seconds apart, pcm-iio's default 3 s
(PCM_DELAY_DEFAULT, src/pcm-iio-pmu.h) when not given.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

from pcieperf.measure.counters.pcm_iio import (
    PCM_BYTE_METRICS,
    PCM_DELAY_DEFAULT_S,
    note_untimed,
    pcm_metric,
    pcm_value,
)
from pcieperf.measure.counters.samples import Samples, Sink, _fail

# Column names of releases before the -csv mode (202109), from each release's opCode.txt: 201710
# "Inbound write/read", "Outbound read/write"; 201811..202009 "TLB Miss" (event 0x41 umask 0x20,
# today's "IOTLB Miss") and "VT-d Lookup" (event 0x84 umask 0x04 ch_mask 0x10, renamed "VT-d Mem
# Read" by commit 67307560 "PCM-IIO: fix VT-d events on SKX").
OLD_NAMES = {
    "Inbound write": "IB write (bytes)",
    "Inbound read": "IB read (bytes)",
    "Outbound read": "OB read (bytes)",
    "Outbound write": "OB write (bytes)",
    "TLB Miss": "IOTLB Miss",
    "VT-d Lookup": "VT-d Mem Read",
}
# Outbound values counted 4-byte words (opCode.txt multiplier=1 for event 0xc0) until commit
# f305e698 "Calculate bytes sent, not dwords" (2019-09, intel/pcm#157; release 202003): the
# 201710 names, and "OB read/write" beside "TLB Miss" (201811..201902); 202003 added "(bytes)".
WORD_NAMES = ("Outbound read", "Outbound write")
WORD_NAMES_BESIDE_TLB_MISS = ("OB read", "OB write")
WORDS_NOTE = (
    "outbound values counted in 4-byte words, as pcm-iio did before 2019-09 (intel/pcm#157): "
    "multiplied by 4"
)
_SOCKET = re.compile(r"Socket[0-9]+")
_RULE = re.compile(r"[ |]_[_ |]*")
_TITLE_SCAN = 65536


def is_pcm_iio_table(text: str) -> bool:
    """Whether the text holds a pcm-iio table: a title row naming a pcm-iio byte column."""
    for line in text[:_TITLE_SCAN].splitlines():
        if line.startswith("Date"):
            return False  # the -csv form, even with `-csv-delimiter=|`
        names = {c.strip() for c in line.split("|")} if line.startswith("|") else set()
        if names & {*PCM_BYTE_METRICS, *OLD_NAMES}:
            return True
    return False


class _Column(NamedTuple):
    """A counter column: its name in the title, metric, unit, and the factor to bytes."""

    name: str
    metric: str
    unit: str
    factor: int


@dataclass
class _Table:
    """One stack's table while it is read: its socket, stack, columns and rows so far."""

    socket: int | None
    stack: str
    columns: list[_Column | None]  # None: a skipped column
    rows: int = 0
    closed: bool = False  # its `|___|` rule under the rows was read


def parse_pcm_iio_table(
    lines: Iterable[str],
    file: str,
    *,
    interval_s: float | None = None,
    lenient: bool = False,
    sink: Sink | None = None,
) -> Samples:
    """Parse pcm-iio's table output (one or many intervals, old or new layout, with or without
    device rows and the tool's banner); values are kept as printed (see `pcm_value`). The lines
    are read once, in order; `sink` takes the samples chunk by chunk (`Samples`)."""
    out = Samples("pcm-iio", file, sink=sink)
    step = interval_s or PCM_DELAY_DEFAULT_S
    socket: int | None = None
    table: _Table | None = None
    seen: set[tuple[int | None, str]] = set()
    interval = number = 0
    for number, raw in enumerate(lines, start=1):
        line = raw.rstrip()
        if table is not None and not table.closed and not line.startswith("|"):
            raise _cut_short(table, file, number)
        if _SOCKET.fullmatch(line.strip()):
            socket = int(line.strip().removeprefix("Socket"))
        elif _RULE.fullmatch(line):
            if table is not None and table.rows and line.startswith("|"):
                table.closed = True  # the rule under the rows (the one under the title: 0 rows)
        elif line.startswith("| "):
            if table is None or table.closed:
                raise _fail(file, number, "a counter row outside a pcm-iio table (no title row)")
            _read_row(line, table, interval * step, file, number, out)
        elif line.startswith("|"):
            if table is not None and not table.closed:
                raise _cut_short(table, file, number)
            table = _title(line, socket, file, number, lenient, out)
            if (socket, table.stack) in seen:  # the same stack again: the next interval
                seen.clear()
                interval += 1
            seen.add((socket, table.stack))
        # anything else (the banner, device rows, pcm's exit messages) is not a table's
    if table is None:
        raise _fail(file, number, "no pcm-iio table (a |IIO Stack ...|IB write|... title)")
    if not table.closed:
        raise _cut_short(table, file, number)
    note_untimed(out, interval + 1, interval_s)
    if socket is None:
        out.note("no SocketN line before the tables: their socket is unknown")
    return out


def _title(
    line: str, socket: int | None, file: str, number: int, lenient: bool, out: Samples
) -> _Table:
    """A table's title row: the stack's name, then its columns' names (a_title)."""
    if not line.endswith("|"):
        raise _fail(file, number, "truncated title row: it does not end with |")
    cells = [c.strip() for c in line[1:-1].split("|")]
    words = [*WORD_NAMES, *(WORD_NAMES_BESIDE_TLB_MISS if "TLB Miss" in cells else ())]
    columns: list[_Column | None] = []
    for name in cells[1:]:
        metric = pcm_metric(OLD_NAMES.get(name, name), file, number, lenient, out.skipped_columns)
        columns.append(metric and _Column(name, *metric, 4 if name in words else 1))
    if not any(columns):
        raise _fail(file, number, "the title row names no counter column")
    if any(name in words for name in cells[1:]):
        out.note(WORDS_NOTE)
    return _Table(socket, cells[0], columns)


def _read_row(line: str, table: _Table, t_s: float, file: str, number: int, out: Samples) -> None:
    """One part's row: its name, then a value per column from the left (ragged like the CSV)."""
    if not line.endswith("|"):
        raise _fail(file, number, "truncated row: it does not end with |")
    cells = line[1:-1].split("|")
    part, values = cells[0].strip(), cells[1:]
    if len(values) > len(table.columns):
        raise _fail(
            file, number, f"{len(values)} values but the title has {len(table.columns)} columns"
        )
    for text, column in zip(values, table.columns, strict=False):
        if column is not None:
            value = pcm_value(text, file, number, column.name, out) * column.factor
            out.add(t_s, None, table.socket, table.stack, part, column.metric, value, column.unit)
    table.rows += 1


def _cut_short(table: _Table, file: str, number: int) -> Exception:
    """The error for a table cut before the `|___|` rule that closes its rows."""
    if not table.rows:
        return _fail(file, number, f"truncated table: {table.stack!r} has no counter rows")
    return _fail(file, number, f"truncated table: {table.stack!r} ends without its |___| rule")
