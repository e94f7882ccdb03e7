//! Capture statistics computed while the capture is decoded, with no per-packet columns:
//! totals per file and per interface, time order, peak rates over any number of windows, a
//! frame-size histogram, back-to-back bursts at line rate and gap percentiles.
//!
//! Everything but the time order needs the packets sorted by time. Captures almost always are,
//! so a file is read once, in order, holding a few counters per window and one count per
//! distinct gap. Where that is not enough the file is read again:
//! - a packet earlier than the one before it: the packets are sorted (stably) by time and
//!   summarised; standard input, pipes and devices, which cannot be read twice, are always
//!   read so. The sort holds at most a run of packets in memory and spills longer captures to
//!   temporary files, merged back in time order (`spill`), so any capture is summarised in
//!   bounded memory;
//! - an interface defined after packets were counted that changes how frames are sized (a link
//!   type without an Ethernet equivalent) or the timestamp resolution bursts are judged at;
//! - more distinct gaps of 65 536 ns or more than `distinct_gap_limit`: the first read keeps
//!   exact counts in log-linear buckets (1/256 of an octave wide), the second collects the gaps
//!   of the buckets that hold the percentiles' order statistics. Sorted packets are walked
//!   twice for the same reason, from memory or from the spilled runs.
//!
//! Results are exact integers (counts, sums, the largest window sums) for the caller to turn
//! into rates with one rounding each; the gap percentiles are numpy's default ("linear",
//! Hyndman & Fan's method 7) evaluated in the same floating-point operations as
//! `numpy.percentile` on the sorted gaps, so they are bit for bit what it returns.

use std::collections::HashMap;
use std::path::Path;

use super::rate_windows::Span;
use super::read::{Quirks, ReadOptions, Reader, Record};
use super::spill::{Packet, Sorted, Sorter, RUN_PACKETS};
use super::Interface;
use crate::CoreError;

/// Gaps below this many ns are counted in a dense table (512 KiB once touched).
const DENSE_GAPS: usize = 1 << 16;
/// Default number of distinct gaps of DENSE_GAPS ns or more counted exactly before a file is
/// summarised in buckets and read a second time (a hash map of this many entries is ~9 MiB).
pub const DISTINCT_GAP_LIMIT: usize = 1 << 18;
/// Log-linear buckets for gaps of DENSE_GAPS ns or more: 2^8 per octave (16..=62), after one
/// bucket for negative gaps (a difference of timestamps that wraps, as numpy's diff does).
const SUB_BUCKET_BITS: u32 = 8;
const DENSE_BITS: u32 = 16;
const COARSE_BUCKETS: usize = 1 + (((63 - DENSE_BITS) as usize) << SUB_BUCKET_BITS);

/// What the statistics need to know beyond the packets: rate windows, how a frame is sized
/// from a record and what the Ethernet line does with it, the size buckets and percentiles.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "pyo3", derive(pyo3::FromPyObject), pyo3(from_item_all))]
pub struct StatsConfig {
    /// Rate windows in ns, each reported in this order.
    pub windows_ns: Vec<u64>,
    /// Ethernet line rate in Gb/s, which sets the wire time of a frame.
    pub eth_gbps: f64,
    /// Wire bytes per frame besides the frame (preamble, SFD, IFG).
    pub overhead_bytes: i64,
    pub fcs_bytes: i64,
    pub min_frame_bytes: i64,
    pub ethernet_header_bytes: i64,
    /// Link-layer header bytes of the link types that have an Ethernet equivalent; a file with
    /// any other link type sizes frames by their wire length alone.
    pub link_header_bytes: Vec<(u16, i64)>,
    /// Lower bounds of the frame-size buckets, ascending, the first at most 0.
    pub size_bins: Vec<i64>,
    /// Gap percentiles to report, 0..=100.
    pub percentiles: Vec<f64>,
    /// Distinct gaps above 65 535 ns counted exactly in one read (see the module notes).
    #[cfg_attr(feature = "pyo3", pyo3(default = DISTINCT_GAP_LIMIT))]
    pub distinct_gap_limit: usize,
}

impl StatsConfig {
    /// Whether the configuration can be used: windows of at least 1 ns, size bins ascending
    /// from at most 0, percentiles within 0..=100, a positive finite Ethernet rate.
    pub fn check(&self) -> Result<(), CoreError> {
        let bins = &self.size_bins;
        let problem = if self.windows_ns.contains(&0) {
            "rate windows must be at least 1 ns"
        } else if bins.is_empty() || bins.windows(2).any(|w| w[0] >= w[1]) || bins[0] > 0 {
            "size bins must ascend from at most 0 (lower bounds of the buckets)"
        } else if self.percentiles.iter().any(|p| !(0.0..=100.0).contains(p)) {
            "percentiles must lie within 0..=100"
        } else if !(self.eth_gbps.is_finite() && self.eth_gbps > 0.0) {
            "the Ethernet rate must be a positive number"
        } else {
            return Ok(());
        };
        Err(CoreError::Invalid(problem.to_owned()))
    }
}

/// Packets, bytes and first/last (smallest/largest) timestamp of a set of packets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "pyo3", derive(pyo3::IntoPyObject))]
pub struct Totals {
    pub packets: u64,
    pub bytes_captured: u64,
    pub bytes_wire: u64,
    pub first_ts_ns: i64,
    pub last_ts_ns: i64,
}

