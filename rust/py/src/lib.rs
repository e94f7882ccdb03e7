//! PyO3 glue: the only place where Python and the Rust core meet (`pcieperf._core`).

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pcieperf_core::sim::{self, OpMix, Pattern, SimParams};
use pcieperf_core::{tlp, CoreError};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Maps a core error to the Python exception raised for it (one place for all of them).
fn to_py_err(err: CoreError) -> PyErr {
    PyValueError::new_err(err.to_string())
}

type SplitArrays<'py> = (
    Bound<'py, PyArray1<u32>>,
    Bound<'py, PyArray1<u64>>,
    Bound<'py, PyArray1<u64>>,
);

/// Splits transfers at multiples of `cut`; returns (parent index, address, length) arrays.
#[pyfunction]
fn split_aligned<'py>(
    py: Python<'py>,
    addrs: PyReadonlyArray1<'py, u64>,
    lens: PyReadonlyArray1<'py, u64>,
    cut: u64,
) -> PyResult<SplitArrays<'py>> {
    let (addrs, lens) = (addrs.as_slice()?, lens.as_slice()?);
    let split = py
        .detach(|| tlp::split_aligned(addrs, lens, cut))
        .map_err(to_py_err)?;
    Ok((
        split.parent.into_pyarray(py),
        split.addr.into_pyarray(py),
        split.len.into_pyarray(py),
    ))
}

/// Reads one required entry of the parameter dict, naming it when missing or mistyped.
fn field<'py, T: FromPyObject<'py>>(d: &Bound<'py, PyDict>, key: &str) -> PyResult<T> {
    let value = d
        .get_item(key)?
        .ok_or_else(|| PyValueError::new_err(format!("missing simulation parameter {key:?}")))?;
    value.extract().map_err(|_| {
        PyValueError::new_err(format!("simulation parameter {key:?} has the wrong type"))
    })
}

fn params_from_dict(d: &Bound<'_, PyDict>) -> PyResult<SimParams> {
    let pattern = match field::<String>(d, "pattern")?.as_str() {
        "seq" => Pattern::Sequential,
        "rand" => Pattern::Random,
        other => {
            return Err(PyValueError::new_err(format!(
                "pattern {other:?}: use seq or rand"
            )))
        }
    };
    let ops = match field::<String>(d, "ops")?.as_str() {
        "read" => OpMix::Read,
        "write" => OpMix::Write,
        "alternate" => OpMix::Alternate,
        "write_then_read" => OpMix::WriteThenRead,
        other => {
            return Err(PyValueError::new_err(format!(
                "ops {other:?}: use read, write, alternate or write_then_read"
            )))
        }
    };
    Ok(SimParams {
        transactions: field(d, "transactions")?,
        size: field(d, "size")?,
        host_offset: field(d, "host_offset")?,
        window: field(d, "window")?,
        pattern,
        ops,
        seed: field(d, "seed")?,
        tags: field(d, "tags")?,
        issue_read_ns: field(d, "issue_read_ns")?,
        issue_write_ns: field(d, "issue_write_ns")?,
        datapath_ns: field(d, "datapath_ns")?,
        fixed_latency_ns: field(d, "fixed_latency_ns")?,
        read_up_bytes: field(d, "read_up_bytes")?,
        read_down_bytes: field(d, "read_down_bytes")?,
        write_up_bytes: field(d, "write_up_bytes")?,
        up_bytes_per_ns: field(d, "up_bytes_per_ns")?,
        down_bytes_per_ns: field(d, "down_bytes_per_ns")?,
        warm_bytes: field(d, "warm_bytes")?,
        hit_latency_ns: field(d, "hit_latency_ns")?,
        miss_latency_ns: field(d, "miss_latency_ns")?,
        write_ns: field(d, "write_ns")?,
        posted_credits: field(d, "posted_credits")?,
        iotlb_entries: field(d, "iotlb_entries")?,
        page_bytes: field(d, "page_bytes")?,
        walk_ns: field(d, "walk_ns")?,
        walk_busy_ns: field(d, "walk_busy_ns")?,
        walkers: field(d, "walkers")?,
        record_latencies: field(d, "record_latencies")?,
    })
}

/// Runs one simulated benchmark; returns elapsed time, counters and (optionally) latencies.
#[pyfunction]
fn simulate<'py>(py: Python<'py>, params: &Bound<'py, PyDict>) -> PyResult<Bound<'py, PyDict>> {
    let p = params_from_dict(params)?;
    let result = py.detach(|| sim::simulate(&p)).map_err(to_py_err)?;
    let out = PyDict::new(py);
    out.set_item("elapsed_ns", result.elapsed_ns)?;
    out.set_item("transactions", result.transactions)?;
    out.set_item("iotlb_misses", result.iotlb_misses)?;
    out.set_item("cache_hits", result.cache_hits)?;
    out.set_item("latencies_ns", result.latencies_ns.into_pyarray(py))?;
    Ok(out)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(split_aligned, m)?)?;
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    Ok(())
}
