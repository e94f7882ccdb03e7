//! Memory-mapped pcap/pcapng reader: `pcap-parser` decodes headers and blocks in place; this
//! layer checks every length before trusting it, numbers interfaces across sections, converts
//! timestamps to ns and, with `skip_bad`, resynchronises past damaged records.

use std::fs::File;
use std::path::Path;

use memmap2::{Advice, Mmap, UncheckedAdvice};
use pcap_parser::{
    parse_block_be, parse_block_le, parse_pcap_frame, parse_pcap_frame_be, parse_pcap_header,
    Block, OptionCode, PcapNGOption,
};

use super::{linktype_known, Interface, TraceError, MAX_CAPLEN};

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
/// Mapped pages already read are dropped every this many bytes so RSS stays bounded.
const RELEASE_EVERY: usize = 64 << 20;

/// One packet record: where its bytes are (`data_offset`, `caplen`) and what it says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record {
    pub ts_ns: i64,
    pub caplen: u32,
    pub wirelen: u32,
    pub iface: u32,
    pub data_offset: u64,
}

enum Source {
    Mapped(Mmap),
    Owned(Vec<u8>),
}

impl Source {
    fn bytes(&self) -> &[u8] {
        match self {
            Source::Mapped(map) => map,
            Source::Owned(bytes) => bytes,
        }
    }
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

/// What one pcapng block means to the reader, detached from the borrowed file bytes.
enum Parsed {
    Section { big_endian: bool },
    Iface(Interface),
    Packet(RawPacket),
    Other,
}

/// A packet as found in a block: local interface id, raw timestamp (None for a Simple Packet
/// Block, which has none), lengths and data position.
struct RawPacket {
    local_iface: u32,
    ts_raw: Option<u64>,
    caplen: u32,
    wirelen: u32,
    data_offset: usize,
}

/// A reader over one capture file (or an in-memory copy of one).
pub struct Reader {
    name: String,
    source: Source,
    pos: usize,
    released: usize,
    layout: Layout,
    interfaces: Vec<Interface>,
    scales: Vec<(TsScale, i128)>,
    skip_bad: bool,
    skipped: u64,
    untimed: u64,
    last_ts: i64,
    sections: u32,
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
    /// Maps `path` and reads its file header; a bad header is fatal even with `skip_bad`.
    pub fn open(path: &Path, skip_bad: bool) -> Result<Self, TraceError> {
        let name = path.display().to_string();
        let file = File::open(path).map_err(|e| TraceError::whole(&name, e.to_string()))?;
        let meta = file
            .metadata()
            .map_err(|e| TraceError::whole(&name, e.to_string()))?;
        if meta.is_dir() {
            return Err(TraceError::whole(
                &name,
                "is a directory, not a capture file",
            ));
        }
        let len = meta.len();
        if len == 0 {
            return Err(TraceError::at(
                &name,
                0,
                "empty file: no pcap or pcapng header",
            ));
        }
        // SAFETY: the map is read-only; like every mmap reader, it assumes nobody truncates or
        // rewrites the file while it is being read.
        let map =
            unsafe { Mmap::map(&file) }.map_err(|e| TraceError::whole(&name, e.to_string()))?;
        // Advice is a hint; a kernel that ignores it changes nothing but speed.
        let _ = map.advise(Advice::Sequential);
        Self::new(name, Source::Mapped(map), skip_bad)
    }

    /// A reader over bytes already in memory (tests, fuzzing); `name` appears in errors.
    pub fn from_bytes(name: &str, bytes: Vec<u8>, skip_bad: bool) -> Result<Self, TraceError> {
        Self::new(name.to_owned(), Source::Owned(bytes), skip_bad)
    }

    fn new(name: String, source: Source, skip_bad: bool) -> Result<Self, TraceError> {
        let mut reader = Reader {
            name,
            source,
            pos: 0,
            released: 0,
            layout: Layout::PcapNg {
                big_endian: false,
                section_base: 0,
            },
            interfaces: Vec::new(),
            scales: Vec::new(),
            skip_bad,
            skipped: 0,
            untimed: 0,
            last_ts: 0,
            sections: 0,
        };
        reader.read_file_header()?;
        Ok(reader)
    }

    fn error(&self, offset: usize, problem: impl Into<String>) -> TraceError {
        TraceError::at(&self.name, offset as u64, problem)
    }

