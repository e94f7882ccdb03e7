//! Capture-file glue: reading into numpy columns, the buffered writer, merge and synthesis.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use numpy::{IntoPyArray, PyReadonlyArray1};
use pcieperf_core::trace::archive::{
    file_partial, files_partial, first_record, DemandConfig, Partial,
};
use pcieperf_core::trace::merge::{
    convert, merge_part, merge_with, scan, MergeOptions, MergeStats, Part,
};
use pcieperf_core::trace::read::{Quirks, ReadOptions, Reader};
use pcieperf_core::trace::stats::{
    columns_stats, file_stats, FileStats, StatsConfig, Summary, Totals, DISTINCT_GAP_LIMIT,
};
use pcieperf_core::trace::synth::{synthesize, Synthesizer};
use pcieperf_core::trace::write::{OutFormat, WriteStats, Writer, DEFAULT_BUFFER_BYTES};
use pcieperf_core::trace::Interface;
use pcieperf_core::CoreError;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::{invalid, to_py_err};

fn out_format(text: &str) -> PyResult<OutFormat> {
    match text {
        "pcap" => Ok(OutFormat::Pcap),
        "pcapng" => Ok(OutFormat::PcapNg),
        other => Err(invalid(format!(
            "output format {other:?} is not allowed; use pcap or pcapng"
        ))),
    }
}

/// Every packet of a file as columns, plus what the reader learnt about the file.
struct Columns {
    ts_ns: Vec<i64>,
    caplen: Vec<u32>,
    wirelen: Vec<u32>,
    iface: Vec<u32>,
    offset: Vec<u64>,
    interfaces: Vec<Interface>,
    skipped: u64,
    untimed: u64,
    quirks: Quirks,
    cut_short: Option<String>,
    format: &'static str,
    compression: &'static str,
    nanosecond: bool,
    file_bytes: u64,
}

fn read_columns(path: &Path, options: ReadOptions, offsets: bool) -> Result<Columns, CoreError> {
    let mut reader = Reader::open_with(path, options)?;
    // A lower bound on the packet count (16-byte headers, no data) would over-allocate; the
    // average 64-byte frame is a good first guess and the vectors grow from there (they start
    // empty where the size is unknown: standard input, compressed files).
    let guess = reader.size_hint().unwrap_or(0) as usize / 96;
    let mut c = Columns {
        ts_ns: Vec::with_capacity(guess),
        caplen: Vec::with_capacity(guess),
        wirelen: Vec::with_capacity(guess),
        iface: Vec::with_capacity(guess),
        offset: Vec::with_capacity(if offsets { guess } else { 0 }),
        interfaces: Vec::new(),
        skipped: 0,
        untimed: 0,
        quirks: Quirks::default(),
        cut_short: None,
        format: reader.format(),
        compression: reader.compression().name(),
        nanosecond: reader.nanosecond_pcap(),
        file_bytes: 0,
    };
    while let Some(r) = reader.next_record()? {
        c.ts_ns.push(r.ts_ns);
        c.caplen.push(r.caplen);
        c.wirelen.push(r.wirelen);
        c.iface.push(r.iface);
        if offsets {
            c.offset.push(r.data_offset);
        }
    }
    c.interfaces = reader.interfaces().to_vec();
    c.skipped = reader.skipped();
    c.untimed = reader.untimed();
    c.quirks = reader.quirks();
    c.cut_short = reader.cut_short().map(ToString::to_string);
    c.file_bytes = reader.bytes_read();
    Ok(c)
}

fn interfaces_list<'py>(py: Python<'py>, ifaces: &[Interface]) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for i in ifaces {
        let d = PyDict::new(py);
        d.set_item("linktype", i.linktype)?;
        d.set_item("snaplen", i.snaplen)?;
        d.set_item("tsresol", i.tsresol)?;
        d.set_item("tsoffset_s", i.tsoffset_s)?;
        d.set_item("name", i.name.clone())?;
        d.set_item("section", i.section)?;
        list.append(d)?;
    }
    Ok(list)
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
    let options = ReadOptions {
        skip_bad,
        strict,
        ..ReadOptions::default()
    };
    let c = py
        .detach(|| read_columns(&path, options, offsets))
        .map_err(to_py_err)?;
    let out = PyDict::new(py);
    out.set_item("ts_ns", c.ts_ns.into_pyarray(py))?;
    out.set_item("caplen", c.caplen.into_pyarray(py))?;
    out.set_item("wirelen", c.wirelen.into_pyarray(py))?;
    out.set_item("iface", c.iface.into_pyarray(py))?;
    if offsets {
        out.set_item("offset", c.offset.into_pyarray(py))?;
    }
    out.set_item("interfaces", interfaces_list(py, &c.interfaces)?)?;
    out.set_item("skipped", c.skipped)?;
    out.set_item("untimed", c.untimed)?;
    out.set_item("snaplen_exceeded", c.quirks.snaplen_exceeded)?;
    out.set_item("wirelen_below_caplen", c.quirks.wirelen_below_caplen)?;
    out.set_item("cut_short", c.cut_short)?;
    out.set_item("format", c.format)?;
    out.set_item("compression", c.compression)?;
    out.set_item("nanosecond", c.nanosecond)?;
    out.set_item("file_bytes", c.file_bytes)?;
    Ok(out)
}

