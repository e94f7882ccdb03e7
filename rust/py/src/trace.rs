//! Capture-file glue: reading into numpy columns, the buffered writer, merge and synthesis.

use std::path::{Path, PathBuf};

use numpy::{IntoPyArray, PyReadonlyArray1};
use pcieperf_core::trace::merge::merge;
use pcieperf_core::trace::read::Reader;
use pcieperf_core::trace::synth::synthesize;
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
    format: &'static str,
    nanosecond: bool,
    file_bytes: usize,
}

fn read_columns(path: &Path, skip_bad: bool, offsets: bool) -> Result<Columns, TraceError> {
    let mut reader = Reader::open(path, skip_bad)?;
    // A lower bound on the packet count (16-byte headers, no data) would over-allocate; the
    // average 64-byte frame is a good first guess and the vectors grow from there.
    let guess = reader.file_bytes() / 96;
    let mut c = Columns {
        ts_ns: Vec::with_capacity(guess),
        caplen: Vec::with_capacity(guess),
        wirelen: Vec::with_capacity(guess),
        iface: Vec::with_capacity(guess),
        offset: Vec::with_capacity(if offsets { guess } else { 0 }),
        interfaces: Vec::new(),
        skipped: 0,
        untimed: 0,
        format: reader.format(),
        nanosecond: reader.nanosecond_pcap(),
        file_bytes: reader.file_bytes(),
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

/// Reads a pcap/pcapng file into numpy columns (ts_ns, caplen, wirelen, iface[, offset]).
#[pyfunction]
#[pyo3(signature = (path, skip_bad=false, offsets=false))]
pub fn trace_read<'py>(
    py: Python<'py>,
    path: PathBuf,
    skip_bad: bool,
    offsets: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let c = py
        .detach(|| read_columns(&path, skip_bad, offsets))
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
    out.set_item("format", c.format)?;
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

/// Merges captures into one file in timestamp order (stable: input order, then record order).
#[pyfunction]
pub fn trace_merge<'py>(
    py: Python<'py>,
    inputs: Vec<PathBuf>,
    output: PathBuf,
    format: &str,
    skip_bad: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let format = out_format(format)?;
    let s = py
        .detach(|| merge(&inputs, &output, format, skip_bad))
        .map_err(to_py_err)?;
    let d = PyDict::new(py);
    d.set_item("packets", s.packets)?;
    d.set_item("interfaces", s.interfaces)?;
    d.set_item("out_of_order", s.out_of_order)?;
    d.set_item("skipped", s.skipped)?;
    d.set_item("writes", s.writes)?;
    d.set_item("bytes", s.bytes)?;
    Ok(d)
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
