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
of lines, and `formats` lists every format with how it is recognised and read: `parse` picks
the importer there; with a `sink` (the store's import) it hands the samples on chunk by chunk,
so a file of any size is imported in bounded memory (issue 28). A sample that repeats one
(rows written twice, a file joined to itself) is passed over and said in one warning.
"""

from __future__ import annotations

from pathlib import Path

from pcieperf.errors import UsageError, param, require_choice, require_positive, warn
from pcieperf.measure.counters import formats
from pcieperf.measure.counters.samples import Samples, Sink
from pcieperf.measure.counters.text import counter_text

__all__ = ["parse"]


def parse(
    path: Path,
    source: str | None,
    *,
    lenient: bool = False,
    delimiter: str | None = None,
    interval_s: float | None = None,
    sink: Sink | None = None,
) -> Samples:
    """Parse a counter file of the given source format (None: detect it from its head, by the
    table of `formats`), read as a stream of lines. With a `sink`, every sample is handed to it
    chunk by chunk and the columns returned are empty (the count, metrics, notes and skipped
    columns are the file's)."""
    if interval_s is not None:
        require_positive(param("interval_s"), interval_s)
    if delimiter is not None and len(delimiter) != 1:
        raise UsageError(f"{param('delimiter')} {delimiter!r} is not allowed; give one character")
    file = str(path)
    with counter_text(path, file) as text:
        if source is None:
            fmt = formats.detect(text.head, file)
        else:
            require_choice("counter format", source, formats.names())
            fmt = formats.named(source, text.head)
        options = {"delimiter": delimiter, "interval_s": interval_s}
        found = formats.read_with(
            fmt, text.lines(), file, {**options, "lenient": lenient, "sink": sink}
        )
    found.flush()
    if found.repeated:
        warn(
            f"{file}: {found.repeated} samples repeat the file's earlier ones (a counter at a "
            "time already read, or a time before the latest: rows written twice, or files "
            "joined); they are skipped"
        )
    return found