impl Totals {
    fn add(&mut self, ts: i64, caplen: u32, wirelen: u32) {
        if self.packets == 0 {
            (self.first_ts_ns, self.last_ts_ns) = (ts, ts);
        } else {
            self.first_ts_ns = self.first_ts_ns.min(ts);
            self.last_ts_ns = self.last_ts_ns.max(ts);
        }
        self.packets += 1;
        self.bytes_captured += u64::from(caplen);
        self.bytes_wire += u64::from(wirelen);
    }

    /// Last minus first timestamp (0 without packets); it fits u64 whatever the two are.
    pub fn span_ns(&self) -> u64 {
        self.last_ts_ns.wrapping_sub(self.first_ts_ns) as u64
    }
}

/// Windows of one length from the first packet: the last covers only up to the last packet.
/// `groups` holds, per covered time (the full window, and the last one's where it differs),
/// the largest packet count, bit sum of the recorded lengths and bit sum of the frames (incl.
/// FCS, as `FrameRule::frame` sizes them) of a window, for peak rates as exact ratios.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "pyo3", derive(pyo3::IntoPyObject))]
pub struct WindowPeaks {
    pub window_ns: u64,
    /// Index of the last window (their number minus one).
    pub last_index: u64,
    /// (covered ns, largest packet count, largest bit sum, largest frame-bit sum).
    pub groups: Vec<(u64, u64, u64, u64)>,
}

/// Runs of back-to-back packets and the gaps between packets (at least two packets).
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "pyo3", derive(pyo3::IntoPyObject))]
pub struct Bursts {
    pub bursts: u64,
    pub packets_in_bursts: u64,
    pub max_burst: u64,
    pub gap_min_ns: i64,
    /// One value per configured percentile.
    pub gap_percentiles: Vec<f64>,
}

/// Runs of linked packets in time order (a pair back to back, or at one time): links at the
/// start before the first break, at the end after the last break, and the runs closed in
/// between, so that the runs of consecutive files join when their summaries are merged.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Chain {
    pub(super) head: u64,
    pub(super) tail: u64,
    pub(super) broken: bool,
    pub(super) bursts: u64,
    pub(super) packets_in_bursts: u64,
    pub(super) max_burst: u64,
}

impl Chain {
    fn close(&mut self, links: u64) {
        if links > 0 {
            self.bursts += 1;
            self.packets_in_bursts += links + 1;
            self.max_burst = self.max_burst.max(links + 1);
        }
    }

    /// `n` more back-to-back links.
    fn extend(&mut self, n: u64) {
        self.tail += n;
        if !self.broken {
            self.head += n;
        }
    }

    /// A gap that is not back to back: the run at the end closes (unless it is the head run,
    /// which may continue an earlier file's).
    fn break_run(&mut self) {
        if self.broken {
            self.close(self.tail);
        }
        self.broken = true;
        self.tail = 0;
    }

    #[inline(always)]
    pub(super) fn link(&mut self, back_to_back: bool) {
        if back_to_back {
            self.extend(1);
        } else {
            self.break_run();
        }
    }

    /// The chain of later packets, joined by a link of the given kind.
    pub(super) fn append(&mut self, next: &Chain, back_to_back: bool) {
        self.link(back_to_back);
        self.extend(next.head);
        if next.broken {
            self.break_run();
            self.bursts += next.bursts;
            self.packets_in_bursts += next.packets_in_bursts;
            self.max_burst = self.max_burst.max(next.max_burst);
            self.tail = next.tail;
        }
    }

    /// Bursts, packets in bursts and the longest (at least 1) once no packet follows.
    pub(super) fn finish(&self) -> (u64, u64, u64) {
        let mut done = *self;
        if done.broken {
            done.close(done.head);
        }
        done.close(done.tail);
        (done.bursts, done.packets_in_bursts, done.max_burst.max(1))
    }
}

/// How packets share timestamps (in time order): distinct times and the most packets at one.
/// DPDK's pcapng copies take one TSC reading per burst, so a dumpcap file has 32 a time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "pyo3", derive(pyo3::IntoPyObject))]
pub struct Ties {
    pub distinct_timestamps: u64,
    pub max_equal_timestamps: u64,
}

impl Ties {
    /// The ties of `packets` packets whose equal-time runs `equal` linked.
    pub(super) fn of(equal: &Chain, packets: u64) -> Self {
        let (runs, packets_in_runs, longest) = equal.finish();
        Ties {
            distinct_timestamps: packets - (packets_in_runs - runs),
            max_equal_timestamps: if packets == 0 { 0 } else { longest },
        }
    }
}

/// Everything the statistics report about a set of packets.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub totals: Totals,
    /// One per interface, in interface order.
    pub per_interface: Vec<Totals>,
    /// Packets earlier than the one before them, in file order.
    pub out_of_order: u64,
    /// The largest step back in time from one packet to the next, in file order (ns).
    pub max_step_back_ns: u64,
    /// Packets per interface (interface order) and direction: unknown, inbound, outbound.
    pub directions: Vec<[u64; 3]>,
    pub ties: Ties,
    pub rates: Vec<WindowPeaks>,
    pub size_histogram: Vec<u64>,
    /// Frame bytes (incl. FCS, as `FrameRule::frame` sizes them) per interface, in interface
    /// order.
    pub frame_bytes: Vec<u64>,
    /// None below two packets.
    pub bursts: Option<Bursts>,
}

