//! Gap percentiles exact to numpy's: distinct gaps counted densely below 65 536 ns and in
//! log-linear buckets above, the buckets that hold the ranks collected on a second read.

use std::collections::HashMap;

/// Gaps below this many ns are counted in a dense table (512 KiB once touched).
const DENSE_GAPS: usize = 1 << 16;

/// Log-linear buckets for gaps of DENSE_GAPS ns or more: 2^8 per octave (16..=62), after one
/// bucket for negative gaps (a difference of timestamps that wraps, as numpy's diff does).
const SUB_BUCKET_BITS: u32 = 8;
const DENSE_BITS: u32 = 16;
const COARSE_BUCKETS: usize = 1 + (((63 - DENSE_BITS) as usize) << SUB_BUCKET_BITS);

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
pub(super) struct GapCounts {
    n: u64,
    pub(super) min: i64,
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
    pub(super) fn new(limit: Option<usize>, collect: &[(i64, i64)]) -> Self {
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
    pub(super) fn push(&mut self, gap: i64) {
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
    pub(super) fn percentiles(&mut self, ps: &[f64]) -> Result<Vec<f64>, Vec<(i64, i64)>> {
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
pub(in crate::trace) fn linear_ranks(n: u64, p: f64) -> (u64, u64, f64) {
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
pub(in crate::trace) fn lerp(a: i64, b: i64, t: f64) -> f64 {
    let diff = b.wrapping_sub(a) as f64;
    if t >= 0.5 {
        b as f64 - diff * (1.0 - t)
    } else {
        a as f64 + diff * t
    }
}
