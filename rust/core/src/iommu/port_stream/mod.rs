//! The DMA address stream of DPDK ports forwarding packets (`testpmd` io-forward style).
//!
//! Each (port, queue) is a lane served by its own lcore, one poll at a time. The NIC fetches Rx
//! descriptors a 64 B line at a time, writes each packet into the mbuf its descriptor names and
//! writes the descriptors back a line at a time. The lcore polls: it takes the packets the NIC
//! wrote (`poll_batch` of them, after `rx_backlog` older ones still waiting in the Rx ring),
//! refills the Rx ring in bulk from its mempool cache every `rx_free_thresh` descriptors, drops
//! a share of them when the Tx ring is full (`drop_per_fwd`: testpmd io-forward frees what
//! `rte_eth_tx_burst` refused) and enqueues the rest on the same queue of the same or the next
//! port. The NIC then fetches the new Tx descriptors (the lines this poll's descriptors touch:
//! small polls re-read partly fetched lines), reads each packet `tx_backlog` packets after it
//! was enqueued and writes back every `rs_thresh`-th descriptor (the RS bit). The PMD frees
//! sent mbufs `rs_thresh` at a time once fewer than `tx_free_thresh` descriptors are free, so a
//! Tx ring holds up to `txd` mbufs (DPDK ixgbe/i40e semantics).
//!
//! The mempool follows rte_mempool (DPDK <= 22.11): a FIFO common ring behind a LIFO per-lcore
//! cache that refills `size + n - len` objects when short and flushes everything above `size`
//! once it reaches 1.5 x `size`. Objects are laid out as DPDK populates a pool
//! (`rte_mempool_op_populate_helper` + `check_obj_bounds` in lib/mempool/
//! rte_mempool_ops_default.c): an object never crosses a page boundary (`PageBound`; a 2368 B
//! mbuf takes a 4 KiB page of its own), unless the pool does not need IOVA-contiguous objects
//! (`Packed`, RTE_MEMPOOL_F_NO_IOVA_CONTIG). The IOVA mode places the pages: IOVA-as-VA keeps
//! the virtually contiguous pool IOVA-contiguous; IOVA-as-PA puts every page at its physical
//! frame, drawn at random from the host's memory (4 KiB anonymous memory is not physically
//! contiguous), which scatters the pages over many last-level page tables.

mod arrivals;
pub mod config;
mod layout;
mod memory;
mod mempool;
#[cfg(test)]
pub(crate) mod tests;

use self::arrivals::Arrivals;
use self::config::{Layout, PortConfig, RING_ALIGN};
use self::layout::AddressMap;
use self::memory::Memory;
use self::mempool::Mempool;
use crate::error::CoreError;
use crate::iommu::ddio::Ddio;
use crate::rng::Rng;
use crate::sim::{Measure, Txn};

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

/// Class of a packet read whose lines the LLC no longer holds (DRAM): after the `sizes` pairs.
pub fn cold_read_class(size_index: usize, sizes: usize) -> usize {
    4 + 2 * sizes + size_index
}

/// Descriptors are fetched and written back a cache line at a time.
const LINE_BYTES: u64 = 64;

/// Where a poll's transactions go, one at a time in stream order: the batch buffer the
/// iterator plays, or a caller's consumer, called as each is made (mark its `txn`
/// `#[inline(always)]`: it inlines into every place the poll makes a transaction).
pub trait TxnSink {
    /// Whether the sink takes the transactions' times (`not_before`): a sink that does not
    /// may be handed any time, and the stream then leaves its arrival clock where it was
    /// ([`PortStream::restart_clock`] before a timed run).
    const TIMED: bool = true;

    /// One transaction: a [`Txn`] of `Measure::Own`.
    fn txn(&mut self, addr: u64, bytes: u64, class: usize, not_before: f64);

    /// A transaction that lies in one page of the port's `page_bytes` (a packet in a
    /// page-bound mbuf, a descriptor write-back): a sink that walks pages may skip working
    /// out the range.
    #[inline(always)]
    fn txn_in_page(&mut self, addr: u64, bytes: u64, class: usize, not_before: f64) {
        self.txn(addr, bytes, class, not_before);
    }

    /// A transaction of one whole, aligned 64 B line (a descriptor fetch or write-back): it
    /// lies in one page, so a sink that walks pages may skip working out the range.
    #[inline(always)]
    fn line(&mut self, addr: u64, class: usize, not_before: f64) {
        self.txn(addr, LINE_BYTES, class, not_before);
    }
}

