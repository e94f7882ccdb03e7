//! PyO3 glue: the only place where Python and the Rust core meet (`pcieperf._core`).

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pcieperf_core::{tlp, CoreError};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// Maps a core error to the Python exception raised for it (one place for all of them).
fn to_py_err(err: CoreError) -> PyErr {
    PyValueError::new_err(err.to_string())
}

type SplitArrays<'py> =
    (Bound<'py, PyArray1<u32>>, Bound<'py, PyArray1<u64>>, Bound<'py, PyArray1<u64>>);

/// Splits transfers at multiples of `cut`; returns (parent index, address, length) arrays.
#[pyfunction]
fn split_aligned<'py>(
    py: Python<'py>,
    addrs: PyReadonlyArray1<'py, u64>,
    lens: PyReadonlyArray1<'py, u64>,
    cut: u64,
) -> PyResult<SplitArrays<'py>> {
    let (addrs, lens) = (addrs.as_slice()?, lens.as_slice()?);
    let split = py.detach(|| tlp::split_aligned(addrs, lens, cut)).map_err(to_py_err)?;
    Ok((
        split.parent.into_pyarray(py),
        split.addr.into_pyarray(py),
        split.len.into_pyarray(py),
    ))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(split_aligned, m)?)?;
    Ok(())
}
