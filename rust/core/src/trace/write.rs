//! Buffered pcap (ns) and pcapng writer. Records are appended to one large buffer that goes to
//! the file in a single write when full: the buffered-write and batching lessons of the DPDK
//! pdump study, where one `fwrite` per header and per payload (libpcap's `pcap_dump`) cost most.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use super::{Interface, TraceError, MAX_CAPLEN};

/// Default write buffer: large enough that a 1 GiB capture takes a few hundred writes.
pub const DEFAULT_BUFFER_BYTES: usize = 4 << 20;
/// Nanosecond pcap magic (draft-ietf-opsawg-pcap §4: 0xA1B23C4D, timestamps in ns).
const PCAP_NS_MAGIC: u32 = 0xA1B2_3C4D;
const SHB_TYPE: u32 = 0x0A0D_0D0A;
const IDB_TYPE: u32 = 1;
const EPB_TYPE: u32 = 6;
const BYTE_ORDER_MAGIC: u32 = 0x1A2B_3C4D;
/// Option codes (draft-ietf-opsawg-pcapng §3.5, §4.1, §4.2).
const OPT_ENDOFOPT: u16 = 0;
const SHB_USERAPPL: u16 = 4;
const IF_NAME: u16 = 2;
const IF_TSRESOL: u16 = 9;

/// Output file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutFormat {
    /// Classic pcap with the nanosecond magic; one link type per file.
    Pcap,
    /// pcapng: one section, one Interface Description Block per interface, ns resolution.
    PcapNg,
}

/// What a finished writer did: packets, bytes and how many write calls reached the file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteStats {
    pub packets: u64,
    pub bytes: u64,
    pub writes: u64,
}

/// A capture file being written; `finish` flushes and reports, dropping flushes best-effort.
pub struct Writer {
    name: String,
    file: Option<File>,
    buf: Vec<u8>,
    capacity: usize,
    format: OutFormat,
    interfaces: Vec<Interface>,
    stats: WriteStats,
}

fn pad4(n: usize) -> usize {
    n.next_multiple_of(4)
}

fn push_u16(buf: &mut Vec<u8>, v: u16) {
    buf.extend_from_slice(&v.to_le_bytes());
}

fn push_u32(buf: &mut Vec<u8>, v: u32) {
    buf.extend_from_slice(&v.to_le_bytes());
}

/// Appends one pcapng option (code, length, value padded to 4 bytes).
fn push_option(buf: &mut Vec<u8>, code: u16, value: &[u8]) {
    push_u16(buf, code);
    push_u16(buf, value.len() as u16);
    buf.extend_from_slice(value);
    buf.resize(buf.len() + pad4(value.len()) - value.len(), 0);
}

/// Wraps a block body in its type and both length fields.
fn push_block(buf: &mut Vec<u8>, block_type: u32, body: &[u8]) {
    let len = (12 + body.len()) as u32;
    push_u32(buf, block_type);
    push_u32(buf, len);
    buf.extend_from_slice(body);
    push_u32(buf, len);
}

impl Writer {
    /// Creates `path` (truncating it: callers decide about overwriting) with `first` as
    /// interface 0; pcap takes its link type and snaplen from it.
    pub fn create(
        path: &Path,
        format: OutFormat,
        first: &Interface,
        capacity: usize,
    ) -> Result<Self, TraceError> {
        let name = path.display().to_string();
        let file = File::create(path).map_err(|e| TraceError::whole(&name, e.to_string()))?;
        let mut writer = Writer {
            name,
            file: Some(file),
            buf: Vec::with_capacity(capacity),
            capacity,
            format,
            interfaces: Vec::new(),
            stats: WriteStats::default(),
        };
        match format {
            OutFormat::Pcap => writer.pcap_header(first),
            OutFormat::PcapNg => writer.section_header(),
        }
        writer.add_interface(first)?;
        Ok(writer)
    }

    /// The pcap file header. Its snaplen is always 262144 (tcpdump's default): the header is
    /// written before every interface is known, and records of any of them must fit.
    fn pcap_header(&mut self, iface: &Interface) {
        push_u32(&mut self.buf, PCAP_NS_MAGIC);
        push_u16(&mut self.buf, 2);
        push_u16(&mut self.buf, 4);
        push_u32(&mut self.buf, 0); // thiszone: always 0 (draft-ietf-opsawg-pcap §4)
        push_u32(&mut self.buf, 0); // sigfigs: always 0
        push_u32(&mut self.buf, MAX_CAPLEN);
        push_u32(&mut self.buf, u32::from(iface.linktype));
    }

    fn section_header(&mut self) {
        let mut body = Vec::with_capacity(32);
        push_u32(&mut body, BYTE_ORDER_MAGIC);
        push_u16(&mut body, 1);
        push_u16(&mut body, 0);
        body.extend_from_slice(&(-1i64).to_le_bytes()); // section length: not specified
        push_option(&mut body, SHB_USERAPPL, b"pcieperf");
        push_option(&mut body, OPT_ENDOFOPT, &[]);
        push_block(&mut self.buf, SHB_TYPE, &body);
    }

