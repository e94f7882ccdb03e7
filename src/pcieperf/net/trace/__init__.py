"""Capture files and the traffic in them: reading pcap/pcapng into numpy columns (`files`),
merging and converting them (`rewrite`), their statistics (`statistics`: rates per window,
frame sizes, bursts at line rate, how far their times can be trusted; `epoch`: dates a century
away), synthetic traffic (`synthesis`) and the per-window
bandwidth a trace needs from a per-packet cost (`bandwidth`).

Parsing, writing, merging and the statistics of captures run in the Rust core
(`pcieperf._core`); these modules validate arguments, name files in errors, turn the core's
exact counts into rates and compute per-window demand over numpy columns. The names below are
the ones importers use (`from pcieperf.net import trace; trace.read(...)`); each submodule is
imported when one of its names is first used, so `trace convert` does not import the statistics
and synthesis it does not run (issue 15: start-up).
"""

import importlib

from pcieperf._native import core
from pcieperf.errors import TraceFileError

_SUBMODULE_OF = {
    "Demand": "bandwidth",
    "demand": "bandwidth",
    "poll_batches": "bandwidth",
    "MAX_WINDOWS": "bandwidth",
    "Rates": "bandwidth",
    "Windows": "bandwidth",
    "window_rates": "bandwidth",
    "epoch_check": "epoch",
    "epoch_warning": "epoch",
    "parse_shift_ns": "epoch",
    "ETHERNET_HEADER_BYTES": "files",
    "INT64_MAX": "files",
    "INT64_MIN": "files",
    "LINK_HEADER_BYTES": "files",
    "LINKTYPE_NAMES": "files",
    "NS_PER_S": "files",
    "Interface": "files",
    "Trace": "files",
    "linktype_name": "files",
    "read": "files",
    "FORMATS": "rewrite",
    "_check_inputs": "rewrite",
    "_check_output": "rewrite",
    "_write_atomically": "rewrite",
    "convert": "rewrite",
    "merge": "rewrite",
    "output_format": "rewrite",
    "GAP_PERCENTILES": "statistics",
    "SIZE_BINS": "statistics",
    "SIZE_LABELS": "statistics",
    "WINDOWS_NS": "statistics",
    "_report": "statistics",
    "_stats_config": "statistics",
    "stats": "statistics",
    "stats_config": "statistics",
    "stats_files": "statistics",
    "ARRIVALS": "synthesis",
    "RECORD_OVERHEAD_BYTES": "synthesis",
    "SYNTH_CHUNK": "synthesis",
    "SYNTH_START_NS": "synthesis",
    "SynthPlan": "synthesis",
    "plan_synthetic": "synthesis",
    "synth": "synthesis",
    "synthetic": "synthesis",
}
"""Each name this package gives, and the submodule that defines it."""

__all__ = ["TraceFileError", "core", *_SUBMODULE_OF]


def __getattr__(name: str) -> object:
    """`name` from its submodule, imported now (PEP 562: called for names not yet here)."""
    submodule = _SUBMODULE_OF.get(name)
    if submodule is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{submodule}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """Every name, imported or not yet."""
    return sorted({*globals(), *_SUBMODULE_OF})
