//! k-way merge of captures into one file in timestamp order, and conversion (a merge of one
//! input that keeps its interface names). Equal timestamps keep input order, then record order,
//! so the merge is stable: the heap holds one head record per input, keyed (ts, input), and an
//! input's next record replaces its head in place (one sift instead of a pop and a push).
//! Memory is one read buffer and one head record per input plus the write buffers: inputs are
//! streamed, never mapped.

use std::cmp::Reverse;
use std::collections::binary_heap::{BinaryHeap, PeekMut};
use std::path::{Path, PathBuf};

use super::read::{ReadOptions, Reader, Record};
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
}

/// One input: its reader, the output id of each of its interfaces, and its ordering state.
struct Input {
    path: PathBuf,
    reader: Reader,
    out_iface: Vec<u32>,
    last_ts: i64,
}

/// The head of an input that has none (never read: the heap does not hold such an input).
const EMPTY: Record = Record {
    ts_ns: 0,
    caplen: 0,
    wirelen: 0,
    iface: 0,
    data_offset: 0,
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
        writer.write_packet(
            record.ts_ns,
            iface,
            record.wirelen,
            self.reader.data(record),
        )?;
        stats.packets += 1;
        stats.out_of_order += u64::from(record.ts_ns < self.last_ts);
        self.last_ts = record.ts_ns;
        Ok(())
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

/// Rewrites `input` as `output` packet for packet, interfaces and their names kept.
pub fn convert(
    input: &Path,
    output: &Path,
    format: OutFormat,
    skip_bad: bool,
    strict: bool,
) -> Result<MergeStats, CoreError> {
    let options = MergeOptions {
        skip_bad,
        strict,
        keep_names: true,
    };
    merge_with(&[input.to_path_buf()], output, format, options)
}

/// Merges `inputs` into `output` with explicit options.
pub fn merge_with(
    inputs: &[PathBuf],
    output: &Path,
    format: OutFormat,
    options: MergeOptions,
) -> Result<MergeStats, CoreError> {
    merge_part(inputs, output, format, options, &Part::default())
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
    let read = ReadOptions {
        skip_bad: options.skip_bad,
        strict: options.strict,
        chunk: (READ_BUDGET_BYTES / inputs.len().max(1)).clamp(MIN_CHUNK_BYTES, MAX_CHUNK_BYTES),
    };
    let mut sources = Vec::with_capacity(inputs.len());
    let mut heap = BinaryHeap::with_capacity(inputs.len());
    let mut heads: Vec<Record> = Vec::with_capacity(inputs.len());
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
        if let Some(r) = head {
            heap.push(Reverse((r.ts_ns, k)));
        }
        heads.push(head.unwrap_or(EMPTY));
        sources.push(Input {
            path: path.clone(),
            reader,
            out_iface: Vec::new(),
            last_ts: i64::MIN,
        });
    }
    let k0 = sources
        .iter()
        .position(|s| !s.reader.interfaces().is_empty())
        .ok_or_else(|| {
            CoreError::whole(
                &output.display().to_string(),
                "no input defines an interface",
            )
        })?;
    let first = sources[k0].output_interface(0, options.keep_names);
    let mut writer = Writer::create(output, format, &first, DEFAULT_BUFFER_BYTES)?;
    sources[k0].out_iface.push(0);
    for input in sources.iter_mut() {
        input.declare_interfaces(&mut writer, options.keep_names)?;
    }
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
