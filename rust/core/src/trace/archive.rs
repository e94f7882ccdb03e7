//! Archive statistics: a compact summary of one capture file (a `Partial`) that merges exactly
//! with the summary of the next file of the same port, so that many files are summarised by
//! many workers and reduced to the statistics of the files concatenated in time order
//! (docs/scale.md, "Archive statistics").
//!
//! Besides sums (packets, bytes, the size histogram, per interface) a partial keeps:
//! - per rate window length, the first window its packets touch, the last two, and the largest
//!   sums of all the others. Those are complete, since later files hold later packets; the
//!   edges are added to the neighbours' when partials are merged. Windows are counted from
//!   `origin`, the first packet of the whole port, which the caller passes to every file;
//! - the first and last packet (time, frame size) and the back-to-back runs that touch either
//!   end, so a burst that straddles two files is joined into one; closed runs are counted;
//! - the count of every distinct gap between packets ((gap, count) pairs in ascending order),
//!   so the percentiles of the merged gaps are exact; the gap from one file's last packet to the
//!   next file's first is added when the two are merged.
//!
//! A file read out of time order is summarised from its packets sorted by time, as
//! `stats::file_stats` does; files that overlap in time cannot be merged this way and are
//! summarised together by `files_partial` instead. Both sort with `spill::Sorter`: runs of
//! 1 Mi packets spilled to disk and merged, so memory stays bounded whatever the files hold.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::rate_windows::Span;
use super::read::{Quirks, ReadOptions, Reader};
use super::spill::{Packet, Sorter, RUN_PACKETS};
use super::stats::{
    add_at, back_to_back_ns, fold, lerp, linear_ranks, peaks, Bursts, Chain, Counts, FileStats,
    FrameRule, Peak, RuleWatch, StatsConfig, Summary, Ties, Totals, Window,
};
use super::Interface;
use crate::CoreError;

/// Gaps below this many ns are counted in a dense table while a file is read.
const DENSE_GAPS: usize = 1 << 16;

/// The windows of one length touched by packets in time order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Edges {
    /// The first window and the last two (fewer when fewer are touched), in time order.
    edges: Vec<Window>,
    /// Largest packet count, bit sum and frame-bit sum of every other window.
    inner: Option<Peak>,
}

impl Edges {
    /// Adds packets to the window `window.index`, which is not before the last one.
    fn add(&mut self, window: Window) {
        match self.edges.last_mut() {
            Some(last) if last.index == window.index => {
                last.packets += window.packets;
                last.bits += window.bits;
                last.frame_bits += window.frame_bits;
            }
            _ => {
                self.edges.push(window);
                if self.edges.len() > 3 {
                    let done = self.edges.remove(1);
                    fold(&mut self.inner, done);
                }
            }
        }
    }

    /// The windows of later packets: shared edges add up, the rest are complete.
    fn append(&mut self, next: &Edges) {
        for &window in &next.edges {
            self.add(window);
        }
        if let Some((packets, bits, frame_bits)) = next.inner {
            fold(
                &mut self.inner,
                Window {
                    index: 0,
                    packets,
                    bits,
                    frame_bits,
                },
            );
        }
    }

    fn peaks(&self, window_ns: u64, span_ns: u64) -> super::stats::WindowPeaks {
        let n = self.edges.len();
        let mut full = self.inner;
        for &done in &self.edges[..n.saturating_sub(2)] {
            fold(&mut full, done);
        }
        let prev = n.checked_sub(2).map(|k| self.edges[k]);
        let cur = self.edges.last().copied().unwrap_or_default();
        peaks(window_ns, span_ns, full, prev, cur)
    }
}

/// Counts one window length per packet without a division while packets stay in one window.
#[derive(Debug, Clone)]
struct WindowCounter {
    window_ns: u64,
    lo: u64,
    hi: u64,
    edges: Edges,
}

impl WindowCounter {
    #[inline(always)]
    fn push(&mut self, offset: u64, bits: u64, frame_bits: u64) {
        if (self.lo..self.hi).contains(&offset) {
            if let Some(last) = self.edges.edges.last_mut() {
                last.packets += 1;
                last.bits += bits;
                last.frame_bits += frame_bits;
                return;
            }
        }
        let index = offset / self.window_ns;
        self.lo = index.saturating_mul(self.window_ns);
        self.hi = (index + 1).saturating_mul(self.window_ns);
        self.edges.add(Window {
            index,
            packets: 1,
            bits,
            frame_bits,
        });
    }
}

/// Exact counts of distinct gaps, as (gap, count) pairs in ascending order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct GapDist {
    n: u64,
    min: i64,
    values: Vec<(i64, u64)>,
}

impl GapDist {
    fn merge(&mut self, other: &GapDist) {
        if other.n == 0 {
            return;
        }
        self.min = if self.n == 0 {
            other.min
        } else {
            self.min.min(other.min)
        };
        self.n += other.n;
        let (a, b) = (std::mem::take(&mut self.values), &other.values);
        let mut out = Vec::with_capacity(a.len() + b.len());
        let (mut i, mut j) = (0, 0);
        while i < a.len() && j < b.len() {
            let (gap, take_a, take_b) = match a[i].0.cmp(&b[j].0) {
                std::cmp::Ordering::Less => (a[i].0, true, false),
                std::cmp::Ordering::Greater => (b[j].0, false, true),
                std::cmp::Ordering::Equal => (a[i].0, true, true),
            };
            let count = if take_a { a[i].1 } else { 0 } + if take_b { b[j].1 } else { 0 };
            out.push((gap, count));
            i += usize::from(take_a);
            j += usize::from(take_b);
        }
        out.extend_from_slice(&a[i..]);
        out.extend_from_slice(&b[j..]);
        self.values = out;
    }

