"""IOMMU and page size in DPDK data planes: IOTLB misses per packet and what they cost, in one
package; `pp.iommu` is this package (`sim`, `gain`, `advise`, `inputs`, `fit`).

A DPDK port's DMA stream (descriptor rings, the mbuf pool laid out as DPDK populates it, its
per-lcore LIFO caches, thresholds, polls; `rust/core/src/iommu/port_stream/`) runs through the
same IOTLB and simulator that reproduce pcie-bench's window sweeps (`rust/core/src/iommu/`,
`sim/`). The IOMMU, the LLC's DDIO ways and the polling core come from a platform profile
(`profiles`, data in `platforms/`): `e5-v4` is the shipped pcie-bench calibration unchanged, the
others cite their numbers or carry ranges. A testbed (`setups`, data in `setups/`) fixes what a
published setup's command line and NICs fix. The device is the NIC of a forwarding profile
(default `testpmd-fwd`): the same operations, bytes and `[device]` facts that `nic` and
`dpdk-fwd` price, so without IOMMU, latency limit or pacing the three agree; every bound the run
reaches is named in `limited_by`. Where packets wait (Rx ring, Tx ring) follows from the load:
see `Model.evaluate` and docs/iommu.md. Nothing here is fitted to DPDK results.

The modules: `profiles` (platform profiles: every number with its evidence), `platform` (what a
run takes from one: IOMMU, memory, core; the traffic), `setups` (published testbeds), `stream`
(the port's DMA stream, misses and costs), `model` (timed runs, `Model.evaluate`), `advice`
(gain, advise, ring sweep), `api` (the public functions). The port setup itself is
`pcieperf.dpdk.port.PortSetup`; a host's IOTLB evidence from its pcie-bench latency files is
`pcieperf.pciebench.host`'s (below); fitting a platform to a host's counters is
`pcieperf.measure.iommu_fit`'s (it reads counter files and explains them, so it lives above).

May import: pcie, net, nic, dpdk (the port setup and the forwarding profile), pciebench (the
host calibration), errors, units, _native, _config, progress, results. This module alone hands
on `fit` from measure (at first use, as `pcieperf/__init__` hands on every name), so that
`pp.iommu` holds the group's questions in one place.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pcieperf.iommu.api import advise, gain, inputs, sim
    from pcieperf.measure.api import iommu_fit as fit

__all__ = ["advise", "fit", "gain", "inputs", "sim"]


def __getattr__(name: str) -> object:
    """The API functions, imported at first use (PEP 562): importing a model module of this
    package loads no API and no store."""
    match name:
        case "advise" | "gain" | "inputs" | "sim":
            from pcieperf.iommu import api

            return getattr(api, name)
        case "fit":
            from pcieperf.measure.api import iommu_fit

            return iommu_fit
    raise AttributeError(f"module 'pcieperf.iommu' has no attribute {name!r}")


def __dir__() -> list[str]:
    """dir() and tab completion show the API (`__all__`) and the modules."""
    return sorted(__all__)
