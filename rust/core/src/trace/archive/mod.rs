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

mod codec;
pub mod demand;
mod edges;
pub mod files;
mod gaps;

use self::demand::{DemandAcc, DemandConfig};
use self::edges::{Edges, WindowCounter};
use self::gaps::{GapCounter, GapDist};
use super::stats::bursts::Chain;
use super::stats::counts::{add_at, Counts};
use super::stats::frames::{back_to_back_ns, FrameRule};
use super::stats::{Bursts, Counted, ReadFacts, StatsConfig, Summary, Ties};
use crate::CoreError;

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
                .map(|&w| WindowCounter::new(w))
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

/// The mergeable statistics of one file, or of consecutive files of one port.
#[derive(Debug, Clone, PartialEq)]
pub struct Partial {
    pub facts: ReadFacts,
    /// Where windows are counted from: the first packet of the port, as the caller said.
    pub origin: i64,
    /// In file order across the files too.
    pub counted: Counted,
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
            counted: counts.counted(interfaces),
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
    ) -> Result<(), CoreError> {
        if next.origin != self.origin {
            return Err(CoreError::Unmergeable(
                "the partials count windows from different origins",
            ));
        }
        let rule = FrameRule::new(&self.facts.interfaces, config);
        // The totals before the two are added up.
        let (mine, theirs) = (self.counted.totals, next.counted.totals);
        if mine.packets > 0 && theirs.packets > 0 {
            if theirs.first_ts_ns < mine.last_ts_ns {
                return Err(CoreError::Unmergeable("the files overlap in time"));
            }
            if !rule.agrees(&FrameRule::new(&next.facts.interfaces, config)) {
                return Err(CoreError::Unmergeable(
                    "the files size or time frames differently",
                ));
            }
            let gap = next.first.0.wrapping_sub(self.last.0);
            let back_to_back = gap as f64 <= back_to_back_ns(self.last.1, &rule, config);
            self.chain.append(&next.chain, back_to_back);
            self.equal.append(&next.equal, gap == 0);
            self.gaps.merge(&GapDist::one(gap));
            if next.first_record_ts < self.last_record_ts {
                let c = &mut self.counted;
                c.out_of_order += 1;
                let step = self.last_record_ts.wrapping_sub(next.first_record_ts) as u64;
                c.max_step_back_ns = c.max_step_back_ns.max(step);
            }
        } else if mine.packets == 0 {
            self.chain = next.chain;
            self.equal = next.equal;
            self.first = next.first;
        }
        self.gaps.merge(&next.gaps);
        if theirs.packets > 0 {
            self.last = next.last;
            self.last_record_ts = next.last_record_ts;
            if mine.packets == 0 {
                self.first_record_ts = next.first_record_ts;
            }
        }
        self.counted.append(&next.counted);
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
            _ => {
                return Err(CoreError::Unmergeable(
                    "the partials were read with different demands",
                ))
            }
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
    pub fn summary(&self, config: &StatsConfig) -> Result<Summary, CoreError> {
        if self.counted.totals.packets > 0 && self.origin != self.counted.totals.first_ts_ns {
            return Err(CoreError::Invalid(format!(
                "windows were counted from {} ns, but the first packet is at {} ns",
                self.origin, self.counted.totals.first_ts_ns
            )));
        }
        let span = self.counted.totals.span_ns();
        let (bursts, packets_in_bursts, max_burst) = self.chain.finish();
        Ok(Summary {
            counted: self.counted.clone(),
            ties: Ties::of(&self.equal, self.counted.totals.packets),
            rates: self
                .windows
                .iter()
                .zip(&config.windows_ns)
                .map(|(edges, &w)| edges.peaks(w, span))
                .collect(),
            size_histogram: self.sizes.clone(),
            frame_bytes: {
                let mut frame_bytes = self.frame_bytes.clone();
                frame_bytes.resize(self.counted.per_interface.len(), 0);
                frame_bytes
            },
            bursts: (self.counted.totals.packets >= 2).then(|| Bursts {
                bursts,
                packets_in_bursts,
                max_burst,
                gap_min_ns: self.gaps.min,
                gap_percentiles: self.gaps.percentiles(&config.percentiles),
            }),
        })
    }
}