/// A required entry of the statistics configuration dict.
fn config_item<'py, T: FromPyObject<'py>>(config: &Bound<'py, PyDict>, key: &str) -> PyResult<T> {
    config
        .get_item(key)?
        .ok_or_else(|| invalid(format!("statistics config lacks {key:?}")))?
        .extract()
}

/// The statistics configuration from the dict `trace.py` builds (see `StatsConfig`).
fn stats_config(config: &Bound<'_, PyDict>) -> PyResult<StatsConfig> {
    let windows_ns: Vec<u64> = config_item(config, "windows_ns")?;
    if windows_ns.contains(&0) {
        return Err(invalid("rate windows must be at least 1 ns"));
    }
    let size_bins: Vec<i64> = config_item(config, "size_bins")?;
    if size_bins.is_empty() || size_bins.windows(2).any(|w| w[0] >= w[1]) || size_bins[0] > 0 {
        return Err(invalid(
            "size bins must ascend from at most 0 (lower bounds of the buckets)",
        ));
    }
    let percentiles: Vec<f64> = config_item(config, "percentiles")?;
    if percentiles.iter().any(|p| !(0.0..=100.0).contains(p)) {
        return Err(invalid("percentiles must lie within 0..=100"));
    }
    let eth_gbps: f64 = config_item(config, "eth_gbps")?;
    if !(eth_gbps.is_finite() && eth_gbps > 0.0) {
        return Err(invalid("the Ethernet rate must be a positive number"));
    }
    Ok(StatsConfig {
        windows_ns,
        eth_gbps,
        overhead_bytes: config_item(config, "overhead_bytes")?,
        fcs_bytes: config_item(config, "fcs_bytes")?,
        min_frame_bytes: config_item(config, "min_frame_bytes")?,
        ethernet_header_bytes: config_item(config, "ethernet_header_bytes")?,
        link_header_bytes: config_item(config, "link_header_bytes")?,
        size_bins,
        percentiles,
        distinct_gap_limit: match config.get_item("distinct_gap_limit")? {
            Some(limit) => limit.extract()?,
            None => DISTINCT_GAP_LIMIT,
        },
    })
}

fn totals_dict<'py>(py: Python<'py>, t: &Totals) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("packets", t.packets)?;
    d.set_item("bytes_captured", t.bytes_captured)?;
    d.set_item("bytes_wire", t.bytes_wire)?;
    d.set_item("first_ts_ns", t.first_ts_ns)?;
    d.set_item("last_ts_ns", t.last_ts_ns)?;
    Ok(d)
}

/// A summary as a dict: `totals_dict` keys, then out_of_order, per_interface, rates (window_ns,
/// last_index, groups of (covered ns, packets, bits)), size_histogram and bursts (or None).
fn summary_dict<'py>(py: Python<'py>, s: &Summary) -> PyResult<Bound<'py, PyDict>> {
    let d = totals_dict(py, &s.totals)?;
    d.set_item("out_of_order", s.out_of_order)?;
    let per_interface = PyList::empty(py);
    for t in &s.per_interface {
        per_interface.append(totals_dict(py, t)?)?;
    }
    d.set_item("per_interface", per_interface)?;
    let rates = PyList::empty(py);
    for r in &s.rates {
        let w = PyDict::new(py);
        w.set_item("window_ns", r.window_ns)?;
        w.set_item("last_index", r.last_index)?;
        w.set_item("groups", r.groups.clone())?;
        rates.append(w)?;
    }
    d.set_item("rates", rates)?;
    d.set_item("size_histogram", s.size_histogram.clone())?;
    let bursts = match &s.bursts {
        None => None,
        Some(b) => {
            let bd = PyDict::new(py);
            bd.set_item("bursts", b.bursts)?;
            bd.set_item("packets_in_bursts", b.packets_in_bursts)?;
            bd.set_item("max_burst", b.max_burst)?;
            bd.set_item("gap_min_ns", b.gap_min_ns)?;
            bd.set_item("gap_percentiles", b.gap_percentiles.clone())?;
            Some(bd)
        }
    };
    d.set_item("bursts", bursts)?;
    Ok(d)
}

