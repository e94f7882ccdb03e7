//! Synthetic Ethernet/IPv4/UDP frames, written straight into a capture writer: what
//! `pcieperf trace synth` produces for tests, demos and replay through DPDK's pcap PMD.

use std::path::Path;

use super::write::{OutFormat, WriteStats, Writer, DEFAULT_BUFFER_BYTES};
use super::{Interface, MAX_CAPLEN};
use crate::CoreError;

/// LINKTYPE_ETHERNET (draft-ietf-opsawg-pcaplinktype).
const LINKTYPE_ETHERNET: u16 = 1;
/// Ethernet II header (IEEE 802.3 §3.1.1: two addresses and the EtherType).
const ETH_HEADER: usize = 14;
/// IPv4 header without options (RFC 791 §3.1).
const IPV4_HEADER: usize = 20;
/// UDP header (RFC 768).
const UDP_HEADER: usize = 8;
/// The smallest frame that holds all three headers.
pub const MIN_SYNTH_FRAME: usize = ETH_HEADER + IPV4_HEADER + UDP_HEADER;

/// RFC 1071 Internet checksum of an IPv4 header.
fn ipv4_checksum(header: &[u8]) -> u16 {
    let mut sum: u32 = header
        .chunks_exact(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    !(sum as u16)
}

/// Fills `frame` (already zeroed, FCS excluded) with an Ethernet/IPv4/UDP packet of flow
/// `flow`: locally administered MACs, 10.0.0.0/8 addresses and ports that vary by flow so that
/// RSS spreads flows over queues.
pub fn fill_udp_frame(frame: &mut [u8], flow: u32) {
    let len = frame.len();
    if len < MIN_SYNTH_FRAME {
        return;
    }
    frame[..6].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x02]);
    frame[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x01]);
    frame[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    let ip = &mut frame[ETH_HEADER..ETH_HEADER + IPV4_HEADER];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&((len - ETH_HEADER) as u16).to_be_bytes());
    ip[6] = 0x40; // don't fragment
    ip[8] = 64; // TTL
    ip[9] = 17; // UDP
    ip[12..16].copy_from_slice(&[10, (flow >> 16) as u8, (flow >> 8) as u8, flow as u8]);
    ip[16..20].copy_from_slice(&[10, 255, 0, 1]);
    let checksum = ipv4_checksum(ip);
    ip[10..12].copy_from_slice(&checksum.to_be_bytes());
    let udp = &mut frame[ETH_HEADER + IPV4_HEADER..MIN_SYNTH_FRAME];
    udp[0..2].copy_from_slice(&(1024 + (flow % 60_000) as u16).to_be_bytes());
    udp[2..4].copy_from_slice(&9u16.to_be_bytes()); // discard service
    udp[4..6].copy_from_slice(&((len - ETH_HEADER - IPV4_HEADER) as u16).to_be_bytes());
    // UDP checksum 0: "no checksum", allowed over IPv4 (RFC 768).
}

/// A synthetic capture being written chunk by chunk: arrivals can be generated and written in
/// pieces of any size, so memory does not grow with the duration. Packet i (counted over all
/// chunks) belongs to flow i mod `flows`.
pub struct Synthesizer {
    name: String,
    writer: Writer,
    flows: u32,
    next_flow: u32,
}

impl Synthesizer {
    /// Creates `path` for Ethernet frames.
    pub fn create(path: &Path, format: OutFormat, flows: u32) -> Result<Self, CoreError> {
        let iface = Interface::new(LINKTYPE_ETHERNET, MAX_CAPLEN);
        Ok(Synthesizer {
            name: path.display().to_string(),
            writer: Writer::create(path, format, &iface, DEFAULT_BUFFER_BYTES)?,
            flows: flows.max(1),
            next_flow: 0,
        })
    }

    /// Appends one frame per (timestamp, frame length) pair; lengths exclude the FCS, as
    /// captures do.
    pub fn push(&mut self, ts_ns: &[i64], frame_len: &[u32]) -> Result<(), CoreError> {
        if ts_ns.len() != frame_len.len() {
            return Err(CoreError::whole(
                &self.name,
                format!("{} timestamps but {} lengths", ts_ns.len(), frame_len.len()),
            ));
        }
        if let Some(bad) = frame_len
            .iter()
            .find(|&&l| (l as usize) < MIN_SYNTH_FRAME || l > MAX_CAPLEN)
        {
            return Err(CoreError::whole(
                &self.name,
                format!("frame length {bad} is outside {MIN_SYNTH_FRAME}..{MAX_CAPLEN}"),
            ));
        }
        for (&ts, &len) in ts_ns.iter().zip(frame_len) {
            let flow = self.next_flow;
            self.next_flow = (flow + 1) % self.flows;
            self.writer.write_with(ts, 0, len, len as usize, |frame| {
                fill_udp_frame(frame, flow)
            })?;
        }
        Ok(())
    }

    /// Writes what is buffered, closes the file and reports.
    pub fn finish(mut self) -> Result<WriteStats, CoreError> {
        self.writer.finish()
    }
}

/// Writes one synthetic UDP frame per (timestamp, frame length) pair to `path` in one go.
pub fn synthesize(
    path: &Path,
    format: OutFormat,
    ts_ns: &[i64],
    frame_len: &[u32],
    flows: u32,
) -> Result<WriteStats, CoreError> {
    let mut synth = Synthesizer::create(path, format, flows)?;
    synth.push(ts_ns, frame_len)?;
    synth.finish()
}
