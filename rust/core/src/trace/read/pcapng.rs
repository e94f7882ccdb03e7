//! pcapng blocks (draft-ietf-opsawg-pcapng): sections and their byte order, interfaces
//! numbered across sections, packets with their options (time offset, resolution, direction).

use pcap_parser::{parse_block_be, parse_block_le, Block, OptionCode, PcapNGOption};

use super::{
    read_u32, Fault, Layout, Parsed, RawPacket, Reader, Record, TsScale, NS_PER_S, OPB_TYPE,
    SHB_TYPE,
};
use crate::trace::{linktype_known, max_caplen, Interface, EPB_FLAGS};
use crate::CoreError;

/// Byte-order magic of a Section Header Block (pcapng §4.1).
const BYTE_ORDER_MAGIC: u32 = 0x1A2B_3C4D;
/// Fixed part of an Enhanced (and Obsolete) Packet Block before the packet data.
const EPB_FIXED_BYTES: usize = 28;
/// Room libpcap's MAX_BLOCKSIZE_FOR_SNAPLEN leaves for options beside a maximal packet (128 KiB).
const BLOCK_OPTIONS_BYTES: usize = 128 << 10;

impl Reader {
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
    pub(super) fn pcapng_block(&mut self) -> Result<Parsed, Fault> {
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
    pub(super) fn apply(
        &mut self,
        parsed: Parsed,
        block_start: u64,
    ) -> Result<Option<Record>, CoreError> {
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