fn file_stats_dict<'py>(py: Python<'py>, f: &FileStats) -> PyResult<Bound<'py, PyDict>> {
    let d = summary_dict(py, &f.summary)?;
    d.set_item("format", f.format)?;
    d.set_item("compression", f.compression)?;
    d.set_item("interfaces", interfaces_list(py, &f.interfaces)?)?;
    d.set_item("skipped", f.skipped)?;
    d.set_item("untimed", f.untimed)?;
    d.set_item("snaplen_exceeded", f.quirks.snaplen_exceeded)?;
    d.set_item("wirelen_below_caplen", f.quirks.wirelen_below_caplen)?;
    d.set_item("cut_short", f.cut_short.clone())?;
    d.set_item("reads", f.reads)?;
    Ok(d)
}

/// Runs `work` on every item on up to `threads` threads; results come back in item order.
fn in_parallel<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    work: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let results: Vec<Mutex<Option<R>>> = items.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..threads.clamp(1, items.len().max(1)) {
            scope.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                let Some(item) = items.get(k) else { break };
                let result = work(item);
                *results[k].lock().expect("no worker panics holding it") = Some(result);
            });
        }
    });
    results
        .into_iter()
        .map(|r| {
            r.into_inner()
                .ok()
                .flatten()
                .expect("every item was worked on")
        })
        .collect()
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
    config: &Bound<'py, PyDict>,
    skip_bad: bool,
    strict: bool,
    threads: usize,
) -> PyResult<Bound<'py, PyList>> {
    let config = stats_config(config)?;
    let read = read_options(skip_bad, strict);
    let threads = if threads == 0 {
        std::thread::available_parallelism().map_or(1, usize::from)
    } else {
        threads
    };
    per_file(
        py,
        &paths,
        threads,
        |p| file_stats(p, read, &config),
        |stats| Ok(file_stats_dict(py, &stats)?.into_any()),
    )
}

/// `work` on each path, in parallel on up to `threads` threads without the GIL, as a list in
/// path order: each success converted by `to_py`, each failure as its exception (not raised),
/// so that one bad file does not hide the others' results.
fn per_file<'py, T: Send>(
    py: Python<'py>,
    paths: &[PathBuf],
    threads: usize,
    work: impl Fn(&PathBuf) -> Result<T, CoreError> + Sync + Send,
    to_py: impl Fn(T) -> PyResult<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyList>> {
    let results = py.detach(|| in_parallel(paths, threads, work));
    let out = PyList::empty(py);
    for result in results {
        match result {
            Ok(value) => out.append(to_py(value)?)?,
            Err(error) => out.append(to_py_err(error).into_value(py))?,
        }
    }
    Ok(out)
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
    config: &Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyDict>> {
    let config = stats_config(config)?;
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
        .map_err(invalid)?;
    summary_dict(py, &summary)
}

fn stats_dict<'py>(py: Python<'py>, s: WriteStats) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("packets", s.packets)?;
    d.set_item("bytes", s.bytes)?;
    d.set_item("writes", s.writes)?;
    Ok(d)
}

fn merge_dict<'py>(py: Python<'py>, s: MergeStats) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("packets", s.packets)?;
    d.set_item("interfaces", s.interfaces)?;
    d.set_item("out_of_order", s.out_of_order)?;
    d.set_item("skipped", s.skipped)?;
    d.set_item("truncated", s.truncated)?;
    d.set_item("writes", s.writes)?;
    d.set_item("bytes", s.bytes)?;
    Ok(d)
}

/// Merges captures into one file in timestamp order (stable: input order, then record order).
#[pyfunction]
#[pyo3(signature = (inputs, output, format, skip_bad, strict=false))]
pub fn trace_merge<'py>(
    py: Python<'py>,
    inputs: Vec<PathBuf>,
    output: PathBuf,
    format: &str,
    skip_bad: bool,
    strict: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let format = out_format(format)?;
    let options = MergeOptions {
        skip_bad,
        strict,
        keep_names: false,
    };
    let s = py
        .detach(|| merge_with(&inputs, &output, format, options))
        .map_err(to_py_err)?;
    merge_dict(py, s)
}

