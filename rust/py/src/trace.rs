//! Capture-file glue: reading into numpy columns, the buffered writer, merge and synthesis.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use numpy::{IntoPyArray, PyReadonlyArray1};
use pcieperf_core::parallel::in_parallel;
use pcieperf_core::trace::archive::demand::DemandConfig;
use pcieperf_core::trace::archive::files::{file_partial, files_partial, first_record};
use pcieperf_core::trace::archive::Partial;
use pcieperf_core::trace::columns::read_columns;
use pcieperf_core::trace::merge::{convert, merge_part, merge_with, scan, MergeOptions, Part};
use pcieperf_core::trace::rate_windows::{Series, Span};
use pcieperf_core::trace::read::ReadOptions;
use pcieperf_core::trace::stats::{columns_stats, file_stats, ReadFacts, StatsConfig, Summary};
use pcieperf_core::trace::synth::{synthesize, Synthesizer};
use pcieperf_core::trace::timeline::Timeline;
use pcieperf_core::trace::write::{Batch, OutFormat, Writer, DEFAULT_BUFFER_BYTES};
use pcieperf_core::trace::Interface;
use pcieperf_core::CoreError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use pyo3::IntoPyObjectExt;

use crate::interruptible::{interruptible, load_numpy};
use crate::{invalid, parameters, to_py_err};

fn out_format(text: &str) -> PyResult<OutFormat> {
    match text {
        "pcap" => Ok(OutFormat::Pcap),
        "pcapng" => Ok(OutFormat::PcapNg),
        other => Err(invalid(format!(
            "output format {other:?} is not allowed; use pcap or pcapng"
        ))),
    }
}

/// The reader's options from the `skip_bad` and `strict` arguments every reading function takes.
fn read_options(skip_bad: bool, strict: bool) -> ReadOptions {
    ReadOptions {
        skip_bad,
        strict,
        ..ReadOptions::default()
    }
}

/// Reads a pcap/pcapng file (`-`: standard input; gzip or zstd by magic) into numpy columns
/// (ts_ns, caplen, wirelen, iface[, offset into the decompressed stream]).
#[pyfunction]
#[pyo3(signature = (path, skip_bad=false, offsets=false, strict=false))]
pub fn trace_read<'py>(
    py: Python<'py>,
    path: PathBuf,
    skip_bad: bool,
    offsets: bool,
    strict: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let options = read_options(skip_bad, strict);
    load_numpy(py)?;
    let c = interruptible(py, move || read_columns(&path, options, offsets))?.map_err(to_py_err)?;
    let out = PyDict::new(py);
    out.set_item("ts_ns", c.ts_ns.into_pyarray(py))?;
    out.set_item("caplen", c.caplen.into_pyarray(py))?;
    out.set_item("wirelen", c.wirelen.into_pyarray(py))?;
    out.set_item("iface", c.iface.into_pyarray(py))?;
    if offsets {
        out.set_item("offset", c.offset.into_pyarray(py))?;
    }
    out.set_item("interfaces", c.interfaces)?;
    out.set_item("skipped", c.skipped)?;
    out.set_item("untimed", c.untimed)?;
    out.set_item("snaplen_exceeded", c.quirks.snaplen_exceeded)?;
    out.set_item("wirelen_below_caplen", c.quirks.wirelen_below_caplen)?;
    out.set_item("ts_wrapped", c.quirks.ts_wrapped)?;
    out.set_item("cut_short", c.cut_short)?;
    out.set_item("format", c.format)?;
    out.set_item("compression", c.compression)?;
    out.set_item("nanosecond", c.nanosecond)?;
    out.set_item("file_bytes", c.file_bytes)?;
    Ok(out)
}

/// The statistics configuration from the dict `trace.py` builds (`StatsConfig`), checked.
fn stats_config(config: &Bound<'_, PyAny>) -> PyResult<StatsConfig> {
    let config: StatsConfig = parameters(config)?;
    config.check().map_err(to_py_err)?;
    Ok(config)
}

