"""Types of the Rust core (`rust/py/src`, built by maturin as `pcieperf._core`), for editors and
type checkers; tests/test_types.py runs mypy's stubtest, which checks every name, parameter
and default against the built module. The classes are final: PyO3 classes cannot be
subclassed.

A function that works per file returns, per file, its result or the file's error (the
exception, not raised: `pcieperf._native.checked` raises it mapped)."""

from collections.abc import Mapping, Sequence
from os import PathLike
from typing import Any, final

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "Error",
    "FileError",
    "ParameterError",
    "TraceDemandCost",
    "TracePartial",
    "TraceSynth",
    "TraceTimeline",
    "TraceWriter",
    "bench_addresses",
    "copy_ns_per_byte",
    "port_misses",
    "port_simulate",
    "request_stop",
    "ring_local_ns",
    "ring_ns",
    "round_trip_ns",
    "shared_store_slowdown",
    "simulate",
    "split_aligned",
    "trace_convert",
    "trace_first_records",
    "trace_merge",
    "trace_merge_part",
    "trace_partial",
    "trace_partial_files",
    "trace_read",
    "trace_scan",
    "trace_stats",
    "trace_stats_columns",
    "trace_synth",
    "write_call_ns",
]

_Path = str | PathLike[str]
_Config = Mapping[str, Any]
"""The statistics settings `pcieperf.net.trace.statistics.stats_config` builds."""

class Error(ValueError):
    """A failure of the Rust core that is a bug, not a bad input."""

class ParameterError(Error):
    """A value the Rust core does not accept; the message says which and what is allowed."""

class FileError(Error):
    """A capture file the Rust core cannot read or write; the message names file and offset."""

def split_aligned(
    addrs: NDArray[np.uint64], lens: NDArray[np.uint64], cut: int
) -> tuple[NDArray[np.uint64], NDArray[np.uint64], NDArray[np.uint64]]:
    """Transfers split at multiples of `cut`: (parent index, address, length)."""

def bench_addresses(size: int, host_offset: int, window: int) -> NDArray[np.uint64]:
    """pcie-bench's unit start addresses over one period of a window."""

def simulate(params: Mapping[str, Any]) -> dict[str, Any]:
    """One simulated benchmark: elapsed time, counters and (optionally) latencies."""

def port_misses(params: Mapping[str, Any]) -> dict[str, Any]:
    """IOTLB and page-walk cache misses of a DPDK port's DMA address stream."""

