//! PyO3 glue: the only place where Python and the Rust core meet (`pcieperf._core`).

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pcieperf_core::error::ErrorKind;
use pcieperf_core::iommu::iotlb::CacheShape;
use pcieperf_core::iommu::port_run::{self, PortRun};
use pcieperf_core::iommu::port_stream::config::PortConfig;
use pcieperf_core::sim::{self, Machine, SimParams, TxnClass, Walks};
use pcieperf_core::{cores, interrupt, probe, tlp, CoreError};
use pyo3::create_exception;
use pyo3::exceptions::{PyKeyError, PyKeyboardInterrupt, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

mod interruptible;
mod trace;

create_exception!(
    _core,
    Error,
    PyValueError,
    "A failure of the Rust core that is a bug, not a bad input (`pcieperf._native` maps it)."
);
create_exception!(
    _core,
    ParameterError,
    Error,
    "A value the Rust core does not accept; the message says which and what is allowed."
);
create_exception!(
    _core,
    FileError,
    Error,
    "A capture file the Rust core cannot read or write; the message names file and offset."
);

/// Maps a core error to the Python exception raised for it (one place for all of them): its
/// class says the error's kind, its message is the error's one line.
fn to_py_err(err: CoreError) -> PyErr {
    let text = err.to_string();
    match err.kind() {
        ErrorKind::Parameter => ParameterError::new_err(text),
        ErrorKind::File => FileError::new_err(text),
        ErrorKind::Internal => Error::new_err(text),
        // Where Python takes signals, the caller's Ctrl-C; elsewhere (a Dask worker thread)
        // a task that failed because the work it belongs to was stopped.
        ErrorKind::Interrupted if interrupt::on_main_thread() => PyKeyboardInterrupt::new_err(text),
        ErrorKind::Interrupted => Error::new_err(text),
    }
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

/// pcie-bench's unit start addresses over one period of a window (`sim::Addresses`).
#[pyfunction]
fn bench_addresses(
    py: Python<'_>,
    size: u64,
    host_offset: u64,
    window: u64,
) -> PyResult<Bound<'_, PyArray1<u64>>> {
    let starts = sim::Addresses::period_starts(size, host_offset, window).map_err(to_py_err)?;
    Ok(starts.into_pyarray(py))
}

/// The one-line message of a failed parameter conversion: the derive's "failed to extract
/// field Struct.field", then each cause after a colon; a missing entry as "missing parameter".
fn conversion_message(py: Python<'_>, err: &PyErr) -> String {
    let text = if err.is_instance_of::<PyKeyError>(py) {
        format!("missing parameter {}", err.value(py))
    } else {
        err.value(py).to_string()
    };
    match err.cause(py) {
        Some(cause) => format!("{text}: {}", conversion_message(py, &cause)),
        None => text,
    }
}

/// A core parameter type from a Python value (the dict entries of its fields' names: its
/// derive in pcieperf-core); what cannot be converted is a bad value, named in one line.
fn parameters<'py, T: FromPyObject<'py>>(value: &Bound<'py, PyAny>) -> PyResult<T> {
    value
        .extract()
        .map_err(|err| invalid(conversion_message(value.py(), &err)))
}

/// One plain entry of a parameter dict (a switch beside the structs the dict fills).
fn entry<'py, T: FromPyObject<'py>>(params: &Bound<'py, PyAny>, key: &str) -> PyResult<T> {
    params
        .get_item(key)
        .and_then(|value| value.extract())
        .map_err(|err| invalid(conversion_message(params.py(), &err)))
}

/// The Python exception for an argument the glue cannot accept.
fn invalid(what: impl Into<String>) -> PyErr {
    to_py_err(CoreError::Invalid(what.into()))
}

/// Runs one simulated benchmark; returns elapsed time, counters and (optionally) latencies.
#[pyfunction]
fn simulate<'py>(
    py: Python<'py>,
    #[pyo3(from_py_with = parameters::<SimParams>)] params: SimParams,
) -> PyResult<Bound<'py, PyDict>> {
    let result = py.detach(|| sim::simulate(&params)).map_err(to_py_err)?;
    let out = PyDict::new(py);
    out.set_item("elapsed_ns", result.elapsed_ns)?;
    out.set_item("transactions", result.transactions)?;
    out.set_item("iotlb_misses", result.iotlb_misses)?;
    out.set_item("cache_hits", result.cache_hits)?;
    out.set_item("latencies_ns", result.latencies_ns.into_pyarray(py))?;
    Ok(out)
}

