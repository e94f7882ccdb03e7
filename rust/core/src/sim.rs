//! A DMA-engine / root-complex simulator that replays pcie-bench's micro-benchmarks.
//!
//! Transactions are issued in order by a device that holds at most `tags` of them in flight.
//! Each one passes, in order: its DMA engine (reads and writes have separate engines, each a
//! serial per-transaction cost), the device's shared data path (a serial cost per transaction,
//! whichever its direction), the upstream link (its request or write TLP bytes), the IOMMU (an
//! LRU IOTLB; a miss waits for one of `walkers` page walkers, occupies it for `walk_busy_ns` and
//! is translated `walk_ns` after the walk began), then for a read the
//! host memory (latency depending on whether the line is warm in the cache) and the downstream
//! link (completion bytes). Posted writes are retired by the root complex (a serial `write_ns`
//! per write) and occupy one of `posted_credits` buffer slots until then, which back-pressures
//! the link the way PCIe flow control does. Times are in nanoseconds.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use crate::error::CoreError;

/// Order in which window units are visited (pcie-bench's `PAT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    Sequential,
    Random,
}

/// What each transaction does (`BW_DMA_RD`, `BW_DMA_WR`, `BW_DMA_RW`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpMix {
    Read,
    Write,
    /// Odd transactions read, even ones write.
    Alternate,
    /// A write, then a read of the same address once the write is done (`LAT_DMA_WRRD`).
    WriteThenRead,
}

/// Everything one simulation run needs; the Python side fills it from profiles and the TLP model.
#[derive(Debug, Clone, PartialEq)]
pub struct SimParams {
    pub transactions: u64,
    pub size: u64,
    pub host_offset: u64,
    pub window: u64,
    pub pattern: Pattern,
    pub ops: OpMix,
    pub seed: u64,
    pub tags: u32,
    pub issue_read_ns: f64,
    pub issue_write_ns: f64,
    pub datapath_ns: f64,
    pub fixed_latency_ns: f64,
    pub read_up_bytes: f64,
    pub read_down_bytes: f64,
    pub write_up_bytes: f64,
    pub up_bytes_per_ns: f64,
    pub down_bytes_per_ns: f64,
    pub warm_bytes: u64,
    pub hit_latency_ns: f64,
    pub miss_latency_ns: f64,
    pub write_ns: f64,
    pub posted_credits: u32,
    pub iotlb_entries: u32,
    pub page_bytes: u64,
    pub walk_ns: f64,
    pub walk_busy_ns: f64,
    pub walkers: u32,
    pub record_latencies: bool,
}

/// What a run measured.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SimResult {
    pub elapsed_ns: f64,
    pub transactions: u64,
    pub iotlb_misses: u64,
    pub cache_hits: u64,
    pub latencies_ns: Vec<f64>,
}

impl SimResult {
    /// Transactions per second over the whole run.
    pub fn rate_per_s(&self) -> f64 {
        self.transactions as f64 / self.elapsed_ns * 1e9
    }
}

/// A time that can live in a heap (never NaN here: all inputs are validated finite).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Time(f64);

impl Eq for Time {}

impl PartialOrd for Time {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Time {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// A pool of identical servers (tags, page walkers): take the earliest free, give it back busy.
struct Pool(BinaryHeap<Reverse<Time>>);

impl Pool {
    fn new(servers: u32) -> Self {
        Self((0..servers).map(|_| Reverse(Time(0.0))).collect())
    }

    /// Occupies the server that frees first from `ready` on; returns when service starts.
    fn acquire(&mut self, ready: f64) -> f64 {
        let Reverse(Time(free)) = self.0.pop().expect("pools are never empty");
        free.max(ready)
    }

    fn release(&mut self, at: f64) {
        self.0.push(Reverse(Time(at)));
    }
}

/// SplitMix64: small, fast and good enough for drawing window units.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        // Lemire's multiply-shift; the tiny bias is irrelevant for unit selection.
        ((u128::from(self.next()) * u128::from(n)) >> 64) as u64
    }
}

