//! Python conversions of the parameter types (only with the `pyo3` feature, which the glue in
//! rust/py enables): the parameter structs derive `FromPyObject` where they are defined, read
//! from a dict's entries of the same names (extra entries ignored, so one dict can fill several
//! structs); the enumerations here convert from their names. A bad name is a `ValueError` that
//! names the value and the allowed ones; the glue turns any of these errors into one line.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::iommu::iotlb::Replacement;
use crate::iommu::port_stream::config::{Iova, Layout};
use crate::sim::{OpMix, Pattern};
use crate::CoreError;

/// The value `text` names among `options`, or a message naming `what`, `text` and the allowed
/// names ("pattern \"x\": use seq or rand").
fn named<T: Copy>(what: &str, text: &str, options: &[(&str, T)]) -> Result<T, CoreError> {
    if let Some((_, value)) = options.iter().find(|(name, _)| *name == text) {
        return Ok(*value);
    }
    let names: Vec<&str> = options.iter().map(|(name, _)| *name).collect();
    let (last, rest) = names.split_last().expect("options are never empty");
    Err(CoreError::Invalid(format!(
        "{what} {text:?}: use {} or {last}",
        rest.join(", ")
    )))
}

/// `FromPyObject` for an enumeration from its Python names.
macro_rules! from_names {
    ($ty:ty, $what:literal, [$(($name:literal, $value:expr)),+ $(,)?]) => {
        impl<'py> FromPyObject<'py> for $ty {
            fn extract_bound(obj: &Bound<'py, PyAny>) -> PyResult<Self> {
                named($what, &obj.extract::<String>()?, &[$(($name, $value)),+])
                    .map_err(|err| PyValueError::new_err(err.to_string()))
            }
        }
    };
}

from_names!(
    Pattern,
    "pattern",
    [("seq", Pattern::Sequential), ("rand", Pattern::Random)]
);
from_names!(
    OpMix,
    "ops",
    [
        ("read", OpMix::Read),
        ("write", OpMix::Write),
        ("alternate", OpMix::Alternate),
        ("write_then_read", OpMix::WriteThenRead),
    ]
);
from_names!(
    Layout,
    "layout",
    [("dpdk", Layout::PageBound), ("packed", Layout::Packed)]
);
from_names!(Iova, "iova", [("va", Iova::Va), ("pa", Iova::Pa)]);
from_names!(
    Replacement,
    "replacement",
    [("lru", Replacement::Lru), ("random", Replacement::Random)]
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_name_lists_the_allowed_ones() {
        // The message the glue used to build by hand (rust/py `choice`), in the same words.
        let iova = [("va", Iova::Va), ("pa", Iova::Pa)];
        assert_eq!(
            named("iova", "io", &iova),
            Err(CoreError::Invalid("iova \"io\": use va or pa".to_owned()))
        );
        assert_eq!(named("iova", "pa", &iova), Ok(Iova::Pa));
    }
}
