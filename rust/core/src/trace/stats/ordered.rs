//! Everything a summary needs the packets in time order for: rate windows, the size
//! histogram, frame bytes, bursts, ties and gaps.

use super::bursts::Chain;
use super::counts::add_at;
use super::frames::{back_to_back_ns, FrameRule};
use super::percentiles::GapCounts;
use super::window_peaks::WindowAcc;
use super::{Bursts, StatsConfig, Ties, Totals, WindowPeaks};

/// What the packets in time order give: rates, sizes, bursts, ties and frame bytes per
/// interface.
pub(super) type InTimeOrder = (Vec<WindowPeaks>, Vec<u64>, Option<Bursts>, Ties, Vec<u64>);

/// Everything that needs the packets in time order.
#[derive(Debug, Clone)]
pub(super) struct Ordered {
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
    pub(super) fn new(
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
    pub(super) fn push(&mut self, ts: i64, wirelen: u32, iface: u32, config: &StatsConfig) {
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
    pub(super) fn set_rule(&mut self, rule: FrameRule) {
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
    pub(super) fn finish(
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
