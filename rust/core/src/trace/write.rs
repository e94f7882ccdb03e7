//! Buffered pcap (ns) and pcapng writer. Records are appended to one large buffer that goes to
//! the file in a single write when full, on a writer thread while the next buffer fills: the
//! buffered-write and batching lessons of the DPDK pdump study, where one `fwrite` per header
//! and per payload (libpcap's `pcap_dump`) cost most.

use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use super::shared_buffer::SharedBuffer;
use super::sink::Sink;

use super::{max_caplen, Interface, EPB_FLAGS};
use crate::CoreError;

/// Default write buffer: 1 MiB, so a 1 GiB capture takes ~1000 writes and the three buffers of
/// the double-buffered sink (filling, queued, being written) stay in a core's 2 MiB L2 cache.
/// Measured on the CI machine (5 M 60-byte frames to ext4): 256 KiB 54, 1 MiB 56, 2 MiB 62,
/// 4 MiB 10 Mpps; the kernel's copy from buffers that missed the cache was the difference.
pub const DEFAULT_BUFFER_BYTES: usize = 1 << 20;
/// Records passed on as they are (`write_as_is`) in a span at least this long are written from
/// their shared input buffer; shorter spans are copied into the buffer, so that records that
/// alternate with rewritten ones do not each cost a write call.
const SHARED_SPAN_MIN_BYTES: usize = 64 << 10;
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
#[cfg_attr(feature = "pyo3", derive(pyo3::IntoPyObject))]
pub struct WriteStats {
    pub packets: u64,
    pub bytes: u64,
    pub writes: u64,
}

/// Packets as columns for [`Writer::write_batch`]: one entry per packet, all bytes in `data`.
pub struct Batch<'a> {
    pub ts_ns: &'a [i64],
    pub iface: &'a [u32],
    pub wirelen: &'a [u32],
    pub caplen: &'a [u32],
    pub data: &'a [u8],
    pub offset: &'a [u64],
}

