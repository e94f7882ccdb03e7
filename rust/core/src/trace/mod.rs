//! Capture files: reading pcap/pcapng (on rusticata's `pcap-parser`), buffered writing, k-way
//! merging and synthetic traffic. Timestamps are i64 nanoseconds since the Unix epoch throughout.
//!
//! A time outside i64 (after 2262-04-11T23:47:16.854775807Z, or before 1677-09-21) is kept
//! modulo 2^64: pcapng ticks are unsigned 64-bit counts (draft-ietf-opsawg-pcapng §4.3), and a
//! file of ns ticks past 2^63 (DPDK 22.11's dumpcap writes such) keeps its exact tick bits, so
//! it is written back unchanged and differences between times (wrapping subtraction) stay
//! exact; such records are counted (`Quirks::ts_wrapped`) instead of refused. Wireshark shows
//! the same ticks as dates up to 2554.
//!
//! Formats: classic pcap and pcapng as specified by draft-ietf-opsawg-pcap and
//! draft-ietf-opsawg-pcapng (the IETF write-ups of the libpcap and pcapng formats).

pub mod archive;
pub mod columns;
pub mod merge;
pub mod rate_windows;
pub mod read;
pub mod shared_buffer;
mod sink;
mod spill;
pub mod stats;
pub mod stream;
pub mod synth;
pub mod timeline;
pub mod write;

#[cfg(test)]
mod tests;

/// `epb_flags`, the Enhanced Packet Block option whose bits 0-1 are the packet's direction
/// (draft-ietf-opsawg-pcapng §4.3.1: 1 inbound, 2 outbound).
pub(crate) const EPB_FLAGS: u16 = 2;

/// Largest captured length accepted for most link types: libpcap's MAXIMUM_SNAPLEN (pcap-int.h,
/// 262144 = 256 KiB), which is also what tcpdump and dumpcap write as their default snaplen.
pub const MAX_CAPLEN: u32 = 262_144;

/// Largest captured length libpcap accepts for a link type: `max_snaplen_for_dlt` in libpcap's
/// pcap-common.c gives D-Bus 128 MiB, EBHSCR 8 MiB, USBPcap 1 MiB and MAXIMUM_SNAPLEN to every
/// other type; sf-pcap.c rejects a record above it as damaged. (LINKTYPE numbers from
/// draft-ietf-opsawg-pcaplinktype: DBUS 231, USBPCAP 249, EBHSCR 279.)
pub fn max_caplen(linktype: u16) -> u32 {
    match linktype {
        231 => 128 << 20,
        279 => 8 << 20,
        249 => 1 << 20,
        _ => MAX_CAPLEN,
    }
}

/// One capture interface: a pcap file has one, a pcapng file one per Interface Description
/// Block, numbered across sections in file order (as Wireshark numbers them).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "pyo3", derive(pyo3::IntoPyObject))]
pub struct Interface {
    pub linktype: u16,
    /// 0 means "no limit" (pcapng allows it; a pcap header with 0 is treated the same).
    pub snaplen: u32,
    /// The raw `if_tsresol` byte: 10^-n seconds, or 2^-n when the top bit is set.
    pub tsresol: u8,
    /// `if_tsoffset`: seconds added to every timestamp of the interface.
    pub tsoffset_s: i64,
    pub name: Option<String>,
    /// Index of the pcapng section (0 for pcap).
    pub section: u32,
}

impl Interface {
    /// An interface with microsecond timestamps and no name (the pcapng default, §4.2).
    pub fn new(linktype: u16, snaplen: u32) -> Self {
        Self {
            linktype,
            snaplen,
            tsresol: 6,
            tsoffset_s: 0,
            name: None,
            section: 0,
        }
    }

    /// Largest caplen a record of this interface may carry: the link type's maximum. A record
    /// longer than the snaplen is still read (and written) in full, as libpcap's sf-pcap.c and
    /// Wireshark do; the reader counts it.
    pub fn caplen_limit(&self) -> u32 {
        max_caplen(self.linktype)
    }

    /// The snaplen as a bound on captured bytes: 0 (or a value above the link type's maximum)
    /// means the maximum, as libpcap's pcap_check_header treats it.
    pub fn snap_limit(&self) -> u32 {
        if self.snaplen == 0 {
            self.caplen_limit()
        } else {
            self.snaplen.min(self.caplen_limit())
        }
    }
}

/// Whether a link type is one the LINKTYPE registry allows (draft-ietf-opsawg-pcaplinktype:
/// 11-49 and 52-98 are "not to be used"; 301 is the highest value assigned).
pub fn linktype_known(linktype: u32) -> bool {
    matches!(linktype, 0..=10 | 50..=51 | 99..=301)
}
