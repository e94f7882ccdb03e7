"""pcieperf: predict, measure and explain the PCIe cost of packet I/O.

Packages, in the order data flows: `pcie` (a link per direction, the cost of one read or
write) -> `net` (line rates, frame overheads, captures) -> `nic` (NIC/driver profiles priced per
packet, loopback latency) -> `dpdk` (forwarding estimate, IOMMU/IOTLB, testpmd runner);
`pciebench` (pcie-bench definitions, simulator, calibration, predict, validate); `measure`
(counters, store, explain) -> `report` (figures, HTML). `cli` sits on top and nothing imports
it. Top-level modules serve them all: errors, units, progress, engine (Dask), sweep and
sweep_check (every point checked before any work), _native (the only caller of the Rust core).

The names below are imported on first use (PEP 562), so that `import pcieperf.cli` and the
capture commands do not pay for numpy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pcieperf.capture.calibration import capture_calibrate
    from pcieperf.capture.model import capture_model
    from pcieperf.capture.records import capture_run, capture_runs, capture_show
    from pcieperf.dpdk.api import dpdk_forwarding, platforms
    from pcieperf.errors import PcieperfError, ProfileError, UsageError
    from pcieperf.measure import iommu_api as iommu
    from pcieperf.measure.api import data_import, data_ls, data_show, explain
    from pcieperf.measure.records import (
        counter_imports,
        counter_remove,
        counter_show,
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
    from pcieperf.nic.api import latency, nic, profile, profiles
    from pcieperf.nic.captures import capture_demand
    from pcieperf.nic.latency import latency_table
    from pcieperf.nic.nic import evaluate, load_profile
    from pcieperf.pcie.api import dma, link, make_link
    from pcieperf.pcie.link import Link
    from pcieperf.pciebench import api as bench
    from pcieperf.report.api import data_plot

_HOMES = {
    "Ethernet": "net.ethernet",
    "Link": "pcie.link",
    "PacketMix": "net.ethernet",
    "PcieperfError": "errors",
    "ProfileError": "errors",
    "UsageError": "errors",
    "capture_calibrate": "capture.calibration",
    "capture_demand": "nic.captures",
    "capture_run": "capture.records",
    "capture_runs": "capture.records",
    "capture_show": "capture.records",
    "capture_model": "capture.model",
    "capture_stats": "net.api",
    "convert_capture": "net.api",
    "counter_imports": "measure.records",
    "counter_remove": "measure.records",
    "counter_show": "measure.records",
    "data_import": "measure.api",
    "data_ls": "measure.api",
    "data_plot": "report.api",
    "data_show": "measure.api",
    "dma": "pcie.api",
    "dpdk_forwarding": "dpdk.api",
    "dpdk_run": "measure.records",
    "dpdk_runs": "measure.records",
    "evaluate": "nic.nic",
    "explain": "measure.api",
    "import_counters": "measure.records",
    "latency": "nic.api",
    "latency_table": "nic.latency",
    "link": "pcie.api",
    "load_profile": "nic.nic",
    "make_link": "pcie.api",
    "merge_captures": "net.api",
    "parse_mix": "net.ethernet",
    "platforms": "dpdk.api",
    "profile": "nic.api",
    "profiles": "nic.api",
    "read_capture": "net.api",
    "read_counters": "measure.records",
    "synth_capture": "net.api",
}
__all__ = [
    "Ethernet",
    "Link",
    "PacketMix",
    "PcieperfError",
    "ProfileError",
    "UsageError",
    "bench",
    "capture_calibrate",
    "capture_demand",
    "capture_model",
    "capture_run",
    "capture_runs",
    "capture_show",
    "capture_stats",
    "convert_capture",
    "counter_imports",
    "counter_remove",
    "counter_show",
    "data_import",
    "data_ls",
    "data_plot",
    "data_show",
    "dma",
    "dpdk_forwarding",
    "dpdk_run",
    "dpdk_runs",
    "evaluate",
    "explain",
    "import_counters",
    "iommu",
    "latency",
    "latency_table",
    "link",
    "load_profile",
    "make_link",
    "merge_captures",
    "nic",
    "parse_mix",
    "platforms",
    "profile",
    "profiles",
    "read_capture",
    "read_counters",
    "report",
    "store",
    "synth_capture",
]
_NAMESPACES: dict[str, str] = {
    # `pp.bench`, as the CLI's `bench` group: `pcieperf.pciebench`'s submodules `sim`, `predict`,
    # `calibrate` and `validate` would shadow functions of those names on the package itself.
    "bench": "pciebench.api",
    "iommu": "measure.iommu_api",
    "nic": "nic",  # the package, callable as `nic.api.nic` (see nic/__init__.py)
    "report": "report",  # callable: pp.report(out=...) is pcieperf.report.api.report
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


def __dir__() -> list[str]:
    """The public names too (PEP 562: `dir(pp)` and editors' completion list them)."""
    return sorted(set(__all__) | {name for name in globals() if name.startswith("__")})