impl TxnSink for Vec<Txn> {
    #[inline]
    fn txn(&mut self, addr: u64, bytes: u64, class: usize, not_before: f64) {
        self.push(Txn {
            addr,
            bytes,
            class,
            not_before,
            measure: Measure::Own,
        });
    }
}

/// A packet in the Tx ring (its mbuf aside): its size, and whether the NIC fetches a descriptor line for
/// it (the first descriptor of a poll's run in each line).
#[derive(Clone, Copy, Default)]
struct TxEntry {
    size: u32,
    fetch: bool,
}

/// The slots `start..start + n` of a ring of `len` (`start < len`, `n <= len`), wrapping, as
/// at most two runs of consecutive slots: a poll's loops walk them as slices, with no bounds
/// check or wrap test per descriptor.
#[inline]
fn ring_runs(start: u32, n: u32, len: u32) -> [std::ops::Range<usize>; 2] {
    let (start, end, len) = (start as usize, (start + n) as usize, len as usize);
    [start..end.min(len), 0..end.saturating_sub(len)]
}

/// `i + n` in a ring of `len` (both below `len`).
#[inline]
fn ring_add(i: u32, n: u32, len: u32) -> u32 {
    if i + n >= len {
        i + n - len
    } else {
        i + n
    }
}

/// One (port, queue) and the Tx queue it forwards to. Both rings are arrays indexed by slot:
/// the Rx packets waiting for a poll are the slots from `rx_poll` on, the Tx packets queued
/// for the NIC those from `tx_dma` on and the sent ones not yet freed those from `tx_free` on.
struct Lane {
    /// The IOVA of each 64 B line of the Rx ring and of the Tx ring (fixed: looked up per
    /// descriptor line, not worked out through the page map each time).
    rx_lines: Vec<u64>,
    tx_lines: Vec<u64>,
    /// Each Rx slot's mbuf and the size index of the packet written into it.
    rx_slots: Vec<u64>,
    rx_sizes: Vec<u32>,
    rx_next: u32,
    rx_poll: u32,
    rx_waiting: u32,
    rx_refill: u32,
    rx_consumed: u32,
    /// Each Tx slot's mbuf, and its packet's size and descriptor fetch.
    tx_bufs: Vec<u64>,
    tx_slots: Vec<TxEntry>,
    tx_tail: u32,
    tx_dma: u32,
    tx_free: u32,
    tx_queued: u32,
    tx_sent: u32,
    drop_credit: f64,
}

