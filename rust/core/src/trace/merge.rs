//! k-way merge of captures into one file in timestamp order, concatenation (`append`: the
//! inputs one after another, as `mergecap -a` writes them), and conversion (a merge of one
//! input that keeps its interface names). Equal timestamps keep input order, then record order,
//! so the merge is stable: the heap holds one head record per input, keyed (ts, input), and an
//! input's next record replaces its head in place (one sift instead of a pop and a push).
//! Memory is one read buffer and one head record per input plus the write buffers: inputs are
//! streamed, never mapped.

use std::cmp::Reverse;
use std::collections::binary_heap::{BinaryHeap, PeekMut};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::read::{ReadOptions, Reader, Record};
use super::shared_buffer::SharedBuffer;
use super::write::{OutFormat, Writer, DEFAULT_BUFFER_BYTES};
use super::Interface;
use crate::CoreError;

/// Read buffers of all inputs together: each input gets this divided by the input count,
/// within `MIN_CHUNK_BYTES..=MAX_CHUNK_BYTES`, so memory stays bounded as inputs are added
/// (4 MiB: with the interpreter, the extension and the write buffers, the whole `trace merge`
/// of 64 inputs peaks below 32 MiB; 64 KiB reads still move a good slice per system call).
const READ_BUDGET_BYTES: usize = 4 << 20;
const MIN_CHUNK_BYTES: usize = 32 << 10;
const MAX_CHUNK_BYTES: usize = 128 << 10;

/// What a merge did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "pyo3", derive(pyo3::IntoPyObject))]
pub struct MergeStats {
    pub packets: u64,
    pub interfaces: u64,
    /// Records earlier than the previous record of the same input: a merge assumes sorted
    /// inputs (as mergecap does), so these come out of order too.
    pub out_of_order: u64,
    pub skipped: u64,
    /// Inputs that were cut short inside a record (everything before the cut is merged).
    pub truncated: u64,
    pub writes: u64,
    pub bytes: u64,
}

/// How inputs are read and how their interfaces are named in the output.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MergeOptions {
    pub skip_bad: bool,
    pub strict: bool,
    /// Keep each interface's own name (a conversion) instead of prefixing the input's file name.
    pub keep_names: bool,
    /// Write the inputs one after another in the order given, each in its own record order,
    /// instead of merging them by time; interfaces are declared as a merge declares them.
    pub append: bool,
}

/// One input: its reader, the output id of each of its interfaces, and its ordering state.
struct Input {
    path: PathBuf,
    reader: Reader,
    out_iface: Vec<u32>,
    last_ts: i64,
    /// ns added to every time written (a conversion's shift; 0 in a merge), modulo 2^64.
    shift_ns: i64,
}

/// The head of an input that has none (never read: the heap does not hold such an input).
const EMPTY: Record = Record {
    ts_ns: 0,
    caplen: 0,
    wirelen: 0,
    iface: 0,
    data_offset: 0,
    direction: 0,
};