    fn value_at(&self, rank: u64) -> i64 {
        let mut seen = 0;
        for &(gap, count) in &self.values {
            seen += count;
            if rank < seen {
                return gap;
            }
        }
        unreachable!("rank {rank} of {} gaps", self.n)
    }

    /// numpy.percentile of the gaps (method "linear"), as `stats` computes it for one file.
    fn percentiles(&self, ps: &[f64]) -> Vec<f64> {
        ps.iter()
            .map(|&p| {
                let (lo, hi, gamma) = linear_ranks(self.n, p);
                lerp(self.value_at(lo), self.value_at(hi), gamma)
            })
            .collect()
    }
}

/// Gap counts while a file is read: a dense table for small gaps, a map for the rest.
#[derive(Debug, Default)]
struct GapCounter {
    n: u64,
    min: i64,
    dense: Vec<u64>,
    sparse: HashMap<i64, u64>,
}

impl GapCounter {
    #[inline(always)]
    fn push(&mut self, gap: i64) {
        self.min = if self.n == 0 { gap } else { self.min.min(gap) };
        self.n += 1;
        if (0..DENSE_GAPS as i64).contains(&gap) {
            if self.dense.is_empty() {
                self.dense = vec![0; DENSE_GAPS];
            }
            self.dense[gap as usize] += 1;
        } else {
            *self.sparse.entry(gap).or_insert(0) += 1;
        }
    }

    fn finish(self) -> GapDist {
        let mut values: Vec<(i64, u64)> = self.sparse.into_iter().collect();
        values.extend(
            self.dense
                .iter()
                .enumerate()
                .filter(|e| *e.1 > 0)
                .map(|(gap, &count)| (gap as i64, count)),
        );
        values.sort_unstable();
        GapDist {
            n: self.n,
            min: self.min,
            values,
        }
    }
}

/// The time-ordered part of a partial while packets are pushed in time order.
struct Builder {
    origin: i64,
    rule: FrameRule,
    windows: Vec<WindowCounter>,
    sizes: Vec<u64>,
    /// Frame bytes per interface.
    frame_bytes: Vec<u64>,
    chain: Chain,
    /// Runs of packets at one time.
    equal: Chain,
    gaps: GapCounter,
    first: Option<(i64, i64)>,
    last: Option<(i64, i64)>,
    threshold: (i64, f64),
    demand: Option<(DemandAcc, DemandConfig)>,
}

impl Builder {
    fn new(
        config: &StatsConfig,
        origin: i64,
        rule: FrameRule,
        cost: Option<&DemandConfig>,
    ) -> Self {
        Builder {
            origin,
            rule,
            windows: config
                .windows_ns
                .iter()
                .map(|&w| WindowCounter {
                    window_ns: w,
                    lo: 0,
                    hi: 0,
                    edges: Edges::default(),
                })
                .collect(),
            sizes: vec![0; config.size_bins.len()],
            frame_bytes: Vec::new(),
            chain: Chain::default(),
            equal: Chain::default(),
            gaps: GapCounter::default(),
            first: None,
            last: None,
            threshold: (i64::MIN, 0.0),
            demand: cost.map(|c| (DemandAcc::default(), c.clone())),
        }
    }

    fn set_rule(&mut self, rule: FrameRule) {
        self.rule = rule;
        self.threshold = (i64::MIN, 0.0);
    }

    #[inline(always)]
    fn push(&mut self, ts: i64, wirelen: u32, iface: u32, config: &StatsConfig) {
        let offset = ts.wrapping_sub(self.origin) as u64;
        let frame = self.rule.frame(wirelen, iface, config);
        let (bits, frame_bits) = (u64::from(wirelen) * 8, frame as u64 * 8);
        for w in &mut self.windows {
            w.push(offset, bits, frame_bits);
        }
        add_at(&mut self.frame_bytes, iface, frame as u64);
        self.sizes[size_bucket(frame, config)] += 1;
        if let Some((acc, cost)) = &mut self.demand {
            acc.push(offset, frame, cost);
        }
        if let Some((prev_ts, prev_frame)) = self.last {
            let gap = ts.wrapping_sub(prev_ts);
            self.gaps.push(gap);
            self.equal.link(gap == 0);
            if self.threshold.0 != prev_frame {
                self.threshold = (prev_frame, back_to_back_ns(prev_frame, &self.rule, config));
            }
            self.chain.link(gap as f64 <= self.threshold.1);
        } else {
            self.first = Some((ts, frame));
        }
        self.last = Some((ts, frame));
    }
}

fn size_bucket(frame: i64, config: &StatsConfig) -> usize {
    config
        .size_bins
        .partition_point(|&b| b <= frame)
        .saturating_sub(1)
}

/// What the reader found in a file, added up over files.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadFacts {
    pub format: String,
    pub compression: String,
    pub interfaces: Vec<Interface>,
    pub skipped: u64,
    pub untimed: u64,
    pub quirks: Quirks,
    pub cut_short: Option<String>,
    pub reads: u32,
}

impl From<&FileStats> for ReadFacts {
    /// What the reader of one file's statistics found.
    fn from(f: &FileStats) -> Self {
        ReadFacts {
            format: f.format.to_owned(),
            compression: f.compression.to_owned(),
            interfaces: f.interfaces.clone(),
            skipped: f.skipped,
            untimed: f.untimed,
            quirks: f.quirks,
            cut_short: f.cut_short.clone(),
            reads: f.reads,
        }
    }
}

impl ReadFacts {
    fn of(reader: &Reader, reads: u32) -> Self {
        ReadFacts {
            format: reader.format().to_owned(),
            compression: reader.compression().name().to_owned(),
            interfaces: reader.interfaces().to_vec(),
            skipped: reader.skipped(),
            untimed: reader.untimed(),
            quirks: reader.quirks(),
            cut_short: reader.cut_short().map(ToString::to_string),
            reads,
        }
    }

