//! The single error enum of the core (models and capture files alike); each variant carries
//! what a message needs. The glue turns it into one of three Python exceptions by
//! [`CoreError::kind`], and `pcieperf._native` maps those to the pcieperf error tree.

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
    /// An argument or request the core cannot accept (a missing or mistyped entry, an unknown
    /// choice, columns of different lengths, a summary asked of the wrong partial), described
    /// in full.
    Invalid(String),
    /// Two archive partials that cannot be merged exactly (files that overlap in time, windows
    /// from other origins, other frame rules or demands): why.
    Unmergeable(&'static str),
    /// Bytes that are not a partial `Partial::to_bytes` wrote (another version, cut short,
    /// damaged): why.
    Undecodable(String),
    /// A capture file that cannot be read or written: which file, where (byte offset, when
    /// known) and what.
    File {
        file: String,
        offset: Option<u64>,
        problem: String,
    },
    /// The work was asked to stop (`interrupt::request_stop`: a signal the caller caught).
    Interrupted,
}

/// What kind of failure an error is, which decides the exception the user sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// A value the caller supplied breaks a rule (the user can fix the input).
    Parameter,
    /// A capture file is missing, unreadable or damaged.
    File,
    /// The caller broke the core's contract (a bug in pcieperf, not a bad input).
    Internal,
    /// The caller asked the work to stop.
    Interrupted,
}

impl CoreError {
    /// An error at a byte offset of capture `file`.
    pub fn at(file: &str, offset: u64, problem: impl Into<String>) -> Self {
        Self::File {
            file: file.to_owned(),
            offset: Some(offset),
            problem: problem.into(),
        }
    }

    /// An error about a whole capture file (opening, writing).
    pub fn whole(file: &str, problem: impl Into<String>) -> Self {
        Self::File {
            file: file.to_owned(),
            offset: None,
            problem: problem.into(),
        }
    }

    /// The kind of failure: a bad parameter, a bad file or a broken contract.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::File { .. } => ErrorKind::File,
            Self::LengthMismatch { .. } => ErrorKind::Internal,
            Self::Interrupted => ErrorKind::Interrupted,
            _ => ErrorKind::Parameter,
        }
    }
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
            Self::Invalid(what) | Self::Undecodable(what) => f.write_str(what),
            Self::Unmergeable(why) => f.write_str(why),
            Self::Interrupted => f.write_str("stopped on request (a signal)"),
            Self::File {
                file,
                offset: Some(offset),
                problem,
            } => write!(f, "{file}: byte {offset}: {problem}"),
            Self::File {
                file,
                offset: None,
                problem,
            } => write!(f, "{file}: {problem}"),
        }
    }
}

impl std::error::Error for CoreError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_errors_name_the_file_and_offset() {
        // The one-line form the CLI prints ("FILE: byte N: PROBLEM"), as TraceError had it.
        assert_eq!(
            CoreError::at("a.pcap", 24, "record cut short").to_string(),
            "a.pcap: byte 24: record cut short"
        );
        assert_eq!(
            CoreError::whole("b.pcap", "no such file").to_string(),
            "b.pcap: no such file"
        );
    }

    #[test]
    fn kinds_separate_inputs_files_and_bugs() {
        assert_eq!(CoreError::whole("a", "x").kind(), ErrorKind::File);
        assert_eq!(
            CoreError::BadParameter { what: "tags" }.kind(),
            ErrorKind::Parameter
        );
        assert_eq!(CoreError::Invalid("x".into()).kind(), ErrorKind::Parameter);
        // Python caught the glue's ValueError for these (net/archive.py): still a parameter.
        assert_eq!(CoreError::Unmergeable("x").kind(), ErrorKind::Parameter);
        assert_eq!(
            CoreError::Undecodable("x".into()).kind(),
            ErrorKind::Parameter
        );
        assert_eq!(
            CoreError::LengthMismatch { left: 1, right: 2 }.kind(),
            ErrorKind::Internal
        );
    }
}
