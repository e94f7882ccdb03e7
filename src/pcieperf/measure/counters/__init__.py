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
table, `perf`, `vtune`); `samples` holds the table they fill. `parse` picks the importer.
"""

from __future__ import annotations

from pathlib import Path

from pcieperf._config import read_bounded
from pcieperf.errors import CounterFileError, require_choice, require_positive
from pcieperf.errors import UsageError as UsageError  # re-exported: `counters.UsageError`
from pcieperf.measure.counters.pcm_iio import parse_pcm_iio
from pcieperf.measure.counters.pcm_iio_table import is_pcm_iio_table, parse_pcm_iio_table
from pcieperf.measure.counters.perf import FREE_RUNNING_METRIC, parse_perf_iostat, parse_perf_stat
from pcieperf.measure.counters.samples import BYTES_PER_S, EVENTS_PER_S, SOURCES, Samples
from pcieperf.measure.counters.vtune import parse_vtune

# A day of 1 s pcm-iio samples with every stack is ~90 MB; /dev/zero or a wrong file is refused
# before it fills memory (the parsers still hold the text and its rows: ~31x, issue 28 item 5).
MAX_COUNTER_BYTES = 256 << 20

__all__ = [
    "BYTES_PER_S",
    "EVENTS_PER_S",
    "FREE_RUNNING_METRIC",
    "SOURCES",
    "Samples",
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
    pcm-iio's table title row)."""
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
) -> Samples:
    """Parse a counter file of the given source format (None: detect it)."""
    data = read_bounded(path, limit=MAX_COUNTER_BYTES, expected="a day of 1 s samples at most")
    try:
        text = data.decode("utf-8-sig")  # Excel and PowerShell write a BOM
    except UnicodeDecodeError as exc:
        raise CounterFileError(f"{path}: cannot read: {exc}") from None
    if interval_s is not None:
        require_positive("--interval", interval_s)
    file = str(path)
    source = source or detect(text, file)
    require_choice("counter format", source, SOURCES)
    if source == "pcm-iio" and is_pcm_iio_table(text):
        return parse_pcm_iio_table(text, file, interval_s=interval_s, lenient=lenient)
    if source == "pcm-iio":
        return parse_pcm_iio(
            text, file, delimiter=delimiter, lenient=lenient, interval_s=interval_s
        )
    if source == "perf-stat":
        return parse_perf_stat(
            text, file, delimiter=delimiter, interval_s=interval_s, lenient=lenient
        )
    if source == "vtune":
        return parse_vtune(text, file, delimiter=delimiter, lenient=lenient)
    return parse_perf_iostat(text, file, interval_s=interval_s, lenient=lenient)