    fn add(&mut self, next: &ReadFacts) {
        for (mine, theirs) in [
            (&mut self.format, &next.format),
            (&mut self.compression, &next.compression),
        ] {
            if mine != theirs {
                *mine = "mixed".to_owned();
            }
        }
        if next.interfaces.len() > self.interfaces.len() {
            self.interfaces = next.interfaces.clone();
        }
        self.skipped += next.skipped;
        self.untimed += next.untimed;
        self.quirks.snaplen_exceeded += next.quirks.snaplen_exceeded;
        self.quirks.wirelen_below_caplen += next.quirks.wirelen_below_caplen;
        self.quirks.ts_wrapped += next.quirks.ts_wrapped;
        if self.cut_short.is_none() {
            self.cut_short = next.cut_short.clone();
        }
        self.reads += next.reads;
    }
}

/// The mergeable statistics of one file, or of consecutive files of one port.
#[derive(Debug, Clone, PartialEq)]
pub struct Partial {
    pub facts: ReadFacts,
    /// Where windows are counted from: the first packet of the port, as the caller said.
    pub origin: i64,
    pub totals: Totals,
    pub per_interface: Vec<Totals>,
    /// Packets earlier than the one before them, in file order (across files too).
    pub out_of_order: u64,
    /// The largest step back from one packet to the next, in file order (ns).
    pub max_step_back_ns: u64,
    /// Packets per interface and direction (unknown, inbound, outbound).
    pub directions: Vec<[u64; 3]>,
    /// Time of the first and the last record in file order (0 without packets).
    pub first_record_ts: i64,
    pub last_record_ts: i64,
    windows: Vec<Edges>,
    sizes: Vec<u64>,
    /// Frame bytes (incl. FCS) per interface.
    frame_bytes: Vec<u64>,
    /// (time, frame bytes) of the first and last packet in time order.
    first: (i64, i64),
    last: (i64, i64),
    chain: Chain,
    equal: Chain,
    gaps: GapDist,
    demand: Option<DemandAcc>,
}

fn add_totals(a: &mut Totals, b: &Totals) {
    if b.packets == 0 {
        return;
    }
    if a.packets == 0 {
        *a = *b;
        return;
    }
    a.packets += b.packets;
    a.bytes_captured += b.bytes_captured;
    a.bytes_wire += b.bytes_wire;
    a.first_ts_ns = a.first_ts_ns.min(b.first_ts_ns);
    a.last_ts_ns = a.last_ts_ns.max(b.last_ts_ns);
}

impl Partial {
    fn new(
        facts: ReadFacts,
        counts: &Counts,
        records: (i64, i64),
        built: Builder,
        origin: i64,
    ) -> Self {
        let interfaces = facts.interfaces.len();
        Partial {
            facts,
            origin,
            totals: counts.totals,
            per_interface: counts.per_interface(interfaces),
            out_of_order: counts.out_of_order,
            max_step_back_ns: counts.max_step_back_ns,
            directions: counts.directions(interfaces),
            first_record_ts: records.0,
            last_record_ts: records.1,
            windows: built.windows.into_iter().map(|w| w.edges).collect(),
            sizes: built.sizes,
            frame_bytes: built.frame_bytes,
            first: built.first.unwrap_or_default(),
            last: built.last.unwrap_or_default(),
            chain: built.chain,
            equal: built.equal,
            gaps: built.gaps.finish(),
            demand: built.demand.map(|(acc, _)| acc),
        }
    }

    /// Adds the partial of the files that follow this one's in the port. Fails, saying why,
    /// where the two cannot be merged exactly: `next` has packets before this one's last, its
    /// windows start elsewhere, or its frames are sized or timed by another rule.
    pub fn append(
        &mut self,
        next: &Partial,
        config: &StatsConfig,
        cost: Option<&DemandConfig>,
    ) -> Result<(), String> {
        if next.origin != self.origin {
            return Err("the partials count windows from different origins".into());
        }
        let rule = FrameRule::new(&self.facts.interfaces, config);
        if self.totals.packets > 0 && next.totals.packets > 0 {
            if next.totals.first_ts_ns < self.totals.last_ts_ns {
                return Err("the files overlap in time".into());
            }
            if !rule.agrees(&FrameRule::new(&next.facts.interfaces, config)) {
                return Err("the files size or time frames differently".into());
            }
            let gap = next.first.0.wrapping_sub(self.last.0);
            let back_to_back = gap as f64 <= back_to_back_ns(self.last.1, &rule, config);
            self.chain.append(&next.chain, back_to_back);
            self.equal.append(&next.equal, gap == 0);
            self.gaps.merge(&GapDist {
                n: 1,
                min: gap,
                values: vec![(gap, 1)],
            });
            if next.first_record_ts < self.last_record_ts {
                self.out_of_order += 1;
                let step = self.last_record_ts.wrapping_sub(next.first_record_ts) as u64;
                self.max_step_back_ns = self.max_step_back_ns.max(step);
            }
        } else if self.totals.packets == 0 {
            self.chain = next.chain;
            self.equal = next.equal;
            self.first = next.first;
        }
        self.gaps.merge(&next.gaps);
        if next.totals.packets > 0 {
            self.last = next.last;
            self.last_record_ts = next.last_record_ts;
            if self.totals.packets == 0 {
                self.first_record_ts = next.first_record_ts;
            }
        }
        add_totals(&mut self.totals, &next.totals);
        self.out_of_order += next.out_of_order;
        self.max_step_back_ns = self.max_step_back_ns.max(next.max_step_back_ns);
        if next.per_interface.len() > self.per_interface.len() {
            self.per_interface
                .resize(next.per_interface.len(), Totals::default());
        }
        for (mine, theirs) in self.per_interface.iter_mut().zip(&next.per_interface) {
            add_totals(mine, theirs);
        }
        if next.directions.len() > self.directions.len() {
            self.directions.resize(next.directions.len(), [0; 3]);
        }
        for (mine, theirs) in self.directions.iter_mut().zip(&next.directions) {
            for (m, t) in mine.iter_mut().zip(theirs) {
                *m += t;
            }
        }
        for (mine, theirs) in self.windows.iter_mut().zip(&next.windows) {
            mine.append(theirs);
        }
        for (mine, theirs) in self.sizes.iter_mut().zip(&next.sizes) {
            *mine += theirs;
        }
        for (i, &n) in next.frame_bytes.iter().enumerate() {
            add_at(&mut self.frame_bytes, i as u32, n);
        }
        match (&mut self.demand, &next.demand, cost) {
            (Some(mine), Some(theirs), Some(cost)) => mine.append(theirs, cost),
            (None, None, _) => {}
            _ => return Err("the partials were read with different demands".into()),
        }
        self.facts.add(&next.facts);
        Ok(())
    }

