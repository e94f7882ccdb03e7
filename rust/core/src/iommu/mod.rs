//! The IOMMU as a DPDK port's DMA sees it, one concept a module:
//! - [`port_stream`]: the DMA address stream of DPDK ports (rings, mempool, IOVA layout).
//! - [`iotlb`]: the IOMMU's translation caches, shared with the pcie-bench simulator.
//! - [`pages`]: the pages a DMA stream touches (its working set).
//! - [`ddio`]: the LLC ways DDIO allocates into, as a port's DMA sees them.
//! - [`port_run`]: a port's stream run through the IOMMU: miss counts and timed runs.

pub mod ddio;
pub mod iotlb;
pub mod pages;
pub mod port_run;
pub mod port_stream;
