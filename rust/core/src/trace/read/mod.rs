//! Streaming pcap/pcapng reader: the capture is read through one bounded buffer
//! (`stream.rs`: files, standard input, gzip and zstd alike), `pcap-parser` decodes pcap headers
//! and pcapng blocks in place, and this layer checks every length before trusting it, numbers
//! interfaces across sections, converts timestamps to ns and, with `skip_bad`, resynchronises
//! past damaged records.
//!
//! What is refused follows libpcap (sf-pcap.c, sf-pcapng.c) and Wireshark: a bad magic, a caplen
//! above the link type's maximum, a record running past the end of the file. A caplen above
//! the file's snaplen is read in full and counted (Wireshark shows such records, and sf-pcap.c
//! accepts them up to the maximum), as is a wire length below the caplen. A capture cut short
//! ends the reading without an error unless `strict`: what was read stands, as in capinfos.

mod pcap;
mod pcapng;
mod resync;

use std::io;
use std::path::Path;
use std::sync::Arc;

use pcap_parser::parse_pcap_header;

use super::shared_buffer::SharedBuffer;
use super::stream::{Compression, Stream, DEFAULT_CHUNK_BYTES};
use super::{linktype_known, Interface};
use crate::interrupt;
use crate::CoreError;

/// Section Header Block type: a byte palindrome, so it reads the same in either byte order.
const SHB_TYPE: u32 = 0x0A0D_0D0A;
/// Obsolete Packet Block (pcapng appendix, type 2), not decoded by `pcap-parser`.
const OPB_TYPE: u32 = 2;
const PCAP_HEADER_BYTES: usize = 24;
const PCAP_RECORD_HEADER_BYTES: usize = 16;
const NS_PER_S: i128 = 1_000_000_000;
/// Largest pcapng block accepted before any interface raises it: libpcap's
/// INITIAL_MAX_BLOCKSIZE (sf-pcapng.c, 16 MiB).
const INITIAL_MAX_BLOCK_BYTES: usize = 16 << 20;

/// One packet record: where its bytes are in the (decompressed) stream and what it says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record {
    pub ts_ns: i64,
    pub caplen: u32,
    pub wirelen: u32,
    pub iface: u32,
    pub data_offset: u64,
    /// Direction from a pcapng EPB's `epb_flags` bits 0-1 (pcapng §4.3.1): 0 unknown (also
    /// pcap, which has none, and the reserved value 3), 1 inbound, 2 outbound.
    pub direction: u8,
}

/// Records taken at once by `Reader::take_as_is`: `shared[bytes]` holds them whole, `descents`
/// counts those earlier than the record before them (the first compared with the record read
/// before the run), and `last_ts` is the time of the last.
pub struct AsIsRun {
    pub shared: Arc<SharedBuffer>,
    pub bytes: std::ops::Range<usize>,
    pub packets: u64,
    pub descents: u64,
    pub last_ts: i64,
}

/// How a reader treats damage: `skip_bad` passes over damaged records (counted), `strict`
/// makes a capture cut short an error instead of the end; `chunk` is the read buffer's size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadOptions {
    pub skip_bad: bool,
    pub strict: bool,
    pub chunk: usize,
}

impl Default for ReadOptions {
    fn default() -> Self {
        Self {
            skip_bad: false,
            strict: false,
            chunk: DEFAULT_CHUNK_BYTES,
        }
    }
}

/// Quirks libpcap and Wireshark read without complaint, counted per file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Quirks {
    /// Records whose caplen exceeds their interface's (non-zero) snaplen.
    pub snaplen_exceeded: u64,
    /// Records whose wire length is below their caplen.
    pub wirelen_below_caplen: u64,
    /// Records whose time in ns lies outside i64 (after 2262-04-11, as DPDK 22.11's dumpcap
    /// writes them): pcapng ticks are unsigned 64-bit counts, kept here modulo 2^64.
    pub ts_wrapped: u64,
}

#[derive(Debug, Clone, Copy)]
enum Layout {
    Pcap {
        big_endian: bool,
        nanos: bool,
    },
    PcapNg {
        big_endian: bool,
        section_base: usize,
    },
}