    /// Names `to` instead of `from` in what the reader reported (a file read from a local copy).
    pub fn rename_file(&mut self, from: &str, to: &str) {
        if let Some(text) = &mut self.facts.cut_short {
            *text = text.replace(from, to);
        }
    }

    /// The statistics of the packets summarised, as `stats::file_stats` reports them for one
    /// file. Fails when the windows were not counted from the first packet.
    pub fn summary(&self, config: &StatsConfig) -> Result<Summary, String> {
        if self.totals.packets > 0 && self.origin != self.totals.first_ts_ns {
            return Err(format!(
                "windows were counted from {} ns, but the first packet is at {} ns",
                self.origin, self.totals.first_ts_ns
            ));
        }
        let span = self.totals.span_ns();
        let (bursts, packets_in_bursts, max_burst) = self.chain.finish();
        Ok(Summary {
            totals: self.totals,
            per_interface: self.per_interface.clone(),
            out_of_order: self.out_of_order,
            max_step_back_ns: self.max_step_back_ns,
            directions: self.directions.clone(),
            ties: Ties::of(&self.equal, self.totals.packets),
            rates: self
                .windows
                .iter()
                .zip(&config.windows_ns)
                .map(|(edges, &w)| edges.peaks(w, span))
                .collect(),
            size_histogram: self.sizes.clone(),
            frame_bytes: {
                let mut frame_bytes = self.frame_bytes.clone();
                frame_bytes.resize(self.per_interface.len(), 0);
                frame_bytes
            },
            bursts: (self.totals.packets >= 2).then(|| Bursts {
                bursts,
                packets_in_bursts,
                max_burst,
                gap_min_ns: self.gaps.min,
                gap_percentiles: self.gaps.percentiles(&config.percentiles),
            }),
        })
    }
}

/// How one read in file order went.
enum Pass {
    Done(Box<Partial>),
    /// Frames were sized under a rule that changed later: read again with the final one.
    Again(FrameRule),
    Unsorted,
}

fn read_in_order(
    reader: &mut Reader,
    config: &StatsConfig,
    origin: i64,
    fixed: Option<&FrameRule>,
    reads: u32,
    cost: Option<&DemandConfig>,
) -> Result<Pass, CoreError> {
    let mut watch = RuleWatch::new(reader, config, fixed);
    let mut built = Builder::new(config, origin, watch.rule.clone(), cost);
    let mut counts = Counts::default();
    let mut first_record = None;
    while let Some(r) = reader.next_record()? {
        if let Some(rule) = watch.changed(reader, config, counts.totals.packets) {
            built.set_rule(rule.clone());
        }
        first_record.get_or_insert(r.ts_ns);
        if !counts.push(&r) {
            return Ok(Pass::Unsorted);
        }
        built.push(r.ts_ns, r.wirelen, r.iface, config);
    }
    let (last, stale) = watch.finish(reader, config, counts.totals.packets);
    if stale {
        return Ok(Pass::Again(last));
    }
    let records = (first_record.unwrap_or(0), counts.totals.last_ts_ns);
    let facts = ReadFacts::of(reader, reads);
    Ok(Pass::Done(Box::new(Partial::new(
        facts, &counts, records, built, origin,
    ))))
}

/// Packets of files read in file order, with their counts: sorted by time in bounded runs
/// spilled to disk (`spill::Sorter`, as `stats::file_stats` sorts a capture out of order).
struct Held {
    sorter: Sorter,
    counts: Counts,
    records: Option<(i64, i64)>,
}

impl Held {
    /// Packets sorted in runs of `run_packets`, spilled to `dir`.
    fn new(run_packets: usize, dir: &Path) -> Self {
        Held {
            sorter: Sorter::new(run_packets, dir),
            counts: Counts::default(),
            records: None,
        }
    }

    fn read(&mut self, reader: &mut Reader) -> Result<(), CoreError> {
        while let Some(r) = reader.next_record()? {
            self.counts.push(&r);
            self.sorter.push(Packet {
                ts_ns: r.ts_ns,
                wirelen: r.wirelen,
                iface: r.iface,
            })?;
            let first = self.records.map_or(r.ts_ns, |f| f.0);
            self.records = Some((first, r.ts_ns));
        }
        Ok(())
    }

    /// The partial of the held packets sorted by time (stably), windows from `origin` (None:
    /// the first packet).
    fn partial(
        self,
        facts: ReadFacts,
        config: &StatsConfig,
        origin: Option<i64>,
        cost: Option<&DemandConfig>,
    ) -> Result<Partial, CoreError> {
        let sorted = self.sorter.finish()?;
        let origin = origin.unwrap_or(self.counts.totals.first_ts_ns);
        let rule = FrameRule::new(&facts.interfaces, config);
        let mut built = Builder::new(config, origin, rule, cost);
        sorted.for_each(|p| built.push(p.ts_ns, p.wirelen, p.iface, config))?;
        let records = self.records.unwrap_or((0, 0));
        Ok(Partial::new(facts, &self.counts, records, built, origin))
    }
}

