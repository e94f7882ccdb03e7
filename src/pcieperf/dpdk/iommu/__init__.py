"""IOMMU and page size in DPDK data planes: IOTLB misses per packet and what they cost.

A DPDK port's DMA stream (descriptor rings, the mbuf pool laid out as DPDK populates it, its
per-lcore LIFO caches, thresholds, polls; `rust/core/src/dataplane.rs`) runs through the same
IOTLB and simulator that reproduce pcie-bench's window sweeps (`rust/core/src/iotlb.rs`,
`sim/`). The IOMMU, the LLC's DDIO ways and the polling core come from a platform profile
(`platforms.py`): `e5-v4` is the shipped pcie-bench calibration unchanged, the others cite
their numbers or carry ranges. The device is the NIC of a forwarding profile (default
`testpmd-fwd`): the same operations, bytes and `[device]` facts that `nic` and `dpdk-fwd`
price, so without IOMMU, latency limit or pacing the three agree; every bound the run reaches is
named in `limited_by`. Where packets wait (Rx ring, Tx ring) follows from the load: see
`Model.evaluate` and docs/iommu.md. Nothing here is fitted to DPDK results.

The package: `platform` (platform, traffic), `stream` (the port's DMA stream, misses and
costs), `model` (timed runs, `Model.evaluate`), `advise` (gain, advise, ring sweep); the port
setup itself is `pcieperf.dpdk.port.PortSetup`, re-exported here. Every name stays importable
from `pcieperf.dpdk.iommu`.
"""

from __future__ import annotations

from pcieperf.dpdk.iommu.advise import (
    RING_SWEEP,
    Advice,
    Candidate,
    advise,
    candidates,
    gain,
    ring_sweep,
)
from pcieperf.dpdk.iommu.model import (
    DROP_BISECTIONS,
    LIMITS,
    NEAR_BOUND,
    SATURATED,
    UNLIMITED_READS,
    UNPACED_MPPS,
    IommuResult,
    Model,
    Run,
    cold_read_classes,
    drops_at_full_tx_ring,
)
from pcieperf.dpdk.iommu.platform import (
    OVERLOADS,
    REPLACEMENTS,
    TLB_MAX,
    CoreCosts,
    IommuParams,
    Llc,
    Memory,
    Platform,
    Traffic,
    load_platform,
    platform_parts,
)
from pcieperf.dpdk.iommu.stream import (
    DOWN,
    LIGHT,
    PACKETS,
    RC_NS,
    REL_ERROR,
    REQUESTS,
    UP,
    Load,
    MissCounts,
    burst_transactions,
    core_mpps,
    costs_per_packet,
    count_misses,
    forwarding_nic,
    poll_batch,
    port_params,
    pricing_key,
    resource_bounds,
    transaction_classes,
    wire_shares,
)
from pcieperf.dpdk.port import (
    DATA_OFFSET,
    DATAROOM_BYTES,
    DESCRIPTOR_BYTES,
    ELEMENT_BYTES,
    HEADROOM_BYTES,
    IOVA_MODES,
    LAYOUTS,
    LINE,
    MBUF_BYTES,
    MEMPOOL_HEADER_BYTES,
    PAGE_SIZES,
    POLL_DELAY_MAX_US,
    POOL_MAX,
    RING_MAX,
    RING_MIN,
    PortSetup,
    parse_page,
)

__all__ = [
    "DATAROOM_BYTES",
    "DATA_OFFSET",
    "DESCRIPTOR_BYTES",
    "DOWN",
    "DROP_BISECTIONS",
    "ELEMENT_BYTES",
    "HEADROOM_BYTES",
    "IOVA_MODES",
    "LAYOUTS",
    "LIGHT",
    "LIMITS",
    "LINE",
    "MBUF_BYTES",
    "MEMPOOL_HEADER_BYTES",
    "NEAR_BOUND",
    "OVERLOADS",
    "PACKETS",
    "PAGE_SIZES",
    "POLL_DELAY_MAX_US",
    "POOL_MAX",
    "RC_NS",
    "REL_ERROR",
    "REPLACEMENTS",
    "REQUESTS",
    "RING_MAX",
    "RING_MIN",
    "RING_SWEEP",
    "SATURATED",
    "TLB_MAX",
    "UNLIMITED_READS",
    "UNPACED_MPPS",
    "UP",
    "Advice",
    "Candidate",
    "CoreCosts",
    "IommuParams",
    "IommuResult",
    "Llc",
    "Load",
    "Memory",
    "MissCounts",
    "Model",
    "Platform",
    "PortSetup",
    "Run",
    "Traffic",
    "advise",
    "burst_transactions",
    "candidates",
    "cold_read_classes",
    "core_mpps",
    "costs_per_packet",
    "count_misses",
    "drops_at_full_tx_ring",
    "forwarding_nic",
    "gain",
    "load_platform",
    "parse_page",
    "platform_parts",
    "poll_batch",
    "port_params",
    "pricing_key",
    "resource_bounds",
    "ring_sweep",
    "transaction_classes",
    "wire_shares",
]