/// The port, its IOTLB and how it is run, all read from one dict.
fn port_run(params: &Bound<'_, PyAny>) -> PyResult<(PortConfig, CacheShape, PortRun)> {
    Ok((
        parameters(params)?,
        parameters(params)?,
        parameters(params)?,
    ))
}

/// Counts IOTLB misses and touched pages of a DPDK port's DMA stream (no timing): `params`
/// holds a `PortConfig`, a `CacheShape` and a `PortRun`.
#[pyfunction]
fn port_misses<'py>(py: Python<'py>, params: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let (config, iotlb, run) = port_run(params)?;
    let counts = py
        .detach(|| port_run::count_misses(config, iotlb, &run))
        .map_err(to_py_err)?;
    Ok(counts.into_pyobject(py)?.into_any())
}

/// Plays a DPDK port's DMA stream through the device, link and (if `iommu`) the IOMMU:
/// `params` as for `port_misses`, plus a `Machine`, `Walks` and the `iommu` switch (and
/// `rel_error`, `min_packets` for a run that ends once its rate is that precise).
#[pyfunction]
fn port_simulate<'py>(
    py: Python<'py>,
    params: &Bound<'py, PyAny>,
    #[pyo3(from_py_with = parameters::<Vec<TxnClass>>)] classes: Vec<TxnClass>,
) -> PyResult<Bound<'py, PyDict>> {
    let with_iommu = entry(params, "iommu")?;
    let (config, iotlb, run) = port_run(params)?;
    let (machine, walks): (Machine, Walks) = (parameters(params)?, parameters(params)?);
    let (counts, result, precision) = py
        .detach(|| port_run::simulate(config, iotlb, &run, &machine, walks, with_iommu, &classes))
        .map_err(to_py_err)?;
    let out = counts.into_pyobject(py)?;
    out.set_item("batches", precision.batches)?;
    out.set_item("rate_rel_stderr", precision.rel_stderr)?;
    out.set_item("elapsed_ns", result.elapsed_ns)?;
    out.set_item("up_busy_ns", result.up_busy_ns)?;
    out.set_item("down_busy_ns", result.down_busy_ns)?;
    out.set_item("tag_busy_ns", result.tag_busy_ns)?;
    out.set_item("rc_busy_ns", result.rc_busy_ns)?;
    out.set_item("latencies_ns", result.latencies_ns.into_pyarray(py))?;
    Ok(out)
}

/// CPU ns per store with CPUs `first` and `second` storing into one buffer over the same alone
/// on `first`: what sharing cache lines between the two costs now (see `cores`).
#[pyfunction]
fn shared_store_slowdown(
    py: Python<'_>,
    first: usize,
    second: usize,
    stores: u64,
) -> PyResult<f64> {
    py.detach(|| cores::shared_store_slowdown([first, second], stores))
        .map_err(to_py_err)
}

/// Wall ns per round trip of one cache line between CPUs `first` and `second`: the median of
/// `bursts` bursts of `trips` (NaN when the second CPU did not answer; see `cores`).
#[pyfunction]
fn round_trip_ns(
    py: Python<'_>,
    first: usize,
    second: usize,
    bursts: u32,
    trips: u32,
) -> PyResult<f64> {
    py.detach(|| cores::round_trip_ns([first, second], bursts, trips))
        .map_err(to_py_err)
}