/// A capture file being written; `finish` flushes and reports, dropping flushes best-effort.
pub struct Writer {
    name: String,
    sink: Option<Sink>,
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

/// Appends up to 7 u32 fields little-endian, in one copy (a record header).
fn push_words(buf: &mut Vec<u8>, fields: &[u32]) {
    let mut bytes = [0u8; 28];
    for (chunk, field) in bytes.chunks_exact_mut(4).zip(fields) {
        chunk.copy_from_slice(&field.to_le_bytes());
    }
    buf.extend_from_slice(&bytes[..fields.len() * 4]);
}

/// Appends one pcapng option (code, length, value padded to 4 bytes).
fn push_option(buf: &mut Vec<u8>, code: u16, value: &[u8]) {
    push_u16(buf, code);
    push_u16(buf, value.len() as u16);
    buf.extend_from_slice(value);
    buf.resize(buf.len() + pad4(value.len()) - value.len(), 0);
}

/// Bytes of an Enhanced Packet Block with `padded` data bytes: 12 more with a direction
/// (epb_flags' 8 and opt_endofopt's 4).
fn block_bytes(padded: usize, direction: u8) -> usize {
    32 + padded + if direction == 0 { 0 } else { 12 }
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
    ) -> Result<Self, CoreError> {
        let name = path.display().to_string();
        let sink = Sink::create(path)?;
        let mut writer = Writer {
            name,
            sink: Some(sink),
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

    /// The pcap file header. Its snaplen is the link type's maximum (262144, tcpdump's default,
    /// for most): the header is written before every interface is known, and records of any of
    /// them must fit.
    fn pcap_header(&mut self, iface: &Interface) {
        push_u32(&mut self.buf, PCAP_NS_MAGIC);
        push_u16(&mut self.buf, 2);
        push_u16(&mut self.buf, 4);
        push_u32(&mut self.buf, 0); // thiszone: always 0 (draft-ietf-opsawg-pcap §4)
        push_u32(&mut self.buf, 0); // sigfigs: always 0
        push_u32(&mut self.buf, max_caplen(iface.linktype));
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
    pub fn add_interface(&mut self, iface: &Interface) -> Result<u32, CoreError> {
        if self.format == OutFormat::Pcap {
            if let Some(first) = self.interfaces.first() {
                if first.linktype != iface.linktype {
                    return Err(CoreError::whole(
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
                snaplen: max_caplen(iface.linktype),
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
    ) -> Result<(), CoreError> {
        self.write_directed(ts_ns, iface, wirelen, data, 0)
    }

    /// Appends one packet with its direction (`Record::direction`: 1 inbound, 2 outbound),
    /// which pcapng keeps as an `epb_flags` option (pcapng §4.3.1); pcap has no place for it.
    pub fn write_directed(
        &mut self,
        ts_ns: i64,
        iface: u32,
        wirelen: u32,
        data: &[u8],
        direction: u8,
    ) -> Result<(), CoreError> {
        let direction = self.recorded_direction(direction);
        let padded = self.begin_packet(ts_ns, iface, wirelen, data.len(), direction)?;
        self.buf.extend_from_slice(data);
        self.end_packet(data.len(), padded, direction);
        Ok(())
    }

    /// The direction a packet's block records: none in pcap.
    fn recorded_direction(&self, direction: u8) -> u8 {
        if self.format == OutFormat::PcapNg {
            direction
        } else {
            0
        }
    }

    /// Appends a batch of packets (columns of equal length; packet i's bytes are
    /// `data[offset[i]..offset[i] + caplen[i]]`).
    pub fn write_batch(&mut self, batch: &Batch<'_>) -> Result<(), CoreError> {
        let n = batch.ts_ns.len();
        let lengths = [
            batch.iface.len(),
            batch.wirelen.len(),
            batch.caplen.len(),
            batch.offset.len(),
        ];
        if lengths.iter().any(|&l| l != n) {
            return Err(CoreError::Invalid(
                "ts_ns, iface, wirelen, caplen and offset must have the same length".into(),
            ));
        }
        for i in 0..n {
            let start = batch.offset[i] as usize;
            let bytes = batch
                .data
                .get(start..start + batch.caplen[i] as usize)
                .ok_or_else(|| {
                    CoreError::Invalid(format!("packet {i} lies outside the data buffer"))
                })?;
            self.write_packet(batch.ts_ns[i], batch.iface[i], batch.wirelen[i], bytes)?;
        }
        Ok(())
    }

    /// Appends one packet of `caplen` bytes that `fill` writes in place (no staging copy).
    pub fn write_with(
        &mut self,
        ts_ns: i64,
        iface: u32,
        wirelen: u32,
        caplen: usize,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<(), CoreError> {
        let padded = self.begin_packet(ts_ns, iface, wirelen, caplen, 0)?;
        let start = self.buf.len();
        self.buf.resize(start + caplen, 0);
        fill(&mut self.buf[start..]);
        self.end_packet(caplen, padded, 0);
        Ok(())
    }

    /// Appends `packets` whole records that are byte for byte what this writer would write for
    /// them, `shared[range]` of a shared input buffer: written from the shared buffer when the span
    /// is long (the writer thread holds the shared buffer until then), else copied into the buffer.
    pub fn write_as_is(
        &mut self,
        shared: &Arc<SharedBuffer>,
        range: Range<usize>,
        packets: u64,
    ) -> Result<(), CoreError> {
        let len = range.len();
        if len < SHARED_SPAN_MIN_BYTES {
            self.reserve(len)?;
            self.buf.extend_from_slice(&shared.bytes()[range]);
        } else {
            self.hand_off()?;
            self.sink()?.submit_shared(Arc::clone(shared), range)?;
            self.stats.bytes += len as u64;
            self.stats.writes += 1;
        }
        self.stats.packets += packets;
        Ok(())
    }

    /// Checks a packet, makes room for it and appends its record header; returns the padded
    /// data length. The header goes in as one slice: per-field pushes cost more than the copy.
    fn begin_packet(
        &mut self,
        ts_ns: i64,
        iface: u32,
        wirelen: u32,
        caplen: usize,
        direction: u8,
    ) -> Result<usize, CoreError> {
        self.check_packet(ts_ns, iface, caplen)?;
        let ts = ts_ns as u64;
        let caplen32 = caplen as u32;
        match self.format {
            OutFormat::Pcap => {
                self.reserve(16 + caplen)?;
                let fields = [
                    (ts / 1_000_000_000) as u32,
                    (ts % 1_000_000_000) as u32,
                    caplen32,
                    wirelen,
                ];
                push_words(&mut self.buf, &fields);
                Ok(caplen)
            }
            OutFormat::PcapNg => {
                let padded = pad4(caplen);
                let len = block_bytes(padded, direction);
                self.reserve(len)?;
                let len = len as u32;
                let fields = [
                    EPB_TYPE,
                    len,
                    iface,
                    (ts >> 32) as u32,
                    ts as u32,
                    caplen32,
                    wirelen,
                ];
                push_words(&mut self.buf, &fields);
                Ok(padded)
            }
        }
    }

    /// Pads pcapng data to 4 bytes, appends the direction's options (epb_flags, then
    /// opt_endofopt) and closes the block with its length.
    fn end_packet(&mut self, caplen: usize, padded: usize, direction: u8) {
        if self.format == OutFormat::PcapNg {
            self.buf.resize(self.buf.len() + padded - caplen, 0);
            if direction != 0 {
                push_option(
                    &mut self.buf,
                    EPB_FLAGS,
                    &u32::from(direction).to_le_bytes(),
                );
                push_option(&mut self.buf, 0, &[]);
            }
            push_u32(&mut self.buf, block_bytes(padded, direction) as u32);
        }
        self.stats.packets += 1;
    }

    fn check_packet(&self, ts_ns: i64, iface: u32, caplen: usize) -> Result<(), CoreError> {
        let problem = if iface as usize >= self.interfaces.len() {
            format!(
                "interface {iface} was never added ({} defined)",
                self.interfaces.len()
            )
        } else if caplen > self.interfaces[iface as usize].caplen_limit() as usize {
            format!(
                "caplen {caplen} exceeds the {}-byte maximum of interface {iface}'s link type",
                self.interfaces[iface as usize].caplen_limit()
            )
        } else if self.format == OutFormat::Pcap && ts_ns < 0 {
            format!("timestamp {ts_ns} ns is before 1970, which pcap cannot hold")
        } else if self.format == OutFormat::Pcap && ts_ns / 1_000_000_000 > i64::from(u32::MAX) {
            format!("timestamp {ts_ns} ns is after 2106, beyond pcap's 32-bit seconds")
        } else {
            // pcapng takes any time: its 64 bits are the unsigned ns tick count (mod.rs notes).

            return Ok(());
        };
        Err(CoreError::whole(&self.name, problem))
    }

    /// Makes room for `extra` bytes, writing the buffer out first if they would not fit.
    fn reserve(&mut self, extra: usize) -> Result<(), CoreError> {
        if self.buf.len() + extra > self.capacity {
            self.hand_off()?;
        }
        Ok(())
    }

    /// Hands the buffer to the writer thread (one `write` call) and continues in a fresh one.
    fn hand_off(&mut self) -> Result<(), CoreError> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let len = self.buf.len() as u64;
        let full = std::mem::take(&mut self.buf);
        self.buf = self.sink()?.submit(full)?;
        self.stats.bytes += len;
        self.stats.writes += 1;
        Ok(())
    }

    fn sink(&mut self) -> Result<&mut Sink, CoreError> {
        self.sink
            .as_mut()
            .ok_or_else(|| CoreError::whole(&self.name, "writer is already closed"))
    }

    /// Writes everything buffered so far and waits until it is in the file.
    pub fn flush(&mut self) -> Result<(), CoreError> {
        self.hand_off()?;
        match self.sink.as_mut() {
            Some(sink) => sink.wait_idle(),
            None => Ok(()),
        }
    }

    /// Writes what is left, closes the file and reports; the stats count every byte that
    /// reached it.
    pub fn finish(&mut self) -> Result<WriteStats, CoreError> {
        self.hand_off()?;
        if let Some(mut sink) = self.sink.take() {
            sink.close()?;
        }
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
        if self.sink.is_some() {
            let _ = self.finish();
        }
    }
}
