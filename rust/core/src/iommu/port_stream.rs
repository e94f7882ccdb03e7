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

use std::collections::VecDeque;

use crate::error::CoreError;
use crate::iommu::ddio::{mix, Ddio, LlcShape};
use crate::iommu::iotlb::ENTRIES_PER_TABLE;
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
/// Descriptor rings start on 4 KiB boundaries (DPDK ring memzones are page aligned here).
const RING_ALIGN: u64 = 4096;

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

/// Distinct random frames `0..frames` for `count` pages, renumbered densely by last-level
/// table (512 frames each) so that pages sharing a table still share one, without an IOVA
/// space as large as the host's memory.
fn scatter(count: u64, frames: u64, rng: &mut Rng) -> Result<Vec<u64>, CoreError> {
    if frames < count {
        return Err(bad(
            "IOVA-as-PA needs host memory of at least the pool's pages",
        ));
    }
    let mut taken = std::collections::HashSet::with_capacity(count as usize);
    let mut picked = Vec::with_capacity(count as usize);
    while (picked.len() as u64) < count {
        let frame = rng.below(frames);
        if taken.insert(frame) {
            picked.push(frame);
        }
    }
    let mut tables: Vec<u64> = picked.iter().map(|f| f / ENTRIES_PER_TABLE).collect();
    tables.sort_unstable();
    tables.dedup();
    Ok(picked
        .iter()
        .map(|f| {
            let rank = tables
                .binary_search(&(f / ENTRIES_PER_TABLE))
                .expect("listed") as u64;
            rank * ENTRIES_PER_TABLE + f % ENTRIES_PER_TABLE
        })
        .collect())
}

/// Where rings and mbufs sit in IOVA space, and in physical memory.
struct AddressMap {
    page_bytes: u64,
    /// log2 of `page_bytes` (asked per descriptor line: not worked out each time).
    shift: u32,
    /// IOVA page of each virtual page.
    iova_page: Vec<u64>,
    /// Salt of the random physical frame behind each IOVA page.
    frame_salt: u64,
}

impl AddressMap {
    /// The map, and the IOVA of each mbuf's packet data: the name the mempool and the rings
    /// give each mbuf (the stream asks for it twice per packet, so it is looked up nowhere).
    fn new(
        cfg: &PortConfig,
        ring_bytes: u64,
        rng: &mut Rng,
    ) -> Result<(Self, Vec<u64>), CoreError> {
        let page = cfg.page_bytes;
        let pool_base = ring_bytes.div_ceil(page) * page;
        let page_bound = cfg.layout == Layout::PageBound;
        let per_page = page / cfg.elt_bytes; // >= 1 when page-bound (validated)
        let virt_of = |id: u64| {
            if page_bound {
                pool_base + id / per_page * page + id % per_page * cfg.elt_bytes
            } else {
                pool_base + id * cfg.elt_bytes
            }
        };
        let pages = (virt_of(u64::from(cfg.pool)) + cfg.elt_bytes).div_ceil(page);
        let iova_page = match cfg.iova {
            Iova::Va => (0..pages).collect(),
            Iova::Pa => scatter(pages, cfg.host_pages, rng)?,
        };
        let map = Self {
            page_bytes: page,
            shift: page.trailing_zeros(),
            iova_page,
            frame_salt: rng.next(),
        };
        let data = (0..u64::from(cfg.pool))
            .map(|id| map.iova(virt_of(id)) + cfg.data_offset)
            .collect();
        Ok((map, data))
    }

    #[inline]
    fn iova(&self, virt: u64) -> u64 {
        let shift = self.shift;
        (self.iova_page[(virt >> shift) as usize] << shift) | (virt & (self.page_bytes - 1))
    }

    /// The IOVA of each 64 B line of a ring of `n` descriptors of `desc` bytes at `virt`.
    fn ring_lines(&self, virt: u64, n: u32, desc: u64) -> Vec<u64> {
        let lines = (u64::from(n) * desc).div_ceil(LINE_BYTES);
        (0..lines)
            .map(|l| self.iova(virt + l * LINE_BYTES))
            .collect()
    }

    /// IOVA bytes a translation can touch (the highest IOVA page plus one).
    fn span(&self) -> u64 {
        (self.iova_page.iter().max().map_or(0, |p| p + 1)) * self.page_bytes
    }