/// A summary as a dict: `totals_dict` keys, then out_of_order, max_step_back_ns, directions
/// (per interface: unknown, inbound, outbound), distinct_timestamps, max_equal_timestamps,
/// per_interface, rates (window_ns, last_index, groups of (covered ns, packets, bits, frame
/// bits)), size_histogram, frame_bytes (per interface) and bursts (or None).
fn summary_dict<'py>(py: Python<'py>, s: &Summary) -> PyResult<Bound<'py, PyDict>> {
    let c = &s.counted;
    let d = c.totals.into_pyobject(py)?;
    d.set_item("out_of_order", c.out_of_order)?;
    d.set_item("max_step_back_ns", c.max_step_back_ns)?;
    d.set_item("directions", c.directions.clone())?;
    d.set_item("distinct_timestamps", s.ties.distinct_timestamps)?;
    d.set_item("max_equal_timestamps", s.ties.max_equal_timestamps)?;
    d.set_item("per_interface", c.per_interface.clone())?;
    d.set_item("rates", s.rates.clone())?;
    d.set_item("size_histogram", s.size_histogram.clone())?;
    d.set_item("frame_bytes", s.frame_bytes.clone())?;
    d.set_item("bursts", s.bursts.clone())?;
    Ok(d)
}

/// A summary with what the reader found, as `trace_stats` gives it for one file.
fn stats_dict<'py>(py: Python<'py>, s: &Summary, f: &ReadFacts) -> PyResult<Bound<'py, PyDict>> {
    let d = summary_dict(py, s)?;
    add_read_facts(&d, f)?;
    Ok(d)
}

/// What the reader found: format, compression, interfaces, skipped, untimed, the quirks,
/// cut_short and reads.
fn add_read_facts(d: &Bound<'_, PyDict>, f: &ReadFacts) -> PyResult<()> {
    d.set_item("format", &f.format)?;
    d.set_item("compression", &f.compression)?;
    d.set_item("interfaces", f.interfaces.clone())?;
    d.set_item("skipped", f.skipped)?;
    d.set_item("untimed", f.untimed)?;
    d.set_item("snaplen_exceeded", f.quirks.snaplen_exceeded)?;
    d.set_item("wirelen_below_caplen", f.quirks.wirelen_below_caplen)?;
    d.set_item("ts_wrapped", f.quirks.ts_wrapped)?;
    d.set_item("cut_short", f.cut_short.clone())?;
    d.set_item("reads", f.reads)?;
    Ok(())
}

/// Statistics of capture files, each read while it is decoded (no columns), files in parallel
/// on up to `threads` threads (0: one per core), without the GIL. A file that cannot be read
/// comes back as its error (the exception, not raised) in its place, for the caller to raise in
/// turn (`pcieperf._native.checked`).
#[pyfunction]
#[pyo3(signature = (paths, config, skip_bad=false, strict=false, threads=0))]
pub fn trace_stats<'py>(
    py: Python<'py>,
    paths: Vec<PathBuf>,
    #[pyo3(from_py_with = stats_config)] config: StatsConfig,
    skip_bad: bool,
    strict: bool,
    threads: usize,
) -> PyResult<Bound<'py, PyList>> {
    per_file(
        py,
        paths,
        read_options(skip_bad, strict),
        threads,
        move |p, read| file_stats(p, read, &config),
        |stats| Ok(stats_dict(py, &stats.summary, &stats.facts)?.into_any()),
    )
}

