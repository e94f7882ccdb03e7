//! PyO3 glue: the only place where Python and the Rust core meet (`pcieperf._core`).

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pcieperf_core::dataplane::{Iova, Layout, PortConfig, PortStream, TxnSink};
use pcieperf_core::ddio::LlcShape;
use pcieperf_core::error::ErrorKind;
use pcieperf_core::iotlb::{CacheShape, Replacement, Translator};
use pcieperf_core::pages::PagesTouched;
use pcieperf_core::sim::{self, Iommu, Machine, OpMix, Pattern, SimParams, TxnClass, Walks};
use pcieperf_core::{tlp, CoreError};
use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

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

/// Reads one required entry of the parameter dict, naming it when missing or mistyped.
fn field<'py, T: FromPyObject<'py>>(d: &Bound<'py, PyDict>, key: &str) -> PyResult<T> {
    let value = d
        .get_item(key)?
        .ok_or_else(|| invalid(format!("missing simulation parameter {key:?}")))?;
    value
        .extract()
        .map_err(|_| invalid(format!("simulation parameter {key:?} has the wrong type")))
}

/// Reads a text entry that must be one of `options`, returning the value it names.
fn choice<T: Copy>(d: &Bound<'_, PyDict>, key: &str, options: &[(&str, T)]) -> PyResult<T> {
    let text = field::<String>(d, key)?;
    if let Some((_, value)) = options.iter().find(|(name, _)| *name == text) {
        return Ok(*value);
    }
    let names: Vec<&str> = options.iter().map(|(name, _)| *name).collect();
    let (last, rest) = names.split_last().expect("options are never empty");
    Err(invalid(format!(
        "{key} {text:?}: use {} or {last}",
        rest.join(", ")
    )))
}

/// The Python exception for an argument the glue cannot accept.
fn invalid(what: impl Into<String>) -> PyErr {
    to_py_err(CoreError::Invalid(what.into()))
}