/// Rewrites a capture packet for packet (interfaces and names kept), streaming.
#[pyfunction]
#[pyo3(signature = (input, output, format, skip_bad=false, strict=false))]
pub fn trace_convert<'py>(
    py: Python<'py>,
    input: PathBuf,
    output: PathBuf,
    format: &str,
    skip_bad: bool,
    strict: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let format = out_format(format)?;
    let s = py
        .detach(|| convert(&input, &output, format, skip_bad, strict))
        .map_err(to_py_err)?;
    merge_dict(py, s)
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
    stats_dict(py, s)
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
        stats_dict(py, synth.finish().map_err(to_py_err)?)
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
        let (ts, ifs, wire, cap, data, off) = (
            ts_ns.as_slice()?,
            iface.as_slice()?,
            wirelen.as_slice()?,
            caplen.as_slice()?,
            data.as_slice()?,
            offset.as_slice()?,
        );
        let n = ts.len();
        if [ifs.len(), wire.len(), cap.len(), off.len()]
            .iter()
            .any(|&l| l != n)
        {
            return Err(invalid(
                "ts_ns, iface, wirelen, caplen and offset must have the same length",
            ));
        }
        let writer = self.writer()?;
        for i in 0..n {
            let start = off[i] as usize;
            let bytes = data
                .get(start..start + cap[i] as usize)
                .ok_or_else(|| invalid(format!("packet {i} lies outside the data buffer")))?;
            writer
                .write_packet(ts[i], ifs[i], wire[i], bytes)
                .map_err(to_py_err)?;
        }
        Ok(())
    }

    /// Writes out what is buffered.
    fn flush(&mut self) -> PyResult<()> {
        self.writer()?.flush().map_err(to_py_err)
    }

    /// Flushes, closes the file and returns {packets, bytes, writes}.
    fn close<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let stats = self.writer()?.finish().map_err(to_py_err)?;
        self.inner = None;
        stats_dict(py, stats)
    }
}

/// Mergeable statistics of one capture file or of consecutive files of one port
/// (`pcieperf_core::trace::archive`): computed by a worker, pickled as bytes, appended in port
/// order by the caller, summarised once.
#[pyclass(module = "pcieperf._core")]
pub struct TracePartial {
    inner: Partial,
}

fn read_options(skip_bad: bool, strict: bool) -> ReadOptions {
    ReadOptions {
        skip_bad,
        strict,
        ..ReadOptions::default()
    }
}

#[pymethods]
impl TracePartial {
    /// A partial from `to_bytes`.
    #[staticmethod]
    fn from_bytes(data: &[u8]) -> PyResult<Self> {
        Partial::from_bytes(data)
            .map(|inner| TracePartial { inner })
            .map_err(PyValueError::new_err)
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
        config: &Bound<'_, PyDict>,
        demand: Option<&TraceDemandCost>,
    ) -> PyResult<()> {
        let config = stats_config(config)?;
        self.inner
            .append(&next.inner, &config, demand.map(|d| &d.inner))
            .map_err(PyValueError::new_err)
    }

    /// The PCIe demand of the packets (`archive::Partial::demand`) as a dict.
    fn demand<'py>(&self, py: Python<'py>, cost: &TraceDemandCost) -> PyResult<Bound<'py, PyDict>> {
        let d = self
            .inner
            .demand(&cost.inner)
            .map_err(PyValueError::new_err)?;
        let out = PyDict::new(py);
        out.set_item("windows", d.windows)?;
        out.set_item("peak_up_gbps", d.peak_up_gbps)?;
        out.set_item("peak_down_gbps", d.peak_down_gbps)?;
        out.set_item("windows_over_capacity", d.windows_over_capacity)?;
        out.set_item("bytes_up", d.bytes_up)?;
        out.set_item("bytes_down", d.bytes_down)?;
        out.set_item("frame_bytes", d.frame_bytes)?;
        Ok(out)
    }

    /// The statistics as `trace_stats` gives them for one file.
    fn summary<'py>(
        &self,
        py: Python<'py>,
        config: &Bound<'py, PyDict>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let config = stats_config(config)?;
        let summary = self.inner.summary(&config).map_err(PyValueError::new_err)?;
        let f = &self.inner.facts;
        let d = summary_dict(py, &summary)?;
        d.set_item("format", &f.format)?;
        d.set_item("compression", &f.compression)?;
        d.set_item("interfaces", interfaces_list(py, &f.interfaces)?)?;
        d.set_item("skipped", f.skipped)?;
        d.set_item("untimed", f.untimed)?;
        d.set_item("snaplen_exceeded", f.quirks.snaplen_exceeded)?;
        d.set_item("wirelen_below_caplen", f.quirks.wirelen_below_caplen)?;
        d.set_item("cut_short", f.cut_short.clone())?;
        d.set_item("reads", f.reads)?;
        Ok(d)
    }

    /// Names `to` instead of `from` in what the reader reported (a file read from a copy).
    fn rename_file(&mut self, from: &str, to: &str) {
        self.inner.rename_file(from, to);
    }

    /// Packets summarised.
    #[getter]
    fn packets(&self) -> u64 {
        self.inner.totals.packets
    }

    /// Time of the earliest and latest packet (None without packets).
    #[getter]
    fn span_ns(&self) -> Option<(i64, i64)> {
        let t = &self.inner.totals;
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
    inner: DemandConfig,
}

