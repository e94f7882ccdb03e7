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

use std::io;
use std::path::Path;
use std::sync::Arc;

use pcap_parser::{
    parse_block_be, parse_block_le, parse_pcap_header, Block, OptionCode, PcapNGOption,
};

use super::shared_buffer::SharedBuffer;
use super::stream::{Compression, Stream, DEFAULT_CHUNK_BYTES};
use super::{linktype_known, max_caplen, Interface, EPB_FLAGS};
use crate::CoreError;

/// Section Header Block type: a byte palindrome, so it reads the same in either byte order.
const SHB_TYPE: u32 = 0x0A0D_0D0A;
/// Byte-order magic of a Section Header Block (pcapng §4.1).
const BYTE_ORDER_MAGIC: u32 = 0x1A2B_3C4D;
/// Obsolete Packet Block (pcapng appendix, type 2), not decoded by `pcap-parser`.
const OPB_TYPE: u32 = 2;
/// Block types a pcapng resync accepts as a fresh start (pcapng §4 and the block registry).
const KNOWN_BLOCK_TYPES: [u32; 11] = [SHB_TYPE, 1, OPB_TYPE, 3, 4, 5, 6, 7, 10, 0xBAD, 0x4000_0BAD];
const PCAP_HEADER_BYTES: usize = 24;
const PCAP_RECORD_HEADER_BYTES: usize = 16;
/// Fixed part of an Enhanced (and Obsolete) Packet Block before the packet data.
const EPB_FIXED_BYTES: usize = 28;
const NS_PER_S: i128 = 1_000_000_000;
/// A resynchronised pcap record must lie within this many seconds of the last good one.
const RESYNC_WINDOW_S: i64 = 86_400;
/// Largest pcapng block accepted before any interface raises it: libpcap's
/// INITIAL_MAX_BLOCKSIZE (sf-pcapng.c, 16 MiB).
const INITIAL_MAX_BLOCK_BYTES: usize = 16 << 20;
/// Room libpcap's MAX_BLOCKSIZE_FOR_SNAPLEN leaves for options beside a maximal packet (128 KiB).
const BLOCK_OPTIONS_BYTES: usize = 128 << 10;
/// Largest block a pcapng resync takes as a fresh start: a maximal Enhanced Packet Block with
/// its options fits; random bytes that only claim a huge length are not buffered to be checked.
const RESYNC_MAX_BLOCK_BYTES: usize = 1 << 20;

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
            if e.kind() == io::ErrorKind::UnexpectedEof {
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

    fn pcap_record(&mut self, big_endian: bool, nanos: bool) -> Result<Option<Record>, Fault> {
        let at = self.stream.offset();
        let have = self.fill(PCAP_RECORD_HEADER_BYTES)?;
        if have == 0 {
            self.finished = true;
            return Ok(None);
        }
        if have < PCAP_RECORD_HEADER_BYTES {
            return Err(Fault::CutShort(
                self.error(at, format!("truncated record header: {have} of 16 bytes")),
            ));
        }
        let head = self.stream.available();
        let field = |k: usize| read_u32(head, 4 * k, big_endian);
        let (sec, frac, caplen, wirelen) = (field(0), field(1), field(2), field(3));
        self.check_caplen(at, caplen, 0).map_err(Fault::Damaged)?;
        let total = PCAP_RECORD_HEADER_BYTES + caplen as usize;
        let have = self.fill(total)?;
        if have < total {
            return Err(Fault::CutShort(self.error(
                at,
                format!(
                    "truncated record: caplen {caplen}, {} bytes left",
                    have - PCAP_RECORD_HEADER_BYTES
                ),
            )));
        }
        Ok(Some(
            self.take_pcap_record(nanos, [sec, frac, caplen, wirelen]),
        ))
    }

    /// The common case without a system call or a fault: a whole pcap record with an
    /// acceptable caplen is buffered at the read position (else `pcap_record` deals with it).
    #[inline(always)]
    fn buffered_pcap_record(&mut self, big_endian: bool, nanos: bool) -> Option<Record> {
        let head = self.stream.available();
        if self.finished || head.len() < PCAP_RECORD_HEADER_BYTES {
            return None;
        }
        let field = |k: usize| read_u32(head, 4 * k, big_endian);
        let fields = [field(0), field(1), field(2), field(3)];
        let caplen = fields[2];
        let whole = head.len() - PCAP_RECORD_HEADER_BYTES >= caplen as usize;
        (whole && caplen <= self.interfaces[0].caplen_limit())
            .then(|| self.take_pcap_record(nanos, fields))
    }

    /// Consumes the pcap record buffered whole at the read position, given its header fields
    /// (seconds, fraction, caplen, wire length).
    #[inline(always)]
    fn take_pcap_record(&mut self, nanos: bool, [sec, frac, caplen, wirelen]: [u32; 4]) -> Record {
        let at = self.stream.offset();
        let frac_ns = if nanos {
            i64::from(frac)
        } else {
            i64::from(frac) * 1000
        };
        let record = Record {
            ts_ns: i64::from(sec) * 1_000_000_000 + frac_ns,
            caplen,
            wirelen,
            iface: 0,
            data_offset: at + PCAP_RECORD_HEADER_BYTES as u64,
            direction: 0,
        };
        self.count_quirks(&record);
        self.stream
            .consume(PCAP_RECORD_HEADER_BYTES + caplen as usize);
        self.last_ts = record.ts_ns;
        self.timed = true;
        record
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

    fn section_big_endian(&self) -> bool {
        matches!(
            self.layout,
            Layout::PcapNg {
                big_endian: true,
                ..
            }
        )
    }

    /// Reads the pcapng block at the read position after checking its framing; consumes it.
    fn pcapng_block(&mut self) -> Result<Parsed, Fault> {
        let at = self.stream.offset();
        let have = self.fill(12)?;
        if have == 0 {
            self.finished = true;
            return Ok(Parsed::Other);
        }
        if have < 12 {
            return Err(Fault::CutShort(
                self.error(at, format!("truncated block header: {have} of 12 bytes")),
            ));
        }
        let head = self.stream.available();
        let is_section = read_u32(head, 0, false) == SHB_TYPE;
        let big_endian = if is_section {
            match read_u32(head, 8, false) {
                BYTE_ORDER_MAGIC => false,
                m if m.swap_bytes() == BYTE_ORDER_MAGIC => true,
                m => {
                    return Err(Fault::Damaged(self.error(
                        at + 8,
                        format!("section header byte-order magic 0x{m:08x} is not 0x1a2b3c4d"),
                    )))
                }
            }
        } else {
            self.section_big_endian()
        };
        let block_type = read_u32(head, 0, big_endian);
        let len = read_u32(head, 4, big_endian) as usize;
        if len < 12 || !len.is_multiple_of(4) {
            return Err(Fault::Damaged(self.error(
                at,
                format!("block length {len} is not a multiple of 4 of at least 12"),
            )));
        }
        if len > self.max_block {
            return Err(Fault::Damaged(self.error(
                at,
                format!(
                    "block length {len} is above the {}-byte maximum",
                    self.max_block
                ),
            )));
        }
        let have = self.fill(len)?;
        if have < len {
            return Err(Fault::CutShort(self.error(
                at,
                format!("truncated block: length {len}, {have} bytes left"),
            )));
        }
        let meaning = self.decode_block(at, block_type, len, big_endian)?;
        self.stream.consume(len);
        Ok(meaning)
    }

    /// Decodes the whole block of `len` bytes buffered at the read position.
    fn decode_block(
        &self,
        at: u64,
        block_type: u32,
        len: usize,
        big_endian: bool,
    ) -> Result<Parsed, Fault> {
        let damaged = |problem: String| Fault::Damaged(self.error(at, problem));
        let block = &self.stream.available()[..len];
        let trailer = read_u32(block, len - 4, big_endian) as usize;
        if trailer != len {
            return Err(damaged(format!(
                "block length mismatch: {len} at the start, {trailer} at the end"
            )));
        }
        if block_type == 6 || block_type == OPB_TYPE {
            let caplen = read_u32(block, 20, big_endian);
            if caplen as usize > len.saturating_sub(EPB_FIXED_BYTES + 4) {
                return Err(damaged(format!(
                    "caplen {caplen} does not fit in a block of {len} bytes"
                )));
            }
        }
        let parsed = if big_endian {
            parse_block_be(block)
        } else {
            parse_block_le(block)
        };
        let Ok((_, parsed)) = parsed else {
            return Err(damaged(format!("malformed block of type 0x{block_type:x}")));
        };
        let offset_of =
            |data: &[u8]| at + (data.as_ptr() as usize - block.as_ptr() as usize) as u64;
        Ok(match parsed {
            Block::SectionHeader(shb) => {
                if shb.major_version != 1 {
                    return Err(damaged(format!(
                        "pcapng version {}.{} is not supported (1.x expected)",
                        shb.major_version, shb.minor_version
                    )));
                }
                Parsed::Section { big_endian }
            }
            Block::InterfaceDescription(idb) => {
                if !linktype_known(u32::from(idb.linktype.0 as u16)) {
                    return Err(damaged(format!("unknown link type {}", idb.linktype.0)));
                }
                Parsed::Iface(Interface {
                    linktype: idb.linktype.0 as u16,
                    snaplen: idb.snaplen,
                    tsresol: idb.if_tsresol,
                    tsoffset_s: tsoffset(&idb.options, big_endian),
                    name: idb.if_name().and_then(Result::ok).map(str::to_owned),
                    section: 0,
                })
            }
            Block::EnhancedPacket(epb) => Parsed::Packet(RawPacket {
                local_iface: epb.if_id,
                ts_raw: Some((u64::from(epb.ts_high) << 32) | u64::from(epb.ts_low)),
                caplen: epb.caplen,
                wirelen: epb.origlen,
                data_offset: offset_of(epb.data),
                direction: direction(&epb.options, big_endian),
            }),
            Block::SimplePacket(spb) => Parsed::Packet(RawPacket {
                local_iface: 0,
                ts_raw: None,
                // An SPB has no caplen: the data is min(original length, block space).
                caplen: spb.origlen.min(spb.data.len() as u32),
                wirelen: spb.origlen,
                data_offset: offset_of(spb.data),
                direction: 0,
            }),
            Block::Unknown(ub) if ub.block_type == OPB_TYPE => {
                let d = ub.data;
                Parsed::Packet(RawPacket {
                    local_iface: u32::from(read_u32(d, 0, big_endian) as u16),
                    ts_raw: Some(
                        (u64::from(read_u32(d, 4, big_endian)) << 32)
                            | u64::from(read_u32(d, 8, big_endian)),
                    ),
                    caplen: read_u32(d, 12, big_endian),
                    wirelen: read_u32(d, 16, big_endian),
                    data_offset: offset_of(&d[20..]),
                    direction: 0,
                })
            }
            _ => Parsed::Other,
        })
    }

    /// Applies a decoded block to the reader state; returns the packet if it was one.
    fn apply(&mut self, parsed: Parsed, block_start: u64) -> Result<Option<Record>, CoreError> {
        match parsed {
            Parsed::Section { big_endian } => {
                self.layout = Layout::PcapNg {
                    big_endian,
                    section_base: self.interfaces.len(),
                };
                self.sections += 1;
                Ok(None)
            }
            Parsed::Iface(mut iface) => {
                let units = units_per_second(iface.tsresol).ok_or_else(|| {
                    self.error(
                        block_start,
                        format!("if_tsresol 0x{:02x} is out of range", iface.tsresol),
                    )
                })?;
                iface.section = self.sections.saturating_sub(1);
                let offset_ns = i128::from(iface.tsoffset_s) * NS_PER_S;
                // libpcap lets a block grow to a maximal packet plus 128 KiB of options
                // (MAX_BLOCKSIZE_FOR_SNAPLEN in sf-pcapng.c).
                let room = EPB_FIXED_BYTES + 4 + max_caplen(iface.linktype) as usize;
                self.max_block = self.max_block.max(room + BLOCK_OPTIONS_BYTES);
                self.scales
                    .push((TsScale::from_units_per_s(units), offset_ns));
                self.interfaces.push(iface);
                Ok(None)
            }
            Parsed::Packet(raw) => self.packet(raw, block_start).map(Some),
            Parsed::Other => Ok(None),
        }
    }

    fn packet(&mut self, raw: RawPacket, block_start: u64) -> Result<Record, CoreError> {
        let Layout::PcapNg { section_base, .. } = self.layout else {
            unreachable!("packets from blocks only exist in pcapng");
        };
        let defined = self.interfaces.len() - section_base;
        if raw.local_iface as usize >= defined {
            return Err(self.error(
                block_start,
                format!(
                    "packet for interface {}, but its section defines {defined}",
                    raw.local_iface
                ),
            ));
        }
        let iface = section_base + raw.local_iface as usize;
        let caplen = match raw.ts_raw {
            Some(_) => raw.caplen,
            // libpcap's sf-pcapng.c: an SPB's caplen is min(packet length, snapshot length).
            None => raw.caplen.min(self.interfaces[iface].snap_limit()),
        };
        self.check_caplen(block_start, caplen, iface)?;
        let ts_ns = match raw.ts_raw {
            Some(units) => {
                let (scale, offset_ns) = self.scales[iface];
                let ns = scale.ns(units) + offset_ns;
                // Outside i64 the time is kept modulo 2^64 (its low 64 bits): the unsigned
                // tick count itself for ns ticks, and differences stay exact (module notes).
                let wrapped = ns as i64;
                self.quirks.ts_wrapped += u64::from(i128::from(wrapped) != ns);
                wrapped
            }
            None => {
                self.untimed += 1;
                self.last_ts
            }
        };
        self.last_ts = ts_ns;
        let record = Record {
            ts_ns,
            caplen,
            wirelen: raw.wirelen,
            iface: iface as u32,
            data_offset: raw.data_offset,
            direction: raw.direction,
        };
        self.count_quirks(&record);
        Ok(record)
    }

    /// Moves the read position past a damaged record: to its end when its framing is intact,
    /// else to the next plausible record start. False when none follows (the position is then
    /// the end of the capture).
    fn resync(&mut self) -> Result<bool, Fault> {
        match self.layout {
            Layout::Pcap { big_endian, nanos } => self.resync_pcap(big_endian, nanos),
            Layout::PcapNg { big_endian, .. } => self.resync_pcapng(big_endian),
        }
    }

    fn resync_pcap(&mut self, big_endian: bool, nanos: bool) -> Result<bool, Fault> {
        if self.fill(PCAP_RECORD_HEADER_BYTES)? == PCAP_RECORD_HEADER_BYTES {
            let caplen = read_u32(self.stream.available(), 8, big_endian) as usize;
            if caplen <= self.max_block {
                let end = PCAP_RECORD_HEADER_BYTES + caplen;
                let have = self.fill(end + 1)?;
                if have == end
                    || self
                        .pcap_header_plausible(end, big_endian, nanos, None, false)?
                        .is_some()
                {
                    self.stream.consume(end);
                    return Ok(true);
                }
            }
        }
        self.scan(|reader| reader.pcap_chain_plausible(big_endian, nanos))
    }

    fn resync_pcapng(&mut self, big_endian: bool) -> Result<bool, Fault> {
        let max_block = self.max_block;
        if let Some(len) = self.block_plausible(big_endian, max_block)? {
            self.stream.consume(len);
            return Ok(true);
        }
        // Byte by byte, not by 4: damage may have shifted the blocks that follow.
        self.scan(|reader| {
            Ok(reader
                .block_plausible(big_endian, RESYNC_MAX_BLOCK_BYTES)?
                .is_some())
        })
    }

    /// Drops bytes one at a time until `found` holds at the read position (true) or the
    /// capture ends (false).
    fn scan(
        &mut self,
        mut found: impl FnMut(&mut Self) -> Result<bool, Fault>,
    ) -> Result<bool, Fault> {
        loop {
            if self.fill(1)? == 0 {
                return Ok(false);
            }
            self.stream.consume(1);
            if found(self)? {
                return Ok(true);
            }
        }
    }

    /// A record header at the read position that looks sane and is followed by another such
    /// header within a day of it (whose record may run past a cut end), the end of the
    /// capture, or a tail too short for a record header.
    fn pcap_chain_plausible(&mut self, big_endian: bool, nanos: bool) -> Result<bool, Fault> {
        let last_sec = self.last_ts.div_euclid(1_000_000_000);
        let near = self.timed.then_some(last_sec);
        let Some((end, sec)) = self.pcap_header_plausible(0, big_endian, nanos, near, false)?
        else {
            return Ok(false);
        };
        Ok(
            self.fill(end + PCAP_RECORD_HEADER_BYTES)? < end + PCAP_RECORD_HEADER_BYTES
                || self
                    .pcap_header_plausible(end, big_endian, nanos, Some(sec), true)?
                    .is_some(),
        )
    }

    /// Where the record `rel` bytes past the read position ends (relative) and its second, if
    /// its header is plausible, within a day of `near_sec` where given, and the record is whole
    /// (or, with `cut_ok`, runs past the end of the capture).
    fn pcap_header_plausible(
        &mut self,
        rel: usize,
        big_endian: bool,
        nanos: bool,
        near_sec: Option<i64>,
        cut_ok: bool,
    ) -> Result<Option<(usize, i64)>, Fault> {
        if self.fill(rel + PCAP_RECORD_HEADER_BYTES)? < rel + PCAP_RECORD_HEADER_BYTES {
            return Ok(None);
        }
        let head = &self.stream.available()[rel..];
        let field = |k: usize| read_u32(head, 4 * k, big_endian);
        let (sec, frac, caplen, wirelen) = (i64::from(field(0)), field(1), field(2), field(3));
        // Zero-filled or random bytes rarely hold a time within a day of a real one.
        let near = near_sec.is_none_or(|s| (sec - s).abs() <= RESYNC_WINDOW_S);
        let frac_ok = frac < if nanos { 1_000_000_000 } else { 1_000_000 };
        let len_ok = wirelen > 0 && caplen <= self.interfaces[0].snap_limit() && caplen <= wirelen;
        if !(near && frac_ok && len_ok) {
            return Ok(None);
        }
        let end = rel + PCAP_RECORD_HEADER_BYTES + caplen as usize;
        Ok((cut_ok || self.fill(end)? >= end).then_some((end, sec)))
    }

    /// The length of a whole, self-consistent pcapng block of a known type, at most `max`
    /// bytes, at the read position.
    fn block_plausible(&mut self, big_endian: bool, max: usize) -> Result<Option<usize>, Fault> {
        if self.fill(12)? < 12 {
            return Ok(None);
        }
        let head = self.stream.available();
        let block_type = read_u32(head, 0, big_endian);
        let len = read_u32(head, 4, big_endian) as usize;
        if !KNOWN_BLOCK_TYPES.contains(&block_type)
            || len < 12
            || !len.is_multiple_of(4)
            || len > max
        {
            return Ok(None);
        }
        if self.fill(len)? < len {
            return Ok(None);
        }
        let trailer = read_u32(self.stream.available(), len - 4, big_endian) as usize;
        Ok((trailer == len).then_some(len))
    }
}

/// `if_tsoffset` in the section's byte order (pcapng §4.2). pcap-parser 0.17 decodes it as
/// little-endian in every section, which is wrong for big-endian files.
fn tsoffset(options: &[PcapNGOption], big_endian: bool) -> i64 {
    options
        .iter()
        .find(|o| o.code == OptionCode::IfTsoffset)
        .and_then(|o| o.value.get(..8))
        .map_or(0, |v| {
            let raw: [u8; 8] = v.try_into().expect("8 bytes");
            if big_endian {
                i64::from_be_bytes(raw)
            } else {
                i64::from_le_bytes(raw)
            }
        })
}

/// The direction bits (0-1) of an EPB's `epb_flags` in the section's byte order: 1 inbound,
/// 2 outbound, else (absent, 0 or the reserved 3) unknown.
fn direction(options: &[PcapNGOption], big_endian: bool) -> u8 {
    let flags = options
        .iter()
        .find(|o| o.code.0 == EPB_FLAGS)
        .and_then(|o| o.value.get(..4))
        .map_or(0, |v| read_u32(v, 0, big_endian));
    match flags & 3 {
        3 => 0,
        bits => bits as u8,
    }
}

/// Timestamp units per second for an `if_tsresol` byte (pcapng §4.2: 10^-n, or 2^-n with the
/// top bit set). Written here because pcap-parser 0.17's `build_ts_resolution` compares the
/// binary exponent with the flag bit still set and so rejects every 2^-n resolution.
fn units_per_second(tsresol: u8) -> Option<u64> {
    let exponent = u32::from(tsresol & 0x7F);
    if tsresol & 0x80 != 0 {
        (exponent <= 63).then(|| 1u64 << exponent)
    } else {
        10u64.checked_pow(exponent)
    }
}