impl Input {
    /// The output form of interface `index`: pcapng output keeps the input's name or, merging,
    /// names it after the file and interface so that identities stay apart.
    fn output_interface(&self, index: usize, keep_names: bool) -> Interface {
        let iface = &self.reader.interfaces()[index];
        if keep_names {
            return iface.clone();
        }
        let stem = self.path.file_name().map_or_else(
            || self.path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        let name = match &iface.name {
            Some(name) => format!("{stem}:{name}"),
            None => format!("{stem}:{index}"),
        };
        Interface {
            name: Some(name),
            ..iface.clone()
        }
    }

    /// Writes `record`, the record this input read last, and counts it.
    #[inline]
    fn write(
        &mut self,
        record: &Record,
        writer: &mut Writer,
        stats: &mut MergeStats,
        keep_names: bool,
    ) -> Result<(), CoreError> {
        if self.out_iface.len() < self.reader.interfaces().len() {
            self.declare_interfaces(writer, keep_names)?;
        }
        let iface = self.out_iface[record.iface as usize];
        writer.write_directed(
            record.ts_ns.wrapping_add(self.shift_ns),
            iface,
            record.wirelen,
            self.reader.data(record),
            record.direction,
        )?;
        self.count(record, stats);
        Ok(())
    }

    /// Counts `record` as written.
    #[inline(always)]
    fn count(&mut self, record: &Record, stats: &mut MergeStats) {
        stats.packets += 1;
        stats.out_of_order += u64::from(record.ts_ns < self.last_ts);
        self.last_ts = record.ts_ns;
    }

    /// Gives every interface the input has revealed so far an output id (writing its IDB).
    fn declare_interfaces(
        &mut self,
        writer: &mut Writer,
        keep_names: bool,
    ) -> Result<(), CoreError> {
        while self.out_iface.len() < self.reader.interfaces().len() {
            let iface = self.output_interface(self.out_iface.len(), keep_names);
            self.out_iface.push(writer.add_interface(&iface)?);
        }
        Ok(())
    }
}

/// Merges `inputs` into `output` (created or truncated).
pub fn merge(
    inputs: &[PathBuf],
    output: &Path,
    format: OutFormat,
    skip_bad: bool,
) -> Result<MergeStats, CoreError> {
    let options = MergeOptions {
        skip_bad,
        ..MergeOptions::default()
    };
    merge_with(inputs, output, format, options)
}

/// Rewrites `input` as `output` packet for packet, interfaces and their names kept: what a
/// merge of this one input writes (`merge_with` with `keep_names`), without the heap. The input
/// is read into shared buffers, and where its records are byte for byte what the writer would
/// write for them (little-endian ns pcap to pcap) they are passed on in spans of a shared buffer,
/// written from there by the writer thread (no copy of ours).
pub fn convert(
    input: &Path,
    output: &Path,
    format: OutFormat,
    skip_bad: bool,
    strict: bool,
    shift_ns: i64,
) -> Result<MergeStats, CoreError> {
    let read = ReadOptions {
        skip_bad,
        strict,
        chunk: MAX_CHUNK_BYTES,
    };
    convert_with(input, output, format, read, SHARED_BUFFER_BYTES, shift_ns)
}

/// `convert` with its input read as `read` says, into shared buffers of `shared` bytes where
/// records can pass as they are (never when times are shifted by `shift_ns`).
pub(super) fn convert_with(
    input: &Path,
    output: &Path,
    format: OutFormat,
    read: ReadOptions,
    shared: usize,
    shift_ns: i64,
) -> Result<MergeStats, CoreError> {
    let mut reader = Reader::open_with(input, read)?;
    let as_is = format == OutFormat::Pcap && reader.native_ns_pcap() && shift_ns == 0;
    if as_is {
        reader.share_buffers(shared);
    }
    let mut source = Input {
        path: input.to_path_buf(),
        reader,
        out_iface: Vec::new(),
        last_ts: i64::MIN,
        shift_ns,
    };
    let mut next = source.reader.next_record()?;
    if source.reader.interfaces().is_empty() {
        return Err(CoreError::whole(
            &output.display().to_string(),
            NO_INTERFACE,
        ));
    }
    let first = source.output_interface(0, true);
    let mut writer = Writer::create(output, format, &first, DEFAULT_BUFFER_BYTES)?;
    source.out_iface.push(0);
    source.declare_interfaces(&mut writer, true)?;
    let mut conversion = Conversion {
        as_is,
        source,
        writer,
        span: None,
        stats: MergeStats::default(),
    };
    while let Some(record) = next {
        conversion.record(&record)?;
        conversion.take_runs()?;
        next = conversion.source.reader.next_record()?;
    }
    conversion.finish()
}

/// A conversion under way: with `as_is`, records that the writer would write byte for byte as
/// they were read gather in a span, written when the next one does not follow.
struct Conversion {
    source: Input,
    writer: Writer,
    as_is: bool,
    span: Option<Span>,
    stats: MergeStats,
}

impl Conversion {
    /// One record that `next_record` returned: passed on as it is where it can be, else written.
    fn record(&mut self, record: &Record) -> Result<(), CoreError> {
        let shared = if self.as_is {
            self.source.reader.shared_record(record)
        } else {
            None
        };
        match shared.filter(|&(shared, at)| fraction_below_1s(shared, at)) {
            Some((shared, at)) => {
                let (shared, end) = (
                    Arc::clone(shared),
                    at + PCAP_RECORD_BYTES + record.caplen as usize,
                );
                self.source.count(record, &mut self.stats);
                self.pass(&shared, at..end, 1)
            }
            None => {
                self.flush()?;
                let keep_names = true;
                self.source
                    .write(record, &mut self.writer, &mut self.stats, keep_names)
            }
        }
    }