/// How raw timestamp units of an interface become ns: the exact integer route where one exists.
#[derive(Debug, Clone, Copy)]
enum TsScale {
    Mul(i128),
    Div(i128),
    Ratio(i128),
}

impl TsScale {
    fn from_units_per_s(units: u64) -> Self {
        let units = i128::from(units);
        if NS_PER_S % units == 0 {
            TsScale::Mul(NS_PER_S / units)
        } else if units % NS_PER_S == 0 {
            TsScale::Div(units / NS_PER_S)
        } else {
            TsScale::Ratio(units)
        }
    }

    /// ns for `raw` units; sub-ns remainders truncate, as Wireshark does.
    fn ns(self, raw: u64) -> i128 {
        let raw = i128::from(raw);
        match self {
            TsScale::Mul(m) => raw * m,
            TsScale::Div(d) => raw / d,
            TsScale::Ratio(units) => raw * NS_PER_S / units,
        }
    }
}

/// What one pcapng block means to the reader, detached from the buffered bytes.
enum Parsed {
    Section { big_endian: bool },
    Iface(Interface),
    Packet(RawPacket),
    Other,
}

/// A packet as found in a block: local interface id, raw timestamp (None for a Simple Packet
/// Block, which has none), lengths and data position in the stream.
struct RawPacket {
    local_iface: u32,
    ts_raw: Option<u64>,
    caplen: u32,
    wirelen: u32,
    data_offset: u64,
    direction: u8,
}

/// Why a record could not be read: the capture ends inside it, its bytes are damaged (the read
/// position still at its start), it was read whole but makes no sense (a packet for an
/// undefined interface: the position is past it), or the source itself failed (an I/O or
/// decompression error, fatal in every mode).
enum Fault {
    CutShort(CoreError),
    Damaged(CoreError),
    Rejected(CoreError),
    Source(CoreError),
}

/// A reader over one capture: a file, `-` for standard input, or bytes in memory.
pub struct Reader {
    name: String,
    stream: Stream,
    layout: Layout,
    interfaces: Vec<Interface>,
    scales: Vec<(TsScale, i128)>,
    options: ReadOptions,
    skipped: u64,
    untimed: u64,
    quirks: Quirks,
    last_ts: i64,
    /// Whether a timestamp was read yet (a resync then looks for times near `last_ts`).
    timed: bool,
    sections: u32,
    max_block: usize,
    finished: bool,
    cut_short: Option<CoreError>,
}

fn read_u32(bytes: &[u8], at: usize, big_endian: bool) -> u32 {
    let raw: [u8; 4] = bytes[at..at + 4].try_into().expect("4 bytes");
    if big_endian {
        u32::from_be_bytes(raw)
    } else {
        u32::from_le_bytes(raw)
    }
}

impl Reader {
    /// Opens `path` (`-`: standard input) and reads its file header; a bad header is fatal even
    /// with `skip_bad`. A capture cut short ends the reading (see `cut_short`).
    pub fn open(path: &Path, skip_bad: bool) -> Result<Self, CoreError> {
        Self::open_with(
            path,
            ReadOptions {
                skip_bad,
                ..ReadOptions::default()
            },
        )
    }

    /// Opens `path` with explicit options.
    pub fn open_with(path: &Path, options: ReadOptions) -> Result<Self, CoreError> {
        let name = path.display().to_string();
        let stream = Stream::open(path, options.chunk)?;
        Self::new(name, stream, options)
    }

    /// A reader over bytes already in memory (tests, fuzzing); `name` appears in errors.
    pub fn from_bytes(name: &str, bytes: Vec<u8>, skip_bad: bool) -> Result<Self, CoreError> {
        let options = ReadOptions {
            skip_bad,
            ..ReadOptions::default()
        };
        Self::from_bytes_with(name, bytes, options)
    }

    /// A reader over bytes in memory with explicit options.
    pub fn from_bytes_with(
        name: &str,
        bytes: Vec<u8>,
        options: ReadOptions,
    ) -> Result<Self, CoreError> {
        let stream = Stream::from_bytes(bytes, options.chunk)
            .map_err(|e| CoreError::whole(name, e.to_string()))?;
        Self::new(name.to_owned(), stream, options)
    }

