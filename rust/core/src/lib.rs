//! pcieperf-core: the engine behind `pcieperf._core`, free of any Python dependency.
//!
//! Layers, top-down:
//! - [`tlp`]: walks DMA transfers TLP by TLP (the enumeration that the Python closed forms are
//!   checked against, and that the simulator will consume).
//! - [`sim`]: the DMA-engine / root-complex simulator that replays pcie-bench and plays any
//!   transaction stream (such as a DPDK port's) through the same device, link and IOMMU.
//! - [`iommu`]: everything IOMMU, in one folder: a DPDK port's DMA address stream, the
//!   translation caches (shared with [`sim`]), the pages and LLC ways the stream touches, and
//!   the stream run through the IOMMU.
//! - [`parallel`]: the thread pool that works on files in parallel.
//! - [`cores`]: what sharing cache lines between two CPUs costs on this machine now.
//! - [`probe`]: the primitives capture costs are made of (copies, write calls, a ring between
//!   two CPUs), timed on this machine so that costs fitted on another can travel.
//! - [`trace`]: capture files (pcap/pcapng reading, writing, merging, synthesis).
//! - `rng`: the pseudo-random generator they share (a leaf, so no two of them import each
//!   other for it).
//! - [`interrupt`]: requests to stop long work (a signal the caller caught), checked between
//!   chunks.
//! - [`error`]: the one error type every public function returns (a capture file's errors name
//!   the file and byte offset).
//! - `py` (feature `pyo3`, enabled by the glue only): the parameter types' conversions from
//!   Python values.

pub mod cores;
pub mod error;
pub mod interrupt;
pub mod iommu;
pub mod parallel;
pub mod probe;
#[cfg(feature = "pyo3")]
mod py;
mod rng;
pub mod sim;
pub mod tlp;
pub mod trace;

pub use error::CoreError;