/// pcie-bench's address generator: units of roundup64(size + offset) bytes, never crossing 4 KiB.
pub struct Addresses {
    unit: u64,
    units: u64,
    offset: u64,
    size: u64,
    pattern: Pattern,
    next_seq: u64,
    rng: Rng,
}

const PAGE_4K: u64 = 4096;

impl Addresses {
    pub fn new(p: &SimParams) -> Result<Self, CoreError> {
        let unit = (p.size + p.host_offset).div_ceil(64) * 64;
        let units = p.window / unit.max(1);
        let fits =
            (0..units.min(PAGE_4K)).any(|i| !Self::crosses(i * unit + p.host_offset, p.size));
        if units == 0 || !fits {
            return Err(CoreError::EmptyWindow {
                window: p.window,
                unit,
            });
        }
        Ok(Self {
            unit,
            units,
            offset: p.host_offset,
            size: p.size,
            pattern: p.pattern,
            next_seq: 0,
            rng: Rng(p.seed),
        })
    }

    fn crosses(addr: u64, size: u64) -> bool {
        addr / PAGE_4K != (addr + size - 1) / PAGE_4K
    }

    /// The next transfer's start address relative to the window.
    pub fn next_addr(&mut self) -> u64 {
        loop {
            let index = match self.pattern {
                Pattern::Sequential => {
                    let i = self.next_seq % self.units;
                    self.next_seq += 1;
                    i
                }
                Pattern::Random => self.rng.below(self.units),
            };
            let addr = index * self.unit + self.offset;
            if !Self::crosses(addr, self.size) {
                return addr;
            }
        }
    }
}

/// A fully associative IOTLB with exact LRU replacement, indexed by page number in the window.
struct Iotlb {
    slot_of_page: Vec<u32>,
    page_of_slot: Vec<u64>,
    prev: Vec<u32>,
    next: Vec<u32>,
    head: u32,
    tail: u32,
    used: u32,
}

const NONE: u32 = u32::MAX;

impl Iotlb {
    fn new(entries: u32, pages: u64) -> Self {
        let n = entries as usize;
        Self {
            slot_of_page: vec![NONE; pages as usize],
            page_of_slot: vec![0; n],
            prev: vec![NONE; n],
            next: vec![NONE; n],
            head: NONE,
            tail: NONE,
            used: 0,
        }
    }

    fn unlink(&mut self, s: u32) {
        let (p, n) = (self.prev[s as usize], self.next[s as usize]);
        if p == NONE {
            self.head = n
        } else {
            self.next[p as usize] = n
        }
        if n == NONE {
            self.tail = p
        } else {
            self.prev[n as usize] = p
        }
    }

    fn push_front(&mut self, s: u32) {
        self.prev[s as usize] = NONE;
        self.next[s as usize] = self.head;
        if self.head != NONE {
            self.prev[self.head as usize] = s;
        }
        self.head = s;
        if self.tail == NONE {
            self.tail = s;
        }
    }

    /// Looks `page` up; true on a hit. A miss installs it, evicting the least recently used.
    fn access(&mut self, page: u64) -> bool {
        let slot = self.slot_of_page[page as usize];
        if slot != NONE {
            self.unlink(slot);
            self.push_front(slot);
            return true;
        }
        let slot = if self.used < self.page_of_slot.len() as u32 {
            self.used += 1;
            self.used - 1
        } else {
            let victim = self.tail;
            self.unlink(victim);
            self.slot_of_page[self.page_of_slot[victim as usize] as usize] = NONE;
            victim
        };
        self.page_of_slot[slot as usize] = page;
        self.slot_of_page[page as usize] = slot;
        self.push_front(slot);
        false
    }
}