/// Opens `path`, reading ahead on a thread of its own where `ahead` (a file's reads end).
fn open(path: &Path, read: ReadOptions, ahead: bool) -> Result<Reader, CoreError> {
    let mut reader = Reader::open_with(path, read)?;
    if ahead {
        reader.read_ahead();
    }
    Ok(reader)
}

/// The partial of one capture file with windows counted from `origin` (`-`: standard input).
/// Read once where it is in time order; otherwise as `stats::file_stats` reads it.
///
/// `read_ahead` lets a regular file be read on a second thread, a block ahead of the parsing:
/// faster where a core is free for it, but a task then keeps about 1.7 cores busy, so a caller
/// that runs one task per core (a Dask worker thread) turns it off (docs/scale.md). The
/// partial is the same either way.
pub fn file_partial(
    path: &Path,
    read: ReadOptions,
    config: &StatsConfig,
    origin: i64,
    cost: Option<&DemandConfig>,
    read_ahead: bool,
) -> Result<Partial, CoreError> {
    let rereadable = path.as_os_str() != "-" && std::fs::metadata(path).is_ok_and(|m| m.is_file());
    let ahead = rereadable && read_ahead;
    let mut reader = open(path, read, ahead)?;
    if rereadable {
        let expected_rule = match read_in_order(&mut reader, config, origin, None, 1, cost)? {
            Pass::Done(partial) => return Ok(*partial),
            Pass::Again(rule) => Some(rule),
            Pass::Unsorted => None,
        };
        reader = open(path, read, ahead)?;
        if let Some(rule) = expected_rule {
            return match read_in_order(&mut reader, config, origin, Some(&rule), 2, cost)? {
                Pass::Done(partial) => Ok(*partial),
                _ => Err(CoreError::whole(
                    &path.display().to_string(),
                    "the capture changed while it was read twice",
                )),
            };
        }
    }
    let mut held = Held::new(RUN_PACKETS, &std::env::temp_dir());
    held.read(&mut reader)?;
    let reads = if rereadable { 2 } else { 1 };
    held.partial(ReadFacts::of(&reader, reads), config, Some(origin), cost)
}

/// The partial of files that overlap in time, concatenated in the order given: their packets
/// are sorted by time in bounded memory (runs of `spill::RUN_PACKETS` spilled under TMPDIR),
/// as for one file out of time order; windows count from the first packet.
pub fn files_partial(
    paths: &[PathBuf],
    read: ReadOptions,
    config: &StatsConfig,
    cost: Option<&DemandConfig>,
) -> Result<Partial, CoreError> {
    files_partial_in(
        paths,
        read,
        config,
        cost,
        RUN_PACKETS,
        &std::env::temp_dir(),
    )
}

/// `files_partial` with runs of `run_packets` spilled to `dir`.
pub(super) fn files_partial_in(
    paths: &[PathBuf],
    read: ReadOptions,
    config: &StatsConfig,
    cost: Option<&DemandConfig>,
    run_packets: usize,
    dir: &Path,
) -> Result<Partial, CoreError> {
    let mut held = Held::new(run_packets, dir);
    let mut facts: Option<ReadFacts> = None;
    for path in paths {
        let mut reader = Reader::open_with(path, read)?;
        held.read(&mut reader)?;
        let these = ReadFacts::of(&reader, 1);
        match &mut facts {
            None => facts = Some(these),
            Some(all) => all.add(&these),
        }
    }
    held.partial(facts.unwrap_or_default(), config, None, cost)
}

/// Time of the first record of a capture and its interfaces then (None without packets).
pub fn first_record(
    path: &Path,
    read: ReadOptions,
) -> Result<(Option<i64>, Vec<Interface>), CoreError> {
    let mut reader = Reader::open_with(path, read)?;
    let first = reader.next_record()?.map(|r| r.ts_ns);
    Ok((first, reader.interfaces().to_vec()))
}

// --- serialisation: variable-length integers, for shipping partials between processes ---------
//
// Every integer is LEB128 (7 bits a byte, low bits first; a signed one zigzag-mapped first, so
// small magnitudes of either sign are short), and the distinct gaps are sent as the differences
// between neighbours (ascending, so non-negative): a partial of 500 000 packets with ~6 300
// distinct gaps is ~3 bytes a gap instead of 16, so the driver receives and decodes ~5x fewer
// bytes per file (docs/scale.md).

const MAGIC: &[u8; 8] = b"PCPART04";

struct Enc(Vec<u8>);

impl Enc {
    fn u64(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }
    fn i64(&mut self, v: i64) {
        self.u64(((v << 1) ^ (v >> 63)) as u64);
    }
    fn str(&mut self, v: &str) {
        self.u64(v.len() as u64);
        self.0.extend_from_slice(v.as_bytes());
    }
    fn opt_str(&mut self, v: Option<&str>) {
        self.u64(u64::from(v.is_some()));
        if let Some(s) = v {
            self.str(s);
        }
    }
    fn totals(&mut self, t: &Totals) {
        for v in [t.packets, t.bytes_captured, t.bytes_wire] {
            self.u64(v);
        }
        self.i64(t.first_ts_ns);
        self.i64(t.last_ts_ns);
    }
    fn chain(&mut self, c: &Chain) {
        for v in [
            c.head,
            c.tail,
            u64::from(c.broken),
            c.bursts,
            c.packets_in_bursts,
            c.max_burst,
        ] {
            self.u64(v);
        }
    }

    fn window(&mut self, w: &Window) {
        for v in [w.index, w.packets, w.bits, w.frame_bits] {
            self.u64(v);
        }
    }
    fn sizes(&mut self, counts: &SizeCounts) {
        self.u64(counts.len() as u64);
        for &(frame, n) in counts {
            self.i64(frame);
            self.u64(n);
        }
    }
}

struct Dec<'a>(&'a [u8]);