    fn new(name: String, stream: Stream, options: ReadOptions) -> Result<Self, CoreError> {
        let mut reader = Reader {
            name,
            stream,
            layout: Layout::PcapNg {
                big_endian: false,
                section_base: 0,
            },
            interfaces: Vec::new(),
            scales: Vec::new(),
            options,
            skipped: 0,
            untimed: 0,
            quirks: Quirks::default(),
            last_ts: 0,
            timed: false,
            sections: 0,
            max_block: INITIAL_MAX_BLOCK_BYTES,
            finished: false,
            cut_short: None,
        };
        reader.read_file_header().map_err(|fault| match fault {
            Fault::CutShort(e) | Fault::Damaged(e) | Fault::Rejected(e) | Fault::Source(e) => e,
        })?;
        Ok(reader)
    }

    fn error(&self, offset: u64, problem: impl Into<String>) -> CoreError {
        CoreError::at(&self.name, offset, problem)
    }

    /// Makes `need` bytes available if the capture has them; returns how many are.
    #[inline(always)]
    fn fill(&mut self, need: usize) -> Result<usize, Fault> {
        self.stream.fill(need).map_err(|e| {
            let at = self.stream.offset();
            let problem = format!("reading failed: {e}");
            if interrupt::is_stop(&e) {
                Fault::Source(CoreError::Interrupted)
            } else if e.kind() == io::ErrorKind::UnexpectedEof {
                // A compressed stream that stops mid-way is a capture cut short.
                Fault::CutShort(self.error(at, problem))
            } else {
                Fault::Source(self.error(at, problem))
            }
        })
    }

    fn read_file_header(&mut self) -> Result<(), Fault> {
        let have = self.fill(PCAP_HEADER_BYTES)?;
        if have == 0 {
            return Err(Fault::Damaged(
                self.error(0, "empty file: no pcap or pcapng header"),
            ));
        }
        if have < 4 {
            return Err(Fault::Damaged(
                self.error(0, format!("truncated file header: {have} bytes")),
            ));
        }
        let magic = read_u32(self.stream.available(), 0, false);
        if magic == SHB_TYPE {
            // The first block is a Section Header; it sets the byte order on its own.
            let section = self.pcapng_block()?;
            return self.apply(section, 0).map(|_| ()).map_err(Fault::Damaged);
        }
        let damaged = |reader: &Self, at: u64, problem: String| {
            Err(Fault::Damaged(reader.error(at, problem)))
        };
        let (big_endian, nanos) = match magic {
            0xA1B2_C3D4 => (false, false),
            0xA1B2_3C4D => (false, true),
            0xD4C3_B2A1 => (true, false),
            0x4D3C_B2A1 => (true, true),
            0xA1B2_CD34 | 0x34CD_B2A1 => {
                return damaged(self, 0, "modified (Kuznetzov) pcap is not supported".into())
            }
            _ => {
                return damaged(
                    self,
                    0,
                    format!("not a pcap or pcapng file: magic 0x{magic:08x}"),
                )
            }
        };
        if have < PCAP_HEADER_BYTES {
            return damaged(
                self,
                0,
                format!("truncated file header: {have} of {PCAP_HEADER_BYTES} bytes"),
            );
        }
        let Ok((_, header)) = parse_pcap_header(self.stream.available()) else {
            return damaged(self, 0, "unreadable pcap file header".into());
        };
        if header.version_major != 2 {
            return damaged(
                self,
                4,
                format!(
                    "pcap version {}.{} is not supported (2.x expected)",
                    header.version_major, header.version_minor
                ),
            );
        }
        // The upper 16 bits of the link-type field carry FCS information (draft-ietf-opsawg-pcap
        // §4, "LinkType and additional information").
        let linktype = (header.network.0 as u32) & 0xFFFF;
        if !linktype_known(linktype) {
            return damaged(self, 20, format!("unknown link type {linktype}"));
        }
        let mut iface = Interface::new(linktype as u16, header.snaplen);
        iface.tsresol = if nanos { 9 } else { 6 };
        self.interfaces.push(iface);
        self.scales.push((TsScale::Mul(1), 0));
        self.layout = Layout::Pcap { big_endian, nanos };
        self.stream.consume(PCAP_HEADER_BYTES);
        Ok(())
    }

