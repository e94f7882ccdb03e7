"""Capture files and the traffic in them: reading pcap/pcapng into numpy columns (`files`),
merging and converting them (`rewrite`), their statistics (`statistics`: rates per window,
frame sizes, bursts at line rate), synthetic traffic (`synthesis`) and the per-window
bandwidth a trace needs from a per-packet cost (`bandwidth`).

Parsing, writing, merging and the statistics of captures run in the Rust core
(`pcieperf._core`); these modules validate arguments, name files in errors, turn the core's
exact counts into rates and compute per-window demand over numpy columns. The names below are
the ones importers use (`from pcieperf.net import trace; trace.read(...)`).
"""

from pcieperf._native import core
from pcieperf.errors import TraceFileError
from pcieperf.net.trace.bandwidth import Demand, demand, poll_batches, window_gbps
from pcieperf.net.trace.files import (
    ETHERNET_HEADER_BYTES,
    INT64_MAX,
    INT64_MIN,
    LINK_HEADER_BYTES,
    LINKTYPE_NAMES,
    NS_PER_S,
    Interface,
    Trace,
    linktype_name,
    read,
)
from pcieperf.net.trace.rewrite import (
    FORMATS,
    _check_inputs,
    _check_output,
    _write_atomically,
    convert,
    merge,
    output_format,
)
from pcieperf.net.trace.statistics import (
    GAP_PERCENTILES,
    MAX_WINDOWS,
    SIZE_BINS,
    SIZE_LABELS,
    WINDOWS_NS,
    Windows,
    _report,
    _stats_config,
    stats,
    stats_config,
    stats_files,
    window_sums,
)
from pcieperf.net.trace.synthesis import (
    ARRIVALS,
    RECORD_OVERHEAD_BYTES,
    SYNTH_CHUNK,
    SYNTH_START_NS,
    SynthPlan,
    plan_synthetic,
    synth,
    synthetic,
)

__all__ = [
    "ARRIVALS",
    "ETHERNET_HEADER_BYTES",
    "FORMATS",
    "GAP_PERCENTILES",
    "INT64_MAX",
    "INT64_MIN",
    "LINKTYPE_NAMES",
    "LINK_HEADER_BYTES",
    "MAX_WINDOWS",
    "NS_PER_S",
    "RECORD_OVERHEAD_BYTES",
    "SIZE_BINS",
    "SIZE_LABELS",
    "SYNTH_CHUNK",
    "SYNTH_START_NS",
    "WINDOWS_NS",
    "Demand",
    "Interface",
    "SynthPlan",
    "Trace",
    "TraceFileError",
    "Windows",
    "_check_inputs",
    "_check_output",
    "_report",
    "_stats_config",
    "_write_atomically",
    "convert",
    "core",
    "demand",
    "linktype_name",
    "merge",
    "output_format",
    "plan_synthetic",
    "poll_batches",
    "read",
    "stats",
    "stats_config",
    "stats_files",
    "synth",
    "synthetic",
    "window_gbps",
    "window_sums",
]
