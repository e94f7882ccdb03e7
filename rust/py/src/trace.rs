//! Capture-file glue: reading into numpy columns, the buffered writer, merge and synthesis.

use std::path::{Path, PathBuf};

use numpy::{IntoPyArray, PyReadonlyArray1};
use pcieperf_core::trace::merge::{convert, merge_with, MergeOptions, MergeStats};
use pcieperf_core::trace::read::{Quirks, ReadOptions, Reader};
use pcieperf_core::trace::synth::{synthesize, Synthesizer};
use pcieperf_core::trace::write::{OutFormat, WriteStats, Writer, DEFAULT_BUFFER_BYTES};
use pcieperf_core::trace::{Interface, TraceError};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

fn to_py_err(err: TraceError) -> PyErr {
    PyValueError::new_err(err.to_string())
}

fn out_format(text: &str) -> PyResult<OutFormat> {
    match text {
        "pcap" => Ok(OutFormat::Pcap),
        "pcapng" => Ok(OutFormat::PcapNg),
        other => Err(PyValueError::new_err(format!(
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

fn read_columns(path: &Path, options: ReadOptions, offsets: bool) -> Result<Columns, TraceError> {
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
            .ok_or_else(|| PyValueError::new_err("the synthetic capture is already closed"))?;
        let (ts, lens) = (ts_ns.as_slice()?, frame_len.as_slice()?);
        py.detach(|| synth.push(ts, lens)).map_err(to_py_err)
    }

    /// Flushes, closes the file and returns {packets, bytes, writes}.
    fn close<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let synth = self
            .inner
            .take()
            .ok_or_else(|| PyValueError::new_err("the synthetic capture is already closed"))?;
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
            .ok_or_else(|| PyValueError::new_err("the capture writer is already closed"))
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
            return Err(PyValueError::new_err(
                "ts_ns, iface, wirelen, caplen and offset must have the same length",
            ));
        }
        let writer = self.writer()?;
        for i in 0..n {
            let start = off[i] as usize;
            let bytes = data.get(start..start + cap[i] as usize).ok_or_else(|| {
                PyValueError::new_err(format!("packet {i} lies outside the data buffer"))
            })?;
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
