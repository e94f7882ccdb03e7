//! The windows of one rate-window length that a partial's packets touch: the first and the last
//! two kept whole (a neighbouring file's packets may still add to them), the peaks of all others.

use crate::trace::stats::window_peaks::{fold, peaks, Peak, Window};
use crate::trace::stats::WindowPeaks;

/// The windows of one length touched by packets in time order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Edges {
    /// The first window and the last two (fewer when fewer are touched), in time order.
    pub(super) edges: Vec<Window>,
    /// Largest packet count, bit sum and frame-bit sum of every other window.
    pub(super) inner: Option<Peak>,
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
    pub(super) fn append(&mut self, next: &Edges) {
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

    /// The peaks of all windows, whole ones apart from the tail (`stats::peaks`).
    pub(super) fn peaks(&self, window_ns: u64, span_ns: u64) -> WindowPeaks {
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
pub(super) struct WindowCounter {
    window_ns: u64,
    lo: u64,
    hi: u64,
    pub(super) edges: Edges,
}

impl WindowCounter {
    /// Counts windows of `window_ns` ns.
    pub(super) fn new(window_ns: u64) -> Self {
        WindowCounter {
            window_ns,
            lo: 0,
            hi: 0,
            edges: Edges::default(),
        }
    }

    /// Adds a packet `offset` ns after the origin.
    #[inline(always)]
    pub(super) fn push(&mut self, offset: u64, bits: u64, frame_bits: u64) {
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
