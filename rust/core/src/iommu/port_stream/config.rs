//! A DPDK port's setup as the address stream takes it: rings, thresholds, mempool, IOVA mode
//! and object layout, packet sizes and arrivals; checked before a stream is built.

use super::LINE_BYTES;
use crate::error::CoreError;
use crate::iommu::ddio::LlcShape;

/// Descriptor rings start on 4 KiB boundaries (DPDK ring memzones are page aligned here).
pub(super) const RING_ALIGN: u64 = 4096;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// DPDK's populate rule for pools of IOVA-contiguous objects: none crosses a page.
    PageBound,
    /// Objects back to back (pools that need no IOVA-contiguous objects).
    Packed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Iova {
    /// IOVA = virtual address: the pool is one IOVA-contiguous area.
    Va,
    /// IOVA = physical address: every page at a random frame of the host's memory.
    Pa,
}

/// One DPDK forwarding setup: ports, queues, rings, thresholds, mempool, pages and traffic.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "pyo3", derive(pyo3::FromPyObject), pyo3(from_item_all))]
pub struct PortConfig {
    pub ports: u32,
    pub queues: u32,
    /// Transmit on the next port (port + 1 mod ports) instead of the receiving one.
    pub cross_port: bool,
    pub rxd: u32,
    pub txd: u32,
    pub rx_desc_bytes: u64,
    pub tx_desc_bytes: u64,
    pub rx_free_thresh: u32,
    pub tx_free_thresh: u32,
    pub rs_thresh: u32,
    pub burst: u32,
    pub pool: u32,
    pub cache: u32,
    /// Bytes per mempool object (header, mbuf, headroom, data room) and where data starts.
    pub elt_bytes: u64,
    pub data_offset: u64,
    pub page_bytes: u64,
    pub layout: Layout,
    pub iova: Iova,
    /// Frames of `page_bytes` in the host's memory (where IOVA-as-PA draws pages from).
    pub host_pages: u64,
    /// Packets written by the NIC that wait in the Rx ring before the core polls them.
    pub rx_backlog: u32,
    /// Packets enqueued by the core that wait in the Tx ring before the NIC reads them.
    pub tx_backlog: u32,
    /// Received packets the core drops at a full Tx ring, per forwarded packet.
    pub drop_per_fwd: f64,
    /// Packets the core takes per poll (at most `burst`).
    pub poll_batch: u32,
    /// The LLC's DDIO ways, if modelled: packet reads of lines it lost take the cold class.
    pub llc: Option<LlcShape>,
    /// DMA bytes of each packet size and the fraction of packets of that size.
    pub sizes: Vec<u64>,
    pub weights: Vec<f64>,
    /// Mean arrival spacing of received packets (0: as fast as the device takes them).
    pub ns_per_packet: f64,
    /// Each size's wire time relative to the mix's mean (frame plus preamble and gap over the
    /// mean of the mix): a packet arrives that share of `ns_per_packet` after the one before,
    /// so a mix's small frames come back to back at their own line rate, not at the mean's.
    pub wire_shares: Vec<f64>,
    pub seed: u64,
}

pub(super) fn bad(what: &'static str) -> CoreError {
    CoreError::BadParameter { what }
}

impl PortConfig {
    pub(super) fn lanes(&self) -> u32 {
        self.ports * self.queues
    }

    /// Mbufs a lane can hold at once: its Rx ring, Tx ring, a burst and its cache's peak.
    pub fn buffers_per_lane(&self) -> u64 {
        let cache_peak = (u64::from(self.cache) * 3)
            .div_ceil(2)
            .max(if self.cache > 0 {
                u64::from(self.cache + self.rx_free_thresh)
            } else {
                0
            });
        u64::from(self.rxd + self.txd + self.burst) + cache_peak
    }

    /// Most packets that can wait in the Rx ring: the ring less a refill and a poll in flight.
    pub fn max_rx_backlog(&self) -> u32 {
        self.rxd.saturating_sub(self.rx_free_thresh + self.burst)
    }

    /// Most packets that can wait in the Tx ring and still leave the PMD room for a burst
    /// after freeing `rs_thresh` sent mbufs.
    pub fn max_tx_backlog(&self) -> u32 {
        self.txd
            .saturating_sub(1 + self.tx_free_thresh.max(self.burst) + self.rs_thresh)
    }

    pub(super) fn validate(&self) -> Result<(), CoreError> {
        if self.ports == 0 || self.queues == 0 || self.burst == 0 {
            return Err(bad("ports, queues and burst must be >= 1"));
        }
        if self.rxd == 0 || self.txd == 0 || self.rx_free_thresh == 0 || self.rs_thresh == 0 {
            return Err(bad("ring sizes and thresholds must be >= 1"));
        }
        if !self.rxd.is_multiple_of(self.rx_free_thresh) || !self.txd.is_multiple_of(self.rs_thresh)
        {
            return Err(bad(
                "rxd must be a multiple of rx_free_thresh, txd of rs_thresh",
            ));
        }
        if self.rx_free_thresh + self.burst > self.rxd
            || self.tx_free_thresh.max(self.burst) + self.rs_thresh > self.txd
        {
            return Err(bad("thresholds and burst leave no room in the rings"));
        }
        if self.rx_backlog > self.max_rx_backlog() || self.tx_backlog > self.max_tx_backlog() {
            return Err(bad("a ring backlog exceeds what the ring can hold"));
        }
        if self.poll_batch == 0 || self.poll_batch > self.burst {
            return Err(bad("a poll takes 1 to burst packets"));
        }
        if !self.drop_per_fwd.is_finite() || self.drop_per_fwd < 0.0 {
            return Err(bad("drops per forwarded packet must be finite and >= 0"));
        }
        for desc in [self.rx_desc_bytes, self.tx_desc_bytes] {
            if desc == 0 || !LINE_BYTES.is_multiple_of(desc) {
                return Err(bad("descriptor sizes must divide 64 bytes"));
            }
        }
        if u64::from(self.pool) < u64::from(self.lanes()) * self.buffers_per_lane() {
            return Err(bad(
                "the mempool is smaller than the rings and caches can hold",
            ));
        }
        if !self.page_bytes.is_power_of_two() || self.page_bytes < RING_ALIGN {
            return Err(bad("pages must be a power of two of at least 4 KiB"));
        }
        if self.layout == Layout::PageBound && self.elt_bytes > self.page_bytes {
            return Err(bad("objects larger than a page need the packed layout"));
        }
        if self.sizes.is_empty()
            || self.sizes.len() != self.weights.len()
            || self.sizes.len() != self.wire_shares.len()
            || self.wire_shares.iter().any(|w| !w.is_finite() || *w <= 0.0)
            || self
                .sizes
                .iter()
                .any(|&s| s == 0 || self.data_offset + s > self.elt_bytes)
        {
            return Err(bad(
                "packet sizes must be >= 1 and fit the mbuf's data room",
            ));
        }
        if self.weights.iter().any(|w| !w.is_finite() || *w < 0.0)
            || self.weights.iter().sum::<f64>() <= 0.0
        {
            return Err(bad("size weights must be >= 0 and not all zero"));
        }
        if !self.ns_per_packet.is_finite() || self.ns_per_packet < 0.0 || self.elt_bytes == 0 {
            return Err(bad("arrival spacing must be >= 0 and objects >= 1 byte"));
        }
        Ok(())
    }
}
