//! pcieperf-core: the engine behind `pcieperf._core`, free of any Python dependency.
//!
//! Layers, top-down:
//! - [`tlp`]: walks DMA transfers TLP by TLP (the enumeration that the Python closed forms are
//!   checked against, and that the simulator will consume).
//! - [`sim`]: the DMA-engine / root-complex simulator that replays pcie-bench.
//! - [`error`]: the one error type every public function returns.

pub mod error;
pub mod sim;
pub mod tlp;

pub use error::CoreError;
