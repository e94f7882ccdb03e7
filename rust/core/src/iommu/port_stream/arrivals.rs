//! Packet arrivals: sizes drawn by their weights, each packet its wire time after the one
//! before.

use super::config::PortConfig;
use crate::rng::Rng;

/// Bits of a size draw: u = k / 2^53 for a random 53-bit integer k (an f64's mantissa).
const DRAW_BITS: u32 = 53;
/// The top bits of k that index [`Arrivals::decided`].
const DECIDED_BITS: u32 = 8;
/// A range of k that a cumulative weight splits: its draws compare k with the thresholds.
pub(super) const UNDECIDED: u8 = u8::MAX;

/// The packets arriving at the port: each one's size, drawn by weight, and arrival time.
pub(super) struct Arrivals {
    /// Each size's cumulative weight c as the integer ceil(c x 2^53): k / 2^53 >= c exactly
    /// when k >= it (k / 2^53 and c x 2^53 are exact), so a draw compares integers.
    pub(super) thresholds: Vec<u64>,
    /// The size of every k with these top `DECIDED_BITS` bits, or `UNDECIDED` where a
    /// threshold falls among them: most draws are one look-up, not a compare per size.
    pub(super) decided: [u8; 1 << DECIDED_BITS],
    /// Each size's spacing after the packet before it (`ns_per_packet` x its wire share) and
    /// its DMA bytes, side by side: one look-up per packet for both.
    per_size: Vec<(f64, u64)>,
    rng: Rng,
    /// When the last packet arrived (ns since the clock restarted).
    pub(super) clock_ns: f64,
}

impl Arrivals {
    pub(super) fn new(cfg: &PortConfig, rng: Rng) -> Self {
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
    pub(super) fn next(&mut self, timed: bool) -> (usize, u64, f64) {
        let size = self.draw_size();
        let (gap_ns, bytes) = self.per_size[size];
        if timed {
            self.clock_ns += gap_ns;
        }
        (size, bytes, self.clock_ns)
    }

    #[inline]
    pub(super) fn draw_size(&mut self) -> usize {
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
pub(super) fn size_of(thresholds: &[u64], k: u64) -> usize {
    let below = thresholds.iter().filter(|&&t| k >= t).count();
    below.min(thresholds.len() - 1)
}