    /// Physical line addresses (in 64 B lines) of `bytes` bytes at `iova`.
    fn lines(&self, iova: u64, bytes: u64) -> impl Iterator<Item = u64> + '_ {
        let shift = self.shift;
        let per_page = self.page_bytes / LINE_BYTES;
        // The frame is drawn per page: hash it once per page, not once per line.
        let (mut page, mut frame) = (u64::MAX, 0);
        (iova / LINE_BYTES..=(iova + bytes.max(1) - 1) / LINE_BYTES).map(move |line| {
            if (line * LINE_BYTES) >> shift != page {
                page = (line * LINE_BYTES) >> shift;
                frame = mix(page ^ self.frame_salt) >> 24;
            }
            frame * per_page + (line & (per_page - 1))
        })
    }
}

/// rte_mempool: a FIFO ring of free objects behind LIFO per-lcore caches. An object is
/// named by the IOVA of its packet data.
struct Mempool {
    ring: VecDeque<u64>,
    caches: Vec<Vec<u64>>,
    size: usize,
    flush_at: usize,
}

impl Mempool {
    /// A pool of `objects` (all in the common ring, in order) for `lcores` caches of `size`.
    fn new(objects: Vec<u64>, lcores: usize, size: u32) -> Self {
        let size = size as usize;
        Self {
            ring: objects.into(),
            caches: vec![Vec::with_capacity(size * 2 + 64); lcores],
            size,
            flush_at: (size * 3).div_ceil(2),
        }
    }

    /// Fills `out` with objects for `lcore`, popped from its cache one by one (validation
    /// guarantees the pool never runs dry).
    fn get(&mut self, lcore: usize, out: &mut [u64]) {
        let n = out.len();
        if self.size == 0 {
            for (o, id) in out.iter_mut().zip(self.ring.drain(..n)) {
                *o = id;
            }
            return;
        }
        let cache = &mut self.caches[lcore];
        if cache.len() < n {
            let want = (self.size + n - cache.len()).min(self.ring.len());
            cache.extend(self.ring.drain(..want));
        }
        let rest = cache.len().checked_sub(n).expect("validated pool size");
        // LIFO: the first taken is the last put.
        for (o, &id) in out.iter_mut().zip(cache[rest..].iter().rev()) {
            *o = id;
        }
        cache.truncate(rest);
    }

    fn put(&mut self, lcore: usize, objects: &[u64]) {
        if self.size == 0 {
            self.ring.extend(objects);
            return;
        }
        let cache = &mut self.caches[lcore];
        cache.extend_from_slice(objects);
        if cache.len() >= self.flush_at {
            self.ring.extend(cache.drain(self.size..));
        }
    }
}

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

/// Bits of a size draw: u = k / 2^53 for a random 53-bit integer k (an f64's mantissa).
const DRAW_BITS: u32 = 53;
/// The top bits of k that index [`Arrivals::decided`].
const DECIDED_BITS: u32 = 8;
/// A range of k that a cumulative weight splits: its draws compare k with the thresholds.
const UNDECIDED: u8 = u8::MAX;

/// The packets arriving at the port: each one's size, drawn by weight, and arrival time.
struct Arrivals {
    /// Each size's cumulative weight c as the integer ceil(c x 2^53): k / 2^53 >= c exactly
    /// when k >= it (k / 2^53 and c x 2^53 are exact), so a draw compares integers.
    thresholds: Vec<u64>,
    /// The size of every k with these top `DECIDED_BITS` bits, or `UNDECIDED` where a
    /// threshold falls among them: most draws are one look-up, not a compare per size.
    decided: [u8; 1 << DECIDED_BITS],
    /// Each size's spacing after the packet before it (`ns_per_packet` x its wire share) and
    /// its DMA bytes, side by side: one look-up per packet for both.
    per_size: Vec<(f64, u64)>,
    rng: Rng,
    /// When the last packet arrived (ns since the clock restarted).
    clock_ns: f64,
}

impl Arrivals {
    fn new(cfg: &PortConfig, rng: Rng) -> Self {
        let total: f64 = cfg.weights.iter().sum();
        let scale = (1u64 << DRAW_BITS) as f64;
        let thresholds: Vec<u64> = cfg
            .weights
            .iter()
            .scan(0.0, |acc, w| {
                *acc += w / total;
                Some((*acc * scale).ceil() as u64)
            })
            .collect();
        let mut decided = [UNDECIDED; 1 << DECIDED_BITS];
        let span = DRAW_BITS - DECIDED_BITS;
        for (top, decided) in (0u64..).zip(&mut decided) {
            // The size never decreases with k: equal at both ends of the range, it is the
            // size of every k between.
            let (low, high) = (top << span, ((top + 1) << span) - 1);
            let size = size_of(&thresholds, low);
            if size == size_of(&thresholds, high) && size < usize::from(UNDECIDED) {
                *decided = size as u8;
            }
        }
        Self {
            thresholds,
            decided,
            per_size: cfg
                .wire_shares
                .iter()
                .zip(&cfg.sizes)
                .map(|(share, &bytes)| (cfg.ns_per_packet * share, bytes))
                .collect(),
            rng,
            clock_ns: 0.0,
        }
    }

