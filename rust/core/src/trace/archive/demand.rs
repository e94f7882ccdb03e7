//! The PCIe demand of a trace: bytes per window from a per-frame-size cost, merged across
//! files like the rate windows.

use super::Partial;
use crate::trace::rate_windows::Span;
use crate::CoreError;

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
    ) -> Result<Self, CoreError> {
        if window_ns == 0 || up.len() != down.len() || up.is_empty() {
            return Err(CoreError::Invalid(
                "a demand needs a window of at least 1 ns and equally long, non-empty costs".into(),
            ));
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
pub(super) type SizeCounts = Vec<(i64, u64)>;

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
pub(super) struct DemandPeaks {
    pub(super) up: f64,
    pub(super) down: f64,
    pub(super) over: u64,
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
pub(super) struct DemandAcc {
    pub(super) edges: Vec<(u64, SizeCounts)>,
    pub(super) inner: DemandPeaks,
    pub(super) sizes: SizeCounts,
    /// Frames larger than the cost table prices (an error when summarised).
    pub(super) unpriced: Option<i64>,
    /// The window of the last packet, [lo, hi) ns after the origin (0, 0: none yet).
    pub(super) lo: u64,
    pub(super) hi: u64,
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

    /// Adds a packet of `frame` bytes `offset` ns after the origin.
    #[inline(always)]
    pub(super) fn push(&mut self, offset: u64, frame: i64, cost: &DemandConfig) {
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

    /// The peaks of whole windows (the rule of `Partial::summary`'s rates) and the rates of the
    /// last window where it covers less than its length.
    fn rates(&self, windows: &Span, cost: &DemandConfig) -> (DemandPeaks, (f64, f64)) {
        let (w, (last, covered)) = (cost.window_ns, (windows.last, windows.covered));
        let mut peaks = self.inner;
        let mut tail_rates = (0.0, 0.0);
        let n = self.edges.len();
        for (_, done) in &self.edges[..n.saturating_sub(2)] {
            peaks.add(window_gbps(done, w, cost), cost.capacity_gbps);
        }
        if let Some((index, cur)) = self.edges.last() {
            let mut tail = cur.clone();
            if let Some((prev_index, prev)) = n.checked_sub(2).map(|k| &self.edges[k]) {
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
        (peaks, tail_rates)
    }

    /// Bytes up and down and frame bytes of all packets.
    fn bytes(&self, cost: &DemandConfig) -> (f64, f64, u64) {
        let (mut bytes_up, mut bytes_down, mut frame_bytes) = (0.0, 0.0, 0u64);
        for &(frame, count) in &self.sizes {
            bytes_up += count as f64 * cost.up[frame as usize];
            bytes_down += count as f64 * cost.down[frame as usize];
            frame_bytes += count * frame as u64;
        }
        (bytes_up, bytes_down, frame_bytes)
    }

    /// Adds the windows of later packets.
    pub(super) fn append(&mut self, next: &DemandAcc, cost: &DemandConfig) {
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
    pub fn demand(&self, cost: &DemandConfig) -> Result<Demand, CoreError> {
        let invalid = |what: String| Err(CoreError::Invalid(what));
        let Some(acc) = &self.demand else {
            return invalid("the partial was read without a demand".into());
        };
        if self.counted.totals.packets > 0 && self.origin != self.counted.totals.first_ts_ns {
            return invalid("windows were not counted from the first packet".into());
        }
        if let Some(frame) = acc.unpriced {
            let priced = cost.up.len() - 1;
            return invalid(format!(
                "a frame of {frame} bytes is larger than the {priced} priced"
            ));
        }
        let windows = Span::of(self.counted.totals.span_ns(), cost.window_ns);
        let (peaks, tail_rates) = acc.rates(&windows, cost);
        let (bytes_up, bytes_down, frame_bytes) = acc.bytes(cost);
        let partial = windows.has_tail();
        Ok(Demand {
            windows: windows.count(),
            full_windows: windows.full(),
            peak_up_gbps: peaks.up,
            peak_down_gbps: peaks.down,
            windows_over_capacity: peaks.over,
            tail_ns: if partial { windows.covered } else { 0 },
            tail_up_gbps: tail_rates.0,
            tail_down_gbps: tail_rates.1,
            bytes_up,
            bytes_down,
            frame_bytes,
        })
    }
}
