//! Peak rates over rate windows of packets in time order: the current window, the one
//! before and the largest sums of all earlier ones, per window length.

use super::WindowPeaks;
use crate::trace::rate_windows::Span;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(in crate::trace) struct Window {
    pub(in crate::trace) index: u64,
    pub(in crate::trace) packets: u64,
    /// Bits of the recorded lengths (no FCS).
    pub(in crate::trace) bits: u64,
    /// Bits of the frames incl. FCS.
    pub(in crate::trace) frame_bits: u64,
}

/// The largest packet count, bit sum and frame-bit sum of a set of windows (each the largest
/// of its own, not necessarily of one window).
pub(in crate::trace) type Peak = (u64, u64, u64);

/// One window length over packets in time order: the current window, the one before (which
/// becomes the last if the last packet falls exactly on a window start) and the largest sums
/// of every window before those.
#[derive(Debug, Clone)]
pub(super) struct WindowAcc {
    window_ns: u64,
    origin: Option<i64>,
    cur: Window,
    cur_end: u64,
    prev: Option<Window>,
    full: Option<Peak>,
}

impl WindowAcc {
    pub(super) fn new(window_ns: u64) -> Self {
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
    pub(super) fn push(&mut self, ts: i64, bits: u64, frame_bits: u64) {
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
    pub(super) fn finish(&self, span_ns: u64) -> WindowPeaks {
        peaks(self.window_ns, span_ns, self.full, self.prev, self.cur)
    }
}

/// The peaks of windows of `w` ns over a span from the first to the last packet, given the
/// largest sums of the windows before the last two non-empty ones (`full`), and those two.
pub(in crate::trace) fn peaks(
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

pub(in crate::trace) fn fold(full: &mut Option<Peak>, window: Window) {
    let (packets, bits, frame_bits) = full.get_or_insert((0, 0, 0));
    *packets = (*packets).max(window.packets);
    *bits = (*bits).max(window.bits);
    *frame_bits = (*frame_bits).max(window.frame_bits);
}
