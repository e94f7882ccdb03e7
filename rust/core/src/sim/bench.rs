//! pcie-bench's DMA micro-benchmarks on the engine ([`simulate`]): its address generator
//! (window units that never cross 4 KiB, visited in order or at random), its read/write
//! mixes and the one-queue machine and IOMMU its parameters describe.

use crate::error::CoreError;
use crate::iommu::iotlb::{CacheShape, Translator};
use crate::rng::Rng;

use super::engine::{check, run, Machine, Measure, SimResult, Txn, TxnClass};
use super::translation::{Iommu, Walks};

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
#[cfg_attr(feature = "pyo3", derive(pyo3::FromPyObject), pyo3(from_item_all))]
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
    /// Bytes of window one transfer takes: roundup64(size + offset).
    fn unit(size: u64, offset: u64) -> u64 {
        (size + offset).div_ceil(64) * 64
    }

    pub fn new(p: &SimParams) -> Result<Self, CoreError> {
        let unit = Self::unit(p.size, p.host_offset);
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

    /// Start address of every unit of one period of the window that a transfer may use (those
    /// not crossing 4 KiB), in window order. Both patterns visit exactly these units, each as
    /// often, and a transfer's TLP split depends only on its address modulo 4 KiB, which
    /// repeats every lcm(unit, 4 KiB) bytes: these addresses stand for the whole window.
    pub fn period_starts(size: u64, offset: u64, window: u64) -> Result<Vec<u64>, CoreError> {
        if size == 0 {
            return Err(CoreError::BadParameter {
                what: "size must be >= 1",
            });
        }
        let unit = Self::unit(size, offset);
        let per_period = PAGE_4K / gcd(unit, PAGE_4K);
        let starts: Vec<u64> = (0..(window / unit).min(per_period))
            .map(|i| i * unit + offset)
            .filter(|&addr| !Self::crosses(addr, size))
            .collect();
        if starts.is_empty() {
            return Err(CoreError::EmptyWindow { window, unit });
        }
        Ok(starts)
    }

    /// The next transfer's start address relative to the window.
    pub fn next_addr(&mut self) -> u64 {
        loop {
            let index = match self.pattern {
                Pattern::Sequential => {
                    // The units in order, wrapping at the window's end (no division).
                    let i = self.next_seq;
                    self.next_seq = if i + 1 == self.units { 0 } else { i + 1 };
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

/// Greatest common divisor (Euclid).
fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// What only a pcie-bench run can get wrong; costs, rates, tags and credits are checked by
/// [`run`] for every stream.
fn validate(p: &SimParams) -> Result<(), CoreError> {
    if p.size == 0 || p.transactions == 0 {
        return Err(CoreError::BadParameter {
            what: "size and transactions must be >= 1",
        });
    }
    Ok(())
}

/// The two transaction classes of a pcie-bench run (0: read, 1: write).
fn bench_classes(p: &SimParams) -> [TxnClass; 2] {
    let common = TxnClass {
        read: true,
        queue: 0,
        tags: 1,
        issue_ns: p.issue_read_ns,
        datapath_ns: p.datapath_ns,
        up_bytes: p.read_up_bytes,
        down_bytes: p.read_down_bytes,
        write_ns: 0.0,
        hit_ns: p.hit_latency_ns,
        miss_ns: p.miss_latency_ns,
    };
    let write = TxnClass {
        read: false,
        issue_ns: p.issue_write_ns,
        up_bytes: p.write_up_bytes,
        down_bytes: 0.0,
        write_ns: p.write_ns,
        ..common
    };
    [common, write]
}

/// The machine and IOMMU a pcie-bench run's parameters describe.
fn bench_machine(p: &SimParams) -> Result<(Machine, Option<Iommu>), CoreError> {
    let machine = Machine {
        tags: p.tags,
        fixed_latency_ns: p.fixed_latency_ns,
        up_bytes_per_ns: p.up_bytes_per_ns,
        down_bytes_per_ns: p.down_bytes_per_ns,
        warm_bytes: p.warm_bytes,
        posted_credits: p.posted_credits,
        tags_from_link: false,
        lookahead: 1,
    };
    let iommu = if p.iotlb_entries > 0 {
        let shape = CacheShape::lru(p.iotlb_entries);
        let walks = Walks {
            walk_ns: p.walk_ns,
            walk_busy_ns: p.walk_busy_ns,
            walkers: p.walkers,
        };
        Some(Iommu::new(
            Translator::new(shape, 0, p.page_bytes, p.window, p.seed)?,
            walks,
        )?)
    } else {
        None
    };
    Ok((machine, iommu))
}

/// Runs one benchmark and returns its elapsed time (and per-transaction latencies if asked).
pub fn simulate(p: &SimParams) -> Result<SimResult, CoreError> {
    validate(p)?;
    let mut addresses = Addresses::new(p)?;
    let (machine, mut iommu) = bench_machine(p)?;
    let classes = bench_classes(p);
    let (machine, iommu) = (&machine, iommu.as_mut());
    let txn = |addr, class, measure| Txn {
        addr,
        bytes: p.size,
        class,
        not_before: 0.0,
        measure,
    };
    // One stream per mix, so the transaction loop decides nothing per transaction but the
    // direction of a mixed one; a one-direction mix runs over its own class only (the engine
    // then plays it with a loop for that direction), checked with both as a mixed run is.
    check(machine, &classes)?;
    let [read, write] = classes;
    let n = p.transactions;
    let record = p.record_latencies;
    match p.ops {
        OpMix::Read | OpMix::Write => {
            let class = if p.ops == OpMix::Read { read } else { write };
            let txns = (0..n).map(|_| txn(addresses.next_addr(), 0, Measure::Own));
            run(machine, &[class], iommu, txns, record)
        }
        OpMix::Alternate => {
            // Odd transactions read (class 0), even ones write (class 1).
            let txns =
                (0..n).map(|i| txn(addresses.next_addr(), usize::from(i % 2 == 0), Measure::Own));
            run(machine, &classes, iommu, txns, record)
        }
        OpMix::WriteThenRead => {
            // A write to a fresh address, then the read of it (measured from the write).
            let mut written = 0;
            let txns = (0..n).map(|i| {
                if i % 2 == 0 {
                    written = addresses.next_addr();
                    txn(written, 1, Measure::Skip)
                } else {
                    txn(written, 0, Measure::SincePrevious)
                }
            });
            run(machine, &classes, iommu, txns, record)
        }
    }
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

    /// Writes per second over 64 MiB of 4 KiB pages through 64 IOTLB entries, where nearly
    /// every write misses: the rate the page walkers allow.
    fn missing_writes_per_s(walk_ns: f64, walk_busy_ns: f64, walkers: u32, credits: u32) -> f64 {
        let p = SimParams {
            ops: OpMix::Write,
            tags: 64,
            iotlb_entries: 64,
            window: 64 << 20,
            walk_ns,
            walk_busy_ns,
            walkers,
            posted_credits: credits,
            transactions: 200_000,
            record_latencies: false,
            ..base()
        };
        simulate(&p).unwrap().rate_per_s()
    }

    #[test]
    fn page_walkers_bound_writes_when_every_access_misses() {
        // 4 walkers of 200 ns retire 20 M writes/s, and the posted credits pass that back to
        // the link.
        let rate = missing_writes_per_s(200.0, 200.0, 4, 32);
        assert!((rate / 20e6 - 1.0).abs() < 0.02, "{rate}");
    }

    #[test]
    fn a_walker_takes_the_next_miss_after_its_busy_time_not_after_the_walk() {
        // One walker busy 50 ns per miss, walks of 300 ns: 20 M misses/s, each 300 ns late.
        let rate = missing_writes_per_s(300.0, 50.0, 1, 64);
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
    fn one_period_of_starts_stands_for_the_window() {
        // 416 B at offset 0: 448 B units, 18 in 8 KiB; the tenth (4032..4447) crosses 4 KiB.
        let starts = Addresses::period_starts(416, 0, 8192).unwrap();
        assert_eq!(starts.len(), 17);
        assert_eq!(&starts[8..10], &[3584, 4480]);
        // 64 B units repeat every 4 KiB: 64 starts however large the window.
        assert_eq!(Addresses::period_starts(64, 0, 64 << 20).unwrap().len(), 64);
        // 1536 B in 8 KiB: units at 0, 1536, (3072 crosses), 4608, 6144.
        assert_eq!(
            Addresses::period_starts(1536, 0, 8192).unwrap(),
            vec![0, 1536, 4608, 6144]
        );
        assert!(Addresses::period_starts(0, 0, 8192).is_err());
        assert!(Addresses::period_starts(64, 0, 32).is_err());
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
