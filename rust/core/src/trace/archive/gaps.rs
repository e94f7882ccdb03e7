//! The exact distribution of gaps between packets: (gap, count) pairs that merge across files,
//! so the percentiles of the merged gaps are those of the files read as one.

use std::collections::HashMap;

use crate::trace::stats::percentiles::{lerp, linear_ranks};

/// Gaps below this many ns are counted in a dense table while a file is read.
const DENSE_GAPS: usize = 1 << 16;

/// Exact counts of distinct gaps, as (gap, count) pairs in ascending order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct GapDist {
    pub(super) n: u64,
    pub(super) min: i64,
    pub(super) values: Vec<(i64, u64)>,
}

impl GapDist {
    /// The distribution of one gap.
    pub(super) fn one(gap: i64) -> Self {
        GapDist {
            n: 1,
            min: gap,
            values: vec![(gap, 1)],
        }
    }

    /// Adds the gaps of `other`.
    pub(super) fn merge(&mut self, other: &GapDist) {
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
    pub(super) fn percentiles(&self, ps: &[f64]) -> Vec<f64> {
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
pub(super) struct GapCounter {
    n: u64,
    min: i64,
    dense: Vec<u64>,
    sparse: HashMap<i64, u64>,
}

impl GapCounter {
    #[inline(always)]
    pub(super) fn push(&mut self, gap: i64) {
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

    /// The distribution of the gaps pushed.
    pub(super) fn finish(self) -> GapDist {
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
