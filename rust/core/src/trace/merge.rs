//! k-way merge of captures into one file in timestamp order. Equal timestamps keep input order,
//! then record order (the heap key is (ts, input, sequence)), so the merge is stable. Memory is
//! one head record per input plus the write buffer: inputs are streamed from their maps.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::{Path, PathBuf};

use super::read::{Reader, Record};
use super::write::{OutFormat, Writer, DEFAULT_BUFFER_BYTES};
use super::{Interface, TraceError};

/// What a merge did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MergeStats {
    pub packets: u64,
    pub interfaces: u64,
    /// Records earlier than the previous record of the same input: a merge assumes sorted
    /// inputs (as mergecap does), so these come out of order too.
    pub out_of_order: u64,
    pub skipped: u64,
    pub writes: u64,
    pub bytes: u64,
}

/// One input: its reader, the output id of each of its interfaces, and its ordering state.
struct Input {
    reader: Reader,
    out_iface: Vec<u32>,
    last_ts: i64,
    seq: u64,
}

/// The interface an output interface is made from: pcapng output keeps the input's name, or
/// names it after the file and interface number so identities stay apart.
fn output_interface(path: &Path, index: usize, iface: &Interface) -> Interface {
    let stem = path.file_name().map_or_else(
        || path.display().to_string(),
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

/// Merges `inputs` into `output` (created or truncated).
pub fn merge(
    inputs: &[PathBuf],
    output: &Path,
    format: OutFormat,
    skip_bad: bool,
) -> Result<MergeStats, TraceError> {
    let mut sources = Vec::with_capacity(inputs.len());
    let mut heap = BinaryHeap::with_capacity(inputs.len());
    let mut heads: Vec<Option<Record>> = Vec::with_capacity(inputs.len());
    for (k, path) in inputs.iter().enumerate() {
        let mut input = Input {
            reader: Reader::open(path, skip_bad)?,
            out_iface: Vec::new(),
            last_ts: i64::MIN,
            seq: 0,
        };
        let head = input.reader.next_record()?;
        if let Some(r) = head {
            heap.push(Reverse((r.ts_ns, k, 0u64)));
        }
        heads.push(head);
        sources.push(input);
    }
    let k0 = sources
        .iter()
        .position(|s| !s.reader.interfaces().is_empty())
        .ok_or_else(|| {
            TraceError::whole(
                &output.display().to_string(),
                "no input defines an interface",
            )
        })?;
    let first = output_interface(&inputs[k0], 0, &sources[k0].reader.interfaces()[0]);
    let mut writer = Writer::create(output, format, &first, DEFAULT_BUFFER_BYTES)?;
    sources[k0].out_iface.push(0);
    for (k, input) in sources.iter_mut().enumerate() {
        declare_interfaces(&mut writer, input, &inputs[k])?;
    }
    let mut stats = MergeStats::default();
    while let Some(Reverse((_, k, _))) = heap.pop() {
        let record = heads[k].take().expect("a heap entry always has its head");
        let input = &mut sources[k];
        declare_interfaces(&mut writer, input, &inputs[k])?;
        let data = input.reader.data(&record);
        writer.write_packet(
            record.ts_ns,
            input.out_iface[record.iface as usize],
            record.wirelen,
            data,
        )?;
        stats.packets += 1;
        if record.ts_ns < input.last_ts {
            stats.out_of_order += 1;
        }
        input.last_ts = record.ts_ns;
        if let Some(next) = input.reader.next_record()? {
            input.seq += 1;
            heap.push(Reverse((next.ts_ns, k, input.seq)));
            heads[k] = Some(next);
        }
    }
    for (k, input) in sources.iter_mut().enumerate() {
        // Interfaces without packets are still declared, so none is lost.
        declare_interfaces(&mut writer, input, &inputs[k])?;
        stats.skipped += input.reader.skipped();
    }
    stats.interfaces = writer.interfaces().len() as u64;
    let written = writer.finish()?;
    stats.writes = written.writes;
    stats.bytes = written.bytes;
    Ok(stats)
}

/// Gives every interface the input has revealed so far an output id (writing its IDB).
fn declare_interfaces(
    writer: &mut Writer,
    input: &mut Input,
    path: &Path,
) -> Result<(), TraceError> {
    while input.out_iface.len() < input.reader.interfaces().len() {
        let index = input.out_iface.len();
        let iface = output_interface(path, index, &input.reader.interfaces()[index]);
        input.out_iface.push(writer.add_interface(&iface)?);
    }
    Ok(())
}