/// The statistics of one capture file, with what the reader found.
#[derive(Debug, Clone, PartialEq)]
pub struct FileStats {
    pub summary: Summary,
    pub format: &'static str,
    pub compression: &'static str,
    pub interfaces: Vec<Interface>,
    pub skipped: u64,
    pub untimed: u64,
    pub quirks: Quirks,
    pub cut_short: Option<String>,
    /// How many times the capture was read (1 unless the module notes say otherwise).
    pub reads: u32,
}

/// ns of timestamp resolution of an `if_tsresol` byte, rounded up, at least 1: 10^-n s, or
/// 2^-n s with the top bit set (pcapng §4.2). In integers, equal to ceil(1e9 * base ** -n)
/// in doubles for all 256 bytes.
pub fn resolution_ns(tsresol: u8) -> i64 {
    let exponent = u32::from(tsresol & 0x7F);
    if tsresol & 0x80 != 0 {
        match 1_000_000_000i64.checked_shr(exponent) {
            Some(whole) if exponent < 63 => {
                let exact = whole << exponent == 1_000_000_000;
                (whole + i64::from(!exact)).max(1)
            }
            _ => 1,
        }
    } else {
        10i64.pow(9u32.saturating_sub(exponent))
    }
}

/// How records become frames for sizes and bursts; it depends on every interface of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct FrameRule {
    /// Every link type has an Ethernet equivalent (else frames are sized by wire length).
    pub(super) ethernet: bool,
    /// Link header bytes per interface.
    headers: Vec<i64>,
    /// The coarsest timestamp resolution of the interfaces, in ns.
    resolution_ns: i64,
}

impl FrameRule {
    pub(super) fn new(interfaces: &[Interface], config: &StatsConfig) -> Self {
        let header = |t: u16| {
            config
                .link_header_bytes
                .iter()
                .find(|h| h.0 == t)
                .map(|h| h.1)
        };
        FrameRule {
            ethernet: interfaces.iter().all(|i| header(i.linktype).is_some()),
            headers: interfaces
                .iter()
                .map(|i| header(i.linktype).unwrap_or(0))
                .collect(),
            resolution_ns: interfaces
                .iter()
                .map(|i| resolution_ns(i.tsresol))
                .fold(1, i64::max),
        }
    }

    /// Whether a later rule sizes and times the packets already counted as this one did.
    pub(super) fn agrees(&self, later: &FrameRule) -> bool {
        self.ethernet == later.ethernet && self.resolution_ns == later.resolution_ns
    }

    /// Frame bytes with FCS, padded to the minimum, where the link type allows; else the wire
    /// length.
    pub(super) fn frame(&self, wirelen: u32, iface: u32, config: &StatsConfig) -> i64 {
        if !self.ethernet {
            return i64::from(wirelen);
        }
        let frame = i64::from(wirelen) - self.headers[iface as usize]
            + config.ethernet_header_bytes
            + config.fcs_bytes;
        frame.max(config.min_frame_bytes)
    }
}

/// The frame rule of a file read in one pass, following interfaces that appear mid-file, and
/// whether packets were already sized under a rule the final one disagrees with (`stale`: the
/// file must be read again with the final rule). A `fixed` rule, learnt by an earlier read,
/// never changes.
pub(super) struct RuleWatch {
    pub(super) rule: FrameRule,
    seen: usize,
    fixed: bool,
    stale: bool,
}

impl RuleWatch {
    pub(super) fn new(reader: &Reader, config: &StatsConfig, fixed: Option<&FrameRule>) -> Self {
        RuleWatch {
            rule: fixed
                .cloned()
                .unwrap_or_else(|| FrameRule::new(reader.interfaces(), config)),
            seen: reader.interfaces().len(),
            fixed: fixed.is_some(),
            stale: false,
        }
    }

    /// After a record is read (before it is counted, `counted` packets so far): the new rule
    /// where the reader's interfaces changed.
    pub(super) fn changed(
        &mut self,
        reader: &Reader,
        config: &StatsConfig,
        counted: u64,
    ) -> Option<&FrameRule> {
        if self.fixed || reader.interfaces().len() == self.seen {
            return None;
        }
        self.seen = reader.interfaces().len();
        let later = FrameRule::new(reader.interfaces(), config);
        self.stale |= counted > 0 && !self.rule.agrees(&later);
        self.rule = later;
        Some(&self.rule)
    }