    /// The next packet's size index, its bytes and its arrival time: when its last bit is
    /// in, its own wire time after the previous one's (`timed` false: the clock stays where
    /// it is, for a sink that takes no times).
    #[inline]
    fn next(&mut self, timed: bool) -> (usize, u64, f64) {
        let size = self.draw_size();
        let (gap_ns, bytes) = self.per_size[size];
        if timed {
            self.clock_ns += gap_ns;
        }
        (size, bytes, self.clock_ns)
    }

    #[inline]
    fn draw_size(&mut self) -> usize {
        if self.thresholds.len() == 1 {
            return 0;
        }
        let k = self.rng.next() >> (64 - DRAW_BITS);
        match self.decided[(k >> (DRAW_BITS - DECIDED_BITS)) as usize] {
            UNDECIDED => size_of(&self.thresholds, k),
            size => usize::from(size),
        }
    }
}

/// The size of draw `k` ([`Arrivals`]): the first whose cumulative weight exceeds k / 2^53.
/// The weights never decrease, so that is how many `thresholds` are <= k, counted without a
/// branch per size (the draw is random: a search's exit branch would mispredict).
fn size_of(thresholds: &[u64], k: u64) -> usize {
    let below = thresholds.iter().filter(|&&t| k >= t).count();
    below.min(thresholds.len() - 1)
}

/// Host memory as the NIC's DMA sees it: where rings and mbufs sit, and the LLC's DDIO ways
/// if modelled.
struct Memory {
    map: AddressMap,
    ddio: Option<Ddio>,
}

/// One transaction to `emit`, as one that lies in one page ([`TxnSink::txn_in_page`]) when
/// `ONE_PAGE`.
#[inline(always)]
fn emit_txn<const ONE_PAGE: bool>(
    emit: &mut impl TxnSink,
    addr: u64,
    bytes: u64,
    class: usize,
    at: f64,
) {
    if ONE_PAGE {
        emit.txn_in_page(addr, bytes, class, at);
    } else {
        emit.txn(addr, bytes, class, at);
    }
}

/// `LLC` says whether the LLC is modelled (`ddio` is `Some`): a constant, so the stream
/// without it tests nothing per transaction. `ONE_PAGE`: the transfer lies in one page
/// ([`TxnSink::txn_in_page`]).
impl Memory {
    /// A device write: its lines are (re)allocated in the LLC's DDIO ways.
    #[inline]
    fn write<const LLC: bool, const ONE_PAGE: bool>(
        &mut self,
        emit: &mut impl TxnSink,
        addr: u64,
        bytes: u64,
        class: usize,
        at: f64,
    ) {
        if LLC {
            self.allocate(addr, bytes);
        }
        emit_txn::<ONE_PAGE>(emit, addr, bytes, class, at);
    }

    /// A device write of one whole descriptor line ([`TxnSink::line`]).
    #[inline]
    fn write_line<const LLC: bool>(
        &mut self,
        emit: &mut impl TxnSink,
        addr: u64,
        class: usize,
        at: f64,
    ) {
        if LLC {
            self.allocate(addr, LINE_BYTES);
        }
        emit.line(addr, class, at);
    }

    /// The DDIO ways take a device write's lines (out of line: without an LLC model the
    /// write is a push).
    #[inline(never)]
    fn allocate(&mut self, addr: u64, bytes: u64) {
        if let Some(ddio) = self.ddio.as_mut() {
            for line in self.map.lines(addr, bytes) {
                ddio.write(line);
            }
        }
    }