/// `work` on each capture of `paths` read with `read`, in parallel on up to `threads` threads
/// without the GIL (stopped by a signal: `interruptible`), as a list in path order: each
/// success converted by `to_py`, each failure as its exception (not raised), so that one bad
/// file does not hide the others' results. The one body of the per-file functions
/// (`trace_stats`, `trace_first_records`, `trace_scan`).
fn per_file<'py, T: Send + 'static>(
    py: Python<'py>,
    paths: Vec<PathBuf>,
    read: ReadOptions,
    threads: usize,
    work: impl Fn(&Path, ReadOptions) -> Result<T, CoreError> + Sync + Send + 'static,
    to_py: impl Fn(T) -> PyResult<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyList>> {
    let results = interruptible(py, move || {
        in_parallel(&paths, threads, |path| work(path, read))
    })?;
    let out = PyList::empty(py);
    for result in results {
        match result {
            Ok(value) => out.append(to_py(value)?)?,
            Err(error) => out.append(to_py_err(error).into_value(py))?,
        }
    }
    Ok(out)
}

/// The conversion of a per-file result that Python takes as it is.
fn as_is<'py, T: IntoPyObject<'py>>(py: Python<'py>) -> impl Fn(T) -> PyResult<Bound<'py, PyAny>> {
    move |value| value.into_bound_py_any(py)
}

/// Defines the Python function `$name(paths, skip_bad=False, strict=False, threads=1)`: `per_file`
/// of `$work`, whose results Python takes as they are.
macro_rules! per_file_function {
    ($(#[$doc:meta])* $name:ident, $work:path) => {
        $(#[$doc])*
        #[pyfunction]
        #[pyo3(signature = (paths, skip_bad=false, strict=false, threads=1))]
        pub fn $name<'py>(
            py: Python<'py>,
            paths: Vec<PathBuf>,
            skip_bad: bool,
            strict: bool,
            threads: usize,
        ) -> PyResult<Bound<'py, PyList>> {
            per_file(py, paths, read_options(skip_bad, strict), threads, $work, as_is(py))
        }
    };
}

/// Statistics of packets given as columns in file order (an in-memory trace); `interfaces`
/// are (link type, if_tsresol) pairs. Same keys as `trace_stats` without the reader's.
#[pyfunction]
#[pyo3(signature = (ts_ns, caplen, wirelen, iface, interfaces, config))]
pub fn trace_stats_columns<'py>(
    py: Python<'py>,
    ts_ns: PyReadonlyArray1<'py, i64>,
    caplen: PyReadonlyArray1<'py, u32>,
    wirelen: PyReadonlyArray1<'py, u32>,
    iface: PyReadonlyArray1<'py, u32>,
    interfaces: Vec<(u16, u8)>,
    #[pyo3(from_py_with = stats_config)] config: StatsConfig,
) -> PyResult<Bound<'py, PyDict>> {
    let interfaces: Vec<Interface> = interfaces
        .into_iter()
        .map(|(linktype, tsresol)| Interface {
            tsresol,
            ..Interface::new(linktype, 0)
        })
        .collect();
    let (ts, cap, wire, ifs) = (
        ts_ns.as_slice()?,
        caplen.as_slice()?,
        wirelen.as_slice()?,
        iface.as_slice()?,
    );
    let summary = py
        .detach(|| columns_stats(ts, cap, wire, ifs, &interfaces, &config))
        .map_err(to_py_err)?;
    summary_dict(py, &summary)
}

/// Merges captures into one file in timestamp order (stable: input order, then record order),
/// or with `append` writes them one after another in the order given.
#[pyfunction]
#[pyo3(signature = (inputs, output, format, skip_bad, strict=false, append=false))]
pub fn trace_merge<'py>(
    py: Python<'py>,
    inputs: Vec<PathBuf>,
    output: PathBuf,
    format: &str,
    skip_bad: bool,
    strict: bool,
    append: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let format = out_format(format)?;
    let options = MergeOptions {
        skip_bad,
        strict,
        keep_names: false,
        append,
    };
    let s = interruptible(py, move || merge_with(&inputs, &output, format, options))?
        .map_err(to_py_err)?;
    s.into_pyobject(py)
}

/// Rewrites a capture packet for packet (interfaces and names kept), streaming, every time
/// shifted by `shift_ns`.
#[pyfunction]
#[pyo3(signature = (input, output, format, skip_bad=false, strict=false, shift_ns=0))]
pub fn trace_convert<'py>(
    py: Python<'py>,
    input: PathBuf,
    output: PathBuf,
    format: &str,
    skip_bad: bool,
    strict: bool,
    shift_ns: i64,
) -> PyResult<Bound<'py, PyDict>> {
    let format = out_format(format)?;
    let s = interruptible(py, move || {
        convert(&input, &output, format, skip_bad, strict, shift_ns)
    })?
    .map_err(to_py_err)?;
    s.into_pyobject(py)
}

