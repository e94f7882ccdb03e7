//! The rule of rate windows, in one place: windows of one length from the first packet, the
//! last covering only up to the last packet (the tail). A peak is the largest rate of the whole
//! windows only, since a few packets at the very end of a capture, divided by the few ns they
//! span, are no sustained rate; the tail's rate is reported apart. A last packet exactly on a
//! window start would open a window that covers nothing: it counts in the window before, which
//! then covers up to it, so the covered times add up to the capture's duration. A capture
//! without duration has one window, counted as whole, and no rate.
//!
//! `trace stats` (stats.rs `peaks`), archives (archive.rs `Partial::demand`) and the per-window
//! PCIe demand of a capture in time order (timeline.rs: `nic --trace`, `dpdk-fwd --trace`) all
//! apply it; `series`, the rule over per-packet columns in memory, is what the tests hold the
//! streamed passes to.

use crate::CoreError;

/// How windows of `window_ns` cover a span from the first to the last packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub window_ns: u64,
    /// Index of the last window (their number minus one).
    pub last: u64,
    /// Time the last window covers: `window_ns` where it is whole.
    pub covered: u64,
}

impl Span {
    /// The windows of `window_ns` (> 0) over `span_ns` from the first to the last packet.
    pub fn of(span_ns: u64, window_ns: u64) -> Self {
        let (mut last, mut covered) = (span_ns / window_ns, span_ns % window_ns);
        if covered == 0 && last > 0 {
            last -= 1; // a last packet exactly on a window start belongs to the window before
            covered = window_ns;
        }
        if covered == 0 {
            covered = window_ns; // no duration: the one window counts as whole
        }
        Span {
            window_ns,
            last,
            covered,
        }
    }

    /// Whether the last window covers less than its length.
    pub fn has_tail(&self) -> bool {
        self.covered < self.window_ns
    }

    /// Number of windows.
    pub fn count(&self) -> u64 {
        self.last + 1
    }

    /// Windows that cover their whole length.
    pub fn full(&self) -> u64 {
        self.count() - u64::from(self.has_tail())
    }

    /// Time covered by window `index`.
    pub fn covered_ns(&self, index: u64) -> u64 {
        if index == self.last {
            self.covered
        } else {
            self.window_ns
        }
    }
}

/// One per-packet quantity summed per window and turned into rates by the rule.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Gb/s of each window: its bytes x 8 over the time it covers.
    pub gbps: Vec<f64>,
    /// Over the capture's duration (None: it has none).
    pub mean_gbps: Option<f64>,
    /// Largest of the whole windows (None: none is whole, or no duration).
    pub peak_gbps: Option<f64>,
    /// The last window's rate where it covers less than its length.
    pub tail_gbps: Option<f64>,
}

/// Per-window rates of byte counts given per packet, by the rule: `bytes[k][i]` is packet `i`'s
/// bytes of series `k`; the timestamps need not be sorted. More than `max_windows` windows is
/// a bad window length for the trace, refused before any memory is taken for them.
#[cfg(test)]
pub fn series(
    ts_ns: &[i64],
    bytes: &[&[f64]],
    window_ns: u64,
    max_windows: u64,
) -> Result<(Span, Vec<Series>), CoreError> {
    if let Some(bad) = bytes.iter().find(|b| b.len() != ts_ns.len()) {
        return Err(CoreError::LengthMismatch {
            left: ts_ns.len(),
            right: bad.len(),
        });
    }
    let (Some(&first), Some(&end)) = (ts_ns.iter().min(), ts_ns.iter().max()) else {
        return Err(no_packets());
    };
    let span_ns = end.wrapping_sub(first) as u64;
    let span = windows_over(span_ns, window_ns, max_windows)?;
    let index: Vec<usize> = ts_ns
        .iter()
        .map(|&t| span.index(t.wrapping_sub(first) as u64))
        .collect();
    let out = bytes
        .iter()
        .map(|b| {
            let mut sums = vec![0.0; span.count() as usize];
            for (&i, &b) in index.iter().zip(*b) {
                sums[i] += b;
            }
            Series::of_sums(&span, span_ns, sums)
        })
        .collect();
    Ok((span, out))
}

