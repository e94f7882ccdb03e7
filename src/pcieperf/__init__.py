"""pcieperf: predict, measure and explain the PCIe cost of packet I/O.

Packages, in the order data flows: `pcie` (a link per direction, the cost of one read or
write) -> `net` (line rates, frame overheads, captures) -> `nic` (NIC/driver profiles priced per
packet, loopback latency) -> `dpdk` (forwarding estimate, IOMMU/IOTLB, testpmd runner);
`pciebench` (pcie-bench definitions, simulator, calibration, predict, validate); `measure`
(counters, store, explain) -> `report` (figures, HTML). `cli` sits on top and nothing imports
it. Top-level modules serve them all: errors, units, progress, engine (Dask), sweep, _native
(the only caller of the Rust core).

The names below are imported on first use (PEP 562), so that `import pcieperf.cli` and the
capture commands do not pay for numpy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pcieperf.errors import PcieperfError, ProfileError, UsageError
    from pcieperf.measure.records import (
        counter_imports,
        dpdk_run,
        dpdk_runs,
        import_counters,
        read_counters,
    )
    from pcieperf.net.api import (
        capture_stats,
        convert_capture,
        merge_captures,
        read_capture,
        synth_capture,
    )
    from pcieperf.net.ethernet import Ethernet, PacketMix, parse_mix
    from pcieperf.nic.captures import capture_demand
    from pcieperf.nic.latency import latency_table
    from pcieperf.nic.nic import evaluate, load_profile
    from pcieperf.pcie.api import dma, link, make_link
    from pcieperf.pcie.link import Link

_HOMES = {
    "Ethernet": "net.ethernet",
    "Link": "pcie.link",
    "PacketMix": "net.ethernet",
    "PcieperfError": "errors",
    "ProfileError": "errors",
    "UsageError": "errors",
    "capture_demand": "nic.captures",
    "capture_stats": "net.api",
    "convert_capture": "net.api",
    "counter_imports": "measure.records",
    "dma": "pcie.api",
    "dpdk_run": "measure.records",
    "dpdk_runs": "measure.records",
    "import_counters": "measure.records",
    "merge_captures": "net.api",
    "read_capture": "net.api",
    "read_counters": "measure.records",
    "synth_capture": "net.api",
    "link": "pcie.api",
    "make_link": "pcie.api",
    "evaluate": "nic.nic",
    "latency_table": "nic.latency",
    "load_profile": "nic.nic",
    "parse_mix": "net.ethernet",
}
__all__ = [
    "Ethernet",
    "Link",
    "PacketMix",
    "PcieperfError",
    "ProfileError",
    "UsageError",
    "capture_demand",
    "capture_stats",
    "convert_capture",
    "counter_imports",
    "dma",
    "dpdk_run",
    "dpdk_runs",
    "evaluate",
    "import_counters",
    "latency_table",
    "link",
    "load_profile",
    "make_link",
    "merge_captures",
    "parse_mix",
    "read_capture",
    "read_counters",
    "store",
    "synth_capture",
]
_NAMESPACES: dict[str, str] = {
    "store": "measure.store",
}
"""Groups of API functions reached as `pp.<group>.<function>`: the module that holds them."""
__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    """The public names, from their modules on first use."""
    if name in _NAMESPACES:
        return importlib.import_module(f"pcieperf.{_NAMESPACES[name]}")
    if name not in _HOMES:
        raise AttributeError(f"module 'pcieperf' has no attribute {name!r}")
    return getattr(importlib.import_module(f"pcieperf.{_HOMES[name]}"), name)