/// Writes synthetic Ethernet/IPv4/UDP frames at the given timestamps and lengths.
#[pyfunction]
pub fn trace_synth<'py>(
    py: Python<'py>,
    path: PathBuf,
    format: &str,
    ts_ns: PyReadonlyArray1<'py, i64>,
    frame_len: PyReadonlyArray1<'py, u32>,
    flows: u32,
) -> PyResult<Bound<'py, PyDict>> {
    let format = out_format(format)?;
    let (ts, lens) = (ts_ns.as_slice()?, frame_len.as_slice()?);
    let s = py
        .detach(|| synthesize(&path, format, ts, lens, flows))
        .map_err(to_py_err)?;
    s.into_pyobject(py)
}

/// A synthetic capture written chunk by chunk (`push` releases the GIL), so arrivals can be
/// generated in bounded memory at any duration.
#[pyclass(unsendable)]
pub struct TraceSynth {
    inner: Option<Synthesizer>,
}

#[pymethods]
impl TraceSynth {
    /// Creates `path` for Ethernet/IPv4/UDP frames cycling over `flows` flows.
    #[new]
    fn new(path: PathBuf, format: &str, flows: u32) -> PyResult<Self> {
        let synth = Synthesizer::create(&path, out_format(format)?, flows).map_err(to_py_err)?;
        Ok(Self { inner: Some(synth) })
    }

    /// Appends one frame per (timestamp, frame length without FCS).
    fn push(
        &mut self,
        py: Python<'_>,
        ts_ns: PyReadonlyArray1<'_, i64>,
        frame_len: PyReadonlyArray1<'_, u32>,
    ) -> PyResult<()> {
        let synth = self
            .inner
            .as_mut()
            .ok_or_else(|| invalid("the synthetic capture is already closed"))?;
        let (ts, lens) = (ts_ns.as_slice()?, frame_len.as_slice()?);
        py.detach(|| synth.push(ts, lens)).map_err(to_py_err)
    }

    /// Flushes, closes the file and returns {packets, bytes, writes}.
    fn close<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let synth = self
            .inner
            .take()
            .ok_or_else(|| invalid("the synthetic capture is already closed"))?;
        synth.finish().map_err(to_py_err)?.into_pyobject(py)
    }
}

/// A buffered capture writer: packets go in as numpy batches, `close` flushes everything.
#[pyclass(unsendable)]
pub struct TraceWriter {
    inner: Option<Writer>,
}

impl TraceWriter {
    fn writer(&mut self) -> PyResult<&mut Writer> {
        self.inner
            .as_mut()
            .ok_or_else(|| invalid("the capture writer is already closed"))
    }
}

#[pymethods]
impl TraceWriter {
    /// Creates `path` with one interface; pcap takes its link type and snaplen.
    #[new]
    #[pyo3(signature = (path, format, linktype, snaplen, name=None, buffer_bytes=DEFAULT_BUFFER_BYTES))]
    fn new(
        path: PathBuf,
        format: &str,
        linktype: u16,
        snaplen: u32,
        name: Option<String>,
        buffer_bytes: usize,
    ) -> PyResult<Self> {
        let iface = Interface {
            name,
            ..Interface::new(linktype, snaplen)
        };
        let writer = Writer::create(&path, out_format(format)?, &iface, buffer_bytes.max(1))
            .map_err(to_py_err)?;
        Ok(Self {
            inner: Some(writer),
        })
    }

    /// Declares another interface; returns its id.
    #[pyo3(signature = (linktype, snaplen, name=None))]
    fn add_interface(
        &mut self,
        linktype: u16,
        snaplen: u32,
        name: Option<String>,
    ) -> PyResult<u32> {
        let iface = Interface {
            name,
            ..Interface::new(linktype, snaplen)
        };
        self.writer()?.add_interface(&iface).map_err(to_py_err)
    }

