//! A DPDK port's stream ([`crate::iommu::port_stream`]) run through the IOMMU: warmed up by some
//! packets (counts zeroed after them, the caches keeping what they hold), then either counted
//! without timing ([`count_misses`]: IOTLB and page-walk-cache misses, pages touched, DDIO
//! losses) or played through the device, link and IOMMU ([`simulate`], [`crate::sim::run`]).
//! A timed run reports how steady its rate was ([`RatePrecision`], batch means) and, given a
//! target, ends as soon as its rate is that precise ([`PortRun::rel_error`]).

use std::cell::Cell;

use crate::error::CoreError;
use crate::iommu::iotlb::{CacheShape, Translator};
use crate::iommu::pages::PagesTouched;
use crate::iommu::port_stream::config::PortConfig;
use crate::iommu::port_stream::{PortStream, TxnSink};
use crate::sim::{self, Iommu, Machine, SimResult, TxnClass, Walks};

/// How a port's stream is run: the IOMMU's page-walk cache, the packets that warm it and the
/// IOTLB up, and the packets counted after them. A timed run with `rel_error` > 0 counts at
/// least `min_packets` and at most `packets`, ending at the first poll after `min_packets`
/// at which its rate's relative standard error ([`RatePrecision`]) is at most `rel_error`;
/// with 0 (the default) it counts exactly `packets`.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "pyo3", derive(pyo3::FromPyObject), pyo3(from_item_all))]
pub struct PortRun {
    pub pwc_entries: u32,
    pub warmup: u64,
    pub packets: u64,
    #[cfg_attr(feature = "pyo3", pyo3(default))]
    pub rel_error: f64,
    #[cfg_attr(feature = "pyo3", pyo3(default))]
    pub min_packets: u64,
}

/// Batches of a run's batch means ([`RatePrecision`]): 10, the smallest count the usual
/// guidance for batch means accepts (Schmeiser, "Batch size effects in the analysis of
/// simulation output", Operations Research 30(3), 1982: 10 to 30 batches).
pub const BATCHES: usize = 10;

/// How precise a timed run's rate is, by batch means: the run's transactions served, observed
/// every [`sim::OBSERVE_EVERY`], cut into [`BATCHES`] batches of equal transaction counts
/// (the start transient in the first); `rel_stderr` is the standard error of the mean time per
/// transaction over the batches, relative to that mean, which is the relative standard error
/// of the run's rate to first order. 0 batches (and `rel_stderr` 0): the run was too short to
/// judge (fewer than 2 observations per batch).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RatePrecision {
    pub batches: u32,
    pub rel_stderr: f64,
}

/// The most observations a run keeps: a run this long (about 10^6 transactions, past
/// `PACKETS`' 200 000 packets) keeps every other one from then on, so memory stays bounded
/// however long a run is asked to be.
const MAX_OBSERVATIONS: usize = 1024;

/// A timed run's observations: (transactions served, time the last of them finished), one at
/// every `every`-th call of the run's observer.
#[derive(Debug)]
struct Observations {
    at: Vec<(u64, f64)>,
    every: u64,
}

impl Default for Observations {
    fn default() -> Self {
        Self {
            at: Vec::new(),
            every: 1,
        }
    }
}

impl Observations {
    /// Keeps the observer's report of `served` transactions, the last finished at `finished`.
    /// The kept ones stay evenly spaced: at the cap, every other is dropped and the spacing
    /// doubles.
    fn note(&mut self, served: u64, finished: f64) {
        if !(served / sim::OBSERVE_EVERY).is_multiple_of(self.every) {
            return;
        }
        self.at.push((served, finished));
        if self.at.len() == MAX_OBSERVATIONS {
            self.at = self.at.iter().skip(1).step_by(2).copied().collect();
            self.every *= 2;
        }
    }

    /// The batch means of the observations so far, if every batch holds at least two.
    fn precision(&self) -> Option<RatePrecision> {
        let intervals = self.at.len();
        if intervals < 2 * BATCHES {
            return None;
        }
        let point = |i: usize| if i == 0 { (0, 0.0) } else { self.at[i - 1] };
        let per_txn: Vec<f64> = (0..BATCHES)
            .map(|j| {
                let (n0, t0) = point(j * intervals / BATCHES);
                let (n1, t1) = point((j + 1) * intervals / BATCHES);
                (t1 - t0) / (n1 - n0) as f64
            })
            .collect();
        let b = BATCHES as f64;
        let mean = per_txn.iter().sum::<f64>() / b;
        let var = per_txn.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (b - 1.0);
        let rel_stderr = if mean > 0.0 {
            (var / b).sqrt() / mean
        } else {
            0.0
        };
        Some(RatePrecision {
            batches: BATCHES as u32,
            rel_stderr,
        })
    }
}

