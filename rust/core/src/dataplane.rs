//! The DMA address stream of DPDK ports forwarding packets (`testpmd` io-forward style).
//!
//! Each (port, queue) is a lane served by its own lcore: the NIC fetches Rx descriptors a 64 B
//! line at a time, writes the packet into the mbuf the descriptor names and writes the
//! descriptors back a line at a time; the lcore receives a burst, refills the Rx ring in bulk
//! from its mempool cache every `rx_free_thresh` descriptors, and transmits the burst on the
//! same queue of the same or the next port: the NIC fetches Tx descriptor lines, reads each
//! packet and writes back every `rs_thresh`-th descriptor (the RS bit). The PMD frees sent mbufs
//! `rs_thresh` at a time once fewer than `tx_free_thresh` descriptors are free, so a Tx ring
//! holds up to `txd` mbufs (DPDK ixgbe/i40e semantics).
//!
//! The mempool follows rte_mempool (DPDK <= 22.11): a FIFO common ring behind a LIFO per-lcore
//! cache that refills `size + n - len` objects when short and flushes everything above `size`
//! once it reaches 1.5 x `size`. Buffers live in pages of one size: `Contiguous` packs objects
//! back to back in one IOVA-contiguous area (objects may straddle pages), `Scattered` keeps
//! every object inside one page (what DPDK does when objects must be IOVA-contiguous but pages
//! are not) and places the pages at random IOVAs.

use std::collections::VecDeque;

use crate::error::CoreError;
use crate::sim::{Measure, Rng, Txn};

/// Transaction classes this stream emits (indices into the caller's class table).
pub const RX_DESC_READ: usize = 0;
pub const RX_DESC_WRITEBACK: usize = 1;
pub const TX_DESC_READ: usize = 2;
pub const TX_DESC_WRITEBACK: usize = 3;

/// Class of the packet write (Rx DMA) of the `size_index`-th packet size.
pub fn packet_write_class(size_index: usize) -> usize {
    4 + 2 * size_index
}

/// Class of the packet read (Tx DMA) of the `size_index`-th packet size.
pub fn packet_read_class(size_index: usize) -> usize {
    5 + 2 * size_index
}

/// Descriptors are fetched and written back a cache line at a time.
const LINE_BYTES: u64 = 64;
/// Descriptor rings start on 4 KiB boundaries (DPDK ring memzones are page aligned here).
const RING_ALIGN: u64 = 4096;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    Contiguous,
    Scattered,
}

/// One DPDK forwarding setup: ports, queues, rings, thresholds, mempool, pages and traffic.
#[derive(Debug, Clone, PartialEq)]
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
    /// DMA bytes of each packet size and the fraction of packets of that size.
    pub sizes: Vec<u64>,
    pub weights: Vec<f64>,
    /// Arrival spacing of packets (0: as fast as the device takes them).
    pub ns_per_packet: f64,
    pub seed: u64,
}

fn bad(what: &'static str) -> CoreError {
    CoreError::BadParameter { what }
}