    /// Appends packets: packet i is `data[offset[i] : offset[i] + caplen[i]]`.
    fn write_batch(
        &mut self,
        ts_ns: PyReadonlyArray1<'_, i64>,
        iface: PyReadonlyArray1<'_, u32>,
        wirelen: PyReadonlyArray1<'_, u32>,
        caplen: PyReadonlyArray1<'_, u32>,
        data: PyReadonlyArray1<'_, u8>,
        offset: PyReadonlyArray1<'_, u64>,
    ) -> PyResult<()> {
        let batch = Batch {
            ts_ns: ts_ns.as_slice()?,
            iface: iface.as_slice()?,
            wirelen: wirelen.as_slice()?,
            caplen: caplen.as_slice()?,
            data: data.as_slice()?,
            offset: offset.as_slice()?,
        };
        self.writer()?.write_batch(&batch).map_err(to_py_err)
    }

    /// Writes out what is buffered.
    fn flush(&mut self) -> PyResult<()> {
        self.writer()?.flush().map_err(to_py_err)
    }

    /// Flushes, closes the file and returns {packets, bytes, writes}.
    fn close<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let stats = self.writer()?.finish().map_err(to_py_err)?;
        self.inner = None;
        stats.into_pyobject(py)
    }
}

/// Mergeable statistics of one capture file or of consecutive files of one port
/// (`pcieperf_core::trace::archive`): computed by a worker, pickled as bytes, appended in port
/// order by the caller, summarised once.
#[pyclass(module = "pcieperf._core")]
pub struct TracePartial {
    inner: Partial,
}

#[pymethods]
impl TracePartial {
    /// A partial from `to_bytes`.
    #[staticmethod]
    fn from_bytes(data: &[u8]) -> PyResult<Self> {
        Partial::from_bytes(data)
            .map(|inner| TracePartial { inner })
            .map_err(to_py_err)
    }

    fn to_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, pyo3::types::PyBytes> {
        pyo3::types::PyBytes::new(py, &self.inner.to_bytes())
    }

    /// Pickled as its bytes (Dask ships partials between processes).
    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyAny>,))> {
        let py = slf.py();
        let from = slf.get_type().getattr("from_bytes")?;
        Ok((from, (slf.borrow().to_bytes(py).into_any(),)))
    }

    /// Adds the partial of the files that follow; ValueError saying why where the two cannot
    /// be merged exactly (they overlap in time, count windows from other origins, or size
    /// frames by another rule).
    #[pyo3(signature = (next, config, demand=None))]
    fn append(
        &mut self,
        next: &TracePartial,
        #[pyo3(from_py_with = stats_config)] config: StatsConfig,
        demand: Option<&TraceDemandCost>,
    ) -> PyResult<()> {
        self.inner
            .append(&next.inner, &config, demand.map(|d| &*d.inner))
            .map_err(to_py_err)
    }

    /// The PCIe demand of the packets (`archive::Partial::demand`) as a dict.
    fn demand<'py>(&self, py: Python<'py>, cost: &TraceDemandCost) -> PyResult<Bound<'py, PyDict>> {
        self.inner
            .demand(&cost.inner)
            .map_err(to_py_err)?
            .into_pyobject(py)
    }

    /// The statistics as `trace_stats` gives them for one file.
    fn summary<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = stats_config)] config: StatsConfig,
    ) -> PyResult<Bound<'py, PyDict>> {
        let summary = self.inner.summary(&config).map_err(to_py_err)?;
        stats_dict(py, &summary, &self.inner.facts)
    }

    /// Names `to` instead of `from` in what the reader reported (a file read from a copy).
    fn rename_file(&mut self, from: &str, to: &str) {
        self.inner.rename_file(from, to);
    }

    /// Packets summarised.
    #[getter]
    fn packets(&self) -> u64 {
        self.inner.counted.totals.packets
    }

    /// Time of the earliest and latest packet (None without packets).
    #[getter]
    fn span_ns(&self) -> Option<(i64, i64)> {
        let t = &self.inner.counted.totals;
        (t.packets > 0).then_some((t.first_ts_ns, t.last_ts_ns))
    }

    /// Where windows are counted from.
    #[getter]
    fn origin(&self) -> i64 {
        self.inner.origin
    }
}

/// The arguments of `TraceDemandCost`: window, costs up and down, capacity.
type CostArgs = (u64, Vec<f64>, Vec<f64>, f64);