fn validate(p: &SimParams) -> Result<(), CoreError> {
    let finite = [
        p.issue_read_ns,
        p.issue_write_ns,
        p.datapath_ns,
        p.fixed_latency_ns,
        p.read_up_bytes,
        p.read_down_bytes,
        p.write_up_bytes,
        p.hit_latency_ns,
        p.miss_latency_ns,
        p.write_ns,
        p.walk_ns,
        p.walk_busy_ns,
    ];
    if finite.iter().any(|v| !v.is_finite() || *v < 0.0)
        || !(p.up_bytes_per_ns > 0.0 && p.down_bytes_per_ns > 0.0)
    {
        return Err(CoreError::BadParameter {
            what: "times, byte counts and rates must be finite, >= 0 (rates > 0)",
        });
    }
    if p.tags == 0 || p.posted_credits == 0 || p.size == 0 || p.transactions == 0 {
        return Err(CoreError::BadParameter {
            what: "tags, posted_credits, size and transactions must be >= 1",
        });
    }
    if p.iotlb_entries > 0 && (p.walkers == 0 || !p.page_bytes.is_power_of_two()) {
        return Err(CoreError::BadParameter {
            what: "an IOTLB needs walkers >= 1 and a power-of-two page size",
        });
    }
    Ok(())
}

