"""NIC and driver models: declarative profiles (`profile`: TOML, `[device]` facts, expressions;
built-in ones in `profiles/`) priced per packet in PCIe bytes and TLPs per direction
(`pricing`), against the line rate (`nic`); one packet's loopback latency and the in-flight
DMAs a rate needs (`latency`, on a host's DMA latencies: `host`); the PCIe bandwidth captures
need, priced by a profile (`captures`: `pp.capture_demand`). The public functions are in `api`
(`pp.nic`, `pp.profiles`, `pp.profile`, `pp.latency`).

May import: pcie, net, errors, units, _native, _config, _lazy, _values. No store, runner or
report.
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pcieperf.results import Table


class _CallableModule(types.ModuleType):
    """The package `pcieperf.nic` (the name once it is imported), called as the API function
    of the same name: `pp.nic(profile="dpdk", sizes=[64])` is `pcieperf.nic.api.nic`."""

    def __call__(self, **options: object) -> Table:
        """`pcieperf.nic.api.nic` (what `pcieperf nic` prints)."""
        from pcieperf.nic.api import nic

        return nic(**options)  # type: ignore[arg-type]


sys.modules[__name__].__class__ = _CallableModule
