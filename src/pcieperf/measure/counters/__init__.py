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

One module per tool's importer (`pcm_iio` for its `-csv` form, `pcm_iio_table` for its default
table, `perf`, `vtune`); `samples` holds the table they fill, `text` reads the file as a stream
of lines. `parse` picks the importer; with a `sink` (the store's import) it hands the samples on
chunk by chunk, so a file of any size is imported in bounded memory (issue 28).
"""

from __future__ import annotations

from pathlib import Path

from pcieperf.errors import CounterFileError, require_choice, require_positive
from pcieperf.errors import UsageError as UsageError  # re-exported: `counters.UsageError`
from pcieperf.measure.counters.pcm_iio import parse_pcm_iio
from pcieperf.measure.counters.pcm_iio_table import is_pcm_iio_table, parse_pcm_iio_table
from pcieperf.measure.counters.perf import FREE_RUNNING_METRIC, parse_perf_iostat, parse_perf_stat
from pcieperf.measure.counters.samples import BYTES_PER_S, EVENTS_PER_S, SOURCES, Samples, Sink
from pcieperf.measure.counters.text import counter_text
from pcieperf.measure.counters.vtune import parse_vtune

__all__ = [
    "BYTES_PER_S",
    "EVENTS_PER_S",
    "FREE_RUNNING_METRIC",
    "SOURCES",
    "Samples",
    "Sink",
    "UsageError",
    "detect",
    "parse",
    "parse_pcm_iio",
    "parse_pcm_iio_table",
    "parse_perf_iostat",
    "parse_perf_stat",
    "parse_vtune",
]


def detect(text: str, file: str) -> str:
    """Which tool wrote a counter file, from its first line (or perf's event names, or
    pcm-iio's table title row) in `text`, its head."""
    first = next((ln for ln in text.splitlines() if ln.strip() and not ln.startswith("#")), "")
    dated = first.startswith("Date") and "Socket" in first
    undated = first.startswith("Socket") and "Name" in first  # -csv before pcm 202509
    if dated or undated or is_pcm_iio_table(text):
        return "pcm-iio"
    if first.startswith("port,"):
        return "perf-iostat"
    if first.startswith("Hierarchy Level"):
        return "vtune"
    if "uncore_iio" in text[:65536] or "UNC_IIO_" in text[:65536]:
        return "perf-stat"
    raise CounterFileError(
        f"{file}: cannot tell which tool wrote it; pass --counters-format ({', '.join(SOURCES)})"
    )


def parse(
    path: Path,
    source: str | None,
    *,
    lenient: bool = False,
    delimiter: str | None = None,
    interval_s: float | None = None,
    sink: Sink | None = None,
) -> Samples:
    """Parse a counter file of the given source format (None: detect it), read as a stream of
    lines. With a `sink`, every sample is handed to it chunk by chunk and the columns returned
    are empty (the count, metrics, notes and skipped columns are the file's)."""
    if interval_s is not None:
        require_positive("--interval", interval_s)
    if delimiter is not None and len(delimiter) != 1:
        raise UsageError(f"--delimiter {delimiter!r} is not allowed; give one character")
    file = str(path)
    with counter_text(path, file) as text:
        source = source or detect(text.head, file)
        require_choice("counter format", source, SOURCES)
        lines = text.lines()
        if source == "pcm-iio" and is_pcm_iio_table(text.head):
            found = parse_pcm_iio_table(
                lines, file, interval_s=interval_s, lenient=lenient, sink=sink
            )
        elif source == "pcm-iio":
            found = parse_pcm_iio(
                lines, file, delimiter=delimiter, lenient=lenient, interval_s=interval_s, sink=sink
            )
        elif source == "perf-stat":
            found = parse_perf_stat(
                lines, file, delimiter=delimiter, interval_s=interval_s, lenient=lenient, sink=sink
            )
        elif source == "vtune":
            found = parse_vtune(lines, file, delimiter=delimiter, lenient=lenient, sink=sink)
        else:
            found = parse_perf_iostat(
                lines, file, interval_s=interval_s, lenient=lenient, sink=sink
            )
    found.flush()
    return found