impl PortConfig {
    fn lanes(&self) -> u32 {
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

    fn validate(&self) -> Result<(), CoreError> {
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
        if self.layout == Layout::Scattered && self.elt_bytes > self.page_bytes {
            return Err(bad("objects larger than a page need the contiguous layout"));
        }
        if self.sizes.is_empty()
            || self.sizes.len() != self.weights.len()
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

/// Where rings and mbufs sit in IOVA space.
struct AddressMap {
    page_bytes: u64,
    /// IOVA page of each virtual page (identity unless scattered).
    iova_page: Vec<u64>,
    /// IOVA of each mbuf's packet data (precomputed: the stream asks twice per packet).
    data: Vec<u64>,
}

impl AddressMap {
    fn new(cfg: &PortConfig, ring_bytes: u64, rng: &mut Rng) -> Self {
        let page = cfg.page_bytes;
        let pool_base = ring_bytes.div_ceil(page) * page;
        let scattered = cfg.layout == Layout::Scattered;
        let per_page = page / cfg.elt_bytes; // >= 1 when scattered (validated)
        let virt_of = |id: u64| {
            if scattered {
                pool_base + id / per_page * page + id % per_page * cfg.elt_bytes
            } else {
                pool_base + id * cfg.elt_bytes
            }
        };
        let pool_end = virt_of(u64::from(cfg.pool)) + cfg.elt_bytes;
        let mut iova_page: Vec<u64> = (0..pool_end.div_ceil(page)).collect();
        if scattered {
            for i in (1..iova_page.len()).rev() {
                iova_page.swap(i, rng.below(i as u64 + 1) as usize);
            }
        }
        let mut map = Self {
            page_bytes: page,
            iova_page,
            data: Vec::new(),
        };
        map.data = (0..u64::from(cfg.pool))
            .map(|id| map.iova(virt_of(id)) + cfg.data_offset)
            .collect();
        map
    }

    fn iova(&self, virt: u64) -> u64 {
        let shift = self.page_bytes.trailing_zeros();
        (self.iova_page[(virt >> shift) as usize] << shift) | (virt & (self.page_bytes - 1))
    }

    fn span(&self) -> u64 {
        self.iova_page.len() as u64 * self.page_bytes
    }
}

/// rte_mempool: a FIFO ring of free objects behind LIFO per-lcore caches.
struct Mempool {
    ring: VecDeque<u32>,
    caches: Vec<Vec<u32>>,
    size: usize,
    flush_at: usize,
}

impl Mempool {
    fn new(objects: u32, lcores: usize, size: u32) -> Self {
        let size = size as usize;
        Self {
            ring: (0..objects).collect(),
            caches: vec![Vec::with_capacity(size * 2 + 64); lcores],
            size,
            flush_at: (size * 3).div_ceil(2),
        }
    }

    /// Takes `n` objects for `lcore` into `out` (validation guarantees the pool never runs dry).
    fn get(&mut self, lcore: usize, n: usize, out: &mut Vec<u32>) {
        if self.size == 0 {
            out.extend(self.ring.drain(..n));
            return;
        }
        let cache = &mut self.caches[lcore];
        if cache.len() < n {
            let want = (self.size + n - cache.len()).min(self.ring.len());
            cache.extend(self.ring.drain(..want));
        }
        for _ in 0..n {
            out.push(cache.pop().expect("validated pool size"));
        }
    }

    fn put(&mut self, lcore: usize, objects: impl Iterator<Item = u32>) {
        if self.size == 0 {
            self.ring.extend(objects);
            return;
        }
        let cache = &mut self.caches[lcore];
        cache.extend(objects);
        if cache.len() >= self.flush_at {
            self.ring.extend(cache.drain(self.size..));
        }
    }
}

/// One (port, queue) and the Tx queue it forwards to.
struct Lane {
    rx_ring: u64,
    tx_ring: u64,
    rx_slots: Vec<u32>,
    rx_next: u32,
    rx_refill: u32,
    rx_consumed: u32,
    tx_tail: u32,
    tx_held: VecDeque<u32>,
}

/// Packets of a DPDK port setup as the DMA transactions the NIC issues, burst by burst.
pub struct PortStream {
    cfg: PortConfig,
    map: AddressMap,
    pool: Mempool,
    lanes: Vec<Lane>,
    next_lane: usize,
    cumulative: Vec<f64>,
    rng: Rng,
    packets: u64,
    clock_base: u64,
    burst_bufs: Vec<(u32, usize)>,
    scratch: Vec<u32>,
    pending: Vec<Txn>,
    pos: usize,
}

impl PortStream {
    pub fn new(cfg: PortConfig) -> Result<Self, CoreError> {
        cfg.validate()?;
        let mut rng = Rng(cfg.seed);
        let ring = |n: u32, desc: u64| (u64::from(n) * desc).div_ceil(RING_ALIGN) * RING_ALIGN;
        let lanes = cfg.lanes() as usize;
        let (rx_bytes, tx_bytes) = (
            ring(cfg.rxd, cfg.rx_desc_bytes),
            ring(cfg.txd, cfg.tx_desc_bytes),
        );
        let map = AddressMap::new(&cfg, lanes as u64 * (rx_bytes + tx_bytes), &mut rng);
        let mut pool = Mempool::new(cfg.pool, lanes, cfg.cache);
        let mut lane_list = Vec::with_capacity(lanes);
        for lane in 0..lanes {
            let (port, queue) = (lane as u32 / cfg.queues, lane as u32 % cfg.queues);
            let tx_port = if cfg.cross_port {
                (port + 1) % cfg.ports
            } else {
                port
            };
            let tx_lane = u64::from(tx_port * cfg.queues + queue);
            // Queue setup fills the Rx ring straight from the common ring, before any cache.
            let rx_slots = pool.ring.drain(..cfg.rxd as usize).collect();
            lane_list.push(Lane {
                rx_ring: lane as u64 * rx_bytes,
                tx_ring: lanes as u64 * rx_bytes + tx_lane * tx_bytes,
                rx_slots,
                rx_next: 0,
                rx_refill: 0,
                rx_consumed: 0,
                tx_tail: 0,
                tx_held: VecDeque::with_capacity(cfg.txd as usize),
            });
        }
        let total: f64 = cfg.weights.iter().sum();
        let cumulative = cfg
            .weights
            .iter()
            .scan(0.0, |acc, w| {
                *acc += w / total;
                Some(*acc)
            })
            .collect();
        Ok(Self {
            map,
            pool,
            lanes: lane_list,
            next_lane: 0,
            cumulative,
            rng,
            packets: 0,
            clock_base: 0,
            burst_bufs: Vec::with_capacity(cfg.burst as usize),
            scratch: Vec::with_capacity(cfg.burst.max(cfg.rx_free_thresh) as usize),
            pending: Vec::with_capacity(cfg.burst as usize * 4),
            pos: 0,
            cfg,
        })
    }

    /// IOVA bytes the rings and the pool span (all pages a translation can touch).
    pub fn span(&self) -> u64 {
        self.map.span()
    }

    /// The transactions of the next `packets` packets, rounded up to whole bursts.
    pub fn take_packets(&mut self, packets: u64) -> impl Iterator<Item = Txn> + '_ {
        let end = self.packets + packets;
        std::iter::from_fn(move || {
            (self.packets < end || self.pos < self.pending.len()).then(|| self.next_txn())
        })
    }

    fn next_txn(&mut self) -> Txn {
        if self.pos == self.pending.len() {
            self.next_burst();
        }
        self.pos += 1;
        self.pending[self.pos - 1]
    }

    /// Makes the next packet arrive at time 0 (after a warm-up that is not timed).
    pub fn restart_clock(&mut self) {
        self.clock_base = self.packets;
    }

    fn arrival(&self, packet: u64) -> f64 {
        (packet - self.clock_base) as f64 * self.cfg.ns_per_packet
    }

    /// Packets generated so far.
    pub fn packets(&self) -> u64 {
        self.packets
    }

    fn draw_size(&mut self) -> usize {
        if self.cumulative.len() == 1 {
            return 0;
        }
        let u = (self.rng.next() >> 11) as f64 / (1u64 << 53) as f64;
        self.cumulative
            .iter()
            .position(|&c| u < c)
            .unwrap_or(self.cumulative.len() - 1)
    }

    fn emit(&mut self, addr: u64, bytes: u64, class: usize, not_before: f64) {
        self.pending.push(Txn {
            addr: self.map.iova(addr),
            bytes,
            class,
            not_before,
            measure: Measure::Own,
        });
    }

    /// A packet's DMA at its mbuf's data (objects never straddle a page when scattered).
    fn emit_packet(&mut self, buf: u32, size: usize, class: usize, not_before: f64) {
        self.pending.push(Txn {
            addr: self.map.data[buf as usize],
            bytes: self.cfg.sizes[size],
            class,
            not_before,
            measure: Measure::Own,
        });
    }

    /// Emits the next lane's burst: Rx DMA, ring refill, Tx cleanup and Tx DMA.
    fn next_burst(&mut self) {
        self.pending.clear();
        self.pos = 0;
        let lane_index = self.next_lane;
        self.next_lane = (self.next_lane + 1) % self.lanes.len();
        self.receive(lane_index);
        self.refill(lane_index);
        self.transmit(lane_index);
    }

    fn receive(&mut self, li: usize) {
        let (rx_per_line, desc) = (LINE_BYTES / self.cfg.rx_desc_bytes, self.cfg.rx_desc_bytes);
        self.burst_bufs.clear();
        for _ in 0..self.cfg.burst {
            let size = self.draw_size();
            let arrival = self.arrival(self.packets);
            self.packets += 1;
            let lane = &mut self.lanes[li];
            let slot = u64::from(lane.rx_next);
            let buf = lane.rx_slots[slot as usize];
            lane.rx_next = (lane.rx_next + 1) % self.cfg.rxd;
            lane.rx_consumed += 1;
            let ring = lane.rx_ring;
            if slot.is_multiple_of(rx_per_line) {
                self.emit(ring + slot * desc, LINE_BYTES, RX_DESC_READ, arrival);
            }
            self.emit_packet(buf, size, packet_write_class(size), arrival);
            if slot % rx_per_line == rx_per_line - 1 {
                self.emit(
                    ring + (slot + 1 - rx_per_line) * desc,
                    LINE_BYTES,
                    RX_DESC_WRITEBACK,
                    arrival,
                );
            }
            self.burst_bufs.push((buf, size));
        }
    }

    fn refill(&mut self, li: usize) {
        let thresh = self.cfg.rx_free_thresh;
        while self.lanes[li].rx_consumed >= thresh {
            self.scratch.clear();
            self.pool.get(li, thresh as usize, &mut self.scratch);
            let lane = &mut self.lanes[li];
            let rxd = lane.rx_slots.len();
            for (k, &buf) in self.scratch.iter().enumerate() {
                lane.rx_slots[(lane.rx_refill as usize + k) % rxd] = buf;
            }
            lane.rx_refill = (lane.rx_refill + thresh) % self.cfg.rxd;
            lane.rx_consumed -= thresh;
        }
    }

    fn transmit(&mut self, li: usize) {
        let (txd, rs) = (self.cfg.txd, u64::from(self.cfg.rs_thresh));
        let need = self.cfg.tx_free_thresh.max(self.cfg.burst) as usize;
        while txd as usize - 1 - self.lanes[li].tx_held.len() < need {
            let sent = self.lanes[li].tx_held.drain(..rs as usize);
            self.pool.put(li, sent);
        }
        let (tx_per_line, desc) = (LINE_BYTES / self.cfg.tx_desc_bytes, self.cfg.tx_desc_bytes);
        let last_arrival = self.arrival(self.packets - 1);
        let ring = self.lanes[li].tx_ring;
        for k in 0..self.burst_bufs.len() {
            let (buf, size) = self.burst_bufs[k];
            let lane = &mut self.lanes[li];
            let slot = u64::from(lane.tx_tail);
            lane.tx_tail = (lane.tx_tail + 1) % txd;
            lane.tx_held.push_back(buf);
            if slot.is_multiple_of(tx_per_line) {
                self.emit(ring + slot * desc, LINE_BYTES, TX_DESC_READ, last_arrival);
            }
            self.emit_packet(buf, size, packet_read_class(size), last_arrival);
            if slot % rs == rs - 1 {
                self.emit(ring + slot * desc, desc, TX_DESC_WRITEBACK, last_arrival);
            }
        }
    }
}

impl Iterator for PortStream {
    type Item = Txn;

    fn next(&mut self) -> Option<Txn> {
        Some(self.next_txn())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> PortConfig {
        PortConfig {
            ports: 1,
            queues: 1,
            cross_port: false,
            rxd: 128,
            txd: 128,
            rx_desc_bytes: 16,
            tx_desc_bytes: 16,
            rx_free_thresh: 32,
            tx_free_thresh: 32,
            rs_thresh: 32,
            burst: 32,
            pool: 4096,
            cache: 256,
            elt_bytes: 2368,
            data_offset: 320,
            page_bytes: 4096,
            layout: Layout::Contiguous,
            sizes: vec![60],
            weights: vec![1.0],
            ns_per_packet: 0.0,
            seed: 1,
        }
    }

    fn burst_classes(stream: &mut PortStream) -> Vec<usize> {
        stream.next_burst();
        stream.pending.iter().map(|t| t.class).collect()
    }

    #[test]
    fn a_burst_of_32_makes_the_expected_transactions() {
        // 32 packets, 16 B descriptors (4 a line): 8 Rx descriptor reads and write-backs,
        // 32 packet writes, 8 Tx descriptor reads, 32 packet reads, 1 RS write-back.
        let mut s = PortStream::new(config()).unwrap();
        let classes = burst_classes(&mut s);
        let count = |c: usize| classes.iter().filter(|&&x| x == c).count();
        assert_eq!(count(RX_DESC_READ), 8);
        assert_eq!(count(RX_DESC_WRITEBACK), 8);
        assert_eq!(count(packet_write_class(0)), 32);
        assert_eq!(count(TX_DESC_READ), 8);
        assert_eq!(count(packet_read_class(0)), 32);
        assert_eq!(count(TX_DESC_WRITEBACK), 1);
    }

    #[test]
    fn buffers_in_circulation_are_the_rx_ring_plus_what_the_tx_ring_holds() {
        // rxd + txd - 1 - (up to rs_thresh just freed) distinct buffers cycle; nothing more.
        let mut s = PortStream::new(config()).unwrap();
        let mut seen = std::collections::HashSet::new();
        for _ in 0..2_000 {
            s.next_burst();
        }
        for _ in 0..200 {
            s.next_burst();
            for t in &s.pending {
                if t.class == packet_write_class(0) {
                    seen.insert(t.addr);
                }
            }
        }
        assert!(
            (128 + 64..=128 + 128).contains(&seen.len()),
            "{}",
            seen.len()
        );
    }

    #[test]
    fn scattered_objects_never_cross_a_page() {
        let cfg = PortConfig {
            layout: Layout::Scattered,
            sizes: vec![1514],
            ..config()
        };
        let mut s = PortStream::new(cfg).unwrap();
        for t in s.by_ref().take(100_000) {
            if t.class == packet_write_class(0) {
                assert_eq!(t.addr / 4096, (t.addr + 1513) / 4096);
            }
        }
    }

    #[test]
    fn sizes_are_drawn_in_proportion_to_their_weights() {
        let cfg = PortConfig {
            sizes: vec![60, 590, 1514],
            weights: vec![7.0, 4.0, 1.0],
            ..config()
        };
        let s = PortStream::new(cfg).unwrap();
        let writes: Vec<usize> = s
            .take(400_000)
            .filter(|t| t.class >= 4 && t.class % 2 == 0)
            .map(|t| t.class)
            .collect();
        let share = writes
            .iter()
            .filter(|&&c| c == packet_write_class(0))
            .count() as f64
            / writes.len() as f64;
        assert!((share - 7.0 / 12.0).abs() < 0.01, "{share}");
    }

    #[test]
    fn a_pool_too_small_for_the_rings_is_rejected() {
        let cfg = PortConfig {
            pool: 300,
            ..config()
        };
        assert!(PortStream::new(cfg).is_err());
    }
}
