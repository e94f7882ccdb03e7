//! Pools of identical servers in time (the device's tags, page walkers, posted-write credits):
//! take the earliest free, give it back busy.

use super::engine::{cold_path, later};

/// A pool of identical servers (tags, page walkers): take the earliest free, give it
/// back busy. The times the servers are free are kept in two ascending runs: servers come
/// back nearly in time order, or as two interleaved orderly streams (a read-write mix gives
/// back reads' tags in completion order and writes' in link order, earlier), so a release
/// nearly always appends to one run, and one that fits neither is inserted into the first.
/// Equal times are equal bit for bit (no -0.0, see [`later`]), so which run gives up the
/// earliest one does not matter.
pub(super) struct Pool {
    runs: [Run; 2],
}

impl Pool {
    pub(super) fn new(servers: u32) -> Self {
        let mut first = Run::new(servers);
        first.len = servers as usize;
        Self {
            runs: [first, Run::new(servers)],
        }
    }

    /// The run holding the earliest free time (the first on a tie).
    #[inline]
    fn earliest_run(&self) -> usize {
        let [a, b] = &self.runs;
        usize::from(b.len > 0 && (a.len == 0 || b.first < a.first))
    }

    /// Occupies the server that frees first from `ready` on; returns when service starts.
    #[inline(always)]
    pub(super) fn acquire(&mut self, ready: f64) -> f64 {
        // Each run by name, not by index: no address to work out for the usual first run.
        // Measured (callgrind + interleaved timings, bench_sim's points): taken by index, the
        // compiler moved `head + 1, len - 1` as one 16-byte vector load, add and store, and the
        // next release's 8-byte store of `len` then made that 16-byte load wait for the store
        // to reach the cache (a load spanning two stores cannot be forwarded) once per
        // transaction; by name both stay 8-byte updates, and the loop without an IOMMU ran
        // 1.25x faster in CPU time for one instruction fewer.
        let [a, b] = &mut self.runs;
        let free = if b.len > 0 && (a.len == 0 || b.first < a.first) {
            b.pop_front()
        } else {
            a.pop_front()
        };
        later(free, ready)
    }

    #[inline(always)]
    pub(super) fn release(&mut self, at: f64) {
        let [a, b] = &mut self.runs;
        if a.fits_after(at) {
            a.push_back(at);
        } else if b.fits_after(at) {
            b.push_back(at);
        } else {
            // Rare: marked so, the loops keep their registers for the usual paths.
            cold_path();
            a.insert_sorted(at);
        }
    }

    /// When the earliest-free server is free (the usual question: one tag, one credit).
    #[inline]
    pub(super) fn first(&self) -> f64 {
        self.runs[self.earliest_run()].first
    }

    /// The times the `k` earliest-free servers are free, earliest first (the runs merged).
    pub(super) fn earliest(&self, k: u32) -> impl Iterator<Item = f64> + '_ {
        let [a, b] = &self.runs;
        let (mut i, mut j) = (0, 0);
        (0..(a.len + b.len).min(k as usize)).map(move |_| {
            if j < b.len && (i >= a.len || b.get(j) < a.get(i)) {
                j += 1;
                b.get(j - 1)
            } else {
                i += 1;
                a.get(i - 1)
            }
        })
    }
}

/// Ascending free times in a ring of a power-of-two size (room for every server).
struct Run {
    free: Vec<f64>,
    mask: usize,
    head: usize,
    len: usize,
    /// The latest time in the run while it is not empty (a copy, so that asking whether a
    /// time fits after it, on every release, needs no index into the ring).
    last: f64,
    /// The earliest time in the run while it is not empty (a copy likewise: which run holds
    /// the earliest free server is asked on every acquire).
    first: f64,
}

impl Run {
    fn new(servers: u32) -> Self {
        let size = (servers as usize).next_power_of_two();
        Self {
            free: vec![0.0; size],
            mask: size - 1,
            head: 0,
            len: 0,
            last: 0.0,
            first: 0.0,
        }
    }

    #[inline]
    fn get(&self, i: usize) -> f64 {
        self.free[self.head.wrapping_add(i) & self.mask]
    }

    #[inline]
    fn pop_front(&mut self) -> f64 {
        debug_assert!(self.len > 0, "pools are never empty");
        let free = self.first;
        self.head = self.head.wrapping_add(1);
        self.len -= 1;
        // The next time (stale when the run is now empty: then `first` means nothing).
        self.first = self.get(0);
        free
    }

    /// Whether `at` can be appended: no time in the run is later.
    #[inline]
    fn fits_after(&self, at: f64) -> bool {
        self.len == 0 || self.last <= at
    }

    #[inline]
    fn push_back(&mut self, at: f64) {
        let tail = self.head.wrapping_add(self.len);
        self.free[tail & self.mask] = at;
        if self.len == 0 {
            self.first = at;
        }
        self.len += 1;
        self.last = at;
    }

    /// Puts `at` after every time not later than it, moving the later ones up one place.
    /// Inlined although rare: a call in a transaction loop would make the loop keep its
    /// times in memory (a call may overwrite every floating-point register). Left to the
    /// compiler, it was not inlined, and the loops without an IOMMU kept their clocks on the
    /// stack (callgrind, bench_sim's points: ten or so loads and stores per transaction).
    #[inline(always)]
    fn insert_sorted(&mut self, at: f64) {
        let mut i = self.head.wrapping_add(self.len);
        while i != self.head && self.free[i.wrapping_sub(1) & self.mask] > at {
            self.free[i & self.mask] = self.free[i.wrapping_sub(1) & self.mask];
            i = i.wrapping_sub(1);
        }
        self.free[i & self.mask] = at;
        self.len += 1;
        self.last = self.get(self.len - 1);
        self.first = self.get(0);
    }
}

/// A pool whose servers come back in the order they were taken, each no earlier than the one
/// before (posted-write credits: the root complex retires writes in order, so the times it frees
/// them never decrease). The earliest free is then always the one taken longest ago: the free
/// times sit in a ring, oldest at `next`, and taking one and giving it back is one overwrite,
/// where a [`Pool`] would pop and push two sorted runs (the same times either way).
pub(super) struct InOrderPool {
    free: Vec<f64>,
    next: usize,
}

impl InOrderPool {
    pub(super) fn new(servers: u32) -> Self {
        Self {
            free: vec![0.0; servers as usize],
            next: 0,
        }
    }

    /// When the earliest-free server is free.
    #[inline(always)]
    pub(super) fn first(&self) -> f64 {
        self.free[self.next]
    }

    /// Takes the earliest-free server and gives it back free from `at` (no earlier than any
    /// time given back before).
    #[inline(always)]
    pub(super) fn cycle(&mut self, at: f64) {
        debug_assert!(
            self.free[(self.next + self.free.len() - 1) % self.free.len()] <= at,
            "given back out of order"
        );
        self.free[self.next] = at;
        self.next += 1;
        if self.next == self.free.len() {
            self.next = 0;
        }
    }
}
