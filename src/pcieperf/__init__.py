"""pcieperf: predict, measure and explain the PCIe cost of packet I/O.

Modules, in the order data flows: `link` (a PCIe link per direction) -> `tlp` (the cost of one
read or write) -> `ethernet` (line rates, frame overheads, size mixes) -> `nic` (NIC/driver
profiles priced per packet) -> `dpdk` (the forwarding estimate) -> `report` (plots, HTML).
`cli` sits on top and nothing imports it.

The names below are imported on first use (PEP 562), so that `import pcieperf.cli` and the
capture commands do not pay for numpy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pcieperf.errors import PcieperfError, ProfileError, UsageError
    from pcieperf.ethernet import Ethernet, PacketMix, parse_mix
    from pcieperf.latency import latency_table
    from pcieperf.link import Link
    from pcieperf.nic import evaluate, load_profile

_HOMES = {
    "Ethernet": "ethernet",
    "Link": "link",
    "PacketMix": "ethernet",
    "PcieperfError": "errors",
    "ProfileError": "errors",
    "UsageError": "errors",
    "evaluate": "nic",
    "latency_table": "latency",
    "load_profile": "nic",
    "parse_mix": "ethernet",
}
__all__ = [
    "Ethernet",
    "Link",
    "PacketMix",
    "PcieperfError",
    "ProfileError",
    "UsageError",
    "evaluate",
    "latency_table",
    "load_profile",
    "parse_mix",
]
__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    """The public names, from their modules on first use."""
    if name not in _HOMES:
        raise AttributeError(f"module 'pcieperf' has no attribute {name!r}")
    return getattr(importlib.import_module(f"pcieperf.{_HOMES[name]}"), name)