def port_simulate(
    params: Mapping[str, Any], classes: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """A DPDK port's DMA stream played through device, link and IOMMU: counts and busy times."""

def request_stop() -> None:
    """Ask the core's work in flight, in every thread, to stop at its next check."""

def round_trip_ns(first: int, second: int, bursts: int, trips: int) -> float:
    """Median wall ns per round trip of one cache line between two CPUs (NaN: no answer,
    or no real-time priority)."""

def copy_ns_per_byte(pool_bytes: int, chunk: int, total: int) -> float:
    """CPU ns per byte copying chunks out of a pool in pseudo-random order."""

def write_call_ns(path: str, record_bytes: int, calls: int) -> float:
    """CPU ns per `write` call of one record into a path (a device or a file it empties)."""

def ring_local_ns(items: int) -> float:
    """CPU ns per item through a ring on one CPU, in bursts of 32."""

def ring_ns(first: int, second: int, items: int) -> float:
    """Wall ns per item through a ring between two CPUs (NaN: no answer)."""

def shared_store_slowdown(first: int, second: int, stores: int) -> float:
    """CPU ns per store with two CPUs storing into one buffer over one CPU alone."""

def trace_read(
    path: _Path, skip_bad: bool = False, offsets: bool = False, strict: bool = False
) -> dict[str, Any]:
    """A capture file's records as numpy columns, its interfaces and its read facts."""

def trace_stats(
    paths: Sequence[_Path],
    config: _Config,
    skip_bad: bool = False,
    strict: bool = False,
    threads: int = 0,
) -> list[dict[str, Any] | Error]:
    """`trace stats` of each file, one dict (or its error) per path."""

def trace_stats_columns(
    ts_ns: NDArray[np.int64],
    caplen: NDArray[np.uint32],
    wirelen: NDArray[np.uint32],
    iface: NDArray[np.uint32],
    interfaces: Sequence[tuple[int, int]],
    config: _Config,
) -> dict[str, Any]:
    """`trace stats` of records given as columns ((linktype, tsresol) per interface)."""

def trace_merge(
    inputs: Sequence[_Path],
    output: _Path,
    format: str,
    skip_bad: bool,
    strict: bool = False,
    append: bool = False,
) -> dict[str, Any]:
    """Merge captures by time (or, with `append`, one after another) into `output`."""

def trace_merge_part(
    inputs: Sequence[_Path],
    output: _Path,
    format: str,
    from_ns: int,
    to_ns: int,
    selected: Sequence[bool],
    skip_bad: bool = False,
    strict: bool = False,
) -> dict[str, Any]:
    """One time slice [from_ns, to_ns) of the selected inputs, merged into `output`."""

def trace_convert(
    input: _Path,
    output: _Path,
    format: str,
    skip_bad: bool = False,
    strict: bool = False,
    shift_ns: int = 0,
) -> dict[str, Any]:
    """A capture rewritten as `format`, its times moved by `shift_ns`."""

def trace_synth(
    path: _Path,
    format: str,
    ts_ns: NDArray[np.int64],
    frame_len: NDArray[np.uint32],
    flows: int,
) -> dict[str, Any]:
    """A synthetic capture of the given times and frame lengths."""

def trace_first_records(
    paths: Sequence[_Path], skip_bad: bool = False, strict: bool = False, threads: int = 1
) -> list[tuple[int | None, list[dict[str, Any]]] | Error]:
    """Per file, its first record's time and its interfaces (dicts of their fields)."""

def trace_scan(
    paths: Sequence[_Path], skip_bad: bool = False, strict: bool = False, threads: int = 1
) -> list[dict[str, Any] | Error]:
    """Per file, what a pass over it finds (span, order, interfaces)."""

@final
class TraceSynth:
    """A synthetic capture written in batches."""

    def __new__(cls, path: _Path, format: str, flows: int) -> TraceSynth: ...
    def push(self, ts_ns: NDArray[np.int64], frame_len: NDArray[np.uint32]) -> None: ...
    def close(self) -> dict[str, Any]: ...

@final
class TraceWriter:
    """A buffered capture writer: packets go in as numpy batches, `close` flushes everything."""

    def __new__(
        cls,
        path: _Path,
        format: str,
        linktype: int,
        snaplen: int,
        name: str | None = None,
        buffer_bytes: int = ...,
    ) -> TraceWriter: ...
    def add_interface(self, linktype: int, snaplen: int, name: str | None = None) -> int: ...
    def write_batch(
        self,
        ts_ns: NDArray[np.int64],
        iface: NDArray[np.uint32],
        wirelen: NDArray[np.uint32],
        caplen: NDArray[np.uint32],
        data: NDArray[np.uint8],
        offset: NDArray[np.uint64],
    ) -> None: ...
    def flush(self) -> None: ...
    def close(self) -> dict[str, Any]: ...

@final
class TraceDemandCost:
    """PCIe bytes up and down per frame size, for per-window demand."""

    def __new__(
        cls, window_ns: int, up: Sequence[float], down: Sequence[float], capacity_gbps: float
    ) -> TraceDemandCost: ...

@final
class TraceTimeline:
    """One capture's packets in time order, for passes over them in bounded memory."""

    def __new__(
        cls, path: _Path, config: _Config, skip_bad: bool = False, strict: bool = False
    ) -> TraceTimeline: ...
    def facts(self) -> dict[str, Any]: ...
    def windows(
        self, costs: Sequence[Sequence[float]], window_ns: int, max_windows: int
    ) -> dict[str, Any]: ...
    def poll_batches(self, poll_ns: int, burst: int) -> tuple[int, list[tuple[int, int]]]: ...

@final
class TracePartial:
    """Mergeable statistics of one capture file or of consecutive files of one port."""

    @staticmethod
    def from_bytes(data: bytes) -> TracePartial: ...
    def to_bytes(self) -> bytes: ...
    def append(
        self, next: TracePartial, config: _Config, demand: TraceDemandCost | None = None
    ) -> None: ...
    def demand(self, cost: TraceDemandCost) -> dict[str, Any]: ...
    def summary(self, config: _Config) -> dict[str, Any]: ...
    def rename_file(self, from_: str, /, to: str) -> None: ...
    @property
    def packets(self) -> int: ...
    @property
    def span_ns(self) -> tuple[int, int] | None: ...
    @property
    def origin(self) -> int: ...

def trace_partial(
    path: _Path,
    config: _Config,
    origin: int,
    skip_bad: bool = False,
    strict: bool = False,
    demand: TraceDemandCost | None = None,
    read_ahead: bool = True,
) -> TracePartial:
    """The partial statistics of one capture file, its times from `origin`."""

def trace_partial_files(
    paths: Sequence[_Path],
    config: _Config,
    skip_bad: bool = False,
    strict: bool = False,
    demand: TraceDemandCost | None = None,
) -> TracePartial:
    """The partial statistics of consecutive files of one port."""