/// Packets of a DPDK port setup as the DMA transactions the NIC issues, poll by poll.
///
/// Its parts are separate structs so that a poll's loops borrow each one on its own and keep
/// ring positions in registers (no reload through `self` per packet).
pub struct PortStream {
    cfg: PortConfig,
    memory: Memory,
    pool: Mempool,
    lanes: Vec<Lane>,
    next_lane: usize,
    arrivals: Arrivals,
    packets: u64,
    forwarded: u64,
    /// Transactions made so far (counted per run of slots, not per transaction).
    transactions: u64,
    /// The mbufs the last poll took (and kept) and their packets' size indices, side by
    /// side: runs of the Rx ring copy in whole and go on to the Tx ring whole.
    poll_bufs: Vec<u64>,
    poll_sizes: Vec<u32>,
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
        let (map, mbufs) = AddressMap::new(&cfg, lanes as u64 * (rx_bytes + tx_bytes), &mut rng)?;
        let ddio = cfg.llc.map(Ddio::new).transpose()?;
        let mut pool = Mempool::new(mbufs, lanes, cfg.cache);
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
                rx_lines: map.ring_lines(lane as u64 * rx_bytes, cfg.rxd, cfg.rx_desc_bytes),
                tx_lines: map.ring_lines(
                    lanes as u64 * rx_bytes + tx_lane * tx_bytes,
                    cfg.txd,
                    cfg.tx_desc_bytes,
                ),
                rx_slots,
                rx_sizes: vec![0; cfg.rxd as usize],
                rx_next: 0,
                rx_poll: 0,
                rx_waiting: 0,
                rx_refill: 0,
                rx_consumed: 0,
                tx_bufs: vec![0; cfg.txd as usize],
                tx_slots: vec![TxEntry::default(); cfg.txd as usize],
                tx_tail: 0,
                tx_dma: 0,
                tx_free: 0,
                tx_queued: 0,
                tx_sent: 0,
                drop_credit: 0.0,
            });
        }
        Ok(Self {
            memory: Memory { map, ddio },
            pool,
            lanes: lane_list,
            next_lane: 0,
            arrivals: Arrivals::new(&cfg, rng),
            packets: 0,
            forwarded: 0,
            transactions: 0,
            poll_bufs: Vec::with_capacity(cfg.burst as usize),
            poll_sizes: Vec::with_capacity(cfg.burst as usize),
            pending: Vec::with_capacity(cfg.burst as usize * 4),
            pos: 0,
            cfg,
        })
    }

    /// IOVA bytes the rings and the pool span (all pages a translation can touch).
    pub fn span(&self) -> u64 {
        self.memory.map.span()
    }

    /// The DDIO model's counters, if the LLC is modelled.
    pub fn ddio(&self) -> Option<&Ddio> {
        self.memory.ddio.as_ref()
    }

    /// Zeroes the DDIO counters (after a warm-up).
    pub fn reset_ddio_counts(&mut self) {
        if let Some(d) = self.memory.ddio.as_mut() {
            (d.allocations, d.read_misses, d.reads) = (0, 0, 0);
        }
    }

    /// The transactions of the next `packets` received packets, rounded up to whole polls.
    pub fn take_packets(&mut self, packets: u64) -> impl Iterator<Item = Txn> + '_ {
        self.take_packets_until(packets, packets, || false)
    }

    /// The transactions of the next `max` received packets, or fewer: the stream ends at the
    /// first whole poll after `min` packets at which `stop()` says so.
    pub fn take_packets_until<'a>(
        &'a mut self,
        min: u64,
        max: u64,
        stop: impl Fn() -> bool + 'a,
    ) -> impl Iterator<Item = Txn> + 'a {
        let (min_end, end) = (self.packets + min, self.packets + max);
        std::iter::from_fn(move || {
            let more = self.packets < end && (self.packets < min_end || !stop());
            (more || self.pos < self.pending.len()).then(|| self.next_txn())
        })
    }

    /// Hands `sink` each transaction of the next `packets` received packets, rounded up to
    /// whole polls: what [`Self::take_packets`] yields, in the same order, but as the poll
    /// makes each one (no batch buffer: the sink's work inlines into the poll).
    pub fn emit_packets(&mut self, packets: u64, sink: &mut impl TxnSink) {
        for t in &self.pending[self.pos..] {
            sink.txn(t.addr, t.bytes, t.class, t.not_before);
        }
        self.pos = self.pending.len();
        let end = self.packets + packets;
        while self.packets < end {
            self.poll_into(sink);
        }
    }

    /// The next transaction: small enough to inline into the caller's loop, the poll that
    /// makes the next batch kept out of line (it runs once per batch, not per transaction).
    #[inline]
    fn next_txn(&mut self) -> Txn {
        if self.pos == self.pending.len() {
            self.next_batch();
        }
        self.pos += 1;
        self.pending[self.pos - 1]
    }

    #[inline(never)]
    fn next_batch(&mut self) {
        while self.pos == self.pending.len() {
            self.next_poll();
        }
    }

    /// Makes the next packet arrive at time 0 (after a warm-up that is not timed).
    pub fn restart_clock(&mut self) {
        self.arrivals.clock_ns = 0.0;
    }

    /// Packets the NIC has written into host memory so far.
    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// Packets whose Tx DMA has been issued so far.
    pub fn forwarded(&self) -> u64 {
        self.forwarded
    }

    /// DMA transactions made so far (including any made but not yet handed out).
    pub fn transactions(&self) -> u64 {
        self.transactions
    }

    /// Makes the next lane's poll into the batch buffer that [`Self::next_txn`] plays.
    fn next_poll(&mut self) {
        let mut pending = std::mem::take(&mut self.pending);
        pending.clear();
        self.poll_into(&mut pending);
        self.pending = pending;
        self.pos = 0;
    }

    /// The next lane's poll, its transactions in order into `emit`: Rx DMA, the core's poll
    /// and refill, Tx enqueue and Tx DMA.
    fn poll_into(&mut self, emit: &mut impl TxnSink) {
        let lane_index = self.next_lane;
        self.next_lane = (self.next_lane + 1) % self.lanes.len();
        let paged = self.cfg.layout == Layout::PageBound;
        match (self.memory.ddio.is_some(), paged) {
            (true, true) => self.poll_lane::<true, true>(emit, lane_index),
            (true, false) => self.poll_lane::<true, false>(emit, lane_index),
            (false, true) => self.poll_lane::<false, true>(emit, lane_index),
            (false, false) => self.poll_lane::<false, false>(emit, lane_index),
        }
    }

    /// Lane `li`'s poll, with the LLC modelled or not (`LLC`: [`Memory`]) and page-bound
    /// mbufs or not (`PAGED`: every packet then lies in one page, as validation keeps an
    /// object in its page and a packet in its object).
    #[inline(always)]
    fn poll_lane<const LLC: bool, const PAGED: bool>(
        &mut self,
        emit: &mut impl TxnSink,
        li: usize,
    ) {
        self.receive::<LLC, PAGED, _>(emit, li);
        self.poll(li);
        self.refill(li);
        self.transmit::<LLC, PAGED>(emit, li);
    }

    /// The NIC writes a poll's worth of arriving packets into the Rx ring.
    fn receive<const LLC: bool, const PAGED: bool, S: TxnSink>(&mut self, emit: &mut S, li: usize) {
        let Self {
            cfg,
            memory,
            lanes,
            arrivals,
            packets,
            transactions,
            ..
        } = self;
        // Descriptors per line: a power of two (descriptors divide 64 B).
        let line_shift = (LINE_BYTES / cfg.rx_desc_bytes).trailing_zeros();
        let line_mask = (1 << line_shift) - 1;
        let lane = &mut lanes[li];
        *transactions += u64::from(cfg.poll_batch);
        for run in ring_runs(lane.rx_next, cfg.poll_batch, cfg.rxd) {
            // A line is fetched at its first slot and written back at its last.
            let per_line = 1 << line_shift;
            let fetched = run.end.div_ceil(per_line) - run.start.div_ceil(per_line);
            let written = run.end / per_line - run.start / per_line;
            *transactions += (fetched + written) as u64;
            // Slot `run.start + i` from the slices' `i`th entries: the slices zip by index
            // (a range zipped in would add its own end test per packet).
            let slots = lane.rx_slots[run.clone()].iter();
            let sizes = lane.rx_sizes[run.clone()].iter_mut();
            for (i, (&buf, size_of_slot)) in slots.zip(sizes).enumerate() {
                let at = run.start + i;
                let (size, bytes, arrival) = arrivals.next(S::TIMED);
                *size_of_slot = size as u32;
                if at & line_mask == 0 {
                    emit.line(lane.rx_lines[at >> line_shift], RX_DESC_READ, arrival);
                }
                let class = packet_write_class(size);
                memory.write::<LLC, PAGED>(emit, buf, bytes, class, arrival);
                if at & line_mask == line_mask {
                    let line = lane.rx_lines[at >> line_shift];
                    memory.write_line::<LLC>(emit, line, RX_DESC_WRITEBACK, arrival);
                }
            }
        }
        lane.rx_next = ring_add(lane.rx_next, cfg.poll_batch, cfg.rxd);
        lane.rx_waiting += cfg.poll_batch;
        *packets += u64::from(cfg.poll_batch);
    }

    /// The core takes the packets that have waited `rx_backlog` behind, and drops its share.
    fn poll(&mut self, li: usize) {
        let Self {
            cfg,
            lanes,
            pool,
            poll_bufs,
            poll_sizes,
            ..
        } = self;
        let drop_share = cfg.drop_per_fwd / (1.0 + cfg.drop_per_fwd);
        poll_bufs.clear();
        poll_sizes.clear();
        let lane = &mut lanes[li];
        let take = lane
            .rx_waiting
            .saturating_sub(cfg.rx_backlog)
            .min(cfg.poll_batch);
        lane.rx_consumed += take;
        lane.rx_waiting -= take;
        let mut credit = lane.drop_credit;
        for run in ring_runs(lane.rx_poll, take, cfg.rxd) {
            let (bufs, sizes) = (&lane.rx_slots[run.clone()], &lane.rx_sizes[run]);
            if drop_share == 0.0 {
                // Nothing dropped: the run is copied as it is.
                poll_bufs.extend_from_slice(bufs);
                poll_sizes.extend_from_slice(sizes);
                continue;
            }
            for (&buf, &size) in bufs.iter().zip(sizes) {
                credit += drop_share;
                if credit >= 1.0 {
                    credit -= 1.0;
                    pool.put(li, &[buf]);
                    continue;
                }
                poll_bufs.push(buf);
                poll_sizes.push(size);
            }
        }
        lane.drop_credit = credit;
        lane.rx_poll = ring_add(lane.rx_poll, take, cfg.rxd);
    }

    fn refill(&mut self, li: usize) {
        let thresh = self.cfg.rx_free_thresh;
        let lane = &mut self.lanes[li];
        while lane.rx_consumed >= thresh {
            // Refills start at multiples of thresh and rxd is one: a refill never wraps.
            let at = lane.rx_refill as usize;
            self.pool
                .get(li, &mut lane.rx_slots[at..at + thresh as usize]);
            lane.rx_refill = (lane.rx_refill + thresh) % self.cfg.rxd;
            lane.rx_consumed -= thresh;
        }
    }

    /// tx_burst (free sent mbufs if short of room, enqueue the poll's packets), then the NIC's
    /// Tx DMA of everything beyond the backlog.
    fn transmit<const LLC: bool, const PAGED: bool>(&mut self, emit: &mut impl TxnSink, li: usize) {
        let Self {
            cfg,
            memory,
            pool,
            lanes,
            arrivals,
            forwarded,
            poll_bufs,
            poll_sizes,
            transactions,
            ..
        } = self;
        let (txd, rs) = (cfg.txd, cfg.rs_thresh);
        let need = cfg.tx_free_thresh.max(cfg.burst);
        let line_mask = (LINE_BYTES / cfg.tx_desc_bytes) as u32 - 1; // a power of two
        let lane = &mut lanes[li];
        // Sent mbufs are freed rs_thresh at a time from a multiple of it, which divides txd:
        // a group never wraps.
        while txd - 1 - lane.tx_queued - lane.tx_sent < need {
            let at = lane.tx_free as usize;
            pool.put(li, &lane.tx_bufs[at..at + rs as usize]);
            lane.tx_free = (lane.tx_free + rs) % txd;
            lane.tx_sent -= rs;
        }
        let (tail, enqueued) = (lane.tx_tail, poll_bufs.len() as u32);
        let mut taken = 0;
        for run in ring_runs(tail, enqueued, txd) {
            let polled = taken..taken + run.len();
            taken = polled.end;
            lane.tx_bufs[run.clone()].copy_from_slice(&poll_bufs[polled.clone()]);
            let entries = lane.tx_slots[run.clone()].iter_mut();
            for (i, (entry, &size)) in entries.zip(&poll_sizes[polled]).enumerate() {
                let at = (run.start + i) as u32;
                // The first descriptor of the poll's run in each line (the tail starts it).
                let fetch = at == tail || at & line_mask == 0;
                *entry = TxEntry { size, fetch };
            }
        }
        lane.tx_tail = ring_add(tail, enqueued, txd);
        lane.tx_queued += enqueued;
        // The NIC's Tx DMA of everything beyond the backlog, oldest first.
        let dma = lane.tx_queued.saturating_sub(cfg.tx_backlog);
        lane.tx_queued -= dma;
        lane.tx_sent += dma;
        let (desc, first) = (cfg.tx_desc_bytes, lane.tx_dma);
        // Descriptors per line: a power of two (descriptors divide 64 B).
        let line_shift = (LINE_BYTES / desc).trailing_zeros();
        lane.tx_dma = (lane.tx_dma + dma) % txd;
        *forwarded += u64::from(dma);
        *transactions += u64::from(dma);
        let last_arrival = arrivals.clock_ns;
        let sizes = &cfg.sizes[..];
        let rs = rs as usize;
        for run in ring_runs(first, dma, txd) {
            // The next slot with the RS bit (the last of its group: rs divides txd), worked
            // out once per run and then stepped by rs: no division or wrap test per packet.
            let mut rs_slot = run.start - run.start % rs + rs - 1;
            let bufs = lane.tx_bufs[run.clone()].iter();
            let entries = lane.tx_slots[run.clone()].iter();
            for (i, (&buf, &entry)) in bufs.zip(entries).enumerate() {
                let slot = run.start + i;
                if entry.fetch {
                    *transactions += 1;
                    emit.line(
                        lane.tx_lines[slot >> line_shift],
                        TX_DESC_READ,
                        last_arrival,
                    );
                }
                let size = entry.size as usize;
                memory.read_packet::<LLC, PAGED>(emit, buf, size, sizes, last_arrival);
                if slot == rs_slot {
                    rs_slot += rs;
                    // The descriptor's place in its line (a line never crosses a page).
                    let line = lane.tx_lines[slot >> line_shift];
                    let at = line + (slot as u64 & ((1 << line_shift) - 1)) * desc;
                    *transactions += 1;
                    memory.write::<LLC, true>(emit, at, desc, TX_DESC_WRITEBACK, last_arrival);
                }
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
