"""pcieperf: predict, measure and explain the PCIe cost of packet I/O.

Modules, in the order data flows: `link` (a PCIe link per direction) -> `tlp` (the cost of one
read or write) -> `ethernet` (line rates, frame overheads, size mixes) -> `nic` (NIC/driver
profiles priced per packet) -> `dpdk` (the forwarding estimate) -> `report` (plots, HTML).
`cli` sits on top and nothing imports it.
"""

from pcieperf.errors import PcieperfError, ProfileError, UsageError
from pcieperf.ethernet import Ethernet, PacketMix, parse_mix
from pcieperf.link import Link
from pcieperf.nic import evaluate, load_profile

__all__ = [
    "Ethernet",
    "Link",
    "PacketMix",
    "PcieperfError",
    "ProfileError",
    "UsageError",
    "evaluate",
    "load_profile",
    "parse_mix",
]
__version__ = "0.1.0"
