"""The VTune importer: `vtune -report summary -format csv` of an Input and Output analysis as
samples."""

from __future__ import annotations

import csv
from collections.abc import Iterable

from pcieperf.measure.counters.samples import BYTES_PER_S, Samples, Sink, _fail, _number

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
    lines: Iterable[str],
    file: str,
    *,
    delimiter: str | None = None,
    lenient: bool = False,
    sink: Sink | None = None,
) -> Samples:
    """Parse `vtune -report summary -format csv` of an Input and Output analysis: rows
    `level,name,value`, names quoted where they hold the delimiter (or not: the extra cells are
    joined back), the Bandwidth Utilization table embedded as wider rows (skipped). The lines
    are read once; `sink` as `Samples`'."""
    lines = iter(lines)
    first, head = next(((n, ln) for n, ln in enumerate(lines, start=1) if ln.strip()), (0, ""))
    if not first:
        raise _fail(file, 1, "empty file")
    sep = delimiter or max(",;\t|", key=head.count)
    header = [c.strip() for c in next(csv.reader([head], delimiter=sep))]
    if header[:3] != VTUNE_HEADER:
        raise _fail(file, first, f"not a VTune CSV report (expected {','.join(VTUNE_HEADER)})")
    if len(header) > 3 and not lenient:
        raise _fail(file, first, f"unknown VTune column {header[3]!r} (pass --lenient to skip it)")
    out = Samples("vtune", file, sink=sink)
    out.skipped_columns.extend(header[3:])
    found: set[str] = set()
    number = first
    table_width, elapsed = 0, 0.0
    for number, cells in enumerate(csv.reader(lines, delimiter=sep), start=first + 1):
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
        if metric is None or metric in found:
            continue
        found.add(metric)
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
            number,
            "no PCIe bandwidth metric (Inbound/Outbound PCIe Read/Write); was the result "
            "collected with -collect io and collect-pcie-bandwidth=true?",
        )
    return out