    /// The records that follow in the shared buffer and pass as they are, taken in runs and
    /// written: what stops a run (the end of the shared buffer, a record to rewrite) ends the span
    /// too, and writing it before the next shared buffer is read keeps one shared buffer fewer
    /// alive.
    fn take_runs(&mut self) -> Result<(), CoreError> {
        if !self.as_is {
            return Ok(());
        }
        while let Some(run) = self.source.reader.take_as_is() {
            self.stats.packets += run.packets;
            self.stats.out_of_order += run.descents;
            self.source.last_ts = run.last_ts;
            self.pass(&run.shared, run.bytes, run.packets)?;
        }
        self.flush()
    }

    /// Adds `packets` records at `shared[bytes]` to the span, or starts a new one after them.
    fn pass(
        &mut self,
        shared: &Arc<SharedBuffer>,
        bytes: Range<usize>,
        packets: u64,
    ) -> Result<(), CoreError> {
        if let Some(span) = self.span.as_mut() {
            if span.extend(shared, bytes.clone(), packets) {
                return Ok(());
            }
        }
        self.flush()?;
        self.span = Some(Span {
            shared: Arc::clone(shared),
            bytes,
            packets,
        });
        Ok(())
    }

    /// Writes the span, if any, and ends it.
    fn flush(&mut self) -> Result<(), CoreError> {
        match self.span.take() {
            Some(s) => self.writer.write_as_is(&s.shared, s.bytes, s.packets),
            None => Ok(()),
        }
    }

    fn finish(mut self) -> Result<MergeStats, CoreError> {
        self.flush()?;
        self.source.declare_interfaces(&mut self.writer, true)?;
        let reader = &self.source.reader;
        self.stats.skipped = reader.skipped();
        self.stats.truncated = u64::from(reader.cut_short().is_some());
        self.stats.interfaces = self.writer.interfaces().len() as u64;
        let written = self.writer.finish()?;
        self.stats.writes = written.writes;
        self.stats.bytes = written.bytes;
        Ok(self.stats)
    }
}

/// Shared buffer of a conversion: large enough that a shared buffer (a read, a write, a hand-over)
/// costs little per byte (512 KiB: ~870 for 6 M 64-byte frames), small enough that the four that
/// exist at once (the reader's, one queued, one being written, the next being read) hold less than
/// the writer's three 1 MiB buffers.
const SHARED_BUFFER_BYTES: usize = 512 << 10;
/// A pcap record header: seconds, fraction, caplen, wire length (draft-ietf-opsawg-pcap §5).
const PCAP_RECORD_BYTES: usize = 16;
const NO_INTERFACE: &str = "no input defines an interface";

/// Whether the ns pcap record at `shared[at..]` has a fraction of a second below 10^9 (the
/// pcap writer normalises a larger one, so only such a record passes as it is).
#[inline(always)]
fn fraction_below_1s(shared: &SharedBuffer, at: usize) -> bool {
    shared
        .bytes()
        .get(at + 4..at + 8)
        .is_some_and(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) < 1_000_000_000)
}

/// Consecutive records of one shared buffer, passed on as they are.
struct Span {
    shared: Arc<SharedBuffer>,
    bytes: Range<usize>,
    packets: u64,
}

impl Span {
    /// Takes the `packets` records at `shared[bytes]` if they follow the span directly.
    #[inline(always)]
    fn extend(&mut self, shared: &Arc<SharedBuffer>, bytes: Range<usize>, packets: u64) -> bool {
        let follows = bytes.start == self.bytes.end && Arc::ptr_eq(&self.shared, shared);
        if follows {
            self.bytes.end = bytes.end;
            self.packets += packets;
        }
        follows
    }
}