/// CPU ns per byte copying `chunk` bytes at a time from a pool of `pool_bytes`, `total` bytes
/// in all, in pseudo-random order (see `probe`).
#[pyfunction]
fn copy_ns_per_byte(py: Python<'_>, pool_bytes: usize, chunk: usize, total: u64) -> PyResult<f64> {
    py.detach(|| probe::copy_ns_per_byte(pool_bytes, chunk, total))
        .map_err(to_py_err)
}

/// CPU ns per `write` call of a `record_bytes` record into `path`, `calls` calls (see `probe`).
#[pyfunction]
fn write_call_ns(py: Python<'_>, path: &str, record_bytes: usize, calls: u64) -> PyResult<f64> {
    py.detach(|| probe::write_call_ns(path, record_bytes, calls))
        .map_err(to_py_err)
}

/// CPU ns per item through a ring on one CPU, `items` in bursts of 32 (see `probe`).
#[pyfunction]
fn ring_local_ns(py: Python<'_>, items: u64) -> PyResult<f64> {
    py.detach(|| probe::ring_local_ns(items)).map_err(to_py_err)
}

/// Wall ns per item through a ring from CPU `first` to CPU `second` (NaN: no answer; see
/// `probe`).
#[pyfunction]
fn ring_ns(py: Python<'_>, first: usize, second: usize, items: u64) -> PyResult<f64> {
    py.detach(|| probe::ring_ns([first, second], items))
        .map_err(to_py_err)
}

/// Asks the core's work in flight, in every thread, to stop at its next check
/// (`interrupt::request_stop`; work started later is not affected).
#[pyfunction]
fn request_stop() {
    interrupt::request_stop();
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("Error", py.get_type::<Error>())?;
    m.add("ParameterError", py.get_type::<ParameterError>())?;
    m.add("FileError", py.get_type::<FileError>())?;
    m.add_function(wrap_pyfunction!(split_aligned, m)?)?;
    m.add_function(wrap_pyfunction!(bench_addresses, m)?)?;
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_function(wrap_pyfunction!(port_misses, m)?)?;
    m.add_function(wrap_pyfunction!(port_simulate, m)?)?;
    m.add_function(wrap_pyfunction!(shared_store_slowdown, m)?)?;
    m.add_function(wrap_pyfunction!(round_trip_ns, m)?)?;
    m.add_function(wrap_pyfunction!(copy_ns_per_byte, m)?)?;
    m.add_function(wrap_pyfunction!(write_call_ns, m)?)?;
    m.add_function(wrap_pyfunction!(ring_local_ns, m)?)?;
    m.add_function(wrap_pyfunction!(ring_ns, m)?)?;
    m.add_function(wrap_pyfunction!(request_stop, m)?)?;
    m.add_function(wrap_pyfunction!(trace::trace_read, m)?)?;
    m.add_function(wrap_pyfunction!(trace::trace_merge, m)?)?;
    m.add_function(wrap_pyfunction!(trace::trace_convert, m)?)?;
    m.add_function(wrap_pyfunction!(trace::trace_synth, m)?)?;
    m.add_function(wrap_pyfunction!(trace::trace_stats, m)?)?;
    m.add_function(wrap_pyfunction!(trace::trace_stats_columns, m)?)?;
    m.add_function(wrap_pyfunction!(trace::trace_partial, m)?)?;
    m.add_function(wrap_pyfunction!(trace::trace_partial_files, m)?)?;
    m.add_function(wrap_pyfunction!(trace::trace_first_records, m)?)?;
    m.add_function(wrap_pyfunction!(trace::trace_merge_part, m)?)?;
    m.add_function(wrap_pyfunction!(trace::trace_scan, m)?)?;
    m.add_class::<trace::TracePartial>()?;
    m.add_class::<trace::TraceDemandCost>()?;
    m.add_class::<trace::TraceWriter>()?;
    m.add_class::<trace::TraceSynth>()?;
    m.add_class::<trace::TraceTimeline>()?;
    Ok(())
}