/// What the PCIe demand of a trace costs (`archive::DemandConfig`): bytes up and down per
/// frame size (index: frame bytes incl. FCS), the window and the link capacity per direction.
#[pyclass(module = "pcieperf._core")]
pub struct TraceDemandCost {
    inner: Arc<DemandConfig>,
}

#[pymethods]
impl TraceDemandCost {
    #[new]
    fn new(window_ns: u64, up: Vec<f64>, down: Vec<f64>, capacity_gbps: f64) -> PyResult<Self> {
        DemandConfig::new(window_ns, up, down, capacity_gbps)
            .map(|cost| TraceDemandCost {
                inner: Arc::new(cost),
            })
            .map_err(to_py_err)
    }

    /// Pickled as its arguments.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, CostArgs)> {
        let c = &slf.borrow().inner;
        Ok((
            slf.get_type().into_any(),
            (c.window_ns, c.up.clone(), c.down.clone(), c.capacity_gbps),
        ))
    }
}

/// The partial of one capture file, windows counted from `origin` ns, read without the GIL;
/// with `demand`, the PCIe demand of its packets too. `read_ahead`: read the file on a second
/// thread (about 1.7 cores a call instead of one; the same partial).
#[pyfunction]
#[pyo3(signature = (path, config, origin, skip_bad=false, strict=false, demand=None, read_ahead=true))]
#[allow(clippy::too_many_arguments)] // Python keyword arguments, not a Rust API
pub fn trace_partial(
    py: Python<'_>,
    path: PathBuf,
    #[pyo3(from_py_with = stats_config)] config: StatsConfig,
    origin: i64,
    skip_bad: bool,
    strict: bool,
    demand: Option<&TraceDemandCost>,
    read_ahead: bool,
) -> PyResult<TracePartial> {
    let read = read_options(skip_bad, strict);
    let cost = demand.map(|d| Arc::clone(&d.inner));
    interruptible(py, move || {
        file_partial(&path, read, &config, origin, cost.as_deref(), read_ahead)
    })?
    .map(|inner| TracePartial { inner })
    .map_err(to_py_err)
}

/// The partial of files that overlap in time, concatenated in the order given (every packet
/// sorted by time in bounded runs spilled under TMPDIR), windows counted from the first packet.
#[pyfunction]
#[pyo3(signature = (paths, config, skip_bad=false, strict=false, demand=None))]
pub fn trace_partial_files(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    #[pyo3(from_py_with = stats_config)] config: StatsConfig,
    skip_bad: bool,
    strict: bool,
    demand: Option<&TraceDemandCost>,
) -> PyResult<TracePartial> {
    let read = read_options(skip_bad, strict);
    let cost = demand.map(|d| Arc::clone(&d.inner));
    interruptible(py, move || {
        files_partial(&paths, read, &config, cost.as_deref())
    })?
    .map(|inner| TracePartial { inner })
    .map_err(to_py_err)
}

/// Windows and their series' rates: count, whole ones, what the last covers, and per series
/// its Gb/s per window, mean, peak and tail.
fn windows_dict<'py>(
    py: Python<'py>,
    span: &Span,
    series: Vec<Series>,
) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    out.set_item("windows", span.count())?;
    out.set_item("full_windows", span.full())?;
    out.set_item("last_covered_ns", span.covered)?;
    let rates = PyList::empty(py);
    for s in series {
        let one = PyDict::new(py);
        one.set_item("mean_gbps", s.mean_gbps)?;
        one.set_item("peak_gbps", s.peak_gbps)?;
        one.set_item("tail_gbps", s.tail_gbps)?;
        one.set_item("gbps", s.gbps.into_pyarray(py))?;
        rates.append(one)?;
    }
    out.set_item("series", rates)?;
    Ok(out)
}

per_file_function!(
    /// Per file, (time of its first record or None, its interfaces then), or the file's error
    /// (the exception, not raised) in its place; files in parallel on up to `threads` threads,
    /// without the GIL.
    trace_first_records,
    first_record
);