/// Merges (or, with `options.append`, concatenates) `inputs` into `output`.
pub fn merge_with(
    inputs: &[PathBuf],
    output: &Path,
    format: OutFormat,
    options: MergeOptions,
) -> Result<MergeStats, CoreError> {
    if options.append {
        return append(inputs, output, format, options);
    }
    merge_part(inputs, output, format, options, &Part::default())
}

/// Writes `inputs` into `output` one after another in the order given, every record of each
/// in its own order (`mergecap -a`): the header and interfaces as `merge_part` writes them,
/// then each input streamed to its end.
fn append(
    inputs: &[PathBuf],
    output: &Path,
    format: OutFormat,
    options: MergeOptions,
) -> Result<MergeStats, CoreError> {
    let (mut sources, heads) = open_sources(inputs, options, &Part::default())?;
    let mut writer = create_writer(&mut sources, output, format, options)?;
    let mut stats = MergeStats::default();
    for (input, head) in sources.iter_mut().zip(heads) {
        let mut next = head;
        while let Some(record) = next {
            input.write(&record, &mut writer, &mut stats, options.keep_names)?;
            next = input.reader.next_record()?;
        }
    }
    finish(sources, writer, stats, options)
}

/// A time range of a merge and the inputs that hold records in it (None: all).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    pub from_ns: i64,
    pub to_ns: i64,
    pub inputs: Option<Vec<bool>>,
}

impl Default for Part {
    fn default() -> Self {
        Part {
            from_ns: i64::MIN,
            to_ns: i64::MAX,
            inputs: None,
        }
    }
}

impl Part {
    fn wants(&self, k: usize) -> bool {
        self.inputs
            .as_ref()
            .is_none_or(|v| v.get(k).copied().unwrap_or(false))
    }

    /// The first record of `reader` at or after the start of the range, if it is before its
    /// end (the inputs of a part are in time order: a record at or past the end ends it).
    fn first_in(&self, reader: &mut Reader) -> Result<Option<Record>, CoreError> {
        while let Some(r) = reader.next_record()? {
            if r.ts_ns >= self.from_ns {
                return Ok((r.ts_ns < self.to_ns || self.to_ns == i64::MAX).then_some(r));
            }
        }
        Ok(None)
    }
}

/// The records of `inputs` within `part`'s time range, merged into `output` with the header
/// and every interface the whole merge declares (all inputs are opened and their first record
/// read, as `merge_with` does): for inputs in time order whose interfaces all come before their
/// first packet, the parts of consecutive ranges, each without its header, concatenate into
/// exactly what `merge_with` writes. `merge_with` is the part that covers all time.
pub fn merge_part(
    inputs: &[PathBuf],
    output: &Path,
    format: OutFormat,
    options: MergeOptions,
    part: &Part,
) -> Result<MergeStats, CoreError> {
    let (mut sources, first) = open_sources(inputs, options, part)?;
    let mut heap = BinaryHeap::with_capacity(inputs.len());
    let mut heads: Vec<Record> = Vec::with_capacity(inputs.len());
    for (k, head) in first.into_iter().enumerate() {
        if let Some(r) = head {
            heap.push(Reverse((r.ts_ns, k)));
        }
        heads.push(head.unwrap_or(EMPTY));
    }
    let mut writer = create_writer(&mut sources, output, format, options)?;
    let mut stats = MergeStats::default();
    while let Some(mut top) = heap.peek_mut() {
        let Reverse((_, k)) = *top;
        let input = &mut sources[k];
        let record = heads[k];
        input.write(&record, &mut writer, &mut stats, options.keep_names)?;
        match input.reader.next_record()? {
            Some(next) if next.ts_ns < part.to_ns || part.to_ns == i64::MAX => {
                heads[k] = next;
                *top = Reverse((next.ts_ns, k)); // sifted down when `top` goes
            }
            _ => {
                PeekMut::pop(top);
            }
        }
    }
    finish(sources, writer, stats, options)
}