    fn read_file_header(&mut self) -> Result<(), TraceError> {
        let bytes = self.source.bytes();
        if bytes.len() < 4 {
            return Err(self.error(0, format!("truncated file header: {} bytes", bytes.len())));
        }
        let magic = read_u32(bytes, 0, false);
        if magic == SHB_TYPE {
            // The first block is a Section Header; it sets the byte order on its own.
            let section = self.pcapng_block()?;
            return self.apply(section, 0).map(|_| ());
        }
        let (big_endian, nanos) = match magic {
            0xA1B2_C3D4 => (false, false),
            0xA1B2_3C4D => (false, true),
            0xD4C3_B2A1 => (true, false),
            0x4D3C_B2A1 => (true, true),
            0xA1B2_CD34 | 0x34CD_B2A1 => {
                return Err(self.error(0, "modified (Kuznetzov) pcap is not supported"))
            }
            _ => {
                return Err(self.error(0, format!("not a pcap or pcapng file: magic 0x{magic:08x}")))
            }
        };
        if bytes.len() < PCAP_HEADER_BYTES {
            return Err(self.error(
                0,
                format!(
                    "truncated file header: {} of {PCAP_HEADER_BYTES} bytes",
                    bytes.len()
                ),
            ));
        }
        let (_, header) =
            parse_pcap_header(bytes).map_err(|_| self.error(0, "unreadable pcap file header"))?;
        if header.version_major != 2 {
            return Err(self.error(
                4,
                format!(
                    "pcap version {}.{} is not supported (2.x expected)",
                    header.version_major, header.version_minor
                ),
            ));
        }
        // The upper 16 bits of the link-type field carry FCS information (draft-ietf-opsawg-pcap
        // §4, "LinkType and additional information").
        let linktype = (header.network.0 as u32) & 0xFFFF;
        if !linktype_known(linktype) {
            return Err(self.error(20, format!("unknown link type {linktype}")));
        }
        let mut iface = Interface::new(linktype as u16, header.snaplen);
        iface.tsresol = if nanos { 9 } else { 6 };
        self.interfaces.push(iface);
        self.scales.push((TsScale::Mul(1), 0));
        self.layout = Layout::Pcap { big_endian, nanos };
        self.pos = PCAP_HEADER_BYTES;
        Ok(())
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

    /// Records passed over because they were damaged (only with `skip_bad`).
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// Simple Packet Blocks read: they carry no timestamp and inherit the previous packet's.
    pub fn untimed(&self) -> u64 {
        self.untimed
    }

    /// Size of the file in bytes.
    pub fn file_bytes(&self) -> usize {
        self.source.bytes().len()
    }

    /// The captured bytes of `record`.
    pub fn data(&self, record: &Record) -> &[u8] {
        let start = record.data_offset as usize;
        &self.source.bytes()[start..start + record.caplen as usize]
    }

    /// The next packet, or None at the end of the file.
    pub fn next_record(&mut self) -> Result<Option<Record>, TraceError> {
        self.release_consumed();
        while self.pos < self.source.bytes().len() {
            let start = self.pos;
            let step = match self.layout {
                Layout::Pcap { big_endian, nanos } => self.pcap_record(big_endian, nanos),
                Layout::PcapNg { .. } => self.pcapng_block().and_then(|p| self.apply(p, start)),
            };
            match step {
                Ok(Some(record)) => return Ok(Some(record)),
                Ok(None) => {}
                Err(_) if self.skip_bad => {
                    self.skipped += 1;
                    self.pos = self.resync(start);
                }
                Err(e) => return Err(e),
            }
        }
        Ok(None)
    }

    /// Drops mapped pages behind the read position (they refault from the file if touched).
    fn release_consumed(&mut self) {
        let Source::Mapped(map) = &self.source else {
            return;
        };
        let upto = self.pos & !4095;
        if upto >= self.released + RELEASE_EVERY {
            // SAFETY: the map is a read-only file mapping; MADV_DONTNEED only drops resident
            // pages, which the kernel reloads from the file on the next access, so no slice
            // into the map ever sees different bytes.
            let _ = unsafe {
                map.unchecked_advise_range(
                    UncheckedAdvice::DontNeed,
                    self.released,
                    upto - self.released,
                )
            };
            self.released = upto;
        }
    }

    fn pcap_record(&mut self, big_endian: bool, nanos: bool) -> Result<Option<Record>, TraceError> {
        let pos = self.pos;
        let rest = &self.source.bytes()[pos..];
        if rest.len() < PCAP_RECORD_HEADER_BYTES {
            return Err(self.error(
                pos,
                format!("truncated record header: {} of 16 bytes", rest.len()),
            ));
        }
        let caplen = read_u32(rest, 8, big_endian);
        self.check_caplen(pos, caplen, &self.interfaces[0])?;
        let parsed = if big_endian {
            parse_pcap_frame_be(rest)
        } else {
            parse_pcap_frame(rest)
        };
        let Ok((after, frame)) = parsed else {
            return Err(self.error(
                pos,
                format!(
                    "truncated record: caplen {caplen}, {} bytes left",
                    rest.len() - PCAP_RECORD_HEADER_BYTES
                ),
            ));
        };
        let frac_ns = if nanos {
            i64::from(frame.ts_usec)
        } else {
            i64::from(frame.ts_usec) * 1000
        };
        let record = Record {
            ts_ns: i64::from(frame.ts_sec) * 1_000_000_000 + frac_ns,
            caplen,
            wirelen: frame.origlen,
            iface: 0,
            data_offset: (pos + PCAP_RECORD_HEADER_BYTES) as u64,
        };
        self.pos = self.source.bytes().len() - after.len();
        self.last_ts = record.ts_ns;
        Ok(Some(record))
    }

    fn check_caplen(&self, pos: usize, caplen: u32, iface: &Interface) -> Result<(), TraceError> {
        if caplen > MAX_CAPLEN {
            return Err(self.error(
                pos,
                format!("caplen {caplen} exceeds the {MAX_CAPLEN}-byte maximum"),
            ));
        }
        if caplen > iface.caplen_limit() {
            return Err(self.error(
                pos,
                format!("caplen {caplen} exceeds the snaplen {}", iface.snaplen),
            ));
        }
        Ok(())
    }

    /// Reads the pcapng block at `pos` after checking its framing; advances past it.
    fn pcapng_block(&mut self) -> Result<Parsed, TraceError> {
        let pos = self.pos;
        let bytes = self.source.bytes();
        let rest = &bytes[pos..];
        if rest.len() < 12 {
            return Err(self.error(
                pos,
                format!("truncated block header: {} of 12 bytes", rest.len()),
            ));
        }
        let is_section = read_u32(rest, 0, false) == SHB_TYPE;
        let big_endian = if is_section {
            match read_u32(rest, 8, false) {
                BYTE_ORDER_MAGIC => false,
                m if m.swap_bytes() == BYTE_ORDER_MAGIC => true,
                m => {
                    return Err(self.error(
                        pos + 8,
                        format!("section header byte-order magic 0x{m:08x} is not 0x1a2b3c4d"),
                    ))
                }
            }
        } else {
            matches!(
                self.layout,
                Layout::PcapNg {
                    big_endian: true,
                    ..
                }
            )
        };
        let block_type = read_u32(rest, 0, big_endian);
        let len = read_u32(rest, 4, big_endian) as usize;
        if len < 12 || !len.is_multiple_of(4) {
            return Err(self.error(
                pos,
                format!("block length {len} is not a multiple of 4 of at least 12"),
            ));
        }
        if len > rest.len() {
            return Err(self.error(
                pos,
                format!("truncated block: length {len}, {} bytes left", rest.len()),
            ));
        }
        let trailer = read_u32(rest, len - 4, big_endian) as usize;
        if trailer != len {
            return Err(self.error(
                pos,
                format!("block length mismatch: {len} at the start, {trailer} at the end"),
            ));
        }
        let block = &rest[..len];
        if block_type == 6 || block_type == OPB_TYPE {
            let caplen = read_u32(block, 20, big_endian);
            if caplen as usize > len.saturating_sub(EPB_FIXED_BYTES + 4) {
                return Err(self.error(
                    pos,
                    format!("caplen {caplen} does not fit in a block of {len} bytes"),
                ));
            }
        }
        let parsed = if big_endian {
            parse_block_be(block)
        } else {
            parse_block_le(block)
        };
        let Ok((_, parsed)) = parsed else {
            return Err(self.error(pos, format!("malformed block of type 0x{block_type:x}")));
        };
        let offset_of = |data: &[u8]| data.as_ptr() as usize - bytes.as_ptr() as usize;
        let meaning = match parsed {
            Block::SectionHeader(shb) => {
                if shb.major_version != 1 {
                    return Err(self.error(
                        pos,
                        format!(
                            "pcapng version {}.{} is not supported (1.x expected)",
                            shb.major_version, shb.minor_version
                        ),
                    ));
                }
                Parsed::Section { big_endian }
            }
            Block::InterfaceDescription(idb) => {
                if !linktype_known(u32::from(idb.linktype.0 as u16)) {
                    return Err(self.error(pos, format!("unknown link type {}", idb.linktype.0)));
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
            }),
            Block::SimplePacket(spb) => Parsed::Packet(RawPacket {
                local_iface: 0,
                ts_raw: None,
                // An SPB has no caplen: the data is min(original length, block space).
                caplen: spb.origlen.min(spb.data.len() as u32),
                wirelen: spb.origlen,
                data_offset: offset_of(spb.data),
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
                })
            }
            _ => Parsed::Other,
        };
        self.pos = pos + len;
        Ok(meaning)
    }