    /// A packet read: the cold class when the LLC lost any of its lines.
    fn read_packet<const LLC: bool, const ONE_PAGE: bool>(
        &mut self,
        emit: &mut impl TxnSink,
        addr: u64,
        size: usize,
        sizes: &[u64],
        at: f64,
    ) {
        let bytes = sizes[size];
        let mut class = packet_read_class(size);
        if let Some(ddio) = self.ddio.as_mut().filter(|_| LLC) {
            // Every line is looked up (and counted), not only up to the first lost one.
            let lost = self
                .map
                .lines(addr, bytes)
                .filter(|&l| !ddio.read(l))
                .count();
            if lost > 0 {
                class = cold_read_class(size, sizes.len());
            }
        }
        emit_txn::<ONE_PAGE>(emit, addr, bytes, class, at);
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

/// A small port for tests: one port and queue, rings of 128, a pool of 4096 packed mbufs on
/// 4 KiB pages, 60 B packets arriving back to back.
#[cfg(test)]
pub(crate) fn test_config() -> PortConfig {
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
        layout: Layout::Packed,
        iova: Iova::Va,
        host_pages: 1 << 20,
        rx_backlog: 0,
        tx_backlog: 0,
        drop_per_fwd: 0.0,
        poll_batch: 32,
        llc: None,
        sizes: vec![60],
        weights: vec![1.0],
        ns_per_packet: 0.0,
        wire_shares: vec![1.0],
        seed: 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> PortConfig {
        test_config()
    }

    fn poll_classes(stream: &mut PortStream) -> Vec<usize> {
        stream.next_poll();
        stream.pending.iter().map(|t| t.class).collect()
    }

    fn count(classes: &[usize], class: usize) -> usize {
        classes.iter().filter(|&&c| c == class).count()
    }

    #[test]
    fn ring_runs_split_where_the_ring_wraps() {
        // 16 slots from 120 of 128: 120..128, then 0..8; a run that ends at the ring's end or
        // before it leaves the second run empty.
        assert_eq!(ring_runs(120, 16, 128), [120..128, 0..8]);
        assert_eq!(ring_runs(96, 32, 128), [96..128, 0..0]);
        assert_eq!(ring_runs(0, 128, 128), [0..128, 0..0]);
        assert_eq!(ring_runs(5, 0, 128), [5..5, 0..0]);
        assert_eq!((ring_add(120, 16, 128), ring_add(96, 32, 128)), (8, 0));
        assert_eq!(ring_add(3, 4, 128), 7);
    }

    #[test]
    fn a_burst_of_32_makes_the_expected_transactions() {
        // 32 packets, 16 B descriptors (4 a line): 8 Rx descriptor reads and write-backs,
        // 32 packet writes, 8 Tx descriptor reads, 32 packet reads, 1 RS write-back.
        let mut s = PortStream::new(config()).unwrap();
        let classes = poll_classes(&mut s);
        assert_eq!(count(&classes, RX_DESC_READ), 8);
        assert_eq!(count(&classes, RX_DESC_WRITEBACK), 8);
        assert_eq!(count(&classes, packet_write_class(0)), 32);
        assert_eq!(count(&classes, TX_DESC_READ), 8);
        assert_eq!(count(&classes, packet_read_class(0)), 32);
        assert_eq!(count(&classes, TX_DESC_WRITEBACK), 1);
    }

    #[test]
    fn the_transactions_counted_per_run_are_those_made() {
        // Counted arithmetically per run of slots (and per fetch/write-back branch), checked
        // against the transactions the polls hand out, one by one: odd poll sizes, rings that
        // wrap mid-line, a Tx backlog and drops.
        for (poll_batch, tx_backlog, drop_per_fwd) in [(32, 0, 0.0), (7, 0, 0.0), (5, 40, 0.5)] {
            let mut s = PortStream::new(PortConfig {
                poll_batch,
                tx_backlog,
                drop_per_fwd,
                ..config()
            })
            .unwrap();
            let made: usize = (0..500).map(|_| poll_classes(&mut s).len()).sum();
            assert_eq!(s.transactions(), made as u64, "{poll_batch}");
        }
    }

    #[test]
    fn polls_of_one_packet_fetch_a_tx_descriptor_line_per_packet() {
        // Each tx_burst of 1 moves the tail by one descriptor: the NIC re-reads the line.
        let mut s = PortStream::new(PortConfig {
            poll_batch: 1,
            ..config()
        })
        .unwrap();
        let classes: Vec<usize> = (0..64).flat_map(|_| poll_classes(&mut s)).collect();
        assert_eq!(count(&classes, TX_DESC_READ), 64);
        assert_eq!(count(&classes, RX_DESC_READ), 16); // Rx prefetch stays per line
    }

    #[test]
    fn buffers_in_circulation_are_the_rx_ring_plus_what_the_tx_ring_holds() {
        // rxd + txd - 1 - (up to rs_thresh just freed) distinct buffers cycle; nothing more.
        let mut s = PortStream::new(config()).unwrap();
        let mut seen = std::collections::HashSet::new();
        for _ in 0..2_000 {
            s.next_poll();
        }
        for _ in 0..200 {
            s.next_poll();
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

    /// Packets between each buffer's Rx write and its Tx read, in steady state.
    fn tx_distance(cfg: PortConfig) -> f64 {
        let mut s = PortStream::new(cfg).unwrap();
        let (mut written, mut gaps) = (std::collections::HashMap::new(), Vec::new());
        let mut rx = 0u64;
        for t in s.by_ref().take(400_000) {
            if t.class == packet_write_class(0) {
                written.insert(t.addr, rx);
                rx += 1;
            } else if t.class == packet_read_class(0) && rx > 50_000 {
                gaps.push((rx - written[&t.addr]) as f64);
            }
        }
        gaps.iter().sum::<f64>() / gaps.len() as f64
    }

    #[test]
    fn a_tx_backlog_delays_each_packet_read_by_that_many_packets() {
        // No backlog: read within the poll that received it (0..31 packets later, mean ~16).
        assert!(tx_distance(config()) < 32.0);
        // tx_backlog 63 (the most a 128-entry ring allows): ~63 packets more.
        let full = PortConfig {
            tx_backlog: 63,
            ..config()
        };
        assert_eq!(full.max_tx_backlog(), 63); // 128 - 1 - 32 - 32
        let d = tx_distance(full);
        assert!((63.0..63.0 + 32.0).contains(&d), "{d}");
    }

    #[test]
    fn an_rx_backlog_delays_the_poll_of_each_packet() {
        let full = PortConfig {
            rx_backlog: 64,
            ..config()
        };
        assert_eq!(full.max_rx_backlog(), 64); // 128 - 32 - 32
        let d = tx_distance(full);
        assert!((64.0..64.0 + 32.0).contains(&d), "{d}");
    }

    #[test]
    fn drops_at_a_full_tx_ring_leave_the_forwarded_share() {
        // One drop per forwarded packet: half of what is received is forwarded.
        let mut s = PortStream::new(PortConfig {
            drop_per_fwd: 1.0,
            ..config()
        })
        .unwrap();
        s.by_ref().take(100_000).for_each(drop);
        let share = s.forwarded() as f64 / s.packets() as f64;
        assert!((share - 0.5).abs() < 0.01, "{share}");
    }

    #[test]
    fn page_bound_objects_never_cross_a_page() {
        let cfg = PortConfig {
            layout: Layout::PageBound,
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

    fn tables_touched(iova: Iova) -> usize {
        let cfg = PortConfig {
            layout: Layout::PageBound,
            iova,
            ..config()
        };
        let s = PortStream::new(cfg).unwrap();
        let tables: std::collections::HashSet<u64> = s
            .take(200_000)
            .map(|t| t.addr / 4096 / ENTRIES_PER_TABLE)
            .collect();
        tables.len()
    }

    #[test]
    fn iova_as_va_keeps_pages_in_few_tables_and_pa_scatters_them() {
        // ~230 mbufs cycle (rxd 128 + txd 128 less what the Tx ring has freed), one page each,
        // all among the pool's first ~600 objects: 2 tables of 512 pages when IOVA-contiguous.
        // Drawn from 2^20 frames (2048 tables) nearly every page has a table of its own.
        assert!(tables_touched(Iova::Va) <= 3);
        assert!(tables_touched(Iova::Pa) > 150);
    }

    #[test]
    fn the_llc_loses_page_aligned_buffers_that_outgrow_one_offsets_sets() {
        // 2 slices of 2048 sets, 2 ways: a line offset of 4 KiB pages reaches 2 x 32 sets = 128
        // lines. ~230 buffers cycle (rxd 128): by a buffer's next Rx write its line is long
        // gone (an allocation). Its Tx read comes < 32 packets after its write: lost only if
        // two of those ~16 writes land in its set (1 in 64): a few per cent.
        let cfg = PortConfig {
            layout: Layout::PageBound,
            llc: Some(LlcShape {
                sets_per_slice: 2048,
                slices: 2,
                ddio_ways: 2,
            }),
            ..config()
        };
        let mut s = PortStream::new(cfg).unwrap();
        s.by_ref().take(100_000).for_each(drop);
        let d = s.ddio().unwrap();
        assert!(
            d.read_misses * 20 < d.reads,
            "{} of {}",
            d.read_misses,
            d.reads
        );
        // Nearly every packet write allocates (the descriptor lines, rewritten every lap of a
        // 2 KiB ring, stay).
        assert!(d.allocations * 10 > s.packets() * 9, "{}", d.allocations);
    }

    #[test]
    fn sizes_are_drawn_in_proportion_to_their_weights() {
        let cfg = PortConfig {
            sizes: vec![60, 590, 1514],
            weights: vec![7.0, 4.0, 1.0],
            wire_shares: vec![1.0; 3],
            ..config()
        };
        let s = PortStream::new(cfg).unwrap();
        let writes: Vec<usize> = s
            .take(400_000)
            .filter(|t| (4..10).contains(&t.class) && t.class % 2 == 0)
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
    fn sizes_are_drawn_as_the_rule_on_u_draws_them() {
        // The integer draw (a look-up of k's top bits, else k against ceil(c x 2^53)) picks
        // what the rule on u = k / 2^53 picks: the first size whose cumulative weight c
        // exceeds u. Same random k on both sides, and every threshold and its neighbours
        // (a weight of 0 repeats one; 1e-18 moves one by less than a k).
        for weights in [
            vec![7.0, 4.0, 1.0],
            vec![1.0, 1e-18, 3.0, 0.0, 2.5],
            vec![0.58333, 0.33333, 0.08333],
        ] {
            let n = weights.len();
            let cfg = PortConfig {
                sizes: vec![60; n],
                weights: weights.clone(),
                wire_shares: vec![1.0; n],
                ..config()
            };
            let total: f64 = weights.iter().sum();
            let cumulative: Vec<f64> = weights
                .iter()
                .scan(0.0, |acc, w| {
                    *acc += w / total;
                    Some(*acc)
                })
                .collect();
            let rule = |k: u64| {
                let u = k as f64 / (1u64 << 53) as f64;
                cumulative.iter().filter(|&&c| u >= c).count().min(n - 1)
            };
            let mut arrivals = Arrivals::new(&cfg, Rng(3));
            let mut rng = Rng(3);
            for _ in 0..100_000 {
                let k = rng.next() >> 11;
                assert_eq!(arrivals.draw_size(), rule(k), "{weights:?} {k}");
            }
            for &t in &arrivals.thresholds {
                for k in [t.saturating_sub(1), t, t + 1]
                    .into_iter()
                    .filter(|&k| k >> 53 == 0)
                {
                    assert_eq!(size_of(&arrivals.thresholds, k), rule(k), "{weights:?} {k}");
                    let decided = arrivals.decided[(k >> 45) as usize];
                    assert!(decided == UNDECIDED || usize::from(decided) == rule(k));
                }
            }
            // Nearly every range of k is decided by its top bits (one per threshold is not).
            let undecided = arrivals.decided.iter().filter(|&&d| d == UNDECIDED).count();
            assert!(undecided < n, "{undecided}");
        }
    }

    #[test]
    fn each_packet_arrives_its_own_wire_time_after_the_one_before() {
        // 60 B and 1514 B frames at 10 ns mean spacing, wire shares 0.5 and 1.5: a packet's
        // write may start (not_before) its own share of 10 ns after the previous packet's.
        let cfg = PortConfig {
            sizes: vec![60, 1514],
            weights: vec![1.0, 1.0],
            wire_shares: vec![0.5, 1.5],
            ns_per_packet: 10.0,
            ..config()
        };
        let s = PortStream::new(cfg).unwrap();
        let writes: Vec<Txn> = s
            .take(40_000)
            .filter(|t| t.class == packet_write_class(0) || t.class == packet_write_class(1))
            .collect();
        let mut previous = 0.0;
        for t in &writes {
            let share = if t.class == packet_write_class(0) {
                0.5
            } else {
                1.5
            };
            assert!((t.not_before - previous - 10.0 * share).abs() < 1e-6);
            previous = t.not_before;
        }
        // Equal weights: the mean spacing is the mean share, 1.0 x 10 ns.
        let mean = previous / writes.len() as f64;
        assert!((mean - 10.0).abs() < 0.2, "{mean}");
    }

    #[test]
    fn impossible_setups_are_rejected() {
        for cfg in [
            PortConfig {
                pool: 300,
                ..config()
            },
            PortConfig {
                tx_backlog: 64,
                ..config()
            },
            PortConfig {
                poll_batch: 33,
                ..config()
            },
            PortConfig {
                iova: Iova::Pa,
                host_pages: 100,
                ..config()
            },
        ] {
            assert!(PortStream::new(cfg).is_err());
        }
    }
}
