//! An rte_mempool (DPDK <= 22.11): a FIFO common ring behind a LIFO cache per lcore.

use std::collections::VecDeque;

/// rte_mempool: a FIFO ring of free objects behind LIFO per-lcore caches. An object is
/// named by the IOVA of its packet data.
pub(super) struct Mempool {
    pub(super) ring: VecDeque<u64>,
    caches: Vec<Vec<u64>>,
    size: usize,
    flush_at: usize,
}

impl Mempool {
    /// A pool of `objects` (all in the common ring, in order) for `lcores` caches of `size`.
    pub(super) fn new(objects: Vec<u64>, lcores: usize, size: u32) -> Self {
        let size = size as usize;
        Self {
            ring: objects.into(),
            caches: vec![Vec::with_capacity(size * 2 + 64); lcores],
            size,
            flush_at: (size * 3).div_ceil(2),
        }
    }

    /// Fills `out` with objects for `lcore`, popped from its cache one by one (validation
    /// guarantees the pool never runs dry).
    pub(super) fn get(&mut self, lcore: usize, out: &mut [u64]) {
        let n = out.len();
        if self.size == 0 {
            for (o, id) in out.iter_mut().zip(self.ring.drain(..n)) {
                *o = id;
            }
            return;
        }
        let cache = &mut self.caches[lcore];
        if cache.len() < n {
            let want = (self.size + n - cache.len()).min(self.ring.len());
            cache.extend(self.ring.drain(..want));
        }
        let rest = cache.len().checked_sub(n).expect("validated pool size");
        // LIFO: the first taken is the last put.
        for (o, &id) in out.iter_mut().zip(cache[rest..].iter().rev()) {
            *o = id;
        }
        cache.truncate(rest);
    }

    pub(super) fn put(&mut self, lcore: usize, objects: &[u64]) {
        if self.size == 0 {
            self.ring.extend(objects);
            return;
        }
        let cache = &mut self.caches[lcore];
        cache.extend_from_slice(objects);
        if cache.len() >= self.flush_at {
            self.ring.extend(cache.drain(self.size..));
        }
    }
}