/// The records of `inputs` within [from_ns, to_ns) (to_ns = i64::MAX: to the end) merged into
/// `output` with the whole merge's header and interfaces, reading only the inputs `selected`
/// (`merge::merge_part`).
#[pyfunction]
#[pyo3(signature = (inputs, output, format, from_ns, to_ns, selected, skip_bad=false, strict=false))]
#[allow(clippy::too_many_arguments)]
pub fn trace_merge_part<'py>(
    py: Python<'py>,
    inputs: Vec<PathBuf>,
    output: PathBuf,
    format: &str,
    from_ns: i64,
    to_ns: i64,
    selected: Vec<bool>,
    skip_bad: bool,
    strict: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let format = out_format(format)?;
    let options = MergeOptions {
        skip_bad,
        strict,
        ..MergeOptions::default()
    };
    let part = Part {
        from_ns,
        to_ns,
        inputs: Some(selected),
    };
    let s = interruptible(py, move || {
        merge_part(&inputs, &output, format, options, &part)
    })?
    .map_err(to_py_err)?;
    s.into_pyobject(py)
}

per_file_function!(
    /// Per file, its time span and order (`merge::scan`) as a dict, or its error (the
    /// exception, not raised) in its place; files in parallel on up to `threads` threads,
    /// without the GIL.
    trace_scan,
    scan
);

/// One capture's packets in time order for passes over them in bounded memory
/// (`pcieperf_core::trace::timeline`): read (and sorted where it must be) when made, without
/// the GIL and stopped by a signal, as each pass is.
#[pyclass(module = "pcieperf._core", frozen)]
pub struct TraceTimeline {
    inner: Arc<Timeline>,
    config: Arc<StatsConfig>,
}

#[pymethods]
impl TraceTimeline {
    /// Reads `path` (`-`: standard input); `config` sizes the frames (as `trace_stats`).
    #[new]
    #[pyo3(signature = (path, config, skip_bad=false, strict=false))]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        #[pyo3(from_py_with = stats_config)] config: StatsConfig,
        skip_bad: bool,
        strict: bool,
    ) -> PyResult<Self> {
        let read = read_options(skip_bad, strict);
        let timeline =
            interruptible(py, move || Timeline::open(&path, read))?.map_err(to_py_err)?;
        Ok(TraceTimeline {
            inner: Arc::new(timeline),
            config: Arc::new(config),
        })
    }

    /// What was read: `stats_dict`'s reader keys, and packets, per_interface (packets per
    /// interface), first_ts_ns and last_ts_ns (the earliest and the latest), max_wirelen.
    fn facts<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let t = &self.inner;
        let d = PyDict::new(py);
        add_read_facts(&d, &t.facts)?;
        d.set_item("packets", t.packets)?;
        d.set_item("per_interface", t.per_interface.clone())?;
        d.set_item("first_ts_ns", t.first_ts_ns)?;
        d.set_item("last_ts_ns", t.last_ts_ns)?;
        d.set_item("max_wirelen", t.max_wirelen)?;
        Ok(d)
    }

    /// Per-window rates of per-frame-size byte costs (`costs[k][frame bytes]`), as
    /// `windows_dict` gives them, and `frame_bytes`, the frames' bytes summed.
    fn windows<'py>(
        &self,
        py: Python<'py>,
        costs: Vec<Vec<f64>>,
        window_ns: u64,
        max_windows: u64,
    ) -> PyResult<Bound<'py, PyDict>> {
        load_numpy(py)?;
        let (timeline, config) = (Arc::clone(&self.inner), Arc::clone(&self.config));
        let (span, series, frame_bytes) = interruptible(py, move || {
            timeline.windows(&config, &costs, window_ns, max_windows)
        })?
        .map_err(to_py_err)?;
        let out = windows_dict(py, &span, series)?;
        out.set_item("frame_bytes", frame_bytes)?;
        Ok(out)
    }

    /// The Rx batches of a PMD polling every `poll_ns` that takes up to `burst` packets a
    /// call: (calls of `burst` packets, [(batch, calls) of the smaller batches, ascending]).
    fn poll_batches(
        &self,
        py: Python<'_>,
        poll_ns: u64,
        burst: u64,
    ) -> PyResult<(u64, Vec<(u64, u64)>)> {
        let timeline = Arc::clone(&self.inner);
        interruptible(py, move || timeline.poll_batches(poll_ns, burst))?.map_err(to_py_err)
    }
}
