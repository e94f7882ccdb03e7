//! pcieperf-core: the engine behind `pcieperf._core`, free of any Python dependency.
//!
//! Layers, top-down:
//! - [`tlp`]: walks DMA transfers TLP by TLP (the enumeration that the Python closed forms are
//!   checked against, and that the simulator will consume).
//! - [`error`]: the one error type every public function returns.

pub mod error;
pub mod tlp;

pub use error::CoreError;