/// Runs one benchmark and returns its elapsed time (and per-transaction latencies if asked).
pub fn simulate(p: &SimParams) -> Result<SimResult, CoreError> {
    validate(p)?;
    let mut addresses = Addresses::new(p)?;
    let mut iotlb = (p.iotlb_entries > 0)
        .then(|| Iotlb::new(p.iotlb_entries, p.window.div_ceil(p.page_bytes) + 1));
    let mut tags = Pool::new(p.tags);
    let mut walkers = Pool::new(p.walkers.max(1));
    let mut credits = Pool::new(p.posted_credits);
    let (mut read_engine_free, mut write_engine_free, mut datapath_free) = (0.0f64, 0.0f64, 0.0f64);
    let (mut up_free, mut down_free, mut rc_free) = (0.0f64, 0.0f64, 0.0f64);
    let mut result = SimResult {
        transactions: p.transactions,
        ..SimResult::default()
    };
    if p.record_latencies {
        result.latencies_ns.reserve(p.transactions as usize);
    }
    let mut last_done = 0.0f64;
    let mut pending_read_addr = None;
    let mut pair_start = 0.0f64;
    for i in 0..p.transactions {
        let read = match p.ops {
            OpMix::Read => true,
            OpMix::Write => false,
            OpMix::Alternate | OpMix::WriteThenRead => i % 2 == 1,
        };
        let addr = match (p.ops, pending_read_addr.take()) {
            (OpMix::WriteThenRead, Some(a)) => a,
            _ => addresses.next_addr(),
        };
        let (engine_free, issue_ns) = if read {
            (&mut read_engine_free, p.issue_read_ns)
        } else {
            (&mut write_engine_free, p.issue_write_ns)
        };
        let start = tags.acquire(*engine_free);
        if p.ops == OpMix::WriteThenRead && !read {
            pending_read_addr = Some(addr);
            pair_start = start;
        }
        *engine_free = start + issue_ns;
        datapath_free = datapath_free.max(*engine_free) + p.datapath_ns;
        let up_bytes = if read {
            p.read_up_bytes
        } else {
            p.write_up_bytes
        };
        let credit_ready = if read { 0.0 } else { credits.acquire(0.0) };
        up_free = up_free.max(datapath_free).max(credit_ready) + up_bytes / p.up_bytes_per_ns;
        let mut t = up_free;
        if let Some(tlb) = iotlb.as_mut() {
            if !tlb.access(addr / p.page_bytes) {
                result.iotlb_misses += 1;
                let began = walkers.acquire(t);
                walkers.release(began + p.walk_busy_ns);
                t = began + p.walk_ns;
            }
        }
        let done = if read {
            let warm = addr < p.warm_bytes;
            result.cache_hits += u64::from(warm);
            let ready = t + if warm {
                p.hit_latency_ns
            } else {
                p.miss_latency_ns
            };
            down_free = down_free.max(ready) + p.read_down_bytes / p.down_bytes_per_ns;
            down_free
        } else {
            rc_free = rc_free.max(t) + p.write_ns;
            credits.release(rc_free);
            up_free
        };
        let finished = done + p.fixed_latency_ns;
        tags.release(finished);
        last_done = last_done.max(finished);
        if p.record_latencies && (p.ops != OpMix::WriteThenRead || read) {
            let began = if p.ops == OpMix::WriteThenRead {
                pair_start
            } else {
                start
            };
            result.latencies_ns.push(finished - began);
        }
    }
    result.elapsed_ns = last_done;
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fast device and link: only what a test sets matters.
    fn base() -> SimParams {
        SimParams {
            transactions: 10_000,
            size: 64,
            host_offset: 0,
            window: 8192,
            pattern: Pattern::Random,
            ops: OpMix::Read,
            seed: 1,
            tags: 1,
            issue_read_ns: 0.0,
            issue_write_ns: 0.0,
            datapath_ns: 0.0,
            fixed_latency_ns: 0.0,
            read_up_bytes: 24.0,
            read_down_bytes: 84.0,
            write_up_bytes: 88.0,
            up_bytes_per_ns: 8.0,
            down_bytes_per_ns: 8.0,
            warm_bytes: u64::MAX,
            hit_latency_ns: 500.0,
            miss_latency_ns: 600.0,
            write_ns: 0.0,
            posted_credits: 1024,
            iotlb_entries: 0,
            page_bytes: 4096,
            walk_ns: 0.0,
            walk_busy_ns: 0.0,
            walkers: 1,
            record_latencies: true,
        }
    }

    #[test]
    fn single_read_latency_adds_up_every_stage() {
        // 10 (engine) + 24/8 (request) + 500 (warm line) + 84/8 (completion) + 20 (fixed).
        let p = SimParams {
            issue_read_ns: 10.0,
            fixed_latency_ns: 20.0,
            transactions: 3,
            ..base()
        };
        let r = simulate(&p).unwrap();
        for lat in &r.latencies_ns {
            assert!((lat - 543.5).abs() < 1e-9, "{lat}");
        }
    }

    #[test]
    fn reads_are_bound_by_tags_over_latency() {
        // 32 tags, ~514 ns round trip: 32 / 514 ns = 62.3 M reads/s.
        let p = SimParams {
            tags: 32,
            transactions: 200_000,
            ..base()
        };
        let r = simulate(&p).unwrap();
        let expected = 32.0 / (3.0 + 500.0 + 10.5) * 1e9;
        assert!(
            (r.rate_per_s() / expected - 1.0).abs() < 0.01,
            "{}",
            r.rate_per_s()
        );
    }

    #[test]
    fn large_reads_are_bound_by_the_completion_link() {
        let p = SimParams {
            tags: 64,
            read_down_bytes: 2000.0,
            transactions: 100_000,
            ..base()
        };
        let r = simulate(&p).unwrap();
        assert!((r.rate_per_s() / (8.0 / 2000.0 * 1e9) - 1.0).abs() < 0.01);
    }

    #[test]
    fn writes_are_bound_by_the_engine() {
        let p = SimParams {
            ops: OpMix::Write,
            tags: 64,
            issue_write_ns: 21.0,
            ..base()
        };
        let r = simulate(&p).unwrap();
        assert!((r.rate_per_s() / (1e9 / 21.0) - 1.0).abs() < 0.01);
    }

    #[test]
    fn reads_and_writes_overlap_on_separate_engines_but_share_the_data_path() {
        // Alternating 20 ns reads and 20 ns writes on separate engines: a pair every 20 ns,
        // unless the shared 15 ns data path binds (a pair every 30 ns).
        let alternate = |datapath_ns| SimParams {
            ops: OpMix::Alternate,
            tags: 64,
            issue_read_ns: 20.0,
            issue_write_ns: 20.0,
            datapath_ns,
            hit_latency_ns: 0.0,
            transactions: 100_000,
            record_latencies: false,
            ..base()
        };
        let pairs_per_s = |r: SimResult| r.rate_per_s() / 2.0;
        let free = pairs_per_s(simulate(&alternate(0.0)).unwrap());
        let shared = pairs_per_s(simulate(&alternate(15.0)).unwrap());
        assert!((free / 50e6 - 1.0).abs() < 0.01, "{free}");
        assert!((shared / (1e9 / 30.0) - 1.0).abs() < 0.01, "{shared}");
    }

    #[test]
    fn cold_lines_take_the_miss_latency() {
        let p = SimParams {
            warm_bytes: 0,
            transactions: 5,
            ..base()
        };
        let r = simulate(&p).unwrap();
        assert_eq!(r.cache_hits, 0);
        assert!((r.latencies_ns[0] - 613.5).abs() < 1e-9);
    }

    #[test]
    fn iotlb_within_reach_only_takes_compulsory_misses() {
        // 256 KiB window = 64 pages, 64 entries: each page misses once.
        let p = SimParams {
            iotlb_entries: 64,
            window: 256 * 1024,
            transactions: 100_000,
            record_latencies: false,
            ..base()
        };
        assert_eq!(simulate(&p).unwrap().iotlb_misses, 64);
    }

    #[test]
    fn iotlb_beyond_reach_misses_like_random_lru() {
        // 1 MiB = 256 pages, 64 entries, uniform random pages: P(miss) = 1 - 64/256 = 0.75.
        let p = SimParams {
            iotlb_entries: 64,
            window: 1 << 20,
            transactions: 200_000,
            record_latencies: false,
            ..base()
        };
        let misses = simulate(&p).unwrap().iotlb_misses as f64 / 200_000.0;
        assert!((misses - 0.75).abs() < 0.01, "{misses}");
    }

    #[test]
    fn page_walkers_bound_writes_when_every_access_misses() {
        // 64 MiB of 4 KiB pages through 64 entries: nearly every write misses; 4 walkers of
        // 200 ns retire 20 M writes/s, and the posted credits pass that back to the link.
        let p = SimParams {
            ops: OpMix::Write,
            tags: 64,
            iotlb_entries: 64,
            window: 64 << 20,
            walk_ns: 200.0,
            walk_busy_ns: 200.0,
            walkers: 4,
            posted_credits: 32,
            transactions: 200_000,
            record_latencies: false,
            ..base()
        };
        let rate = simulate(&p).unwrap().rate_per_s();
        assert!((rate / 20e6 - 1.0).abs() < 0.02, "{rate}");
    }

    #[test]
    fn a_walker_takes_the_next_miss_after_its_busy_time_not_after_the_walk() {
        // One walker busy 50 ns per miss, walks of 300 ns: 20 M misses/s, each 300 ns late.
        let p = SimParams {
            ops: OpMix::Write,
            tags: 64,
            iotlb_entries: 64,
            window: 64 << 20,
            walk_ns: 300.0,
            walk_busy_ns: 50.0,
            walkers: 1,
            posted_credits: 64,
            transactions: 200_000,
            record_latencies: false,
            ..base()
        };
        let rate = simulate(&p).unwrap().rate_per_s();
        assert!((rate / 20e6 - 1.0).abs() < 0.02, "{rate}");
    }

    #[test]
    fn write_then_read_latency_spans_both() {
        let p = SimParams {
            ops: OpMix::WriteThenRead,
            transactions: 4,
            ..base()
        };
        let r = simulate(&p).unwrap();
        // write: 88/8 = 11 on the link; read: 3 + 500 + 10.5.
        assert_eq!(r.latencies_ns.len(), 2);
        assert!(
            (r.latencies_ns[0] - 524.5).abs() < 1e-9,
            "{}",
            r.latencies_ns[0]
        );
    }

    #[test]
    fn addresses_stay_within_4k_pages_and_the_window() {
        let p = SimParams {
            size: 1000,
            host_offset: 8,
            window: 64 * 1024,
            ..base()
        };
        let mut a = Addresses::new(&p).unwrap();
        for _ in 0..10_000 {
            let addr = a.next_addr();
            assert_eq!(addr / 4096, (addr + 999) / 4096);
            assert!(addr + 1000 <= 64 * 1024);
            assert_eq!(addr % 64, 8);
        }
    }

    #[test]
    fn bad_parameters_are_reported() {
        assert!(simulate(&SimParams { tags: 0, ..base() }).is_err());
        assert!(simulate(&SimParams {
            up_bytes_per_ns: 0.0,
            ..base()
        })
        .is_err());
        assert!(matches!(
            simulate(&SimParams {
                window: 32,
                ..base()
            }),
            Err(CoreError::EmptyWindow { .. })
        ));
    }
}
