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
setup itself is `pcieperf.dpdk.port.PortSetup`. Each name is imported from the module that
defines it.
"""