    /// Reads the rest of the capture into shared buffers of at least `bytes` that a writer can hold
    /// on to (`Stream::share_buffers`, `shared_record`, `take_as_is`); the records, errors and
    /// counts are the same.
    pub fn share_buffers(&mut self, bytes: usize) {
        self.stream.share_buffers(bytes);
    }

    /// Reads the rest of the capture on a thread of its own, a block ahead of the decoding
    /// (`Stream::read_ahead`): for files, whose reads end, not for standard input.
    pub fn read_ahead(&mut self) {
        self.stream.read_ahead();
    }

    /// Interfaces seen so far (pcapng interfaces appear as their blocks are read).
    pub fn interfaces(&self) -> &[Interface] {
        &self.interfaces
    }

    /// "pcap" or "pcapng".
    pub fn format(&self) -> &'static str {
        match self.layout {
            Layout::Pcap { .. } => "pcap",
            Layout::PcapNg { .. } => "pcapng",
        }
    }

    /// Whether pcap timestamps are in ns (the 0xa1b23c4d magic); pcapng reports false.
    pub fn nanosecond_pcap(&self) -> bool {
        matches!(self.layout, Layout::Pcap { nanos: true, .. })
    }

    /// How the capture was stored: uncompressed, gzip or zstd.
    pub fn compression(&self) -> Compression {
        self.stream.compression()
    }

    /// Records passed over because they were damaged (only with `skip_bad`).
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// Simple Packet Blocks read: they carry no timestamp and inherit the previous packet's.
    pub fn untimed(&self) -> u64 {
        self.untimed
    }

    /// Records read in spite of a quirk (caplen above the snaplen, wire length below caplen).
    pub fn quirks(&self) -> Quirks {
        self.quirks
    }

    /// Why the capture ended early, when it was cut short inside a record (never with `strict`,
    /// which reports it as an error instead).
    pub fn cut_short(&self) -> Option<&CoreError> {
        self.cut_short.as_ref()
    }

    /// Bytes of the (decompressed) capture consumed so far: its size once read to the end.
    pub fn bytes_read(&self) -> u64 {
        self.stream.offset()
    }

    /// The size of the input where it is known before reading (an uncompressed file).
    pub fn size_hint(&self) -> Option<u64> {
        self.stream.size_hint()
    }

    /// Whether this is a little-endian, nanosecond pcap: its records are then byte for byte what
    /// the pcap writer writes for them, unless their fraction of a second is 10^9 or more (the
    /// writer carries it into the seconds).
    pub fn native_ns_pcap(&self) -> bool {
        matches!(
            self.layout,
            Layout::Pcap {
                big_endian: false,
                nanos: true
            }
        )
    }

    /// Takes, in one pass, the records of a little-endian ns pcap read into shared buffers that lie
    /// whole in the shared buffer from the read position and that the pcap writer would write as
    /// they are (caplen within the maximum, fraction below 10^9), up to the first that is not such
    /// a record; the reader's state moves on as if `next_record` had returned each. None when no
    /// such record is at the read position: `next_record` then deals with what is there.
    #[inline]
    pub fn take_as_is(&mut self) -> Option<AsIsRun> {
        if self.finished || !self.native_ns_pcap() {
            return None;
        }
        let (shared, start) = self.stream.shared_at(self.stream.offset())?;
        let end = start + self.stream.available().len();
        let bytes = &shared.bytes()[..end];
        let iface = &self.interfaces[0];
        let (limit, snaplen) = (iface.caplen_limit(), iface.snaplen);
        let mut run = AsIsRun {
            shared: Arc::clone(shared),
            bytes: start..start,
            packets: 0,
            descents: 0,
            last_ts: self.last_ts,
        };
        let mut quirks = self.quirks;
        let mut at = start;
        while let Some(head) = bytes.get(at..at + PCAP_RECORD_HEADER_BYTES) {
            let field = |k: usize| read_u32(head, 4 * k, false);
            let (sec, frac, caplen, wirelen) = (field(0), field(1), field(2), field(3));
            let next = at + PCAP_RECORD_HEADER_BYTES + caplen as usize;
            if frac >= 1_000_000_000 || caplen > limit || next > end {
                break;
            }
            let ts = i64::from(sec) * 1_000_000_000 + i64::from(frac);
            run.descents += u64::from(ts < run.last_ts);
            run.last_ts = ts;
            quirks.snaplen_exceeded += u64::from(snaplen != 0 && caplen > snaplen);
            quirks.wirelen_below_caplen += u64::from(wirelen < caplen);
            run.packets += 1;
            at = next;
        }
        if run.packets == 0 {
            return None;
        }
        run.bytes.end = at;
        self.stream.consume(at - start);
        self.quirks = quirks;
        self.last_ts = run.last_ts;
        self.timed = true;
        Some(run)
    }

    /// Where the whole pcap record `record` (the one returned last: header, then data) lies in
    /// the shared buffer that holds it, if the capture is read into shared buffers.
    #[inline(always)]
    pub fn shared_record(&self, record: &Record) -> Option<(&Arc<SharedBuffer>, usize)> {
        let header = record
            .data_offset
            .checked_sub(PCAP_RECORD_HEADER_BYTES as u64)?;
        self.stream.shared_at(header)
    }

    /// The captured bytes of `record`, which must be the record returned last: its bytes stay
    /// buffered until the next `next_record`.
    pub fn data(&self, record: &Record) -> &[u8] {
        self.stream
            .bytes_at(record.data_offset, record.caplen as usize)
            .expect("a record's data stays buffered until the next record is read")
    }

    /// The next packet, or None at the end of the capture (or where it was cut short).
    pub fn next_record(&mut self) -> Result<Option<Record>, CoreError> {
        if let Layout::Pcap { big_endian, nanos } = self.layout {
            if let Some(record) = self.buffered_pcap_record(big_endian, nanos) {
                return Ok(Some(record));
            }
        }
        while !self.finished {
            let start = self.stream.offset();
            let step = match self.layout {
                Layout::Pcap { big_endian, nanos } => self.pcap_record(big_endian, nanos),
                Layout::PcapNg { .. } => self
                    .pcapng_block()
                    .and_then(|p| self.apply(p, start).map_err(Fault::Rejected)),
            };
            match step {
                Ok(Some(record)) => return Ok(Some(record)),
                Ok(None) => {}
                Err(fault) => self.recover(fault)?,
            }
        }
        Ok(None)
    }

    /// Goes on after a fault where the options allow it: past damage with `skip_bad`, to the
    /// end of a capture cut short unless `strict`.
    fn recover(&mut self, fault: Fault) -> Result<(), CoreError> {
        let (error, cut) = match fault {
            Fault::Source(e) => return Err(e),
            Fault::Rejected(_) if self.options.skip_bad => {
                self.skipped += 1;
                return Ok(());
            }
            Fault::Rejected(e) => return Err(e),
            Fault::Damaged(e) => (e, false),
            Fault::CutShort(e) => (e, true),
        };
        if self.options.skip_bad {
            match self.resync() {
                Ok(true) => {
                    self.skipped += 1;
                    return Ok(());
                }
                Err(Fault::Source(e)) => return Err(e),
                // Nothing readable follows the damage: it ran to the end of the capture.
                Ok(false) | Err(_) if !cut => {
                    self.skipped += 1;
                    self.finished = true;
                    return Ok(());
                }
                Ok(false) | Err(_) => {}
            }
        }
        if cut && !self.options.strict {
            self.cut_short = Some(error);
            self.finished = true;
            return Ok(());
        }
        Err(error)
    }

    /// Refuses what libpcap refuses: a caplen above the link type's maximum.
    #[inline]
    fn check_caplen(&self, at: u64, caplen: u32, iface: usize) -> Result<(), CoreError> {
        let limit = self.interfaces[iface].caplen_limit();
        if caplen > limit {
            return Err(self.error(
                at,
                format!("caplen {caplen} exceeds the {limit}-byte maximum"),
            ));
        }
        Ok(())
    }

    #[inline]
    fn count_quirks(&mut self, record: &Record) {
        let iface = &self.interfaces[record.iface as usize];
        if iface.snaplen != 0 && record.caplen > iface.snaplen {
            self.quirks.snaplen_exceeded += 1;
        }
        if record.wirelen < record.caplen {
            self.quirks.wirelen_below_caplen += 1;
        }
    }
}