/// Opens every input (its share of the read budget each) and reads its first record within
/// `part` (None: none there).
fn open_sources(
    inputs: &[PathBuf],
    options: MergeOptions,
    part: &Part,
) -> Result<(Vec<Input>, Vec<Option<Record>>), CoreError> {
    let read = ReadOptions {
        skip_bad: options.skip_bad,
        strict: options.strict,
        chunk: (READ_BUDGET_BYTES / inputs.len().max(1)).clamp(MIN_CHUNK_BYTES, MAX_CHUNK_BYTES),
    };
    let mut sources = Vec::with_capacity(inputs.len());
    let mut heads = Vec::with_capacity(inputs.len());
    for (k, path) in inputs.iter().enumerate() {
        let mut reader = Reader::open_with(path, read)?;
        let mut head = reader.next_record()?;
        if part.inputs.is_some() {
            head = match head {
                Some(r) if part.wants(k) && r.ts_ns >= part.from_ns => {
                    (r.ts_ns < part.to_ns || part.to_ns == i64::MAX).then_some(r)
                }
                Some(_) if part.wants(k) => part.first_in(&mut reader)?,
                _ => None,
            };
        }
        heads.push(head);
        sources.push(Input {
            path: path.clone(),
            reader,
            out_iface: Vec::new(),
            last_ts: i64::MIN,
            shift_ns: 0,
        });
    }
    Ok((sources, heads))
}

/// The output with the header of the first input that defines an interface and every
/// interface the inputs revealed so far, in input order.
fn create_writer(
    sources: &mut [Input],
    output: &Path,
    format: OutFormat,
    options: MergeOptions,
) -> Result<Writer, CoreError> {
    let k0 = sources
        .iter()
        .position(|s| !s.reader.interfaces().is_empty())
        .ok_or_else(|| CoreError::whole(&output.display().to_string(), NO_INTERFACE))?;
    let first = sources[k0].output_interface(0, options.keep_names);
    let mut writer = Writer::create(output, format, &first, DEFAULT_BUFFER_BYTES)?;
    sources[k0].out_iface.push(0);
    for input in sources.iter_mut() {
        input.declare_interfaces(&mut writer, options.keep_names)?;
    }
    Ok(writer)
}

/// Declares the interfaces no record revealed, counts what the readers skipped and closes the
/// output.
fn finish(
    mut sources: Vec<Input>,
    mut writer: Writer,
    mut stats: MergeStats,
    options: MergeOptions,
) -> Result<MergeStats, CoreError> {
    for input in sources.iter_mut() {
        // Interfaces without packets are still declared, so none is lost.
        input.declare_interfaces(&mut writer, options.keep_names)?;
        stats.skipped += input.reader.skipped();
        stats.truncated += u64::from(input.reader.cut_short().is_some());
    }
    stats.interfaces = writer.interfaces().len() as u64;
    let written = writer.finish()?;
    stats.writes = written.writes;
    stats.bytes = written.bytes;
    Ok(stats)
}

/// What a partitioned merge needs to know of an input before it is cut into time ranges.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "pyo3", derive(pyo3::IntoPyObject))]
pub struct Scan {
    pub packets: u64,
    /// Time of the first and last record (0 without records).
    pub first_ns: i64,
    pub last_ns: i64,
    /// No record earlier than the one before it.
    pub in_order: bool,
    /// Every interface was defined by the time the first record was read.
    pub interfaces_up_front: bool,
    pub skipped: u64,
    pub cut_short: bool,
}

/// Reads every record of `path` for its time span and order (no data is kept).
pub fn scan(path: &Path, read: ReadOptions) -> Result<Scan, CoreError> {
    let mut reader = Reader::open_with(path, read)?;
    if path.as_os_str() != "-" && std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        reader.read_ahead();
    }
    let mut s = Scan {
        in_order: true,
        ..Scan::default()
    };
    let mut up_front = None;
    while let Some(r) = reader.next_record()? {
        if s.packets == 0 {
            s.first_ns = r.ts_ns;
            up_front = Some(reader.interfaces().len());
        } else {
            s.in_order &= r.ts_ns >= s.last_ns;
        }
        s.last_ns = r.ts_ns;
        s.packets += 1;
    }
    s.interfaces_up_front = up_front.is_none_or(|n| n == reader.interfaces().len());
    s.skipped = reader.skipped();
    s.cut_short = reader.cut_short().is_some();
    Ok(s)
}