    /// At the end of the file (`counted` packets): the rule its interfaces give, and whether
    /// the packets must be read again under it.
    pub(super) fn finish(
        self,
        reader: &Reader,
        config: &StatsConfig,
        counted: u64,
    ) -> (FrameRule, bool) {
        let last = FrameRule::new(reader.interfaces(), config);
        let stale = self.stale || (counted > 0 && !self.rule.agrees(&last));
        (last, stale)
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Window {
    pub(super) index: u64,
    pub(super) packets: u64,
    /// Bits of the recorded lengths (no FCS).
    pub(super) bits: u64,
    /// Bits of the frames incl. FCS.
    pub(super) frame_bits: u64,
}

/// The largest packet count, bit sum and frame-bit sum of a set of windows (each the largest
/// of its own, not necessarily of one window).
pub(super) type Peak = (u64, u64, u64);

/// One window length over packets in time order: the current window, the one before (which
/// becomes the last if the last packet falls exactly on a window start) and the largest sums
/// of every window before those.
#[derive(Debug, Clone)]
struct WindowAcc {
    window_ns: u64,
    origin: Option<i64>,
    cur: Window,
    cur_end: u64,
    prev: Option<Window>,
    full: Option<Peak>,
}

impl WindowAcc {
    fn new(window_ns: u64) -> Self {
        WindowAcc {
            window_ns,
            origin: None,
            cur: Window::default(),
            cur_end: window_ns,
            prev: None,
            full: None,
        }
    }

    #[inline(always)]
    fn push(&mut self, ts: i64, bits: u64, frame_bits: u64) {
        let origin = *self.origin.get_or_insert(ts);
        let offset = ts.wrapping_sub(origin) as u64;
        if offset >= self.cur_end {
            self.roll(offset);
        }
        self.cur.packets += 1;
        self.cur.bits += bits;
        self.cur.frame_bits += frame_bits;
    }

    fn roll(&mut self, offset: u64) {
        let index = offset / self.window_ns;
        if let Some(done) = self.prev.replace(self.cur) {
            fold(&mut self.full, done);
        }
        self.cur = Window {
            index,
            ..Window::default()
        };
        self.cur_end = (index + 1).saturating_mul(self.window_ns);
    }

    /// The peaks, given the span from the first to the last packet.
    fn finish(&self, span_ns: u64) -> WindowPeaks {
        peaks(self.window_ns, span_ns, self.full, self.prev, self.cur)
    }
}

/// The peaks of windows of `w` ns over a span from the first to the last packet, given the
/// largest sums of the windows before the last two non-empty ones (`full`), and those two.
pub(super) fn peaks(
    w: u64,
    span_ns: u64,
    full: Option<Peak>,
    prev: Option<Window>,
    cur: Window,
) -> WindowPeaks {
    let Span { last, covered, .. } = Span::of(span_ns, w);
    let mut full = full;
    let mut tail = cur;
    if let Some(prev) = prev {
        if tail.index > last && prev.index == last {
            tail.packets += prev.packets;
            tail.bits += prev.bits;
            tail.frame_bits += prev.frame_bits;
        } else {
            fold(&mut full, prev);
        }
    }
    let mut groups = Vec::with_capacity(2);
    if covered == w {
        fold(&mut full, tail);
    } else {
        groups.push((covered, tail.packets, tail.bits, tail.frame_bits));
    }
    if let Some((packets, bits, frame_bits)) = full {
        groups.insert(0, (w, packets, bits, frame_bits));
    }
    WindowPeaks {
        window_ns: w,
        last_index: last,
        groups,
    }
}

pub(super) fn fold(full: &mut Option<Peak>, window: Window) {
    let (packets, bits, frame_bits) = full.get_or_insert((0, 0, 0));
    *packets = (*packets).max(window.packets);
    *bits = (*bits).max(window.bits);
    *frame_bits = (*frame_bits).max(window.frame_bits);
}

/// Bucket of a gap of DENSE_GAPS ns or more (or a negative one, bucket 0) and its range.
fn coarse_bucket(gap: i64) -> usize {
    if gap < 0 {
        return 0;
    }
    let octave = 63 - gap.leading_zeros();
    let sub = (gap >> (octave - SUB_BUCKET_BITS)) as usize & ((1 << SUB_BUCKET_BITS) - 1);
    1 + (((octave - DENSE_BITS) as usize) << SUB_BUCKET_BITS) + sub
}

fn coarse_range(bucket: usize) -> (i64, i64) {
    if bucket == 0 {
        return (i64::MIN, 0);
    }
    let octave = DENSE_BITS + ((bucket - 1) >> SUB_BUCKET_BITS) as u32;
    let sub = ((bucket - 1) & ((1 << SUB_BUCKET_BITS) - 1)) as i64;
    let width_bits = octave - SUB_BUCKET_BITS;
    let lo = ((1i64 << SUB_BUCKET_BITS) + sub) << width_bits;
    (lo, lo.saturating_add(1i64 << width_bits))
}

/// Gaps collected in one range of values during a second read.
#[derive(Debug, Clone)]
struct Collected {
    lo: i64,
    hi: i64,
    values: Vec<i64>,
}

/// The distribution of gaps: exact below DENSE_GAPS ns, exact above it up to a number of
/// distinct values, then in buckets, refined by a second read.
#[derive(Debug, Clone)]
struct GapCounts {
    n: u64,
    min: i64,
    dense: Vec<u64>,
    sparse: HashMap<i64, u64>,
    coarse: Option<Vec<u64>>,
    limit: Option<usize>,
    collect: Vec<Collected>,
}

/// Where an order statistic is: known, or within a bucket of gaps not kept.
enum Rank {
    Value(i64),
    Within(i64, i64),
}

impl GapCounts {
    fn new(limit: Option<usize>, collect: &[(i64, i64)]) -> Self {
        GapCounts {
            n: 0,
            min: i64::MAX,
            dense: Vec::new(),
            sparse: HashMap::new(),
            coarse: None,
            limit,
            collect: collect
                .iter()
                .map(|&(lo, hi)| Collected {
                    lo,
                    hi,
                    values: Vec::new(),
                })
                .collect(),
        }
    }

    #[inline(always)]
    fn push(&mut self, gap: i64) {
        self.n += 1;
        self.min = self.min.min(gap);
        if (0..DENSE_GAPS as i64).contains(&gap) {
            if self.dense.is_empty() {
                self.dense = vec![0; DENSE_GAPS];
            }
            self.dense[gap as usize] += 1;
        } else {
            self.push_large(gap);
        }
    }

    fn push_large(&mut self, gap: i64) {
        for c in &mut self.collect {
            if c.lo <= gap && gap < c.hi {
                c.values.push(gap);
            }
        }
        if let Some(coarse) = &mut self.coarse {
            coarse[coarse_bucket(gap)] += 1;
            return;
        }
        *self.sparse.entry(gap).or_insert(0) += 1;
        if self.limit.is_some_and(|limit| self.sparse.len() > limit) {
            let mut coarse = vec![0u64; COARSE_BUCKETS];
            for (gap, count) in self.sparse.drain() {
                coarse[coarse_bucket(gap)] += count;
            }
            self.sparse = HashMap::new();
            self.coarse = Some(coarse);
        }
    }

    /// The gap of rank `rank` (0-based) in sorted order: negative gaps (from timestamps whose
    /// difference wraps, as in numpy), then the dense table, then the large gaps.
    fn at(&self, rank: u64, sparse_sorted: &[(i64, u64)]) -> Rank {
        let (negative, large) = sparse_sorted.split_at(sparse_sorted.partition_point(|e| e.0 < 0));
        let mut seen = 0u64;
        if let Some(coarse) = &self.coarse {
            if rank < coarse[0] {
                return self.in_bucket(0, rank);
            }
            seen += coarse[0];
        }
        let exact = negative
            .iter()
            .copied()
            .chain(
                self.dense
                    .iter()
                    .enumerate()
                    .map(|(gap, &n)| (gap as i64, n)),
            )
            .chain(large.iter().copied());
        for (gap, count) in exact {
            if rank < seen + count {
                return Rank::Value(gap);
            }
            seen += count;
        }
        let coarse = self.coarse.as_deref().unwrap_or_default();
        for (bucket, &count) in coarse.iter().enumerate().skip(1) {
            if rank < seen + count {
                return self.in_bucket(bucket, rank - seen);
            }
            seen += count;
        }
        unreachable!("rank {rank} of {} gaps", self.n)
    }

    /// The gap of rank `rank` within a bucket, if a second read collected the bucket's gaps.
    fn in_bucket(&self, bucket: usize, rank: u64) -> Rank {
        let (lo, hi) = coarse_range(bucket);
        self.collect
            .iter()
            .find(|c| c.lo == lo && c.hi == hi)
            .and_then(|c| c.values.get(rank as usize))
            .map_or(Rank::Within(lo, hi), |&gap| Rank::Value(gap))
    }

    /// numpy.percentile(gaps, p) for each p, or the bucket ranges a second read must collect.
    fn percentiles(&mut self, ps: &[f64]) -> Result<Vec<f64>, Vec<(i64, i64)>> {
        for c in &mut self.collect {
            c.values.sort_unstable();
        }
        let mut sparse_sorted: Vec<(i64, u64)> =
            self.sparse.iter().map(|(&g, &c)| (g, c)).collect();
        sparse_sorted.sort_unstable();
        let mut out = Vec::with_capacity(ps.len());
        let mut missing = Vec::new();
        for &p in ps {
            let (lo_rank, hi_rank, gamma) = linear_ranks(self.n, p);
            match (
                self.at(lo_rank, &sparse_sorted),
                self.at(hi_rank, &sparse_sorted),
            ) {
                (Rank::Value(a), Rank::Value(b)) => out.push(lerp(a, b, gamma)),
                (a, b) => {
                    for rank in [a, b] {
                        if let Rank::Within(lo, hi) = rank {
                            missing.push((lo, hi));
                        }
                    }
                }
            }
        }
        if missing.is_empty() {
            Ok(out)
        } else {
            missing.sort_unstable();
            missing.dedup();
            Err(missing)
        }
    }
}

/// numpy's "linear" percentile of `n` sorted values: the two ranks it interpolates between and
/// the weight, as `_quantile` computes them (virtual index (n - 1) * p / 100; at or past the
/// last value, the last value twice).
pub(super) fn linear_ranks(n: u64, p: f64) -> (u64, u64, f64) {
    let last = (n - 1) as f64;
    let virtual_index = last * (p / 100.0);
    if virtual_index >= last {
        return (n - 1, n - 1, 0.0);
    }
    let previous = virtual_index.floor();
    (
        previous as u64,
        previous as u64 + 1,
        virtual_index - previous,
    )
}

/// numpy's `_lerp` on int64 values: a + (b - a) * t, or b - (b - a) * (1 - t) from t = 0.5 on.
pub(super) fn lerp(a: i64, b: i64, t: f64) -> f64 {
    let diff = b.wrapping_sub(a) as f64;
    if t >= 0.5 {
        b as f64 - diff * (1.0 - t)
    } else {
        a as f64 + diff * t
    }
}

/// The largest gap after a frame that keeps the next packet back to back with it: the frame's
/// wire time at line rate plus the timestamp resolution, in the operations (and so the
/// roundings) of the numpy expression it replaces.
pub(super) fn back_to_back_ns(frame: i64, rule: &FrameRule, config: &StatsConfig) -> f64 {
    let wire_ns = ((frame + config.overhead_bytes) * 8) as f64 / config.eth_gbps;
    wire_ns + rule.resolution_ns as f64
}

/// What the packets in time order give: rates, sizes, bursts, ties and frame bytes per
/// interface.
type InTimeOrder = (Vec<WindowPeaks>, Vec<u64>, Option<Bursts>, Ties, Vec<u64>);

/// Everything that needs the packets in time order.
#[derive(Debug, Clone)]
struct Ordered {
    rule: FrameRule,
    windows: Vec<WindowAcc>,
    size_of: Vec<u8>,
    sizes: Vec<u64>,
    /// Frame bytes per interface.
    frame_bytes: Vec<u64>,
    prev: Option<(i64, i64)>,
    /// (frame, back_to_back_ns) of the last frame asked about.
    threshold: (i64, f64),
    run: u64,
    bursts: u64,
    packets_in_bursts: u64,
    max_burst: u64,
    gaps: GapCounts,
    equal: Chain,
}

impl Ordered {
    fn new(
        rule: FrameRule,
        config: &StatsConfig,
        limit: Option<usize>,
        collect: &[(i64, i64)],
    ) -> Self {
        let top = config
            .size_bins
            .last()
            .copied()
            .unwrap_or(0)
            .clamp(0, 1 << 16) as usize;
        let bucket = |frame: i64| {
            config
                .size_bins
                .partition_point(|&b| b <= frame)
                .saturating_sub(1)
        };
        Ordered {
            rule,
            windows: config
                .windows_ns
                .iter()
                .map(|&w| WindowAcc::new(w))
                .collect(),
            size_of: (0..top as i64).map(|f| bucket(f) as u8).collect(),
            sizes: vec![0; config.size_bins.len()],
            frame_bytes: Vec::new(),
            prev: None,
            threshold: (i64::MIN, 0.0),
            run: 0,
            bursts: 0,
            packets_in_bursts: 0,
            max_burst: 1,
            gaps: GapCounts::new(limit, collect),
            equal: Chain::default(),
        }
    }

    #[inline(always)]
    fn push(&mut self, ts: i64, wirelen: u32, iface: u32, config: &StatsConfig) {
        let frame = self.rule.frame(wirelen, iface, config);
        let (bits, frame_bits) = (u64::from(wirelen) * 8, frame as u64 * 8);
        for w in &mut self.windows {
            w.push(ts, bits, frame_bits);
        }
        add_at(&mut self.frame_bytes, iface, frame as u64);
        let bucket = match usize::try_from(frame)
            .ok()
            .and_then(|f| self.size_of.get(f))
        {
            Some(&b) => b as usize,
            None => config
                .size_bins
                .partition_point(|&b| b <= frame)
                .saturating_sub(1),
        };
        self.sizes[bucket] += 1;
        if let Some((prev_ts, prev_frame)) = self.prev {
            let gap = ts.wrapping_sub(prev_ts);
            self.gaps.push(gap);
            self.equal.link(gap == 0);
            if gap as f64 <= self.back_to_back_ns(prev_frame, config) {
                self.run += 1;
            } else {
                self.end_run();
            }
        }
        self.prev = Some((ts, frame));
    }

    /// Sizes and times frames by `rule` from now on.
    fn set_rule(&mut self, rule: FrameRule) {
        self.rule = rule;
        self.threshold = (i64::MIN, 0.0);
    }

    /// The largest gap after a frame that keeps the next packet back to back with it: the
    /// frame's wire time at line rate plus the timestamp resolution, in the operations (and
    /// so the roundings) of the numpy expression it replaces. Frames of one size follow each
    /// other, so the last answer is kept.
    #[inline]
    fn back_to_back_ns(&mut self, frame: i64, config: &StatsConfig) -> f64 {
        if self.threshold.0 != frame {
            self.threshold = (frame, back_to_back_ns(frame, &self.rule, config));
        }
        self.threshold.1
    }

    fn end_run(&mut self) {
        if self.run > 0 {
            self.bursts += 1;
            self.packets_in_bursts += self.run + 1;
            self.max_burst = self.max_burst.max(self.run + 1);
            self.run = 0;
        }
    }

    /// Rates, sizes, bursts and ties, or the gap ranges a second read must collect.
    fn finish(
        mut self,
        totals: &Totals,
        config: &StatsConfig,
    ) -> Result<InTimeOrder, Vec<(i64, i64)>> {
        self.end_run();
        let span = totals.span_ns();
        let rates = self.windows.iter().map(|w| w.finish(span)).collect();
        let bursts = if totals.packets < 2 {
            None
        } else {
            Some(Bursts {
                bursts: self.bursts,
                packets_in_bursts: self.packets_in_bursts,
                max_burst: self.max_burst,
                gap_min_ns: self.gaps.min,
                gap_percentiles: self.gaps.percentiles(&config.percentiles)?,
            })
        };
        Ok((
            rates,
            self.sizes,
            bursts,
            Ties::of(&self.equal, totals.packets),
            self.frame_bytes,
        ))
    }
}

/// Totals per file and interface, directions and the time order, which need no sorting. While
/// every packet is on interface 0 (a pcap file, most pcapng ones) its totals are the file's,
/// and only those are counted.
#[derive(Debug, Clone)]
pub(super) struct Counts {
    pub(super) totals: Totals,
    per_interface: Vec<Totals>,
    only_first: bool,
    pub(super) out_of_order: u64,
    pub(super) max_step_back_ns: u64,
    directions: Vec<[u64; 3]>,
    last_ts: i64,
}

impl Default for Counts {
    fn default() -> Self {
        Counts {
            totals: Totals::default(),
            per_interface: Vec::new(),
            only_first: true,
            out_of_order: 0,
            max_step_back_ns: 0,
            directions: Vec::new(),
            last_ts: 0,
        }
    }
}

impl Counts {
    #[inline(always)]
    pub(super) fn push(&mut self, r: &Record) -> bool {
        let (ts, caplen, wirelen, iface) = (r.ts_ns, r.caplen, r.wirelen, r.iface);
        let in_order = self.totals.packets == 0 || ts >= self.last_ts;
        if !in_order {
            self.out_of_order += 1;
            let step = self.last_ts.wrapping_sub(ts) as u64;
            self.max_step_back_ns = self.max_step_back_ns.max(step);
        }
        self.last_ts = ts;
        let i = iface as usize;
        if self.directions.len() <= i {
            self.directions.resize(i + 1, [0; 3]);
        }
        self.directions[i][usize::from(r.direction)] += 1;
        if iface != 0 && self.only_first {
            self.only_first = false;
            self.per_interface = vec![self.totals];
        }
        self.totals.add(ts, caplen, wirelen);
        if !self.only_first {
            if self.per_interface.len() <= i {
                self.per_interface.resize(i + 1, Totals::default());
            }
            self.per_interface[i].add(ts, caplen, wirelen);
        }
        in_order
    }

    /// Totals per interface, one for each of `interfaces` interfaces (packets name only
    /// interfaces that exist).
    pub(super) fn per_interface(&self, interfaces: usize) -> Vec<Totals> {
        let mut per_interface = match (self.only_first, self.totals.packets) {
            (true, 0) => Vec::new(),
            (true, _) => vec![self.totals],
            (false, _) => self.per_interface.clone(),
        };
        per_interface.resize(interfaces, Totals::default());
        per_interface
    }

    /// Packets per direction (unknown, inbound, outbound) of each of `interfaces` interfaces.
    pub(super) fn directions(&self, interfaces: usize) -> Vec<[u64; 3]> {
        let mut directions = self.directions.clone();
        directions.resize(interfaces, [0; 3]);
        directions
    }

    /// The summary of the counted packets with what their time order gave.
    fn summary(&self, interfaces: usize, ordered: InTimeOrder) -> Summary {
        let (rates, size_histogram, bursts, ties, mut frame_bytes) = ordered;
        frame_bytes.resize(interfaces, 0);
        Summary {
            totals: self.totals,
            per_interface: self.per_interface(interfaces),
            out_of_order: self.out_of_order,
            max_step_back_ns: self.max_step_back_ns,
            directions: self.directions(interfaces),
            ties,
            rates,
            size_histogram,
            bursts,
            frame_bytes,
        }
    }
}

/// Adds `n` to `sums[index]`, growing `sums` to hold it.
#[inline(always)]
pub(super) fn add_at(sums: &mut Vec<u64>, index: u32, n: u64) {
    let i = index as usize;
    if sums.len() <= i {
        sums.resize(i + 1, 0);
    }
    sums[i] += n;
}

/// How one read went: sorted all along or not, and whether the frame rule held throughout.
enum Pass {
    Done(Box<Summary>),
    Again { collect: Vec<(i64, i64)> },
    Unsorted,
}

/// One read of a capture in file order, assuming time order; `fixed` is the frame rule of the
/// whole file where a previous read learnt it.
fn read_in_order(
    reader: &mut Reader,
    config: &StatsConfig,
    fixed: Option<&FrameRule>,
    collect: &[(i64, i64)],
) -> Result<Pass, CoreError> {
    let mut watch = RuleWatch::new(reader, config, fixed);
    let mut ordered = Ordered::new(
        watch.rule.clone(),
        config,
        Some(config.distinct_gap_limit),
        collect,
    );
    let mut counts = Counts::default();
    while let Some(r) = reader.next_record()? {
        if let Some(rule) = watch.changed(reader, config, counts.totals.packets) {
            ordered.set_rule(rule.clone());
        }
        if !counts.push(&r) {
            return Ok(Pass::Unsorted);
        }
        ordered.push(r.ts_ns, r.wirelen, r.iface, config);
    }
    let (_, stale) = watch.finish(reader, config, counts.totals.packets);
    let finished = ordered.finish(&counts.totals, config);
    if stale {
        // Sizes and bursts counted under another rule: a second read with the final one.
        return Ok(Pass::Again {
            collect: finished.err().unwrap_or_default(),
        });
    }
    Ok(match finished {
        Ok(ordered) => Pass::Done(Box::new(counts.summary(reader.interfaces().len(), ordered))),
        Err(collect) => Pass::Again { collect },
    })
}

/// The statistics of packets sorted by time, counted in file order by `counts`: walked once,
/// or twice where the gaps outnumber the distinct limit (see the module notes).
fn summarise_sorted(
    sorted: &Sorted,
    counts: &Counts,
    interfaces: &[Interface],
    config: &StatsConfig,
) -> Result<Summary, CoreError> {
    let rule = FrameRule::new(interfaces, config);
    let mut collect = Vec::new();
    for _ in 0..2 {
        let limit = Some(config.distinct_gap_limit);
        let mut ordered = Ordered::new(rule.clone(), config, limit, &collect);
        sorted.for_each(|p| ordered.push(p.ts_ns, p.wirelen, p.iface, config))?;
        match ordered.finish(&counts.totals, config) {
            Ok(finished) => return Ok(counts.summary(interfaces.len(), finished)),
            Err(ranges) => collect = ranges,
        }
    }
    unreachable!("a second walk collects every gap the percentiles need")
}

/// Reads every packet of `reader`, sorts them by time in runs of `run_packets` spilled to
/// `dir` (see `spill`) and summarises them.
pub(super) fn read_unsorted_in(
    reader: &mut Reader,
    config: &StatsConfig,
    run_packets: usize,
    dir: &Path,
) -> Result<Summary, CoreError> {
    let mut sorter = Sorter::new(run_packets, dir);
    let mut counts = Counts::default();
    while let Some(r) = reader.next_record()? {
        counts.push(&r);
        sorter.push(Packet {
            ts_ns: r.ts_ns,
            wirelen: r.wirelen,
            iface: r.iface,
        })?;
    }
    let sorted = sorter.finish()?;
    summarise_sorted(&sorted, &counts, reader.interfaces(), config)
}

/// Reads every packet of `reader` and summarises them sorted by time, in bounded memory.
fn read_unsorted(reader: &mut Reader, config: &StatsConfig) -> Result<Summary, CoreError> {
    read_unsorted_in(reader, config, RUN_PACKETS, &std::env::temp_dir())
}

/// The statistics of a capture file (`-`: standard input), read once where it is in time
/// order (see the module notes for when it is read again; what cannot be read twice, standard
/// input, a pipe or a device, is sorted by time as it is read).
pub fn file_stats(
    path: &Path,
    read: ReadOptions,
    config: &StatsConfig,
) -> Result<FileStats, CoreError> {
    // Only a regular file can be read twice (standard input, a pipe or a device is sorted as
    // it is read), and only a file is read ahead: its reads end.
    let rereadable = path.as_os_str() != "-" && std::fs::metadata(path).is_ok_and(|m| m.is_file());
    let open = || {
        let mut reader = Reader::open_with(path, read)?;
        if rereadable {
            reader.read_ahead();
        }
        Ok::<_, CoreError>(reader)
    };
    let mut reader = open()?;
    let mut reads = 1;
    let summary = if !rereadable {
        read_unsorted(&mut reader, config)?
    } else {
        match read_in_order(&mut reader, config, None, &[])? {
            Pass::Done(summary) => *summary,
            Pass::Unsorted => {
                reader = open()?;
                reads += 1;
                read_unsorted(&mut reader, config)?
            }
            Pass::Again { collect } => {
                let rule = FrameRule::new(reader.interfaces(), config);
                let expected = reader.bytes_read();
                reader = open()?;
                reads += 1;
                match read_in_order(&mut reader, config, Some(&rule), &collect)? {
                    Pass::Done(summary) if reader.bytes_read() == expected => *summary,
                    _ => {
                        return Err(CoreError::whole(
                            &path.display().to_string(),
                            "the capture changed while it was read twice",
                        ))
                    }
                }
            }
        }
    };
    Ok(FileStats {
        summary,
        format: reader.format(),
        compression: reader.compression().name(),
        interfaces: reader.interfaces().to_vec(),
        skipped: reader.skipped(),
        untimed: reader.untimed(),
        quirks: reader.quirks(),
        cut_short: reader.cut_short().map(ToString::to_string),
        reads,
    })
}

/// The statistics of packets given as columns in file order (an in-memory trace). Fails when
/// the columns differ in length or a packet names an interface that is not there.
pub fn columns_stats(
    ts_ns: &[i64],
    caplen: &[u32],
    wirelen: &[u32],
    iface: &[u32],
    interfaces: &[Interface],
    config: &StatsConfig,
) -> Result<Summary, String> {
    let n = ts_ns.len();
    if [caplen.len(), wirelen.len(), iface.len()]
        .iter()
        .any(|&l| l != n)
    {
        return Err("ts_ns, caplen, wirelen and iface must have the same length".into());
    }
    if let Some(bad) = iface.iter().find(|&&i| i as usize >= interfaces.len()) {
        return Err(format!(
            "packet for interface {bad}, but {} are defined",
            interfaces.len()
        ));
    }
    let mut counts = Counts::default();
    let mut packets = Vec::with_capacity(n);
    for k in 0..n {
        // Columns carry no direction: every packet's is unknown.
        counts.push(&Record {
            ts_ns: ts_ns[k],
            caplen: caplen[k],
            wirelen: wirelen[k],
            iface: iface[k],
            data_offset: 0,
            direction: 0,
        });
        packets.push(Packet {
            ts_ns: ts_ns[k],
            wirelen: wirelen[k],
            iface: iface[k],
        });
    }
    summarise_sorted(&Sorted::in_memory(packets), &counts, interfaces, config)
        .map_err(|e| e.to_string())
}
