//! The single error enum of the core; each variant carries what a message needs.

use std::fmt;

/// Every failure a core function can report, with the offending values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CoreError {
    /// A split granularity that is not a power of two (TLP limits always are).
    NotPowerOfTwo { name: &'static str, value: u64 },
    /// Two parallel input arrays of different lengths.
    LengthMismatch { left: usize, right: usize },
    /// A transfer of zero bytes, which produces no TLP and is always a caller bug.
    ZeroLength { index: usize },
    /// A transfer whose end address does not fit in 64 bits.
    AddressOverflow { index: usize },
    /// A benchmark window with no unit that fits without crossing 4 KiB.
    EmptyWindow { window: u64, unit: u64 },
    /// A simulation parameter out of its range; `what` says which rule broke.
    BadParameter { what: &'static str },
}

impl fmt::Display for CoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotPowerOfTwo { name, value } => {
                write!(f, "{name} must be a power of two, got {value}")
            }
            Self::LengthMismatch { left, right } => {
                write!(
                    f,
                    "addresses and lengths differ in count: {left} vs {right}"
                )
            }
            Self::ZeroLength { index } => {
                write!(
                    f,
                    "transfer {index} has length 0; lengths must be at least 1 byte"
                )
            }
            Self::AddressOverflow { index } => {
                write!(f, "transfer {index} ends beyond the 64-bit address space")
            }
            Self::EmptyWindow { window, unit } => write!(
                f,
                "window of {window} bytes holds no {unit}-byte unit that stays within a 4 KiB page"
            ),
            Self::BadParameter { what } => write!(f, "bad simulation parameter: {what}"),
        }
    }
}

impl std::error::Error for CoreError {}