impl Dec<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], String> {
        if self.0.len() < n {
            return Err("the partial's bytes end early".into());
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
    fn u64(&mut self) -> Result<u64, String> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.take(1)?[0];
            v |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err("the partial holds an integer longer than 64 bits".into())
    }
    fn i64(&mut self) -> Result<i64, String> {
        let v = self.u64()?;
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }
    fn len(&mut self) -> Result<usize, String> {
        let n = self.u64()?;
        usize::try_from(n)
            .ok()
            .filter(|&n| n <= self.0.len())
            .ok_or_else(|| format!("the partial names {n} items, more than its bytes hold"))
    }
    fn str(&mut self) -> Result<String, String> {
        let n = self.len()?;
        String::from_utf8(self.take(n)?.to_vec()).map_err(|e| e.to_string())
    }
    fn opt_str(&mut self) -> Result<Option<String>, String> {
        Ok(if self.u64()? == 1 {
            Some(self.str()?)
        } else {
            None
        })
    }
    fn totals(&mut self) -> Result<Totals, String> {
        Ok(Totals {
            packets: self.u64()?,
            bytes_captured: self.u64()?,
            bytes_wire: self.u64()?,
            first_ts_ns: self.i64()?,
            last_ts_ns: self.i64()?,
        })
    }
    fn sizes(&mut self) -> Result<SizeCounts, String> {
        (0..self.len()?)
            .map(|_| Ok((self.i64()?, self.u64()?)))
            .collect()
    }
    fn chain(&mut self) -> Result<Chain, String> {
        Ok(Chain {
            head: self.u64()?,
            tail: self.u64()?,
            broken: self.u64()? == 1,
            bursts: self.u64()?,
            packets_in_bursts: self.u64()?,
            max_burst: self.u64()?,
        })
    }

    fn window(&mut self) -> Result<Window, String> {
        Ok(Window {
            index: self.u64()?,
            packets: self.u64()?,
            bits: self.u64()?,
            frame_bits: self.u64()?,
        })
    }
}

impl Partial {
    /// The partial as bytes (`from_bytes` reads them back): its size is that of its distinct
    /// gaps (2-4 bytes each where they are dense, up to 20) plus a few hundred bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut e = Enc(MAGIC.to_vec());
        let f = &self.facts;
        e.str(&f.format);
        e.str(&f.compression);
        e.u64(f.interfaces.len() as u64);
        for i in &f.interfaces {
            e.u64(u64::from(i.linktype));
            e.u64(u64::from(i.snaplen));
            e.u64(u64::from(i.tsresol));
            e.i64(i.tsoffset_s);
            e.opt_str(i.name.as_deref());
            e.u64(u64::from(i.section));
        }
        for v in [
            f.skipped,
            f.untimed,
            f.quirks.snaplen_exceeded,
            f.quirks.wirelen_below_caplen,
            f.quirks.ts_wrapped,
            u64::from(f.reads),
        ] {
            e.u64(v);
        }
        e.opt_str(f.cut_short.as_deref());
        e.i64(self.origin);
        e.totals(&self.totals);
        e.u64(self.per_interface.len() as u64);
        for t in &self.per_interface {
            e.totals(t);
        }
        e.u64(self.out_of_order);
        e.u64(self.max_step_back_ns);
        e.u64(self.directions.len() as u64);
        for d in self.directions.iter().flatten() {
            e.u64(*d);
        }
        e.i64(self.first_record_ts);
        e.i64(self.last_record_ts);
        e.u64(self.windows.len() as u64);
        for w in &self.windows {
            e.u64(w.edges.len() as u64);
            for window in &w.edges {
                e.window(window);
            }
            let (present, (packets, bits, frame_bits)) =
                (w.inner.is_some(), w.inner.unwrap_or_default());
            for v in [u64::from(present), packets, bits, frame_bits] {
                e.u64(v);
            }
        }
        for counts in [&self.sizes, &self.frame_bytes] {
            e.u64(counts.len() as u64);
            for &n in counts {
                e.u64(n);
            }
        }
        for v in [self.first.0, self.first.1, self.last.0, self.last.1] {
            e.i64(v);
        }
        e.chain(&self.chain);
        e.chain(&self.equal);
        e.u64(self.gaps.n);
        e.i64(self.gaps.min);
        e.u64(self.gaps.values.len() as u64);
        let mut prev = 0i64;
        for &(gap, count) in &self.gaps.values {
            e.i64(gap.wrapping_sub(prev));
            e.u64(count);
            prev = gap;
        }
        e.u64(u64::from(self.demand.is_some()));
        if let Some(d) = &self.demand {
            e.u64(d.edges.len() as u64);
            for (index, counts) in &d.edges {
                e.u64(*index);
                e.sizes(counts);
            }
            e.u64(d.inner.up.to_bits());
            e.u64(d.inner.down.to_bits());
            e.u64(d.inner.over);
            e.sizes(&d.sizes);
            e.u64(u64::from(d.unpriced.is_some()));
            e.i64(d.unpriced.unwrap_or(0));
        }
        e.0
    }

    /// A partial from `to_bytes`; fails on bytes that are not one.
    pub fn from_bytes(bytes: &[u8]) -> Result<Partial, String> {
        let mut d = Dec(bytes);
        if d.take(MAGIC.len())? != MAGIC {
            return Err("not a pcieperf trace partial (or one of another version)".into());
        }
        let small = |v: u64, what: &str| {
            u32::try_from(v).map_err(|_| format!("the partial's {what} is out of range"))
        };
        let format = d.str()?;
        let compression = d.str()?;
        let mut interfaces = Vec::new();
        for _ in 0..d.len()? {
            interfaces.push(Interface {
                linktype: u16::try_from(d.u64()?).map_err(|e| e.to_string())?,
                snaplen: small(d.u64()?, "snaplen")?,
                tsresol: u8::try_from(d.u64()?).map_err(|e| e.to_string())?,
                tsoffset_s: d.i64()?,
                name: d.opt_str()?,
                section: small(d.u64()?, "section")?,
            });
        }
        let (skipped, untimed) = (d.u64()?, d.u64()?);
        let quirks = Quirks {
            snaplen_exceeded: d.u64()?,
            wirelen_below_caplen: d.u64()?,
            ts_wrapped: d.u64()?,
        };
        let reads = small(d.u64()?, "read count")?;
        let cut_short = d.opt_str()?;
        let origin = d.i64()?;
        let totals = d.totals()?;
        let per_interface = (0..d.len()?)
            .map(|_| d.totals())
            .collect::<Result<_, _>>()?;
        let out_of_order = d.u64()?;
        let max_step_back_ns = d.u64()?;
        let directions = (0..d.len()?)
            .map(|_| Ok([d.u64()?, d.u64()?, d.u64()?]))
            .collect::<Result<_, String>>()?;
        let (first_record_ts, last_record_ts) = (d.i64()?, d.i64()?);
        let mut windows = Vec::new();
        for _ in 0..d.len()? {
            let edges = (0..d.len()?)
                .map(|_| d.window())
                .collect::<Result<_, _>>()?;
            let (present, packets, bits, frame_bits) = (d.u64()?, d.u64()?, d.u64()?, d.u64()?);
            windows.push(Edges {
                edges,
                inner: (present == 1).then_some((packets, bits, frame_bits)),
            });
        }
        let sizes = (0..d.len()?).map(|_| d.u64()).collect::<Result<_, _>>()?;
        let frame_bytes = (0..d.len()?).map(|_| d.u64()).collect::<Result<_, _>>()?;
        let first = (d.i64()?, d.i64()?);
        let last = (d.i64()?, d.i64()?);
        let chain = d.chain()?;
        let equal = d.chain()?;
        let (n, min) = (d.u64()?, d.i64()?);
        let mut prev = 0i64;
        let values = (0..d.len()?)
            .map(|_| {
                prev = prev.wrapping_add(d.i64()?);
                Ok((prev, d.u64()?))
            })
            .collect::<Result<_, String>>()?;
        let demand = if d.u64()? == 1 {
            let edges = (0..d.len()?)
                .map(|_| Ok((d.u64()?, d.sizes()?)))
                .collect::<Result<_, String>>()?;
            let inner = DemandPeaks {
                up: f64::from_bits(d.u64()?),
                down: f64::from_bits(d.u64()?),
                over: d.u64()?,
            };
            let sizes = d.sizes()?;
            let (present, frame) = (d.u64()? == 1, d.i64()?);
            Some(DemandAcc {
                edges,
                inner,
                sizes,
                unpriced: present.then_some(frame),
                lo: 0,
                hi: 0,
            })
        } else {
            None
        };
        if !d.0.is_empty() {
            return Err("the partial has bytes after its end".into());
        }
        Ok(Partial {
            facts: ReadFacts {
                format,
                compression,
                interfaces,
                skipped,
                untimed,
                quirks,
                cut_short,
                reads,
            },
            origin,
            totals,
            per_interface,
            out_of_order,
            max_step_back_ns,
            directions,
            first_record_ts,
            last_record_ts,
            windows,
            sizes,
            frame_bytes,
            first,
            last,
            chain,
            equal,
            gaps: GapDist { n, min, values },
            demand,
        })
    }
}

