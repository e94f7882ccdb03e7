"""The counter file formats pcieperf reads, one row each (as Wireshark's `open_info_base[]`
lists its file readers): the `--counters-format` name, the tool and output form that writes it,
how its head is recognised, and its importer. `parse` and `detect` read this table alone, so a
format is added by writing its importer and adding its row (CONTRIBUTING.md)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from pcieperf.errors import CounterFileError
from pcieperf.measure.counters.pcm_iio import parse_pcm_iio
from pcieperf.measure.counters.pcm_iio_table import is_pcm_iio_table, parse_pcm_iio_table
from pcieperf.measure.counters.perf import parse_perf_iostat, parse_perf_stat
from pcieperf.measure.counters.samples import Samples
from pcieperf.measure.counters.vtune import parse_vtune

STAT_SCAN_CHARS = 65_536  # how far into a file perf stat's IIO event names are looked for


def first_line(head: str) -> str:
    """The first line of a file's head that is neither blank nor a `#` comment."""
    return next((ln for ln in head.splitlines() if ln.strip() and not ln.startswith("#")), "")


def is_pcm_iio_csv(head: str) -> bool:
    """pcm-iio `-csv`: a `Date,Time,Socket,...` header, or `Socket,Name,...` before pcm 202509."""
    first = first_line(head)
    dated = first.startswith("Date") and "Socket" in first
    return dated or (first.startswith("Socket") and "Name" in first)


def is_perf_iostat(head: str) -> bool:
    """`perf iostat -x,`: its `port,...` header."""
    return first_line(head).startswith("port,")


def is_vtune_summary(head: str) -> bool:
    """VTune's `-report summary -format csv`: its `Hierarchy Level` header."""
    return first_line(head).startswith("Hierarchy Level")


def is_perf_stat_iio(head: str) -> bool:
    """`perf stat -x` on IIO events: their PMU (`uncore_iio*`) or alias (`UNC_IIO_*`) names."""
    scanned = head[:STAT_SCAN_CHARS]
    return "uncore_iio" in scanned or "UNC_IIO_" in scanned


Importer = Callable[..., Samples]
"""`(lines, file, *, lenient, sink, **options)`: the options are those of `CounterFormat`."""


@dataclass(frozen=True)
class CounterFormat:
    """One format: `name` (what `--counters-format` takes; one tool's output forms may share
    it), `written_by` (the command that writes it), `recognises` (whether a file's head is in
    this form), `read` (its importer) and `options`, the optional arguments the importer takes
    (`delimiter`, `interval_s`)."""

    name: str
    written_by: str
    recognises: Callable[[str], bool]
    read: Importer
    options: frozenset[str]


FORMATS: list[CounterFormat] = [
    CounterFormat(
        "pcm-iio",
        "pcm-iio (its default table)",
        is_pcm_iio_table,
        parse_pcm_iio_table,
        frozenset({"interval_s"}),
    ),
    CounterFormat(
        "pcm-iio",
        "pcm-iio -csv",
        is_pcm_iio_csv,
        parse_pcm_iio,
        frozenset({"delimiter", "interval_s"}),
    ),
    CounterFormat(
        "perf-iostat",
        "perf iostat -x,",
        is_perf_iostat,
        parse_perf_iostat,
        frozenset({"interval_s"}),
    ),
    CounterFormat(
        "vtune",
        "vtune -report summary -format csv",
        is_vtune_summary,
        parse_vtune,
        frozenset({"delimiter"}),
    ),
    CounterFormat(
        "perf-stat",
        "perf stat -x on IIO events",
        is_perf_stat_iio,
        parse_perf_stat,
        frozenset({"delimiter", "interval_s"}),
    ),
]
"""Every format, in the order detection tries them (the first that recognises a head wins)."""


def names() -> tuple[str, ...]:
    """What `--counters-format` takes: the formats' names, each once, in `FORMATS` order."""
    return tuple(dict.fromkeys(f.name for f in FORMATS))


def detect(head: str, file: str) -> CounterFormat:
    """The format whose head `head` (a file's first MiB) is, or an error naming the choices."""
    for fmt in FORMATS:
        if fmt.recognises(head):
            return fmt
    raise CounterFileError(
        f"{file}: cannot tell which tool wrote it; pass --counters-format ({', '.join(names())})"
    )


def named(name: str, head: str) -> CounterFormat:
    """The form of format `name` that `head` is in; where none recognises it, the last form of
    that name (its importer then says what it expected)."""
    forms = [f for f in FORMATS if f.name == name]
    return next((f for f in forms if f.recognises(head)), forms[-1])


def read_with(
    fmt: CounterFormat, lines: Iterable[str], file: str, options: dict[str, object]
) -> Samples:
    """`fmt`'s importer on `lines`, given the options it takes (`lenient`, `sink` and those of
    `fmt.options`; the others do not apply to its form)."""
    taken = {k: v for k, v in options.items() if k in fmt.options or k in ("lenient", "sink")}
    return fmt.read(lines, file, **taken)