/// What the counted packets did: packets written into host memory and forwarded, their DMA
/// transactions, the IOMMU's misses, the distinct pages they touched (the warm-up's are not
/// counted: its marks are cleared with its counts) and the DDIO counters (zero without an LLC
/// model).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "pyo3", derive(pyo3::IntoPyObject))]
pub struct PortCounts {
    pub packets: u64,
    pub forwarded: u64,
    pub transactions: u64,
    pub iotlb_misses: u64,
    pub pwc_misses: u64,
    pub pages_touched: usize,
    pub ddio_allocations: u64,
    pub ddio_read_misses: u64,
    pub ddio_reads: u64,
}

/// The IOMMU's caches fed straight from the stream: translates every page of each
/// transaction and marks it touched, in the IOTLB's own page table (the stream counts the
/// transactions).
struct Translate {
    caches: Translator,
}

impl Translate {
    /// Marks and translates page number `page`, unless it is the page translated last (then
    /// it is marked and its look-up would change nothing).
    #[inline(always)]
    fn page(&mut self, page: u64) {
        if !self.caches.is_last(page) {
            self.caches.mark_and_lookup_new_page(page);
        }
    }
}

impl TxnSink for Translate {
    /// Counting takes no times (a timed run restarts the stream's clock after the warm-up).
    const TIMED: bool = false;

    #[inline(always)]
    fn txn(&mut self, addr: u64, bytes: u64, _class: usize, _not_before: f64) {
        // One walk over the transfer's pages both marks and translates them; most transfers
        // lie in one page and skip the loop.
        let (first, last) = self.caches.page_span(addr, bytes);
        self.page(first);
        if last != first {
            for page in first + 1..last + 1 {
                self.page(page);
            }
        }
    }

    #[inline(always)]
    fn txn_in_page(&mut self, addr: u64, bytes: u64, _class: usize, _not_before: f64) {
        let (first, last) = self.caches.page_span(addr, bytes);
        debug_assert_eq!(first, last, "a transfer said to lie in one page");
        self.page(first);
    }

    #[inline(always)]
    fn line(&mut self, addr: u64, _class: usize, _not_before: f64) {
        self.page(self.caches.page_of(addr));
    }
}

/// A port's stream and the IOMMU caches it runs through, warmed by `run.warmup` packets (the
/// counters zeroed after the warm-up).
fn warmed_stream(
    port: PortConfig,
    iotlb: CacheShape,
    run: &PortRun,
) -> Result<(PortStream, Translate), CoreError> {
    let (page_bytes, seed) = (port.page_bytes, port.seed);
    let mut stream = PortStream::new(port)?;
    let span = stream.span();
    let caches = Translator::new(iotlb, run.pwc_entries, page_bytes, span, seed)?;
    let mut sink = Translate { caches };
    stream.emit_packets(run.warmup, &mut sink);
    // The counts and marks zeroed after the warm-up; the caches keep what they hold.
    sink.caches.reset_counts();
    stream.reset_ddio_counts();
    Ok((stream, sink))
}

/// The stream's counts since `start` packets and `forwarded_before` forwarded ones.
fn counts_since(stream: &PortStream, start: u64, forwarded_before: u64) -> PortCounts {
    let (ddio_allocations, ddio_read_misses, ddio_reads) = stream
        .ddio()
        .map_or((0, 0, 0), |d| (d.allocations, d.read_misses, d.reads));
    PortCounts {
        packets: stream.packets() - start,
        forwarded: stream.forwarded() - forwarded_before,
        ddio_allocations,
        ddio_read_misses,
        ddio_reads,
        ..PortCounts::default()
    }
}

/// IOTLB misses and pages touched of a port's DMA stream after warm-up (no timing).
pub fn count_misses(
    port: PortConfig,
    iotlb: CacheShape,
    run: &PortRun,
) -> Result<PortCounts, CoreError> {
    let (mut stream, mut sink) = warmed_stream(port, iotlb, run)?;
    let (start, forwarded_before) = (stream.packets(), stream.forwarded());
    let transactions_before = stream.transactions();
    stream.emit_packets(run.packets, &mut sink);
    Ok(PortCounts {
        transactions: stream.transactions() - transactions_before,
        iotlb_misses: sink.caches.misses,
        pwc_misses: sink.caches.pwc_misses,
        pages_touched: sink.caches.pages_marked(),
        ..counts_since(&stream, start, forwarded_before)
    })
}