    /// Applies a decoded block to the reader state; returns the packet if it was one.
    fn apply(&mut self, parsed: Parsed, block_start: usize) -> Result<Option<Record>, TraceError> {
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
                self.scales
                    .push((TsScale::from_units_per_s(units), offset_ns));
                self.interfaces.push(iface);
                Ok(None)
            }
            Parsed::Packet(raw) => self.packet(raw, block_start).map(Some),
            Parsed::Other => Ok(None),
        }
    }

    fn packet(&mut self, raw: RawPacket, block_start: usize) -> Result<Record, TraceError> {
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
            None => raw.caplen.min(self.interfaces[iface].caplen_limit()),
        };
        self.check_caplen(block_start, caplen, &self.interfaces[iface])?;
        let ts_ns = match raw.ts_raw {
            Some(units) => {
                let (scale, offset_ns) = self.scales[iface];
                let ns = scale.ns(units) + offset_ns;
                i64::try_from(ns).map_err(|_| {
                    self.error(
                        block_start,
                        format!("timestamp {ns} ns does not fit in 64 bits"),
                    )
                })?
            }
            None => {
                self.untimed += 1;
                self.last_ts
            }
        };
        self.last_ts = ts_ns;
        Ok(Record {
            ts_ns,
            caplen,
            wirelen: raw.wirelen,
            iface: iface as u32,
            data_offset: raw.data_offset as u64,
        })
    }

    /// The first offset after a damaged record from which reading can plausibly go on: the end
    /// of the record itself when its framing is intact, else the next plausible record start.
    fn resync(&self, bad: usize) -> usize {
        let bytes = self.source.bytes();
        match self.layout {
            Layout::Pcap { big_endian, nanos } => {
                if bad + PCAP_RECORD_HEADER_BYTES <= bytes.len() {
                    let end = bad
                        + PCAP_RECORD_HEADER_BYTES
                        + read_u32(bytes, bad + 8, big_endian) as usize;
                    if end == bytes.len()
                        || self.pcap_header_plausible(end, big_endian, nanos).is_some()
                    {
                        return end;
                    }
                }
                (bad + 1..bytes.len())
                    .find(|&p| self.pcap_chain_plausible(p, big_endian, nanos))
                    .unwrap_or(bytes.len())
            }
            Layout::PcapNg { big_endian, .. } => {
                if block_plausible(bytes, bad, big_endian) {
                    return bad + read_u32(bytes, bad + 4, big_endian) as usize;
                }
                ((bad + 4)..bytes.len())
                    .step_by(4)
                    .find(|&p| block_plausible(bytes, p, big_endian))
                    .unwrap_or(bytes.len())
            }
        }
    }

    /// A record header at `p` that looks sane and is followed by the end or another such header.
    fn pcap_chain_plausible(&self, p: usize, big_endian: bool, nanos: bool) -> bool {
        let next = |p: usize| self.pcap_header_plausible(p, big_endian, nanos);
        match next(p) {
            Some(end) if end == self.source.bytes().len() => true,
            Some(end) => next(end).is_some(),
            None => false,
        }
    }

    /// Where the record at `p` ends, if its header is plausible.
    fn pcap_header_plausible(&self, p: usize, big_endian: bool, nanos: bool) -> Option<usize> {
        let bytes = self.source.bytes();
        if p + PCAP_RECORD_HEADER_BYTES > bytes.len() {
            return None;
        }
        let sec = i64::from(read_u32(bytes, p, big_endian));
        let frac = read_u32(bytes, p + 4, big_endian);
        let caplen = read_u32(bytes, p + 8, big_endian);
        let wirelen = read_u32(bytes, p + 12, big_endian);
        let end = p + PCAP_RECORD_HEADER_BYTES + caplen as usize;
        // Within a day of the last good record: zero-filled or random bytes rarely are.
        let near = (sec - self.last_ts.div_euclid(1_000_000_000)).abs() <= RESYNC_WINDOW_S;
        let frac_ok = frac < if nanos { 1_000_000_000 } else { 1_000_000 };
        let len_ok =
            wirelen > 0 && caplen <= self.interfaces[0].caplen_limit() && caplen <= wirelen;
        (near && frac_ok && len_ok && end <= bytes.len()).then_some(end)
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

/// Whether a whole, self-consistent pcapng block of a known type starts at `p`.
fn block_plausible(bytes: &[u8], p: usize, big_endian: bool) -> bool {
    if p + 12 > bytes.len() {
        return false;
    }
    let block_type = read_u32(bytes, p, big_endian);
    let len = read_u32(bytes, p + 4, big_endian) as usize;
    KNOWN_BLOCK_TYPES.contains(&block_type)
        && len >= 12
        && len.is_multiple_of(4)
        && p + len <= bytes.len()
        && read_u32(bytes, p + len - 4, big_endian) as usize == len
}
