//! Whole captures as per-packet columns (what `pcieperf.net.trace.read` turns into numpy
//! arrays).

use std::path::Path;

use super::read::{Quirks, ReadOptions, Reader};
use super::Interface;
use crate::CoreError;

/// Every packet of a file as columns, plus what the reader learnt about the file.
pub struct Columns {
    pub ts_ns: Vec<i64>,
    pub caplen: Vec<u32>,
    pub wirelen: Vec<u32>,
    pub iface: Vec<u32>,
    /// Where each packet's data starts in the decompressed stream (empty unless asked for).
    pub offset: Vec<u64>,
    pub interfaces: Vec<Interface>,
    pub skipped: u64,
    pub untimed: u64,
    pub quirks: Quirks,
    pub cut_short: Option<String>,
    pub format: &'static str,
    pub compression: &'static str,
    pub nanosecond: bool,
    pub file_bytes: u64,
}

/// Reads every record of `path` into columns (`offsets`: with their data offsets).
pub fn read_columns(
    path: &Path,
    options: ReadOptions,
    offsets: bool,
) -> Result<Columns, CoreError> {
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