#[pymethods]
impl TraceDemandCost {
    #[new]
    fn new(window_ns: u64, up: Vec<f64>, down: Vec<f64>, capacity_gbps: f64) -> PyResult<Self> {
        if window_ns == 0 || up.len() != down.len() || up.is_empty() {
            return Err(PyValueError::new_err(
                "a demand needs a window of at least 1 ns and equally long, non-empty costs",
            ));
        }
        Ok(TraceDemandCost {
            inner: DemandConfig {
                window_ns,
                up,
                down,
                capacity_gbps,
            },
        })
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
    config: &Bound<'_, PyDict>,
    origin: i64,
    skip_bad: bool,
    strict: bool,
    demand: Option<&TraceDemandCost>,
    read_ahead: bool,
) -> PyResult<TracePartial> {
    let config = stats_config(config)?;
    let read = read_options(skip_bad, strict);
    let cost = demand.map(|d| &d.inner);
    py.detach(|| file_partial(&path, read, &config, origin, cost, read_ahead))
        .map(|inner| TracePartial { inner })
        .map_err(to_py_err)
}

/// The partial of files that overlap in time, concatenated in the order given (every packet
/// held and sorted), windows counted from the first packet.
#[pyfunction]
#[pyo3(signature = (paths, config, skip_bad=false, strict=false, demand=None))]
pub fn trace_partial_files(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    config: &Bound<'_, PyDict>,
    skip_bad: bool,
    strict: bool,
    demand: Option<&TraceDemandCost>,
) -> PyResult<TracePartial> {
    let config = stats_config(config)?;
    let read = read_options(skip_bad, strict);
    let cost = demand.map(|d| &d.inner);
    py.detach(|| files_partial(&paths, read, &config, cost))
        .map(|inner| TracePartial { inner })
        .map_err(to_py_err)
}

/// Per file, (time of its first record or None, its interfaces then), or the file's error (the
/// exception, not raised) in its place; files in parallel on up to `threads` threads, without the GIL.
#[pyfunction]
#[pyo3(signature = (paths, skip_bad=false, strict=false, threads=1))]
pub fn trace_first_records<'py>(
    py: Python<'py>,
    paths: Vec<PathBuf>,
    skip_bad: bool,
    strict: bool,
    threads: usize,
) -> PyResult<Bound<'py, PyList>> {
    let read = read_options(skip_bad, strict);
    per_file(
        py,
        &paths,
        threads,
        |p| first_record(p, read),
        |(first, interfaces)| {
            Ok((first, interfaces_list(py, &interfaces)?)
                .into_pyobject(py)?
                .into_any())
        },
    )
}

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
        keep_names: false,
    };
    let part = Part {
        from_ns,
        to_ns,
        inputs: Some(selected),
    };
    let s = py
        .detach(|| merge_part(&inputs, &output, format, options, &part))
        .map_err(to_py_err)?;
    merge_dict(py, s)
}

/// Per file, its time span and order (`merge::scan`) as a dict, or its error (the exception,
/// not raised) in its place; files in parallel on up to `threads` threads, without the GIL.
#[pyfunction]
#[pyo3(signature = (paths, skip_bad=false, strict=false, threads=1))]
pub fn trace_scan<'py>(
    py: Python<'py>,
    paths: Vec<PathBuf>,
    skip_bad: bool,
    strict: bool,
    threads: usize,
) -> PyResult<Bound<'py, PyList>> {
    let read = read_options(skip_bad, strict);
    per_file(
        py,
        &paths,
        threads,
        |p| scan(p, read),
        |s| {
            let d = PyDict::new(py);
            d.set_item("packets", s.packets)?;
            d.set_item("first_ns", s.first_ns)?;
            d.set_item("last_ns", s.last_ns)?;
            d.set_item("in_order", s.in_order)?;
            d.set_item("interfaces_up_front", s.interfaces_up_front)?;
            d.set_item("skipped", s.skipped)?;
            d.set_item("cut_short", s.cut_short)?;
            Ok(d.into_any())
        },
    )
}