// --- PCIe demand: bytes per window from a per-frame-size cost ---------------------------------

/// What the demand of a trace costs: PCIe wire bytes up and down per frame size (index: frame
/// bytes incl. FCS), the window, and the link's capacity per direction.
#[derive(Debug, Clone, PartialEq)]
pub struct DemandConfig {
    pub window_ns: u64,
    pub up: Vec<f64>,
    pub down: Vec<f64>,
    pub capacity_gbps: f64,
}

impl DemandConfig {
    /// A demand cost, or why not: it needs a window of at least 1 ns and equally long,
    /// non-empty costs.
    pub fn new(
        window_ns: u64,
        up: Vec<f64>,
        down: Vec<f64>,
        capacity_gbps: f64,
    ) -> Result<Self, String> {
        if window_ns == 0 || up.len() != down.len() || up.is_empty() {
            return Err(
                "a demand needs a window of at least 1 ns and equally long, non-empty costs".into(),
            );
        }
        Ok(Self {
            window_ns,
            up,
            down,
            capacity_gbps,
        })
    }
}

/// Frame sizes and their counts, ascending.
type SizeCounts = Vec<(i64, u64)>;

fn add_size(counts: &mut SizeCounts, frame: i64, n: u64) {
    match counts.binary_search_by_key(&frame, |e| e.0) {
        Ok(k) => counts[k].1 += n,
        Err(k) => counts.insert(k, (frame, n)),
    }
}

/// Gb/s up and down of packets of the given sizes over `covered_ns`: bytes summed in ascending
/// frame order (the same order however the packets were split into files), then one division.
fn window_gbps(counts: &SizeCounts, covered_ns: u64, cost: &DemandConfig) -> (f64, f64) {
    let (mut up, mut down) = (0.0, 0.0);
    for &(frame, n) in counts {
        up += n as f64 * cost.up[frame as usize];
        down += n as f64 * cost.down[frame as usize];
    }
    (up * 8.0 / covered_ns as f64, down * 8.0 / covered_ns as f64)
}

/// Peak rates and windows over capacity of complete windows.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct DemandPeaks {
    up: f64,
    down: f64,
    over: u64,
}

impl DemandPeaks {
    fn add(&mut self, (up, down): (f64, f64), capacity: f64) {
        self.up = self.up.max(up);
        self.down = self.down.max(down);
        self.over += u64::from(up > capacity || down > capacity);
    }