fn params_from_dict(d: &Bound<'_, PyDict>) -> PyResult<SimParams> {
    let pattern = choice(
        d,
        "pattern",
        &[("seq", Pattern::Sequential), ("rand", Pattern::Random)],
    )?;
    let ops = choice(
        d,
        "ops",
        &[
            ("read", OpMix::Read),
            ("write", OpMix::Write),
            ("alternate", OpMix::Alternate),
            ("write_then_read", OpMix::WriteThenRead),
        ],
    )?;
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

fn port_from_dict(d: &Bound<'_, PyDict>) -> PyResult<PortConfig> {
    let layout = choice(
        d,
        "layout",
        &[("dpdk", Layout::PageBound), ("packed", Layout::Packed)],
    )?;
    let iova = choice(d, "iova", &[("va", Iova::Va), ("pa", Iova::Pa)])?;
    Ok(PortConfig {
        ports: field(d, "ports")?,
        queues: field(d, "queues")?,
        cross_port: field(d, "cross_port")?,
        rxd: field(d, "rxd")?,
        txd: field(d, "txd")?,
        rx_desc_bytes: field(d, "rx_desc_bytes")?,
        tx_desc_bytes: field(d, "tx_desc_bytes")?,
        rx_free_thresh: field(d, "rx_free_thresh")?,
        tx_free_thresh: field(d, "tx_free_thresh")?,
        rs_thresh: field(d, "rs_thresh")?,
        burst: field(d, "burst")?,
        pool: field(d, "pool")?,
        cache: field(d, "cache")?,
        elt_bytes: field(d, "elt_bytes")?,
        data_offset: field(d, "data_offset")?,
        page_bytes: field(d, "page_bytes")?,
        layout,
        iova,
        host_pages: field(d, "host_pages")?,
        rx_backlog: field(d, "rx_backlog")?,
        tx_backlog: field(d, "tx_backlog")?,
        drop_per_fwd: field(d, "drop_per_fwd")?,
        poll_batch: field(d, "poll_batch")?,
        llc: llc_from_dict(d)?,
        sizes: field(d, "sizes")?,
        weights: field(d, "weights")?,
        ns_per_packet: field(d, "ns_per_packet")?,
        wire_shares: field(d, "wire_shares")?,
        seed: field(d, "seed")?,
    })
}

/// The LLC's DDIO ways, if the dict's `llc` entry is not None.
fn llc_from_dict(d: &Bound<'_, PyDict>) -> PyResult<Option<LlcShape>> {
    let llc: Option<Bound<'_, PyDict>> = field(d, "llc")?;
    llc.map(|l| {
        Ok(LlcShape {
            sets_per_slice: field(&l, "sets_per_slice")?,
            slices: field(&l, "slices")?,
            ddio_ways: field(&l, "ddio_ways")?,
        })
    })
    .transpose()
}

/// The stream's DDIO counters (zero without an LLC model).
fn set_ddio_counts(out: &Bound<'_, PyDict>, stream: &PortStream) -> PyResult<()> {
    let (allocations, read_misses, reads) = stream
        .ddio()
        .map_or((0, 0, 0), |d| (d.allocations, d.read_misses, d.reads));
    out.set_item("ddio_allocations", allocations)?;
    out.set_item("ddio_read_misses", read_misses)?;
    out.set_item("ddio_reads", reads)?;
    Ok(())
}

fn shape_from_dict(d: &Bound<'_, PyDict>) -> PyResult<CacheShape> {
    let replacement = choice(
        d,
        "replacement",
        &[("lru", Replacement::Lru), ("random", Replacement::Random)],
    )?;
    Ok(CacheShape {
        entries: field(d, "iotlb_entries")?,
        ways: field(d, "iotlb_ways")?,
        replacement,
    })
}

/// A DPDK port's stream and the IOMMU caches it runs through, warmed by `warmup` packets
/// (the counters zeroed after the warm-up).
fn warmed_stream(d: &Bound<'_, PyDict>) -> PyResult<(PortStream, Translate)> {
    let mut stream = PortStream::new(port_from_dict(d)?).map_err(to_py_err)?;
    let caches = Translator::new(
        shape_from_dict(d)?,
        field(d, "pwc_entries")?,
        field(d, "page_bytes")?,
        stream.span(),
        field(d, "seed")?,
    )
    .map_err(to_py_err)?;
    let (page_bytes, span) = (field(d, "page_bytes")?, stream.span());
    let touched = || PagesTouched::new(page_bytes, span).map_err(to_py_err);
    let mut sink = Translate {
        caches,
        touched: touched()?,
        transactions: 0,
    };
    stream.emit_packets(field(d, "warmup")?, &mut sink);
    sink.reset(touched()?);
    stream.reset_ddio_counts();
    Ok((stream, sink))
}

/// The IOMMU's caches fed straight from the stream: translates every page of each
/// transaction and marks it touched.
struct Translate {
    caches: Translator,
    touched: PagesTouched,
    transactions: u64,
}

impl Translate {
    /// Zeroes the counts (after a warm-up), with `touched` as the pages touched so far; the
    /// caches keep what they hold.
    fn reset(&mut self, touched: PagesTouched) {
        self.caches.misses = 0;
        self.caches.pwc_misses = 0;
        self.touched = touched;
        self.transactions = 0;
    }
}

impl TxnSink for Translate {
    #[inline(always)]
    fn txn(&mut self, addr: u64, bytes: u64, _class: usize, _not_before: f64) {
        // One walk over the transfer's pages both marks and translates them.
        for page in self.caches.page_numbers(addr, bytes) {
            self.touched.mark_page(page);
            self.caches.lookup_page(page);
        }
        self.transactions += 1;
    }
}

/// Counts IOTLB misses and touched pages of a DPDK port's DMA stream (no timing).
#[pyfunction]
fn port_misses<'py>(py: Python<'py>, params: &Bound<'py, PyDict>) -> PyResult<Bound<'py, PyDict>> {
    let (mut stream, mut sink) = warmed_stream(params)?;
    let packets: u64 = field(params, "packets")?;
    let start = stream.packets();
    let forwarded_before = stream.forwarded();
    py.detach(|| stream.emit_packets(packets, &mut sink));
    let out = PyDict::new(py);
    out.set_item("packets", stream.packets() - start)?;
    out.set_item("forwarded", stream.forwarded() - forwarded_before)?;
    out.set_item("transactions", sink.transactions)?;
    out.set_item("iotlb_misses", sink.caches.misses)?;
    out.set_item("pwc_misses", sink.caches.pwc_misses)?;
    out.set_item("pages_touched", sink.touched.count())?;
    set_ddio_counts(&out, &stream)?;
    Ok(out)
}

fn classes_from_list(items: &Bound<'_, PyList>) -> PyResult<Vec<TxnClass>> {
    items
        .iter()
        .map(|item| {
            let d = item.cast::<PyDict>()?;
            Ok(TxnClass {
                read: field(d, "read")?,
                queue: field(d, "queue")?,
                tags: field(d, "tags")?,
                issue_ns: field(d, "issue_ns")?,
                datapath_ns: field(d, "datapath_ns")?,
                up_bytes: field(d, "up_bytes")?,
                down_bytes: field(d, "down_bytes")?,
                write_ns: field(d, "write_ns")?,
                hit_ns: field(d, "hit_ns")?,
                miss_ns: field(d, "miss_ns")?,
            })
        })
        .collect()
}

/// Plays a DPDK port's DMA stream through the device, link and (if `iommu`) the IOMMU.
#[pyfunction]
fn port_simulate<'py>(
    py: Python<'py>,
    params: &Bound<'py, PyDict>,
    classes: &Bound<'py, PyList>,
) -> PyResult<Bound<'py, PyDict>> {
    let classes = classes_from_list(classes)?;
    let machine = Machine {
        tags: field(params, "tags")?,
        fixed_latency_ns: field(params, "fixed_latency_ns")?,
        up_bytes_per_ns: field(params, "up_bytes_per_ns")?,
        down_bytes_per_ns: field(params, "down_bytes_per_ns")?,
        warm_bytes: u64::MAX,
        posted_credits: field(params, "posted_credits")?,
        tags_from_link: true,
        lookahead: field(params, "lookahead")?,
    };
    let walks = Walks {
        walk_ns: field(params, "walk_ns")?,
        walk_busy_ns: field(params, "walk_busy_ns")?,
        walkers: field(params, "walkers")?,
    };
    let with_iommu: bool = field(params, "iommu")?;
    let packets: u64 = field(params, "packets")?;
    let (mut stream, warmed) = warmed_stream(params)?;
    let (caches, mut touched) = (warmed.caches, warmed.touched);
    let mut iommu = Iommu::new(caches, walks).map_err(to_py_err)?;
    stream.restart_clock();
    let (start, forwarded_before) = (stream.packets(), stream.forwarded());
    let result = py
        .detach(|| {
            let txns = stream
                .take_packets(packets)
                .inspect(|t| touched.mark(t.addr, t.bytes));
            sim::run(
                &machine,
                &classes,
                with_iommu.then_some(&mut iommu),
                txns,
                true,
            )
        })
        .map_err(to_py_err)?;
    let out = PyDict::new(py);
    out.set_item("packets", stream.packets() - start)?;
    out.set_item("forwarded", stream.forwarded() - forwarded_before)?;
    out.set_item("elapsed_ns", result.elapsed_ns)?;
    out.set_item("transactions", result.transactions)?;
    // Misses in the order the IOMMU saw the transactions (link order, which the NIC's two
    // queues may interleave differently from the stream): the ones the walkers served.
    out.set_item("iotlb_misses", result.iotlb_misses)?;
    out.set_item(
        "pwc_misses",
        if with_iommu {
            iommu.translator.pwc_misses
        } else {
            0
        },
    )?;
    out.set_item("pages_touched", touched.count())?;
    out.set_item("up_busy_ns", result.up_busy_ns)?;
    out.set_item("down_busy_ns", result.down_busy_ns)?;
    out.set_item("tag_busy_ns", result.tag_busy_ns)?;
    out.set_item("rc_busy_ns", result.rc_busy_ns)?;
    out.set_item("latencies_ns", result.latencies_ns.into_pyarray(py))?;
    set_ddio_counts(&out, &stream)?;
    Ok(out)
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
    Ok(())
}