/// The error of a trace without packets: there is nothing to put in windows.
pub fn no_packets() -> CoreError {
    CoreError::Invalid("the trace has no packets; nothing to replay".into())
}

/// The windows of `window_ns` over `span_ns` from the first to the last packet, or why not: a
/// window of 0 ns, or more than `max_windows` of them (a bad window length for the trace,
/// refused before any memory is taken for them).
pub fn windows_over(span_ns: u64, window_ns: u64, max_windows: u64) -> Result<Span, CoreError> {
    if window_ns == 0 {
        return Err(CoreError::Invalid(
            "window 0 ns is not allowed; give a window > 0".into(),
        ));
    }
    let span = Span::of(span_ns, window_ns);
    if span.count() > max_windows {
        return Err(CoreError::Invalid(format!(
            "the trace spans {:.6} s, which is {} windows of {window_ns} ns; allowed are \
             {max_windows}, so give a larger window",
            span_ns as f64 / 1e9,
            span.count()
        )));
    }
    Ok(span)
}

impl Span {
    /// The window of a packet `offset_ns` after the first (the last one takes the packet on
    /// its end).
    #[inline]
    pub fn index(&self, offset_ns: u64) -> usize {
        (offset_ns / self.window_ns).min(self.last) as usize
    }
}

impl Series {
    /// One series' rates from its bytes summed per window (`span.count()` sums) over a span of
    /// `span_ns`.
    pub fn of_sums(span: &Span, span_ns: u64, sums: Vec<f64>) -> Series {
        let gbps: Vec<f64> = sums
            .iter()
            .enumerate()
            .map(|(i, s)| s * 8.0 / span.covered_ns(i as u64) as f64)
            .collect();
        let timed = span_ns > 0;
        let whole = &gbps[..span.full() as usize];
        Series {
            mean_gbps: timed.then(|| sums.iter().sum::<f64>() * 8.0 / span_ns as f64),
            peak_gbps: (timed && !whole.is_empty())
                .then(|| whole.iter().copied().fold(f64::NEG_INFINITY, f64::max)),
            tail_gbps: span.has_tail().then(|| gbps[gbps.len() - 1]),
            gbps,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_packet_on_a_window_start_counts_in_the_window_before() {
        // 0..=2000 ns in windows of 1000: two whole windows, the packet at 2000 in the second.
        let span = Span::of(2000, 1000);
        assert_eq!((span.last, span.covered, span.full()), (1, 1000, 2));
    }

    #[test]
    fn a_capture_without_duration_has_one_whole_window_and_no_rate() {
        let (span, s) = series(&[5, 5], &[&[1.0, 2.0]], 1000, 10).unwrap();
        assert_eq!((span.count(), span.full()), (1, 1));
        assert_eq!(
            (s[0].mean_gbps, s[0].peak_gbps, s[0].tail_gbps),
            (None, None, None)
        );
    }

    #[test]
    fn the_tail_is_kept_out_of_the_peak() {
        // The issue 27 edge, small: 1000 B packets every 500 ns, then 100 B packets 20 ns apart
        // from 2000 ns: the tail (2000..=2080, 80 ns) is fast but is not the peak.
        let ts = [0, 500, 1000, 1500, 2000, 2020, 2040, 2060, 2080];
        let bytes = [
            1000.0, 1000.0, 1000.0, 1000.0, 100.0, 100.0, 100.0, 100.0, 100.0,
        ];
        let (span, s) = series(&ts, &[&bytes], 1000, 10).unwrap();
        assert_eq!((span.count(), span.full(), span.covered), (3, 2, 80));
        assert_eq!(s[0].peak_gbps, Some(16.0)); // 2000 B in 1000 ns
        assert_eq!(s[0].tail_gbps, Some(500.0 * 8.0 / 80.0));
        assert_eq!(s[0].mean_gbps, Some(4500.0 * 8.0 / 2080.0));
    }

    #[test]
    fn too_many_windows_are_refused() {
        let err = series(&[0, 1_000_000], &[&[1.0, 1.0]], 1, 1000).unwrap_err();
        assert!(err.to_string().contains("allowed are 1000"), "{err}");
    }
}
