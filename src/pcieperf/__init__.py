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
    from pcieperf.dpdk.api import dpdk_forwarding
    from pcieperf.errors import PcieperfError, ProfileError, UsageError
    from pcieperf.measure.api import explain
    from pcieperf.net.ethernet import Ethernet, PacketMix, parse_mix
    from pcieperf.nic.api import latency, nic, profile, profiles
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
    "dma": "pcie.api",
    "dpdk_forwarding": "dpdk.api",
    "explain": "measure.api",
    "link": "pcie.api",
    "make_link": "pcie.api",
    "evaluate": "nic.nic",
    "latency": "nic.api",
    "latency_table": "nic.latency",
    "load_profile": "nic.nic",
    "parse_mix": "net.ethernet",
    "profile": "nic.api",
    "profiles": "nic.api",
}
__all__ = [
    "Ethernet",
    "Link",
    "PacketMix",
    "PcieperfError",
    "ProfileError",
    "UsageError",
    "dma",
    "dpdk_forwarding",
    "evaluate",
    "explain",
    "latency",
    "latency_table",
    "link",
    "load_profile",
    "make_link",
    "nic",
    "parse_mix",
    "profile",
    "profiles",
]
_NAMESPACES: dict[str, str] = {
    "nic": "nic",  # the package, callable as `nic.api.nic` (see nic/__init__.py)
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
