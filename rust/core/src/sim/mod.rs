//! The DMA-engine / root-complex simulator.
//!
//! - [`engine`]: the generic model — device tags and DMA engines, the link's two directions,
//!   the IOMMU's walkers and the host — that plays any transaction stream ([`run`]).
//! - [`bench`](mod@bench): pcie-bench's micro-benchmarks on it ([`simulate`]): address generation,
//!   operation mixes and the machine a benchmark's parameters describe.
//!
//! Both are re-exported here, so callers name `sim::run` and `sim::simulate`.

pub mod bench;
pub mod engine;
mod servers;
pub mod translation;

pub use bench::{simulate, Addresses, OpMix, Pattern, SimParams};
pub use engine::{run, run_observed, Machine, Measure, SimResult, Txn, TxnClass, OBSERVE_EVERY};
pub use translation::{Iommu, Walks};