    /// Declares another interface and returns its id. pcapng writes an IDB (ns resolution,
    /// `if_name` kept); pcap has a single link type, so a second one is an error and a
    /// second interface of the same type shares id 0.
    pub fn add_interface(&mut self, iface: &Interface) -> Result<u32, TraceError> {
        if self.format == OutFormat::Pcap {
            if let Some(first) = self.interfaces.first() {
                if first.linktype != iface.linktype {
                    return Err(TraceError::whole(
                        &self.name,
                        format!(
                            "pcap holds one link type, got {} and {}; write .pcapng to keep both",
                            first.linktype, iface.linktype
                        ),
                    ));
                }
                return Ok(0);
            }
            self.interfaces.push(Interface {
                snaplen: MAX_CAPLEN,
                ..iface.clone()
            });
            return Ok(0);
        }
        let mut body = Vec::with_capacity(32);
        push_u16(&mut body, iface.linktype);
        push_u16(&mut body, 0);
        push_u32(&mut body, iface.snaplen);
        if let Some(name) = &iface.name {
            push_option(&mut body, IF_NAME, name.as_bytes());
        }
        push_option(&mut body, IF_TSRESOL, &[9]);
        push_option(&mut body, OPT_ENDOFOPT, &[]);
        self.reserve(body.len() + 12)?;
        push_block(&mut self.buf, IDB_TYPE, &body);
        self.interfaces.push(Interface {
            tsresol: 9,
            tsoffset_s: 0,
            section: 0,
            ..iface.clone()
        });
        Ok((self.interfaces.len() - 1) as u32)
    }

    /// Appends one packet given its captured bytes.
    pub fn write_packet(
        &mut self,
        ts_ns: i64,
        iface: u32,
        wirelen: u32,
        data: &[u8],
    ) -> Result<(), TraceError> {
        self.write_with(ts_ns, iface, wirelen, data.len(), |dst| {
            dst.copy_from_slice(data)
        })
    }

    /// Appends one packet of `caplen` bytes that `fill` writes in place (no staging copy).
    pub fn write_with(
        &mut self,
        ts_ns: i64,
        iface: u32,
        wirelen: u32,
        caplen: usize,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<(), TraceError> {
        self.check_packet(ts_ns, iface, caplen)?;
        let padded = match self.format {
            OutFormat::Pcap => caplen,
            OutFormat::PcapNg => pad4(caplen),
        };
        self.reserve(32 + padded)?;
        let buf = &mut self.buf;
        match self.format {
            OutFormat::Pcap => {
                let ts = ts_ns as u64;
                push_u32(buf, (ts / 1_000_000_000) as u32);
                push_u32(buf, (ts % 1_000_000_000) as u32);
                push_u32(buf, caplen as u32);
                push_u32(buf, wirelen);
            }
            OutFormat::PcapNg => {
                let len = (32 + padded) as u32;
                push_u32(buf, EPB_TYPE);
                push_u32(buf, len);
                push_u32(buf, iface);
                push_u32(buf, ((ts_ns as u64) >> 32) as u32);
                push_u32(buf, ts_ns as u32);
                push_u32(buf, caplen as u32);
                push_u32(buf, wirelen);
            }
        }
        let start = buf.len();
        buf.resize(start + padded, 0);
        fill(&mut buf[start..start + caplen]);
        if self.format == OutFormat::PcapNg {
            push_u32(buf, (32 + padded) as u32);
        }
        self.stats.packets += 1;
        Ok(())
    }

    fn check_packet(&self, ts_ns: i64, iface: u32, caplen: usize) -> Result<(), TraceError> {
        let problem = if iface as usize >= self.interfaces.len() {
            format!(
                "interface {iface} was never added ({} defined)",
                self.interfaces.len()
            )
        } else if caplen > self.interfaces[iface as usize].caplen_limit() as usize {
            format!(
                "caplen {caplen} exceeds the snaplen {} of interface {iface}",
                self.interfaces[iface as usize].snaplen
            )
        } else if ts_ns < 0 {
            format!("timestamp {ts_ns} ns is before 1970, which pcap and pcapng cannot hold")
        } else if self.format == OutFormat::Pcap && ts_ns / 1_000_000_000 > i64::from(u32::MAX) {
            format!("timestamp {ts_ns} ns is after 2106, beyond pcap's 32-bit seconds")
        } else {
            return Ok(());
        };
        Err(TraceError::whole(&self.name, problem))
    }

    /// Makes room for `extra` bytes, writing the buffer out first if they would not fit.
    fn reserve(&mut self, extra: usize) -> Result<(), TraceError> {
        if self.buf.len() + extra > self.capacity {
            self.flush()?;
        }
        Ok(())
    }

    /// Writes everything buffered to the file in one call.
    pub fn flush(&mut self) -> Result<(), TraceError> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let file = self
            .file
            .as_mut()
            .ok_or_else(|| TraceError::whole(&self.name, "writer is already closed"))?;
        file.write_all(&self.buf)
            .map_err(|e| TraceError::whole(&self.name, e.to_string()))?;
        self.stats.bytes += self.buf.len() as u64;
        self.stats.writes += 1;
        self.buf.clear();
        Ok(())
    }

    /// Flushes and closes the file; the returned stats count every byte that reached it.
    pub fn finish(&mut self) -> Result<WriteStats, TraceError> {
        self.flush()?;
        self.file = None;
        Ok(self.stats)
    }

    /// Interfaces declared so far, as written (ns resolution).
    pub fn interfaces(&self) -> &[Interface] {
        &self.interfaces
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        // Best effort for writers never finished: keep what was written rather than lose it.
        if self.file.is_some() {
            let _ = self.flush();
        }
    }
}