/// A port's stream after warm-up played through the device and link, and the IOMMU if
/// `with_iommu` (its walkers as `walks` say): the counts and the timed run. The IOTLB misses
/// are those in the order the IOMMU saw the transactions (link order, which the NIC's two
/// queues may interleave differently from the stream): the ones the walkers served.
pub fn simulate(
    port: PortConfig,
    iotlb: CacheShape,
    run: &PortRun,
    machine: &Machine,
    walks: Walks,
    with_iommu: bool,
    classes: &[TxnClass],
) -> Result<(PortCounts, SimResult, RatePrecision), CoreError> {
    let page_bytes = port.page_bytes;
    let (mut stream, warmed) = warmed_stream(port, iotlb, run)?;
    let mut touched = PagesTouched::new(page_bytes, stream.span())?;
    let mut iommu = Iommu::new(warmed.caches, walks)?;
    stream.restart_clock();
    let (start, forwarded_before) = (stream.packets(), stream.forwarded());
    let precise = Cell::new(false);
    let min = if run.rel_error > 0.0 {
        run.min_packets.min(run.packets)
    } else {
        run.packets
    };
    let txns = stream
        .take_packets_until(min, run.packets, || precise.get())
        .inspect(|t| touched.mark(t.addr, t.bytes));
    let mut seen = Observations::default();
    let mut observe = |served: u64, finished: f64| {
        seen.note(served, finished);
        if run.rel_error > 0.0 {
            // Judged afresh at each observation: the stream ends at the first poll after the
            // minimum at which the latest judgement holds, so what the run reports holds too.
            let steady = seen
                .precision()
                .is_some_and(|p| p.rel_stderr <= run.rel_error);
            precise.set(steady);
        }
    };
    let result = sim::run_observed(
        machine,
        classes,
        with_iommu.then_some(&mut iommu),
        txns,
        true,
        &mut observe,
    )?;
    let precision = seen.precision().unwrap_or_default();
    let counts = PortCounts {
        transactions: result.transactions,
        iotlb_misses: result.iotlb_misses,
        pwc_misses: if with_iommu {
            iommu.translator.pwc_misses
        } else {
            0
        },
        pages_touched: touched.count(),
        ..counts_since(&stream, start, forwarded_before)
    };
    Ok((counts, result, precision))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iommu::port_stream::tests::test_config;

    /// A NIC's classes for `sizes` packet sizes (rust/core/src/iommu/port_stream.rs numbers them):
    /// descriptor reads and write-backs, a packet write and read per size, a cold read per size.
    fn classes(sizes: usize) -> Vec<TxnClass> {
        let class = |read: bool, queue: usize, bytes: f64| TxnClass {
            read,
            queue,
            tags: u32::from(read),
            issue_ns: 0.0,
            datapath_ns: 0.0,
            up_bytes: if read { 24.0 } else { bytes + 24.0 },
            down_bytes: if read { bytes + 20.0 } else { 0.0 },
            write_ns: if read { 0.0 } else { 10.0 },
            hit_ns: 380.0,
            miss_ns: 380.0,
        };
        let mut out = vec![
            class(true, 0, 64.0),
            class(false, 0, 64.0),
            class(true, 1, 64.0),
            class(false, 1, 16.0),
        ];
        for _ in 0..sizes {
            out.extend([class(false, 0, 60.0), class(true, 1, 60.0)]);
        }
        out.extend((0..sizes).map(|_| class(true, 1, 60.0)));
        out
    }

    fn machine() -> Machine {
        Machine {
            tags: 64,
            fixed_latency_ns: 0.0,
            up_bytes_per_ns: 7.88,
            down_bytes_per_ns: 7.88,
            warm_bytes: u64::MAX,
            posted_credits: 64,
            tags_from_link: true,
            lookahead: 100,
        }
    }

    /// A 96-entry IOTLB with one walker busy 50 ns per walk: the e5-v4 calibration's shape.
    fn timed(port: PortConfig, run: &PortRun) -> (PortCounts, SimResult, RatePrecision) {
        let iotlb = CacheShape::lru(96);
        let walks = Walks {
            walk_ns: 320.0,
            walk_busy_ns: 50.0,
            walkers: 1,
        };
        let classes = classes(port.sizes.len());
        simulate(port, iotlb, run, &machine(), walks, true, &classes).unwrap()
    }

    fn run(packets: u64, rel_error: f64) -> PortRun {
        PortRun {
            pwc_entries: 0,
            warmup: 8192,
            packets,
            rel_error,
            min_packets: 8192,
        }
    }

    #[test]
    fn batch_means_of_a_steady_and_of_an_alternating_run() {
        // 20 observations 1024 transactions apart. Steady, 1 ns per transaction: every batch
        // the same, no error. Batches alternately 1 and 3 ns per transaction: mean 2, sample
        // standard deviation sqrt(10 / 9), so sqrt(10 / 9 / 10) / 2 = 1 / 6.
        let steady = Observations {
            at: (1..=20).map(|i| (i * 1024, (i * 1024) as f64)).collect(),
            every: 1,
        };
        assert_eq!(
            steady.precision().map(|p| (p.batches, p.rel_stderr)),
            Some((10, 0.0))
        );
        let mut t = 0.0;
        let alternating = Observations {
            at: (1..=20)
                .map(|i: u64| {
                    let ns_per_txn = [1.0, 3.0][usize::from(!((i - 1) / 2).is_multiple_of(2))];
                    t += 1024.0 * ns_per_txn;
                    (i * 1024, t)
                })
                .collect(),
            every: 1,
        };
        let p = alternating.precision().unwrap();
        assert!((p.rel_stderr - 1.0 / 6.0).abs() < 1e-12, "{p:?}");
        // Fewer than two observations per batch: too short to judge.
        let short = Observations {
            at: steady.at[..19].to_vec(),
            every: 1,
        };
        assert_eq!(short.precision(), None);
    }

    #[test]
    fn a_long_run_keeps_a_bounded_number_of_evenly_spaced_observations() {
        // 3000 reports 1024 transactions apart: the cap halves the kept ones at the 1024th
        // report (every 2nd kept from then on) and at the 2048th (every 4th), leaving 750,
        // all multiples of 4 x 1024, the last report's among them.
        let mut seen = Observations::default();
        for k in 1..=3000u64 {
            seen.note(k * 1024, k as f64);
        }
        assert_eq!((seen.at.len(), seen.every), (750, 4));
        assert_eq!(seen.at.first(), Some(&(4 * 1024, 4.0)));
        assert_eq!(seen.at.last(), Some(&(3000 * 1024, 3000.0)));
        assert!(seen.at.windows(2).all(|w| w[1].0 - w[0].0 == 4 * 1024));
    }

    #[test]
    fn a_run_without_a_target_counts_every_packet_asked_for() {
        // rel_error 0: exactly `packets`, rounded up to a whole poll (32); a target that is
        // never met runs the same stream to the same end, bit for bit.
        let (counts, result, precision) = timed(test_config(), &run(50_000, 0.0));
        assert!((50_000..50_032).contains(&counts.packets), "{counts:?}");
        assert_eq!(precision.batches, 10);
        let (never, never_result, _) = timed(test_config(), &run(50_000, 1e-300));
        assert_eq!((never, never_result), (counts, result));
    }

    #[test]
    fn a_run_with_a_target_ends_once_its_rate_is_that_precise() {
        // Two sizes drawn per packet (60 B and 1514 B, 7:1) make the rate vary from batch to
        // batch. With a 1 % target the run ends after its minimum but long before 10^6 packets,
        // and the error it reports meets the target; a 0.1 % target needs more packets and
        // reports less error.
        let port = PortConfig {
            sizes: vec![60, 1514],
            weights: vec![7.0, 1.0],
            wire_shares: vec![0.3, 3.7],
            ..test_config()
        };
        let (loose, _, loose_p) = timed(port.clone(), &run(1_000_000, 0.01));
        assert!((8192..200_000).contains(&loose.packets), "{loose:?}");
        assert!(loose_p.rel_stderr <= 0.01, "{loose_p:?}");
        let (tight, _, tight_p) = timed(port, &run(1_000_000, 0.001));
        assert!(tight.packets > loose.packets, "{tight:?} {loose:?}");
        assert!(tight_p.rel_stderr <= 0.001, "{tight_p:?} {loose_p:?}");
    }
}