    fn merge(&mut self, other: &DemandPeaks) {
        self.up = self.up.max(other.up);
        self.down = self.down.max(other.down);
        self.over += other.over;
    }
}

/// The demand windows of packets in time order: the first window and the last two with the
/// sizes of their packets, the peaks of all others; the sizes of all packets.
#[derive(Debug, Clone, Default, PartialEq)]
struct DemandAcc {
    edges: Vec<(u64, SizeCounts)>,
    inner: DemandPeaks,
    sizes: SizeCounts,
    /// Frames larger than the cost table prices (an error when summarised).
    unpriced: Option<i64>,
    lo: u64,
    hi: u64,
}

impl DemandAcc {
    fn add(&mut self, index: u64, counts: &SizeCounts, cost: &DemandConfig) {
        match self.edges.last_mut() {
            Some(last) if last.0 == index => {
                for &(frame, n) in counts {
                    add_size(&mut last.1, frame, n);
                }
            }
            _ => {
                self.edges.push((index, counts.clone()));
                if self.edges.len() > 3 {
                    let (_, done) = self.edges.remove(1);
                    let rates = window_gbps(&done, cost.window_ns, cost);
                    self.inner.add(rates, cost.capacity_gbps);
                }
            }
        }
    }

    #[inline(always)]
    fn push(&mut self, offset: u64, frame: i64, cost: &DemandConfig) {
        if usize::try_from(frame).map_or(true, |f| f >= cost.up.len()) {
            self.unpriced = Some(self.unpriced.map_or(frame, |u| u.max(frame)));
            return;
        }
        add_size(&mut self.sizes, frame, 1);
        if (self.lo..self.hi).contains(&offset) {
            if let Some(last) = self.edges.last_mut() {
                add_size(&mut last.1, frame, 1);
                return;
            }
        }
        let index = offset / cost.window_ns;
        self.lo = index.saturating_mul(cost.window_ns);
        self.hi = (index + 1).saturating_mul(cost.window_ns);
        self.add(index, &vec![(frame, 1)], cost);
    }

    fn append(&mut self, next: &DemandAcc, cost: &DemandConfig) {
        for (index, counts) in &next.edges {
            self.add(*index, counts, cost);
        }
        self.inner.merge(&next.inner);
        for &(frame, n) in &next.sizes {
            add_size(&mut self.sizes, frame, n);
        }
        self.unpriced = self.unpriced.max(next.unpriced);
    }
}

/// The PCIe demand of a set of packets, per direction.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "pyo3", derive(pyo3::IntoPyObject))]
pub struct Demand {
    pub windows: u64,
    /// Windows that cover their whole length: the peaks and the count over capacity are theirs.
    pub full_windows: u64,
    pub peak_up_gbps: f64,
    pub peak_down_gbps: f64,
    pub windows_over_capacity: u64,
    /// The last window where it covers less than its length (up to the last packet): its ns
    /// and its rates, kept apart from the peaks (0 where the last window is whole).
    pub tail_ns: u64,
    pub tail_up_gbps: f64,
    pub tail_down_gbps: f64,
    /// Bytes up and down of all packets.
    pub bytes_up: f64,
    pub bytes_down: f64,
    /// Frame bytes of all packets (for the mean frame).
    pub frame_bytes: u64,
}

impl Partial {
    /// The demand of the packets summarised, by the rule of the rates of `summary`: peaks over
    /// whole windows only, a last window shorter than its length reported apart as the tail.
    /// Fails where a frame is larger than the cost table or the partial was read without a
    /// demand.
    pub fn demand(&self, cost: &DemandConfig) -> Result<Demand, String> {
        let acc = self
            .demand
            .as_ref()
            .ok_or("the partial was read without a demand")?;
        if self.totals.packets > 0 && self.origin != self.totals.first_ts_ns {
            return Err("windows were not counted from the first packet".into());
        }
        if let Some(frame) = acc.unpriced {
            return Err(format!(
                "a frame of {frame} bytes is larger than the {} priced",
                cost.up.len() - 1
            ));
        }
        let w = cost.window_ns;
        let span = self.totals.span_ns();
        let windows = Span::of(span, w);
        let (last, covered) = (windows.last, windows.covered);
        let mut peaks = acc.inner;
        let mut tail_rates = (0.0, 0.0);
        let n = acc.edges.len();
        for (_, done) in &acc.edges[..n.saturating_sub(2)] {
            peaks.add(window_gbps(done, w, cost), cost.capacity_gbps);
        }
        if let Some((index, cur)) = acc.edges.last() {
            let mut tail = cur.clone();
            if let Some((prev_index, prev)) = n.checked_sub(2).map(|k| &acc.edges[k]) {
                if *index > last && *prev_index == last {
                    for &(frame, count) in prev {
                        add_size(&mut tail, frame, count);
                    }
                } else {
                    peaks.add(window_gbps(prev, w, cost), cost.capacity_gbps);
                }
            }
            if covered == w {
                peaks.add(window_gbps(&tail, w, cost), cost.capacity_gbps);
            } else {
                tail_rates = window_gbps(&tail, covered, cost);
            }
        }
        let (mut bytes_up, mut bytes_down, mut frame_bytes) = (0.0, 0.0, 0u64);
        for &(frame, count) in &acc.sizes {
            bytes_up += count as f64 * cost.up[frame as usize];
            bytes_down += count as f64 * cost.down[frame as usize];
            frame_bytes += count * frame as u64;
        }
        let partial = windows.has_tail();
        Ok(Demand {
            windows: windows.count(),
            full_windows: windows.full(),
            peak_up_gbps: peaks.up,
            peak_down_gbps: peaks.down,
            windows_over_capacity: peaks.over,
            tail_ns: if partial { covered } else { 0 },
            tail_up_gbps: tail_rates.0,
            tail_down_gbps: tail_rates.1,
            bytes_up,
            bytes_down,
            frame_bytes,
        })
    }
}
